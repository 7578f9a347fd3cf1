/*
 * CMSDK APB timer 0 (ARM DDI 0479C, "APB timer"; mps2_an500.h): the clock of fw_timer_now.
 *
 * A 32-bit down-counter clocked by the 25 MHz PCLK, running free from RELOAD = 0xFFFFFFFF: its
 * complement counts up modulo 2^32, one tick per 40 ns. Chosen over SysTick (ARM DDI 0403E
 * B3.3), which counts the same 25 MHz on the AN500 (QEMU: the machine's system clock) but in 24
 * bits: it wraps every 0.67 s, and extending it takes an interrupt per wrap whose handler would
 * land in the timed stages. This one wraps every 171.8 s and is extended in software, exactly
 * for any two readings less than a wrap apart (every interval the firmware times lies inside one
 * request). Under QEMU -icount shift=0 the counter follows the virtual clock, one nanosecond per
 * guest instruction (hw/timer/cmsdk-apb-timer.c, a ptimer on pclk): 40 instructions a tick,
 * deterministic ("QEMU icount ticks", docs/targets.md §4).
 */
#include "fw_timer.h"

#include "mps2_an500.h"

#define TIMER(reg) MPS2_REG32(MPS2_TIMER0_BASE + (reg))

/* The software extension: the high word, and the low word last read. */
static uint32_t high;
static uint32_t last;

void fw_timer_init(void)
{
    TIMER(CMSDK_TIMER_CTRL) = 0u;
    TIMER(CMSDK_TIMER_RELOAD) = 0xFFFFFFFFu;
    TIMER(CMSDK_TIMER_VALUE) = 0xFFFFFFFFu;
    TIMER(CMSDK_TIMER_CTRL) = CMSDK_TIMER_CTRL_EN; /* no interrupt */
}

uint32_t fw_timer_now32(void)
{
    return ~TIMER(CMSDK_TIMER_VALUE);
}

/* No interrupt handler reads the timer: the two words need no masking. */
uint64_t fw_timer_now(void)
{
    const uint32_t lo = fw_timer_now32();
    if (lo < last) {
        high++;
    }
    last = lo;
    return ((uint64_t)high << 32) | lo;
}
