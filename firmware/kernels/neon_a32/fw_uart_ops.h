/*
 * The Cadence UART's burst reads on the Cortex-A9 (firmware/board/zynq7000/fw_uart.c includes
 * this file; firmware/kernels/ref/fw_uart_ops.h is the plain C of the same functions): 16 bytes of
 * the RX FIFO into memory and their minimum, whose 0 says a frame delimiter is among them.
 */
#ifndef FW_UART_OPS_H
#define FW_UART_OPS_H

#include "elt_neon_a32.h"

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

/* The bursts' byte-wise minimum so far. */
typedef uint8x16_t rx_min_t;

static inline rx_min_t rx_min_start(void)
{
    return vdupq_n_u8(0xFFu);
}

/* One burst (RX_BURST = 16 bytes the FIFO holds) to d, one VMIN into the minimum. */
static inline rx_min_t rx_burst(volatile uint32_t *fifo, uint8_t *d, rx_min_t lo)
{
    const uint8x16_t a = fifo16(fifo);
    vst1q_u8(d, a);
    return vminq_u8(lo, a);
}

/* Whether a delimiter (0x00) was among the bursts (ARM DDI 0406C A8.8 VMIN, VPMIN). */
static inline uint32_t rx_min_zero(rx_min_t lo)
{
    uint8x8_t h = vmin_u8(vget_low_u8(lo), vget_high_u8(lo));
    h = vpmin_u8(h, h);
    h = vpmin_u8(h, h);
    h = vpmin_u8(h, h);
    return vget_lane_u8(h, 0) == 0u;
}

#endif /* FW_UART_OPS_H */
