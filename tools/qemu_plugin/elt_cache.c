/*
 * elt_cache: a QEMU TCG plugin that runs every instruction fetch and every data access of the
 * guest through a model of the Zynq-7000's caches, and counts instructions and misses per guest
 * instruction address (measure/bench_memory.py reads the counts and names the functions).
 *
 * Geometry (defaults; the arguments below change them for tests):
 * - L1 instruction and L1 data cache: 32 KiB each, 4-way set associative, 32-byte lines (ARM DDI
 *   0388 Cortex-A9 TRM, §7.1 "About the L1 memory system"; Xilinx UG585 §3.1.1: 32 KB each).
 * - L2: PL310 (L2C-310), 512 KiB unified, 8-way, 32-byte lines (ARM DDI 0246 L2C-310 TRM §1.1
 *   "fixed line length of 32 bytes"; UG585 §3.4 "512 KB ... 8-way set-associative").
 * Policies: write-back with write-allocate at both levels (firmware/board/zynq7000/fw_mmu.c
 * maps DDR Normal write-back write-allocate); replacement pseudo-random at both levels, as the
 * firmware leaves them (SCTLR.RR = 0, ARM DDI 0388 §4.3.9; L2C-310 Auxiliary Control bit 25 = 0,
 * ARM DDI 0246 §3.3.4), from a fixed-seed xorshift32 so two runs of the same guest count the same.
 * The L2 is not inclusive (neither level evicts the other's lines), and an L1 dirty eviction is a
 * write into the L2. Only cacheable addresses enter the model: DDR (0x0000_0000-0x3FFF_FFFF) and
 * the top MiB (OCM), the Normal memory of fw_mmu.c; the Device regions (UART, timer, GIC) do not.
 *
 * Written against QEMU 7.2's include/qemu/qemu-plugin.h (plugin API version 1), taken by
 * tools/build_qemu_plugin.sh from Debian's qemu source package; QEMU's own contrib/plugins/cache.c
 * models caches the same way (a set-associative tag array per level, probed from the instruction
 * and memory callbacks) but without per-address counts, an L2 writeback or marks.
 *
 * Arguments (QEMU `-plugin libelt_cache.so,ARG=VALUE,...`):
 *   out=PATH         where the counts go at exit (required)
 *   mark=0xADDR      up to 8 instruction addresses; each execution of one appends a snapshot of
 *                    the running totals (the bench cuts its windows with them)
 *   l1size, l1ways, l2size, l2ways, line: the geometry in bytes and ways
 *
 * The vCPU is one (xilinx-zynq-a9 runs the firmware on CPU 0 alone), so the callbacks need no
 * locks.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_MARKS 8
#define NO_TAG UINT64_MAX

typedef struct {
    uint32_t sets, ways, line_shift;
    uint64_t *tags; /* [sets][ways], NO_TAG when invalid */
    uint8_t *dirty; /* [sets][ways] */
    uint32_t rng;   /* xorshift32 state: the pseudo-random victim */
} cache_t;

/* Counter slots, per instruction address and in total. */
enum {
    C_INSNS,       /* instructions executed */
    C_L1I_MISS,    /* instruction fetches that missed L1I */
    C_L1D_RD,      /* cacheable data reads (one per memory operation QEMU performs) */
    C_L1D_WR,      /* cacheable data writes */
    C_L1D_RD_MISS, /* reads that missed L1D */
    C_L1D_WR_MISS, /* writes that missed L1D */
    C_L1D_WB,      /* dirty L1D lines written back to L2 */
    C_L2_MISS_I,   /* L1I misses that missed L2 too */
    C_L2_MISS_D,   /* L1D misses that missed L2 too */
    C_L2_WB,       /* dirty L2 lines written back to DDR */
    C_COUNT
};
static const char *const counter_names[C_COUNT] = {
    "insns",       "l1i_miss",    "l1d_rd",      "l1d_wr",      "l1d_rd_miss",
    "l1d_wr_miss", "l1d_wb",      "l2_miss_i",   "l2_miss_d",   "l2_wb"};

typedef struct {
    uint64_t vaddr;
    uint64_t n[C_COUNT];
    int mark; /* index into marks, -1 if none */
} insn_t;

/* Open-addressing map vaddr -> insn_t, so a re-translated block keeps its instructions' counts. */
static insn_t **table;
static size_t table_cap, table_len;

static cache_t l1i, l1d, l2;
static uint64_t total[C_COUNT];
static uint64_t last_fetch_line = NO_TAG;
static uint64_t marks[MAX_MARKS];
static int n_marks;
static uint64_t (*snaps)[C_COUNT + 1]; /* [mark index, totals...] */
static size_t n_snaps, cap_snaps;
static char *out_path;

static int cache_init(cache_t *c, uint64_t size, uint32_t ways, uint32_t line)
{
    uint32_t shift = 0;
    while ((1u << shift) < line) {
        ++shift;
    }
    if ((1u << shift) != line || ways == 0 || size % ((uint64_t)ways * line) != 0) {
        return -1;
    }
    c->sets = (uint32_t)(size / ((uint64_t)ways * line));
    c->ways = ways;
    c->line_shift = shift;
    c->tags = malloc(sizeof(uint64_t) * c->sets * ways);
    c->dirty = calloc((size_t)c->sets * ways, 1);
    if (c->tags == NULL || c->dirty == NULL) {
        return -1;
    }
    for (size_t k = 0; k < (size_t)c->sets * ways; ++k) {
        c->tags[k] = NO_TAG;
    }
    c->rng = 0x2545F491u;
    return 0;
}

static uint32_t xorshift32(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *s = x;
    return x;
}

/* Look line `ln` (address >> line_shift) up; on a miss fill it, a write marks it dirty. Returns
 * 1 on a hit; on a miss that evicts a dirty line, *victim is that line (else NO_TAG). */
static int cache_access(cache_t *c, uint64_t ln, int write, uint64_t *victim)
{
    const uint32_t set = (uint32_t)(ln % c->sets);
    uint64_t *tags = c->tags + (size_t)set * c->ways;
    uint8_t *dirty = c->dirty + (size_t)set * c->ways;
    uint32_t w;
    *victim = NO_TAG;
    for (w = 0; w < c->ways; ++w) {
        if (tags[w] == ln) {
            dirty[w] |= (uint8_t)write;
            return 1;
        }
    }
    for (w = 0; w < c->ways && tags[w] != NO_TAG; ++w) {
    }
    if (w == c->ways) {
        w = xorshift32(&c->rng) % c->ways;
        if (dirty[w]) {
            *victim = tags[w];
        }
    }
    tags[w] = ln;
    dirty[w] = (uint8_t)write;
    return 0;
}

/* An L2 access for line `ln` (same line size at both levels); counts its miss and writeback. */
static int l2_access(uint64_t ln, int write, insn_t *in)
{
    uint64_t victim;
    const int hit = cache_access(&l2, ln, write, &victim);
    if (victim != NO_TAG) {
        ++total[C_L2_WB];
        ++in->n[C_L2_WB];
    }
    return hit;
}

static insn_t *insn_get(uint64_t vaddr)
{
    if (2 * (table_len + 1) > table_cap) {
        size_t cap = table_cap ? 2 * table_cap : 1u << 14;
        insn_t **t = calloc(cap, sizeof(*t));
        if (t == NULL) {
            abort();
        }
        for (size_t k = 0; k < table_cap; ++k) {
            if (table[k] != NULL) {
                size_t h = (size_t)(table[k]->vaddr >> 1) & (cap - 1);
                while (t[h] != NULL) {
                    h = (h + 1) & (cap - 1);
                }
                t[h] = table[k];
            }
        }
        free(table);
        table = t;
        table_cap = cap;
    }
    size_t h = (size_t)(vaddr >> 1) & (table_cap - 1);
    while (table[h] != NULL) {
        if (table[h]->vaddr == vaddr) {
            return table[h];
        }
        h = (h + 1) & (table_cap - 1);
    }
    insn_t *in = calloc(1, sizeof(*in));
    if (in == NULL) {
        abort();
    }
    in->vaddr = vaddr;
    in->mark = -1;
    for (int m = 0; m < n_marks; ++m) {
        if (marks[m] == vaddr) {
            in->mark = m;
        }
    }
    table[h] = in;
    ++table_len;
    return in;
}

static void snapshot(int mark)
{
    if (n_snaps == cap_snaps) {
        cap_snaps = cap_snaps ? 2 * cap_snaps : 1024;
        snaps = realloc(snaps, cap_snaps * sizeof(*snaps));
        if (snaps == NULL) {
            abort();
        }
    }
    snaps[n_snaps][0] = (uint64_t)mark;
    memcpy(&snaps[n_snaps][1], total, sizeof(total));
    ++n_snaps;
}

static void on_exec(unsigned int vcpu, void *udata)
{
    insn_t *in = udata;
    (void)vcpu;
    if (in->mark >= 0) {
        snapshot(in->mark); /* before this instruction counts */
    }
    ++total[C_INSNS];
    ++in->n[C_INSNS];
    const uint64_t ln = in->vaddr >> l1i.line_shift;
    if (ln == last_fetch_line) {
        return; /* the line fetched last: a hit, and nothing in between could evict it */
    }
    last_fetch_line = ln;
    uint64_t victim;
    if (!cache_access(&l1i, ln, 0, &victim)) {
        ++total[C_L1I_MISS];
        ++in->n[C_L1I_MISS];
        if (!l2_access(ln, 0, in)) {
            ++total[C_L2_MISS_I];
            ++in->n[C_L2_MISS_I];
        }
    }
}

static int cacheable(uint64_t a)
{
    return a < 0x40000000u || (a >= 0xFFF00000u && a <= 0xFFFFFFFFu);
}

static void data_line(insn_t *in, uint64_t ln, int write)
{
    uint64_t victim;
    ++total[write ? C_L1D_WR : C_L1D_RD];
    ++in->n[write ? C_L1D_WR : C_L1D_RD];
    if (cache_access(&l1d, ln, write, &victim)) {
        return;
    }
    ++total[write ? C_L1D_WR_MISS : C_L1D_RD_MISS];
    ++in->n[write ? C_L1D_WR_MISS : C_L1D_RD_MISS];
    if (victim != NO_TAG) {
        ++total[C_L1D_WB];
        ++in->n[C_L1D_WB];
        (void)l2_access(victim, 1, in);
    }
    if (!l2_access(ln, 0, in)) {
        ++total[C_L2_MISS_D];
        ++in->n[C_L2_MISS_D];
    }
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
    (void)vcpu;
    if (!cacheable(vaddr)) {
        return;
    }
    const int write = qemu_plugin_mem_is_store(info) ? 1 : 0;
    const uint64_t size = 1u << qemu_plugin_mem_size_shift(info);
    const uint64_t first = vaddr >> l1d.line_shift;
    const uint64_t last = (vaddr + size - 1) >> l1d.line_shift;
    data_line(udata, first, write);
    if (last != first) {
        data_line(udata, last, write); /* an unaligned access across two lines */
    }
}

static void on_tb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    const size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t k = 0; k < n; ++k) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, k);
        insn_t *in = insn_get(qemu_plugin_insn_vaddr(insn));
        qemu_plugin_register_vcpu_insn_exec_cb(insn, on_exec, QEMU_PLUGIN_CB_NO_REGS, in);
        qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                         in);
    }
}

static void write_counts(FILE *f, const uint64_t *n)
{
    for (int c = 0; c < C_COUNT; ++c) {
        fprintf(f, " %" PRIu64, n[c]);
    }
    fputc('\n', f);
}

static void on_exit_cb(qemu_plugin_id_t id, void *p)
{
    (void)id;
    (void)p;
    FILE *f = fopen(out_path, "w");
    if (f == NULL) {
        return;
    }
    fprintf(f, "elt_cache 1\n");
    fprintf(f, "geometry l1i %u %u %u l1d %u %u %u l2 %u %u %u\n", l1i.sets, l1i.ways,
            1u << l1i.line_shift, l1d.sets, l1d.ways, 1u << l1d.line_shift, l2.sets, l2.ways,
            1u << l2.line_shift);
    fprintf(f, "counters");
    for (int c = 0; c < C_COUNT; ++c) {
        fprintf(f, " %s", counter_names[c]);
    }
    fprintf(f, "\ntotal");
    write_counts(f, total);
    for (size_t k = 0; k < table_cap; ++k) {
        const insn_t *in = table[k];
        if (in != NULL && in->n[C_INSNS] != 0) {
            fprintf(f, "pc 0x%08" PRIx64, in->vaddr);
            write_counts(f, in->n);
        }
    }
    for (size_t s = 0; s < n_snaps; ++s) {
        fprintf(f, "mark 0x%08" PRIx64, marks[snaps[s][0]]);
        write_counts(f, &snaps[s][1]);
    }
    fclose(f);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv)
{
    uint64_t l1size = 32768, l2size = 524288;
    uint32_t l1ways = 4, l2ways = 8, line = 32;
    (void)info;
    for (int k = 0; k < argc; ++k) {
        char *eq = strchr(argv[k], '=');
        if (eq == NULL) {
            fprintf(stderr, "elt_cache: argument without '=': %s\n", argv[k]);
            return -1;
        }
        *eq = '\0';
        const char *key = argv[k], *val = eq + 1;
        if (strcmp(key, "out") == 0) {
            out_path = strdup(val);
        } else if (strcmp(key, "mark") == 0 && n_marks < MAX_MARKS) {
            marks[n_marks++] = strtoull(val, NULL, 0);
        } else if (strcmp(key, "l1size") == 0) {
            l1size = strtoull(val, NULL, 0);
        } else if (strcmp(key, "l1ways") == 0) {
            l1ways = (uint32_t)strtoul(val, NULL, 0);
        } else if (strcmp(key, "l2size") == 0) {
            l2size = strtoull(val, NULL, 0);
        } else if (strcmp(key, "l2ways") == 0) {
            l2ways = (uint32_t)strtoul(val, NULL, 0);
        } else if (strcmp(key, "line") == 0) {
            line = (uint32_t)strtoul(val, NULL, 0);
        } else {
            fprintf(stderr, "elt_cache: unknown argument %s\n", key);
            return -1;
        }
    }
    if (out_path == NULL || cache_init(&l1i, l1size, l1ways, line) != 0 ||
        cache_init(&l1d, l1size, l1ways, line) != 0 || cache_init(&l2, l2size, l2ways, line) != 0) {
        fprintf(stderr, "elt_cache: needs out=PATH and a geometry of power-of-two lines\n");
        return -1;
    }
    l1d.rng = 0x9E3779B9u;
    l2.rng = 0x7F4A7C15u;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
    qemu_plugin_register_atexit_cb(id, on_exit_cb, NULL);
    return 0;
}
