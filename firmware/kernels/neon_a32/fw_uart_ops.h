/*
 * The Cadence UART's burst reads on the Cortex-A9 (firmware/board/zynq7000/fw_uart.c includes
 * this file; firmware/kernels/ref/fw_uart_ops.h is the plain C of the same functions): 16 bytes of
 * the RX FIFO into memory and their minimum, whose 0 says a frame delimiter is among them, and 16
 * bytes from memory into the TX FIFO.
 */
#ifndef FW_UART_OPS_H
#define FW_UART_OPS_H

#include "elt_neon_a32.h"

/* One burst: 16 reads of TX_RX_FIFO0 (at the asm operand %[f]), one into each 32-bit lane of
 * d16-d23. */
#define FW_FIFO16_LOADS                                                                            \
    "vld1.32 {d16[0]}, [%[f]]\n\tvld1.32 {d16[1]}, [%[f]]\n\t"                                     \
    "vld1.32 {d17[0]}, [%[f]]\n\tvld1.32 {d17[1]}, [%[f]]\n\t"                                     \
    "vld1.32 {d18[0]}, [%[f]]\n\tvld1.32 {d18[1]}, [%[f]]\n\t"                                     \
    "vld1.32 {d19[0]}, [%[f]]\n\tvld1.32 {d19[1]}, [%[f]]\n\t"                                     \
    "vld1.32 {d20[0]}, [%[f]]\n\tvld1.32 {d20[1]}, [%[f]]\n\t"                                     \
    "vld1.32 {d21[0]}, [%[f]]\n\tvld1.32 {d21[1]}, [%[f]]\n\t"                                     \
    "vld1.32 {d22[0]}, [%[f]]\n\tvld1.32 {d22[1]}, [%[f]]\n\t"                                     \
    "vld1.32 {d23[0]}, [%[f]]\n\tvld1.32 {d23[1]}, [%[f]]\n\t"

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
    __asm__ volatile(FW_FIFO16_LOADS "vtbl.8 %e[v], {d16, d17, d18, d19}, %P[idx]\n\t"
                                     "vtbl.8 %f[v], {d20, d21, d22, d23}, %P[idx]"
                     : [v] "=&w"(v)
                     : [f] "r"(fifo), [idx] "w"(idx)
                     : "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "memory");
    return v;
}

/* 16 bytes from d into the TX FIFO (at the asm operand %[f]): one VLD1, the bytes widened to
 * 32-bit lanes (VMOVL, ARM DDI 0406C A8.8), one 32-bit VST1 lane store each (the register's width;
 * the byte in bits [7:0], UG585 B.33 TX_RX_FIFO0): 23 instructions against 64 for a byte loop of
 * LDRB and STR. In asm: lane stores to one address must neither merge nor move. */
static inline void tx_burst(volatile uint32_t *fifo, const uint8_t *d)
{
    __asm__ volatile("vld1.8 {d16-d17}, [%[d]]\n\t"
                     "vmovl.u8 q9, d16\n\t"
                     "vmovl.u8 q10, d17\n\t"
                     "vmovl.u16 q11, d18\n\t"
                     "vmovl.u16 q12, d19\n\t"
                     "vmovl.u16 q13, d20\n\t"
                     "vmovl.u16 q14, d21\n\t"
                     "vst1.32 {d22[0]}, [%[f]]\n\tvst1.32 {d22[1]}, [%[f]]\n\t"
                     "vst1.32 {d23[0]}, [%[f]]\n\tvst1.32 {d23[1]}, [%[f]]\n\t"
                     "vst1.32 {d24[0]}, [%[f]]\n\tvst1.32 {d24[1]}, [%[f]]\n\t"
                     "vst1.32 {d25[0]}, [%[f]]\n\tvst1.32 {d25[1]}, [%[f]]\n\t"
                     "vst1.32 {d26[0]}, [%[f]]\n\tvst1.32 {d26[1]}, [%[f]]\n\t"
                     "vst1.32 {d27[0]}, [%[f]]\n\tvst1.32 {d27[1]}, [%[f]]\n\t"
                     "vst1.32 {d28[0]}, [%[f]]\n\tvst1.32 {d28[1]}, [%[f]]\n\t"
                     "vst1.32 {d29[0]}, [%[f]]\n\tvst1.32 {d29[1]}, [%[f]]"
                     :
                     : [f] "r"(fifo), [d] "r"(d)
                     : "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26",
                       "d27", "d28", "d29", "memory");
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

/* Up to g (at least 1) bursts from the RX FIFO to d, each after its wait (fw_uart.c, rx_group:
 * RTRIG cleared, TIMEOUT too when the FIFO is empty, Channel_sts looked at again, then WFI until
 * RTRIG, or until TIMEOUT, which ends the bursts), the global timer read around each WFI (the
 * ticks asleep added to *zz), in groups of RX_GROUP: the bytes' minimum is looked at after each
 * group, and a delimiter among them ends the bursts there; the last group's minimum in *lo.
 * Returns the bursts taken. In asm: the loop runs once per 16 bytes of a frame, 1,900 times per
 * second of raw audio, and gcc spilled the timer's count around WFI: 38 instructions a burst here
 * against 43; the groups' loop is here too (12 instructions a group against 30 in C). No DSB
 * before WFI: the write that clears Chnl_int_sts is followed by a read of Channel_sts whose value
 * the branch needs, and accesses to one peripheral's Device memory stay in program order (ARM DDI
 * 0406C A3.5), so the clear has reached the UART before WFI; an interrupt line the GIC lowers a
 * little late could only wake the core once more, and the loop looks again. `uart` is
 * the UART's base, `gt` the global timer's counter (UG585 B.33 Channel_sts_reg0,
 * Chnl_int_sts_reg0, TX_RX_FIFO0; Cortex-A9 MPCore TRM §4.4 Global Timer Counter Register). */
static inline uint32_t rx_bursts(uintptr_t uart, volatile uint32_t *gt, uint8_t *d, uint32_t g,
                                 uint32_t *zz, rx_min_t *lo)
{
    const uint8x8_t idx = vcreate_u8(0x1C1814100C080400u);
    uint32_t left = g; /* bursts not yet begun at the group's start */
    uint32_t size;     /* the group's bursts */
    uint32_t k;        /* the group's bursts still to take */
    uint32_t z = *zz;
    uint8x16_t m;
    uint32_t s;
    uint32_t t;
    __asm__ volatile("0:\n\t"
                     "vmov.i8 %q[m], #255\n\t"
                     "cmp %[left], %[group]\n\t"
                     "movhi %[size], %[group]\n\t"
                     "movls %[size], %[left]\n\t"
                     "mov %[k], %[size]\n"
                     "1:\n\t"
                     "ldr %[s], [%[u], %[o_sr]]\n\t"
                     "and %[s], %[s], %[empty]\n\t"
                     "orr %[s], %[one], %[s], lsl #7\n\t"
                     "str %[s], [%[u], %[o_isr]]\n\t"
                     "ldr %[s], [%[u], %[o_sr]]\n\t"
                     "tst %[s], %[rtrig]\n\t"
                     "bne 3f\n"
                     "2:\n\t"
                     "ldr %[t], [%[gt]]\n\t"
                     "wfi\n\t"
                     "ldr %[s], [%[gt]]\n\t"
                     "sub %[s], %[s], %[t]\n\t"
                     "add %[z], %[z], %[s]\n\t"
                     "ldr %[s], [%[u], %[o_sr]]\n\t"
                     "tst %[s], %[rtrig]\n\t"
                     "bne 3f\n\t"
                     "ldr %[s], [%[u], %[o_isr]]\n\t"
                     "tst %[s], %[tout]\n\t"
                     "beq 2b\n\t"
                     "b 4f\n"
                     "3:\n\t" FW_FIFO16_LOADS "vtbl.8 d24, {d16, d17, d18, d19}, %P[idx]\n\t"
                     "vtbl.8 d25, {d20, d21, d22, d23}, %P[idx]\n\t"
                     "vst1.8 {d24-d25}, [%[d]]!\n\t"
                     "vmin.u8 %q[m], %q[m], q12\n\t"
                     "subs %[k], %[k], #1\n\t"
                     "bne 1b\n\t"
                     /* the group's end: its minimum 0 (a delimiter) ends the bursts */
                     "vmin.u8 d24, %e[m], %f[m]\n\t"
                     "vpmin.u8 d24, d24, d24\n\t"
                     "vpmin.u8 d24, d24, d24\n\t"
                     "vpmin.u8 d24, d24, d24\n\t"
                     "vmov.u8 %[s], d24[0]\n\t"
                     "sub %[left], %[left], %[size]\n\t"
                     "cmp %[s], #0\n\t"
                     "cmpne %[left], #0\n\t"
                     "bne 0b\n\t"
                     "mov %[size], #0\n"
                     "4:"
                     : [d] "+r"(d), [left] "+r"(left), [size] "=&r"(size), [k] "=&r"(k),
                       [z] "+r"(z), [m] "=&w"(m), [s] "=&r"(s), [t] "=&r"(t)
                     : [u] "r"(uart), [f] "r"(uart + XUART_FIFO), [gt] "r"(gt), [idx] "w"(idx),
                       [one] "r"(XUART_IXR_RTRIG), [group] "I"(RX_GROUP), [o_sr] "I"(XUART_SR),
                       [o_isr] "I"(XUART_ISR), [empty] "I"(XUART_SR_RXEMPTY),
                       [rtrig] "I"(XUART_SR_RTRIG), [tout] "I"(XUART_IXR_TOUT)
                     : "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "cc",
                       "memory");
    *zz = z;
    *lo = m;
    /* a group's end leaves size 0 (left counts it); TIMEOUT leaves the group open */
    return g - left + (size - k);
}

/* The receive ring's bytes to the frame's buffer, 16 at a time while no 0x00 is among them
 * (VCEQ, the two halves ORed, one look in the core registers; ARM DDI 0406C A8.8): returns the
 * bytes copied, a multiple of 16 at most n; the chunk with a delimiter is left for the byte-wise
 * copy. */
static inline size_t rx_copy_clean(uint8_t *d, const uint8_t *s, size_t n)
{
    size_t i = 0;
    for (; i + 16u <= n; i += 16u) {
        const uint8x16_t v = vld1q_u8(s + i);
        const uint8x16_t z = vceqq_u8(v, vdupq_n_u8(0u));
        const uint8x8_t o = vorr_u8(vget_low_u8(z), vget_high_u8(z));
        if (vget_lane_u64(vreinterpret_u64_u8(o), 0) != 0u) {
            break;
        }
        vst1q_u8(d + i, v);
    }
    return i;
}

#endif /* FW_UART_OPS_H */
