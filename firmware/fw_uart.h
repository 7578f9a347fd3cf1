/* The console UART (target interface, docs/architecture.md §5). Every board's driver implements
 * init, putc, write, read, pending, rx_overruns, getc, wait_rx and flush (main.c, fw_rt.c,
 * fw_probe_print.h and the board's fw_platform.c call them). The Zynq-7000's Cadence driver
 * (UG585 §19 and B.33; firmware/board/zynq7000/fw_uart.c) also has the receive interrupt into a
 * ring, the rate switch and the link report, which only its own board's files call; the comments
 * below describe it where the drivers differ (the MPS2 AN500's CMSDK UART: one byte each way,
 * polled, firmware/board/mps2_an500/fw_uart.c). */
#ifndef FW_UART_H
#define FW_UART_H

#include <stddef.h>
#include <stdint.h>

/* Reset TX/RX, program 8N1 and the baud-rate divisors (computed by the compiler, fw_config.h),
 * mask interrupts, enable TX and RX. */
void fw_uart_init(void);
/* Blocking write of one byte: waits while the 64-byte TX FIFO is full. */
void fw_uart_putc(uint8_t c);
void fw_uart_write(const uint8_t *data, size_t len);
/* Moves received bytes to dst until a frame delimiter (0x00) is among them or cap are moved,
 * sleeping while the RX FIFO is empty until it holds a burst (16 bytes), or the bytes still
 * needed when fewer (need: the fewest the caller expects, 0 when it does not know), or the
 * receiver time-out says the line went idle; returns how many (at least one; fewer than
 * FW_RX_CHUNK, 256, after a delimiter), in *clean how many leading bytes hold no delimiter (n when
 * none does) and in *slept the global timer ticks spent asleep. Counts RX FIFO overruns on the
 * way. The receive ring's bytes come first; when they hold no delimiter and fewer than need, the
 * FIFO's follow in the same call. */
size_t fw_uart_read(uint8_t *dst, size_t cap, size_t need, size_t *clean, uint32_t *slept);
/* RX FIFO overruns counted since start-up (bytes lost because the 64-byte FIFO was full). */
uint32_t fw_uart_rx_overruns(void);
/* The receive interrupt's handler (called by the board's IRQ dispatch with IRQs masked): the RX
 * FIFO into the ring that fw_uart_read empties first. */
void fw_uart_isr(void);
/* Bytes received and not yet read (the ring's, plus 1 when the RX FIFO is not empty). */
size_t fw_uart_pending(void);
/* Switch to baud (divisors cd, bdiv) once the TX FIFO has emptied; back to the rate before
 * after revert_ms unless fw_uart_confirm is called first (docs/protocol.md, "Rate switch"). */
void fw_uart_set_rate(uint32_t baud, uint16_t cd, uint16_t bdiv, uint32_t revert_ms);
void fw_uart_confirm(void);
/* The link's facts for INFO: the rate now, the ring's size, its overruns, the reverts. */
typedef struct {
    uint32_t baud;
    uint32_t rx_ring;
    uint32_t ring_overruns;
    uint32_t rate_reverts;
} fw_uart_link_t;
void fw_uart_link_report(fw_uart_link_t *r);
/* Non-blocking read: returns 1 and stores the byte when the RX FIFO holds one, else 0. */
int fw_uart_getc(uint8_t *c);
/* Sleep (WFI) until the RX FIFO holds a byte (at once when it does). The UART's RX-trigger
 * interrupt is routed through the GIC to CPU0 but stays masked in CPSR, so it only wakes the core:
 * an idle device no longer spins on the status register (on QEMU that spin competes with the I/O
 * thread for the host CPU and the big lock). */
void fw_uart_wait_rx(void);
/* Wait until the transmitter has shifted out everything (FIFO empty and not active). */
void fw_uart_flush(void);

#endif /* FW_UART_H */
