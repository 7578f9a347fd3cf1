/*
 * Integer GRU encoder (elt_gru_s16.h), one line of codegen/intref/gru.py per line here:
 *   ax = W_ih xs + b_ih, ah = W_hh hs + b_hh                  (int32 at A, proven)
 *   r, z = σ(sat16(rshift_round(ax + ah, A - 11)))
 *   n = 2σ(2x) - 1, 2x = sat16(rshift_round(ax_n + rshift_round(r ah_n, 15), A - 12))
 *   h = sat16(n + rshift_round(z (h - n), 15))
 * The compiler proves |ax| + |ah| + 2^(s - 1) <= 2^31 - 1 for every row and every int16 input
 * (codegen/quantize/gru.py), so every int32 sum is exact in any order, the r and z rows can sum
 * ax + ah in one accumulator, and ax_n + rshift_round(r ah_n, 15) fits int32 (|r| < 1).
 *
 * Two implementations of the same contract over the same packed arrays: Cortex-A9 NEON and plain
 * C, elt_gru_s16_ops.h of the build's kernel variant (firmware/kernels/<variant>/,
 * codegen/target/sources.py): the gate rows, the cell and the vector copies of one step.
 */
#include "elt_gru_s16.h"

#include "fw_fixed.h"

/* Frame operands from element k on: st[k] = rshift_round(xt[k], x_opshift) for k < F, then
 * zeros up to Fp (the pad columns meet zero weights; zeros keep the sums exact whatever they
 * meet). */
static inline __attribute__((always_inline)) void operands_frame_from(const elt_gru_s16_params_t *p,
                                                                      const int16_t *xt,
                                                                      int16_t *st, uint32_t k,
                                                                      uint32_t F, uint32_t Fp)
{
    for (; k < F; ++k) {
        st[k] = (int16_t)fx_rshift_round32(xt[k], p->x_opshift);
    }
    for (; k < Fp; ++k) {
        st[k] = 0;
    }
}

/* d[j] = h[j] for j in [j0, n). */
static inline __attribute__((always_inline)) void copy_h_from(int16_t *d, const int16_t *h,
                                                              uint32_t j, uint32_t n)
{
    for (; j < n; ++j) {
        d[j] = h[j];
    }
}

/* z[j] = max(z[j], h[j]) for j in [j0, n). */
static inline __attribute__((always_inline)) void max_h_from(int16_t *z, const int16_t *h,
                                                             uint32_t j, uint32_t n)
{
    for (; j < n; ++j) {
        z[j] = h[j] > z[j] ? h[j] : z[j];
    }
}

/* The variant's operations: operands_frame, gates, cell, copy_h and max_h
 * (firmware/kernels/<variant>/elt_gru_s16_ops.h). */
#include "elt_gru_s16_ops.h"

/* xs = rshift_round(x, x_opshift) for all T frames, each frame padded to Fp with zeros. */
static void operands_x(const elt_gru_s16_params_t *p, const int16_t *x, int16_t *xs)
{
    const uint32_t F = p->input_size;
    const uint32_t Fp = p->input_pad;
    uint32_t t;
    for (t = 0; t < p->num_frames; ++t) {
        operands_frame(p, x + t * F, xs + t * Fp, F, Fp);
    }
}

/* What one step hands on: h_t to seq, and the running mean sum or maximum. */
static void step_out(const elt_gru_s16_params_t *p, const elt_gru_s16_scratch_t *s, int16_t *z,
                     int16_t *seq_t)
{
    const uint32_t H = p->hidden_size;
    uint32_t j;
    if (seq_t != 0) {
        copy_h(seq_t, s->h, H);
    }
    if (p->pool == ELT_LSTM_POOL_MEAN) {
        for (j = 0; j < H; ++j) {
            s->acc[j] += s->h[j]; /* |Σ| <= T 2^15 < 2^31 */
        }
    } else if (p->pool == ELT_LSTM_POOL_MAX) {
        max_h(z, s->h, H);
    }
}

void elt_gru_s16_run(const elt_gru_s16_params_t *p, const int16_t *x,
                     const elt_gru_s16_scratch_t *s, int16_t *z, int16_t *seq)
{
    const uint32_t H = p->hidden_size;
    const uint32_t hp = p->hidden_pad;
    uint32_t t, j;
    const int pooled = seq == 0 && p->pool != ELT_LSTM_POOL_LAST;

    operands_x(p, x, s->xs);
    for (j = 0; j < hp; ++j) {
        s->h[j] = 0;
        s->hs[j] = 0;
    }
    for (j = 0; j < H; ++j) {
        if (p->pool == ELT_LSTM_POOL_MEAN) {
            s->acc[j] = 0;
        } else if (p->pool == ELT_LSTM_POOL_MAX) {
            z[j] = INT16_MIN;
        }
    }
    for (t = 0; t < p->num_frames; ++t) {
        /* every gate row from the old h, then the new h */
        gates(p, s, s->xs + t * p->input_pad);
        cell(p, s);
        ELT_TRACE_S16("lstm.h", t, s->h, H);
        if (seq != 0 || pooled) {
            step_out(p, s, z, seq != 0 ? seq + t * H : 0);
        }
    }
    for (j = 0; j < H; ++j) {
        if (p->pool == ELT_LSTM_POOL_MEAN) {
            z[j] =
                fx_sat16_64(fx_rshift_round64((int64_t)s->acc[j] * p->pool_recip, p->pool_shift));
        } else if (p->pool == ELT_LSTM_POOL_LAST) {
            z[j] = s->h[j];
        }
    }
    if (seq == 0) {
        ELT_TRACE_S16("z", 0u, z, H);
    }
}
