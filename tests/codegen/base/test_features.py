"""MFCC front end: shape, agreement with a per-clip reference, parameter round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from codegen.base.errors import ConfigError
from codegen.base.features import MfccParams, mel_energies, mfcc, mfcc_from_mel


def reference_mfcc(clip: np.ndarray, p: MfccParams) -> np.ndarray:
    """Straightforward per-clip, per-frame MFCC written from the textbook definitions."""
    x = clip.astype(np.float64) / 32768.0 if clip.dtype == np.int16 else clip.astype(np.float64)
    wl = int(round(p.win_ms * p.sample_rate / 1000))
    hop = int(round(p.hop_ms * p.sample_rate / 1000))
    n_frames = 1 + (x.size - wl) // hop
    window = [0.5 - 0.5 * math.cos(2 * math.pi * k / wl) for k in range(wl)]

    def mel(f: float) -> float:
        return 2595.0 * math.log10(1.0 + f / 700.0)

    def inv(m: float) -> float:
        return 700.0 * (10 ** (m / 2595.0) - 1.0)

    lo, hi = mel(p.fmin), mel(p.fmax)
    edges = [inv(lo + (hi - lo) * i / (p.n_mels + 1)) for i in range(p.n_mels + 2)]
    out = np.zeros((n_frames, p.n_mfcc))
    for t in range(n_frames):
        frame = x[t * hop : t * hop + wl] * np.array(window)
        power = np.abs(np.fft.rfft(frame, n=p.n_fft)) ** 2
        energies = []
        for m in range(p.n_mels):
            e = 0.0
            for k, pk in enumerate(power):
                f = k * p.sample_rate / p.n_fft
                w = min(
                    (f - edges[m]) / (edges[m + 1] - edges[m]),
                    (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1]),
                )
                if w > 0:
                    e += w * pk
            energies.append(math.log(e + p.log_floor))
        n = p.n_mels
        for c in range(p.n_mfcc):
            scale = math.sqrt(1.0 / n) if c == 0 else math.sqrt(2.0 / n)
            out[t, c] = scale * sum(
                energies[m] * math.cos(math.pi * c * (2 * m + 1) / (2 * n)) for m in range(n)
            )
    return out


def test_default_shape_and_dtype() -> None:
    x = (np.random.default_rng(0).standard_normal((3, 16000)) * 3000).astype(np.int16)
    y = mfcc(x)
    assert y.shape == (3, 49, 10) and y.dtype == np.float32
    assert mfcc(x[0]).shape == (49, 10)
    np.testing.assert_array_equal(mfcc(x[0]), y[0])
    assert MfccParams().n_frames == 49


def test_matches_per_clip_reference() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(16000) / 16000
    tone = 0.3 * np.sin(2 * np.pi * 440 * t) * np.hanning(16000)
    clips = np.stack([tone + 0.01 * rng.standard_normal(16000), 0.05 * rng.standard_normal(16000)])
    pcm = np.round(clips * 32767).astype(np.int16)
    got = mfcc(pcm)
    for i in range(2):
        want = reference_mfcc(pcm[i], MfccParams())
        np.testing.assert_allclose(got[i], want, rtol=1e-3, atol=2e-3)


def test_nondefault_params_match_reference() -> None:
    p = MfccParams(
        n_mfcc=13, win_ms=25.0, hop_ms=10.0, n_mels=26, fmax=8000.0, n_fft=512, clip_samples=4000
    )
    x = np.random.default_rng(2).standard_normal(4000).astype(np.float32) * 0.1
    got = mfcc(x, p)
    assert got.shape == (p.n_frames, 13) == (1 + (4000 - 400) // 160, 13)
    np.testing.assert_allclose(got, reference_mfcc(x, p), rtol=1e-3, atol=2e-3)


def test_mel_energies_then_log_dct_is_mfcc() -> None:
    pcm = (np.random.default_rng(4).standard_normal((3, 16000)) * 2000).astype(np.int16)
    mel = mel_energies(pcm)
    assert mel.shape == (3, 49, 40) and mel.dtype == np.float32 and np.all(mel >= 0)
    np.testing.assert_array_equal(mfcc_from_mel(mel), mfcc(pcm))
    np.testing.assert_array_equal(mel_energies(pcm[1]), mel[1])


def test_int16_equals_scaled_float() -> None:
    pcm = (np.random.default_rng(3).standard_normal((2, 16000)) * 2000).astype(np.int16)
    np.testing.assert_allclose(mfcc(pcm), mfcc(pcm.astype(np.float32) / 32768), atol=1e-5)


def test_digital_silence_is_floored() -> None:
    y = mfcc(np.zeros((1, 16000), dtype=np.int16))
    assert np.all(np.isfinite(y))
    assert y[0, 0, 0] == pytest.approx(math.log(1e-6) * math.sqrt(40), rel=1e-5)


def test_params_round_trip() -> None:
    p = MfccParams(n_mfcc=12, window="hamming", log_floor=1e-8)
    d = json.loads(json.dumps(p.to_dict()))
    assert MfccParams.from_dict(d) == p
    assert MfccParams.from_dict({}) == MfccParams()
    assert MfccParams.from_dict({"win_ms": 40}) == MfccParams()  # ints accepted for floats
    with pytest.raises(AttributeError):
        p.n_mfcc = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("d", "key"),
    [
        ({"n_mfc": 10}, "n_mfc"),
        ({"n_mfcc": "10"}, "n_mfcc"),
        ({"n_mfcc": 41}, "n_mfcc"),
        ({"n_mfcc": True}, "n_mfcc"),
        ({"fmax": 9000.0}, "fmax"),
        ({"fmin": 5000.0}, "fmax"),
        ({"n_fft": 512}, "n_fft"),
        ({"hop_ms": 0.0}, "hop_ms"),
        ({"win_ms": float("nan")}, "win_ms"),
        ({"window": "kaiser"}, "window"),
        ({"n_mels": 400}, "n_mels"),
        ({"clip_samples": 100}, "clip_samples"),
    ],
)
def test_bad_params_rejected(d: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        MfccParams.from_dict(d)


def test_bad_input_rejected() -> None:
    with pytest.raises(ConfigError, match="16000"):
        mfcc(np.zeros((2, 8000), dtype=np.int16))
    with pytest.raises(ConfigError, match="int32"):
        mfcc(np.zeros((2, 16000), dtype=np.int32))
