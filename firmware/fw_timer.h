/*
 * The board's free-running timer (target interface; its clock: codegen/target/cores.py): the
 * Cortex-A9 global timer (UG585 B.3; ARM DDI 0407 §4.3), a 64-bit up-counter clocked by
 * PERIPHCLK, or the MPS2 AN500's CMSDK timer 0 extended to 64 bits. Under QEMU with -icount
 * shift=0 it advances deterministically with the executed instruction count; reports call its
 * ticks "QEMU icount ticks", not cycles (docs/targets.md §4, §7).
 */
#ifndef FW_TIMER_H
#define FW_TIMER_H

#include <stdint.h>

void fw_timer_init(void);
/* The foreground's clock: the counter less the ticks spent in interrupt handlers (fw_irq.c), so a
 * stage timed with it keeps the ticks of its own work whatever lands in it. */
uint64_t fw_timer_now(void);
/* Its low word (for intervals shorter than 2^32 ticks). */
uint32_t fw_timer_now32(void);
/* Ticks spent in interrupt handlers so far (32-bit, wrapping): a board with a receive interrupt
 * (the Zynq-7000's fw_irq.c). */
uint32_t fw_irq_ticks(void);

#endif /* FW_TIMER_H */
