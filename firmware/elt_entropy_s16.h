/*
 * Fixed-point exp2, ln and the Shannon entropy of softmax(int16 logits)
 * (docs/cmaes.md §5, docs/numeric.md §5). Python twin: codegen/intref/entropy.py.
 */
#ifndef ELT_ENTROPY_S16_H
#define ELT_ENTROPY_S16_H

#include <stdint.h>

/* Linear interpolation of a 257-entry table at r in [0, 2^26] (Q.26 of x in [0, 1]). */
int32_t elt_lut_interp_q26(const int32_t *lut, int32_t r);

/* 2^-v for v >= 0 in Q.26; Q1.30 result (0 below 2^-31). */
int32_t elt_exp2neg_q30(int64_t v, const int32_t *exp2_lut);

/* ln S for S in Q.30 with 2^30 <= S < 2^39; Q.26 result. */
int32_t elt_ln_q26(int64_t s, const int32_t *log2_lut);

/* H = ln S + sum e_i |d_i| / S of softmax(logits), logits in Q(15-frac).frac, n <= 256 classes.
 * Result int32 Q5.26. */
int32_t elt_entropy_s16(const int16_t *logits, int32_t n, int32_t frac, const int32_t *exp2_lut,
                        const int32_t *log2_lut);

/* elt_entropy_s16 of `rows` rows of n logits, row i at logits + i stride, into H[0 .. rows). */
void elt_entropy_s16_rows(const int16_t *logits, int32_t stride, int32_t rows, int32_t n,
                          int32_t frac, const int32_t *exp2_lut, const int32_t *log2_lut,
                          int32_t *H);

/* Index of the first maximum (ties -> lowest index). */
int32_t elt_argmax_s16(const int16_t *x, int32_t n);

#endif /* ELT_ENTROPY_S16_H */
