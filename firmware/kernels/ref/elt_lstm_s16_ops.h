/*
 * The LSTM encoder's operations in plain C (firmware/elt_lstm_s16.c includes this file after its
 * scalar helpers; firmware/kernels/neon_a32/elt_lstm_s16_ops.h is the NEON form of the same
 * functions). No generated kernel: every step is the plain C of elt_lstm_s16.c.
 */
#ifndef ELT_LSTM_S16_OPS_H
#define ELT_LSTM_S16_OPS_H

/* xs = rshift_round(x, x_opshift) for n values. */
static void operands_x(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *xs, uint32_t n)
{
    uint32_t k;
    for (k = 0; k < n; ++k) {
        xs[k] = (int16_t)fx_rshift_round32(x[k], p->x_opshift);
    }
}

/* y = σ(x) for n values. */
static inline void sigmoid_n(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *y,
                             uint32_t n)
{
    uint32_t k;
    for (k = 0; k < n; ++k) {
        y[k] = sigmoid_q15(p->sigmoid_lut, p->lut_shift, x[k]);
    }
}

/* hs = c = 0 over the padded units (h is written before it is read). */
static void state_clear(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s)
{
    uint32_t j;
    for (j = 0; j < p->hidden_pad; ++j) {
        s->hs[j] = 0;
        s->c[j] = 0;
    }
}

/* z from the pooling state (or h_T). */
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
    for (; j < H; ++j) {
        z[j] = src[j];
    }
#endif
    ELT_TRACE_S16("z", 0u, z, H);
}

/* The reference runs no generated kernel: 0, the plain C runs. */
static inline int kernel_pool_run(const elt_lstm_s16_params_t *p, const int16_t *x,
                                  const elt_lstm_s16_scratch_t *s)
{
    (void)p;
    (void)x;
    (void)s;
    return 0;
}

/* The reference runs no generated kernel: 0, the plain C runs. */
static inline int kernel_seq_run(const elt_lstm_s16_params_t *p, const int16_t *x,
                                 const elt_lstm_s16_scratch_t *s, int16_t *seq)
{
    (void)p;
    (void)x;
    (void)s;
    (void)seq;
    return 0;
}

/* The reference runs no generated kernel: 0, the plain C step runs. */
static inline int kernel_step_run(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s,
                                  const int16_t *z)
{
    (void)p;
    (void)s;
    (void)z;
    return 0;
}

#endif /* ELT_LSTM_S16_OPS_H */
