/*
 * Integer GRU step (elt_gru_s16.h), one line of codegen/intref/gru.py per line here:
 *   ax = W_ih xs + b_ih, ah = W_hh hs + b_hh                  (int32 at A, proven)
 *   r, z = σ(sat16(rshift_round(ax + ah, A - 11)))
 *   n = 2σ(2x) - 1, 2x = sat16(rshift_round(ax_n + rshift_round(r ah_n, 15), A - 12))
 *   h = sat16(n + rshift_round(z (h - n), 15))
 * Products are formed in int64 (|r ah| < 2^46); every shift is the one rounding rule.
 */
#include "elt_gru_s16.h"

#include "fw_fixed.h"

void elt_gru_s16_run(const elt_gru_s16_params_t *p, const int16_t *x,
                     const elt_gru_s16_scratch_t *s, int16_t *z, int16_t *seq)
{
    const uint32_t F = p->input_size;
    const uint32_t H = p->hidden_size;
    uint32_t t, r, j;

    for (j = 0; j < H; ++j) {
        s->h[j] = 0;
        if (p->pool == ELT_LSTM_POOL_MEAN) {
            s->acc[j] = 0;
        } else if (p->pool == ELT_LSTM_POOL_MAX) {
            z[j] = INT16_MIN;
        }
    }
    for (t = 0; t < p->num_frames; ++t) {
        const int16_t *xt = x + t * F;
        for (j = 0; j < H; ++j) {
            s->hs[j] = (int16_t)fx_rshift_round32(s->h[j], p->h_opshift);
        }
        for (r = 0; r < 3u * H; ++r) {
            int32_t a = p->b_ih[r];
            int32_t b = p->b_hh[r];
            for (j = 0; j < F; ++j) {
                a += (int32_t)p->w_ih[r * F + j] * fx_rshift_round32(xt[j], p->x_opshift);
            }
            for (j = 0; j < H; ++j) {
                b += (int32_t)p->w_hh[r * H + j] * s->hs[j];
            }
            s->ax[r] = a;
            s->ah[r] = b;
        }
        for (j = 0; j < H; ++j) {
            const int16_t rg =
                elt_sigmoid_q15(p->sigmoid_lut, p->lut_shift,
                                fx_sat16(fx_rshift_round32(s->ax[j] + s->ah[j], p->sig_rshift)));
            const int16_t zg = elt_sigmoid_q15(
                p->sigmoid_lut, p->lut_shift,
                fx_sat16(fx_rshift_round32(s->ax[H + j] + s->ah[H + j], p->sig_rshift)));
            const int64_t rh = fx_rshift_round64((int64_t)rg * s->ah[2u * H + j], 15);
            const int64_t pre = (int64_t)s->ax[2u * H + j] + rh;
            const int16_t n = elt_tanh2_q15(p->sigmoid_lut, p->lut_shift,
                                            fx_sat16_64(fx_rshift_round64(pre, p->tanh_rshift)));
            const int32_t d = (int32_t)s->h[j] - n;
            s->h[j] = fx_sat16_64((int64_t)n + fx_rshift_round64((int64_t)zg * d, 15));
        }
        ELT_TRACE_S16("lstm.h", t, s->h, H);
        for (j = 0; j < H; ++j) {
            if (seq != 0) {
                seq[t * H + j] = s->h[j];
            }
            if (p->pool == ELT_LSTM_POOL_MEAN) {
                s->acc[j] += s->h[j];
            } else if (p->pool == ELT_LSTM_POOL_MAX && s->h[j] > z[j]) {
                z[j] = s->h[j];
            }
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
