/*
 * The frame codec's operations in plain C (firmware/fw_frame.c includes this file after its CRC
 * tables; firmware/kernels/neon_a32/fw_frame_ops.h is the NEON form of the same functions): the
 * slice-by-8 CRC-32 (fw_frame.c explains the tables), no bulk copy or delimiter search (the
 * bytewise loops of fw_frame.c do all of it).
 */
#ifndef FW_FRAME_OPS_H
#define FW_FRAME_OPS_H

/* Eight bytes at a time from register value *crc, after the bytes up to a word boundary: returns
 * where the bytes left (fewer than 8) start. A big-endian core leaves them all to the bytewise
 * recurrence. */
static inline const uint8_t *crc32_bulk(uint32_t *crc_io, const uint8_t *p, const uint8_t *end)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t crc = *crc_io;
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
    *crc_io = crc;
#else
    (void)crc_io;
    (void)end;
#endif
    return p;
}

static inline size_t copy_bulk(uint8_t *d, const uint8_t *s, size_t n)
{
    (void)d;
    (void)s;
    (void)n;
    return 0;
}

static inline size_t zero_bulk(const uint8_t *p, size_t n)
{
    (void)p;
    (void)n;
    return 0;
}

#endif /* FW_FRAME_OPS_H */
