/*
 * The adaptation core's operations in plain C (firmware/elt_adapt.c includes this file after its
 * scalar helpers; firmware/kernels/neon_a32/elt_adapt_ops.h is the NEON form of the same
 * functions). No generated candidate kernel: it is NEON assembly.
 */
#ifndef ELT_ADAPT_OPS_H
#define ELT_ADAPT_OPS_H

/* The head's logits, one row of W^T per latent element. */
static inline void elt_head(const elt_adapt_params_t *p, const int16_t *z, int16_t *logits,
                            int32_t *acc)
{
    elt_head_rows(p, z, logits, acc, 0);
}

/* One candidate's logits. */
static inline void elt_cand_one(const elt_adapt_params_t *p, const int32_t *acc0, const int32_t *pv,
                                int16_t *logits)
{
    elt_cand_rows(p, acc0, pv, logits, 0);
}

/* The logits of candidates pv[0 .. rows), one candidate at a time. */
static inline void elt_cand_each(const elt_adapt_params_t *p, const int32_t *acc0,
                                 const int32_t (*pv)[ELT_K_MAX], int32_t rows,
                                 int16_t (*logits)[ELT_C_MAX])
{
    int32_t i;
    for (i = 0; i < rows; i++) {
        elt_cand_logits_s16(p, acc0, pv[i], logits[i]);
    }
}

/* The generated candidate kernel is NEON assembly: never in this variant. */
static inline int elt_cand_kernel_ok(const elt_adapt_params_t *p)
{
    (void)p;
    return 0;
}

/* order: the candidates by (H, index), a stable insertion sort. */
static inline void elt_rank(int32_t *H, int32_t lam, uint8_t *order)
{
    int32_t i;
    int32_t j;
    for (i = 0; i < lam; i++) {
        j = i;
        while (j > 0 && H[order[j - 1]] > H[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = (uint8_t)i;
    }
}

/* zt = sat16(rshift_round(z, zt_shift)) for the D latent elements. */
static inline void elt_zt(const elt_adapt_params_t *p, const int16_t *z, int16_t *zt)
{
    elt_zt_from(p, z, zt, 0);
}

/* d = s, n int32. */
static inline void elt_copy_s32(int32_t *d, const int32_t *s, int32_t n)
{
    elt_copy_s32_from(d, s, 0, n);
}

/* The best candidate so far into the result: its p (k int32) and its logits (C int16). */
static inline void elt_copy_best(elt_adapt_result_t *res, const int32_t *pj, const int16_t *lj,
                                 int32_t k, int32_t ncls)
{
    elt_copy_best_from(res, pj, lj, 0, k, 0, ncls);
}

#endif /* ELT_ADAPT_OPS_H */
