/* Frame codec: see fw_frame.h and docs/protocol.md. */
#include "fw_frame.h"

#include "elt_neon.h"
#include "fw_crc32_tables.h"

/* Slice-by-8 CRC-32 (Kounavis & Berry, "Novel Table Lookup-Based Algorithms for High-Performance
 * CRC Generation", IEEE Trans. Computers 57(11), 2008; the slicing idea of their ISCC 2005 paper):
 * crc32_tab[0] is the reflected byte table of 0xEDB88320, crc32_tab[k][i] = (crc32_tab[k - 1][i] >>
 * 8) ^ crc32_tab[0][crc32_tab[k - 1][i] & 0xFF], the CRC of byte i followed by k zero bytes. Two
 * aligned 32-bit loads and eight independent lookups advance the CRC by eight bytes (8 KiB of
 * tables): about 3.4 instructions a byte on the Cortex-A9 against 4 for slice-by-4; the same CRC
 * as the bytewise recurrence. The tables are generated: fw_crc32_tables.h (the NEON build keeps
 * table 0 only, for the bytewise steps and the carry-less CRC's reduction). */

static inline uint32_t crc32_byte(uint32_t crc, uint8_t b)
{
    return (crc >> 8) ^ crc32_tab[0][(crc ^ b) & 0xFFu];
}

#if ELT_NEON
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
 * VMULL.P8 (eight 8 x 8-bit products each) and eight VEOR into four accumulators, one per j: 21
 * instructions with the loop, 1.3 a byte against 3.4 for the slice-by-8 tables. The accumulators'
 * lanes are XORed together once per block of up to CRC32_FOLD_GROUPS x 16 bytes. crc32_fold holds
 * K_d for d = 0 ... 1,023, the group furthest from the block's end first (a block of g < 64 groups
 * starts at row 64 - g): 4 KiB, generated into fw_crc32_tables.h. */

/* One block of g groups of 16 bytes from register value crc: the CRC register after it. */
static uint32_t crc32_fold_block(uint32_t crc, const uint8_t *p, uint32_t g)
{
    const uint8_t *k = crc32_fold[CRC32_FOLD_GROUPS - g][0];
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
                     "vld1.8 {d0-d1}, [%[p]]!\n\t"
                     "veor q0, q0, q11\n\t"
                     "b 2f\n"
                     "1:\n\t"
                     "vld1.8 {d0-d1}, [%[p]]!\n"
                     "2:\n\t"
                     "vld1.8 {d2-d5}, [%[k]]!\n\t"
                     "vld1.8 {d18-d21}, [%[k]]!\n\t"
                     "vmull.p8 q3, d0, d2\n\t"
                     "vmull.p8 q8, d1, d3\n\t"
                     "veor q12, q12, q3\n\t"
                     "veor q12, q12, q8\n\t"
                     "vmull.p8 q3, d0, d4\n\t"
                     "vmull.p8 q8, d1, d5\n\t"
                     "veor q13, q13, q3\n\t"
                     "veor q13, q13, q8\n\t"
                     "vmull.p8 q3, d0, d18\n\t"
                     "vmull.p8 q8, d1, d19\n\t"
                     "veor q14, q14, q3\n\t"
                     "veor q14, q14, q8\n\t"
                     "vmull.p8 q3, d0, d20\n\t"
                     "vmull.p8 q8, d1, d21\n\t"
                     "veor q15, q15, q3\n\t"
                     "veor q15, q15, q8\n\t"
                     "subs %[g], %[g], #1\n\t"
                     "bne 1b\n\t"
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
                     : [crc] "r"(crc)
                     : "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d16", "d17", "d18", "d19",
                       "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28", "d29", "d30",
                       "d31", "cc", "memory");
    /* v = S0 ^ S1 << 8 ^ S2 << 16 ^ S3 << 24, 39 bits: its low 32 here, bits 32..38 are S3 >> 8 */
    const uint32_t s3 = hi >> 16;
    const uint32_t v = (lo & 0xFFFFu) ^ ((lo >> 16) << 8) ^ (hi << 16) ^ (s3 << 24);
    return ((v >> 7) | ((s3 >> 8) << 25)) ^ crc32_tab[0][(v & 0x7Fu) << 1];
}
#endif

uint32_t fw_crc32_update(uint32_t crc, const uint8_t *data, size_t len)
{
    const uint8_t *p = data, *end = data + len;
#if ELT_NEON
    for (uint32_t groups = (uint32_t)len / 16u; groups != 0u;) {
        const uint32_t g = groups < CRC32_FOLD_GROUPS ? groups : CRC32_FOLD_GROUPS;
        crc = crc32_fold_block(crc, p, g);
        p += 16u * g;
        groups -= g;
    }
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; p != end && ((uintptr_t)p & 3u) != 0u; p++) {
        crc = crc32_byte(crc, *p);
    }
#if defined(__arm__) && !defined(__thumb__)
    /* Eight bytes per iteration: two word loads, then for each byte one UXTAB (zero-extend a
     * rotated byte and add: the offset of its table within a group of four, ARM DDI 0406C
     * A8.8.271) or LSR, one LDR with a scaled register offset and one EOR. Tables 4..7 from a
     * second base; gcc spends an ADD more per byte on the table offsets. */
    uint32_t n8 = (uint32_t)(end - p) / 8u;
    if (n8 != 0u) {
        uint32_t w0;
        uint32_t w1;
        uint32_t t0;
        uint32_t t1;
        __asm__ volatile("1:\n\t"
                         "ldr %[w1], [%[p], #4]\n\t"
                         "ldr %[w0], [%[p]], #8\n\t"
                         "eor %[w0], %[w0], %[crc]\n\t"
                         "uxtab %[t0], %[k3], %[w1]\n\t"
                         "ldr %[crc], [%[lo], %[t0], lsl #2]\n\t"
                         "uxtab %[t0], %[k2], %[w1], ror #8\n\t"
                         "ldr %[t0], [%[lo], %[t0], lsl #2]\n\t"
                         "uxtab %[t1], %[k1], %[w1], ror #16\n\t"
                         "eor %[crc], %[crc], %[t0]\n\t"
                         "ldr %[t1], [%[lo], %[t1], lsl #2]\n\t"
                         "lsr %[t0], %[w1], #24\n\t"
                         "eor %[crc], %[crc], %[t1]\n\t"
                         "ldr %[t0], [%[lo], %[t0], lsl #2]\n\t"
                         "uxtab %[t1], %[k3], %[w0]\n\t"
                         "eor %[crc], %[crc], %[t0]\n\t"
                         "ldr %[t1], [%[hi], %[t1], lsl #2]\n\t"
                         "uxtab %[t0], %[k2], %[w0], ror #8\n\t"
                         "eor %[crc], %[crc], %[t1]\n\t"
                         "ldr %[t0], [%[hi], %[t0], lsl #2]\n\t"
                         "uxtab %[t1], %[k1], %[w0], ror #16\n\t"
                         "eor %[crc], %[crc], %[t0]\n\t"
                         "ldr %[t1], [%[hi], %[t1], lsl #2]\n\t"
                         "lsr %[t0], %[w0], #24\n\t"
                         "eor %[crc], %[crc], %[t1]\n\t"
                         "ldr %[t0], [%[hi], %[t0], lsl #2]\n\t"
                         "subs %[n], %[n], #1\n\t"
                         "eor %[crc], %[crc], %[t0]\n\t"
                         "bne 1b"
                         : [crc] "+r"(crc), [p] "+r"(p), [n] "+r"(n8), [w0] "=&r"(w0),
                           [w1] "=&r"(w1), [t0] "=&r"(t0), [t1] "=&r"(t1)
                         : [lo] "r"(crc32_tab[0]), [hi] "r"(crc32_tab[4]), [k1] "r"(256u),
                           [k2] "r"(512u), [k3] "r"(768u)
                         : "cc", "memory");
    }
#else
    for (; end - p >= 8; p += 8) {
        uint32_t w0;
        uint32_t w1;
        __builtin_memcpy(&w0, __builtin_assume_aligned(p, 4), 4u);
        __builtin_memcpy(&w1, __builtin_assume_aligned(p + 4, 4), 4u);
        w0 ^= crc; /* little endian: byte p[0] in the low 8 bits */
        crc = crc32_tab[7][w0 & 0xFFu] ^ crc32_tab[6][(w0 >> 8) & 0xFFu] ^
              crc32_tab[5][(w0 >> 16) & 0xFFu] ^ crc32_tab[4][w0 >> 24] ^ crc32_tab[3][w1 & 0xFFu] ^
              crc32_tab[2][(w1 >> 8) & 0xFFu] ^ crc32_tab[1][(w1 >> 16) & 0xFFu] ^
              crc32_tab[0][w1 >> 24];
    }
#endif
#endif
    for (; p != end; p++) {
        crc = crc32_byte(crc, *p);
    }
    return crc;
}

uint32_t fw_crc32(const uint8_t *data, size_t len)
{
    return fw_crc32_update(0xFFFFFFFFu, data, len) ^ 0xFFFFFFFFu;
}

size_t fw_cobs_encode(const uint8_t *src, size_t len, uint8_t *dst)
{
    size_t code_pos = 0; /* where the current block's code byte goes */
    size_t out = 1;
    uint8_t code = 1; /* 1 + number of non-zero bytes in the current block */
    for (size_t i = 0; i < len; i++) {
        if (src[i] == 0u) {
            dst[code_pos] = code;
            code_pos = out++;
            code = 1;
        } else {
            dst[out++] = src[i];
            code++;
            if (code == 0xFFu) { /* a full block of 254 bytes carries no implicit zero */
                dst[code_pos] = code;
                code_pos = out++;
                code = 1;
            }
        }
    }
    dst[code_pos] = code;
    return out;
}

/* Forward copy of n bytes with d <= s or no overlap (the in-place decode writes each byte at or
 * before the one it reads): 16 bytes per VLD1/VST1 pair on NEON, each chunk read before it is
 * overwritten (ARM DDI 0406C A8.8, VLD1, VST1). */
void fw_copy_forward(uint8_t *d, const uint8_t *s, size_t n)
{
    size_t i = 0;
#if ELT_NEON
    if (n >= 16u) {
        uint32_t blocks = (uint32_t)n / 16u;
        const uint8_t *src = s;
        uint8_t *dst = d;
        i = 16u * blocks;
        __asm__ volatile("1:\n\t"
                         "vld1.8 {d16-d17}, [%[s]]!\n\t"
                         "subs %[n], %[n], #1\n\t"
                         "vst1.8 {d16-d17}, [%[d]]!\n\t"
                         "bne 1b"
                         : [s] "+r"(src), [d] "+r"(dst), [n] "+r"(blocks)
                         :
                         : "d16", "d17", "cc", "memory");
    }
#endif
    for (; i < n; i++) {
        d[i] = s[i];
    }
}

/* A block at a time: its data bytes are copied with the bounds checked once per block, with the
 * bytewise decoder's outcome (the end of the input first, then the capacity). */
int fw_cobs_decode(const uint8_t *src, size_t len, uint8_t *dst, size_t cap, size_t *out_len)
{
    size_t in = 0;
    size_t out = 0;
    int status = 0;
    while (in < len) {
        const uint8_t code = src[in++];
        if (code == 0u) { /* a zero inside a frame cannot be COBS */
            status = -1;
            break;
        }
        const size_t n = (size_t)code - 1u;
        size_t k = n;
        if (k > len - in) {
            k = len - in;
        }
        if (k > cap - out) {
            k = cap - out;
        }
        fw_copy_forward(dst + out, src + in, k);
        in += k;
        out += k;
        if (k < n) {
            status = in >= len ? -1 : -2;
            break;
        }
        /* A block shorter than 254 bytes ends in an implicit zero, except the last block. */
        if (code != 0xFFu && in < len) {
            if (out >= cap) {
                status = -2;
                break;
            }
            dst[out++] = 0u;
        }
    }
    *out_len = out;
    return status;
}

/* The byte-wise minimum of a vector, in a core register (ARM DDI 0406C A8.8 VMIN, VPMIN). */
#if ELT_NEON
static inline uint32_t min_u8(uint8x16_t m)
{
    uint8x8_t h = vmin_u8(vget_low_u8(m), vget_high_u8(m));
    h = vpmin_u8(h, h);
    h = vpmin_u8(h, h);
    h = vpmin_u8(h, h);
    return vget_lane_u8(h, 0);
}
#endif

size_t fw_zero_index(const uint8_t *p, size_t n)
{
    size_t i = 0;
#if ELT_NEON
    /* 16 bytes per look: their minimum is 0 exactly when one of them is; the byte search is
     * left for the block that has it. */
    for (; i + 16u <= n; i += 16u) {
        if (min_u8(vld1q_u8(p + i)) == 0u) {
            break;
        }
    }
#endif
    while (i < n && p[i] != 0u) {
        i++;
    }
    return i;
}

/* From the code byte at buf[at] (its code in 1..254: a block with an implicit zero), along the
 * chain: each next code byte ends such a block, so it becomes that zero. Stops at a code byte
 * at or past len (returned; *code is then the last code followed), or at one whose own code is
 * 0 or 0xFF (returned, already made 0; *code its code). On ARM 8 instructions a code byte (the
 * codes 1..254 tested by one unsigned compare of code - 1 against 253); a frame of 16-bit speech
 * has a code byte every ten bytes or so. */
static size_t cobs_walk(uint8_t *buf, size_t at, size_t len, uint8_t *code)
{
#if defined(__arm__) && !defined(__thumb__)
    uint8_t *p = buf + at;
    uint32_t c = *code;
    uint32_t t;
    __asm__ volatile("1:\n\t"
                     "add %[p], %[p], %[c]\n\t"
                     "cmp %[p], %[end]\n\t"
                     "bhs 2f\n\t"
                     "ldrb %[c], [%[p]]\n\t"
                     "strb %[z], [%[p]]\n\t"
                     "sub %[t], %[c], #1\n\t"
                     "cmp %[t], #253\n\t"
                     "bls 1b\n"
                     "2:"
                     : [p] "+r"(p), [c] "+r"(c), [t] "=&r"(t)
                     : [end] "r"(buf + len), [z] "r"(0u)
                     : "cc", "memory");
    *code = (uint8_t)c;
    return (size_t)(p - buf);
#else
    uint32_t c = *code;
    for (;;) {
        at += c;
        if (at >= len) {
            break;
        }
        c = buf[at];
        buf[at] = 0u;
        if (c - 1u > 253u) {
            break;
        }
    }
    *code = (uint8_t)c;
    return at;
#endif
}

/* The body starts one byte in: the first code byte goes, and every later code byte of a block
 * that ends in an implicit zero becomes that zero (cobs_walk). A full block (code 0xFF) has no
 * implicit zero: the code byte after it is dropped, and the bytes after it move down by the
 * number of code bytes dropped so far. They move once, a stretch at a time: the stretch between
 * two dropped code bytes when the second is reached, the last one at the end (moving the decoded
 * prefix up by one at every full block instead moved a frame of full blocks about four times
 * over). */
int fw_cobs_decode_in_place(uint8_t *buf, size_t len, size_t cap, size_t *start, size_t *out_len)
{
    size_t at = 0;
    size_t gap = 0; /* code bytes dropped after full blocks */
    size_t seg = 0; /* the stretch after the last of them starts here */
    size_t end = len;
    int status = 0;
    uint8_t code = len != 0u ? buf[0] : 1u;
    while (len != 0u) {
        if (code == 0u) { /* a zero inside a frame cannot be COBS */
            end = at + 1u;
            status = -1;
            break;
        }
        if (code != 0xFFu) {
            at = cobs_walk(buf, at, len, &code);
            if (at >= len) {
                status = at > len ? -1 : 0; /* past the end: a truncated block */
                break;
            }
            continue;
        }
        const size_t next = at + 0xFFu; /* the code byte after a full block */
        if (next >= len) {
            status = next > len ? -1 : 0;
            break;
        }
        if (gap != 0u) {
            fw_copy_forward(buf + seg - gap, buf + seg, next - seg);
        }
        gap++;
        seg = next + 1u;
        at = next;
        code = buf[next];
    }
    if (gap != 0u && end > seg) {
        fw_copy_forward(buf + seg - gap, buf + seg, end - seg);
    }
    const size_t first = 1u + gap;
    size_t n = end > first ? end - first : 0u;
    if (n > cap) {
        n = cap;
        status = -2;
    }
    *start = 1u;
    *out_len = n;
    return status;
}
