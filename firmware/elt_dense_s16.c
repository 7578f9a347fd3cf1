/*
 * Hidden Linear + ReLU (elt_dense_s16.h). The sum is exact in int32 (the compiler's proof:
 * Σ|w|·2^15 + |b| + rounding <= 2^31 - 1 for every row); ReLU before the rounding shift, which
 * then rounds a non-negative value; the one rounding rule of fw_fixed.h.
 */
#include "elt_dense_s16.h"

#include "fw_fixed.h"

void elt_dense_relu_s16(const elt_dense_s16_params_t *p, const int16_t *x, int16_t *y)
{
    for (uint32_t o = 0; o < p->out_features; ++o) {
        const int16_t *w = p->w + o * p->in_features;
        int32_t acc = p->b[o];
        for (uint32_t i = 0; i < p->in_features; ++i) {
            acc += (int32_t)w[i] * x[i];
        }
        y[o] = fx_sat16(fx_rshift_round32(acc > 0 ? acc : 0, p->shift));
    }
}
