/*
 * Cortex-A9 probe of the memory model (tests/measure/test_memory_model.py, run under
 * qemu-system-arm with tools/qemu_plugin/elt_cache.c): four walks, one load per 32-byte line, each
 * between two calls of probe_mark (the plugin's snapshot point): 16 KiB of DDR above the image
 * twice (cold, then inside the 32 KiB L1D), then 64 KiB elsewhere above it twice (cold in L1 and
 * L2, then past L1 but inside the 512 KiB L2). Memory the start-up code never touched (bss is
 * zeroed, which would bring it into the caches first). Prints the walks' sums (so no load is
 * optimised away), then END.
 */
#include <stdint.h>

#include "fw_probe_print.h"
#include "fw_uart.h"

int main(void);
void probe_mark(void);

#define SMALL 16384u
#define LARGE 65536u
/* DDR at 4 and 5 MiB: above the image (linked at 1 MiB, firmware/board/zynq7000/link.ld),
 * mapped Normal cacheable by fw_mmu.c like all of DDR */
#define SMALL_BASE 0x00400000u
#define LARGE_BASE 0x00500000u

__attribute__((noinline)) void probe_mark(void)
{
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static uint32_t walk(const volatile uint8_t *p, uint32_t n)
{
    uint32_t s = 0;
    for (uint32_t k = 0; k < n; k += 32u) {
        s += p[k];
    }
    return s;
}

int main(void)
{
    const volatile uint8_t *small = (const volatile uint8_t *)SMALL_BASE;
    const volatile uint8_t *large = (const volatile uint8_t *)LARGE_BASE;
    uint32_t s = 0;
    fw_uart_init();
    probe_mark();
    s += walk(small, SMALL);
    probe_mark();
    s += walk(small, SMALL);
    probe_mark();
    s += walk(large, LARGE);
    probe_mark();
    s += walk(large, LARGE);
    probe_mark();
    put_s((int32_t)s);
    fw_uart_write((const uint8_t *)"\nEND\n", 5u);
    fw_uart_flush();
    for (;;) {
    }
}
