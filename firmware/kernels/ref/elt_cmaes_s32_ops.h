/*
 * The integer CMA-ES's operations in plain C (firmware/elt_cmaes_s32.c includes this file after
 * its shared helpers; firmware/kernels/neon_a32/elt_cmaes_s32_ops.h is the NEON form of the same
 * functions): each one the scalar loop of elt_cmaes_s32.c from the start.
 */
#ifndef ELT_CMAES_S32_OPS_H
#define ELT_CMAES_S32_OPS_H

/* sum_l round(x_l y_l / 2^26), l < n: each product rounded (elt_mul_rr), the sum exact */
static inline int64_t elt_dot_rr26(const int32_t *x, const int32_t *y, int32_t n)
{
    return elt_dot_rr26_from(x, y, 0, n, 0);
}

/* Rows j + 1 .. k - 1 of column j of A (elt_chol_k). */
static inline __attribute__((always_inline)) void elt_chol_rows(const int32_t *c, int32_t *a,
                                                                const int32_t *aj, int32_t j,
                                                                const int32_t k, int32_t r, int e)
{
    elt_chol_rows_from(c, a, aj, j + 1, j, k, r, e);
}

/* The factor of a k = ELT_K_MAX covariance: elt_chol_k with k a constant. */
static inline __attribute__((always_inline)) int32_t elt_chol_kmax(const int32_t *c, int32_t *a)
{
    return elt_chol_k(c, ELT_K_MAX, a);
}

/* The lam x k normals of one iteration: elt_rng_gauss_block's block, stored in its order at z
 * (elt_sample_k moves the rows to their stride where k < ELT_K_MAX). */
static inline __attribute__((always_inline)) void elt_sample_draw(int32_t *z, elt_rng_t *rng,
                                                                  const int32_t lam,
                                                                  const int32_t k,
                                                                  const int32_t *gauss_lut)
{
    elt_rng_gauss_block(rng, z, lam * k, gauss_lut);
}

/* y = A z and x = m + sigma y of the lam candidates. */
static inline __attribute__((always_inline)) void elt_sample_yx(const elt_cmaes_state_t *s,
                                                                elt_cmaes_work_t *w,
                                                                const int32_t lam, const int32_t k,
                                                                int32_t mant, int shift)
{
    elt_sample_yx_from(s, w, 0, lam, k, mant, shift);
}

/* 2. m' = sum_{i<mu} w_i x_{i:lam}; z_w, y_w alike. */
static inline __attribute__((always_inline)) void
elt_tell_mean(const elt_cmaes_params_t *p, const elt_cmaes_work_t *w, const uint8_t *order,
              const int32_t k, int32_t *mnew, int32_t *zw, int32_t *yw)
{
    elt_tell_mean_from(p, w, order, 0, k, mnew, zw, yw);
}

/* 3. p_s <- (1 - c_s) p_s + sqrt(c_s(2-c_s)mu_eff) z_w; returns ||p_s||^2 (Q.46). */
static inline __attribute__((always_inline)) int64_t elt_tell_ps(const elt_cmaes_params_t *p,
                                                                 elt_cmaes_state_t *s,
                                                                 const int32_t *zw, const int32_t k)
{
    return elt_tell_ps_from(p, s, zw, 0, k, 0);
}

/* 5. p_c <- (1 - c_c) p_c + h_sigma sqrt(c_c(2-c_c)mu_eff) y_w. */
static inline __attribute__((always_inline)) void elt_tell_pc(const elt_cmaes_params_t *p,
                                                              elt_cmaes_state_t *s,
                                                              const int32_t *yw, int32_t hsig,
                                                              const int32_t k)
{
    elt_tell_pc_from(p, s, yw, hsig, 0, k);
}

/* ||z||^2 (Q.50) of one candidate. */
static inline __attribute__((always_inline)) int64_t elt_norm2_z(const int32_t *zr, const int32_t k)
{
    return elt_norm2_z_from(zr, 0, k, 0);
}

/* y <- sat32(rshift_round(y rn, en + 4)) of one candidate. */
static inline __attribute__((always_inline)) void elt_scale_y(int32_t *yr, const int32_t k,
                                                              int32_t rn, int en)
{
    elt_scale_y_from(yr, 0, k, rn, en);
}

/* p~ = sqrt(c1) p_c, 0 past k. */
static inline __attribute__((always_inline)) void
elt_tell_pt(const elt_cmaes_params_t *p, const elt_cmaes_state_t *s, int32_t *pt, const int32_t k)
{
    elt_tell_pt_from(p, s, pt, 0, k);
}

/* y~ = sat32(rshift_round(sq y, 30)) of one term. */
static inline __attribute__((always_inline)) void elt_scale_row(int32_t *dst, const int32_t *yr,
                                                                int32_t sq, const int32_t k)
{
    elt_scale_row_from(dst, yr, sq, 0, k);
}

/* 6b. every entry of C from its terms, row by row. */
static inline __attribute__((always_inline)) void elt_cov_update(int32_t *C, const int32_t *pt,
                                                                 elt_cmaes_work_t *w, int32_t npos,
                                                                 int32_t nt, int32_t decay,
                                                                 const int32_t k)
{
    int32_t a;
    for (a = 0; a < k; a++) {
        elt_cov_row_from(&C[ELT_TRI(a, 0)], pt, w, a, 0, npos, nt, decay);
    }
}

#endif /* ELT_CMAES_S32_OPS_H */
