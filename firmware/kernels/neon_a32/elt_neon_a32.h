/*
 * What every header of firmware/kernels/neon_a32 includes first: the check that the build has
 * NEON, and the NEON helpers more than one kernel calls.
 *
 * The folder holds the Cortex-A9's Advanced SIMD form (ARMv7-A, A32 state; ARM DDI 0406C
 * chapter A4) of the kernels' operations; firmware/kernels/ref holds the same operations in plain
 * C under the same file and function names (codegen/target/sources.py chooses the folder).
 */
#ifndef ELT_NEON_A32_H
#define ELT_NEON_A32_H

#include <stdint.h>

#include "elt_neon.h"

#if !ELT_NEON
/* a build without NEON takes firmware/kernels/ref (codegen/target/sources.py) */
#error "firmware/kernels/neon_a32 needs a NEON build: gcc -mfpu=neon, no -DELT_SCALAR"
#endif

_Static_assert(sizeof(void *) == sizeof(uint32_t), "the σ gather keeps addresses in uint32 lanes");

/* σ of 8 Q4.11 inputs from the exhaustive int16 table: lane k = mid[x_k], `mid` = the address of
 * the table's entry for 0 (sigmoid_full[32768]) in every lane. VSHLL.S16 #1 sign-extends and
 * doubles x, VADD forms the 8 addresses; each VMOV moves two of them to core registers and
 * VLD1.16 loads one lane from each (gcc would move them one by one, hence the asm). The LSTM
 * and GRU kernels call it; the generated LSTM kernels (codegen/emit/lstm_neon.py) emit the same
 * sequence. */
static inline __attribute__((always_inline)) int16x8_t elt_sigmoid8(int16x8_t x, int32x4_t mid)
{
    const int32x4_t a0 = vaddq_s32(mid, vshll_n_s16(vget_low_s16(x), 1));
    const int32x4_t a1 = vaddq_s32(mid, vshll_n_s16(vget_high_s16(x), 1));
    int16x8_t y;
    uint32_t r0, r1, r2, r3;
    __asm__("vmov      %[r0], %[r1], %e[a0]\n\t"
            "vmov      %[r2], %[r3], %f[a0]\n\t"
            "vld1.16   {%e[y][0]}, [%[r0]]\n\t"
            "vld1.16   {%e[y][1]}, [%[r1]]\n\t"
            "vld1.16   {%e[y][2]}, [%[r2]]\n\t"
            "vld1.16   {%e[y][3]}, [%[r3]]\n\t"
            "vmov      %[r0], %[r1], %e[a1]\n\t"
            "vmov      %[r2], %[r3], %f[a1]\n\t"
            "vld1.16   {%f[y][0]}, [%[r0]]\n\t"
            "vld1.16   {%f[y][1]}, [%[r1]]\n\t"
            "vld1.16   {%f[y][2]}, [%[r2]]\n\t"
            "vld1.16   {%f[y][3]}, [%[r3]]"
            : [y] "=&w"(y), [r0] "=&r"(r0), [r1] "=&r"(r1), [r2] "=&r"(r2), [r3] "=&r"(r3)
            : [a0] "w"(a0), [a1] "w"(a1)); /* reads only the constant table */
    return y;
}

#endif /* ELT_NEON_A32_H */
