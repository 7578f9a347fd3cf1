/*
 * The LSTM encoder's operations on the Cortex-A9 (firmware/elt_lstm_s16.c includes this file
 * after its scalar helpers; firmware/kernels/ref/elt_lstm_s16_ops.h is the plain C of the same
 * functions): vector loads and stores of int16x8 / int32x4, the σ gather, and the layer's NEON
 * kernel that codegen/emit/lstm_neon.py writes into the model source (p->kernel).
 */
#ifndef ELT_LSTM_S16_OPS_H
#define ELT_LSTM_S16_OPS_H

#include "elt_neon_a32.h"

/* The generated kernels run whole sequences; trace builds take the plain C step by step. */
#ifdef ELT_TRACE
#define ELT_LSTM_KERNEL_ON 0
#else
#define ELT_LSTM_KERNEL_ON 1
#endif

static inline uint32x4_t sigmoid_base(const elt_lstm_s16_params_t *p)
{
    return vdupq_n_u32((uint32_t)(uintptr_t)p->sigmoid_pairs);
}

/* xs = rshift_round(x, x_opshift) for n values: VRSHL by -x_opshift (0: identity, and VRSHL by
 * 0 is the identity too), 16 at a time, then 8; a tail of n >= 8 values as one more vector of
 * the last 8, which recomputes a few values already written with the same result (x and xs are
 * apart: the frames, or the step's one frame, and the scratch), so a streaming step of F = 10
 * features takes two vectors instead of ten scalar roundings. */
static void operands_x(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *xs, uint32_t n)
{
    const int16x8_t neg = vdupq_n_s16((int16_t) - (int16_t)p->x_opshift);
    uint32_t k = 0;
    for (; k + 16u <= n; k += 16u) {
        vst1q_s16(xs + k, vrshlq_s16(vld1q_s16(x + k), neg));
        vst1q_s16(xs + k + 8u, vrshlq_s16(vld1q_s16(x + k + 8u), neg));
    }
    for (; k + 8u <= n; k += 8u) {
        vst1q_s16(xs + k, vrshlq_s16(vld1q_s16(x + k), neg));
    }
    if (k < n && n >= 8u) {
        vst1q_s16(xs + n - 8u, vrshlq_s16(vld1q_s16(x + n - 8u), neg));
        k = n;
    }
    for (; k < n; ++k) {
        xs[k] = (int16_t)fx_rshift_round32(x[k], p->x_opshift);
    }
}

/* y = σ(x) for n values, 8 lanes at a time from sigmoid_pairs (elt_sigmoid8). */
static inline __attribute__((always_inline)) void
sigmoid_n(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *y, uint32_t n)
{
    uint32_t k = 0;
    const uint32x4_t base = sigmoid_base(p);
    for (; k + 8u <= n; k += 8u) {
        vst1q_s16(y + k, elt_sigmoid8(vld1q_s16(x + k), base));
    }
    for (; k < n; ++k) {
        y[k] = sigmoid_q15(p->sigmoid_lut, p->lut_shift, x[k]);
    }
}

/* hs = c = 0 over the padded units (h is written before it is read), a group of 8 per step. */
static void state_clear(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s)
{
    uint32_t j = 0;
    for (; j < p->hidden_pad; j += ELT_LSTM_HIDDEN_ALIGN) {
        vst1q_s16(s->hs + j, vdupq_n_s16(0));
        vst1q_s32(s->c + j, vdupq_n_s32(0));
        vst1q_s32(s->c + j + 4u, vdupq_n_s32(0));
    }
    for (; j < p->hidden_pad; ++j) {
        s->hs[j] = 0;
        s->c[j] = 0;
    }
}

/* z from the pooling state (or h_T), 8 units per VLD1/VST1. */
static void pool_end(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s, int16_t *z)
{
    const uint32_t H = p->hidden_size;
    uint32_t j = 0;
#if ELT_LSTM_POOL == ELT_LSTM_POOL_MEAN
    for (; j < H; ++j) {
        z[j] = fx_sat16_64(fx_rshift_round64((int64_t)s->acc[j] * p->pool_recip, p->pool_shift));
    }
#else
#if ELT_LSTM_POOL == ELT_LSTM_POOL_MAX
    const int16_t *src = s->hmax;
#else
    const int16_t *src = s->h;
#endif
    for (; j + 8u <= H; j += 8u) {
        vst1q_s16(z + j, vld1q_s16(src + j));
    }
    for (; j < H; ++j) {
        z[j] = src[j];
    }
#endif
    ELT_TRACE_S16("z", 0u, z, H);
}

/* `steps` steps of the layer's NEON kernel from the state in s, frames xs F apart, writing per
 * step to out (what the layer's role writes: elt_lstm_s16_kargs_t). */
static void kernel_steps(const elt_lstm_s16_params_t *p, const int16_t *xs,
                         const elt_lstm_s16_scratch_t *s, void *out, uint32_t steps)
{
    const elt_lstm_s16_kargs_t a = {xs, s->hs, s->c, s->act, out, steps};
    p->kernel(&a);
}

/* The kernel over T frames of x. Shift 0 makes the operands x itself: the kernel reads the
 * frames in place, but for the last one when F % 4 != 0 (its whole groups of 4 would read up to
 * 3 values past x): that frame is copied to s->xs, which has the slack. `seq` (the role of the
 * first of two layers): out advances by H per step. */
static void kernel_frames(const elt_lstm_s16_params_t *p, const int16_t *x,
                          const elt_lstm_s16_scratch_t *s, void *out, int seq)
{
    const uint32_t F = p->input_size;
    const uint32_t T = p->num_frames;
    uint32_t k;
    if (p->x_opshift != 0u) {
        operands_x(p, x, s->xs, T * F);
        kernel_steps(p, s->xs, s, out, T);
    } else if (F % ELT_LSTM_COL_GROUP == 0u) {
        kernel_steps(p, x, s, out, T);
    } else {
        if (T > 1u) {
            kernel_steps(p, x, s, out, T - 1u);
        }
        for (k = 0; k < F; ++k) {
            s->xs[k] = x[(T - 1u) * F + k];
        }
        kernel_steps(p, s->xs, s, seq ? (void *)((int16_t *)out + (T - 1u) * p->hidden_size) : out,
                     1u);
    }
}

/* The last layer's generated kernel over the T frames of x into its pooling state, if the
 * build has one: 1 when it ran. */
static inline __attribute__((always_inline)) int
kernel_pool_run(const elt_lstm_s16_params_t *p, const int16_t *x, const elt_lstm_s16_scratch_t *s)
{
    if (!ELT_LSTM_KERNEL_ON || p->kernel == 0) {
        return 0;
    }
    kernel_frames(p, x, s, pool_out(s), 0);
    return 1;
}

/* The first layer's generated kernel over the T frames of x into seq: 1 when it ran. */
static inline __attribute__((always_inline)) int kernel_seq_run(const elt_lstm_s16_params_t *p,
                                                                const int16_t *x,
                                                                const elt_lstm_s16_scratch_t *s,
                                                                int16_t *seq)
{
    if (!ELT_LSTM_KERNEL_ON || p->kernel == 0) {
        return 0;
    }
    kernel_frames(p, x, s, seq, 1);
    return 1;
}

/* One step of the layer's generated kernel on the operands in s->xs: 1 when it ran. Without
 * pooling (z NULL: the first of two layers) the kernel's role is the sequence and one step of
 * it writes h. */
static inline __attribute__((always_inline)) int
kernel_step_run(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s, const int16_t *z)
{
    if (!ELT_LSTM_KERNEL_ON || p->kernel == 0) {
        return 0;
    }
    kernel_steps(p, s->xs, s, z == 0 ? (void *)s->h : pool_out(s), 1u);
    return 1;
}

#endif /* ELT_LSTM_S16_OPS_H */
