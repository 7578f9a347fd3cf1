/* Frame codec: see fw_frame.h and docs/protocol.md. */
#include "fw_frame.h"

/* Nibble-wise CRC-32: 16-entry table (64 bytes) instead of 1 KiB, two lookups per byte. */
static const uint32_t crc32_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u,
    0x4DB26158u, 0x5005713Cu, 0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};

uint32_t fw_crc32_update(uint32_t crc, const uint8_t *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        crc ^= data[i];
        crc = (crc >> 4) ^ crc32_nibble[crc & 0x0Fu];
        crc = (crc >> 4) ^ crc32_nibble[crc & 0x0Fu];
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

int fw_cobs_decode(const uint8_t *src, size_t len, uint8_t *dst, size_t cap, size_t *out_len)
{
    size_t in = 0;
    size_t out = 0;
    int status = 0;
    while (in < len) {
        uint8_t code = src[in++];
        if (code == 0u) { /* a zero inside a frame cannot be COBS */
            status = -1;
            break;
        }
        for (uint8_t i = 1; i < code; i++) {
            if (in >= len) {
                status = -1;
                break;
            }
            if (out >= cap) {
                status = -2;
                break;
            }
            dst[out++] = src[in++];
        }
        if (status != 0) {
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
