/*
 * Zynq-7000 register map: only what the runtime touches. Offsets and bits from the Zynq-7000
 * SoC Technical Reference Manual, UG585 (v1.13), Appendix B.
 */
#ifndef ZYNQ7000_H
#define ZYNQ7000_H

#include <stdint.h>

#define ZYNQ_REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* ---- UART controller (Cadence), UG585 B.33 "UART Controller (UART)" -------------------------
 * UART0 at 0xE0000000, UART1 at 0xE0001000 (UG585 Table 4-6, "I/O peripheral registers"). */
#define ZYNQ_UART0_BASE 0xE0000000u
#define ZYNQ_UART1_BASE 0xE0001000u

#define XUART_CR 0x00u      /* Control_reg0: UART control */
#define XUART_MR 0x04u      /* mode_reg0: character format, parity, stop bits, channel mode */
#define XUART_IER 0x08u     /* Intrpt_en_reg0 */
#define XUART_IDR 0x0Cu     /* Intrpt_dis_reg0 */
#define XUART_ISR 0x14u     /* Chnl_int_sts_reg0 (write 1 to clear) */
#define XUART_BAUDGEN 0x18u /* Baud_rate_gen_reg0: CD, 16 bits (0 disables, 1 bypasses) */
#define XUART_RXTOUT 0x1Cu  /* Rcvr_timeout_reg0: RTO [7:0], 0 disables the receiver time-out */
#define XUART_RXWM 0x20u    /* Rcvr_FIFO_trigger_level0 */
#define XUART_SR 0x2Cu      /* Channel_sts_reg0 */
#define XUART_FIFO 0x30u    /* TX_RX_FIFO0 */
#define XUART_BAUDDIV 0x34u /* Baud_rate_divider_reg0: BDIV, 4..255 */

/* Control_reg0 bits */
#define XUART_CR_RXRST (1u << 0) /* RX logic reset, self-clearing */
#define XUART_CR_TXRST (1u << 1) /* TX logic reset, self-clearing */
#define XUART_CR_RX_EN (1u << 2)
#define XUART_CR_RX_DIS (1u << 3)
#define XUART_CR_TX_EN (1u << 4)
#define XUART_CR_TX_DIS (1u << 5)
#define XUART_CR_RSTTO (1u << 6)  /* restart receiver timeout counter */
#define XUART_CR_STPBRK (1u << 8) /* stop transmitter break */

/* mode_reg0 fields: CLKS [0] = 0 uart_ref_clk; CHRL [2:1] = 0b0x 8 bits; PAR [5:3] = 0b1xx none;
 * NBSTOP [7:6] = 0b00 one stop bit; CHMODE [9:8] = 0b00 normal. */
#define XUART_MR_8N1 (0x4u << 3)

/* Channel_sts_reg0 bits (UG585 B.33) */
#define XUART_SR_RTRIG (1u << 0) /* RX FIFO fill level >= Rcvr_FIFO_trigger_level0 */
#define XUART_SR_RXEMPTY (1u << 1)
#define XUART_SR_TXEMPTY (1u << 3)
#define XUART_SR_TXFULL (1u << 4)
#define XUART_SR_TACTIVE (1u << 11)

#define XUART_IXR_ALL 0x00003FFFu /* all interrupt sources, Intrpt_*_reg0 bits [13:0] */

/* ---- Cortex-A9 MPCore private timers, UG585 B.3 "Application Processing Unit (mpcore)" ------
 * Global timer at SCU base 0xF8F00000 + 0x200 (UG585 Table 4-7; ARM DDI 0407 §4.3). */
#define ZYNQ_GTIMER_BASE 0xF8F00200u
#define GTIMER_COUNTER_LO 0x00u /* Global_Timer_Counter_Register0 */
#define GTIMER_COUNTER_HI 0x04u /* Global_Timer_Counter_Register1 */
#define GTIMER_CONTROL 0x08u    /* Global_Timer_Control_Register */
#define GTIMER_CONTROL_ENABLE (1u << 0)
#define GTIMER_CONTROL_PRESCALER_SHIFT 8u /* bits [15:8]; 0 = count every PERIPHCLK */

/* ---- Generic interrupt controller (ARM GIC v1, DDI 0407 §3, IHI 0048A; UG585 §7 and B.3) ------
 * The UART's receive interrupt: while the device computes or transmits (CPSR.I clear), its
 * handler moves the RX FIFO into a ring (fw_uart.c); while the device reads the link (CPSR.I set)
 * the same interrupt only wakes the core from WFI (ARM ARM DDI 0406C B1.8.13 "Wait For
 * Interrupt": a pending IRQ ends WFI whatever CPSR.I). */
#define ZYNQ_GIC_CPU_BASE 0xF8F00100u  /* ICC* CPU interface */
#define ZYNQ_GIC_DIST_BASE 0xF8F01000u /* ICD* distributor */
#define GIC_ICCICR 0x000u              /* CPU interface control: bit 0 enable */
#define GIC_ICCPMR 0x004u              /* priority mask: IRQs with priority < mask are signalled */
#define GIC_ICCIAR 0x00Cu              /* interrupt acknowledge: the ID [9:0] of the IRQ taken */
#define GIC_ICCEOIR 0x010u             /* end of interrupt: write back what ICCIAR read */
#define GIC_SPURIOUS 1023u /* ICCIAR's ID when nothing was pending (IHI 0048A §4.4.4) */
#define GIC_ICDDCR 0x000u  /* distributor control: bit 0 enable */
#define GIC_ICDISER(n) (0x100u + 4u * (n)) /* set-enable, 32 IDs per word */
#define GIC_ICDIPR(id) (0x400u + (id))     /* priority, one byte per ID */
#define GIC_ICDIPTR(id) (0x800u + (id))    /* CPU targets, one byte per ID */
#define ZYNQ_IRQ_UART0 59u                 /* UG585 Table 7-4, "Shared peripheral interrupts" */
#define ZYNQ_IRQ_UART1 82u

#define XUART_IXR_RTRIG (1u << 0) /* RX FIFO level >= Rcvr_FIFO_trigger_level0 */
#define XUART_IXR_ROVR (1u << 5)  /* RX FIFO overflow: a byte arrived at a full FIFO, lost */
#define XUART_IXR_TOUT (1u << 8)  /* receiver time-out: line idle for Rcvr_timeout_reg0 RTO */

/* ---- Snoop control unit, UG585 B.3 "mpcore" (Cortex-A9 MPCore TRM DDI 0407 §2.2) ------------ */
#define ZYNQ_SCU_BASE 0xF8F00000u
#define SCU(reg) ZYNQ_REG32(ZYNQ_SCU_BASE + (reg))
#define SCU_CONTROL 0x00u /* SCU_CONTROL_REGISTER: bit 0 SCU enable */
#define SCU_INVALIDATE_ALL                                                                         \
    0x0Cu /* SCU_INVALIDATE_ALL_REGS_IN_SECURE_STATE: CPUn ways at [4n+3:4n] */
#define SCU_CONTROL_ENABLE (1u << 0)
#define SCU_INVALIDATE_CPU0 0xFu /* CPU0's four tag RAM ways, bits [3:0] */

/* ---- CP15 auxiliary control register, Cortex-A9 TRM (DDI 0388) §4.3.10 ---------------------- */
#define ACTLR_FW (1u << 0)  /* cache and TLB maintenance broadcast (inner shareable) */
#define ACTLR_SMP (1u << 6) /* takes part in coherency: Shareable Normal memory is cached */

/* ---- L2 cache controller PL310, UG585 §3.4 and Appendix B "L2 Cache (L2Cpl310)" ----------------
 * Register offsets: ARM L2C-310 TRM (DDI 0246) §3.3; the Zynq-7000 settings: UG585 §3.4. */
#define ZYNQ_L2_BASE 0xF8F02000u
#define L2(reg) ZYNQ_REG32(ZYNQ_L2_BASE + (reg))
#define L2_CACHE_ID 0x000u         /* reg0_cache_id: 0x410000C8 on the Zynq-7000 (L2C-310 r3p2) */
#define L2_CONTROL 0x100u          /* reg1_control: bit 0 enable */
#define L2_AUX_CONTROL 0x104u      /* reg1_aux_control, writable only while disabled */
#define L2_TAG_RAM_CONTROL 0x108u  /* reg1_tag_ram_control */
#define L2_DATA_RAM_CONTROL 0x10Cu /* reg1_data_ram_control */
#define L2_INT_CLEAR 0x220u        /* reg2_int_clear */
#define L2_CACHE_SYNC 0x730u       /* reg7_cache_sync */
#define L2_INV_WAY 0x77Cu          /* reg7_inv_way: one bit per way, self-clearing */
#define L2_CLEAN_INV_WAY 0x7FCu    /* reg7_clean_inv_way: one bit per way, self-clearing */
#define L2_ID_MASK 0xFF0003C0u     /* implementer [31:24] and part number [9:6] */
#define L2_ID_PL310 0x410000C0u    /* ARM, part number 0b0011: L2C-310 */
#define L2_ALL_WAYS 0xFFu          /* 8 ways, 512 KiB */
#define L2_INT_ALL 0x1FFu
/* reg1_aux_control bits set for the Zynq-7000: early BRESP [30], instruction and data prefetch
 * [29:28], round-robin replacement [25], parity [21], event monitor bus [20], 64 KiB ways
 * [19:17] = 0b011; 8-way associativity [16] = 0. */
#define L2_AUX_ZYNQ 0x72360000u
#define L2_AUX_WAY_SIZE_MASK 0x000E0000u /* way size [19:17] */
#define L2_TAG_RAM_LATENCY 0x111u        /* setup, read, write: 2 cycles each (field value + 1) */
#define L2_DATA_RAM_LATENCY 0x121u       /* setup 2, read 3, write 2 cycles */

/* ---- System level control registers, UG585 Appendix B "System Level Control Registers (slcr)" */
#define ZYNQ_SLCR_BASE 0xF8000000u
#define SLCR(reg) ZYNQ_REG32(ZYNQ_SLCR_BASE + (reg))
#define SLCR_LOCK 0x004u    /* SLCR_LOCK: write the key to write-protect the SLCR */
#define SLCR_UNLOCK 0x008u  /* SLCR_UNLOCK */
#define SLCR_L2C_RAM 0xA1Cu /* L2C_RAM: L2 RAM timing, 0x0002_0202 before the L2 is used */
#define SLCR_LOCK_KEY 0x767Bu
#define SLCR_UNLOCK_KEY 0xDF0Du
#define SLCR_L2C_RAM_VALUE 0x00020202u

#endif /* ZYNQ7000_H */
