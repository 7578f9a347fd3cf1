"""Fixed-point MFCC front end: every format, shift, table and overflow bound decided once
(docs/numeric.md §7). `codegen.intref.mfcc` (Python) and `firmware/elt_mfcc_s16.c` (C) replay
these integers and decide nothing.

The pipeline is `codegen.base.features.mfcc` step for step, then the model's normalisation
``(mfcc - mean) / std`` and its input quantisation (`codegen.base.features.quantize_features`):

1. **Window.** u = x · w, x the raw int16 sample, w the window in Q1.30: an exact int64
   product, |u| ≤ 2^45. (A Q15 window was measured to dominate the error in mel bands 60–70 dB
   below a frame's peak, docs/numeric.md §7.4.)
2. **Block exponent.** One shift per frame, sh = bitlen(max |u|) − frame_bits, so the frame's
   largest value has frame_bits bits (the most the FFT bounds below allow, at most 22; 19 for a
   640-sample window): f = rshift_round(u, sh) (sh > 0) or u · 2^−sh (exact).
   A quiet frame keeps its precision; an all-zero frame stays zero.
3. **FFT.** The n_fft-point real DFT as an N = n_fft/2-point complex radix-2 DIT FFT of
   z[n] = f[2n] + i f[2n+1] and the real split (Oppenheim & Schafer, "Discrete-Time Signal
   Processing", 3rd ed., §9.3; CMSIS-DSP `arm_rfft_q15.c` uses the same split). No per-stage
   scaling: step 2 leaves the headroom. Twiddles are Q31; every product is rounded on its own,
   rmul(a, w) = rshift_round(a · w, 31), which is NEON VQRDMULH.S32 exactly (|w| < 2^31).
   Twiddles 1 and −i are applied exactly (no multiply). The split returns 2·X[k].
4. **Power.** P[k] = Re² + Im² (int64), p[k] = rshift_round(P[k], power_shift).
5. **Mel.** mel[m] = Σ_k fb[k, m] · p[k], fb in Q15 (int64 sums). Its value is
   mel · 2^(2·sh + exp_offset).
6. **Floor and log.** ln(mel + log_floor): the floor is F·2^floor_exp (F in [2^30, 2^31)); both
   terms meet at the coarser of the two exponents (the finer one rounded to it), then
   log2 = (bitlen − 1 + exponent) + log2(1 + frac), the fraction from a 257-entry table indexed
   by the 8 mantissa bits below the leading one, linearly interpolated with the next 15 (the
   rest truncated), in Q(LOG_FRAC). ln 2 is folded into the DCT.
7. **DCT.** c[j] = rshift_round(Σ_m D'[j, m] · L[m], 31 + LOG_FRAC − CEP_FRAC), D' = ln 2 · the
   orthonormal DCT-II in Q31: the cepstrum in Q(CEP_FRAC), int32.
8. **Normalise and quantise.** x[j] = sat16(rshift_round((c[j] − mean_j) · mult_j, shift_j)),
   mean_j in Q(CEP_FRAC), mult_j = round(2^(shift_j − CEP_FRAC + frac x) / std_j) < 2^31:
   the int16 features in the model's input format x_fmt.

Overflow: `quantize_mfcc` bounds every intermediate in Python integers and raises
`CodegenError` naming the stage and the bound if one exceeds its word.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import fft as sfft

from codegen.base.errors import CodegenError, ConfigError
from codegen.base.features import MfccParams, _tables
from codegen.base.qformat import QFormat
from codegen.ir.mfcc import (
    CEP_FRAC,
    DCT_FRAC,
    FB_FRAC,
    FLOOR_MANT_BITS,
    FRAME_BITS_MAX,
    FRAME_BITS_MIN,
    INT32_MAX,
    INT64_MAX,
    LOG_FRAC,
    LOG_INTERP_BITS,
    TWIDDLE_FRAC,
    WINDOW_FRAC,
    QMfcc,
)


def _q(x: np.ndarray, frac: int, lo: int, hi: int) -> np.ndarray:
    return np.clip(np.round(np.asarray(x, np.float64) * 2.0**frac), lo, hi).astype(np.int64)


def _check(bounds: dict[str, tuple[int, int]]) -> None:
    for stage, (b, lim) in bounds.items():
        if b > lim:
            raise CodegenError(
                f"MFCC front end: {stage} can reach {b} (2^{math.log2(b):.2f}), beyond its word "
                f"limit {lim}; shorten the window (win_ms) or the FFT (n_fft)"
            )


def quantize_mfcc(
    params: MfccParams,
    norm_mean: Any,
    norm_std: Any,
    x_fmt: QFormat,
) -> QMfcc:
    """Decide the integer front end for ``params`` and the model's normalisation."""
    p = params
    n_fft = p.n_fft
    if n_fft < 8 or n_fft & (n_fft - 1):
        raise ConfigError(
            f"MFCC parameter n_fft={n_fft}: the integer front end needs a power of two >= 8"
        )
    mean = np.asarray(norm_mean, np.float64).reshape(-1)
    std = np.asarray(norm_std, np.float64).reshape(-1)
    if mean.shape != (p.n_mfcc,) or std.shape != (p.n_mfcc,):
        raise ConfigError(
            f"normalisation has {mean.size} means and {std.size} stds; n_mfcc = {p.n_mfcc}"
        )
    if not (np.all(np.isfinite(std)) and np.all(std > 0) and np.all(np.isfinite(mean))):
        raise ConfigError(f"normalisation std must be positive and finite, got {std.tolist()}")
    N = n_fft // 2
    win_f, fb_f, _ = _tables(p)
    window = _q(win_f.astype(np.float64), WINDOW_FRAC, 0, INT32_MAX)
    m = np.arange(N // 2)
    tw_cos = _q(np.cos(2 * np.pi * m / N), TWIDDLE_FRAC, -INT32_MAX, INT32_MAX)
    tw_sin = _q(np.sin(2 * np.pi * m / N), TWIDDLE_FRAC, -INT32_MAX, INT32_MAX)
    bits = N.bit_length() - 1
    bitrev = np.array([int(f"{i:0{bits}b}"[::-1], 2) if bits else 0 for i in range(N)])

    # filters in float64 (features._tables rounds them to float32: use the same float32 values)
    fb = fb_f.astype(np.float64)
    used = np.flatnonzero(fb.any(axis=1))
    bin_lo, bin_hi = int(used.min()), int(used.max())
    k = np.arange(bin_lo, bin_hi + 1)
    split_cos = _q(np.cos(2 * np.pi * k / n_fft), TWIDDLE_FRAC, -INT32_MAX, INT32_MAX)
    split_sin = _q(np.sin(2 * np.pi * k / n_fft), TWIDDLE_FRAC, -INT32_MAX, INT32_MAX)
    starts: list[int] = []
    lens: list[int] = []
    offs: list[int] = []
    taps: list[int] = []
    for j in range(p.n_mels):
        w = _q(fb[:, j], FB_FRAC, 0, 32767)
        nz = np.flatnonzero(w)
        if nz.size == 0:
            raise ConfigError(f"mel filter {j} has no weight >= 2^-{FB_FRAC + 1}")
        lo, hi = int(nz.min()), int(nz.max())
        starts.append(lo)
        lens.append(hi - lo + 1)
        offs.append(len(taps))
        taps.extend(int(v) for v in w[lo : hi + 1])
    mel_w = np.asarray(taps, np.int64)

    # --- bounds (docs/numeric.md §7.2) ---------------------------------------------------
    bounds: dict[str, tuple[int, int]] = {}
    u_max = 32768 * int(window.max())
    bounds["windowed sample x*w"] = (u_max, INT64_MAX)
    # Every FFT stage value is a DFT of a subsequence of z plus rounding: each real and
    # imaginary part is at most Σ|f| over the frame; the rounding of the 2 products per term
    # adds at most 1 per stage and doubles through the later butterflies: < 2^(stages + 1).
    # The split: A = Z[k] ± Z[N-k] (2 stage_max), rotated part ≤ 2 stage_max (|c| + |s|) + 1.
    # rshift_round may round the largest sample up to exactly 2^frame_bits.
    slack = 1 << (bits + 1)

    def fft_bounds(fb: int) -> tuple[int, int]:
        stage = p.win_length * (1 << fb) + slack
        return stage, 2 * stage + math.ceil(2 * stage * math.sqrt(2)) + 1

    frame_bits = FRAME_BITS_MAX
    while frame_bits > 1 and fft_bounds(frame_bits)[1] > INT32_MAX:
        frame_bits -= 1
    if frame_bits < FRAME_BITS_MIN:
        raise CodegenError(
            f"MFCC front end: a {p.win_length}-sample window leaves {frame_bits} bits per "
            f"sample for the int32 FFT stage values (at least {FRAME_BITS_MIN} needed); "
            "shorten the window (win_ms)"
        )
    stage_max, split_max = fft_bounds(frame_bits)
    bounds["FFT stage value"] = (stage_max, INT32_MAX)
    bounds["real split 2X[k]"] = (split_max, INT32_MAX)
    # the NEON butterflies apply twiddles 1 and -i as products: exact for |b| <= 2^30
    bounds["FFT operand (NEON twiddle 1, -i)"] = (stage_max, 1 << 30)
    power_max = 2 * split_max * split_max
    bounds["power Re^2 + Im^2"] = (power_max, INT64_MAX)
    wsum = max(int(mel_w[o : o + n].sum()) for o, n in zip(offs, lens, strict=True))
    power_shift = 0
    while ((power_max >> power_shift) + 1) * wsum > INT64_MAX:
        power_shift += 1
    p_max = (power_max >> power_shift) + 1
    mel_max = p_max * wsum
    bounds["mel energy sum"] = (mel_max, INT64_MAX)
    # value of the windowed frame: f = u 2^-sh, u = x_float w 2^(15 + WINDOW_FRAC); the real
    # split gives 2X, so the power is P 2^(2 (sh - 15 - WINDOW_FRAC - 1)), p = P >> power_shift
    # and mel = acc 2^(2 (sh - 16 - WINDOW_FRAC) + power_shift - FB_FRAC)
    exp_offset = power_shift - 2 * (15 + WINDOW_FRAC + 1) - FB_FRAC
    e_floor = math.floor(math.log2(p.log_floor)) - (FLOOR_MANT_BITS - 1)
    floor_mant = int(round(p.log_floor * 2.0 ** (-e_floor)))
    if not 2**30 <= floor_mant < 2**31:
        raise CodegenError(f"log floor mantissa {floor_mant} outside [2^30, 2^31)")
    sh_max = u_max.bit_length() - frame_bits
    sh_min = -frame_bits
    e_max = 2 * sh_max + exp_offset
    e_min = 2 * sh_min + exp_offset
    if e_max > e_floor and floor_mant >> (e_max - e_floor) == 0:
        raise CodegenError(
            f"log floor {p.log_floor} vanishes below the loudest frame's resolution 2^{e_max}"
        )
    # sum at the coarser exponent: mel_acc + (F rounded) or (mel rounded) + F; both roundings
    # are (v >> a) + ((v >> (a - 1)) & 1), rshift_round without the addition (v >= 0)
    bounds["mel + floor"] = (mel_max + floor_mant, INT64_MAX)
    log_abs = (63 + max(abs(e_min), abs(e_max), abs(e_floor)) + 1) << LOG_FRAC
    bounds["log2 mel"] = (log_abs, INT32_MAX)
    lut = _q(np.log2(1.0 + np.arange(257) / 256.0), LOG_FRAC, 0, INT32_MAX)
    bounds["log2 interpolation"] = (
        int(np.diff(lut).max()) * ((1 << LOG_INTERP_BITS) - 1) + (1 << (LOG_INTERP_BITS - 1)),
        INT32_MAX,
    )

    # the orthonormal DCT-II of features.py in float64 (features._tables keeps a float32 copy)
    dct_ref = sfft.dct(np.eye(p.n_mels), type=2, norm="ortho", axis=0).T[:, : p.n_mfcc]
    dct = _q((dct_ref * math.log(2.0)).T, DCT_FRAC, -INT32_MAX, INT32_MAX)  # [n_mfcc, n_mels]
    dct_acc = int(np.abs(dct).sum(axis=1).max()) * log_abs
    bounds["DCT sum"] = (dct_acc, INT64_MAX)
    cep_shift = DCT_FRAC + LOG_FRAC - CEP_FRAC
    cep_max = (dct_acc >> cep_shift) + 1
    bounds["cepstrum"] = (cep_max, INT32_MAX)

    mean_q = _q(mean, CEP_FRAC, -INT32_MAX, INT32_MAX)
    mults, shifts = [], []
    for s in std:
        # largest shift whose multiplier still fits an int32
        scale = 2.0 ** (x_fmt.frac_bits - CEP_FRAC) / s
        shift = int(math.floor(math.log2(INT32_MAX / scale)))
        mult = int(round(scale * 2.0**shift))
        while mult > INT32_MAX:
            shift -= 1
            mult = int(round(scale * 2.0**shift))
        if shift < 1:
            raise CodegenError(
                f"normalisation std {s}: its multiplier needs a shift < 1 for x {x_fmt.name}"
            )
        mults.append(mult)
        shifts.append(shift)
    diff_max = cep_max + int(np.abs(mean_q).max())
    bounds["normalised product"] = (
        diff_max * max(mults) + (1 << (max(shifts) - 1)),
        INT64_MAX,
    )
    bounds["cepstrum - mean"] = (diff_max, INT32_MAX)
    _check(bounds)
    return QMfcc(
        params=p,
        x_frac=x_fmt.frac_bits,
        frame_bits=frame_bits,
        n_cfft=N,
        window=window,
        tw_cos=tw_cos,
        tw_sin=tw_sin,
        bitrev=bitrev.astype(np.int64),
        bin_lo=bin_lo,
        bin_hi=bin_hi,
        split_cos=split_cos,
        split_sin=split_sin,
        power_shift=power_shift,
        mel_start=np.asarray(starts, np.int64),
        mel_len=np.asarray(lens, np.int64),
        mel_off=np.asarray(offs, np.int64),
        mel_w=mel_w,
        exp_offset=exp_offset,
        floor_mant=floor_mant,
        floor_exp=e_floor,
        log2_lut=lut,
        dct=dct,
        cep_shift=cep_shift,
        norm_mean=mean_q,
        norm_mult=np.asarray(mults, np.int64),
        norm_shift=np.asarray(shifts, np.int64),
        bounds=bounds,
    )


def quantize_mfcc_for(q: Any) -> QMfcc:
    """The front end of a fixed model (`codegen.ir.nodes.QModel`): its feature settings, its
    normalisation statistics and its input format."""
    meta = q.source.meta
    return quantize_mfcc(
        MfccParams.from_dict(meta.features), meta.norm_mean, meta.norm_std, q.x_fmt
    )
