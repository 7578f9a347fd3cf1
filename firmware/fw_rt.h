/* Runtime support: stack high-water mark and the fault reporter. */
#ifndef FW_RT_H
#define FW_RT_H

#include <stdint.h>

/* Main stack size and the deepest use so far, in bytes (startup.S paints it with 0xA5A5A5A5). */
void fw_stack_usage(uint32_t *size, uint32_t *used);

/* Called from the exception vectors: kind 1 undef, 2 svc, 3 prefetch abort, 4 data abort,
 * 5 irq, 6 fiq; addr is the faulting instruction. Prints a line on the UART and stops. */
void fw_fault(uint32_t kind, uint32_t addr) __attribute__((noreturn));

#endif /* FW_RT_H */
