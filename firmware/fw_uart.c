/* Polled Cadence UART driver. Register names and bits: zynq7000.h (UG585 B.33). */
#include "fw_uart.h"

#include "fw_config.h"
#include "zynq7000.h"

#define UART(reg) ZYNQ_REG32(FW_UART_BASE + (reg))

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
