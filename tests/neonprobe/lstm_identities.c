/*
 * Cortex-A9 probe (tests/codegen/intref/test_lstm_int.py, run under qemu-system-arm): the NEON
 * identities the LSTM kernels (codegen/emit/lstm_neon.py, firmware/elt_lstm_s16.c) rely on, each
 * checked against the scalar contract (fw_fixed.h, elt_sigmoid_q15) on edge and pseudo-random
 * values. Prints one line per identity, "<name> <checked> <mismatches>", then END.
 */
#include <arm_neon.h>
#include <stdint.h>

#include "elt_lstm_s16.h"
#include "fw_fixed.h"
#include "fw_uart.h"
#include "kws_model.h"
#include "fw_probe_print.h"

int main(void);

static uint32_t lcg_state = 12345u;

static uint32_t lcg(void)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state;
}

static void report(const char *name, uint32_t checked, uint32_t bad)
{
    while (*name) {
        fw_uart_putc((uint8_t)*name++);
    }
    fw_uart_putc(' ');
    put_u64(checked);
    put_u64(bad);
    fw_uart_putc('\n');
}

/* pre = VQMOVN(VRSHL(acc, -s)) == sat16(rshift_round(acc, s)), s = 1..20. "gate_shift" counts
 * the sums the proof admits (acc + 2^(s-1) <= INT32_MAX), "gate_shift_beyond" the others. */
static void check_gate_shift(void)
{
    static const int32_t edge[] = {INT32_MIN,
                                   INT32_MIN + 1,
                                   -1073741824,
                                   -65537,
                                   -65536,
                                   -32769,
                                   -32768,
                                   -2,
                                   -1,
                                   0,
                                   1,
                                   2,
                                   32767,
                                   32768,
                                   65535,
                                   1073741823,
                                   INT32_MAX - 1,
                                   INT32_MAX};
    uint32_t checked[2] = {0, 0}, bad[2] = {0, 0};
    int s;
    uint32_t k, e;
    for (s = 1; s <= 20; ++s) {
        const int32x4_t neg = vdupq_n_s32(-s);
        for (k = 0; k < 4096u + 4u * (uint32_t)(sizeof edge / sizeof edge[0]); ++k) {
            int32_t v[4];
            int16_t out[4];
            for (e = 0; e < 4u; ++e) {
                const uint32_t i = 4u * k + e;
                if (i < 4u * (sizeof edge / sizeof edge[0])) {
                    /* each edge value, and +/- half a step around it */
                    const int64_t base = edge[i / 4u];
                    const int64_t off = (int64_t)((int32_t)(i % 4u) - 1) << (s - 1);
                    const int64_t w = base + off;
                    v[e] = (int32_t)(w > INT32_MAX ? INT32_MAX : (w < INT32_MIN ? INT32_MIN : w));
                } else {
                    v[e] = (int32_t)lcg() >> (lcg() & 15u);
                }
            }
            vst1_s16(out, vqmovn_s32(vrshlq_s32(vld1q_s32(v), neg)));
            for (e = 0; e < 4u; ++e) {
                const int in_range = (int64_t)v[e] + ((int64_t)1 << (s - 1)) <= INT32_MAX;
                checked[!in_range]++;
                bad[!in_range] += out[e] != fx_sat16_64(fx_rshift_round64(v[e], s));
            }
        }
    }
    report("gate_shift", checked[0], bad[0]);
    report("gate_shift_beyond", checked[1], bad[1]);
}

/* The generated kernel's gate narrowing by immediate: VQRSHRN.S32 #s == sat16(rshift_round(acc,
 * s)) for s = 1..16, VRSHR.S32 #s then VQMOVN for s = 17..20, on edge values and their
 * neighbours and random sums within the proof's range (acc + 2^(s-1) <= INT32_MAX). */
#define NARROW_IMM(s)                                                                              \
    case s:                                                                                        \
        return (s) <= 16 ? vqrshrn_n_s32(v, (s) <= 16 ? (s) : 16)                                  \
                         : vqmovn_s32(vrshrq_n_s32(v, (s) <= 16 ? 17 : (s)));
static int16x4_t narrow_imm(int32x4_t v, int s)
{
    switch (s) {
        NARROW_IMM(1)
        NARROW_IMM(2)
        NARROW_IMM(3)
        NARROW_IMM(4)
        NARROW_IMM(5)
        NARROW_IMM(6)
        NARROW_IMM(7)
        NARROW_IMM(8)
        NARROW_IMM(9)
        NARROW_IMM(10)
        NARROW_IMM(11)
        NARROW_IMM(12)
        NARROW_IMM(13)
        NARROW_IMM(14)
        NARROW_IMM(15)
        NARROW_IMM(16)
        NARROW_IMM(17)
        NARROW_IMM(18)
        NARROW_IMM(19)
        NARROW_IMM(20)
    default:
        return vdup_n_s16(0);
    }
}

static void check_gate_narrow(void)
{
    uint32_t checked = 0, bad = 0;
    int s;
    uint32_t k, e;
    for (s = 1; s <= 20; ++s) {
        const int64_t top = (int64_t)INT32_MAX - ((int64_t)1 << (s - 1));
        for (k = 0; k < 4096u; ++k) {
            int32_t v[4];
            int16_t out[4];
            for (e = 0; e < 4u; ++e) {
                const uint32_t i = 4u * k + e;
                int64_t w;
                if (i < 64u) { /* the ends of the range and values around rounding ties */
                    const int64_t base = i < 16u ? INT32_MIN : (i < 32u ? top : 0);
                    w = base + (int64_t)(i % 16u) * ((int64_t)1 << (s - 1)) / 2 -
                        (i < 32u && i >= 16u ? (int64_t)(i % 16u) << (s - 1) : 0);
                } else {
                    w = (int32_t)lcg() >> (lcg() & 15u);
                }
                v[e] = (int32_t)(w > top ? top : w);
            }
            vst1_s16(out, narrow_imm(vld1q_s32(v), s));
            for (e = 0; e < 4u; ++e) {
                ++checked;
                bad += out[e] != fx_sat16_64(fx_rshift_round64(v[e], s));
            }
        }
    }
    report("gate_narrow", checked, bad);
}

/* Operand rounding VRSHL.S16 by -s == rshift_round(v, s) for every int16 v, s = 0..17. */
static void check_operand_shift(void)
{
    uint32_t checked = 0, bad = 0;
    int s;
    int32_t v;
    for (s = 0; s <= 17; ++s) {
        const int16x8_t neg = vdupq_n_s16((int16_t)-s);
        for (v = -32768; v < 32768; v += 8) {
            int16_t in[8], out[8];
            int e;
            for (e = 0; e < 8; ++e) {
                in[e] = (int16_t)(v + e);
            }
            vst1q_s16(out, vrshlq_s16(vld1q_s16(in), neg));
            for (e = 0; e < 8; ++e) {
                ++checked;
                bad += out[e] != (int16_t)fx_rshift_round64(in[e], s);
            }
        }
    }
    report("operand_shift", checked, bad);
}

/* σ interpolation: VQRDMULH(d, f << 8) == (d·f + 64) >> 7 for every int16 d (hi - lo lies in
 * [-32767, 32767]) and f in [0, 127]. */
static void check_interp(void)
{
    uint32_t checked = 0, bad = 0;
    int32_t d, f;
    for (f = 0; f < 128; ++f) {
        const int16x8_t m = vdupq_n_s16((int16_t)(f << 8));
        for (d = -32768; d < 32768; d += 8) {
            int16_t in[8], out[8];
            int e;
            for (e = 0; e < 8; ++e) {
                in[e] = (int16_t)(d + e);
            }
            vst1q_s16(out, vqrdmulhq_s16(vld1q_s16(in), m));
            for (e = 0; e < 8; ++e) {
                ++checked;
                bad += out[e] != (int16_t)(((int32_t)in[e] * f + 64) >> 7);
            }
        }
    }
    report("interp", checked, bad);
}

/* h = VQRDMULH(o, t) == sat16(rshift_round(o·t, 15)), o over int16, t edge and random. */
static void check_h_mul(void)
{
    static const int16_t edge[] = {INT16_MIN, INT16_MIN + 1, -32766, -16384,   -1, 0,
                                   1,         16384,         32766,  INT16_MAX};
    uint32_t checked = 0, bad = 0;
    uint32_t k;
    int32_t o;
    for (k = 0; k < 10u + 54u; ++k) {
        const int16_t t = k < 10u ? edge[k] : (int16_t)lcg();
        const int16x8_t tv = vdupq_n_s16(t);
        for (o = -32768; o < 32768; o += 8) {
            int16_t in[8], out[8];
            int e;
            for (e = 0; e < 8; ++e) {
                in[e] = (int16_t)(o + e);
            }
            vst1q_s16(out, vqrdmulhq_s16(vld1q_s16(in), tv));
            for (e = 0; e < 8; ++e) {
                ++checked;
                bad += out[e] != fx_sat16_64(fx_rshift_round64((int64_t)in[e] * t, 15));
            }
        }
    }
    report("h_mul", checked, bad);
}

/* c = VQRSHRN.S64 #15 == sat32(rshift_round(cc, 15)) for |cc| up to 2^48 (the cell sum is
 * below 2^47), edges around the int32 saturation points included. */
static void check_cell_narrow(void)
{
    static const int64_t edge[] = {-((int64_t)1 << 48),
                                   -((int64_t)INT32_MAX << 15) - 40000,
                                   (int64_t)INT32_MIN * 32768 - 1,
                                   (int64_t)INT32_MIN * 32768,
                                   -16385,
                                   -16384,
                                   -16383,
                                   -1,
                                   0,
                                   1,
                                   16383,
                                   16384,
                                   ((int64_t)INT32_MAX << 15) - 16385,
                                   ((int64_t)INT32_MAX << 15) + 16383,
                                   ((int64_t)INT32_MAX << 15) + 16384,
                                   (int64_t)1 << 48};
    uint32_t checked = 0, bad = 0;
    uint32_t k;
    for (k = 0; k < 20000u; ++k) {
        int64_t v[2];
        int32_t out[2];
        int e;
        for (e = 0; e < 2; ++e) {
            const uint32_t i = 2u * k + (uint32_t)e;
            if (i < sizeof edge / sizeof edge[0]) {
                v[e] = edge[i];
            } else {
                const uint64_t r = ((uint64_t)lcg() << 32) | lcg();
                v[e] = (int64_t)r >> (15u + (lcg() & 15u)); /* |v| < 2^48 */
            }
        }
        vst1_s32(out, vqrshrn_n_s64(vld1q_s64(v), 15));
        for (e = 0; e < 2; ++e) {
            ++checked;
            bad += out[e] != fx_sat32_64(fx_rshift_round64(v[e], 15));
        }
    }
    report("cell_narrow", checked, bad);
}

/* tanh(x) = 2σ(2x) - 1 as VEOR(VSHL(s, 1), 0x8000) == 2s - 32768 for s in [0, 32767]. */
static void check_tanh_tail(void)
{
    uint32_t checked = 0, bad = 0;
    int32_t s;
    for (s = 0; s < 32768; s += 8) {
        int16_t in[8], out[8];
        int e;
        for (e = 0; e < 8; ++e) {
            in[e] = (int16_t)(s + e);
        }
        vst1q_s16(out, veorq_s16(vshlq_n_s16(vld1q_s16(in), 1), vdupq_n_s16(INT16_MIN)));
        for (e = 0; e < 8; ++e) {
            ++checked;
            bad += out[e] != (int16_t)(2 * (int32_t)in[e] - 32768);
        }
    }
    report("tanh_tail", checked, bad);
}

/* The kernel's NEON σ (elt_lstm_s16_sigmoid, 8 lanes) == elt_sigmoid_q15 for every int16. */
static void check_sigmoid(void)
{
    static int16_t in[512], out[512];
    uint32_t checked = 0, bad = 0;
    int32_t v;
    for (v = -32768; v < 32768; v += 512) {
        uint32_t e;
        for (e = 0; e < 512u; ++e) {
            in[e] = (int16_t)(v + (int32_t)e);
        }
        elt_lstm_s16_sigmoid(&kws_layer_0_params, in, out, 512u);
        for (e = 0; e < 512u; ++e) {
            ++checked;
            bad += out[e] != elt_sigmoid_q15(kws_layer_0_params.sigmoid_lut,
                                             kws_layer_0_params.lut_shift, in[e]);
        }
    }
    report("sigmoid", checked, bad);
}

int main(void)
{
    fw_uart_init();
    check_gate_shift();
    check_gate_narrow();
    check_operand_shift();
    check_interp();
    check_h_mul();
    check_cell_narrow();
    check_tanh_tail();
    check_sigmoid();
    fw_uart_write((const uint8_t *)"END\n", 4u);
    fw_uart_flush();
    for (;;) {
    }
}
