/*
 * ELaTTA kernels: shared sizes, Q formats and integer helpers (docs/numeric.md §5).
 *
 * Mirrored function for function by codegen/intref/ (Python). Pure integer code: no float,
 * no heap, no division except through fx_div_pos64 (non-negative / positive).
 *
 * Sizes: the scratch in elt_adapt_state_t is sized by ELT_K_MAX, ELT_LAM_MAX, ELT_D_MAX and
 * ELT_C_MAX. The defaults below fit every configuration the host tests use; a device build passes
 * the exact values of its model (codegen.intref.adapt.adapt_cflags) so the state stays within the
 * DESIGN §7 budget (<= 1 KiB with V for k = 2). The generated params file static-asserts them.
 */
#ifndef ELT_TYPES_H
#define ELT_TYPES_H

#include <stdint.h>

#include "fw_fixed.h"

#ifndef ELT_K_MAX
#define ELT_K_MAX 8 /* latent subspace dimension k */
#endif
#ifndef ELT_LAM_MAX
#define ELT_LAM_MAX 16 /* candidates per iteration (lambda) */
#endif
#ifndef ELT_D_MAX
#define ELT_D_MAX 64 /* latent size D */
#endif
#ifndef ELT_C_MAX
#define ELT_C_MAX 16 /* classes C */
#endif
#define ELT_TRI_MAX (ELT_K_MAX * (ELT_K_MAX + 1) / 2) /* packed lower triangle of C and A */

#if ELT_K_MAX < 1 || ELT_K_MAX > 32 || ELT_LAM_MAX < 2 || ELT_LAM_MAX > 32
#error "ELT_K_MAX must be 1..32 and ELT_LAM_MAX 2..32 (codegen.intref.cmaes_int K_MAX, LAM_MAX)"
#endif
#if ELT_C_MAX < 2 || ELT_C_MAX > 256
#error "ELT_C_MAX must be 2..256 (entropy kernel bound, docs/numeric.md §5)"
#endif

/* Q formats (fraction bits) of the ELaTTA state; codegen/intref/cmaes_int.py holds the same. */
#define ELT_X_FRAC 27      /* m, x, y, p_c, p_sigma, p: Q4.27 */
#define ELT_Z_FRAC 28      /* standard normals z: Q3.28 */
#define ELT_C_FRAC 26      /* C, A: Q5.26 */
#define ELT_RATE_FRAC 30   /* rates and weights: Q1.30 */
#define ELT_GAIN_FRAC 28   /* path gains: Q3.28 */
#define ELT_LNSIG_FRAC 23  /* ln sigma: Q8.23 */
#define ELT_NORM2_FRAC 46  /* squared norms: int64 Q.46 */
#define ELT_H_FRAC 26      /* entropy: Q5.26 */
#define ELT_LUT_FRAC 30    /* exp2 / log2 tables: Q1.30 */
#define ELT_PIVOT_EPS 64   /* smallest Cholesky pivot, Q5.26 */
/* ln sigma clamp: sigma in [2^-20, 16]; round(-20 ln2 * 2^23), round(4 ln2 * 2^23) */
#define ELT_LNSIG_MIN (-116290800)
#define ELT_LNSIG_MAX 23258160
/* round(log2(e) * 2^30), round(ln(2) * 2^30) */
#define ELT_LOG2E_Q30 1549082005
#define ELT_LN2_Q30 744261118

/* Product of two int32 formed in int64 and rounded by 2^s (the one rounding rule). */
static inline int64_t elt_mul_rr(int32_t a, int32_t b, int s)
{
    return fx_rshift_round64((int64_t)a * (int64_t)b, s);
}

/* num/den rounded half away from zero, den > 0: sign-magnitude around fx_div_pos64.
 * Callers keep |num| < 2^62. */
static inline int64_t elt_div_round_s64(int64_t num, int64_t den)
{
    int64_t q = fx_div_pos64((num < 0 ? -num : num) + (den >> 1), den);
    return num < 0 ? -q : q;
}

/* Floor square root of n < 2^62 (digit by digit, exact). */
static inline uint32_t elt_isqrt64(uint64_t n)
{
    uint64_t r = 0;
    uint64_t bit = (uint64_t)1 << 62;
    while (bit > n) {
        bit >>= 2;
    }
    while (bit != 0) {
        if (n >= r + bit) {
            n -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return (uint32_t)r;
}

/* Trace points: the host harness provides elt_trace; stage names equal the Python trace
 * (codegen.intref.adapt.TraceFn). Compiled out unless ELT_TRACE is defined. */
#ifdef ELT_TRACE
void elt_trace(const char *stage, int32_t index, const int32_t *data, int32_t n);
#define ELT_TRACE_EMIT(stage, index, data, n) elt_trace((stage), (index), (data), (n))
#else
#define ELT_TRACE_EMIT(stage, index, data, n) ((void)0)
#endif

#endif /* ELT_TYPES_H */
