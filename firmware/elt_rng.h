/*
 * Per-sample random streams: splitmix64 seeding, xoshiro128**, piecewise-linear inverse-CDF
 * Gaussian (reference/cmaes-notes.md §4). Python twin: codegen/intref/rng.py.
 */
#ifndef ELT_RNG_H
#define ELT_RNG_H

#include <stdint.h>

/* xoshiro128** state (Blackman & Vigna); never all zero after elt_rng_seed. */
typedef struct {
    uint32_t s[4];
} elt_rng_t;

/* key = splitmix64(seed); st = key ^ sample_id; s0|s1<<32, s2|s3<<32 = next two splitmix64
 * outputs. The stream depends on (seed, sample_id) only: results do not depend on order or on
 * which device ran them (DESIGN §3). */
void elt_rng_seed(elt_rng_t *rng, uint64_t seed, uint32_t sample_id);

/* Next 32-bit output of xoshiro128**. */
uint32_t elt_rng_next(elt_rng_t *rng);

/* One standard normal in Q3.28 from one 32-bit draw; lut is the 32 x 33 Q3.28 octave table
 * (codegen.intref.tables.GAUSS_LUT, emitted into the params file). */
int32_t elt_gauss_q28(elt_rng_t *rng, const int32_t *lut);

#endif /* ELT_RNG_H */
