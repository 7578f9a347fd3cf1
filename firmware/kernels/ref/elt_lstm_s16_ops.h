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
    operands_x_from(p, x, xs, 0, n);
}

/* y = σ(x) for n values. */
static inline void sigmoid_n(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *y,
                             uint32_t n)
{
    sigmoid_from(p, x, y, 0, n);
}

/* hs = c = 0 over the padded units (h is written before it is read). */
static void state_clear(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s)
{
    state_clear_from(p, s, 0);
}

/* z = src, n values. */
static inline void copy_h(int16_t *z, const int16_t *src, uint32_t n)
{
    copy_h_from(z, src, 0, n);
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
