/*
 * Entropy of softmax over int16 logits (docs/cmaes.md §5; Python twin
 * codegen/intref/entropy.py, function for function):
 *
 *   d_i = max l - l_i >= 0, clamped at 31 nats; a_i = d_i in Q5.26
 *   e_i = 2^-(a_i log2 e)                  Q1.30 (shift + 257-entry LUT)
 *   S = sum e_i, T = sum round(e_i a_i / 2^26)     int64; S >= 2^30, T < 2^37 (e|d| <= 1/e)
 *   H = ln S + (T 2^26) / S                Q5.26, one exact positive division (elt_udiv64)
 */
#include "elt_entropy_s16.h"

#include "elt_types.h"

#if ELT_NEON
#include <arm_neon.h>
#endif

#define ELT_SEG_SHIFT 18 /* 26 - 8: fraction bits below the 8-bit LUT index */
#define ELT_D_CLAMP 31

static inline int32_t elt_interp_q26(const int32_t *lut, int32_t r)
{
    int32_t j = r >> ELT_SEG_SHIFT;
    int32_t f;
    if (j > 255) {
        j = 255; /* r = 2^26 lands on the last knot: fraction 2^18 */
    }
    f = r - (j << ELT_SEG_SHIFT);
    return lut[j] + (int32_t)fx_rshift_round64((int64_t)(lut[j + 1] - lut[j]) * f, ELT_SEG_SHIFT);
}

int32_t elt_lut_interp_q26(const int32_t *lut, int32_t r)
{
    return elt_interp_q26(lut, r);
}

int32_t elt_exp2neg_q30(int64_t v, const int32_t *exp2_lut)
{
    int64_t q = v >> 26;
    int32_t t;
    if (q >= 32) {
        return 0;
    }
    t = elt_interp_q26(exp2_lut, (int32_t)(v & ((1 << 26) - 1)));
    return (int32_t)fx_rshift_round64(t, (int)q);
}

static inline int32_t elt_ln_s(int64_t s, const int32_t *log2_lut)
{
    /* s = 2^b (1 + x), b = 63 - z in [30, 38]. x 2^64 = s << (z + 1) (the leading one shifted
     * out); its top word hi gives rshift_round(s - 2^b, b - 26) = (hi + 2^5) >> 6 exactly (the
     * rounding carry only depends on the bits kept), written without the uint32 overflow. */
    const uint64_t u = (uint64_t)s;
    const int z = __builtin_clzll((unsigned long long)u);
    const uint32_t hi = (uint32_t)((u << z) >> 31);
    const int32_t xf = (int32_t)((hi >> 6) + ((hi >> 5) & 1u)); /* x, Q.26, in [0, 2^26] */
    /* l2 = (b - 30) 2^26 + round(log2(1 + x) 2^30 / 2^4), Q.26, < 9 2^26: int32 */
    int32_t l2 =
        (int32_t)(63 - z - ELT_LUT_FRAC) * ((int32_t)1 << 26) +
        ((elt_interp_q26(log2_lut, xf) + (1 << (ELT_LUT_FRAC - 27))) >> (ELT_LUT_FRAC - 26));
    return (int32_t)elt_mul_rr(l2, ELT_LN2_Q30, 30);
}

int32_t elt_ln_q26(int64_t s, const int32_t *log2_lut)
{
    return elt_ln_s(s, log2_lut);
}

/* H = ln S + (T 2^26) / S: T 2^26 < 2^63 because T < 2^37 for n <= 256; S >= 2^30 > 0; the
 * quotient (the softmax mean of d, <= ln n + rounding) fits 32 bits: elt_udiv64's fast path. */
static inline int32_t elt_entropy_finish(uint64_t s, uint64_t t, const int32_t *log2_lut)
{
    return elt_ln_s((int64_t)s, log2_lut) + (int32_t)elt_udiv64_inline(t << 26, s);
}

#if ELT_NEON
/* NEON: four classes per step, the LUT pair (T[j], T[j+1]) gathered with one VLD2 lane load
 * per class; every other step is the scalar formula lane-wise:
 *   v = VRSHRN(a log2e, 30) (v < 31 2^26 log2e < 2^32: taken as uint32)
 *   interpolation VRSHRN((T[j+1] - T[j]) f, 18); 2^-q by VRSHL(t, -q) (0 for q >= 32, as
 *   elt_exp2neg_q30: t <= 2^30 rounds to 0); S by VPADAL, T by VRSRA(e a, 26). */
int32_t elt_entropy_s16(const int16_t *logits, int32_t n, int32_t frac, const int32_t *exp2_lut,
                        const int32_t *log2_lut)
{
    int32_t lmax = logits[0];
    int32_t dlim = ELT_D_CLAMP << frac;
    uint64_t s;
    uint64_t t;
    int32_t i = 0;
    if (n >= 4) {
        int16x4_t m4 = vld1_s16(logits);
        for (i = 4; i + 4 <= n; i += 4) {
            m4 = vmax_s16(m4, vld1_s16(logits + i));
        }
        m4 = vpmax_s16(m4, m4);
        m4 = vpmax_s16(m4, m4);
        lmax = vget_lane_s16(m4, 0);
    }
    for (; i < n; i++) {
        if (logits[i] > lmax) {
            lmax = logits[i];
        }
    }
    {
        const int32x4_t vmax = vdupq_n_s32(lmax);
        const int32x4_t vlim = vdupq_n_s32(dlim);
        const int32x4_t sha = vdupq_n_s32(26 - frac);
        const int32x2_t l2e = vdup_n_s32(ELT_LOG2E_Q30);
        const uint32x4_t mask26 = vdupq_n_u32((1u << 26) - 1u);
        const uint32x4_t mask18 = vdupq_n_u32((1u << ELT_SEG_SHIFT) - 1u);
        uint64x2_t vs = vdupq_n_u64(0);
        int64x2_t vt = vdupq_n_s64(0);
        int32x4x2_t g;
        g.val[0] = vdupq_n_s32(0);
        g.val[1] = g.val[0];
        for (i = 0; i + 4 <= n; i += 4) {
            int32x4_t l = vmovl_s16(vld1_s16(logits + i));
            int32x4_t a = vshlq_s32(vminq_s32(vsubq_s32(vmax, l), vlim), sha); /* Q5.26 */
            uint32x4_t v = vreinterpretq_u32_s32(
                vcombine_s32(vrshrn_n_s64(vmull_s32(vget_low_s32(a), l2e), 30),
                             vrshrn_n_s64(vmull_s32(vget_high_s32(a), l2e), 30)));
            int32x4_t q = vreinterpretq_s32_u32(vshrq_n_u32(v, 26));
            uint32x4_t j = vshrq_n_u32(vandq_u32(v, mask26), ELT_SEG_SHIFT);
            int32x4_t f = vreinterpretq_s32_u32(vandq_u32(v, mask18));
            int32x4_t dt;
            int32x4_t e;
            g = vld2q_lane_s32(exp2_lut + vgetq_lane_u32(j, 0), g, 0);
            g = vld2q_lane_s32(exp2_lut + vgetq_lane_u32(j, 1), g, 1);
            g = vld2q_lane_s32(exp2_lut + vgetq_lane_u32(j, 2), g, 2);
            g = vld2q_lane_s32(exp2_lut + vgetq_lane_u32(j, 3), g, 3);
            dt = vsubq_s32(g.val[1], g.val[0]);
            e = vaddq_s32(
                g.val[0],
                vcombine_s32(
                    vrshrn_n_s64(vmull_s32(vget_low_s32(dt), vget_low_s32(f)), ELT_SEG_SHIFT),
                    vrshrn_n_s64(vmull_s32(vget_high_s32(dt), vget_high_s32(f)), ELT_SEG_SHIFT)));
            e = vrshlq_s32(e, vnegq_s32(q)); /* Q1.30 */
            vs = vpadalq_u32(vs, vreinterpretq_u32_s32(e));
            vt = vrsraq_n_s64(vt, vmull_s32(vget_low_s32(e), vget_low_s32(a)), 26);
            vt = vrsraq_n_s64(vt, vmull_s32(vget_high_s32(e), vget_high_s32(a)), 26);
        }
        s = vgetq_lane_u64(vs, 0) + vgetq_lane_u64(vs, 1);
        t = (uint64_t)(vgetq_lane_s64(vt, 0) + vgetq_lane_s64(vt, 1));
    }
    for (; i < n; i++) {
        int32_t d = lmax - logits[i];
        int32_t a;
        int32_t e;
        if (d > dlim) {
            d = dlim;
        }
        a = d << (26 - frac);
        e = elt_exp2neg_q30(elt_mul_rr(a, ELT_LOG2E_Q30, 30), exp2_lut);
        s += (uint64_t)e;
        t += (uint64_t)elt_mul_rr(e, a, 26);
    }
    return elt_entropy_finish(s, t, log2_lut);
}
#else
int32_t elt_entropy_s16(const int16_t *logits, int32_t n, int32_t frac, const int32_t *exp2_lut,
                        const int32_t *log2_lut)
{
    int32_t lmax = logits[0];
    int32_t dlim = ELT_D_CLAMP << frac;
    uint64_t s = 0;
    uint64_t t = 0;
    int32_t i;
    for (i = 1; i < n; i++) {
        if (logits[i] > lmax) {
            lmax = logits[i];
        }
    }
    for (i = 0; i < n; i++) {
        int32_t d = lmax - logits[i];
        int32_t a;
        int32_t e;
        if (d > dlim) {
            d = dlim;
        }
        a = d << (26 - frac);                                            /* Q5.26, <= 31 2^26 */
        e = elt_exp2neg_q30(elt_mul_rr(a, ELT_LOG2E_Q30, 30), exp2_lut); /* Q1.30 */
        s += (uint64_t)e;
        t += (uint64_t)elt_mul_rr(e, a, 26); /* e a >= 0 */
    }
    return elt_entropy_finish(s, t, log2_lut);
}
#endif

int32_t elt_argmax_s16(const int16_t *x, int32_t n)
{
    int32_t best = 0;
    int32_t i = 1;
#if ELT_NEON
    if (n >= 4) {
        /* the maximum by VMAX / VPMAX, then the first index that holds it */
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
#endif
    for (; i < n; i++) {
        if (x[i] > x[best]) {
            best = i;
        }
    }
    return best;
}
