/*
 * Integer LSTM encoder, int16 activations and weights, int32 cell state (docs/numeric.md §4).
 *
 * One kernel for every model: the compiler (codegen/quantize.py) decides every format and shift
 * and emits them with the weights as an elt_lstm_s16_params_t; the caller provides the scratch
 * (CMSIS-NN style: constant parameters apart from caller-provided buffers, no heap).
 * codegen/intref/lstm.py mirrors every function here, integer for integer.
 */
#ifndef ELT_LSTM_S16_H
#define ELT_LSTM_S16_H

#include <stdint.h>

#include "elt_trace.h"

/* Gate order of the weight rows: torch.nn.LSTM's i, f, g, o. */
#define ELT_LSTM_GATES 4u

typedef struct {
    uint16_t input_size;      /* F */
    uint16_t hidden_size;     /* H */
    uint16_t num_frames;      /* T */
    uint8_t acc64_ih;         /* 1: int64 accumulator for W_ih x (int32 not proven, §3) */
    uint8_t acc64_hh;         /* 1: int64 accumulator for W_hh h */
    uint8_t ih_lshift;        /* Σ W_ih x -> acc_frac */
    uint8_t hh_lshift;        /* Σ W_hh h -> acc_frac */
    uint8_t bias_lshift;      /* bias -> acc_frac */
    uint8_t sig_rshift;       /* acc_frac -> Q4.11 (gates i, f, o) */
    uint8_t tanh_rshift;      /* acc_frac -> 2x in Q4.11 (gate g: tanh(x) = 2σ(2x) - 1) */
    uint8_t cell_ig_lshift;   /* i·g (frac 30) -> frac 15 + c_frac, beside f·c */
    uint8_t cell_tanh_rshift; /* c (c_frac) -> 2c in Q4.11 */
    uint8_t lut_shift;        /* σ table: index = min(|x|, 32767) >> lut_shift */
    const int16_t *w_ih;      /* [4H][F] row-major */
    const int16_t *w_hh;      /* [4H][H] row-major */
    const int32_t *bias;      /* [4H] b_ih + b_hh */
    const int16_t *sigmoid_lut; /* [(32768 >> lut_shift) + 1], σ over [0, 16], Q0.15 */
} elt_lstm_s16_params_t;

typedef struct {
    int16_t *h;     /* [H] hidden state, Q0.15 */
    int32_t *c;     /* [H] cell state, int32 c format (|c_t| <= t, proven) */
    int16_t *gates; /* [4H] gate activations, Q0.15 */
} elt_lstm_s16_scratch_t;

/* σ(x) for x in Q4.11, Q0.15 result in [1, 32767]: table lookup with linear interpolation on
 * |x|, mirrored for x < 0 (σ(-x) = 1 - σ(x)). */
int16_t elt_sigmoid_q15(const int16_t *lut, uint8_t lut_shift, int16_t x);

/* tanh(x) = 2σ(2x) - 1, x2 = 2x in Q4.11, Q0.15 result in [-32766, 32766]. */
int16_t elt_tanh2_q15(const int16_t *lut, uint8_t lut_shift, int16_t x2);

/* Run the LSTM over x [T][F] (int16 features) from h = c = 0; write z = h_T [H] (Q0.15).
 * Trace points (ELT_TRACE builds): "lstm.c" and "lstm.h" after every step t, "z" at the end. */
void elt_lstm_s16_run(const elt_lstm_s16_params_t *p, const int16_t *x,
                      const elt_lstm_s16_scratch_t *s, int16_t *z);

#endif /* ELT_LSTM_S16_H */
