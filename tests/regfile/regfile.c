/*
 * A register file for firmware/board/zynq7000/fw_cache.c built with FW_REG_STUB
 * (tests/firmware/test_cache_sequence.py): every access is printed, one a line, in order:
 *
 *   W <addr> <value>   a write        R <addr> <value>   a read and what it returned
 *   W ACTLR <value>    CP15 ACTLR     R ACTLR <value>
 *   P <addr> <value>   fw_probe_read32                    DSB
 *
 * Values follow the hardware where the sequences depend on them: the PL310's cache ID (r3p2,
 * UG585 Appendix B L2Cpl310 reg0_cache_id 0x410000C8), its auxiliary control's reset value
 * (0x02060000), the background way operations and Cache Sync, which read back busy for a few
 * reads (ARM DDI 0246 §3.3.10), and the slave error a write to the auxiliary or RAM latency
 * registers gets while the cache is enabled (§3.3: "writable only when the L2 is disabled"),
 * printed as "SLVERR <addr>".
 *
 *   regfile SCENARIO   boot | boot-absent | off-enabled | off-disabled | off-absent
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_reg.h"
#include "fw_rt.h"
#include "zynq7000.h"

void fw_l2_off(uint32_t id);
uint32_t fw_l2_on(void);
void fw_smp_on(void);

#define NREGS 64
#define BUSY_READS 2u /* a background operation reads busy this many times */

static struct {
    uint32_t addr;
    uint32_t value;
} regs[NREGS];
static unsigned nregs;
static uint32_t actlr;
static unsigned busy[3]; /* INV_WAY, CLEAN_INV_WAY, CACHE_SYNC: reads left that return busy */
static int l2_present = 1;

static uint32_t *slot(uint32_t addr)
{
    for (unsigned i = 0; i < nregs; i++) {
        if (regs[i].addr == addr) {
            return &regs[i].value;
        }
    }
    if (nregs == NREGS) {
        fprintf(stderr, "regfile: more than %d registers\n", NREGS);
        exit(2);
    }
    regs[nregs].addr = addr;
    regs[nregs].value = 0u;
    return &regs[nregs++].value;
}

static int busy_index(uint32_t addr)
{
    if (addr == ZYNQ_L2_BASE + L2_INV_WAY) {
        return 0;
    }
    if (addr == ZYNQ_L2_BASE + L2_CLEAN_INV_WAY) {
        return 1;
    }
    return addr == ZYNQ_L2_BASE + L2_CACHE_SYNC ? 2 : -1;
}

uint32_t fw_reg_read(uint32_t addr)
{
    uint32_t v = *slot(addr);
    const int b = busy_index(addr);
    if (b >= 0) {
        v = busy[b] > 0u ? (b == 2 ? 1u : L2_ALL_WAYS) : 0u;
        busy[b] -= busy[b] > 0u;
    }
    printf("R 0x%08X 0x%08X\n", addr, v);
    return v;
}

void fw_reg_write(uint32_t addr, uint32_t value)
{
    const uint32_t l2 = ZYNQ_L2_BASE;
    const int locked = addr == l2 + L2_AUX_CONTROL || addr == l2 + L2_TAG_RAM_CONTROL ||
                       addr == l2 + L2_DATA_RAM_CONTROL;
    if (locked && (*slot(l2 + L2_CONTROL) & 1u) != 0u) {
        printf("SLVERR 0x%08X\n", addr);
        return;
    }
    printf("W 0x%08X 0x%08X\n", addr, value);
    *slot(addr) = value;
    const int b = busy_index(addr);
    if (b >= 0) {
        busy[b] = BUSY_READS;
    }
}

uint32_t fw_actlr_read(void)
{
    printf("R ACTLR 0x%08X\n", actlr);
    return actlr;
}

void fw_actlr_write(uint32_t value)
{
    printf("W ACTLR 0x%08X\n", value);
    actlr = value;
}

void fw_dsb(void)
{
    printf("DSB\n");
}

uint64_t fw_probe_read32(uintptr_t addr)
{
    const uint32_t v = l2_present ? *slot((uint32_t)addr) : 0u;
    printf("P 0x%08X 0x%08X\n", (uint32_t)addr, v);
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: regfile boot|boot-absent|off-enabled|off-disabled|off-absent\n");
        return 2;
    }
    const char *s = argv[1];
    *slot(ZYNQ_L2_BASE + L2_CACHE_ID) = 0x410000C8u;
    *slot(ZYNQ_L2_BASE + L2_AUX_CONTROL) = 0x02060000u;
    l2_present = strcmp(s, "boot-absent") != 0;
    if (strcmp(s, "boot") == 0 || strcmp(s, "boot-absent") == 0) {
        fw_smp_on();
        printf("ID 0x%08X\n", fw_l2_on());
        return 0;
    }
    const int enabled = strcmp(s, "off-enabled") == 0;
    if (!enabled && strcmp(s, "off-disabled") != 0 && strcmp(s, "off-absent") != 0) {
        fprintf(stderr, "regfile: unknown scenario %s\n", s);
        return 2;
    }
    *slot(ZYNQ_L2_BASE + L2_CONTROL) = enabled ? 1u : 0u;
    fw_l2_off(strcmp(s, "off-absent") == 0 ? 0u : 0x410000C8u);
    return 0;
}
