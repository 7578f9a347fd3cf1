/*
 * Integer GRU encoder (torch.nn.GRU gate rows r, z, n), int16 activations and weights, int32
 * accumulators proven by the compiler (codegen/quantize/gru.py writes the step out). Python
 * twin: codegen/intref/gru.py (gru_int), integer for integer.
 *
 * The compiler (codegen/emit/c.py, `gru_layout`) emits the weights in the kernel's layout: gate
 * rows in blocks of ELT_LSTM_ROW_BLOCK, per block and column its 16 rows in order, columns
 * u = [hs (Hp); xs (F); Fp - F zero pad]. Builds with the neon_a32 kernel variant run the NEON
 * kernel, builds with the ref variant plain C over the same arrays (firmware/kernels/,
 * codegen/target/sources.py).
 */
#ifndef ELT_GRU_S16_H
#define ELT_GRU_S16_H

#include <stdint.h>

#include "elt_lstm_s16.h" /* ELT_LSTM_POOL_*, ELT_LSTM_ROW_BLOCK, σ */
#include "elt_trace.h"

typedef struct {
    uint16_t input_size;  /* F */
    uint16_t hidden_size; /* H */
    uint16_t num_frames;  /* T */
    uint16_t hidden_pad;  /* Hp: H rounded up to ELT_LSTM_HIDDEN_ALIGN */
    uint16_t input_pad;   /* Fp: F rounded up to ELT_LSTM_COL_GROUP */
    uint16_t n_rows;      /* Rn: Hp rounded up to ELT_LSTM_ROW_BLOCK */
    uint8_t x_opshift;    /* xs = rshift_round(x, x_opshift) */
    uint8_t h_opshift;    /* hs = rshift_round(h, h_opshift) */
    uint8_t sig_rshift;   /* r, z rows: acc (A frac bits) -> Q4.11 */
    uint8_t tanh_rshift;  /* n rows: acc -> 2x in Q4.11 */
    uint8_t lut_shift;    /* σ table index shift */
    uint8_t pool;         /* ELT_LSTM_POOL_LAST / _MEAN / _MAX */
    uint8_t pool_shift;   /* mean: z = sat16(rshift_round(Σ h_t · pool_recip, shift)) */
    int32_t pool_recip;   /* mean: round(2^pool_shift / T) */
    /* [R/16][Hp + Fp][16], R = 2 Hp + Rn: rows r (j), z (Hp + j), n (2 Hp + j); 16-byte
     * aligned */
    const int16_t *w;
    /* [R + Rn] at A fraction bits: r, z rows b_ih + b_hh, n rows b_hh, then n rows b_ih */
    const int32_t *bias;
    const int16_t *sigmoid_lut; /* σ over [0, 16], Q0.15 (the LSTM's table) */
    /* [256] the same table as pairs T[j] | (T[j+1] - T[j]) << 16 (NEON: one word gather per σ,
     * then the interpolation; docs/numeric.md §4) */
    const uint32_t *sigmoid_pairs;
} elt_gru_s16_params_t;

typedef struct {
    int16_t *h;   /* [Hp] hidden state, Q0.15 */
    int16_t *hs;  /* [Hp] rounded hidden state, the operand of W_hh */
    int16_t *xs;  /* [T Fp] rounded input operands, every frame padded with Fp - F zeros */
    int16_t *pre; /* [2 Hp] r, z pre-activations, Q4.11 */
    int32_t *ax;  /* [Rn] n rows: W_ih xs + b_ih */
    int32_t *ah;  /* [Rn] n rows: W_hh hs + b_hh */
    int32_t *acc; /* [H] mean pooling: Σ_t h_t */
} elt_gru_s16_scratch_t;

/* Run the GRU over x [T][F] from h = 0; write z [H] (h_T, or the mean or maximum of h_t by
 * prm->pool) and, when seq is not NULL, every h_t to seq [T][H] (a lower stacked layer).
 * Trace points (ELT_TRACE builds): "lstm.h" after every step, "z" at the end. */
void elt_gru_s16_run(const elt_gru_s16_params_t *p, const int16_t *x,
                     const elt_gru_s16_scratch_t *s, int16_t *z, int16_t *seq);

#endif /* ELT_GRU_S16_H */
