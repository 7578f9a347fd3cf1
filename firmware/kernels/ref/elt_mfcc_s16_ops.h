/*
 * The integer MFCC front end's operations in plain C (firmware/elt_mfcc_s16.c includes this file
 * after its scalar stages; firmware/kernels/neon_a32/elt_mfcc_s16_ops.h is the NEON form of the
 * same functions): each one the scalar stage of elt_mfcc_s16.c from the start.
 */
#ifndef ELT_MFCC_S16_OPS_H
#define ELT_MFCC_S16_OPS_H

/* Window, block exponent and the radix-2 FFT; returns the block exponent. */
static inline int32_t mfcc_transform(const elt_mfcc_params_t *p, const int16_t *pcm, int32_t *z)
{
    const int32_t sh = mfcc_load(p, pcm, z);
    mfcc_fft(p, z, 1);
    return sh;
}

/* The power of the weighted bins. */
static void mfcc_power(const elt_mfcc_params_t *p, const int32_t *z, int64_t *pw)
{
    mfcc_power_from(z, pw, p->n_cfft, p->power_shift, p->bin_lo, p->split_cos, p->split_sin, 0,
                    p->n_bins);
}

/* Mel filterbank (exact int64 sums) and log2 of every filter. */
static void mfcc_mel(const elt_mfcc_params_t *p, elt_mfcc_work_t *w, int32_t sh)
{
    const mfcc_floor_t fl = mfcc_floor(p, sh);
    const int32_t M = p->n_mels;
    int32_t m;
    for (m = 0; m < M; ++m) {
        const int16_t *wt = p->mel_w + p->mel_off[m];
        const int64_t *pw = w->p + (p->mel_start[m] - p->bin_lo);
        w->logmel[m] = mfcc_log2(p, mfcc_mel_dot(pw, wt, p->mel_len[m]), &fl);
    }
}

/* DCT, cepstrum rounding and the normalisation to the model's x format. */
static void mfcc_dct(const elt_mfcc_params_t *p, const elt_mfcc_work_t *w, int16_t *out)
{
    mfcc_dct_from(p, w, out, 0, p->n_mels, p->n_mfcc);
}

/* n samples from s to d, d below s or apart. */
static void copy_s16(int16_t *d, const int16_t *s, int32_t n)
{
    copy_s16_from(d, s, 0, n);
}

/* n samples of little-endian int16 bytes at any alignment (a frame's payload) into d. */
static void copy_le16(int16_t *d, const uint8_t *s, int32_t n)
{
    copy_le16_from(d, s, 0, n);
}

#endif /* ELT_MFCC_S16_OPS_H */
