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

/* σ of 8 Q4.11 inputs by the contract's interpolation (docs/numeric.md §4, elt_sigmoid_q15)
 * from the pair table `pairs`: word j = T[j] | (T[j+1] - T[j]) << 16, 256 words (1 KiB, inside
 * the Cortex-A9's 32 KiB L1 data cache where the exhaustive 128 KiB table was not). a = |x|
 * saturated (VQABS: min(|x|, 32767)), j = a >> 7, f = a & 127; one VLD1.32 lane load per value
 * brings T[j] and the difference d together, VUZP.16 separates them, and
 * σ⁺ = T[j] + ((d·f + 64) >> 7) is VMUL.I16 (d·f < 2^16: d <= 512, f <= 127, unsigned) and
 * VRSRA.U16 #7 (the rounding shift-and-add, A8.8.374); the mirror 32768 - σ⁺ for x < 0 is one
 * VSUB and a bit select by the sign. `base` holds the table's address in every lane. The LSTM
 * and GRU kernels call it; the generated LSTM kernels (codegen/emit/lstm_neon.py) emit the same
 * sequence. */
static inline __attribute__((always_inline)) int16x8_t elt_sigmoid8(int16x8_t x, uint32x4_t base)
{
    const uint16x8_t neg = vreinterpretq_u16_s16(vshrq_n_s16(x, 15));
    const uint16x8_t a = vreinterpretq_u16_s16(vqabsq_s16(x));
    const uint16x8_t f = vandq_u16(a, vdupq_n_u16(127u));
    const uint16x8_t j4 = vbicq_u16(vshrq_n_u16(a, 5), vdupq_n_u16(3u));
    const uint32x4_t a0 = vaddw_u16(base, vget_low_u16(j4));
    const uint32x4_t a1 = vaddw_u16(base, vget_high_u16(j4));
    uint32x4_t w0, w1;
    uint32_t r0, r1, r2, r3;
    __asm__("vmov      %[r0], %[r1], %e[a0]\n\t"
            "vmov      %[r2], %[r3], %f[a0]\n\t"
            "vld1.32   {%e[w0][0]}, [%[r0]]\n\t"
            "vld1.32   {%e[w0][1]}, [%[r1]]\n\t"
            "vld1.32   {%f[w0][0]}, [%[r2]]\n\t"
            "vld1.32   {%f[w0][1]}, [%[r3]]\n\t"
            "vmov      %[r0], %[r1], %e[a1]\n\t"
            "vmov      %[r2], %[r3], %f[a1]\n\t"
            "vld1.32   {%e[w1][0]}, [%[r0]]\n\t"
            "vld1.32   {%e[w1][1]}, [%[r1]]\n\t"
            "vld1.32   {%f[w1][0]}, [%[r2]]\n\t"
            "vld1.32   {%f[w1][1]}, [%[r3]]"
            : [w0] "=&w"(w0), [w1] "=&w"(w1), [r0] "=&r"(r0), [r1] "=&r"(r1), [r2] "=&r"(r2),
              [r3] "=&r"(r3)
            : [a0] "w"(a0), [a1] "w"(a1)); /* reads only the constant table */
    const uint16x8x2_t lo_d = vuzpq_u16(vreinterpretq_u16_u32(w0), vreinterpretq_u16_u32(w1));
    const uint16x8_t pos = vrsraq_n_u16(lo_d.val[0], vmulq_u16(lo_d.val[1], f), 7);
    const uint16x8_t mir = vsubq_u16(vdupq_n_u16(32768u), pos);
    return vreinterpretq_s16_u16(vbslq_u16(neg, mir, pos));
}

/* Four 32-bit addresses to a gathered pair (T[j], T[j+1]) per lane (the entropy's exp2 and
 * log2 tables, the sampler's Gaussian octave table): two addresses per
 * VMOV, then VLD2 with register spacing 2 (ARM DDI 0406C A8.8.323, A8.8.324) puts T[j] of lanes
 * 0-3 in one q-register and T[j+1] in the next, the lanes 0 and 2 by the all-lanes form (no
 * register to clear first), 1 and 3 by lane. Written out because GCC's VLD2 intrinsics use
 * spacing 1 and then move the halves together (four VORR a gather). */
static inline __attribute__((always_inline)) int32x4x2_t elt_gather2(uint32x4_t adr)
{
    register int32x4_t lo __asm__("q8");
    register int32x4_t hi __asm__("q9");
    uint32_t a0;
    uint32_t a1;
    uint32_t a2;
    uint32_t a3;
    int32x4x2_t g;
    __asm__("vmov %[a0], %[a1], %e[adr]\n\t"
            "vmov %[a2], %[a3], %f[adr]\n\t"
            "vld2.32 {d16[], d18[]}, [%[a0]]\n\t"
            "vld2.32 {d17[], d19[]}, [%[a2]]\n\t"
            "vld2.32 {d16[1], d18[1]}, [%[a1]]\n\t"
            "vld2.32 {d17[1], d19[1]}, [%[a3]]"
            : "=w"(lo), "=w"(hi), [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3)
            : [adr] "w"(adr)
            : "memory");
    g.val[0] = lo;
    g.val[1] = hi;
    return g;
}

#endif /* ELT_NEON_A32_H */
