/*
 * ELaTTA kernels: shared sizes, Q formats and integer helpers (docs/numeric.md §5).
 *
 * Mirrored function for function by codegen/intref/ (Python). Pure integer code: no float,
 * no heap, no division except the exact positive one (elt_udiv64, fx_div_pos64 semantics).
 *
 * NEON: on the Cortex-A9 (arm-none-eabi-gcc -mfpu=neon) the kernels use NEON integer
 * instructions (ELT_NEON = 1); host builds and -DELT_SCALAR use the plain scalar loops, the
 * readable reference of the same integers. Both paths give identical results: every rounding is
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

#include "fw_fixed.h"

#if defined(ELT_SCALAR) || !defined(__ARM_NEON)
#define ELT_NEON 0
#else
#define ELT_NEON 1
#endif

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

/* Exact floor(n / d) for d > 0 (elt_intmath.c): a normalised 32-bit reciprocal, Newton steps
 * and a remainder correction instead of libgcc's 64-bit division (the A9 has no divider). Equal
 * to fx_div_pos64 / Python `//` for every input; fast when the quotient fits 32 bits. */
uint64_t elt_udiv64(uint64_t n, uint64_t d);

/* The same division split in two, for several numerators over one denominator d > 0. */
typedef struct {
    uint64_t d; /* denominator */
    uint32_t y; /* <= 2^63 / (top word of d normalised + 1) */
    int z;      /* leading zeros of d */
} elt_recip_t;
void elt_recip_init(elt_recip_t *r, uint64_t d);
uint64_t elt_udiv64_r(uint64_t n, const elt_recip_t *r);

/* The two steps inline (elt_udiv64 = elt_udiv_q after elt_recip_set, when n < d 2^32). */
extern const uint16_t elt_recip_seed[256]; /* elt_intmath.c */
static inline __attribute__((always_inline)) void elt_recip_set(elt_recip_t *r, uint64_t d)
{
    uint64_t dn;
    uint32_t dh;
    uint32_t y;
    uint32_t e;
    /* Normalise: dn = d 2^z has bit 63 set; dh = top word in [2^31, 2^32). */
    r->d = d;
    r->z = __builtin_clzll((unsigned long long)d);
    dn = d << r->z;
    dh = (uint32_t)(dn >> 32);
    /* y <= 2^63 / dh from below: seed, then two Newton steps y += y (2^63 - dh y) / 2^63.
     * From below Newton stays below, and every truncation rounds down; the relative error goes
     * 2^-8 -> 2^-16 -> 2^-32 (+ 3 LSB of truncation). dh y <= 2^63, e < 2^24, y < 2^32. */
    y = (uint32_t)elt_recip_seed[(dh >> 23) & 0xFFu] << 16;
    e = (uint32_t)((((uint64_t)1 << 63) - (uint64_t)dh * y) >> 32);
    y += (uint32_t)(((uint64_t)y * e) >> 31);
    e = (uint32_t)((((uint64_t)1 << 63) - (uint64_t)dh * y) >> 32);
    y += (uint32_t)(((uint64_t)y * e) >> 31);
    r->y = y - 2u; /* 2^63/dh - 2^63/(dh+1) < 2: now y <= 2^63 / (dh + 1) */
}

static inline __attribute__((always_inline)) uint64_t elt_udiv_q(uint64_t n, const elt_recip_t *r)
{
    const uint64_t d = r->d;
    const int z = r->z;
    uint64_t n1;
    uint64_t rem;
    uint32_t q;
    if ((n >> 32) >= d) {
        return n / d; /* quotient >= 2^32: not on any kernel path (libgcc, exact) */
    }
    /* n1 = floor(n 2^z / 2^32) < dn (the quotient is < 2^32); q = floor((n1 >> 32) y / 2^31)
     * <= n1 / (dh + 1) <= n 2^z / dn = n / d: an underestimate by a few units at most (at
     * most 8 over 2e5 random and edge cases, 0.75 on average: tests/test_int_host_c.py). */
    n1 = z >= 32 ? n << (z - 32) : n >> (32 - z);
    q = (uint32_t)(((n1 >> 32) * r->y) >> 31);
    rem = n - (uint64_t)q * d; /* q d <= n: no wrap */
    while (rem >= d) {
        rem -= d;
        q++;
    }
    return q;
}

/* num/den rounded half away from zero (elt_div_round_s64) with den's reciprocal */
static inline int64_t elt_div_round_r(int64_t num, const elt_recip_t *r)
{
    uint64_t mag = (uint64_t)(num < 0 ? -num : num) + (r->d >> 1);
    int64_t q = (int64_t)elt_udiv64_r(mag, r);
    return num < 0 ? -q : q;
}

/* floor(n / d), d > 0, inlined (the entropy's one division per call) */
static inline uint64_t elt_udiv64_inline(uint64_t n, uint64_t d)
{
    elt_recip_t r;
    if ((n >> 32) >= d) {
        return elt_udiv64(n, d);
    }
    elt_recip_set(&r, d);
    return elt_udiv_q(n, &r);
}

/* Floor square root of n < 2^62, exact (elt_intmath.c; Python math.isqrt). */
uint32_t elt_isqrt64(uint64_t n);

/* num/den rounded half away from zero, den > 0: sign-magnitude around the exact positive
 * division (fx_div_pos64 semantics). Callers keep |num| < 2^62. */
static inline int64_t elt_div_round_s64(int64_t num, int64_t den)
{
    uint64_t mag = (uint64_t)(num < 0 ? -num : num) + (uint64_t)(den >> 1);
    int64_t q = (int64_t)elt_udiv64(mag, (uint64_t)den);
    return num < 0 ? -q : q;
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
