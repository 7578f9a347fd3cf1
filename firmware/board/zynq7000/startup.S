/*
 * Cortex-A9 bare-metal start-up for the Zynq-7000 (ARM mode, secure SVC).
 * ARM ARM (DDI 0406C) B1.8 exception vectors, B4.1 CP15 registers; Cortex-A9 TRM (DDI 0388).
 *
 * The image may be entered straight from reset (QEMU -kernel), from the SPL halted at its
 * hand-off (JTAG, codegen/target/jtag.py: MMU and D-cache off, I-cache on) or from a boot loader
 * that left the MMU, the L1 caches and branch prediction on (U-Boot `bootelf`, as tools/uboot.sh
 * builds it: CONFIG_SYS_L2CACHE_OFF=y in xilinx_zynq_virt_defconfig, so the PL310 is off) or the
 * PL310 L2 on as well (a firmware entered again without a reset, a boot loader built with the L2
 * on). The code below runs from registers only until every cache is off and clean, then sets up
 * stacks and C memory; fw_board_init (fw_mmu.c) builds the identity map and turns the MMU and
 * caches back on before main. The boot loader must have put the image into DDR itself (U-Boot:
 * `bootelf` cleans the D-cache before it jumps; after `load` + `go`, run `dcache flush` first):
 * nothing that runs here can repair an image that is still in a dirty cache line.
 */
    .syntax unified
    .arm

    .equ MODE_FIQ, 0x11
    .equ MODE_IRQ, 0x12
    .equ MODE_SVC, 0x13
    .equ MODE_ABT, 0x17
    .equ MODE_UND, 0x1B
    .equ PSR_IF,   0xC0              /* IRQ and FIQ masked (main unmasks IRQ once set up) */
    .equ STACK_PAINT, 0xA5A5A5A5     /* fw_rt.c counts untouched words for the high-water mark */

    /* SCTLR bits (DDI 0406C B4.1.130) */
    .equ SCTLR_M, (1 << 0)           /* MMU */
    .equ SCTLR_A, (1 << 1)           /* alignment fault checking */
    .equ SCTLR_C, (1 << 2)           /* data and unified caches */
    .equ SCTLR_Z, (1 << 11)          /* branch prediction */
    .equ SCTLR_I, (1 << 12)          /* instruction cache */
    .equ SCTLR_V, (1 << 13)          /* high vectors */
    .equ ACTLR_SMP, (1 << 6)         /* Cortex-A9 TRM §4.3.10: takes part in coherency */

    /* PL310 L2 cache controller (UG585 Appendix B "L2 Cache (L2Cpl310)"; ARM DDI 0246 §3.3) */
    .equ L2_BASE,        0xF8F02000

/*
 * Clean and invalidate the whole L1 data cache by set/way (DDI 0406C B4.2.1 "Cache and branch
 * predictor maintenance operations", DCCISW; B2.2.7 for the loop over CCSIDR). Only L1 is
 * architected on the Cortex-A9 (CLIDR LoC = 1); the PL310 is an outer cache with its own
 * registers. With clean = 0 it only invalidates (DCISW): after reset the contents are unknown
 * and must not be written back. Registers only: r0-r6 are clobbered.
 */
.macro dcache_l1_by_set_way clean
    mov r0, #0
    mcr p15, 2, r0, c0, c0, 0        /* CSSELR = L1 data cache (B4.1.41) */
    isb
    mrc p15, 1, r0, c0, c0, 0        /* CCSIDR (B4.1.19) */
    and r1, r0, #7
    add r1, r1, #4                   /* log2(line bytes): the set field's shift */
    ldr r3, =0x3FF
    and r2, r3, r0, lsr #3           /* ways - 1 */
    clz r4, r2                       /* the way field sits in the top bits */
    ldr r3, =0x7FFF
    and r3, r3, r0, lsr #13          /* sets - 1 */
.Lway\@:
    mov r5, r3
.Lset\@:
    lsl r6, r2, r4
    orr r6, r6, r5, lsl r1           /* level field [3:1] = 0: L1 */
    .if \clean
    mcr p15, 0, r6, c7, c14, 2       /* DCCISW */
    .else
    mcr p15, 0, r6, c7, c6, 2        /* DCISW */
    .endif
    subs r5, r5, #1
    bge .Lset\@
    subs r2, r2, #1
    bge .Lway\@
    dsb
.endm

/*
 * Leave caches and MMU off with nothing lost: clean + invalidate L1 D only if the D-cache was on
 * (a bootloader's state, valid), else invalidate (reset state, unknown); then SCTLR M, C, I, Z,
 * A off, V = 0 so that VBAR is used; then invalidate the I-cache, the branch predictor and the
 * TLBs (B4.2.1 ICIALLU, BPIALL, TLBIALL), which hold entries of the bootloader's map.
 */
.macro caches_off
    mrc p15, 0, r7, c1, c0, 0
    tst r7, #SCTLR_C
    beq .Linv\@
    dcache_l1_by_set_way 1
    b .Loff\@
.Linv\@:
    dcache_l1_by_set_way 0
.Loff\@:
    ldr r0, =(SCTLR_M | SCTLR_A | SCTLR_C | SCTLR_Z | SCTLR_I | SCTLR_V)
    bic r7, r7, r0
    mcr p15, 0, r7, c1, c0, 0
    isb
    mov r0, #0
    mcr p15, 0, r0, c7, c5, 0        /* ICIALLU */
    mcr p15, 0, r0, c7, c5, 6        /* BPIALL */
    mcr p15, 0, r0, c8, c7, 0        /* TLBIALL */
    dsb
    isb
.endm

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
    /* Whatever mode and mask the bootloader left: secure SVC, IRQ and FIQ masked. */
    msr cpsr_c, #(MODE_SVC | PSR_IF)
    /* Our vectors first, so that the L2 probe below (an abort where no PL310 answers) and any
     * fault land here. The bootloader's map, if any, is the identity (U-Boot, FSBL). */
    ldr r0, =_vectors
    mcr p15, 0, r0, c12, c0, 0       /* VBAR (B4.1.156) */
    isb

    /* Only CPU0 runs the firmware (MPIDR.Aff0, DDI 0388 §4.3.5). A bootloader may have released
     * CPU1 into this image too: it leaves its caches off and coherency, then waits in WFE. */
    mrc p15, 0, r0, c0, c0, 5
    ands r0, r0, #3
    bne _park_secondary

    caches_off

    /* A PL310 left on may hold dirty lines of memory about to be written non-cacheably: probe
     * it (reg0_cache_id; r1 = 1 when the read aborted), then fw_l2_off (fw_cache.c) cleans,
     * invalidates and disables it. fw_l2_off keeps to r0-r3 and needs no stack (its test checks
     * the code); fw_board_init programs and re-enables the L2 once C memory is set. */
    ldr r0, =L2_BASE
    bl  fw_probe_read32
    cmp r1, #0
    movne r0, #0
    bl  fw_l2_off
    /* One stack per mode used: UND/ABT for fault reports, IRQ for the UART's receive interrupt
     * (fw_irq.c), FIQ for stray ones. */
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

    /* SCU, L2, translation table, then MMU and caches on (fw_mmu.c). */
    bl  fw_board_init
    bl  main
_park:
    wfe
    b   _park

_park_secondary:
    caches_off
    mrc p15, 0, r0, c1, c0, 1        /* ACTLR: out of SMP coherency (Cortex-A9 TRM §4.3.10) */
    bic r0, r0, #ACTLR_SMP
    mcr p15, 0, r0, c1, c0, 1
    isb
    b   _park

/*
 * void fw_l1d_invalidate(void): invalidate the whole L1 data cache (DCISW), for fw_board_init
 * right before it sets SCTLR.C. AAPCS: r4-r6 saved.
 */
    .global fw_l1d_invalidate
    .type fw_l1d_invalidate, %function
fw_l1d_invalidate:
    push {r4-r6, lr}
    dcache_l1_by_set_way 0
    pop {r4-r6, pc}
    .size fw_l1d_invalidate, . - fw_l1d_invalidate

/*
 * uint64_t fw_probe_read32(uintptr_t addr): low word = the 32-bit value at addr, high word = 1 if
 * the read aborted (nothing answers there), else 0. Used before any stack exists, so it touches
 * r0-r2 and lr only; _dabort_handler recognises fw_probe_load and resumes after it.
 */
    .global fw_probe_read32
    .type fw_probe_read32, %function
fw_probe_read32:
    mov r2, r0
    mov r1, #0
fw_probe_load:
    ldr r0, [r2]
    bx  lr
    .size fw_probe_read32, . - fw_probe_read32

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
    /* The abort of the probing load is expected: return to the instruction after it with r0 = 0,
     * r1 = 1 (LR_abt = faulting instruction + 8, DDI 0406C B1.8.3 "Data Abort exception"; SUBS PC
     * restores CPSR from SPSR_abt). Registers only: the probe runs before the stacks exist. */
    sub r1, lr, #8
    ldr r0, =fw_probe_load
    cmp r0, r1
    moveq r0, #0
    moveq r1, #1
    subseq pc, lr, #4
    mov r0, #4
    b   fw_fault
/*
 * IRQ (DDI 0406C B1.8.10): LR_irq = the interrupted instruction + 4. The core registers the AAPCS
 * lets a call change (r0-r3, r12, lr) and the VFP/NEON ones (d0-d7, d16-d31, FPSCR: the
 * interrupted code may be in the middle of a NEON kernel) are saved on the IRQ stack (8-byte
 * aligned throughout, AAPCS §5.2.1.2), fw_irq runs, and SUBS PC / MOVS PC restores CPSR from
 * SPSR_irq (B1.8.3). IRQs stay masked inside: handlers do not nest.
 */
_irq_handler:
    sub lr, lr, #4
    push {r0-r3, r12, lr}
    vmrs r0, fpscr
    push {r0, r1}
    vpush {d0-d7}
    vpush {d16-d31}
    bl  fw_irq
    vpop {d16-d31}
    vpop {d0-d7}
    pop {r0, r1}
    vmsr fpscr, r0
    pop {r0-r3, r12, lr}
    movs pc, lr
_fiq_handler:
    mov r0, #6
    sub r1, lr, #4
    b   fw_fault
