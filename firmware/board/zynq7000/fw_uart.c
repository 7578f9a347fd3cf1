/* Polled Cadence UART driver. Register names and bits: zynq7000.h (UG585 B.33). */
#include "fw_uart.h"

#include "elt_neon.h"
#include "fw_config.h"
#include "zynq7000.h"

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

#if FW_UART_INDEX == 0
#define UART_IRQ ZYNQ_IRQ_UART0
#else
#define UART_IRQ ZYNQ_IRQ_UART1
#endif

void fw_uart_init(void)
{
    /* UG585 §19.3.1 "Example: Configure the UART": disable, set divisors, reset, enable. */
    UART(XUART_CR) = XUART_CR_TX_DIS | XUART_CR_RX_DIS;
    UART(XUART_IDR) = XUART_IXR_ALL;
    UART(XUART_ISR) = XUART_IXR_ALL;
    UART(XUART_MR) = XUART_MR_8N1;
    /* baud = uart_ref_clk / (CD * (BDIV + 1)), UG585 §19.2.3; CD and BDIV chosen by codegen. */
    UART(XUART_BAUDGEN) = FW_UART_CD;
    UART(XUART_BAUDDIV) = FW_UART_BDIV;
    UART(XUART_CR) = XUART_CR_TXRST | XUART_CR_RXRST;
    while (UART(XUART_CR) & (XUART_CR_TXRST | XUART_CR_RXRST)) {
    }
    UART(XUART_RXWM) = RX_BURST;
    rx_level = RX_BURST;
    UART(XUART_RXTOUT) = RX_TIMEOUT_RTO;
    UART(XUART_CR) = XUART_CR_TX_EN | XUART_CR_RX_EN | XUART_CR_RSTTO | XUART_CR_STPBRK;

    /* Wake-up path for the waits: UART RX trigger or receiver time-out -> GIC -> CPU0, highest
     * priority. */
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
 * TxFULL look per byte; the last bytes one by one. */
void fw_uart_write(const uint8_t *data, size_t len)
{
    const uint8_t *end = data + len;
    while (end - data >= (ptrdiff_t)TX_BURST) {
        while ((UART(XUART_SR) & XUART_SR_TXEMPTY) == 0u) {
        }
        for (uint32_t i = 0; i < TX_BURST; i++) {
            UART(XUART_FIFO) = data[i];
        }
        data += TX_BURST;
    }
    while (data != end) {
        fw_uart_putc(*data++);
    }
}

#if ELT_NEON
/* 16 reads of TX_RX_FIFO0, one 32-bit VLD1 lane load each (the register's width; the byte is in
 * bits [7:0], UG585 B.33), then each word's low byte picked by two VTBL lookups (ARM DDI 0406C
 * A8.8.413): 18 instructions for 16 bytes against 32 for LDR/STRB pairs, and the bytes are in a
 * vector for the delimiter search. In asm: lane loads from one address must neither merge nor
 * move. */
static inline uint8x16_t fifo16(volatile uint32_t *fifo)
{
    uint8x16_t v;
    /* byte 0 of each of the 8 words in a 4-register table */
    const uint8x8_t idx = vcreate_u8(0x1C1814100C080400u);
    __asm__ volatile("vld1.32 {d16[0]}, [%[f]]\n\tvld1.32 {d16[1]}, [%[f]]\n\t"
                     "vld1.32 {d17[0]}, [%[f]]\n\tvld1.32 {d17[1]}, [%[f]]\n\t"
                     "vld1.32 {d18[0]}, [%[f]]\n\tvld1.32 {d18[1]}, [%[f]]\n\t"
                     "vld1.32 {d19[0]}, [%[f]]\n\tvld1.32 {d19[1]}, [%[f]]\n\t"
                     "vld1.32 {d20[0]}, [%[f]]\n\tvld1.32 {d20[1]}, [%[f]]\n\t"
                     "vld1.32 {d21[0]}, [%[f]]\n\tvld1.32 {d21[1]}, [%[f]]\n\t"
                     "vld1.32 {d22[0]}, [%[f]]\n\tvld1.32 {d22[1]}, [%[f]]\n\t"
                     "vld1.32 {d23[0]}, [%[f]]\n\tvld1.32 {d23[1]}, [%[f]]\n\t"
                     "vtbl.8 %e[v], {d16, d17, d18, d19}, %P[idx]\n\t"
                     "vtbl.8 %f[v], {d20, d21, d22, d23}, %P[idx]"
                     : [v] "=&w"(v)
                     : [f] "r"(fifo), [idx] "w"(idx)
                     : "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "memory");
    return v;
}
#endif

/* The global timer's low word (fw_timer.c), read in line: the sleeps in fw_uart_read are timed
 * to leave them out of the link's work. */
#define GTIMER_LO ZYNQ_REG32(ZYNQ_GTIMER_BASE + GTIMER_COUNTER_LO)

/* Bursts per look for a delimiter: a delimiter ends the read after the group of RX_GROUP bursts
 * that holds it, so fewer than FW_RX_CHUNK (256) bytes follow it (fw_uart.h). */
#define RX_GROUP 16u

/* Up to g bursts of RX_BURST bytes to d: per burst one look at Channel_sts (RTRIG: the RX FIFO
 * holds RX_BURST bytes, UG585 B.33 Channel_sts_reg0 bit 0) and, when they are not there yet, a
 * timed sleep (wait_rx) until they are; then the 16 bytes without another look. Returns the
 * bursts taken (fewer when the line went idle short of a burst: a damaged length, line noise),
 * adds the ticks slept to *zz and sets *zero when a delimiter is among the bytes. */
static inline uint32_t rx_group(uint8_t *d, uint32_t g, uint32_t *zz, uint32_t *zero)
{
    uint32_t i = 0;
#if ELT_NEON
    /* the bytes' minimum, one VMIN a burst: it is 0 exactly when a delimiter is among them */
    uint8x16_t lo = vdupq_n_u8(0xFFu);
#else
    uint32_t lo = 0xFFu;
#endif
    for (; i < g; i++) {
        uint32_t sr = UART(XUART_SR);
        if ((sr & XUART_SR_RTRIG) == 0u) {
            /* the wait for the host is not link work */
            const uint32_t t = GTIMER_LO;
            sr = wait_rx(RX_BURST);
            *zz += GTIMER_LO - t;
            if ((sr & XUART_SR_RTRIG) == 0u) {
                break; /* the line went idle short of a burst */
            }
        }
#if ELT_NEON
        const uint8x16_t a = fifo16(&UART(XUART_FIFO));
        vst1q_u8(d, a);
        lo = vminq_u8(lo, a);
#else
        for (uint32_t k = 0; k < RX_BURST; k++) {
            const uint32_t c = UART(XUART_FIFO) & 0xFFu;
            d[k] = (uint8_t)c;
            lo = c < lo ? c : lo;
        }
#endif
        d += RX_BURST;
    }
#if ELT_NEON
    uint8x8_t h = vmin_u8(vget_low_u8(lo), vget_high_u8(lo));
    h = vpmin_u8(h, h);
    h = vpmin_u8(h, h);
    h = vpmin_u8(h, h);
    *zero = vget_lane_u8(h, 0) == 0u;
#else
    *zero = lo == 0u;
#endif
    return i;
}

/* Takes bytes until a frame delimiter (0x00) is among them or cap are taken, sleeping while they
 * have not arrived: whole bursts first, as many as the `need` bytes the caller still expects
 * hold, in groups of RX_GROUP (rx_group), the group searched for the delimiter once; then the
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
size_t fw_uart_read(uint8_t *dst, size_t cap, size_t need, size_t *clean, uint32_t *slept)
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
    while (bursts != 0u) {
        const uint32_t g = bursts < RX_GROUP ? bursts : RX_GROUP;
        last = n;
        const uint32_t got = rx_group(dst + n, g, &zz, &zero);
        n += RX_BURST * got;
        bursts -= got;
        if (zero || got < g) {
            break;
        }
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
