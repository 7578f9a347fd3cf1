/*
 * Register access for the cache and coherency sequences (fw_cache.c): memory-mapped registers and
 * the CP15 auxiliary control register.
 *
 * On the device these are single volatile loads and stores and one MRC/MCR each (ARM DDI 0406C
 * B4.1.130 and the Cortex-A9 TRM DDI 0388 §4.3.10 for ACTLR). A host build of fw_cache.c defines
 * FW_REG_STUB and links a register file that records every access
 * (tests/firmware/test_cache_sequence.py): the order and values of the writes are checked there
 * against the PL310 TRM (ARM DDI 0246) and UG585, without a board.
 */
#ifndef FW_REG_H
#define FW_REG_H

#include <stdint.h>

#ifdef FW_REG_STUB

uint32_t fw_reg_read(uint32_t addr);
void fw_reg_write(uint32_t addr, uint32_t value);
uint32_t fw_actlr_read(void);
void fw_actlr_write(uint32_t value);
void fw_dsb(void);

#else

static inline uint32_t fw_reg_read(uint32_t addr)
{
    return *(volatile uint32_t *)(uintptr_t)addr;
}

static inline void fw_reg_write(uint32_t addr, uint32_t value)
{
    *(volatile uint32_t *)(uintptr_t)addr = value;
}

static inline uint32_t fw_actlr_read(void)
{
    uint32_t v;
    __asm__ volatile("mrc p15, 0, %0, c1, c0, 1" : "=r"(v));
    return v;
}

static inline void fw_actlr_write(uint32_t value)
{
    /* An ISB after a CP15 write that changes the core's behaviour (DDI 0406C B3.15.5). */
    __asm__ volatile("mcr p15, 0, %0, c1, c0, 1\n\tisb" ::"r"(value) : "memory");
}

static inline void fw_dsb(void)
{
    __asm__ volatile("dsb" ::: "memory");
}

#endif /* FW_REG_STUB */

#endif /* FW_REG_H */
