/*
 * Modes "cmvn", "cmvn_causal" and "cmvn_select": continual per-coefficient input normalisation
 * (docs/adaptation.md "Deployed method", "Integer specification", "Round 4" ... "Round 6"). Python
 * twin: codegen/stages/cmvn_int.py (cmvn_int, cmvn_select_int), bit-exact.
 *
 * Before the encoder, each clip's coefficient sums update an exponential moving average of the
 * input's mean M and mean square P (alpha = 2^-alpha_shift); the clip is then shifted by
 * w M and scaled by 1/sqrt(1 - w + w v), w = 2^-weight_shift, in place. The compiler emits the
 * constants (FW_APP_CMVN_PARAMS in the generated fw_app_model.h); the caller owns the state.
 */
#ifndef ELT_CMVN_S16_H
#define ELT_CMVN_S16_H

#include <stdint.h>

#ifndef ELT_CMVN_F_MAX
#define ELT_CMVN_F_MAX 64 /* input coefficients the state holds */
#endif

typedef struct {
    int32_t frames;                /* T */
    int32_t features;              /* F <= ELT_CMVN_F_MAX */
    int32_t x_frac;                /* n: fraction bits of the int16 input */
    int32_t state_frac;            /* n + 8: fraction bits of M and P */
    int32_t recip;                 /* round(2^recip_shift / T) */
    int32_t recip_shift;           /* 22 */
    int32_t alpha_shift;           /* EMA factor 2^-a, a >= 1 */
    int32_t weight_shift;          /* blend 2^-b */
    int32_t vmin;                  /* floor of the variance, Q.state_frac */
    int32_t causal_alpha_shift;    /* mode cmvn_causal: its EMA factor 2^-a */
    int64_t gate_sum;              /* mode cmvn: shift gate threshold, Q.state_frac; 0 none */
    int64_t causal_gate_sum;       /* mode cmvn_causal: the same, on the state before the clip */
    int32_t select_margin;         /* mode cmvn_select: entropy margin, Q5.26 (fw_app_kws.c) */
    int64_t select_gate_sum;       /* mode cmvn_select: its shift gate, as gate_sum; 0 none */
    int64_t select_floor_sum;      /* mode cmvn_select: its shift floor, as gate_sum; 0 none */
    int64_t select_clip_floor_sum; /* mode cmvn_select: the clip floor on clip_dist; 0 none */
    int64_t select_clip_gate_sum;  /* mode cmvn_select: the clip gate on clip_dist; 0 none */
    int32_t select_alpha_shift;    /* mode cmvn_select's normalised run: its EMA factor 2^-a */
    int32_t select_weight_shift;   /* mode cmvn_select's normalised run: its blend 2^-b */
} elt_cmvn_params_t;

typedef struct {
    int32_t m[ELT_CMVN_F_MAX]; /* running mean of the input, Q.state_frac */
    int32_t p[ELT_CMVN_F_MAX]; /* running mean square, Q.state_frac */
} elt_cmvn_state_t;

/* The training statistics: mean 0, mean square 1 (the input is normalised with them). */
void elt_cmvn_reset(const elt_cmvn_params_t *prm, elt_cmvn_state_t *st);

/* One clip x [T][F] (int16, the model's input format): update the state, normalise in place
 * (or leave it unchanged where the shift gate on the updated state is closed). Returns the
 * shift distance of the updated state, sum_f M^2 + (V - 1)^2 in Q.state_frac (what the gates
 * compare with their thresholds; mode cmvn_select's gate reads it). With clip_dist non-NULL,
 * *clip_dist is the clip's own shift distance, the same sum over the clip's mean and mean
 * square in place of M and P (docs/adaptation.md "Round 6"; mode cmvn_select's clip floor and
 * clip gate read it). */
int64_t elt_cmvn_apply_s16(const elt_cmvn_params_t *prm, elt_cmvn_state_t *st, int16_t *x,
                           int64_t *clip_dist);

/* Mode "cmvn_causal" (docs/adaptation.md "Audio mode: causal cmvn"): the clip is normalised
 * with the state BEFORE it, under the shift gate, one frame at a time as frames arrive, and
 * only then updates the state, so a streaming front end needs no whole clip. Per clip: begin,
 * then frame for each of the T frames in order, then end (an abandoned clip never calls end
 * and leaves the state as it was). */
typedef struct {
    int32_t s1[ELT_CMVN_F_MAX];     /* sum of the clip's raw frames so far */
    int64_t s2[ELT_CMVN_F_MAX];     /* sum of their squares */
    int32_t offset[ELT_CMVN_F_MAX]; /* w M, input format */
    int32_t gain[ELT_CMVN_F_MAX];   /* 1 / sqrt(1 - w + w v), Q14 */
    int32_t open;                   /* the shift gate: 1 normalise, 0 pass unchanged */
} elt_cmvn_clip_t;

void elt_cmvn_causal_begin(const elt_cmvn_params_t *prm, const elt_cmvn_state_t *st,
                           elt_cmvn_clip_t *clip);
/* One frame [F] in place: its raw values join the sums, then it is normalised. */
void elt_cmvn_causal_frame(const elt_cmvn_params_t *prm, elt_cmvn_clip_t *clip, int16_t *frame);
void elt_cmvn_causal_end(const elt_cmvn_params_t *prm, elt_cmvn_state_t *st,
                         const elt_cmvn_clip_t *clip);

#endif /* ELT_CMVN_S16_H */
