/*
 * Entropy of softmax over int16 logits (reference/cmaes-notes.md §5; Python twin
 * codegen/intref/entropy.py, function for function):
 *
 *   d_i = max l - l_i >= 0, clamped at 31 nats; a_i = d_i in Q5.26
 *   e_i = 2^-(a_i log2 e)                  Q1.30 (shift + 257-entry LUT)
 *   S = sum e_i, T = sum round(e_i a_i / 2^26)     int64; S >= 2^30, T < 2^37 (e|d| <= 1/e)
 *   H = ln S + (T 2^26) / S                Q5.26, one positive int64 division
 */
#include "elt_entropy_s16.h"

#include "elt_types.h"

#define ELT_SEG_SHIFT 18 /* 26 - 8: fraction bits below the 8-bit LUT index */
#define ELT_D_CLAMP 31

int32_t elt_lut_interp_q26(const int32_t *lut, int32_t r)
{
    int32_t j = r >> ELT_SEG_SHIFT;
    int32_t f;
    if (j > 255) {
        j = 255; /* r = 2^26 lands on the last knot: fraction 2^18 */
    }
    f = r - (j << ELT_SEG_SHIFT);
    return lut[j] + (int32_t)fx_rshift_round64((int64_t)(lut[j + 1] - lut[j]) * f, ELT_SEG_SHIFT);
}

int32_t elt_exp2neg_q30(int64_t v, const int32_t *exp2_lut)
{
    int64_t q = v >> 26;
    int32_t t;
    if (q >= 32) {
        return 0;
    }
    t = elt_lut_interp_q26(exp2_lut, (int32_t)(v & ((1 << 26) - 1)));
    return (int32_t)fx_rshift_round64(t, (int)q);
}

int32_t elt_ln_q26(int64_t s, const int32_t *log2_lut)
{
    int b = 63 - __builtin_clzll((unsigned long long)s); /* s = 2^b (1 + x), b in [30, 38] */
    int32_t xf = (int32_t)fx_rshift_round64(s - ((int64_t)1 << b), b - 26); /* x, Q.26 */
    int64_t l2 = (int64_t)(b - ELT_LUT_FRAC) * ((int64_t)1 << 26) +
                 fx_rshift_round64(elt_lut_interp_q26(log2_lut, xf), ELT_LUT_FRAC - 26);
    return (int32_t)fx_rshift_round64(l2 * ELT_LN2_Q30, 30);
}

int32_t elt_entropy_s16(const int16_t *logits, int32_t n, int32_t frac, const int32_t *exp2_lut,
                        const int32_t *log2_lut)
{
    int32_t lmax = logits[0];
    int32_t dlim = ELT_D_CLAMP << frac;
    int64_t s = 0;
    int64_t t = 0;
    int32_t i;
    for (i = 1; i < n; i++) {
        if (logits[i] > lmax) {
            lmax = logits[i];
        }
    }
    for (i = 0; i < n; i++) {
        int32_t d = lmax - logits[i];
        int32_t a;
        int64_t v;
        int32_t e;
        if (d > dlim) {
            d = dlim;
        }
        a = d << (26 - frac); /* Q5.26, <= 31 * 2^26 */
        v = fx_rshift_round64((int64_t)a * ELT_LOG2E_Q30, 30);
        e = elt_exp2neg_q30(v, exp2_lut);
        s += e;
        t += fx_rshift_round64((int64_t)e * a, 26);
    }
    /* T * 2^26 < 2^63 because T < 2^37 for n <= 256; S >= 2^30 > 0 */
    return elt_ln_q26(s, log2_lut) + (int32_t)fx_div_pos64(t * ((int64_t)1 << 26), s);
}

int32_t elt_argmax_s16(const int16_t *x, int32_t n)
{
    int32_t best = 0;
    int32_t i;
    for (i = 1; i < n; i++) {
        if (x[i] > x[best]) {
            best = i;
        }
    }
    return best;
}
