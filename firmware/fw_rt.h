/* Runtime support (target interface, docs/architecture.md §5): the stack's high-water mark and the
 * fault reporter (firmware/fw_rt.c, every board), the board's start-up hook and its report. */
#ifndef FW_RT_H
#define FW_RT_H

#include <stdint.h>

/* Main stack size and the deepest use so far, in bytes (the board's startup.S paints it with
 * 0xA5A5A5A5 between the linker script's __stack_bottom and __stack_top). */
void fw_stack_usage(uint32_t *size, uint32_t *used);

/* Called from the exception vectors with the exception's kind and the faulting instruction's
 * address: the A-profile vectors (ARM DDI 0406C B1.8.1) 1 undef, 2 svc, 3 prefetch abort, 4 data
 * abort, 5 irq, 6 fiq; the ARMv7-M faults (ARM DDI 0403E B1.5.2) 7 NMI, 8 HardFault, 9 MemManage,
 * 10 BusFault, 11 UsageFault. Prints a line on the UART and stops. */
#define FW_FAULT_KINDS 12u
void fw_fault(uint32_t kind, uint32_t addr) __attribute__((noreturn));

/* Called once by the start-up code before main: caches, MMU and the rest of the core set-up the
 * board needs (e.g. firmware/board/zynq7000/fw_mmu.c). */
void fw_board_init(void);

/* Reads a 32-bit word where a device may or may not answer: the low word is the value, the high
 * word 1 when the read aborted (nothing there), else 0 (a board that probes, the Zynq-7000's). */
uint64_t fw_probe_read32(uintptr_t addr);

/* What the board reads back at run time, for INFO's board block (docs/protocol.md). The first two
 * words are the core's system control registers: on a Cortex-A CP15 SCTLR and ACTLR, on a
 * Cortex-M the SCB's CCR and ACTLR (each board's fw_board_report says which). */
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
