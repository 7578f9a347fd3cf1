/*
 * ELaTTA kernels: shared sizes, Q formats and integer helpers (docs/numeric.md §5).
 *
 * Mirrored function for function by codegen/intref/ (Python). Pure integer code: no float,
 * no heap, no division except the exact positive one (elt_udiv64, fx_div_pos64 semantics).
 *
 * NEON: the kernels' operations exist twice, in firmware/kernels/neon_a32 (NEON integer
 * instructions, the Cortex-A9) and firmware/kernels/ref (plain scalar loops, the readable
 * reference of the same integers); a build puts one folder on its include path
 * (codegen/target/sources.py). Both give identical results: every rounding is
 * the one rule (VRSHL / VRSHR / VRSRA / VRSHRN are (x + 2^(s-1)) >> s exactly) and every
 * saturation explicit (VQMOVN = fx_sat16 / fx_sat32_64), sums of exact integers in any order.
 *
 * Sizes: the scratch in elt_adapt_state_t is sized by ELT_K_MAX, ELT_LAM_MAX, ELT_D_MAX and
 * ELT_C_MAX. The defaults below fit every configuration the host tests use; a device build passes
 * the exact values of its model (codegen.intref.adapt.adapt_cflags) so the state stays within the
 * docs/targets.md §1 budget (<= 1 KiB with V for k = 2). The generated params file
 * static-asserts them.
 */
#ifndef ELT_TYPES_H
#define ELT_TYPES_H

#include <stdint.h>

#include "elt_intmath.h"
#include "elt_neon.h" /* ELT_NEON: the switch of the link layer and the generated code */
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
#define ELT_X_FRAC 27     /* m, x, y, p_c, p_sigma, p: Q4.27 */
#define ELT_Z_FRAC 28     /* standard normals z: Q3.28 */
#define ELT_C_FRAC 26     /* C, A: Q5.26 */
#define ELT_RATE_FRAC 30  /* rates and weights: Q1.30 */
#define ELT_GAIN_FRAC 28  /* path gains: Q3.28 */
#define ELT_LNSIG_FRAC 23 /* ln sigma: Q8.23 */
#define ELT_NORM2_FRAC 46 /* squared norms: int64 Q.46 */
#define ELT_H_FRAC 26     /* entropy: Q5.26 */
#define ELT_LUT_FRAC 30   /* exp2 / log2 tables: Q1.30 */
#define ELT_PIVOT_EPS 64  /* smallest Cholesky pivot, Q5.26 */
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

/* Trace points: the host harness provides elt_trace; stage names equal the Python trace
 * (codegen.intref.adapt.TraceFn). Compiled out unless ELT_TRACE is defined. */
#ifdef ELT_TRACE
void elt_trace(const char *stage, int32_t index, const int32_t *data, int32_t n);
#define ELT_TRACE_EMIT(stage, index, data, n) elt_trace((stage), (index), (data), (n))
#else
#define ELT_TRACE_EMIT(stage, index, data, n) ((void)0)
#endif

#endif /* ELT_TYPES_H */
