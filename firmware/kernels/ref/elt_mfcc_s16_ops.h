/*
 * The integer MFCC front end's operations in plain C (firmware/elt_mfcc_s16.c includes this file
 * after its scalar stages; firmware/kernels/neon_a32/elt_mfcc_s16_ops.h is the NEON form of the
 * same functions): each one the scalar stage of elt_mfcc_s16.c from the start.
 */
#ifndef ELT_MFCC_S16_OPS_H
#define ELT_MFCC_S16_OPS_H

/* The power of the weighted bins. */
static void mfcc_power(const elt_mfcc_params_t *p, const int32_t *z, int64_t *pw)
{
    const int32_t N = p->n_cfft, ps = p->power_shift, lo = p->bin_lo, nb = p->n_bins;
    const int32_t *cs = p->split_cos, *sn = p->split_sin;
    int32_t i;
    for (i = 0; i < nb; ++i) {
        pw[i] = mfcc_bin_power(z, N, ps, lo + i, cs[i], sn[i]);
    }
}

/* Mel filterbank (exact int64 sums) and log2 of every filter. */
static void mfcc_mel(const elt_mfcc_params_t *p, elt_mfcc_work_t *w, int32_t sh)
{
    const mfcc_floor_t fl = mfcc_floor(p, sh);
    const int32_t M = p->n_mels;
    int32_t m;
    int32_t i;
    for (m = 0; m < M; ++m) {
        const int16_t *wt = p->mel_w + p->mel_off[m];
        const int64_t *pw = w->p + (p->mel_start[m] - p->bin_lo);
        const int32_t len = p->mel_len[m];
        int64_t acc = 0;
        for (i = 0; i < len; ++i) {
            acc += pw[i] * wt[i];
        }
        w->logmel[m] = mfcc_log2(p, acc, &fl);
    }
}

/* DCT, cepstrum rounding and the normalisation to the model's x format. */
static void mfcc_dct(const elt_mfcc_params_t *p, const elt_mfcc_work_t *w, int16_t *out)
{
    const int32_t M = p->n_mels, J = p->n_mfcc;
    int32_t m, j;
    for (j = 0; j < J; ++j) {
        const int32_t *d = p->dct + j * M;
        int64_t acc = 0;
        for (m = 0; m < M; ++m) {
            acc += (int64_t)d[m] * w->logmel[m];
        }
        out[j] = mfcc_norm(p, j, acc);
    }
}

/* n samples from s to d, d below s or apart. */
static void copy_s16(int16_t *d, const int16_t *s, int32_t n)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        d[k] = s[k];
    }
}

/* n samples of little-endian int16 bytes at any alignment (a frame's payload) into d. */
static void copy_le16(int16_t *d, const uint8_t *s, int32_t n)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        d[k] = (int16_t)(uint16_t)(s[2 * k] | (s[2 * k + 1] << 8));
    }
}

/* One frame: window, block exponent, the radix-2 FFT, power, mel, DCT. */
static inline __attribute__((always_inline)) void
mfcc_frame(const elt_mfcc_params_t *p, const int16_t *pcm, elt_mfcc_work_t *w, int16_t *out)
{
    const int32_t sh = mfcc_load(p, pcm, w->z);
    mfcc_fft(p, w->z, 1);
    w->shift = sh;
    mfcc_power(p, w->z, w->p);
    mfcc_mel(p, w, sh);
    mfcc_dct(p, w, out);
}

#endif /* ELT_MFCC_S16_OPS_H */
