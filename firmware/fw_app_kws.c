/*
 * Model runtime: the application behind INFER and RESET (docs/protocol.md, "Model runtime").
 * Compiled only into a `codegen build` firmware, which generates fw_app_model.h
 * (templates/fw_app_model.h.j2) naming this build's model; main.c takes the app from
 * fw_app_get() (a weak NULL stub without a model).
 *
 * INFER: the features first go through the mode's input stage, if it has one (elt_stage.h: the
 * build's FW_APP_MODE_STAGE, generated from codegen/stages/registry.py; e.g. mode cmvn
 * normalises them in place, elt_cmvn_stage.c); z_t = encode(features), then elt_adapt_run with a
 * RAM copy of the adaptation params whose mode is the request's latent search (no_adapt for
 * cmvn); a select stage (cmvn_select) then runs the encoder again on the features it transforms
 * and keeps the answer it chooses. The global timer (fw_timer_now, "QEMU icount ticks" under
 * -icount, docs/targets.md §4) times the encoder, the adaptation (with a stage: the stage plus
 * the head) and the whole request. RESET clears the continual state (p_prev = 0, every stage's
 * state back to its start, e.g. the cmvn statistics to the training ones) or, with k int32
 * values, sets p_prev (host `--resume`). The protocol server's replay rule keeps a retried INFER
 * from advancing the continual state twice. No heap: every buffer is static and sized by the
 * model's constants.
 *
 * Audio mode (FW_APP_STREAM, docs/protocol.md "Audio mode"): AUDIO_BEGIN opens an utterance,
 * every AUDIO chunk of int16 PCM goes through the integer MFCC front end (elt_mfcc_s16.c keeps
 * the window overlap across chunks of any size) and each completed frame advances the encoder
 * one step (elt_lstm_s16_step), so RAM does not grow with T; AUDIO_END pools, runs the head and
 * the adaptation and answers RESULT with the front-end ticks appended. A chunk carries its
 * offset in the utterance and is taken only at the next expected offset, so a chunk is never
 * consumed twice even outside the server's replay rule. A clip stage (mode cmvn) transforms the
 * whole clip before the encoder runs, which a one-pass stream cannot; the audio mode therefore
 * holds the clip's T frames (a->x, as INFER's features) and runs the stage and the encoder at
 * AUDIO_END: the integers of INFER on the same frames. A frame stage (mode cmvn_causal) begins
 * at AUDIO_BEGIN, transforms every frame before its encoder step, and ends at AUDIO_END (an
 * utterance closed early never does); a select stage (mode cmvn_select) steps the encoder on the
 * frames as they come and holds them for its second run at AUDIO_END. INFER and RESET close an
 * open utterance (the feature path shares the encoder's state buffers).
 */
#include <stdint.h>

#include "elt_adapt.h"
#include "elt_stage.h"
#include "fw_app_model.h"
#include "fw_app_wire.h" /* payload offsets: codegen.ir.wire */
#if defined(ELT_ENCODER_F32)
/* codegen bench's float32 baseline (codegen/emit/f32.py): FW_APP_ENCODE = the float encoder. */
#include "fw_app_f32.h"
#endif
#include "fw_frame.h"
#include "fw_server.h"
#include "fw_timer.h"

/* The mode table (fw_app_model.h, generated from codegen.ir.modes): the latent search each mode
 * runs after the encoder, and the input stage it runs before it (0: none). */
static const uint8_t app_mode_search[FW_APP_MODE_COUNT] = FW_APP_MODE_SEARCH;
static const elt_stage_t *const app_mode_stage[FW_APP_MODE_COUNT] = FW_APP_MODE_STAGE;
#define APP_MODE_IS(mask, mode) ((((uint32_t)(mask)) >> (mode)) & 1u)

/* Payload layouts: fw_app_wire.h (generated from codegen.ir.wire, docs/protocol.md). INFER is
 * its fixed part then features i16[T*F]; RESULT its fixed part then p_best i32[k],
 * logits_noadapt i16[C], logits i16[C], z i16[H]. */
#define APP_FEATURES (FW_APP_T * FW_APP_F)
#define APP_INFER_SIZE (APP_INFER_FIXED + 2u * APP_FEATURES)
#define APP_RESULT_SIZE (APP_RESULT_FIXED + 4u * FW_APP_K + 4u * FW_APP_C + 2u * FW_APP_H)
/* INFER's RESULT: the fields above, then u32 ticks_link and link_bytes (codegen.ir.wire RESULT) */
#define APP_INFER_RESULT_SIZE (APP_RESULT_SIZE + 8u)

#if FW_APP_FEATURE_INFER
_Static_assert(APP_INFER_SIZE <= FW_MAX_PAYLOAD,
               "INFER of this model does not fit FW_MAX_PAYLOAD: raise [target] max_payload");
#endif
_Static_assert(APP_INFER_RESULT_SIZE <= FW_REPLY_MAX, "RESULT does not fit FW_REPLY_MAX");
_Static_assert(FW_APP_C <= 255u && FW_APP_K <= 255u && FW_APP_H <= 255u,
               "RESULT carries C, k and H in one byte each");

typedef struct {
    elt_adapt_params_t params; /* RAM copy of the generated params; .mode set per request */
    elt_adapt_state_t state;   /* continual p_prev and all scratch of the adaptation core */
    elt_adapt_result_t res;
    elt_adapt_result_t raw;  /* a select stage: the raw run's result */
    int16_t z_raw[FW_APP_H]; /* a select stage: the raw run's z_t */
#if FW_APP_FEATURE_INFER || FW_APP_STREAM
    /* features [T][F]: INFER's, copied out of the (unaligned) payload, or the audio mode's
     * frames held for a clip or select stage, which needs the whole clip */
    int16_t x[APP_FEATURES];
#endif
    int16_t z[FW_APP_H]; /* z_t, Q0.15 */
} app_ctx_t;

static app_ctx_t app;
/* The link's cost (fw_server_link) when the previous request reached the application: a request's
 * link ticks run from there, so that the reply to that request, sent after it, stands in for this
 * request's own, sent after its reply is packed (docs/protocol.md, "Link cost"). */
static fw_link_stats_t app_link_prev;
/* The link's cost from app_link_prev to the request being handled (set by handle()). */
static fw_link_stats_t app_link_span;
/* A select stage (elt_stage.h; mode cmvn_select): a->raw, a->z_raw hold the raw run, a->res,
 * a->z the stage's (both no-adapt). The answer is the stage's run's where its choose() says so
 * (use), else the raw run's; the no-adapt fields are the raw run's.
 * codegen/intref/model.py::_infer_chosen, field by field. */
static void select_merge(app_ctx_t *a, int32_t use)
{
    elt_adapt_result_t *n = &a->res;
    const elt_adapt_result_t *r = &a->raw;
    n->pred = use ? n->pred_noadapt : r->pred_noadapt;
    n->H_best = use ? n->H_noadapt : r->H_noadapt;
    for (uint32_t j = 0; j < FW_APP_C; j++) {
        n->logits[j] = use ? n->logits_noadapt[j] : r->logits_noadapt[j];
        n->logits_noadapt[j] = r->logits_noadapt[j];
    }
    n->pred_noadapt = r->pred_noadapt;
    n->H_noadapt = r->H_noadapt;
    if (!use) {
        for (uint32_t j = 0; j < FW_APP_H; j++) {
            a->z[j] = a->z_raw[j];
        }
    }
}

/* The raw run is in a->res, a->z: keep it for select_merge. */
static void select_keep_raw(app_ctx_t *a)
{
    a->raw = a->res;
    for (uint32_t j = 0; j < FW_APP_H; j++) {
        a->z_raw[j] = a->z[j];
    }
}

/* A select stage's second run, once the encoder and the adaptation ran on the clip as it is
 * (a->res, a->z): select_second keeps that run and lets the stage transform the clip a->x; the
 * caller encodes a->x into a->z; select_answer runs the adaptation again and keeps the answer
 * the stage chooses. */
static void select_second(app_ctx_t *a, const elt_stage_t *st)
{
    select_keep_raw(a);
    st->second(a->x);
}

static void select_answer(app_ctx_t *a, const elt_stage_t *st, uint32_t sample_id)
{
    elt_adapt_run(&a->params, &a->state, a->z, sample_id, &a->res);
    select_merge(a, st->choose(&a->raw, &a->res));
}

/* Before the encoder: the stage of a clip or frame form on the whole clip x (the frame form in
 * the audio mode's order, begin, every frame, end: the same integers). Its ticks, 0 without. */
static uint64_t stage_before(const elt_stage_t *st, int16_t *x)
{
    if (st == 0 || (st->clip == 0 && st->frame == 0)) {
        return 0;
    }
    const uint64_t t0 = fw_timer_now();
    if (st->clip != 0) {
        st->clip(x);
    } else {
        if (st->begin != 0) {
            st->begin();
        }
        for (uint32_t t = 0; t < FW_APP_T; t++) {
            st->frame(&x[t * FW_APP_F]);
        }
        if (st->end != 0) {
            st->end();
        }
    }
    return fw_timer_now() - t0;
}

/* Every stage's state back to its start (each reset once: the stages of one table share it). */
static void stages_reset(void)
{
    for (uint32_t m = 0; m < FW_APP_MODE_COUNT; m++) {
        const elt_stage_t *st = app_mode_stage[m];
        uint32_t seen = 0;
        for (uint32_t j = 0; j < m && st != 0; j++) {
            seen |= app_mode_stage[j] != 0 && app_mode_stage[j]->reset == st->reset;
        }
        if (st != 0 && st->reset != 0 && !seen) {
            st->reset();
        }
    }
}

/* The RESULT fields after the encoder: the adaptation's result, z_t and the ticks. */
static void pack_result(const app_ctx_t *a, uint32_t sample_id, uint8_t mode, uint32_t t_enc,
                        uint32_t t_adapt, uint8_t *out)
{
    const elt_adapt_result_t *r = &a->res;
    fw_put_u32(&out[APP_RESULT_SAMPLE_ID], sample_id);
    out[APP_RESULT_MODE] = mode;
    out[APP_RESULT_C] = (uint8_t)FW_APP_C;
    out[APP_RESULT_K] = (uint8_t)FW_APP_K;
    out[APP_RESULT_H] = (uint8_t)FW_APP_H;
    fw_put_u32(&out[APP_RESULT_PRED_NOADAPT], (uint32_t)r->pred_noadapt);
    fw_put_u32(&out[APP_RESULT_PRED], (uint32_t)r->pred);
    fw_put_u32(&out[APP_RESULT_H_NOADAPT], (uint32_t)r->H_noadapt);
    fw_put_u32(&out[APP_RESULT_H_BEST], (uint32_t)r->H_best);
    fw_put_u32(&out[APP_RESULT_N_PIVOT_FIX], (uint32_t)r->n_pivot_fix);
    fw_put_u32(&out[APP_RESULT_TICKS_ENCODER], t_enc);
    fw_put_u32(&out[APP_RESULT_TICKS_ADAPT], t_adapt);
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
}

#if FW_APP_FEATURE_INFER
static int32_t infer(app_ctx_t *a, const uint8_t *in, uint16_t len, uint8_t *out, uint16_t *out_len)
{
    uint64_t t0 = fw_timer_now();
    if (len != APP_INFER_SIZE) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    uint32_t sample_id = fw_get_u32(&in[APP_INFER_SAMPLE_ID]);
    uint8_t mode = in[APP_INFER_MODE];
    if (mode >= FW_APP_MODE_COUNT || fw_get_u16(&in[APP_INFER_T]) != FW_APP_T ||
        fw_get_u16(&in[APP_INFER_F]) != FW_APP_F) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    for (uint32_t i = 0; i < APP_FEATURES; i++) {
        a->x[i] = (int16_t)fw_get_u16(&in[APP_INFER_FIXED + 2u * i]);
    }
    a->params.mode = (int32_t)app_mode_search[mode];
    const elt_stage_t *st = app_mode_stage[mode];
    const uint64_t t_stage = stage_before(st, a->x);
    uint64_t t1 = fw_timer_now();
    FW_APP_ENCODE(a->x, a->z);
    uint64_t t2 = fw_timer_now();
    elt_adapt_run(&a->params, &a->state, a->z, sample_id, &a->res);
    if (st != 0 && st->second != 0) { /* the second run (its cost is the adaptation's) */
        select_second(a, st);
        FW_APP_ENCODE(a->x, a->z);
        select_answer(a, st, sample_id);
    }
    uint64_t t3 = fw_timer_now();
    pack_result(a, sample_id, mode, (uint32_t)(t2 - t1), (uint32_t)(t_stage + (t3 - t2)), out);
    fw_put_u32(&out[APP_RESULT_SIZE], app_link_span.ticks);
    fw_put_u32(&out[APP_RESULT_SIZE + 4u], app_link_span.rx_bytes);
    /* Total: payload checks and copy, encoder, adaptation, result packing. */
    fw_put_u32(&out[APP_RESULT_TICKS_TOTAL], (uint32_t)(fw_timer_now() - t0));
    *out_len = (uint16_t)APP_INFER_RESULT_SIZE;
    return (int32_t)FW_MSG_RESULT;
}
#endif

#if FW_APP_STREAM
#include "elt_adpcm.h"
#include "elt_mfcc_s16.h"

/* AUDIO_BEGIN, AUDIO (its fixed part, then pcm i16[n]), AUDIO_END, AUDIO_ACK: fw_app_wire.h.
 * RESULT of AUDIO_END: INFER's RESULT, then u32 ticks_frontend, ticks_link, link_bytes and
 * ticks_unpack (codegen.ir.wire RESULT_STREAM). */
#define APP_STREAM_RESULT_SIZE (APP_RESULT_SIZE + 16u)

_Static_assert(APP_STREAM_RESULT_SIZE <= FW_REPLY_MAX, "RESULT does not fit FW_REPLY_MAX");
_Static_assert(FW_APP_MFCC_N == FW_APP_F, "the front end's coefficients are the model's input");
_Static_assert(FW_APP_MFCC_WIN <= ELT_MFCC_WIN_MAX, "the frame window exceeds ELT_MFCC_WIN_MAX");

typedef struct {
    elt_mfcc_stream_t st; /* the samples of the frame being filled (the overlap) */
    int16_t frame[FW_APP_F] __attribute__((aligned(16))); /* the newest feature frame */
    uint32_t sample_id;
    uint32_t samples; /* received in this utterance */
    uint32_t frames;  /* encoder steps run */
    uint64_t t_front; /* front end, encoder and every request of the utterance so far */
    uint64_t t_enc;
    uint64_t t_stage; /* a frame stage: its work on every frame so far */
    uint64_t t_total;
    fw_link_stats_t link0;    /* the link's cost up to the request before AUDIO_BEGIN */
    const elt_stage_t *stage; /* the mode's input stage, 0: none */
    uint8_t mode;
    uint8_t open;
    uint8_t lookahead; /* a clip stage: frames are held, transformed and encoded at AUDIO_END */
    uint8_t hold;      /* a clip or select stage: frames are held in a->x */
} app_stream_t;

static app_stream_t app_stream;

/* Frames that n samples complete: frame t covers [t hop, t hop + win). */
static uint32_t frames_of(uint32_t n)
{
    return n < (uint32_t)FW_APP_MFCC_WIN
               ? 0u
               : 1u + (n - (uint32_t)FW_APP_MFCC_WIN) / (uint32_t)FW_APP_MFCC_HOP;
}

/* AUDIO_BEGIN and AUDIO are served without a reply of their own (FW_APP_ACK): the link's
 * STATUS acknowledges them, and a refusal is an ERROR (docs/protocol.md, "Audio mode"). */
static int32_t audio_begin(app_ctx_t *a, app_stream_t *s, const uint8_t *in, uint16_t len)
{
    uint64_t t0 = fw_timer_now();
    /* a mode the audio mode does not serve is refused */
    if (len != APP_AUDIO_BEGIN_FIXED || in[APP_AUDIO_BEGIN_MODE] >= FW_APP_MODE_COUNT ||
        !APP_MODE_IS(FW_APP_MODE_AUDIO_MASK, in[APP_AUDIO_BEGIN_MODE])) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    s->sample_id = fw_get_u32(&in[APP_AUDIO_BEGIN_SAMPLE_ID]);
    s->mode = in[APP_AUDIO_BEGIN_MODE];
    a->params.mode = (int32_t)app_mode_search[s->mode];
    s->samples = 0;
    s->frames = 0;
    s->t_front = 0;
    s->t_enc = 0;
    s->t_stage = 0;
    const elt_stage_t *st = app_mode_stage[s->mode];
    s->stage = st;
    s->lookahead = (uint8_t)(st != 0 && st->clip != 0);
    s->hold = (uint8_t)(st != 0 && (st->clip != 0 || st->second != 0));
    if (st != 0 && st->clip == 0 && st->frame != 0 && st->begin != 0) {
        uint64_t tc = fw_timer_now(); /* a frame stage, e.g. from the clips before this one */
        st->begin();
        s->t_stage = fw_timer_now() - tc;
    }
    elt_mfcc_stream_reset(&s->st);
    uint64_t t1 = fw_timer_now();
    if (!s->lookahead) {
        FW_APP_STREAM_BEGIN();
    }
    uint64_t t2 = fw_timer_now();
    s->t_enc = t2 - t1;
    s->open = 1u;
    s->t_total = fw_timer_now() - t0;
    return FW_APP_ACK;
}

/* A clip stage's frames wait in a->x for AUDIO_END; the others go to the encoder now (a select
 * stage's are held too, for its second run; a frame stage transforms each first). */
static void stream_frame(app_ctx_t *a, app_stream_t *s, uint64_t te)
{
    if (s->hold) {
        for (uint32_t f = 0; f < FW_APP_F; f++) {
            a->x[s->frames * FW_APP_F + f] = s->frame[f];
        }
    }
    if (s->lookahead) {
        s->frames++;
        return;
    }
    if (s->stage != 0 && s->stage->frame != 0) {
        s->stage->frame(s->frame);
        uint64_t tn = fw_timer_now();
        s->t_stage += tn - te;
        te = tn;
    }
    FW_APP_STREAM_STEP(s->frame);
    s->frames++;
    s->t_enc += fw_timer_now() - te;
}

/* n samples (little-endian int16 at src, any alignment) through the front end, each completed
 * frame one encoder step. The front end's work area is scratch of one frame (FFT data, power,
 * log mel): on the main stack, whose reserve the other requests leave idle, not in static RAM
 * (INFO's stack high-water mark measures it). */
static void audio_push(app_ctx_t *a, app_stream_t *s, const uint8_t *src, uint32_t n)
{
    elt_mfcc_work_t work;
    for (uint32_t done = 0; done < n;) {
        int32_t used = 0;
        const uint64_t tf = fw_timer_now();
        const int32_t got = elt_mfcc_stream_push(&FW_APP_MFCC_PARAMS, &s->st, &src[2u * done],
                                                 (int32_t)(n - done), &work, s->frame, 1, &used);
        const uint64_t te = fw_timer_now();
        s->t_front += te - tf;
        done += (uint32_t)used;
        if (got > 0) {
            stream_frame(a, s, te);
        }
    }
    s->samples += n;
}

/* Only the next chunk is taken (its offset the samples so far); more audio than T frames is
 * refused before any is used. */
static int chunk_ok(const app_stream_t *s, uint32_t offset, uint32_t n)
{
    return s->open && offset == s->samples && frames_of(s->samples + n) <= FW_APP_T;
}

static int32_t audio(app_ctx_t *a, app_stream_t *s, const uint8_t *in, uint16_t len)
{
    uint64_t t0 = fw_timer_now();
    if (len < APP_AUDIO_FIXED || ((len - APP_AUDIO_FIXED) & 1u) != 0u) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    const uint32_t n = (uint32_t)(len - APP_AUDIO_FIXED) / 2u;
    if (!chunk_ok(s, fw_get_u32(&in[APP_AUDIO_OFFSET]), n)) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    /* the samples go from the (unaligned, little-endian) payload straight into the front end's
     * frame window */
    audio_push(a, s, &in[APP_AUDIO_FIXED], n);
    s->t_total += fw_timer_now() - t0;
    return FW_APP_ACK;
}

/* AUDIO_ADPCM: one IMA-ADPCM block (elt_adpcm.h; its header is the payload from the predictor
 * on) decoded into int16 on the stack, then as AUDIO. The decoding is front-end work. */
static int32_t audio_adpcm(app_ctx_t *a, app_stream_t *s, const uint8_t *in, uint16_t len)
{
    uint64_t t0 = fw_timer_now();
    if (len < APP_AUDIO_ADPCM_FIXED) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    const uint32_t n = fw_get_u16(&in[APP_AUDIO_ADPCM_SAMPLES]);
    if (n == 0u || n > APP_ADPCM_MAX_SAMPLES ||
        len != APP_AUDIO_ADPCM_PREDICTOR + ELT_ADPCM_BLOCK_BYTES(n) ||
        !chunk_ok(s, fw_get_u32(&in[APP_AUDIO_ADPCM_OFFSET]), n)) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    int16_t pcm[APP_ADPCM_MAX_SAMPLES] __attribute__((aligned(16)));
    elt_adpcm_decode(&in[APP_AUDIO_ADPCM_PREDICTOR], n, pcm);
    s->t_front += fw_timer_now() - t0;
    audio_push(a, s, (const uint8_t *)pcm, n);
    s->t_total += fw_timer_now() - t0;
    return FW_APP_ACK;
}

/* The held clip a->x through every encoder step, into a->z (the step takes an aligned frame:
 * each row is copied to s->frame). */
static void encode_held(app_ctx_t *a, app_stream_t *s)
{
    FW_APP_STREAM_BEGIN();
    for (uint32_t t = 0; t < FW_APP_T; t++) {
        for (uint32_t f = 0; f < FW_APP_F; f++) {
            s->frame[f] = a->x[t * FW_APP_F + f];
        }
        FW_APP_STREAM_STEP(s->frame);
    }
    FW_APP_STREAM_END(a->z);
}

static int32_t audio_end(app_ctx_t *a, app_stream_t *s, const uint8_t *in, uint16_t len,
                         uint8_t *out, uint16_t *out_len)
{
    uint64_t t0 = fw_timer_now();
    if (!s->open || len != APP_AUDIO_END_FIXED ||
        fw_get_u32(&in[APP_AUDIO_END_SAMPLES]) != s->samples || s->frames != FW_APP_T) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    const elt_stage_t *st = s->stage;
    if (s->lookahead) { /* the whole clip heard: the clip stage as INFER runs it, the encoder */
        st->clip(a->x);
        encode_held(a, s);
    } else {
        FW_APP_STREAM_END(a->z);
    }
    /* AUDIO_BEGIN's latent search, whatever ran since */
    a->params.mode = (int32_t)app_mode_search[s->mode];
    uint64_t t1 = fw_timer_now();
    if (st != 0 && st->clip == 0 && st->frame != 0 && st->end != 0) {
        st->end(); /* a frame stage: the whole clip heard (e.g. it joins the statistics) */
    }
    elt_adapt_run(&a->params, &a->state, a->z, s->sample_id, &a->res);
    if (st != 0 && st->second != 0) { /* the second run on the held clip, and the choice */
        select_second(a, st);
        encode_held(a, s);
        select_answer(a, st, s->sample_id);
    }
    uint64_t t2 = fw_timer_now();
    s->open = 0u;
    /* encoder: the steps so far and the end (with a clip stage all of it: the stage and the
     * held clip's steps count as encoder work); adaptation: what the mode adds after it (a
     * frame stage's work on the frames included) */
    pack_result(a, s->sample_id, s->mode, (uint32_t)(s->t_enc + (t1 - t0)),
                (uint32_t)(s->t_stage + (t2 - t1)), out);
    fw_link_stats_t link;
    fw_server_link(&link);
    fw_put_u32(&out[APP_RESULT_SIZE], (uint32_t)s->t_front);
    fw_put_u32(&out[APP_RESULT_SIZE + 4u], link.ticks - s->link0.ticks);
    fw_put_u32(&out[APP_RESULT_SIZE + 8u], link.rx_bytes - s->link0.rx_bytes);
    /* ticks_unpack: none, the front end takes the samples from the payloads (ticks_frontend) */
    fw_put_u32(&out[APP_RESULT_SIZE + 12u], 0u);
    /* Total: every request of the utterance, payload checks and copies included. */
    fw_put_u32(&out[APP_RESULT_TICKS_TOTAL], (uint32_t)(s->t_total + (fw_timer_now() - t0)));
    *out_len = (uint16_t)APP_STREAM_RESULT_SIZE;
    return (int32_t)FW_MSG_RESULT;
}

/* The continuous mode (docs/stream.md): STREAM_BEGIN opens a stream without clip boundaries;
 * each frame of the front end joins a ring of the last T frames, and every `every` frames (once
 * T exist) the ring is one window, scored from scratch as INFER scores a clip in the stream's
 * mode (its input statistics carried from window to window), its probabilities averaged,
 * thresholded and suppressed by the detector (elt_detect_s16.c). Each STREAM chunk is answered
 * with DETECTIONS: the detections its samples completed and, on request, every window's record;
 * a chunk sent again is answered from the server's reply record, so no detection is lost or
 * made twice. STREAM_END answers STREAM_SUMMARY. The stream shares the audio mode's front end
 * and encoder state: AUDIO_BEGIN, INFER and RESET close it, STREAM_BEGIN closes an utterance.
 * Python twin: codegen/intref/listen.py (StreamReference). */
#include "elt_detect_s16.h"

#define APP_DETECTIONS_REPLY_MAX                                                                   \
    (APP_DETECTIONS_FIXED + APP_STREAM_MAX_WINDOWS * (4u + 1u + 2u) +                              \
     APP_STREAM_MAX_WINDOWS * (4u + 1u + 1u + 2u + 2u * FW_APP_C))
_Static_assert(APP_DETECTIONS_REPLY_MAX <= FW_REPLY_MAX, "DETECTIONS does not fit FW_REPLY_MAX");
_Static_assert(APP_STREAM_SUMMARY_FIXED <= FW_REPLY_MAX, "STREAM_SUMMARY does not fit");
_Static_assert(FW_APP_C <= ELT_C_MAX, "the detector holds fewer classes than C");
_Static_assert(APP_STREAM_SMOOTH_MAX <= ELT_DETECT_SMOOTH_MAX, "the detector's history is short");

typedef struct {
    uint32_t frame;
    uint8_t cls;
    uint8_t flags; /* bit 0: the normalised run answered; bit 1: it detects */
    uint16_t score;
    int16_t logits[FW_APP_C];
} app_window_t;

typedef struct {
    elt_detect_params_t det_p;
    elt_detect_t det;
    int16_t ring[FW_APP_T][FW_APP_F]; /* the last T frames; ring_next the oldest */
    uint32_t ring_next;
    uint32_t samples;
    uint32_t frames;
    uint32_t windows;
    uint32_t detections;
    uint32_t every;
    uint64_t t_front; /* front end and ADPCM decoding */
    uint64_t t_enc;   /* the encoder over every window */
    uint64_t t_adapt; /* input normalisation, head and the choice */
    uint64_t t_detect;
    uint64_t t_total;
    fw_link_stats_t link0; /* the link's cost up to the request before STREAM_BEGIN */
    uint32_t nw;           /* windows the chunk being served completed */
    app_window_t win[APP_STREAM_MAX_WINDOWS];
    uint8_t mode;
    uint8_t open;
    uint8_t records;
} app_listen_t;

static app_listen_t app_listen;

static uint32_t listen_windows_of(const app_listen_t *l, uint32_t frames)
{
    return frames < FW_APP_T
               ? 0u
               : 1u + (uint32_t)elt_udiv64_inline(frames - FW_APP_T, (uint64_t)l->every);
}

static void put_u64(uint8_t *p, uint64_t v)
{
    fw_put_u32(p, (uint32_t)v);
    fw_put_u32(p + 4, (uint32_t)(v >> 32));
}

static int32_t listen_begin(app_ctx_t *a, app_listen_t *l, const uint8_t *in, uint16_t len)
{
    uint64_t t0 = fw_timer_now();
    if (len != APP_STREAM_BEGIN_FIXED) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    const uint8_t mode = in[APP_STREAM_BEGIN_MODE];
    const uint32_t keywords = fw_get_u32(&in[APP_STREAM_BEGIN_KEYWORDS]);
    if (mode >= FW_APP_MODE_COUNT || !APP_MODE_IS(FW_APP_MODE_AUDIO_MASK, mode) ||
        app_mode_search[mode] != ELT_MODE_NO_ADAPT || in[APP_STREAM_BEGIN_FLAGS] > 1u ||
        in[APP_STREAM_BEGIN_EVERY] == 0u || in[APP_STREAM_BEGIN_SMOOTH] == 0u ||
        in[APP_STREAM_BEGIN_SMOOTH] > APP_STREAM_SMOOTH_MAX ||
        fw_get_u16(&in[APP_STREAM_BEGIN_THRESHOLD]) > (1u << ELT_PROB_FRAC) ||
        (FW_APP_C < 32u && (keywords >> FW_APP_C) != 0u)) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    l->mode = mode;
    l->records = in[APP_STREAM_BEGIN_FLAGS];
    l->every = in[APP_STREAM_BEGIN_EVERY];
    l->det_p.smooth = in[APP_STREAM_BEGIN_SMOOTH];
    l->det_p.threshold = fw_get_u16(&in[APP_STREAM_BEGIN_THRESHOLD]);
    l->det_p.suppress = fw_get_u16(&in[APP_STREAM_BEGIN_SUPPRESS]);
    l->det_p.keywords = keywords;
    l->det_p.n_classes = (int32_t)FW_APP_C;
    elt_detect_reset(&l->det);
    elt_mfcc_stream_reset(&app_stream.st);
    stages_reset(); /* every input stage's state from its start (cmvn: the training statistics) */
    a->params.mode = ELT_MODE_NO_ADAPT;
    l->ring_next = 0;
    l->samples = l->frames = l->windows = l->detections = 0;
    l->t_front = l->t_enc = l->t_adapt = l->t_detect = 0;
    l->open = 1u;
    l->t_total = fw_timer_now() - t0;
    return FW_APP_ACK;
}

/* The window in a->x scored as INFER scores a clip in mode l->mode (its input stage, the
 * stepping encoder, no latent search; a select stage's second run and choice): a->res.logits are
 * the answering run's; returns the record's flags bit 0 (the stage's run answered). */
static uint8_t listen_infer(app_ctx_t *a, app_listen_t *l)
{
    uint64_t t0 = fw_timer_now();
    uint64_t te = 0;
    int32_t use = 0;
    const elt_stage_t *st = app_mode_stage[l->mode];
    (void)stage_before(st, a->x);
    uint64_t t1 = fw_timer_now();
    encode_held(a, &app_stream);
    te += fw_timer_now() - t1;
    elt_adapt_run(&a->params, &a->state, a->z, l->frames, &a->res);
    if (st != 0 && st->second != 0) {
        select_keep_raw(a);
        st->second(a->x);
        uint64_t t3 = fw_timer_now();
        encode_held(a, &app_stream);
        te += fw_timer_now() - t3;
        elt_adapt_run(&a->params, &a->state, a->z, l->frames, &a->res);
        use = st->choose(&a->raw, &a->res);
        select_merge(a, use);
    }
    l->t_enc += te;
    l->t_adapt += fw_timer_now() - t0 - te;
    return (uint8_t)(use ? 1u : 0u);
}

/* A frame of the front end (app_stream.frame) joins the ring; a window ends at it every
 * l->every frames once T frames exist: scored, averaged, its record kept for the reply. */
static void listen_frame(app_ctx_t *a, app_listen_t *l)
{
    for (uint32_t f = 0; f < FW_APP_F; f++) {
        l->ring[l->ring_next][f] = app_stream.frame[f];
    }
    l->ring_next = l->ring_next + 1u == FW_APP_T ? 0u : l->ring_next + 1u;
    const uint32_t t = l->frames++;
    if (t + 1u < FW_APP_T || listen_windows_of(l, t + 1u) == listen_windows_of(l, t)) {
        return;
    }
    for (uint32_t i = 0, r = l->ring_next; i < FW_APP_T;
         i++, r = r + 1u == FW_APP_T ? 0u : r + 1u) {
        for (uint32_t f = 0; f < FW_APP_F; f++) {
            a->x[i * FW_APP_F + f] = l->ring[r][f];
        }
    }
    app_window_t *w = &l->win[l->nw++];
    w->flags = listen_infer(a, l);
    uint64_t t0 = fw_timer_now();
    uint16_t probs[FW_APP_C];
    int32_t cls;
    uint32_t score;
    elt_probs_q15(a->res.logits, (int32_t)FW_APP_C, a->params.logit_frac, a->params.es.exp2_lut,
                  probs);
    if (elt_detect_step(&l->det_p, &l->det, t, probs, &cls, &score)) {
        w->flags |= 2u;
        l->detections++;
    }
    l->t_detect += fw_timer_now() - t0;
    w->frame = t;
    w->cls = (uint8_t)cls;
    w->score = (uint16_t)score;
    for (uint32_t c = 0; c < FW_APP_C; c++) {
        w->logits[c] = a->res.logits[c];
    }
    l->windows++;
}

/* n samples (little-endian int16 at src) through the front end, each frame to listen_frame. */
static void listen_push(app_ctx_t *a, app_listen_t *l, const uint8_t *src, uint32_t n)
{
    elt_mfcc_work_t work;
    for (uint32_t done = 0; done < n;) {
        int32_t used = 0;
        const uint64_t tf = fw_timer_now();
        const int32_t got =
            elt_mfcc_stream_push(&FW_APP_MFCC_PARAMS, &app_stream.st, &src[2u * done],
                                 (int32_t)(n - done), &work, app_stream.frame, 1, &used);
        l->t_front += fw_timer_now() - tf;
        done += (uint32_t)used;
        if (got > 0) {
            listen_frame(a, l);
        }
    }
    l->samples += n;
}

/* Only the next chunk is taken (its offset the samples so far), and only one that completes at
 * most APP_STREAM_MAX_WINDOWS windows (the records a DETECTIONS carries). */
static int listen_chunk_ok(const app_listen_t *l, uint32_t offset, uint32_t n)
{
    return l->open && offset == l->samples &&
           listen_windows_of(l, frames_of(l->samples + n)) - l->windows <= APP_STREAM_MAX_WINDOWS;
}

/* DETECTIONS: the detections of the windows this chunk completed, then (on request) their
 * records, each array after the other (codegen.ir.wire DETECTIONS). */
static uint16_t listen_reply(const app_listen_t *l, uint32_t offset, uint8_t *out)
{
    uint32_t nd = 0;
    for (uint32_t i = 0; i < l->nw; i++) {
        nd += (l->win[i].flags >> 1) & 1u;
    }
    const uint32_t nw = l->records ? l->nw : 0u;
    fw_put_u32(&out[APP_DETECTIONS_OFFSET], offset);
    fw_put_u32(&out[APP_DETECTIONS_FRAMES], l->frames);
    out[APP_DETECTIONS_WINDOWS] = (uint8_t)nw;
    out[APP_DETECTIONS_DETECTIONS] = (uint8_t)nd;
    uint32_t o = APP_DETECTIONS_FIXED;
    for (uint32_t i = 0, k = 0; i < l->nw; i++) {
        const app_window_t *w = &l->win[i];
        if (w->flags & 2u) {
            fw_put_u32(&out[o + 4u * k], w->frame);
            out[o + 4u * nd + k] = w->cls;
            fw_put_u16(&out[o + 5u * nd + 2u * k], w->score);
            k++;
        }
    }
    o += 7u * nd;
    for (uint32_t i = 0; i < nw; i++) {
        const app_window_t *w = &l->win[i];
        fw_put_u32(&out[o + 4u * i], w->frame);
        out[o + 4u * nw + i] = w->cls;
        out[o + 5u * nw + i] = w->flags;
        fw_put_u16(&out[o + 6u * nw + 2u * i], w->score);
        for (uint32_t c = 0; c < FW_APP_C; c++) {
            fw_put_u16(&out[o + 8u * nw + 2u * (i * FW_APP_C + c)], (uint16_t)w->logits[c]);
        }
    }
    return (uint16_t)(o + nw * (8u + 2u * FW_APP_C));
}

/* STREAM (raw PCM) and STREAM_ADPCM (one IMA-ADPCM block, decoded on the stack as AUDIO_ADPCM's):
 * the samples through the front end, answered with DETECTIONS. */
static int32_t listen_chunk(app_ctx_t *a, app_listen_t *l, uint8_t type, const uint8_t *in,
                            uint16_t len, uint8_t *out, uint16_t *out_len)
{
    uint64_t t0 = fw_timer_now();
    if (len < APP_STREAM_ADPCM_FIXED) { /* either payload: the offset and at least 3 samples */
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    const uint32_t offset = fw_get_u32(&in[APP_STREAM_OFFSET]);
    if (type == FW_MSG_STREAM) {
        const uint32_t n = (uint32_t)(len - APP_STREAM_FIXED) / 2u;
        if (((len - APP_STREAM_FIXED) & 1u) != 0u || !listen_chunk_ok(l, offset, n)) {
            return -(int32_t)FW_ERR_PAYLOAD;
        }
        l->nw = 0;
        listen_push(a, l, &in[APP_STREAM_FIXED], n);
    } else {
        const uint32_t n = fw_get_u16(&in[APP_STREAM_ADPCM_SAMPLES]);
        if (n == 0u || n > APP_ADPCM_MAX_SAMPLES ||
            len != APP_STREAM_ADPCM_PREDICTOR + ELT_ADPCM_BLOCK_BYTES(n) ||
            !listen_chunk_ok(l, offset, n)) {
            return -(int32_t)FW_ERR_PAYLOAD;
        }
        int16_t pcm[APP_ADPCM_MAX_SAMPLES] __attribute__((aligned(16)));
        elt_adpcm_decode(&in[APP_STREAM_ADPCM_PREDICTOR], n, pcm);
        l->t_front += fw_timer_now() - t0;
        l->nw = 0;
        listen_push(a, l, (const uint8_t *)pcm, n);
    }
    *out_len = listen_reply(l, offset, out);
    l->t_total += fw_timer_now() - t0;
    return (int32_t)FW_MSG_DETECTIONS;
}

static int32_t listen_end(app_listen_t *l, const uint8_t *in, uint16_t len, uint8_t *out,
                          uint16_t *out_len)
{
    uint64_t t0 = fw_timer_now();
    if (!l->open || len != APP_STREAM_END_FIXED ||
        fw_get_u32(&in[APP_STREAM_END_SAMPLES]) != l->samples) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    l->open = 0u;
    fw_link_stats_t link;
    fw_server_link(&link);
    fw_put_u32(&out[APP_STREAM_SUMMARY_SAMPLES], l->samples);
    fw_put_u32(&out[APP_STREAM_SUMMARY_FRAMES], l->frames);
    fw_put_u32(&out[APP_STREAM_SUMMARY_WINDOWS], l->windows);
    fw_put_u32(&out[APP_STREAM_SUMMARY_DETECTIONS], l->detections);
    put_u64(&out[APP_STREAM_SUMMARY_TICKS_FRONTEND], l->t_front);
    put_u64(&out[APP_STREAM_SUMMARY_TICKS_ENCODER], l->t_enc);
    put_u64(&out[APP_STREAM_SUMMARY_TICKS_ADAPT], l->t_adapt);
    put_u64(&out[APP_STREAM_SUMMARY_TICKS_DETECT], l->t_detect);
    put_u64(&out[APP_STREAM_SUMMARY_TICKS_LINK], (uint64_t)(link.ticks - l->link0.ticks));
    put_u64(&out[APP_STREAM_SUMMARY_LINK_BYTES], (uint64_t)(link.rx_bytes - l->link0.rx_bytes));
    put_u64(&out[APP_STREAM_SUMMARY_TICKS_TOTAL], l->t_total + (fw_timer_now() - t0));
    *out_len = (uint16_t)APP_STREAM_SUMMARY_FIXED;
    return (int32_t)FW_MSG_STREAM_SUMMARY;
}

/* The continuous mode's messages (0: another type). */
static int32_t listen_handle(app_ctx_t *a, uint8_t type, const uint8_t *in, uint16_t len,
                             uint8_t *out, uint16_t *out_len, const fw_link_stats_t *prev)
{
    app_listen_t *l = &app_listen;
    if (type == FW_MSG_STREAM_BEGIN) {
        int32_t r = listen_begin(a, l, in, len);
        if (r > 0) {
            app_stream.open = 0u; /* the stream takes the front end and the encoder's state */
            l->link0 = *prev;
        }
        return r;
    }
    if (type == FW_MSG_STREAM || type == FW_MSG_STREAM_ADPCM) {
        return listen_chunk(a, l, type, in, len, out, out_len);
    }
    if (type == FW_MSG_STREAM_END) {
        return listen_end(l, in, len, out, out_len);
    }
    if (type == FW_MSG_AUDIO_BEGIN || type == FW_MSG_INFER || type == FW_MSG_RESET) {
        l->open = 0u;
    }
    return 0;
}
#endif

static int32_t reset(app_ctx_t *a, const uint8_t *in, uint16_t len, uint16_t *out_len)
{
    if (len != 0u && len != 4u * FW_APP_K) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    elt_adapt_reset(&a->state);
    stages_reset();
    if (len != 0u) { /* resume a continual stream: p_prev = the last recorded best p (Q4.27) */
        for (uint32_t j = 0; j < FW_APP_K; j++) {
            a->state.p_prev[j] = (int32_t)fw_get_u32(&in[APP_RESET_FIXED + 4u * j]);
        }
    }
    *out_len = 0;
    return (int32_t)FW_MSG_RESET_ACK;
}

static int32_t handle(void *ctx, uint8_t type, const uint8_t *payload, uint16_t len, uint8_t *out,
                      uint16_t *out_len)
{
    app_ctx_t *a = (app_ctx_t *)ctx;
    fw_link_stats_t now;
    fw_server_link(&now);
    const fw_link_stats_t prev = app_link_prev;
    app_link_prev = now;
    app_link_span.ticks = now.ticks - prev.ticks;
    app_link_span.rx_bytes = now.rx_bytes - prev.rx_bytes;
#if FW_APP_STREAM
    const int32_t lr = listen_handle(a, type, payload, len, out, out_len, &prev);
    if (lr != 0) {
        return lr;
    }
    if (type == FW_MSG_AUDIO_BEGIN) { /* the utterance's link cost starts at the previous one */
        int32_t r = audio_begin(a, &app_stream, payload, len);
        if (r > 0) {
            app_stream.link0 = prev;
        }
        return r;
    }
    if (type == FW_MSG_AUDIO) {
        return audio(a, &app_stream, payload, len);
    }
    if (type == FW_MSG_AUDIO_ADPCM) {
        return audio_adpcm(a, &app_stream, payload, len);
    }
    if (type == FW_MSG_AUDIO_END) {
        return audio_end(a, &app_stream, payload, len, out, out_len);
    }
    if (type == FW_MSG_INFER || type == FW_MSG_RESET) {
        app_stream.open = 0u; /* the feature path reuses the encoder's state */
    }
#endif
    switch (type) {
#if FW_APP_FEATURE_INFER
    case FW_MSG_INFER:
        return infer(a, payload, len, out, out_len);
#endif
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
    stages_reset();
    return &kws_app;
}
