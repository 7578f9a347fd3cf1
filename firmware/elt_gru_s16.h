/*
 * Integer GRU encoder (torch.nn.GRU gate rows r, z, n), int16 activations and weights, int32
 * accumulators proven by the compiler (codegen/quantize_gru.py writes the step out). Python
 * twin: codegen/intref/gru.py (gru_int), integer for integer. Plain C: no NEON kernel yet.
 */
#ifndef ELT_GRU_S16_H
#define ELT_GRU_S16_H

#include <stdint.h>

#include "elt_lstm_s16.h" /* ELT_LSTM_POOL_*, elt_sigmoid_q15, elt_tanh2_q15 */
#include "elt_trace.h"

typedef struct {
    uint16_t input_size;        /* F */
    uint16_t hidden_size;       /* H */
    uint16_t num_frames;        /* T */
    uint8_t x_opshift;          /* xs = rshift_round(x, x_opshift) */
    uint8_t h_opshift;          /* hs = rshift_round(h, h_opshift) */
    uint8_t sig_rshift;         /* r, z rows: acc (A frac bits) -> Q4.11 */
    uint8_t tanh_rshift;        /* n rows: acc -> 2x in Q4.11 */
    uint8_t lut_shift;          /* σ table index shift */
    uint8_t pool;               /* ELT_LSTM_POOL_LAST / _MEAN / _MAX */
    uint8_t pool_shift;         /* mean: z = sat16(rshift_round(Σ h_t · pool_recip, shift)) */
    int32_t pool_recip;         /* mean: round(2^pool_shift / T) */
    const int16_t *w_ih;        /* [3H][F] rows r, z, n */
    const int16_t *w_hh;        /* [3H][H] */
    const int32_t *b_ih;        /* [3H] at A fraction bits */
    const int32_t *b_hh;        /* [3H] at A fraction bits */
    const int16_t *sigmoid_lut; /* σ over [0, 16], Q0.15 (the LSTM's table) */
} elt_gru_s16_params_t;

typedef struct {
    int16_t *h;   /* [H] hidden state, Q0.15 */
    int16_t *hs;  /* [H] rounded hidden state, the operand of W_hh */
    int32_t *ax;  /* [3H] W_ih xs + b_ih */
    int32_t *ah;  /* [3H] W_hh hs + b_hh */
    int32_t *acc; /* [H] mean pooling: Σ_t h_t (NULL otherwise) */
} elt_gru_s16_scratch_t;

/* Run the GRU over x [T][F] from h = 0; write z [H] (h_T, or the mean or maximum of h_t by
 * prm->pool) and, when seq is not NULL, every h_t to seq [T][H] (a lower stacked layer).
 * Trace points (ELT_TRACE builds): "lstm.h" after every step, "z" at the end. */
void elt_gru_s16_run(const elt_gru_s16_params_t *p, const int16_t *x,
                     const elt_gru_s16_scratch_t *s, int16_t *z, int16_t *seq);

#endif /* ELT_GRU_S16_H */
