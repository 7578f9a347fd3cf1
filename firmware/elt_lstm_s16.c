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
/* Lane k of a vector of addresses, as a pointer to a table pair. */
#define ELT_LANE_PTR(v, k) ((const uint32_t *)(uintptr_t)vgetq_lane_u32((v), (k)))

/*
 * Cortex-A9 NEON, integer only. Instructions per step for T = 49, F = 10, H = 32 (Hp = 32,
 * K = 44, 4 blocks of 32 rows), counted in the arm-none-eabi-gcc 12 -O2 objdump (QEMU -icount
 * charges one per instruction, ~10 per global-timer tick):
 *   gates, per block of 32 rows:
 *     10 groups of 4 columns x 43 (1 VLD1 operands, 8 VLD2 weights, 32 VMLAL, CMP, B)   430
 *     F mod 4 = 2 tail columns (1 VLD1, 4 VLD2, 16 VMLAL) and branches                   ~25
 *     bias (8 VLD1), loop and pointer upkeep                                              ~25
 *     4 x (2 VLD1 shifts, 2 VRSHL, 2 VQMOVN, σ8 ~31, VST1)                              ~160
 *     => ~650 per block, 4 blocks                                                      ~2,600
 *   cell, 4 x 82 per 8 units (VMULL/VMLAL.S32, 4 VQRSHRN, VRSHL/VQMOVN, σ8, VQRDMULH)    ~330
 *   => ~2,950 per step, ~145,000 per sequence: 14,661 QEMU icount ticks measured (was 143,000
 *   with int64 accumulators and scalar activations).
 */
/* σ of 8 Q4.11 inputs, lane for lane equal to sigmoid_q15 (ELT_LSTM_LUT_SHIFT = 7):
 *   a = min(|x|, 32767)                              VQABS (saturating: |-32768| -> 32767)
 *   lo, hi = lut[a >> 7], lut[(a >> 7) + 1]          the pair lut2[a >> 7], VUZP splits them
 *   pos = lo + (((hi - lo)·(a & 127) + 64) >> 7)     = lo + VQRDMULH(hi - lo, (a & 127) << 8):
 *         VQRDMULH(d, m) = (2·d·m + 2^15) >> 16 = (d·(a & 127) + 64) >> 7 for m = (a & 127)·2^8
 *         (numerator and denominator times 2^9; floor shift for negative d too; |m| < 2^15,
 *         so it never saturates)
 *   σ = x < 0 ? 32768 - pos : pos                    int16 wrap of -32768 - pos, VBSL
 * The gather: the 8 addresses lut2 + 4j are formed in NEON (32-bit pointers), then per lane one
 * VMOV to a core register and one VLD1.32 straight into the lane (16 of ~31 instructions). */
static inline __attribute__((always_inline)) int16x8_t sigmoid8(int16x8_t x, const uint32_t *lut2)
{
    const int16x8_t a = vqabsq_s16(x);
    const uint16x8_t j = vshrq_n_u16(vreinterpretq_u16_s16(a), ELT_LSTM_LUT_SHIFT);
    const int16x8_t m = vandq_s16(vshlq_n_s16(a, 15 - ELT_LSTM_LUT_SHIFT), vdupq_n_s16(0x7f00));
    const uint32x4_t base = vdupq_n_u32((uint32_t)(uintptr_t)lut2);
    const uint32x4_t p0 = vaddq_u32(base, vshll_n_u16(vget_low_u16(j), 2));
    const uint32x4_t p1 = vaddq_u32(base, vshll_n_u16(vget_high_u16(j), 2));
    uint32x4_t q0 = vreinterpretq_u32_u16(j); /* every lane is overwritten below */
    uint32x4_t q1 = vreinterpretq_u32_s16(a);
    int16x8x2_t t;
    int16x8_t pos;
    q0 = vld1q_lane_u32(ELT_LANE_PTR(p0, 0), q0, 0);
    q0 = vld1q_lane_u32(ELT_LANE_PTR(p0, 1), q0, 1);
    q0 = vld1q_lane_u32(ELT_LANE_PTR(p0, 2), q0, 2);
    q0 = vld1q_lane_u32(ELT_LANE_PTR(p0, 3), q0, 3);
    q1 = vld1q_lane_u32(ELT_LANE_PTR(p1, 0), q1, 0);
    q1 = vld1q_lane_u32(ELT_LANE_PTR(p1, 1), q1, 1);
    q1 = vld1q_lane_u32(ELT_LANE_PTR(p1, 2), q1, 2);
    q1 = vld1q_lane_u32(ELT_LANE_PTR(p1, 3), q1, 3);
    /* [lo0 hi0 lo1 hi1 ...] -> val[0] = lo (lut[j]), val[1] = hi (lut[j + 1]) */
    t = vuzpq_s16(vreinterpretq_s16_u32(q0), vreinterpretq_s16_u32(q1));
    pos = vaddq_s16(t.val[0], vqrdmulhq_s16(vsubq_s16(t.val[1], t.val[0]), m));
    return vbslq_s16(vcltq_s16(x, vdupq_n_s16(0)), vsubq_s16(vdupq_n_s16(INT16_MIN), pos), pos);
}

/* The next 16 packed weights. The empty asm keeps the pointer a plain register increment, which
 * gcc folds into the load's post-increment (VLD2 {..}, [rN]!) instead of an ADD per load. */
static inline __attribute__((always_inline)) const int16_t *next16(const int16_t *w)
{
    w += 16;
    __asm__("" : "+r"(w));
    return w;
}

/* One packed column into the 32 rows of a block: two VLD2.16 {4 d-regs} (rows 0-7 | 8-15 and
 * 16-23 | 24-31) and eight VMLAL.S16 by lane `lane` of the operands u4 (4 rows each). Works on
 * the locals of gates(): the weight pointer w, the operands u4 and the accumulators a0..a7
 * (macros, because the lane of VMLAL_LANE must be a constant). */
#define ELT_MAC_COLUMN(lane)                                                                       \
    do {                                                                                           \
        const int16x8x2_t c0 = vld2q_s16(w);                                                       \
        const int16x8x2_t c1 = vld2q_s16(w = next16(w));                                           \
        w = next16(w);                                                                             \
        a0 = vmlal_lane_s16(a0, vget_low_s16(c0.val[0]), u4, (lane));                              \
        a1 = vmlal_lane_s16(a1, vget_high_s16(c0.val[0]), u4, (lane));                             \
        a2 = vmlal_lane_s16(a2, vget_low_s16(c0.val[1]), u4, (lane));                              \
        a3 = vmlal_lane_s16(a3, vget_high_s16(c0.val[1]), u4, (lane));                             \
        a4 = vmlal_lane_s16(a4, vget_low_s16(c1.val[0]), u4, (lane));                              \
        a5 = vmlal_lane_s16(a5, vget_high_s16(c1.val[0]), u4, (lane));                             \
        a6 = vmlal_lane_s16(a6, vget_low_s16(c1.val[1]), u4, (lane));                              \
        a7 = vmlal_lane_s16(a7, vget_high_s16(c1.val[1]), u4, (lane));                             \
    } while (0)

/* Four packed columns (one group of 4 operands from u) into the 32 rows of a block. */
#define ELT_MAC_GROUP(u)                                                                           \
    do {                                                                                           \
        const int16x4_t u4 = vld1_s16(u);                                                          \
        ELT_MAC_COLUMN(0);                                                                         \
        ELT_MAC_COLUMN(1);                                                                         \
        ELT_MAC_COLUMN(2);                                                                         \
        ELT_MAC_COLUMN(3);                                                                         \
    } while (0)

/* The next 4 int32 (bias, shift vectors), with the same post-increment trick as next16. */
static inline __attribute__((always_inline)) const int32_t *next4(const int32_t *p)
{
    p += 4;
    __asm__("" : "+r"(p));
    return p;
}

/* pre = sat16(rshift_round(acc, s)) = VQMOVN(VRSHL(acc, -s)) for 8 rows, then σ; *ns advances
 * by 8 rows. */
static inline __attribute__((always_inline)) int16x8_t gate8(int32x4_t lo, int32x4_t hi,
                                                             const int32_t **ns,
                                                             const uint32_t *lut2)
{
    const int32x4_t s0 = vld1q_s32(*ns);
    const int32x4_t s1 = vld1q_s32(*ns = next4(*ns));
    *ns = next4(*ns);
    return sigmoid8(vcombine_s16(vqmovn_s32(vrshlq_s32(lo, s0)), vqmovn_s32(vrshlq_s32(hi, s1))),
                    lut2);
}

/* xs = rshift_round(x, x_opshift) for all T frames: VRSHL by -x_opshift (0: identity). */
static void operands_x(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *xs)
{
    const uint32_t n = (uint32_t)p->num_frames * p->input_size;
    const uint32_t tail = (uint32_t)p->cols - p->hidden_pad - p->input_size;
    const int16x8_t neg = vdupq_n_s16((int16_t) - (int16_t)p->x_opshift);
    uint32_t k = 0;
    for (; k + 8u <= n; k += 8u) {
        vst1q_s16(xs + k, vrshlq_s16(vld1q_s16(x + k), neg));
    }
    for (; k < n; ++k) {
        xs[k] = (int16_t)fx_rshift_round32(x[k], p->x_opshift);
    }
    for (k = 0; k < tail; ++k) {
        xs[n + k] = 0; /* read by the last frame's padded column group, times zero weights */
    }
}

/* act = σ(pre) for every gate row: acc = bias + W [hs; xs_t], pre = sat16(rshift_round(acc,
 * s_r)) = VQMOVN(VRSHL(acc, -s_r)) (VRSHL by a negative amount is the rounding right shift,
 * VQMOVN the saturating narrow). */
static void gates(const elt_lstm_s16_params_t *p, const int16_t *hs, const int16_t *xt,
                  int16_t *act)
{
    const int16_t *const hs_end = hs + p->hidden_pad;
    /* x columns: full groups of 4, then F mod 4 single columns; the zero pad columns of the
     * packed weights are skipped */
    const uint32_t xtail = p->input_size % ELT_LSTM_COL_GROUP;
    const int16_t *const xt_end = xt + (p->input_size - xtail);
    const uint32_t xskip = xtail ? (ELT_LSTM_COL_GROUP - xtail) * ELT_LSTM_ROW_BLOCK : 0u;
    const uint32_t blocks = p->row_blocks;
    const int32_t *bias = p->bias;
    const int32_t *ns = p->neg_shift;
    const uint32_t *lut2 = p->sigmoid_lut2;
    const int16_t *w = p->w;
    uint32_t b;
    for (b = 0; b < blocks; ++b) {
        /* eight accumulators of 4 rows each, starting at the bias */
        int32x4_t a0 = vld1q_s32(bias);
        int32x4_t a1 = vld1q_s32(bias = next4(bias));
        int32x4_t a2 = vld1q_s32(bias = next4(bias));
        int32x4_t a3 = vld1q_s32(bias = next4(bias));
        int32x4_t a4 = vld1q_s32(bias = next4(bias));
        int32x4_t a5 = vld1q_s32(bias = next4(bias));
        int32x4_t a6 = vld1q_s32(bias = next4(bias));
        int32x4_t a7 = vld1q_s32(bias = next4(bias));
        const int16_t *u;
        bias = next4(bias);
        for (u = hs; u < hs_end; u += ELT_LSTM_COL_GROUP) {
            ELT_MAC_GROUP(u);
        }
        for (u = xt; u < xt_end; u += ELT_LSTM_COL_GROUP) {
            ELT_MAC_GROUP(u);
        }
        if (xtail) {
            const int16x4_t u4 = vld1_s16(u); /* lanes >= xtail: next frame or zero tail */
            ELT_MAC_COLUMN(0);
            if (xtail > 1u) {
                ELT_MAC_COLUMN(1);
                if (xtail > 2u) {
                    ELT_MAC_COLUMN(2);
                }
            }
            w += xskip;
        }
        vst1q_s16(act, gate8(a0, a1, &ns, lut2));
        vst1q_s16(act + 8, gate8(a2, a3, &ns, lut2));
        vst1q_s16(act + 16, gate8(a4, a5, &ns, lut2));
        vst1q_s16(act + 24, gate8(a6, a7, &ns, lut2));
        act += ELT_LSTM_ROW_BLOCK;
    }
}

/* tanh(x) = 2σ(2x) - 1 from σ: 2s - 32768 as int16 = (2s mod 2^16) with bit 15 flipped. */
static inline __attribute__((always_inline)) int16x8_t tanh_from_sigmoid8(int16x8_t s)
{
    return veorq_s16(vshlq_n_s16(s, 1), vdupq_n_s16(INT16_MIN));
}

/* c, h and hs of 8 units per iteration:
 *   f·c: VMULL.S32 (int64), + (i·g)·2^L: VMULL.S16 then VMLAL.S32 by 2^L,
 *   c = VQRSHRN.S64 #15 = sat32(rshift_round(cc, 15)),
 *   h = VQRDMULH(o, tanh c) = sat16((2·o·tc + 2^15) >> 16) = sat16(rshift_round(o·tc, 15)). */
static void cell(const elt_lstm_s16_params_t *p, const int16_t *act, int32_t *c, int16_t *h,
                 int16_t *hs)
{
    const uint32_t hp = p->hidden_pad;
    const int32x2_t pow_l = vdup_n_s32((int32_t)1 << p->cell_ig_lshift);
    const int32x4_t neg_ct = vdupq_n_s32(-(int32_t)p->cell_tanh_rshift);
    const int16x8_t neg_h = vdupq_n_s16((int16_t) - (int16_t)p->h_opshift);
    const uint32_t *lut2 = p->sigmoid_lut2;
    uint32_t j;
    for (j = 0; j < hp; j += 8u) {
        const int16x8_t i = vld1q_s16(act + j);
        const int16x8_t f = vld1q_s16(act + hp + j);
        const int16x8_t g = tanh_from_sigmoid8(vld1q_s16(act + 2u * hp + j));
        const int16x8_t o = vld1q_s16(act + 3u * hp + j);
        const int32x4_t c0 = vld1q_s32(c + j);
        const int32x4_t c1 = vld1q_s32(c + j + 4u);
        const int32x4_t f0 = vmovl_s16(vget_low_s16(f));
        const int32x4_t f1 = vmovl_s16(vget_high_s16(f));
        const int32x4_t ig0 = vmull_s16(vget_low_s16(i), vget_low_s16(g));
        const int32x4_t ig1 = vmull_s16(vget_high_s16(i), vget_high_s16(g));
        const int64x2_t cc0 =
            vmlal_s32(vmull_s32(vget_low_s32(f0), vget_low_s32(c0)), vget_low_s32(ig0), pow_l);
        const int64x2_t cc1 =
            vmlal_s32(vmull_s32(vget_high_s32(f0), vget_high_s32(c0)), vget_high_s32(ig0), pow_l);
        const int64x2_t cc2 =
            vmlal_s32(vmull_s32(vget_low_s32(f1), vget_low_s32(c1)), vget_low_s32(ig1), pow_l);
        const int64x2_t cc3 =
            vmlal_s32(vmull_s32(vget_high_s32(f1), vget_high_s32(c1)), vget_high_s32(ig1), pow_l);
        const int32x4_t n0 = vcombine_s32(vqrshrn_n_s64(cc0, 15), vqrshrn_n_s64(cc1, 15));
        const int32x4_t n1 = vcombine_s32(vqrshrn_n_s64(cc2, 15), vqrshrn_n_s64(cc3, 15));
        const int16x8_t c2 =
            vcombine_s16(vqmovn_s32(vrshlq_s32(n0, neg_ct)), vqmovn_s32(vrshlq_s32(n1, neg_ct)));
        const int16x8_t hv = vqrdmulhq_s16(o, tanh_from_sigmoid8(sigmoid8(c2, lut2)));
        vst1q_s32(c + j, n0);
        vst1q_s32(c + j + 4u, n1);
        vst1q_s16(h + j, hv);
        vst1q_s16(hs + j, vrshlq_s16(hv, neg_h));
    }
}

#else /* scalar */

/* Position of row r (0..15) of a block among a packed column's 16 weights (elt_lstm_s16.h). */
static inline uint32_t block_lane(uint32_t r)
{
    const uint32_t half = r & 15u; /* row within its 16-row half of the block */
    return (r & ~15u) + (half < 8u ? 2u * half : 2u * (half - 8u) + 1u);
}

/* xs = rshift_round(x, x_opshift) for all T frames, then the zero tail. */
static void operands_x(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *xs)
{
    const uint32_t n = (uint32_t)p->num_frames * p->input_size;
    const uint32_t tail = (uint32_t)p->cols - p->hidden_pad - p->input_size;
    uint32_t k;
    for (k = 0; k < n; ++k) {
        xs[k] = (int16_t)fx_rshift_round32(x[k], p->x_opshift);
    }
    for (k = 0; k < tail; ++k) {
        xs[n + k] = 0;
    }
}

/* act[r] = σ(sat16(rshift_round(bias[r] + Σ W[r][k] u[k], s_r))), u = [hs; xs_t]. */
static void gates(const elt_lstm_s16_params_t *p, const int16_t *hs, const int16_t *xt,
                  int16_t *act)
{
    const uint32_t hp = p->hidden_pad;
    const uint32_t F = p->input_size;
    const uint32_t K = p->cols;
    uint32_t b, r, k;
    for (b = 0; b < p->row_blocks; ++b) {
        for (r = 0; r < ELT_LSTM_ROW_BLOCK; ++r) {
            const uint32_t row = b * ELT_LSTM_ROW_BLOCK + r;
            /* column k of this row is wr[k * 16] */
            const int16_t *wr = p->w + b * K * ELT_LSTM_ROW_BLOCK + block_lane(r);
            int32_t acc = p->bias[row]; /* every partial sum within the proven int32 bound */
            for (k = 0; k < hp; ++k) {
                acc += (int32_t)wr[k * ELT_LSTM_ROW_BLOCK] * hs[k];
            }
            for (k = 0; k < F; ++k) {
                acc += (int32_t)wr[(hp + k) * ELT_LSTM_ROW_BLOCK] * xt[k];
            }
            act[row] = sigmoid_q15(p->sigmoid_lut, p->lut_shift,
                                   fx_sat16(fx_rshift_round32(acc, -p->neg_shift[row])));
        }
    }
}

/* c, h and hs of every (padded) unit; g = 2σ(2x) - 1 from the g rows' σ. */
static void cell(const elt_lstm_s16_params_t *p, const int16_t *act, int32_t *c, int16_t *h,
                 int16_t *hs)
{
    const uint32_t hp = p->hidden_pad;
    uint32_t j;
    for (j = 0; j < hp; ++j) {
        const int32_t ig = act[j];                                /* i, Q0.15 */
        const int32_t fg = act[hp + j];                           /* f, Q0.15 */
        const int32_t gg = 2 * (int32_t)act[2u * hp + j] - 32768; /* g = 2σ(2x) - 1 */
        const int32_t og = act[3u * hp + j];                      /* o, Q0.15 */
        /* c = f·c + i·g at frac 15 + c_frac, one rounding back to c_frac; |c_t| <= t. The
         * left shift is a multiplication (no UB for negative i·g). */
        const int64_t cc =
            (int64_t)fg * c[j] + (int64_t)(ig * gg) * ((int64_t)1 << p->cell_ig_lshift);
        int32_t tc;
        c[j] = fx_sat32_64(fx_rshift_round64(cc, 15));
        /* tanh(c) = 2σ(2c) - 1, 2c in Q4.11 */
        tc = elt_tanh2_q15(p->sigmoid_lut, p->lut_shift,
                           fx_sat16(fx_rshift_round32(c[j], p->cell_tanh_rshift)));
        h[j] = fx_sat16(fx_rshift_round32(og * tc, 15));
        hs[j] = (int16_t)fx_rshift_round32(h[j], p->h_opshift);
    }
}
#endif

void elt_lstm_s16_sigmoid(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *y, uint32_t n)
{
    uint32_t k = 0;
#if ELT_LSTM_NEON
    for (; k + 8u <= n; k += 8u) {
        vst1q_s16(y + k, sigmoid8(vld1q_s16(x + k), p->sigmoid_lut2));
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
        /* all 4 Hp gate activations from the old h, then the cell and the new h */
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
