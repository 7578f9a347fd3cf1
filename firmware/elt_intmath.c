/*
 * Exact integer division and square root for the ELaTTA kernels (docs/numeric.md §5.2, §5.9).
 *
 * The Cortex-A9 has no integer divider: a C `/` on int64 is a call to libgcc's __aeabi_ldivmod
 * (≈ 300 instructions). These routines return the same integers (floor quotient, floor square
 * root; the Python twins are `//` and `math.isqrt`) from a normalised 32-bit reciprocal and
 * Newton steps built from 32 x 32 -> 64 multiplies, then an exact correction against the
 * remainder, so the result never depends on how good the estimate was, only the time does.
 * Pure integer; the only tables are the two seeds below. The inline halves of the division
 * (elt_recip_set, elt_udiv_q) live in elt_intmath.h for the entropy kernel.
 */
#include "elt_intmath.h"

/* floor(2^24 / (257 + i)), i = 0..255: 1/x at the top of the segment x in [(256+i)/512,
 * (257+i)/512), so the seed never exceeds 1/x (relative error <= 2^-8). */
const uint16_t elt_recip_seed[256] = {
    65280, 65027, 64776, 64527, 64280, 64035, 63791, 63550, 63310, 63072, 62836, 62601, 62368,
    62137, 61908, 61680, 61455, 61230, 61008, 60787, 60567, 60349, 60133, 59918, 59705, 59493,
    59283, 59074, 58867, 58661, 58457, 58254, 58052, 57852, 57653, 57456, 57260, 57065, 56871,
    56679, 56488, 56299, 56111, 55924, 55738, 55553, 55370, 55188, 55007, 54827, 54648, 54471,
    54295, 54120, 53946, 53773, 53601, 53430, 53261, 53092, 52924, 52758, 52593, 52428, 52265,
    52103, 51941, 51781, 51622, 51463, 51306, 51150, 50994, 50840, 50686, 50533, 50382, 50231,
    50081, 49932, 49784, 49636, 49490, 49344, 49200, 49056, 48913, 48770, 48629, 48489, 48349,
    48210, 48072, 47934, 47798, 47662, 47527, 47393, 47259, 47127, 46995, 46863, 46733, 46603,
    46474, 46345, 46218, 46091, 45964, 45839, 45714, 45590, 45466, 45343, 45221, 45100, 44979,
    44858, 44739, 44620, 44501, 44384, 44267, 44150, 44034, 43919, 43804, 43690, 43577, 43464,
    43351, 43240, 43129, 43018, 42908, 42799, 42690, 42581, 42473, 42366, 42259, 42153, 42048,
    41943, 41838, 41734, 41630, 41527, 41425, 41323, 41221, 41120, 41020, 40920, 40820, 40721,
    40622, 40524, 40427, 40329, 40233, 40136, 40041, 39945, 39850, 39756, 39662, 39568, 39475,
    39383, 39290, 39199, 39107, 39016, 38926, 38836, 38746, 38657, 38568, 38479, 38391, 38304,
    38216, 38130, 38043, 37957, 37871, 37786, 37701, 37617, 37532, 37449, 37365, 37282, 37200,
    37117, 37035, 36954, 36873, 36792, 36711, 36631, 36551, 36472, 36393, 36314, 36235, 36157,
    36080, 36002, 35925, 35848, 35772, 35696, 35620, 35544, 35469, 35394, 35320, 35246, 35172,
    35098, 35025, 34952, 34879, 34807, 34735, 34663, 34592, 34521, 34450, 34379, 34309, 34239,
    34169, 34100, 34030, 33961, 33893, 33825, 33756, 33689, 33621, 33554, 33487, 33420, 33354,
    33288, 33222, 33156, 33091, 33026, 32961, 32896, 32832, 32768};

/* largest T with T^2 (i + 1) <= 2^38, i = 64..255: 1/sqrt(x) in Q.15 at the top of the segment
 * x in [i/256, (i+1)/256), never above 1/sqrt(x) (relative error <= 2^-7). */
const uint16_t elt_rsqrt_seed[192] = {
    65029, 64535, 64051, 63579, 63116, 62664, 62221, 61787, 61363, 60947, 60539, 60139, 59748,
    59363, 58987, 58617, 58254, 57897, 57548, 57204, 56867, 56535, 56209, 55889, 55574, 55264,
    54960, 54660, 54366, 54076, 53790, 53509, 53233, 52961, 52692, 52428, 52168, 51912, 51659,
    51410, 51165, 50923, 50684, 50449, 50217, 49988, 49763, 49540, 49320, 49104, 48890, 48678,
    48470, 48264, 48061, 47860, 47662, 47466, 47273, 47082, 46893, 46707, 46523, 46340, 46160,
    45983, 45807, 45633, 45461, 45291, 45123, 44957, 44792, 44630, 44469, 44310, 44153, 43997,
    43843, 43690, 43539, 43390, 43242, 43096, 42951, 42807, 42665, 42525, 42386, 42248, 42111,
    41976, 41842, 41710, 41578, 41448, 41319, 41191, 41065, 40940, 40815, 40692, 40570, 40449,
    40329, 40211, 40093, 39976, 39860, 39746, 39632, 39519, 39407, 39297, 39187, 39078, 38970,
    38862, 38756, 38651, 38546, 38442, 38339, 38237, 38136, 38035, 37936, 37837, 37739, 37641,
    37545, 37449, 37353, 37259, 37165, 37072, 36980, 36888, 36797, 36707, 36617, 36528, 36440,
    36352, 36265, 36179, 36093, 36008, 35923, 35839, 35756, 35673, 35590, 35509, 35428, 35347,
    35267, 35187, 35108, 35030, 34952, 34875, 34798, 34721, 34645, 34570, 34495, 34421, 34347,
    34273, 34200, 34128, 34056, 33984, 33913, 33842, 33772, 33702, 33633, 33564, 33495, 33427,
    33359, 33292, 33225, 33158, 33092, 33027, 32961, 32896, 32832, 32768};

void elt_recip_init(elt_recip_t *r, uint64_t d)
{
    elt_recip_set(r, d);
}

uint64_t elt_udiv64_r(uint64_t n, const elt_recip_t *r)
{
    return elt_udiv_q(n, r);
}

uint64_t elt_udiv64(uint64_t n, uint64_t d)
{
    elt_recip_t r;
    if ((n >> 32) >= d) {
        return n / d;
    }
    elt_recip_set(&r, d);
    return elt_udiv_q(n, &r);
}

uint32_t elt_isqrt64(uint64_t n)
{
    int sh;
    uint64_t m;
    uint64_t r2;
    int64_t rho;
    uint32_t mh;
    uint32_t y;
    uint32_t s;
    int32_t e;
    if (n == 0) {
        return 0;
    }
    /* m = n 4^(sh/2) in [2^62, 2^64): mh = x 2^32 with x in [1/4, 1) */
    sh = __builtin_clzll((unsigned long long)n) & 62;
    m = n << sh;
    mh = (uint32_t)(m >> 32);
    /* y = 1/sqrt(x) in Q.29 (in (2^29, 2^30]) from below: seed, then two Newton steps
     * y += y (1 - x y^2) / 2 in 32-bit words (y^2 Q.26, x y^2 Q.26, e = (1 - x y^2) 2^26 signed
     * and small (|e| < 2^21), y e / 2^27 as the high word of y (e 2^5)); every truncation only
     * costs accuracy, which the exact correction below restores. Relative error after the two steps
     * < 2^-26. */
    y = (uint32_t)elt_rsqrt_seed[(mh >> 24) - 64u] << 14;
    e = (int32_t)((1u << 26) -
                  (uint32_t)(((uint64_t)mh * (uint32_t)(((uint64_t)y * y) >> 32)) >> 32));
    y = (uint32_t)elt_mmla((int32_t)y, (int32_t)y, e << 5); /* y < 2^31 */
    e = (int32_t)((1u << 26) -
                  (uint32_t)(((uint64_t)mh * (uint32_t)(((uint64_t)y * y) >> 32)) >> 32));
    y = (uint32_t)elt_mmla((int32_t)y, (int32_t)y, e << 5);
    /* sqrt(m) = sqrt(x) 2^32 ~ x y 2^32 = mh y / 2^29, then one residual step
     * s += (m - s^2) / (2 s) = (m - s^2) y / 2^62 (|m - s^2| < 2^40 here, so rho / 2^16 fits a
     * word); back to n by the shift */
    r2 = ((uint64_t)mh * y) >> 29;
    rho = (int64_t)(m - r2 * r2);
    r2 = (uint64_t)((int64_t)r2 + (((int64_t)(int32_t)(rho >> 16) * (int64_t)(int32_t)y) >> 46));
    s = (uint32_t)(r2 >> 1) >> ((sh >> 1) - 1); /* sh >= 2; r2 < 2^33, so s < 2^32 */
    /* exact: s^2 <= n < (s + 1)^2, i.e. 0 <= n - s^2 <= 2 s (one unsigned compare, s < 2^31);
     * else at most a step or two either way */
    if (n - (uint64_t)s * s > 2u * s) {
        while ((uint64_t)s * s > n) {
            s--;
        }
        while ((uint64_t)(s + 1u) * (s + 1u) <= n) {
            s++;
        }
    }
    return s;
}
