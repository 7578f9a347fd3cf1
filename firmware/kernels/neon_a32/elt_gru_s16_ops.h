/*
 * The GRU encoder's operations on the Cortex-A9 (firmware/elt_gru_s16.c includes this file after
 * its scalar helpers; firmware/kernels/ref/elt_gru_s16_ops.h is the plain C of the same
 * functions): Cortex-A9 NEON, integer only; QEMU -icount charges one unit per instruction, so the
 * kernel is written for the fewest instructions per multiply-accumulate (the LSTM kernel's scheme,
 * elt_lstm_s16.c):
 *   gates: per block of 16 rows, four int32x4 accumulators (q4-q7) start at the bias; every 4
 *     packed columns are one VLDMIA of 16 d-registers (64 weights) and 16 VMLAL.S16 by the lanes
 *     of one d-register of operands (hidden operands loaded 32 at a time, one VLDM of d0-d7).
 *     r, z blocks run all columns, then VRSHL/VQMOVN to Q4.11; n blocks store W_hh hs + b_hh,
 *     then restart at b_ih for the input columns.
 *   cell: σ is a word gather from sigmoid_pairs and the interpolation (elt_sigmoid8); r·ah and
 *     z·(h - n) are VQRDMULH.S32 by the Q0.15 factor shifted to bits 16..30: (2·a·(f·2^16) + 2^31)
 * >> 32 = (a·f + 2^14) >> 15 = rshift_round(a·f, 15), no saturation as f·2^16 < 2^31.
 */
#ifndef ELT_GRU_S16_OPS_H
#define ELT_GRU_S16_OPS_H

#include "elt_neon_a32.h"

/* xs = rshift_round(x, x_opshift) for all T frames, each frame padded to Fp with zeros: VRSHL by
 * -x_opshift four at a time, the rest (and the pad) one by one. */
static void operands_x(const elt_gru_s16_params_t *p, const int16_t *x, int16_t *xs)
{
    const uint32_t F = p->input_size;
    const uint32_t Fp = p->input_pad;
    uint32_t t, k;
    const int16x4_t neg = vdup_n_s16((int16_t) - (int16_t)p->x_opshift);
    for (t = 0; t < p->num_frames; ++t) {
        const int16_t *xt = x + t * F;
        int16_t *st = xs + t * Fp;
        k = 0;
        for (; k + 4u <= F; k += 4u) {
            vst1_s16(st + k, vrshl_s16(vld1_s16(xt + k), neg));
        }
        for (; k < F; ++k) {
            st[k] = (int16_t)fx_rshift_round32(xt[k], p->x_opshift);
        }
        for (; k < Fp; ++k) {
            st[k] = 0;
        }
    }
}

/* clang-format off */
/* Four VMLAL.S16 of one column of a 16-row block (weights in d-registers r0..r3) by the
 * operand scalar s, into the accumulators q4-q7 (rows 0-3, 4-7, 8-11, 12-15). */
#define ELT_GRU_VMLAL_COL(r0, r1, r2, r3, s)                                                       \
    "vmlal.s16 q4, " r0 ", " s "\n\t"                                                              \
    "vmlal.s16 q5, " r1 ", " s "\n\t"                                                              \
    "vmlal.s16 q6, " r2 ", " s "\n\t"                                                              \
    "vmlal.s16 q7, " r3 ", " s "\n\t"

/* Four columns held in d16-d31 (one VLDMIA of 64 weights) by the four lanes of operands s. */
#define ELT_GRU_GROUP(s)                                                                           \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_GRU_VMLAL_COL("d16", "d17", "d18", "d19", s "[0]")                                         \
    ELT_GRU_VMLAL_COL("d20", "d21", "d22", "d23", s "[1]")                                         \
    ELT_GRU_VMLAL_COL("d24", "d25", "d26", "d27", s "[2]")                                         \
    ELT_GRU_VMLAL_COL("d28", "d29", "d30", "d31", s "[3]")

/* The hidden columns from hs: Hp / 32 chunks of 32 (operands d0-d7, one VLDM), then
 * (Hp mod 32) / 8 steps of 8 (operands d0-d1). */
#define ELT_GRU_HIDDEN                                                                             \
    "mov       %[u], %[hs]\n\t"                                                                    \
    "movs      %[n], %[hp], lsr #5\n\t"                                                            \
    "beq       5f\n"                                                                               \
    "1:\n\t"                                                                                       \
    "vldmia    %[u]!, {d0-d7}\n\t"                                                                 \
    ELT_GRU_GROUP("d0")                                                                            \
    ELT_GRU_GROUP("d1")                                                                            \
    ELT_GRU_GROUP("d2")                                                                            \
    ELT_GRU_GROUP("d3")                                                                            \
    ELT_GRU_GROUP("d4")                                                                            \
    ELT_GRU_GROUP("d5")                                                                            \
    ELT_GRU_GROUP("d6")                                                                            \
    ELT_GRU_GROUP("d7")                                                                            \
    "subs      %[n], %[n], #1\n\t"                                                                 \
    "bne       1b\n"                                                                               \
    "5:\n\t"                                                                                       \
    "ands      %[n], %[hp], #24\n\t"                                                               \
    "beq       6f\n"                                                                               \
    "7:\n\t"                                                                                       \
    "vld1.16   {d0, d1}, [%[u]]!\n\t"                                                              \
    ELT_GRU_GROUP("d0")                                                                            \
    ELT_GRU_GROUP("d1")                                                                            \
    "subs      %[n], %[n], #8\n\t"                                                                 \
    "bne       7b\n"                                                                               \
    "6:\n\t"

/* The input columns: %[xg] groups of 4 operands (d0) from the frame. */
#define ELT_GRU_INPUT                                                                              \
    "mov       %[u], %[xt]\n\t"                                                                    \
    "mov       %[n], %[xg]\n"                                                                      \
    "2:\n\t"                                                                                       \
    "vld1.16   {d0}, [%[u]]!\n\t"                                                                  \
    ELT_GRU_GROUP("d0")                                                                            \
    "subs      %[n], %[n], #1\n\t"                                                                 \
    "bne       2b\n\t"

/* The r and z blocks: acc = b_ih + b_hh, all hidden then input columns, pre = sat16(VRSHL by
 * -(A - 11)). */
#define ELT_GRU_RZ                                                                                 \
    "0:\n\t"                                                                                       \
    "vldmia    %[bias]!, {d8-d15}\n\t"                                                             \
    ELT_GRU_HIDDEN                                                                                 \
    ELT_GRU_INPUT                                                                                  \
    "vdup.32   q0, %[ns]\n\t"                                                                      \
    "vrshl.s32 q4, q4, q0\n\t"                                                                     \
    "vrshl.s32 q5, q5, q0\n\t"                                                                     \
    "vrshl.s32 q6, q6, q0\n\t"                                                                     \
    "vrshl.s32 q7, q7, q0\n\t"                                                                     \
    "vqmovn.s32 d0, q4\n\t"                                                                        \
    "vqmovn.s32 d1, q5\n\t"                                                                        \
    "vqmovn.s32 d2, q6\n\t"                                                                        \
    "vqmovn.s32 d3, q7\n\t"                                                                        \
    "vst1.16   {d0-d3}, [%[pre]]!\n\t"                                                             \
    "subs      %[blocks], %[blocks], #1\n\t"                                                       \
    "bne       0b"

/* The n blocks: ah = b_hh + hidden columns, ax = b_ih + input columns, both stored int32. */
#define ELT_GRU_N                                                                                  \
    "0:\n\t"                                                                                       \
    "vldmia    %[bias]!, {d8-d15}\n\t"                                                             \
    ELT_GRU_HIDDEN                                                                                 \
    "vstmia    %[ah]!, {d8-d15}\n\t"                                                               \
    "vldmia    %[bx]!, {d8-d15}\n\t"                                                               \
    ELT_GRU_INPUT                                                                                  \
    "vstmia    %[ax]!, {d8-d15}\n\t"                                                               \
    "subs      %[blocks], %[blocks], #1\n\t"                                                       \
    "bne       0b"

#define ELT_GRU_CLOBBER                                                                            \
    "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15", \
        "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28", \
        "d29", "d30", "d31"
/* clang-format on */

/* Every gate row of one step from hs and the frame's operands xt (Fp values). */
static inline __attribute__((always_inline)) void
gates(const elt_gru_s16_params_t *p, const elt_gru_s16_scratch_t *s, const int16_t *xt)
{
    const uint32_t hp = p->hidden_pad;
    const uint32_t xg = (uint32_t)p->input_pad / ELT_LSTM_COL_GROUP;
    const int32_t ns = -(int32_t)p->sig_rshift;
    const int16_t *hs = s->hs;
    const int16_t *w = p->w;
    const int32_t *bias = p->bias;
    const int32_t *bx = p->bias + 2u * hp + p->n_rows;
    int16_t *pre = s->pre;
    int32_t *ax = s->ax;
    int32_t *ah = s->ah;
    uint32_t blocks = 2u * hp / ELT_LSTM_ROW_BLOCK;
    const int16_t *u;
    uint32_t n;
    __asm__ volatile(ELT_GRU_RZ
                     : [w] "+r"(w), [bias] "+r"(bias), [pre] "+r"(pre), [blocks] "+r"(blocks),
                       [u] "=&r"(u), [n] "=&r"(n)
                     : [hs] "r"(hs), [xt] "r"(xt), [hp] "r"(hp), [xg] "r"(xg), [ns] "r"(ns)
                     : ELT_GRU_CLOBBER);
    blocks = (uint32_t)p->n_rows / ELT_LSTM_ROW_BLOCK;
    __asm__ volatile(ELT_GRU_N
                     : [w] "+r"(w), [bias] "+r"(bias), [bx] "+r"(bx), [ah] "+r"(ah), [ax] "+r"(ax),
                       [blocks] "+r"(blocks), [u] "=&r"(u), [n] "=&r"(n)
                     : [hs] "r"(hs), [xt] "r"(xt), [hp] "r"(hp), [xg] "r"(xg)
                     : ELT_GRU_CLOBBER);
}

/* rshift_round(a·f, 15) for int32 a and Q0.15 f in [0, 32767] (VQRDMULH by f·2^16). */
static inline __attribute__((always_inline)) int32x4_t mul_q15(int32x4_t a, int16x4_t f)
{
    return vqrdmulhq_s32(a, vshll_n_s16(f, 16));
}

/* r, z, n and the new h, hs of every (padded) unit, 8 per iteration. */
static inline __attribute__((always_inline)) void cell(const elt_gru_s16_params_t *p,
                                                       const elt_gru_s16_scratch_t *s)
{
    const uint32_t hp = p->hidden_pad;
    const uint32x4_t mid = vdupq_n_u32((uint32_t)(uintptr_t)p->sigmoid_pairs);
    const int32x4_t nt = vdupq_n_s32(-(int32_t)p->tanh_rshift);
    const int16x8_t nh = vdupq_n_s16((int16_t) - (int16_t)p->h_opshift);
    const int16x8_t k8 = vdupq_n_s16(INT16_MIN);
    uint32_t j;
    for (j = 0; j < hp; j += 8u) {
        const int16x8_t r = elt_sigmoid8(vld1q_s16(s->pre + j), mid);
        const int16x8_t zg = elt_sigmoid8(vld1q_s16(s->pre + hp + j), mid);
        /* 2x = sat16(rshift_round(ax + rshift_round(r·ah, 15), A - 12)) */
        const int32x4_t p0 =
            vaddq_s32(vld1q_s32(s->ax + j), mul_q15(vld1q_s32(s->ah + j), vget_low_s16(r)));
        const int32x4_t p1 = vaddq_s32(vld1q_s32(s->ax + j + 4u),
                                       mul_q15(vld1q_s32(s->ah + j + 4u), vget_high_s16(r)));
        const int16x8_t x2 =
            vcombine_s16(vqmovn_s32(vrshlq_s32(p0, nt)), vqmovn_s32(vrshlq_s32(p1, nt)));
        /* n = 2σ(2x) - 32768: σ in [1, 32767], so 2σ wrapped to int16 with bit 15 flipped */
        const int16x8_t nn = veorq_s16(vshlq_n_s16(elt_sigmoid8(x2, mid), 1), k8);
        const int16x8_t h = vld1q_s16(s->h + j);
        /* h = sat16(n + rshift_round(z·(h - n), 15)), h - n in int32 */
        const int32x4_t d0 = vsubl_s16(vget_low_s16(h), vget_low_s16(nn));
        const int32x4_t d1 = vsubl_s16(vget_high_s16(h), vget_high_s16(nn));
        const int32x4_t h0 = vaddw_s16(mul_q15(d0, vget_low_s16(zg)), vget_low_s16(nn));
        const int32x4_t h1 = vaddw_s16(mul_q15(d1, vget_high_s16(zg)), vget_high_s16(nn));
        const int16x8_t hn = vcombine_s16(vqmovn_s32(h0), vqmovn_s32(h1));
        vst1q_s16(s->h + j, hn);
        vst1q_s16(s->hs + j, vrshlq_s16(hn, nh));
    }
}

/* What one step hands on: h_t to seq, and the running mean sum or maximum; eight units per
 * VLD1/VST1 or VMAX, the rest one by one. */
static void step_out(const elt_gru_s16_params_t *p, const elt_gru_s16_scratch_t *s, int16_t *z,
                     int16_t *seq_t)
{
    const uint32_t H = p->hidden_size;
    uint32_t j = 0;
    if (seq_t != 0) {
        for (; j + 8u <= H; j += 8u) {
            vst1q_s16(seq_t + j, vld1q_s16(s->h + j));
        }
        for (; j < H; ++j) {
            seq_t[j] = s->h[j];
        }
    }
    j = 0;
    if (p->pool == ELT_LSTM_POOL_MEAN) {
        for (; j < H; ++j) {
            s->acc[j] += s->h[j]; /* |Σ| <= T 2^15 < 2^31 */
        }
    } else if (p->pool == ELT_LSTM_POOL_MAX) {
        for (; j + 8u <= H; j += 8u) {
            vst1q_s16(z + j, vmaxq_s16(vld1q_s16(z + j), vld1q_s16(s->h + j)));
        }
        for (; j < H; ++j) {
            z[j] = s->h[j] > z[j] ? s->h[j] : z[j];
        }
    }
}

#endif /* ELT_GRU_S16_OPS_H */
