/*
 * Integer MFCC front end (docs/numeric.md §7); twin: codegen/intref/mfcc.py. Every bound used
 * here is proven by codegen/quantize/mfcc.py (docs/numeric.md §7.2): FFT values < 2^31,
 * power and mel sums < 2^63.
 */
#include "elt_mfcc_s16.h"

#include "fw_fixed.h"

/* The stages have two forms with the same integers, Cortex-A9 NEON and plain C: elt_mfcc_s16_ops.h
 * of the build's kernel variant (firmware/kernels/<variant>/, codegen/target/sources.py). The
 * scalar stages below are the reference's, and the NEON form's for what its vector loops leave. */

/* rshift_round(a * w, 31): what VQRDMULH.S32 computes for |w| < 2^31 (ARM DDI 0406C A8.8.374). */
static inline int32_t mfcc_rmul(int32_t a, int32_t w)
{
    return (int32_t)(((int64_t)a * w + ((int64_t)1 << 30)) >> 31);
}

static inline int32_t mfcc_bitlen64(uint64_t v)
{
    return v ? 64 - __builtin_clzll(v) : 0;
}

/* The frame: u = x w (int64, exact, |u| <= 2^45), sh = bitlen(max |u|) - frame_bits,
 * f = rshift_round(u, sh) for sh > 0, u 2^-sh (exact) otherwise, packed as the complex
 * z[n] = f[2n] + i f[2n + 1] (zero past the window) in bit-reversed order. */
/* The frame in bit-reversed order, z[rev[n]] = f[2n] + i f[2n + 1]. */
static int32_t mfcc_load(const elt_mfcc_params_t *p, const int16_t *pcm, int32_t *z)
{
    const int32_t W = p->win_length, N = p->n_cfft;
    uint64_t m = 0;
    int32_t n, sh;
    for (n = 0; n < W; ++n) {
        const int64_t u = (int64_t)pcm[n] * p->window[n];
        const uint64_t a = u < 0 ? (uint64_t)0 - (uint64_t)u : (uint64_t)u;
        m = a > m ? a : m;
    }
    sh = mfcc_bitlen64(m) - p->frame_bits;
    for (n = 0; n < N; ++n) {
        int32_t v[2], c;
        for (c = 0; c < 2; ++c) {
            const int32_t i = 2 * n + c;
            const int64_t u = i < W ? (int64_t)pcm[i] * p->window[i] : 0;
            v[c] =
                (int32_t)(sh > 0 ? (u + ((int64_t)1 << (sh - 1))) >> sh : u * ((int64_t)1 << -sh));
        }
        z[2 * p->bitrev[n]] = v[0];
        z[2 * p->bitrev[n] + 1] = v[1];
    }
    return sh;
}

/* Radix-2 decimation-in-time butterflies over bit-reversed data, stages h = h0, 2 h0, ..,
 * N / 2; twiddle 1 and -i exact. */
static void mfcc_fft(const elt_mfcc_params_t *p, int32_t *z, int32_t h0)
{
    const int32_t N = p->n_cfft;
    int32_t h, g, j;
    for (h = h0; h < N; h <<= 1) {
        const int32_t step = N / (2 * h);
        for (j = 0; j < h; ++j) {
            const int32_t c = p->tw_cos[j * step], s = p->tw_sin[j * step];
            for (g = j; g < N; g += 2 * h) {
                int32_t *a = z + 2 * g, *b = z + 2 * (g + h);
                int32_t tr, ti;
                if (j == 0) {
                    tr = b[0];
                    ti = b[1];
                } else if (2 * j == h) {
                    tr = b[1];
                    ti = -b[0];
                } else {
                    tr = mfcc_rmul(b[0], c) + mfcc_rmul(b[1], s);
                    ti = mfcc_rmul(b[1], c) - mfcc_rmul(b[0], s);
                }
                b[0] = a[0] - tr;
                b[1] = a[1] - ti;
                a[0] = a[0] + tr;
                a[1] = a[1] + ti;
            }
        }
    }
}

/* Real split 2 X[k] = A + (-i) W^k B and the rounded power of bin k, twiddles c, s
 * (N, ps: the caller's copies of n_cfft and power_shift, which the power stores could alias). */
static inline __attribute__((always_inline)) int64_t mfcc_bin_power(const int32_t *z, int32_t N,
                                                                    int32_t ps, int32_t k,
                                                                    int32_t c, int32_t s)
{
    const int32_t kk = k & (N - 1), nk = (N - k) & (N - 1);
    const int32_t zr = z[2 * kk], zi = z[2 * kk + 1], yr = z[2 * nk], yi = z[2 * nk + 1];
    const int32_t ar = zr + yr, ai = zi - yi, br = zr - yr, bi = zi + yi;
    const int32_t xr = ar + mfcc_rmul(bi, c) - mfcc_rmul(br, s);
    const int32_t xi = ai - mfcc_rmul(br, c) - mfcc_rmul(bi, s);
    const int64_t P = (int64_t)xr * xr + (int64_t)xi * xi;
    return ps > 0 ? (P + ((int64_t)1 << (ps - 1))) >> ps : P;
}

/* log2(acc 2^e + floor) in Q20, e = 2 sh + exp_offset: both terms at the coarser exponent ec,
 * the same for every filter of a frame: s = acc + add (e > floor_exp: add = the floor rounded
 * to 2^e; e = floor_exp: add = the floor's mantissa) or s = rshift_round(acc, shift) + add (e <
 * floor_exp). rshift_round of a non-negative v as (v >> a) + bit a - 1 of v: no addition (acc
 * may be within 2^61 of the int64 limit). */
typedef struct {
    int64_t add;
    int32_t shift;
    int32_t ec;
} mfcc_floor_t;

static mfcc_floor_t mfcc_floor(const elt_mfcc_params_t *p, int32_t sh)
{
    const int32_t e = 2 * sh + p->exp_offset, d = e - p->floor_exp;
    const int64_t F = p->floor_mant;
    mfcc_floor_t fl;
    fl.add = F;
    fl.shift = 0;
    fl.ec = d > 0 ? e : p->floor_exp;
    if (d > 0) {
        const int32_t f = d > 62 ? 62 : d;
        fl.add = (F >> f) + ((F >> (f - 1)) & 1);
    } else if (d < 0) {
        fl.shift = -d > 62 ? 62 : -d;
    }
    return fl;
}

static int32_t mfcc_log2(const elt_mfcc_params_t *p, int64_t acc, const mfcc_floor_t *fl)
{
    const int32_t f = fl->shift;
    const int64_t s = (f > 0 ? (acc >> f) + ((acc >> (f - 1)) & 1) : acc) + fl->add;
    int32_t b, idx, r, lo, hi;
    uint32_t t;
    /* the 23 mantissa bits below the leading one (truncated): 8 index the table, 15
     * interpolate; (hi - lo) r < 2^31 (docs/numeric.md §7.2) */
    b = mfcc_bitlen64((uint64_t)s) - 1;
    t = b >= 23 ? (uint32_t)(s >> (b - 23)) : (uint32_t)(s << (23 - b));
    idx = (int32_t)((t >> 15) & 255u);
    r = (int32_t)(t & 32767u);
    lo = p->log2_lut[idx];
    hi = p->log2_lut[idx + 1];
    return (b + fl->ec) * (1 << 20) + lo + (((hi - lo) * r + (1 << 14)) >> 15);
}

/* The normalisation of cepstral sum acc to coefficient j of the model's x format. */
static inline __attribute__((always_inline)) int16_t mfcc_norm(const elt_mfcc_params_t *p,
                                                               int32_t j, int64_t acc)
{
    const int32_t c = (int32_t)fx_rshift_round64(acc, p->cep_shift);
    return fx_sat16_64(
        fx_rshift_round64((int64_t)(c - p->norm_mean[j]) * p->norm_mult[j], p->norm_shift[j]));
}

/* The variant's stages: mfcc_frame (window, block exponent, FFT, then mfcc_power, mfcc_mel,
 * mfcc_dct) and the stream's copy_s16 and copy_le16
 * (firmware/kernels/<variant>/elt_mfcc_s16_ops.h). */
#include "elt_mfcc_s16_ops.h"

void elt_mfcc_frame_s16(const elt_mfcc_params_t *p, const int16_t *pcm, elt_mfcc_work_t *w,
                        int16_t *out)
{
    mfcc_frame(p, pcm, w, out);
}

int32_t elt_mfcc_clip_s16(const elt_mfcc_params_t *p, const int16_t *pcm, int32_t n_samples,
                          elt_mfcc_work_t *w, int16_t *out)
{
    int32_t t, frames;
    if (n_samples < p->win_length) {
        return 0;
    }
    frames = 1 + (n_samples - p->win_length) / p->hop_length;
    for (t = 0; t < frames; ++t) {
        elt_mfcc_frame_s16(p, pcm + t * p->hop_length, w, out + t * p->n_mfcc);
    }
    return frames;
}

void elt_mfcc_stream_reset(elt_mfcc_stream_t *s)
{
    s->fill = 0;
    s->skip = 0;
}

int32_t elt_mfcc_stream_push(const elt_mfcc_params_t *p, elt_mfcc_stream_t *s, const uint8_t *pcm,
                             int32_t n, elt_mfcc_work_t *w, int16_t *out, int32_t max_frames,
                             int32_t *used)
{
    const int32_t W = p->win_length, hop = p->hop_length;
    int32_t i = 0, frames = 0;
    while (i < n && frames < max_frames) {
        int32_t take = W - s->fill;
        if (s->skip > 0) {
            const int32_t d = s->skip < n - i ? s->skip : n - i;
            s->skip -= d;
            i += d;
            continue;
        }
        if (take > n - i) {
            take = n - i;
        }
        copy_le16(s->buf + s->fill, pcm + 2 * i, take);
        s->fill += take;
        i += take;
        if (s->fill == W) {
            elt_mfcc_frame_s16(p, s->buf, w, out + frames * p->n_mfcc);
            ++frames;
            /* keep the overlap: the next frame starts one hop later */
            if (hop < W) {
                copy_s16(s->buf, s->buf + hop, W - hop);
                s->fill = W - hop;
            } else {
                s->fill = 0;
                s->skip = hop - W;
            }
        }
    }
    *used = i;
    return frames;
}
