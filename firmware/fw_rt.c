/*
 * Freestanding runtime, the same on every board: the four functions GCC may call even with
 * -ffreestanding (GCC manual, "C Dialect Options"), stack painting readout and the fault reporter.
 * Linked with -nostdlib: no newlib routine is pulled in. The fault reporter may run before
 * fw_board_init has set the core up (on the Zynq-7000 the MMU is still off: memory
 * Strongly-ordered, unaligned accesses fault): it reads its strings byte by byte.
 */
#include "fw_rt.h"

#include <stddef.h>

#include "fw_uart.h"

#define STACK_PAINT 0xA5A5A5A5u

extern uint32_t __stack_bottom[];
extern uint32_t __stack_top[];

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);

void *memcpy(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    while (n--) {
        *d++ = *s++;
    }
    return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (d < s) {
        while (n--) {
            *d++ = *s++;
        }
    } else {
        while (n--) {
            d[n] = s[n];
        }
    }
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    uint8_t *d = dst;
    while (n--) {
        *d++ = (uint8_t)c;
    }
    return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a;
    const uint8_t *y = b;
    for (size_t i = 0; i < n; i++) {
        if (x[i] != y[i]) {
            return x[i] < y[i] ? -1 : 1;
        }
    }
    return 0;
}

void fw_stack_usage(uint32_t *size, uint32_t *used)
{
    const uint32_t *p = __stack_bottom;
    while (p < __stack_top && *p == STACK_PAINT) {
        p++;
    }
    *size = (uint32_t)((uintptr_t)__stack_top - (uintptr_t)__stack_bottom);
    *used = (uint32_t)((uintptr_t)__stack_top - (uintptr_t)p);
}

static void put_hex(uint32_t v)
{
    static const char digits[] = "0123456789abcdef";
    for (int shift = 28; shift >= 0; shift -= 4) {
        fw_uart_putc((uint8_t)digits[(v >> shift) & 0xFu]);
    }
}

void fw_fault(uint32_t kind, uint32_t addr)
{
    static const char *const names[FW_FAULT_KINDS] = {
        "?",   "undef", "svc",       "pabort",    "dabort",   "irq",
        "fiq", "nmi",   "hardfault", "memmanage", "busfault", "usagefault"};
    const char *name = names[kind < FW_FAULT_KINDS ? kind : 0u];
    /* Delimiters around the text: the host's frame decoder drops it and shows the raw bytes. */
    static const char head[] = "\0*** fw fault: ";
    fw_uart_write((const uint8_t *)head, sizeof head - 1u);
    while (*name) {
        fw_uart_putc((uint8_t)*name++);
    }
    static const char at[] = " at 0x";
    fw_uart_write((const uint8_t *)at, sizeof at - 1u);
    put_hex(addr);
    fw_uart_putc('\n');
    fw_uart_putc(0u);
    fw_uart_flush();
    for (;;) {
        __asm__ volatile("wfe"); /* in A32 and T32 alike (DDI 0406C A8.8.425, DDI 0403E A7.7.261) */
    }
}
