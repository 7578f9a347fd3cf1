/*
 * The entropy kernel's operations on the Cortex-A9 (firmware/elt_entropy_s16.c includes this
 * file after its shared helpers; firmware/kernels/ref/elt_entropy_s16_ops.h is the plain C of the
 * same functions).
 */
#ifndef ELT_ENTROPY_S16_OPS_H
#define ELT_ENTROPY_S16_OPS_H

#include "elt_neon_a32.h"

/* ln S in Q.26 for S = u, z = clz(S), from S's bit position 63 - z and the fraction x (Q.26,
 * elt_ln_frac) below its leading one:
 * l2 = (b - 30) 2^26 + round(log2(1 + x) 2^30 / 2^4), ln = rshift_round(l2 ln2, 30).
 * SMMULR a, b = rshift_round(a b, 32) (ARM DDI 0406C A8.8.194): the interpolation
 * rshift_round(dT f, 18) = SMMULR(4 dT, 2^12 f) (|dT| < 2^23, f <= 2^18) and
 * rshift_round(l2 ln2, 30) = SMMULR(2 l2, 2 ln2) (l2 < 9 2^26, ln2 < 2^30). */
static inline __attribute__((always_inline)) int32_t ln_of(uint64_t u, int z,
                                                           const int32_t *log2_lut)
{
    const int32_t xf = elt_ln_frac(u, z);
    int32_t j = xf >> ELT_SEG_SHIFT;
    int32_t f;
    int32_t r;
    int32_t l2;
    if (j > 255) {
        j = 255;
    }
    f = xf - (j << ELT_SEG_SHIFT);
    __asm__("smmulr %0, %1, %2" : "=r"(r) : "r"((log2_lut[j + 1] - log2_lut[j]) * 4), "r"(f << 12));
    l2 = (int32_t)(63 - z - ELT_LUT_FRAC) * ((int32_t)1 << 26) +
         ((log2_lut[j] + r + (1 << (ELT_LUT_FRAC - 27))) >> (ELT_LUT_FRAC - 26));
    __asm__("smmulr %0, %1, %2" : "=r"(r) : "r"(l2 * 2), "r"(2 * ELT_LN2_Q30));
    return r;
}

/* elt_gather2 (firmware/kernels/neon_a32/elt_neon_a32.h) for the entropy's constant tables:
 * without its memory clobber (the asm reads only a const table, as elt_sigmoid8's), so that
 * GCC keeps a row's logits in registers across the gathers instead of loading them again. */
static inline __attribute__((always_inline)) int32x4x2_t elt_gather2c(uint32x4_t adr)
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
            : [adr] "w"(adr)); /* reads only the constant table */
    g.val[0] = lo;
    g.val[1] = hi;
    return g;
}

/* NEON (docs/numeric.md §5.9), four classes per step, every step the scalar formula lane-wise:
 *   d = min(max - l, 31 2^f) by VSUBL.S16 + VMIN; a = d 2^(26-f) by VSHL
 *   v = rshift_round(a log2e, 30) = a + rshift_round(a L', 30), L' = log2e - 2^30 < 2^29: the
 *       second term is VQRDMULH(a, 2L') = (2 a 2L' + 2^31) >> 32 (ARM DDI 0406C A8.8.374; a,
 *       2L' < 2^31, so it never saturates); v < 31 2^26 log2e < 2^32, taken as uint32
 *   the LUT pair (T[j], T[j+1]), j = (v >> 18) & 255: the address base + 4j by VAND of bits
 *       18..25 and VSRA #16 onto the table address (ARM DDI 0406C A8.8.393), two addresses
 *       per VMOV to core registers, one VLD2 lane load per class
 *   interpolation T[j] + rshift_round((T[j+1] - T[j]) f, 18) = T[j] + VQRDMULH(dT, f 2^13)
 *       (|dT| < 2^22, f 2^13 < 2^31)
 *   2^-q, q = v >> 26, by VRSHL by -q (0 for q >= 32, as elt_exp2neg_q30: t <= 2^30 rounds
 *       to 0); S by VPADAL, T by VMULL + VRSRA #26.
 * Lanes past n hold INT16_MIN (no effect on the maximum) and their e is masked to 0. */
#define ELT_L2E_FRAC2 ((int32_t)(2 * (ELT_LOG2E_Q30 - (1 << 30)))) /* 2L', 950680362 */

typedef struct {
    int32x4_t vlim;
    int32x4_t sha;
    uint32x4_t base;
    uint32x4_t jmask;
    int aligned; /* the table's address has bits 2..9 clear (a compile-time constant) */
    uint64x2_t vs;
    int64x2_t vt;
} elt_ent_acc_t;

static inline __attribute__((always_inline)) void
elt_ent4(elt_ent_acc_t *acc, int16x4_t m4, int16x4_t l4, const int32_t r, const int first)
{
    const int32x4_t a = vshlq_s32(vminq_s32(vsubl_s16(m4, l4), acc->vlim), acc->sha); /* Q5.26 */
    const uint32x4_t v =
        vreinterpretq_u32_s32(vaddq_s32(a, vqrdmulhq_s32(a, vdupq_n_s32(ELT_L2E_FRAC2))));
    const int32x4_t nq = vnegq_s32(vreinterpretq_s32_u32(vshrq_n_u32(v, 26)));
    const uint32x4_t adr = acc->aligned ? vbslq_u32(acc->jmask, acc->base, vshrq_n_u32(v, 16))
                                        : vsraq_n_u32(acc->base, vandq_u32(v, acc->jmask), 16);
    const int32x4_t f13 = vreinterpretq_s32_u32(vshrq_n_u32(vshlq_n_u32(v, 14), 1));
    const int32x4x2_t g = elt_gather2c(adr);
    int32x4_t e = vaddq_s32(g.val[0], vqrdmulhq_s32(vsubq_s32(g.val[1], g.val[0]), f13));
    e = vrshlq_s32(e, nq); /* Q1.30 */
    if (r) {
        /* lanes r .. 3 are past the last class: e = 0 (then e a = 0) */
        static const int32_t keep[7] = {-1, -1, -1, 0, 0, 0, 0};
        e = vandq_s32(e, vld1q_s32(keep + 3 - r));
    }
    if (first) {
        /* the row's first step starts the sums: VPADDL and VRSHR #26 (no zeroed accumulators) */
        acc->vs = vpaddlq_u32(vreinterpretq_u32_s32(e));
        acc->vt = vrshrq_n_s64(vmull_s32(vget_low_s32(e), vget_low_s32(a)), 26);
    } else {
        acc->vs = vpadalq_u32(acc->vs, vreinterpretq_u32_s32(e));
        acc->vt = vrsraq_n_s64(acc->vt, vmull_s32(vget_low_s32(e), vget_low_s32(a)), 26);
    }
    acc->vt = vrsraq_n_s64(acc->vt, vmull_s32(vget_high_s32(e), vget_high_s32(a)), 26);
}

/* The last n mod 4 logits, the other lanes INT16_MIN. */
static inline __attribute__((always_inline)) int16x4_t elt_ent_tail(const int16_t *x, int32_t r)
{
    int16x4_t l = vdup_n_s16(INT16_MIN);
    l = vld1_lane_s16(x, l, 0);
    if (r > 1) {
        l = vld1_lane_s16(x + 1, l, 1);
    }
    if (r > 2) {
        l = vld1_lane_s16(x + 2, l, 2);
    }
    return l;
}

/* The constants of every row: the clamp 31 2^frac, the shift 26 - frac, the table address and
 * the mask of the LUT index bits 18..25 of v; for a table whose address has bits 2..9 clear
 * (aligned, codegen/emit/adapt.py EXP2_LUT_ALIGN) the mask of the address bits the table
 * gives instead: the address is then v >> 16 with its bits other than 2..9 taken from the
 * table's by one VBIT (ARM DDI 0406C A8.8.290), 4 j in bits 2..9 (the fraction's top bits in
 * 0..1 and q's in 10..15 replaced), and no copy of the table address as VSRA needs. */
static inline __attribute__((always_inline)) void
elt_ent_consts(elt_ent_acc_t *acc, int32_t frac, const int32_t *exp2_lut, const int aligned)
{
    acc->vlim = vdupq_n_s32(ELT_D_CLAMP << frac);
    acc->sha = vdupq_n_s32(26 - frac);
    acc->base = vdupq_n_u32((uint32_t)(uintptr_t)exp2_lut);
    acc->jmask = vdupq_n_u32(aligned ? ~(0xFFu << 2) : 0xFFu << ELT_SEG_SHIFT);
    acc->aligned = aligned;
}

/* One row's S and T with the constants of acc; n a compile-time constant where inlined for
 * ELT_C_MAX: every loop unrolled. */
static inline __attribute__((always_inline)) void elt_ent_row(elt_ent_acc_t *acc,
                                                              const int16_t *logits,
                                                              const int32_t n, uint64_t *s_out,
                                                              uint64_t *t_out)
{
    const int32_t nb = n >> 2;
    const int32_t r = n & 3;
    const int32_t i0 = r ? 0 : 1; /* the first block starts the maximum when there is no tail */
    int16x4_t m4 = r ? elt_ent_tail(logits + 4 * nb, r) : vld1_s16(logits);
    int32_t i;
    if (__builtin_constant_p(n)) {
#pragma GCC unroll 64
        for (i = i0; i < nb; i++) {
            m4 = vmax_s16(m4, vld1_s16(logits + 4 * i));
        }
    } else {
        for (i = i0; i < nb; i++) {
            m4 = vmax_s16(m4, vld1_s16(logits + 4 * i));
        }
    }
    m4 = vpmax_s16(m4, m4);
    m4 = vpmax_s16(m4, m4);
    /* VDUP.16 by scalar (ARM DDI 0406C A8.8.321): GCC moves the lane through a core register */
    __asm__("vdup.16 %P0, %P1[0]" : "=w"(m4) : "w"(m4));
    if (nb == 0) {
        elt_ent4(acc, m4, elt_ent_tail(logits, r), r, 1);
    } else {
        elt_ent4(acc, m4, vld1_s16(logits), 0, 1);
        if (__builtin_constant_p(n)) {
#pragma GCC unroll 64
            for (i = 1; i < nb; i++) {
                elt_ent4(acc, m4, vld1_s16(logits + 4 * i), 0, 0);
            }
        } else {
            for (i = 1; i < nb; i++) {
                elt_ent4(acc, m4, vld1_s16(logits + 4 * i), 0, 0);
            }
        }
        if (r) {
            elt_ent4(acc, m4, elt_ent_tail(logits + 4 * nb, r), r, 0);
        }
    }
    /* the lane sums by VADD.I64 and VST1 (GCC moves 64-bit scalar adds to core registers,
     * eight VMOVs and four STRs for the two sums) */
    {
        uint64x1_t s1;
        int64x1_t t1;
        __asm__("vadd.i64 %P0, %e1, %f1" : "=w"(s1) : "w"(acc->vs));
        __asm__("vadd.i64 %P0, %e1, %f1" : "=w"(t1) : "w"(acc->vt));
        vst1_u64(s_out, s1);
        vst1_s64((int64_t *)t_out, t1);
    }
}

static inline __attribute__((always_inline)) void elt_entropy_sums(const int16_t *logits,
                                                                   const int32_t n, int32_t frac,
                                                                   const int32_t *exp2_lut,
                                                                   uint64_t *s_out, uint64_t *t_out)
{
    elt_ent_acc_t acc;
    elt_ent_consts(&acc, frac, exp2_lut, 0);
    elt_ent_row(&acc, logits, n, s_out, t_out);
}

static inline __attribute__((always_inline)) int32_t elt_entropy_neon(const int16_t *logits,
                                                                      const int32_t n, int32_t frac,
                                                                      const int32_t *exp2_lut,
                                                                      const int32_t *log2_lut)
{
    uint64_t s;
    uint64_t t;
    elt_entropy_sums(logits, n, frac, exp2_lut, &s, &t);
    return elt_entropy_finish(s, t, log2_lut);
}

/* Two narrowing instructions into the halves of one q-register (ARM DDI 0406C A8.8.385 VSHRN,
 * A8.8.357 VMOVN, A8.8.421 VSUBHN): GCC's vcombine of two narrowed d-registers adds moves. */
static inline __attribute__((always_inline)) uint32x4_t elt_shrn2(uint64x2_t lo, uint64x2_t hi,
                                                                  const int n)
{
    uint32x4_t r;
    __asm__("vshrn.i64 %e0, %q1, #%c3\n\tvshrn.i64 %f0, %q2, #%c3"
            : "=&w"(r)
            : "w"(lo), "w"(hi), "i"(n));
    return r;
}

static inline __attribute__((always_inline)) uint32x4_t elt_movn2(uint64x2_t lo, uint64x2_t hi)
{
    uint32x4_t r;
    __asm__("vmovn.i64 %e0, %q1\n\tvmovn.i64 %f0, %q2" : "=&w"(r) : "w"(lo), "w"(hi));
    return r;
}

static inline __attribute__((always_inline)) uint32x4_t elt_subhn2(uint64x2_t a, uint64x2_t lo,
                                                                   uint64x2_t hi)
{
    uint32x4_t r;
    __asm__("vsubhn.i64 %e0, %q1, %q2\n\tvsubhn.i64 %f0, %q1, %q3"
            : "=&w"(r)
            : "w"(a), "w"(lo), "w"(hi));
    return r;
}

/* elt_recip_set's reciprocal y <= 2^63/(dh + 1) of four normalised top words lane-wise: the seed
 * by four VLD1 lane loads, two Newton steps (e = (2^63 - dh y) >> 32 by VMULL.U32 + VSUBHN,
 * y += (y e) >> 31 by VMULL + VSHRN), then y - 2. */
static inline __attribute__((always_inline)) uint32x4_t elt_recip4(uint32x4_t dh)
{
    const uint64x2_t c63 = vdupq_n_u64((uint64_t)1 << 63);
    uint16x4_t seed = vdup_n_u16(0);
    uint32x4_t y;
    int r;
    {
        /* elt_recip_seed[(dh >> 23) & 255]: byte offsets ((dh >> 22) & 0x1FE) */
        const uint32x4_t adr = vaddq_u32(vandq_u32(vshrq_n_u32(dh, 22), vdupq_n_u32(0x1FEu)),
                                         vdupq_n_u32((uint32_t)(uintptr_t)elt_recip_seed));
        uint32_t a0;
        uint32_t a1;
        uint32_t a2;
        uint32_t a3;
        __asm__("vmov %0, %1, %P2" : "=r"(a0), "=r"(a1) : "w"(vget_low_u32(adr)));
        __asm__("vmov %0, %1, %P2" : "=r"(a2), "=r"(a3) : "w"(vget_high_u32(adr)));
        seed = vld1_lane_u16((const uint16_t *)(uintptr_t)a0, seed, 0);
        seed = vld1_lane_u16((const uint16_t *)(uintptr_t)a1, seed, 1);
        seed = vld1_lane_u16((const uint16_t *)(uintptr_t)a2, seed, 2);
        seed = vld1_lane_u16((const uint16_t *)(uintptr_t)a3, seed, 3);
    }
    y = vshll_n_u16(seed, 16);
#pragma GCC unroll 2
    for (r = 0; r < 2; r++) {
        const uint32x4_t e = elt_subhn2(c63, vmull_u32(vget_low_u32(dh), vget_low_u32(y)),
                                        vmull_u32(vget_high_u32(dh), vget_high_u32(y)));
        y = vaddq_u32(y, elt_shrn2(vmull_u32(vget_low_u32(y), vget_low_u32(e)),
                                   vmull_u32(vget_high_u32(y), vget_high_u32(e)), 31));
    }
    y = vsubq_u32(y, vdupq_n_u32(2));
    return y;
}

/* H of four rows from their S and T, the scalar elt_entropy_finish lane-wise (S in [2^30, 2^39),
 * T < 2^37):
 *   z = clz64(S) = 25 + clz32(S >> 7) (VSHRN #7, VCLZ); S 2^z by VSHL.U64
 *   ln S: the bits below the leading one by VSHRN #31, x = VRSHR #6 of them (= (hi + 2^5) >> 6
 *       without overflow), the log2 LUT pair by VLD2, interpolation T[j] + VQRDMULH(2 dT,
 *       2^12 f) (= rshift_round(dT f, 18)), l2 = (33 - z) 2^26 + VRSHR #4, ln = VQRDMULH(l2,
 *       2 ln2) (= rshift_round(l2 ln2, 30))
 *   T 2^26 / S: the reciprocal y of the top word dh (elt_recip4: 0 <= floor(2^63/(dh + 1))
 *       - y <= 3 for every dh in [2^31, 2^32), checked over all of them), the estimate q = ((T >>
 * (35 - z)) y) >> 34, at most the quotient Q = T 2^26 / S (y <= 2^63/(dh + 1), S 2^z < (dh + 1)
 * 2^32) and at least Q - Q/(dh + 1) - y/2^34 - 4 Q/2^31 > Q - 5 Q/2^31 - 1/4 > Q - under, under = 2
 * for Q < 2^28.5 (Q is the softmax mean of d, at most ln n nats plus the terms' rounding: n <= 256)
 * and 1 for n <= 16 (Q < 2.78 2^26: 5 Q/2^31 + 1/4 < 0.69), and T >> (35 - z) < 8 Q < 2^32; then
 * the exact quotient lane-wise from the remainder rem = T 2^26 - (q + under) S in [-under S, S): Q
 * = q + under - [rem < 0] (- [rem + S < 0] for under = 2). */
static inline __attribute__((always_inline)) void
elt_entropy_finish4(const uint64_t *S, const uint64_t *T, const int32_t *log2_lut, int32_t *H,
                    const int32_t under)
{
    const uint64x2_t s01 = vld1q_u64(S);
    const uint64x2_t s23 = vld1q_u64(S + 2);
    const int32x4_t z =
        vaddq_s32(vreinterpretq_s32_u32(vclzq_u32(elt_shrn2(s01, s23, 7))), vdupq_n_s32(25));
    const uint64x2_t n01 = vshlq_u64(s01, vmovl_s32(vget_low_s32(z)));
    const uint64x2_t n23 = vshlq_u64(s23, vmovl_s32(vget_high_s32(z)));
    const uint32x4_t dh = elt_shrn2(n01, n23, 32);
    const uint32x4_t xf = vrshrq_n_u32(elt_shrn2(n01, n23, 31), 6);
    const uint32x4_t j = vminq_u32(vshrq_n_u32(xf, ELT_SEG_SHIFT), vdupq_n_u32(255));
    const int32x4_t f12 =
        vreinterpretq_s32_u32(vshlq_n_u32(vsubq_u32(xf, vshlq_n_u32(j, ELT_SEG_SHIFT)), 12));
    const int32x4x2_t g =
        elt_gather2c(vaddq_u32(vshlq_n_u32(j, 2), vdupq_n_u32((uint32_t)(uintptr_t)log2_lut)));
    const int32x4_t l2 = vaddq_s32(
        vshlq_n_s32(vsubq_s32(vdupq_n_s32(63 - ELT_LUT_FRAC), z), 26),
        vrshrq_n_s32(
            vaddq_s32(g.val[0], vqrdmulhq_s32(vshlq_n_s32(vsubq_s32(g.val[1], g.val[0]), 1), f12)),
            ELT_LUT_FRAC - 26));
    const int32x4_t ln = vqrdmulhq_s32(l2, vdupq_n_s32(2 * ELT_LN2_Q30));
    const int32x4_t nsh = vsubq_s32(z, vdupq_n_s32(35));
    const uint64x2_t t01 = vld1q_u64(T);
    const uint64x2_t t23 = vld1q_u64(T + 2);
    uint32x4_t y;
    uint32x4_t nh;
    uint32x4_t q;
    int64x2_t r01;
    int64x2_t r23;
    y = elt_recip4(dh);
    nh = elt_movn2(vshlq_u64(t01, vmovl_s32(vget_low_s32(nsh))),
                   vshlq_u64(t23, vmovl_s32(vget_high_s32(nsh))));
    /* q + under for q = (nh y) >> 34, VSHRN #32 then VSRA #2 onto under */
    q = elt_shrn2(vmull_u32(vget_low_u32(nh), vget_low_u32(y)),
                  vmull_u32(vget_high_u32(nh), vget_high_u32(y)), 32);
    q = vsraq_n_u32(vdupq_n_u32((uint32_t)under), q, 2);
    /* the remainder T 2^26 - (q + under) S mod 2^64 (VMLSL.U32 by the low words of S, VMUL by
     * the high words, VSHLL #32, VSUB): the true value lies in [-under S, S) */
    r01 = vreinterpretq_s64_u64(
        vsubq_u64(vmlsl_u32(vshlq_n_u64(t01, 26), vget_low_u32(q), vmovn_u64(s01)),
                  vshll_n_u32(vmul_u32(vget_low_u32(q), vshrn_n_u64(s01, 32)), 32)));
    r23 = vreinterpretq_s64_u64(
        vsubq_u64(vmlsl_u32(vshlq_n_u64(t23, 26), vget_high_u32(q), vmovn_u64(s23)),
                  vshll_n_u32(vmul_u32(vget_high_u32(q), vshrn_n_u64(s23, 32)), 32)));
    /* the quotient: q + under - [rem < 0] (- [rem + S < 0] for under = 2), each sign the top
     * bit of the high word (|rem| < 2^40), added by VSRA.S32 #31 */
    q = vreinterpretq_u32_s32(
        vsraq_n_s32(vreinterpretq_s32_u32(q),
                    vreinterpretq_s32_u32(
                        elt_shrn2(vreinterpretq_u64_s64(r01), vreinterpretq_u64_s64(r23), 32)),
                    31));
    if (under == 2) {
        q = vreinterpretq_u32_s32(vsraq_n_s32(
            vreinterpretq_s32_u32(q),
            vreinterpretq_s32_u32(elt_shrn2(vaddq_u64(vreinterpretq_u64_s64(r01), s01),
                                            vaddq_u64(vreinterpretq_u64_s64(r23), s23), 32)),
            31));
    }
    vst1q_s32(H, vaddq_s32(ln, vreinterpretq_s32_u32(q)));
}

/* H of one row, the row's length the build's constant C where it is. */
static inline __attribute__((always_inline)) int32_t entropy_one(const int16_t *logits, int32_t n,
                                                                 int32_t frac,
                                                                 const int32_t *exp2_lut,
                                                                 const int32_t *log2_lut)
{
    if (n == ELT_C_MAX) {
        return elt_entropy_neon(logits, ELT_C_MAX, frac, exp2_lut, log2_lut);
    }
    return elt_entropy_neon(logits, n, frac, exp2_lut, log2_lut);
}

/* Four rows' sums for C = ELT_C_MAX and an aligned table, out of line, the constants set once
 * (one call a row set them and saved registers each time: 115 instructions a row against 107
 * then), the rows unrolled. */
static __attribute__((noinline)) void elt_entropy_sums4_c(const int16_t *logits, int32_t stride,
                                                          int32_t frac, const int32_t *exp2_lut,
                                                          uint64_t *s, uint64_t *t)
{
    elt_ent_acc_t acc;
    int r;
    elt_ent_consts(&acc, frac, exp2_lut, 1);
#pragma GCC unroll 4
    for (r = 0; r < 4; r++) {
        elt_ent_row(&acc, logits + r * stride, ELT_C_MAX, s + r, t + r);
    }
}

/* H of `rows` rows `stride` apart. */
static inline __attribute__((always_inline)) void
entropy_rows(const int16_t *logits, int32_t stride, int32_t rows, int32_t n, int32_t frac,
             const int32_t *exp2_lut, const int32_t *log2_lut, int32_t *H)
{
    uint64_t S[4];
    uint64_t T[4];
    int32_t i = 0;
    int r;
    /* four rows' sums, then their ln S and divisions four lanes at a time */
    if (n == ELT_C_MAX && ((uintptr_t)exp2_lut & 0x3FCu) == 0) {
        for (; i + 4 <= rows; i += 4) {
            elt_entropy_sums4_c(logits + i * stride, stride, frac, exp2_lut, S, T);
            elt_entropy_finish4(S, T, log2_lut, H + i, ELT_C_MAX <= 16 ? 1 : 2);
        }
    } else {
        for (; i + 4 <= rows; i += 4) {
            for (r = 0; r < 4; r++) {
                elt_entropy_sums(logits + (i + r) * stride, n, frac, exp2_lut, S + r, T + r);
            }
            elt_entropy_finish4(S, T, log2_lut, H + i, 2);
        }
    }
    for (; i < rows; i++) {
        H[i] = elt_entropy_s16(logits + i * stride, n, frac, exp2_lut, log2_lut);
    }
}

/* argmax: for n >= 4 the maximum by VMAX / VPMAX, then the first index that holds it. */
static inline __attribute__((always_inline)) int32_t argmax_n(const int16_t *x, int32_t n)
{
    int32_t best = 0;
    int32_t i;
    if (n >= 4) {
        int16x4_t m4 = vld1_s16(x);
        int16_t mx;
        for (i = 4; i + 4 <= n; i += 4) {
            m4 = vmax_s16(m4, vld1_s16(x + i));
        }
        m4 = vpmax_s16(m4, m4);
        m4 = vpmax_s16(m4, m4);
        mx = vget_lane_s16(m4, 0);
        for (; i < n; i++) {
            if (x[i] > mx) {
                mx = x[i];
            }
        }
        while (x[best] != mx) {
            best++;
        }
        return best;
    }
    return argmax_from(x, n, best, 1);
}

#endif /* ELT_ENTROPY_S16_OPS_H */
