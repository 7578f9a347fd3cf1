/*
 * IRQ dispatch (startup.S _irq_handler calls fw_irq with the caller-saved core and VFP registers
 * saved): acknowledge at the GIC CPU interface, run the handler, end the interrupt (ARM GIC
 * Architecture Specification v1, IHI 0048A §4.4.4 ICCIAR and §4.4.5 ICCEOIR; UG585 §7.2). The
 * only source enabled is the console UART's receive interrupt (fw_uart.c).
 *
 * Timed: the handler's ticks are link work (fw_server_link adds them) and are left out of
 * fw_timer_now, so the stages an interrupt lands in keep the ticks of their own work; only the
 * exception entry and return (about 30 instructions) fall outside both.
 */
#include <stdint.h>

#include "fw_config.h"
#include "fw_timer.h"
#include "fw_uart.h"
#include "zynq7000.h"

#define GICC(reg) ZYNQ_REG32(ZYNQ_GIC_CPU_BASE + (reg))
#define GTIMER_LO ZYNQ_REG32(ZYNQ_GTIMER_BASE + GTIMER_COUNTER_LO)

#if FW_UART_INDEX == 0
#define UART_IRQ ZYNQ_IRQ_UART0
#else
#define UART_IRQ ZYNQ_IRQ_UART1
#endif

/* Ticks spent in fw_irq since start-up; written here only, with IRQs masked. */
volatile uint64_t fw_irq_ticks_total;

void fw_irq(void);

void fw_irq(void)
{
    const uint32_t t0 = GTIMER_LO;
    const uint32_t iar = GICC(GIC_ICCIAR);
    const uint32_t id = iar & 0x3FFu;
    if (id == UART_IRQ) {
        fw_uart_isr();
    }
    if (id != GIC_SPURIOUS) {
        GICC(GIC_ICCEOIR) = iar;
    }
    fw_irq_ticks_total += (uint32_t)(GTIMER_LO - t0);
}

uint32_t fw_irq_ticks(void)
{
    return (uint32_t)fw_irq_ticks_total;
}
