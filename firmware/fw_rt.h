/* Runtime support: stack high-water mark and the fault reporter. */
#ifndef FW_RT_H
#define FW_RT_H

#include <stdint.h>

/* Main stack size and the deepest use so far, in bytes (startup.S paints it with 0xA5A5A5A5). */
void fw_stack_usage(uint32_t *size, uint32_t *used);

/* Called from the exception vectors: kind 1 undef, 2 svc, 3 prefetch abort, 4 data abort,
 * 5 irq, 6 fiq; addr is the faulting instruction. Prints a line on the UART and stops. */
void fw_fault(uint32_t kind, uint32_t addr) __attribute__((noreturn));

/* Called once by the start-up code before main: caches, MMU and the rest of the core set-up the
 * board needs (firmware/board/zynq7000/fw_mmu.c). */
void fw_board_init(void);

/* Reads a 32-bit word where a device may or may not answer: the low word is the value, the high
 * word 1 when the read aborted (nothing there), else 0. */
uint64_t fw_probe_read32(uintptr_t addr);

/* What the board reads back at run time, for INFO's board block (docs/protocol.md). */
typedef struct {
    uint32_t sctlr;            /* CP15 SCTLR (ARM DDI 0406C B4.1.130): M, C, I, Z as running */
    uint32_t actlr;            /* CP15 ACTLR (Cortex-A9 TRM §4.3.10): SMP, FW */
    uint32_t l2_id;            /* the L2 controller's cache ID; 0: no L2 controller answered */
    uint32_t l2_ctrl;          /* its control register (bit 0: enabled) */
    uint32_t l2_aux;           /* its auxiliary control register */
    uint16_t uart_cd;          /* the console UART's baud generator CD, read back */
    uint16_t uart_bdiv;        /* its baud divider BDIV, read back */
    uint32_t uart_rx_overruns; /* RX FIFO overruns counted by the UART driver (fw_uart_read) */
    uint32_t baud;             /* the rate the UART runs at now (nominal, from the rate table) */
    uint32_t rx_ring;          /* bytes the receive interrupt's ring holds */
    uint32_t ring_overruns;    /* bytes lost because the ring was full */
    uint32_t rate_reverts;     /* rate switches undone because no frame came whole at the rate */
} fw_board_report_t;

void fw_board_report(fw_board_report_t *r);

#endif /* FW_RT_H */
