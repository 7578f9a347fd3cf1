/*
 * ARM MPS2 board with the AN500 FPGA image (Cortex-M7): the registers the firmware touches.
 *
 * Memory map (ARM AN500, "Memory map"; what QEMU 7.2's mps2-an500 machine models, hw/arm/mps2.c):
 *
 *   0x0000_0000 - 0x003F_FFFF  ZBT SSRAM1, 4 MiB: vectors, code, constants
 *   0x2000_0000 - 0x203F_FFFF  ZBT SSRAM2 and 3, 4 MiB: data, bss, stack
 *   0x4000_0000                CMSDK APB timer 0 (IRQ 8)     0x4000_1000  timer 1 (IRQ 9)
 *   0x4000_4000                CMSDK APB UART0 (RX IRQ 0, TX IRQ 1)
 *   0xE000_E000                System Control Space: SysTick, NVIC, SCB (ARM DDI 0403E B3.2)
 *
 * Peripheral registers: ARM DDI 0479C, Cortex-M System Design Kit TRM, "APB timer" and "APB UART"
 * (every peripheral clocked by the 25 MHz PCLK on the AN500, SYSCLK_FRQ in hw/arm/mps2.c).
 */
#ifndef MPS2_AN500_H
#define MPS2_AN500_H

#include <stdint.h>

#define MPS2_REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* CMSDK APB UART (DDI 0479C, APB UART): a one-byte buffer each way, 8N1, baud = PCLK / BAUDDIV. */
#define CMSDK_UART_DATA 0x000u  /* RW: the received byte (a read empties RXFULL), the sent byte */
#define CMSDK_UART_STATE 0x004u /* RW: buffer status; the overrun bits are write 1 to clear */
#define CMSDK_UART_CTRL 0x008u  /* RW: enables */
#define CMSDK_UART_INTSTATUS 0x00Cu /* R: interrupt status; W: INTCLEAR, write 1 to clear */
#define CMSDK_UART_BAUDDIV 0x010u   /* RW: [19:0] baud divider, at least 16 */
#define CMSDK_UART_STATE_TXFULL (1u << 0)
#define CMSDK_UART_STATE_RXFULL (1u << 1)
#define CMSDK_UART_STATE_TXOVR (1u << 2)
#define CMSDK_UART_STATE_RXOVR (1u << 3)
#define CMSDK_UART_CTRL_TXEN (1u << 0)
#define CMSDK_UART_CTRL_RXEN (1u << 1)
#define CMSDK_UART_CTRL_RXINTEN (1u << 3)
#define CMSDK_UART_INT_RX (1u << 1)

/* CMSDK APB timer (DDI 0479C, APB timer): a 32-bit down-counter reloaded from RELOAD at 0. */
#define MPS2_TIMER0_BASE 0x40000000u
#define CMSDK_TIMER_CTRL 0x000u   /* RW: [0] enable, [3] interrupt enable */
#define CMSDK_TIMER_VALUE 0x004u  /* RW: the counter */
#define CMSDK_TIMER_RELOAD 0x008u /* RW: the value loaded when the counter reaches 0 */
#define CMSDK_TIMER_CTRL_EN (1u << 0)

/* The UART's receive interrupt: the AN500's interrupt map puts UART0 RX at IRQ 0 (hw/arm/mps2.c,
 * uartirq[]). */
#define MPS2_IRQ_UART0_RX 0u

/* System Control Space (ARM DDI 0403E B3.2 and B3.4). */
#define SCS_ACTLR 0xE000E008u  /* auxiliary control (B3.2.2; its bits: the Cortex-M7 TRM's) */
#define SCS_VTOR 0xE000ED08u   /* vector table offset (B3.2.5) */
#define SCS_CCR 0xE000ED14u    /* configuration and control (B3.2.8): [17] IC, [16] DC, ... */
#define SCS_SHCSR 0xE000ED24u  /* system handler control and state (B3.2.13) */
#define SCS_CPACR 0xE000ED88u  /* coprocessor access control (B3.2.20) */
#define NVIC_ISER0 0xE000E100u /* interrupt set-enable, IRQ 0..31 (B3.4, NVIC) */
#define NVIC_ICER0 0xE000E180u /* interrupt clear-enable, IRQ 0..31 */
#define NVIC_ICPR0 0xE000E280u /* interrupt clear-pending, IRQ 0..31 */
/* SHCSR: MemManage, BusFault and UsageFault reported as themselves, not escalated to HardFault. */
#define SHCSR_MEMFAULTENA (1u << 16)
#define SHCSR_BUSFAULTENA (1u << 17)
#define SHCSR_USGFAULTENA (1u << 18)

#endif /* MPS2_AN500_H */
