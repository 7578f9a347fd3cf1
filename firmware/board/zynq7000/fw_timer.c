#include "fw_timer.h"

#include "zynq7000.h"

#define GTIMER(reg) ZYNQ_REG32(ZYNQ_GTIMER_BASE + (reg))

void fw_timer_init(void)
{
    /* Prescaler 0: one tick per PERIPHCLK. Leave a running timer running (e.g. started by FSBL). */
    GTIMER(GTIMER_CONTROL) = GTIMER_CONTROL_ENABLE | (0u << GTIMER_CONTROL_PRESCALER_SHIFT);
}

uint64_t fw_timer_now(void)
{
    /* DDI 0407 §4.3.1: read upper, lower, upper again; retry if the upper word changed. */
    uint32_t hi;
    uint32_t lo;
    uint32_t hi2;
    do {
        hi = GTIMER(GTIMER_COUNTER_HI);
        lo = GTIMER(GTIMER_COUNTER_LO);
        hi2 = GTIMER(GTIMER_COUNTER_HI);
    } while (hi != hi2);
    return ((uint64_t)hi << 32) | lo;
}

uint32_t fw_timer_now32(void)
{
    return GTIMER(GTIMER_COUNTER_LO);
}
