/* Polled Cadence UART driver. Register names and bits: zynq7000.h (UG585 B.33). */
#include "fw_uart.h"

#include "fw_config.h"
#include "zynq7000.h"

#define UART(reg) ZYNQ_REG32(FW_UART_BASE + (reg))
#define GICC(reg) ZYNQ_REG32(ZYNQ_GIC_CPU_BASE + (reg))
#define GICD(reg) ZYNQ_REG32(ZYNQ_GIC_DIST_BASE + (reg))
#define GICD8(off) (*(volatile uint8_t *)(uintptr_t)(ZYNQ_GIC_DIST_BASE + (off)))

#if FW_UART_INDEX == 0
#define UART_IRQ ZYNQ_IRQ_UART0
#else
#define UART_IRQ ZYNQ_IRQ_UART1
#endif

void fw_uart_init(void)
{
    /* UG585 §19.3.1 "Example: Configure the UART": disable, set divisors, reset, enable. */
    UART(XUART_CR) = XUART_CR_TX_DIS | XUART_CR_RX_DIS;
    UART(XUART_IDR) = XUART_IXR_ALL;
    UART(XUART_ISR) = XUART_IXR_ALL;
    UART(XUART_MR) = XUART_MR_8N1;
    /* baud = uart_ref_clk / (CD * (BDIV + 1)), UG585 §19.2.3; CD and BDIV chosen by codegen. */
    UART(XUART_BAUDGEN) = FW_UART_CD;
    UART(XUART_BAUDDIV) = FW_UART_BDIV;
    UART(XUART_CR) = XUART_CR_TXRST | XUART_CR_RXRST;
    while (UART(XUART_CR) & (XUART_CR_TXRST | XUART_CR_RXRST)) {
    }
    UART(XUART_RXWM) = 1u;
    UART(XUART_RXTOUT) = 0u;
    UART(XUART_CR) = XUART_CR_TX_EN | XUART_CR_RX_EN | XUART_CR_RSTTO | XUART_CR_STPBRK;

    /* Wake-up path for fw_uart_wait_rx: UART RX trigger -> GIC -> CPU0, highest priority. */
    UART(XUART_IER) = XUART_IXR_RTRIG;
    GICD8(GIC_ICDIPR(UART_IRQ)) = 0x00u;
    GICD8(GIC_ICDIPTR(UART_IRQ)) = 0x01u;
    GICD(GIC_ICDISER(UART_IRQ / 32u)) = 1u << (UART_IRQ % 32u);
    GICD(GIC_ICDDCR) = 1u;
    GICC(GIC_ICCPMR) = 0xF0u;
    GICC(GIC_ICCICR) = 1u;
}

void fw_uart_wait_rx(void)
{
    /* Clear the trigger first, then look: a byte that lands after the look re-raises it and WFI
     * returns at once, so no byte is slept through. */
    UART(XUART_ISR) = XUART_IXR_RTRIG;
    if (UART(XUART_SR) & XUART_SR_RXEMPTY) {
        __asm__ volatile("dsb\n\twfi" ::: "memory");
    }
}

void fw_uart_putc(uint8_t c)
{
    while (UART(XUART_SR) & XUART_SR_TXFULL) {
    }
    UART(XUART_FIFO) = c;
}

void fw_uart_write(const uint8_t *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        fw_uart_putc(data[i]);
    }
}

int fw_uart_getc(uint8_t *c)
{
    if (UART(XUART_SR) & XUART_SR_RXEMPTY) {
        return 0;
    }
    *c = (uint8_t)UART(XUART_FIFO);
    return 1;
}

void fw_uart_flush(void)
{
    while ((UART(XUART_SR) & (XUART_SR_TXEMPTY | XUART_SR_TACTIVE)) != XUART_SR_TXEMPTY) {
    }
}
