/* Protocol server: docs/protocol.md. Check order below follows the spec's numbered list. */
#include "fw_server.h"

#include "fw_frame.h"

/* The program's one server (the device's, or the host harness's), for fw_server_link. */
static fw_server_t *fw_server_active;

static uint32_t link_now(const fw_server_t *s)
{
    return s->platform->ticks != 0 ? s->platform->ticks(s->platform->ctx) : 0u;
}

void fw_server_init(fw_server_t *s, const fw_platform_t *platform)
{
    s->platform = platform;
    s->enc_len = 0;
    s->overflow = 0;
    s->frames_ok = 0;
    s->frames_err = 0;
    s->frames_dropped = 0;
    s->frames_replayed = 0;
    s->session = 0;
    s->last_valid = 0;
    s->tx_n = 0;
    s->link.rx_bytes = 0;
    s->link.ticks = 0;
    s->poll_t0 = 0;
    s->app_t0 = 0;
    s->app_ticks = 0;
    s->in_poll = 0;
    fw_server_active = s;
}

/* COBS, one block at a time: the same bytes as fw_cobs_encode over the whole body. A zero ends
 * the block (its code byte = 1 + data bytes); 254 data bytes make a full block (code 0xFF, no
 * implicit zero). */
static void tx_block(fw_server_t *s)
{
    s->tx_blk[0] = (uint8_t)(s->tx_n + 1u);
    s->platform->write(s->platform->ctx, s->tx_blk, s->tx_n + 1u);
    s->tx_n = 0;
}

static uint32_t tx_bytes(fw_server_t *s, const uint8_t *p, size_t len, uint32_t crc)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] == 0u) {
            tx_block(s);
        } else {
            s->tx_blk[1u + s->tx_n++] = p[i];
            if (s->tx_n == FW_COBS_BLOCK - 1u) {
                tx_block(s);
            }
        }
    }
    return fw_crc32_update(crc, p, len);
}

/* Body = header + payload + CRC, COBS-encoded as it goes out, then the 0x00 delimiter. The
 * payload may lie anywhere (the reply record, the received frame, a local). */
static void send_frame(fw_server_t *s, uint8_t type, uint32_t seq, const uint8_t *payload,
                       uint16_t len)
{
    static const uint8_t delim = 0u;
    uint8_t hdr[FW_HDR_SIZE];
    uint8_t tail[FW_CRC_SIZE];
    hdr[0] = (uint8_t)FW_PROTO_VERSION;
    hdr[1] = type;
    fw_put_u32(&hdr[2], seq);
    fw_put_u16(&hdr[6], len);
    s->tx_n = 0;
    uint32_t crc = tx_bytes(s, hdr, sizeof hdr, 0xFFFFFFFFu);
    crc = tx_bytes(s, payload, len, crc);
    fw_put_u32(tail, crc ^ 0xFFFFFFFFu);
    (void)tx_bytes(s, tail, sizeof tail, 0u);
    tx_block(s);
    s->platform->write(s->platform->ctx, &delim, 1u);
}

static void send_error(fw_server_t *s, uint8_t code, uint8_t type, uint32_t seq)
{
    uint8_t payload[2] = {code, type};
    s->frames_err++;
    send_frame(s, FW_MSG_ERROR, seq, payload, (uint16_t)sizeof payload);
}

/* INFO's board block (fw_proto.h, docs/protocol.md): tag, size, flags, then the registers. */
static void put_board_block(fw_server_t *s, uint8_t *b)
{
#ifdef FW_BOARD_NAME
    static const char name[] = FW_BOARD_NAME;
#else
    static const char name[] = "";
#endif
    fw_board_report_t r = {0, 0, 0, 0, 0, 0, 0, 0};
    if (s->platform->board_report != 0) {
        s->platform->board_report(s->platform->ctx, &r);
    }
    b[0] = (uint8_t)FW_INFO_BOARD_TAG;
    b[1] = (uint8_t)FW_INFO_BOARD_SIZE;
    b[2] = r.l2_id != 0u ? (uint8_t)FW_INFO_BOARD_L2_FOUND : 0u;
    fw_put_u32(&b[4], r.sctlr);
    fw_put_u32(&b[8], r.actlr);
    fw_put_u32(&b[12], r.l2_id);
    fw_put_u32(&b[16], r.l2_ctrl);
    fw_put_u32(&b[20], r.l2_aux);
    fw_put_u16(&b[24], r.uart_cd);
    fw_put_u16(&b[26], r.uart_bdiv);
    for (uint32_t i = 0; i < FW_INFO_BOARD_NAME_SIZE && name[i] != '\0'; i++) {
        b[28 + i] = (uint8_t)name[i];
    }
    fw_put_u32(&b[48], r.uart_rx_overruns);
}

static void send_info(fw_server_t *s, uint32_t seq)
{
    static const char build_id[] = FW_BUILD_ID;
    /* Built in place of the HELLO request (read already): the received frame's buffer holds a
     * whole payload. */
    uint8_t *p = &s->enc[FW_HDR_SIZE];
    for (uint32_t i = 0; i < FW_INFO_SIZE + FW_INFO_BOARD_SIZE; i++) {
        p[i] = 0u;
    }
    uint32_t stack_size = 0;
    uint32_t stack_used = 0;
    s->platform->stack_usage(s->platform->ctx, &stack_size, &stack_used);
    p[0] = (uint8_t)FW_PROTO_VERSION;
    p[1] = (uint8_t)FW_UART_INDEX;
    fw_put_u16(&p[2], (uint16_t)FW_MAX_PAYLOAD);
    fw_put_u32(&p[4], (uint32_t)FW_BAUD);
    fw_put_u32(&p[8], (uint32_t)FW_UART_REF_HZ);
    fw_put_u32(&p[12], s->frames_ok);
    fw_put_u32(&p[16], s->frames_err);
    fw_put_u32(&p[20], s->frames_dropped);
    fw_put_u32(&p[24], stack_size);
    fw_put_u32(&p[28], stack_used);
    for (uint32_t i = 0; i < FW_BUILD_ID_SIZE && build_id[i] != '\0'; i++) {
        p[32 + i] = (uint8_t)build_id[i];
    }
    fw_put_u32(&p[56], s->frames_replayed);
    put_board_block(s, &p[FW_INFO_SIZE]);
    const uint16_t fixed = (uint16_t)(FW_INFO_SIZE + FW_INFO_BOARD_SIZE);
    uint16_t app_len = 0;
    const fw_app_t *app = s->platform->app;
    if (app != 0 && app->describe != 0) {
        app_len = app->describe(app->ctx, &p[fixed], (uint16_t)(FW_MAX_PAYLOAD - fixed));
    }
    fw_put_u32(&p[60], s->session); /* the description's length is the payload's minus 116 */
    send_frame(s, FW_MSG_INFO, seq, p, (uint16_t)(fixed + app_len));
}

/* Step 9 for application types: replay a repeated (session, type, seq), else ask the
 * application. */
static void serve_app(fw_server_t *s, uint8_t type, uint32_t seq, const uint8_t *payload,
                      uint16_t len)
{
    const fw_app_t *app = s->platform->app;
    if (s->last_valid && s->last_session == s->session && s->last_type == type &&
        s->last_seq == seq) {
        s->frames_replayed++;
        send_frame(s, s->last_reply_type, seq, s->reply, s->last_len);
        return;
    }
    uint16_t out_len = 0;
    int32_t r = 0;
    if (app != 0) {
        /* the application's time is not the link's (fw_server_poll) */
        const uint32_t t0 = link_now(s);
        s->app_t0 = t0;
        r = app->handle(app->ctx, type, payload, len, s->reply, &out_len);
        s->app_ticks += link_now(s) - t0;
    }
    if (r == 0) {
        send_error(s, FW_ERR_TYPE, type, seq);
    } else if (r < 0) {
        send_error(s, (uint8_t)(-r), type, seq);
    } else {
        s->frames_ok++;
        s->last_valid = 1;
        s->last_type = type;
        s->last_seq = seq;
        s->last_session = s->session;
        s->last_reply_type = (uint8_t)r;
        s->last_len = out_len <= FW_REPLY_MAX ? out_len : (uint16_t)FW_REPLY_MAX;
        send_frame(s, s->last_reply_type, seq, s->reply, s->last_len);
    }
}

/* Out of line: inlined into fw_server_feed, its register saves and stack frame were paid on
 * every received byte, not once per frame. */
__attribute__((noinline)) static void handle_frame(fw_server_t *s)
{
    size_t n = 0;
    size_t start = 0;
    /* In place (fw_frame.h): the body starts at enc[start]. A reply built in the receive buffer
     * (INFO) starts at enc[0] instead. */
    int status = fw_cobs_decode_in_place(s->enc, s->enc_len, FW_BODY_MAX, &start, &n);
    uint8_t *b = &s->enc[start];

    /* Steps 1-2: without version, type and seq there is nobody to answer. */
    if (n < FW_SEQ_READABLE) {
        s->frames_dropped++;
        return;
    }
    uint8_t type = b[1];
    uint32_t seq = fw_get_u32(&b[2]);
    if (s->overflow || status == -2) {
        send_error(s, FW_ERR_TOO_LONG, type, seq);
        return;
    }
    if (b[0] != FW_PROTO_VERSION) { /* step 3 */
        send_error(s, FW_ERR_VERSION, type, seq);
        return;
    }
    if (status != 0) { /* step 4 */
        send_error(s, FW_ERR_COBS, type, seq);
        return;
    }
    if (n < FW_HDR_SIZE + FW_CRC_SIZE) { /* step 5 */
        send_error(s, FW_ERR_SHORT, type, seq);
        return;
    }
    uint16_t len = fw_get_u16(&b[6]);
    if (len > FW_MAX_PAYLOAD) { /* step 6 */
        send_error(s, FW_ERR_TOO_LONG, type, seq);
        return;
    }
    if (FW_HDR_SIZE + (size_t)len + FW_CRC_SIZE != n) { /* step 7 */
        send_error(s, FW_ERR_LENGTH, type, seq);
        return;
    }
    if (fw_crc32(b, FW_HDR_SIZE + (size_t)len) != fw_get_u32(&b[FW_HDR_SIZE + len])) { /* step 8 */
        send_error(s, FW_ERR_CRC, type, seq);
        return;
    }
    switch (type) { /* step 9 */
    case FW_MSG_HELLO:
        /* Empty: INFO only. A nonce opens (or re-announces) the host's session. */
        if (len == FW_SESSION_SIZE) {
            s->session = fw_get_u32(&b[FW_HDR_SIZE]);
        } else if (len != 0u) {
            send_error(s, FW_ERR_PAYLOAD, type, seq);
            break;
        }
        s->frames_ok++;
        send_info(s, seq); /* over the request, read already */
        break;
    case FW_MSG_ECHO:
        s->frames_ok++;
        send_frame(s, FW_MSG_ECHO_REPLY, seq, &b[FW_HDR_SIZE], len);
        break;
    default:
        serve_app(s, type, seq, &b[FW_HDR_SIZE], len);
        break;
    }
}

/* Where the link's next bytes go and how many may: the rest of enc[], or, once the frame being
 * received has filled enc[], rx_hold, whose bytes are only searched for the delimiter. */
static uint8_t *rx_space(fw_server_t *s, size_t *room)
{
    const size_t left = sizeof s->enc - s->enc_len;
    if (left == 0u) {
        *room = sizeof s->rx_hold;
        return s->rx_hold;
    }
    *room = left;
    return &s->enc[s->enc_len];
}

/* n bytes were written at p (rx_space): a 0x00 among them completes a frame, which is answered
 * before the bytes after it (the next frames' first bytes) are taken, from rx_hold: the answer
 * may be built in enc[]. One search per chunk instead of a test and a call per byte. */
static void rx_commit(fw_server_t *s, uint8_t *p, size_t n)
{
    for (;;) {
        const size_t z = fw_zero_index(p, n);
        if (p != s->rx_hold) {
            s->enc_len += (uint32_t)z;
        } else if (z != 0u) {
            s->overflow = 1; /* keep the prefix (it holds seq), discard up to the delimiter */
        }
        if (z == n) {
            return;
        }
        const size_t rest = n - z - 1u;
        fw_copy_forward(s->rx_hold, p + z + 1u, rest); /* forward: p may be rx_hold itself */
        if (s->enc_len != 0u || s->overflow) {
            handle_frame(s);
        }
        s->enc_len = 0;
        s->overflow = 0;
        if (rest == 0u) {
            return;
        }
        fw_copy_forward(s->enc, s->rx_hold, rest);
        p = s->enc;
        n = rest;
    }
}

void fw_server_feed(fw_server_t *s, uint8_t byte)
{
    size_t room = 0;
    uint8_t *p = rx_space(s, &room);
    *p = byte;
    s->link.rx_bytes++;
    rx_commit(s, p, 1u);
}

/* The fewest bytes still to come for the frame being received, read from its header: the body is
 * FW_HDR_SIZE + length + FW_CRC_SIZE bytes, COBS adds its first code byte and one per full
 * 254-byte block, the delimiter one byte. The header is enc[1, FW_HDR_SIZE + 1) with every code
 * byte among them standing for a zero. 0 when it cannot tell (a damaged code or length: the
 * platform then waits for what comes). */
static size_t rx_need(const fw_server_t *s)
{
    uint8_t h[FW_HDR_SIZE];
    for (uint32_t i = 0; i < FW_HDR_SIZE; i++) {
        h[i] = s->enc[i + 1u];
    }
    for (uint32_t at = s->enc[0]; at <= FW_HDR_SIZE;) {
        const uint8_t c = s->enc[at];
        if (c == 0u) {
            return 0;
        }
        h[at - 1u] = 0u;
        at += c;
    }
    const uint16_t len = fw_get_u16(&h[6]);
    const size_t total = FW_HDR_SIZE + (size_t)len + FW_CRC_SIZE + 2u;
    return len <= FW_MAX_PAYLOAD && total > s->enc_len ? total - s->enc_len : 0u;
}

/* One platform read: a frame's first bytes up to its header, or, the header there, as many as it
 * says are still to come. Returns the bytes taken. */
static size_t rx_take(fw_server_t *s)
{
    const fw_platform_t *pl = s->platform;
    size_t room = 0;
    uint8_t *p = rx_space(s, &room);
    size_t need = 0;
    if (p != s->rx_hold) {
        if (s->enc_len <= FW_HDR_SIZE) {
            need = FW_HDR_SIZE + 1u - s->enc_len;
            room = room < need ? room : need;
        } else {
            need = rx_need(s);
        }
    }
    size_t clean = 0;
    uint32_t slept = 0;
    const size_t n = pl->read(pl->ctx, p, room, need, &clean, &slept);
    s->poll_t0 += slept;
    s->link.rx_bytes += (uint32_t)n;
    if (p != s->rx_hold && clean != 0u) {
        s->enc_len += (uint32_t)clean; /* a frame's middle: no delimiter there */
        p += clean;
        clean = n - clean;
    } else {
        clean = n;
    }
    if (clean != 0u) {
        rx_commit(s, p, clean);
    }
    return n;
}

/* Timed per poll, less the application's handlers and the platform read's wait for bytes (not
 * link work: poll_t0 moves on by it). On the device a poll takes a whole frame: its header, then
 * in the same poll the rest (fw_uart_read stops at the delimiter), so the call and the two timer
 * reads are paid once a frame. */
size_t fw_server_poll(fw_server_t *s)
{
    s->poll_t0 = link_now(s);
    s->app_ticks = 0;
    s->in_poll = 1;
    const uint32_t before = s->enc_len;
    size_t n = rx_take(s);
    /* the header has just come in (no delimiter yet): the rest of the frame in the same poll */
    if (n != 0u && before <= FW_HDR_SIZE && s->enc_len > FW_HDR_SIZE) {
        n += rx_take(s);
    }
    s->link.ticks += link_now(s) - s->poll_t0 - s->app_ticks;
    s->in_poll = 0;
    return n;
}

void fw_server_link(fw_link_stats_t *out)
{
    const fw_server_t *s = fw_server_active;
    if (s == 0) {
        out->rx_bytes = 0;
        out->ticks = 0;
        return;
    }
    *out = s->link;
    if (s->in_poll) { /* called by the application: this stretch's link work up to its call */
        out->ticks += s->app_t0 - s->poll_t0 - s->app_ticks;
    }
}
