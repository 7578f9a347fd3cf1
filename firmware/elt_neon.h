/*
 * The one NEON switch of the kernels, and what their NEON paths share.
 *
 * ELT_NEON is 1 on an ARMv7-A core with Advanced SIMD (the Cortex-A9 of the Zynq-7000: gcc
 * -mfpu=neon defines __ARM_NEON) and 0 on the host, on AArch64 (the inline assembly below is
 * A32) and in -DELT_SCALAR builds, which run the plain C of the same contract over the same
 * arrays. Every kernel tests ELT_NEON and nothing else (the TFLM/CMSIS-NN pattern of a reference
 * and an optimised variant behind one switch).
 */
#ifndef ELT_NEON_H
#define ELT_NEON_H

#include <stdint.h>

#if defined(__ARM_NEON) && !defined(__aarch64__) && !defined(ELT_SCALAR)
#define ELT_NEON 1
#else
#define ELT_NEON 0
#endif

#if ELT_NEON
#include <arm_neon.h>

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
#endif

#endif /* ELT_NEON_H */
