/*
 * Input stages: what a mode runs on the features before the encoder (docs/architecture.md §3;
 * the registry codegen/stages/registry.py, whose every entry names its elt_stage_t, the C file
 * that defines it and the constants that file reads from the build's fw_app_model.h). The build
 * generates the table of each mode's stage (FW_APP_MODE_STAGE, 0: none); the model runtime
 * (fw_app_kws.c) calls the hooks of the stage's form and a stage sets only those, the others 0:
 *
 *   clip    clip(x) transforms the whole clip x [T][F] (int16, the model's input format) in
 *           place before the encoder; the audio mode holds the clip's frames and runs it, then
 *           the encoder, when the clip ends.
 *   frame   begin() before the clip's first frame, frame(f) on each frame f [F] in place before
 *           its encoder step, end() once the whole clip is heard (begin and end may be 0).
 *   select  the clip is encoded as it is; second(x) then transforms the held clip x in place for
 *           a second encoder run (both no-adapt), and choose(raw, run) says, from the two
 *           adaptation results, whether the second run's answer stands (nonzero) or the raw
 *           run's.
 *
 * reset() (0: a stage without state) puts the stage's state back to its start: at boot and on
 * RESET. Each stage keeps its state in its own file; the stages of one table (the three cmvn
 * forms, elt_cmvn_stage.c) share theirs, as their Python twins share one state.
 */
#ifndef ELT_STAGE_H
#define ELT_STAGE_H

#include <stdint.h>

#include "elt_adapt.h"

typedef struct {
    void (*reset)(void);
    void (*clip)(int16_t *x);
    void (*begin)(void);
    void (*frame)(int16_t *frame);
    void (*end)(void);
    void (*second)(int16_t *x);
    int32_t (*choose)(const elt_adapt_result_t *raw, const elt_adapt_result_t *run);
} elt_stage_t;

#endif /* ELT_STAGE_H */
