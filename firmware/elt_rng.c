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
    const uint64_t key = elt_splitmix64_next(&st);
    int l;
    st = key ^ (uint64_t)sample_id;
    for (l = 0; l < ELT_RNG_LANES; l++) {
        const uint64_t a = elt_splitmix64_next(&st);
        const uint64_t b = elt_splitmix64_next(&st);
        rng->s[0][l] = (uint32_t)a;
        rng->s[1][l] = (uint32_t)(a >> 32);
        rng->s[2][l] = (uint32_t)b;
        rng->s[3][l] = (uint32_t)(b >> 32);
    }
}

/* One step of every lane: out[l] = lane l's next output. */
static void elt_rng_step4(elt_rng_t *rng, uint32_t *out)
{
    int l;
    for (l = 0; l < ELT_RNG_LANES; l++) {
        uint32_t s[4];
        s[0] = rng->s[0][l];
        s[1] = rng->s[1][l];
        s[2] = rng->s[2][l];
        s[3] = rng->s[3][l];
        out[l] = elt_xoshiro_next(s);
        rng->s[0][l] = s[0];
        rng->s[1][l] = s[1];
        rng->s[2][l] = s[2];
        rng->s[3][l] = s[3];
    }
}

void elt_rng_block_u32(elt_rng_t *rng, uint32_t *u, int32_t n)
{
    int32_t j;
    for (j = 0; j < n; j += ELT_RNG_LANES) {
        uint32_t q[ELT_RNG_LANES];
        int32_t l;
        elt_rng_step4(rng, q);
        for (l = 0; l < ELT_RNG_LANES && j + l < n; l++) {
            u[j + l] = q[l];
        }
    }
}

void elt_rng_gauss_block(elt_rng_t *rng, int32_t *z, int32_t n, const int32_t *lut)
{
    int32_t j;
    for (j = 0; j < n; j += ELT_RNG_LANES) {
        uint32_t q[ELT_RNG_LANES];
        int32_t l;
        elt_rng_step4(rng, q);
        for (l = 0; l < ELT_RNG_LANES && j + l < n; l++) {
            z[j + l] = elt_gauss_from_u32(q[l], lut);
        }
    }
}
