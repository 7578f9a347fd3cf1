/*
 * Integer MFCC front end (docs/numeric.md §7): int16 PCM frames in, the model's int16 input
 * features out. Python twin: codegen/intref/mfcc.py (frames_int, mfcc_int), bit-exact.
 *
 * window (Q15) -> block exponent per frame -> N-point complex radix-2 FFT of the packed real
 * frame (Q31 twiddles, one rounding per product) -> real split and power (int64) -> mel
 * filterbank (Q15 weights, int64 sums) -> floor + log2 (table, Q20) -> DCT (ln 2 folded in,
 * Q31) -> normalisation to the model's x format. The compiler emits every constant
 * (<prefix>mfcc_params.c from templates/mfcc_params.c.j2); the caller owns the work area.
 */
#ifndef ELT_MFCC_S16_H
#define ELT_MFCC_S16_H

#include <stdint.h>

#ifndef ELT_MFCC_N_MAX
#define ELT_MFCC_N_MAX 512 /* complex FFT points (n_fft / 2) */
#endif
#ifndef ELT_MFCC_BINS_MAX
#define ELT_MFCC_BINS_MAX 513 /* FFT bins the filters weight */
#endif
#ifndef ELT_MFCC_MELS_MAX
#define ELT_MFCC_MELS_MAX 64
#endif
#ifndef ELT_MFCC_WIN_MAX
#define ELT_MFCC_WIN_MAX 1024 /* samples per frame (win_length <= n_fft) */
#endif

typedef struct {
    int32_t win_length;        /* samples per frame */
    int32_t hop_length;        /* samples per hop */
    int32_t n_cfft;            /* N = n_fft / 2, a power of two */
    int32_t n_mels;            /* mel filters */
    int32_t n_mfcc;            /* coefficients out */
    int32_t bin_lo;            /* first weighted bin */
    int32_t n_bins;            /* weighted bins bin_lo .. bin_lo + n_bins - 1 */
    int32_t frame_bits;        /* bits of the largest windowed sample after the block exponent */
    int32_t power_shift;       /* p = rshift_round(Re^2 + Im^2, power_shift) */
    int32_t exp_offset;        /* mel value = acc * 2^(2 sh + exp_offset) */
    int32_t floor_exp;         /* log floor = floor_mant * 2^floor_exp */
    int32_t floor_mant;        /* in [2^30, 2^31) */
    int32_t cep_shift;         /* cepstrum Q16 = rshift_round(DCT sum, cep_shift) */
    int32_t fuse_k0;           /* NEON: first bin of the last FFT stage fused with the power */
    int32_t fuse_n;            /* NEON: its steps (0: not fused) */
    const int32_t *window;     /* [win_length] Q1.30 */
    const int32_t *tw_cos;     /* [N / 2] Q31 cos(2 pi m / N) */
    const int32_t *tw_sin;     /* [N / 2] Q31 sin(2 pi m / N) */
    const uint16_t *bitrev;    /* [N] */
    const int32_t *fuse_tw;    /* [fuse_n][32] the fused steps' twiddles (codegen/emit/mfcc.py) */
    const int32_t *fft_tw;     /* the NEON FFT's twiddles from stage h = 4 on, one block per step
                                  in the order it uses them (codegen/emit/mfcc.py) */
    const int32_t *split_cos;  /* [n_bins] Q31 cos(2 pi k / n_fft) */
    const int32_t *split_sin;  /* [n_bins] Q31 sin(2 pi k / n_fft) */
    const uint16_t *mel_start; /* [n_mels] first bin of filter m */
    const uint16_t *mel_len;   /* [n_mels] bins of filter m */
    const uint16_t *mel_off;   /* [n_mels] offset of filter m in mel_w */
    const int16_t *mel_w;      /* Q15 weights */
    const uint16_t *mel_blk;   /* [2 n_mels] per filter: byte offset of its first bin in p, and
                                  its blocks of four bins (NEON) */
    const uint32_t *mel_w4;    /* mel_w in those blocks, 0 past each filter's end */
    const int32_t *log2_lut;   /* [257] Q20 log2(1 + j / 256) */
    const int32_t *dct;        /* [n_mfcc][n_mels] Q31 ln2 * DCT-II (orthonormal) */
    const int32_t *norm_mean;  /* [n_mfcc] Q16 */
    const int32_t *norm_mult;  /* [n_mfcc] */
    const uint8_t *norm_shift; /* [n_mfcc] */
    const int32_t *dct4;       /* [ceil(n_mfcc / 4)][n_mels][4]: dct in passes of four (NEON) */
    const int32_t *norm4;      /* [ceil(n_mfcc / 4)][16]: per pass 4 means, 4 multipliers and
                                  4 x (-norm_shift, 0) (NEON) */
} elt_mfcc_params_t;

typedef struct {
    int32_t z[2 * ELT_MFCC_N_MAX];     /* FFT data, (re, im) interleaved */
    int64_t p[ELT_MFCC_BINS_MAX + 3];  /* power of the weighted bins (+ 3: the NEON mel sums read
                                          whole blocks of four; weight 0 past a filter's end) */
    int32_t logmel[ELT_MFCC_MELS_MAX]; /* log2 mel energies, Q20 */
    int32_t shift;                     /* the frame's block exponent sh */
} elt_mfcc_work_t;

/* Streaming: the samples of the frame being filled. A frame t covers samples
 * [t hop, t hop + win) of the stream, as elt_mfcc_clip_s16 over the whole stream. */
typedef struct {
    int16_t buf[ELT_MFCC_WIN_MAX]; /* buf[0 .. fill) = the next frame's first samples */
    int32_t fill;
    int32_t skip; /* samples to drop before the next frame starts (hop > win_length) */
} elt_mfcc_stream_t;

/* Start a new stream (no samples). */
void elt_mfcc_stream_reset(elt_mfcc_stream_t *s);

/* Append n samples (any n >= 0, chunks of any size), little-endian int16 at any alignment (2n
 * bytes, as a frame's payload holds them: they go straight into the frame window, no other copy);
 * every frame they complete goes to out [frames][n_mfcc], at most max_frames (the rest of the
 * chunk then waits: call again with pcm + 2 * the returned *used). Returns the frames written;
 * *used = samples consumed. */
int32_t elt_mfcc_stream_push(const elt_mfcc_params_t *p, elt_mfcc_stream_t *s, const uint8_t *pcm,
                             int32_t n, elt_mfcc_work_t *w, int16_t *out, int32_t max_frames,
                             int32_t *used);

/* One frame pcm [win_length] -> out [n_mfcc] (the model's x format). */
void elt_mfcc_frame_s16(const elt_mfcc_params_t *p, const int16_t *pcm, elt_mfcc_work_t *w,
                        int16_t *out);

/* Every whole frame of pcm [n_samples] (hop_length apart) -> out [frames][n_mfcc]; returns the
 * number of frames, 1 + (n_samples - win_length) / hop_length (0 if shorter than a window). */
int32_t elt_mfcc_clip_s16(const elt_mfcc_params_t *p, const int16_t *pcm, int32_t n_samples,
                          elt_mfcc_work_t *w, int16_t *out);

#endif /* ELT_MFCC_S16_H */
