/*
 * Host harness for the device's protocol server: the same fw_server.c and fw_frame.c, fed from
 * stdin and answering on stdout. tests/test_frame_fuzz.py builds it with
 * -fsanitize=address,undefined and drives it with random, truncated, oversized and corrupted
 * frames.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fw_server.h"

static void stdout_write(void *ctx, const uint8_t *data, size_t len)
{
    (void)ctx;
    if (fwrite(data, 1, len, stdout) != len) {
        exit(3);
    }
}

static void stack_usage(void *ctx, uint32_t *size, uint32_t *used)
{
    (void)ctx;
    *size = 0;
    *used = 0;
}

int main(void)
{
    static const fw_platform_t platform = {stdout_write, stack_usage, 0};
    static fw_server_t server;
    fw_server_init(&server, &platform);
    int c;
    while ((c = getchar()) != EOF) {
        fw_server_feed(&server, (uint8_t)c);
    }
    fflush(stdout);
    return 0;
}
