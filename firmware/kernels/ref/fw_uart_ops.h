/*
 * The Cadence UART's burst reads in plain C (firmware/board/zynq7000/fw_uart.c includes this
 * file; firmware/kernels/neon_a32/fw_uart_ops.h is the NEON form of the same functions): 16 loads
 * of the RX FIFO (the byte in bits [7:0], UG585 B.33) and their minimum.
 */
#ifndef FW_UART_OPS_H
#define FW_UART_OPS_H

typedef uint32_t rx_min_t;

static inline rx_min_t rx_min_start(void)
{
    return 0xFFu;
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

#endif /* FW_UART_OPS_H */
