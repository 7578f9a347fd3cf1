"""Deterministic test-time shifts: additive noise at an SNR, reverberation, channel response.

All three act on clean test clips and are seeded per sample (`stable_seed(seed, family, id, …)`)
so every condition is reproducible and independent of the order in which it is generated.
Mixing follows docs/data.md §5.2: whole-clip SNR, seeded choice of noise clip and crop, retry
crops that are (nearly) digital silence, a −26 dBFS reference level for `_silence_` clips, and
a whole-mixture rescale when the peak would clip (which keeps the SNR).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import signal

from codegen.data.common import CLIP_SAMPLES, SAMPLE_RATE, rng_for, to_float, to_int16

SILENCE_REF_DBFS = -26.0  # reference speech level for `_silence_` clips (docs/data.md §5.2)
MIN_CROP_POWER = 1e-4  # mean power of a crop of a peak-normalised noise clip (docs/data.md §5.2)
MIX_RETRIES = 10
PEAK_LIMIT = 0.999  # whole-mixture rescale above this peak

RT60S: tuple[float, ...] = (0.3, 0.6, 1.0)
CHANNELS: tuple[str, ...] = ("gain", "lowpass", "highpass", "peaking")


@dataclass(frozen=True)
class MixResult:
    """Additive mixtures and how each was made (for SNR checks and provenance)."""

    pcm: np.ndarray  # int16 [N, 16000]
    clip: np.ndarray  # int64 [N] index of the noise clip in the category's bank
    start: np.ndarray  # int64 [N] crop start (samples)
    noise_scale: np.ndarray  # float64 [N] factor applied to the crop before adding
    gain: np.ndarray  # float64 [N] whole-mixture rescale (1 unless the peak would clip)
    speech_power: np.ndarray  # float64 [N] reference power of the clean clip


def _fmt_snr(snr_db: float) -> str:
    return f"{float(snr_db):g}"


def mix_additive(
    clean: np.ndarray,
    ids: np.ndarray,
    is_silence: np.ndarray,
    bank: np.ndarray,
    *,
    category: str,
    snr_db: float,
    seed: int,
) -> MixResult:
    """Mix every clean clip with a seeded 1-s crop of one of the category's noise clips."""
    n = clean.shape[0]
    x = to_float(clean).astype(np.float64)
    bank64 = np.asarray(bank, dtype=np.float64)
    n_clips, length = bank64.shape
    out = np.empty((n, CLIP_SAMPLES), dtype=np.int16)
    clip = np.zeros(n, dtype=np.int64)
    start = np.zeros(n, dtype=np.int64)
    scale = np.zeros(n, dtype=np.float64)
    gain = np.ones(n, dtype=np.float64)
    p_ref = np.zeros(n, dtype=np.float64)
    ref = 10.0 ** (SILENCE_REF_DBFS / 10.0)
    for i in range(n):
        rng = rng_for(seed, "additive", int(ids[i]), category, _fmt_snr(snr_db))
        best: tuple[float, int, int] = (-1.0, 0, 0)
        for _ in range(MIX_RETRIES):
            k = int(rng.integers(n_clips))
            s = int(rng.integers(length - CLIP_SAMPLES + 1))
            p = float(np.mean(bank64[k, s : s + CLIP_SAMPLES] ** 2))
            if p > best[0]:
                best = (p, k, s)
            if p >= MIN_CROP_POWER:
                break
        p_n, k, s = best
        crop = bank64[k, s : s + CLIP_SAMPLES]
        p_s = float(np.mean(x[i] ** 2))
        # `_silence_` clips, and clips that are digital silence, use the reference level.
        if is_silence[i] or p_s < 1e-10:
            p_s = ref
        a = float(np.sqrt(p_s / (p_n * 10.0 ** (snr_db / 10.0)))) if p_n > 0 else 0.0
        mix = x[i] + a * crop
        peak = float(np.max(np.abs(mix)))
        g = PEAK_LIMIT / peak if peak > PEAK_LIMIT else 1.0
        out[i] = to_int16(mix * g)
        clip[i], start[i], scale[i], gain[i], p_ref[i] = k, s, a, g, p_s
    return MixResult(out, clip, start, scale, gain, p_ref)


def room_impulse_response(rng: np.random.Generator, rt60: float) -> np.ndarray:
    """A procedural RIR: direct path, sparse early reflections, exponentially decaying tail.

    The diffuse tail is noise whose amplitude falls by 60 dB in `rt60` seconds, with high
    frequencies decaying faster (air and wall absorption); the direct-to-reverberant ratio is
    drawn per sample (source distance).
    """
    sr = SAMPLE_RATE
    n = int(min(1.2 * rt60, 1.0) * sr)
    t = np.arange(n) / sr
    h = np.zeros(n)
    h[0] = 1.0
    for _ in range(int(rng.integers(4, 10))):
        d = int(rng.uniform(0.002, 0.03) * sr)
        h[d] += rng.uniform(-0.7, 0.7)
    onset = int(0.005 * sr)
    lo = signal.sosfilt(
        signal.butter(2, 1500 / (sr / 2), "low", output="sos"), rng.standard_normal(n)
    )
    hi = rng.standard_normal(n) - lo
    decay = np.exp(-6.908 * t / rt60)
    tail = (lo * decay + hi * decay**1.6) * (t >= t[onset])
    drr_db = float(rng.uniform(-6.0, 6.0))
    e_tail = float(np.sum(tail**2))
    if e_tail > 0:
        tail *= np.sqrt(float(np.sum(h**2)) / e_tail * 10.0 ** (-drr_db / 10.0))
    return h + tail


def _keep_level(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Scale `y` to the RMS of `x` and keep the peak below the limit."""
    rx, ry = float(np.sqrt(np.mean(x**2))), float(np.sqrt(np.mean(y**2)))
    if ry > 0:
        y = y * (rx / ry)
    peak = float(np.max(np.abs(y)))
    return y * (PEAK_LIMIT / peak) if peak > PEAK_LIMIT else y


def apply_reverb(clean: np.ndarray, ids: np.ndarray, *, rt60: float, seed: int) -> np.ndarray:
    """Convolve each clip with its own seeded RIR; the first second is kept, level preserved."""
    x = to_float(clean).astype(np.float64)
    out = np.empty_like(clean)
    for i in range(x.shape[0]):
        h = room_impulse_response(rng_for(seed, "reverb", int(ids[i]), f"{rt60:g}"), rt60)
        y = signal.fftconvolve(x[i], h)[:CLIP_SAMPLES]
        out[i] = to_int16(_keep_level(y, x[i]))
    return out


def peaking_sos(f0: float, gain_db: float, q: float, sr: int = SAMPLE_RATE) -> np.ndarray:
    """RBJ audio-EQ-cookbook peaking filter as one second-order section."""
    a = 10.0 ** (gain_db / 40.0)
    w0 = 2.0 * np.pi * f0 / sr
    alpha = np.sin(w0) / (2.0 * q)
    b = np.array([1 + alpha * a, -2 * np.cos(w0), 1 - alpha * a])
    den = np.array([1 + alpha / a, -2 * np.cos(w0), 1 - alpha / a])
    return np.concatenate([b / den[0], den / den[0]])[None, :]


def channel_filter(name: str, rng: np.random.Generator) -> tuple[np.ndarray | None, float]:
    """(sos or None, gain in dB) of one seeded microphone/channel response.

    gain: a quiet microphone, −24…−12 dB. lowpass: 4th-order Butterworth at 1–2 kHz (muffled).
    highpass: 2nd-order Butterworth at 400–800 Hz (small capsule). peaking: +10…+15 dB at
    1–3 kHz, Q 1–2 (resonant housing).
    """
    ny = SAMPLE_RATE / 2.0
    if name == "gain":
        return None, float(rng.uniform(-24.0, -12.0))
    if name == "lowpass":
        return signal.butter(4, float(rng.uniform(1000, 2000)) / ny, "low", output="sos"), 0.0
    if name == "highpass":
        return signal.butter(2, float(rng.uniform(400, 800)) / ny, "high", output="sos"), 0.0
    if name == "peaking":
        f0, g, q = rng.uniform(1000, 3000), rng.uniform(10, 15), rng.uniform(1, 2)
        return peaking_sos(float(f0), float(g), float(q)), 0.0
    raise ValueError(f"unknown channel {name!r}; allowed: {', '.join(CHANNELS)}")


def apply_channel(clean: np.ndarray, ids: np.ndarray, *, name: str, seed: int) -> np.ndarray:
    x = to_float(clean).astype(np.float64)
    out = np.empty_like(clean)
    for i in range(x.shape[0]):
        sos, gain_db = channel_filter(name, rng_for(seed, "channel", int(ids[i]), name))
        y = signal.sosfilt(sos, x[i]) if sos is not None else x[i].copy()
        y *= 10.0 ** (gain_db / 20.0)
        peak = float(np.max(np.abs(y)))
        out[i] = to_int16(y * (PEAK_LIMIT / peak) if peak > PEAK_LIMIT else y)
    return out
