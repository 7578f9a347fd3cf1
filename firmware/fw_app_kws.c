/*
 * Model runtime: the application behind INFER and RESET (docs/protocol.md, "Model runtime").
 * Compiled only into a `codegen build` firmware, which generates fw_app_model.h
 * (templates/fw_app_model.h.j2) naming this build's model; main.c takes the app from
 * fw_app_get() (a weak NULL stub without a model).
 *
 * INFER: in mode cmvn the features are first normalised in place by the continual input
 * normalisation (elt_cmvn_s16.c); z_t = encode(features), then elt_adapt_run with a RAM copy of
 * the adaptation params whose mode is the request's (no_adapt for cmvn); the global timer
 * (fw_timer_now, "QEMU icount ticks" under -icount, docs/targets.md §4) times the encoder, the
 * adaptation (in mode cmvn: the normalisation plus the head) and the whole request. RESET clears
 * the continual state (p_prev = 0, the cmvn statistics back to the training ones) or, with k int32
 * values, sets p_prev (host `--resume`). The protocol server's replay rule keeps a retried INFER
 * from advancing the continual state twice. No heap: every buffer is static and sized by the
 * model's constants.
 */
#include <stdint.h>

#include "elt_adapt.h"
#include "elt_cmvn_s16.h"
#include "fw_app_model.h"
#if defined(ELT_ENCODER_F32)
/* codegen bench's float32 baseline (codegen/emit_f32.py): FW_APP_ENCODE = the float encoder. */
#include "fw_app_f32.h"
#endif
#include "fw_frame.h"
#include "fw_server.h"
#include "fw_timer.h"

/* The mode byte after the ELaTTA modes (ELT_MODE_*): continual input normalisation. */
#define APP_MODE_CMVN 4u

/* INFER request: sample_id:u32 mode:u8 T:u16 F:u16 features:i16[T*F] (docs/protocol.md). */
#define APP_INFER_HDR 9u
#define APP_FEATURES (FW_APP_T * FW_APP_F)
#define APP_INFER_SIZE (APP_INFER_HDR + 2u * APP_FEATURES)
/* RESULT: 40-byte fixed part, p_best i32[k], logits_noadapt i16[C], logits i16[C], z i16[H]. */
#define APP_RESULT_FIXED 40u
#define APP_RESULT_SIZE (APP_RESULT_FIXED + 4u * FW_APP_K + 4u * FW_APP_C + 2u * FW_APP_H)

_Static_assert(APP_INFER_SIZE <= FW_MAX_PAYLOAD,
               "INFER of this model does not fit FW_MAX_PAYLOAD: raise [target] max_payload");
_Static_assert(APP_RESULT_SIZE <= FW_MAX_PAYLOAD, "RESULT does not fit FW_MAX_PAYLOAD");
_Static_assert(FW_APP_F <= ELT_CMVN_F_MAX, "the cmvn state holds fewer coefficients than F");
_Static_assert(FW_APP_C <= 255u && FW_APP_K <= 255u && FW_APP_H <= 255u,
               "RESULT carries C, k and H in one byte each");

typedef struct {
    elt_adapt_params_t params; /* RAM copy of the generated params; .mode set per request */
    elt_adapt_state_t state;   /* continual p_prev and all scratch of the adaptation core */
    elt_adapt_result_t res;
    elt_cmvn_state_t cmvn;   /* mode cmvn: running input statistics */
    int16_t x[APP_FEATURES]; /* features [T][F], copied out of the (unaligned) payload */
    int16_t z[FW_APP_H];     /* z_t, Q0.15 */
} app_ctx_t;

static app_ctx_t app;
static const elt_cmvn_params_t app_cmvn = FW_APP_CMVN_PARAMS;

static int32_t infer(app_ctx_t *a, const uint8_t *in, uint16_t len, uint8_t *out, uint16_t *out_len)
{
    uint64_t t0 = fw_timer_now();
    if (len != APP_INFER_SIZE) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    uint32_t sample_id = fw_get_u32(&in[0]);
    uint8_t mode = in[4];
    if (mode > APP_MODE_CMVN || fw_get_u16(&in[5]) != FW_APP_T || fw_get_u16(&in[7]) != FW_APP_F) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    for (uint32_t i = 0; i < APP_FEATURES; i++) {
        a->x[i] = (int16_t)fw_get_u16(&in[APP_INFER_HDR + 2u * i]);
    }
    a->params.mode = (int32_t)mode;
    uint64_t t_cmvn = 0;
    if (mode == APP_MODE_CMVN) {
        uint64_t tc = fw_timer_now();
        elt_cmvn_apply_s16(&app_cmvn, &a->cmvn, a->x);
        a->params.mode = ELT_MODE_NO_ADAPT; /* no latent search: the head on the new z_t */
        t_cmvn = fw_timer_now() - tc;
    }
    uint64_t t1 = fw_timer_now();
    FW_APP_ENCODE(a->x, a->z);
    uint64_t t2 = fw_timer_now();
    elt_adapt_run(&a->params, &a->state, a->z, sample_id, &a->res);
    uint64_t t3 = fw_timer_now();

    const elt_adapt_result_t *r = &a->res;
    fw_put_u32(&out[0], sample_id);
    out[4] = mode;
    out[5] = (uint8_t)FW_APP_C;
    out[6] = (uint8_t)FW_APP_K;
    out[7] = (uint8_t)FW_APP_H;
    fw_put_u32(&out[8], (uint32_t)r->pred_noadapt);
    fw_put_u32(&out[12], (uint32_t)r->pred);
    fw_put_u32(&out[16], (uint32_t)r->H_noadapt);
    fw_put_u32(&out[20], (uint32_t)r->H_best);
    fw_put_u32(&out[24], (uint32_t)r->n_pivot_fix);
    fw_put_u32(&out[28], (uint32_t)(t2 - t1));
    fw_put_u32(&out[32], (uint32_t)(t_cmvn + (t3 - t2)));
    uint32_t o = APP_RESULT_FIXED;
    for (uint32_t j = 0; j < FW_APP_K; j++, o += 4u) {
        fw_put_u32(&out[o], (uint32_t)r->p_best[j]);
    }
    for (uint32_t j = 0; j < FW_APP_C; j++, o += 2u) {
        fw_put_u16(&out[o], (uint16_t)r->logits_noadapt[j]);
    }
    for (uint32_t j = 0; j < FW_APP_C; j++, o += 2u) {
        fw_put_u16(&out[o], (uint16_t)r->logits[j]);
    }
    for (uint32_t j = 0; j < FW_APP_H; j++, o += 2u) {
        fw_put_u16(&out[o], (uint16_t)a->z[j]);
    }
    /* Total: payload checks and copy, encoder, adaptation, result packing. */
    fw_put_u32(&out[36], (uint32_t)(fw_timer_now() - t0));
    *out_len = (uint16_t)APP_RESULT_SIZE;
    return (int32_t)FW_MSG_RESULT;
}

static int32_t reset(app_ctx_t *a, const uint8_t *in, uint16_t len, uint16_t *out_len)
{
    if (len != 0u && len != 4u * FW_APP_K) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    elt_adapt_reset(&a->state);
    elt_cmvn_reset(&app_cmvn, &a->cmvn);
    if (len != 0u) { /* resume a continual stream: p_prev = the last recorded best p (Q4.27) */
        for (uint32_t j = 0; j < FW_APP_K; j++) {
            a->state.p_prev[j] = (int32_t)fw_get_u32(&in[4u * j]);
        }
    }
    *out_len = 0;
    return (int32_t)FW_MSG_RESET_ACK;
}

static int32_t handle(void *ctx, uint8_t type, const uint8_t *payload, uint16_t len, uint8_t *out,
                      uint16_t *out_len)
{
    app_ctx_t *a = (app_ctx_t *)ctx;
    switch (type) {
    case FW_MSG_INFER:
        return infer(a, payload, len, out, out_len);
    case FW_MSG_RESET:
        return reset(a, payload, len, out_len);
    default:
        return 0;
    }
}

static uint16_t describe(void *ctx, uint8_t *out, uint16_t cap)
{
    (void)ctx;
    static const char text[] = FW_APP_DESCRIPTION;
    uint16_t n = 0;
    while (n < cap && n + 1u < sizeof text) {
        out[n] = (uint8_t)text[n];
        n++;
    }
    return n;
}

static const fw_app_t kws_app = {handle, describe, &app};

const fw_app_t *fw_app_get(void)
{
    app.params = FW_APP_ADAPT_PARAMS;
    elt_adapt_reset(&app.state);
    elt_cmvn_reset(&app_cmvn, &app.cmvn);
    return &kws_app;
}
