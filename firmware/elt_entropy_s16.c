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

/* s = 2^b (1 + x), b = 63 - z in [30, 38] (z = clz(s)): x in Q.26. x 2^64 = s << (z + 1) (the
 * leading one shifted out); its top word hi gives rshift_round(s - 2^b, b - 26) = (hi + 2^5) >> 6
 * exactly (the rounding carry only depends on the bits kept), written without the uint32
 * overflow. */
static inline __attribute__((always_inline)) int32_t elt_ln_frac(uint64_t u, int z)
{
    const uint32_t hi = (uint32_t)((u << z) >> 31);
    return (int32_t)((hi >> 6) + ((hi >> 5) & 1u)); /* x, Q.26, in [0, 2^26] */
}

/* H = ln S + (T 2^26) / S (below); the variants' entropy_one and entropy_rows end with it. */
static inline __attribute__((always_inline)) int32_t elt_entropy_finish(uint64_t s, uint64_t t,
                                                                        const int32_t *log2_lut);

/* argmax, the first index of the maximum, one by one. */
static inline __attribute__((always_inline)) int32_t argmax_from(const int16_t *x, int32_t n,
                                                                 int32_t best, int32_t i)
{
    for (; i < n; i++) {
        if (x[i] > x[best]) {
            best = i;
        }
    }
    return best;
}

/* The variant's operations: ln_of, entropy_one, entropy_rows and argmax_n
 * (firmware/kernels/<variant>/elt_entropy_s16_ops.h). */
#include "elt_entropy_s16_ops.h"

static inline __attribute__((always_inline)) int32_t elt_ln_s(int64_t s, const int32_t *log2_lut)
{
    const uint64_t u = (uint64_t)s;
    const int z = __builtin_clzll((unsigned long long)u);
    return ln_of(u, z, log2_lut);
}

int32_t elt_ln_q26(int64_t s, const int32_t *log2_lut)
{
    return elt_ln_s(s, log2_lut);
}

/* H = ln S + (T 2^26) / S: T 2^26 < 2^63 because T < 2^37 for n <= 256; S >= 2^30 > 0; the
 * quotient (the softmax mean of d, <= ln n + rounding) fits 32 bits: elt_udiv64's fast path. */
static inline __attribute__((always_inline)) int32_t elt_entropy_finish(uint64_t s, uint64_t t,
                                                                        const int32_t *log2_lut)
{
    return elt_ln_s((int64_t)s, log2_lut) + (int32_t)elt_udiv64_inline(t << 26, s);
}

int32_t elt_entropy_s16(const int16_t *logits, int32_t n, int32_t frac, const int32_t *exp2_lut,
                        const int32_t *log2_lut)
{
    return entropy_one(logits, n, frac, exp2_lut, log2_lut);
}

void elt_entropy_s16_rows(const int16_t *logits, int32_t stride, int32_t rows, int32_t n,
                          int32_t frac, const int32_t *exp2_lut, const int32_t *log2_lut,
                          int32_t *H)
{
    entropy_rows(logits, stride, rows, n, frac, exp2_lut, log2_lut, H);
}

int32_t elt_argmax_s16(const int16_t *x, int32_t n)
{
    return argmax_n(x, n);
}
