/*
 * Cortex-A9 global timer (UG585 B.3; ARM DDI 0407 §4.3): a 64-bit up-counter clocked by
 * PERIPHCLK. Under QEMU with -icount shift=0 it advances deterministically with the executed
 * instruction count; reports call its ticks "QEMU icount ticks", not cycles (docs/targets.md §4).
 */
#ifndef FW_TIMER_H
#define FW_TIMER_H

#include <stdint.h>

void fw_timer_init(void);
uint64_t fw_timer_now(void);
/* The counter's low word alone (one load): for intervals shorter than 2^32 ticks. */
uint32_t fw_timer_now32(void);

#endif /* FW_TIMER_H */
