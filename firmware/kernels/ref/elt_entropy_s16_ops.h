/*
 * The entropy kernel's operations in plain C (firmware/elt_entropy_s16.c includes this file after
 * its shared helpers; firmware/kernels/neon_a32/elt_entropy_s16_ops.h is the NEON form of the
 * same functions).
 */
#ifndef ELT_ENTROPY_S16_OPS_H
#define ELT_ENTROPY_S16_OPS_H

/* ln S in Q.26 for S = u, z = clz(S), from S's bit position 63 - z and the fraction x (Q.26,
 * elt_ln_frac) below its leading one:
 * l2 = (b - 30) 2^26 + round(log2(1 + x) 2^30 / 2^4), Q.26, < 9 2^26 (int32), then
 * ln = rshift_round(l2 ln2, 30). */
static inline int32_t ln_of(uint64_t u, int z, const int32_t *log2_lut)
{
    int32_t l2 = (int32_t)(63 - z - ELT_LUT_FRAC) * ((int32_t)1 << 26) +
                 ((elt_interp_q26(log2_lut, elt_ln_frac(u, z)) + (1 << (ELT_LUT_FRAC - 27))) >>
                  (ELT_LUT_FRAC - 26));
    return (int32_t)elt_mul_rr(l2, ELT_LN2_Q30, 30);
}

/* H of one row: the maximum, then per class e = 2^-(d log2 e) and its share of T. */
static inline __attribute__((always_inline)) int32_t entropy_one(const int16_t *logits, int32_t n,
                                                                 int32_t frac,
                                                                 const int32_t *exp2_lut,
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

/* H of `rows` rows `stride` apart, one at a time. */
static inline void entropy_rows(const int16_t *logits, int32_t stride, int32_t rows, int32_t n,
                                int32_t frac, const int32_t *exp2_lut, const int32_t *log2_lut,
                                int32_t *H)
{
    int32_t i;
    for (i = 0; i < rows; i++) {
        H[i] = elt_entropy_s16(logits + i * stride, n, frac, exp2_lut, log2_lut);
    }
}

/* argmax, the first index of the maximum. */
static inline int32_t argmax_n(const int16_t *x, int32_t n)
{
    return argmax_from(x, n, 0, 1);
}

#endif /* ELT_ENTROPY_S16_OPS_H */
