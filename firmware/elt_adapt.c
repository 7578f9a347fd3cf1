/*
 * ELaTTA adaptation core (paper Algorithm 1; docs/elatta.md; docs/numeric.md §5).
 * Python twin: codegen/intref/adapt.py (adapt_int); trace stages carry the same names and data.
 *
 * The head, the candidates' folded head, the ranking and the vector copies have a NEON form:
 * elt_adapt_ops.h of the build's kernel variant (firmware/kernels/<variant>/,
 * codegen/target/sources.py), which ends with the scalar loops below (the reference variant runs
 * them from the start).
 */
#include "elt_adapt.h"

#include "elt_entropy_s16.h"

#ifdef ELT_TRACE
static int32_t elt_trace_buf[ELT_LAM_MAX * (ELT_C_MAX + ELT_K_MAX) + 8];

static void elt_adapt_trace_s16(const char *stage, int32_t index, const int16_t *x, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; i++) {
        elt_trace_buf[i] = x[i];
    }
    elt_trace(stage, index, elt_trace_buf, n);
}

/* rows of a [ELT_LAM_MAX][ELT_K_MAX] array, k used columns each */
static void elt_trace_rows(const char *stage, int32_t index, const int32_t (*x)[ELT_K_MAX],
                           int32_t rows, int32_t k)
{
    int32_t i;
    int32_t a;
    for (i = 0; i < rows; i++) {
        for (a = 0; a < k; a++) {
            elt_trace_buf[i * k + a] = x[i][a];
        }
    }
    elt_trace(stage, index, elt_trace_buf, rows * k);
}
#endif

void elt_adapt_reset(elt_adapt_state_t *st)
{
    int32_t i;
    for (i = 0; i < ELT_K_MAX; i++) {
        st->p_prev[i] = 0;
    }
}

/* The scalar head from class c on: one row of W^T per latent element. */
static void elt_head_rows(const elt_adapt_params_t *p, const int16_t *z, int16_t *logits,
                          int32_t *acc_out, int32_t c)
{
    const int32_t dim = p->dim;
    const int32_t ncls = p->n_classes;
    int32_t d;
    for (; c < ncls; c++) {
        const int16_t *w = p->W + c; /* column c of W^T */
        int32_t acc = p->b[c]; /* sum|w| 2^15 + |b| + 2^(s-1) <= 2^31 - 1: proven by the compiler */
        for (d = 0; d < dim; d++) {
            acc += (int32_t)w[d * ncls] * z[d];
        }
        acc_out[c] = acc;
        logits[c] = fx_sat16(fx_rshift_round32(acc, p->head_shift));
    }
}

/* Classes c .. C - 1 of one candidate, scalar. */
static void elt_cand_rows(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t *pv,
                          int16_t *logits, int32_t c)
{
    const int32_t ncls = p->n_classes;
    const int32_t k = p->es.k;
    int32_t j;
    for (; c < ncls; c++) {
        int64_t acc = 0;
        for (j = 0; j < k; j++) {
            acc += (int64_t)p->G[j * ncls + c] * pv[j];
        }
        acc = acc0[c] + fx_rshift_round64(acc, p->g_shift);
        logits[c] = fx_sat16_64(fx_rshift_round64(acc, p->head_shift));
    }
}

/* zt = sat16(rshift_round(z, zt_shift)) for the latent elements i0 .. D - 1 */
static inline __attribute__((always_inline)) void
elt_zt_from(const elt_adapt_params_t *p, const int16_t *z, int16_t *zt, int32_t i)
{
    for (; i < p->dim; i++) {
        zt[i] = fx_sat16(fx_rshift_round32(z[i], p->zt_shift));
    }
}

/* d[i] = s[i] for i in [i0, n) */
static inline __attribute__((always_inline)) void elt_copy_s32_from(int32_t *d, const int32_t *s,
                                                                    int32_t i, int32_t n)
{
    for (; i < n; i++) {
        d[i] = s[i];
    }
}

/* The best candidate's p from a0 on and its logits from i0 on into the result. */
static inline __attribute__((always_inline)) void
elt_copy_best_from(elt_adapt_result_t *res, const int32_t *pj, const int16_t *lj, int32_t a,
                   int32_t k, int32_t i, int32_t ncls)
{
    for (; a < k; a++) {
        res->p_best[a] = pj[a];
    }
    for (; i < ncls; i++) {
        res->logits[i] = lj[i];
    }
}

/* k zeros: the strict m0 and the no-adapt p_best, copied by elt_copy_s32 / elt_copy_best */
static const int32_t elt_zero_k[ELT_K_MAX];

/* The variant's operations: elt_head, elt_cand_one, elt_cand_each, elt_cand_kernel_ok, elt_rank,
 * elt_zt, elt_copy_s32, elt_copy_best (firmware/kernels/<variant>/elt_adapt_ops.h). */
#include "elt_adapt_ops.h"

void elt_head_s16(const elt_adapt_params_t *p, const int16_t *z, int16_t *logits, int32_t *acc)
{
    elt_head(p, z, logits, acc);
}

void elt_cand_logits_s16(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t *pv,
                         int16_t *logits)
{
    elt_cand_one(p, acc0, pv, logits);
}

/* init[c] for c < C; an odd C's pad class starts at 0 (its logit is never stored). */
static void elt_cand_init(const elt_adapt_params_t *p, const int32_t *acc0, int64_t *init)
{
    const int64_t bias =
        ((int64_t)1 << (p->g_shift - 1)) + ((int64_t)1 << (p->g_shift + p->head_shift - 1));
    const int32_t ncls = p->n_classes;
    int32_t c;
    for (c = 0; c < ncls; c++) {
        init[c] = (int64_t)((uint64_t)(int64_t)acc0[c] << p->g_shift) + bias;
    }
    if (ncls & 1) {
        init[ncls] = 0;
    }
}

/* Logits of the candidates pv[0 .. rows), one call per iteration (the dispatch on the build's
 * C and k once). */
static void elt_cand_logits_rows(const elt_adapt_params_t *p, const int32_t *acc0,
                                 const int64_t *init, const int32_t (*pv)[ELT_K_MAX], int32_t rows,
                                 int16_t (*logits)[ELT_C_MAX])
{
    if (init != 0 && rows > 0) {
        p->cand_rows(init, pv[0], rows, logits[0]);
        return;
    }
    elt_cand_each(p, acc0, pv, rows, logits);
}

void elt_cand_logits2_s16(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t *pa,
                          const int32_t *pb, int16_t *la, int16_t *lb)
{
    elt_cand_logits_s16(p, acc0, pa, la);
    elt_cand_logits_s16(p, acc0, pb, lb);
}

#ifdef ELT_TRACE
#define ELT_ADAPT_TRACED 1
/* the no-adapt result's best_p record: p = 0, H, iteration 0, index 0 */
static void elt_adapt_trace_noadapt(const elt_adapt_result_t *res, int32_t k)
{
    int32_t tr[ELT_K_MAX + 3];
    int32_t a;
    for (a = 0; a < k; a++) {
        tr[a] = 0;
    }
    tr[k] = res->H_noadapt;
    tr[k + 1] = 0;
    tr[k + 2] = 0;
    elt_trace("best_p", -1, tr, k + 3);
}

/* iteration t's factor and step size */
static void elt_adapt_trace_factor(const elt_adapt_state_t *st, int32_t k, int32_t t)
{
    int32_t tr[3];
    elt_trace("cmaes.A", t, st->work.A, k * (k + 1) / 2);
    tr[0] = st->es.ln_sigma;
    tr[1] = st->work.sig_mant;
    tr[2] = st->work.sig_exp;
    elt_trace("cmaes.sigma", t, tr, 3);
}

/* iteration t's candidates, their logits, entropies and order */
static void elt_adapt_trace_eval(const elt_adapt_params_t *p, const elt_adapt_state_t *st,
                                 const int32_t (*pe)[ELT_K_MAX], int32_t t)
{
    const int32_t lam = p->es.lam;
    const int32_t k = p->es.k;
    const int32_t ncls = p->n_classes;
    int32_t i;
    int32_t a;
    elt_trace_rows("cmaes.z", t, (const int32_t(*)[ELT_K_MAX])st->work.z, lam, k);
    elt_trace_rows("cmaes.x", t, (const int32_t(*)[ELT_K_MAX])st->work.x, lam, k);
    elt_trace_rows("p_eval", t, pe, lam, k);
    for (i = 0; i < lam; i++) {
        for (a = 0; a < ncls; a++) {
            elt_trace_buf[i * ncls + a] = st->logits[i][a];
        }
    }
    elt_trace("logits", t, elt_trace_buf, lam * ncls);
    elt_trace("entropy", t, st->H, lam);
    for (i = 0; i < lam; i++) {
        elt_trace_buf[i] = st->order[i];
    }
    elt_trace("order", t, elt_trace_buf, lam);
}

/* iteration t's state after the tell */
static void elt_adapt_trace_tell(const elt_adapt_state_t *st, int32_t k, int32_t hsig, int32_t t)
{
    int32_t tr[2];
    tr[0] = hsig;
    tr[1] = st->es.g;
    elt_trace("cmaes.hsig", t, tr, 2);
    elt_trace("cmaes.m", t, st->es.m, k);
    elt_trace("cmaes.ps", t, st->es.ps, k);
    elt_trace("cmaes.pc", t, st->es.pc, k);
    elt_trace("cmaes.C", t, st->es.C, k * (k + 1) / 2);
    elt_trace("cmaes.ln_sigma", t, &st->es.ln_sigma, 1);
}

/* the result's best_p record: p, H, iteration, index */
static void elt_adapt_trace_best(const elt_adapt_result_t *res, int32_t k, int32_t best_t,
                                 int32_t best_i)
{
    int32_t tr[ELT_K_MAX + 3];
    int32_t a;
    for (a = 0; a < k; a++) {
        tr[a] = res->p_best[a];
    }
    tr[k] = res->H_best;
    tr[k + 1] = best_t;
    tr[k + 2] = best_i;
    elt_trace("best_p", -1, tr, k + 3);
}
#else
/* Without ELT_TRACE the trace points compile to nothing (firmware/elt_trace.h). */
#define ELT_ADAPT_TRACED 0
#define elt_adapt_trace_noadapt(res, k) ((void)0)
#define elt_adapt_trace_factor(st, k, t) ((void)0)
#define elt_adapt_trace_eval(p, st, pe, t) ((void)0)
#define elt_adapt_trace_tell(st, k, hsig, t) ((void)0)
#define elt_adapt_trace_best(res, k, best_t, best_i) ((void)0)
#endif

/* no-adapt: z_t in the latent format, logits, H, argmax; the result starts from them */
static inline __attribute__((always_inline)) void
elt_adapt_noadapt(const elt_adapt_params_t *p, elt_adapt_state_t *st, const int16_t *z_q15,
                  elt_adapt_result_t *res, const int32_t k, const int32_t ncls)
{
    const elt_cmaes_params_t *ep = &p->es;
    elt_zt(p, z_q15, st->zt);
    elt_head_s16(p, st->zt, res->logits_noadapt, st->acc0);
    res->H_noadapt =
        elt_entropy_s16(res->logits_noadapt, ncls, p->logit_frac, ep->exp2_lut, p->log2_lut);
    res->pred_noadapt = elt_argmax_s16(res->logits_noadapt, ncls);
    res->n_pivot_fix = 0;
    /* p_best = 0 and logits = logits_noadapt by the variant's copies (NEON: four per VLD1) */
    elt_copy_best(res, elt_zero_k, res->logits_noadapt, k, ncls);
#ifdef ELT_TRACE
    elt_adapt_trace_s16("logits_noadapt", -1, res->logits_noadapt, ncls);
    elt_trace("entropy_noadapt", -1, &res->H_noadapt, 1);
#endif
}

/* m0: strict 0; continual p_prev; continual_bounded clip(beta p_prev, radius); on the grid (V2) */
static inline __attribute__((always_inline)) void
elt_adapt_m0(const elt_adapt_params_t *p, const elt_adapt_state_t *st, int32_t *m0, const int32_t k)
{
    const elt_cmaes_params_t *ep = &p->es;
    int32_t a;
    /* the mode tested once, the vector copied by the variant's elt_copy_s32 */
    elt_copy_s32(m0, p->mode == ELT_MODE_STRICT ? elt_zero_k : st->p_prev, k);
    if (p->mode == ELT_MODE_CONTINUAL_BOUNDED) {
        for (a = 0; a < k; a++) {
            m0[a] = fx_sat32_64(elt_mul_rr(p->beta, m0[a], 30));
        }
        elt_clip_norm_s32(m0, k, p->radius);
    }
    if (ep->grid_on) {
        for (a = 0; a < k; a++) {
            m0[a] = elt_requant_s32(ep, m0[a], ELT_X_FRAC);
        }
    }
}

/* 1. A = chol(C); 2. sigma (docs/cmaes.md §6); C = I exactly after the reset
 * (elt_cmaes_reset_s32) and chol(I) = I with no raised pivot: isqrt(2^26 2^26) = 2^26,
 * off-diagonal numerators 0 */
static inline __attribute__((always_inline)) void elt_adapt_factor(const elt_adapt_params_t *p,
                                                                   elt_adapt_state_t *st,
                                                                   elt_adapt_result_t *res,
                                                                   const int32_t k)
{
    const elt_cmaes_params_t *ep = &p->es;
    if (st->es.g == 0) {
        elt_copy_s32(st->work.A, st->es.C, k * (k + 1) / 2);
    } else {
        res->n_pivot_fix += elt_cmaes_chol_s32(st->es.C, k, st->work.A);
    }
    elt_cmaes_sigma_s32(st->es.ln_sigma, ep->exp2_lut, &st->work.sig_mant, &st->work.sig_exp);
}

/* 3. every candidate evaluated: p (V1/V2), z = z_t + V p, logits, H, ranked by (H, index);
 * returns the evaluated p (without V1 the candidate x itself) */
static inline __attribute__((always_inline))
const int32_t (*elt_adapt_evaluate(const elt_adapt_params_t *p, elt_adapt_state_t *st,
                                   const int64_t *cinit, const int32_t k,
                                   const int32_t ncls))[ELT_K_MAX]
{
    const elt_cmaes_params_t *ep = &p->es;
    const int32_t(*pe)[ELT_K_MAX];
    int32_t i;
    int32_t a;
    pe = (const int32_t(*)[ELT_K_MAX])(p->qv1 ? st->p_eval : st->work.x);
    for (i = 0; p->qv1 && i < ep->lam; i++) {
        for (a = 0; a < k; a++) {
            st->p_eval[i][a] = st->work.x[i][a];
        }
        elt_q1bit_s32(st->p_eval[i], k);
        if (ep->grid_on) {
            for (a = 0; a < k; a++) {
                st->p_eval[i][a] = elt_requant_s32(ep, st->p_eval[i][a], ELT_X_FRAC);
            }
        }
    }
    /* logits of z_t + V p by the folded head: acc0 + G p (docs/numeric.md §5.1) */
    elt_cand_logits_rows(p, st->acc0, cinit, pe, ep->lam, st->logits);
    elt_entropy_s16_rows(st->logits[0], ELT_C_MAX, ep->lam, ncls, p->logit_frac, ep->exp2_lut,
                         p->log2_lut, st->H);
    elt_rank(st->H, ep->lam, st->order);
    return pe;
}

/* 4-10. tell with the continuous candidates; V1 mean; V2 state on the grid; returns h_sigma */
static inline __attribute__((always_inline)) int32_t elt_adapt_tell(const elt_adapt_params_t *p,
                                                                    elt_adapt_state_t *st,
                                                                    const int32_t k)
{
    const elt_cmaes_params_t *ep = &p->es;
    const int32_t hsig = elt_cmaes_tell_s32(ep, &st->es, &st->work, st->order);
    if (p->qv1) {
        elt_q1bit_s32(st->es.m, k);
    }
    if (ep->grid_on) {
        elt_cmaes_requant_state_s32(ep, &st->es);
    }
    return hsig;
}

void elt_adapt_run(const elt_adapt_params_t *p, elt_adapt_state_t *st, const int16_t *z_q15,
                   uint32_t sample_id, elt_adapt_result_t *res)
{
    const elt_cmaes_params_t *ep = &p->es;
    const int32_t k = ep->k;
    const int32_t ncls = p->n_classes;
    int32_t m0[ELT_K_MAX]; /* elements 0 .. k - 1 set below (no memset of the whole array) */
    int64_t cinit_buf[ELT_C_MAX + 1]; /* C (+ 1 pad class where C is odd) */
    const int64_t *cinit = 0; /* the generated kernel's accumulator start, where it applies */
    int32_t best_h = INT32_MAX;
    int32_t best_t = 0;
    int32_t best_i = 0;
    int32_t t;
    int32_t a;
    elt_adapt_noadapt(p, st, z_q15, res, k, ncls);
    if (p->mode == ELT_MODE_NO_ADAPT) {
        res->H_best = res->H_noadapt;
        res->pred = res->pred_noadapt;
        elt_adapt_trace_noadapt(res, k);
        return;
    }
    elt_adapt_m0(p, st, m0, k);
    if (elt_cand_kernel_ok(p)) {
        elt_cand_init(p, st->acc0, cinit_buf);
        cinit = cinit_buf;
    }
    elt_cmaes_reset_s32(ep, &st->es, m0);
    elt_rng_seed(&st->rng, p->seed, sample_id);
    ELT_TRACE_EMIT("cmaes.m0", -1, st->es.m, k);
    for (t = 0; t < ep->n_iter; t++) {
        const int32_t(*pe)[ELT_K_MAX];
        int32_t j;
        int32_t hsig;
        elt_adapt_factor(p, st, res, k);
        elt_adapt_trace_factor(st, k, t);
        /* z, y = A z, x = m + sigma y (docs/cmaes.md §6) */
        elt_cmaes_sample_s32(ep, &st->es, &st->work, &st->rng, p->gauss_lut);
        pe = elt_adapt_evaluate(p, st, cinit, k, ncls);
        /* best sampled p over all iterations, ties by (H, iteration, index) */
        j = st->order[0];
        if (st->H[j] < best_h) {
            best_h = st->H[j];
            best_t = t;
            best_i = j;
            elt_copy_best(res, pe[j], st->logits[j], k, ncls);
        }
        elt_adapt_trace_eval(p, st, pe, t);
        if (!ELT_ADAPT_TRACED && t == ep->n_iter - 1) {
            break; /* the last tell's state is never read: the output is the best sampled p */
        }
        hsig = elt_adapt_tell(p, st, k);
        elt_adapt_trace_tell(st, k, hsig, t);
        (void)hsig;
    }
    res->H_best = best_h;
    res->pred = elt_argmax_s16(res->logits, ncls);
    for (a = 0; a < k; a++) {
        st->p_prev[a] = res->p_best[a];
    }
    elt_adapt_trace_best(res, k, best_t, best_i);
    (void)best_t;
    (void)best_i;
}
