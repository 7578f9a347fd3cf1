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
 * codegen/target/sources.py): the operands, the gate rows, the cell and what a step hands on.
 */
#include "elt_gru_s16.h"

#include "fw_fixed.h"

/* The variant's operations: operands_x, gates, cell and step_out
 * (firmware/kernels/<variant>/elt_gru_s16_ops.h). */
#include "elt_gru_s16_ops.h"

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
