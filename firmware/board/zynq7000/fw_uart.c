/*
 * Cadence UART driver (UG585 ch. 19; register names and bits: zynq7000.h, UG585 B.33).
 *
 * Receiving has two paths, never at once. While the device reads the link (fw_uart_read, IRQs
 * masked) it takes whole bursts straight from the RX FIFO and sleeps in WFI between them. While
 * it computes or transmits (IRQs unmasked) the receive interrupt moves the FIFO into a ring
 * (fw_uart_isr), so a host that keeps several frames in flight loses nothing: the 64-byte FIFO
 * holds 0.7 ms at 921,600 baud, less than one adaptation. fw_uart_read empties the ring first, so
 * bytes keep their order.
 */
#include "fw_uart.h"

#include "fw_config.h"
#include "fw_timer.h"
#include "zynq7000.h"

/* Bursts per look for a delimiter: a delimiter ends the read after the group of RX_GROUP bursts
 * that holds it, so fewer than FW_RX_CHUNK (256) bytes follow it (fw_uart.h). */
#define RX_GROUP 16u

/* The burst reads, NEON or plain C: the build's kernel variant (firmware/kernels/). */
#include "fw_uart_ops.h"

#define UART(reg) ZYNQ_REG32(FW_UART_BASE + (reg))
#define GICC(reg) ZYNQ_REG32(ZYNQ_GIC_CPU_BASE + (reg))
#define GICD(reg) ZYNQ_REG32(ZYNQ_GIC_DIST_BASE + (reg))
#define GICD8(off) (*(volatile uint8_t *)(uintptr_t)(ZYNQ_GIC_DIST_BASE + (off)))

/* Bytes read per look at Channel_sts: the RX trigger level while bytes are being taken. 16: the
 * RX FIFO of QEMU's model holds 16 bytes (include/hw/char/cadence_uart.h,
 * CADENCE_UART_RX_FIFO_SIZE; hw/char/cadence_uart.c sets Channel_sts RTRIG when the count reaches
 * the trigger level), the chip's 64 (UG585 §19.2.3): a larger burst is never seen under QEMU, and
 * every byte then went through the byte-by-byte path. */
#define RX_BURST 16u
/* Rcvr_timeout_reg0 RTO (UG585 B.33; §19.2.4, receiver time-out): Chnl_int_sts TIMEOUT is set
 * once the RX line has been idle for RTO x 4 baud_sample_clk periods after the last character;
 * baud_sample_clk runs BDIV + 1 periods a bit (UG585 §19.2.3), so 10 (BDIV + 1) is 40 bit times,
 * four characters. It wakes fw_uart_read when fewer bytes come than it waits for (a damaged
 * length, line noise). QEMU's model (hw/char/cadence_uart.c, fifo_trigger_update) sets TIMEOUT
 * four character times after each write into the RX FIFO whatever the non-zero RTO. */
#define RX_TIMEOUT_RTO (10u * (FW_UART_BDIV + 1u) < 255u ? 10u * (FW_UART_BDIV + 1u) : 255u)

/* Rcvr_FIFO_trigger_level0 as last written: RX_BURST while bursts are read, fewer for the last
 * bytes of a frame (fw_uart_read). */
static uint32_t rx_level;

/* RX FIFO overruns seen (Chnl_int_sts ROVR), for INFO's board block. */
static uint32_t rx_overruns;

/* The receive interrupt's ring (FW_RX_RING bytes, a power of two): head is written by the handler
 * only, tail by fw_uart_read only, and the two never run at once (fw_uart_read masks IRQs). */
_Static_assert((FW_RX_RING & (FW_RX_RING - 1u)) == 0u, "the ring's size is a power of two");
static uint8_t rx_ring[FW_RX_RING];
static volatile uint32_t ring_head;
static uint32_t ring_tail;
static uint32_t ring_overruns; /* bytes that found the ring full: lost */

/* The rate switch (docs/protocol.md, "Rate switch"): the rate now, and while a switch waits for
 * its first whole frame, the divisors to go back to and when. */
static uint32_t rate_now = FW_BAUD;
static uint32_t rate_old;
static uint16_t cd_old;
static uint16_t bdiv_old;
static uint8_t rate_pending;
static uint64_t revert_at;
static uint32_t rate_reverts;

#if FW_UART_INDEX == 0
#define UART_IRQ ZYNQ_IRQ_UART0
#else
#define UART_IRQ ZYNQ_IRQ_UART1
#endif

/* UG585 §19.3.1 "Example: Configure the UART": disable, set divisors, reset, enable. baud =
 * uart_ref_clk / (CD * (BDIV + 1)), UG585 §19.2.3; CD and BDIV chosen by codegen. The resets
 * empty both FIFOs. */
static void program(uint32_t cd, uint32_t bdiv)
{
    UART(XUART_CR) = XUART_CR_TX_DIS | XUART_CR_RX_DIS;
    UART(XUART_BAUDGEN) = cd;
    UART(XUART_BAUDDIV) = bdiv;
    UART(XUART_CR) = XUART_CR_TXRST | XUART_CR_RXRST;
    while (UART(XUART_CR) & (XUART_CR_TXRST | XUART_CR_RXRST)) {
    }
    UART(XUART_RXWM) = rx_level;
    UART(XUART_CR) = XUART_CR_TX_EN | XUART_CR_RX_EN | XUART_CR_RSTTO | XUART_CR_STPBRK;
}

void fw_uart_init(void)
{
    UART(XUART_CR) = XUART_CR_TX_DIS | XUART_CR_RX_DIS;
    UART(XUART_IDR) = XUART_IXR_ALL;
    UART(XUART_ISR) = XUART_IXR_ALL;
    UART(XUART_MR) = XUART_MR_8N1;
    UART(XUART_RXTOUT) = RX_TIMEOUT_RTO;
    rx_level = RX_BURST;
    program(FW_UART_CD, FW_UART_BDIV);

    /* UART RX trigger or receiver time-out -> GIC -> CPU0, highest priority: it wakes the waits
     * of fw_uart_read (IRQs masked) and runs fw_uart_isr otherwise. */
    UART(XUART_IER) = XUART_IXR_RTRIG | XUART_IXR_TOUT;
    GICD8(GIC_ICDIPR(UART_IRQ)) = 0x00u;
    GICD8(GIC_ICDIPTR(UART_IRQ)) = 0x01u;
    GICD(GIC_ICDISER(UART_IRQ / 32u)) = 1u << (UART_IRQ % 32u);
    GICD(GIC_ICDDCR) = 1u;
    GICC(GIC_ICCPMR) = 0xF0u;
    GICC(GIC_ICCICR) = 1u;
}

/* Sleep (WFI) until the RX FIFO holds `level` bytes (Channel_sts RTRIG at that trigger level) or
 * the receiver time-out says the line went idle; returns Channel_sts as last read (RTRIG set: the
 * bytes are there). RTRIG, and TIMEOUT when the FIFO is empty (it is then stale), are cleared
 * first (write 1 to clear, UG585 B.33 Chnl_int_sts_reg0); a condition met after the look raises
 * the interrupt again and WFI returns at once, so no byte is slept through. */
static uint32_t wait_rx(uint32_t level)
{
    if (level != rx_level) {
        UART(XUART_RXWM) = level;
        rx_level = level;
    }
    /* with bytes in the FIFO a TIMEOUT may be theirs: kept, it ends the wait at once */
    UART(XUART_ISR) = (UART(XUART_SR) & XUART_SR_RXEMPTY) != 0u ? XUART_IXR_RTRIG | XUART_IXR_TOUT
                                                                : XUART_IXR_RTRIG;
    for (;;) {
        const uint32_t sr = UART(XUART_SR);
        if ((sr & XUART_SR_RTRIG) != 0u || (UART(XUART_ISR) & XUART_IXR_TOUT) != 0u) {
            return sr;
        }
        if (rate_pending) { /* no sleep: the revert time is watched (no timer interrupt) */
            if (fw_timer_now() >= revert_at) {
                rate_pending = 0;
                rate_reverts++;
                rate_now = rate_old;
                program(cd_old, bdiv_old);
            }
            continue;
        }
        __asm__ volatile("dsb\n\twfi" ::: "memory");
    }
}

void fw_uart_wait_rx(void)
{
    if ((UART(XUART_SR) & XUART_SR_RXEMPTY) != 0u) {
        (void)wait_rx(1u);
    }
}

void fw_uart_putc(uint8_t c)
{
    while (UART(XUART_SR) & XUART_SR_TXFULL) {
    }
    UART(XUART_FIFO) = c;
}

/* Bytes written per look at Channel_sts TxEMPTY: the TX FIFO of QEMU's model holds 16
 * (include/hw/char/cadence_uart.h, CADENCE_UART_TX_FIFO_SIZE), the chip's 64 (UG585 §19.2.3). */
#define TX_BURST 16u

/* Whole bursts into an empty TX FIFO (Channel_sts bit 3, TxEMPTY), one look each instead of a
 * TxFULL look per byte; the last bytes (fewer than a burst: the server writes a reply one COBS
 * block at a time, a few bytes each) without a look when the FIFO is empty then, else one by
 * one. */
void fw_uart_write(const uint8_t *data, size_t len)
{
    const uint8_t *end = data + len;
    while (end - data >= (ptrdiff_t)TX_BURST) {
        while ((UART(XUART_SR) & XUART_SR_TXEMPTY) == 0u) {
        }
        tx_burst(&UART(XUART_FIFO), data);
        data += TX_BURST;
    }
    if ((UART(XUART_SR) & XUART_SR_TXEMPTY) != 0u) {
        while (data != end) {
            UART(XUART_FIFO) = *data++;
        }
    }
    while (data != end) {
        fw_uart_putc(*data++);
    }
}

/* The global timer's low word (fw_timer.c), read in line: the sleeps in fw_uart_read are timed
 * to leave them out of the link's work. */
#define GTIMER_LO ZYNQ_REG32(ZYNQ_GTIMER_BASE + GTIMER_COUNTER_LO)

/* TOUT (bit 8) is RXEMPTY (bit 1) shifted: the wait between bursts clears a stale time-out
 * without a branch (rx_bursts). */
_Static_assert(XUART_IXR_TOUT == XUART_SR_RXEMPTY << 7,
               "Chnl_int_sts TOUT and Channel_sts RxEMPTY");

/* Up to g bursts of RX_BURST bytes to d, each taken once Channel_sts RTRIG (UG585 B.33
 * Channel_sts_reg0 bit 0) says the RX FIFO holds them, then the 16 bytes without another look, in
 * groups of RX_GROUP bursts searched for a delimiter once: a group that holds one is the last.
 * Returns the bursts taken (fewer when the line went idle short of a burst: a damaged length,
 * line noise, or a delimiter came), adds the ticks slept to *zz and sets *zero when a delimiter is
 * among the last group's bytes. With no rate switch pending the wait is wait_rx's protocol in the
 * fewest instructions (rx_bursts, fw_uart_ops.h), since it runs once per 16 bytes (QEMU's FIFO
 * never holds more, so every burst of a frame sleeps once: 1,900 times per second of raw audio):
 * RTRIG is cleared, TIMEOUT too when the FIFO is empty (stale; with bytes there it may be theirs
 * and ends the wait at once), then Channel_sts is read again before WFI: a condition met after
 * that look raises the interrupt again and WFI returns at once (UG585 B.33 Chnl_int_sts_reg0,
 * write 1 to clear; QEMU's model sets the bit again at the write when the level still holds).
 * While a switch waits for its frame, wait_rx (which watches the revert time) takes each burst's
 * wait. */
static inline uint32_t rx_group(uint8_t *d, uint32_t g, uint32_t *zz, uint32_t *zero)
{
    /* the bytes' minimum, one VMIN a burst on NEON: it is 0 exactly when a delimiter is among
     * them (fw_uart_ops.h) */
    rx_min_t lo = rx_min_start();
    uint32_t i = 0;
    if (!rate_pending) {
        i = rx_bursts(FW_UART_BASE, &GTIMER_LO, d, g, zz, &lo);
    } else {
        for (; i < g; i++) {
            if (i % RX_GROUP == 0u && i != 0u) {
                if (rx_min_zero(lo)) {
                    break;
                }
                lo = rx_min_start();
            }
            const uint32_t t = GTIMER_LO;
            const uint32_t sr = wait_rx(RX_BURST);
            *zz += GTIMER_LO - t;
            if ((sr & XUART_SR_RTRIG) == 0u) {
                break;
            }
            lo = rx_burst(&UART(XUART_FIFO), d + RX_BURST * i, lo);
        }
    }
    *zero = rx_min_zero(lo);
    return i;
}

/* Takes bytes until a frame delimiter (0x00) is among them or cap are taken, sleeping while they
 * have not arrived: whole bursts first, as many as the `need` bytes the caller still expects
 * hold, in groups of RX_GROUP (rx_group), each group searched for the delimiter once; then the
 * rest of `need` (fewer than a burst: a frame's header or its last bytes): from an empty FIFO,
 * after waiting for exactly that many (the trigger level set to it), taken without another look;
 * one byte at a time while RxEMPTY (bit 1) is clear when fewer are there (a short frame's
 * delimiter may be among them: no wait for bytes that may never come) or the receiver time-out
 * ended the wait short of them. Waking
 * once a burst, not for each byte of a FIFO that QEMU refills as it drains, and taking a whole
 * frame per call, the call, the server's bookkeeping and its two timer reads are paid once a
 * frame. Chnl_int_sts ROVR (bit 5, write 1 to clear; set whether or not the interrupt is enabled,
 * UG585 §19.2.4 and B.33 Chnl_int_sts_reg0) records a byte lost to a full RX FIFO since the last
 * read: counted here, reported in INFO. */
static size_t fifo_read(uint8_t *dst, size_t cap, size_t need, size_t *clean, uint32_t *slept)
{
    size_t n = 0;
    size_t last = 0; /* where the last look's bytes start */
    uint32_t zz = 0;
    uint32_t zero = 0;
    uint32_t bursts = (uint32_t)((need < cap ? need : cap) / RX_BURST);
    if (bursts != 0u && rx_level != RX_BURST) {
        UART(XUART_RXWM) = RX_BURST;
        rx_level = RX_BURST;
    }
    if (bursts != 0u) {
        const uint32_t got = rx_group(dst, bursts, &zz, &zero);
        n = RX_BURST * got;
        /* the last group's start: a delimiter is among its bytes only */
        last = got != 0u ? RX_BURST * RX_GROUP * ((got - 1u) / RX_GROUP) : 0u;
    }
    while (!zero && n < cap) {
        /* the bytes still needed, at least one, at most a burst */
        size_t k = need > n ? need - n : 1u;
        k = k < cap - n ? k : cap - n;
        k = k < RX_BURST ? k : RX_BURST;
        if (k != rx_level) {
            UART(XUART_RXWM) = (uint32_t)k;
            rx_level = (uint32_t)k;
        }
        uint32_t sr = UART(XUART_SR);
        /* fewer there than k (a short frame's delimiter may be among them): taken one by one
         * below, no wait; an empty FIFO: wait for k */
        if ((sr & (XUART_SR_RTRIG | XUART_SR_RXEMPTY)) == XUART_SR_RXEMPTY) {
            const uint32_t t = GTIMER_LO;
            sr = wait_rx((uint32_t)k);
            zz += GTIMER_LO - t;
        }
        last = n;
        if ((sr & XUART_SR_RTRIG) != 0u) {
            /* k bytes are there */
            for (size_t i = 0; i < k; i++) {
                const uint32_t c = UART(XUART_FIFO) & 0xFFu;
                dst[n++] = (uint8_t)c;
                if (c == 0u) {
                    zero = 1;
                    break;
                }
            }
        } else {
            /* fewer than k, or the receiver time-out: what came, one byte at a time */
            while (n < cap && (UART(XUART_SR) & XUART_SR_RXEMPTY) == 0u) {
                const uint32_t c = UART(XUART_FIFO) & 0xFFu;
                dst[n++] = (uint8_t)c;
                if (c == 0u) {
                    zero = 1;
                    break;
                }
            }
        }
    }
    if ((UART(XUART_ISR) & XUART_IXR_ROVR) != 0u) {
        UART(XUART_ISR) = XUART_IXR_ROVR;
        rx_overruns++;
    }
    *clean = zero ? last : n;
    *slept = zz;
    return n;
}

/* CPSR.I (ARM DDI 0406C B1.3.3): the receive interrupt's handler and fw_uart_read never run at
 * once. */
static inline uint32_t irq_mask(void)
{
    uint32_t cpsr;
    __asm__ volatile("mrs %0, cpsr\n\tcpsid i" : "=r"(cpsr)::"memory");
    return cpsr;
}

static inline void irq_restore(uint32_t cpsr)
{
    __asm__ volatile("msr cpsr_c, %0" ::"r"(cpsr) : "memory");
}

/* What the ring holds, up to and with the first delimiter, at most cap bytes: a stretch at a
 * time (the ring's end splits it), its 16-byte chunks with no delimiter copied whole
 * (rx_copy_clean, fw_uart_ops.h), the rest byte by byte up to the delimiter. */
static size_t ring_read(uint8_t *dst, size_t cap, size_t *clean)
{
    const uint32_t head = ring_head;
    size_t n = 0;
    while (ring_tail != head && n < cap) {
        const uint32_t at = ring_tail & (FW_RX_RING - 1u);
        size_t span = head - ring_tail;
        span = span < FW_RX_RING - at ? span : FW_RX_RING - at;
        span = span < cap - n ? span : cap - n;
        const uint8_t *src = &rx_ring[at];
        size_t i = rx_copy_clean(dst + n, src, span);
        for (; i < span; i++) {
            const uint8_t c = src[i];
            dst[n + i] = c;
            if (c == 0u) {
                ring_tail += (uint32_t)(i + 1u);
                *clean = n + i;
                return n + i + 1u;
            }
        }
        ring_tail += (uint32_t)span;
        n += span;
    }
    *clean = n;
    return n;
}

/* The ring first (bytes keep their order); when it held no delimiter and fewer bytes than the
 * caller needs, the FIFO next in the same call: a frame whose first bytes the interrupt caught
 * (they came while the server worked between two reads, IRQs unmasked) is still taken whole here,
 * not a ring's worth per call with the interrupt catching the next burst in between. The trigger
 * level is left at RX_BURST, so that the interrupt moves bursts (fw_uart_isr). */
size_t fw_uart_read(uint8_t *dst, size_t cap, size_t need, size_t *clean, uint32_t *slept)
{
    const uint32_t cpsr = irq_mask();
    size_t n = 0;
    size_t c = 0;
    *slept = 0;
    if (ring_tail != ring_head) {
        n = ring_read(dst, cap, &c);
        if (c != n || n == cap || need <= n) {
            *clean = c;
            irq_restore(cpsr);
            return n;
        }
    }
    const size_t m = fifo_read(dst + n, cap - n, need - n, &c, slept);
    *clean = n + c;
    n += m;
    if (rx_level != RX_BURST) {
        UART(XUART_RXWM) = RX_BURST;
        rx_level = RX_BURST;
    }
    /* nothing left for the handler: the status the polled read saw is not a new interrupt */
    if ((UART(XUART_SR) & XUART_SR_RXEMPTY) != 0u) {
        UART(XUART_ISR) = XUART_IXR_RTRIG | XUART_IXR_TOUT;
    }
    irq_restore(cpsr);
    return n;
}

/* The receive interrupt (fw_irq.c): the RX FIFO into the ring, then its status cleared (write 1
 * to clear, UG585 B.33 Chnl_int_sts_reg0); a byte that finds the ring full is counted and lost
 * (the host's window keeps in flight no more than the ring holds). One look at Channel_sts per
 * step: a whole burst when RTRIG says the FIFO holds one (the trigger level is RX_BURST outside
 * fw_uart_read) and the ring has room for it in one stretch (rx_burst, as fw_uart_read takes
 * them; the handler saves the caller-saved NEON registers, startup.S), else one byte while RxEMPTY
 * is clear, but fewer than a burst only once the receiver time-out says the line went idle:
 * otherwise they stay for the next interrupt (RTRIG again) or fw_uart_read, which reads the FIFO
 * after the ring. Under QEMU, which refills the FIFO a byte for every byte read, draining it byte
 * by byte ran on through whole frames at 10 instructions a byte. */
void fw_uart_isr(void)
{
    uint32_t head = ring_head;
    const uint32_t bursts = rx_level == RX_BURST;
    const uint32_t idle = (UART(XUART_ISR) & XUART_IXR_TOUT) != 0u;
    for (;;) {
        const uint32_t sr = UART(XUART_SR);
        const uint32_t at = head & (FW_RX_RING - 1u);
        if (bursts && (sr & XUART_SR_RTRIG) != 0u && head - ring_tail <= FW_RX_RING - RX_BURST &&
            at <= FW_RX_RING - RX_BURST) {
            (void)rx_burst(&UART(XUART_FIFO), &rx_ring[at], rx_min_start());
            head += RX_BURST;
            continue;
        }
        if ((sr & XUART_SR_RXEMPTY) != 0u || (bursts && !idle && (sr & XUART_SR_RTRIG) == 0u)) {
            break;
        }
        const uint32_t c = UART(XUART_FIFO) & 0xFFu;
        if (head - ring_tail < FW_RX_RING) {
            rx_ring[at] = (uint8_t)c;
            head++;
        } else {
            ring_overruns++;
        }
    }
    ring_head = head;
    if ((UART(XUART_ISR) & XUART_IXR_ROVR) != 0u) {
        UART(XUART_ISR) = XUART_IXR_ROVR;
        rx_overruns++;
    }
    UART(XUART_ISR) = XUART_IXR_RTRIG | XUART_IXR_TOUT;
}

size_t fw_uart_pending(void)
{
    const uint32_t cpsr = irq_mask();
    size_t n = ring_head - ring_tail;
    n += (UART(XUART_SR) & XUART_SR_RXEMPTY) == 0u ? 1u : 0u;
    irq_restore(cpsr);
    return n;
}

void fw_uart_set_rate(uint32_t baud, uint16_t cd, uint16_t bdiv, uint32_t revert_ms)
{
    fw_uart_flush(); /* BAUD_ACK leaves at the old rate */
    const uint32_t cpsr = irq_mask();
    if (!rate_pending) {
        rate_old = rate_now;
        cd_old = (uint16_t)UART(XUART_BAUDGEN);
        bdiv_old = (uint16_t)UART(XUART_BAUDDIV);
    }
    program(cd, bdiv);
    rate_now = baud;
    revert_at = fw_timer_now() + (uint64_t)revert_ms * ((uint64_t)FW_TIMER_HZ / 1000u);
    rate_pending = 1;
    irq_restore(cpsr);
}

void fw_uart_confirm(void)
{
    rate_pending = 0;
}

void fw_uart_link_report(fw_uart_link_t *r)
{
    r->baud = rate_now;
    r->rx_ring = FW_RX_RING;
    r->ring_overruns = ring_overruns;
    r->rate_reverts = rate_reverts;
}

uint32_t fw_uart_rx_overruns(void)
{
    return rx_overruns;
}

int fw_uart_getc(uint8_t *c)
{
    if (UART(XUART_SR) & XUART_SR_RXEMPTY) {
        return 0;
    }
    *c = (uint8_t)UART(XUART_FIFO);
    return 1;
}

void fw_uart_flush(void)
{
    while ((UART(XUART_SR) & (XUART_SR_TXEMPTY | XUART_SR_TACTIVE)) != XUART_SR_TXEMPTY) {
    }
}
