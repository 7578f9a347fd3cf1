/*
 * The GRU encoder's operations in plain C (firmware/elt_gru_s16.c includes this file after its
 * scalar helpers; firmware/kernels/neon_a32/elt_gru_s16_ops.h is the NEON form of the same
 * functions).
 */
#ifndef ELT_GRU_S16_OPS_H
#define ELT_GRU_S16_OPS_H

/* xs = rshift_round(x, x_opshift) for all T frames, each frame padded to Fp with zeros. */
static void operands_x(const elt_gru_s16_params_t *p, const int16_t *x, int16_t *xs)
{
    const uint32_t F = p->input_size;
    const uint32_t Fp = p->input_pad;
    uint32_t t;
    for (t = 0; t < p->num_frames; ++t) {
        const int16_t *xt = x + t * F;
        int16_t *st = xs + t * Fp;
        uint32_t k;
        for (k = 0; k < F; ++k) {
            st[k] = (int16_t)fx_rshift_round32(xt[k], p->x_opshift);
        }
        for (; k < Fp; ++k) {
            st[k] = 0;
        }
    }
}

/* pre (r, z rows), ah and ax (n rows), every sum over the packed columns u = [hs; xs_t]. */
static void gates(const elt_gru_s16_params_t *p, const elt_gru_s16_scratch_t *s, const int16_t *xt)
{
    const uint32_t hp = p->hidden_pad;
    const uint32_t fp = p->input_pad;
    const uint32_t K = hp + fp;
    const uint32_t R = 2u * hp + p->n_rows;
    uint32_t row, k;
    for (row = 0; row < R; ++row) {
        /* column k of this row is wr[k * 16] */
        const int16_t *wr =
            p->w + (row / ELT_LSTM_ROW_BLOCK) * K * ELT_LSTM_ROW_BLOCK + row % ELT_LSTM_ROW_BLOCK;
        int32_t a = p->bias[row]; /* every partial sum within the proven int32 bound */
        for (k = 0; k < hp; ++k) {
            a += (int32_t)wr[k * ELT_LSTM_ROW_BLOCK] * s->hs[k];
        }
        if (row < 2u * hp) {
            for (k = 0; k < fp; ++k) {
                a += (int32_t)wr[(hp + k) * ELT_LSTM_ROW_BLOCK] * xt[k];
            }
            s->pre[row] = fx_sat16(fx_rshift_round32(a, p->sig_rshift));
        } else {
            const uint32_t j = row - 2u * hp;
            s->ah[j] = a;
            a = p->bias[R + j];
            for (k = 0; k < fp; ++k) {
                a += (int32_t)wr[(hp + k) * ELT_LSTM_ROW_BLOCK] * xt[k];
            }
            s->ax[j] = a;
        }
    }
}

/* r, z, n and the new h, hs of every (padded) unit. */
static void cell(const elt_gru_s16_params_t *p, const elt_gru_s16_scratch_t *s)
{
    const uint32_t hp = p->hidden_pad;
    uint32_t j;
    for (j = 0; j < hp; ++j) {
        const int16_t rg = elt_sigmoid_q15(p->sigmoid_lut, p->lut_shift, s->pre[j]);
        const int16_t zg = elt_sigmoid_q15(p->sigmoid_lut, p->lut_shift, s->pre[hp + j]);
        const int64_t rh = fx_rshift_round64((int64_t)rg * s->ah[j], 15);
        const int64_t pre = (int64_t)s->ax[j] + rh;
        const int16_t n = elt_tanh2_q15(p->sigmoid_lut, p->lut_shift,
                                        fx_sat16_64(fx_rshift_round64(pre, p->tanh_rshift)));
        const int32_t d = (int32_t)s->h[j] - n;
        s->h[j] = fx_sat16_64((int64_t)n + fx_rshift_round64((int64_t)zg * d, 15));
        s->hs[j] = (int16_t)fx_rshift_round32(s->h[j], p->h_opshift);
    }
}

/* What one step hands on: h_t to seq, and the running mean sum or maximum. */
static void step_out(const elt_gru_s16_params_t *p, const elt_gru_s16_scratch_t *s, int16_t *z,
                     int16_t *seq_t)
{
    const uint32_t H = p->hidden_size;
    uint32_t j;
    if (seq_t != 0) {
        for (j = 0; j < H; ++j) {
            seq_t[j] = s->h[j];
        }
    }
    if (p->pool == ELT_LSTM_POOL_MEAN) {
        for (j = 0; j < H; ++j) {
            s->acc[j] += s->h[j]; /* |Σ| <= T 2^15 < 2^31 */
        }
    } else if (p->pool == ELT_LSTM_POOL_MAX) {
        for (j = 0; j < H; ++j) {
            z[j] = s->h[j] > z[j] ? s->h[j] : z[j];
        }
    }
}

#endif /* ELT_GRU_S16_OPS_H */
