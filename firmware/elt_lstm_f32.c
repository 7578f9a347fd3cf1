/*
 * float32 LSTM encoder and linear head (benchmark baseline; see elt_lstm_f32.h). Plain loops,
 * no intrinsics: what the compiler makes of them at the build's -O2 (and, in the bench's
 * float32_fastmath variant, -ffast-math) is the measurement.
 */
#include "elt_lstm_f32.h"

#include <math.h>

static inline float sigmoid_f32(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

void elt_lstm_f32_run(const elt_lstm_f32_params_t *p, const float *x,
                      const elt_lstm_f32_scratch_t *s, float *z)
{
    /* Locals: with -fno-strict-aliasing every store to the scratch could otherwise alias the
     * parameter struct and force reloads (as in elt_lstm_s16.c). */
    const uint32_t F = p->input_size;
    const uint32_t H = p->hidden_size;
    const uint32_t T = p->num_frames;
    const uint32_t R = 4u * H;
    const float *const w_ih = p->w_ih;
    const float *const w_hh = p->w_hh;
    const float *const b_ih = p->b_ih;
    const float *const b_hh = p->b_hh;
    float *const h = s->h;
    float *const c = s->c;
    float *const pre = s->gates;
    uint32_t t, r, j;

    for (j = 0; j < H; ++j) {
        h[j] = 0.0f;
        c[j] = 0.0f;
    }
    for (t = 0; t < T; ++t) {
        const float *xt = x + t * F;
        /* All 4H pre-activations from the old h before h changes. */
        for (r = 0; r < R; ++r) {
            const float *wi = w_ih + r * F;
            const float *wh = w_hh + r * H;
            float acc = b_ih[r] + b_hh[r];
            for (j = 0; j < F; ++j) {
                acc += wi[j] * xt[j];
            }
            for (j = 0; j < H; ++j) {
                acc += wh[j] * h[j];
            }
            pre[r] = acc;
        }
        for (j = 0; j < H; ++j) {
            const float ig = sigmoid_f32(pre[j]);
            const float fg = sigmoid_f32(pre[H + j]);
            const float gg = tanhf(pre[2u * H + j]);
            const float og = sigmoid_f32(pre[3u * H + j]);
            c[j] = fg * c[j] + ig * gg;
            h[j] = og * tanhf(c[j]);
        }
    }
    for (j = 0; j < H; ++j) {
        z[j] = h[j];
    }
}

void elt_dense_f32(const float *w, const float *b, uint32_t rows, uint32_t cols, const float *x,
                   float *y)
{
    uint32_t r, j;
    for (r = 0; r < rows; ++r) {
        const float *wr = w + r * cols;
        float acc = b[r];
        for (j = 0; j < cols; ++j) {
            acc += wr[j] * x[j];
        }
        y[r] = acc;
    }
}
