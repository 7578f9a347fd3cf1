/*
 * A hidden Linear + ReLU layer of an MLP head (int16 in and out, int32 sum proven by the
 * compiler, codegen/quantize/model.py quantize_mlp): y = sat16(rshift_round(max(W x + b, 0),
 * shift)). Python twin: codegen/intref/model.py encode_int.
 */
#ifndef ELT_DENSE_S16_H
#define ELT_DENSE_S16_H

#include <stdint.h>

typedef struct {
    uint16_t in_features;
    uint16_t out_features;
    int8_t shift;     /* accumulator -> output format (negative: a left shift) */
    const int16_t *w; /* [out][in] */
    const int32_t *b; /* [out] at the accumulator's fraction bits */
} elt_dense_s16_params_t;

void elt_dense_relu_s16(const elt_dense_s16_params_t *p, const int16_t *x, int16_t *y);

#endif /* ELT_DENSE_S16_H */
