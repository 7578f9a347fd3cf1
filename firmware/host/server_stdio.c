/*
 * Host harness for the device's protocol server: the same fw_server.c and fw_frame.c, fed from
 * stdin and answering on stdout. tests/firmware/test_frame_fuzz.py builds it with
 * -fsanitize=address,undefined and drives it with random, truncated, oversized and corrupted
 * frames.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fw_frame.h"
#include "fw_server.h"

static void stdout_write(void *ctx, const uint8_t *data, size_t len)
{
    (void)ctx;
    if (fwrite(data, 1, len, stdout) != len) {
        exit(3);
    }
}

/* What stdin holds now, as the device's UART read: at most cap bytes and FW_RX_CHUNK (the most a
 * read may take past a delimiter, fw_server.h), without waiting once some arrived (clean 0: the
 * server searches them all for the delimiter; nothing slept: the harness has no timer). */
static size_t stdin_read(void *ctx, uint8_t *dst, size_t cap, size_t need, size_t *clean,
                         uint32_t *slept)
{
    (void)ctx;
    (void)need;
    *clean = 0u;
    *slept = 0u;
    const ssize_t n = read(0, dst, cap < FW_RX_CHUNK ? cap : FW_RX_CHUNK);
    return n > 0 ? (size_t)n : 0u;
}

/* The harness's "receive ring" is the pipe's buffer (pipe(7): 65,536 bytes on Linux); INFO says
 * 8 KiB, the device's default, so a host keeps as much in flight as it would on the device. */
static void board_report(void *ctx, fw_board_report_t *r)
{
    (void)ctx;
    r->rx_ring = 8192u;
}

static void stack_usage(void *ctx, uint32_t *size, uint32_t *used)
{
    (void)ctx;
    *size = 0;
    *used = 0;
}

/*
 * A stand-in application with state, to test the server's application path and its replay
 * rule (tests/devmodel.py mirrors it): INFER answers RESULT = {count, CRC-32 of the payload}
 * and increments count; an empty INFER is rejected with ERROR PAYLOAD; RESET zeroes count;
 * AUDIO adds its payload's length to count and has no reply of its own (FW_APP_ACK).
 */
static uint32_t app_count;

static int32_t test_app_handle(void *ctx, uint8_t type, const uint8_t *payload, uint16_t len,
                               uint8_t *out, uint16_t *out_len)
{
    (void)ctx;
    if (type == FW_MSG_INFER) {
        if (len == 0u) {
            return -(int32_t)FW_ERR_PAYLOAD;
        }
        fw_put_u32(&out[0], app_count++);
        fw_put_u32(&out[4], fw_crc32(payload, len));
        *out_len = 8u;
        return FW_MSG_RESULT;
    }
    if (type == FW_MSG_RESET) {
        app_count = 0;
        *out_len = 0u;
        return FW_MSG_RESET_ACK;
    }
    if (type == FW_MSG_AUDIO) {
        app_count += len;
        return FW_APP_ACK;
    }
    return 0;
}

static uint16_t test_app_describe(void *ctx, uint8_t *out, uint16_t cap)
{
    static const char text[] = "test-app";
    (void)ctx;
    uint16_t n = 0;
    while (text[n] != '\0' && n < cap) {
        out[n] = (uint8_t)text[n];
        n++;
    }
    return n;
}

int main(void)
{
    static const fw_app_t app = {test_app_handle, test_app_describe, 0};
    /* no pending(): every ordered frame served without a reply is acknowledged at once, so the
     * output does not depend on how the bytes reached the pipe (tests/devmodel.py) */
    static const fw_platform_t platform = {
        stdout_write, stack_usage, 0, &app, board_report, stdin_read, 0, 0, 0, 0, 0};
    static fw_server_t server;
    fw_server_init(&server, &platform);
    /* fw_server_poll as on the device; a read of 0 bytes is the end of stdin */
    while (fw_server_poll(&server) != 0u) {
        fflush(stdout);
    }
    fflush(stdout);
    return 0;
}
