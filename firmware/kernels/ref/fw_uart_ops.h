/*
 * The Cadence UART's burst reads in plain C (firmware/board/zynq7000/fw_uart.c includes this
 * file; firmware/kernels/neon_a32/fw_uart_ops.h is the NEON form of the same functions): 16 loads
 * of the RX FIFO (the byte in bits [7:0], UG585 B.33) and their minimum, 16 writes of the TX
 * FIFO.
 */
#ifndef FW_UART_OPS_H
#define FW_UART_OPS_H

typedef uint32_t rx_min_t;

static inline rx_min_t rx_min_start(void)
{
    return 0xFFu;
}

/* 16 bytes from d into the TX FIFO, one write each (the byte in bits [7:0], UG585 B.33). */
static inline void tx_burst(volatile uint32_t *fifo, const uint8_t *d)
{
    for (uint32_t k = 0; k < 16u; k++) {
        *fifo = d[k];
    }
}

static inline rx_min_t rx_burst(volatile uint32_t *fifo, uint8_t *d, rx_min_t lo)
{
    for (uint32_t k = 0; k < 16u; k++) {
        const uint32_t c = *fifo & 0xFFu;
        d[k] = (uint8_t)c;
        lo = c < lo ? c : lo;
    }
    return lo;
}

static inline uint32_t rx_min_zero(rx_min_t lo)
{
    return lo == 0u;
}

/* Up to g (at least 1) bursts from the RX FIFO to d, each after its wait (fw_uart.c, rx_group:
 * RTRIG cleared, TIMEOUT too when the FIFO is empty, Channel_sts looked at again, then WFI until
 * RTRIG, or until TIMEOUT, which ends the bursts), the global timer read around each WFI (the
 * ticks asleep added to *zz), in groups of RX_GROUP: the bytes' minimum is looked at after each
 * group, and a delimiter among them ends the bursts there; the last group's minimum in *lo.
 * Returns the bursts taken. */
static inline uint32_t rx_bursts(uintptr_t uart, volatile uint32_t *gt, uint8_t *d, uint32_t g,
                                 uint32_t *zz, rx_min_t *lo)
{
    volatile uint32_t *const sr = (volatile uint32_t *)(uart + XUART_SR);
    volatile uint32_t *const isr = (volatile uint32_t *)(uart + XUART_ISR);
    uint32_t i = 0;
    for (; i < g; i++) {
        if (i % RX_GROUP == 0u) {
            if (i != 0u && *lo == 0u) {
                return i;
            }
            *lo = 0xFFu;
        }
        *isr = XUART_IXR_RTRIG | ((*sr & XUART_SR_RXEMPTY) << 7);
        while ((*sr & XUART_SR_RTRIG) == 0u) {
            const uint32_t t = *gt;
            __asm__ volatile("dsb\n\twfi" ::: "memory");
            *zz += *gt - t;
            if ((*sr & XUART_SR_RTRIG) == 0u && (*isr & XUART_IXR_TOUT) != 0u) {
                return i;
            }
        }
        *lo = rx_burst((volatile uint32_t *)(uart + XUART_FIFO), d, *lo);
        d += 16;
    }
    return i;
}

/* No bulk copy: fw_uart.c's byte-wise loop copies the ring's bytes. */
static inline size_t rx_copy_clean(uint8_t *d, const uint8_t *s, size_t n)
{
    (void)d;
    (void)s;
    (void)n;
    return 0;
}

#endif /* FW_UART_OPS_H */
