/*
 * Protocol server: turns received bytes into frames, checks them (docs/protocol.md, "How the
 * device treats a frame") and answers. Platform-independent: the device feeds it UART bytes, the
 * host test harness feeds it stdin; both pass a write callback. Bounded buffers, no heap.
 */
#ifndef FW_SERVER_H
#define FW_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "fw_config.h"
#include "fw_proto.h"

#define FW_BODY_MAX (FW_HDR_SIZE + FW_MAX_PAYLOAD + FW_CRC_SIZE)
#define FW_ENC_MAX FW_COBS_MAX(FW_BODY_MAX)

typedef struct {
    /* Write len bytes to the link (blocking). */
    void (*write)(void *ctx, const uint8_t *data, size_t len);
    /* Main stack size and high-water mark in bytes, for INFO. */
    void (*stack_usage)(void *ctx, uint32_t *size, uint32_t *used);
    void *ctx;
} fw_platform_t;

typedef struct {
    const fw_platform_t *platform;
    uint32_t enc_len;  /* bytes kept in enc[] for the frame being received */
    uint8_t overflow;  /* the frame being received did not fit in enc[] */
    uint32_t frames_ok;
    uint32_t frames_err;
    uint32_t frames_dropped;
    uint8_t enc[FW_ENC_MAX];
    uint8_t body[FW_BODY_MAX];
    uint8_t tx_body[FW_BODY_MAX];
    uint8_t tx_enc[FW_ENC_MAX + 1u];
} fw_server_t;

void fw_server_init(fw_server_t *s, const fw_platform_t *platform);

/* Feed one received byte; a 0x00 completes a frame, which is answered before returning. */
void fw_server_feed(fw_server_t *s, uint8_t byte);

#endif /* FW_SERVER_H */
