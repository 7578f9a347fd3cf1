/*
 * IMA ADPCM decoder (docs/numeric.md §8); twin: codegen/base/adpcm.py. The algorithm is the IMA
 * reference decoder (IMA Digital Audio Focus and Technical Working Groups, "Recommended
 * Practices for Enhancing Digital Audio Compatibility in Multimedia Systems", rev. 3.00, 1992,
 * the ADPCM section): for a code c at step index i, the difference
 * d = step[i] >> 3 (+ step[i] if c & 4) (+ step[i] >> 1 if c & 2) (+ step[i] >> 2 if c & 1),
 * negated if c & 8; the predictor p = sat16(p + d); the next index clamp(i + index[c], 0, 88).
 *
 * Both d and the next index depend on (i, c) only, so the compiler evaluates the reference's
 * shifts and adds once for each of the 89 x 16 pairs (adpcm_table below) and a sample costs one
 * table load: entry = d * 2^12 + 16 * next index, so entry >> 12 (arithmetic) is d
 * (|d| <= 61436 < 2^19) and entry & 0xFF0 is the next row's offset (16 * 88 < 2^12).
 */
#include "elt_adpcm.h"

/* fw_fixed.h's fx_sat16. On ARM it is one SSAT #16 (ARM DDI 0406C A8.8.253) by the ACLE intrinsic
 * (ARM IHI 0053, "Saturating intrinsics"): in the loop below GCC 12 otherwise emits two compares
 * and two conditional moves. */
#if defined(__ARM_FEATURE_SAT)
#include <arm_acle.h>
#define ADPCM_SAT16(x) __ssat((x), 16)
#else
#include "fw_fixed.h"
#define ADPCM_SAT16(x) fx_sat16(x)
#endif

/* The reference decoder's difference for code c at step S: shifts and adds, sign bit 3. */
#define ADPCM_MAG(S, c)                                                                            \
    (((S) >> 3) + (((c) & 4) ? (S) : 0) + (((c) & 2) ? (S) >> 1 : 0) + (((c) & 1) ? (S) >> 2 : 0))
#define ADPCM_DIFF(S, c) (((c) & 8) ? -ADPCM_MAG(S, c) : ADPCM_MAG(S, c))
/* The IMA index table {-1, -1, -1, -1, 2, 4, 6, 8} (for bits 0 .. 2 of c; bit 3 is the sign). */
#define ADPCM_INDEX(c) (((c) & 4) ? 2 * ((c) & 3) + 2 : -1)
#define ADPCM_NEXT(i, c)                                                                           \
    ((i) + ADPCM_INDEX(c) < 0 ? 0 : ((i) + ADPCM_INDEX(c) > 88 ? 88 : (i) + ADPCM_INDEX(c)))
#define ADPCM_ENTRY(i, S, c) (ADPCM_DIFF(S, c) * 4096 + ADPCM_NEXT(i, c) * 16)
#define ADPCM_ROW(i, S)                                                                            \
    ADPCM_ENTRY(i, S, 0), ADPCM_ENTRY(i, S, 1), ADPCM_ENTRY(i, S, 2), ADPCM_ENTRY(i, S, 3),        \
        ADPCM_ENTRY(i, S, 4), ADPCM_ENTRY(i, S, 5), ADPCM_ENTRY(i, S, 6), ADPCM_ENTRY(i, S, 7),    \
        ADPCM_ENTRY(i, S, 8), ADPCM_ENTRY(i, S, 9), ADPCM_ENTRY(i, S, 10), ADPCM_ENTRY(i, S, 11),  \
        ADPCM_ENTRY(i, S, 12), ADPCM_ENTRY(i, S, 13), ADPCM_ENTRY(i, S, 14), ADPCM_ENTRY(i, S, 15)

/* Row i, column c: the entry of (step index i, code c). The second arguments are the IMA step
 * table (89 entries, 7 .. 32767), in order. 5,696 bytes. */
static const int32_t adpcm_table[(ELT_ADPCM_INDEX_MAX + 1u) * 16u] = {
    ADPCM_ROW(0, 7),      ADPCM_ROW(1, 8),      ADPCM_ROW(2, 9),      ADPCM_ROW(3, 10),
    ADPCM_ROW(4, 11),     ADPCM_ROW(5, 12),     ADPCM_ROW(6, 13),     ADPCM_ROW(7, 14),
    ADPCM_ROW(8, 16),     ADPCM_ROW(9, 17),     ADPCM_ROW(10, 19),    ADPCM_ROW(11, 21),
    ADPCM_ROW(12, 23),    ADPCM_ROW(13, 25),    ADPCM_ROW(14, 28),    ADPCM_ROW(15, 31),
    ADPCM_ROW(16, 34),    ADPCM_ROW(17, 37),    ADPCM_ROW(18, 41),    ADPCM_ROW(19, 45),
    ADPCM_ROW(20, 50),    ADPCM_ROW(21, 55),    ADPCM_ROW(22, 60),    ADPCM_ROW(23, 66),
    ADPCM_ROW(24, 73),    ADPCM_ROW(25, 80),    ADPCM_ROW(26, 88),    ADPCM_ROW(27, 97),
    ADPCM_ROW(28, 107),   ADPCM_ROW(29, 118),   ADPCM_ROW(30, 130),   ADPCM_ROW(31, 143),
    ADPCM_ROW(32, 157),   ADPCM_ROW(33, 173),   ADPCM_ROW(34, 190),   ADPCM_ROW(35, 209),
    ADPCM_ROW(36, 230),   ADPCM_ROW(37, 253),   ADPCM_ROW(38, 279),   ADPCM_ROW(39, 307),
    ADPCM_ROW(40, 337),   ADPCM_ROW(41, 371),   ADPCM_ROW(42, 408),   ADPCM_ROW(43, 449),
    ADPCM_ROW(44, 494),   ADPCM_ROW(45, 544),   ADPCM_ROW(46, 598),   ADPCM_ROW(47, 658),
    ADPCM_ROW(48, 724),   ADPCM_ROW(49, 796),   ADPCM_ROW(50, 876),   ADPCM_ROW(51, 963),
    ADPCM_ROW(52, 1060),  ADPCM_ROW(53, 1166),  ADPCM_ROW(54, 1282),  ADPCM_ROW(55, 1411),
    ADPCM_ROW(56, 1552),  ADPCM_ROW(57, 1707),  ADPCM_ROW(58, 1878),  ADPCM_ROW(59, 2066),
    ADPCM_ROW(60, 2272),  ADPCM_ROW(61, 2499),  ADPCM_ROW(62, 2749),  ADPCM_ROW(63, 3024),
    ADPCM_ROW(64, 3327),  ADPCM_ROW(65, 3660),  ADPCM_ROW(66, 4026),  ADPCM_ROW(67, 4428),
    ADPCM_ROW(68, 4871),  ADPCM_ROW(69, 5358),  ADPCM_ROW(70, 5894),  ADPCM_ROW(71, 6484),
    ADPCM_ROW(72, 7132),  ADPCM_ROW(73, 7845),  ADPCM_ROW(74, 8630),  ADPCM_ROW(75, 9493),
    ADPCM_ROW(76, 10442), ADPCM_ROW(77, 11487), ADPCM_ROW(78, 12635), ADPCM_ROW(79, 13899),
    ADPCM_ROW(80, 15289), ADPCM_ROW(81, 16818), ADPCM_ROW(82, 18500), ADPCM_ROW(83, 20350),
    ADPCM_ROW(84, 22385), ADPCM_ROW(85, 24623), ADPCM_ROW(86, 27086), ADPCM_ROW(87, 29794),
    ADPCM_ROW(88, 32767),
};

/* One sample: the entry of (row s, code c) gives the difference and the next row. */
#define ADPCM_STEP(c)                                                                              \
    do {                                                                                           \
        const int32_t e_ = adpcm_table[s + (c)];                                                   \
        s = (uint32_t)e_ & 0xFF0u;                                                                 \
        p = ADPCM_SAT16(p + (e_ >> 12));                                                           \
        *out++ = (int16_t)p;                                                                       \
    } while (0)

void elt_adpcm_decode(const uint8_t *block, uint32_t n, int16_t *out)
{
    const uint8_t *c = block + ELT_ADPCM_HEADER_BYTES;
    int32_t p = (int16_t)(uint16_t)((uint32_t)block[0] | (uint32_t)block[1] << 8);
    uint32_t s = (block[2] > ELT_ADPCM_INDEX_MAX ? ELT_ADPCM_INDEX_MAX : block[2]) * 16u;
    uint32_t k;
    for (k = n >> 1; k != 0u; --k) {
        const uint32_t b = *c++;
        ADPCM_STEP(b & 15u);
        ADPCM_STEP(b >> 4);
    }
    if (n & 1u) {
        ADPCM_STEP(*c & 15u);
    }
}
