/*
 * The MPS2 AN500's platform for the protocol server (firmware/fw_board.h), its core set-up and
 * INFO's board report.
 *
 * The platform: the CMSDK UART's polled reads and writes and the byte waiting (fw_uart.c), the
 * timer's low word (fw_timer.c). No rate switch (set_rate, confirm NULL: BAUD is refused, INFO
 * lists the build's rate only), no receive interrupt (irq_ticks NULL), a receive ring of 0
 * bytes in the report (the host keeps one frame in flight).
 */
#include "fw_board.h"

#include "fw_config.h"
#include "fw_rt.h"
#include "fw_timer.h"
#include "fw_uart.h"
#include "mps2_an500.h"

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

static fw_platform_t platform = {uart_write, stack_usage, 0, 0, board_report, uart_read, ticks,
                                 pending,    0,           0, 0};

fw_platform_t *fw_board_platform(void)
{
    return &platform;
}

/* MemManage, BusFault and UsageFault as themselves (SHCSR, ARM DDI 0403E B3.2.13), so fw_fault
 * names them. The caches stay off: CCR.IC and CCR.DC are 0 after reset (B3.2.8), and turning
 * them on takes the Cortex-M7's invalidate-then-enable sequence that QEMU, which models no
 * cache, could not check; the ticks counted under QEMU are instructions either way. */
void fw_board_init(void)
{
    MPS2_REG32(SCS_SHCSR) |= SHCSR_MEMFAULTENA | SHCSR_BUSFAULTENA | SHCSR_USGFAULTENA;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
}

/* INFO's board block: CCR and ACTLR in the system control registers' two words; no L2 cache;
 * the divisor read back as CD with BDIV 0 (baud = PCLK / BAUDDIV, codegen/target/uarts.py). */
void fw_board_report(fw_board_report_t *r)
{
    r->sctlr = MPS2_REG32(SCS_CCR);
    r->actlr = MPS2_REG32(SCS_ACTLR);
    r->l2_id = 0u;
    r->l2_ctrl = 0u;
    r->l2_aux = 0u;
    r->uart_cd = (uint16_t)MPS2_REG32(FW_UART_BASE + CMSDK_UART_BAUDDIV);
    r->uart_bdiv = 0u;
    r->uart_rx_overruns = fw_uart_rx_overruns();
    r->baud = FW_BAUD;
    r->rx_ring = 0u;
    r->ring_overruns = 0u;
    r->rate_reverts = 0u;
}
