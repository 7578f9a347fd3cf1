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
#include "fw_rt.h"

#define FW_BODY_MAX (FW_HDR_SIZE + FW_MAX_PAYLOAD + FW_CRC_SIZE)
#define FW_ENC_MAX FW_COBS_MAX(FW_BODY_MAX)
/* The largest application reply payload: the replay record keeps one. A model build passes the
 * size of its RESULT (-DFW_REPLY_MAX, codegen.emit.flags.model_cflags); default: a payload. */
#ifndef FW_REPLY_MAX
#define FW_REPLY_MAX FW_MAX_PAYLOAD
#endif
_Static_assert(FW_REPLY_MAX <= FW_MAX_PAYLOAD, "a reply is a frame payload");
_Static_assert(FW_INFO_SIZE + FW_INFO_BOARD_SIZE <= FW_MAX_PAYLOAD, "INFO's fixed part fits");
/* The most bytes a platform read may take past a frame's delimiter (fw_platform_t.read): they wait
 * in rx_hold while the frame is answered. The device's read looks for the delimiter once per 256
 * bytes (fw_uart.c), the host harness reads at most this many at a time. */
#define FW_RX_CHUNK 256u
/* COBS block: a code byte and up to 254 data bytes (Cheshire & Baker 1999). */
#define FW_COBS_BLOCK 255u

/*
 * Application messages (INFER, RESET, ...): once a frame passed every check, a type the server
 * does not serve itself goes to handle(), which writes a reply payload of at most FW_REPLY_MAX
 * bytes to out and returns the reply type (> 0), or returns -FW_ERR_* for an ERROR reply, or 0
 * when the type is unknown (ERROR TYPE). describe() appends the application's part of INFO.
 */
typedef struct {
    int32_t (*handle)(void *ctx, uint8_t type, const uint8_t *payload, uint16_t len, uint8_t *out,
                      uint16_t *out_len);
    uint16_t (*describe)(void *ctx, uint8_t *out, uint16_t cap);
    void *ctx;
} fw_app_t;

/* The firmware's application: firmware/fw_app_kws.c in a `codegen build` ELF, else NULL (the
 * weak stub in main.c). Called once at start-up. */
const fw_app_t *fw_app_get(void);

typedef struct {
    /* Write len bytes to the link (blocking). */
    void (*write)(void *ctx, const uint8_t *data, size_t len);
    /* Main stack size and high-water mark in bytes, for INFO. */
    void (*stack_usage)(void *ctx, uint32_t *size, uint32_t *used);
    void *ctx;
    const fw_app_t *app; /* NULL: only HELLO and ECHO are served */
    /* What the board reads back at run time, for INFO's board block; NULL: zeros. */
    void (*board_report)(void *ctx, fw_board_report_t *r);
    /* Move up to cap received bytes to dst (need: the fewest the frame being received still
     * needs, from its header, 0 when unknown; a hint for how long to wait between bursts), fewer
     * than FW_RX_CHUNK of them after a delimiter; returns how many (0: the link has ended), in
     * *clean how many leading bytes are known to hold no delimiter (0: the server searches them
     * all) and in *slept the ticks of the wait for bytes within the call, which is not link work
     * (0 when it does not wait or keeps no time). For fw_server_poll; NULL when bytes come
     * through fw_server_feed. */
    size_t (*read)(void *ctx, uint8_t *dst, size_t cap, size_t need, size_t *clean,
                   uint32_t *slept);
    /* A free-running 32-bit tick counter (the global timer's low word on the device), to time
     * the link layer itself; NULL: not timed. */
    uint32_t (*ticks)(void *ctx);
} fw_platform_t;

/* The link layer's own cost so far (docs/protocol.md, "Link cost"): bytes received and the ticks
 * of fw_server_poll outside the application (reading the link, the delimiter search, COBS, the
 * checks and CRC-32, encoding and writing replies). 32-bit, wrapping: differences are exact. */
typedef struct {
    uint32_t rx_bytes;
    uint32_t ticks;
} fw_link_stats_t;

typedef struct {
    const fw_platform_t *platform;
    uint32_t enc_len; /* bytes kept in enc[] for the frame being received */
    uint8_t overflow; /* the frame being received did not fit in enc[] */
    uint32_t frames_ok;
    uint32_t frames_err;
    uint32_t frames_dropped;
    uint32_t frames_replayed;
    uint32_t session; /* the nonce of the last HELLO that carried one (0 until then) */
    /* The last application reply, resent as is when the same (session, type, seq) arrives again:
     * a host retry after a lost reply must not advance application state twice, and a request of
     * a new session that reuses an old seq must run (docs/protocol.md, "Replay rule"). */
    uint8_t last_valid;
    uint8_t last_type;
    uint8_t last_reply_type;
    uint16_t last_len;
    uint32_t last_seq;
    uint32_t last_session;
    uint8_t reply[FW_REPLY_MAX];
    /* Two frame-sized buffers in all (RAM, docs/protocol.md "Audio mode"): the received frame is
     * COBS-decoded in place (a decoded byte never overtakes the encoded byte being read), HELLO's
     * INFO is built in place of the request and ECHO answers from it; replies are COBS-encoded
     * one block at a time on their way to the link, with the CRC computed as they go. */
    uint8_t enc[FW_ENC_MAX];
    uint8_t tx_blk[FW_COBS_BLOCK];
    uint32_t tx_n;                /* data bytes in tx_blk after its code byte */
    uint8_t rx_hold[FW_RX_CHUNK]; /* bytes after a delimiter; a too-long frame's tail */
    fw_link_stats_t link;
    uint32_t poll_t0;   /* the start of the busy stretch (fw_server_poll) */
    uint32_t app_t0;    /* the application's call's start */
    uint32_t app_ticks; /* ticks in the application during this stretch */
    uint8_t in_poll;    /* a busy stretch is open: the last poll took bytes */
} fw_server_t;

void fw_server_init(fw_server_t *s, const fw_platform_t *platform);

/* Feed one received byte; a 0x00 completes a frame, which is answered before returning. */
void fw_server_feed(fw_server_t *s, uint8_t byte);

/* Take a frame from the link (platform reads straight into the receive buffer: its header, then
 * as many bytes as the header says) and answer the frames the bytes complete. Returns the bytes
 * taken (0: none). */
size_t fw_server_poll(fw_server_t *s);

/* The running server's link cost so far (one server per program). Called by an application
 * from its handler, it includes the link work of the request being handled up to that call. */
void fw_server_link(fw_link_stats_t *out);

#endif /* FW_SERVER_H */
