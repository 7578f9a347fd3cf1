/*
 * Integer CMA-ES for ELaTTA (docs/cmaes.md §6; Python twin
 * codegen/intref/cmaes_int.py). Constants are the pycma-4.5.0 values rounded once by the
 * compiler; state int32 in the formats of elt_types.h, int64 intermediates.
 */
#ifndef ELT_CMAES_S32_H
#define ELT_CMAES_S32_H

#include <stdint.h>

#include "elt_rng.h"
#include "elt_types.h"

/* Constant parameters (filled by the generated params file). */
typedef struct {
    int32_t k;               /* dimension */
    int32_t lam;             /* lambda, candidates per iteration */
    int32_t mu;              /* parents */
    int32_t n_iter;          /* iterations per sample */
    const int32_t *w;        /* [mu] positive recombination weights, Q1.30 */
    const int32_t *wc;       /* [lam] c_mu w_i (i < mu), c_mu w_i k (negative), Q1.30 */
    const int32_t *wc_sqrt;  /* [lam] sqrt|wc_i|, Q1.30 */
    int32_t one_minus_cs;    /* Q1.30 */
    int32_t gain_s;          /* sqrt(c_s(2-c_s)mu_eff), Q3.28 */
    int32_t one_minus_cc;    /* Q1.30 */
    int32_t gain_c;          /* sqrt(c_c(2-c_c)mu_eff), Q3.28 */
    int32_t c1;              /* Q1.30 */
    int32_t c1_sqrt;         /* sqrt(c1), Q1.30 */
    int32_t decay_h1;        /* 1 - c1 - c_mu sum w, Q1.30 */
    int32_t decay_h0;        /* 1 - c1 (1 - c_c(2-c_c)) - c_mu sum w, Q1.30 */
    int32_t cs_over_ds;      /* c_s / d_s, Q1.30 */
    int32_t inv_chi;         /* 1 / chi_k, Q1.30 */
    const int64_t *hsig_thr; /* [n_iter] T_g, Q.46 */
    int32_t ln_sigma0;       /* Q8.23 */
    const int32_t *exp2_lut; /* 257 entries, Q1.30 */
    int32_t grid_on;         /* QELaTTA-V2: state and candidates on the x-bit grid */
    int32_t grid_frac;       /* grid fraction bits x - y */
    int32_t grid_lo;         /* -2^(x-1) */
    int32_t grid_hi;         /* 2^(x-1) - 1 */
} elt_cmaes_params_t;

/* Changing state of one run (reset per sample, docs/cmaes.md §6). */
typedef struct {
    int32_t m[ELT_K_MAX];   /* mean, Q4.27 */
    int32_t ps[ELT_K_MAX];  /* step-size path, Q4.27 */
    int32_t pc[ELT_K_MAX];  /* covariance path, Q4.27 */
    int32_t C[ELT_TRI_MAX]; /* covariance, packed lower triangle, Q5.26 */
    int32_t ln_sigma;       /* Q8.23 */
    int32_t g;              /* completed tells */
} elt_cmaes_state_t;

/* Per-iteration scratch. */
typedef struct {
    int32_t A[ELT_TRI_MAX];            /* Cholesky factor, Q5.26 */
    int32_t z[ELT_LAM_MAX][ELT_K_MAX]; /* normals, Q3.28 */
    int32_t y[ELT_LAM_MAX][ELT_K_MAX]; /* A z, Q4.27 */
    int32_t x[ELT_LAM_MAX][ELT_K_MAX]; /* m + sigma y, Q4.27 */
    int32_t sig_mant;                  /* sigma mantissa in [2^29, 2^30], Q1.30 */
    int32_t sig_exp;                   /* sigma = mant 2^(e+1) / 2^30 */
} elt_cmaes_work_t;

/* C = I, paths 0, ln sigma = ln sigma0, g = 0, m = m0 (already on the grid if V2). */
void elt_cmaes_reset_s32(const elt_cmaes_params_t *p, elt_cmaes_state_t *s, const int32_t *m0);

/* Lower Cholesky factor of packed C; returns the number of pivots raised to ELT_PIVOT_EPS. */
int32_t elt_cmaes_chol_s32(const int32_t *c, int32_t k, int32_t *a);

/* sigma = 2^(ln sigma log2 e) as mantissa (Q1.30 in [2^29, 2^30]) and exponent. */
void elt_cmaes_sigma_s32(int32_t ln_sigma, const int32_t *exp2_lut, int32_t *mant, int32_t *e);

/* Draw lam x k normals, y = A z, x = m + sigma y (w->A, w->sig_* set by the caller). */
void elt_cmaes_sample_s32(const elt_cmaes_params_t *p, const elt_cmaes_state_t *s,
                          elt_cmaes_work_t *w, elt_rng_t *rng, const int32_t *gauss_lut);

/* One update in pycma tell2 order; order[] ranks the candidates by (f, index). Overwrites
 * w->y of the negative-weight candidates (y / ||z||) and w->z (the covariance terms' scaled
 * vectors). Returns h_sigma. */
int32_t elt_cmaes_tell_s32(const elt_cmaes_params_t *p, elt_cmaes_state_t *s, elt_cmaes_work_t *w,
                           const uint8_t *order);

/* QELaTTA-V2: round to the grid, saturate, back to Q.frac_in. */
int32_t elt_requant_s32(const elt_cmaes_params_t *p, int32_t v, int32_t frac_in);

/* QELaTTA-V2: the whole stored state onto the grid. */
void elt_cmaes_requant_state_s32(const elt_cmaes_params_t *p, elt_cmaes_state_t *s);

/* QELaTTA-V1: two-level quantiser of v[k] in place (identity for k <= 2). */
void elt_q1bit_s32(int32_t *v, int32_t k);

/* v scaled so that ||v|| <= radius (Q8.23) if it is longer (continual_bounded). */
void elt_clip_norm_s32(int32_t *v, int32_t k, int32_t radius_q23);

#endif /* ELT_CMAES_S32_H */
