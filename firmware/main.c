/* Device main loop: read the UART, feed the protocol server (docs/protocol.md). */
#include <stdint.h>

#include "fw_board.h"
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

static fw_server_t server;

int main(void)
{
    fw_uart_init();
    fw_timer_init();
    /* The board's UART, timer and reports (its fw_platform.c, firmware/fw_board.h). */
    fw_platform_t *platform = fw_board_platform();
    platform->app = fw_board_app(fw_app_get());
    fw_server_init(&server, platform);
    /* IRQs on from here (CPSR.I, ARM DDI 0406C B1.3.3; PRIMASK on ARMv7-M, DDI 0403E B1.4.3:
     * CPSIE i is both): bytes that come while the device computes or transmits go to a receive
     * ring where the board has one; fw_uart_read masks them while it reads. */
    __asm__ volatile("cpsie i" ::: "memory");
    /* Each poll takes a frame (fw_uart_read sleeps while the UART has nothing) and answers it. */
    for (;;) {
        (void)fw_server_poll(&server);
    }
}
