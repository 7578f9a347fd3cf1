/*
 * ELaTTA adaptation core (paper Algorithm 1; docs/elatta.md; docs/numeric.md §5).
 * Python twin: codegen/intref/adapt.py (adapt_int); trace stages carry the same names and data.
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

void elt_latent_s16(const elt_adapt_params_t *p, const int16_t *zt, const int32_t *pv, int16_t *z)
{
    const int32_t k = p->es.k;
    int32_t d;
    int32_t l;
    for (d = 0; d < p->dim; d++) {
        int64_t acc = 0; /* |V p| <= k 2^46 */
        for (l = 0; l < k; l++) {
            acc += (int64_t)p->V[d * k + l] * pv[l];
        }
        z[d] = fx_sat16_64((int64_t)zt[d] + fx_rshift_round64(acc, p->v_shift));
    }
}

void elt_head_s16(const elt_adapt_params_t *p, const int16_t *z, int16_t *logits)
{
    int32_t c;
    int32_t d;
    for (c = 0; c < p->n_classes; c++) {
        const int16_t *w = p->W + c * p->dim;
        int32_t acc = p->b[c]; /* sum|w| 2^15 + |b| + 2^(s-1) <= 2^31 - 1: proven by the compiler */
        for (d = 0; d < p->dim; d++) {
            acc += (int32_t)w[d] * z[d];
        }
        logits[c] = fx_sat16(fx_rshift_round32(acc, p->head_shift));
    }
}

void elt_adapt_run(const elt_adapt_params_t *p, elt_adapt_state_t *st, const int16_t *z_q15,
                   uint32_t sample_id, elt_adapt_result_t *res)
{
    const elt_cmaes_params_t *ep = &p->es;
    const int32_t k = ep->k;
    const int32_t ncls = p->n_classes;
    int32_t m0[ELT_K_MAX] = {0};
    int32_t best_h = INT32_MAX;
    int32_t best_t = 0;
    int32_t best_i = 0;
    int32_t t;
    int32_t i;
    int32_t a;
#ifdef ELT_TRACE
    int32_t tr[ELT_K_MAX + 3];
#endif
    /* no-adapt: z_t in the latent format, logits, H, argmax */
    for (i = 0; i < p->dim; i++) {
        st->zt[i] = fx_sat16(fx_rshift_round32(z_q15[i], p->zt_shift));
    }
    elt_head_s16(p, st->zt, res->logits_noadapt);
    res->H_noadapt =
        elt_entropy_s16(res->logits_noadapt, ncls, p->logit_frac, ep->exp2_lut, p->log2_lut);
    res->pred_noadapt = elt_argmax_s16(res->logits_noadapt, ncls);
    res->n_pivot_fix = 0;
    for (i = 0; i < ncls; i++) {
        res->logits[i] = res->logits_noadapt[i];
    }
    for (a = 0; a < k; a++) {
        res->p_best[a] = 0;
    }
#ifdef ELT_TRACE
    elt_adapt_trace_s16("logits_noadapt", -1, res->logits_noadapt, ncls);
    elt_trace("entropy_noadapt", -1, &res->H_noadapt, 1);
#endif
    if (p->mode == ELT_MODE_NO_ADAPT) {
        res->H_best = res->H_noadapt;
        res->pred = res->pred_noadapt;
#ifdef ELT_TRACE
        for (a = 0; a < k; a++) {
            tr[a] = 0;
        }
        tr[k] = res->H_noadapt;
        tr[k + 1] = 0;
        tr[k + 2] = 0;
        elt_trace("best_p", -1, tr, k + 3);
#endif
        return;
    }
    /* m0: strict 0; continual p_prev; continual_bounded clip(beta p_prev, radius) */
    for (a = 0; a < k; a++) {
        m0[a] = (p->mode == ELT_MODE_STRICT) ? 0 : st->p_prev[a];
        if (p->mode == ELT_MODE_CONTINUAL_BOUNDED) {
            m0[a] = fx_sat32_64(elt_mul_rr(p->beta, m0[a], 30));
        }
    }
    if (p->mode == ELT_MODE_CONTINUAL_BOUNDED) {
        elt_clip_norm_s32(m0, k, p->radius);
    }
    if (ep->grid_on) {
        for (a = 0; a < k; a++) {
            m0[a] = elt_requant_s32(ep, m0[a], ELT_X_FRAC);
        }
    }
    elt_cmaes_reset_s32(ep, &st->es, m0);
    elt_rng_seed(&st->rng, p->seed, sample_id);
    ELT_TRACE_EMIT("cmaes.m0", -1, st->es.m, k);
    for (t = 0; t < ep->n_iter; t++) {
        int32_t j;
        int32_t hsig;
        /* 1. A = chol(C); 2. sigma; z, y = A z, x = m + sigma y (notes §6) */
        res->n_pivot_fix += elt_cmaes_chol_s32(st->es.C, k, st->work.A);
        elt_cmaes_sigma_s32(st->es.ln_sigma, ep->exp2_lut, &st->work.sig_mant, &st->work.sig_exp);
#ifdef ELT_TRACE
        elt_trace("cmaes.A", t, st->work.A, k * (k + 1) / 2);
        tr[0] = st->es.ln_sigma;
        tr[1] = st->work.sig_mant;
        tr[2] = st->work.sig_exp;
        elt_trace("cmaes.sigma", t, tr, 3);
#endif
        elt_cmaes_sample_s32(ep, &st->es, &st->work, &st->rng, p->gauss_lut);
        /* 3. evaluate every candidate: p (V1/V2), z = z_t + V p, logits, H */
        for (i = 0; i < ep->lam; i++) {
            for (a = 0; a < k; a++) {
                st->p_eval[i][a] = st->work.x[i][a];
            }
            if (p->qv1) {
                elt_q1bit_s32(st->p_eval[i], k);
                if (ep->grid_on) {
                    for (a = 0; a < k; a++) {
                        st->p_eval[i][a] = elt_requant_s32(ep, st->p_eval[i][a], ELT_X_FRAC);
                    }
                }
            }
            elt_latent_s16(p, st->zt, st->p_eval[i], st->latent);
            elt_head_s16(p, st->latent, st->logits[i]);
            st->H[i] = elt_entropy_s16(st->logits[i], ncls, p->logit_frac, ep->exp2_lut,
                                       p->log2_lut);
        }
        /* rank by (H, index): stable insertion sort */
        for (i = 0; i < ep->lam; i++) {
            j = i;
            while (j > 0 && st->H[st->order[j - 1]] > st->H[i]) {
                st->order[j] = st->order[j - 1];
                j--;
            }
            st->order[j] = (uint8_t)i;
        }
        /* best sampled p over all iterations, ties by (H, iteration, index) */
        j = st->order[0];
        if (st->H[j] < best_h) {
            best_h = st->H[j];
            best_t = t;
            best_i = j;
            for (a = 0; a < k; a++) {
                res->p_best[a] = st->p_eval[j][a];
            }
            for (i = 0; i < ncls; i++) {
                res->logits[i] = st->logits[j][i];
            }
        }
#ifdef ELT_TRACE
        elt_trace_rows("cmaes.z", t, (const int32_t(*)[ELT_K_MAX])st->work.z, ep->lam, k);
        elt_trace_rows("cmaes.x", t, (const int32_t(*)[ELT_K_MAX])st->work.x, ep->lam, k);
        elt_trace_rows("p_eval", t, (const int32_t(*)[ELT_K_MAX])st->p_eval, ep->lam, k);
        for (i = 0; i < ep->lam; i++) {
            for (a = 0; a < ncls; a++) {
                elt_trace_buf[i * ncls + a] = st->logits[i][a];
            }
        }
        elt_trace("logits", t, elt_trace_buf, ep->lam * ncls);
        elt_trace("entropy", t, st->H, ep->lam);
        for (i = 0; i < ep->lam; i++) {
            elt_trace_buf[i] = st->order[i];
        }
        elt_trace("order", t, elt_trace_buf, ep->lam);
#endif
        /* 4-10. tell with the continuous candidates; V1 mean; V2 state on the grid */
        hsig = elt_cmaes_tell_s32(ep, &st->es, &st->work, st->order);
        if (p->qv1) {
            elt_q1bit_s32(st->es.m, k);
        }
        if (ep->grid_on) {
            elt_cmaes_requant_state_s32(ep, &st->es);
        }
#ifdef ELT_TRACE
        tr[0] = hsig;
        tr[1] = st->es.g;
        elt_trace("cmaes.hsig", t, tr, 2);
        elt_trace("cmaes.m", t, st->es.m, k);
        elt_trace("cmaes.ps", t, st->es.ps, k);
        elt_trace("cmaes.pc", t, st->es.pc, k);
        elt_trace("cmaes.C", t, st->es.C, k * (k + 1) / 2);
        elt_trace("cmaes.ln_sigma", t, &st->es.ln_sigma, 1);
#else
        (void)hsig;
#endif
    }
    res->H_best = best_h;
    res->pred = elt_argmax_s16(res->logits, ncls);
    for (a = 0; a < k; a++) {
        st->p_prev[a] = res->p_best[a];
    }
#ifdef ELT_TRACE
    for (a = 0; a < k; a++) {
        tr[a] = res->p_best[a];
    }
    tr[k] = best_h;
    tr[k + 1] = best_t;
    tr[k + 2] = best_i;
    elt_trace("best_p", -1, tr, k + 3);
#else
    (void)best_t;
    (void)best_i;
#endif
}
