/*
 * The board check (fw_check.h): wraps the firmware's application so that BOARD requests are
 * served here and every other message goes to the model runtime unchanged.
 */
#include <stdint.h>

#include "fw_check.h"
#include "fw_config.h"
#include "fw_frame.h"
#include "fw_server.h"
#include "zynq7000.h"

_Static_assert(FW_CHECK_REPLY_SIZE <= FW_REPLY_MAX, "BOARD_REPLY is recorded like any reply");
/* The layouts are codegen.ir.link_wire's (fw_link_wire.h, through fw_server.h). */
_Static_assert(FW_CHECK_REQ_SIZE == LINK_BOARD_FIXED, "BOARD's size is the description's");
_Static_assert(FW_CHECK_REPLY_SIZE == LINK_BOARD_REPLY_FIXED, "so is BOARD_REPLY's");

/* link.ld: the first byte above the image window. */
extern uint8_t __ddr_free[];

static const fw_app_t *inner_app;

/* The global timer's raw count, interrupt handlers' ticks included: wall-clock time (DDI 0407
 * §4.3.1: upper, lower, upper again until the upper word is stable). */
static uint64_t gtimer_raw(void)
{
    uint32_t hi;
    uint32_t lo;
    do {
        hi = ZYNQ_REG32(ZYNQ_GTIMER_BASE + GTIMER_COUNTER_HI);
        lo = ZYNQ_REG32(ZYNQ_GTIMER_BASE + GTIMER_COUNTER_LO);
    } while (hi != ZYNQ_REG32(ZYNQ_GTIMER_BASE + GTIMER_COUNTER_HI));
    return ((uint64_t)hi << 32) | lo;
}

static uint32_t pattern(uint32_t addr, uint32_t seed)
{
    return (addr >> 2) * FW_CHECK_PATTERN_MUL ^ seed;
}

static int range_ok(uint32_t base, uint32_t length)
{
    const uint64_t end = (uint64_t)base + length;
    return (base & 3u) == 0u && (length & 3u) == 0u && length <= FW_CHECK_WALK_MAX &&
           base >= (uint32_t)(uintptr_t)__ddr_free && end <= (uint64_t)FW_DDR_BYTES;
}

static void fill(uint32_t base, uint32_t length, uint32_t seed)
{
    for (uint32_t a = base; a - base < length; a += 4u) {
        ZYNQ_REG32(a) = pattern(a, seed);
    }
}

/* out: words that differed, the first such address, its word. */
static void check(uint32_t base, uint32_t length, uint32_t seed, uint32_t out[3])
{
    out[0] = 0u;
    out[1] = 0u;
    out[2] = 0u;
    for (uint32_t a = base; a - base < length; a += 4u) {
        const uint32_t got = ZYNQ_REG32(a);
        if (got != pattern(a, seed)) {
            if (out[0] == 0u) {
                out[1] = a;
                out[2] = got;
            }
            out[0]++;
        }
    }
}

/* The op's five words; 0 when the request is refused. */
static int serve(uint8_t op, uint32_t base, uint32_t length, uint32_t seed,
                 uint32_t w[LINK_BOARD_REPLY_WORDS_LEN])
{
    if (op == FW_CHECK_OP_TIME) {
        w[0] = FW_DDR_BYTES;
        w[1] = (uint32_t)(uintptr_t)__ddr_free;
        w[2] = FW_TIMER_HZ;
        return 1;
    }
    if ((op != FW_CHECK_OP_FILL && op != FW_CHECK_OP_CHECK) || !range_ok(base, length)) {
        return 0;
    }
    const uint64_t t0 = gtimer_raw();
    if (op == FW_CHECK_OP_FILL) {
        fill(base, length, seed);
    } else {
        check(base, length, seed, &w[2]);
    }
    w[0] = length / 4u;
    w[1] = (uint32_t)(gtimer_raw() - t0);
    return 1;
}

static int32_t handle(void *ctx, uint8_t type, const uint8_t *payload, uint16_t len, uint8_t *out,
                      uint16_t *out_len)
{
    (void)ctx;
    if (type != FW_MSG_BOARD) {
        if (inner_app == 0 || inner_app->handle == 0) {
            return 0; /* no model runtime: ERROR(TYPE), as without this wrapper */
        }
        return inner_app->handle(inner_app->ctx, type, payload, len, out, out_len);
    }
    uint32_t w[LINK_BOARD_REPLY_WORDS_LEN] = {0u};
    if (len != FW_CHECK_REQ_SIZE ||
        !serve(payload[LINK_BOARD_OP], fw_get_u32(&payload[LINK_BOARD_BASE]),
               fw_get_u32(&payload[LINK_BOARD_LENGTH]), fw_get_u32(&payload[LINK_BOARD_SEED]), w)) {
        return -(int32_t)FW_ERR_PAYLOAD;
    }
    const uint64_t now = gtimer_raw();
    out[LINK_BOARD_REPLY_OP] = payload[LINK_BOARD_OP];
    for (uint32_t i = 0; i < LINK_BOARD_REPLY_RESERVED_LEN; i++) {
        out[LINK_BOARD_REPLY_RESERVED + i] = 0u;
    }
    fw_put_u32(&out[LINK_BOARD_REPLY_TIMER_LO], (uint32_t)now);
    fw_put_u32(&out[LINK_BOARD_REPLY_TIMER_HI], (uint32_t)(now >> 32));
    for (uint32_t i = 0; i < LINK_BOARD_REPLY_WORDS_LEN; i++) {
        fw_put_u32(&out[LINK_BOARD_REPLY_WORDS + sizeof(uint32_t) * i], w[i]);
    }
    *out_len = FW_CHECK_REPLY_SIZE;
    return FW_MSG_BOARD_REPLY;
}

static uint16_t describe(void *ctx, uint8_t *out, uint16_t cap)
{
    (void)ctx;
    if (inner_app == 0 || inner_app->describe == 0) {
        return 0u;
    }
    return inner_app->describe(inner_app->ctx, out, cap);
}

static const fw_app_t board_app = {handle, describe, 0};

/* main.c: the board's messages ahead of the model runtime `inner` (its weak default passes
 * `inner` through). */
const fw_app_t *fw_board_app(const fw_app_t *inner);

const fw_app_t *fw_board_app(const fw_app_t *inner)
{
    inner_app = inner;
    return &board_app;
}
