/* Protocol server: docs/protocol.md. Check order below follows the spec's numbered list. */
#include "fw_server.h"

#include "fw_frame.h"
#include "fw_link_wire.h" /* payload offsets: codegen.ir.link_wire */

/* The program's one server (the device's, or the host harness's), for fw_server_link. */
static fw_server_t *fw_server_active;

/* The rates BAUD may ask for (codegen.target.firmware.uart_rates: every standard rate the UART's
 * reference clock reaches within 2 %), each with its divisors. */
typedef struct {
    uint32_t baud;
    uint16_t cd;
    uint16_t bdiv;
} fw_rate_t;
static const fw_rate_t fw_rates[] = FW_UART_RATE_TABLE;
#define FW_RATE_COUNT (sizeof fw_rates / sizeof fw_rates[0])
_Static_assert(FW_RATE_COUNT <= LINK_INFO_LINK_RATES_LEN, "INFO lists every rate");

static uint32_t link_now(const fw_server_t *s)
{
    return s->platform->ticks != 0 ? s->platform->ticks(s->platform->ctx) : 0u;
}

static void board_report(const fw_server_t *s, fw_board_report_t *r);

static uint32_t seq_tag(uint32_t session)
{
    return (session & FW_SEQ_TAG_MASK) << FW_SEQ_TAG_SHIFT;
}

/* A new session: the window starts over at counter 1, nothing held, nothing recorded. */
static void open_session(fw_server_t *s, uint32_t session)
{
    s->session = session;
    s->next = seq_tag(session) | 1u;
    s->held_mask = 0;
    s->asm_type = 0;
    s->asm_len = 0;
    s->ack_due = 0;
    s->last_error = 0;
    s->last_in = s->next;
    for (uint32_t i = 0; i < FW_HOLD_SLOTS; i++) {
        s->hold[i].used = 0;
    }
    for (uint32_t i = 0; i < FW_RECORDS; i++) {
        s->rec[i].type = 0;
    }
}

void fw_server_init(fw_server_t *s, const fw_platform_t *platform)
{
    s->platform = platform;
    s->enc_len = 0;
    s->overflow = 0;
    s->rate_pending = 0;
    s->frames_ok = 0;
    s->frames_err = 0;
    s->frames_dropped = 0;
    s->frames_replayed = 0;
    s->frames_held = 0;
    s->frames_stale = 0;
    s->ack_rx = 0;
    s->rec_next = 0;
    s->tx_code = 0;
    s->tx_n = 1;
    s->link.rx_bytes = 0;
    s->link.ticks = 0;
    s->poll_t0 = 0;
    s->app_t0 = 0;
    s->app_ticks = 0;
    s->in_poll = 0;
    open_session(s, 0u);
    fw_board_report_t r;
    board_report(s, &r);
    s->rx_ring = r.rx_ring;
    fw_server_active = s;
}

/* COBS into tx_buf (Cheshire & Baker 1999): the same bytes as fw_cobs_encode over the whole
 * body. A zero ends the block (its code byte = 1 + data bytes); 254 data bytes make a full block
 * (code 0xFF, no implicit zero). The open block's code byte is written when the block closes at n
 * (the next block's code byte goes there); what is done leaves when tx_buf may not hold another
 * whole block and the delimiter (one write for a short reply instead of one per block: a STATUS
 * has a zero every two or three bytes). */
static uint32_t tx_close(fw_server_t *s, uint32_t n)
{
    s->tx_buf[s->tx_code] = (uint8_t)(n - s->tx_code);
    if (n > FW_TX_BUF - FW_COBS_BLOCK - 1u) {
        s->platform->write(s->platform->ctx, s->tx_buf, n);
        n = 0;
    }
    s->tx_code = n;
    return n + 1u;
}

/* Bytes the general way: each checked for a full block, each close for the buffer's room
 * (tx_close). */
static uint32_t tx_bytes_slow(fw_server_t *s, const uint8_t *p, const uint8_t *end, uint32_t n)
{
    for (; p != end; p++) {
        if (*p != 0u) {
            s->tx_buf[n++] = *p;
            if (n - s->tx_code != FW_COBS_BLOCK) {
                continue;
            }
        }
        n = tx_close(s, n);
    }
    return n;
}

/* COBS of the n > 0 bytes at p from output o, the open block's code byte at *code, when they can
 * neither fill the block nor pass the buffer's end: a zero closes the block (its code byte is
 * written, the next one's place kept), any other byte is copied. Returns the output's end. On ARM
 * 6 instructions a non-zero byte and 9 a zero (gcc made both 10: it turned the two paths into
 * conditional stores). */
static uint8_t *cobs_run(uint8_t *o, uint8_t **code, const uint8_t *p, size_t n)
{
    uint8_t *c = *code;
#if defined(__arm__) && !defined(__thumb__)
    uint32_t b;
    __asm__ volatile("1:\n\t"
                     "ldrb %[b], [%[p]], #1\n\t"
                     "cmp %[b], #0\n\t"
                     "beq 3f\n\t"
                     "strb %[b], [%[o]], #1\n"
                     "2:\n\t"
                     "cmp %[p], %[end]\n\t"
                     "bne 1b\n\t"
                     "b 4f\n"
                     "3:\n\t"
                     "sub %[b], %[o], %[c]\n\t"
                     "strb %[b], [%[c]]\n\t"
                     "mov %[c], %[o]\n\t"
                     "add %[o], %[o], #1\n\t"
                     "b 2b\n"
                     "4:"
                     : [p] "+r"(p), [o] "+r"(o), [c] "+r"(c), [b] "=&r"(b)
                     : [end] "r"(p + n)
                     : "cc", "memory");
#else
    for (const uint8_t *const end = p + n; p != end; p++) {
        if (*p == 0u) {
            *c = (uint8_t)(o - c);
            c = o++;
        } else {
            *o++ = *p;
        }
    }
#endif
    *code = c;
    return o;
}

/* The piece in stretches that can neither fill the open block nor take tx_buf past tx_close's
 * limit, each through cobs_run with no test for either; a byte where no such stretch is left (the
 * block one byte short of full, tx_buf at the limit) the general way. */
static void tx_bytes(fw_server_t *s, const uint8_t *p, size_t len)
{
    const uint8_t *const end = p + len;
    const uint32_t limit = FW_TX_BUF - FW_COBS_BLOCK - 1u;
    for (const uint8_t *q = p; q != end;) {
        const uint32_t n = s->tx_n;
        const size_t short_of_full = FW_COBS_BLOCK - 1u - (n - s->tx_code);
        size_t k = (size_t)(end - q);
        k = k < short_of_full ? k : short_of_full;
        k = n + k <= limit ? k : (n < limit ? limit - n : 0u);
        if (k == 0u) {
            s->tx_n = tx_bytes_slow(s, q, q + 1, n);
            q++;
            continue;
        }
        uint8_t *c = &s->tx_buf[s->tx_code];
        s->tx_n = (uint32_t)(cobs_run(&s->tx_buf[n], &c, q, k) - s->tx_buf);
        s->tx_code = (uint32_t)(c - s->tx_buf);
        q += k;
    }
}

/* The longest payload send_frame2 joins to its header (STATUS's, LINK_STATUS_FIXED, and
 * ERROR's fit). */
#define TX_JOIN 32u
_Static_assert(LINK_STATUS_FIXED <= TX_JOIN, "a STATUS is sent joined");

/* Body = header + payload + CRC, COBS-encoded as it goes out, then the 0x00 delimiter. The
 * payload is `lead` bytes then `len` bytes, either of which may lie anywhere (a record, the
 * received frame, a local). */
static void send_frame2(fw_server_t *s, uint8_t type, uint32_t seq, const uint8_t *lead,
                        uint16_t lead_len, const uint8_t *payload, uint16_t len)
{
    /* a short payload (a STATUS, an ERROR) joins the header and the CRC in one buffer: one CRC
     * call over 8 + len bytes and one pass of the encoder (the header alone took the byte-wise
     * recurrence, 7 instructions a byte) */
    uint8_t body[LINK_HEADER_FIXED + TX_JOIN + FW_CRC_SIZE];
    body[LINK_HEADER_VERSION] = (uint8_t)FW_PROTO_VERSION;
    body[LINK_HEADER_TYPE] = type;
    fw_put_u32(&body[LINK_HEADER_SEQ], seq);
    fw_put_u16(&body[LINK_HEADER_LENGTH], (uint16_t)(lead_len + len));
    s->tx_code = 0;
    s->tx_n = 1;
    if (lead_len == 0u && len <= TX_JOIN) {
        fw_copy_forward(&body[LINK_HEADER_FIXED], payload, len);
        const size_t n = LINK_HEADER_FIXED + (size_t)len;
        fw_put_u32(&body[n], fw_crc32(body, n));
        tx_bytes(s, body, n + FW_CRC_SIZE);
    } else {
        /* the CRC over the header and the payload only (not over the CRC itself, nor over an
         * empty lead) */
        uint8_t tail[FW_CRC_SIZE];
        uint32_t crc = fw_crc32_update(0xFFFFFFFFu, body, LINK_HEADER_FIXED);
        tx_bytes(s, body, LINK_HEADER_FIXED);
        if (lead_len != 0u) {
            crc = fw_crc32_update(crc, lead, lead_len);
            tx_bytes(s, lead, lead_len);
        }
        crc = fw_crc32_update(crc, payload, len);
        tx_bytes(s, payload, len);
        fw_put_u32(tail, crc ^ 0xFFFFFFFFu);
        tx_bytes(s, tail, sizeof tail);
    }
    /* the last block, then the delimiter: tx_close left room for both */
    const uint32_t n = s->tx_n;
    s->tx_buf[s->tx_code] = (uint8_t)(n - s->tx_code);
    s->tx_buf[n] = 0u;
    s->platform->write(s->platform->ctx, s->tx_buf, n + 1u);
}

static void send_frame(fw_server_t *s, uint8_t type, uint32_t seq, const uint8_t *payload,
                       uint16_t len)
{
    send_frame2(s, type, seq, payload, 0u, payload, len);
}

static void send_error(fw_server_t *s, uint8_t code, uint8_t type, uint32_t seq)
{
    uint8_t payload[LINK_ERROR_FIXED];
    payload[LINK_ERROR_CODE] = code;
    payload[LINK_ERROR_TYPE] = type;
    s->frames_err++;
    send_frame(s, FW_MSG_ERROR, seq, payload, (uint16_t)sizeof payload);
}

static void board_report(const fw_server_t *s, fw_board_report_t *r)
{
    const fw_board_report_t zero = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    *r = zero;
    if (s->platform->board_report != 0) {
        s->platform->board_report(s->platform->ctx, r);
    }
}

/* The window as the device sees it (docs/protocol.md, "STATUS"): sent for a damaged frame (cause:
 * its ERROR code), an intact ordered frame not served on arrival (GAP, DUP, FULL, STALE), and
 * once ordered frames served without a reply of their own have no more bytes behind them (ACK). */
static void send_status(fw_server_t *s, uint8_t cause, uint8_t type, uint32_t seq)
{
    uint8_t p[LINK_STATUS_FIXED];
    size_t pending = s->platform->pending != 0 ? s->platform->pending(s->platform->ctx) : 0u;
    const uint32_t ring = s->rx_ring > pending ? s->rx_ring - (uint32_t)pending : 0u;
    fw_put_u32(&p[LINK_STATUS_NEXT], s->next);
    fw_put_u32(&p[LINK_STATUS_HELD], s->held_mask);
    p[LINK_STATUS_CAUSE] = cause;
    p[LINK_STATUS_TYPE] = type;
    fw_put_u16(&p[LINK_STATUS_RING_FREE], (uint16_t)(ring < 0xFFFFu ? ring : 0xFFFFu));
    fw_put_u32(&p[LINK_STATUS_LAST_ERROR], s->last_error);
    if (cause != FW_CAUSE_ACK) {
        s->frames_err++;
    }
    send_frame(s, FW_MSG_STATUS, seq, p, (uint16_t)sizeof p);
    s->ack_due = 0;
    s->ack_rx = s->link.rx_bytes;
}

/* INFO's board block (fw_link_wire.h, docs/protocol.md): tag, size, flags, then the registers;
 * zeroed by the caller (the reserved byte, the name's padding). */
static void put_board_block(const fw_board_report_t *r, uint8_t *b)
{
#ifdef FW_BOARD_NAME
    static const char name[] = FW_BOARD_NAME;
#else
    static const char name[] = "";
#endif
    b[LINK_INFO_BOARD_TAG] = (uint8_t)FW_INFO_BOARD_TAG;
    b[LINK_INFO_BOARD_SIZE] = (uint8_t)LINK_INFO_BOARD_FIXED;
    b[LINK_INFO_BOARD_FLAGS] = r->l2_id != 0u ? (uint8_t)FW_INFO_BOARD_L2_FOUND : 0u;
    fw_put_u32(&b[LINK_INFO_BOARD_SCTLR], r->sctlr);
    fw_put_u32(&b[LINK_INFO_BOARD_ACTLR], r->actlr);
    fw_put_u32(&b[LINK_INFO_BOARD_L2_ID], r->l2_id);
    fw_put_u32(&b[LINK_INFO_BOARD_L2_CONTROL], r->l2_ctrl);
    fw_put_u32(&b[LINK_INFO_BOARD_L2_AUX], r->l2_aux);
    fw_put_u16(&b[LINK_INFO_BOARD_UART_CD], r->uart_cd);
    fw_put_u16(&b[LINK_INFO_BOARD_UART_BDIV], r->uart_bdiv);
    for (uint32_t i = 0; i < LINK_INFO_BOARD_NAME_LEN && name[i] != '\0'; i++) {
        b[LINK_INFO_BOARD_NAME + i] = (uint8_t)name[i];
    }
    fw_put_u32(&b[LINK_INFO_BOARD_UART_RX_OVERRUNS], r->uart_rx_overruns);
}

/* INFO's link block (fw_link_wire.h, docs/protocol.md): what the host's window may use, the
 * link's counters and the rates BAUD may ask for (the rest of the rates' room zeroed by the
 * caller). */
static void put_link_block(const fw_server_t *s, const fw_board_report_t *r, uint8_t *b)
{
    b[LINK_INFO_LINK_TAG] = (uint8_t)FW_INFO_LINK_TAG;
    b[LINK_INFO_LINK_SIZE] = (uint8_t)LINK_INFO_LINK_FIXED;
    b[LINK_INFO_LINK_N_RATES] = (uint8_t)FW_RATE_COUNT;
    b[LINK_INFO_LINK_WINDOW] = (uint8_t)FW_WINDOW;
    fw_put_u32(&b[LINK_INFO_LINK_RX_RING], r->rx_ring);
    b[LINK_INFO_LINK_HOLD_SLOTS] = (uint8_t)FW_HOLD_SLOTS;
    b[LINK_INFO_LINK_RECORDS] = (uint8_t)FW_RECORDS;
    fw_put_u16(&b[LINK_INFO_LINK_HOLD_PAYLOAD], (uint16_t)FW_HOLD_PAYLOAD);
    fw_put_u32(&b[LINK_INFO_LINK_BAUD], r->baud);
    fw_put_u32(&b[LINK_INFO_LINK_RING_OVERRUNS], r->ring_overruns);
    fw_put_u32(&b[LINK_INFO_LINK_RATE_REVERTS], r->rate_reverts);
    fw_put_u32(&b[LINK_INFO_LINK_FRAMES_HELD], s->frames_held);
    fw_put_u32(&b[LINK_INFO_LINK_FRAMES_STALE], s->frames_stale);
    fw_put_u32(&b[LINK_INFO_LINK_NEXT], s->next);
    fw_put_u32(&b[LINK_INFO_LINK_REPLY_MAX], (uint32_t)FW_REPLY_MAX);
    for (uint32_t i = 0; i < FW_RATE_COUNT; i++) {
        fw_put_u32(&b[LINK_INFO_LINK_RATES + sizeof(uint32_t) * i], fw_rates[i].baud);
    }
}

static void send_info(fw_server_t *s, uint32_t seq)
{
    static const char build_id[] = FW_BUILD_ID;
    /* Built in place of the HELLO request (read already): the received frame's buffer holds a
     * whole payload. */
    uint8_t *p = &s->enc[FW_HDR_SIZE];
    const uint16_t fixed = (uint16_t)LINK_INFO_DESCRIPTION;
    for (uint32_t i = 0; i < fixed; i++) {
        p[i] = 0u;
    }
    uint32_t stack_size = 0;
    uint32_t stack_used = 0;
    s->platform->stack_usage(s->platform->ctx, &stack_size, &stack_used);
    p[LINK_INFO_PROTOCOL_VERSION] = (uint8_t)FW_PROTO_VERSION;
    p[LINK_INFO_UART] = (uint8_t)FW_UART_INDEX;
    fw_put_u16(&p[LINK_INFO_MAX_PAYLOAD], (uint16_t)FW_MAX_PAYLOAD);
    fw_put_u32(&p[LINK_INFO_BAUD], (uint32_t)FW_BAUD);
    fw_put_u32(&p[LINK_INFO_UART_REF_HZ], (uint32_t)FW_UART_REF_HZ);
    fw_put_u32(&p[LINK_INFO_FRAMES_OK], s->frames_ok);
    fw_put_u32(&p[LINK_INFO_FRAMES_ERR], s->frames_err);
    fw_put_u32(&p[LINK_INFO_FRAMES_DROPPED], s->frames_dropped);
    fw_put_u32(&p[LINK_INFO_STACK_SIZE], stack_size);
    fw_put_u32(&p[LINK_INFO_STACK_USED], stack_used);
    for (uint32_t i = 0; i < LINK_INFO_BUILD_ID_LEN && build_id[i] != '\0'; i++) {
        p[LINK_INFO_BUILD_ID + i] = (uint8_t)build_id[i];
    }
    fw_put_u32(&p[LINK_INFO_FRAMES_REPLAYED], s->frames_replayed);
    fw_put_u32(&p[LINK_INFO_SESSION], s->session);
    fw_board_report_t r;
    board_report(s, &r);
    put_board_block(&r, &p[LINK_INFO_FIXED]);
    put_link_block(s, &r, &p[LINK_INFO_FIXED + LINK_INFO_BOARD_FIXED]);
    uint16_t app_len = 0;
    const fw_app_t *app = s->platform->app;
    if (app != 0 && app->describe != 0) {
        app_len = app->describe(app->ctx, &p[fixed], (uint16_t)(FW_MAX_PAYLOAD - fixed));
    }
    send_frame(s, FW_MSG_INFO, seq, p, (uint16_t)(fixed + app_len));
}

/* BAUD: the rate must be one of the table's; BAUD_ACK leaves at the old rate, then the platform
 * switches (docs/protocol.md, "Rate switch"). */
static void serve_baud(fw_server_t *s, uint32_t seq, const uint8_t *payload, uint16_t len)
{
    const uint32_t baud = len == LINK_BAUD_FIXED ? fw_get_u32(&payload[LINK_BAUD_RATE]) : 0u;
    const fw_rate_t *rate = 0;
    for (uint32_t i = 0; i < FW_RATE_COUNT; i++) {
        if (fw_rates[i].baud == baud) {
            rate = &fw_rates[i];
        }
    }
    if (rate == 0 || s->platform->set_rate == 0) {
        send_error(s, FW_ERR_PAYLOAD, FW_MSG_BAUD, seq);
        return;
    }
    uint8_t ack[LINK_BAUD_ACK_FIXED];
    fw_put_u32(&ack[LINK_BAUD_ACK_RATE], rate->baud);
    fw_put_u16(&ack[LINK_BAUD_ACK_CD], rate->cd);
    fw_put_u16(&ack[LINK_BAUD_ACK_BDIV], rate->bdiv);
    s->frames_ok++;
    send_frame(s, FW_MSG_BAUD_ACK, seq, ack, (uint16_t)sizeof ack);
    s->platform->set_rate(s->platform->ctx, rate->baud, rate->cd, rate->bdiv,
                          fw_get_u16(&payload[LINK_BAUD_REVERT_MS]));
    s->rate_pending = 1;
}

static const fw_record_t *find_record(const fw_server_t *s, uint32_t seq)
{
    for (uint32_t i = 0; i < FW_RECORDS; i++) {
        if (s->rec[i].type != 0u && (s->rec[i].seq & ~FW_SEQ_COPY_MASK) == seq) {
            return &s->rec[i];
        }
    }
    return 0;
}

/* The record slot the next reply goes to: the oldest one. */
static fw_record_t *record_slot(fw_server_t *s)
{
    return &s->rec[s->rec_next];
}

/* The reply in the record slot, for the request that ended with seq: kept (a request sent again
 * gets the same answer, ERRORs too) and sent. */
static void record_send(fw_server_t *s, uint8_t type, uint32_t seq, uint16_t len)
{
    fw_record_t *rec = record_slot(s);
    rec->seq = seq;
    rec->type = type;
    rec->len = len <= FW_REPLY_MAX ? len : (uint16_t)FW_REPLY_MAX;
    s->rec_next = (s->rec_next + 1u) % FW_RECORDS;
    s->ack_due = 0; /* the reply says it: every ordered seq up to this one was served */
    send_frame(s, rec->type, seq, rec->data, rec->len);
}

static void record_error(fw_server_t *s, uint8_t code, uint8_t type, uint32_t seq)
{
    fw_record_t *rec = record_slot(s);
    rec->data[LINK_ERROR_CODE] = code;
    rec->data[LINK_ERROR_TYPE] = type;
    s->frames_err++;
    s->last_error = seq;
    record_send(s, (uint8_t)FW_MSG_ERROR, seq, (uint16_t)LINK_ERROR_FIXED);
}

/* The application's answer to the message that ended with seq. */
static void app_call(fw_server_t *s, uint8_t type, uint32_t seq, const uint8_t *payload,
                     uint16_t len)
{
    const fw_app_t *app = s->platform->app;
    uint16_t out_len = 0;
    int32_t r = 0;
    if (app != 0) {
        /* the application's time is not the link's (fw_server_poll) */
        const uint32_t t0 = link_now(s);
        s->app_t0 = t0;
        r = app->handle(app->ctx, type, payload, len, record_slot(s)->data, &out_len);
        s->app_ticks += link_now(s) - t0;
    }
    if (r == FW_APP_ACK) {
        s->frames_ok++;
        s->ack_due = 1;
    } else if (r > 0) {
        s->frames_ok++;
        record_send(s, (uint8_t)r, seq, out_len);
    } else {
        record_error(s, r == 0 ? (uint8_t)FW_ERR_TYPE : (uint8_t)(-r), type, seq);
    }
}

/* One ordered frame in seq order: a part is appended to the message being put together; a whole
 * message, or the last part, goes to the application. A message longer than a payload, or with
 * parts of two types, is refused whole (ERROR TOO_LONG) when its last part comes. */
static void deliver(fw_server_t *s, uint8_t type, uint32_t seq, const uint8_t *payload,
                    uint16_t len)
{
    const uint8_t base = (uint8_t)(type & ~FW_TYPE_MORE);
    if ((type & FW_TYPE_MORE) == 0u && s->asm_type == 0u) {
        app_call(s, type, seq, payload, len); /* whole: from the received frame, no copy */
        return;
    }
    if (s->asm_type != 0u && s->asm_type != base) {
        s->asm_len = FW_MAX_PAYLOAD + 1u;
    }
    s->asm_type = base;
    if (s->asm_len + len <= FW_MAX_PAYLOAD) {
        fw_copy_forward(&s->asm_buf[s->asm_len], payload, len);
    }
    s->asm_len += len;
    if ((type & FW_TYPE_MORE) != 0u) {
        s->frames_ok++;
        s->ack_due = 1;
        return;
    }
    const uint32_t total = s->asm_len;
    s->asm_type = 0;
    s->asm_len = 0;
    if (total > FW_MAX_PAYLOAD) {
        record_error(s, (uint8_t)FW_ERR_TOO_LONG, base, seq);
        return;
    }
    app_call(s, base, seq, s->asm_buf, (uint16_t)total);
}

static void next_advance(fw_server_t *s)
{
    s->next = (s->next & ~FW_SEQ_COUNT_MASK) | ((s->next + 1u) & FW_SEQ_COUNT_MASK);
    s->held_mask >>= 1;
}

/* Serve held frames that have become next, in order (bit 0 of held_mask is next itself). */
static void serve_held(fw_server_t *s)
{
    while ((s->held_mask & 1u) != 0u) {
        for (uint32_t i = 0; i < FW_HOLD_SLOTS; i++) {
            fw_held_t *h = &s->hold[i];
            if (h->used && (h->seq & ~FW_SEQ_COPY_MASK) == s->next) {
                h->used = 0;
                deliver(s, h->type, h->seq, h->data, h->len);
                break;
            }
        }
        next_advance(s);
    }
}

/* An ordered frame ahead of next: held when it fits a free slot, else dropped; either way the
 * host hears of the window. */
static void hold_frame(fw_server_t *s, uint8_t type, uint32_t seq, uint32_t d,
                       const uint8_t *payload, uint16_t len)
{
    const uint32_t bit = 1u << d;
    if ((s->held_mask & bit) != 0u) {
        send_status(s, (uint8_t)FW_CAUSE_GAP, type, seq); /* held already: a copy */
        return;
    }
    fw_held_t *slot = 0;
    for (uint32_t i = 0; i < FW_HOLD_SLOTS && len <= FW_HOLD_PAYLOAD; i++) {
        if (!s->hold[i].used) {
            slot = &s->hold[i];
            break;
        }
    }
    if (slot == 0) {
        send_status(s, (uint8_t)FW_CAUSE_FULL, type, seq);
        return;
    }
    slot->used = 1;
    slot->seq = seq; /* the copy that came, echoed in the reply when it is served */
    slot->type = type;
    slot->len = len;
    fw_copy_forward(slot->data, payload, len);
    s->held_mask |= bit;
    s->frames_held++;
    send_status(s, (uint8_t)FW_CAUSE_GAP, type, seq);
}

/* REPLY_PARTS (docs/protocol.md, "Replies in parts"): the record of a served request again, as
 * REPLY_PART frames of `part` reply bytes each (fewer parts than FW_PART_COUNT_MAX, so longer
 * parts for a long reply), only the parts `want` names (0: all), the whole set `copies` times
 * over. Out-of-range asks are brought into range, never refused: an ERROR with an ordered seq
 * would read as the request's answer. */
static void send_parts(fw_server_t *s, const fw_record_t *rec, uint32_t seq, const uint8_t *ask,
                       uint16_t len)
{
    uint32_t part = len >= LINK_REPLY_PARTS_FIXED ? ask[LINK_REPLY_PARTS_PART] : 0u;
    uint32_t copies = len >= LINK_REPLY_PARTS_FIXED ? ask[LINK_REPLY_PARTS_COPIES] : 1u;
    const uint32_t want =
        len >= LINK_REPLY_PARTS_FIXED ? fw_get_u32(&ask[LINK_REPLY_PARTS_WANT]) : 0u;
    part = part < FW_PART_MIN ? FW_PART_MIN : part;
    if (rec->len > part * FW_PART_COUNT_MAX) {
        part = (rec->len + FW_PART_COUNT_MAX - 1u) / FW_PART_COUNT_MAX;
    }
    copies = copies < 1u ? 1u : (copies > FW_PART_COPIES_MAX ? FW_PART_COPIES_MAX : copies);
    const uint32_t count = rec->len == 0u ? 1u : (rec->len + part - 1u) / part;
    uint8_t head[LINK_REPLY_PART_FIXED];
    head[LINK_REPLY_PART_TYPE] = rec->type;
    head[LINK_REPLY_PART_COUNT] = (uint8_t)count;
    head[LINK_REPLY_PART_ZERO] = 0u;
    fw_put_u16(&head[LINK_REPLY_PART_PART], (uint16_t)part);
    fw_put_u16(&head[LINK_REPLY_PART_TOTAL], rec->len);
    s->frames_replayed++;
    for (uint32_t c = 0; c < copies; c++) {
        for (uint32_t i = 0; i < count; i++) {
            if (want != 0u && ((want >> i) & 1u) == 0u) {
                continue;
            }
            const uint32_t at = i * part;
            const uint32_t n = rec->len - at < part ? rec->len - at : part;
            head[LINK_REPLY_PART_INDEX] = (uint8_t)i;
            send_frame2(s, (uint8_t)FW_MSG_REPLY_PART, seq, head, (uint16_t)sizeof head,
                        &rec->data[at], (uint16_t)n);
        }
    }
}

/* A frame whose counter is behind next, served already: its recorded reply again, whole or (asked
 * by REPLY_PARTS) in parts; STATUS(DUP) when no reply is kept (a part, an AUDIO chunk, a reply
 * evicted): the application is never called twice for one counter. A whole reply is followed by
 * a STATUS(ACK): on a line that damages long frames the short STATUS tells the host that the
 * request was served, so that it asks for the reply in parts instead of sending it again. */
static void serve_again(fw_server_t *s, uint8_t type, uint32_t seq, const uint8_t *payload,
                        uint16_t len)
{
    const fw_record_t *rec = find_record(s, seq & ~FW_SEQ_COPY_MASK);
    if (rec == 0) {
        send_status(s, (uint8_t)FW_CAUSE_DUP, type, seq);
    } else if (type == FW_MSG_REPLY_PARTS) {
        send_parts(s, rec, seq, payload, len);
    } else {
        s->frames_replayed++;
        send_frame(s, rec->type, seq, rec->data, rec->len);
        send_status(s, (uint8_t)FW_CAUSE_ACK, type, seq);
    }
}

/* Step 9 for ordered types (docs/protocol.md, "Windowed link"): by the counter's distance d from
 * next, modulo 2^20: 0 served now (then whatever it frees), 1..FW_WINDOW - 1 held, a frame served
 * already answered from its record, anything else dropped with the window in a STATUS. */
static void serve_ordered(fw_server_t *s, uint8_t type, uint32_t seq, const uint8_t *payload,
                          uint16_t len)
{
    const uint32_t key = seq & ~FW_SEQ_COPY_MASK; /* the frame, whichever copy this is */
    if ((seq & FW_SEQ_CONTROL) != 0u || (key & ~FW_SEQ_COUNT_MASK) != seq_tag(s->session)) {
        s->frames_stale++;
        send_status(s, (uint8_t)FW_CAUSE_STALE, type, seq);
        return;
    }
    s->last_in = seq;
    const uint32_t d = (key - s->next) & FW_SEQ_COUNT_MASK;
    if (d >= (FW_SEQ_COUNT_MASK + 1u) / 2u) { /* behind next: served already */
        serve_again(s, type, seq, payload, len);
        return;
    }
    if (type == FW_MSG_REPLY_PARTS) { /* asks only for what was served: not a request itself */
        send_status(s, (uint8_t)FW_CAUSE_FULL, type, seq);
        return;
    }
    if (d == 0u) {
        deliver(s, type, seq, payload, len);
        next_advance(s);
        serve_held(s);
        return;
    }
    if (d < FW_WINDOW) {
        hold_frame(s, type, seq, d, payload, len);
        return;
    }
    send_status(s, (uint8_t)FW_CAUSE_FULL, type, seq);
}

/* Out of line: inlined into fw_server_feed, its register saves and stack frame were paid on
 * every received byte, not once per frame. */
__attribute__((noinline)) static void handle_frame(fw_server_t *s)
{
    size_t n = 0;
    size_t start = 0;
    /* In place (fw_frame.h): the body starts at enc[start]. A reply built in the receive buffer
     * (INFO) starts at enc[0] instead. */
    int status = fw_cobs_decode_frame(s->enc, s->enc_len, FW_BODY_MAX, &start, &n);
    uint8_t *b = &s->enc[start];

    /* Steps 1-2: without version, type and seq there is nobody to answer. */
    if (n < FW_SEQ_READABLE) {
        s->frames_dropped++;
        return;
    }
    uint8_t type = b[LINK_HEADER_TYPE];
    uint32_t seq = fw_get_u32(&b[LINK_HEADER_SEQ]);
    if (s->overflow || status == -2) {
        send_status(s, (uint8_t)FW_ERR_TOO_LONG, type, seq);
        return;
    }
    /* step 3: a peer of another version hears it as such */
    if (b[LINK_HEADER_VERSION] != FW_PROTO_VERSION) {
        send_error(s, FW_ERR_VERSION, type, seq);
        return;
    }
    if (status != 0) { /* step 4 */
        send_status(s, (uint8_t)FW_ERR_COBS, type, seq);
        return;
    }
    if (n < FW_HDR_SIZE + FW_CRC_SIZE) { /* step 5 */
        send_status(s, (uint8_t)FW_ERR_SHORT, type, seq);
        return;
    }
    uint16_t len = fw_get_u16(&b[LINK_HEADER_LENGTH]);
    if (len > FW_MAX_PAYLOAD) { /* step 6 */
        send_status(s, (uint8_t)FW_ERR_TOO_LONG, type, seq);
        return;
    }
    if (FW_HDR_SIZE + (size_t)len + FW_CRC_SIZE != n) { /* step 7 */
        send_status(s, (uint8_t)FW_ERR_LENGTH, type, seq);
        return;
    }
    if (fw_crc32(b, FW_HDR_SIZE + (size_t)len) != fw_get_u32(&b[FW_HDR_SIZE + len])) { /* step 8 */
        send_status(s, (uint8_t)FW_ERR_CRC, type, seq);
        return;
    }
    if (s->rate_pending) { /* a whole frame at the new rate: it stays */
        s->rate_pending = 0;
        s->platform->confirm(s->platform->ctx);
    }
    switch (type) { /* step 9 */
    case FW_MSG_HELLO:
        /* Empty: INFO only. A nonce opens the host's session (a new one starts the window
         * over) or re-announces it. */
        if (len == LINK_HELLO_FIXED) {
            const uint32_t session = fw_get_u32(&b[FW_HDR_SIZE + LINK_HELLO_SESSION]);
            if (session != s->session) {
                open_session(s, session);
            }
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
    case FW_MSG_BAUD:
        serve_baud(s, seq, &b[FW_HDR_SIZE], len);
        break;
    default:
        serve_ordered(s, type, seq, &b[FW_HDR_SIZE], len);
        break;
    }
}

/* Ordered frames served without a reply are acknowledged once the platform holds no more bytes
 * behind them (the host's window moves on), or every quarter of the receive ring when bytes keep
 * coming. Bytes a read took past the frame's delimiter do not count: an early acknowledgement
 * costs a STATUS, a late one a stalled window. */
static void maybe_ack(fw_server_t *s)
{
    if (!s->ack_due) {
        return;
    }
    const size_t pending = s->platform->pending != 0 ? s->platform->pending(s->platform->ctx) : 0u;
    if (pending == 0u || s->link.rx_bytes - s->ack_rx >= FW_ACK_EVERY) {
        send_status(s, (uint8_t)FW_CAUSE_ACK, 0u, s->last_in);
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
            maybe_ack(s);
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
    const uint16_t len = fw_get_u16(&h[LINK_HEADER_LENGTH]);
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
    if (s->platform->irq_ticks != 0) { /* the receive interrupt's work is the link's */
        out->ticks += s->platform->irq_ticks(s->platform->ctx);
    }
}
