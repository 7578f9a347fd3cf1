/*
 * Per-sample random streams: splitmix64 seeding, four xoshiro128** lanes, piecewise-linear
 * inverse-CDF Gaussian (docs/cmaes.md §4). Python twin: codegen/intref/rng.py.
 */
#ifndef ELT_RNG_H
#define ELT_RNG_H

#include <stdint.h>

/* Four xoshiro128** streams (Blackman & Vigna), the lanes of one sample's generator: s[w][l] is
 * word w of lane l, so that one NEON register holds a word of all four lanes. No lane is ever
 * all zero after elt_rng_seed. */
#define ELT_RNG_LANES 4

typedef struct {
    uint32_t s[4][ELT_RNG_LANES];
} elt_rng_t;

/* key = splitmix64(seed); st = key ^ sample_id; lane l's s0|s1<<32, s2|s3<<32 = the
 * splitmix64 outputs 2l + 1 and 2l + 2 from st (lane 0 is the single stream of the first
 * contract). The streams depend on (seed, sample_id) only: results do not depend on order or
 * on which device ran them (docs/numeric.md §5.3). */
void elt_rng_seed(elt_rng_t *rng, uint64_t seed, uint32_t sample_id);

/* A block of n draws (one CMA-ES iteration's lam k): draw j is lane j mod 4's output at its
 * step j div 4 of the block; every lane takes ceil(n / 4) steps, the outputs past n are
 * dropped (docs/numeric.md §5.3). elt_rng_block_u32: the 32-bit outputs; elt_rng_gauss_block:
 * one standard normal in Q3.28 of each (elt_gauss_from_u32; lut is the 32 x 33 Q3.28 octave
 * table, codegen.base.tables.GAUSS_LUT, emitted into the params file). The plain C of the
 * sampler's NEON draws (firmware/kernels/<variant>/elt_cmaes_s32_ops.h, elt_sample_draw). */
void elt_rng_block_u32(elt_rng_t *rng, uint32_t *u, int32_t n);
void elt_rng_gauss_block(elt_rng_t *rng, int32_t *z, int32_t n, const int32_t *lut);

/* The steps inline, on one lane's four words in a caller's locals. */
#define ELT_GAUSS_KNOTS 33 /* 32 segments per octave */

static inline uint32_t elt_rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

/* xoshiro128**'s output function (the "**" scrambler) of the word s1 it reads */
static inline uint32_t elt_xoshiro_out(uint32_t s1)
{
    return elt_rotl32(s1 * 5u, 7) * 9u;
}

/* xoshiro128**'s state update; returns the s1 the output function reads (before the update). */
static inline uint32_t elt_xoshiro_step(uint32_t *s)
{
    const uint32_t s1 = s[1];
    const uint32_t t = s1 << 9;
    s[2] ^= s[0];
    s[3] ^= s1;
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = elt_rotl32(s[3], 11);
    return s1;
}

static inline uint32_t elt_xoshiro_next(uint32_t *s)
{
    return elt_xoshiro_out(elt_xoshiro_step(s));
}

static inline int32_t elt_gauss_from_u32(uint32_t u, const int32_t *lut)
{
    /* odd v, t = v / 2^32 in (0, 1); |z| = Phi^-1(1 - t/2) (docs/cmaes.md §4) */
    uint32_t v = (u << 1) | 1u; /* = 2 (u & 0x7fffffff) + 1 */
    int oct = __builtin_clz(v); /* ARM CLZ; v != 0 */
    uint32_t mn = v << oct;     /* leading one at bit 31 */
    const int32_t *row = lut + oct * ELT_GAUSS_KNOTS + ((mn >> 26) & 31u);
    int32_t frac = (int32_t)((mn >> 10) & 0xFFFFu);
    int32_t a = row[0];
    /* (T[s+1] - T[s]) f < 2^44: int64, the one rounding rule */
    int32_t mag = a + (int32_t)(((int64_t)(row[1] - a) * frac + (1 << 15)) >> 16);
    return (int32_t)(u >> 31) != 0 ? -mag : mag;
}

#endif /* ELT_RNG_H */
