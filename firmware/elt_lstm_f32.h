/*
 * float32 LSTM encoder and linear head: the benchmark's float baseline (codegen bench;
 * docs/targets.md §1, "plain float32 C"). Not on the device's bit-exact path: the integer kernels
 * (elt_lstm_s16.c) are the product; this is the plain float C a port of the trained model would
 * start from, timed on the same QEMU for comparison.
 *
 * The same equations as torch.nn.LSTM and codegen/intref/lstm.py lstm_float, in float32:
 *   pre = W_ih x_t + b_ih + W_hh h + b_hh     gate rows i, f, g, o
 *   c = σ(f)·c + σ(i)·tanh(g);  h = σ(o)·tanh(c);  σ(v) = 1 / (1 + expf(-v))
 * expf and tanhf come from newlib's libm (the float variant links -lm -lc).
 */
#ifndef ELT_LSTM_F32_H
#define ELT_LSTM_F32_H

#include <stdint.h>

typedef struct {
    uint16_t input_size;  /* F */
    uint16_t hidden_size; /* H */
    uint16_t num_frames;  /* T */
    const float *w_ih;    /* [4H][F] row-major, gates i, f, g, o */
    const float *w_hh;    /* [4H][H] row-major */
    const float *b_ih;    /* [4H] */
    const float *b_hh;    /* [4H] */
} elt_lstm_f32_params_t;

typedef struct {
    float *h;     /* [H] hidden state */
    float *c;     /* [H] cell state */
    float *gates; /* [4H] gate pre-activations of one step */
} elt_lstm_f32_scratch_t;

/* Run the LSTM over x [T][F] from h = c = 0; write z = h_T [H]. */
void elt_lstm_f32_run(const elt_lstm_f32_params_t *p, const float *x,
                      const elt_lstm_f32_scratch_t *s, float *z);

/* y = W x + b for W [rows][cols] row-major (the linear head: logits = W z + b). */
void elt_dense_f32(const float *w, const float *b, uint32_t rows, uint32_t cols, const float *x,
                   float *y);

#endif /* ELT_LSTM_F32_H */
