/*
 * Mode "cmvn" kernel (elt_cmvn_s16.h; docs/adaptation.md "Integer specification"). Every step
 * is one line of codegen/intref/cmvn.py::cmvn_clip, in the same order, with the numeric
 * contract's one rounding rule (fw_fixed.h) and explicit saturation. Widths: S1 = sum of T
 * int16 fits int32 for T < 2^16; S2 = sum of squares and every product below are int64; the
 * 64-bit division and square root are the exact ones of elt_intmath.c (the A9 has no divider).
 */
#include "elt_cmvn_s16.h"

#include "elt_intmath.h"
#include "fw_fixed.h"

#define CMVN_GAIN_FRAC 14 /* G: Q1.14 of 1 / sqrt(1 - w + w v) */

void elt_cmvn_reset(const elt_cmvn_params_t *prm, elt_cmvn_state_t *st)
{
    for (int32_t f = 0; f < prm->features; f++) {
        st->m[f] = 0;
        st->p[f] = (int32_t)1 << prm->state_frac;
    }
}

void elt_cmvn_apply_s16(const elt_cmvn_params_t *prm, elt_cmvn_state_t *st, int16_t *x)
{
    const int32_t T = prm->frames;
    const int32_t F = prm->features;
    const int32_t fs = prm->state_frac;
    const int32_t b = prm->weight_shift;
    const int64_t one = (int64_t)1 << fs;
    int32_t offset[ELT_CMVN_F_MAX];
    int32_t gain[ELT_CMVN_F_MAX];

    for (int32_t f = 0; f < F; f++) {
        int32_t s1 = 0;
        int64_t s2 = 0;
        for (int32_t t = 0; t < T; t++) {
            int32_t u = x[t * F + f];
            s1 += u;
            s2 += (int64_t)(u * u);
        }
        /* clip mean and mean square in Q.state_frac (1/T as one rounded reciprocal) */
        int64_t c1 = fx_rshift_round64((int64_t)s1 * prm->recip, prm->recip_shift - 8);
        int64_t c2 =
            fx_sat32_64(fx_rshift_round64(s2 * prm->recip, prm->recip_shift + prm->x_frac - 8));
        /* EMA: M += (c1 - M) alpha, P += (c2 - P) alpha; both stay between old and new */
        int32_t m = st->m[f] + (int32_t)fx_rshift_round64(c1 - st->m[f], prm->alpha_shift);
        int32_t p = st->p[f] + (int32_t)fx_rshift_round64(c2 - st->p[f], prm->alpha_shift);
        st->m[f] = m;
        st->p[f] = p;
        /* v = P - M^2 (floored), D = 1 - w + w v, offset w M in the input format */
        int64_t v = (int64_t)p - fx_rshift_round64((int64_t)m * m, fs);
        if (v < prm->vmin) {
            v = prm->vmin;
        }
        int64_t d = one - (one >> b) + fx_rshift_round64(v, b);
        offset[f] = (int32_t)fx_rshift_round64(m, 8 + b);
        gain[f] = (int32_t)elt_isqrt64(elt_udiv64((uint64_t)1 << (28 + fs), (uint64_t)d));
    }
    for (int32_t t = 0; t < T; t++) {
        for (int32_t f = 0; f < F; f++) {
            int64_t c = fx_sat16((int32_t)x[t * F + f] - offset[f]);
            x[t * F + f] = fx_sat16_64(fx_rshift_round64(c * gain[f], CMVN_GAIN_FRAC));
        }
    }
}
