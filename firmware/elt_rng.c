/*
 * Random streams for ELaTTA (docs/cmaes.md §4; Python twin codegen/intref/rng.py).
 */
#include "elt_rng.h"

#include "fw_fixed.h"

static uint64_t elt_splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void elt_rng_seed(elt_rng_t *rng, uint64_t seed, uint32_t sample_id)
{
    uint64_t st = seed;
    uint64_t key = elt_splitmix64_next(&st);
    uint64_t a;
    uint64_t b;
    st = key ^ (uint64_t)sample_id;
    a = elt_splitmix64_next(&st);
    b = elt_splitmix64_next(&st);
    rng->s[0] = (uint32_t)a;
    rng->s[1] = (uint32_t)(a >> 32);
    rng->s[2] = (uint32_t)b;
    rng->s[3] = (uint32_t)(b >> 32);
}

uint32_t elt_rng_next(elt_rng_t *rng)
{
    return elt_xoshiro_next(rng->s);
}

int32_t elt_gauss_q28(elt_rng_t *rng, const int32_t *lut)
{
    return elt_gauss_from_u32(elt_xoshiro_next(rng->s), lut);
}
