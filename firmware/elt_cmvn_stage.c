/*
 * The input stages "cmvn", "cmvn_causal" and "cmvn_select" (elt_stage.h; the registry entries
 * of codegen/stages/cmvn.py; docs/adaptation.md "Deployed method", "Audio mode: causal cmvn",
 * "Round 3" ... "Round 8") over the kernel elt_cmvn_s16.c. The three share one state of the
 * input's running statistics, as their Python twin (codegen/stages/cmvn_int.py) does; their
 * constants are the build's FW_APP_CMVN_PARAMS (fw_app_model.h, [cmvn] of the build config).
 */
#include <stdint.h>

#include "elt_cmvn_s16.h"
#include "elt_stage.h"
#include "fw_app_model.h"

_Static_assert(FW_APP_F <= ELT_CMVN_F_MAX, "the cmvn state holds fewer coefficients than F");

static const elt_cmvn_params_t cmvn_prm = FW_APP_CMVN_PARAMS;

static struct {
    elt_cmvn_state_t st;      /* the input's statistics M, P: every form's */
    elt_cmvn_clip_t clip;     /* cmvn_causal: the clip being normalised */
    elt_cmvn_params_t select; /* cmvn_select's normalised run (set by cmvn_reset) */
    int32_t fired;            /* cmvn_select: its shift gate or clip gate fired on this clip */
    int32_t floor_ok;         /* cmvn_select: the shift floor or the clip floor was reached */
} stage_cmvn;

/* The training statistics (elt_cmvn_reset); cmvn_select's normalised run takes mode cmvn's
 * constants without its shift gate and with its own EMA factor and blend ("Round 8"). */
static void cmvn_reset(void)
{
    elt_cmvn_reset(&cmvn_prm, &stage_cmvn.st);
    stage_cmvn.select = cmvn_prm;
    stage_cmvn.select.gate_sum = 0;
    stage_cmvn.select.alpha_shift = cmvn_prm.select_alpha_shift;
    stage_cmvn.select.weight_shift = cmvn_prm.select_weight_shift;
}

/* Mode cmvn: the clip joins the statistics, then is normalised with them (under its gate). */
static void cmvn_clip(int16_t *x)
{
    (void)elt_cmvn_apply_s16(&cmvn_prm, &stage_cmvn.st, x, 0);
}

/* Mode cmvn_causal: the clip is normalised with the statistics of the clips before it, frame
 * by frame, and joins them when it is heard. */
static void causal_begin(void)
{
    elt_cmvn_causal_begin(&cmvn_prm, &stage_cmvn.st, &stage_cmvn.clip);
}

static void causal_frame(int16_t *frame)
{
    elt_cmvn_causal_frame(&cmvn_prm, &stage_cmvn.clip, frame);
}

static void causal_end(void)
{
    elt_cmvn_causal_end(&cmvn_prm, &stage_cmvn.st, &stage_cmvn.clip);
}

/* Mode cmvn_select's normalised run on the held clip, then its shift gate and shift floor on
 * the shift distance of the updated state, and the clip floor and clip gate on the clip's own
 * (each 0: none): floor_ok, the entropy test may take the normalised answer (the floor or the
 * clip floor reached); fired, it is taken without the test (the shift gate, or the clip gate
 * where floor_ok holds). codegen/stages/cmvn_int.py::cmvn_select_int. */
static void select_second(int16_t *x)
{
    int64_t clip_dist;
    const int64_t dist = elt_cmvn_apply_s16(&stage_cmvn.select, &stage_cmvn.st, x, &clip_dist);
    const int64_t cf = cmvn_prm.select_clip_floor_sum;
    const int64_t cg = cmvn_prm.select_clip_gate_sum;
    stage_cmvn.floor_ok = cmvn_prm.select_floor_sum <= 0 || dist >= cmvn_prm.select_floor_sum ||
                          (cf > 0 && clip_dist >= cf);
    stage_cmvn.fired = (cmvn_prm.select_gate_sum > 0 && dist >= cmvn_prm.select_gate_sum) ||
                       (stage_cmvn.floor_ok && cg > 0 && clip_dist >= cg);
}

/* Mode cmvn_select's answer (docs/adaptation.md "Round 3" ... "Round 6"): the normalised run's
 * where a gate fired, or where its entropy plus the margin (Q5.26) is below the raw run's and
 * the floor was reached. codegen/stages/cmvn_int.py::select_use. */
static int32_t select_choose(const elt_adapt_result_t *raw, const elt_adapt_result_t *run)
{
    return stage_cmvn.fired ||
           (stage_cmvn.floor_ok &&
            (int64_t)run->H_noadapt + cmvn_prm.select_margin < (int64_t)raw->H_noadapt);
}

const elt_stage_t elt_stage_cmvn = {.reset = cmvn_reset, .clip = cmvn_clip};
const elt_stage_t elt_stage_cmvn_causal = {
    .reset = cmvn_reset, .begin = causal_begin, .frame = causal_frame, .end = causal_end};
const elt_stage_t elt_stage_cmvn_select = {
    .reset = cmvn_reset, .second = select_second, .choose = select_choose};
