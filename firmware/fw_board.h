/* The board's platform for the protocol server (target interface, docs/architecture.md §5): each
 * board folder's fw_platform.c fills an fw_platform_t with what its drivers offer (the UART's
 * reads and writes, the timer, INFO's board report; a rate switch, a receive interrupt's ticks
 * or the bytes waiting where the board has them, NULL where it does not: fw_server.h). */
#ifndef FW_BOARD_H
#define FW_BOARD_H

#include "fw_server.h"

/* The board's platform, its application still NULL (main.c sets it). Called once, after
 * fw_uart_init and fw_timer_init. */
fw_platform_t *fw_board_platform(void);

#endif /* FW_BOARD_H */
