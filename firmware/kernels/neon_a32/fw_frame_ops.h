/*
 * The frame codec's operations on the Cortex-A9 (firmware/fw_frame.c includes this file after its
 * CRC tables; firmware/kernels/ref/fw_frame_ops.h is the plain C of the same functions): the
 * CRC-32 by carry-less products, the forward copy and the delimiter search 16 bytes at a time.
 */
#ifndef FW_FRAME_OPS_H
#define FW_FRAME_OPS_H

#include "elt_neon_a32.h"

/* CRC-32 by carry-less products (VMULL.P8, ARM DDI 0406C A8.8, "VMULL (integer and polynomial)")
 * instead of table lookups. The register update is linear over GF(2) in the data: from register 0,
 * a buffer's CRC is the XOR of each byte's contribution alone, c(b, d) = the register after byte b
 * and d zero bytes, and a start value acts as its four bytes XORed into the buffer's first four
 * (the identity the slicing algorithms use, Kounavis & Berry 2008). In the reflected bit order c(b,
 * d) = R(b * K_d): K_d = c(0x80, d), `*` the carry-less product of the raw bit patterns (39 bits),
 * R(v) = (v >> 7) ^ crc32_tab[0][(v & 0x7F) << 1] (the 7 bits past the CRC's 32 reduced by the byte
 * table; a reflected product is the reflection of the plain one). R is linear too, so a block's
 * register is R of the XOR of all its byte products, v = XOR over bytes i and j = 0..3 of (b_i *
 * K_{d_i}[j]) << 8j, K[j] the constant's byte j. Per 16 bytes: one VLD1 of data, two of constants
 * (crc32_fold[g][j] = byte j of K_d for the group's 16 distances d to the block's end), eight
 * VMULL.P8 (eight 8 x 8-bit products each) and eight VEOR into four accumulators, one per j: 20
 * instructions with the loop (two groups an iteration, an odd count entering at the second),
 * 1.25 a byte against 3.4 for the slice-by-8 tables. The accumulators'
 * lanes are XORed together once per block of up to CRC32_FOLD_GROUPS x 16 bytes. crc32_fold holds
 * K_d for d = 0 ... 1,023, the group furthest from the block's end first (a block of g < 64 groups
 * starts at row 64 - g): 4 KiB, generated into fw_crc32_tables.h. */

/* VTBL indices (ARM DDI 0406C A8.8.413: an index past the table gives 0) that move a group's
 * first r bytes to its last r lanes and clear the lanes before them: the 16 from offset r. */
static const uint8_t crc32_pad_idx[32] = {0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu,
                                          0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu,
                                          0u,    1u,    2u,    3u,    4u,    5u,    6u,    7u,
                                          8u,    9u,    10u,   11u,   12u,   13u,   14u,   15u};

/* One group of 16 bytes in q0 (crc32_fold_block): its 64 constant bytes, eight products and
 * eight sums into the accumulators q12..q15. */
#define CRC32_FOLD_GROUP                                                                           \
    "vld1.8 {d2-d5}, [%[k]]!\n\t"                                                                  \
    "vld1.8 {d18-d21}, [%[k]]!\n\t"                                                                \
    "vmull.p8 q3, d0, d2\n\t"                                                                      \
    "vmull.p8 q8, d1, d3\n\t"                                                                      \
    "veor q12, q12, q3\n\t"                                                                        \
    "veor q12, q12, q8\n\t"                                                                        \
    "vmull.p8 q3, d0, d4\n\t"                                                                      \
    "vmull.p8 q8, d1, d5\n\t"                                                                      \
    "veor q13, q13, q3\n\t"                                                                        \
    "veor q13, q13, q8\n\t"                                                                        \
    "vmull.p8 q3, d0, d18\n\t"                                                                     \
    "vmull.p8 q8, d1, d19\n\t"                                                                     \
    "veor q14, q14, q3\n\t"                                                                        \
    "veor q14, q14, q8\n\t"                                                                        \
    "vmull.p8 q3, d0, d20\n\t"                                                                     \
    "vmull.p8 q8, d1, d21\n\t"                                                                     \
    "veor q15, q15, q3\n\t"                                                                        \
    "veor q15, q15, q8\n\t"

/* One block of g groups from register value crc: the CRC register after it. The first group is
 * the block's first r bytes (4 <= r <= 16) behind 16 - r zeros, the register XORed into those r
 * bytes' first four: zeros ahead of the data add nothing to a register that starts at 0 (the
 * linearity above), so a buffer of 16 m + r bytes takes m + 1 groups and no byte-wise tail (the
 * tail took 7 instructions a byte). The others are whole 16-byte groups. */
static uint32_t crc32_fold_block(uint32_t crc, const uint8_t *p, uint32_t g, uint32_t r)
{
    const uint8_t *k = crc32_fold[CRC32_FOLD_GROUPS - g][0];
    const uint8_t *m = &crc32_pad_idx[r];
    uint32_t lo;
    uint32_t hi;
    /* q12..q15: the four accumulators (byte j of the constants); q0 data, q1/q2 and q9/q10 the
     * constants, q3/q8 products. The first group takes the register in its first four bytes. */
    __asm__ volatile("vmov.i8 q12, #0\n\t"
                     "vmov.i8 q13, #0\n\t"
                     "vmov.i8 q14, #0\n\t"
                     "vmov.i8 q15, #0\n\t"
                     "vmov.i8 q11, #0\n\t"
                     "vmov.32 d22[0], %[crc]\n\t"
                     "vld1.8 {d0-d1}, [%[p]]\n\t"
                     "vld1.8 {d6-d7}, [%[m]]\n\t"
                     "vtbl.8 d16, {d0-d1}, d6\n\t"
                     "vtbl.8 d17, {d0-d1}, d7\n\t"
                     "vtbl.8 d2, {d22-d23}, d6\n\t"
                     "vtbl.8 d3, {d22-d23}, d7\n\t"
                     "add %[p], %[p], %[r]\n\t"
                     "veor q0, q8, q1\n\t"
                     "tst %[g], #1\n\t"
                     "bne 3f\n\t"
                     "b 2f\n"
                     "1:\n\t"
                     "vld1.8 {d0-d1}, [%[p]]!\n"
                     "2:\n\t" CRC32_FOLD_GROUP "vld1.8 {d0-d1}, [%[p]]!\n"
                     "3:\n\t" CRC32_FOLD_GROUP "subs %[g], %[g], #2\n\t"
                     "bgt 1b\n\t"
                     /* each accumulator's 8 lanes to 4, a 4 x 4 transpose of the 16-bit lanes
                      * (VTRN, ARM DDI 0406C A8.8), then one lane per accumulator: [S0 S1 S2 S3] */
                     "veor d24, d24, d25\n\t"
                     "veor d26, d26, d27\n\t"
                     "veor d28, d28, d29\n\t"
                     "veor d30, d30, d31\n\t"
                     "vtrn.16 d24, d26\n\t"
                     "vtrn.16 d28, d30\n\t"
                     "vtrn.32 d24, d28\n\t"
                     "vtrn.32 d26, d30\n\t"
                     "veor d24, d24, d26\n\t"
                     "veor d28, d28, d30\n\t"
                     "veor d24, d24, d28\n\t"
                     "vmov %[lo], %[hi], d24"
                     : [p] "+r"(p), [k] "+r"(k), [g] "+r"(g), [lo] "=r"(lo), [hi] "=r"(hi)
                     : [crc] "r"(crc), [m] "r"(m), [r] "r"(r)
                     : "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d16", "d17", "d18", "d19",
                       "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28", "d29", "d30",
                       "d31", "cc", "memory");
    /* v = S0 ^ S1 << 8 ^ S2 << 16 ^ S3 << 24, 39 bits: its low 32 here, bits 32..38 are S3 >> 8 */
    const uint32_t s3 = hi >> 16;
    const uint32_t v = (lo & 0xFFFFu) ^ ((lo >> 16) << 8) ^ (hi << 16) ^ (s3 << 24);
    return ((v >> 7) | ((s3 >> 8) << 25)) ^ crc32_tab[0][(v & 0x7Fu) << 1];
}

/* Every byte of [p, end) from register value *crc when there are 16 or more (fewer are left to
 * the byte-wise recurrence): n = 16 m + r bytes as m + 1 groups, the first of r (crc32_fold_block;
 * 16 when r is 0; 1 to 3 bytes are taken byte-wise first: the register must fit in the first
 * group's data), in blocks of at most CRC32_FOLD_GROUPS. Returns where the bytes left start. */
static inline const uint8_t *crc32_bulk(uint32_t *crc, const uint8_t *p, const uint8_t *end)
{
    if (end - p < 16) {
        return p;
    }
    uint32_t r = (uint32_t)(end - p) % 16u;
    /* byte-wise too, up to 10 bytes, when the short group would open a block of its own (its
     * set-up, group and reduction, about 72 instructions, against 7 a byte): an audio chunk's
     * body (header and 2,048 payload bytes) is 128 groups and 8 bytes */
    const uint32_t whole = (uint32_t)(end - p) / 16u;
    const uint32_t alone = whole % CRC32_FOLD_GROUPS == 0u ? 11u : 4u;
    if (r < alone) {
        uint32_t c = *crc;
        for (const uint8_t *q = p + r; p != q; p++) {
            c = crc32_byte(c, *p);
        }
        *crc = c;
        r = 0;
    }
    r = r != 0u ? r : 16u;
    for (uint32_t groups = (uint32_t)(end - p - r) / 16u + 1u; groups != 0u;) {
        const uint32_t g = groups < CRC32_FOLD_GROUPS ? groups : CRC32_FOLD_GROUPS;
        *crc = crc32_fold_block(*crc, p, g, r);
        p += r + 16u * (g - 1u);
        groups -= g;
        r = 16u;
    }
    return p;
}

/* The first 16 n / 16 bytes of a forward copy (d <= s or no overlap): a VLD1/VST1 pair each,
 * every chunk read before it is overwritten (ARM DDI 0406C A8.8, VLD1, VST1). Returns the bytes
 * copied. */
static inline size_t copy_bulk(uint8_t *d, const uint8_t *s, size_t n)
{
    uint32_t blocks = (uint32_t)n / 16u;
    if (blocks == 0u) {
        return 0;
    }
    __asm__ volatile("1:\n\t"
                     "vld1.8 {d16-d17}, [%[s]]!\n\t"
                     "subs %[n], %[n], #1\n\t"
                     "vst1.8 {d16-d17}, [%[d]]!\n\t"
                     "bne 1b"
                     : [s] "+r"(s), [d] "+r"(d), [n] "+r"(blocks)
                     :
                     : "d16", "d17", "cc", "memory");
    return 16u * ((size_t)n / 16u);
}

/* The byte-wise minimum of a vector, in a core register (ARM DDI 0406C A8.8 VMIN, VPMIN). */
static inline uint32_t min_u8(uint8x16_t m)
{
    uint8x8_t h = vmin_u8(vget_low_u8(m), vget_high_u8(m));
    h = vpmin_u8(h, h);
    h = vpmin_u8(h, h);
    h = vpmin_u8(h, h);
    return vget_lane_u8(h, 0);
}

/* 16 bytes per look: their minimum is 0 exactly when one of them is. Returns the start of the
 * first group that holds a zero (the byte search is left for it), or the groups' end. */
static inline size_t zero_bulk(const uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 16u <= n; i += 16u) {
        if (min_u8(vld1q_u8(p + i)) == 0u) {
            break;
        }
    }
    return i;
}

#endif /* FW_FRAME_OPS_H */
