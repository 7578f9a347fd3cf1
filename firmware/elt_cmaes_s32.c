/*
 * Integer CMA-ES (docs/cmaes.md §6, update order of pycma tell2 in §1).
 * Python twin: codegen/intref/cmaes_int.py, function for function.
 *
 * One rule everywhere: products of two int32 in int64, rounded to the destination format
 * ((x + 2^(s-1)) >> s, elt_mul_rr); sums of rounded terms are exact in int64; one saturation at
 * every store; signed divisions sign-magnitude around the exact positive division (elt_udiv64,
 * fx_div_pos64 semantics); floor isqrt.
 *
 * Each step is one function; the loops that have a NEON form are the operations of
 * elt_cmaes_s32_ops.h in the build's kernel variant (firmware/kernels/<variant>/,
 * codegen/target/sources.py), which end with the scalar loops below (the reference variant runs
 * them from the start).
 */
#include "elt_cmaes_s32.h"

#include "elt_entropy_s16.h"

#define ELT_TRI(i, j) ((i) * ((i) + 1) / 2 + (j))
#define ELT_ZR_FRAC 23 /* z rounded to Q3.23 for the sampler's exact sums (cmaes_int.ZR_FRAC) */

/* Loops over the dimension fully unrolled where k is a small build-time constant (the
 * k = ELT_K_MAX instances), so that every bound and offset is a constant. */
#if ELT_K_MAX <= 16
#define ELT_UNROLL_K _Pragma("GCC unroll 16")
#else
#define ELT_UNROLL_K
#endif

static inline int32_t elt_sat32(int64_t x)
{
    return fx_sat32_64(x);
}

/* elt_cmaes_reset_s32 for one k (a constant where the caller knows it): every bound a constant and
 * no reload of p->k after each store (the stores could alias it), so GCC vectorises the copy and
 * the zeros and stores the diagonal with immediate offsets. */
static inline __attribute__((always_inline)) void elt_reset_k(elt_cmaes_state_t *s,
                                                              const int32_t *m0, const int32_t k)
{
    int32_t i;
    ELT_UNROLL_K
    for (i = 0; i < k; i++) {
        s->m[i] = m0[i];
        s->ps[i] = 0;
        s->pc[i] = 0;
    }
    ELT_UNROLL_K
    for (i = 0; i < k * (k + 1) / 2; i++) {
        s->C[i] = 0;
    }
    ELT_UNROLL_K
    for (i = 0; i < k; i++) {
        s->C[ELT_TRI(i, i)] = (int32_t)1 << ELT_C_FRAC; /* C = I */
    }
}

void elt_cmaes_reset_s32(const elt_cmaes_params_t *p, elt_cmaes_state_t *s, const int32_t *m0)
{
    if (p->k == ELT_K_MAX) {
        elt_reset_k(s, m0, ELT_K_MAX);
    } else {
        elt_reset_k(s, m0, p->k);
    }
    s->ln_sigma = p->grid_on ? elt_requant_s32(p, p->ln_sigma0, ELT_LNSIG_FRAC) : p->ln_sigma0;
    s->g = 0;
}

/* Normalised reciprocal of 0 < d < 2^31 (cmaes_int.recip_norm): e = bit length of d,
 * r = floor(2^(e+29) / d) in (2^29, 2^30]; then num 2^s / d = rshift_round(num r, e + 29 - s).
 * With dn = d 2^(32-e) in [2^31, 2^32), r = floor(2^61 / dn): y <= 2^63 / dn from below by the
 * seed table and two Newton steps (elt_recip_set's, exact here as dn has no low word), r = y / 4,
 * then the remainder 2^61 - r dn (never negative) corrects r upwards to the exact floor. */
static inline int32_t elt_recip_norm(uint32_t d, int *e)
{
    const int z = __builtin_clz(d);
    const uint32_t dn = d << z;
    uint32_t y = (uint32_t)elt_recip_seed[(dn >> 23) & 0xFFu] << 16;
    uint32_t r;
    uint64_t rem;
    y += (uint32_t)(((uint64_t)y * (uint32_t)((((uint64_t)1 << 63) - (uint64_t)dn * y) >> 32)) >>
                    31);
    y += (uint32_t)(((uint64_t)y * (uint32_t)((((uint64_t)1 << 63) - (uint64_t)dn * y) >> 32)) >>
                    31);
    r = y >> 2;
    rem = ((uint64_t)1 << 61) - (uint64_t)r * dn;
    while (rem >= dn) {
        rem -= dn;
        r++;
    }
    *e = 32 - z;
    return (int32_t)r;
}

/* The Cholesky pivot's A_jj = floor(sqrt(p 2^26)) and the column's normalised reciprocal
 * r = floor(2^(e+29) / A_jj), e = bit length of A_jj (elt_isqrt64 and elt_recip_norm, the same
 * integers), from one reciprocal square root, for ELT_PIVOT_EPS <= p < 2^31. With t = clz(p)
 * rounded down to even, mh = p 2^t = x 2^32 (x in [1/4, 1)), p 2^26 = mh 2^32 / 2^(t+6), so
 * sqrt(p 2^26) = sqrt(x) 2^(29 - t/2) in [2^(28-t/2), 2^(29-t/2)): e = 29 - t/2 exactly, and
 * y = 2^29 / sqrt(x) (elt_isqrt64's seed and two Newton steps y += y (1 - x y^2) / 2, relative
 * error < 2^-26; y d / 2^27 as the high word of y (d 2^5)) is both 2^(e+29) / sqrt(p 2^26)
 * and, within A_jj's flooring (< 2^-16 as A_jj >= 2^16), r. s0 = mh y / 2^(32 + t/2) is within
 * a few units of the root and made exact by s^2 <= p 2^26 < (s + 1)^2; then with
 * dn = A_jj 2^(32-e) in [2^31, 2^32) one Newton step r += r (2^61 - r dn) / 2^61 and the
 * remainder 2^61 - r dn (= (2^(e+29) - r A_jj) 2^(32-e)) brought into [0, dn). The results never
 * depend on the estimates, only the time does; all 2^31 - 64 inputs p equal elt_isqrt64 and
 * elt_recip_norm on the host. */
static inline int32_t elt_chol_pivot(uint32_t p, int32_t *r, int *e)
{
    const int t = __builtin_clz(p) & 30;
    const uint32_t mh = p << t;
    const int64_t n = (int64_t)p << ELT_C_FRAC;
    const int32_t y = (int32_t)elt_rsqrt_q29(mh);
    uint32_t s = (uint32_t)(((uint64_t)mh * (uint32_t)y) >> 32) >> (t >> 1);
    s = elt_root_fix((uint64_t)n, s);         /* n = p 2^26 > 0 */
    *r = elt_recip61(y, s << (3 + (t >> 1))); /* dn = s 2^(32 - e) */
    *e = 29 - (t >> 1);
    return (int32_t)s;
}

/* The pivot A_jj of column j from its sum piv (< 2^31): a pivot below ELT_PIVOT_EPS (C not
 * positive definite after rounding) is raised to it and counted in *nfix; *r, *e as
 * elt_chol_pivot. Both Cholesky forms (k = ELT_K_MAX and the generic one) share it. */
static inline int32_t elt_chol_diag(int64_t piv, int32_t *nfix, int32_t *r, int *e)
{
    if (__builtin_expect(piv < ELT_PIVOT_EPS, 0)) { /* the root's code in line, this out of it */
        piv = ELT_PIVOT_EPS;
        (*nfix)++;
    }
    return elt_chol_pivot((uint32_t)piv, r, e);
}

/* ||z|| = max(isqrt(n), 1) (Q.25) and its normalised reciprocal *r = floor(2^(e+29) / ||z||),
 * *e = bit length of ||z|| (elt_isqrt64, elt_recip_norm: the same integers) from one reciprocal
 * square root, for n < 2^62. As in elt_isqrt64, with sh = clz(n) rounded down to even,
 * m = n 2^sh = x 2^64 (x in [1/4, 1)), y = 2^29 / sqrt(x) by the seed and two Newton steps, the
 * root from the high word of m times y, one residual step, then made exact by
 * s^2 <= n < (s + 1)^2. sqrt(n) = sqrt(x) 2^(32 - sh/2) in [2^(31-sh/2), 2^(32-sh/2)), so
 * e = 32 - sh/2 and y is also 2^(e+29) / sqrt(n): with dn = s 2^(sh/2) in [2^31, 2^32), one
 * Newton step q += q (2^61 - q dn) / 2^61 and the remainder 2^61 - q dn brought into [0, dn)
 * give r = floor(2^61 / dn) (elt_chol_pivot's steps), for s >= 2^16 (y within s's flooring,
 * < 2^-16); below, elt_recip_norm. The results never depend on the estimates, only the time
 * does; n < 4 and n >= 2^62 take the two functions themselves (tests/firmware/test_norm_recip.py
 * checks the integers against isqrt and the exact division). */
static inline __attribute__((always_inline)) int32_t elt_norm_recip(uint64_t n, int32_t *r, int *e)
{
    int sh;
    uint64_t m;
    uint32_t mh;
    uint32_t y;
    uint32_t s;
    if (n < 4u || n >> 62 != 0u) { /* no normalising shift left: the two functions */
        s = elt_isqrt64(n);
        s = s < 1u ? 1u : s;
        *r = elt_recip_norm(s, e);
        return (int32_t)s;
    }
    sh = __builtin_clzll((unsigned long long)n) & 62;
    m = n << sh;
    mh = (uint32_t)(m >> 32);
    y = elt_rsqrt_q29(mh);
    s = elt_root_fix(n, elt_root_est(m, mh, y, sh)); /* sh >= 2 as n < 2^62 */
    if (sh > 30) { /* s < 2^16: its flooring (up to 1/s) is too coarse for y's Newton step */
        *r = elt_recip_norm(s, e);
        return (int32_t)s;
    }
    *r = elt_recip61((int32_t)y, s << (sh >> 1)); /* dn = s 2^(32 - e) */
    *e = 32 - (sh >> 1);
    return (int32_t)s;
}

/* The variant's dot product of two row prefixes (elt_cmaes_s32_ops.h). */
static inline int64_t elt_dot_rr26(const int32_t *x, const int32_t *y, int32_t n);

/* s + sum round(x_l y_l / 2^26) over l in [l0, n): each product rounded (elt_mul_rr), the sum
 * exact */
static inline int64_t elt_dot_rr26_from(const int32_t *x, const int32_t *y, int32_t l, int32_t n,
                                        int64_t s)
{
    for (; l < n; l++) {
        s += elt_mul_rr(x[l], y[l], ELT_C_FRAC);
    }
    return s;
}

/* Rows i0 .. k - 1 of column j of the Cholesky factor (elt_chol_k): A_ij = (C_ij - sum A_il A_jl)
 * / A_jj, the numerator saturated to int32, the quotient by the column's normalised reciprocal
 * r, e: num 2^26 / A_jj = rshift_round(num r, e + 3), |num r| < 2^61. */
static inline __attribute__((always_inline)) void elt_chol_rows_from(const int32_t *c, int32_t *a,
                                                                     const int32_t *aj, int32_t i,
                                                                     int32_t j, const int32_t k,
                                                                     int32_t r, int e)
{
    for (; i < k; i++) {
        const int64_t num = elt_sat32(c[ELT_TRI(i, j)] - elt_dot_rr26(&a[ELT_TRI(i, 0)], aj, j));
        a[ELT_TRI(i, j)] = elt_sat32(fx_rshift_round64(num * r, e + 3));
    }
}

/* elt_cmaes_chol_s32 for one k (below; the reference variant's k = ELT_K_MAX factor) */
static inline __attribute__((always_inline)) int32_t elt_chol_k(const int32_t *c, const int32_t k,
                                                                int32_t *a);

/* y = A z and x = m + sigma y of candidates i0 .. lam - 1 (elt_cmaes_sample_s32): z rounded to
 * Q3.23 (zr = rshift_round(z, 5), |zr| < 2^25.7), the products Q5.26 x Q3.23 summed exactly in
 * int64 (< 32 2^31 2^25.7 < 2^61.7 for any A) and rounded once to Q.27:
 * y = sat32(rshift_round(sum, 22)); x = sat32(m + round(y mant / 2^shift)) */
static inline __attribute__((always_inline)) void
elt_sample_yx_from(const elt_cmaes_state_t *s, elt_cmaes_work_t *w, int32_t i, const int32_t lam,
                   const int32_t k, int32_t mant, int shift)
{
    int32_t a;
    int32_t l;
    for (; i < lam; i++) {
        for (a = 0; a < k; a++) {
            int64_t acc = 0;
            for (l = 0; l <= a; l++) { /* Q5.26 x Q3.23, exact */
                acc += (int64_t)w->A[ELT_TRI(a, l)] *
                       fx_rshift_round32(w->z[i][l], ELT_Z_FRAC - ELT_ZR_FRAC);
            }
            w->y[i][a] = elt_sat32(fx_rshift_round64(acc, ELT_C_FRAC + ELT_ZR_FRAC - ELT_X_FRAC));
            w->x[i][a] =
                elt_sat32((int64_t)s->m[a] + fx_rshift_round64((int64_t)w->y[i][a] * mant, shift));
        }
    }
}

/* 2. m', z_w, y_w of dimensions a0 .. k - 1 (elt_tell_k) */
static inline __attribute__((always_inline)) void
elt_tell_mean_from(const elt_cmaes_params_t *p, const elt_cmaes_work_t *w, const uint8_t *order,
                   int32_t a, const int32_t k, int32_t *mnew, int32_t *zw, int32_t *yw)
{
    int32_t i;
    for (; a < k; a++) {
        int64_t am = 0;
        int64_t az = 0;
        int64_t ay = 0;
        for (i = 0; i < p->mu; i++) {
            int32_t r = order[i];
            am += elt_mul_rr(p->w[i], w->x[r][a], ELT_RATE_FRAC);
            az += elt_mul_rr(p->w[i], w->z[r][a], ELT_RATE_FRAC);
            ay += elt_mul_rr(p->w[i], w->y[r][a], ELT_RATE_FRAC);
        }
        mnew[a] = elt_sat32(am);
        zw[a] = elt_sat32(az);
        yw[a] = elt_sat32(ay);
    }
}

/* 3. p_s of dimensions a0 .. k - 1; returns n2 + their ||p_s||^2 terms (Q.46) */
static inline __attribute__((always_inline)) int64_t elt_tell_ps_from(const elt_cmaes_params_t *p,
                                                                      elt_cmaes_state_t *s,
                                                                      const int32_t *zw, int32_t a,
                                                                      const int32_t k, int64_t n2)
{
    for (; a < k; a++) {
        s->ps[a] = elt_sat32(elt_mul_rr(p->one_minus_cs, s->ps[a], ELT_RATE_FRAC) +
                             elt_mul_rr(p->gain_s, zw[a], ELT_GAIN_FRAC + ELT_Z_FRAC - ELT_X_FRAC));
        n2 += elt_mul_rr(s->ps[a], s->ps[a], 2 * ELT_X_FRAC - ELT_NORM2_FRAC);
    }
    return n2;
}

/* 5. p_c of dimensions a0 .. k - 1 */
static inline __attribute__((always_inline)) void elt_tell_pc_from(const elt_cmaes_params_t *p,
                                                                   elt_cmaes_state_t *s,
                                                                   const int32_t *yw, int32_t hsig,
                                                                   int32_t a, const int32_t k)
{
    for (; a < k; a++) {
        int64_t v = elt_mul_rr(p->one_minus_cc, s->pc[a], ELT_RATE_FRAC);
        if (hsig) {
            v += elt_mul_rr(p->gain_c, yw[a], ELT_GAIN_FRAC);
        }
        s->pc[a] = elt_sat32(v);
    }
}

/* nz2 + sum round(z_a^2 / 2^6) over a in [a0, k): ||z||^2 in Q.50 */
static inline __attribute__((always_inline)) int64_t elt_norm2_z_from(const int32_t *zr, int32_t a,
                                                                      const int32_t k, int64_t nz2)
{
    for (; a < k; a++) {
        nz2 += elt_mul_rr(zr[a], zr[a], 2 * ELT_Z_FRAC - 50); /* Q.50 */
    }
    return nz2;
}

/* y_a <- sat32(rshift_round(y_a rn, en + 4)) for a in [a0, k): y 2^25 / ||z|| (|y r| < 2^61) */
static inline __attribute__((always_inline)) void
elt_scale_y_from(int32_t *yr, int32_t a, const int32_t k, int32_t rn, int en)
{
    for (; a < k; a++) { /* |y r| < 2^61 */
        yr[a] = elt_sat32(fx_rshift_round64((int64_t)yr[a] * rn, en + 4));
    }
}

/* p~ = sqrt(c1) p_c from a0 on, and 0 past k up to ELT_K_MAX (the tiles read whole quads) */
static inline __attribute__((always_inline)) void elt_tell_pt_from(const elt_cmaes_params_t *p,
                                                                   const elt_cmaes_state_t *s,
                                                                   int32_t *pt, int32_t a,
                                                                   const int32_t k)
{
    for (; a < ELT_K_MAX; a++) { /* the whole array: k is ELT_K_MAX on the device */
        pt[a] = a < k ? elt_sat32(elt_mul_rr(p->c1_sqrt, s->pc[a], ELT_RATE_FRAC)) : 0;
    }
}

/* y~ = sat32(rshift_round(sq y, 30)) for a in [a0, k): one term of the covariance update */
static inline __attribute__((always_inline)) void
elt_scale_row_from(int32_t *dst, const int32_t *yr, int32_t sq, int32_t a, const int32_t k)
{
    for (; a < k; a++) {
        dst[a] = elt_sat32(elt_mul_rr(sq, yr[a], ELT_RATE_FRAC));
    }
}

/* Entries b0 .. a of row a of C (docs/cmaes.md §6 step 9): decay C + p~_a p~_b + the positive
 * terms - the negative ones (rows of w->z, the first npos positive), exact in int64 (Q.54), one
 * rounding and saturation per entry. */
static inline __attribute__((always_inline)) void
elt_cov_row_from(int32_t *crow, const int32_t *pt, const elt_cmaes_work_t *w, int32_t a, int32_t b,
                 int32_t npos, int32_t nt, int32_t decay)
{
    int32_t t;
    for (; b <= a; b++) {
        int64_t acc = elt_mul_rr(decay, crow[b], ELT_RATE_FRAC + ELT_C_FRAC - 2 * ELT_X_FRAC) +
                      (int64_t)pt[b] * pt[a];
        for (t = 0; t < npos; t++) {
            acc += (int64_t)w->z[t][b] * w->z[t][a];
        }
        for (; t < nt; t++) {
            acc -= (int64_t)w->z[t][b] * w->z[t][a];
        }
        crow[b] = elt_sat32(fx_rshift_round64(acc, 2 * ELT_X_FRAC - ELT_C_FRAC));
    }
}

/* The variant's operations: elt_dot_rr26, elt_chol_rows, elt_chol_kmax, elt_sample_draw,
 * elt_sample_yx, elt_tell_mean, elt_tell_ps, elt_tell_pc, elt_norm2_z, elt_scale_y, elt_tell_pt,
 * elt_scale_row, elt_cov_update (firmware/kernels/<variant>/elt_cmaes_s32_ops.h). */
#include "elt_cmaes_s32_ops.h"

/* elt_cmaes_chol_s32 for one k (a constant where the caller knows it, so GCC unrolls),
 * docs/cmaes.md §6 step 1: A_jj = isqrt(max(C_jj - sum A_jl^2, eps) 2^26), then the rows below
 * it (elt_chol_rows). Packed rows are contiguous, so every sum is a dot product of two row
 * prefixes. */
static inline __attribute__((always_inline)) int32_t elt_chol_k(const int32_t *c, const int32_t k,
                                                                int32_t *a)
{
    int32_t nfix = 0;
    int32_t j;
    for (j = 0; j < k; j++) {
        const int32_t *aj = &a[ELT_TRI(j, 0)];
        int64_t piv = c[ELT_TRI(j, j)] - elt_dot_rr26(aj, aj, j);
        int32_t r;
        int e;
        a[ELT_TRI(j, j)] = elt_chol_diag(piv, &nfix, &r, &e);
        if (j + 1 == k) {
            break;
        }
        elt_chol_rows(c, a, aj, j, k, r, e);
    }
    return nfix;
}

int32_t elt_cmaes_chol_s32(const int32_t *c, int32_t k, int32_t *a)
{
    if (k == ELT_K_MAX) {
        return elt_chol_kmax(c, a);
    }
    return elt_chol_k(c, k, a);
}

/* log2 sigma = round(ln sigma log2 e) = e + f/2^23; 2^(e + f) = 2^(e+1) 2^-(1 - f). */
void elt_cmaes_sigma_s32(int32_t ln_sigma, const int32_t *exp2_lut, int32_t *mant, int32_t *e)
{
    int64_t l2 = fx_rshift_round64((int64_t)ln_sigma * ELT_LOG2E_Q30, 30); /* Q.23 */
    int32_t ee = (int32_t)(l2 >> ELT_LNSIG_FRAC);                          /* floor */
    int32_t f = (int32_t)(l2 - (int64_t)ee * ((int64_t)1 << ELT_LNSIG_FRAC));
    int32_t r = (((int32_t)1 << ELT_LNSIG_FRAC) - f) << (26 - ELT_LNSIG_FRAC); /* (0, 2^26] */
    *mant = elt_lut_interp_q26(exp2_lut, r);
    *e = ee;
}

/* The lam rows of k words stored consecutively at z (the draw block's order) moved to their
 * stride ELT_K_MAX: the last row first, each row's words from the last (the target
 * i ELT_K_MAX + a is at or past the source i k + a). */
static void elt_rows_to_stride(int32_t *z, int32_t lam, int32_t k)
{
    int32_t i;
    int32_t a;
    for (i = lam - 1; i > 0; i--) {
        for (a = k - 1; a >= 0; a--) {
            z[i * ELT_K_MAX + a] = z[i * k + a];
        }
    }
}

/* elt_cmaes_sample_s32 for one k (a constant where the caller knows it, so GCC unrolls) */
static inline __attribute__((always_inline)) void
elt_sample_k(const elt_cmaes_params_t *p, const elt_cmaes_state_t *s, elt_cmaes_work_t *w,
             elt_rng_t *rng, const int32_t *gauss_lut, const int32_t k)
{
    const int32_t lam = p->lam;
    const int32_t mant = w->sig_mant;
    /* sigma y = y mant 2^(e+1) / 2^30: Q.57 -> Q.27, shift 29 - e in [25, 50] */
    const int shift = (ELT_RATE_FRAC - 1) - w->sig_exp;
    int32_t i;
    int32_t a;
    /* draw order: one block of lam k draws, candidate-major, then dimension (docs/numeric.md
     * §5.3), stored consecutively from z[0][0] */
    elt_sample_draw((int32_t *)(void *)w->z, rng, lam, k, gauss_lut);
    if (k < ELT_K_MAX) {
        elt_rows_to_stride((int32_t *)(void *)w->z, lam, k);
    }
    elt_sample_yx(s, w, lam, k, mant, shift);
    if (p->grid_on) {
        for (i = 0; i < lam; i++) {
            for (a = 0; a < k; a++) {
                w->x[i][a] = elt_requant_s32(p, w->x[i][a], ELT_X_FRAC);
            }
        }
    }
}

void elt_cmaes_sample_s32(const elt_cmaes_params_t *p, const elt_cmaes_state_t *s,
                          elt_cmaes_work_t *w, elt_rng_t *rng, const int32_t *gauss_lut)
{
    if (p->k == ELT_K_MAX) {
        elt_sample_k(p, s, w, rng, gauss_lut, ELT_K_MAX);
    } else {
        elt_sample_k(p, s, w, rng, gauss_lut, p->k);
    }
}

/* 6a. active weights: y_hat = y / ||z|| (pycma's k / ||C^-1/2 y||^2, k folded into wc),
 * y 2^25 / ||z|| by the normalised reciprocal of ||z|| (Q.25): rshift_round(y r, e + 4) */
static inline __attribute__((always_inline)) void elt_tell_active(const elt_cmaes_params_t *p,
                                                                  elt_cmaes_work_t *w,
                                                                  const uint8_t *order,
                                                                  const int32_t k)
{
    int32_t i;
    for (i = p->mu; i < p->lam; i++) {
        int32_t *yr = w->y[order[i]];
        const int32_t *zr = w->z[order[i]];
        int32_t rn;
        int en;
        if (p->wc[i] == 0) {
            continue;
        }
        (void)elt_norm_recip((uint64_t)elt_norm2_z(zr, k), &rn, &en); /* ||z|| Q.25, < 2^31 */
        elt_scale_y(yr, k, rn, en);
    }
}

/* 6b, the terms: y~ = sqrt|wc_i| y_hat of every candidate with a weight, written over w->z in
 * term order (z is not read again), positive weights first; returns their number, *npos_out
 * the number of positive ones. */
static inline __attribute__((always_inline)) int32_t
elt_tell_rows_n(const elt_cmaes_params_t *p, elt_cmaes_work_t *w, const uint8_t *order,
                const int32_t k, const int32_t lam, int32_t *npos_out)
{
    const int32_t *wc = p->wc;
    const int32_t *sq = p->wc_sqrt;
    int32_t *dst = w->z[0];
    int32_t npos = 0;
    int32_t nt = 0;
    int32_t i;
    ELT_UNROLL_K
    for (i = 0; i < lam; i++) {
        const int32_t c = wc[i];
        if (c == 0) {
            continue;
        }
        elt_scale_row(dst, w->y[order[i]], sq[i], k);
        dst += ELT_K_MAX;
        nt++;
        if (c > 0) {
            npos = nt;
        }
    }
    *npos_out = npos;
    return nt;
}

/* elt_tell_rows_n with lam = ELT_LAM_MAX a constant where it is (the loop unrolled) */
static inline __attribute__((always_inline)) int32_t elt_tell_rows(const elt_cmaes_params_t *p,
                                                                   elt_cmaes_work_t *w,
                                                                   const uint8_t *order,
                                                                   const int32_t k,
                                                                   int32_t *npos_out)
{
    if (k == ELT_K_MAX && p->lam == ELT_LAM_MAX) {
        return elt_tell_rows_n(p, w, order, k, ELT_LAM_MAX, npos_out);
    }
    return elt_tell_rows_n(p, w, order, k, p->lam, npos_out);
}

/* 7. ln sigma += clip((c_s/d_s)(||p_s||/chi - 1), -1, 1), clamped (docs/cmaes.md §1.2) */
static inline __attribute__((always_inline)) void elt_tell_sigma(const elt_cmaes_params_t *p,
                                                                 elt_cmaes_state_t *s, int64_t n2)
{
    const int32_t nps = (int32_t)elt_isqrt64((uint64_t)n2); /* Q.23 */
    const int32_t ratio = (int32_t)elt_mul_rr(nps, p->inv_chi, ELT_RATE_FRAC);
    int64_t dl = elt_mul_rr(p->cs_over_ds, ratio - ((int32_t)1 << ELT_LNSIG_FRAC), ELT_RATE_FRAC);
    if (dl > ((int64_t)1 << ELT_LNSIG_FRAC)) {
        dl = (int64_t)1 << ELT_LNSIG_FRAC;
    } else if (dl < -((int64_t)1 << ELT_LNSIG_FRAC)) {
        dl = -((int64_t)1 << ELT_LNSIG_FRAC);
    }
    dl += s->ln_sigma;
    s->ln_sigma =
        (int32_t)(dl < ELT_LNSIG_MIN ? ELT_LNSIG_MIN : (dl > ELT_LNSIG_MAX ? ELT_LNSIG_MAX : dl));
}

/* elt_cmaes_tell_s32 for one k (a constant where the caller knows it, so GCC unrolls) */
static inline __attribute__((always_inline)) int32_t elt_tell_k(const elt_cmaes_params_t *p,
                                                                elt_cmaes_state_t *s,
                                                                elt_cmaes_work_t *w,
                                                                const uint8_t *order,
                                                                const int32_t k)
{
    int32_t zw[ELT_K_MAX];
    int32_t yw[ELT_K_MAX];
    int32_t mnew[ELT_K_MAX];
    int32_t pt[ELT_K_MAX];
    int64_t n2;
    int32_t hsig;
    int32_t npos;
    int32_t nt;
    int32_t a;
    if (k < 1 || k > ELT_K_MAX) {
        __builtin_unreachable(); /* the state is sized by ELT_K_MAX */
    }
    s->g += 1; /* pycma countiter, incremented before the update */
    /* 2. m' = sum_{i<mu} w_i x_{i:lam}; z_w, y_w alike (docs/cmaes.md §1.2 step 2, §3) */
    elt_tell_mean(p, w, order, k, mnew, zw, yw);
    /* 3. p_s <- (1 - c_s) p_s + sqrt(c_s(2-c_s)mu_eff) z_w (docs/cmaes.md §1.2 step 3) */
    n2 = elt_tell_ps(p, s, zw, k);
    /* 4. h_sigma <=> ||p_s||^2 < T_g (docs/cmaes.md §1.2 step 4, §6 step 6) */
    hsig = n2 < p->hsig_thr[s->g - 1] ? 1 : 0;
    /* 5. p_c <- (1 - c_c) p_c + h_sigma sqrt(c_c(2-c_c)mu_eff) y_w (docs/cmaes.md §1.2 step 5) */
    elt_tell_pc(p, s, yw, hsig, k);
    /* 6. C <- decay_h C + c1 p_c p_c^T + sum wc_i y_hat_i y_hat_i^T (docs/cmaes.md §1.2 step 6)
     * with every term one outer product of a scaled vector (p~ = sqrt(c1) p_c; the y~ of
     * elt_tell_rows), the products summed exactly in int64 (Q.54, |sum| < 2^63 proven by
     * codegen.quantize.adapt.cmaes_constants), one rounding and saturation per entry. */
    elt_tell_pt(p, s, pt, k);
    elt_tell_active(p, w, order, k);
    nt = elt_tell_rows(p, w, order, k, &npos);
    elt_cov_update(s->C, pt, w, npos, nt, hsig ? p->decay_h1 : p->decay_h0, k);
    elt_tell_sigma(p, s, n2);
    for (a = 0; a < k; a++) {
        s->m[a] = mnew[a];
    }
    return hsig;
}

int32_t elt_cmaes_tell_s32(const elt_cmaes_params_t *p, elt_cmaes_state_t *s, elt_cmaes_work_t *w,
                           const uint8_t *order)
{
    if (p->k == ELT_K_MAX) {
        return elt_tell_k(p, s, w, order, ELT_K_MAX);
    }
    return elt_tell_k(p, s, w, order, p->k);
}

int32_t elt_requant_s32(const elt_cmaes_params_t *p, int32_t v, int32_t frac_in)
{
    const int sh = frac_in - p->grid_frac;
    int64_t r = fx_rshift_round64(v, sh);
    if (r < p->grid_lo) {
        r = p->grid_lo;
    } else if (r > p->grid_hi) {
        r = p->grid_hi;
    }
    return (int32_t)(r * ((int64_t)1 << sh));
}

void elt_cmaes_requant_state_s32(const elt_cmaes_params_t *p, elt_cmaes_state_t *s)
{
    int32_t i;
    for (i = 0; i < p->k; i++) {
        s->m[i] = elt_requant_s32(p, s->m[i], ELT_X_FRAC);
        s->ps[i] = elt_requant_s32(p, s->ps[i], ELT_X_FRAC);
        s->pc[i] = elt_requant_s32(p, s->pc[i], ELT_X_FRAC);
    }
    for (i = 0; i < p->k * (p->k + 1) / 2; i++) {
        s->C[i] = elt_requant_s32(p, s->C[i], ELT_C_FRAC);
    }
    s->ln_sigma = elt_requant_s32(p, s->ln_sigma, ELT_LNSIG_FRAC);
}

/* QELaTTA-V1 (docs/elatta.md reading): sort by (value, index); for each split the group means
 * are rounded integer means; the smallest sum of round((x - mean)^2 / 2^8) wins, ties to the
 * lowest split. */
void elt_q1bit_s32(int32_t *v, int32_t k)
{
    /* At least 3 entries: for ELT_K_MAX <= 2 the sort below is dead code (k <= 2 returns), but
     * GCC's -Warray-bounds still inspects it. */
    uint8_t ord[ELT_K_MAX > 2 ? ELT_K_MAX : 3] = {0};
    int64_t best = INT64_MAX;
    int32_t best_lo = 0;
    int32_t best_hi = 0;
    int32_t best_s = 0;
    int32_t i;
    int32_t j;
    int32_t sp;
    if (k <= 2) {
        return; /* "natural 1-bit" (paper supplementary) */
    }
    for (i = 0; i < k; i++) { /* stable insertion sort of indices by value */
        j = i;
        while (j > 0 && v[ord[j - 1]] > v[i]) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = (uint8_t)i;
    }
    for (sp = 1; sp < k; sp++) {
        int64_t lo = 0;
        int64_t hi = 0;
        int64_t sse = 0;
        int32_t mlo;
        int32_t mhi;
        for (i = 0; i < k; i++) {
            if (i < sp) {
                lo += v[ord[i]];
            } else {
                hi += v[ord[i]];
            }
        }
        mlo = (int32_t)elt_div_round_s64(lo, sp);
        mhi = (int32_t)elt_div_round_s64(hi, k - sp);
        for (i = 0; i < k; i++) {
            int32_t d = elt_sat32((int64_t)v[ord[i]] - (i < sp ? mlo : mhi));
            sse += elt_mul_rr(d, d, 8);
        }
        if (sse < best) {
            best = sse;
            best_lo = mlo;
            best_hi = mhi;
            best_s = sp;
        }
    }
    for (i = 0; i < k; i++) {
        v[ord[i]] = i < best_s ? best_lo : best_hi;
    }
}

void elt_clip_norm_s32(int32_t *v, int32_t k, int32_t radius_q23)
{
    int64_t n2 = 0;
    int64_t nrm;
    int32_t a;
    for (a = 0; a < k; a++) {
        n2 += elt_mul_rr(v[a], v[a], 2 * ELT_X_FRAC - ELT_NORM2_FRAC);
    }
    nrm = elt_isqrt64((uint64_t)n2); /* Q.23 */
    if (nrm <= radius_q23) {
        return;
    }
    for (a = 0; a < k; a++) {
        int64_t mag = v[a] < 0 ? -(int64_t)v[a] : (int64_t)v[a];
        /* truncation: never longer than radius; exact floor (elt_udiv64 = fx_div_pos64) */
        mag = (int64_t)elt_udiv64((uint64_t)(mag * radius_q23), (uint64_t)nrm);
        v[a] = (int32_t)(v[a] < 0 ? -mag : mag);
    }
}
