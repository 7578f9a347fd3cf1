"""Integer MFCC front end, bit-exact twin of ``firmware/elt_mfcc_s16.c`` (docs/numeric.md §7).

int16 PCM in, the model's int16 input features out: window, block exponent, radix-2 FFT and real
split, power, mel filterbank, floor and log2, DCT, normalisation. Every constant is in
`codegen.ir.mfcc.QMfcc` (decided by `codegen.quantize.mfcc`); this module decides nothing.
Vectorised over frames with int64 numpy arrays (every intermediate is proven to fit int64).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from codegen.ir.mfcc import LOG_FRAC, LOG_INTERP_BITS, LOG_LUT_BITS, QMfcc

I64 = npt.NDArray[np.int64]
TraceFn = Callable[[str, I64], None]  # (stage, values [frames, ...]) for first-mismatch search


def _rshift_round_var(x: I64, s: I64) -> I64:
    """rshift_round with a per-row shift s (s > 0: rounded right shift; s ≤ 0: exact left)."""
    pos = np.maximum(s, 1)
    right = (x + (np.int64(1) << (pos - 1))) >> pos
    left = x << np.maximum(-s, 0)
    return np.where(s > 0, right, left)


def _rmul(a: I64, w: I64) -> I64:
    """rshift_round(a · w, 31): VQRDMULH.S32 for |w| < 2^31."""
    return (a * w + (np.int64(1) << 30)) >> 31


def bitlen(v: I64) -> I64:
    """Bit length of non-negative values < 2^53 (0 for 0): frexp's exponent is exact there."""
    return np.frexp(v.astype(np.float64))[1].astype(np.int64)


def block_normalise(u: I64, frame_bits: int) -> tuple[I64, I64]:
    """Per frame (rows of u): sh = bitlen(max |u|) − frame_bits and f = u scaled by 2^−sh."""
    sh = _bitlen64(np.abs(u).max(axis=-1)) - frame_bits
    return _rshift_round_var(u, sh[:, None]), sh


def fft_int(zr: I64, zi: I64, q: QMfcc) -> tuple[I64, I64]:
    """In-place-order radix-2 DIT FFT of [frames, N] in bit-reversed order (`q.bitrev`)."""
    N = q.n_cfft
    F = zr.shape[0]
    h = 1
    while h < N:
        ar = zr.reshape(F, N // (2 * h), 2, h)
        ai = zi.reshape(F, N // (2 * h), 2, h)
        a_r, a_i, b_r, b_i = ar[:, :, 0], ai[:, :, 0], ar[:, :, 1], ai[:, :, 1]
        m = np.arange(h) * (N // (2 * h))
        c, s = q.tw_cos[m], q.tw_sin[m]
        # t = b · (c − i s), each product rounded on its own
        t_r = _rmul(b_r, c) + _rmul(b_i, s)
        t_i = _rmul(b_i, c) - _rmul(b_r, s)
        # twiddle 1 (j = 0) and −i (j = h/2) are exact
        t_r[..., 0], t_i[..., 0] = b_r[..., 0], b_i[..., 0]
        if h >= 2:
            j = h // 2
            t_r[..., j], t_i[..., j] = b_i[..., j], -b_r[..., j]
        zr = np.stack([a_r + t_r, a_r - t_r], axis=2).reshape(F, N)
        zi = np.stack([a_i + t_i, a_i - t_i], axis=2).reshape(F, N)
        h *= 2
    return zr, zi


def power_int(f: I64, q: QMfcc) -> I64:
    """Frames f [frames, win] (block-normalised) → p [frames, bins] for bins bin_lo..bin_hi."""
    N = q.n_cfft
    F, W = f.shape
    pad = np.zeros((F, 2 * N), np.int64)
    pad[:, :W] = f
    zr = pad[:, 0::2][:, q.bitrev]
    zi = pad[:, 1::2][:, q.bitrev]
    Zr, Zi = fft_int(zr, zi, q)
    k = np.arange(q.bin_lo, q.bin_hi + 1)
    nk = (N - k) % N
    kk = k % N
    Ar = Zr[:, kk] + Zr[:, nk]
    Ai = Zi[:, kk] - Zi[:, nk]
    Br = Zr[:, kk] - Zr[:, nk]
    Bi = Zi[:, kk] + Zi[:, nk]
    c, s = q.split_cos, q.split_sin
    Xr = Ar + _rmul(Bi, c) - _rmul(Br, s)
    Xi = Ai - _rmul(Br, c) - _rmul(Bi, s)
    P = Xr * Xr + Xi * Xi
    return (P + (np.int64(1) << (q.power_shift - 1))) >> q.power_shift if q.power_shift else P


def mel_int(p: I64, q: QMfcc) -> I64:
    """Power [frames, bins] → mel accumulators [frames, n_mels] (exact int64 sums)."""
    out = np.zeros((p.shape[0], q.params.n_mels), np.int64)
    for m in range(q.params.n_mels):
        s0 = int(q.mel_start[m]) - q.bin_lo
        n, o = int(q.mel_len[m]), int(q.mel_off[m])
        out[:, m] = p[:, s0 : s0 + n] @ q.mel_w[o : o + n]
    return out


def log2_int(acc: I64, sh: I64, q: QMfcc) -> I64:
    """log2(mel + floor) in Q(LOG_FRAC): the two terms meet at the coarser exponent."""
    e = 2 * sh[:, None] + q.exp_offset + np.zeros_like(acc)
    ef = q.floor_exp
    d = e - ef
    # e ≥ ef: acc + F rounded to 2^e (a shift past 62 leaves 0); e < ef: acc rounded to 2^ef
    # rshift_round of a non-negative v as (v >> a) + bit a - 1 of v: no addition, no overflow
    fsh = np.clip(d, 1, 62)
    fm = np.int64(q.floor_mant)
    f_r = np.where(d > 0, (fm >> fsh) + ((fm >> (fsh - 1)) & 1), fm)
    ash = np.clip(-d, 1, 62)
    a_r = np.where(d < 0, (acc >> ash) + ((acc >> (ash - 1)) & 1), 0)
    s = np.where(d >= 0, acc + f_r, a_r + q.floor_mant)
    e_c = np.maximum(e, ef)
    b = _bitlen64(s) - 1  # s > 0 (the quantizer proves the floor never vanishes)
    top = LOG_LUT_BITS + LOG_INTERP_BITS  # mantissa bits below the leading one (truncated)
    t = np.where(b >= top, s >> np.maximum(b - top, 0), s << np.maximum(top - b, 0))
    idx = (t >> LOG_INTERP_BITS) & ((1 << LOG_LUT_BITS) - 1)
    r = t & ((1 << LOG_INTERP_BITS) - 1)
    lo = q.log2_lut[idx]
    hi = q.log2_lut[idx + 1]
    frac = lo + (((hi - lo) * r + (1 << (LOG_INTERP_BITS - 1))) >> LOG_INTERP_BITS)
    return ((b + e_c) << LOG_FRAC) + frac


def _bitlen64(v: I64) -> I64:
    """Exact bit length of positive int64 values (frexp is exact only below 2^53)."""
    hi = v >> 32
    return np.where(hi > 0, bitlen(hi) + 32, bitlen(v & 0xFFFFFFFF))


def features_int(L: I64, q: QMfcc) -> I64:
    """log2 mel [frames, n_mels] → int16 features [frames, n_mfcc] in the model's x format."""
    acc = L @ q.dct.T  # [frames, n_mfcc], exact (bounded < 2^63 by the quantizer)
    c = (acc + (np.int64(1) << (q.cep_shift - 1))) >> q.cep_shift
    prod = (c - q.norm_mean) * q.norm_mult
    sh = q.norm_shift
    x = (prod + (np.int64(1) << (sh - 1))) >> sh
    return np.clip(x, -32768, 32767)


def frames_int(frames: npt.ArrayLike, q: QMfcc, trace: TraceFn | None = None) -> I64:
    """int16 frames [n, win_length] → int16 features [n, n_mfcc] (as int64)."""
    x = np.asarray(frames)
    if x.ndim != 2 or x.shape[1] != q.params.win_length:
        raise ValueError(f"frames must have shape [n, {q.params.win_length}], got {x.shape}")
    u = x.astype(np.int64) * q.window  # exact: |u| <= 2^45
    f, sh = block_normalise(u, q.frame_bits)
    p = power_int(f, q)
    acc = mel_int(p, q)
    L = log2_int(acc, sh, q)
    out = features_int(L, q)
    if trace is not None:
        for name, v in (("mfcc.shift", sh[:, None]), ("mfcc.power", p), ("mfcc.mel", acc)):
            trace(name, v)
        trace("mfcc.log2", L)
        trace("mfcc.x", out)
    return out


def mfcc_int(pcm: npt.ArrayLike, q: QMfcc, *, chunk: int = 32) -> np.ndarray:
    """int16 clips [N, clip_samples] (or one clip) → int16 features [N, T, n_mfcc]."""
    x = np.asarray(pcm)
    single = x.ndim == 1
    if single:
        x = x[None, :]
    p = q.params
    if x.dtype != np.int16:
        raise ValueError(f"mfcc_int input dtype {x.dtype}: expected int16 PCM")
    if x.ndim != 2 or x.shape[1] < p.win_length:
        raise ValueError(
            f"mfcc_int input shape {list(np.shape(pcm))}: expected [N, samples >= {p.win_length}]"
        )
    T = 1 + (x.shape[1] - p.win_length) // p.hop_length
    idx = np.arange(T)[:, None] * p.hop_length + np.arange(p.win_length)[None, :]
    out = np.empty((x.shape[0], T, p.n_mfcc), np.int16)
    for s in range(0, x.shape[0], chunk):
        xs = x[s : s + chunk]
        fr = xs[:, idx].reshape(-1, p.win_length)
        out[s : s + chunk] = frames_int(fr, q).reshape(xs.shape[0], T, p.n_mfcc)
    return out[0] if single else out


class MfccStream:
    """``elt_mfcc_stream_t``: PCM in chunks of any size, the features of every frame as soon as
    its last sample arrives. Frame t covers samples [t·hop, t·hop + win) of the stream, so the
    frames equal `mfcc_int` over the concatenated samples whatever the chunking."""

    def __init__(self, q: QMfcc) -> None:
        self.q = q
        self.buf = np.zeros(0, np.int16)
        self.skip = 0

    def push(self, pcm: npt.ArrayLike) -> np.ndarray:
        """Append int16 samples; returns the completed frames' features [k, n_mfcc] (int16)."""
        x = np.asarray(pcm)
        if x.ndim != 1 or x.dtype != np.int16:
            raise ValueError(f"stream samples must be int16 [n], got {x.dtype} {x.shape}")
        p = self.q.params
        W, hop = p.win_length, p.hop_length
        frames = []
        i = 0
        while i < len(x):
            if self.skip:
                d = min(self.skip, len(x) - i)
                self.skip -= d
                i += d
                continue
            take = min(W - len(self.buf), len(x) - i)
            self.buf = np.concatenate([self.buf, x[i : i + take]])
            i += take
            if len(self.buf) == W:
                frames.append(self.buf.copy())
                self.buf = self.buf[hop:] if hop < W else np.zeros(0, np.int16)
                self.skip = max(hop - W, 0)
        if not frames:
            return np.zeros((0, p.n_mfcc), np.int16)
        return frames_int(np.stack(frames), self.q).astype(np.int16)
