/*
 * The adaptation core's operations on the Cortex-A9 (firmware/elt_adapt.c includes this file
 * after its scalar helpers; firmware/kernels/ref/elt_adapt_ops.h is the plain C of the same
 * functions): the head and the candidates' folded head in int32 / int64 lanes, the stable
 * ranking by VCGT counts, vector copies, and the generated candidate kernel
 * (codegen/emit/adapt_neon.py) where it applies.
 */
#ifndef ELT_ADAPT_OPS_H
#define ELT_ADAPT_OPS_H

#include "elt_neon_a32.h"

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

/* The head's logits: every block of 4 classes by elt_head_neon, the rest by elt_head_rows. */
static inline __attribute__((always_inline)) void
elt_head(const elt_adapt_params_t *p, const int16_t *z, int16_t *logits, int32_t *acc)
{
    const int32_t c = elt_head_neon(p, z, logits, acc);
    if (c < p->n_classes) {
        elt_head_rows(p, z, logits, acc, c);
    }
}

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

/* One candidate's logits, the blocks for the build's C and k where they are. */
static inline __attribute__((always_inline)) void
elt_cand_one(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t *pv, int16_t *logits)
{
    const int64x2_t gsh = vreinterpretq_s64_s32(vdupq_n_s32(-p->g_shift));
    const int64x2_t hsh = vreinterpretq_s64_s32(vdupq_n_s32(-p->head_shift));
    if (p->n_classes == ELT_C_MAX && p->es.k == ELT_K_MAX) {
        elt_cand_neon(p, acc0, pv, logits, ELT_C_MAX, ELT_K_MAX, gsh, hsh);
    } else {
        elt_cand_neon(p, acc0, pv, logits, p->n_classes, p->es.k, gsh, hsh);
    }
}

/* The logits of candidates pv[0 .. rows) without the generated kernel: for the build's C and k
 * the shifts as VRSHL counts once (stores through logits may alias *p), else one candidate at a
 * time. */
static inline __attribute__((always_inline)) void
elt_cand_each(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t (*pv)[ELT_K_MAX],
              int32_t rows, int16_t (*logits)[ELT_C_MAX])
{
    int32_t i;
    if (p->n_classes == ELT_C_MAX && p->es.k == ELT_K_MAX) {
        /* the shifts as VRSHL counts once (stores through logits may alias *p) */
        const int64x2_t gsh = vreinterpretq_s64_s32(vdupq_n_s32(-p->g_shift));
        const int64x2_t hsh = vreinterpretq_s64_s32(vdupq_n_s32(-p->head_shift));
        for (i = 0; i < rows; i++) {
            elt_cand_neon(p, acc0, pv[i], logits[i], ELT_C_MAX, ELT_K_MAX, gsh, hsh);
        }
        return;
    }
    for (i = 0; i < rows; i++) {
        elt_cand_logits_s16(p, acc0, pv[i], logits[i]);
    }
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
    return p->cand_rows != 0 && p->n_classes == ELT_C_MAX && p->es.k == ELT_K_MAX && gs >= 1 &&
           gs <= 30 && hs >= 1 && gs + hs >= 32 && gs + hs <= 61;
}

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

/* Lane l of v in every lane by VDUP.32 by scalar (ARM DDI 0406C A8.8.321), each lane a
 * constant (-O0 builds do not unroll the loop that picks it). */
static inline __attribute__((always_inline)) int32x4_t elt_dup_lane(int32x4_t v, int32_t l)
{
    switch (l) {
    case 0:
        return vdupq_lane_s32(vget_low_s32(v), 0);
    case 1:
        return vdupq_lane_s32(vget_low_s32(v), 1);
    case 2:
        return vdupq_lane_s32(vget_high_s32(v), 0);
    default:
        return vdupq_lane_s32(vget_high_s32(v), 1);
    }
}

/* The same places for lam = ELT_LAM_MAX, four candidates (one block of H) per lane and one H_j
 * at a time: blocks whose candidates all follow j count H_j <= H_i (VCGE.S32), blocks before j
 * H_j < H_i (VCGT.S32), and j's own block compares with H_i + [j < i] (H plus the mask of the
 * lanes after j). H_j by VDUP.32 by scalar from the block in registers (ARM DDI 0406C
 * A8.8.321; loads of H_j are hoisted and spilled by GCC). Lanes past lam are never stored. */
static inline __attribute__((always_inline)) void elt_rank_lam_max(const int32_t *H, uint8_t *order)
{
    enum { NB = (ELT_LAM_MAX + 3) >> 2 };
    static const int32_t after[7] = {0, 0, 0, 0, 1, 1, 1}; /* lanes after o: after + 3 - o */
    const int32x4_t m0 = vld1q_s32(after + 3);
    const int32x4_t m1 = vld1q_s32(after + 2);
    const int32x4_t m2 = vld1q_s32(after + 1);
    int32x4_t hb[NB];
    uint32x4_t cnt[NB];
    int32_t place[4 * NB];
    int32_t i;
    int32_t j;
    int32_t b;
#pragma GCC unroll 8
    for (b = 0; b < NB; b++) {
        hb[b] = vld1q_s32(H + 4 * b);
        cnt[b] = vdupq_n_u32(0);
    }
#pragma GCC unroll 32
    for (j = 0; j < ELT_LAM_MAX; j++) {
        const int32x4_t hj = elt_dup_lane(hb[j >> 2], j & 3);
#pragma GCC unroll 8
        for (b = 0; b < NB; b++) {
            uint32x4_t lt;
            if (4 * b > j) {
                lt = vcgeq_s32(hb[b], hj);
            } else if (4 * b + 4 <= j || (j & 3) == 3) {
                lt = vcgtq_s32(hb[b], hj);
            } else {
                lt = vcgtq_s32(vaddq_s32(hb[b], (j & 3) == 0 ? m0 : (j & 3) == 1 ? m1 : m2), hj);
            }
            cnt[b] = vsubq_u32(cnt[b], lt);
        }
    }
#pragma GCC unroll 8
    for (b = 0; b < NB; b++) {
        vst1q_s32(place + 4 * b, vreinterpretq_s32_u32(cnt[b]));
    }
#pragma GCC unroll 32
    for (i = 0; i < ELT_LAM_MAX; i++) {
        order[place[i]] = (uint8_t)i;
    }
}

/* The places for lam = ELT_LAM_MAX <= 16 and C = ELT_C_MAX <= 16, where H <= ln C nats (the
 * entropy of C classes plus its rounding, docs/numeric.md §5.4) < 2.78 2^26 < 2^28: the keys
 * H_i 16 + i (VSLI #4 into the index, ARM DDI 0406C A8.8.379) fit uint32 and are distinct, and
 * (H, index) order is key order, so candidate i's place is #{j : key_j < key_i}, one
 * VCGT.U32 per block and j with no threshold to adjust. */
static inline __attribute__((always_inline)) void elt_rank_keys(const int32_t *H, uint8_t *order)
{
    enum { NB = (ELT_LAM_MAX + 3) >> 2 };
    static const uint32_t idx[4 * NB + 16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    uint32x4_t kb[NB];
    uint32x4_t cnt[NB];
    int32_t place[4 * NB];
    int32_t i;
    int32_t j;
    int32_t b;
#pragma GCC unroll 8
    for (b = 0; b < NB; b++) {
        kb[b] = vsliq_n_u32(vld1q_u32(idx + 4 * b), vreinterpretq_u32_s32(vld1q_s32(H + 4 * b)), 4);
        cnt[b] = vdupq_n_u32(0);
    }
#pragma GCC unroll 32
    for (j = 0; j < ELT_LAM_MAX; j++) {
        const uint32x4_t kj =
            vreinterpretq_u32_s32(elt_dup_lane(vreinterpretq_s32_u32(kb[j >> 2]), j & 3));
#pragma GCC unroll 8
        for (b = 0; b < NB; b++) {
            cnt[b] = vsubq_u32(cnt[b], vcgtq_u32(kb[b], kj));
        }
    }
#pragma GCC unroll 8
    for (b = 0; b < NB; b++) {
        vst1q_s32(place + 4 * b, vreinterpretq_s32_u32(cnt[b]));
    }
#pragma GCC unroll 32
    for (i = 0; i < ELT_LAM_MAX; i++) {
        order[place[i]] = (uint8_t)i;
    }
}

/* order: the candidates by (H, index), for the build's lambda where it is. */
static inline __attribute__((always_inline)) void elt_rank(int32_t *H, int32_t lam, uint8_t *order)
{
    if (lam == ELT_LAM_MAX && ELT_LAM_MAX <= 16 && ELT_C_MAX <= 16) {
        elt_rank_keys(H, order);
    } else if (lam == ELT_LAM_MAX) {
        elt_rank_lam_max(H, order);
    } else {
        elt_rank_neon(H, lam, order);
    }
}

/* zt = sat16(rshift_round(z, zt_shift)) for the D latent elements: VQRSHL.S16 by -zt_shift, the
 * one rounding rule (right) or a saturating left shift, = fx_sat16(fx_rshift_round32(z,
 * zt_shift)) for every int16 z; eight per step, then the tail. */
static inline __attribute__((always_inline)) void elt_zt(const elt_adapt_params_t *p,
                                                         const int16_t *z, int16_t *zt)
{
    const int16x8_t sh = vdupq_n_s16((int16_t)-p->zt_shift);
    int32_t i = 0;
    for (; i + 8 <= p->dim; i += 8) {
        vst1q_s16(zt + i, vqrshlq_s16(vld1q_s16(z + i), sh));
    }
    elt_zt_from(p, z, zt, i);
}

/* d = s, n int32: sixteen per step by two VLD1 and two VST1 of four d-registers with
 * post-increment (ARM DDI 0406C A8.8.320, A8.8.404; GCC gives each quad of an unrolled
 * intrinsic copy its own address), then four per VLD1/VST1, then the tail. */
static inline __attribute__((always_inline)) void elt_copy_s32(int32_t *d, const int32_t *s,
                                                               int32_t n)
{
    int32_t *dp = d;
    const int32_t *sp = s;
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __asm__ volatile("vld1.32 {d16-d19}, [%1]!\n\t"
                         "vld1.32 {d20-d23}, [%1]!\n\t"
                         "vst1.32 {d16-d19}, [%0]!\n\t"
                         "vst1.32 {d20-d23}, [%0]!"
                         : "+r"(dp), "+r"(sp)
                         :
                         : "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "memory");
    }
    for (; i + 4 <= n; i += 4) {
        vst1q_s32(d + i, vld1q_s32(s + i));
    }
    elt_copy_s32_from(d, s, i, n);
}

/* The best candidate so far into the result: its p (k int32, elt_copy_s32) and its logits
 * (C int16) four per VLD1/VST1, then the tail. */
static inline __attribute__((always_inline)) void elt_copy_best(elt_adapt_result_t *res,
                                                                const int32_t *pj,
                                                                const int16_t *lj, int32_t k,
                                                                int32_t ncls)
{
    int32_t i = 0;
    elt_copy_s32(res->p_best, pj, k);
    for (; i + 4 <= ncls; i += 4) {
        vst1_s16(res->logits + i, vld1_s16(lj + i));
    }
    elt_copy_best_from(res, pj, lj, k, k, i, ncls);
}

#endif /* ELT_ADAPT_OPS_H */
