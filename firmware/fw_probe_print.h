/* Decimal printing for probes that run in qemu-system-arm and print their results on UART0
 * (codegen/measure/bench_frontend.py, the kernel probes of tests/): no libc in the firmware. The
 * firmware itself speaks the binary protocol and does not use it. */
#ifndef FW_PROBE_PRINT_H
#define FW_PROBE_PRINT_H

#include <stdint.h>

#include "fw_uart.h"

/* v in decimal, then one space. */
static inline void put_s(int32_t v)
{
    char b[12];
    int n = 0;
    uint32_t u = v < 0 ? (uint32_t)0 - (uint32_t)v : (uint32_t)v;
    if (v < 0) {
        fw_uart_putc('-');
    }
    do {
        b[n++] = (char)('0' + u % 10u);
        u /= 10u;
    } while (u);
    while (n) {
        fw_uart_putc((uint8_t)b[--n]);
    }
    fw_uart_putc(' ');
}

/* u in decimal, then one space (64-bit division: libgcc's __aeabi_uldivmod). */
static inline void put_u64(uint64_t u)
{
    char b[21];
    int n = 0;
    do {
        b[n++] = (char)('0' + (int)(u % 10u));
        u /= 10u;
    } while (u);
    while (n) {
        fw_uart_putc((uint8_t)b[--n]);
    }
    fw_uart_putc(' ');
}

#endif /* FW_PROBE_PRINT_H */
