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

#if ELT_NEON
/* Keeps one running pointer (GCC otherwise splits a walk through W^T into one base register
 * and one ADD per load; with it every load is a post-incremented VLD1). No code emitted. */
#define ELT_PTR_BARRIER(ptr) __asm__("" : "+r"(ptr))

/* logits[c0 .. c0 + 4nb) of the head for one latent, W^T [D][C]: per latent element d,
 * VMLAL.S16 by scalar (lane) of row d of W^T into nb int32x4 accumulators, one lane per class
 * (each lane the full dot product of one row, started at b: the proven int32 bound), stored
 * (the folded candidates start from them), VRSHL by -head_shift, VQMOVN (sat16). dim is a
 * multiple of 4. */
static inline __attribute__((always_inline)) void elt_head_blk(const elt_adapt_params_t *p,
                                                               const int16_t *za, int16_t *la,
                                                               int32_t *acc_out, int32_t c0,
                                                               const int nb)
{
    const int16_t *w = p->W + c0;
    const int32_t skip = p->n_classes - (nb >= 2 ? 8 : 4); /* to the next row, same classes */
    const int16_t *zend = za + p->dim;
    const int32x4_t sh = vdupq_n_s32(-p->head_shift);
    int32x4_t acc[4];
    int b;
#pragma GCC unroll 4
    for (b = 0; b < nb; b++) {
        acc[b] = vld1q_s32(p->b + c0 + 4 * b);
    }
    while (za < zend) {
        const int16x4_t zv = vld1_s16(za);
        int16x8_t x01 = vdupq_n_s16(0);
        int16x8_t x23 = x01;
        za += 4;
        /* one row of W^T: classes c0 .. c0 + 4nb in one or two VLD1 (q, q / q, d / q / d) */
#define ELT_HEAD_STEP(lane)                                                                        \
    do {                                                                                           \
        if (nb >= 2) {                                                                             \
            x01 = vld1q_s16(w);                                                                    \
            w += 8;                                                                                \
            ELT_PTR_BARRIER(w);                                                                    \
        } else {                                                                                   \
            x01 = vcombine_s16(vld1_s16(w), vget_high_s16(x01));                                   \
            w += 4;                                                                                \
            ELT_PTR_BARRIER(w);                                                                    \
        }                                                                                          \
        if (nb == 4) {                                                                             \
            x23 = vld1q_s16(w);                                                                    \
        } else if (nb == 3) {                                                                      \
            x23 = vcombine_s16(vld1_s16(w), vget_high_s16(x23));                                   \
        }                                                                                          \
        w += skip;                                                                                 \
        ELT_PTR_BARRIER(w);                                                                        \
        acc[0] = vmlal_lane_s16(acc[0], vget_low_s16(x01), zv, lane);                              \
        if (nb >= 2) {                                                                             \
            acc[1] = vmlal_lane_s16(acc[1], vget_high_s16(x01), zv, lane);                         \
        }                                                                                          \
        if (nb >= 3) {                                                                             \
            acc[2] = vmlal_lane_s16(acc[2], vget_low_s16(x23), zv, lane);                          \
        }                                                                                          \
        if (nb == 4) {                                                                             \
            acc[3] = vmlal_lane_s16(acc[3], vget_high_s16(x23), zv, lane);                         \
        }                                                                                          \
    } while (0)
        ELT_HEAD_STEP(0);
        ELT_HEAD_STEP(1);
        ELT_HEAD_STEP(2);
        ELT_HEAD_STEP(3);
#undef ELT_HEAD_STEP
    }
#pragma GCC unroll 4
    for (b = 0; b < nb; b++) {
        vst1q_s32(acc_out + c0 + 4 * b, acc[b]);
        vst1_s16(la + c0 + 4 * b, vqmovn_s32(vrshlq_s32(acc[b], sh)));
    }
}

/* Every block of 4 classes; returns the first class left to the scalar loop (C mod 4 classes,
 * or all of them if D is not a multiple of 4). */
static inline __attribute__((always_inline)) int32_t elt_head_neon(const elt_adapt_params_t *p,
                                                                   const int16_t *za, int16_t *la,
                                                                   int32_t *acc_out)
{
    const int32_t ncls = p->n_classes;
    int32_t c = 0;
    if ((p->dim & 3) != 0) {
        return 0;
    }
    for (; c + 16 <= ncls; c += 16) {
        elt_head_blk(p, za, la, acc_out, c, 4);
    }
    switch ((ncls - c) >> 2) {
    case 3:
        elt_head_blk(p, za, la, acc_out, c, 3);
        return c + 12;
    case 2:
        elt_head_blk(p, za, la, acc_out, c, 2);
        return c + 8;
    case 1:
        elt_head_blk(p, za, la, acc_out, c, 1);
        return c + 4;
    default:
        return c;
    }
}
#endif

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

void elt_head_s16(const elt_adapt_params_t *p, const int16_t *z, int16_t *logits, int32_t *acc)
{
#if ELT_NEON
    const int32_t c = elt_head_neon(p, z, logits, acc);
    if (c < p->n_classes) {
        elt_head_rows(p, z, logits, acc, c);
    }
#else
    elt_head_rows(p, z, logits, acc, 0);
#endif
}

#if ELT_NEON
/* Classes c .. c + 4nb (nb = 1..3) of one candidate: per pair of basis vectors j, j + 1, the
 * pair p_j, p_j+1 in one VLD1 and rows j, j + 1 of G^T (walked with one post-incremented
 * pointer) times p_j by VMLAL.S32 by scalar into 2nb int64x2 accumulators (exact: |G p| <
 * 2^62), then VRSHL by -g_shift, + acc0 (VADDW), VRSHL by -head_shift, VQMOVN twice (sat32
 * then sat16 = sat16). k and C are the build's constants where inlined from
 * elt_cand_logits_s16 (every loop unrolled). */
static inline __attribute__((always_inline)) void
elt_cand_blk(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t *pv, int16_t *out,
             int32_t c, const int nb, const int32_t ncls, const int32_t k, const int64x2_t gsh,
             const int64x2_t hsh)
{
    const int32_t *g = p->G + c;
    int64x2_t x[6];
    int h;
    int32_t j;
#pragma GCC unroll 6
    for (h = 0; h < 2 * nb; h++) {
        x[h] = vdupq_n_s64(0);
    }
#define ELT_CAND_ROW(pj, lane)                                                                     \
    do {                                                                                           \
        int32x4_t gv[3];                                                                           \
        _Pragma("GCC unroll 3") for (h = 0; h < nb; h++)                                           \
        {                                                                                          \
            gv[h] = vld1q_s32(g);                                                                  \
            g += 4;                                                                                \
            ELT_PTR_BARRIER(g);                                                                    \
        }                                                                                          \
        if (ncls != 4 * nb) {                                                                      \
            g += ncls - 4 * nb;                                                                    \
            ELT_PTR_BARRIER(g);                                                                    \
        }                                                                                          \
        _Pragma("GCC unroll 3") for (h = 0; h < nb; h++)                                           \
        {                                                                                          \
            x[2 * h] = vmlal_lane_s32(x[2 * h], vget_low_s32(gv[h]), pj, lane);                    \
            x[2 * h + 1] = vmlal_lane_s32(x[2 * h + 1], vget_high_s32(gv[h]), pj, lane);           \
        }                                                                                          \
    } while (0)
    /* p four elements per post-incremented VLD1 (GCC otherwise forms each address by an ADD) */
    j = 0;
    if (k >= 4) {
        const int32_t *pp = pv;
#pragma GCC unroll 8
        for (; j + 4 <= k; j += 4) {
            const int32x4_t pq = vld1q_s32(pp);
            pp += 4;
            ELT_PTR_BARRIER(pp);
            ELT_CAND_ROW(vget_low_s32(pq), 0);
            ELT_CAND_ROW(vget_low_s32(pq), 1);
            ELT_CAND_ROW(vget_high_s32(pq), 0);
            ELT_CAND_ROW(vget_high_s32(pq), 1);
        }
    }
    if (j + 2 <= k) {
        const int32x2_t pj = vld1_s32(pv + j);
        ELT_CAND_ROW(pj, 0);
        ELT_CAND_ROW(pj, 1);
        j += 2;
    }
    if (k & 1) {
        const int32x2_t pj = vld1_dup_s32(pv + k - 1);
        ELT_CAND_ROW(pj, 0);
    }
#undef ELT_CAND_ROW
#pragma GCC unroll 3
    for (h = 0; h < nb; h++) {
        const int32x4_t a0 = vld1q_s32(acc0 + c + 4 * h);
        const int64x2_t r0 =
            vrshlq_s64(vaddw_s32(vrshlq_s64(x[2 * h], gsh), vget_low_s32(a0)), hsh);
        const int64x2_t r1 =
            vrshlq_s64(vaddw_s32(vrshlq_s64(x[2 * h + 1], gsh), vget_high_s32(a0)), hsh);
        vst1_s16(out + c + 4 * h, vqmovn_s32(vcombine_s32(vqmovn_s64(r0), vqmovn_s64(r1))));
    }
}
#endif

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

#if ELT_NEON
/* Every block of 12, then 8 or 4 classes; the C mod 4 classes left to elt_cand_rows. */
static inline __attribute__((always_inline)) void
elt_cand_neon(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t *pv, int16_t *out,
              const int32_t ncls, const int32_t k, const int64x2_t gsh, const int64x2_t hsh)
{
    int32_t c = 0;
    for (; c + 12 <= ncls; c += 12) {
        elt_cand_blk(p, acc0, pv, out, c, 3, ncls, k, gsh, hsh);
    }
    if (c + 8 <= ncls) {
        elt_cand_blk(p, acc0, pv, out, c, 2, ncls, k, gsh, hsh);
        c += 8;
    } else if (c + 4 <= ncls) {
        elt_cand_blk(p, acc0, pv, out, c, 1, ncls, k, gsh, hsh);
        c += 4;
    }
    if (c < ncls) {
        elt_cand_rows(p, acc0, pv, out, c);
    }
}
#endif

void elt_cand_logits_s16(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t *pv,
                         int16_t *logits)
{
#if ELT_NEON
    const int64x2_t gsh = vreinterpretq_s64_s32(vdupq_n_s32(-p->g_shift));
    const int64x2_t hsh = vreinterpretq_s64_s32(vdupq_n_s32(-p->head_shift));
    if (p->n_classes == ELT_C_MAX && p->es.k == ELT_K_MAX) {
        elt_cand_neon(p, acc0, pv, logits, ELT_C_MAX, ELT_K_MAX, gsh, hsh);
    } else {
        elt_cand_neon(p, acc0, pv, logits, p->n_classes, p->es.k, gsh, hsh);
    }
#else
    elt_cand_rows(p, acc0, pv, logits, 0);
#endif
}

/* The generated kernel (p->cand_rows, codegen/emit/adapt_neon.py) finishes with one floor in place
 * of the two rounding shifts (exact integer identities):
 *   acc0 + rshift_round(G p, gs) = floor((acc0 2^gs + 2^(gs-1) + G p) / 2^gs) and
 *   rshift_round(x, hs) = floor((x + 2^(hs-1)) / 2^hs); nested floors of integer quotients are
 *   the floor of the product's quotient, so the logit is sat16(floor(Y / 2^(gs+hs))) with
 *   Y = init + G p, init = acc0 2^gs + 2^(gs-1) + 2^(gs+hs-1) (elt_cand_init).
 * |acc0| < 2^31, gs <= 30, gs + hs <= 61, |G p| < 2^62: |Y| < 2^63 (no int64 overflow), so
 * floor(Y / 2^32) is exact in int32 (VSHRN #32, the high word), then floor(. / 2^(gs+hs-32))
 * and sat16 by VQSHRN.S32 by the immediate gs + hs - 32 (truncating: the floor, needs
 * gs + hs >= 32). The generator checks the same conditions (adapt_neon.kernel_applies) and
 * builds the kernel for this instance's shifts; it writes C logits per candidate and reads k
 * elements of p, hence the build's C and k. */
static int elt_cand_kernel_ok(const elt_adapt_params_t *p)
{
    const int32_t gs = p->g_shift;
    const int32_t hs = p->head_shift;
    return ELT_NEON && p->cand_rows != 0 && p->n_classes == ELT_C_MAX && p->es.k == ELT_K_MAX &&
           gs >= 1 && gs <= 30 && hs >= 1 && gs + hs >= 32 && gs + hs <= 61;
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
    int32_t i;
    if (init != 0 && rows > 0) {
        p->cand_rows(init, pv[0], rows, logits[0]);
        return;
    }
#if ELT_NEON
    if (p->n_classes == ELT_C_MAX && p->es.k == ELT_K_MAX) {
        /* the shifts as VRSHL counts once (stores through logits may alias *p) */
        const int64x2_t gsh = vreinterpretq_s64_s32(vdupq_n_s32(-p->g_shift));
        const int64x2_t hsh = vreinterpretq_s64_s32(vdupq_n_s32(-p->head_shift));
        for (i = 0; i < rows; i++) {
            elt_cand_neon(p, acc0, pv[i], logits[i], ELT_C_MAX, ELT_K_MAX, gsh, hsh);
        }
        return;
    }
#endif
    for (i = 0; i < rows; i++) {
        elt_cand_logits_s16(p, acc0, pv[i], logits[i]);
    }
}

void elt_cand_logits2_s16(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t *pa,
                          const int32_t *pb, int16_t *la, int16_t *lb)
{
    elt_cand_logits_s16(p, acc0, pa, la);
    elt_cand_logits_s16(p, acc0, pb, lb);
}

#if ELT_NEON
/* The stable ranking by (H, index) by counting: candidate i goes to place
 * #{j : H_j < H_i} + #{j < i : H_j = H_i}, i.e. the number of j with H_j < H_i + [j < i]
 * (H < 2^29, docs/numeric.md §5.4: H_i + 1 does not overflow). Four j per VCGT.S32 against the
 * row's thresholds; H is padded to a multiple of 4 with INT32_MAX, which no threshold exceeds.
 * lam is the build's constant where inlined for ELT_LAM_MAX (both loops unrolled, the
 * thresholds' [j < i] known per block). */
static inline __attribute__((always_inline)) void elt_rank_neon(int32_t *H, const int32_t lam,
                                                                uint8_t *order)
{
    static const int32_t step[8] = {1, 1, 1, 1, 0, 0, 0, 0};
    const int32_t nb = (lam + 3) >> 2;
    int32x4_t hb[(ELT_LAM_MAX + 3) >> 2];
    int32_t i;
    int32_t b;
    for (i = lam; i < 4 * nb; i++) {
        H[i] = INT32_MAX;
    }
#pragma GCC unroll 8
    for (b = 0; b < ((ELT_LAM_MAX + 3) >> 2); b++) {
        hb[b] = vld1q_s32(H + 4 * b); /* blocks from nb on are never compared */
    }
#pragma GCC unroll 32
    for (i = 0; i < lam; i++) {
        const int32x4_t hi = vld1q_dup_s32(H + i);
        const int32x4_t hi1 = vaddq_s32(hi, vdupq_n_s32(1));
        uint32x4_t cnt = vdupq_n_u32(0);
        uint32x2_t c2;
#pragma GCC unroll 8
        for (b = 0; b < nb; b++) {
            int32x4_t thr;
            if (4 * b + 4 <= i) {
                thr = hi1;
            } else if (4 * b >= i) {
                thr = hi;
            } else {
                thr = vaddq_s32(hi, vld1q_s32(step + 4 - (i - 4 * b)));
            }
            cnt = vsubq_u32(cnt, vcltq_s32(hb[b], thr));
        }
        c2 = vpadd_u32(vget_low_u32(cnt), vget_high_u32(cnt));
        c2 = vpadd_u32(c2, c2);
        order[vget_lane_u32(c2, 0)] = (uint8_t)i;
    }
}
#endif

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
    int32_t i;
    int32_t a;
#ifdef ELT_TRACE
    int32_t tr[ELT_K_MAX + 3];
#endif
    /* no-adapt: z_t in the latent format, logits, H, argmax */
    i = 0;
#if ELT_NEON
    {
        /* VQRSHL.S16 by -zt_shift: the one rounding rule (right) or a saturating left shift,
         * = fx_sat16(fx_rshift_round32(z, zt_shift)) for every int16 z */
        const int16x8_t sh = vdupq_n_s16((int16_t)-p->zt_shift);
        for (; i + 8 <= p->dim; i += 8) {
            vst1q_s16(st->zt + i, vqrshlq_s16(vld1q_s16(z_q15 + i), sh));
        }
    }
#endif
    for (; i < p->dim; i++) {
        st->zt[i] = fx_sat16(fx_rshift_round32(z_q15[i], p->zt_shift));
    }
    elt_head_s16(p, st->zt, res->logits_noadapt, st->acc0);
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
        /* 1. A = chol(C); 2. sigma; z, y = A z, x = m + sigma y (docs/cmaes.md §6) */
        if (st->es.g == 0) {
            /* C = I exactly (elt_cmaes_reset_s32) and chol(I) = I with no raised pivot:
             * isqrt(2^26 2^26) = 2^26, off-diagonal numerators 0 */
            i = 0;
#if ELT_NEON
            for (; i + 4 <= k * (k + 1) / 2; i += 4) {
                vst1q_s32(st->work.A + i, vld1q_s32(st->es.C + i));
            }
#endif
            for (; i < k * (k + 1) / 2; i++) {
                st->work.A[i] = st->es.C[i];
            }
        } else {
            res->n_pivot_fix += elt_cmaes_chol_s32(st->es.C, k, st->work.A);
        }
        elt_cmaes_sigma_s32(st->es.ln_sigma, ep->exp2_lut, &st->work.sig_mant, &st->work.sig_exp);
#ifdef ELT_TRACE
        elt_trace("cmaes.A", t, st->work.A, k * (k + 1) / 2);
        tr[0] = st->es.ln_sigma;
        tr[1] = st->work.sig_mant;
        tr[2] = st->work.sig_exp;
        elt_trace("cmaes.sigma", t, tr, 3);
#endif
        elt_cmaes_sample_s32(ep, &st->es, &st->work, &st->rng, p->gauss_lut);
        /* 3. evaluate every candidate: p (V1/V2), z = z_t + V p, logits, H; without V1 the
         * evaluated p is the candidate x itself */
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
        /* rank by (H, index) */
#if ELT_NEON
        if (ep->lam == ELT_LAM_MAX) {
            elt_rank_neon(st->H, ELT_LAM_MAX, st->order);
        } else {
            elt_rank_neon(st->H, ep->lam, st->order);
        }
#else
        for (i = 0; i < ep->lam; i++) {
            /* stable insertion sort */
            j = i;
            while (j > 0 && st->H[st->order[j - 1]] > st->H[i]) {
                st->order[j] = st->order[j - 1];
                j--;
            }
            st->order[j] = (uint8_t)i;
        }
#endif
        /* best sampled p over all iterations, ties by (H, iteration, index) */
        j = st->order[0];
        if (st->H[j] < best_h) {
            best_h = st->H[j];
            best_t = t;
            best_i = j;
            a = 0;
            i = 0;
#if ELT_NEON
            for (; a + 4 <= k; a += 4) {
                vst1q_s32(res->p_best + a, vld1q_s32(pe[j] + a));
            }
            for (; i + 4 <= ncls; i += 4) {
                vst1_s16(res->logits + i, vld1_s16(st->logits[j] + i));
            }
#endif
            for (; a < k; a++) {
                res->p_best[a] = pe[j][a];
            }
            for (; i < ncls; i++) {
                res->logits[i] = st->logits[j][i];
            }
        }
#ifdef ELT_TRACE
        elt_trace_rows("cmaes.z", t, (const int32_t(*)[ELT_K_MAX])st->work.z, ep->lam, k);
        elt_trace_rows("cmaes.x", t, (const int32_t(*)[ELT_K_MAX])st->work.x, ep->lam, k);
        elt_trace_rows("p_eval", t, pe, ep->lam, k);
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
#ifndef ELT_TRACE
        if (t == ep->n_iter - 1) {
            break; /* the last tell's state is never read: the output is the best sampled p */
        }
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
