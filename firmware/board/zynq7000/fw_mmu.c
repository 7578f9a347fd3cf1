/*
 * MMU, caches and coherency for the one core that runs the firmware, called from startup.S once
 * the boot loader's caches are clean and off and C memory is set up.
 *
 * The translation table maps the 4 GiB identity in 1 MiB sections (ARM ARM DDI 0406C B3.5.1
 * "Short-descriptor translation table format"), by the Zynq-7000 address map (UG585 Table 4-1
 * "System-Level Address Map") and the board's DDR (FW_DDR_BYTES, the preset's size,
 * codegen/target/boards.py): DDR beyond it faults instead of aliasing a smaller part, and only the
 * sections that hold the firmware's code are executable. With DDR Normal memory the Cortex-A9
 * allows unaligned accesses there (DDI 0406C A3.5.6 "Unaligned data access restrictions": only
 * Device and Strongly-ordered memory fault).
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
#define SECT_CODE (SECT | SECT_TEX(1) | SECT_C | SECT_B | SECT_S | SECT_AP_RW | SECT_DOMAIN0)
#define SECT_DATA (SECT_CODE | SECT_XN)
/* Shareable Device (TEX = 0b000, C = 0, B = 1): no speculative reads, no merging; never code. */
#define SECT_DEVICE (SECT | SECT_B | SECT_XN | SECT_AP_RW | SECT_DOMAIN0)
/* Invalid entry: an access faults instead of reaching a hole of the address map. */
#define SECT_FAULT 0u

/* TTBR0 walk attributes (DDI 0406C B4.1.154 with the Multiprocessing Extensions): IRGN = 0b01
 * inner write-back write-allocate (IRGN[0] is bit 6), S (bit 1), RGN = 0b01 outer WB-WA. */
#define TTBR_WALK ((1u << 6) | (1u << 1) | (1u << 3))

/* SCTLR (DDI 0406C B4.1.130) bits. */
#define SCTLR_M (1u << 0)
#define SCTLR_A (1u << 1)
#define SCTLR_C (1u << 2)
#define SCTLR_Z (1u << 11)
#define SCTLR_I (1u << 12)

#define MIB_SECTIONS 4096u
#define DDR_WINDOW_MIB 0x400u /* UG585 Table 4-1: DDR may occupy 0x0000_0000-0x3FFF_FFFF */
#define DDR_MIB (FW_DDR_BYTES >> 20)
_Static_assert(DDR_MIB >= 16u && DDR_MIB <= DDR_WINDOW_MIB,
               "FW_DDR_BYTES: the image window (link.ld, 16 MiB) up to the 1 GiB DDR window");

/* 16 KiB, 16 KiB-aligned with TTBCR.N = 0 (B4.1.154); link.ld places .mmu_table and asserts it. */
static uint32_t mmu_table[MIB_SECTIONS] __attribute__((section(".mmu_table"), aligned(16384)));

/* link.ld: the executable part of the image. */
extern const uint8_t __text_start[];
extern const uint8_t __text_end[];

/* startup.S: invalidate the whole L1 data cache by set/way (DCISW). */
void fw_l1d_invalidate(void);
/* fw_cache.c: SCU and ACTLR.SMP, then the PL310 (its cache ID, 0 when none answered). */
void fw_smp_on(void);
uint32_t fw_l2_on(void);

/* What fw_board_report returns: the PL310 probe's outcome. */
static uint32_t l2_id;

static uint32_t section_attrs(uint32_t mib)
{
    /* UG585 Table 4-1: DDR 0x0000_0000-0x3FFF_FFFF (the low OCM shadow included), of which the
     * board has FW_DDR_BYTES; PL AXI 0x4000_0000-0xBFFF_FFFF; reserved 0xC000_0000-0xDFFF_FFFF;
     * IOP, SMC, SLCR, PS and CPU private registers, Quad-SPI 0xE000_0000-0xFFEF_FFFF; OCM high at
     * 0xFFFC_0000 in the top MiB (data only: nothing runs from it). */
    const uint32_t code_lo = (uint32_t)(uintptr_t)__text_start >> 20;
    const uint32_t code_hi = ((uint32_t)(uintptr_t)__text_end - 1u) >> 20;
    if (mib < DDR_MIB) {
        return mib >= code_lo && mib <= code_hi ? SECT_CODE : SECT_DATA;
    }
    if (mib < DDR_WINDOW_MIB) {
        return SECT_FAULT;
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
    return SECT_DATA;
}

void fw_board_init(void)
{
    fw_smp_on();
    l2_id = fw_l2_on();
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
    /* The L1 data cache's contents are unknown until invalidated (DDI 0406C B2.2 "Behavior of
     * the caches at reset": an implementation may need software to invalidate them); startup.S did
     * it with the cache off, and nothing could allocate since. Again here, right before C is set,
     * so that no order of the start-up code can enable a cache holding stale lines. */
    fw_l1d_invalidate();
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
