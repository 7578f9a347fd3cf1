"""MFCC front end in numpy, as in ARM's KWS work (Hello Edge: 40 ms window, 20 ms hop, 10 MFCC).

For a 1-s clip at 16 kHz: 640-sample frames every 320 samples give 1 + (16000 - 640) // 320 = 49
frames (no padding). Each frame is Hann-windowed, zero-padded to `n_fft` (the next power of two,
1024), turned into a power spectrum, pooled by `n_mels` triangular filters on the HTK mel scale
between `fmin` and `fmax` (TF `audio_ops.mfcc` defaults: 40 channels, 20–4000 Hz), floored at
`log_floor`, logged and decorrelated with an orthonormal DCT-II; the first `n_mfcc` coefficients
are kept. int16 input is scaled by 1/32768; float input is taken as already in [-1, 1].

`MfccParams` is recorded with a model (`to_dict`/`from_dict`), so the device and the reference
compute the same features.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
from scipy import fft as sfft

from codegen.base.errors import ConfigError

WINDOWS: tuple[str, ...] = ("hann", "hamming")


@dataclass(frozen=True)
class MfccParams:
    sample_rate: int = 16000
    n_mfcc: int = 10
    win_ms: float = 40.0
    hop_ms: float = 20.0
    n_mels: int = 40
    fmin: float = 20.0
    fmax: float = 4000.0
    n_fft: int = 1024
    window: str = "hann"  # periodic Hann (or Hamming)
    log_floor: float = 1e-6  # added to the mel energies before the natural log
    clip_samples: int = 16000

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def win_length(self) -> int:
        return int(round(self.win_ms * self.sample_rate / 1000.0))

    @property
    def hop_length(self) -> int:
        return int(round(self.hop_ms * self.sample_rate / 1000.0))

    @property
    def n_frames(self) -> int:
        return 1 + (self.clip_samples - self.win_length) // self.hop_length

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MfccParams:
        """Parse a dict written by `to_dict`; unknown keys and bad values name the key."""
        if not isinstance(d, dict):
            raise ConfigError(f"MFCC parameters: expected a mapping, got {type(d).__name__}")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ConfigError(
                f"MFCC parameters: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(known)}"
            )
        kwargs: dict[str, Any] = {}
        for key, value in d.items():
            kind = known[key].type
            if kind == "int":
                ok = isinstance(value, int) and not isinstance(value, bool)
            elif kind == "float":
                ok = isinstance(value, int | float) and not isinstance(value, bool)
                value = float(value) if ok else value
            else:
                ok = isinstance(value, str)
            if not ok:
                raise ConfigError(f"MFCC parameter {key}={value!r}: expected {kind}")
            kwargs[key] = value
        return cls(**kwargs)


def _validate(p: MfccParams) -> None:
    def bad(key: str, why: str) -> ConfigError:
        return ConfigError(f"MFCC parameter {key}={getattr(p, key)!r}: {why}")

    if p.sample_rate <= 0:
        raise bad("sample_rate", "must be positive")
    for key in ("win_ms", "hop_ms", "log_floor"):
        v = getattr(p, key)
        if not (math.isfinite(v) and v > 0):
            raise bad(key, "must be a positive finite number")
    if p.win_length < 2:
        raise bad("win_ms", "window shorter than 2 samples")
    if p.hop_length < 1:
        raise bad("hop_ms", "hop shorter than 1 sample")
    if p.n_fft < p.win_length:
        raise bad("n_fft", f"must be at least the window length {p.win_length}")
    if p.n_mels < 1:
        raise bad("n_mels", "must be at least 1")
    if not 1 <= p.n_mfcc <= p.n_mels:
        raise bad("n_mfcc", f"must be in [1, n_mels={p.n_mels}]")
    if not (math.isfinite(p.fmin) and p.fmin >= 0):
        raise bad("fmin", "must be >= 0")
    if not (math.isfinite(p.fmax) and p.fmin < p.fmax <= p.sample_rate / 2):
        raise bad("fmax", f"must be in (fmin={p.fmin}, sample_rate/2={p.sample_rate / 2}]")
    if p.window not in WINDOWS:
        raise bad("window", f"allowed: {', '.join(WINDOWS)}")
    if p.clip_samples < p.win_length:
        raise bad("clip_samples", f"must be at least the window length {p.win_length}")
    # every mel filter must cover at least one FFT bin, or its log energy is constant
    empty = np.flatnonzero(_tables(p)[1].sum(axis=0) <= 0)
    if empty.size:
        raise bad(
            "n_mels",
            f"mel filter {int(empty[0])} covers no FFT bin: too many filters for "
            f"fmin..fmax with n_fft={p.n_fft}",
        )


def hz_to_mel(f: np.ndarray | float) -> np.ndarray:
    """HTK mel scale: 2595 log10(1 + f / 700)."""
    return 2595.0 * np.log10(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def mel_to_hz(m: np.ndarray | float) -> np.ndarray:
    return 700.0 * (10.0 ** (np.asarray(m, dtype=np.float64) / 2595.0) - 1.0)


def mel_points(p: MfccParams) -> np.ndarray:
    """n_mels + 2 filter edge frequencies (Hz), equally spaced on the mel scale."""
    return mel_to_hz(np.linspace(hz_to_mel(p.fmin), hz_to_mel(p.fmax), p.n_mels + 2))


@functools.lru_cache(maxsize=16)
def _tables(p: MfccParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(window [win], mel filterbank [n_fft//2+1, n_mels], DCT [n_mels, n_mfcc]) as float32."""
    n = p.win_length
    k = np.arange(n)
    if p.window == "hann":
        win = 0.5 - 0.5 * np.cos(2.0 * np.pi * k / n)
    else:
        win = 0.54 - 0.46 * np.cos(2.0 * np.pi * k / n)
    freqs = np.arange(p.n_fft // 2 + 1) * p.sample_rate / p.n_fft
    edges = mel_points(p)
    fb = np.zeros((freqs.size, p.n_mels))
    for m in range(p.n_mels):
        lo, c, hi = edges[m], edges[m + 1], edges[m + 2]
        up = (freqs - lo) / (c - lo)
        down = (hi - freqs) / (hi - c)
        fb[:, m] = np.maximum(0.0, np.minimum(up, down))
    # dct(eye, axis=0)[k, m] is basis k at mel band m; transpose to map bands -> coefficients
    dct = sfft.dct(np.eye(p.n_mels), type=2, norm="ortho", axis=0).T[:, : p.n_mfcc]
    return win.astype(np.float32), fb.astype(np.float32), dct.astype(np.float32)


def mfcc(pcm: np.ndarray, params: MfccParams | None = None, *, chunk: int = 16) -> np.ndarray:
    """MFCCs of int16 or float clips [N, clip_samples] (or one clip) → float32 [N, 49, 10]."""
    return _front(pcm, params, chunk, log_dct=True)


def mel_energies(
    pcm: np.ndarray, params: MfccParams | None = None, *, chunk: int = 16
) -> np.ndarray:
    """The mel filterbank energies that `mfcc` logs (before `log_floor`): float32
    [N, 49, n_mels] (or [49, n_mels] for one clip). ``mfcc_from_mel(mel_energies(x))`` equals
    ``mfcc(x)``; a front end that modifies the energies (noise reduction, gain control) sits
    between the two."""
    return _front(pcm, params, chunk, log_dct=False)


def mfcc_from_mel(mel: np.ndarray, params: MfccParams | None = None) -> np.ndarray:
    """log(mel + log_floor) then the DCT of `mfcc`: float32 [..., n_mels] → [..., n_mfcc]."""
    p = params if params is not None else MfccParams()
    dct = _tables(p)[2]
    out: np.ndarray = np.log(np.asarray(mel, np.float32) + np.float32(p.log_floor)) @ dct
    return out


def _front(pcm: np.ndarray, params: MfccParams | None, chunk: int, log_dct: bool) -> np.ndarray:
    p = params if params is not None else MfccParams()
    x = np.asarray(pcm)
    single = x.ndim == 1
    if single:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] != p.clip_samples:
        raise ConfigError(
            f"mfcc input shape {list(np.shape(pcm))}: expected [N, {p.clip_samples}] or "
            f"[{p.clip_samples}]"
        )
    if x.dtype == np.int16:
        scale = np.float32(1.0 / 32768.0)
    elif np.issubdtype(x.dtype, np.floating):
        scale = np.float32(1.0)
    else:
        raise ConfigError(f"mfcc input dtype {x.dtype}: expected int16 or float")
    win, fb, dct = _tables(p)
    n_bins = int(np.flatnonzero(fb.any(axis=1)).max()) + 1  # bins above fmax carry no weight
    fb = fb[:n_bins]
    n_frames, wl, hop = p.n_frames, p.win_length, p.hop_length
    width = p.n_mfcc if log_dct else p.n_mels
    out = np.empty((x.shape[0], n_frames, width), dtype=np.float32)
    idx = np.arange(n_frames)[:, None] * hop + np.arange(wl)[None, :]
    floor = np.float32(p.log_floor)
    for s in range(0, x.shape[0], chunk):
        xs = x[s : s + chunk]
        frames = xs[:, idx].astype(np.float32) * (win * scale)  # [n, frames, win]
        spec = sfft.rfft(frames, n=p.n_fft, axis=-1)[..., :n_bins]
        power = spec.real**2 + spec.imag**2
        mel = power @ fb
        out[s : s + chunk] = np.log(mel + floor) @ dct if log_dct else mel
    return out[0] if single else out


def quantize_features(x: Any, x_fmt: Any) -> np.ndarray:
    """Normalised float features -> int16 raw in ``x_fmt`` (a `codegen.base.qformat.QFormat`;
    round to nearest, saturate): what the host sends to the device."""
    return np.asarray(x_fmt.quantize(np.asarray(x, dtype=np.float64))).astype(np.int16)
