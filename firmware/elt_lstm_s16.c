/*
 * Integer LSTM encoder (docs/numeric.md §4; Python twin: codegen/intref/lstm.py).
 *
 * Per step t and gate row r (torch order i, f, g, o):
 *   xs = rshift_round(x_t, x_opshift), hs = rshift_round(h, h_opshift)       int16 operands
 *   acc_r = bias_r + Σ_j W_ih[r,j] xs_j + Σ_j W_hh[r,j] hs_j        int32, A fraction bits
 *   pre_r = sat16(rshift_round(acc_r, s_r)), s_r = A - 11 (i, f, o), A - 12 (g: 2x)    Q4.11
 *   i, f, o = σ(pre),  g = 2σ(pre) - 1 = tanh(x)                                       Q0.15
 *   c = sat32(rshift_round(f·c + (i·g) << cell_ig_lshift, 15))           int32, c format
 *   h = sat16(rshift_round(o · tanh(c), 15)),  2c = sat16(rshift_round(c, cell_tanh_rshift))
 * The compiler proves |acc| + 2^(s_r - 1) <= 2^31 - 1 for every row and every int16 input, so
 * the int32 sum is exact in any order (every partial sum is within the bound too). No float.
 *
 * Two implementations of the same contract over the same packed arrays (elt_lstm_s16.h):
 * Cortex-A9 NEON, and plain scalar C (host builds, other targets, -DELT_SCALAR).
 */
#include "elt_lstm_s16.h"

#include "fw_fixed.h"

#if defined(__ARM_NEON) && !defined(__aarch64__) && !defined(ELT_SCALAR)
#define ELT_LSTM_NEON 1
#include <arm_neon.h>
#else
#define ELT_LSTM_NEON 0
#endif

static inline __attribute__((always_inline)) int16_t sigmoid_q15(const int16_t *lut,
                                                                 unsigned lut_shift, int16_t x)
{
    /* a = min(|x|, 32767): entry j = a >> s, interpolation weight = low s bits of a. */
    const int32_t a = x < 0 ? ((int32_t)x == -32768 ? 32767 : -(int32_t)x) : (int32_t)x;
    const uint32_t j = (uint32_t)a >> lut_shift;
    const int32_t frac = a & (int32_t)((1u << lut_shift) - 1u);
    const int32_t lo = lut[j];
    const int32_t hi = lut[j + 1u];
    /* Floor shift (ASR), as Python >>; the result lies between lo and hi. */
    const int32_t pos = lo + (((hi - lo) * frac + (1 << (lut_shift - 1))) >> lut_shift);
    /* σ(-x) = 1 - σ(x): an exact mirror in Q0.15. */
    return (int16_t)(x < 0 ? 32768 - pos : pos);
}

int16_t elt_sigmoid_q15(const int16_t *lut, uint8_t lut_shift, int16_t x)
{
    return sigmoid_q15(lut, lut_shift, x);
}

int16_t elt_tanh2_q15(const int16_t *lut, uint8_t lut_shift, int16_t x2)
{
    /* tanh(x) = 2σ(2x) - 1 (CMSIS-NN, docs/numeric.md §4): σ ∈ [1, 32767] -> [-32766, 32766]. */
    return (int16_t)(2 * (int32_t)sigmoid_q15(lut, lut_shift, x2) - 32768);
}

#if ELT_LSTM_NEON
_Static_assert(sizeof(void *) == sizeof(uint32_t), "the σ gather keeps addresses in uint32 lanes");

/*
 * Cortex-A9 NEON, integer only. QEMU -icount charges one unit per guest instruction whatever
 * it does (ten per global-timer tick; ticks are instructions, not cycles), so the kernel is
 * written for the fewest instructions per multiply-accumulate:
 *   gates: per block of 16 rows, four int32x4 accumulators (q4-q7) start at the bias, and every
 *     4 packed columns are one VLDMIA of 16 d-registers (64 weights) and 16 VMLAL.S16 by the
 *     lanes of one d-register of operands; then VRSHL/VQMOVN to the Q4.11 pre-activations.
 *     The VMLALs are the floor: R·K/4 per step, four multiply-accumulates each.
 *   cell: σ is a halfword gather from the exhaustive table (sigmoid_full, elt_lstm_s16.h): per
 *     8 values VSHLL/VADD form the 8 addresses, 4 VMOV move them to core registers in pairs,
 *     8 VLD1.16 load the lanes (16 instructions, against ~31 for the interpolated table).
 * T = 49, F = 10, H = 32 (bench/profile.py --mnemonics elt_lstm_s16_run): ~104,300 instructions
 * per sequence, 10,474 ticks; 65,856 of them VMLAL.S16, 15,680 the 7,840 σ gathers, ~5,500
 * VLDM, 3,920 narrowing (VRSHL + VQMOVN), 2,352 the int64 cell, the rest loads, stores and
 * control.
 */

/* xs = rshift_round(x, x_opshift) for all T frames: VRSHL by -x_opshift (0: identity). */
static void operands_x(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *xs)
{
    const uint32_t n = (uint32_t)p->num_frames * p->input_size;
    const int16x8_t neg = vdupq_n_s16((int16_t) - (int16_t)p->x_opshift);
    uint32_t k = 0;
    for (; k + 8u <= n; k += 8u) {
        vst1q_s16(xs + k, vrshlq_s16(vld1q_s16(x + k), neg));
    }
    for (; k < n; ++k) {
        xs[k] = (int16_t)fx_rshift_round32(x[k], p->x_opshift);
    }
}

/* clang-format off */
/* Four VMLAL.S16 of one column of a 16-row block (weights in d-registers r0..r3) by the
 * operand scalar s, into the accumulators q4-q7 (rows 0-3, 4-7, 8-11, 12-15). */
#define ELT_VMLAL_COL(r0, r1, r2, r3, s)                                                           \
    "vmlal.s16 q4, " r0 ", " s "\n\t"                                                              \
    "vmlal.s16 q5, " r1 ", " s "\n\t"                                                              \
    "vmlal.s16 q6, " r2 ", " s "\n\t"                                                              \
    "vmlal.s16 q7, " r3 ", " s "\n\t"

/* Four columns held in d16-d31 (one VLDMIA) by the four lanes of operand register s. */
#define ELT_VMLAL_GROUP(s)                                                                         \
    ELT_VMLAL_COL("d16", "d17", "d18", "d19", s "[0]")                                             \
    ELT_VMLAL_COL("d20", "d21", "d22", "d23", s "[1]")                                             \
    ELT_VMLAL_COL("d24", "d25", "d26", "d27", s "[2]")                                             \
    ELT_VMLAL_COL("d28", "d29", "d30", "d31", s "[3]")

/* The asm of gates() shared by its two forms. Per block of 16 rows: acc = bias; the hidden
 * columns, Hp / 32 chunks of 32 (operands d0-d7, one VLDM) and (Hp mod 32) / 8 steps of 8. */
#define ELT_GATES_HIDDEN                                                                           \
    "0:\n\t"                                                                                       \
    "vldmia    %[bias]!, {d8-d15}\n\t"                                                             \
    "mov       %[u], %[hs]\n\t"                                                                    \
    "movs      %[n], %[hp], lsr #5\n\t"                                                            \
    "beq       5f\n"                                                                               \
    "1:\n\t"                                                                                       \
    "vldmia    %[u]!, {d0-d7}\n\t"                                                                 \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d0")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d1")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d2")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d3")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d4")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d5")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d6")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d7")                                                                          \
    "subs      %[n], %[n], #1\n\t"                                                                 \
    "bne       1b\n"                                                                               \
    "5:\n\t"                                                                                       \
    "ands      %[n], %[hp], #24\n\t"                                                               \
    "beq       6f\n"                                                                               \
    "7:\n\t"                                                                                       \
    "vld1.16   {d0, d1}, [%[u]]!\n\t"                                                              \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d0")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d1")                                                                          \
    "subs      %[n], %[n], #8\n\t"                                                                 \
    "bne       7b\n"                                                                               \
    "6:\n\t"

/* pre = VQMOVN(VRSHL(acc, -s)) for the block's 16 rows, then the next block. */
#define ELT_GATES_NARROW                                                                           \
    "vldmia    %[ns]!, {d16-d23}\n\t"                                                              \
    "vrshl.s32 q4, q4, q8\n\t"                                                                     \
    "vrshl.s32 q5, q5, q9\n\t"                                                                     \
    "vrshl.s32 q6, q6, q10\n\t"                                                                    \
    "vrshl.s32 q7, q7, q11\n\t"                                                                    \
    "vqmovn.s32 d16, q4\n\t"                                                                       \
    "vqmovn.s32 d17, q5\n\t"                                                                       \
    "vqmovn.s32 d18, q6\n\t"                                                                       \
    "vqmovn.s32 d19, q7\n\t"                                                                       \
    "vst1.16   {d16-d19}, [%[pre]]!\n\t"                                                           \
    "subs      %[blocks], %[blocks], #1\n\t"                                                       \
    "bne       0b"

/* F <= 16: the input groups unrolled (operands d4-d7), entered by BX at %[e] (an offset from
 * label 8, made an address once per call). */
#define ELT_GATES_X_UNROLLED                                                                       \
    "adrl      %[n], 8f\n\t"                                                                       \
    "add       %[e], %[e], %[n]\n\t"                                                               \
    ELT_GATES_HIDDEN                                                                               \
    "vld1.16   {d4-d7}, [%[xo]]\n\t"                                                               \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    "bx        %[e]\n"                                                                             \
    "8:\n\t"                                                                                       \
    ELT_VMLAL_GROUP("d4")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d5")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d6")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d7")                                                                          \
    ELT_GATES_NARROW

/* Hp <= 32 and F <= 16: both operand groups unrolled and entered by BX, the hidden ones at
 * %[eh] (operands d0-d7 from %[ho], 32 - Hp values before hs), the input ones at %[ex]; no
 * loop runs inside a block. */
#define ELT_GATES_SMALL                                                                            \
    "adrl      %[n], 9f\n\t"                                                                       \
    "add       %[eh], %[eh], %[n]\n\t"                                                             \
    "adrl      %[n], 8f\n\t"                                                                       \
    "add       %[ex], %[ex], %[n]\n"                                                               \
    "0:\n\t"                                                                                       \
    "vldmia    %[bias]!, {d8-d15}\n\t"                                                             \
    "vldmia    %[ho], {d0-d7}\n\t"                                                                 \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    "bx        %[eh]\n"                                                                            \
    "9:\n\t"                                                                                       \
    ELT_VMLAL_GROUP("d0")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d1")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d2")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d3")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d4")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d5")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d6")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d7")                                                                          \
    "vld1.16   {d4-d7}, [%[xo]]\n\t"                                                               \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    "bx        %[ex]\n"                                                                            \
    "8:\n\t"                                                                                       \
    ELT_VMLAL_GROUP("d4")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d5")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d6")                                                                          \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d7")                                                                          \
    ELT_GATES_NARROW

/* F > 16: a loop over the %[g] input groups from %[xo]. */
#define ELT_GATES_X_LOOP                                                                           \
    ELT_GATES_HIDDEN                                                                               \
    "mov       %[u], %[xo]\n\t"                                                                    \
    "mov       %[n], %[g]\n"                                                                       \
    "2:\n\t"                                                                                       \
    "vld1.16   {d0}, [%[u]]!\n\t"                                                                  \
    "vldmia    %[w]!, {d16-d31}\n\t"                                                               \
    ELT_VMLAL_GROUP("d0")                                                                          \
    "subs      %[n], %[n], #1\n\t"                                                                 \
    "bne       2b\n\t"                                                                             \
    ELT_GATES_NARROW
/* clang-format on */

#define ELT_GATES_CLOBBER                                                                          \
    "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11",      \
        "d12", "d13", "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", \
        "d25", "d26", "d27", "d28", "d29", "d30", "d31"

/* pre[r] = sat16(rshift_round(acc_r, s_r)) for every gate row, acc = bias + W u,
 * u = [hs; pad; xs_t]: VRSHL by -s_r is the rounding right shift, VQMOVN the saturating narrow.
 * The int32 sum is exact in any order (the compiler's bound), so VMLAL's wrapping adds never
 * wrap. The input columns, g = (F + p) / 4 groups whose first p (= (-F) mod 4) are zero-weight
 * pad columns, read their operands from xo = xs_t - p - 4 (4 - g) on (into d4-d7 for g <= 4,
 * one VLD1): the pad lanes and the lanes before hold the previous frame (or the slack before
 * the first one) and meet zero weights or are skipped. F <= 16: the unrolled input groups are
 * entered (one BX, its target computed once per call) at group 4 - g, column p, so no pad
 * column costs a VMLAL and no loop runs; larger F: a loop over the g groups. Hp <= 32: the
 * hidden groups are entered the same way, their operands read from 32 - Hp values before hs
 * (the ELT_LSTM_HS_SLACK before it, meeting skipped groups only). */
static inline __attribute__((always_inline)) void
gates(const elt_lstm_s16_params_t *p, const int16_t *hs, const int16_t *xt, int16_t *pre)
{
    const int16_t *w = p->w;
    const int32_t *bias = p->bias;
    const int32_t *ns = p->neg_shift;
    const uint32_t hp = p->hidden_pad; /* a multiple of 8, >= 8 */
    const uint32_t F = p->input_size;
    const uint32_t pad = (uint32_t)p->cols - hp - F;
    const uint32_t g = (F + pad) / ELT_LSTM_COL_GROUP;
    uint32_t blocks = p->row_blocks; /* >= 2 */
    const int16_t *u;
    uint32_t n;
    if (hp <= 32u && g <= 4u) {
        const int16_t *ho = hs - (32u - hp);
        const int16_t *xo = xt - pad - ELT_LSTM_COL_GROUP * (4u - g);
        /* entries: 16 VMLAL + 1 VLDM (68 bytes) per skipped group, 4 VMLAL per pad column */
        uint32_t eh = (8u - hp / ELT_LSTM_COL_GROUP) * 68u;
        uint32_t ex = (4u - g) * 68u + pad * 16u;
        __asm__ volatile(ELT_GATES_SMALL
                         : [w] "+r"(w), [bias] "+r"(bias), [ns] "+r"(ns), [pre] "+r"(pre),
                           [blocks] "+r"(blocks), [eh] "+r"(eh), [ex] "+r"(ex), [n] "=&r"(n)
                         : [ho] "r"(ho), [xo] "r"(xo)
                         : ELT_GATES_CLOBBER);
    } else if (g <= 4u) {
        const int16_t *xo = xt - pad - ELT_LSTM_COL_GROUP * (4u - g);
        /* entry: 16 VMLAL + 1 VLDM (68 bytes) per skipped group, 4 VMLAL per pad column */
        uint32_t e = (4u - g) * 68u + pad * 16u;
        __asm__ volatile(ELT_GATES_X_UNROLLED
                         : [w] "+r"(w), [bias] "+r"(bias), [ns] "+r"(ns), [pre] "+r"(pre),
                           [blocks] "+r"(blocks), [e] "+r"(e), [u] "=&r"(u), [n] "=&r"(n)
                         : [hs] "r"(hs), [hp] "r"(hp), [xo] "r"(xo)
                         : ELT_GATES_CLOBBER);
    } else {
        const int16_t *xo = xt - pad;
        __asm__ volatile(ELT_GATES_X_LOOP
                         : [w] "+r"(w), [bias] "+r"(bias), [ns] "+r"(ns), [pre] "+r"(pre),
                           [blocks] "+r"(blocks), [u] "=&r"(u), [n] "=&r"(n)
                         : [hs] "r"(hs), [hp] "r"(hp), [xo] "r"(xo), [g] "r"(g)
                         : ELT_GATES_CLOBBER);
    }
}

/* σ of 8 Q4.11 inputs: lane k = mid[x_k], `mid` = the address of sigmoid_full[32768] in every
 * lane. VSHLL.S16 #1 sign-extends and doubles x, VADD forms the 8 addresses; each VMOV moves
 * two of them to core registers and VLD1.16 loads one lane from each (gcc would move them one
 * by one, hence the asm). */
static inline __attribute__((always_inline)) int16x8_t sigmoid8(int16x8_t x, int32x4_t mid)
{
    const int32x4_t a0 = vaddq_s32(mid, vshll_n_s16(vget_low_s16(x), 1));
    const int32x4_t a1 = vaddq_s32(mid, vshll_n_s16(vget_high_s16(x), 1));
    int16x8_t y;
    uint32_t r0, r1, r2, r3;
    __asm__("vmov      %[r0], %[r1], %e[a0]\n\t"
            "vmov      %[r2], %[r3], %f[a0]\n\t"
            "vld1.16   {%e[y][0]}, [%[r0]]\n\t"
            "vld1.16   {%e[y][1]}, [%[r1]]\n\t"
            "vld1.16   {%e[y][2]}, [%[r2]]\n\t"
            "vld1.16   {%e[y][3]}, [%[r3]]\n\t"
            "vmov      %[r0], %[r1], %e[a1]\n\t"
            "vmov      %[r2], %[r3], %f[a1]\n\t"
            "vld1.16   {%f[y][0]}, [%[r0]]\n\t"
            "vld1.16   {%f[y][1]}, [%[r1]]\n\t"
            "vld1.16   {%f[y][2]}, [%[r2]]\n\t"
            "vld1.16   {%f[y][3]}, [%[r3]]"
            : [y] "=&w"(y), [r0] "=&r"(r0), [r1] "=&r"(r1), [r2] "=&r"(r2), [r3] "=&r"(r3)
            : [a0] "w"(a0), [a1] "w"(a1)); /* reads only the constant table */
    return y;
}

static inline int32x4_t sigmoid_mid(const elt_lstm_s16_params_t *p)
{
    return vdupq_n_s32((int32_t)(uintptr_t)(p->sigmoid_full + 32768));
}

/* clang-format off */
/* σ of 8 Q4.11 values in d-registers lo, hi, in place: lane k = mid[x_k], %[mid] = the address
 * of sigmoid_full[32768] in every lane. VSHLL.S16 #1 sign-extends and doubles x, VADD forms
 * the 8 addresses (q12, q13), each VMOV moves two of them to core registers and VLD1.16 loads
 * one lane from each (16 instructions; gcc would move the addresses one by one). */
#define ELT_SIGMOID8(lo, hi)                                                                       \
    "vshll.s16 q12, " lo ", #1\n\t"                                                                \
    "vshll.s16 q13, " hi ", #1\n\t"                                                                \
    "vadd.i32  q12, q12, %q[mid]\n\t"                                                              \
    "vadd.i32  q13, q13, %q[mid]\n\t"                                                              \
    "vmov      %[a0], %[a1], d24\n\t"                                                              \
    "vmov      %[a2], %[a3], d25\n\t"                                                              \
    "vld1.16   {" lo "[0]}, [%[a0]]\n\t"                                                           \
    "vld1.16   {" lo "[1]}, [%[a1]]\n\t"                                                           \
    "vld1.16   {" lo "[2]}, [%[a2]]\n\t"                                                           \
    "vld1.16   {" lo "[3]}, [%[a3]]\n\t"                                                           \
    "vmov      %[a0], %[a1], d26\n\t"                                                              \
    "vmov      %[a2], %[a3], d27\n\t"                                                              \
    "vld1.16   {" hi "[0]}, [%[a0]]\n\t"                                                           \
    "vld1.16   {" hi "[1]}, [%[a1]]\n\t"                                                           \
    "vld1.16   {" hi "[2]}, [%[a2]]\n\t"                                                           \
    "vld1.16   {" hi "[3]}, [%[a3]]\n\t"

/* The cell of 8 units per iteration (q8-q11: i, f, g, o; q12-q13: c; q4-q7: int64):
 *   i, f, o = σ(pre), g = 2σ(pre) - 1 (its pre is 2x; 2s - 32768 as int16 is 2s with bit 15
 *   flipped), f·c: VMULL.S32 (int64), + (i·g)·2^L: VMULL.S16 then VMLAL.S32 by 2^L,
 *   c = VQRSHRN.S64 #15 = sat32(rshift_round(cc, 15)), 2c = VQMOVN(VRSHL(c, -cell_tanh_rshift)),
 *   h = VQRDMULH(o, tanh c) = sat16((2·o·tc + 2^15) >> 16) = sat16(rshift_round(o·tc, 15)),
 *   hs = VRSHL(h, -h_opshift). */
#define ELT_CELL_LOOP                                                                              \
    "1:\n\t"                                                                                       \
    "vld1.16   {d16, d17}, [%[pre]], %[rs]\n\t"                                                    \
    "vld1.16   {d18, d19}, [%[pre]], %[rs]\n\t"                                                    \
    "vld1.16   {d20, d21}, [%[pre]], %[rs]\n\t"                                                    \
    "vld1.16   {d22, d23}, [%[pre]], %[rb]\n\t"                                                    \
    ELT_SIGMOID8("d16", "d17")                                                                     \
    ELT_SIGMOID8("d18", "d19")                                                                     \
    ELT_SIGMOID8("d20", "d21")                                                                     \
    ELT_SIGMOID8("d22", "d23")                                                                     \
    "vshl.i16  q10, q10, #1\n\t"                                                                   \
    "veor      q10, q10, %q[k8]\n\t"                                                               \
    "vmull.s16 q4, d16, d20\n\t"                                                                   \
    "vmull.s16 q5, d17, d21\n\t"                                                                   \
    "vmovl.s16 q8, d18\n\t"                                                                        \
    "vmovl.s16 q10, d19\n\t"                                                                       \
    "vld1.32   {d24-d27}, [%[c]]\n\t"                                                              \
    "vmull.s32 q6, d16, d24\n\t"                                                                   \
    "vmull.s32 q7, d17, d25\n\t"                                                                   \
    "vmlal.s32 q6, d8, %P[powl]\n\t"                                                               \
    "vmlal.s32 q7, d9, %P[powl]\n\t"                                                               \
    "vqrshrn.s64 d24, q6, #15\n\t"                                                                 \
    "vqrshrn.s64 d25, q7, #15\n\t"                                                                 \
    "vmull.s32 q6, d20, d26\n\t"                                                                   \
    "vmull.s32 q7, d21, d27\n\t"                                                                   \
    "vmlal.s32 q6, d10, %P[powl]\n\t"                                                              \
    "vmlal.s32 q7, d11, %P[powl]\n\t"                                                              \
    "vqrshrn.s64 d26, q6, #15\n\t"                                                                 \
    "vqrshrn.s64 d27, q7, #15\n\t"                                                                 \
    "vst1.32   {d24-d27}, [%[c]]!\n\t"                                                             \
    "vrshl.s32 q6, q12, %q[nct]\n\t"                                                               \
    "vrshl.s32 q7, q13, %q[nct]\n\t"                                                               \
    "vqmovn.s32 d16, q6\n\t"                                                                       \
    "vqmovn.s32 d17, q7\n\t"                                                                       \
    ELT_SIGMOID8("d16", "d17")                                                                     \
    "vshl.i16  q8, q8, #1\n\t"                                                                     \
    "veor      q8, q8, %q[k8]\n\t"                                                                 \
    "vqrdmulh.s16 q8, q11, q8\n\t"                                                                 \
    "vst1.16   {d16, d17}, [%[h]]!\n\t"                                                            \
    "vrshl.s16 q8, q8, %q[nh]\n\t"                                                                 \
    "vst1.16   {d16, d17}, [%[hs]]!\n\t"                                                           \
    "subs      %[n], %[n], #1\n\t"                                                                 \
    "bne       1b"
/* clang-format on */

/* The gate activations, c, h and hs of every unit, 8 per iteration (ELT_CELL_LOOP). */
static inline __attribute__((always_inline)) void
cell(const elt_lstm_s16_params_t *p, const int16_t *pre, int32_t *c, int16_t *h, int16_t *hs)
{
    const uint32_t hp = p->hidden_pad;
    const int32x2_t pow_l = vdup_n_s32((int32_t)1 << p->cell_ig_lshift);
    const int32x4_t neg_ct = vdupq_n_s32(-(int32_t)p->cell_tanh_rshift);
    const int16x8_t neg_h = vdupq_n_s16((int16_t) - (int16_t)p->h_opshift);
    const int16x8_t k8 = vdupq_n_s16(INT16_MIN);
    const int32x4_t mid = sigmoid_mid(p);
    /* pre advances by one gate (2 Hp bytes) three times, then back to the next 8 units */
    const int32_t rs = (int32_t)(2u * hp);
    const int32_t rb = 16 - 3 * rs;
    uint32_t n = hp / 8u;
    uint32_t a0, a1, a2, a3;
    __asm__ volatile(ELT_CELL_LOOP
                     : [pre] "+r"(pre), [c] "+r"(c), [h] "+r"(h), [hs] "+r"(hs), [n] "+r"(n),
                       [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3)
                     : [rs] "r"(rs), [rb] "r"(rb), [mid] "w"(mid), [nct] "w"(neg_ct),
                       [nh] "w"(neg_h), [k8] "w"(k8), [powl] "w"(pow_l)
                     : "cc", "memory", "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15", "d16",
                       "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27");
}

#else /* scalar */

/* xs = rshift_round(x, x_opshift) for all T frames. */
static void operands_x(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *xs)
{
    const uint32_t n = (uint32_t)p->num_frames * p->input_size;
    uint32_t k;
    for (k = 0; k < n; ++k) {
        xs[k] = (int16_t)fx_rshift_round32(x[k], p->x_opshift);
    }
}

/* pre[r] = sat16(rshift_round(bias[r] + Σ W[r][k] u[k], s_r)), u = [hs; pad; xs_t]. */
static void gates(const elt_lstm_s16_params_t *p, const int16_t *hs, const int16_t *xt,
                  int16_t *pre)
{
    const uint32_t hp = p->hidden_pad;
    const uint32_t F = p->input_size;
    const uint32_t K = p->cols;
    uint32_t b, r, k;
    for (b = 0; b < p->row_blocks; ++b) {
        for (r = 0; r < ELT_LSTM_ROW_BLOCK; ++r) {
            const uint32_t row = b * ELT_LSTM_ROW_BLOCK + r;
            /* column k of this row is wr[k * 16] */
            const int16_t *wr = p->w + b * K * ELT_LSTM_ROW_BLOCK + r;
            int32_t acc = p->bias[row]; /* every partial sum within the proven int32 bound */
            for (k = 0; k < hp; ++k) {
                acc += (int32_t)wr[k * ELT_LSTM_ROW_BLOCK] * hs[k];
            }
            for (k = 0; k < F; ++k) {
                acc += (int32_t)wr[(K - F + k) * ELT_LSTM_ROW_BLOCK] * xt[k];
            }
            pre[row] = fx_sat16(fx_rshift_round32(acc, -p->neg_shift[row]));
        }
    }
}

/* The gate activations, c, h and hs of every (padded) unit; g = 2σ(2x) - 1 from the g rows'
 * pre-activation 2x. */
static void cell(const elt_lstm_s16_params_t *p, const int16_t *pre, int32_t *c, int16_t *h,
                 int16_t *hs)
{
    const uint32_t hp = p->hidden_pad;
    const int16_t *lut = p->sigmoid_lut;
    const uint8_t ls = p->lut_shift;
    uint32_t j;
    for (j = 0; j < hp; ++j) {
        const int32_t ig = sigmoid_q15(lut, ls, pre[j]);             /* i, Q0.15 */
        const int32_t fg = sigmoid_q15(lut, ls, pre[hp + j]);        /* f, Q0.15 */
        const int32_t gg = elt_tanh2_q15(lut, ls, pre[2u * hp + j]); /* g = 2σ(2x) - 1 */
        const int32_t og = sigmoid_q15(lut, ls, pre[3u * hp + j]);   /* o, Q0.15 */
        /* c = f·c + i·g at frac 15 + c_frac, one rounding back to c_frac; |c_t| <= t. The
         * left shift is a multiplication (no UB for negative i·g). */
        const int64_t cc =
            (int64_t)fg * c[j] + (int64_t)(ig * gg) * ((int64_t)1 << p->cell_ig_lshift);
        int32_t tc;
        c[j] = fx_sat32_64(fx_rshift_round64(cc, 15));
        /* tanh(c) = 2σ(2c) - 1, 2c in Q4.11 */
        tc = elt_tanh2_q15(lut, ls, fx_sat16(fx_rshift_round32(c[j], p->cell_tanh_rshift)));
        h[j] = fx_sat16(fx_rshift_round32(og * tc, 15));
        hs[j] = (int16_t)fx_rshift_round32(h[j], p->h_opshift);
    }
}
#endif

void elt_lstm_s16_sigmoid(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *y, uint32_t n)
{
    uint32_t k = 0;
#if ELT_LSTM_NEON
    const int32x4_t mid = sigmoid_mid(p);
    for (; k + 8u <= n; k += 8u) {
        vst1q_s16(y + k, sigmoid8(vld1q_s16(x + k), mid));
    }
#endif
    for (; k < n; ++k) {
        y[k] = sigmoid_q15(p->sigmoid_lut, p->lut_shift, x[k]);
    }
}

void elt_lstm_s16_run(const elt_lstm_s16_params_t *p, const int16_t *x,
                      const elt_lstm_s16_scratch_t *s, int16_t *z)
{
    const uint32_t F = p->input_size;
    const uint32_t H = p->hidden_size;
    const uint32_t hp = p->hidden_pad;
    uint32_t t, j;

    operands_x(p, x, s->xs);
    for (j = 0; j < hp; ++j) {
        s->h[j] = 0;
        s->hs[j] = 0;
        s->c[j] = 0;
    }
#if ELT_LSTM_POOL == ELT_LSTM_POOL_MEAN
    for (j = 0; j < H; ++j) {
        s->acc[j] = 0;
    }
#elif ELT_LSTM_POOL == ELT_LSTM_POOL_MAX
    for (j = 0; j < H; ++j) {
        z[j] = INT16_MIN;
    }
#endif
    for (t = 0; t < p->num_frames; ++t) {
        /* all 4 Hp gate pre-activations from the old h, then the cell and the new h */
        gates(p, s->hs, s->xs + t * F, s->act);
        cell(p, s->act, s->c, s->h, s->hs);
        ELT_TRACE_S32("lstm.c", t, s->c, H);
        ELT_TRACE_S16("lstm.h", t, s->h, H);
#if ELT_LSTM_POOL == ELT_LSTM_POOL_MEAN
        for (j = 0; j < H; ++j) {
            s->acc[j] += s->h[j]; /* |Σ| <= T 2^15 < 2^31 for T < 2^16 */
        }
#elif ELT_LSTM_POOL == ELT_LSTM_POOL_MAX
        for (j = 0; j < H; ++j) {
            z[j] = s->h[j] > z[j] ? s->h[j] : z[j];
        }
#endif
    }
#if ELT_LSTM_POOL == ELT_LSTM_POOL_MEAN
    for (j = 0; j < H; ++j) {
        z[j] = fx_sat16_64(fx_rshift_round64((int64_t)s->acc[j] * p->pool_recip, p->pool_shift));
    }
#elif ELT_LSTM_POOL == ELT_LSTM_POOL_LAST
    for (j = 0; j < H; ++j) {
        z[j] = s->h[j];
    }
#endif
    ELT_TRACE_S16("z", 0u, z, H);
}

void elt_lstm_s16_run_seq(const elt_lstm_s16_params_t *p, const int16_t *x,
                          const elt_lstm_s16_scratch_t *s, int16_t *seq)
{
    const uint32_t F = p->input_size;
    const uint32_t H = p->hidden_size;
    const uint32_t hp = p->hidden_pad;
    uint32_t t, j;

    operands_x(p, x, s->xs);
    for (j = 0; j < hp; ++j) {
        s->h[j] = 0;
        s->hs[j] = 0;
        s->c[j] = 0;
    }
    for (t = 0; t < p->num_frames; ++t) {
        gates(p, s->hs, s->xs + t * F, s->act);
        cell(p, s->act, s->c, s->h, s->hs);
        ELT_TRACE_S32("lstm.c", t, s->c, H);
        ELT_TRACE_S16("lstm.h", t, s->h, H);
        for (j = 0; j < H; ++j) {
            seq[t * H + j] = s->h[j];
        }
    }
}

/*
 * Streaming: the same recurrence one step per call, for a caller that receives the frames one at
 * a time (the device's audio mode computes a feature frame per hop, docs/numeric.md §7.6). The
 * caller carries h, hs, c and the pooling state in s between calls; s->xs holds one frame's
 * operands (ELT_LSTM_XS_SLACK readable values before it, as for elt_lstm_s16_run). Step t of a
 * stream equals step t of elt_lstm_s16_run over the concatenated frames: the same gates() and
 * cell() on the same operands, the same pooling sums in the same order.
 */
void elt_lstm_s16_step_begin(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s,
                             int16_t *z)
{
    const uint32_t hp = p->hidden_pad;
    uint32_t j;
    for (j = 0; j < hp; ++j) {
        s->h[j] = 0;
        s->hs[j] = 0;
        s->c[j] = 0;
    }
    if (z == 0) {
        return;
    }
#if ELT_LSTM_POOL == ELT_LSTM_POOL_MEAN
    for (j = 0; j < p->hidden_size; ++j) {
        s->acc[j] = 0;
    }
#elif ELT_LSTM_POOL == ELT_LSTM_POOL_MAX
    for (j = 0; j < p->hidden_size; ++j) {
        z[j] = INT16_MIN;
    }
#endif
}

void elt_lstm_s16_step(const elt_lstm_s16_params_t *p, const int16_t *x,
                       const elt_lstm_s16_scratch_t *s, uint32_t t, int16_t *z)
{
    const uint32_t F = p->input_size;
    const uint32_t H = p->hidden_size;
    uint32_t k;
    (void)t; /* trace index only */
    (void)H;
    for (k = 0; k < F; ++k) {
        s->xs[k] = (int16_t)fx_rshift_round32(x[k], p->x_opshift);
    }
    gates(p, s->hs, s->xs, s->act);
    cell(p, s->act, s->c, s->h, s->hs);
    ELT_TRACE_S32("lstm.c", t, s->c, H);
    ELT_TRACE_S16("lstm.h", t, s->h, H);
    if (z == 0) {
        return;
    }
#if ELT_LSTM_POOL == ELT_LSTM_POOL_MEAN
    for (k = 0; k < H; ++k) {
        s->acc[k] += s->h[k];
    }
#elif ELT_LSTM_POOL == ELT_LSTM_POOL_MAX
    for (k = 0; k < H; ++k) {
        z[k] = s->h[k] > z[k] ? s->h[k] : z[k];
    }
#endif
}

void elt_lstm_s16_step_end(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s,
                           int16_t *z)
{
    const uint32_t H = p->hidden_size;
    uint32_t j;
    (void)s;
    (void)H; /* max pooling without traces: z is already the running maximum */
#if ELT_LSTM_POOL == ELT_LSTM_POOL_MEAN
    for (j = 0; j < H; ++j) {
        z[j] = fx_sat16_64(fx_rshift_round64((int64_t)s->acc[j] * p->pool_recip, p->pool_shift));
    }
#elif ELT_LSTM_POOL == ELT_LSTM_POOL_LAST
    for (j = 0; j < H; ++j) {
        z[j] = s->h[j];
    }
#else
    (void)j;
    (void)z;
#endif
    ELT_TRACE_S16("z", 0u, z, H);
}
