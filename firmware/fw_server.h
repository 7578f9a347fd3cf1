/*
 * Protocol server: turns received bytes into frames, checks them (docs/protocol.md, "How the
 * device treats a frame") and answers. Platform-independent: the device feeds it UART bytes, the
 * host test harness feeds it stdin; both pass a write callback. Bounded buffers, no heap.
 *
 * The windowed link (docs/protocol.md, "Windowed link"): ordered frames are served strictly in
 * seq order; one that arrives early is held (up to FW_HOLD_SLOTS of them) until the frames
 * before it come; replies are recorded (the last FW_RECORDS) so a request sent again is answered
 * from the record; the host learns what arrived from the replies and from STATUS frames.
 */
#ifndef FW_SERVER_H
#define FW_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "fw_config.h"
#include "fw_link_wire.h"
#include "fw_proto.h"
#include "fw_rt.h"

#define FW_BODY_MAX (FW_HDR_SIZE + FW_MAX_PAYLOAD + FW_CRC_SIZE)
#define FW_ENC_MAX FW_COBS_MAX(FW_BODY_MAX)
/* The largest application reply payload: each record keeps one. A model build passes the size of
 * its RESULT (-DFW_REPLY_MAX, codegen.emit.flags.model_cflags); the bare runtime's default is
 * what its test application answers. */
#ifndef FW_REPLY_MAX
#define FW_REPLY_MAX 64u
#endif
_Static_assert(FW_REPLY_MAX <= FW_MAX_PAYLOAD, "a reply is a frame payload");
_Static_assert(LINK_INFO_DESCRIPTION <= FW_MAX_PAYLOAD,
               "INFO's fixed part, board and link blocks fit a payload");
/* Replies kept for requests sent again (the host keeps at most this many replies outstanding). */
#ifndef FW_RECORDS
#define FW_RECORDS 8u
#endif
/* Ordered frames held while an earlier one is missing, and the largest payload one may have (the
 * host sends frames this short once it has seen the line lose any; FirmwareConfig). */
#ifndef FW_HOLD_SLOTS
#define FW_HOLD_SLOTS 24u
#endif
#ifndef FW_HOLD_PAYLOAD
#define FW_HOLD_PAYLOAD 256u
#endif
_Static_assert(FW_HOLD_SLOTS <= FW_WINDOW, "a held frame has a bit in STATUS's bitmap");
_Static_assert(FW_HOLD_PAYLOAD <= FW_MAX_PAYLOAD, "a held frame is a frame");
/* Ordered frames served without a reply of their own are acknowledged at the latest after this
 * many received bytes (fw_server.c maybe_ack); the build sets a quarter of the receive ring. */
#ifndef FW_ACK_EVERY
#define FW_ACK_EVERY 1024u
#endif
/* The most bytes a platform read may take past a frame's delimiter (fw_platform_t.read): they wait
 * in rx_hold while the frame is answered. The device's read looks for the delimiter once per 256
 * bytes (fw_uart.c), the host harness reads at most this many at a time. */
#define FW_RX_CHUNK 256u
/* COBS block: a code byte and up to 254 data bytes (Cheshire & Baker 1999). */
#define FW_COBS_BLOCK 255u
/* The reply's encoder buffer: two whole blocks and the delimiter, so that a block closed at or
 * before FW_TX_BUF - FW_COBS_BLOCK - 1 leaves room for the next whole block and the frame's
 * delimiter (fw_server.c, tx_close): a STATUS or a RESULT leaves in one write, not one per block.
 */
#define FW_TX_BUF (2u * FW_COBS_BLOCK + 2u)

/* An application handler's return for a request served without a reply of its own (an AUDIO
 * chunk): the next STATUS acknowledges it. Above every type byte. */
#define FW_APP_ACK 0x100

/*
 * Application messages (INFER, RESET, ...): once a frame passed every check, a type the server
 * does not serve itself goes to handle() in seq order (a message sent in parts arrives whole),
 * which writes a reply payload of at most FW_REPLY_MAX bytes to out and returns the reply type
 * (1..0xFF), or FW_APP_ACK (no reply), or -FW_ERR_* for an ERROR reply, or 0 when the type is
 * unknown (ERROR TYPE). describe() appends the application's part of INFO.
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
    /* What the board reads back at run time, for INFO's board and link blocks; NULL: zeros. */
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
    /* A free-running 32-bit tick counter (the global timer's low word on the device, less the
     * interrupt handlers' ticks), to time the link layer itself; NULL: not timed. */
    uint32_t (*ticks)(void *ctx);
    /* Bytes received and not yet read (0: the line is quiet now); NULL: always 0. An ordered
     * frame served without a reply is acknowledged (STATUS) once nothing more is waiting. */
    size_t (*pending)(void *ctx);
    /* Switch the UART to baud (divisors cd, bdiv) once what was written has left, and back to
     * the old rate after revert_ms unless confirm() is called first; NULL: no rate switch. */
    void (*set_rate)(void *ctx, uint32_t baud, uint16_t cd, uint16_t bdiv, uint32_t revert_ms);
    /* A frame arrived whole: a rate switch in progress is kept. */
    void (*confirm)(void *ctx);
    /* Ticks spent in the UART's receive interrupt so far (link work; 32-bit, wrapping); NULL:
     * no interrupt. */
    uint32_t (*irq_ticks)(void *ctx);
} fw_platform_t;

/* The link layer's own cost so far (docs/protocol.md, "Link cost"): bytes received and the ticks
 * of fw_server_poll outside the application (reading the link, the delimiter search, COBS, the
 * checks and CRC-32, encoding and writing replies) and of the UART's receive interrupt. 32-bit,
 * wrapping: differences are exact. */
typedef struct {
    uint32_t rx_bytes;
    uint32_t ticks;
} fw_link_stats_t;

/* A reply kept for a request that may be sent again. */
typedef struct {
    uint32_t seq;
    uint16_t len;
    uint8_t type; /* the reply type (ERROR included); 0: empty */
    uint8_t data[FW_REPLY_MAX];
} fw_record_t;

/* An ordered frame that arrived before the frames ahead of it. */
typedef struct {
    uint32_t seq;
    uint16_t len;
    uint8_t type;
    uint8_t used;
    uint8_t data[FW_HOLD_PAYLOAD];
} fw_held_t;

typedef struct {
    const fw_platform_t *platform;
    uint32_t enc_len;     /* bytes kept in enc[] for the frame being received */
    uint8_t overflow;     /* the frame being received did not fit in enc[] */
    uint8_t ack_due;      /* ordered frames were served since the host last heard of it */
    uint8_t rate_pending; /* a rate switch waits for its first whole frame */
    uint8_t asm_type;     /* the message being put together from parts (0: none) */
    uint32_t frames_ok;
    uint32_t frames_err;
    uint32_t frames_dropped;
    uint32_t frames_replayed;
    uint32_t frames_held;  /* ordered frames that arrived early and were held */
    uint32_t frames_stale; /* ordered frames of another session, dropped */
    uint32_t session;      /* the nonce of the last HELLO that carried one (0 until then) */
    uint32_t next;         /* the next ordered seq served: tag << 24 | counter */
    uint32_t held_mask;    /* bit i: seq next + i is in hold[] (bit 0, next itself, never) */
    uint32_t ack_rx;       /* link.rx_bytes when the host last heard of the window */
    uint32_t rec_next;     /* the record slot the next reply goes to */
    uint32_t asm_len;      /* payload bytes of the message put together so far */
    uint32_t rx_ring;      /* the platform's receive ring, bytes (STATUS reports what is free) */
    uint32_t last_error;   /* the seq of the last ordered request answered with ERROR (0: none) */
    uint32_t last_in;      /* the seq (copy bits too) of the last ordered frame that came whole */
    fw_record_t rec[FW_RECORDS];
    fw_held_t hold[FW_HOLD_SLOTS];
    /* Frame buffers (RAM, docs/protocol.md "Audio mode"): the received frame is COBS-decoded in
     * place (a decoded byte never overtakes the encoded byte being read), HELLO's INFO is built
     * in place of the request and ECHO answers from it; replies are COBS-encoded into tx_buf on
     * their way to the link, with the CRC computed as they go, and written when a frame ends or
     * tx_buf may not hold another whole block. A message sent in parts is put together in asm[]. */
    uint8_t enc[FW_ENC_MAX];
    uint8_t asm_buf[FW_MAX_PAYLOAD];
    uint8_t tx_buf[FW_TX_BUF];
    uint32_t tx_code;             /* where the open block's code byte goes in tx_buf */
    uint32_t tx_n;                /* the next byte's place in tx_buf */
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
