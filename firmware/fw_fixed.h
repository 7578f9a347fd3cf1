/*
 * Numeric contract, C side (docs/numeric.md). codegen/base/fixed.py mirrors every function here
 * with the same name; the host harness tests/intharness/ compiles it with the kernels it serves
 * and tests/firmware/test_int_host_c.py compares their results with the Python reference.
 * Build with -fwrapv: signed overflow is defined, but every use below is proven not to overflow
 * by the compiler (docs/numeric.md §3) and saturation is always explicit.
 */
#ifndef FW_FIXED_H
#define FW_FIXED_H

#include <stdint.h>

#define FX_INT16_MIN (-32768)
#define FX_INT16_MAX 32767

/* Saturate to int16 (explicit, never implied by a cast). */
static inline int16_t fx_sat16(int32_t x)
{
    return (int16_t)(x < FX_INT16_MIN ? FX_INT16_MIN : (x > FX_INT16_MAX ? FX_INT16_MAX : x));
}

static inline int16_t fx_sat16_64(int64_t x)
{
    return (int16_t)(x < FX_INT16_MIN ? FX_INT16_MIN : (x > FX_INT16_MAX ? FX_INT16_MAX : x));
}

static inline int32_t fx_sat32_64(int64_t x)
{
    return (int32_t)(x < INT32_MIN ? INT32_MIN : (x > INT32_MAX ? INT32_MAX : x));
}

/* The one rounding rule: round half up, (x + 2^(s-1)) >> s, arithmetic shift (ARM ASR; Python
 * >> on negative ints is the same floor shift). s = 0 returns x; s < 0 shifts left. */
static inline int32_t fx_rshift_round32(int32_t x, int s)
{
    if (s > 0) {
        return (int32_t)(((int64_t)x + ((int64_t)1 << (s - 1))) >> s);
    }
    return (int32_t)((uint32_t)x << (-s));
}

static inline int64_t fx_rshift_round64(int64_t x, int s)
{
    if (s > 0) {
        return (x + ((int64_t)1 << (s - 1))) >> s;
    }
    return (int64_t)((uint64_t)x << (-s));
}

/* Division of a non-negative numerator by a positive denominator (C `/` truncates, Python `//`
 * floors: they agree only there). Callers prove num >= 0 and den > 0. */
static inline int64_t fx_div_pos64(int64_t num, int64_t den)
{
    return num / den;
}

#endif /* FW_FIXED_H */
