/*
 * Random streams for ELaTTA (reference/cmaes-notes.md §4; Python twin codegen/intref/rng.py).
 */
#include "elt_rng.h"

#include "fw_fixed.h"

#define ELT_GAUSS_KNOTS 33 /* 32 segments per octave */

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

static inline uint32_t elt_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

uint32_t elt_rng_next(elt_rng_t *rng)
{
    uint32_t *s = rng->s;
    uint32_t result = elt_rotl32(s[1] * 5u, 7) * 9u;
    uint32_t t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = elt_rotl32(s[3], 11);
    return result;
}

int32_t elt_gauss_q28(elt_rng_t *rng, const int32_t *lut)
{
    uint32_t u = elt_rng_next(rng);
    /* odd v, t = v / 2^32 in (0, 1); |z| = Phi^-1(1 - t/2) (notes §4) */
    uint32_t v = ((u & 0x7FFFFFFFu) << 1) | 1u;
    int oct = __builtin_clz(v); /* ARM CLZ; v != 0 */
    uint32_t mn = v << oct;     /* leading one at bit 31 */
    const int32_t *row = lut + oct * ELT_GAUSS_KNOTS;
    uint32_t seg = (mn >> 26) & 31u;
    int32_t frac = (int32_t)((mn >> 10) & 0xFFFFu);
    int32_t a = row[seg];
    int32_t b = row[seg + 1u];
    int32_t mag = a + (int32_t)fx_rshift_round64((int64_t)(b - a) * frac, 16);
    return (u >> 31) != 0u ? -mag : mag;
}
