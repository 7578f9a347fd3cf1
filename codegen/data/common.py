"""Shared constants and helpers of the GSC-C builder (docs/data.md §1.2 and §5.2)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import signal

from codegen.base.errors import CodegenError

SAMPLE_RATE = 16000
CLIP_SAMPLES = 16000

KEYWORDS: tuple[str, ...] = ("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go")
SILENCE = "_silence_"
UNKNOWN = "_unknown_"
# Label order is stored in every manifest because code bases disagree on it (docs/data.md §1.2).
CLASSES: tuple[str, ...] = (*KEYWORDS, SILENCE, UNKNOWN)

# The 25 GSC v2 auxiliary words, all mapped to _unknown_ (docs/data.md §1.1, §5.2).
UNKNOWN_WORDS: tuple[str, ...] = (
    "bed", "bird", "cat", "dog", "happy", "house", "marvin", "sheila", "tree", "wow",
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    "backward", "forward", "follow", "learn", "visual",
)  # fmt: skip

# The ten ESC-50 categories of GSC-C, in the order of the paper's table (docs/data.md §1.3).
NOISES: tuple[str, ...] = (
    "dog", "cat", "pouring_water", "thunderstorm", "crying_baby",
    "laughing", "washing_machine", "vacuum_cleaner", "car_horn", "fireworks",
)  # fmt: skip

SPLITS: tuple[str, ...] = ("train", "val", "test")


@dataclass(frozen=True)
class SourceSet:
    """What a source (built-in synthesis or real GSC + ESC-50) hands to the writer: clean splits,
    the target-noise bank, non-target training noises and metadata."""

    splits: dict[str, dict[str, np.ndarray]]
    bank: dict[str, np.ndarray]
    background: np.ndarray
    background_kinds: list[str]
    meta: dict[str, Any]


# Offsets of the sample-id space: clean clip k has id k (< ID_STRIDE); the test clip with clean id
# k under condition code c > 0 has id c * ID_STRIDE + k. Keeps ids < 2**31 for 100 conditions.
ID_STRIDE = 1_000_000


def utterance_of(ids: np.ndarray) -> np.ndarray:
    """The clean clip (utterance) each sample id was made from: the same under every condition."""
    return np.asarray(ids, dtype=np.int64) % ID_STRIDE


class DataError(CodegenError):
    """A data set, input tree or file is missing, corrupted or inconsistent; names the file."""


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from sha1 of the parts (docs/data.md §5.2: `sha1(seed, speaker, word, rep)`).

    Seeds derived this way do not depend on iteration order, so adding speakers, noises or
    conditions never changes existing clips or mixtures.
    """
    text = "|".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "little")


def rng_for(*parts: object) -> np.random.Generator:
    return np.random.default_rng(stable_seed(*parts))


def resample(x: np.ndarray, factor: float) -> np.ndarray:
    """Resample by `factor` (output rate / input rate) with a small polyphase filter.

    The ratio is rationalised with `limit_denominator(64)`: an exact rational makes the filter
    enormous and the build takes minutes (docs/data.md §3).
    """
    frac = Fraction(factor).limit_denominator(64)
    if frac == 1:
        return x.astype(np.float32)
    y = signal.resample_poly(x.astype(np.float64), frac.numerator, frac.denominator)
    return y.astype(np.float32)


def place_in_clip(
    word: np.ndarray, rng: np.random.Generator, *, peak_dbfs: tuple[float, float] = (-14.0, -2.0)
) -> np.ndarray:
    """Trim, place at a random offset in 1 s, scale to a random peak, add a −70 dBFS floor.

    The processing chain of docs/data.md §3. Returns float32 [16000] in [-1, 1].
    """
    w = trim(word)
    if w.size > CLIP_SAMPLES:
        # Over-long words (slow speakers) keep their first second and fade out over 20 ms.
        w = w[:CLIP_SAMPLES].copy()
        w[-320:] *= np.linspace(1.0, 0.0, 320, dtype=np.float32)
    out = np.zeros(CLIP_SAMPLES, dtype=np.float32)
    start = int(rng.integers(0, CLIP_SAMPLES - w.size + 1))
    peak = float(np.max(np.abs(w))) if w.size else 0.0
    if peak > 0:
        target = 10.0 ** (rng.uniform(*peak_dbfs) / 20.0)
        out[start : start + w.size] = w * (target / peak)
    floor = 10.0 ** (-70.0 / 20.0)
    out += (rng.standard_normal(CLIP_SAMPLES) * floor).astype(np.float32)
    return np.clip(out, -1.0, 1.0)


def trim(x: np.ndarray, threshold_db: float = -40.0) -> np.ndarray:
    """Cut leading/trailing audio below `threshold_db` relative to the peak (docs/data.md §3)."""
    if x.size == 0:
        return x.astype(np.float32)
    a = np.abs(x)
    peak = float(a.max())
    if peak <= 0:
        return x[:0].astype(np.float32)
    idx = np.flatnonzero(a >= peak * 10.0 ** (threshold_db / 20.0))
    return x[idx[0] : idx[-1] + 1].astype(np.float32)


def to_int16(x: np.ndarray) -> np.ndarray:
    """Float in [-1, 1] to int16 with rounding and saturation."""
    return np.clip(np.rint(np.asarray(x, dtype=np.float64) * 32768.0), -32768, 32767).astype(
        np.int16
    )


def to_float(pcm: np.ndarray) -> np.ndarray:
    """int16 to float32 in [-1, 1)."""
    return pcm.astype(np.float32) / np.float32(32768.0)
