/*
 * Cortex-A9 bare-metal start-up for the Zynq-7000 (ARM mode, secure SVC).
 * ARM ARM (DDI 0406C) B1.8 exception vectors, B4.1 CP15 registers; Cortex-A9 TRM (DDI 0388).
 */
    .syntax unified
    .arm

    .equ MODE_FIQ, 0x11
    .equ MODE_IRQ, 0x12
    .equ MODE_SVC, 0x13
    .equ MODE_ABT, 0x17
    .equ MODE_UND, 0x1B
    .equ PSR_IF,   0xC0              /* IRQ and FIQ masked: the runtime is polled */
    .equ STACK_PAINT, 0xA5A5A5A5     /* fw_rt.c counts untouched words for the high-water mark */

    .section .vectors, "ax"
    .global _vectors
_vectors:                            /* DDI 0406C B1.8.1: eight words, VBAR-relative */
    b   _reset
    b   _undef_handler
    b   _svc_handler
    b   _pabort_handler
    b   _dabort_handler
    b   _svc_handler                 /* reserved */
    b   _irq_handler
    b   _fiq_handler

    .text
    .global _reset
_reset:
    /* Only CPU0 runs the firmware; park others (MPIDR.Aff0, DDI 0388 §4.3.5). */
    mrc p15, 0, r0, c0, c0, 5
    ands r0, r0, #3
    bne _park

    /* SCTLR (B4.1.130): MMU, caches and alignment checking off; V = 0 so VBAR is used.
     * Code is built with -mno-unaligned-access because, with the MMU off, memory is
     * Strongly-ordered and unaligned accesses fault (DDI 0406C A3.5.6). */
    mrc p15, 0, r0, c1, c0, 0
    bic r0, r0, #(1 << 0)            /* M: MMU */
    bic r0, r0, #(1 << 2)            /* C: data cache */
    bic r0, r0, #(1 << 12)           /* I: instruction cache */
    bic r0, r0, #(1 << 13)           /* V: high vectors */
    mcr p15, 0, r0, c1, c0, 0
    mov r0, #0
    mcr p15, 0, r0, c7, c5, 0        /* ICIALLU: invalidate instruction cache */
    mcr p15, 0, r0, c8, c7, 0        /* TLBIALL */
    dsb
    isb
    ldr r0, =_vectors
    mcr p15, 0, r0, c12, c0, 0       /* VBAR (B4.1.156) */

    /* One stack per mode used: UND/ABT for fault reports, IRQ/FIQ for stray interrupts. */
    msr cpsr_c, #(MODE_UND | PSR_IF)
    ldr sp, =__und_stack_top
    msr cpsr_c, #(MODE_ABT | PSR_IF)
    ldr sp, =__abt_stack_top
    msr cpsr_c, #(MODE_IRQ | PSR_IF)
    ldr sp, =__irq_stack_top
    msr cpsr_c, #(MODE_FIQ | PSR_IF)
    ldr sp, =__fiq_stack_top
    msr cpsr_c, #(MODE_SVC | PSR_IF)

    /* Paint the main stack before it is used, for the high-water mark. */
    ldr r0, =__stack_bottom
    ldr r1, =__stack_top
    ldr r2, =STACK_PAINT
1:  cmp r0, r1
    strlo r2, [r0], #4
    blo 1b
    ldr sp, =__stack_top

    /* CPACR (B4.1.40): full access to CP10/CP11; then FPEXC.EN (B6.1.2): VFP and NEON on. */
    mrc p15, 0, r0, c1, c0, 2
    orr r0, r0, #(0xF << 20)
    mcr p15, 0, r0, c1, c0, 2
    isb
    mov r0, #0x40000000
    vmsr fpexc, r0

    /* .data: copy from its load address when it differs (e.g. a ROM image); .bss: zero. */
    ldr r0, =__data_load
    ldr r1, =__data_start
    ldr r2, =__data_end
    cmp r0, r1
    beq 3f
2:  cmp r1, r2
    ldrlo r3, [r0], #4
    strlo r3, [r1], #4
    blo 2b
3:  ldr r1, =__bss_start
    ldr r2, =__bss_end
    mov r3, #0
4:  cmp r1, r2
    strlo r3, [r1], #4
    blo 4b

    bl  main
_park:
    wfe
    b   _park

    /* Exceptions the runtime does not expect: report kind and address, then stop. */
_undef_handler:
    mov r0, #1
    sub r1, lr, #4
    b   fw_fault
_svc_handler:
    mov r0, #2
    sub r1, lr, #4
    b   fw_fault
_pabort_handler:
    mov r0, #3
    sub r1, lr, #4
    b   fw_fault
_dabort_handler:
    mov r0, #4
    sub r1, lr, #8
    b   fw_fault
_irq_handler:
    mov r0, #5
    sub r1, lr, #4
    b   fw_fault
_fiq_handler:
    mov r0, #6
    sub r1, lr, #4
    b   fw_fault
