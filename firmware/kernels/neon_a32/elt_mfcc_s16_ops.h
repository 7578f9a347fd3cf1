/*
 * The integer MFCC front end's operations on the Cortex-A9 (firmware/elt_mfcc_s16.c includes this
 * file after its scalar stages; firmware/kernels/ref/elt_mfcc_s16_ops.h is the plain C of the
 * same functions): the window, block exponent and first FFT stages as one radix-4 pass, the
 * remaining stages two at a time, the power of four bins, the mel sums and four logarithms, two
 * DCT coefficients at a time, and the sample copies of the stream, in NEON intrinsics and inline
 * assembly (ARM DDI 0406C chapter A8 for each instruction).
 */
#ifndef ELT_MFCC_S16_OPS_H
#define ELT_MFCC_S16_OPS_H

#include "elt_neon_a32.h"

/* Every NEON register the assembly blocks below use (d8-d15 are callee-saved: GCC saves
 * them once per call). */
#define MFCC_NEON_CLOBBERS                                                                         \
    "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13", "d14", \
        "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", \
        "d28", "d29", "d30", "d31"

/* bitlen(max |u|) = bitlen(OR of |u|) (the highest set bit of any value is the max's), so the
 * 64-bit lanes need only VORR. The window is non-negative (Q1.30, [0, 2^31)) and VABS.S16
 * leaves -32768 as 0x8000, which read unsigned is |x|: |u| = VMULL.U32(|x|, w) (ARM DDI 0406C
 * A8.8, VABS, VMULL), eight samples a step. */
static int32_t mfcc_exponent_exact(const elt_mfcc_params_t *p, const int16_t *pcm)
{
    const int32_t W = p->win_length, W8 = W & ~7, W16 = W & ~15;
    const uint32_t *win = (const uint32_t *)p->window;
    uint64x2_t o0 = vdupq_n_u64(0), o1 = vdupq_n_u64(0);
    uint64_t m;
    int32_t n = W16;
    if (W16 > 0) {
        /* sixteen samples a step in assembly (the same products and ORs; GCC's loop takes
         * four more instructions per eight samples) */
        const int16_t *x = pcm;
        const uint32_t *wp = win;
        int32_t k = W16 / 16;
        uint64_t lo;
        /* clang-format off */
        __asm__ volatile(
            "vmov.i32 q8, #0\n\t"
            "vmov.i32 q9, #0\n\t"
            "1:\n\t"
            "vld1.16 {d0-d3}, [%[x]]!\n\t"
            "vld1.32 {d4-d7}, [%[w]]!\n\t"
            "vld1.32 {d8-d11}, [%[w]]!\n\t"
            "vabs.s16 q0, q0\n\t"
            "vabs.s16 q1, q1\n\t"
            "vmovl.u16 q10, d0\n\t"
            "vmovl.u16 q11, d1\n\t"
            "vmovl.u16 q12, d2\n\t"
            "vmovl.u16 q13, d3\n\t"
            "vmull.u32 q14, d20, d4\n\t"
            "vmull.u32 q15, d21, d5\n\t"
            "vorr q8, q8, q14\n\t"
            "vorr q9, q9, q15\n\t"
            "vmull.u32 q14, d22, d6\n\t"
            "vmull.u32 q15, d23, d7\n\t"
            "vorr q8, q8, q14\n\t"
            "vorr q9, q9, q15\n\t"
            "vmull.u32 q14, d24, d8\n\t"
            "vmull.u32 q15, d25, d9\n\t"
            "vorr q8, q8, q14\n\t"
            "vorr q9, q9, q15\n\t"
            "vmull.u32 q14, d26, d10\n\t"
            "vmull.u32 q15, d27, d11\n\t"
            "vorr q8, q8, q14\n\t"
            "vorr q9, q9, q15\n\t"
            "subs %[k], %[k], #1\n\t"
            "bne 1b\n\t"
            "vorr q8, q8, q9\n\t"
            "vorr d16, d16, d17\n\t"
            "vmov %Q[lo], %R[lo], d16\n\t"
            : [x] "+r"(x), [w] "+r"(wp), [k] "+r"(k), [lo] "=r"(lo)
            :
            : "memory", "cc", MFCC_NEON_CLOBBERS);
        /* clang-format on */
        o0 = vdupq_n_u64(lo);
    }
    for (; n < W8; n += 8) {
        const uint16x8_t a = vreinterpretq_u16_s16(vabsq_s16(vld1q_s16(pcm + n)));
        const uint32x4_t a0 = vmovl_u16(vget_low_u16(a)), a1 = vmovl_u16(vget_high_u16(a));
        const uint32x4_t w0 = vld1q_u32(win + n), w1 = vld1q_u32(win + n + 4);
        o0 = vorrq_u64(o0, vmull_u32(vget_low_u32(a0), vget_low_u32(w0)));
        o1 = vorrq_u64(o1, vmull_u32(vget_high_u32(a0), vget_high_u32(w0)));
        o0 = vorrq_u64(o0, vmull_u32(vget_low_u32(a1), vget_low_u32(w1)));
        o1 = vorrq_u64(o1, vmull_u32(vget_high_u32(a1), vget_high_u32(w1)));
    }
    o0 = vorrq_u64(o0, o1);
    m = vgetq_lane_u64(o0, 0) | vgetq_lane_u64(o0, 1);
    for (n = W8; n < W; ++n) {
        const int64_t u = (int64_t)pcm[n] * p->window[n];
        m |= u < 0 ? (uint64_t)0 - (uint64_t)u : (uint64_t)u;
    }
    return mfcc_bitlen64(m) - p->frame_bits;
}

/* The block exponent, first from the high words only: VQDMULH.S32(|x|, w) = (2 |x| w) >> 32 =
 * u >> 31 (|x| <= 2^15 and 0 <= w < 2^31: no saturation), four samples an instruction
 * (ARM DDI 0406C A8.8.373). If any is non-zero, bitlen(max u) = bitlen(OR of u >> 31) + 31 for
 * the samples of the whole blocks of 16, and the others are few (exact products); otherwise
 * every u < 2^31 (a near-silent frame) and mfcc_exponent_exact decides. */
static int32_t mfcc_exponent(const elt_mfcc_params_t *p, const int16_t *pcm)
{
    const int32_t W = p->win_length, W16 = W & ~15;
    const int16_t *x = pcm;
    const int32_t *wp = p->window;
    int32_t k = W16 / 16, n, b;
    uint32_t hi = 0, lo;
    uint64_t m = 0;
    if (k > 0) {
        /* clang-format off */
        __asm__ volatile(
            "vmov.i32 q12, #0\n\t"
            "vmov.i32 q13, #0\n\t"
            "1:\n\t"
            "vld1.16 {d0-d3}, [%[x]]!\n\t"
            "vld1.32 {d4-d7}, [%[w]]!\n\t"
            "vld1.32 {d8-d11}, [%[w]]!\n\t"
            "vabs.s16 q0, q0\n\t"
            "vabs.s16 q1, q1\n\t"
            "vmovl.u16 q8, d0\n\t"
            "vmovl.u16 q9, d1\n\t"
            "vmovl.u16 q10, d2\n\t"
            "vmovl.u16 q11, d3\n\t"
            "vqdmulh.s32 q8, q8, q2\n\t"
            "vqdmulh.s32 q9, q9, q3\n\t"
            "vqdmulh.s32 q10, q10, q4\n\t"
            "vqdmulh.s32 q11, q11, q5\n\t"
            "vorr q12, q12, q8\n\t"
            "vorr q13, q13, q9\n\t"
            "vorr q12, q12, q10\n\t"
            "vorr q13, q13, q11\n\t"
            "subs %[k], %[k], #1\n\t"
            "bne 1b\n\t"
            "vorr q12, q12, q13\n\t"
            "vorr d24, d24, d25\n\t"
            "vmov %[hi], %[lo], d24\n\t"
            "orr %[hi], %[hi], %[lo]\n\t"
            : [x] "+r"(x), [w] "+r"(wp), [k] "+r"(k), [hi] "=r"(hi), [lo] "=&r"(lo)
            :
            : "memory", "cc", MFCC_NEON_CLOBBERS);
        /* clang-format on */
    }
    if (hi == 0) {
        return mfcc_exponent_exact(p, pcm);
    }
    for (n = W16; n < W; ++n) {
        const int64_t u = (int64_t)pcm[n] * p->window[n];
        m |= u < 0 ? (uint64_t)0 - (uint64_t)u : (uint64_t)u;
    }
    b = 63 - __builtin_clz(hi);
    b = mfcc_bitlen64(m) > b ? mfcc_bitlen64(m) : b;
    return b - p->frame_bits;
}

/* z[n .. n + 3] of the packed frame z[n] = f[2n] + i f[2n + 1], real and imaginary parts
 * apart (VLD2 deinterleaves): f = VRSHL.S64(VMULL.S32(x, w), -sh), which is rshift_round(u, sh)
 * for sh > 0 and the exact u 2^-sh otherwise (ARM DDI 0406C A8.8, VRSHL), narrowed by VMOVN
 * (|f| <= 2^frame_bits); samples past the window are 0. */
static inline __attribute__((always_inline)) int32x4_t mfcc_scale(int16x4_t x, int32x4_t w,
                                                                  int64x2_t nsh)
{
    const int32x4_t x32 = vmovl_s16(x);
    const int64x2_t u0 = vmull_s32(vget_low_s32(x32), vget_low_s32(w));
    const int64x2_t u1 = vmull_s32(vget_high_s32(x32), vget_high_s32(w));
    return vcombine_s32(vmovn_s64(vrshlq_s64(u0, nsh)), vmovn_s64(vrshlq_s64(u1, nsh)));
}

static inline __attribute__((always_inline)) int32x4x2_t mfcc_quad(const elt_mfcc_params_t *p,
                                                                   const int16_t *pcm, int32_t n,
                                                                   int64x2_t nsh)
{
    const int32_t W = p->win_length, i = 2 * n;
    int32x4x2_t z;
    if (i + 8 <= W) {
        const int16x4x2_t x = vld2_s16(pcm + i);
        const int32x4x2_t w = vld2q_s32(p->window + i);
        z.val[0] = mfcc_scale(x.val[0], w.val[0], nsh);
        z.val[1] = mfcc_scale(x.val[1], w.val[1], nsh);
    } else if (i >= W) {
        z.val[0] = vdupq_n_s32(0);
        z.val[1] = z.val[0];
    } else {
        int16_t xt[8] = {0};
        int32_t wt[8] = {0};
        int32_t c;
        for (c = 0; c < W - i; ++c) {
            xt[c] = pcm[i + c];
            wt[c] = p->window[i + c];
        }
        {
            const int16x4x2_t x = vld2_s16(xt);
            const int32x4x2_t w = vld2q_s32(wt);
            z.val[0] = mfcc_scale(x.val[0], w.val[0], nsh);
            z.val[1] = mfcc_scale(x.val[1], w.val[1], nsh);
        }
    }
    return z;
}

/* One head step with every quad read by the bounds-checked mfcc_quad (the steps the
 * assembly runs below do not cover): stages h = 1 and 2 of the radix-4 butterflies at
 * bit-reversed positions 4g .. 4g + 3 for the four r .. r + 3. */
static inline __attribute__((always_inline)) void mfcc_head_step(const elt_mfcc_params_t *p,
                                                                 const int16_t *pcm, int32_t *z,
                                                                 int32_t r, int32_t Q,
                                                                 int64x2_t nsh)
{
    int32x4x4_t y01, y23;
    int32_t *o0 = z + 2 * p->bitrev[r], *o1 = z + 2 * p->bitrev[r + 1];
    int32_t *o2 = z + 2 * p->bitrev[r + 2], *o3 = z + 2 * p->bitrev[r + 3];
    const int32x4x2_t a = mfcc_quad(p, pcm, r, nsh), c = mfcc_quad(p, pcm, r + Q, nsh);
    const int32x4x2_t b = mfcc_quad(p, pcm, r + 2 * Q, nsh);
    const int32x4x2_t d = mfcc_quad(p, pcm, r + 3 * Q, nsh);
    const int32x4_t s0r = vaddq_s32(a.val[0], b.val[0]), s0i = vaddq_s32(a.val[1], b.val[1]);
    const int32x4_t s1r = vsubq_s32(a.val[0], b.val[0]), s1i = vsubq_s32(a.val[1], b.val[1]);
    const int32x4_t s2r = vaddq_s32(c.val[0], d.val[0]), s2i = vaddq_s32(c.val[1], d.val[1]);
    const int32x4_t s3r = vsubq_s32(c.val[0], d.val[0]), s3i = vsubq_s32(c.val[1], d.val[1]);
    /* stage h = 2: twiddle 1 for the pair (0, 2), -i for (1, 3) */
    y01.val[0] = vaddq_s32(s0r, s2r);
    y01.val[1] = vaddq_s32(s0i, s2i);
    y01.val[2] = vaddq_s32(s1r, s3i);
    y01.val[3] = vsubq_s32(s1i, s3r);
    y23.val[0] = vsubq_s32(s0r, s2r);
    y23.val[1] = vsubq_s32(s0i, s2i);
    y23.val[2] = vsubq_s32(s1r, s3i);
    y23.val[3] = vaddq_s32(s1i, s3r);
    vst4q_lane_s32(o0, y01, 0);
    vst4q_lane_s32(o0 + 4, y23, 0);
    vst4q_lane_s32(o1, y01, 1);
    vst4q_lane_s32(o1 + 4, y23, 1);
    vst4q_lane_s32(o2, y01, 2);
    vst4q_lane_s32(o2 + 4, y23, 2);
    vst4q_lane_s32(o3, y01, 3);
    vst4q_lane_s32(o3 + 4, y23, 3);
}

/* A whole quad in assembly: x [x] (VLD2.16: even samples d0, odd d1), the window [w] (VLD2.32:
 * q2, q3), f = VMOVN(VRSHL.S64(VMULL.S32(x, w), q15 = -sh)) as mfcc_scale: real parts to
 * dr0:dr1, imaginary to di0:di1; q8-q11 scratch. */
#define MFCC_QUAD_ASM(x, w, dr0, dr1, di0, di1)                                                    \
    "vld2.16 {d0-d1}, [" x "]\n\t"                                                                 \
    "vld2.32 {d4-d7}, [" w "]\n\t"                                                                 \
    "vmovl.s16 q8, d0\n\t"                                                                         \
    "vmovl.s16 q9, d1\n\t"                                                                         \
    "vmull.s32 q10, d16, d4\n\t"                                                                   \
    "vmull.s32 q11, d17, d5\n\t"                                                                   \
    "vrshl.s64 q10, q10, q15\n\t"                                                                  \
    "vrshl.s64 q11, q11, q15\n\t"                                                                  \
    "vmovn.i64 " dr0 ", q10\n\t"                                                                   \
    "vmovn.i64 " dr1 ", q11\n\t"                                                                   \
    "vmull.s32 q10, d18, d6\n\t"                                                                   \
    "vmull.s32 q11, d19, d7\n\t"                                                                   \
    "vrshl.s64 q10, q10, q15\n\t"                                                                  \
    "vrshl.s64 q11, q11, q15\n\t"                                                                  \
    "vmovn.i64 " di0 ", q10\n\t"                                                                   \
    "vmovn.i64 " di1 ", q11\n\t"

/* The outputs of a head step (y01 in q8-q11, y23 in q0-q3) and the loop's end. The lanes
 * r + l (r a multiple of 4) land at bitrev[r] + bitrev[l] = P, P + N/2, P + N/4, P + 3N/4 for
 * l = 0, 1, 2, 3: one table read, then lanes 0, 2, 1, 3 are N/4 positions = 2N bytes apart,
 * the pointer stepping on by VST4's register post-increment ([inc] = 2N - 16); VST4.32 single
 * lane, register list double-spaced (ARM DDI 0406C A8.8, VST4). */
#define MFCC_HEAD_OUT                                                                              \
    "ldrh %[t], [%[br]], #8\n\t"                                                                   \
    "add %[t], %[z], %[t], lsl #3\n\t"                                                             \
    "vst4.32 {d16[0], d18[0], d20[0], d22[0]}, [%[t]]!\n\t"                                        \
    "vst4.32 {d0[0], d2[0], d4[0], d6[0]}, [%[t]], %[inc]\n\t"                                     \
    "vst4.32 {d17[0], d19[0], d21[0], d23[0]}, [%[t]]!\n\t"                                        \
    "vst4.32 {d1[0], d3[0], d5[0], d7[0]}, [%[t]], %[inc]\n\t"                                     \
    "vst4.32 {d16[1], d18[1], d20[1], d22[1]}, [%[t]]!\n\t"                                        \
    "vst4.32 {d0[1], d2[1], d4[1], d6[1]}, [%[t]], %[inc]\n\t"                                     \
    "vst4.32 {d17[1], d19[1], d21[1], d23[1]}, [%[t]]!\n\t"                                        \
    "vst4.32 {d1[1], d3[1], d5[1], d7[1]}, [%[t]]\n\t"                                             \
    "add %[x], %[x], #16\n\t"                                                                      \
    "add %[w], %[w], #32\n\t"                                                                      \
    "subs %[n], %[n], #1\n\t"                                                                      \
    "bne 1b\n\t"

/* The stage h = 1 and 2 sums of a head step from a (q12, q13), c (q4, q5) and b (q6, q7), as
 * mfcc_head_step with s2 = s3 = c; without b: b = 0. */
#define MFCC_HEAD_ABC                                                                              \
    "vadd.i32 q14, q12, q6\n\t"                                                                    \
    "vsub.i32 q12, q12, q6\n\t"                                                                    \
    "vadd.i32 q6, q13, q7\n\t"                                                                     \
    "vsub.i32 q13, q13, q7\n\t"                                                                    \
    "vadd.i32 q8, q14, q4\n\t"                                                                     \
    "vadd.i32 q9, q6, q5\n\t"                                                                      \
    "vadd.i32 q10, q12, q5\n\t"                                                                    \
    "vsub.i32 q11, q13, q4\n\t"                                                                    \
    "vsub.i32 q0, q14, q4\n\t"                                                                     \
    "vsub.i32 q1, q6, q5\n\t"                                                                      \
    "vsub.i32 q2, q12, q5\n\t"                                                                     \
    "vadd.i32 q3, q13, q4\n\t"
#define MFCC_HEAD_AC                                                                               \
    "vadd.i32 q8, q12, q4\n\t"                                                                     \
    "vadd.i32 q9, q13, q5\n\t"                                                                     \
    "vadd.i32 q10, q12, q5\n\t"                                                                    \
    "vsub.i32 q11, q13, q4\n\t"                                                                    \
    "vsub.i32 q0, q12, q4\n\t"                                                                     \
    "vsub.i32 q1, q13, q5\n\t"                                                                     \
    "vsub.i32 q2, q12, q5\n\t"                                                                     \
    "vadd.i32 q3, q13, q4\n\t"

/* A head step's loads in mfcc_head_run: quad a at x, w (d24-d27), c a quarter on (d8-d11) and,
 * with b, b half way (d12-d15). */
/* clang-format off */
#define MFCC_HEAD_LOAD_AC                                                                          \
    "1:\n\t"                                                                                       \
    MFCC_QUAD_ASM("%[x]", "%[w]", "d24", "d25", "d26", "d27")                                      \
    "add %[t], %[x], %[off]\n\t"                                                                   \
    "add %[u], %[w], %[off], lsl #1\n\t"                                                           \
    MFCC_QUAD_ASM("%[t]", "%[u]", "d8", "d9", "d10", "d11")
#define MFCC_HEAD_LOAD_B                                                                           \
    "add %[t], %[t], %[off]\n\t"                                                                   \
    "add %[u], %[u], %[off], lsl #1\n\t"                                                           \
    MFCC_QUAD_ASM("%[t]", "%[u]", "d12", "d13", "d14", "d15")
/* clang-format on */
/* The operands of both head runs, with the scale's operand (the shift, or the multiplier). */
#define MFCC_HEAD_OPERANDS(scale)                                                                  \
    : [x] "+r"(x), [w] "+r"(w), [br] "+r"(br), [n] "+r"(n), [t] "=&r"(t), [u] "=&r"(u)            \
    : [off] "r"(off), [z] "r"(z), scale, [inc] "r"(2 * p->n_cfft - 16)                             \
    : "memory", "cc", MFCC_NEON_CLOBBERS

/* n head steps from r whose quads a = z[r..] and c = z[r + Q..] are whole, d = z[r + 3Q..]
 * zero, and b = z[r + 2Q..] whole (with_b) or zero: mfcc_head_step in assembly (GCC moves the
 * int32x4x4_t values for VST4 through the stack). a: q12, q13; c: q4, q5; b: q6, q7; the
 * outputs by the formulas of mfcc_head_step, s2 = s3 = c. */
static void mfcc_head_run(const elt_mfcc_params_t *p, const int16_t *pcm, int32_t *z, int32_t r,
                          int32_t n, int32_t sh, const int with_b)
{
    const int16_t *x = pcm + 2 * r;
    const int32_t *w = p->window + 2 * r;
    const uint16_t *br = p->bitrev + r;
    const int32_t off = p->n_cfft; /* bytes of 2Q int16 samples: quad n to quad n + Q */
    int32_t t, u;
    if (with_b) {
        __asm__ volatile("vdup.32 q15, %[nsh]\n\t" MFCC_HEAD_LOAD_AC MFCC_HEAD_LOAD_B MFCC_HEAD_ABC
                             MFCC_HEAD_OUT MFCC_HEAD_OPERANDS([nsh] "r"(-sh)));
    } else {
        __asm__ volatile("vdup.32 q15, %[nsh]\n\t" MFCC_HEAD_LOAD_AC MFCC_HEAD_AC MFCC_HEAD_OUT
                             MFCC_HEAD_OPERANDS([nsh] "r"(-sh)));
    }
}

/* A whole quad by one rounding product each, for 17 <= sh <= 31: m = x 2^(31 - sh) is exact in
 * the int32 lanes of VMULL.S16 by the scalar 2^(31 - sh) <= 2^14 in d2[0] (|m| <= 2^29), and
 * VQRDMULH.S32(m, w) = rshift_round(m w, 31) = rshift_round(x w, sh) (no saturation: |m| <
 * 2^31), the integers of mfcc_scale (ARM DDI 0406C A8.8.351 VMULL by scalar, A8.8.374
 * VQRDMULH). Real parts to qr, imaginary to qi; q8, q9 scratch. */
#define MFCC_QUAD_FAST_ASM(x, w, qr, qi)                                                           \
    "vld2.16 {d0-d1}, [" x "]\n\t"                                                                 \
    "vld2.32 {d4-d7}, [" w "]\n\t"                                                                 \
    "vmull.s16 q8, d0, d2[0]\n\t"                                                                  \
    "vmull.s16 q9, d1, d2[0]\n\t"                                                                  \
    "vqrdmulh.s32 " qr ", q8, q2\n\t"                                                              \
    "vqrdmulh.s32 " qi ", q9, q3\n\t"

/* The same loads in mfcc_head_run_fast (a: q12, q13; c: q4, q5; b: q6, q7), d2 set each step. */
/* clang-format off */
#define MFCC_HEAD_FAST_LOAD_AC                                                                     \
    "1:\n\t"                                                                                       \
    "vdup.16 d2, %[mul]\n\t"                                                                       \
    MFCC_QUAD_FAST_ASM("%[x]", "%[w]", "q12", "q13")                                               \
    "add %[t], %[x], %[off]\n\t"                                                                   \
    "add %[u], %[w], %[off], lsl #1\n\t"                                                           \
    MFCC_QUAD_FAST_ASM("%[t]", "%[u]", "q4", "q5")
#define MFCC_HEAD_FAST_LOAD_B                                                                      \
    "add %[t], %[t], %[off]\n\t"                                                                   \
    "add %[u], %[u], %[off], lsl #1\n\t"                                                           \
    MFCC_QUAD_FAST_ASM("%[t]", "%[u]", "q6", "q7")
/* clang-format on */

/* mfcc_head_run with MFCC_QUAD_FAST_ASM: mul = 2^(31 - sh), 17 <= sh <= 31 (the outputs reuse
 * d2, so each step sets it again). */
static void mfcc_head_run_fast(const elt_mfcc_params_t *p, const int16_t *pcm, int32_t *z,
                               int32_t r, int32_t n, int32_t mul, const int with_b)
{
    const int16_t *x = pcm + 2 * r;
    const int32_t *w = p->window + 2 * r;
    const uint16_t *br = p->bitrev + r;
    const int32_t off = p->n_cfft; /* bytes of 2Q int16 samples: quad n to quad n + Q */
    int32_t t, u;
    if (with_b) {
        __asm__ volatile(MFCC_HEAD_FAST_LOAD_AC MFCC_HEAD_FAST_LOAD_B MFCC_HEAD_ABC MFCC_HEAD_OUT
                             MFCC_HEAD_OPERANDS([mul] "r"(mul)));
    } else {
        __asm__ volatile(
            MFCC_HEAD_FAST_LOAD_AC MFCC_HEAD_AC MFCC_HEAD_OUT MFCC_HEAD_OPERANDS([mul] "r"(mul)));
    }
}

/* The smallest multiple of 4 >= x, within [0, q]. */
static inline int32_t mfcc_ceil4(int32_t x, int32_t q)
{
    return x <= 0 ? 0 : ((x + 3) & ~3) < q ? ((x + 3) & ~3) : q;
}

static void mfcc_head_steps(const elt_mfcc_params_t *p, const int16_t *pcm, int32_t *z, int32_t r,
                            int32_t e, int64x2_t nsh)
{
    for (; r < e; r += 4) {
        mfcc_head_step(p, pcm, z, r, p->n_cfft / 4, nsh);
    }
}

/* mfcc_head_steps, the call only for a run that has steps (the call saves d8-d15). */
static inline __attribute__((always_inline)) void mfcc_head_any(const elt_mfcc_params_t *p,
                                                                const int16_t *pcm, int32_t *z,
                                                                int32_t r, int32_t e, int64x2_t nsh)
{
    if (r < e) {
        mfcc_head_steps(p, pcm, z, r, e, nsh);
    }
}

/* Window, block exponent and the FFT stages h = 1 and 2 as one radix-4 pass (N >= 16): the
 * four inputs of the radix-4 butterfly landing at bit-reversed positions 4g .. 4g + 3 are
 * z[r], z[r + N/2], z[r + N/4], z[r + 3N/4] with r = bitrev[4g] < N/4. The two stages'
 * additions are exact, so their values are those of the radix-2 passes; each butterfly's four
 * outputs (8 words) go out by two VST4 single-lane stores (ARM DDI 0406C A8.8, VST4). Runs of
 * steps with whole or zero quads take the assembly, the rest the bounds-checked intrinsics. */
static int32_t mfcc_head(const elt_mfcc_params_t *p, const int16_t *pcm, int32_t *z)
{
    const int32_t N = p->n_cfft, Q = N / 4, W = p->win_length, sh = mfcc_exponent(p, pcm);
    /* Quad n is whole for n <= H = floor(W / 2) - 4 (2 n + 8 <= W) and zero for
     * n >= Z = ceil(W / 2) (2 n >= W). Steps r with a, b, c whole and d zero:
     * Z - 3Q <= r <= H - 2Q; with a, c whole and b, d zero: Z - 2Q <= r <= H - Q (H < Z, so
     * the first run comes before the second). */
    const int64x2_t nsh = vdupq_n_s64(-sh);
    const int32_t H = (W >> 1) - 4, Z = (W + 1) >> 1;
    const int32_t b0 = mfcc_ceil4(Z - 3 * Q, Q), b1 = mfcc_ceil4(H - 2 * Q + 1, Q);
    const int32_t abc1 = b1 > b0 ? b1 : b0, c0 = mfcc_ceil4(Z - 2 * Q, Q);
    const int32_t ac0 = c0 > abc1 ? c0 : abc1, c1 = mfcc_ceil4(H - Q + 1, Q);
    const int32_t ac1 = c1 > ac0 ? c1 : ac0;
    const int32_t fast = sh >= 17 && sh <= 31, mul = fast ? 1 << (31 - sh) : 0;
    mfcc_head_any(p, pcm, z, 0, b0, nsh);
    if (abc1 > b0 && fast) {
        mfcc_head_run_fast(p, pcm, z, b0, (abc1 - b0) / 4, mul, 1);
    } else if (abc1 > b0) {
        mfcc_head_run(p, pcm, z, b0, (abc1 - b0) / 4, sh, 1);
    }
    mfcc_head_any(p, pcm, z, abc1, ac0, nsh);
    if (ac1 > ac0 && fast) {
        mfcc_head_run_fast(p, pcm, z, ac0, (ac1 - ac0) / 4, mul, 0);
    } else if (ac1 > ac0) {
        mfcc_head_run(p, pcm, z, ac0, (ac1 - ac0) / 4, sh, 0);
    }
    mfcc_head_any(p, pcm, z, ac1, Q, nsh);
    return sh;
}

/* One radix-2 butterfly on four lanes in place, (ar, ai) +- (br, bi) (c - i s) with
 * tr = rmul(br, c) + rmul(bi, s), ti = rmul(bi, c) - rmul(br, s), each rmul one VQRDMULH.S32
 * (ARM DDI 0406C A8.8.374); q14, q15 are scratch. The generic product serves every j:
 * rmul(b, 2^31 - 1) = b and rmul(b, 0) = 0 for |b| <= 2^30 (stage values are proven
 * < 2^31 / 8), so twiddles 1 and -i give the integers of the exact scalar butterflies. */
#define MFCC_BFLY(ar, ai, br, bi, c, s)                                                            \
    "vqrdmulh.s32 q14, " br ", " c "\n\t"                                                          \
    "vqrdmulh.s32 q15, " bi ", " s "\n\t"                                                          \
    "vadd.i32 q14, q14, q15\n\t"                                                                   \
    "vqrdmulh.s32 q15, " bi ", " c "\n\t"                                                          \
    "vqrdmulh.s32 " bi ", " br ", " s "\n\t"                                                       \
    "vsub.i32 q15, q15, " bi "\n\t"                                                                \
    "vsub.i32 " br ", " ar ", q14\n\t"                                                             \
    "vsub.i32 " bi ", " ai ", q15\n\t"                                                             \
    "vadd.i32 " ar ", " ar ", q14\n\t"                                                             \
    "vadd.i32 " ai ", " ai ", q15\n\t"

/* Stages h >= 4 of mfcc_fft, four butterflies a step. Two stages h and 2h run as one radix-4
 * pass over z[g + j], z[g + j + h], z[g + j + 2h], z[g + j + 3h] (g a multiple of 4h): the
 * same butterflies with the same operands in the same order, kept in registers between the
 * stages instead of a store and a load (the data flow of a radix-2^2 DIT FFT; Oppenheim &
 * Schafer, "Discrete-Time Signal Processing", 3rd ed., §9.3). A last odd stage is radix-2.
 * The twiddles of each step are one block of fft_tw (codegen/emit/mfcc.py), read by VLD1 with
 * post-increment in the order the steps use them. Written as inline assembly, the loops over j
 * and over the groups both: GCC moves int32x4x2_t values for VST2 through the stack. Each
 * VLD2/VST2 with a register post-increment walks the four quarters, so the pointer ends at the
 * next group. */
static void mfcc_fft_neon(const elt_mfcc_params_t *p, int32_t *z)
{
    const int32_t N = p->n_cfft;
    const int32_t *tw = p->fft_tw;
    int32_t h, n, jn, n0, stride;
    int32_t *zj, *ld, *st;
    for (h = 4; 4 * h <= N; h <<= 2) {
        zj = z;
        jn = h / 4;
        n0 = N / (4 * h);
        stride = 8 * h; /* bytes between the quarters */
        /* clang-format off */
        __asm__ volatile(
            "1:\n\t"
            "vld1.32 {d16-d19}, [%[tw]]!\n\t"
            "vld1.32 {d20-d23}, [%[tw]]!\n\t"
            "vld1.32 {d24-d27}, [%[tw]]!\n\t"
            "mov %[ld], %[zj]\n\t"
            "mov %[st], %[zj]\n\t"
            "mov %[n], %[n0]\n\t"
            "2:\n\t"
            "vld2.32 {d0-d3}, [%[ld]], %[stride]\n\t"
            "vld2.32 {d4-d7}, [%[ld]], %[stride]\n\t"
            "vld2.32 {d8-d11}, [%[ld]], %[stride]\n\t"
            "vld2.32 {d12-d15}, [%[ld]], %[stride]\n\t"
            MFCC_BFLY("q0", "q1", "q2", "q3", "q8", "q9")
            MFCC_BFLY("q4", "q5", "q6", "q7", "q8", "q9")
            MFCC_BFLY("q0", "q1", "q4", "q5", "q10", "q11")
            MFCC_BFLY("q2", "q3", "q6", "q7", "q12", "q13")
            "vst2.32 {d0-d3}, [%[st]], %[stride]\n\t"
            "vst2.32 {d4-d7}, [%[st]], %[stride]\n\t"
            "vst2.32 {d8-d11}, [%[st]], %[stride]\n\t"
            "vst2.32 {d12-d15}, [%[st]], %[stride]\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 2b\n\t"
            "add %[zj], %[zj], #32\n\t"
            "subs %[jn], %[jn], #1\n\t"
            "bne 1b\n\t"
            : [tw] "+r"(tw), [zj] "+r"(zj), [jn] "+r"(jn), [ld] "=&r"(ld), [st] "=&r"(st),
              [n] "=&r"(n)
            : [stride] "r"(stride), [n0] "r"(n0)
            : "memory", "cc", MFCC_NEON_CLOBBERS);
        /* clang-format on */
    }
    if (2 * h <= N && p->fuse_n == 0) {
        /* h = N / 2: one butterfly group per j, four j a step, twiddles and data walking on */
        ld = z;
        st = z + 2 * h;
        n = h / 4;
        /* clang-format off */
        __asm__ volatile(
            "1:\n\t"
            "vld1.32 {d16-d19}, [%[tw]]!\n\t"
            "vld2.32 {d0-d3}, [%[a]]\n\t"
            "vld2.32 {d4-d7}, [%[b]]\n\t"
            MFCC_BFLY("q0", "q1", "q2", "q3", "q8", "q9")
            "vst2.32 {d0-d3}, [%[a]]!\n\t"
            "vst2.32 {d4-d7}, [%[b]]!\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b\n\t"
            : [a] "+r"(ld), [b] "+r"(st), [n] "+r"(n), [tw] "+r"(tw)
            :
            : "memory", "cc", MFCC_NEON_CLOBBERS);
        /* clang-format on */
    }
}

/* The power of the weighted bins. The NEON path takes four bins k .. k + 3 with
 * 1 <= k, k + 3 < N (no index wraps), in assembly (the intrinsics cost GCC stack traffic): z[k..]
 * by VLD2, z[N - k - 3 .. N - k] by VLD2 walking down and reversed (VREV64 in each doubleword,
 * VSWP of the halves), rmul is VQRDMULH.S32 (|c|, |s| < 2^31), the int32 sums wrap as the
 * scalar ones never need to (|2X| < 2^31, docs/numeric.md §7.2), P by VMULL.S32 and VMLAL.S32
 * (P < 2^63) and the rounding by VRSHL.S64 by -power_shift, which takes its shift from the low
 * byte of each lane (ARM DDI 0406C A8.8, VREV, VQRDMULH, VMLAL, VRSHL); the other bins take the
 * scalar code. */
static void mfcc_power_split(const elt_mfcc_params_t *p, const int32_t *z, int64_t *pw)
{
    const int32_t N = p->n_cfft, ps = p->power_shift, lo = p->bin_lo, nb = p->n_bins;
    const int32_t *cs = p->split_cos, *sn = p->split_sin;
    int32_t i = 0;
    int32_t n;
    if (lo == 0) {
        pw[0] = mfcc_bin_power(z, N, ps, 0, cs[0], sn[0]);
        i = 1;
    }
    /* blocks i with i + 4 <= nb and lo + i + 3 < N */
    n = (nb - i) / 4;
    if (N - 4 - lo - i < 0) {
        n = 0;
    } else if ((N - 4 - lo - i) / 4 + 1 < n) {
        n = (N - 4 - lo - i) / 4 + 1;
    }
    if (n > 0) {
        const int32_t *zk = z + 2 * (lo + i), *yk = z + 2 * (N - lo - i - 3);
        const int32_t *c = cs + i, *sv = sn + i;
        int64_t *o = pw + i;
        const int32_t down = -32;
        i += 4 * n;
        /* clang-format off */
        __asm__ volatile(
            "vdup.32 q15, %[nps]\n\t"
            "1:\n\t"
            "vld2.32 {d0-d3}, [%[zk]]!\n\t"
            "vld2.32 {d4-d7}, [%[yk]], %[down]\n\t"
            "vrev64.32 q2, q2\n\t"
            "vrev64.32 q3, q3\n\t"
            "vswp d4, d5\n\t"
            "vswp d6, d7\n\t"
            "vld1.32 {d16-d17}, [%[c]]!\n\t"
            "vld1.32 {d18-d19}, [%[s]]!\n\t"
            "vadd.i32 q10, q0, q2\n\t" /* ar */
            "vsub.i32 q11, q1, q3\n\t" /* ai */
            "vsub.i32 q12, q0, q2\n\t" /* br */
            "vadd.i32 q13, q1, q3\n\t" /* bi */
            "vqrdmulh.s32 q0, q13, q8\n\t"
            "vqrdmulh.s32 q1, q12, q9\n\t"
            "vadd.i32 q10, q10, q0\n\t"
            "vsub.i32 q10, q10, q1\n\t" /* xr = ar + rmul(bi, c) - rmul(br, s) */
            "vqrdmulh.s32 q2, q12, q8\n\t"
            "vqrdmulh.s32 q3, q13, q9\n\t"
            "vsub.i32 q11, q11, q2\n\t"
            "vsub.i32 q11, q11, q3\n\t" /* xi = ai - rmul(br, c) - rmul(bi, s) */
            "vmull.s32 q0, d20, d20\n\t"
            "vmull.s32 q1, d21, d21\n\t"
            "vmlal.s32 q0, d22, d22\n\t"
            "vmlal.s32 q1, d23, d23\n\t"
            "vrshl.s64 q0, q0, q15\n\t"
            "vrshl.s64 q1, q1, q15\n\t"
            "vst1.64 {d0-d3}, [%[o]]!\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b\n\t"
            : [zk] "+r"(zk), [yk] "+r"(yk), [c] "+r"(c), [s] "+r"(sv), [o] "+r"(o), [n] "+r"(n)
            : [down] "r"(down), [nps] "r"(-ps)
            : "memory", "cc", MFCC_NEON_CLOBBERS);
        /* clang-format on */
    }
    for (; i < nb; ++i) {
        pw[i] = mfcc_bin_power(z, N, ps, lo + i, cs[i], sn[i]);
    }
}

/* One radix-2 butterfly j of the last stage h = N / 2 in place, as mfcc_fft. */
static void mfcc_bfly_last(const elt_mfcc_params_t *p, int32_t *z, int32_t j)
{
    const int32_t H = p->n_cfft / 2;
    int32_t *a = z + 2 * j, *b = z + 2 * (j + H);
    int32_t tr = b[0], ti = b[1];
    if (2 * j == H) {
        tr = b[1];
        ti = -b[0];
    } else if (j != 0) {
        tr = mfcc_rmul(b[0], p->tw_cos[j]) + mfcc_rmul(b[1], p->tw_sin[j]);
        ti = mfcc_rmul(b[1], p->tw_cos[j]) - mfcc_rmul(b[0], p->tw_sin[j]);
    }
    b[0] = a[0] - tr;
    b[1] = a[1] - ti;
    a[0] = a[0] + tr;
    a[1] = a[1] + ti;
}

/* A radix-2 butterfly on four lanes in place as MFCC_BFLY, scratch t0, t1. */
#define MFCC_BFLY_T(ar, ai, br, bi, c, s, t0, t1)                                                  \
    "vqrdmulh.s32 " t0 ", " br ", " c "\n\t"                                                       \
    "vqrdmulh.s32 " t1 ", " bi ", " s "\n\t"                                                       \
    "vadd.i32 " t0 ", " t0 ", " t1 "\n\t"                                                          \
    "vqrdmulh.s32 " t1 ", " bi ", " c "\n\t"                                                       \
    "vqrdmulh.s32 " bi ", " br ", " s "\n\t"                                                       \
    "vsub.i32 " t1 ", " t1 ", " bi "\n\t"                                                          \
    "vsub.i32 " br ", " ar ", " t0 "\n\t"                                                          \
    "vsub.i32 " bi ", " ai ", " t1 "\n\t"                                                          \
    "vadd.i32 " ar ", " ar ", " t0 "\n\t"                                                          \
    "vadd.i32 " ai ", " ai ", " t1 "\n\t"

/* Reverse the four lanes of q (VREV64.32 in each doubleword, then VSWP of the halves). */
#define MFCC_REV4(q, dl, dh)                                                                       \
    "vrev64.32 " q ", " q "\n\t"                                                                   \
    "vswp " dl ", " dh "\n\t"

/* Split and power of four bins from z (zr, zi) and the reversed partner y (yr, yi), twiddles c,
 * s, into (zr, zi) as int64, as mfcc_bin_power; q12-q14 scratch,
 * q15 = -power_shift. */
#define MFCC_SPLIT_POWER(zr, zi, yr, yi, c, s)                                                     \
    "vadd.i32 q12, " zr ", " yr "\n\t"    /* ar */                                                 \
    "vsub.i32 q13, " zi ", " yi "\n\t"    /* ai */                                                 \
    "vsub.i32 " zr ", " zr ", " yr "\n\t" /* br */                                                 \
    "vadd.i32 " zi ", " zi ", " yi "\n\t" /* bi */                                                 \
    "vqrdmulh.s32 q14, " zi ", " c "\n\t"                                                          \
    "vadd.i32 q12, q12, q14\n\t"                                                                   \
    "vqrdmulh.s32 q14, " zr ", " s "\n\t"                                                          \
    "vsub.i32 q12, q12, q14\n\t" /* xr = ar + rmul(bi, c) - rmul(br, s) */                         \
    "vqrdmulh.s32 q14, " zr ", " c "\n\t"                                                          \
    "vsub.i32 q13, q13, q14\n\t"                                                                   \
    "vqrdmulh.s32 q14, " zi ", " s "\n\t"                                                          \
    "vsub.i32 q13, q13, q14\n\t" /* xi = ai - rmul(br, c) - rmul(bi, s) */                         \
    "vmull.s32 " zr ", d24, d24\n\t"                                                               \
    "vmull.s32 " zi ", d25, d25\n\t"                                                               \
    "vmlal.s32 " zr ", d26, d26\n\t"                                                               \
    "vmlal.s32 " zi ", d27, d27\n\t"                                                               \
    "vrshl.s64 " zr ", " zr ", q15\n\t"                                                            \
    "vrshl.s64 " zi ", " zi ", q15\n\t"

/* The last FFT stage h = H = N / 2 fused with the real split and the power (Python decides
 * when: codegen/emit/mfcc.py, fuse_n > 0 only if every bin is below H and the last stage is
 * radix-2). Step t, k = fuse_k0 + 4t, takes the butterflies j = k .. k + 3 (F) and
 * H - k - 3 .. H - k (R): Z[k + i] = F+ and Z[N - k - i] = R- reversed give bins k + i;
 * Z[H - k - 3 + i] = R+ and Z[H + k + 3 - i] = F- reversed give bins H - k - 3 + i. The steps
 * cover every bin of [k0, H - k0] (a last step may overlap: the same bins again, the same
 * values) and nothing is stored back to z; the bins outside take the scalar code and their
 * butterflies, b and H - b for bin b, none of them a step's (H - b of a step's bin b is one
 * too). The twiddles of a step are one block of fuse_tw: the butterflies' cos, sin of F and of
 * R, the split's of F's bins and of R's bins (the integers of tw_cos, tw_sin, split_cos,
 * split_sin).
 * The instructions are those of mfcc_fft_neon and mfcc_power_split (ARM DDI 0406C A8.8). */
static void mfcc_power_fused(const elt_mfcc_params_t *p, int32_t *z, int64_t *pw)
{
    const int32_t N = p->n_cfft, H = N / 2, k0 = p->fuse_k0, lo = p->bin_lo;
    const int32_t hi = lo + p->n_bins - 1, ps = p->power_shift, back = -32;
    const int32_t *af = z + 2 * k0, *bf = z + 2 * (k0 + H);
    const int32_t *ar = z + 2 * (H - k0 - 3), *br = z + 2 * (N - k0 - 3);
    const int32_t *tw = p->fuse_tw;
    int64_t *of = pw + (k0 - lo), *orv = pw + (H - k0 - 3 - lo);
    int32_t n = p->fuse_n, j;
    /* clang-format off */
    __asm__ volatile(
        "vdup.32 q15, %[nps]\n\t"
        "1:\n\t"
        "vld2.32 {d0-d3}, [%[af]]!\n\t"
        "vld2.32 {d4-d7}, [%[bf]]!\n\t"
        "vld2.32 {d8-d11}, [%[ar]], %[back]\n\t"
        "vld2.32 {d12-d15}, [%[br]], %[back]\n\t"
        "vld1.32 {d16-d19}, [%[tw]]!\n\t"
        "vld1.32 {d20-d23}, [%[tw]]!\n\t"
        MFCC_BFLY_T("q0", "q1", "q2", "q3", "q8", "q9", "q12", "q13")
        MFCC_BFLY_T("q4", "q5", "q6", "q7", "q10", "q11", "q12", "q13")
        MFCC_REV4("q2", "d4", "d5")
        MFCC_REV4("q3", "d6", "d7")
        MFCC_REV4("q6", "d12", "d13")
        MFCC_REV4("q7", "d14", "d15")
        "vld1.32 {d16-d19}, [%[tw]]!\n\t"
        "vld1.32 {d20-d23}, [%[tw]]!\n\t"
        MFCC_SPLIT_POWER("q0", "q1", "q6", "q7", "q8", "q9")
        "vst1.64 {d0-d3}, [%[of]]!\n\t"
        MFCC_SPLIT_POWER("q4", "q5", "q2", "q3", "q10", "q11")
        "vst1.64 {d8-d11}, [%[orv]], %[back]\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n\t"
        : [af] "+r"(af), [bf] "+r"(bf), [ar] "+r"(ar), [br] "+r"(br), [tw] "+r"(tw),
          [of] "+r"(of), [orv] "+r"(orv), [n] "+r"(n)
        : [back] "r"(back), [nps] "r"(-ps)
        : "memory", "cc", MFCC_NEON_CLOBBERS);
    /* clang-format on */
    /* the butterflies b and H - b of the bins b outside the steps */
    for (j = lo < H - hi ? lo : H - hi; j < k0; ++j) {
        mfcc_bfly_last(p, z, j);
    }
    for (j = H - k0 + 1; j <= (hi > H - lo ? hi : H - lo) && j < H; ++j) {
        mfcc_bfly_last(p, z, j);
    }
    for (j = lo; j < k0; ++j) {
        pw[j - lo] = mfcc_bin_power(z, N, ps, j, p->split_cos[j - lo], p->split_sin[j - lo]);
    }
    for (j = H - k0 + 1; j <= hi; ++j) {
        pw[j - lo] = mfcc_bin_power(z, N, ps, j, p->split_cos[j - lo], p->split_sin[j - lo]);
    }
}

/* The power of the weighted bins: fused with the last FFT stage where Python laid it out
 * (fuse_n > 0; mfcc_fft_neon then leaves that stage), else after it. */
static void mfcc_power(const elt_mfcc_params_t *p, int32_t *z, int64_t *pw)
{
    if (p->fuse_n > 0) {
        mfcc_power_fused(p, z, pw);
    } else {
        mfcc_power_split(p, z, pw);
    }
}

/* acc[m] = filter m's sum of pw[i] wt[i], every filter in one assembly loop over the blocks of
 * four bins of mel_blk / mel_w4 (codegen/emit/mfcc.py lays them out: the byte offset of a
 * filter's first bin, its blocks, the weights 0 past its end; the work area's power array has
 * room for a last block's 3 extra bins). p and w are non-negative and p = ph 2^32 + pl: VLD2.32
 * of the int64 powers splits them into pl and ph lanes (little endian), VMLAL.U32 sums pl w and
 * ph w in uint64 lanes (pl w < 2^47, ph w < 2^46: no wrap for any filter of fewer than 2^16
 * taps) and the sum is lo + hi 2^32 modulo 2^64, which is the exact int64 sum (< 2^63,
 * docs/numeric.md §7.2) (ARM DDI 0406C A8.8, VLD2, VMLAL, VSHL). */
static void mfcc_mel_sums(const elt_mfcc_params_t *p, const int64_t *pw, int64_t *acc)
{
    const uint16_t *blk = p->mel_blk;
    const uint32_t *w4 = p->mel_w4;
    int32_t m = p->n_mels, off, n;
    const int64_t *pp;
    /* clang-format off */
    __asm__ volatile(
        "1:\n\t"
        "ldrh %[off], [%[blk]], #2\n\t"
        "ldrh %[n], [%[blk]], #2\n\t"
        "add %[pp], %[pw], %[off]\n\t"
        "vld2.32 {d0-d3}, [%[pp]]!\n\t"   /* the first block starts the sums */
        "vld1.32 {d4-d5}, [%[w]]!\n\t"
        "vmull.u32 q8, d0, d4\n\t"
        "vmlal.u32 q8, d1, d5\n\t"
        "vmull.u32 q9, d2, d4\n\t"
        "vmlal.u32 q9, d3, d5\n\t"
        "subs %[n], %[n], #1\n\t"
        "beq 3f\n\t"
        "2:\n\t"
        "vld2.32 {d0-d3}, [%[pp]]!\n\t"
        "vld1.32 {d4-d5}, [%[w]]!\n\t"
        "vmlal.u32 q8, d0, d4\n\t"
        "vmlal.u32 q8, d1, d5\n\t"
        "vmlal.u32 q9, d2, d4\n\t"
        "vmlal.u32 q9, d3, d5\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 2b\n\t"
        "3:\n\t"
        "vshl.i64 q9, q9, #32\n\t"
        "vadd.i64 q8, q8, q9\n\t"
        "vadd.i64 d16, d16, d17\n\t"
        "vst1.64 {d16}, [%[acc]]!\n\t"
        "subs %[m], %[m], #1\n\t"
        "bne 1b\n\t"
        : [blk] "+r"(blk), [w] "+r"(w4), [acc] "+r"(acc), [m] "+r"(m), [off] "=&r"(off),
          [n] "=&r"(n), [pp] "=&r"(pp)
        : [pw] "r"(pw)
        : "memory", "cc", "d0", "d1", "d2", "d3", "d4", "d5", "d16", "d17", "d18", "d19");
    /* clang-format on */
}

/* mfcc_log2 of the sums acc[0 .. 4 groups), four filters a step in assembly (the same
 * integers, lane by lane; ARM DDI 0406C A8.8 for each instruction):
 * - s = rshift_round(acc, shift) + add: VRSHL.U64 by -shift rounds at full precision, so it is
 *   (acc >> f) + bit f - 1 of acc for acc >= 0, and acc itself for shift 0;
 * - b = bitlen(s) - 1 from VCLZ.I32 of the high and low words (VSHRN #32, VMOVN): the leading
 *   zeros lz are clz(hi) + (hi == 0 ? clz(lo) : 0);
 * - t = s shifted to 23 bits below the leading one by VSHL.U64 by lz - 40 = 23 - b (a negative
 *   count is a truncating right shift; the count is the low byte of each 64-bit lane, VMOVL),
 *   narrowed by VMOVN (t < 2^24);
 * - t >> 15 = 256 + the table index (the leading one is bit 23), so the pair lut[idx],
 *   lut[idx + 1] is at lut - 256 + (t >> 15), one VLD2 single-lane load per filter (NEON has no
 *   gather);
 * - the interpolation by VMUL.I32 and VRSHR.S32 #15 ((x + 2^14) >> 15; (hi - lo) r < 2^31,
 *   docs/numeric.md §7.2), plus (b + ec) 2^20. */
static void mfcc_log2_x4(const int32_t *lut, const int64_t *acc, int32_t *out, int32_t groups,
                         const mfcc_floor_t *fl)
{
    const int32_t nsh = -fl->shift, ec63 = 63 + fl->ec;
    const uint64_t add = (uint64_t)fl->add;
    int32_t i0, i1, i2, i3;
    /* clang-format off */
    __asm__ volatile(
        "sub %[lut], %[lut], #1024\n\t"
        "vdup.32 q15, %[nsh]\n\t"
        "vmov d28, %Q[add], %R[add]\n\t"
        "vmov d29, %Q[add], %R[add]\n\t"
        "vdup.32 q13, %[ec63]\n\t"
        "vmov.i32 q12, #40\n\t"
        "vmov.i32 q11, #32767\n\t"
        "1:\n\t"
        "vld1.64 {d0-d3}, [%[acc]]!\n\t"
        "vrshl.u64 q0, q0, q15\n\t"
        "vrshl.u64 q1, q1, q15\n\t"
        "vadd.i64 q0, q0, q14\n\t"
        "vadd.i64 q1, q1, q14\n\t"       /* s */
        "vshrn.i64 d4, q0, #32\n\t"
        "vshrn.i64 d5, q1, #32\n\t"      /* hi */
        "vmovn.i64 d6, q0\n\t"
        "vmovn.i64 d7, q1\n\t"           /* lo */
        "vceq.i32 q8, q2, #0\n\t"
        "vclz.i32 q2, q2\n\t"
        "vclz.i32 q3, q3\n\t"
        "vand q3, q3, q8\n\t"
        "vadd.i32 q2, q2, q3\n\t"        /* lz */
        "vsub.i32 q3, q2, q12\n\t"       /* 23 - b */
        "vmovl.s32 q8, d6\n\t"
        "vmovl.s32 q9, d7\n\t"
        "vshl.u64 q0, q0, q8\n\t"
        "vshl.u64 q1, q1, q9\n\t"
        "vmovn.i64 d0, q0\n\t"
        "vmovn.i64 d1, q1\n\t"           /* t */
        "vshr.u32 q1, q0, #15\n\t"       /* 256 + idx */
        "vand q0, q0, q11\n\t"           /* r */
        "vmov %[i0], %[i1], d2\n\t"
        "vmov %[i2], %[i3], d3\n\t"
        "add %[i0], %[lut], %[i0], lsl #2\n\t"
        "add %[i1], %[lut], %[i1], lsl #2\n\t"
        "add %[i2], %[lut], %[i2], lsl #2\n\t"
        "add %[i3], %[lut], %[i3], lsl #2\n\t"
        "vld2.32 {d16[0], d18[0]}, [%[i0]]\n\t"
        "vld2.32 {d16[1], d18[1]}, [%[i1]]\n\t"
        "vld2.32 {d17[0], d19[0]}, [%[i2]]\n\t"
        "vld2.32 {d17[1], d19[1]}, [%[i3]]\n\t"
        "vsub.i32 q9, q9, q8\n\t"
        "vmul.i32 q9, q9, q0\n\t"
        "vrshr.s32 q9, q9, #15\n\t"
        "vadd.i32 q8, q8, q9\n\t"        /* lo + interpolation */
        "vsub.i32 q2, q13, q2\n\t"       /* b + ec = 63 - lz + ec */
        "vshl.i32 q2, q2, #20\n\t"
        "vadd.i32 q8, q8, q2\n\t"
        "vst1.32 {d16-d17}, [%[out]]!\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n\t"
        : [lut] "+r"(lut), [acc] "+r"(acc), [out] "+r"(out), [n] "+r"(groups), [i0] "=&r"(i0),
          [i1] "=&r"(i1), [i2] "=&r"(i2), [i3] "=&r"(i3)
        : [nsh] "r"(nsh), [add] "r"(add), [ec63] "r"(ec63)
        : "memory", "cc", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d16", "d17", "d18",
          "d19", "d22", "d23", "d24", "d25", "d26", "d27", "d28", "d29", "d30", "d31");
    /* clang-format on */
}

/* Mel filterbank (exact int64 sums) and log2 of every filter: all the sums, then four
 * logarithms a step (the scalar mfcc_log2 for the last n_mels mod 4). */
static void mfcc_mel(const elt_mfcc_params_t *p, elt_mfcc_work_t *w, int32_t sh)
{
    const mfcc_floor_t fl = mfcc_floor(p, sh);
    const int32_t M = p->n_mels, M4 = M & ~3;
    int64_t acc[ELT_MFCC_MELS_MAX];
    int32_t m;
    mfcc_mel_sums(p, w->p, acc);
    if (M4 > 0) {
        mfcc_log2_x4(p->log2_lut, acc, w->logmel, M4 / 4, &fl);
    }
    for (m = M4; m < M; ++m) {
        w->logmel[m] = mfcc_log2(p, acc[m], &fl);
    }
}

/* DCT, cepstrum rounding and the normalisation to the model's x format, four coefficients a
 * pass in one assembly loop over the generated dct4 / norm4 (codegen/emit/mfcc.py): per pair of
 * filters the two columns' four entries each and VMLAL.S32 by the log2 values as scalars into
 * int64 lanes (the exact sums, < 2^63, docs/numeric.md §7.2); then, per lane, as mfcc_norm:
 * c = VRSHL.S64 by -cep_shift (rshift_round at full precision), VMOVN, c - mean (int32),
 * VMULL.S32 by mult, VRSHL.S64 by -norm_shift (the count from the low byte of each lane), and
 * the int16 saturation as VQMOVN.S64 then VQMOVN.S32; a last pass of fewer than four
 * coefficients stores only those (ARM DDI 0406C A8.8, VMLAL by scalar, VRSHL, VQMOVN). */
static void mfcc_dct(const elt_mfcc_params_t *p, const elt_mfcc_work_t *w, int16_t *out)
{
    const int32_t *x = p->dct4, *nt = p->norm4, *l;
    const int32_t M = p->n_mels;
    int32_t rem = p->n_mfcc, k;
    int16_t *o = out;
    /* clang-format off */
    __asm__ volatile(
        "vdup.32 q15, %[ncep]\n\t"
        "1:\n\t"
        "vmov.i32 q8, #0\n\t"
        "vmov.i32 q9, #0\n\t"
        "mov %[l], %[lm]\n\t"
        "movs %[k], %[M], lsr #1\n\t"
        "beq 3f\n\t"
        "2:\n\t"
        "vld1.32 {d4}, [%[l]]!\n\t"
        "vld1.32 {d0-d3}, [%[x]]!\n\t"
        "vmlal.s32 q8, d0, d4[0]\n\t"
        "vmlal.s32 q9, d1, d4[0]\n\t"
        "vmlal.s32 q8, d2, d4[1]\n\t"
        "vmlal.s32 q9, d3, d4[1]\n\t"
        "subs %[k], %[k], #1\n\t"
        "bne 2b\n\t"
        "3:\n\t"
        "tst %[M], #1\n\t"
        "beq 4f\n\t"
        "vld1.32 {d4[0]}, [%[l]]\n\t"
        "vld1.32 {d0-d1}, [%[x]]!\n\t"
        "vmlal.s32 q8, d0, d4[0]\n\t"
        "vmlal.s32 q9, d1, d4[0]\n\t"
        "4:\n\t"
        "vrshl.s64 q8, q8, q15\n\t"
        "vrshl.s64 q9, q9, q15\n\t"
        "vmovn.i64 d0, q8\n\t"
        "vmovn.i64 d1, q9\n\t"           /* c */
        "vld1.32 {d2-d5}, [%[nt]]!\n\t"  /* mean, mult */
        "vld1.32 {d6-d9}, [%[nt]]!\n\t"  /* -norm_shift */
        "vsub.i32 q0, q0, q1\n\t"
        "vmull.s32 q8, d0, d4\n\t"
        "vmull.s32 q9, d1, d5\n\t"
        "vrshl.s64 q8, q8, q3\n\t"
        "vrshl.s64 q9, q9, q4\n\t"
        "vqmovn.s64 d0, q8\n\t"
        "vqmovn.s64 d1, q9\n\t"
        "vqmovn.s32 d0, q0\n\t"
        "subs %[rem], %[rem], #4\n\t"
        "blt 5f\n\t"
        "vst1.16 {d0}, [%[o]]!\n\t"
        "bgt 1b\n\t"
        "b 6f\n\t"
        "5:\n\t"                         /* rem - 4 = -3, -2 or -1 */
        "vst1.16 {d0[0]}, [%[o]]!\n\t"
        "cmp %[rem], #-3\n\t"
        "beq 6f\n\t"
        "vst1.16 {d0[1]}, [%[o]]!\n\t"
        "cmp %[rem], #-2\n\t"
        "beq 6f\n\t"
        "vst1.16 {d0[2]}, [%[o]]\n\t"
        "6:\n\t"
        : [x] "+r"(x), [nt] "+r"(nt), [o] "+r"(o), [rem] "+r"(rem), [k] "=&r"(k), [l] "=&r"(l)
        : [lm] "r"(w->logmel), [M] "r"(M), [ncep] "r"(-p->cep_shift)
        : "memory", "cc", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d16",
          "d17", "d18", "d19", "d30", "d31");
    /* clang-format on */
}

/* Forward copy of n samples, d < s or no overlap (the overlap kept in place below): 8 per
 * VLD1/VST1 pair on NEON, each chunk read before it is written (ARM DDI 0406C A8.8.320 VLD1,
 * A8.8.404 VST1). At -O2 GCC leaves the loop scalar: four instructions a sample, which put about
 * 250 ticks a hop into the audio mode's front end (a hop's 320 samples copied in, the 320 of the
 * overlap moved down) that the front end's own bench, one frame at a time, does not see. */
/* blocks x 32 bytes forward, VLD1.8/VST1.8 of four D registers with post-increment (ARM DDI 0406C
 * A8.8.320, A8.8.404; no alignment needed): 4 instructions per 16 samples. In asm: gcc splits
 * them into 16-byte pairs with address arithmetic, 12 per 16 samples. Each 32 bytes are read
 * before any is written: d may lie 32 bytes or more below s. */
static inline void copy32(uint8_t *d, const uint8_t *s, uint32_t blocks)
{
    __asm__ volatile("1:\n\t"
                     "vld1.8 {d16-d19}, [%[s]]!\n\t"
                     "subs %[n], %[n], #1\n\t"
                     "vst1.8 {d16-d19}, [%[d]]!\n\t"
                     "bne 1b"
                     : [s] "+r"(s), [d] "+r"(d), [n] "+r"(blocks)
                     :
                     : "d16", "d17", "d18", "d19", "cc", "memory");
}

/* n samples from s to d, d below s or apart. */
static void copy_s16(int16_t *d, const int16_t *s, int32_t n)
{
    int32_t k = 0;
    if (n >= 16 && (const uint8_t *)s - (const uint8_t *)d >= 32) {
        k = n / 16 * 16;
        copy32((uint8_t *)d, (const uint8_t *)s, (uint32_t)(n / 16));
    }
    for (; k + 8 <= n; k += 8) {
        vst1q_s16(d + k, vld1q_s16(s + k));
    }
    for (; k < n; ++k) {
        d[k] = s[k];
    }
}

/* n samples of little-endian int16 bytes at any alignment (a frame's payload) into d: the bytes
 * as they are on the little-endian Cortex-A9, as copy_s16 moves them. */
static void copy_le16(int16_t *d, const uint8_t *s, int32_t n)
{
    int32_t k = 0;
    if (n >= 16) {
        k = n / 16 * 16;
        copy32((uint8_t *)d, s, (uint32_t)(n / 16));
    }
    for (; k + 8 <= n; k += 8) {
        vst1q_u8((uint8_t *)(d + k), vld1q_u8(s + 2 * k));
    }
    for (; k < n; ++k) {
        d[k] = (int16_t)(uint16_t)(s[2 * k] | (s[2 * k + 1] << 8));
    }
}

/* One frame: window, block exponent, FFT (for N >= 16 the radix-4 head, then the stages from
 * h = 4 two at a time), power, mel, DCT. */
static inline __attribute__((always_inline)) void
mfcc_frame(const elt_mfcc_params_t *p, const int16_t *pcm, elt_mfcc_work_t *w, int16_t *out)
{
    const int32_t head = p->n_cfft >= 16;
    const int32_t sh = head ? mfcc_head(p, pcm, w->z) : mfcc_load(p, pcm, w->z);
    if (head) {
        mfcc_fft_neon(p, w->z);
    } else {
        mfcc_fft(p, w->z, 1);
    }
    w->shift = sh;
    mfcc_power(p, w->z, w->p);
    mfcc_mel(p, w, sh);
    mfcc_dct(p, w, out);
}

#endif /* ELT_MFCC_S16_OPS_H */
