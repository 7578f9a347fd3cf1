/*
 * Integer CMA-ES (docs/cmaes.md §6, update order of pycma tell2 in §1).
 * Python twin: codegen/intref/cmaes_int.py, function for function.
 *
 * One rule everywhere: products of two int32 in int64, rounded to the destination format
 * ((x + 2^(s-1)) >> s, elt_mul_rr); sums of rounded terms are exact in int64; one saturation at
 * every store; signed divisions sign-magnitude around the exact positive division (elt_udiv64,
 * fx_div_pos64 semantics); floor isqrt.
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

void elt_cmaes_reset_s32(const elt_cmaes_params_t *p, elt_cmaes_state_t *s, const int32_t *m0)
{
    int32_t i;
    for (i = 0; i < p->k; i++) {
        s->m[i] = m0[i];
        s->ps[i] = 0;
        s->pc[i] = 0;
    }
    for (i = 0; i < p->k * (p->k + 1) / 2; i++) {
        s->C[i] = 0;
    }
    for (i = 0; i < p->k; i++) {
        s->C[ELT_TRI(i, i)] = (int32_t)1 << ELT_C_FRAC; /* C = I */
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
    int32_t y = (int32_t)elt_rsqrt_seed[(mh >> 24) - 64u] << 14;
    int32_t d;
    int64_t rho;
    uint32_t s;
    uint32_t dn;
    int32_t q;
    d = (int32_t)((1u << 26) -
                  (uint32_t)(((uint64_t)mh * (uint32_t)(((uint64_t)y * (uint32_t)y) >> 32)) >> 32));
    y += (int32_t)(((int64_t)y * (d << 5)) >> 32);
    d = (int32_t)((1u << 26) -
                  (uint32_t)(((uint64_t)mh * (uint32_t)(((uint64_t)y * (uint32_t)y) >> 32)) >> 32));
    y += (int32_t)(((int64_t)y * (d << 5)) >> 32);
    s = (uint32_t)(((uint64_t)mh * (uint32_t)y) >> 32) >> (t >> 1);
    while ((int64_t)((uint64_t)s * s) > n) {
        s--;
    }
    while ((int64_t)((uint64_t)(s + 1u) * (s + 1u)) <= n) {
        s++;
    }
    dn = s << (3 + (t >> 1)); /* 32 - e */
    rho = ((int64_t)1 << 61) - (int64_t)((uint64_t)(uint32_t)y * dn);
    q = y + (int32_t)(((int64_t)(int32_t)(rho >> 31) * y) >> 30);
    rho = ((int64_t)1 << 61) - (int64_t)((uint64_t)(uint32_t)q * dn);
    while (rho < 0) {
        rho += dn;
        q--;
    }
    while (rho >= (int64_t)dn) {
        rho -= dn;
        q++;
    }
    *r = q;
    *e = 29 - (t >> 1);
    return (int32_t)s;
}

/* The pivot A_jj of column j from its sum piv (< 2^31): a pivot below ELT_PIVOT_EPS (C not
 * positive definite after rounding) is raised to it and counted in *nfix; *r, *e as
 * elt_chol_pivot. Both Cholesky forms (k = ELT_K_MAX and the generic one) share it. */
static inline int32_t elt_chol_diag(int64_t piv, int32_t *nfix, int32_t *r, int *e)
{
    if (piv < ELT_PIVOT_EPS) {
        piv = ELT_PIVOT_EPS;
        (*nfix)++;
    }
    return elt_chol_pivot((uint32_t)piv, r, e);
}

#if ELT_NEON
/* (a0 + a1, b0 + b1) of two int64x2 by VEXT (a1, b0) + VBSL (a0, b1), all in NEON registers
 * (combining d halves makes GCC copy them with VMOV.F64, a floating-point mnemonic) */
static inline int64x2_t elt_hadd2_s64(int64x2_t a, int64x2_t b)
{
    const uint64x2_t lo = vreinterpretq_u64_s64(vcombine_s64(vcreate_s64(~0ULL), vcreate_s64(0)));
    return vaddq_s64(vextq_s64(a, b, 1), vbslq_s64(lo, a, b));
}
#endif

/* sum_l round(x_l y_l / 2^26), l < n: each product rounded (elt_mul_rr), the sum exact */
static inline int64_t elt_dot_rr26(const int32_t *x, const int32_t *y, int32_t n)
{
    int64_t s = 0;
    int32_t l = 0;
#if ELT_NEON
    if (n >= 2) {
        int64x2_t acc = vdupq_n_s64(0);
        for (; l + 2 <= n; l += 2) {
            acc = vrsraq_n_s64(acc, vmull_s32(vld1_s32(x + l), vld1_s32(y + l)), ELT_C_FRAC);
        }
        s = vgetq_lane_s64(acc, 0) + vgetq_lane_s64(acc, 1);
    }
#endif
    for (; l < n; l++) {
        s += elt_mul_rr(x[l], y[l], ELT_C_FRAC);
    }
    return s;
}

/* docs/cmaes.md §6 step 1: A_jj = isqrt(max(C_jj - sum A_jl^2, eps) 2^26),
 * A_ij = (C_ij - sum A_il A_jl) / A_jj: numerator saturated to int32, the quotient by the
 * column's normalised reciprocal, num 2^26 / A_jj = rshift_round(num r, e + 3), |num r| < 2^61.
 * Packed rows are contiguous, so every sum is a dot product of two row prefixes. */
/* elt_cmaes_chol_s32 for one k (a constant where the caller knows it, so GCC unrolls) */
static inline __attribute__((always_inline)) int32_t elt_chol_k(const int32_t *c, const int32_t k,
                                                                int32_t *a)
{
    int32_t nfix = 0;
    int32_t i;
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
        i = j + 1;
#if ELT_NEON
        /* rows i, i + 1 together: one load of row j's prefix for both dot products, the two
         * numerators in one int64x2 (VQMOVN = sat32), the quotients by VMULL by r, VRSHL by
         * -(e + 3), VQMOVN */
        {
            const int64x2_t esh = vreinterpretq_s64_s32(vdupq_n_s32(-(e + 3)));
            for (; i + 2 <= k; i += 2) {
                const int32_t *ai = &a[ELT_TRI(i, 0)];
                const int32_t *ai1 = ai + i + 1; /* row i + 1 follows row i */
                int64x2_t acc_i = vdupq_n_s64(0);
                int64x2_t acc_i1 = acc_i;
                int64x2_t sum;
                int32x2_t num;
                int32_t l = 0;
                for (; l + 2 <= j; l += 2) {
                    const int32x2_t ajv = vld1_s32(aj + l);
                    acc_i = vrsraq_n_s64(acc_i, vmull_s32(vld1_s32(ai + l), ajv), ELT_C_FRAC);
                    acc_i1 = vrsraq_n_s64(acc_i1, vmull_s32(vld1_s32(ai1 + l), ajv), ELT_C_FRAC);
                }
                sum = elt_hadd2_s64(acc_i, acc_i1);
                if (l < j) {
                    const int32x2_t al = vset_lane_s32(ai1[l], vdup_n_s32(ai[l]), 1);
                    sum = vrsraq_n_s64(sum, vmull_n_s32(al, aj[l]), ELT_C_FRAC);
                }
                num = vqmovn_s64(vsubq_s64(
                    vmovl_s32(vset_lane_s32(c[ELT_TRI(i + 1, j)], vdup_n_s32(c[ELT_TRI(i, j)]), 1)),
                    sum));
                num = vqmovn_s64(vrshlq_s64(vmull_n_s32(num, r), esh));
                a[ELT_TRI(i, j)] = vget_lane_s32(num, 0);
                a[ELT_TRI(i + 1, j)] = vget_lane_s32(num, 1);
            }
        }
#endif
        for (; i < k; i++) {
            const int64_t num =
                elt_sat32(c[ELT_TRI(i, j)] - elt_dot_rr26(&a[ELT_TRI(i, 0)], aj, j));
            a[ELT_TRI(i, j)] = elt_sat32(fx_rshift_round64(num * r, e + 3));
        }
    }
    return nfix;
}

#if ELT_NEON
/* elt_chol_k's arithmetic column by column with the rows in NEON lanes: column j's numerators
 * C_ij - sum_l round(A_il A_jl / 2^26) for rows i > j four at a time, each product by VMULL by
 * the scalar A_jl and VRSRA #26 into the row's int64 lane (no horizontal sums), the factor's
 * columns read from a transposed copy at[l][i] = A_il (contiguous over rows); the quotients by
 * VQMOVN (sat32), VMULL by r, VRSHL by -(e + 3), VQMOVN. Lanes past the last row compute on
 * the zeroed padding and are never stored into A. */
static inline __attribute__((always_inline)) int32_t elt_chol_cols(const int32_t *c,
                                                                   const int32_t k, int32_t *a)
{
    /* at least 2 rows: for ELT_K_MAX = 1 the pair loop is dead code that -Warray-bounds reads */
    int32_t at[ELT_K_MAX > 1 ? ELT_K_MAX : 2][ELT_K_MAX + 4];
    int32_t nfix = 0;
    int32_t i;
    int32_t j;
    int32_t l;
    if (k < 1 || k > ELT_K_MAX) {
        __builtin_unreachable(); /* the state is sized by ELT_K_MAX; tells GCC the unrolled range */
    }
    for (l = 0; l < k; l++) {
        vst1q_s32(&at[l][k], vdupq_n_s32(0));
    }
#if ELT_K_MAX <= 16 /* fully unrolled: every bound and offset a constant */
#pragma GCC unroll 16
#endif
    for (j = 0; j < k; j++) {
        const int32_t *aj = &a[ELT_TRI(j, 0)];
        int64_t piv = c[ELT_TRI(j, j)];
        const int32_t *cp;
        int32_t *ap;
        int64x2_t esh;
        int32x2_t rv;
        int32_t r;
        int e;
        { /* the pivot's sum: row j's prefix, two squares per VMULL, VRSRA #26 */
            int64x2_t dv = vdupq_n_s64(0);
#if ELT_K_MAX <= 16
#pragma GCC unroll 8
#endif
            for (l = 0; l + 2 <= j; l += 2) {
                const int32x2_t v = vld1_s32(aj + l);
                dv = vrsraq_n_s64(dv, vmull_s32(v, v), ELT_C_FRAC);
            }
            piv -= vgetq_lane_s64(dv, 0) + vgetq_lane_s64(dv, 1);
            if (l < j) {
                piv -= elt_mul_rr(aj[l], aj[l], ELT_C_FRAC);
            }
        }
        a[ELT_TRI(j, j)] = elt_chol_diag(piv, &nfix, &r, &e);
        if (j + 1 == k) {
            break;
        }
        esh = vreinterpretq_s64_s32(vdupq_n_s32(-(e + 3)));
        rv = vdup_n_s32(r);
        cp = &c[ELT_TRI(j + 1, j)];
        ap = &a[ELT_TRI(j + 1, j)];
#if ELT_K_MAX <= 16
#pragma GCC unroll 4
#endif
        for (i = j + 1; i < k; i += 4) {
            /* entry (i, j) of a packed lower triangle: the next row's is i + 1 further */
            const int32_t d1 = i + 1;
            const int32_t d2 = d1 + i + 2;
            const int32_t d3 = d2 + i + 3;
            int64x2_t lo = vdupq_n_s64(0);
            int64x2_t hi = lo;
            int32x4_t cv = vdupq_n_s32(0);
            int32x2_t qlo;
            int32x2_t qhi;
#if ELT_K_MAX <= 16
#pragma GCC unroll 8
#endif
            for (l = 0; l + 2 <= j; l += 2) {
                const int32x2_t ajl = vld1_s32(aj + l);
                const int32x4_t v0 = vld1q_s32(&at[l][i]);
                const int32x4_t v1 = vld1q_s32(&at[l + 1][i]);
                lo = vrsraq_n_s64(lo, vmull_lane_s32(vget_low_s32(v0), ajl, 0), ELT_C_FRAC);
                hi = vrsraq_n_s64(hi, vmull_lane_s32(vget_high_s32(v0), ajl, 0), ELT_C_FRAC);
                lo = vrsraq_n_s64(lo, vmull_lane_s32(vget_low_s32(v1), ajl, 1), ELT_C_FRAC);
                hi = vrsraq_n_s64(hi, vmull_lane_s32(vget_high_s32(v1), ajl, 1), ELT_C_FRAC);
            }
            if (l < j) {
                const int32x4_t v0 = vld1q_s32(&at[l][i]);
                const int32x2_t ajl = vld1_dup_s32(aj + l);
                lo = vrsraq_n_s64(lo, vmull_lane_s32(vget_low_s32(v0), ajl, 0), ELT_C_FRAC);
                hi = vrsraq_n_s64(hi, vmull_lane_s32(vget_high_s32(v0), ajl, 0), ELT_C_FRAC);
            }
            cv = vld1q_lane_s32(cp, cv, 0);
            if (i + 1 < k) {
                cv = vld1q_lane_s32(cp + d1, cv, 1);
            }
            if (i + 2 < k) {
                cv = vld1q_lane_s32(cp + d2, cv, 2);
            }
            if (i + 3 < k) {
                cv = vld1q_lane_s32(cp + d3, cv, 3);
            }
            qlo = vqmovn_s64(vsubq_s64(vmovl_s32(vget_low_s32(cv)), lo));
            qhi = vqmovn_s64(vsubq_s64(vmovl_s32(vget_high_s32(cv)), hi));
            qlo = vqmovn_s64(vrshlq_s64(vmull_lane_s32(qlo, rv, 0), esh));
            qhi = vqmovn_s64(vrshlq_s64(vmull_lane_s32(qhi, rv, 0), esh));
            vst1q_s32(&at[j][i], vcombine_s32(qlo, qhi));
            vst1_lane_s32(ap, qlo, 0);
            if (i + 1 < k) {
                vst1_lane_s32(ap + d1, qlo, 1);
            }
            if (i + 2 < k) {
                vst1_lane_s32(ap + d2, qhi, 0);
            }
            if (i + 3 < k) {
                vst1_lane_s32(ap + d3, qhi, 1);
            }
            cp += d3 + i + 4;
            ap += d3 + i + 4;
        }
    }
    return nfix;
}
#endif

int32_t elt_cmaes_chol_s32(const int32_t *c, int32_t k, int32_t *a)
{
#if ELT_NEON
    if (k == ELT_K_MAX) {
        return elt_chol_cols(c, ELT_K_MAX, a);
    }
    return elt_chol_k(c, k, a);
#else
    if (k == ELT_K_MAX) {
        return elt_chol_k(c, ELT_K_MAX, a);
    }
    return elt_chol_k(c, k, a);
#endif
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

#if ELT_NEON
/* elt_xoshiro_out on four words s1 (one stream's consecutive steps): VMUL #5, VSHL #7 + VSRI
 * #25 (rotate), VMUL #9. The draws are the single stream's, unchanged. */
static inline uint32x4_t elt_xoshiro_out4(uint32x4_t s1)
{
    const uint32x4_t a = vmulq_n_u32(s1, 5u);
    return vmulq_n_u32(vsriq_n_u32(vshlq_n_u32(a, 7), a, 25), 9u);
}

/* elt_gauss_from_u32 on four draws: VSLI builds the odd v, VCLZ the octave, VSHL the mantissa;
 * the knot pair's address lut + 4 (33 o + s) by VMLA and VSRA of the mantissa's top six bits
 * (32 + s, the 32 taken off the base); the addresses to core registers two per VMOV, the pair
 * (T[s], T[s+1]) by one VLD2 lane load per lane; the interpolation round(dt f / 2^16) by
 * VQRDMULH with f 2^15 (= (2 dt f 2^15 + 2^31) >> 32, the same rounding; never saturates, as
 * f 2^15 < 2^31); sign by XOR / subtract. */
static inline int32x4_t elt_gauss4(uint32x4_t u, const int32_t *lut)
{
    const uint32x4_t v = vsliq_n_u32(vdupq_n_u32(1u), u, 1); /* (u << 1) | 1 */
    const uint32x4_t oct = vclzq_u32(v);
    const uint32x4_t mn = vshlq_u32(v, vreinterpretq_s32_u32(oct));
    const uint32x4_t base = vdupq_n_u32((uint32_t)(uintptr_t)lut - 4u * 32u);
    const uint32x4_t addr =
        vsraq_n_u32(vmlaq_u32(base, oct, vdupq_n_u32(4u * ELT_GAUSS_KNOTS)),
                    vandq_u32(mn, vdupq_n_u32(0xFC000000u)), 24); /* (mn >> 26) 4 */
    const int32x4_t f15 =
        vreinterpretq_s32_u32(vandq_u32(vshlq_n_u32(mn, 5), vdupq_n_u32(0x7FFF8000u)));
    const int32x4_t neg = vshrq_n_s32(vreinterpretq_s32_u32(u), 31); /* 0 or -1 */
    const uint64_t a01 = vgetq_lane_u64(vreinterpretq_u64_u32(addr), 0);
    const uint64_t a23 = vgetq_lane_u64(vreinterpretq_u64_u32(addr), 1);
    int32x4x2_t g;
    int32x4_t mag;
    g.val[0] = neg; /* every lane is loaded below */
    g.val[1] = neg;
    g = vld2q_lane_s32((const int32_t *)(uintptr_t)(uint32_t)a01, g, 0);
    g = vld2q_lane_s32((const int32_t *)(uintptr_t)(uint32_t)(a01 >> 32), g, 1);
    g = vld2q_lane_s32((const int32_t *)(uintptr_t)(uint32_t)a23, g, 2);
    g = vld2q_lane_s32((const int32_t *)(uintptr_t)(uint32_t)(a23 >> 32), g, 3);
    mag = vaddq_s32(g.val[0], vqrdmulhq_s32(vsubq_s32(g.val[1], g.val[0]), f15));
    return vsubq_s32(veorq_s32(mag, neg), neg); /* -mag where the sign bit is set */
}
#endif

#if ELT_NEON
/* y = A z and x = m + sigma y of ng = 2 or 4 candidates i.. (elt_cmaes_sample_s32's
 * arithmetic): each row of A (packed, contiguous) loaded once for all of them, times zr by
 * VMLAL.S32 four products per candidate and step, the lanes summed pairwise, VRSHR #22,
 * VQMOVN; then x two dimensions per step (VMULL by the mantissa, VRSHL, VQMOVN). */
static inline __attribute__((always_inline)) void elt_sample_group(const elt_cmaes_state_t *s,
                                                                   elt_cmaes_work_t *w, int32_t i,
                                                                   int32_t k, int32_t mant,
                                                                   int shift, const int ng)
{
    const int32x2_t md = vdup_n_s32(mant);
    const int64x2_t shv = vreinterpretq_s64_s32(vdupq_n_s32(-shift));
    int32_t zr[4][ELT_K_MAX];
    const int32_t *ar = w->A;
    int32_t a;
    int32_t l;
    int g;
#pragma GCC unroll 4
    for (g = 0; g < ng; g++) {
        for (a = 0; a + 4 <= k; a += 4) { /* VRSHR #5 */
            vst1q_s32(&zr[g][a],
                      vrshrq_n_s32(vld1q_s32(&w->z[i + g][a]), ELT_Z_FRAC - ELT_ZR_FRAC));
        }
        for (; a < k; a++) {
            zr[g][a] = fx_rshift_round32(w->z[i + g][a], ELT_Z_FRAC - ELT_ZR_FRAC);
        }
    }
    if (k < 1 || k > ELT_K_MAX) {
        __builtin_unreachable(); /* the work arrays are sized by ELT_K_MAX */
    }
#if ELT_K_MAX <= 16 /* fully unrolled: every bound and offset a constant */
#pragma GCC unroll 16
#endif
    for (a = 0; a < k; a++) {
        int64x2_t acc[4];
        int64x2_t sum[2];
#pragma GCC unroll 4
        for (g = 0; g < ng; g++) {
            acc[g] = vdupq_n_s64(0);
        }
#if ELT_K_MAX <= 16
#pragma GCC unroll 4
#endif
        for (l = 0; l + 4 <= a + 1; l += 4) {
            const int32x4_t av = vld1q_s32(ar + l);
#pragma GCC unroll 4
            for (g = 0; g < ng; g++) {
                const int32x4_t zv = vld1q_s32(&zr[g][l]);
                acc[g] = vmlal_s32(acc[g], vget_low_s32(av), vget_low_s32(zv));
                acc[g] = vmlal_s32(acc[g], vget_high_s32(av), vget_high_s32(zv));
            }
        }
        if (l + 2 <= a + 1) {
            const int32x2_t av = vld1_s32(ar + l);
#pragma GCC unroll 4
            for (g = 0; g < ng; g++) {
                acc[g] = vmlal_s32(acc[g], av, vld1_s32(&zr[g][l]));
            }
            l += 2;
        }
        /* (sum of g's lanes, sum of g + 1's lanes): the low halves plus the high halves */
#pragma GCC unroll 2
        for (g = 0; g < ng; g += 2) {
            sum[g / 2] = elt_hadd2_s64(acc[g], acc[g + 1]);
            if (l == a) {
                const int32x2_t zl = vset_lane_s32(zr[g + 1][a], vdup_n_s32(zr[g][a]), 1);
                sum[g / 2] = vmlal_n_s32(sum[g / 2], zl, ar[a]);
            }
            {
                const int32x2_t yv =
                    vqmovn_s64(vrshrq_n_s64(sum[g / 2], ELT_C_FRAC + ELT_ZR_FRAC - ELT_X_FRAC));
                w->y[i + g][a] = vget_lane_s32(yv, 0);
                w->y[i + g + 1][a] = vget_lane_s32(yv, 1);
            }
        }
        ar += a + 1;
    }
    for (a = 0; a + 2 <= k; a += 2) {
        const int64x2_t m64 = vmovl_s32(vld1_s32(&s->m[a]));
#pragma GCC unroll 4
        for (g = 0; g < ng; g++) {
            vst1_s32(&w->x[i + g][a],
                     vqmovn_s64(vaddq_s64(
                         m64, vrshlq_s64(vmull_s32(vld1_s32(&w->y[i + g][a]), md), shv))));
        }
    }
    for (; a < k; a++) {
#pragma GCC unroll 4
        for (g = 0; g < ng; g++) {
            w->x[i + g][a] = elt_sat32((int64_t)s->m[a] +
                                       fx_rshift_round64((int64_t)w->y[i + g][a] * mant, shift));
        }
    }
}
#endif

#if ELT_NEON
/* y = A z and x = m + sigma y of candidates i, i + 1 when k = ELT_K_MAX is a multiple of 4
 * and at most 16 (every loop unrolled): the two candidates' zr (VRSHR #5) interleaved by VZIP
 * into pairs (zr_i[l], zr_i+1[l]) that stay in NEON registers for all rows; row a of A (packed,
 * quad loads; the last quad may read into the next row, whose lanes are not used) then costs one
 * VMLAL.S32 by lane per entry into the row's (y_i, y_i+1) accumulator: no horizontal sums;
 * VRSHR #22, VQMOVN; two rows' pairs transposed by VTRN into each candidate's (y_a, y_a+1),
 * stored, and x = sat32(m + round(y mant / 2^shift)) from them (VMULL, VRSHL, VADDW, VQMOVN). */
static inline __attribute__((always_inline)) void elt_sample_two(const elt_cmaes_state_t *s,
                                                                 elt_cmaes_work_t *w, int32_t i,
                                                                 const int32_t k, int32_t mant,
                                                                 int shift)
{
    const int32x2_t md = vdup_n_s32(mant);
    const int64x2_t shv = vreinterpretq_s64_s32(vdupq_n_s32(-shift));
    int32x2_t zp[ELT_K_MAX + 4]; /* zp[l] = (zr_i[l], zr_i+1[l]) */
    int32x2_t yprev = vdup_n_s32(0);
    const int32_t *ar = w->A;
    int32_t a;
    int32_t l;
#pragma GCC unroll 4
    for (l = 0; l < k; l += 4) {
        const int32x4x2_t zz =
            vzipq_s32(vrshrq_n_s32(vld1q_s32(&w->z[i][l]), ELT_Z_FRAC - ELT_ZR_FRAC),
                      vrshrq_n_s32(vld1q_s32(&w->z[i + 1][l]), ELT_Z_FRAC - ELT_ZR_FRAC));
        zp[l] = vget_low_s32(zz.val[0]);
        zp[l + 1] = vget_high_s32(zz.val[0]);
        zp[l + 2] = vget_low_s32(zz.val[1]);
        zp[l + 3] = vget_high_s32(zz.val[1]);
    }
#pragma GCC unroll 16
    for (a = 0; a < k; a++) {
        int64x2_t acc = vdupq_n_s64(0);
        int32x2_t yv;
#pragma GCC unroll 4
        for (l = 0; l <= a; l += 4) {
            const int32x4_t av = vld1q_s32(ar + l);
            acc = vmlal_lane_s32(acc, zp[l], vget_low_s32(av), 0);
            if (l + 1 <= a) {
                acc = vmlal_lane_s32(acc, zp[l + 1], vget_low_s32(av), 1);
            }
            if (l + 2 <= a) {
                acc = vmlal_lane_s32(acc, zp[l + 2], vget_high_s32(av), 0);
            }
            if (l + 3 <= a) {
                acc = vmlal_lane_s32(acc, zp[l + 3], vget_high_s32(av), 1);
            }
        }
        yv = vqmovn_s64(vrshrq_n_s64(acc, ELT_C_FRAC + ELT_ZR_FRAC - ELT_X_FRAC));
        if (a % 2 == 1) { /* rows a - 1, a: (y_i[a-1], y_i[a]) and (y_i+1[a-1], y_i+1[a]) */
            const int32x2x2_t yt = vtrn_s32(yprev, yv);
            const int32x2_t mv = vld1_s32(&s->m[a - 1]);
            vst1_s32(&w->y[i][a - 1], yt.val[0]);
            vst1_s32(&w->y[i + 1][a - 1], yt.val[1]);
            vst1_s32(&w->x[i][a - 1],
                     vqmovn_s64(vaddw_s32(vrshlq_s64(vmull_s32(yt.val[0], md), shv), mv)));
            vst1_s32(&w->x[i + 1][a - 1],
                     vqmovn_s64(vaddw_s32(vrshlq_s64(vmull_s32(yt.val[1], md), shv), mv)));
        }
        yprev = yv;
        ar += a + 1;
    }
}
#endif

/* elt_cmaes_sample_s32 for one k (a constant where the caller knows it, so GCC unrolls) */
static inline __attribute__((always_inline)) void
elt_sample_k(const elt_cmaes_params_t *p, const elt_cmaes_state_t *s, elt_cmaes_work_t *w,
             elt_rng_t *rng, const int32_t *gauss_lut, const int32_t k)
{
    const int32_t lam = p->lam;
    const int32_t mant = w->sig_mant;
    /* sigma y = y mant 2^(e+1) / 2^30: Q.57 -> Q.27, shift 29 - e in [25, 50] */
    const int shift = (ELT_RATE_FRAC - 1) - w->sig_exp;
    uint32_t st[4];
    int32_t i;
    int32_t a;
    int32_t l;
    /* draw order: candidate-major, then dimension (the stream kept in registers) */
    st[0] = rng->s[0];
    st[1] = rng->s[1];
    st[2] = rng->s[2];
    st[3] = rng->s[3];
#if ELT_NEON
    /* the state updates first (each step's s1 stored), then the output function and the
     * normals four at a time (two rows of k = 2, or runs of four within a row), the rest one
     * by one: the same draws in the same order as elt_xoshiro_next */
    if (k % 4 == 0) {
        /* xoshiro128** four steps at a time in core registers (s3 kept unrotated: the rotation
         * folds into the next step's EOR as a ROR operand), the four s1 into NEON by two VMOV,
         * then the output function and the normals in lanes: the same draws in the same order */
        uint32_t x0 = st[0];
        uint32_t x1 = st[1];
        uint32_t x2 = st[2];
        uint32_t xq = elt_rotl32(st[3], 21); /* rotl(xq, 11) is s3 */
        uint32_t o[4];
        int r;
        for (i = 0; i < lam; i++) {
            for (a = 0; a < k; a += 4) {
#pragma GCC unroll 4
                for (r = 0; r < 4; r++) {
                    o[r] = x1;
                    x2 ^= x0;
                    xq = elt_rotl32(xq, 11) ^ x1;
                    x1 ^= x2;
                    x0 ^= xq;
                    x2 ^= o[r] << 9;
                }
                vst1q_s32(&w->z[i][a],
                          elt_gauss4(elt_xoshiro_out4(vsetq_lane_u32(
                                         o[3],
                                         vsetq_lane_u32(
                                             o[2], vsetq_lane_u32(o[1], vdupq_n_u32(o[0]), 1), 2),
                                         3)),
                                     gauss_lut));
            }
        }
        st[0] = x0;
        st[1] = x1;
        st[2] = x2;
        st[3] = elt_rotl32(xq, 11);
    }
    for (i = 0; k % 4 != 0 && i < lam; i++) {
#if ELT_K_MAX >= 2
        if (k == 2) {
            w->z[i][0] = (int32_t)elt_xoshiro_step(st);
            w->z[i][1] = (int32_t)elt_xoshiro_step(st);
            continue;
        }
#endif
        for (a = 0; a < k; a++) {
            w->z[i][a] = (int32_t)elt_xoshiro_step(st);
        }
    }
    i = k % 4 == 0 ? lam : 0;
#if ELT_K_MAX >= 2
    for (; k == 2 && i + 2 <= lam; i += 2) {
        const int32x4_t g = elt_gauss4(elt_xoshiro_out4(vreinterpretq_u32_s32(
                                           vcombine_s32(vld1_s32(w->z[i]), vld1_s32(w->z[i + 1])))),
                                       gauss_lut);
        vst1_s32(w->z[i], vget_low_s32(g));
        vst1_s32(w->z[i + 1], vget_high_s32(g));
    }
#endif
    for (; i < lam; i++) {
        for (a = 0; a + 4 <= k; a += 4) {
            vst1q_s32(&w->z[i][a],
                      elt_gauss4(elt_xoshiro_out4(vreinterpretq_u32_s32(vld1q_s32(&w->z[i][a]))),
                                 gauss_lut));
        }
        for (; a < k; a++) {
            w->z[i][a] = elt_gauss_from_u32(elt_xoshiro_out((uint32_t)w->z[i][a]), gauss_lut);
        }
    }
#else
    for (i = 0; i < lam; i++) {
        for (a = 0; a < k; a++) {
            w->z[i][a] = elt_gauss_from_u32(elt_xoshiro_next(st), gauss_lut);
        }
    }
#endif
    rng->s[0] = st[0];
    rng->s[1] = st[1];
    rng->s[2] = st[2];
    rng->s[3] = st[3];
    /* y = A z from z rounded to Q3.23 (zr = rshift_round(z, 5), |zr| < 2^25.7), the products
     * Q5.26 x Q3.23 summed exactly in int64 (< 32 2^31 2^25.7 < 2^61.7 for any A) and rounded
     * once to Q.27: y = sat32(rshift_round(sum, 22)); x = sat32(m + round(y mant / 2^shift)) */
    i = 0;
#if ELT_NEON
#if ELT_K_MAX >= 2
    if (k == 2) {
        /* the KWS setting: y0 = A00 zr0, y1 = A10 zr0 + A11 zr1 by VMULL / VMLAL by lane,
         * VRSHR #22, VQMOVN; x as below */
        const int32x2_t a0 = vld1_s32(w->A);                           /* A00, A10 */
        const int32x2_t a1 = vset_lane_s32(w->A[2], vdup_n_s32(0), 1); /* 0, A11 */
        const int64x2_t m64 = vmovl_s32(vld1_s32(s->m));
        const int32x2_t md = vdup_n_s32(mant);
        const int64x2_t shv = vreinterpretq_s64_s32(vdupq_n_s32(-shift));
        for (; i < lam; i++) {
            const int32x2_t zv = vrshr_n_s32(vld1_s32(w->z[i]), ELT_Z_FRAC - ELT_ZR_FRAC);
            const int32x2_t y =
                vqmovn_s64(vrshrq_n_s64(vmlal_lane_s32(vmull_lane_s32(a0, zv, 0), a1, zv, 1),
                                        ELT_C_FRAC + ELT_ZR_FRAC - ELT_X_FRAC));
            vst1_s32(w->y[i], y);
            vst1_s32(w->x[i], vqmovn_s64(vaddq_s64(m64, vrshlq_s64(vmull_s32(y, md), shv))));
        }
    }
#endif
    if (k == ELT_K_MAX && ELT_K_MAX % 4 == 0 && ELT_K_MAX <= 16) {
        for (; i + 2 <= lam; i += 2) {
            elt_sample_two(s, w, i, k, mant, shift);
        }
    }
    for (; i + 4 <= lam; i += 4) {
        elt_sample_group(s, w, i, k, mant, shift, 4);
    }
    if (i + 2 <= lam) {
        elt_sample_group(s, w, i, k, mant, shift, 2);
        i += 2;
    }
#endif
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

#if ELT_NEON
/* 2nh consecutive entries ce[0 .. 2nh) of row a of C (nh = 1, 2, 4 int64x2 accumulators):
 * VMULL by decay, VRSHR #2 (Q.54), + p~_a p~_b.., then per term one VMLAL (positive weights)
 * or VMLSL (negative) by lane of the term's entries b.. times its entry a (VLD1 dup), VRSHR
 * #28, VQMOVN (sat32). tb points at entry b of the first term row (rows ELT_K_MAX apart),
 * ta at its entry a, pb at p~_b. */
static inline __attribute__((always_inline)) void
elt_cov_blk(int32_t *ce, const int32_t *pb, const int32_t *tb, const int32_t *ta, int32_t npos,
            int32_t nt, int32_t decay, int32_t pa, const int nh)
{
    int64x2_t acc[4];
    int32x2_t v[4];
    int h;
    int32_t t;
#pragma GCC unroll 4
    for (h = 0; h < nh; h++) {
        acc[h] = vrshrq_n_s64(vmull_n_s32(vld1_s32(ce + 2 * h), decay),
                              ELT_RATE_FRAC + ELT_C_FRAC - 2 * ELT_X_FRAC);
        acc[h] = vmlal_n_s32(acc[h], vld1_s32(pb + 2 * h), pa);
    }
#define ELT_COV_LOAD()                                                                             \
    do {                                                                                           \
        if (nh == 1) {                                                                             \
            v[0] = vld1_s32(tb);                                                                   \
        } else {                                                                                   \
            const int32x4_t q0 = vld1q_s32(tb);                                                    \
            v[0] = vget_low_s32(q0);                                                               \
            v[1] = vget_high_s32(q0);                                                              \
            if (nh == 4) {                                                                         \
                const int32x4_t q1 = vld1q_s32(tb + 4);                                            \
                v[2] = vget_low_s32(q1);                                                           \
                v[3] = vget_high_s32(q1);                                                          \
            }                                                                                      \
        }                                                                                          \
    } while (0)
    for (t = 0; t < npos; t++, tb += ELT_K_MAX, ta += ELT_K_MAX) {
        const int32x2_t sv = vld1_dup_s32(ta);
        ELT_COV_LOAD();
#pragma GCC unroll 4
        for (h = 0; h < nh; h++) {
            acc[h] = vmlal_lane_s32(acc[h], v[h], sv, 0);
        }
    }
    for (; t < nt; t++, tb += ELT_K_MAX, ta += ELT_K_MAX) {
        const int32x2_t sv = vld1_dup_s32(ta);
        ELT_COV_LOAD();
#pragma GCC unroll 4
        for (h = 0; h < nh; h++) {
            acc[h] = vmlsl_lane_s32(acc[h], v[h], sv, 0);
        }
    }
#undef ELT_COV_LOAD
#pragma GCC unroll 4
    for (h = 0; h < nh; h++) {
        vst1_s32(ce + 2 * h, vqmovn_s64(vrshrq_n_s64(acc[h], 2 * ELT_X_FRAC - ELT_C_FRAC)));
    }
}
#endif

#if ELT_NEON
/* One term of a 4 x 4 tile of C (rows a0.., columns b0..): the term's entries b0.. (bp) and
 * a0.. (ap) as two quad loads, then one VMLAL (OP = vmlal_lane_s32) or VMLSL per pair of
 * columns and row, the row's entry as the lane. A diagonal tile (b0 = a0) skips the pairs
 * above the diagonal (rows 0 and 1, columns 2 and 3). */
#define ELT_TILE_TERM(OP, bp, ap)                                                                  \
    do {                                                                                           \
        const int32x4_t bv = vld1q_s32(bp);                                                        \
        const int32x4_t av = vld1q_s32(ap);                                                        \
        const int32x2_t bl = vget_low_s32(bv);                                                     \
        const int32x2_t bh = vget_high_s32(bv);                                                    \
        const int32x2_t al = vget_low_s32(av);                                                     \
        const int32x2_t ah = vget_high_s32(av);                                                    \
        acc[0][0] = OP(acc[0][0], bl, al, 0);                                                      \
        acc[1][0] = OP(acc[1][0], bl, al, 1);                                                      \
        acc[2][0] = OP(acc[2][0], bl, ah, 0);                                                      \
        acc[3][0] = OP(acc[3][0], bl, ah, 1);                                                      \
        if (!diag) {                                                                               \
            acc[0][1] = OP(acc[0][1], bh, al, 0);                                                  \
            acc[1][1] = OP(acc[1][1], bh, al, 1);                                                  \
        }                                                                                          \
        acc[2][1] = OP(acc[2][1], bh, ah, 0);                                                      \
        acc[3][1] = OP(acc[3][1], bh, ah, 1);                                                      \
    } while (0)

/* docs/cmaes.md §6 step 9 on a 4 x 4 tile of C (rows a0..a0+3, columns b0..b0+3, b0 <= a0):
 * every entry's exact int64 sum in one of eight int64x2 accumulators (Q.54): decay C by VMULL
 * and VRSHR #2, then the terms p~ and y~_t (rows of zt, ELT_K_MAX apart; the first npos
 * positive, the rest up to nt negative), one quad load of each side per term shared by the
 * tile's 16 (diagonal: 12) products; VQRSHRN #28 (sat32 of the rounded shift) at the store.
 * The diagonal tile stores only the entries on or below the diagonal. */
static inline __attribute__((always_inline)) void
elt_cov_tile(int32_t *C, const int32_t *pt, const int32_t *zt, int32_t npos, int32_t nt,
             int32_t decay, int32_t a0, int32_t b0, const int diag)
{
    const int32x2_t dv = vdup_n_s32(decay);
    int64x2_t acc[4][2];
    int32_t *row[4];
    const int32_t *tb = zt + b0;
    const int32_t *ta = zt + a0;
    int32_t t;
    int r;
#pragma GCC unroll 4
    for (r = 0; r < 4; r++) {
        row[r] = &C[ELT_TRI(a0 + r, b0)];
        acc[r][0] = vrshrq_n_s64(vmull_lane_s32(vld1_s32(row[r]), dv, 0),
                                 ELT_RATE_FRAC + ELT_C_FRAC - 2 * ELT_X_FRAC);
        acc[r][1] = (diag && r < 2) ? acc[r][0]
                                    : vrshrq_n_s64(vmull_lane_s32(vld1_s32(row[r] + 2), dv, 0),
                                                   ELT_RATE_FRAC + ELT_C_FRAC - 2 * ELT_X_FRAC);
    }
    ELT_TILE_TERM(vmlal_lane_s32, pt + b0, pt + a0);
#pragma GCC unroll 2
    for (t = 0; t < npos; t++, tb += ELT_K_MAX, ta += ELT_K_MAX) {
        ELT_TILE_TERM(vmlal_lane_s32, tb, ta);
    }
#pragma GCC unroll 2
    for (; t < nt; t++, tb += ELT_K_MAX, ta += ELT_K_MAX) {
        ELT_TILE_TERM(vmlsl_lane_s32, tb, ta);
    }
    if (diag) {
        vst1_lane_s32(row[0], vqrshrn_n_s64(acc[0][0], 2 * ELT_X_FRAC - ELT_C_FRAC), 0);
        vst1_s32(row[1], vqrshrn_n_s64(acc[1][0], 2 * ELT_X_FRAC - ELT_C_FRAC));
        vst1_s32(row[2], vqrshrn_n_s64(acc[2][0], 2 * ELT_X_FRAC - ELT_C_FRAC));
        vst1_lane_s32(row[2] + 2, vqrshrn_n_s64(acc[2][1], 2 * ELT_X_FRAC - ELT_C_FRAC), 0);
        vst1_s32(row[3], vqrshrn_n_s64(acc[3][0], 2 * ELT_X_FRAC - ELT_C_FRAC));
        vst1_s32(row[3] + 2, vqrshrn_n_s64(acc[3][1], 2 * ELT_X_FRAC - ELT_C_FRAC));
        return;
    }
#pragma GCC unroll 4
    for (r = 0; r < 4; r++) {
        vst1_s32(row[r], vqrshrn_n_s64(acc[r][0], 2 * ELT_X_FRAC - ELT_C_FRAC));
        vst1_s32(row[r] + 2, vqrshrn_n_s64(acc[r][1], 2 * ELT_X_FRAC - ELT_C_FRAC));
    }
}
#undef ELT_TILE_TERM
#endif

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
    int64_t n2 = 0;
    int32_t hsig;
    int32_t decay;
    int32_t nps;
    int32_t ratio;
    int64_t dl;
    int32_t i;
    int32_t a;
    int32_t b;
    if (k < 1 || k > ELT_K_MAX) {
        __builtin_unreachable(); /* the state is sized by ELT_K_MAX */
    }
    s->g += 1; /* pycma countiter, incremented before the update */
    /* 2. m' = sum_{i<mu} w_i x_{i:lam}; z_w, y_w alike (docs/cmaes.md §1.2 step 2, §3) */
    a = 0;
#if ELT_NEON
    /* four dimensions per step: each parent's quad by VMULL by lane w_i, VRSRA #30 (each
     * product rounded, the sum exact in int64), VQMOVN (sat32) */
    ELT_UNROLL_K
    for (; a + 4 <= k; a += 4) {
        int64x2_t acc[6];
        int h;
#pragma GCC unroll 6
        for (h = 0; h < 6; h++) {
            acc[h] = vdupq_n_s64(0);
        }
        for (i = 0; i < p->mu; i++) {
            const int32_t r = order[i];
            const int32x2_t wv = vld1_dup_s32(&p->w[i]);
            const int32x4_t xv = vld1q_s32(&w->x[r][a]);
            const int32x4_t zv = vld1q_s32(&w->z[r][a]);
            const int32x4_t yv = vld1q_s32(&w->y[r][a]);
            acc[0] = vrsraq_n_s64(acc[0], vmull_lane_s32(vget_low_s32(xv), wv, 0), ELT_RATE_FRAC);
            acc[1] = vrsraq_n_s64(acc[1], vmull_lane_s32(vget_high_s32(xv), wv, 0), ELT_RATE_FRAC);
            acc[2] = vrsraq_n_s64(acc[2], vmull_lane_s32(vget_low_s32(zv), wv, 0), ELT_RATE_FRAC);
            acc[3] = vrsraq_n_s64(acc[3], vmull_lane_s32(vget_high_s32(zv), wv, 0), ELT_RATE_FRAC);
            acc[4] = vrsraq_n_s64(acc[4], vmull_lane_s32(vget_low_s32(yv), wv, 0), ELT_RATE_FRAC);
            acc[5] = vrsraq_n_s64(acc[5], vmull_lane_s32(vget_high_s32(yv), wv, 0), ELT_RATE_FRAC);
        }
        vst1_s32(&mnew[a], vqmovn_s64(acc[0]));
        vst1_s32(&mnew[a + 2], vqmovn_s64(acc[1]));
        vst1_s32(&zw[a], vqmovn_s64(acc[2]));
        vst1_s32(&zw[a + 2], vqmovn_s64(acc[3]));
        vst1_s32(&yw[a], vqmovn_s64(acc[4]));
        vst1_s32(&yw[a + 2], vqmovn_s64(acc[5]));
    }
#endif
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
    /* 3. p_s <- (1 - c_s) p_s + sqrt(c_s(2-c_s)mu_eff) z_w (docs/cmaes.md §1.2 step 3) */
    a = 0;
#if ELT_NEON
    {
        /* two dimensions per step: VMULL by lane, VRSHR #30 + VRSRA #29, VQMOVN; the squares
         * by VMULL, VRSRA #8 */
        const int32x2_t cs = vset_lane_s32(p->gain_s, vdup_n_s32(p->one_minus_cs), 1);
        int64x2_t n2v = vdupq_n_s64(0);
        ELT_UNROLL_K
        for (; a + 2 <= k; a += 2) {
            int64x2_t v = vrshrq_n_s64(vmull_lane_s32(vld1_s32(&s->ps[a]), cs, 0), ELT_RATE_FRAC);
            int32x2_t ps;
            v = vrsraq_n_s64(v, vmull_lane_s32(vld1_s32(&zw[a]), cs, 1),
                             ELT_GAIN_FRAC + ELT_Z_FRAC - ELT_X_FRAC);
            ps = vqmovn_s64(v);
            vst1_s32(&s->ps[a], ps);
            n2v = vrsraq_n_s64(n2v, vmull_s32(ps, ps), 2 * ELT_X_FRAC - ELT_NORM2_FRAC);
        }
        n2 = vgetq_lane_s64(n2v, 0) + vgetq_lane_s64(n2v, 1);
    }
#endif
    for (; a < k; a++) {
        s->ps[a] = elt_sat32(elt_mul_rr(p->one_minus_cs, s->ps[a], ELT_RATE_FRAC) +
                             elt_mul_rr(p->gain_s, zw[a], ELT_GAIN_FRAC + ELT_Z_FRAC - ELT_X_FRAC));
        n2 += elt_mul_rr(s->ps[a], s->ps[a], 2 * ELT_X_FRAC - ELT_NORM2_FRAC);
    }
    /* 4. h_sigma <=> ||p_s||^2 < T_g (docs/cmaes.md §1.2 step 4, §6 step 6) */
    hsig = n2 < p->hsig_thr[s->g - 1] ? 1 : 0;
    /* 5. p_c <- (1 - c_c) p_c + h_sigma sqrt(c_c(2-c_c)mu_eff) y_w (docs/cmaes.md §1.2 step 5) */
    a = 0;
#if ELT_NEON
    {
        const int32x2_t cc = vset_lane_s32(p->gain_c, vdup_n_s32(p->one_minus_cc), 1);
        ELT_UNROLL_K
        for (; a + 2 <= k; a += 2) {
            int64x2_t v = vrshrq_n_s64(vmull_lane_s32(vld1_s32(&s->pc[a]), cc, 0), ELT_RATE_FRAC);
            if (hsig) {
                v = vrsraq_n_s64(v, vmull_lane_s32(vld1_s32(&yw[a]), cc, 1), ELT_GAIN_FRAC);
            }
            vst1_s32(&s->pc[a], vqmovn_s64(v));
        }
    }
#endif
    for (; a < k; a++) {
        int64_t v = elt_mul_rr(p->one_minus_cc, s->pc[a], ELT_RATE_FRAC);
        if (hsig) {
            v += elt_mul_rr(p->gain_c, yw[a], ELT_GAIN_FRAC);
        }
        s->pc[a] = elt_sat32(v);
    }
    /* 6a. active weights: y_hat = y / ||z|| (pycma's k / ||C^-1/2 y||^2, k folded into wc),
     * y 2^25 / ||z|| by the normalised reciprocal of ||z|| (Q.25): rshift_round(y r, e + 4) */
    for (i = p->mu; i < p->lam; i++) {
        int32_t *yr = w->y[order[i]];
        const int32_t *zr = w->z[order[i]];
        int64_t nz2 = 0;
        int32_t nz;
        int32_t rn;
        int en;
        if (p->wc[i] == 0) {
            continue;
        }
        a = 0;
#if ELT_NEON
        if (k >= 2) {
            int64x2_t n2v = vdupq_n_s64(0);
            ELT_UNROLL_K
            for (; a + 4 <= k; a += 4) {
                const int32x4_t zv = vld1q_s32(zr + a);
                n2v = vrsraq_n_s64(n2v, vmull_s32(vget_low_s32(zv), vget_low_s32(zv)),
                                   2 * ELT_Z_FRAC - 50);
                n2v = vrsraq_n_s64(n2v, vmull_s32(vget_high_s32(zv), vget_high_s32(zv)),
                                   2 * ELT_Z_FRAC - 50);
            }
            for (; a + 2 <= k; a += 2) {
                const int32x2_t zv = vld1_s32(zr + a);
                n2v = vrsraq_n_s64(n2v, vmull_s32(zv, zv), 2 * ELT_Z_FRAC - 50);
            }
            nz2 = vgetq_lane_s64(n2v, 0) + vgetq_lane_s64(n2v, 1);
        }
#endif
        for (; a < k; a++) {
            nz2 += elt_mul_rr(zr[a], zr[a], 2 * ELT_Z_FRAC - 50); /* Q.50 */
        }
        nz = (int32_t)elt_isqrt64((uint64_t)nz2); /* Q.25, < 2^31 */
        if (nz < 1) {
            nz = 1;
        }
        rn = elt_recip_norm((uint32_t)nz, &en);
        a = 0;
#if ELT_NEON
        {
            const int64x2_t esh = vreinterpretq_s64_s32(vdupq_n_s32(-(en + 4)));
            const int32x2_t rv = vdup_n_s32(rn);
            ELT_UNROLL_K
            for (; a + 4 <= k; a += 4) { /* |y r| < 2^61 */
                const int32x4_t yv = vld1q_s32(yr + a);
                vst1q_s32(
                    yr + a,
                    vcombine_s32(
                        vqmovn_s64(vrshlq_s64(vmull_lane_s32(vget_low_s32(yv), rv, 0), esh)),
                        vqmovn_s64(vrshlq_s64(vmull_lane_s32(vget_high_s32(yv), rv, 0), esh))));
            }
            for (; a + 2 <= k; a += 2) {
                vst1_s32(yr + a,
                         vqmovn_s64(vrshlq_s64(vmull_lane_s32(vld1_s32(yr + a), rv, 0), esh)));
            }
        }
#endif
        for (; a < k; a++) { /* |y r| < 2^61 */
            yr[a] = elt_sat32(fx_rshift_round64((int64_t)yr[a] * rn, en + 4));
        }
    }
    /* 6b. C <- decay_h C + c1 p_c p_c^T + sum wc_i y_hat_i y_hat_i^T (docs/cmaes.md §1.2 step 6)
     * with every term one outer product of a scaled vector (p~ = sqrt(c1) p_c; y~ = sqrt|wc_i|
     * y_hat, written over w->z in term order, positive weights first: z is not read again),
     * the products summed exactly in int64 (Q.54, |sum| < 2^63 proven by
     * codegen.quantize.adapt.cmaes_constants), one rounding and saturation per entry. */
    decay = hsig ? p->decay_h1 : p->decay_h0;
    {
        int32_t pt[ELT_K_MAX];
        int32_t npos = 0;
        int32_t nt = 0;
        int32_t t;
        a = 0;
#if ELT_NEON
        {
            const int32x2_t cv = vdup_n_s32(p->c1_sqrt);
            ELT_UNROLL_K
            for (; a + 2 <= k; a += 2) { /* VQRSHRN #30 = sat32(rshift_round(., 30)) */
                vst1_s32(&pt[a],
                         vqrshrn_n_s64(vmull_lane_s32(vld1_s32(&s->pc[a]), cv, 0), ELT_RATE_FRAC));
            }
        }
#endif
        for (; a < ELT_K_MAX; a++) { /* the whole array: k is ELT_K_MAX on the device */
            pt[a] = a < k ? elt_sat32(elt_mul_rr(p->c1_sqrt, s->pc[a], ELT_RATE_FRAC)) : 0;
        }
        for (i = 0; i < p->lam; i++) {
            const int32_t *yr = w->y[order[i]];
            const int32_t sq = p->wc_sqrt[i];
            if (p->wc[i] == 0) {
                continue;
            }
            a = 0;
#if ELT_NEON
            {
                const int32x2_t sv = vdup_n_s32(sq);
                ELT_UNROLL_K
                for (; a + 4 <= k; a += 4) { /* VQRSHRN #30 = sat32(rshift_round(., 30)) */
                    const int32x4_t yv = vld1q_s32(yr + a);
                    vst1q_s32(&w->z[nt][a],
                              vcombine_s32(vqrshrn_n_s64(vmull_lane_s32(vget_low_s32(yv), sv, 0),
                                                         ELT_RATE_FRAC),
                                           vqrshrn_n_s64(vmull_lane_s32(vget_high_s32(yv), sv, 0),
                                                         ELT_RATE_FRAC)));
                }
                for (; a + 2 <= k; a += 2) {
                    vst1_s32(&w->z[nt][a],
                             vqrshrn_n_s64(vmull_lane_s32(vld1_s32(yr + a), sv, 0), ELT_RATE_FRAC));
                }
            }
#endif
            for (; a < k; a++) {
                w->z[nt][a] = elt_sat32(elt_mul_rr(sq, yr[a], ELT_RATE_FRAC));
            }
            nt++;
            if (p->wc[i] > 0) {
                npos = nt;
            }
        }
#if ELT_NEON
        ELT_UNROLL_K
        for (a = 0; a < (k & ~3); a += 4) { /* rows in fours by tiles, the rest by rows */
            ELT_UNROLL_K
            for (b = 0; b < a; b += 4) {
                elt_cov_tile(s->C, pt, &w->z[0][0], npos, nt, decay, a, b, 0);
            }
            elt_cov_tile(s->C, pt, &w->z[0][0], npos, nt, decay, a, a, 1);
        }
        for (a = k & ~3; a < k; a++) {
#else
        for (a = 0; a < k; a++) {
#endif
            int32_t *crow = &s->C[ELT_TRI(a, 0)];
            b = 0;
#if ELT_NEON
            for (; b + 8 <= a + 1; b += 8) {
                elt_cov_blk(crow + b, pt + b, &w->z[0][b], &w->z[0][a], npos, nt, decay, pt[a], 4);
            }
            if (b + 4 <= a + 1) {
                elt_cov_blk(crow + b, pt + b, &w->z[0][b], &w->z[0][a], npos, nt, decay, pt[a], 2);
                b += 4;
            }
            if (b + 2 <= a + 1) {
                elt_cov_blk(crow + b, pt + b, &w->z[0][b], &w->z[0][a], npos, nt, decay, pt[a], 1);
                b += 2;
            }
#endif
            for (; b <= a; b++) {
                int64_t acc =
                    elt_mul_rr(decay, crow[b], ELT_RATE_FRAC + ELT_C_FRAC - 2 * ELT_X_FRAC) +
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
    }
    /* 7. ln sigma += clip((c_s/d_s)(||p_s||/chi - 1), -1, 1), clamped (docs/cmaes.md §1.2) */
    nps = (int32_t)elt_isqrt64((uint64_t)n2); /* Q.23 */
    ratio = (int32_t)elt_mul_rr(nps, p->inv_chi, ELT_RATE_FRAC);
    dl = elt_mul_rr(p->cs_over_ds, ratio - ((int32_t)1 << ELT_LNSIG_FRAC), ELT_RATE_FRAC);
    if (dl > ((int64_t)1 << ELT_LNSIG_FRAC)) {
        dl = (int64_t)1 << ELT_LNSIG_FRAC;
    } else if (dl < -((int64_t)1 << ELT_LNSIG_FRAC)) {
        dl = -((int64_t)1 << ELT_LNSIG_FRAC);
    }
    dl += s->ln_sigma;
    s->ln_sigma =
        (int32_t)(dl < ELT_LNSIG_MIN ? ELT_LNSIG_MIN : (dl > ELT_LNSIG_MAX ? ELT_LNSIG_MAX : dl));
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
