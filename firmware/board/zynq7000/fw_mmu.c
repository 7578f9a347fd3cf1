/*
 * MMU, caches and the snoop control unit for the one core that runs the firmware, called from
 * startup.S once the bootloader's caches are clean and off and C memory is set up.
 *
 * The translation table maps the 4 GiB identity in 1 MiB sections (ARM ARM DDI 0406C B3.5.1
 * "Short-descriptor translation table format"), by the Zynq-7000 address map (UG585 Table 4-1
 * "System-Level Address Map"). With DDR Normal memory the Cortex-A9 allows unaligned accesses
 * there (DDI 0406C A3.5.6 "Unaligned data access restrictions": only Device and Strongly-ordered
 * memory fault).
 */
#include <stdint.h>

#include "fw_config.h"
#include "fw_rt.h"
#include "fw_uart.h"
#include "zynq7000.h"

/* Section descriptor fields, DDI 0406C B3.5.1 (Figure B3-4) and B3.8.2 "Short-descriptor format
 * memory region attributes, without TEX remap" (Table B3-10). */
#define SECT 0x2u              /* [1:0] = 0b10: 1 MiB section */
#define SECT_B (1u << 2)       /* bufferable */
#define SECT_C (1u << 3)       /* cacheable */
#define SECT_XN (1u << 4)      /* execute-never */
#define SECT_DOMAIN0 (0u << 5) /* [8:5] domain 0, a client domain in DACR */
#define SECT_AP_RW (3u << 10)  /* AP[2:0] = 0b011: read/write at PL1 and PL0 (Table B3-8) */
#define SECT_TEX(n) ((uint32_t)(n) << 12)
#define SECT_S (1u << 16) /* shareable */
/* Normal, inner and outer write-back write-allocate: TEX = 0b001, C = 1, B = 1 (Table B3-10).
 * Shareable, and ACTLR.SMP set: the Cortex-A9 treats Shareable Normal memory as non-cacheable
 * while SMP is clear (Cortex-A9 TRM DDI 0388 §4.3.10, ACTLR bit 6). */
#define SECT_NORMAL_WBWA (SECT | SECT_TEX(1) | SECT_C | SECT_B | SECT_S | SECT_AP_RW | SECT_DOMAIN0)
/* Shareable Device (TEX = 0b000, C = 0, B = 1): no speculative reads, no merging; never code. */
#define SECT_DEVICE (SECT | SECT_B | SECT_XN | SECT_AP_RW | SECT_DOMAIN0)
/* Invalid entry: an access faults instead of reaching a hole of the address map. */
#define SECT_FAULT 0u

/* TTBR0 walk attributes (DDI 0406C B4.1.154 with the Multiprocessing Extensions): IRGN = 0b01
 * inner write-back write-allocate (IRGN[0] is bit 6), S (bit 1), RGN = 0b01 outer WB-WA. */
#define TTBR_WALK ((1u << 6) | (1u << 1) | (1u << 3))

/* SCTLR (DDI 0406C B4.1.130) and ACTLR (Cortex-A9 TRM §4.3.10) bits. */
#define SCTLR_M (1u << 0)
#define SCTLR_A (1u << 1)
#define SCTLR_C (1u << 2)
#define SCTLR_Z (1u << 11)
#define SCTLR_I (1u << 12)
#define ACTLR_FW (1u << 0) /* broadcast cache and TLB maintenance (inner shareable) */
#define ACTLR_SMP (1u << 6)

#define MIB_SECTIONS 4096u

/* 16 KiB, 16 KiB-aligned with TTBCR.N = 0 (B4.1.154); link.ld places .mmu_table and asserts it. */
static uint32_t mmu_table[MIB_SECTIONS] __attribute__((section(".mmu_table"), aligned(16384)));

/* What fw_board_report returns: the PL310 probe's outcome. */
static uint32_t l2_id;

static uint32_t section_attrs(uint32_t mib)
{
    /* UG585 Table 4-1: DDR 0x0000_0000-0x3FFF_FFFF (the low OCM shadow included); PL AXI
     * 0x4000_0000-0xBFFF_FFFF; reserved 0xC000_0000-0xDFFF_FFFF; IOP, SMC, SLCR, PS and CPU
     * private registers, Quad-SPI 0xE000_0000-0xFFEF_FFFF; OCM high at 0xFFFC_0000 in the top
     * MiB. */
    if (mib < 0x400u) {
        return SECT_NORMAL_WBWA;
    }
    if (mib < 0xC00u) {
        return SECT_DEVICE;
    }
    if (mib < 0xE00u) {
        return SECT_FAULT;
    }
    if (mib < 0xFFFu) {
        return SECT_DEVICE;
    }
    return SECT_NORMAL_WBWA;
}

static void scu_enable(void)
{
    /* Cortex-A9 MPCore TRM (DDI 0407) §2.2.1: invalidate the SCU tag RAMs of CPU0 (four ways,
     * bits [3:0] of "SCU Invalidate All Registers in Secure State"), then set the SCU enable bit;
     * the SCU must be on for SMP coherency (ACTLR.SMP) to do anything. */
    SCU(SCU_INVALIDATE_ALL) = 0xFu;
    SCU(SCU_CONTROL) |= SCU_CONTROL_ENABLE;
    uint32_t actlr;
    __asm__ volatile("mrc p15, 0, %0, c1, c0, 1" : "=r"(actlr));
    actlr |= ACTLR_SMP | ACTLR_FW;
    __asm__ volatile("mcr p15, 0, %0, c1, c0, 1\n\tisb" ::"r"(actlr) : "memory");
}

static void l2_enable(void)
{
    /* Where nothing answers, the read either aborts (startup.S's data-abort handler resumes
     * after the load and flags it) or returns something that is not a PL310 ID: QEMU 7.2's
     * xilinx-zynq-a9 maps nothing at 0xF8F02000, logs an invalid read and returns 0. */
    uint64_t probe = fw_probe_read32(ZYNQ_L2_BASE + L2_CACHE_ID);
    uint32_t id = (uint32_t)probe;
    if ((uint32_t)(probe >> 32) != 0u || (id & L2_ID_MASK) != L2_ID_PL310) {
        return;
    }
    l2_id = id;
    /* UG585 §3.4 "L2 Cache" and Appendix B slcr L2C_RAM: 0x0002_0202 before the L2 is enabled. */
    SLCR(SLCR_UNLOCK) = SLCR_UNLOCK_KEY;
    SLCR(SLCR_L2C_RAM) = SLCR_L2C_RAM_VALUE;
    SLCR(SLCR_LOCK) = SLCR_LOCK_KEY;
    /* Disabled by startup.S already; program it as UG585 recommends for the Zynq-7000 (Appendix
     * B L2Cpl310 reg1_aux_control, reg1_tag_ram_control, reg1_data_ram_control). */
    L2(L2_AUX_CONTROL) |= L2_AUX_ZYNQ;
    L2(L2_TAG_RAM_CONTROL) = L2_TAG_RAM_LATENCY;
    L2(L2_DATA_RAM_CONTROL) = L2_DATA_RAM_LATENCY;
    /* Invalidate all ways (ARM DDI 0246 §3.3.10), wait, clear interrupts, enable. */
    L2(L2_INV_WAY) = L2_ALL_WAYS;
    while (L2(L2_INV_WAY) & L2_ALL_WAYS) {
    }
    L2(L2_CACHE_SYNC) = 0u;
    L2(L2_INT_CLEAR) = L2_INT_ALL;
    L2(L2_CONTROL) = 1u;
    __asm__ volatile("dsb" ::: "memory");
}

void fw_board_init(void)
{
    scu_enable();
    l2_enable();
    for (uint32_t mib = 0; mib < MIB_SECTIONS; mib++) {
        mmu_table[mib] = (mib << 20) | section_attrs(mib);
    }
    /* TTBCR = 0: TTBR0 translates all 4 GiB, short descriptors (B4.1.153). DACR: domain 0 client,
     * so AP and XN are checked (B4.1.43). TLB and branch predictor hold nothing of the bootloader
     * after startup.S, but the table was written since: invalidate again (B3.10.1). */
    uint32_t ttbr = (uint32_t)(uintptr_t)mmu_table | TTBR_WALK;
    __asm__ volatile("dsb\n\t"
                     "mcr p15, 0, %0, c2, c0, 2\n\t" /* TTBCR */
                     "mcr p15, 0, %1, c2, c0, 0\n\t" /* TTBR0 */
                     "mcr p15, 0, %2, c3, c0, 0\n\t" /* DACR */
                     "mcr p15, 0, %0, c8, c7, 0\n\t" /* TLBIALL */
                     "mcr p15, 0, %0, c7, c5, 6\n\t" /* BPIALL */
                     "mcr p15, 0, %0, c7, c5, 0\n\t" /* ICIALLU */
                     "dsb\n\t"
                     "isb" ::"r"(0u),
                     "r"(ttbr), "r"(1u)
                     : "memory");
    uint32_t sctlr;
    __asm__ volatile("mrc p15, 0, %0, c1, c0, 0" : "=r"(sctlr));
    sctlr |= SCTLR_M | SCTLR_C | SCTLR_I | SCTLR_Z;
    sctlr &= ~SCTLR_A; /* unaligned accesses to Normal memory allowed (A3.5.6) */
    __asm__ volatile("mcr p15, 0, %0, c1, c0, 0\n\tisb" ::"r"(sctlr) : "memory");
}

void fw_board_report(fw_board_report_t *r)
{
    __asm__ volatile("mrc p15, 0, %0, c1, c0, 0" : "=r"(r->sctlr));
    __asm__ volatile("mrc p15, 0, %0, c1, c0, 1" : "=r"(r->actlr));
    r->l2_id = l2_id;
    r->l2_ctrl = l2_id != 0u ? L2(L2_CONTROL) : 0u;
    r->l2_aux = l2_id != 0u ? L2(L2_AUX_CONTROL) : 0u;
    r->uart_cd = (uint16_t)ZYNQ_REG32(FW_UART_BASE + XUART_BAUDGEN);
    r->uart_bdiv = (uint16_t)ZYNQ_REG32(FW_UART_BASE + XUART_BAUDDIV);
    r->uart_rx_overruns = fw_uart_rx_overruns();
    fw_uart_link_t link;
    fw_uart_link_report(&link);
    r->baud = link.baud;
    r->rx_ring = link.rx_ring;
    r->ring_overruns = link.ring_overruns;
    r->rate_reverts = link.rate_reverts;
}
