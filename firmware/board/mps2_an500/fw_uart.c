/*
 * CMSDK APB UART driver (ARM DDI 0479C, "APB UART"; registers: mps2_an500.h): UART0 of the MPS2
 * AN500 image, polled.
 *
 * The UART holds one received byte (STATE.RXFULL) and one byte to send (STATE.TXFULL). The driver
 * reads the link only while the server waits for a frame, and sleeps in WFI between bytes: the
 * receive interrupt (CTRL.RXINTEN, NVIC IRQ 0) is enabled for the wait only, with PRIMASK set, so
 * it wakes the core without being taken (ARM DDI 0403E B1.5.19: WFI wakes on an interrupt that
 * would preempt were PRIMASK clear), and its pending state is cleared before PRIMASK is restored.
 * No interrupt handler runs: nothing lands in the timed stages.
 *
 * Bytes that arrive while the device computes wait in the sender: QEMU's model takes a byte from
 * its chardev only while RXFULL is clear (hw/char/cmsdk-apb-uart.c, uart_can_receive), so none is
 * lost there; on the board a byte that finds RXFULL set is an overrun (STATE.RXOVR, counted). The
 * board reports a receive ring of 0 bytes (fw_platform.c), so the host keeps one frame in flight
 * (docs/protocol.md, "Windowed link": stop-and-wait).
 */
#include "fw_uart.h"

#include "fw_config.h"
#include "fw_timer.h"
#include "mps2_an500.h"

#define UART(reg) MPS2_REG32(FW_UART_BASE + (reg))

_Static_assert(FW_UART_BAUDDIV >= 16u && FW_UART_BAUDDIV < (1u << 20),
               "BAUDDIV is 20 bits, at least 16 (DDI 0479C, APB UART)");

/* RX overruns seen (STATE.RXOVR), for INFO's board block. */
static uint32_t rx_overruns;

void fw_uart_init(void)
{
    UART(CMSDK_UART_CTRL) = 0u;
    UART(CMSDK_UART_BAUDDIV) = FW_UART_BAUDDIV;
    UART(CMSDK_UART_STATE) = CMSDK_UART_STATE_TXOVR | CMSDK_UART_STATE_RXOVR;
    UART(CMSDK_UART_INTSTATUS) = 0xFu;
    UART(CMSDK_UART_CTRL) = CMSDK_UART_CTRL_TXEN | CMSDK_UART_CTRL_RXEN;
    /* The receive interrupt at the NVIC: a wake-up source only (wait_rx). */
    MPS2_REG32(NVIC_ICPR0) = 1u << MPS2_IRQ_UART0_RX;
    MPS2_REG32(NVIC_ISER0) = 1u << MPS2_IRQ_UART0_RX;
}

void fw_uart_putc(uint8_t c)
{
    while (UART(CMSDK_UART_STATE) & CMSDK_UART_STATE_TXFULL) {
    }
    UART(CMSDK_UART_DATA) = c;
}

void fw_uart_write(const uint8_t *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        fw_uart_putc(data[i]);
    }
}

/* PRIMASK (ARM DDI 0403E B1.4.3): masks every interrupt but NMI and HardFault. */
static inline uint32_t irq_mask(void)
{
    uint32_t primask;
    __asm__ volatile("mrs %0, primask\n\tcpsid i" : "=r"(primask)::"memory");
    return primask;
}

static inline void irq_restore(uint32_t primask)
{
    __asm__ volatile("msr primask, %0" ::"r"(primask) : "memory");
}

static void forget_rx_interrupt(void)
{
    UART(CMSDK_UART_INTSTATUS) = CMSDK_UART_INT_RX;
    MPS2_REG32(NVIC_ICPR0) = 1u << MPS2_IRQ_UART0_RX;
}

/* Sleep until a byte is there (at once when it is); called with PRIMASK set. The interrupt's
 * status is cleared before each look: a byte that comes after the look sets it again, and WFI
 * then returns at once, so no byte is slept through. */
static void wait_rx(void)
{
    UART(CMSDK_UART_CTRL) |= CMSDK_UART_CTRL_RXINTEN;
    for (;;) {
        forget_rx_interrupt();
        if (UART(CMSDK_UART_STATE) & CMSDK_UART_STATE_RXFULL) {
            break;
        }
        __asm__ volatile("dsb\n\twfi" ::: "memory");
    }
    UART(CMSDK_UART_CTRL) &= ~CMSDK_UART_CTRL_RXINTEN;
    forget_rx_interrupt();
}

static uint8_t take(void)
{
    if (UART(CMSDK_UART_STATE) & CMSDK_UART_STATE_RXOVR) {
        UART(CMSDK_UART_STATE) = CMSDK_UART_STATE_RXOVR;
        rx_overruns++;
    }
    return (uint8_t)UART(CMSDK_UART_DATA);
}

/* Bytes until the frame's delimiter, or cap of them, or the need the server named once no byte is
 * waiting (need 0: as soon as none is); sleeping while the UART holds nothing. */
size_t fw_uart_read(uint8_t *dst, size_t cap, size_t need, size_t *clean, uint32_t *slept)
{
    const uint32_t primask = irq_mask();
    size_t n = 0;
    uint32_t zz = 0;
    int zero = 0;
    while (n < cap && !zero) {
        if ((UART(CMSDK_UART_STATE) & CMSDK_UART_STATE_RXFULL) == 0u) {
            if (n != 0u && n >= need) {
                break;
            }
            const uint32_t t = fw_timer_now32();
            wait_rx();
            zz += fw_timer_now32() - t;
        }
        const uint8_t c = take();
        dst[n++] = c;
        zero = c == 0u;
    }
    irq_restore(primask);
    *clean = zero ? n - 1u : n;
    *slept = zz;
    return n;
}

size_t fw_uart_pending(void)
{
    return (UART(CMSDK_UART_STATE) & CMSDK_UART_STATE_RXFULL) != 0u ? 1u : 0u;
}

uint32_t fw_uart_rx_overruns(void)
{
    return rx_overruns;
}

int fw_uart_getc(uint8_t *c)
{
    if ((UART(CMSDK_UART_STATE) & CMSDK_UART_STATE_RXFULL) == 0u) {
        return 0;
    }
    *c = take();
    return 1;
}

void fw_uart_wait_rx(void)
{
    const uint32_t primask = irq_mask();
    wait_rx();
    irq_restore(primask);
}

/* The byte in the TX buffer has gone once TXFULL is clear: the APB UART has no separate shift
 * register status (DDI 0479C, APB UART). */
void fw_uart_flush(void)
{
    while (UART(CMSDK_UART_STATE) & CMSDK_UART_STATE_TXFULL) {
    }
}
