/*
 * Cortex-M7 bare-metal start-up for the MPS2 AN500 image (Thumb, privileged Thread mode, MSP).
 * ARMv7-M Architecture Reference Manual (ARM DDI 0403E): B1.5.3 the vector table, B1.5.5 reset
 * behaviour, B1.5.6 exception entry (the stacked frame), B3.2.5 VTOR, B3.2.20 CPACR.
 *
 * On reset the core loads SP_main from word 0 of the vector table at VTOR (0 on the AN500, the
 * image start: link.ld) and branches to word 1; there is no mode or MMU set-up to do. The code
 * below enables the FPU, paints the stack, copies .data from its load address, zeroes .bss, then
 * calls fw_board_init and main.
 */
    .syntax unified
    .thumb

    .equ SCS_VTOR,    0xE000ED08
    .equ SCS_CPACR,   0xE000ED88
    .equ CPACR_CP10_CP11, (0xF << 20) /* CP10 and CP11 full access: the FPU (B3.2.20) */
    .equ STACK_PAINT, 0xA5A5A5A5      /* fw_rt.c counts untouched words for the high-water mark */
    .equ FRAME_PC,    24              /* the stacked return address in the exception frame (B1.5.6) */

    /* fw_fault's kinds of the ARMv7-M faults (firmware/fw_rt.h) */
    .equ FAULT_NMI,        7
    .equ FAULT_HARD,       8
    .equ FAULT_MEMMANAGE,  9
    .equ FAULT_BUS,        10
    .equ FAULT_USAGE,      11

/*
 * The vector table (B1.5.3): the initial main stack pointer, then one handler per exception
 * number, 1 reset .. 15 SysTick, then the AN500's 32 external interrupts (the number QEMU's
 * mps2-an500 gives its NVIC, hw/arm/mps2.c "num-irq"). The firmware enables no exception but the
 * faults: whatever else arrives is reported as kind 0 ("?"). The UART's receive interrupt only
 * wakes WFI, masked by PRIMASK, and is never taken (fw_uart.c).
 */
    .section .vectors, "a"
    .global _vectors
_vectors:
    .word __stack_top          /* 0: SP_main at reset */
    .word _reset               /* 1: Reset */
    .word _nmi                 /* 2: NMI */
    .word _hardfault           /* 3: HardFault */
    .word _memmanage           /* 4: MemManage */
    .word _busfault            /* 5: BusFault */
    .word _usagefault          /* 6: UsageFault */
    .word 0, 0, 0, 0           /* 7..10: reserved */
    .word _unexpected          /* 11: SVCall */
    .word _unexpected          /* 12: DebugMonitor */
    .word 0                    /* 13: reserved */
    .word _unexpected          /* 14: PendSV */
    .word _unexpected          /* 15: SysTick */
    .rept 32
    .word _unexpected          /* 16 + n: external interrupt n */
    .endr
_vectors_end:
    .global _vectors_end

    .text

    .global _reset
    .type _reset, %function
    .thumb_func
_reset:
    /* VTOR = the image start (its reset value on the AN500, set for an image entered otherwise) */
    ldr r0, =SCS_VTOR
    ldr r1, =_vectors
    str r1, [r0]

    /* FPU on before any floating-point instruction: CPACR CP10, CP11 full access; DSB and ISB so
     * that the instructions after it see the new access rights (B3.2.20). */
    ldr r0, =SCS_CPACR
    ldr r1, [r0]
    orr r1, r1, #CPACR_CP10_CP11
    str r1, [r0]
    dsb
    isb

    /* Paint the main stack below the current SP (its top at reset) */
    ldr r0, =__stack_bottom
    mov r1, sp
    ldr r2, =STACK_PAINT
1:  cmp r0, r1
    bhs 2f
    str r2, [r0], #4
    b 1b
2:
    /* .data: copy its initial values from their load address (link.ld: AT > SSRAM1) */
    ldr r0, =__data_start
    ldr r1, =__data_end
    ldr r2, =__data_load
3:  cmp r0, r1
    bhs 4f
    ldr r3, [r2], #4
    str r3, [r0], #4
    b 3b
4:
    /* .bss = 0 */
    ldr r0, =__bss_start
    ldr r1, =__bss_end
    movs r2, #0
5:  cmp r0, r1
    bhs 6f
    str r2, [r0], #4
    b 5b
6:
    bl fw_board_init
    bl main
7:  wfi                        /* main does not return */
    b 7b
    .size _reset, . - _reset

/*
 * Faults: fw_fault(kind, the stacked return address) on the UART, then stop. Every exception runs
 * on the main stack (Thread mode uses SP_main: CONTROL.SPSEL stays 0), so the frame is at SP.
 */
    .macro fault name, kind
    .type \name, %function
    .thumb_func
\name:
    movs r0, #\kind
    b _fault
    .size \name, . - \name
    .endm

    fault _nmi, FAULT_NMI
    fault _hardfault, FAULT_HARD
    fault _memmanage, FAULT_MEMMANAGE
    fault _busfault, FAULT_BUS
    fault _usagefault, FAULT_USAGE
    fault _unexpected, 0

    .type _fault, %function
    .thumb_func
_fault:
    ldr r1, [sp, #FRAME_PC]
    b fw_fault
    .size _fault, . - _fault
