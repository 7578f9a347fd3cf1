/*
 * Integer LSTM encoder (docs/numeric.md §4; Python twin: codegen/intref/lstm.py).
 *
 * Per step t and gate row r (torch order i, f, g, o):
 *   acc_r = (Σ_j W_ih[r,j] x_j) << ih_lshift + (Σ_j W_hh[r,j] h_j) << hh_lshift
 *           + b_r << bias_lshift                                         int64, acc_frac bits
 *   i, f, o = σ(sat16(rshift_round(acc, sig_rshift)))                    Q4.11 -> Q0.15
 *   g       = 2σ(2x) - 1, 2x = sat16(rshift_round(acc, tanh_rshift))     Q0.15
 *   c = sat32(rshift_round(f·c + (i·g) << cell_ig_lshift, 15))           int32, c format
 *   h = sat16(rshift_round(o · tanh(c), 15))                              Q0.15
 * Every accumulator is proven by the compiler not to overflow for any int16 input (numeric.md
 * §3); int32 dot products are used only where that proof holds (acc64_* = 0). No float.
 */
#include "elt_lstm_s16.h"

#include "fw_fixed.h"

#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

/* x << s for s >= 0 without the undefined behaviour of shifting a negative signed value. */
static inline int64_t elt_lshift64(int64_t x, unsigned s)
{
    return (int64_t)((uint64_t)x << s);
}

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
    /* tanh(x) = 2σ(2x) - 1 (CMSIS-NN, DESIGN §3): σ ∈ [1, 32767] -> [-32766, 32766]. */
    return (int16_t)(2 * (int32_t)sigmoid_q15(lut, lut_shift, x2) - 32768);
}

#if defined(__ARM_NEON)
/*
 * Cortex-A9 NEON (integer only): 16 x 16 -> 32-bit products, exact. int64 rows widen every
 * product pair into two int64 lanes (VMULL.S16 + VPADAL.S32); int32 rows accumulate in four
 * int32 lanes (VMLAL.S16), exact because each lane's partial sum is bounded by the row's
 * proven |Σ| < 2^31 (docs/numeric.md §3). Same sums as the portable loops below, any order.
 */
static int64_t dot_s16(const int16_t *w, const int16_t *v, uint32_t n, uint8_t acc64)
{
    uint32_t j = 0;
    if (acc64) {
        int64x2_t acc = vdupq_n_s64(0);
        int64_t sum;
        for (; j + 8u <= n; j += 8u) {
            const int16x8_t a = vld1q_s16(w + j);
            const int16x8_t b = vld1q_s16(v + j);
            acc = vpadalq_s32(acc, vmull_s16(vget_low_s16(a), vget_low_s16(b)));
            acc = vpadalq_s32(acc, vmull_s16(vget_high_s16(a), vget_high_s16(b)));
        }
        for (; j + 4u <= n; j += 4u) {
            acc = vpadalq_s32(acc, vmull_s16(vld1_s16(w + j), vld1_s16(v + j)));
        }
        sum = vgetq_lane_s64(acc, 0) + vgetq_lane_s64(acc, 1);
        for (; j < n; ++j) {
            sum += (int32_t)w[j] * (int32_t)v[j];
        }
        return sum;
    }
    {
        int32x4_t acc = vdupq_n_s32(0);
        int32_t sum;
        for (; j + 8u <= n; j += 8u) {
            const int16x8_t a = vld1q_s16(w + j);
            const int16x8_t b = vld1q_s16(v + j);
            acc = vmlal_s16(acc, vget_low_s16(a), vget_low_s16(b));
            acc = vmlal_s16(acc, vget_high_s16(a), vget_high_s16(b));
        }
        for (; j + 4u <= n; j += 4u) {
            acc = vmlal_s16(acc, vld1_s16(w + j), vld1_s16(v + j));
        }
        sum = vgetq_lane_s32(acc, 0) + vgetq_lane_s32(acc, 1) + vgetq_lane_s32(acc, 2) +
              vgetq_lane_s32(acc, 3);
        for (; j < n; ++j) {
            sum += (int32_t)w[j] * (int32_t)v[j];
        }
        return sum;
    }
}
#else
/* Portable loops (host builds, any other target): the reference form of the same sums. */
static int64_t dot_s16(const int16_t *w, const int16_t *v, uint32_t n, uint8_t acc64)
{
    uint32_t j;
    if (acc64) {
        int64_t acc = 0;
        for (j = 0; j < n; ++j) {
            acc += (int32_t)w[j] * (int32_t)v[j]; /* SMLALBB */
        }
        return acc;
    }
    {
        int32_t acc = 0; /* |Σ| <= proven bound < 2^31 */
        for (j = 0; j < n; ++j) {
            acc += (int32_t)w[j] * (int32_t)v[j]; /* SMLABB */
        }
        return acc;
    }
}
#endif

void elt_lstm_s16_run(const elt_lstm_s16_params_t *p, const int16_t *x,
                      const elt_lstm_s16_scratch_t *s, int16_t *z)
{
    /* Everything the loops read, in locals: with -fno-strict-aliasing every store to the
     * scratch could otherwise alias the parameter struct and force reloads. */
    const uint32_t F = p->input_size;
    const uint32_t H = p->hidden_size;
    const uint32_t T = p->num_frames;
    const int16_t *const lut = p->sigmoid_lut;
    const unsigned ls = p->lut_shift;
    const int16_t *const w_ih = p->w_ih;
    const int16_t *const w_hh = p->w_hh;
    const int32_t *const bias = p->bias;
    const uint8_t acc64_ih = p->acc64_ih;
    const uint8_t acc64_hh = p->acc64_hh;
    const unsigned ih_lshift = p->ih_lshift;
    const unsigned hh_lshift = p->hh_lshift;
    const unsigned bias_lshift = p->bias_lshift;
    const int sig_rshift = p->sig_rshift;
    const int tanh_rshift = p->tanh_rshift;
    const unsigned cell_ig_lshift = p->cell_ig_lshift;
    const int cell_tanh_rshift = p->cell_tanh_rshift;
    int16_t *const h = s->h;
    int32_t *const c = s->c;
    int16_t *const gates = s->gates;
    uint32_t t, g, r, j;

    for (j = 0; j < H; ++j) {
        h[j] = 0;
        c[j] = 0;
    }
    for (t = 0; t < T; ++t) {
        const int16_t *xt = x + t * F;
        /* Gate activations from the old h (all 4H rows before h changes); gate g (rows
         * 2H..3H-1) is tanh(x) = 2σ(2x) - 1, the others σ. */
        for (g = 0; g < ELT_LSTM_GATES; ++g) {
            const int shift = g == 2u ? tanh_rshift : sig_rshift;
            for (r = g * H; r < (g + 1u) * H; ++r) {
                const int64_t acc =
                    elt_lshift64(dot_s16(w_ih + r * F, xt, F, acc64_ih), ih_lshift) +
                    elt_lshift64(dot_s16(w_hh + r * H, h, H, acc64_hh), hh_lshift) +
                    elt_lshift64(bias[r], bias_lshift);
                gates[r] = sigmoid_q15(lut, ls, fx_sat16_64(fx_rshift_round64(acc, shift)));
            }
        }
        for (j = 0; j < H; ++j) {
            const int32_t ig = (int32_t)gates[j];                    /* i, Q0.15 */
            const int32_t fg = (int32_t)gates[H + j];                /* f, Q0.15 */
            const int32_t gg = 2 * (int32_t)gates[2u * H + j] - 32768; /* g = 2σ(2x) - 1 */
            const int32_t og = (int32_t)gates[3u * H + j];           /* o, Q0.15 */
            /* c = f·c + i·g at frac 15 + c_frac, one rounding back to c_frac; |c_t| <= t. */
            const int64_t cc = (int64_t)fg * c[j] + elt_lshift64((int64_t)ig * gg, cell_ig_lshift);
            int16_t tc;
            c[j] = fx_sat32_64(fx_rshift_round64(cc, 15));
            tc = (int16_t)(2 * (int32_t)sigmoid_q15(lut, ls, fx_sat16(fx_rshift_round32(
                               c[j], cell_tanh_rshift))) - 32768); /* tanh(c) = 2σ(2c) - 1 */
            h[j] = fx_sat16(fx_rshift_round32(og * (int32_t)tc, 15));
        }
        ELT_TRACE_S32("lstm.c", t, c, H);
        ELT_TRACE_S16("lstm.h", t, h, H);
    }
    for (j = 0; j < H; ++j) {
        z[j] = h[j];
    }
    ELT_TRACE_S16("z", 0u, z, H);
}
