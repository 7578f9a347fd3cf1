/* Frame codec: see fw_frame.h and docs/protocol.md. */
#include "fw_frame.h"

#include "elt_neon.h" /* ELT_NEON: which tables fw_crc32_tables.h holds */
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

#include "fw_frame_ops.h"

uint32_t fw_crc32_update(uint32_t crc, const uint8_t *data, size_t len)
{
    const uint8_t *end = data + len;
    const uint8_t *p = crc32_bulk(&crc, data, end);
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
 * before the one it reads): the variant's bulk (fw_frame_ops.h), then byte by byte. */
void fw_copy_forward(uint8_t *d, const uint8_t *s, size_t n)
{
    size_t i = copy_bulk(d, s, n);
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

size_t fw_zero_index(const uint8_t *p, size_t n)
{
    size_t i = zero_bulk(p, n);
    while (i < n && p[i] != 0u) {
        i++;
    }
    return i;
}

/* From the code byte at buf[at] (its code in 1..254: a block with an implicit zero), along the
 * chain: each next code byte ends such a block, so it becomes that zero. Stops at a code byte
 * at or past len (returned; *code is then the last code followed), or at one whose own code is
 * 0 or 0xFF (returned, made 0: a full block's code byte ends the block before it too; *code its
 * code). On ARM 6 instructions a code byte: the codes 1..254 tested by one unsigned compare of
 * code - 1 against 253, then, conditional on it, the zero stored by a post-indexed STRB that also
 * steps to the next code byte (ARM DDI 0406C A8.8, STRB (register): the address is the base,
 * the base then advanced by the code) and the end's compare, so one branch closes the loop
 * whichever way it ends (a bad code leaves the flags HI, which BLO does not take; the zero for it
 * is stored after the loop, once; STRLSB: gcc gives inline asm the divided syntax). A frame of
 * 16-bit speech has a code byte every seven bytes or so (4,600 per second of raw audio,
 * measure/bench_memory.py). */
static size_t cobs_walk(uint8_t *buf, size_t at, size_t len, uint8_t *code)
{
#if defined(__arm__) && !defined(__thumb__)
    uint8_t *p = buf + at;
    uint8_t *const end = buf + len;
    uint32_t c = *code;
    uint32_t t;
    __asm__ volatile("add %[p], %[p], %[c]\n\t"
                     "cmp %[p], %[end]\n\t"
                     "bhs 2f\n"
                     "1:\n\t"
                     "ldrb %[c], [%[p]]\n\t"
                     "sub %[t], %[c], #1\n\t"
                     "cmp %[t], #253\n\t"
                     "strlsb %[z], [%[p]], %[c]\n\t"
                     "cmpls %[p], %[end]\n\t"
                     "blo 1b\n"
                     "2:"
                     : [p] "+r"(p), [c] "+r"(c), [t] "=&r"(t)
                     : [end] "r"(end), [z] "r"(0u)
                     : "cc", "memory");
    if (p < end) { /* a bad code stopped the walk: its byte ends the block before it */
        *p = 0u;
    }
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

/* cobs_walk over a frame that holds no 0x00 (the delimiter search ends a frame at its first: the
 * server's receive path, fw_server.c rx_commit): only the code 0xFF stops the walk before the
 * end, so one compare with 0xFF replaces the range test: 5 instructions a code byte on ARM (a code
 * 0 would not move the walk on: the caller's promise that there is none is what ends it). */
static size_t cobs_walk_clean(uint8_t *buf, size_t at, size_t len, uint8_t *code)
{
#if defined(__arm__) && !defined(__thumb__)
    uint8_t *p = buf + at;
    uint8_t *const end = buf + len;
    uint32_t c = *code;
    __asm__ volatile("add %[p], %[p], %[c]\n\t"
                     "cmp %[p], %[end]\n\t"
                     "bhs 2f\n"
                     "1:\n\t"
                     "ldrb %[c], [%[p]]\n\t"
                     "cmp %[c], #255\n\t"
                     "strneb %[z], [%[p]], %[c]\n\t"
                     "cmpne %[p], %[end]\n\t"
                     "blo 1b\n"
                     "2:"
                     : [p] "+r"(p), [c] "+r"(c)
                     : [end] "r"(end), [z] "r"(0u)
                     : "cc", "memory");
    if (p < end) { /* a full block's code byte stopped the walk: it ends the block before it */
        *p = 0u;
    }
    *code = (uint8_t)c;
    return (size_t)(p - buf);
#else
    return cobs_walk(buf, at, len, code);
#endif
}

/* The body starts one byte in: the first code byte goes, and every later code byte of a block
 * that ends in an implicit zero becomes that zero (cobs_walk). A full block (code 0xFF) has no
 * implicit zero: the code byte after it is dropped, and the bytes after it move down by the
 * number of code bytes dropped so far. They move once, a stretch at a time: the stretch between
 * two dropped code bytes when the second is reached, the last one at the end (moving the decoded
 * prefix up by one at every full block instead moved a frame of full blocks about four times
 * over). */
static int cobs_decode(uint8_t *buf, size_t len, size_t cap, size_t *start, size_t *out_len,
                       int clean)
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
            at = clean ? cobs_walk_clean(buf, at, len, &code) : cobs_walk(buf, at, len, &code);
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

int fw_cobs_decode_in_place(uint8_t *buf, size_t len, size_t cap, size_t *start, size_t *out_len)
{
    return cobs_decode(buf, len, cap, start, out_len, 0);
}

int fw_cobs_decode_frame(uint8_t *buf, size_t len, size_t cap, size_t *start, size_t *out_len)
{
    return cobs_decode(buf, len, cap, start, out_len, 1);
}
