/*
 * ELaTTA adaptation core: everything after z_t (head, entropy, CMA-ES search, modes,
 * QELaTTA-V1/V2). Python twin: codegen/intref/adapt.py (adapt_int), bit-exact on every field.
 *
 * The compiler emits `const elt_adapt_params_t <prefix>adapt_params` (templates/adapt_params.c.j2);
 * the caller owns one elt_adapt_state_t (no heap; continual p_prev and all scratch).
 */
#ifndef ELT_ADAPT_H
#define ELT_ADAPT_H

#include <stdint.h>

#include "elt_cmaes_s32.h"
#include "elt_modes.h" /* ELT_MODE_*: the mode table of codegen.ir.modes */
#include "elt_rng.h"
#include "elt_types.h"

typedef struct {
    int32_t n_classes;        /* C */
    int32_t dim;              /* D */
    int32_t mode;             /* ELT_MODE_* */
    uint64_t seed;            /* base seed of the per-sample streams */
    const int16_t *W;         /* [D][C] head weights, transposed (W^T: one row per latent) */
    const int32_t *b;         /* [C] bias in the accumulator format */
    int32_t head_shift;       /* accumulator -> logits */
    int32_t logit_frac;       /* logits Q(15-f).f */
    const int32_t *G;         /* [k][C] head folded onto the basis, (W V)^T */
    int32_t zt_shift;         /* z_t Q0.15 -> latent */
    int32_t g_shift;          /* G p -> accumulator */
    int32_t beta;             /* continual_bounded forgetting factor, Q1.30 */
    int32_t radius;           /* continual_bounded radius, Q8.23 */
    int32_t qv1;              /* QELaTTA-V1 */
    const int32_t *log2_lut;  /* 257 entries, Q1.30 */
    const int32_t *gauss_lut; /* 32 x 33, Q3.28 */
    elt_cmaes_params_t es;    /* CMA-ES constants (exp2 LUT and V2 grid inside) */
    /* The build's generated candidate-logit kernel for exactly this C, k and g_shift +
     * head_shift (codegen/emit/adapt_neon.py), 0 where none applies: rows candidates of pv (rows of
     * k) into out (rows of C), from init (the padded classes' accumulator start). */
    void (*cand_rows)(const int64_t *init, const int32_t *pv, int32_t rows, int16_t *out);
} elt_adapt_params_t;

typedef struct {
    int32_t p_prev[ELT_K_MAX];              /* continual: previous best p, Q4.27 */
    elt_cmaes_state_t es;                   /* CMA-ES state of the current sample */
    elt_cmaes_work_t work;                  /* per-iteration scratch */
    elt_rng_t rng;                          /* the sample's stream */
    int32_t p_eval[ELT_LAM_MAX][ELT_K_MAX]; /* evaluated p (after V1/V2), Q4.27 */
    int32_t H[(ELT_LAM_MAX + 3) & ~3];      /* entropies, Q5.26 (padded for the NEON ranking) */
    int16_t logits[ELT_LAM_MAX][ELT_C_MAX]; /* candidate logits */
    int16_t zt[ELT_D_MAX];                  /* z_t in the latent format */
    int32_t acc0[ELT_C_MAX];                /* head accumulators of z_t, W z_t + b */
    uint8_t order[ELT_LAM_MAX];             /* ranking by (H, index) */
} elt_adapt_state_t;

typedef struct {
    int32_t pred_noadapt;      /* argmax of the no-adapt logits */
    int32_t pred;              /* argmax of the best candidate's logits */
    int32_t H_noadapt;         /* Q5.26 */
    int32_t H_best;            /* Q5.26 */
    int32_t n_pivot_fix;       /* raised Cholesky pivots (docs/cmaes.md §6) */
    int32_t p_best[ELT_K_MAX]; /* best sampled p, Q4.27 */
    int16_t logits_noadapt[ELT_C_MAX];
    int16_t logits[ELT_C_MAX];
} elt_adapt_result_t;

/* Start a new stream: p_prev = 0 (continual modes). */
void elt_adapt_reset(elt_adapt_state_t *st);

/* Linear head: logits = sat16(round((W z + b) / 2^head_shift)), int32 accumulator (proven),
 * the accumulators W z + b also stored in acc[C]. */
void elt_head_s16(const elt_adapt_params_t *p, const int16_t *z, int16_t *logits, int32_t *acc);

/* Logits of the candidate latent z_t + V p by the head folded onto the basis (the head is
 * linear): sat16(round((acc0 + round(G p / 2^g_shift)) / 2^head_shift)), acc0 = W z_t + b. */
void elt_cand_logits_s16(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t *pv,
                         int16_t *logits);

/* The same for two candidates (one pass over G). */
void elt_cand_logits2_s16(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t *pa,
                          const int32_t *pb, int16_t *la, int16_t *lb);

/* Adapt one sample (z_q15: D int16 Q0.15 = LSTM h_T) and fill every result field. */
void elt_adapt_run(const elt_adapt_params_t *p, elt_adapt_state_t *st, const int16_t *z_q15,
                   uint32_t sample_id, elt_adapt_result_t *res);

#endif /* ELT_ADAPT_H */
