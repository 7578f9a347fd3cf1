/*
 * Integer MFCC front end (docs/numeric.md §7); twin: codegen/intref/mfcc.py. Every bound used
 * here is proven by codegen/quantize/mfcc.py (docs/numeric.md §7.2): FFT values < 2^31,
 * power and mel sums < 2^63.
 */
#include "elt_mfcc_s16.h"

#include "fw_fixed.h"

/* Two paths with the same integers: Cortex-A9 NEON (ARMv7-A Advanced SIMD), and plain scalar C
 * (host builds, other targets, -DELT_SCALAR). */
#include "elt_neon.h"

/* rshift_round(a * w, 31): what VQRDMULH.S32 computes for |w| < 2^31 (ARM DDI 0406C A8.8.374). */
static inline int32_t mfcc_rmul(int32_t a, int32_t w)
{
    return (int32_t)(((int64_t)a * w + ((int64_t)1 << 30)) >> 31);
}

static inline int32_t mfcc_bitlen64(uint64_t v)
{
    return v ? 64 - __builtin_clzll(v) : 0;
}

/* Window, block exponent and bit-reversed packing z[rev[n]] = f[2n] + i f[2n + 1]:
 * u = x w (int64, exact, |u| <= 2^45), sh = bitlen(max |u|) - frame_bits,
 * f = rshift_round(u, sh) for sh > 0, u 2^-sh (exact) otherwise. */
#if ELT_NEON
/* u = VMULL.S32(x, w); bitlen(max |u|) = bitlen(OR of |u|) (the highest set bit of any value
 * is the max's), so 64-bit lanes need only VORR; f = VRSHL.S64(u, -sh), which is
 * rshift_round(u, sh) for sh > 0 and the exact u 2^-sh otherwise (ARM DDI 0406C A8.8.374),
 * narrowed by VMOVN (|f| <= 2^frame_bits). f lands in natural order (the complex
 * z[n] = f[2n] + i f[2n+1] has the same layout) and is then permuted in place. */
static inline int64x2_t mfcc_abs64(int64x2_t u)
{
    const int64x2_t s = vshrq_n_s64(u, 63);
    return vsubq_s64(veorq_s64(u, s), s);
}

static int32_t mfcc_load(const elt_mfcc_params_t *p, const int16_t *pcm, int32_t *z)
{
    const int32_t W = p->win_length, N = p->n_cfft, W4 = W & ~3;
    uint64x2_t orv = vdupq_n_u64(0);
    uint64_t m;
    int32_t n, sh;
    for (n = 0; n < W4; n += 4) {
        const int32x4_t x = vmovl_s16(vld1_s16(pcm + n)), w = vld1q_s32(p->window + n);
        const int64x2_t u0 = vmull_s32(vget_low_s32(x), vget_low_s32(w));
        const int64x2_t u1 = vmull_s32(vget_high_s32(x), vget_high_s32(w));
        orv = vorrq_u64(orv, vreinterpretq_u64_s64(mfcc_abs64(u0)));
        orv = vorrq_u64(orv, vreinterpretq_u64_s64(mfcc_abs64(u1)));
    }
    m = vgetq_lane_u64(orv, 0) | vgetq_lane_u64(orv, 1);
    for (n = W4; n < W; ++n) {
        const int64_t u = (int64_t)pcm[n] * p->window[n];
        m |= u < 0 ? (uint64_t)0 - (uint64_t)u : (uint64_t)u;
    }
    sh = mfcc_bitlen64(m) - p->frame_bits;
    {
        const int64x2_t nsh = vdupq_n_s64(-sh);
        for (n = 0; n < W4; n += 4) {
            const int32x4_t x = vmovl_s16(vld1_s16(pcm + n)), w = vld1q_s32(p->window + n);
            const int64x2_t u0 = vmull_s32(vget_low_s32(x), vget_low_s32(w));
            const int64x2_t u1 = vmull_s32(vget_high_s32(x), vget_high_s32(w));
            vst1q_s32(z + n,
                      vcombine_s32(vmovn_s64(vrshlq_s64(u0, nsh)), vmovn_s64(vrshlq_s64(u1, nsh))));
        }
    }
    for (n = W4; n < W; ++n) {
        const int64_t u = (int64_t)pcm[n] * p->window[n];
        z[n] = (int32_t)(sh > 0 ? (u + ((int64_t)1 << (sh - 1))) >> sh : u * ((int64_t)1 << -sh));
    }
    for (n = W; n < 2 * N; ++n) {
        z[n] = 0;
    }
    for (n = 0; n < N; ++n) {
        const int32_t r = p->bitrev[n];
        if (r > n) {
            const int32_t t0 = z[2 * n], t1 = z[2 * n + 1];
            z[2 * n] = z[2 * r];
            z[2 * n + 1] = z[2 * r + 1];
            z[2 * r] = t0;
            z[2 * r + 1] = t1;
        }
    }
    return sh;
}
#else
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
#endif

/* Radix-2 decimation-in-time butterflies over bit-reversed data; twiddle 1 and -i exact.
 * The NEON path runs stages with h >= 4 four butterflies at a time with the generic product
 * for every j: rmul(b, 2^31 - 1) = b and rmul(b, 0) = 0 for |b| <= 2^30 (stage values are
 * proven < 2^31 / 8), so twiddles 1 and -i give the same integers there. */
static void mfcc_fft(const elt_mfcc_params_t *p, int32_t *z)
{
    const int32_t N = p->n_cfft;
    int32_t h, g, j;
    for (h = 1; h < N; h <<= 1) {
        const int32_t step = N / (2 * h);
#if ELT_NEON
        if (h >= 4) {
            const int32_t *sc = p->stage_cos + (h - 4), *ss = p->stage_sin + (h - 4);
            for (j = 0; j < h; j += 4) {
                const int32x4_t c = vld1q_s32(sc + j), s = vld1q_s32(ss + j);
                for (g = j; g < N; g += 2 * h) {
                    int32x4x2_t a = vld2q_s32(z + 2 * g), b = vld2q_s32(z + 2 * (g + h));
                    const int32x4_t tr =
                        vaddq_s32(vqrdmulhq_s32(b.val[0], c), vqrdmulhq_s32(b.val[1], s));
                    const int32x4_t ti =
                        vsubq_s32(vqrdmulhq_s32(b.val[1], c), vqrdmulhq_s32(b.val[0], s));
                    b.val[0] = vsubq_s32(a.val[0], tr);
                    b.val[1] = vsubq_s32(a.val[1], ti);
                    a.val[0] = vaddq_s32(a.val[0], tr);
                    a.val[1] = vaddq_s32(a.val[1], ti);
                    vst2q_s32(z + 2 * g, a);
                    vst2q_s32(z + 2 * (g + h), b);
                }
            }
            continue;
        }
#endif
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

/* Real split 2 X[k] = A + (-i) W^k B and the rounded power of the weighted bins. */
static void mfcc_power(const elt_mfcc_params_t *p, const int32_t *z, int64_t *pw)
{
    const int32_t N = p->n_cfft, ps = p->power_shift;
    int32_t i;
    for (i = 0; i < p->n_bins; ++i) {
        const int32_t k = p->bin_lo + i;
        const int32_t kk = k & (N - 1), nk = (N - k) & (N - 1);
        const int32_t zr = z[2 * kk], zi = z[2 * kk + 1], yr = z[2 * nk], yi = z[2 * nk + 1];
        const int32_t ar = zr + yr, ai = zi - yi, br = zr - yr, bi = zi + yi;
        const int32_t c = p->split_cos[i], s = p->split_sin[i];
        const int32_t xr = ar + mfcc_rmul(bi, c) - mfcc_rmul(br, s);
        const int32_t xi = ai - mfcc_rmul(br, c) - mfcc_rmul(bi, s);
        const int64_t P = (int64_t)xr * xr + (int64_t)xi * xi;
        pw[i] = ps > 0 ? (P + ((int64_t)1 << (ps - 1))) >> ps : P;
    }
}

/* log2(acc 2^e + floor) in Q20, e = 2 sh + exp_offset: both terms at the coarser exponent. */
static int32_t mfcc_log2(const elt_mfcc_params_t *p, int64_t acc, int32_t sh)
{
    const int32_t e = 2 * sh + p->exp_offset, d = e - p->floor_exp;
    const int32_t ec = d > 0 ? e : p->floor_exp;
    int64_t s;
    int32_t b, idx, r, lo, hi;
    uint32_t t;
    /* rshift_round of a non-negative v as (v >> a) + bit a - 1 of v: no addition (acc may be
     * within 2^61 of the int64 limit) */
    if (d > 0) {
        const int32_t f = d > 62 ? 62 : d;
        const int64_t F = p->floor_mant;
        s = acc + (F >> f) + ((F >> (f - 1)) & 1);
    } else if (d == 0) {
        s = acc + p->floor_mant;
    } else {
        const int32_t f = -d > 62 ? 62 : -d;
        s = (acc >> f) + ((acc >> (f - 1)) & 1) + p->floor_mant;
    }
    /* the 23 mantissa bits below the leading one (truncated): 8 index the table, 15
     * interpolate; (hi - lo) r < 2^31 (docs/numeric.md §7.2) */
    b = mfcc_bitlen64((uint64_t)s) - 1;
    t = b >= 23 ? (uint32_t)(s >> (b - 23)) : (uint32_t)(s << (23 - b));
    idx = (int32_t)((t >> 15) & 255u);
    r = (int32_t)(t & 32767u);
    lo = p->log2_lut[idx];
    hi = p->log2_lut[idx + 1];
    return (b + ec) * (1 << 20) + lo + (((hi - lo) * r + (1 << 14)) >> 15);
}

void elt_mfcc_frame_s16(const elt_mfcc_params_t *p, const int16_t *pcm, elt_mfcc_work_t *w,
                        int16_t *out)
{
    int32_t m, j, i;
    const int32_t sh = mfcc_load(p, pcm, w->z);
    w->shift = sh;
    mfcc_fft(p, w->z);
    mfcc_power(p, w->z, w->p);
    for (m = 0; m < p->n_mels; ++m) {
        const int16_t *wt = p->mel_w + p->mel_off[m];
        const int64_t *pw = w->p + (p->mel_start[m] - p->bin_lo);
        int64_t acc = 0;
        for (i = 0; i < p->mel_len[m]; ++i) {
            acc += pw[i] * wt[i];
        }
        w->logmel[m] = mfcc_log2(p, acc, sh);
    }
    for (j = 0; j < p->n_mfcc; ++j) {
        const int32_t *d = p->dct + j * p->n_mels;
        int64_t acc = 0;
        int32_t c, s = p->norm_shift[j];
        for (m = 0; m < p->n_mels; ++m) {
            acc += (int64_t)d[m] * w->logmel[m];
        }
        c = (int32_t)fx_rshift_round64(acc, p->cep_shift);
        out[j] =
            fx_sat16_64(fx_rshift_round64((int64_t)(c - p->norm_mean[j]) * p->norm_mult[j], s));
    }
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

int32_t elt_mfcc_stream_push(const elt_mfcc_params_t *p, elt_mfcc_stream_t *s, const int16_t *pcm,
                             int32_t n, elt_mfcc_work_t *w, int16_t *out, int32_t max_frames,
                             int32_t *used)
{
    const int32_t W = p->win_length, hop = p->hop_length;
    int32_t i = 0, frames = 0, k;
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
        for (k = 0; k < take; ++k) {
            s->buf[s->fill + k] = pcm[i + k];
        }
        s->fill += take;
        i += take;
        if (s->fill == W) {
            elt_mfcc_frame_s16(p, s->buf, w, out + frames * p->n_mfcc);
            ++frames;
            /* keep the overlap: the next frame starts one hop later */
            if (hop < W) {
                for (k = 0; k < W - hop; ++k) {
                    s->buf[k] = s->buf[k + hop];
                }
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
