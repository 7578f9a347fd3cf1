/*
 * Modes "cmvn", "cmvn_causal" and "cmvn_select" kernel (elt_cmvn_s16.h; docs/adaptation.md "Integer
 * specification" and "Audio mode: causal cmvn"). Every step is one line of
 * codegen/stages/cmvn_int.py (_update, _coefficients, _normalise), in the same order, with the
 * numeric contract's one rounding rule (fw_fixed.h) and explicit saturation. Widths: S1 = sum of
 * T int16 fits int32 for T < 2^16; S2 = sum of squares and every product below are int64; the
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

/* One coefficient's term of a shift distance: rsr(m^2, F_s) + rsr((v - 1)^2, F_s) with
 * v = max(p - rsr(m^2, F_s), vmin) (written to *v_out). */
static int64_t shift_term(const elt_cmvn_params_t *prm, int64_t m, int64_t p, int64_t *v_out)
{
    const int32_t fs = prm->state_frac;
    const int64_t one = (int64_t)1 << fs;
    int64_t mm = fx_rshift_round64(m * m, fs);
    int64_t v = p - mm;
    if (v < prm->vmin) {
        v = prm->vmin;
    }
    *v_out = v;
    return mm + fx_rshift_round64((v - one) * (v - one), fs);
}

/* Steps 2-3 for coefficient f: the clip's mean and mean square in Q.state_frac (1/T as one
 * rounded reciprocal), then M += (c1 - M) alpha, P += (c2 - P) alpha (both stay between the
 * old and the new value, so in int32). With own non-NULL, the clip's own shift term of f
 * (shift_term of c1, c2) is added to *own. */
static void update(const elt_cmvn_params_t *prm, elt_cmvn_state_t *st, int32_t f, int32_t s1,
                   int64_t s2, int32_t alpha_shift, int64_t *own)
{
    int64_t c1 = fx_rshift_round64((int64_t)s1 * prm->recip, prm->recip_shift - 8);
    int64_t c2 =
        fx_sat32_64(fx_rshift_round64(s2 * prm->recip, prm->recip_shift + prm->x_frac - 8));
    st->m[f] += (int32_t)fx_rshift_round64(c1 - st->m[f], alpha_shift);
    st->p[f] += (int32_t)fx_rshift_round64(c2 - st->p[f], alpha_shift);
    if (own) {
        int64_t v;
        *own += shift_term(prm, c1, c2, &v);
    }
}

/* Steps 4-6: v = P - M^2 (floored), D = 1 - w + w v, offset w M in the input format, gain
 * 1/sqrt(D) in Q14. The shift distance of the state from the training statistics,
 * sum_f M^2 + (V - 1)^2 in Q.state_frac, goes to *dist_out; with gate_sum > 0 the shift gate
 * returns 0 (closed: the clip passes unchanged) below gate_sum. */
static int32_t coefficients(const elt_cmvn_params_t *prm, const elt_cmvn_state_t *st,
                            int64_t gate_sum, int32_t *offset, int32_t *gain, int64_t *dist_out)
{
    const int32_t F = prm->features;
    const int32_t fs = prm->state_frac;
    const int32_t b = prm->weight_shift;
    const int64_t one = (int64_t)1 << fs;
    int64_t v[ELT_CMVN_F_MAX];
    int64_t dist = 0;
    for (int32_t f = 0; f < F; f++) {
        dist += shift_term(prm, st->m[f], st->p[f], &v[f]);
    }
    *dist_out = dist;
    if (gate_sum > 0 && dist < gate_sum) {
        return 0;
    }
    for (int32_t f = 0; f < F; f++) {
        int64_t d = one - (one >> b) + fx_rshift_round64(v[f], b);
        offset[f] = (int32_t)fx_rshift_round64(st->m[f], 8 + b);
        gain[f] = (int32_t)elt_isqrt64(elt_udiv64((uint64_t)1 << (28 + fs), (uint64_t)d));
    }
    return 1;
}

/* Step 7 on one frame of F coefficients, in place. */
static void normalise(int32_t F, const int32_t *offset, const int32_t *gain, int16_t *x)
{
    for (int32_t f = 0; f < F; f++) {
        int64_t c = fx_sat16((int32_t)x[f] - offset[f]);
        x[f] = fx_sat16_64(fx_rshift_round64(c * gain[f], CMVN_GAIN_FRAC));
    }
}

int64_t elt_cmvn_apply_s16(const elt_cmvn_params_t *prm, elt_cmvn_state_t *st, int16_t *x,
                           int64_t *clip_dist)
{
    const int32_t T = prm->frames;
    const int32_t F = prm->features;
    int32_t offset[ELT_CMVN_F_MAX];
    int32_t gain[ELT_CMVN_F_MAX];
    int64_t dist = 0;
    int64_t own = 0;

    for (int32_t f = 0; f < F; f++) {
        int32_t s1 = 0;
        int64_t s2 = 0;
        for (int32_t t = 0; t < T; t++) {
            int32_t u = x[t * F + f];
            s1 += u;
            s2 += (int64_t)(u * u);
        }
        update(prm, st, f, s1, s2, prm->alpha_shift, clip_dist ? &own : 0);
    }
    if (clip_dist) {
        *clip_dist = own;
    }
    if (!coefficients(prm, st, prm->gate_sum, offset, gain, &dist)) {
        return dist; /* the shift gate is closed: the clip passes unchanged */
    }
    for (int32_t t = 0; t < T; t++) {
        normalise(F, offset, gain, &x[t * F]);
    }
    return dist;
}

void elt_cmvn_causal_begin(const elt_cmvn_params_t *prm, const elt_cmvn_state_t *st,
                           elt_cmvn_clip_t *clip)
{
    for (int32_t f = 0; f < prm->features; f++) {
        clip->s1[f] = 0;
        clip->s2[f] = 0;
    }
    int64_t dist;
    clip->open = coefficients(prm, st, prm->causal_gate_sum, clip->offset, clip->gain, &dist);
}

void elt_cmvn_causal_frame(const elt_cmvn_params_t *prm, elt_cmvn_clip_t *clip, int16_t *frame)
{
    const int32_t F = prm->features;
    for (int32_t f = 0; f < F; f++) { /* the state learns from the raw frame */
        int32_t u = frame[f];
        clip->s1[f] += u;
        clip->s2[f] += (int64_t)(u * u);
    }
    if (clip->open) {
        normalise(F, clip->offset, clip->gain, frame);
    }
}

void elt_cmvn_causal_end(const elt_cmvn_params_t *prm, elt_cmvn_state_t *st,
                         const elt_cmvn_clip_t *clip)
{
    for (int32_t f = 0; f < prm->features; f++) {
        update(prm, st, f, clip->s1[f], clip->s2[f], prm->causal_alpha_shift, 0);
    }
}
