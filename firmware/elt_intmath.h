/*
 * Exact integer division and square root (elt_intmath.c; docs/numeric.md §5.2, §5.9): the
 * declarations and the inline halves of the division that the entropy and CMA-ES kernels call.
 * Depends on nothing but <stdint.h>, so elt_intmath.c and elt_types.h both include it and
 * neither includes the other.
 */
#ifndef ELT_INTMATH_H
#define ELT_INTMATH_H

#include <stdint.h>

/* y + floor(a b / 2^32) (the high word of the product added) of the Newton steps of elt_isqrt64
 * and elt_chol_pivot: one SMMLA where the core has it (ARM DDI 0406C A8.8.192 SMMLA:
 * (Ra 2^32 + Rn Rm)[63:32], the same integer), which GCC does not generate from the C; the C
 * elsewhere. */
#if defined(__ARM_FEATURE_DSP)
static inline int32_t elt_mmla(int32_t y, int32_t a, int32_t b)
{
    int32_t d;
    __asm__("smmla %0, %1, %2, %3" : "=r"(d) : "r"(a), "r"(b), "r"(y));
    return d;
}
#else
static inline int32_t elt_mmla(int32_t y, int32_t a, int32_t b)
{
    return y + (int32_t)(((int64_t)a * b) >> 32);
}
#endif

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
extern const uint32_t elt_rsqrt_seed[192]; /* elt_intmath.c: 1/sqrt seeds (Q.29) of elt_isqrt64 */
/* y = 2^29 / sqrt(x) in Q.29 (in (2^29, 2^30]) for mh = x 2^32, x in [1/4, 1), from below: the
 * seed, then two Newton steps y += y (1 - x y^2) / 2 in 32-bit words (y^2 Q.26, x y^2 Q.26,
 * d = (1 - x y^2) 2^26 signed and small (|d| < 2^21), y d / 2^27 as the high word of y (d 2^5));
 * every truncation only costs accuracy, which the callers' exact corrections restore. Relative
 * error after the two steps < 2^-26. The square roots of elt_isqrt64, elt_chol_pivot and
 * elt_norm_recip all start here. */
static inline __attribute__((always_inline)) uint32_t elt_rsqrt_q29(uint32_t mh)
{
    uint32_t y = elt_rsqrt_seed[(mh >> 24) - 64u];
    int32_t d = (int32_t)((1u << 26) -
                          (uint32_t)(((uint64_t)mh * (uint32_t)(((uint64_t)y * y) >> 32)) >> 32));
    y = (uint32_t)elt_mmla((int32_t)y, (int32_t)y, d << 5); /* y < 2^31 */
    d = (int32_t)((1u << 26) -
                  (uint32_t)(((uint64_t)mh * (uint32_t)(((uint64_t)y * y) >> 32)) >> 32));
    return (uint32_t)elt_mmla((int32_t)y, (int32_t)y, d << 5);
}

/* The square root of n = m 2^-sh (m = n 2^sh in [2^62, 2^64), sh even and >= 2, mh = m's top word)
 * from y = elt_rsqrt_q29(mh): sqrt(m) = sqrt(x) 2^32 ~ x y 2^32 = mh y / 2^29, then one residual
 * step s += (m - s^2) / (2 s) = (m - s^2) y / 2^62 (|m - s^2| < 2^40 here, so rho / 2^16 fits a
 * word); back to n by the shift. Within a few units of floor(sqrt(n)) (elt_root_fix). */
static inline __attribute__((always_inline)) uint32_t elt_root_est(uint64_t m, uint32_t mh,
                                                                   uint32_t y, int sh)
{
    uint64_t r2 = ((uint64_t)mh * y) >> 29;
    const int64_t rho = (int64_t)(m - r2 * r2);
    r2 = (uint64_t)((int64_t)r2 + (((int64_t)(int32_t)(rho >> 16) * (int64_t)(int32_t)y) >> 46));
    return (uint32_t)(r2 >> 1) >> ((sh >> 1) - 1); /* r2 < 2^33, so the root < 2^32 */
}

/* s made the floor square root of n (s^2 <= n < (s + 1)^2, s < 2^31) from an estimate a few
 * units off: it is already when 0 <= n - s^2 <= 2 s (one unsigned compare), else stepped. */
static inline __attribute__((always_inline)) uint32_t elt_root_fix(uint64_t n, uint32_t s)
{
    if (n - (uint64_t)s * s > 2u * s) {
        while ((uint64_t)s * s > n) {
            s--;
        }
        while ((uint64_t)(s + 1u) * (s + 1u) <= n) {
            s++;
        }
    }
    return s;
}

/* floor(2^61 / dn) for dn in [2^31, 2^32) from y, an estimate within 2^-16: one Newton step
 * q = y + y (2^61 - y dn) / 2^61 (the high word of y (rho / 2^29), |rho| < 2^46), then the
 * remainder 2^61 - q dn brought into [0, dn) (q is the floor when it already is: one unsigned
 * compare). The reciprocals of elt_chol_pivot and elt_norm_recip. */
static inline __attribute__((always_inline)) int32_t elt_recip61(int32_t y, uint32_t dn)
{
    int64_t rho = ((int64_t)1 << 61) - (int64_t)((uint64_t)(uint32_t)y * dn);
    int32_t q = elt_mmla(y, (int32_t)(rho >> 29), y);
    rho = ((int64_t)1 << 61) - (int64_t)((uint64_t)(uint32_t)q * dn);
    if ((uint64_t)rho >= dn) {
        while (rho < 0) {
            rho += dn;
            q--;
        }
        while (rho >= (int64_t)dn) {
            rho -= dn;
            q++;
        }
    }
    return q;
}

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
     * most 8 over 2e5 random and edge cases, 0.75 on average: tests/firmware/test_int_host_c.py).
     */
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

#endif /* ELT_INTMATH_H */
