/*
 * The register sequences of the outer cache and of coherency, each in the order its manual gives
 * (tests/firmware/test_cache_sequence.py records them against a register file and checks every
 * write):
 *
 * - fw_l2_off: a PL310 L2 left enabled by whatever ran before (a firmware entered again without
 *   a reset, a boot loader built with the L2 on) is cleaned, invalidated and disabled. Called by
 *   startup.S before any stack exists, so it is a leaf that keeps to r0-r3 (the test disassembles
 *   it and fails on any use of sp).
 * - fw_smp_on: the SCU's tag RAMs of CPU0 invalidated, the SCU enabled, then ACTLR.SMP and FW
 *   set: the Cortex-A9 treats Shareable Normal memory as non-cacheable while SMP is clear.
 * - fw_l2_on: the PL310 programmed as UG585 requires for the Zynq-7000 and enabled.
 *
 * Register offsets: ARM L2C-310 TRM (DDI 0246) §3.3 "Register descriptions"; the SCU's: Cortex-A9
 * MPCore TRM (DDI 0407) §2.2 "SCU registers"; addresses: UG585 Table 4-7 and Appendix B.
 */
#include <stdint.h>

#include "fw_reg.h"
#include "fw_rt.h"
#include "zynq7000.h"

#define L2R(off) (ZYNQ_L2_BASE + (off))
#define SCUR(off) (ZYNQ_SCU_BASE + (off))
#define SLCRR(off) (ZYNQ_SLCR_BASE + (off))

void fw_l2_off(uint32_t id);
uint32_t fw_l2_on(void);
void fw_smp_on(void);

static int is_pl310(uint32_t id)
{
    return (id & L2_ID_MASK) == L2_ID_PL310;
}

/* Wait until a background maintenance operation by way has cleared its way bits (DDI 0246 §3.3.10
 * "Cache maintenance operations": by-way operations run in the background, each way bit reads 1
 * until that way is done). */
static void l2_wait_ways(uint32_t reg)
{
    while ((fw_reg_read(L2R(reg)) & L2_ALL_WAYS) != 0u) {
    }
}

/* Cache Sync: drains the controller's buffers (DDI 0246 §3.3.10, reg7_cache_sync; bit 0 reads 1
 * until the sync is done). */
static void l2_sync(void)
{
    fw_reg_write(L2R(L2_CACHE_SYNC), 0u);
    while ((fw_reg_read(L2R(L2_CACHE_SYNC)) & 1u) != 0u) {
    }
}

void fw_l2_off(uint32_t id)
{
    /* `id`: reg0_cache_id as startup.S's probe read it, 0 when nothing answered. */
    if (!is_pl310(id) || (fw_reg_read(L2R(L2_CONTROL)) & 1u) == 0u) {
        return;
    }
    /* Clean and invalidate every way, then sync: dirty lines reach DDR before the controller is
     * switched off (DDI 0246 §3.3.1 reg1_control: disabling does not clean), then disable. */
    fw_reg_write(L2R(L2_CLEAN_INV_WAY), L2_ALL_WAYS);
    l2_wait_ways(L2_CLEAN_INV_WAY);
    l2_sync();
    fw_reg_write(L2R(L2_CONTROL), 0u);
    fw_dsb();
}

void fw_smp_on(void)
{
    /* DDI 0407 §2.2.4 "SCU Invalidate All Registers in Secure State": bits [3:0] are CPU0's four
     * tag RAM ways; then the SCU enable bit (§2.2.1 "SCU Control Register"), read-modify-write so
     * the other bits keep their reset or boot-loader values. */
    fw_reg_write(SCUR(SCU_INVALIDATE_ALL), SCU_INVALIDATE_CPU0);
    fw_reg_write(SCUR(SCU_CONTROL), fw_reg_read(SCUR(SCU_CONTROL)) | SCU_CONTROL_ENABLE);
    /* Cortex-A9 TRM (DDI 0388) §4.3.10: SMP (bit 6) before the caches and MMU are enabled, FW
     * (bit 0) to broadcast cache and TLB maintenance. */
    fw_actlr_write(fw_actlr_read() | ACTLR_SMP | ACTLR_FW);
}

uint32_t fw_l2_on(void)
{
    /* Where nothing answers, the read either aborts (startup.S's data-abort handler resumes after
     * the load and flags it) or returns something that is not a PL310 ID: QEMU 7.2's
     * xilinx-zynq-a9 maps nothing at 0xF8F02000, logs an invalid read and returns 0. */
    const uint64_t probe = fw_probe_read32(L2R(L2_CACHE_ID));
    const uint32_t id = (uint32_t)probe;
    if ((uint32_t)(probe >> 32) != 0u || !is_pl310(id)) {
        return 0u;
    }
    /* UG585 §3.4 "L2 Cache" and Appendix B slcr L2C_RAM: 0x0002_0202 before the L2 is used; the
     * SLCR is write-protected outside an unlock/lock pair (Appendix B SLCR_UNLOCK, SLCR_LOCK). */
    fw_reg_write(SLCRR(SLCR_UNLOCK), SLCR_UNLOCK_KEY);
    fw_reg_write(SLCRR(SLCR_L2C_RAM), SLCR_L2C_RAM_VALUE);
    fw_reg_write(SLCRR(SLCR_LOCK), SLCR_LOCK_KEY);
    /* Off already (fw_l2_off); the auxiliary and RAM latency registers may only be written while
     * it is (DDI 0246 §3.3, reg1_aux_control, reg1_tag_ram_control, reg1_data_ram_control). Way
     * size [19:17] replaced, the other bits kept (UG585 Appendix B L2Cpl310 reg1_aux_control). */
    fw_reg_write(L2R(L2_AUX_CONTROL),
                 (fw_reg_read(L2R(L2_AUX_CONTROL)) & ~L2_AUX_WAY_SIZE_MASK) | L2_AUX_ZYNQ);
    fw_reg_write(L2R(L2_TAG_RAM_CONTROL), L2_TAG_RAM_LATENCY);
    fw_reg_write(L2R(L2_DATA_RAM_CONTROL), L2_DATA_RAM_LATENCY);
    /* The tag RAMs hold random contents after reset: invalidate every way and wait, sync (DDI
     * 0246 §3.3.10 "Cache maintenance operations"), clear the interrupts the operation may have
     * raised (§3.3.8 reg2_int_clear), then enable (§3.3.1 reg1_control); the order of Xilinx's
     * standalone BSP, xil_cache.c Xil_L2CacheEnable. */
    fw_reg_write(L2R(L2_INV_WAY), L2_ALL_WAYS);
    l2_wait_ways(L2_INV_WAY);
    l2_sync();
    fw_reg_write(L2R(L2_INT_CLEAR), L2_INT_ALL);
    fw_reg_write(L2R(L2_CONTROL), 1u);
    fw_dsb();
    return id;
}
