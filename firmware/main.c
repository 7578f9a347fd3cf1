/* Device main loop: read the UART, feed the protocol server (docs/protocol.md). */
#include <stdint.h>

#include "fw_rt.h"
#include "fw_server.h"
#include "fw_timer.h"
#include "fw_uart.h"

int main(void);

/* The model runtime (INFER/RESET). A `codegen build` firmware links firmware/fw_app_kws.c, whose
 * fw_app_get() overrides this weak stub; the bare runtime serves HELLO and ECHO only. */
__attribute__((weak)) const fw_app_t *fw_app_get(void)
{
    return 0;
}

/* The board's own application messages ahead of the model runtime (the Zynq-7000's board check:
 * firmware/board/zynq7000/fw_check.c overrides this); a board without any passes it through. */
__attribute__((weak)) const fw_app_t *fw_board_app(const fw_app_t *inner)
{
    return inner;
}

static void uart_write(void *ctx, const uint8_t *data, size_t len)
{
    (void)ctx;
    fw_uart_write(data, len);
}

static void stack_usage(void *ctx, uint32_t *size, uint32_t *used)
{
    (void)ctx;
    fw_stack_usage(size, used);
}

static void board_report(void *ctx, fw_board_report_t *r)
{
    (void)ctx;
    fw_board_report(r);
}

static size_t uart_read(void *ctx, uint8_t *dst, size_t cap, size_t need, size_t *clean,
                        uint32_t *slept)
{
    (void)ctx;
    return fw_uart_read(dst, cap, need, clean, slept);
}

static uint32_t ticks(void *ctx)
{
    (void)ctx;
    return fw_timer_now32();
}

static size_t pending(void *ctx)
{
    (void)ctx;
    return fw_uart_pending();
}

static void set_rate(void *ctx, uint32_t baud, uint16_t cd, uint16_t bdiv, uint32_t revert_ms)
{
    (void)ctx;
    fw_uart_set_rate(baud, cd, bdiv, revert_ms);
}

static void confirm(void *ctx)
{
    (void)ctx;
    fw_uart_confirm();
}

static uint32_t irq_ticks(void *ctx)
{
    (void)ctx;
    return fw_irq_ticks();
}

static fw_platform_t platform = {uart_write,   stack_usage, 0,        0,
                                 board_report, uart_read,   ticks,    pending,
                                 set_rate,     confirm,     irq_ticks};
static fw_server_t server;

int main(void)
{
    fw_uart_init();
    fw_timer_init();
    platform.app = fw_board_app(fw_app_get());
    fw_server_init(&server, &platform);
    /* IRQs on from here (CPSR.I, ARM DDI 0406C B1.3.3): bytes that come while the device computes
     * or transmits go to the receive ring; fw_uart_read masks them while it reads. */
    __asm__ volatile("cpsie i" ::: "memory");
    /* Each poll takes a frame (fw_uart_read sleeps while the UART has nothing) and answers it. */
    for (;;) {
        (void)fw_server_poll(&server);
    }
}
