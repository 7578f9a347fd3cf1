/*
 * The continuous mode's detector (docs/stream.md; Python twin codegen/intref/listen.py): the
 * probabilities of a window's logits from the entropy kernel's softmax terms
 * (elt_entropy_s16.c), averaged over the last windows, thresholded, with a suppression time (the
 * scheme of TFLM micro_speech recognize_commands.cc, the suppression holding for every class).
 */
#include "elt_detect_s16.h"

#include "elt_entropy_s16.h"
#include "elt_intmath.h"

#define ELT_DETECT_D_CLAMP 31 /* nats: as the entropy kernel (elt_entropy_s16.c) */

void elt_probs_q15(const int16_t *logits, int32_t n, int32_t frac, const int32_t *exp2_lut,
                   uint16_t *p)
{
    int32_t lmax = logits[0];
    const int32_t dlim = ELT_DETECT_D_CLAMP << frac;
    uint32_t e[ELT_C_MAX];
    uint64_t s = 0;
    elt_recip_t r;
    int32_t i;
    for (i = 1; i < n; i++) {
        if (logits[i] > lmax) {
            lmax = logits[i];
        }
    }
    for (i = 0; i < n; i++) {
        int32_t d = lmax - logits[i];
        if (d > dlim) {
            d = dlim;
        }
        /* a = d in Q5.26, e = 2^-round(a log2 e): Q1.30, the maximum's exactly 2^30 */
        e[i] = (uint32_t)elt_exp2neg_q30(elt_mul_rr(d << (26 - frac), ELT_LOG2E_Q30, 30), exp2_lut);
        s += e[i];
    }
    /* S >= 2^30 and e 2^15 < 2^46: each quotient is at most 2^15 (elt_udiv_q's fast path) */
    elt_recip_set(&r, s);
    for (i = 0; i < n; i++) {
        p[i] = (uint16_t)elt_udiv_q(((uint64_t)e[i] << ELT_PROB_FRAC) + (s >> 1), &r);
    }
}

void elt_detect_reset(elt_detect_t *d)
{
    uint32_t c;
    for (c = 0; c < ELT_C_MAX; c++) {
        d->sums[c] = 0;
    }
    d->seen = 0;
    d->next = 0;
    d->last = 0;
    d->any = 0;
}

int32_t elt_detect_step(const elt_detect_params_t *p, elt_detect_t *d, uint32_t frame,
                        const uint16_t *probs, int32_t *cls, uint32_t *score)
{
    uint16_t *slot = d->hist[d->next];
    const uint32_t full = d->seen >= p->smooth;
    const uint32_t n = full ? p->smooth : d->seen + 1u;
    int32_t top = 0;
    int32_t c;
    for (c = 0; c < p->n_classes; c++) { /* the oldest window leaves the sums, the new one joins */
        d->sums[c] += (uint32_t)probs[c] - (full ? slot[c] : 0u);
        slot[c] = probs[c];
        if (d->sums[c] > d->sums[top]) {
            top = c;
        }
    }
    d->next = d->next + 1u == p->smooth ? 0u : d->next + 1u;
    d->seen++;
    *cls = top;
    *score = (uint32_t)elt_udiv64_inline((uint64_t)d->sums[top] + n / 2u, n);
    if (d->seen < p->smooth || top >= 32 || ((p->keywords >> top) & 1u) == 0u ||
        *score < p->threshold || (d->any && frame - d->last < p->suppress)) {
        return 0;
    }
    d->last = frame;
    d->any = 1u;
    return 1;
}
