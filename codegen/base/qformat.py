"""Power-of-two fixed-point formats (docs/numeric.md §1). fxpmath is the declared source of the
format definitions and of weight quantization: :meth:`QFormat.quantize` goes through
``fxpmath.Fxp`` and the result is checked against the format's own bounds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from fxpmath import Fxp

from codegen.base.errors import ConfigError


@dataclass(frozen=True, order=True)
class QFormat:
    """Signed Qm.n in a ``word``-bit integer: value = raw · 2^-n, m + n = word - 1."""

    int_bits: int
    frac_bits: int
    word: int = 16

    def __post_init__(self) -> None:
        if self.word not in (8, 16, 32, 64):
            raise ConfigError(f"word={self.word}: supported words are 8, 16, 32 and 64 bits")
        if self.int_bits + self.frac_bits != self.word - 1:
            raise ConfigError(
                f"Q{self.int_bits}.{self.frac_bits}: int_bits + frac_bits must be word - 1 = "
                f"{self.word - 1}"
            )

    @classmethod
    def for_range(cls, max_abs: float, word: int = 16, headroom_bits: int = 0) -> QFormat:
        """Smallest integer part that holds ``max_abs`` (plus headroom), rest fraction."""
        if not np.isfinite(max_abs):
            raise ConfigError(f"max_abs={max_abs}: a Q format needs a finite range")
        int_bits = max(0, int(np.ceil(np.log2(max(max_abs, 1e-12) + 1e-12)))) + headroom_bits
        int_bits = min(int_bits, word - 1)
        return cls(int_bits, word - 1 - int_bits, word)

    @property
    def name(self) -> str:
        return f"Q{self.int_bits}.{self.frac_bits}"

    @property
    def min_raw(self) -> int:
        return -(1 << (self.word - 1))

    @property
    def max_raw(self) -> int:
        return (1 << (self.word - 1)) - 1

    @property
    def max_value(self) -> float:
        return self.max_raw / (1 << self.frac_bits)

    def quantize(self, x: np.ndarray | float) -> np.ndarray:
        """Round to nearest, saturate, return int64 raw values (fxpmath rounds).

        Saturation happens first, on the float values: clipping to [min_raw, max_raw]·2^-n
        (exact: a power-of-two scale of integers below 2^53) and then rounding gives what
        rounding and then saturating gives, since both bounds are integers after the scale.
        fxpmath's own saturation clips element by element in Python (``fxpmath.utils.clip`` is
        an ``np.vectorize``), seconds per large weight matrix; after the clip its
        ``overflow="wrap"`` has nothing to wrap. A 64-bit word keeps fxpmath's saturation
        (2^63 - 1 is not a float64)."""
        arr = np.asarray(x, dtype=np.float64)
        if not np.all(np.isfinite(arr)):
            raise ConfigError(f"cannot quantize non-finite values to {self.name}")
        overflow = "saturate"
        if self.word <= 32:
            scale = float(1 << self.frac_bits)
            arr = np.clip(arr, self.min_raw / scale, self.max_raw / scale)
            overflow = "wrap"
        fx = Fxp(
            arr,
            signed=True,
            n_word=self.word,
            n_frac=self.frac_bits,
            rounding="around",
            overflow=overflow,
        )
        raw = np.asarray(fx.val, dtype=np.int64).reshape(arr.shape)
        if raw.size and (raw.min() < self.min_raw or raw.max() > self.max_raw):
            raise AssertionError(f"fxpmath returned values outside {self.name}")
        return raw

    def to_float(self, raw: np.ndarray | int) -> np.ndarray:
        return np.asarray(raw, dtype=np.float64) / float(1 << self.frac_bits)
