/*
 * The Zynq-7000's platform for the protocol server (firmware/fw_board.h): the Cadence UART's
 * reads (bursts from the RX FIFO, the receive interrupt's ring), writes, the bytes waiting and the
 * rate switch (fw_uart.c), the global timer less the interrupt handler's ticks (fw_timer.c,
 * fw_irq.c) and INFO's board report (fw_mmu.c).
 */
#include "fw_board.h"

#include "fw_rt.h"
#include "fw_timer.h"
#include "fw_uart.h"

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

fw_platform_t *fw_board_platform(void)
{
    return &platform;
}
