/*
 * The integer CMA-ES's operations on the Cortex-A9 (firmware/elt_cmaes_s32.c includes this file
 * after its shared helpers; firmware/kernels/ref/elt_cmaes_s32_ops.h is the plain C of the same
 * functions). Every vector loop computes the scalar formula lane-wise: products of two int32 by
 * VMULL into int64 lanes, the one rounding rule by VRSHR / VRSRA / VRSHL / VQRSHRN
 * ((x + 2^(s-1)) >> s exactly), every saturation explicit (VQMOVN = sat32), sums of exact
 * integers in any order; each loop ends with the shared scalar tail of elt_cmaes_s32.c.
 */
#ifndef ELT_CMAES_S32_OPS_H
#define ELT_CMAES_S32_OPS_H

#include <stddef.h>

#include "elt_neon_a32.h"

/* (a0 + a1, b0 + b1) of two int64x2 by VEXT (a1, b0) + VBSL (a0, b1), all in NEON registers
 * (combining d halves makes GCC copy them with VMOV.F64, a floating-point mnemonic) */
static inline int64x2_t elt_hadd2_s64(int64x2_t a, int64x2_t b)
{
    const uint64x2_t lo = vreinterpretq_u64_s64(vcombine_s64(vcreate_s64(~0ULL), vcreate_s64(0)));
    return vaddq_s64(vextq_s64(a, b, 1), vbslq_s64(lo, a, b));
}

/* Loads and stores through a pointer that the instruction advances ([Rn]!, ARM DDI 0406C
 * A8.8.320, A8.8.404): VLD1/VST1 have no immediate offset, so the fully unrolled sampler's
 * dozens of constant addresses would each take a register or an ADD (the sampler, the
 * Cholesky); one pointer per stream walks them instead. The "m" operands tell the compiler which
 * words are read or written. */
static inline __attribute__((always_inline)) int32x4_t elt_vld1q_pi(const int32_t **p)
{
    const int32_t *q = *p;
    int32x4_t v;
    __asm__("vld1.32 {%q0}, [%1]!" : "=w"(v), "+r"(q) : "m"(*(const int32_t(*)[4]) * p));
    *p = q;
    return v;
}

static inline __attribute__((always_inline)) int32x2_t elt_vld1_pi(const int32_t **p)
{
    const int32_t *q = *p;
    int32x2_t v;
    __asm__("vld1.32 {%P0}, [%1]!" : "=w"(v), "+r"(q) : "m"(*(const int32_t(*)[2]) * p));
    *p = q;
    return v;
}

/* ... and by a stride in bytes ([Rn], Rm) */
static inline __attribute__((always_inline)) int32x4_t elt_vld1q_ps(const int32_t **p,
                                                                    int32_t stride)
{
    const int32_t *q = *p;
    int32x4_t v;
    __asm__("vld1.32 {%q0}, [%1], %2"
            : "=w"(v), "+r"(q)
            : "r"(stride), "m"(*(const int32_t(*)[4]) * p));
    *p = q;
    return v;
}

static inline __attribute__((always_inline)) void elt_vst1_pi(int32_t **p, int32x2_t v)
{
    int32_t *q = *p;
    __asm__("vst1.32 {%P2}, [%0]!" : "+r"(q), "=m"(*(int32_t(*)[2]) * p) : "w"(v));
    *p = q;
}

static inline __attribute__((always_inline)) void elt_vst1q_pi(int32_t **p, int32x4_t v)
{
    int32_t *q = *p;
    __asm__("vst1.32 {%q2}, [%0]!" : "+r"(q), "=m"(*(int32_t(*)[4]) * p) : "w"(v));
    *p = q;
}

/* sum_l round(x_l y_l / 2^26), l < n: two products per VMULL, VRSRA #26, then the tail */
static inline int64_t elt_dot_rr26(const int32_t *x, const int32_t *y, int32_t n)
{
    int64_t s = 0;
    int32_t l = 0;
    if (n >= 2) {
        int64x2_t acc = vdupq_n_s64(0);
        for (; l + 2 <= n; l += 2) {
            acc = vrsraq_n_s64(acc, vmull_s32(vld1_s32(x + l), vld1_s32(y + l)), ELT_C_FRAC);
        }
        s = vgetq_lane_s64(acc, 0) + vgetq_lane_s64(acc, 1);
    }
    return elt_dot_rr26_from(x, y, l, n, s);
}

/* Rows j + 1 .. k - 1 of column j of A (elt_chol_k), rows i, i + 1 together: one load of row
 * j's prefix for both dot products, the two numerators in one int64x2 (VQMOVN = sat32), the
 * quotients by VMULL by r, VRSHL by -(e + 3), VQMOVN; an odd last row by the scalar tail. */
static inline __attribute__((always_inline)) void elt_chol_rows(const int32_t *c, int32_t *a,
                                                                const int32_t *aj, int32_t j,
                                                                const int32_t k, int32_t r, int e)
{
    int32_t i = j + 1;
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
            vmovl_s32(vset_lane_s32(c[ELT_TRI(i + 1, j)], vdup_n_s32(c[ELT_TRI(i, j)]), 1)), sum));
        num = vqmovn_s64(vrshlq_s64(vmull_n_s32(num, r), esh));
        a[ELT_TRI(i, j)] = vget_lane_s32(num, 0);
        a[ELT_TRI(i + 1, j)] = vget_lane_s32(num, 1);
    }
    elt_chol_rows_from(c, a, aj, i, j, k, r, e);
}

/* v0 + v1 of an int64x2 in core registers: VADD.I64 of its halves (ARM DDI 0406C A8.8.282) and
 * one VMOV of the 64-bit sum (A8.8.345); from the intrinsics GCC moves the four words out one
 * by one and adds them with ADDS/ADC */
static inline __attribute__((always_inline)) int64_t elt_hsum_s64(int64x2_t v)
{
    int64x1_t t;
    int64_t s;
    __asm__("vadd.i64 %P0, %e1, %f1" : "=w"(t) : "w"(v));
    __asm__("vmov %Q0, %R0, %P1" : "=r"(s) : "w"(t));
    return s;
}

/* (sat32(a), sat32(b)) as one int32x4: VQMOVN into each half of the quad (ARM DDI 0406C
 * A8.8.319); from vcombine_s32 GCC copies the halves with VMOV */
static inline __attribute__((always_inline)) int32x4_t elt_qmovn2_s64(int64x2_t a, int64x2_t b)
{
    int32x4_t q;
    __asm__("vqmovn.s64 %e0, %q1\n\tvqmovn.s64 %f0, %q2" : "=&w"(q) : "w"(a), "w"(b));
    return q;
}

/* acc + round(p / 2^26) by VRSRA #26, or round(p / 2^26) by VRSHR #26 for the first term of a
 * sum (no zeroed accumulator) */
static inline __attribute__((always_inline)) int64x2_t elt_rsra26(int64x2_t acc, int64x2_t p,
                                                                  int first)
{
    return first ? vrshrq_n_s64(p, ELT_C_FRAC) : vrsraq_n_s64(acc, p, ELT_C_FRAC);
}

/* elt_chol_cols: row j's prefix A_j0 .. A_j,j-1 into d-registers, two per VLD1 (the pointer
 * advanced by the instruction), an odd last one with a zeroed lane 1; loaded once per column for
 * the pivot's squares and every group of rows */
static inline __attribute__((always_inline)) void elt_chol_ld_row(const int32_t *aj, int32_t j,
                                                                  int32x2_t ajv[])
{
    int32_t l;
    const int32_t *jp = aj;
#if ELT_K_MAX <= 16
#pragma GCC unroll 8
#endif
    for (l = 0; l + 2 <= j; l += 2) {
        ajv[l >> 1] = elt_vld1_pi(&jp);
    }
    if (l < j) {
        ajv[l >> 1] = vld1_lane_s32(jp, vdup_n_s32(0), 0);
    }
}

/* elt_chol_cols: the pivot's sum C_jj - sum_l round(A_jl^2 / 2^26), row j's prefix (ajv) two
 * squares per VMULL, VRSRA #26 (an odd last one against the zeroed lane), the two lanes added by
 * VADD and moved to core registers by one VMOV */
static inline __attribute__((always_inline)) int64_t elt_chol_cols_piv(const int32x2_t ajv[],
                                                                       int32_t j, int64_t piv)
{
    int32_t l;
    int64x2_t dv = vdupq_n_s64(0);
    if (j == 0) {
        return piv;
    }
#if ELT_K_MAX <= 16
#pragma GCC unroll 8
#endif
    for (l = 0; l < j; l += 2) {
        dv = elt_rsra26(dv, vmull_s32(ajv[l >> 1], ajv[l >> 1]), l == 0);
    }
    return piv - elt_hsum_s64(dv);
}

/* elt_chol_cols: np (1 .. 4) consecutive d-registers of row l of the transposed factor (at[l][i],
 * at[l][i + 1], ..) by one VLD1 of a register list ({d-d+3}, ARM DDI 0406C A8.8.320), the
 * pointer advanced by stride bytes to the next row of at; the list's registers given out as v[]. */
static inline __attribute__((always_inline)) void elt_chol_ld_at(const int32_t **p, int32_t stride,
                                                                 int32_t np, int32x2_t v[4])
{
    const int32_t *q = *p;
    if (np == 4) {
        int32x4x2_t w;
        __asm__("vld1.32 %h0, [%1], %2"
                : "=w"(w), "+r"(q)
                : "r"(stride), "m"(*(const int32_t(*)[8]) * p));
        v[0] = vget_low_s32(w.val[0]);
        v[1] = vget_high_s32(w.val[0]);
        v[2] = vget_low_s32(w.val[1]);
        v[3] = vget_high_s32(w.val[1]);
    } else if (np == 3) {
        int32x2x3_t w;
        __asm__("vld1.32 %h0, [%1], %2"
                : "=w"(w), "+r"(q)
                : "r"(stride), "m"(*(const int32_t(*)[6]) * p));
        v[0] = w.val[0];
        v[1] = w.val[1];
        v[2] = w.val[2];
    } else if (np == 2) {
        int32x4_t w;
        __asm__("vld1.32 {%q0}, [%1], %2"
                : "=w"(w), "+r"(q)
                : "r"(stride), "m"(*(const int32_t(*)[4]) * p));
        v[0] = vget_low_s32(w);
        v[1] = vget_high_s32(w);
    } else {
        __asm__("vld1.32 {%P0}, [%1], %2"
                : "=w"(v[0]), "+r"(q)
                : "r"(stride), "m"(*(const int32_t(*)[2]) * p));
    }
    *p = q;
}

/* elt_chol_cols: the quotients of rows i .. i + 2 np - 1 of column j from their sums acc[]
 * (lane 0 row i + 2 p, lane 1 the next row): C_ij from two word loads with immediate offsets
 * and one VMOV into a d-register (VLD1 has no offset, A8.8.320), num = VQMOVN(C - sum) (sat32),
 * VMULL by r, VRSHL by -(e + 3), VQMOVN; stored into at[j][i ..] and into A (a row past k - 1,
 * the odd count's pad lane, reads C as 0 and is stored only into at). */
static inline __attribute__((always_inline)) void
elt_chol_cols_fin(int32_t *atj, const int32_t *c, int32_t *a, int32_t i, int32_t j, const int32_t k,
                  int32_t np, const int64x2_t acc[4], int32x2_t rv, int64x2_t esh)
{
    int32_t p;
    ELT_UNROLL_K
    for (p = 0; p < np; p++) {
        const int32_t row = i + 2 * p;
        const uint32_t c0 = (uint32_t)c[ELT_TRI(row, j)];
        const uint32_t c1 = row + 1 < k ? (uint32_t)c[ELT_TRI(row + 1, j)] : 0u;
        const int32x2_t cv = vcreate_s32((uint64_t)c0 | (uint64_t)c1 << 32);
        /* column 0 has no sum: num = C */
        int32x2_t q = j == 0 ? cv : vqmovn_s64(vsubq_s64(vmovl_s32(cv), acc[p]));
        q = vqmovn_s64(vrshlq_s64(vmull_lane_s32(q, rv, 0), esh));
        elt_vst1_pi(&atj, q);
        a[ELT_TRI(row, j)] = vget_lane_s32(q, 0);
        if (row + 1 < k) {
            a[ELT_TRI(row + 1, j)] = vget_lane_s32(q, 1);
        }
    }
}

/* elt_chol_cols: rows i .. i + 2 np - 1 of column j, np = min(4, ceil((k - i) / 2)) pairs: the
 * numerators' sums from the transposed columns at[l][i ..] (all np pairs of one l by one VLD1),
 * by VMULL by the scalar A_jl and VRSRA #26 into the row's int64 lane; then elt_chol_cols_fin. */
static inline __attribute__((always_inline)) void
elt_chol_cols_group(int32_t (*at)[ELT_K_MAX + 4], const int32x2_t ajv[], const int32_t *c,
                    int32_t *a, int32_t i, int32_t j, const int32_t k, int32x2_t rv, int64x2_t esh)
{
    const int32_t np = k - i >= 8 ? 4 : (k - i + 1) >> 1;
    const int32_t stride = (int32_t)sizeof at[0];
    const int32_t *tp = &at[0][i]; /* at[l][i], l = 0, 1, ..: one row of at further each */
    int64x2_t acc[4];
    int32x2_t v[4];
    int32_t l;
    int32_t p;
    ELT_UNROLL_K
    for (p = 0; p < 4; p++) {
        acc[p] = vdupq_n_s64(0); /* overwritten by the first product (VRSHR): no instruction */
    }
#if ELT_K_MAX <= 16
#pragma GCC unroll 8
#endif
    for (l = 0; l + 2 <= j; l += 2) {
        const int32x2_t ajl = ajv[l >> 1];
        elt_chol_ld_at(&tp, stride, np, v);
        ELT_UNROLL_K
        for (p = 0; p < np; p++) {
            acc[p] = elt_rsra26(acc[p], vmull_lane_s32(v[p], ajl, 0), l == 0);
        }
        elt_chol_ld_at(&tp, stride, np, v);
        ELT_UNROLL_K
        for (p = 0; p < np; p++) {
            acc[p] = vrsraq_n_s64(acc[p], vmull_lane_s32(v[p], ajl, 1), ELT_C_FRAC);
        }
    }
    if (l < j) {
        const int32x2_t ajl = ajv[l >> 1];
        elt_chol_ld_at(&tp, stride, np, v);
        ELT_UNROLL_K
        for (p = 0; p < np; p++) {
            acc[p] = elt_rsra26(acc[p], vmull_lane_s32(v[p], ajl, 0), l == 0);
        }
    }
    elt_chol_cols_fin(&at[j][i], c, a, i, j, k, np, acc, rv, esh);
}

/* elt_chol_cols, fast form: rows i .. i + 3 (nq = 1) or i .. i + 7 (nq = 2) of the scaled
 * transposed factor at32[l][i ..] = 32 A_il by one VLD1 of a register list (A8.8.320), the pointer
 * advanced by stride bytes; lanes past the group's rows are never stored */
static inline __attribute__((always_inline)) void elt_chol_ld_atq(const int32_t **p, int32_t stride,
                                                                  int32_t nq, int32x4_t v[2])
{
    const int32_t *q = *p;
    if (nq == 2) {
        int32x4x2_t w;
        __asm__("vld1.32 %h0, [%1], %2"
                : "=w"(w), "+r"(q)
                : "r"(stride), "m"(*(const int32_t(*)[8]) * p));
        v[0] = w.val[0];
        v[1] = w.val[1];
    } else {
        __asm__("vld1.32 {%q0}, [%1], %2"
                : "=w"(v[0]), "+r"(q)
                : "r"(stride), "m"(*(const int32_t(*)[4]) * p));
        v[1] = v[0];
    }
    *p = q;
}

/* elt_chol_fast_fin: C_ij of rows row .. row + 3 of column j (0 past k - 1) by word loads with
 * immediate offsets and two VMOVs straight into the halves of one q-register (A8.8.345; VLD1 has no
 * offset, A8.8.320; from vcombine GCC builds two d-registers and copies them) */
static inline __attribute__((always_inline)) int32x4_t elt_chol_ld_c4(const int32_t *c, int32_t row,
                                                                      int32_t j, const int32_t k)
{
    int32_t cw[4];
    int32x4_t cv;
    int32_t l;
    ELT_UNROLL_K
    for (l = 0; l < 4; l++) {
        cw[l] = row + l < k ? c[ELT_TRI(row + l, j)] : 0;
    }
    __asm__("vmov %e0, %1, %2\n\tvmov %f0, %3, %4"
            : "=w"(cv)
            : "r"(cw[0]), "r"(cw[1]), "r"(cw[2]), "r"(cw[3]));
    return cv;
}

/* elt_chol_fast_fin: the four lanes of q stored into rows row .. row + 3 of column j of A (those
 * below k): two VMOVs to core registers (A8.8.345), then word stores with immediate offsets (VST1
 * of a lane has none; GCC stores only lane 0 by VSTR) */
static inline __attribute__((always_inline)) void
elt_chol_st_a4(int32_t *a, int32x4_t q, int32_t row, int32_t j, const int32_t k)
{
    uint64_t lo;
    uint64_t hi;
    __asm__("vmov %Q0, %R0, %e2\n\tvmov %Q1, %R1, %f2" : "=&r"(lo), "=r"(hi) : "w"(q));
    if (row > j) { /* row j is the diagonal's lane (elt_chol_fast_col) */
        a[ELT_TRI(row, j)] = (int32_t)(uint32_t)lo;
    }
    a[ELT_TRI(row + 1, j)] = (int32_t)(uint32_t)(lo >> 32);
    if (row + 2 < k) {
        a[ELT_TRI(row + 2, j)] = (int32_t)(uint32_t)hi;
    }
    if (row + 3 < k) {
        a[ELT_TRI(row + 3, j)] = (int32_t)(uint32_t)(hi >> 32);
    }
}

/* elt_chol_cols_fin, fast form, four rows per step: num = VQSUB(C, sum) (sat32 of the exact
 * difference of two int32), then the quotient rshift_round(num r, e + 3) as
 * VQRDMULH(num 2^(28-e), r) = rshift_round(num 2^(28-e) r, 31) (ARM DDI 0406C A8.8.374; r <= 2^30
 * never saturates it, and |result| < 2^30 needs no sat32), num 2^(28-e) by VQSHL by the column's
 * ash (A8.8.372): exact, or saturating and setting QC (elt_chol_kmax then takes the int64 form;
 * with every |A_ij| < 2^26 it stays below 2^28, as num ~ A_ij A_jj / 2^26 and A_jj < 2^e); for
 * e > 28 ash is 127, which saturates every nonzero num (a zero num has the quotient 0). Stored
 * into A and, scaled by VQSHL #5 (32 A_ij, saturating: QC is set when |A_ij| >= 2^26), into
 * at32[j][i ..]; a last step with at most two rows (the rest padding) in d-registers. */
static inline __attribute__((always_inline)) void
elt_chol_fast_fin(int32_t *atj, const int32_t *c, int32_t *a, int32_t i, int32_t j, const int32_t k,
                  int32_t nq, const int32x4_t acc[2], int32x4_t rq, int32x4_t ash)
{
    int32_t p;
    ELT_UNROLL_K
    for (p = 0; p < nq; p++) {
        const int32_t row = i + 4 * p;
        const int32x4_t cv = elt_chol_ld_c4(c, row, j, k);
        if (row + 2 >= k) { /* at most two rows: the pair in d-registers */
            int32x2_t q =
                j == 0 ? vget_low_s32(cv) : vqsub_s32(vget_low_s32(cv), vget_low_s32(acc[p]));
            q = vqrdmulh_s32(vqshl_s32(q, vget_low_s32(ash)), vget_low_s32(rq));
            elt_vst1_pi(&atj, vqshl_n_s32(q, 5));
            if (row > j) { /* row j is the diagonal's lane (elt_chol_fast_col) */
                a[ELT_TRI(row, j)] = vget_lane_s32(q, 0);
            }
            if (row + 1 < k) {
                a[ELT_TRI(row + 1, j)] = vget_lane_s32(q, 1);
            }
        } else {
            int32x4_t q = j == 0 ? cv : vqsubq_s32(cv, acc[p]); /* column 0 has no sum */
            q = vqrdmulhq_s32(vqshlq_s32(q, ash), rq);
            elt_vst1q_pi(&atj, vqshlq_n_s32(q, 5));
            elt_chol_st_a4(a, q, row, j, k);
        }
    }
}

/* elt_chol_cols_group, fast form, the sums: valid while every A_il of the earlier columns has
 * |A_il| < 2^26 (elt_chol_kmax checks QC): round(A_il A_jl / 2^26) = VQRDMULH(32 A_il, A_jl)
 * = (2 32 A_il A_jl + 2^31) >> 32 (ARM DDI 0406C A8.8.374; never saturates, as A_jl is in range
 * too), four rows per instruction, summed by VADD.I32 (15 terms of magnitude <= 2^26 + 1: no
 * wrap); nq quads of rows i .. i + 4 nq - 1 */
static inline __attribute__((always_inline)) int32_t
elt_chol_fast_sums(int32_t (*at)[ELT_K_MAX + 4], const int32x2_t ajv[], int32_t i, int32_t j,
                   const int32_t k, int32x4_t acc[2])
{
    const int32_t nq = k - i > 4 ? 2 : 1;
    const int32_t stride = (int32_t)sizeof at[0];
    const int32_t *tp = &at[0][i]; /* at32[l][i], l = 0, 1, ..: one row further each */
    int32x4_t v[2];
    int32_t l;
    int32_t p;
    acc[0] = vdupq_n_s32(0);
    acc[1] = acc[0];
#if ELT_K_MAX <= 16
#pragma GCC unroll 16
#endif
    for (l = 0; l < j; l++) {
        elt_chol_ld_atq(&tp, stride, nq, v);
        for (p = 0; p < nq; p++) {
            const int32x4_t t = (l & 1) ? vqrdmulhq_lane_s32(v[p], ajv[l >> 1], 1)
                                        : vqrdmulhq_lane_s32(v[p], ajv[l >> 1], 0);
            acc[p] = l == 0 ? t : vaddq_s32(acc[p], t);
        }
    }
    return nq;
}

/* elt_chol_cols_group, fast form: elt_chol_fast_sums, then elt_chol_fast_fin */
static inline __attribute__((always_inline)) void
elt_chol_fast_group(int32_t (*at)[ELT_K_MAX + 4], const int32x2_t ajv[], const int32_t *c,
                    int32_t *a, int32_t i, int32_t j, const int32_t k, int32x4_t rq, int32x4_t ash)
{
    int32x4_t acc[2];
    const int32_t nq = elt_chol_fast_sums(at, ajv, i, j, k, acc);
    elt_chol_fast_fin(&at[j][i], c, a, i, j, k, nq, acc, rq, ash);
}

/* elt_chol_fast_fin's shift 28 - e, 127 for e > 28 */
static inline __attribute__((always_inline)) int32x4_t elt_chol_ash(int e)
{
    return vdupq_n_s32((int32_t)((uint32_t)(28 - e) & 127u));
}

/* Column j of the fast form with the pivot's sum in a lane: the first group of rows starts at the
 * diagonal row j, whose lane sums round(A_jl A_jl / 2^26) = VQRDMULH(32 A_jl, A_jl) like every
 * other row (at32[l][j] = 32 A_jl, l < j), so the pivot C_jj - sum needs no squares of its own;
 * that lane's sum is then replaced by C_jj (num 0, quotient 0, stored only into at32[j][j], which
 * no sum reads). Used where the rows j .. k - 1 take no more quads than j + 1 .. k - 1. */
static inline __attribute__((always_inline)) void
elt_chol_fast_col(int32_t (*at)[ELT_K_MAX + 4], const int32x2_t ajv[], const int32_t *c, int32_t *a,
                  int32_t j, const int32_t k, int32_t *nfix)
{
    const int32_t cjj = c[ELT_TRI(j, j)];
    int32x4_t acc[2];
    int32x4_t rq;
    int32x4_t ash;
    int32_t piv;
    int32_t nq;
    int32_t i;
    int32_t r;
    int e;
    nq = elt_chol_fast_sums(at, ajv, j, j, k, acc);
    /* QSUB (ARM DDI 0406C A8.8.134): sat32(C_jj - sum) is below ELT_PIVOT_EPS exactly when the
     * difference is (the sum is >= 0, so it never exceeds C_jj) and equal to it otherwise */
    __asm__("qsub %0, %1, %2" : "=r"(piv) : "r"(cjj), "r"(vgetq_lane_s32(acc[0], 0)));
    if (__builtin_expect(piv < ELT_PIVOT_EPS, 0)) { /* elt_chol_diag in 32 bits */
        piv = ELT_PIVOT_EPS;
        (*nfix)++;
    }
    a[ELT_TRI(j, j)] = elt_chol_pivot((uint32_t)piv, &r, &e);
    acc[0] = vsetq_lane_s32(cjj, acc[0], 0);
    rq = vdupq_n_s32(r);
    ash = elt_chol_ash(e);
    elt_chol_fast_fin(&at[j][j], c, a, j, j, k, nq, acc, rq, ash);
#if ELT_K_MAX <= 16
#pragma GCC unroll 2
#endif
    for (i = j + 8; i < k; i += 8) {
        elt_chol_fast_group(at, ajv, c, a, i, j, k, rq, ash);
    }
}

/* elt_chol_cols: the padding at[l][k .. k + 3] of the rows l < k - 1 that the sums read (row
 * k - 1 never is), zeroed by one VST1 per row, the pointer advanced by the row stride ([Rn], Rm,
 * ARM DDI 0406C A8.8.404) */
static inline __attribute__((always_inline)) void elt_chol_zero_pad(int32_t *pad, const int32_t k)
{
    const int32x4_t zero = vdupq_n_s32(0);
    const int32_t stride = (int32_t)sizeof(int32_t[ELT_K_MAX + 4]);
    int32_t l;
#if ELT_K_MAX <= 16
#pragma GCC unroll 16
#endif
    for (l = 0; l + 1 < k; l++) {
        int32_t *q = pad;
        __asm__("vst1.32 {%q2}, [%0], %3"
                : "+r"(q), "=m"(*(int32_t(*)[4])pad)
                : "w"(zero), "r"(stride));
        pad = q;
    }
}

/* elt_chol_k's arithmetic column by column with the rows in NEON lanes: column j's numerators
 * C_ij - sum_l round(A_il A_jl / 2^26) for rows i > j up to eight at a time (elt_chol_cols_group:
 * pairs of rows, the last pair of an odd count padded), each product by VMULL by the scalar A_jl
 * and VRSRA #26 into the row's int64 lane (no horizontal sums), the factor's columns read from a
 * transposed copy at[l][i] = A_il (contiguous over rows); the quotients by VQMOVN (sat32), VMULL
 * by r, VRSHL by -(e + 3), VQMOVN. Lanes past the last row compute on the zeroed padding and are
 * never stored into A. */
static inline __attribute__((always_inline)) int32_t elt_chol_cols(const int32_t *c,
                                                                   const int32_t k, int32_t *a,
                                                                   int fast)
{
    /* at least 2 rows: for ELT_K_MAX = 1 the pair loop is dead code that -Warray-bounds reads */
    int32_t at[ELT_K_MAX > 1 ? ELT_K_MAX : 2][ELT_K_MAX + 4];
    int32_t nfix = 0;
    int32_t i;
    int32_t j;
    if (k < 1 || k > ELT_K_MAX) {
        __builtin_unreachable(); /* the state is sized by ELT_K_MAX; tells GCC the unrolled range */
    }
    elt_chol_zero_pad(&at[0][k], k);
#if ELT_K_MAX <= 16 /* fully unrolled: every bound and offset a constant */
#pragma GCC unroll 16
#endif
    for (j = 0; j < k; j++) {
        int32x2_t ajv[(ELT_K_MAX + 1) / 2];
        int64x2_t esh;
        int32x4_t ash;
        int32x2_t rv;
        int32_t r;
        int e;
        elt_chol_ld_row(&a[ELT_TRI(j, 0)], j, ajv);
        if (fast && j > 0 && j + 1 < k && (k - 1 - j) % 4 != 0) {
            elt_chol_fast_col(at, ajv, c, a, j, k, &nfix);
            continue;
        }
        a[ELT_TRI(j, j)] =
            elt_chol_diag(elt_chol_cols_piv(ajv, j, c[ELT_TRI(j, j)]), &nfix, &r, &e);
        if (j + 1 == k) {
            break;
        }
        esh = vreinterpretq_s64_s32(vdupq_n_s32(-(e + 3)));
        rv = vdup_n_s32(r);
        ash = elt_chol_ash(e);
#if ELT_K_MAX <= 16
#pragma GCC unroll 2
#endif
        for (i = j + 1; i < k; i += 8) {
            if (fast) {
                elt_chol_fast_group(at, ajv, c, a, i, j, k, vdupq_n_s32(r), ash);
            } else {
                elt_chol_cols_group(at, ajv, c, a, i, j, k, rv, esh);
            }
        }
    }
    return nfix;
}

/* FPSCR.QC, the cumulative saturation flag that every saturating Advanced SIMD instruction sets
 * (bit 27; ARM DDI 0406C, the FPSCR description and each VQ* instruction's pseudocode), cleared
 * and read by VMSR / VMRS; "memory" keeps the kernel's loads after the
 * clear and its stores, and so every saturating instruction that feeds them, before the read.
 * An interrupt leaves it as it was: the IRQ entry saves and restores FPSCR
 * (firmware/board/zynq7000/startup.S). */
static inline __attribute__((always_inline)) void elt_qc_clear(void)
{
    uint32_t f;
    __asm__ volatile("vmrs %0, fpscr" : "=r"(f)::"memory");
    f &= ~(1u << 27);
    __asm__ volatile("vmsr fpscr, %0" ::"r"(f) : "memory");
}

static inline __attribute__((always_inline)) uint32_t elt_qc_read(void)
{
    uint32_t f;
    __asm__ volatile("vmrs %0, fpscr" : "=r"(f)::"memory");
    return (f >> 27) & 1u;
}

/* The factor of a k = ELT_K_MAX covariance: the column form, rows in lanes; first the fast form
 * (int32 sums by VQRDMULH, exact while every off-diagonal |A_il| < 2^26), and the int64 form
 * from the start when QC shows an entry out of that range (VQSHL #5 saturated; the fast form's
 * other saturations, VQSUB and the quotient's VQMOVN, also only happen with |A_ij| >= 2^28). */
static inline __attribute__((always_inline)) int32_t elt_chol_kmax(const int32_t *c, int32_t *a)
{
    int32_t nfix;
    elt_qc_clear();
    nfix = elt_chol_cols(c, ELT_K_MAX, a, 1);
    if (elt_qc_read()) {
        nfix = elt_chol_cols(c, ELT_K_MAX, a, 0);
    }
    return nfix;
}

/* elt_xoshiro_out on the four lanes' words s1: VMUL #5, VSHL #7 + VSRI #25 (rotate), VMUL #9 */
static inline uint32x4_t elt_xoshiro_out4(uint32x4_t s1)
{
    const uint32x4_t a = vmulq_n_u32(s1, 5u);
    return vmulq_n_u32(vsriq_n_u32(vshlq_n_u32(a, 7), a, 25), 9u);
}

/* elt_gauss_from_u32 on four draws: VSLI builds the odd v, VCLZ the octave, VSHL the mantissa;
 * the knot pair's address lut + 4 (33 o + s) by VMLA and VSRA of the mantissa's top six bits
 * (32 + s, the 32 taken off the base); the pair (T[s], T[s+1]) by elt_gather2; the
 * interpolation round(dt f / 2^16) by VQRDMULH with f 2^15 (= (2 dt f 2^15 + 2^31) >> 32, the
 * same rounding; never saturates, as f 2^15 < 2^31); sign by XOR / subtract. */
static inline __attribute__((always_inline)) int32x4_t elt_gauss4(uint32x4_t u, uint32x4_t base)
{
    const uint32x4_t v = vsliq_n_u32(vdupq_n_u32(1u), u, 1); /* (u << 1) | 1 */
    const uint32x4_t oct = vclzq_u32(v);
    const uint32x4_t mn = vshlq_u32(v, vreinterpretq_s32_u32(oct));
    const uint32x4_t addr =
        vsraq_n_u32(vmlaq_u32(base, oct, vdupq_n_u32(4u * ELT_GAUSS_KNOTS)),
                    vandq_u32(mn, vdupq_n_u32(0xFC000000u)), 24); /* (mn >> 26) 4 */
    const int32x4_t f15 =
        vreinterpretq_s32_u32(vandq_u32(vshlq_n_u32(mn, 5), vdupq_n_u32(0x7FFF8000u)));
    const int32x4_t neg = vshrq_n_s32(vreinterpretq_s32_u32(u), 31); /* 0 or -1 */
    const int32x4x2_t g = elt_gather2(addr);
    const int32x4_t mag = vaddq_s32(g.val[0], vqrdmulhq_s32(vsubq_s32(g.val[1], g.val[0]), f15));
    return vsubq_s32(veorq_s32(mag, neg), neg); /* -mag where the sign bit is set */
}

/* elt_gauss4's base: the table's address less 4 32 in every lane */
static inline __attribute__((always_inline)) uint32x4_t elt_gauss_base(const int32_t *lut)
{
    return vdupq_n_u32((uint32_t)(uintptr_t)lut - 4u * 32u);
}

/* elt_sample_group: zr = rshift_round(z, 5) of the ng candidates i.. (VRSHR #5 four at a time) */
static inline __attribute__((always_inline)) void elt_group_zr(const elt_cmaes_work_t *w, int32_t i,
                                                               int32_t k, const int ng,
                                                               int32_t (*zr)[ELT_K_MAX])
{
    int32_t a;
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
}

/* elt_sample_group: y = A z of the ng candidates from their zr, each row of A (packed,
 * contiguous) loaded once for all of them, times zr by VMLAL.S32 four products per candidate
 * and step, the lanes summed pairwise, VRSHR #22, VQMOVN. */
static inline __attribute__((always_inline)) void
elt_group_y(elt_cmaes_work_t *w, int32_t i, int32_t k, const int ng, int32_t (*zr)[ELT_K_MAX])
{
    const int32_t *ar = w->A;
    int32_t a;
    int32_t l;
    int g;
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
}

/* elt_sample_group: x = m + sigma y of the ng candidates two dimensions per step (VMULL by the
 * mantissa, VRSHL, VQMOVN). */
static inline __attribute__((always_inline)) void elt_group_x(const elt_cmaes_state_t *s,
                                                              elt_cmaes_work_t *w, int32_t i,
                                                              int32_t k, int32_t mant, int shift,
                                                              const int ng)
{
    const int32x2_t md = vdup_n_s32(mant);
    const int64x2_t shv = vreinterpretq_s64_s32(vdupq_n_s32(-shift));
    int32_t a;
    int g;
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

/* y = A z and x = m + sigma y of ng = 2 or 4 candidates i.. (elt_cmaes_sample_s32's
 * arithmetic). */
static inline __attribute__((always_inline)) void elt_sample_group(const elt_cmaes_state_t *s,
                                                                   elt_cmaes_work_t *w, int32_t i,
                                                                   int32_t k, int32_t mant,
                                                                   int shift, const int ng)
{
    int32_t zr[4][ELT_K_MAX];
    elt_group_zr(w, i, k, ng, zr);
    elt_group_y(w, i, k, ng, zr);
    elt_group_x(s, w, i, k, mant, shift, ng);
}

/* x = sat32(m + rshift_round(y mant, shift)) (docs/cmaes.md §6 step 3) in one of three forms,
 * chosen per call from shift (elt_sample_xform): mode 0, any shift: VMULL by mant, VRSHL by
 * -shift, VADDW m, VQMOVN; mode 1, mul = mant 2^(31 - shift) < 2^31: VQRDMULH by mul
 * ((2 y mul + 2^31) >> 32 = (y mant + 2^(shift-1)) >> shift, never saturating as mul > 0) and
 * VQADD m (= sat32 of the exact sum, the product being below 2^31 in magnitude); mode 2,
 * shift >= 32: VQDMULH by mant (floor(y mant / 2^31)), VRSHL by -(shift - 31), VQADD m, as
 * floor((v + 2^(s-1)) / 2^s) = floor((floor(v / 2^31) + 2^(s-32)) / 2^(s-31)) (ARM DDI 0406C
 * VQDMULH, VQRDMULH, VRSHL pseudocode). */
typedef struct {
    int32x2_t mul;  /* mant (modes 0, 2) or mant 2^(31 - shift) (mode 1) */
    int64x2_t sh64; /* -shift (mode 0) */
    int32x4_t sh32; /* -(shift - 31) (mode 2) */
} elt_xform_t;

static inline int elt_sample_xform(int32_t mant, int shift, elt_xform_t *xf)
{
    int mode = 0;
    int32_t mul = mant;
    if (shift >= 32) {
        mode = 2;
    } else if (shift <= 31 && ((int64_t)mant << (31 - shift)) < ((int64_t)1 << 31)) {
        mode = 1;
        mul = (int32_t)((int64_t)mant << (31 - shift));
    }
    xf->mul = vdup_n_s32(mul);
    xf->sh64 = vreinterpretq_s64_s32(vdupq_n_s32(-shift));
    xf->sh32 = vdupq_n_s32(-(shift - 31));
    return mode;
}

/* two entries of x from y and m */
static inline __attribute__((always_inline)) int32x2_t elt_x2(int32x2_t y, int32x2_t m,
                                                              const elt_xform_t *xf, const int mode)
{
    if (mode == 1) {
        return vqadd_s32(m, vqrdmulh_s32(y, xf->mul));
    }
    if (mode == 2) {
        return vqadd_s32(m, vrshl_s32(vqdmulh_s32(y, xf->mul), vget_low_s32(xf->sh32)));
    }
    return vqmovn_s64(vaddw_s32(vrshlq_s64(vmull_s32(y, xf->mul), xf->sh64), m));
}

/* four entries of x from y and m */
static inline __attribute__((always_inline)) int32x4_t elt_x4(int32x4_t y, int32x4_t m,
                                                              const elt_xform_t *xf, const int mode)
{
    if (mode == 1) {
        return vqaddq_s32(m, vqrdmulhq_lane_s32(y, xf->mul, 0));
    }
    if (mode == 2) {
        return vqaddq_s32(m, vrshlq_s32(vqdmulhq_lane_s32(y, xf->mul, 0), xf->sh32));
    }
    return vcombine_s32(elt_x2(vget_low_s32(y), vget_low_s32(m), xf, 0),
                        elt_x2(vget_high_s32(y), vget_high_s32(m), xf, 0));
}

/* (sat32(rshift_round(lo, 22)), sat32(rshift_round(hi, 22))) as one quad: two VQRSHRN #22 into
 * the halves of one q register (%e, %f: its low and high d), so that no VMOV joins them */
static inline __attribute__((always_inline)) int32x4_t elt_vqrshrn2_y(int64x2_t lo, int64x2_t hi)
{
    int32x4_t r;
    __asm__("vqrshrn.s64 %e0, %q1, %3\n\tvqrshrn.s64 %f0, %q2, %3"
            : "=&w"(r)
            : "w"(lo), "w"(hi), "i"(ELT_C_FRAC + ELT_ZR_FRAC - ELT_X_FRAC));
    return r;
}

/* y = A z and x = m + sigma y of candidates i, i + 1 when k = ELT_K_MAX is a multiple of 4
 * and at most 16 (every loop unrolled): the two candidates' zr (VRSHR #5) interleaved by VZIP
 * into pairs (zr_i[l], zr_i+1[l]) that stay in NEON registers for all rows; row a of A (packed,
 * quad loads; the last quad may read into the next row, whose lanes are not used) then costs one
 * VMLAL.S32 by lane per entry into the row's (y_i, y_i+1) accumulator: no horizontal sums;
 * four rows' accumulators narrowed (VQRSHRN #22 = sat32(rshift_round(., 22))) into two quads
 * (y_i[a], y_i+1[a], y_i[a+1], y_i+1[a+1]), .., which VUZP turns into each candidate's
 * (y_a .. y_a+3); stored, and x = sat32(m + round(y mant / 2^shift)) from them (elt_x4). */
static inline __attribute__((always_inline)) void
elt_sample_two(const elt_cmaes_state_t *s, elt_cmaes_work_t *w, int32_t i, const int32_t k,
               const elt_xform_t *xf, const int mode)
{
    int32x2_t zp[ELT_K_MAX + 4]; /* zp[l] = (zr_i[l], zr_i+1[l]) */
    int64x2_t acc[4];
    int32x4_t aq = vdupq_n_s32(0); /* the quad of A that holds the current entry */
    const int32_t *ar = w->A;
    const int32_t *mp = s->m;
    int32_t *y0 = w->y[i];
    int32_t *y1 = w->y[i + 1];
    int32_t *x0 = w->x[i];
    int32_t *x1 = w->x[i + 1];
    int32_t a;
    int32_t l;
    const int32_t *z0 = w->z[i];
    const int32_t *z1 = w->z[i + 1];
#pragma GCC unroll 4
    for (l = 0; l < k; l += 4) {
        const int32x4x2_t zz = vzipq_s32(vrshrq_n_s32(elt_vld1q_pi(&z0), ELT_Z_FRAC - ELT_ZR_FRAC),
                                         vrshrq_n_s32(elt_vld1q_pi(&z1), ELT_Z_FRAC - ELT_ZR_FRAC));
        zp[l] = vget_low_s32(zz.val[0]);
        zp[l + 1] = vget_high_s32(zz.val[0]);
        zp[l + 2] = vget_low_s32(zz.val[1]);
        zp[l + 3] = vget_high_s32(zz.val[1]);
    }
    /* A's packed words in order, one quad load each: entry g = TRI(a, l) is lane g % 4 of quad
     * g / 4; k (k + 1) / 2 is 0 or 2 modulo 4 for k a multiple of 4, a last pair by one d load */
#pragma GCC unroll 16
    for (a = 0; a < k; a++) {
        int64x2_t sum = vdupq_n_s64(0); /* set by the first product */
#pragma GCC unroll 16
        for (l = 0; l <= a; l++) {
            const int32_t g = ELT_TRI(a, l);
            int32x2_t half;
            if (g % 4 == 0 && g + 4 <= ELT_TRI(k, 0)) {
                aq = elt_vld1q_pi(&ar);
            } else if (g % 4 == 0) {
                aq = vcombine_s32(vld1_s32(ar), vdup_n_s32(0));
            }
            half = g % 4 < 2 ? vget_low_s32(aq) : vget_high_s32(aq);
            if (l == 0) {
                sum = g % 2 == 0 ? vmull_lane_s32(zp[0], half, 0) : vmull_lane_s32(zp[0], half, 1);
            } else {
                sum = g % 2 == 0 ? vmlal_lane_s32(sum, zp[l], half, 0)
                                 : vmlal_lane_s32(sum, zp[l], half, 1);
            }
        }
        acc[a % 4] = sum;
        if (a % 4 == 3) { /* rows a - 3 .. a */
            const int32x4x2_t yy =
                vuzpq_s32(elt_vqrshrn2_y(acc[0], acc[1]), elt_vqrshrn2_y(acc[2], acc[3]));
            const int32x4_t mv = elt_vld1q_pi(&mp);
            elt_vst1q_pi(&y0, yy.val[0]);
            elt_vst1q_pi(&y1, yy.val[1]);
            elt_vst1q_pi(&x0, elt_x4(yy.val[0], mv, xf, mode));
            elt_vst1q_pi(&x1, elt_x4(yy.val[1], mv, xf, mode));
        }
    }
}

/* y = A z and x = m + sigma y of the lam candidates when A = I (the first iteration:
 * elt_adapt_factor, firmware/elt_adapt.c, copies C = I into A while g = 0) and k = ELT_K_MAX is
 * a multiple of 4 and at most 16: the sum A z of one term 2^26 zr rounded by 2^22 is zr 2^4
 * exactly (|zr| <= 2^26: no saturation), so y = VSHL #4 of VRSHR #5 of z; x by elt_x4, m in
 * registers. */
static inline __attribute__((always_inline)) void
elt_sample_ident(const elt_cmaes_state_t *s, elt_cmaes_work_t *w, const int32_t lam,
                 const int32_t k, const elt_xform_t *xf, const int mode)
{
    int32x4_t mv[4];
    const int32_t *zp = w->z[0];
    int32_t *yp = w->y[0];
    int32_t *xp = w->x[0];
    int32_t i;
    int h;
#pragma GCC unroll 4
    for (h = 0; h < k / 4; h++) {
        mv[h] = vld1q_s32(&s->m[4 * h]);
    }
    for (i = 0; i < lam; i++) {
#pragma GCC unroll 4
        for (h = 0; h < k / 4; h++) {
            const int32x4_t y =
                vshlq_n_s32(vrshrq_n_s32(elt_vld1q_pi(&zp), ELT_Z_FRAC - ELT_ZR_FRAC),
                            ELT_X_FRAC - ELT_ZR_FRAC);
            elt_vst1q_pi(&yp, y);
            elt_vst1q_pi(&xp, elt_x4(y, mv[h], xf, mode));
        }
    }
}

/* elt_sample_yx for k = ELT_K_MAX a multiple of 4 and at most 16 in one form of x: every
 * candidate where A = I (g = 0, elt_sample_ident), else pairs (elt_sample_two); returns the
 * first candidate left (odd lam) */
static inline __attribute__((always_inline)) int32_t
elt_sample_pairs(const elt_cmaes_state_t *s, elt_cmaes_work_t *w, const int32_t lam,
                 const int32_t k, const elt_xform_t *xf, const int mode)
{
    int32_t i = 0;
    if (s->g == 0) {
        elt_sample_ident(s, w, lam, k, xf, mode);
        return lam;
    }
    for (; i + 2 <= lam; i += 2) {
        elt_sample_two(s, w, i, k, xf, mode);
    }
    return i;
}

/* One step of the four xoshiro128** lanes (s[w]: word w of every lane; elt_xoshiro_step
 * lane-wise: VSHL, five VEOR, the rotation by VSHR #21 and VSLI #11) and the normals of the
 * four outputs (elt_xoshiro_out4, elt_gauss4). */
static inline __attribute__((always_inline)) int32x4_t elt_draw4(uint32x4_t *s, uint32x4_t base)
{
    const uint32x4_t s1 = s[1];
    const uint32x4_t t = vshlq_n_u32(s1, 9);
    s[2] = veorq_u32(s[2], s[0]);
    s[3] = veorq_u32(s[3], s1);
    s[1] = veorq_u32(s1, s[2]);
    s[0] = veorq_u32(s[0], s[3]);
    s[2] = veorq_u32(s[2], t);
    s[3] = vsliq_n_u32(vshrq_n_u32(s[3], 21), s[3], 11);
    return elt_gauss4(elt_xoshiro_out4(s1), base);
}

/* The lam x k normals of one iteration (elt_rng_gauss_block's block, docs/numeric.md §5.3):
 * the four lanes' state in four q-registers, one step of all of them per four draws, stored in
 * the block's order at z (lam k consecutive words: elt_sample_k moves the rows to their stride
 * where k < ELT_K_MAX); the last step's lanes past lam k are dropped. */
static inline __attribute__((always_inline)) void elt_sample_draw(int32_t *z, elt_rng_t *rng,
                                                                  const int32_t lam,
                                                                  const int32_t k,
                                                                  const int32_t *gauss_lut)
{
    const uint32x4_t base = elt_gauss_base(gauss_lut);
    const int32_t n = lam * k;
    uint32x4_t s[4];
    int32_t j;
    int w;
#pragma GCC unroll 4
    for (w = 0; w < 4; w++) {
        s[w] = vld1q_u32(rng->s[w]);
    }
    {
        /* the loop closes on the store's post-incremented pointer (no separate counter) */
        int32_t *zp = z;
        int32_t *const zend = z + (n & ~3);
        while (zp != zend) {
            elt_vst1q_pi(&zp, elt_draw4(s, base));
        }
        j = n & ~3;
    }
    if (j < n) {
        const int32x4_t g = elt_draw4(s, base);
        vst1q_lane_s32(z + j, g, 0);
        if (j + 1 < n) {
            vst1q_lane_s32(z + j + 1, g, 1);
        }
        if (j + 2 < n) {
            vst1q_lane_s32(z + j + 2, g, 2);
        }
    }
#pragma GCC unroll 4
    for (w = 0; w < 4; w++) {
        vst1q_u32(rng->s[w], s[w]);
    }
}

/* y = A z and x = m + sigma y of the lam candidates (elt_cmaes_sample_s32's arithmetic): k = 2
 * (the KWS setting) by one VMULL / VMLAL by lane per candidate, k = ELT_K_MAX a multiple of 4
 * two candidates at a time, otherwise in groups of four and two; the rest by the scalar tail. */
static inline __attribute__((always_inline)) void elt_sample_yx(const elt_cmaes_state_t *s,
                                                                elt_cmaes_work_t *w,
                                                                const int32_t lam, const int32_t k,
                                                                int32_t mant, int shift)
{
    int32_t i = 0;
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
        elt_xform_t xf;
        const int mode = elt_sample_xform(mant, shift, &xf);
        if (mode == 1) {
            i = elt_sample_pairs(s, w, lam, k, &xf, 1);
        } else if (mode == 2) {
            i = elt_sample_pairs(s, w, lam, k, &xf, 2);
        } else {
            i = elt_sample_pairs(s, w, lam, k, &xf, 0);
        }
    }
    for (; i + 4 <= lam; i += 4) {
        elt_sample_group(s, w, i, k, mant, shift, 4);
    }
    if (i + 2 <= lam) {
        elt_sample_group(s, w, i, k, mant, shift, 2);
        i += 2;
    }
    elt_sample_yx_from(s, w, i, lam, k, mant, shift);
}

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

/* One term of a 4 x 4 tile of C (rows a0.., columns b0..): the term's entries b0.. (bload) and
 * a0.. (aload, the same quad on a diagonal tile) as two quad loads, then one VMLAL (OP =
 * vmlal_lane_s32) or VMLSL per pair of columns and row, the row's entry as the lane. A diagonal
 * tile (b0 = a0) skips the pairs above the diagonal (rows 0 and 1, columns 2 and 3). */
#define ELT_TILE_TERM(OP, bload, aload)                                                            \
    do {                                                                                           \
        const int32x4_t bv = (bload);                                                              \
        const int32x4_t av = diag ? bv : (aload);                                                  \
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

/* A tile row's four entries (sat32(rshift_round(a, 28)), the same of b) as one int32x4: VQRSHRN
 * #28 into each half of the quad (ARM DDI 0406C A8.8.314) for one quad store; from
 * vcombine_s32 GCC copies the halves with VMOV */
static inline __attribute__((always_inline)) int32x4_t elt_cov_narrow2(int64x2_t a, int64x2_t b)
{
    int32x4_t q;
    __asm__("vqrshrn.s64 %e0, %q1, %3\n\tvqrshrn.s64 %f0, %q2, %3"
            : "=&w"(q)
            : "w"(a), "w"(b), "i"(2 * ELT_X_FRAC - ELT_C_FRAC));
    return q;
}

/* docs/cmaes.md §6 step 9 on a 4 x 4 tile of C (rows a0..a0+3, columns b0..b0+3, b0 <= a0;
 * row[r] points at entry (a0 + r, b0)): every entry's exact int64 sum in one of eight int64x2
 * accumulators (Q.54): decay C by VMULL and VRSHR #2, then the terms p~ and y~_t (rows of zt,
 * ELT_K_MAX apart; the first npos positive, the rest up to nt negative), one quad load of each
 * side per term shared by the tile's 16 (diagonal: 12) products; VQRSHRN #28 (sat32 of the
 * rounded shift) at the store. An off-diagonal tile's stores advance row[r] to the next tile of
 * the rows ([Rn]!); the diagonal tile stores only the entries on or below the diagonal. */
static inline __attribute__((always_inline)) void
elt_cov_tile(int32_t **row, const int32_t *pt, const int32_t *zt, int32_t npos, int32_t nt,
             int32_t decay, int32_t a0, int32_t b0, const int diag)
{
    const int32x2_t dv = vdup_n_s32(decay);
    int64x2_t acc[4][2];
    const int32_t *tb = zt + b0;
    const int32_t *ta = zt + a0;
    int32_t t;
    int r;
#pragma GCC unroll 4
    for (r = 0; r < 4; r++) {
        if (diag) {
            acc[r][0] = vrshrq_n_s64(vmull_lane_s32(vld1_s32(row[r]), dv, 0),
                                     ELT_RATE_FRAC + ELT_C_FRAC - 2 * ELT_X_FRAC);
            acc[r][1] = r < 2 ? acc[r][0]
                              : vrshrq_n_s64(vmull_lane_s32(vld1_s32(row[r] + 2), dv, 0),
                                             ELT_RATE_FRAC + ELT_C_FRAC - 2 * ELT_X_FRAC);
        } else {
            const int32x4_t cv = vld1q_s32(row[r]);
            acc[r][0] = vrshrq_n_s64(vmull_lane_s32(vget_low_s32(cv), dv, 0),
                                     ELT_RATE_FRAC + ELT_C_FRAC - 2 * ELT_X_FRAC);
            acc[r][1] = vrshrq_n_s64(vmull_lane_s32(vget_high_s32(cv), dv, 0),
                                     ELT_RATE_FRAC + ELT_C_FRAC - 2 * ELT_X_FRAC);
        }
    }
    ELT_TILE_TERM(vmlal_lane_s32, vld1q_s32(pt + b0), vld1q_s32(pt + a0));
    /* the terms' rows ELT_K_MAX words apart: each side by one post-incremented load */
#pragma GCC unroll 12
    for (t = 0; t < npos; t++) {
        ELT_TILE_TERM(vmlal_lane_s32, elt_vld1q_ps(&tb, ELT_K_MAX * 4),
                      elt_vld1q_ps(&ta, ELT_K_MAX * 4));
    }
#pragma GCC unroll 12
    for (; t < nt; t++) {
        ELT_TILE_TERM(vmlsl_lane_s32, elt_vld1q_ps(&tb, ELT_K_MAX * 4),
                      elt_vld1q_ps(&ta, ELT_K_MAX * 4));
    }
    if (diag) {
        vst1_lane_s32(row[0], vqrshrn_n_s64(acc[0][0], 2 * ELT_X_FRAC - ELT_C_FRAC), 0);
        vst1_s32(row[1], vqrshrn_n_s64(acc[1][0], 2 * ELT_X_FRAC - ELT_C_FRAC));
        vst1_s32(row[2], vqrshrn_n_s64(acc[2][0], 2 * ELT_X_FRAC - ELT_C_FRAC));
        vst1_lane_s32(row[2] + 2, vqrshrn_n_s64(acc[2][1], 2 * ELT_X_FRAC - ELT_C_FRAC), 0);
        vst1q_s32(row[3], elt_cov_narrow2(acc[3][0], acc[3][1]));
        return;
    }
#pragma GCC unroll 4
    for (r = 0; r < 4; r++) {
        elt_vst1q_pi(&row[r], elt_cov_narrow2(acc[r][0], acc[r][1]));
    }
}
#undef ELT_TILE_TERM

/* elt_cov_tile with the term counts of lam = ELT_LAM_MAX with active weights (mu = lam / 2
 * positive, lam in all) as constants where they are, so that the term loops unroll whole. */
static inline __attribute__((always_inline)) void
elt_cov_tile_terms(int32_t **row, const int32_t *pt, const int32_t *zt, int32_t npos, int32_t nt,
                   int32_t decay, int32_t a0, int32_t b0, const int diag)
{
    if (npos == ELT_LAM_MAX / 2 && nt == ELT_LAM_MAX) {
        elt_cov_tile(row, pt, zt, ELT_LAM_MAX / 2, ELT_LAM_MAX, decay, a0, b0, diag);
    } else {
        elt_cov_tile(row, pt, zt, npos, nt, decay, a0, b0, diag);
    }
}

/* elt_tell_mean for k = ELT_K_MAX a multiple of 4 and at most 16, one of x, z, y per call:
 * out = sum_{i<mu} round(w_i v_{order[i]} / 2^30) with the k sums in 2k/4 int64x2 accumulators
 * (registers), each parent's row by post-incremented quad loads, VMULL by lane w_i, VRSRA #30,
 * VQMOVN (sat32) at the end. */
static inline __attribute__((always_inline)) void elt_wsum_rows(const elt_cmaes_params_t *p,
                                                                const int32_t (*v)[ELT_K_MAX],
                                                                const uint8_t *order,
                                                                const int32_t k, int32_t *out)
{
    int64x2_t acc[ELT_K_MAX / 2 + 1]; /* + 1: sized for every ELT_K_MAX, used where k % 4 == 0 */
    int32_t i;
    int h;
#pragma GCC unroll 8
    for (h = 0; h < k / 2; h++) {
        acc[h] = vdupq_n_s64(0);
    }
    for (i = 0; i < p->mu; i++) {
        const int32_t *row = v[order[i]];
        const int32x2_t wv = vld1_dup_s32(&p->w[i]);
#pragma GCC unroll 4
        for (h = 0; h < k / 2; h += 2) {
            const int32x4_t xv = elt_vld1q_pi(&row);
            acc[h] = vrsraq_n_s64(acc[h], vmull_lane_s32(vget_low_s32(xv), wv, 0), ELT_RATE_FRAC);
            acc[h + 1] =
                vrsraq_n_s64(acc[h + 1], vmull_lane_s32(vget_high_s32(xv), wv, 0), ELT_RATE_FRAC);
        }
    }
#pragma GCC unroll 8
    for (h = 0; h < k / 2; h++) {
        vst1_s32(out + 2 * h, vqmovn_s64(acc[h]));
    }
}

/* 1 where the weights allow elt_wsum3_q31: every 0 <= w_i < 2^30, and the first mu - 1 sum
 * below 2^30, so that no sum of fewer than mu rounded products round(w_i v / 2^30) (each at
 * most 2 w_i in magnitude, |v| <= 2^31) leaves int32. The weights and the partial sums OR-ed
 * into one word tested once: while every earlier sum is below 2^30 the next (< 2^31) cannot
 * wrap, and the first at or past 2^30 sets a bit of 2^30 or above; with the weights below 2^30
 * the sums only grow, so the last bounds them all. mu a constant where the caller knows it. */
static inline __attribute__((always_inline)) int elt_wsum_q31_ok(const int32_t *w, const int32_t mu)
{
    uint32_t s = 0;
    uint32_t any = 0;
    int32_t i;
#pragma GCC unroll 8
    for (i = 0; i + 1 < mu; i++) {
        s += (uint32_t)w[i];
        any |= (uint32_t)w[i] | s;
    }
    return ((any | (uint32_t)w[mu - 1]) >> ELT_RATE_FRAC) == 0u;
}

/* elt_tell_mean for k = ELT_K_MAX a multiple of 4 and at most 16 where elt_wsum_q31_ok: each
 * product round(w_i v / 2^30) by VQRDMULH by 2 w_i ((2 v 2 w_i + 2^31) >> 32, the same rounding,
 * never saturating as 2 w_i > -2^31; ARM DDI 0406C, VQRDMULH), four per instruction, the sums in
 * int32 lanes by VQADD: the partial sums of fewer than mu terms stay inside int32 (exact), so
 * the last VQADD returns sat32 of the exact sum. x, z and y of a parent in one step (12 quad
 * accumulators). */
static inline __attribute__((always_inline)) void
elt_wsum3_q31(const elt_cmaes_params_t *p, const elt_cmaes_work_t *w, const uint8_t *order,
              const int32_t k, const int32_t mu, int32_t *mnew, int32_t *zw, int32_t *yw)
{
    /* z, y, x are consecutive [ELT_LAM_MAX][ELT_K_MAX] arrays (elt_cmaes_s32.h): one pointer
     * per parent walks z[r], y[r], x[r] and back to z[r]'s next quad by post-increments of two
     * registers (no register or ADD per stream) */
    const int32_t step = (int32_t)sizeof w->z;
    const int32_t back = 16 - 2 * (int32_t)sizeof w->z;
    int32x4_t ax[4];
    int32x4_t az[4];
    int32x4_t ay[4];
    int32_t i;
    int h;
    _Static_assert(offsetof(elt_cmaes_work_t, y) == offsetof(elt_cmaes_work_t, z) + sizeof w->z &&
                       offsetof(elt_cmaes_work_t, x) == offsetof(elt_cmaes_work_t, y) + sizeof w->y,
                   "elt_wsum3_q31 walks z, y, x as one block");
#pragma GCC unroll 4
    for (h = 0; h < 4; h++) { /* overwritten by the first parent (mu >= 1); -Os cannot see it */
        ax[h] = az[h] = ay[h] = vdupq_n_s32(0);
    }
#pragma GCC unroll 8
    for (i = 0; i < mu; i++) {
        const int32x4_t wv = vdupq_n_s32(2 * p->w[i]);
        const int32_t *pr = w->z[order[i]];
#pragma GCC unroll 4
        for (h = 0; h < k / 4; h++) {
            const int32x4_t tz = vqrdmulhq_s32(elt_vld1q_ps(&pr, step), wv);
            const int32x4_t ty = vqrdmulhq_s32(elt_vld1q_ps(&pr, step), wv);
            const int32x4_t tx = vqrdmulhq_s32(elt_vld1q_ps(&pr, back), wv);
            ax[h] = i == 0 ? tx : vqaddq_s32(ax[h], tx);
            az[h] = i == 0 ? tz : vqaddq_s32(az[h], tz);
            ay[h] = i == 0 ? ty : vqaddq_s32(ay[h], ty);
        }
    }
#pragma GCC unroll 4
    for (h = 0; h < k / 4; h++) {
        vst1q_s32(mnew + 4 * h, ax[h]);
        vst1q_s32(zw + 4 * h, az[h]);
        vst1q_s32(yw + 4 * h, ay[h]);
    }
}

/* 2. m' = sum_{i<mu} w_i x_{i:lam}; z_w, y_w alike: four dimensions per step, each parent's quad
 * by VMULL by lane w_i, VRSRA #30 (each product rounded, the sum exact in int64), VQMOVN
 * (sat32). */
static inline __attribute__((always_inline)) void
elt_tell_mean(const elt_cmaes_params_t *p, const elt_cmaes_work_t *w, const uint8_t *order,
              const int32_t k, int32_t *mnew, int32_t *zw, int32_t *yw)
{
    int32_t a = 0;
    int32_t i;
    if (k == ELT_K_MAX && ELT_K_MAX % 4 == 0 && ELT_K_MAX <= 16) {
        /* mu of lam = ELT_LAM_MAX: the check's and the parents' loops unrolled */
        if (ELT_LAM_MAX / 2 >= 1 && p->mu == ELT_LAM_MAX / 2 &&
            elt_wsum_q31_ok(p->w, ELT_LAM_MAX / 2)) {
            elt_wsum3_q31(p, w, order, k, ELT_LAM_MAX / 2, mnew, zw, yw);
            return;
        }
        if (p->mu >= 1 && elt_wsum_q31_ok(p->w, p->mu)) {
            elt_wsum3_q31(p, w, order, k, p->mu, mnew, zw, yw);
            return;
        }
    }
    if (k == ELT_K_MAX && ELT_K_MAX % 4 == 0 && ELT_K_MAX <= 16) {
        /* one array at a time, its k sums in registers */
        elt_wsum_rows(p, (const int32_t(*)[ELT_K_MAX])w->x, order, k, mnew);
        elt_wsum_rows(p, (const int32_t(*)[ELT_K_MAX])w->z, order, k, zw);
        elt_wsum_rows(p, (const int32_t(*)[ELT_K_MAX])w->y, order, k, yw);
        return;
    }
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
    /* the tail, none for k a multiple of 4: for k = ELT_K_MAX > 16 (not unrolled) GCC's loop
     * bounds cannot see it empty and -Waggressive-loop-optimizations fires at -O2 */
    if (k % 4 != 0) {
        elt_tell_mean_from(p, w, order, a, k, mnew, zw, yw);
    }
}

/* 3. p_s <- (1 - c_s) p_s + sqrt(c_s(2-c_s)mu_eff) z_w, two dimensions per step: VMULL by lane,
 * VRSHR #30 + VRSRA #29, VQMOVN; returns ||p_s||^2 (Q.46), the squares by VMULL, VRSRA #8. */
static inline __attribute__((always_inline)) int64_t elt_tell_ps(const elt_cmaes_params_t *p,
                                                                 elt_cmaes_state_t *s,
                                                                 const int32_t *zw, const int32_t k)
{
    int32_t a = 0;
    int64_t n2;
    const int32x2_t cs = vset_lane_s32(p->gain_s, vdup_n_s32(p->one_minus_cs), 1);
    int64x2_t n2v = vdupq_n_s64(0);
    if (k % 4 == 0 && p->one_minus_cs >= 0 && p->one_minus_cs < ((int32_t)1 << ELT_RATE_FRAC) &&
        p->gain_s >= 0 && p->gain_s < ((int32_t)1 << (ELT_GAIN_FRAC + 1))) {
        /* both products by VQRDMULH (by 2 (1 - c_s) and by 4 gain_s: the same roundings, each
         * below 2^31 in magnitude, never saturating), their sum by VQADD = sat32 of it */
        const int32x2_t c2 = vset_lane_s32(4 * p->gain_s, vdup_n_s32(2 * p->one_minus_cs), 1);
        ELT_UNROLL_K
        for (; a < k; a += 4) {
            const int32x4_t ps = vqaddq_s32(vqrdmulhq_lane_s32(vld1q_s32(&s->ps[a]), c2, 0),
                                            vqrdmulhq_lane_s32(vld1q_s32(&zw[a]), c2, 1));
            vst1q_s32(&s->ps[a], ps);
            n2v = vrsraq_n_s64(n2v, vmull_s32(vget_low_s32(ps), vget_low_s32(ps)),
                               2 * ELT_X_FRAC - ELT_NORM2_FRAC);
            n2v = vrsraq_n_s64(n2v, vmull_s32(vget_high_s32(ps), vget_high_s32(ps)),
                               2 * ELT_X_FRAC - ELT_NORM2_FRAC);
        }
    }
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
    n2 = elt_hsum_s64(n2v);
    return elt_tell_ps_from(p, s, zw, a, k, n2);
}

/* 5. p_c <- (1 - c_c) p_c + h_sigma sqrt(c_c(2-c_c)mu_eff) y_w, four dimensions per step for k
 * a multiple of 4, else two */
static inline __attribute__((always_inline)) void elt_tell_pc(const elt_cmaes_params_t *p,
                                                              elt_cmaes_state_t *s,
                                                              const int32_t *yw, int32_t hsig,
                                                              const int32_t k)
{
    int32_t a = 0;
    const int32x2_t cc = vset_lane_s32(p->gain_c, vdup_n_s32(p->one_minus_cc), 1);
    if (k % 4 == 0) { /* quads: the two halves' VQMOVN into one store */
        ELT_UNROLL_K
        for (; a < k; a += 4) {
            const int32x4_t pv = vld1q_s32(&s->pc[a]);
            int64x2_t lo = vrshrq_n_s64(vmull_lane_s32(vget_low_s32(pv), cc, 0), ELT_RATE_FRAC);
            int64x2_t hi = vrshrq_n_s64(vmull_lane_s32(vget_high_s32(pv), cc, 0), ELT_RATE_FRAC);
            if (hsig) {
                const int32x4_t yv = vld1q_s32(&yw[a]);
                lo = vrsraq_n_s64(lo, vmull_lane_s32(vget_low_s32(yv), cc, 1), ELT_GAIN_FRAC);
                hi = vrsraq_n_s64(hi, vmull_lane_s32(vget_high_s32(yv), cc, 1), ELT_GAIN_FRAC);
            }
            vst1q_s32(&s->pc[a], elt_qmovn2_s64(lo, hi));
        }
    }
    ELT_UNROLL_K
    for (; a + 2 <= k; a += 2) {
        int64x2_t v = vrshrq_n_s64(vmull_lane_s32(vld1_s32(&s->pc[a]), cc, 0), ELT_RATE_FRAC);
        if (hsig) {
            v = vrsraq_n_s64(v, vmull_lane_s32(vld1_s32(&yw[a]), cc, 1), ELT_GAIN_FRAC);
        }
        vst1_s32(&s->pc[a], vqmovn_s64(v));
    }
    elt_tell_pc_from(p, s, yw, hsig, a, k);
}

/* ||z||^2 (Q.50) of one candidate: four squares per two VMULL, VRSRA #6 (the first by VRSHR:
 * no zeroed accumulator), the two lanes by elt_hsum_s64 */
static inline __attribute__((always_inline)) int64_t elt_norm2_z(const int32_t *zr, const int32_t k)
{
    int64_t nz2 = 0;
    int32_t a = 0;
    if (k >= 2) {
        int64x2_t n2v = vdupq_n_s64(0);
        const int32_t *zp = zr;
        ELT_UNROLL_K
        for (; a + 4 <= k; a += 4) {
            const int32x4_t zv = elt_vld1q_pi(&zp);
            const int64x2_t lo = vmull_s32(vget_low_s32(zv), vget_low_s32(zv));
            n2v = a == 0 ? vrshrq_n_s64(lo, 2 * ELT_Z_FRAC - 50)
                         : vrsraq_n_s64(n2v, lo, 2 * ELT_Z_FRAC - 50);
            n2v = vrsraq_n_s64(n2v, vmull_s32(vget_high_s32(zv), vget_high_s32(zv)),
                               2 * ELT_Z_FRAC - 50);
        }
        for (; a + 2 <= k; a += 2) {
            const int32x2_t zv = vld1_s32(zr + a);
            n2v = vrsraq_n_s64(n2v, vmull_s32(zv, zv), 2 * ELT_Z_FRAC - 50);
        }
        nz2 = elt_hsum_s64(n2v);
    }
    return elt_norm2_z_from(zr, a, k, nz2);
}

/* y <- sat32(rshift_round(y rn, en + 4)) of one candidate: VMULL by lane, VRSHL, VQMOVN; the
 * quads read and written whole through post-incremented pointers */
static inline __attribute__((always_inline)) void elt_scale_y(int32_t *yr, const int32_t k,
                                                              int32_t rn, int en)
{
    int32_t a = 0;
    const int64x2_t esh = vreinterpretq_s64_s32(vdupq_n_s32(-(en + 4)));
    const int32x2_t rv = vdup_n_s32(rn);
    const int32_t *src = yr;
    int32_t *out = yr;
    ELT_UNROLL_K
    for (; a + 4 <= k; a += 4) { /* |y r| < 2^61 */
        const int32x4_t yv = elt_vld1q_pi(&src);
        elt_vst1q_pi(&out,
                     elt_qmovn2_s64(vrshlq_s64(vmull_lane_s32(vget_low_s32(yv), rv, 0), esh),
                                    vrshlq_s64(vmull_lane_s32(vget_high_s32(yv), rv, 0), esh)));
    }
    for (; a + 2 <= k; a += 2) {
        vst1_s32(yr + a, vqmovn_s64(vrshlq_s64(vmull_lane_s32(vld1_s32(yr + a), rv, 0), esh)));
    }
    elt_scale_y_from(yr, a, k, rn, en);
}

/* p~ = sqrt(c1) p_c, two dimensions per VMULL, VQRSHRN #30 = sat32(rshift_round(., 30)) */
static inline __attribute__((always_inline)) void
elt_tell_pt(const elt_cmaes_params_t *p, const elt_cmaes_state_t *s, int32_t *pt, const int32_t k)
{
    int32_t a = 0;
    const int32x2_t cv = vdup_n_s32(p->c1_sqrt);
    if (k % 4 == 0 && p->c1_sqrt >= 0 && p->c1_sqrt < ((int32_t)1 << ELT_RATE_FRAC)) {
        /* VQRDMULH by 2 sqrt(c1): the same rounding, no saturation (elt_scale_row) */
        ELT_UNROLL_K
        for (; a < k; a += 4) {
            vst1q_s32(&pt[a], vqrdmulhq_lane_s32(vld1q_s32(&s->pc[a]), vadd_s32(cv, cv), 0));
        }
    }
    ELT_UNROLL_K
    for (; a + 2 <= k; a += 2) { /* VQRSHRN #30 = sat32(rshift_round(., 30)) */
        vst1_s32(&pt[a], vqrshrn_n_s64(vmull_lane_s32(vld1_s32(&s->pc[a]), cv, 0), ELT_RATE_FRAC));
    }
    elt_tell_pt_from(p, s, pt, a, k);
}

/* elt_scale_row where sq is outside [0, 2^30): VMULL by lane, VQRSHRN #30 = sat32(rshift_round(.,
 * 30)), two entries at a time (out of line: no weight of a valid configuration takes it) */
static __attribute__((noinline)) void elt_scale_row_wide(int32_t *dst, const int32_t *yr,
                                                         int32_t sq, int32_t k)
{
    int32_t a = 0;
    const int32x2_t sv = vdup_n_s32(sq);
    for (; a + 2 <= k; a += 2) {
        vst1_s32(dst + a, vqrshrn_n_s64(vmull_lane_s32(vld1_s32(yr + a), sv, 0), ELT_RATE_FRAC));
    }
    elt_scale_row_from(dst, yr, sq, a, k);
}

/* y~ = sat32(rshift_round(sq y, 30)) of one term. For 0 <= sq < 2^30 (every sqrt|wc_i| of a
 * weight below 1) four entries per VQRDMULH by 2 sq: (2 y (2 sq) + 2^31) >> 32 = (y sq + 2^29)
 * >> 30, the same rounding, and |y sq / 2^30| < 2^31 needs no saturation (VQRDMULH saturates
 * only -2^31 times -2^31; ARM DDI 0406C, VQRDMULH). */
static inline __attribute__((always_inline)) void elt_scale_row(int32_t *dst, const int32_t *yr,
                                                                int32_t sq, const int32_t k)
{
    int32_t a = 0;
    const int32_t *src = yr;
    int32_t *out = dst;
    int32x4_t s2;
    if (sq < 0 || sq >= ((int32_t)1 << ELT_RATE_FRAC) || k % 4 != 0) {
        elt_scale_row_wide(dst, yr, sq, k);
        return;
    }
    s2 = vdupq_n_s32(2 * sq);
    ELT_UNROLL_K
    for (; a < k; a += 4) {
        elt_vst1q_pi(&out, vqrdmulhq_s32(elt_vld1q_pi(&src), s2));
    }
}

/* 6b. every entry of C from its terms (docs/cmaes.md §6 step 9): rows in fours by 4 x 4 tiles,
 * the rest by rows, 8, 4 or 2 entries of a row per elt_cov_blk, the last by the scalar tail */
static inline __attribute__((always_inline)) void elt_cov_update(int32_t *C, const int32_t *pt,
                                                                 elt_cmaes_work_t *w, int32_t npos,
                                                                 int32_t nt, int32_t decay,
                                                                 const int32_t k)
{
    int32_t a;
    int32_t b;
    ELT_UNROLL_K
    for (a = 0; a < (k & ~3); a += 4) { /* rows in fours by tiles, the rest by rows */
        /* the four rows' entries b.., advanced by each off-diagonal tile's stores */
        int32_t *row[4] = {&C[ELT_TRI(a, 0)], &C[ELT_TRI(a + 1, 0)], &C[ELT_TRI(a + 2, 0)],
                           &C[ELT_TRI(a + 3, 0)]};
        ELT_UNROLL_K
        for (b = 0; b < a; b += 4) {
            elt_cov_tile_terms(row, pt, &w->z[0][0], npos, nt, decay, a, b, 0);
        }
        elt_cov_tile_terms(row, pt, &w->z[0][0], npos, nt, decay, a, a, 1);
    }
    for (a = k & ~3; a < k; a++) {
        int32_t *crow = &C[ELT_TRI(a, 0)];
        b = 0;
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
        elt_cov_row_from(crow, pt, w, a, b, npos, nt, decay);
    }
}

#endif /* ELT_CMAES_S32_OPS_H */
