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
 * Two implementations of the same contract over the same packed arrays (elt_lstm_s16.h): the
 * Cortex-A9 NEON kernel that codegen/emit/lstm_neon.py writes for each layer (p->kernel), and plain
 * scalar C here. What differs between them (the operands, σ, clearing and copying vectors, running
 * the generated kernel) is elt_lstm_s16_ops.h of the build's kernel variant
 * (firmware/kernels/<variant>/, codegen/target/sources.py).
 */
#include "elt_lstm_s16.h"

#include "fw_fixed.h"

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

/* Where the last layer's generated kernel writes per step (its role follows ELT_LSTM_POOL). */
static inline void *pool_out(const elt_lstm_s16_scratch_t *s)
{
#if ELT_LSTM_POOL == ELT_LSTM_POOL_MEAN
    return s->acc;
#elif ELT_LSTM_POOL == ELT_LSTM_POOL_MAX
    return s->hmax;
#else
    return s->h;
#endif
}

/* The variant's operations: operands_x, sigmoid_n, state_clear, pool_end and the generated
 * kernel's runs kernel_pool_run, kernel_seq_run, kernel_step_run
 * (firmware/kernels/<variant>/elt_lstm_s16_ops.h). */
#include "elt_lstm_s16_ops.h"

/* pre[r] = sat16(rshift_round(bias[r] + Σ W[r][k] u[k], s_r)), u = [hs (H); xs_t (F)], the
 * columns of block b in the packed order: even blocks hs then xs, odd blocks xs then hs, each
 * backwards. */
static void gates(const elt_lstm_s16_params_t *p, const int16_t *hs, const int16_t *xt,
                  int16_t *pre)
{
    const uint32_t H = p->hidden_size;
    const uint32_t F = p->input_size;
    const uint32_t K = p->cols;
    uint32_t b, r, k;
    for (b = 0; b < p->row_blocks; ++b) {
        const int odd = (b & 1u) != 0u;
        for (r = 0; r < ELT_LSTM_ROW_BLOCK; ++r) {
            const uint32_t row = b * ELT_LSTM_ROW_BLOCK + r;
            /* the block's k-th column of this row is wr[k * 16] */
            const int16_t *wr = p->w + b * K * ELT_LSTM_ROW_BLOCK + r;
            /* g rows: the first half of an odd block (i, f | g, o per group of 8 units) */
            const uint8_t sh = odd && r < ELT_LSTM_UNIT_GROUP ? p->g_rshift : p->gate_rshift;
            int32_t acc = p->bias[row]; /* every partial sum within the proven int32 bound */
            if (!odd) {
                for (k = 0; k < H; ++k) {
                    acc += (int32_t)wr[k * ELT_LSTM_ROW_BLOCK] * hs[k];
                }
                for (k = 0; k < F; ++k) {
                    acc += (int32_t)wr[(H + k) * ELT_LSTM_ROW_BLOCK] * xt[k];
                }
            } else {
                for (k = 0; k < F; ++k) {
                    acc += (int32_t)wr[k * ELT_LSTM_ROW_BLOCK] * xt[F - 1u - k];
                }
                for (k = 0; k < H; ++k) {
                    acc += (int32_t)wr[(F + k) * ELT_LSTM_ROW_BLOCK] * hs[H - 1u - k];
                }
            }
            pre[row] = fx_sat16(fx_rshift_round32(acc, sh));
        }
    }
}

/* The gate activations, c, h and hs of every (padded) unit; g = 2σ(2x) - 1 from the g rows'
 * pre-activation 2x. Unit j's rows: 32 (j / 8) + 8 gate + j % 8. */
static void cell(const elt_lstm_s16_params_t *p, const int16_t *pre, int32_t *c, int16_t *h,
                 int16_t *hs)
{
    const uint32_t hp = p->hidden_pad;
    const int16_t *lut = p->sigmoid_lut;
    const uint8_t ls = p->lut_shift;
    uint32_t j;
    for (j = 0; j < hp; ++j) {
        const int16_t *g =
            pre + 4u * ELT_LSTM_UNIT_GROUP * (j / ELT_LSTM_UNIT_GROUP) + j % ELT_LSTM_UNIT_GROUP;
        const int32_t ig = sigmoid_q15(lut, ls, g[0]);                          /* i, Q0.15 */
        const int32_t fg = sigmoid_q15(lut, ls, g[ELT_LSTM_UNIT_GROUP]);        /* f, Q0.15 */
        const int32_t gg = elt_tanh2_q15(lut, ls, g[2u * ELT_LSTM_UNIT_GROUP]); /* 2σ(2x) - 1 */
        const int32_t og = sigmoid_q15(lut, ls, g[3u * ELT_LSTM_UNIT_GROUP]);   /* o, Q0.15 */
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

void elt_lstm_s16_sigmoid(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *y, uint32_t n)
{
    sigmoid_n(p, x, y, n);
}

/* The pooling state before the first step: Σ h = 0, max h = INT16_MIN (padded units too). */
static void pool_clear(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s)
{
    uint32_t j;
    (void)p;
    (void)s;
    (void)j;
#if ELT_LSTM_POOL == ELT_LSTM_POOL_MEAN
    for (j = 0; j < p->hidden_pad; ++j) {
        s->acc[j] = 0;
    }
#elif ELT_LSTM_POOL == ELT_LSTM_POOL_MAX
    for (j = 0; j < p->hidden_pad; ++j) {
        s->hmax[j] = INT16_MIN;
    }
#endif
}

/* One plain-C step: gates, cell, traces, pooling. */
static void step_c(const elt_lstm_s16_params_t *p, const int16_t *xt,
                   const elt_lstm_s16_scratch_t *s, uint32_t t, int pool)
{
    const uint32_t H = p->hidden_size;
    uint32_t j;
    (void)t; /* trace index only */
    (void)H;
    (void)j;
    (void)pool;
    gates(p, s->hs, xt, s->act);
    cell(p, s->act, s->c, s->h, s->hs);
    ELT_TRACE_S32("lstm.c", t, s->c, H);
    ELT_TRACE_S16("lstm.h", t, s->h, H);
#if ELT_LSTM_POOL == ELT_LSTM_POOL_MEAN
    if (pool) {
        for (j = 0; j < H; ++j) {
            s->acc[j] += s->h[j]; /* |Σ| <= T 2^15 < 2^31 for T < 2^16 */
        }
    }
#elif ELT_LSTM_POOL == ELT_LSTM_POOL_MAX
    if (pool) {
        for (j = 0; j < H; ++j) {
            s->hmax[j] = s->h[j] > s->hmax[j] ? s->h[j] : s->hmax[j];
        }
    }
#endif
}

void elt_lstm_s16_run(const elt_lstm_s16_params_t *p, const int16_t *x,
                      const elt_lstm_s16_scratch_t *s, int16_t *z)
{
    const uint32_t F = p->input_size;
    const uint32_t T = p->num_frames;
    uint32_t t;

    state_clear(p, s);
    pool_clear(p, s);
    if (kernel_pool_run(p, x, s)) {
        pool_end(p, s, z);
        return;
    }
    operands_x(p, x, s->xs, T * F);
    for (t = 0; t < T; ++t) {
        /* all 4 Hp gate pre-activations from the old h, then the cell and the new h */
        step_c(p, s->xs + t * F, s, t, 1);
    }
    pool_end(p, s, z);
}

void elt_lstm_s16_run_seq(const elt_lstm_s16_params_t *p, const int16_t *x,
                          const elt_lstm_s16_scratch_t *s, int16_t *seq)
{
    const uint32_t F = p->input_size;
    const uint32_t H = p->hidden_size;
    const uint32_t T = p->num_frames;
    uint32_t t, j;

    state_clear(p, s);
    if (kernel_seq_run(p, x, s, seq)) {
        return;
    }
    operands_x(p, x, s->xs, T * F);
    for (t = 0; t < T; ++t) {
        step_c(p, s->xs + t * F, s, t, 0);
        for (j = 0; j < H; ++j) {
            seq[t * H + j] = s->h[j];
        }
    }
}

/*
 * Streaming: the same recurrence one step per call, for a caller that receives the frames one at
 * a time (the device's audio mode computes a feature frame per hop, docs/numeric.md §7.6). The
 * caller carries h, hs, c and the pooling state in s between calls; s->xs holds one frame's
 * operands (ELT_LSTM_XS_SLACK readable values after them, as for elt_lstm_s16_run). Step t of a
 * stream equals step t of elt_lstm_s16_run over the concatenated frames: the same kernel on the
 * same operands, the same pooling sums in the same order.
 */
void elt_lstm_s16_step_begin(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s,
                             int16_t *z)
{
    state_clear(p, s);
    if (z != 0) {
        pool_clear(p, s);
    }
}

void elt_lstm_s16_step(const elt_lstm_s16_params_t *p, const int16_t *x,
                       const elt_lstm_s16_scratch_t *s, uint32_t t, int16_t *z)
{
    operands_x(p, x, s->xs, p->input_size);
    if (kernel_step_run(p, s, z)) {
        return;
    }
    step_c(p, s->xs, s, t, z != 0);
}

void elt_lstm_s16_step_end(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s,
                           int16_t *z)
{
    pool_end(p, s, z);
}
