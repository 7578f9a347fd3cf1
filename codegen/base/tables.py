"""Lookup tables of the ELaTTA kernels, generated once in float64 and rounded once.

The same integers are emitted into C by ``templates/adapt_params.c.j2`` and read by the Python
integer reference (`codegen.intref.rng`, `codegen.intref.entropy`, `codegen.intref.cmaes_int`);
neither side recomputes them (docs/architecture.md §3, docs/numeric.md §5).

* ``EXP2_LUT``: 2^(−j/256), j = 0..256, Q1.30 (docs/cmaes.md §5 step 2; also
  σ = 2^(ln σ·log₂e), §6).
* ``LOG2_LUT``: log₂(1 + j/256), j = 0..256, Q1.30 (docs/cmaes.md §5 step 4).
* ``GAUSS_LUT``: half-normal inverse CDF, 32 octaves × 33 knots, Q3.28 (docs/cmaes.md §4): knot j of
  octave o sits at t = 2^−(o+1)·(1 + j/32) and holds |z| = Φ⁻¹(1 − t/2).

Rounding is round-half-even of the exact float64 value (``round``), the same rule fxpmath's
``around`` applies to the weights (`codegen.base.qformat.QFormat.quantize`).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import numpy.typing as npt
from scipy.special import ndtri

I64 = npt.NDArray[np.int64]

LUT_FRAC = 30  # Q1.30 for the exp2 and log2 tables
LUT_BITS = 8  # 256 segments, 257 knots (docs/cmaes.md §5)
LUT_SIZE = (1 << LUT_BITS) + 1
GAUSS_FRAC = 28  # Q3.28 (docs/cmaes.md §4)
GAUSS_OCTAVES = 32
GAUSS_SEGMENTS = 32  # segments per octave (5 bits after the leading one)
GAUSS_KNOTS = GAUSS_SEGMENTS + 1


def _readonly(a: npt.ArrayLike) -> I64:
    out = np.array(a, dtype=np.int64)
    out.setflags(write=False)
    return out


def _exp2_lut() -> I64:
    return _readonly([round(2.0 ** (-j / 256.0) * (1 << LUT_FRAC)) for j in range(LUT_SIZE)])


def _log2_lut() -> I64:
    return _readonly([round(math.log2(1.0 + j / 256.0) * (1 << LUT_FRAC)) for j in range(LUT_SIZE)])


def _gauss_lut() -> I64:
    o = np.arange(GAUSS_OCTAVES, dtype=np.float64)[:, None]
    j = np.arange(GAUSS_KNOTS, dtype=np.float64)[None, :]
    t = np.ldexp(1.0 + j / GAUSS_SEGMENTS, -(o + 1).astype(np.int64))  # t in (0, 1]
    # |z| = Φ⁻¹(1 − t/2) = −Φ⁻¹(t/2): the second form keeps full precision in the far tail
    mag = -ndtri(t / 2.0)
    mag[0, GAUSS_SEGMENTS] = 0.0  # t = 1: Φ⁻¹(1/2) = 0 exactly
    return _readonly(np.rint(mag * (1 << GAUSS_FRAC)).astype(np.int64))


EXP2_LUT: I64 = _exp2_lut()
LOG2_LUT: I64 = _log2_lut()
GAUSS_LUT: I64 = _gauss_lut()  # [32, 33]


def table_hash(a: npt.ArrayLike) -> str:
    """sha256 of the table as little-endian int32 (the bytes the C array holds)."""
    arr = np.asarray(a, dtype=np.int64)
    if arr.size and (arr.min() < -(2**31) or arr.max() > 2**31 - 1):
        raise ValueError("table does not fit int32")
    return hashlib.sha256(arr.astype("<i4").tobytes()).hexdigest()
