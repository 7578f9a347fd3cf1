#include "fw_timer.h"

#include "zynq7000.h"

#define GTIMER(reg) ZYNQ_REG32(ZYNQ_GTIMER_BASE + (reg))

/* fw_irq.c: the interrupt handler's ticks, left out of the foreground's clock. */
extern volatile uint64_t fw_irq_ticks_total;

void fw_timer_init(void)
{
    /* Prescaler 0: one tick per PERIPHCLK. Leave a running timer running (e.g. started by FSBL). */
    GTIMER(GTIMER_CONTROL) = GTIMER_CONTROL_ENABLE | (0u << GTIMER_CONTROL_PRESCALER_SHIFT);
}

static uint64_t raw_now(void)
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

uint64_t fw_timer_now(void)
{
    /* IRQs masked for the two reads (CPSR.I, ARM DDI 0406C B1.3.3): a handler between them would
     * count its ticks on one side only. */
    uint32_t cpsr;
    __asm__ volatile("mrs %0, cpsr\n\tcpsid i" : "=r"(cpsr)::"memory");
    const uint64_t t = raw_now() - fw_irq_ticks_total;
    __asm__ volatile("msr cpsr_c, %0" ::"r"(cpsr) : "memory");
    return t;
}

uint32_t fw_timer_now32(void)
{
    /* The handler's total's low word is one aligned load; read it again after the counter: a
     * handler that ran in between changed it, and the pair is read again. */
    volatile const uint32_t *irq_lo = (volatile const uint32_t *)&fw_irq_ticks_total;
    uint32_t irq;
    uint32_t lo;
    do {
        irq = *irq_lo;
        lo = GTIMER(GTIMER_COUNTER_LO);
    } while (irq != *irq_lo);
    return lo - irq;
}
