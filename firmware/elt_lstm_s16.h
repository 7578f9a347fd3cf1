/*
 * Integer LSTM encoder, int16 activations and weights, int32 gate accumulator and cell state
 * (docs/numeric.md §4).
 *
 * One kernel for every model: the compiler (codegen/quantize/model.py) decides every format and
 * shift, and codegen/emit/c.py (`lstm_layout`) emits the weights in the kernel's layout with the
 * sizes as an elt_lstm_s16_params_t; the caller provides the scratch (CMSIS-NN style: constant
 * parameters apart from caller-provided buffers, no heap). codegen/intref/lstm.py mirrors the
 * arithmetic, integer for integer.
 *
 * Builds with the neon_a32 kernel variant run each layer's build-specialised NEON kernel
 * (codegen/emit/lstm_neon.py, in the model source); builds with the ref variant (host builds,
 * other targets) run the plain scalar C of the same contract over the same arrays
 * (firmware/kernels/, codegen/target/sources.py).
 */
#ifndef ELT_LSTM_S16_H
#define ELT_LSTM_S16_H

#include <stdint.h>

#include "elt_trace.h"

/* Gate order of the weight rows: torch.nn.LSTM's i, f, g, o. */
#define ELT_LSTM_GATES 4u
/* Gate rows per block of the packed weights (four int32x4 accumulators). */
#define ELT_LSTM_ROW_BLOCK 16u
/* Hidden units per group: rows are stored by groups of 8 units, block 2u = the i and f rows of
 * units 8u..8u+7, block 2u + 1 their g and o rows (codegen.emit.lstm_neon.row_gate_unit). */
#define ELT_LSTM_UNIT_GROUP 8u
/* Hidden units are padded to a multiple of this (one int16x8 vector). */
#define ELT_LSTM_HIDDEN_ALIGN 8u
/* Operands per d-register of VMLAL scalars (the NEON kernel loads xs in whole groups). */
#define ELT_LSTM_COL_GROUP 4u
/* Readable int16 after the last frame of xs: the NEON kernel loads a frame's operands in whole
 * groups of 4, up to 3 values past the frame (they meet no weight). */
#define ELT_LSTM_XS_SLACK 4u
/* σ table: index = min(|x|, 32767) >> 7, 256 intervals of 1/16 over [0, 16]. */
#define ELT_LSTM_LUT_SHIFT 7u
/* The same table as pairs (sigmoid_pairs): word j = T[j] | (T[j+1] - T[j]) << 16. */
#define ELT_LSTM_SIGMOID_PAIRS_SIZE 256u

/* The Cortex-A9 NEON path: codegen/emit/lstm_neon.py writes each layer's kernel into the model
 * source; builds with the ref kernel variant run the plain C of the same
 * contract over the same arrays. */
#include "elt_neon.h"

/* What the encoder hands on as z (the input of the final Linear), a compile-time choice
 * (-DELT_LSTM_POOL, codegen/emit/flags.py model_cflags): the last step's hidden state h_T, the mean
 * of h_t over the T steps, or their element-wise maximum. */
#define ELT_LSTM_POOL_LAST 0
#define ELT_LSTM_POOL_MEAN 1
#define ELT_LSTM_POOL_MAX 2
#ifndef ELT_LSTM_POOL
#define ELT_LSTM_POOL ELT_LSTM_POOL_LAST
#endif

/* The constants of a layer's NEON kernel (the model source emits one per layer beside the
 * kernel; codegen/emit/lstm_neon.py KCONST holds the byte offsets, the generated source asserts
 * them). */
typedef struct {
    /* d0-d7 of the kernel's cell (one VLDM), by the table form the kernel was generated for
     * (codegen/emit/lstm_neon.py): pairs: &sigmoid_pairs[0] four times (q0), 127 in every int16
     * lane (q1), 32768 in every int16 lane (q2), zeros (q3); full (the bench's before): 8 words
     * 0 (q0, q1: f is gathered into their even int16 lanes, so they hold it as int32),
     * &sigmoid_full[32768] four times (q2), then &tanh_full[32768] four times (q3) */
    const void *tables[16];
    const int16_t *w;
    const int32_t *bias;
} elt_lstm_s16_kconst_t;

/* The arguments of a layer's NEON kernel (r0 points here; codegen/emit/lstm_neon.py KARGS). */
typedef struct {
    const int16_t *xs; /* the first frame's operands, frames F apart */
    int16_t *hs;       /* [Hp] operand state, updated */
    int32_t *c;        /* [Hp] cell state, updated */
    int16_t *act;      /* [4 Hp] scratch: the gate pre-activations of one step */
    /* per step, by the layer's role: h [Hp] (last; the last step's only), the sequence [T][H]
     * with Hp - H values of slack after it (first of two layers), Σ h int32 [Hp] (mean),
     * max h int16 [Hp] (max) */
    void *out;
    uint32_t steps; /* >= 1 */
} elt_lstm_s16_kargs_t;

typedef void (*elt_lstm_s16_kernel_t)(const elt_lstm_s16_kargs_t *a);

typedef struct {
    uint16_t input_size;      /* F */
    uint16_t hidden_size;     /* H */
    uint16_t num_frames;      /* T */
    uint16_t hidden_pad;      /* Hp: H rounded up to ELT_LSTM_HIDDEN_ALIGN */
    uint16_t cols;            /* K = H + F operand columns u = [hs (H); xs (F)] */
    uint16_t row_blocks;      /* 4 Hp / ELT_LSTM_ROW_BLOCK (Hp % 8 = 0: exact) */
    uint8_t x_opshift;        /* xs = rshift_round(x, x_opshift) (0: identity) */
    uint8_t h_opshift;        /* hs = rshift_round(h, h_opshift) */
    uint8_t cell_ig_lshift;   /* i·g (frac 30) -> frac 15 + c_frac, beside f·c */
    uint8_t cell_tanh_rshift; /* c (c_frac) -> 2c in Q4.11 */
    uint8_t lut_shift;        /* σ table index shift: ELT_LSTM_LUT_SHIFT */
    uint8_t gate_rshift;      /* A - 11: rows of i, f, o -> Q4.11 */
    uint8_t g_rshift;         /* A - 12: rows of g -> 2x in Q4.11 */
    /* [row_blocks][cols][16] int16, 16-byte aligned: per block the columns in the kernel's
     * order (even blocks u ascending, odd blocks descending), each column's 16 rows in order;
     * rows grouped by 8 units (ELT_LSTM_UNIT_GROUP), pad units' rows 0 */
    const int16_t *w;
    const int32_t *bias;        /* [4 Hp] b_ih + b_hh at A fraction bits, rows as in w */
    const int16_t *sigmoid_lut; /* [(32768 >> lut_shift) + 1], σ over [0, 16], Q0.15 */
    /* [256] the same table as pairs T[j] | (T[j+1] - T[j]) << 16 (NEON: one word gather per σ
     * brings both knots' data, then the interpolation of elt_sigmoid_q15; 1 KiB) */
    const uint32_t *sigmoid_pairs;
    /* the layer's NEON kernel (ELT_NEON builds; NULL otherwise; the ref variant never calls it) */
    elt_lstm_s16_kernel_t kernel;
    int32_t pool_recip; /* mean pooling: round(2^pool_shift / T) */
    uint8_t pool_shift; /* mean pooling: z = sat16(rshift_round(Σ h_t · recip, shift)) */
} elt_lstm_s16_params_t;

typedef struct {
    /* [T F] rounded operands of every frame, ELT_LSTM_XS_SLACK readable int16 after them */
    int16_t *xs;
    int16_t *hs;   /* [Hp] rounded hidden state, the operand of W_hh */
    int16_t *h;    /* [Hp] hidden state, Q0.15 */
    int32_t *c;    /* [Hp] cell state, int32 c format (|c_t| <= t, proven) */
    int16_t *act;  /* [4 Hp] gate pre-activations, Q4.11 (g rows hold 2x) */
    int32_t *acc;  /* [Hp] mean pooling: Σ_t h_t (NULL otherwise) */
    int16_t *hmax; /* [Hp] max pooling: the running maximum of h_t (NULL otherwise) */
} elt_lstm_s16_scratch_t;

/* σ(x) for x in Q4.11, Q0.15 result in [1, 32767]: table lookup with linear interpolation on
 * |x|, mirrored for x < 0 (σ(-x) = 1 - σ(x)). */
int16_t elt_sigmoid_q15(const int16_t *lut, uint8_t lut_shift, int16_t x);

/* tanh(x) = 2σ(2x) - 1, x2 = 2x in Q4.11, Q0.15 result in [-32766, 32766]. */
int16_t elt_tanh2_q15(const int16_t *lut, uint8_t lut_shift, int16_t x2);

/* y[k] = σ(x[k]) for n Q4.11 inputs with the kernel's own σ (NEON: 8 lanes at a time from
 * sigmoid_pairs; equal to elt_sigmoid_q15 for every input). */
void elt_lstm_s16_sigmoid(const elt_lstm_s16_params_t *p, const int16_t *x, int16_t *y, uint32_t n);

/* Run the LSTM over x [T][F] (int16 features) from h = c = 0; write z [H] (Q0.15): h_T, or the
 * mean or maximum of h_t over the steps (ELT_LSTM_POOL).
 * Trace points (ELT_TRACE builds): "lstm.c" and "lstm.h" after every step t, "z" at the end. */
void elt_lstm_s16_run(const elt_lstm_s16_params_t *p, const int16_t *x,
                      const elt_lstm_s16_scratch_t *s, int16_t *z);

/* The same recurrence, writing every step's hidden state h_t to seq [T][H] (Q0.15) instead of
 * z: the input of a second stacked layer. No pooling. seq has Hp - H int16 of slack after it
 * (the NEON kernel stores whole groups of 8 units; the pad units' h is 0). */
void elt_lstm_s16_run_seq(const elt_lstm_s16_params_t *p, const int16_t *x,
                          const elt_lstm_s16_scratch_t *s, int16_t *seq);

/* Streaming, one step per call (the caller carries h, hs, c and the pooling state in s; s->xs
 * holds one frame's operands with ELT_LSTM_XS_SLACK readable values after it). begin: h = c = 0
 * and the pooling state cleared; step: frame x [F] (int16 features), step index t (traces);
 * end: z [H] as elt_lstm_s16_run writes it after the same frames. z NULL in begin and step: no
 * pooling (the first of two stacked layers). The steps of a stream of T frames give the same
 * integers as elt_lstm_s16_run over them. */
void elt_lstm_s16_step_begin(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s,
                             int16_t *z);
void elt_lstm_s16_step(const elt_lstm_s16_params_t *p, const int16_t *x,
                       const elt_lstm_s16_scratch_t *s, uint32_t t, int16_t *z);
void elt_lstm_s16_step_end(const elt_lstm_s16_params_t *p, const elt_lstm_s16_scratch_t *s,
                           int16_t *z);

#endif /* ELT_LSTM_S16_H */
