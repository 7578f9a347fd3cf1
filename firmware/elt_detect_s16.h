/*
 * The continuous mode's detector (docs/stream.md): softmax probabilities of a window's int16
 * logits, their average over the last windows, a threshold and a suppression time. Python twin:
 * codegen/intref/listen.py (probs_q15, Detector), function for function.
 */
#ifndef ELT_DETECT_S16_H
#define ELT_DETECT_S16_H

#include <stdint.h>

#include "elt_types.h" /* ELT_C_MAX */

/* windows averaged at most: codegen.ir.wire STREAM_SMOOTH_MAX */
#ifndef ELT_DETECT_SMOOTH_MAX
#define ELT_DETECT_SMOOTH_MAX 16
#endif

#define ELT_PROB_FRAC 15 /* probabilities and scores: Q0.15 */

/* Set by STREAM_BEGIN: windows averaged (1..ELT_DETECT_SMOOTH_MAX), the score that detects
 * (Q0.15), the hops after a detection without another, the classes that may be detected (bit c:
 * class c) and the classes C. */
typedef struct {
    uint32_t smooth;
    uint32_t threshold;
    uint32_t suppress;
    uint32_t keywords;
    int32_t n_classes;
} elt_detect_params_t;

/* The last `smooth` windows' probabilities (a ring), their sums per class, the windows seen and
 * the frame of the last detection. */
typedef struct {
    uint16_t hist[ELT_DETECT_SMOOTH_MAX][ELT_C_MAX];
    uint32_t sums[ELT_C_MAX];
    uint32_t seen;
    uint32_t next; /* the ring slot the next window takes */
    uint32_t last; /* the frame of the last detection */
    uint32_t any;  /* a detection was made */
} elt_detect_t;

/* p[i] = floor((e_i 2^15 + floor(S / 2)) / S), e_i the entropy kernel's softmax terms (Q1.30) of
 * logits in Q(15-frac).frac, S their sum: Q0.15, at most 2^15. */
void elt_probs_q15(const int16_t *logits, int32_t n, int32_t frac, const int32_t *exp2_lut,
                   uint16_t *p);

void elt_detect_reset(elt_detect_t *d);

/* One window ending at `frame`: its probabilities join the average; *cls = the first maximum of
 * the sums, *score = the rounded mean of its probabilities. Returns 1 when it detects: `smooth`
 * windows seen, a keyword class, score >= threshold, and no detection in the `suppress` frames
 * before. */
int32_t elt_detect_step(const elt_detect_params_t *p, elt_detect_t *d, uint32_t frame,
                        const uint16_t *probs, int32_t *cls, uint32_t *score);

#endif /* ELT_DETECT_S16_H */
