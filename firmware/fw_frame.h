/*
 * Frame codec shared by the device and the host test harness: COBS and CRC-32.
 * Pure functions over caller-provided buffers; no global state, no heap.
 */
#ifndef FW_FRAME_H
#define FW_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32/IEEE 802.3 (reflected 0xEDB88320, init and xor-out 0xFFFFFFFF), equal to zlib.crc32. */
uint32_t fw_crc32(const uint8_t *data, size_t len);

/* The same CRC over data given in pieces: crc = 0xFFFFFFFF, then update per piece, then xor
 * 0xFFFFFFFF (fw_crc32(d, n) == fw_crc32_update(0xFFFFFFFF, d, n) ^ 0xFFFFFFFF). */
uint32_t fw_crc32_update(uint32_t crc, const uint8_t *data, size_t len);

/* COBS-encode len bytes of src into dst (capacity FW_COBS_MAX(len), no trailing 0x00).
 * Returns the encoded length. */
size_t fw_cobs_encode(const uint8_t *src, size_t len, uint8_t *dst);

/* Lenient COBS decode of len encoded bytes (without the 0x00 delimiter) into dst of capacity cap.
 * Always writes the decodable prefix and returns its length in *out_len.
 * Returns 0 for well-formed COBS that fits, -1 for malformed COBS (a block that runs past the
 * end, or a zero byte), -2 when the decoded body would exceed cap. */
int fw_cobs_decode(const uint8_t *src, size_t len, uint8_t *dst, size_t cap, size_t *out_len);

/* The same decode in place, the received frame's buffer being the only copy: the body is left at
 * buf + *start (always 1: the first code byte's place) with *out_len bytes, and the status and
 * length are fw_cobs_decode's for cap. */
int fw_cobs_decode_in_place(uint8_t *buf, size_t len, size_t cap, size_t *start, size_t *out_len);

/* fw_cobs_decode_in_place for a frame that holds no 0x00 in buf[0, len) (a received frame as the
 * delimiter search leaves it): the same outcome with one test fewer per code byte; a zero in buf
 * breaks the promise and need not end the decode. */
int fw_cobs_decode_frame(uint8_t *buf, size_t len, size_t cap, size_t *start, size_t *out_len);

/* Copy n bytes forward, d <= s or no overlap (16 at a time on NEON). */
void fw_copy_forward(uint8_t *d, const uint8_t *s, size_t n);

/* Index of the first 0x00 in p[0, n), or n when there is none. */
size_t fw_zero_index(const uint8_t *p, size_t n);

static inline uint16_t fw_get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t fw_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline void fw_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void fw_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

#endif /* FW_FRAME_H */
