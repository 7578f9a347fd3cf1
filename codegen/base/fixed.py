"""Numeric contract, Python side (docs/numeric.md): mirrors firmware/fw_fixed.h function for
function. Works on Python ints and on numpy int64 arrays (no silent wrap: callers keep values in
the int64 range, which the compiler proves, docs/numeric.md §3)."""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

INT16_MIN = -32768
INT16_MAX = 32767
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

T = TypeVar("T", int, np.ndarray)


def sat16(x: T) -> T:
    """fx_sat16 / fx_sat16_64."""
    if isinstance(x, np.ndarray):
        return np.clip(x, INT16_MIN, INT16_MAX)
    return min(max(x, INT16_MIN), INT16_MAX)


def sat32(x: T) -> T:
    """fx_sat32_64."""
    if isinstance(x, np.ndarray):
        return np.clip(x, INT32_MIN, INT32_MAX)
    return min(max(x, INT32_MIN), INT32_MAX)


def rshift_round(x: T, s: int) -> T:
    """fx_rshift_round32/64: (x + 2^(s-1)) >> s for s > 0 (floor shift = ARM ASR), x << -s
    otherwise. The 32-bit C variant adds in 64 bits, so no intermediate overflow either side."""
    if s > 0:
        return (x + (1 << (s - 1))) >> s
    return x << (-s)


def div_pos(num: T, den: T) -> T:
    """fx_div_pos64: num >= 0, den > 0, so C truncation and Python floor agree."""
    if isinstance(num, np.ndarray) or isinstance(den, np.ndarray):
        if np.any(np.asarray(num) < 0) or np.any(np.asarray(den) <= 0):
            raise ValueError("div_pos needs num >= 0 and den > 0")
    elif num < 0 or den <= 0:
        raise ValueError(f"div_pos needs num >= 0 and den > 0, got {num} / {den}")
    return num // den


IntArray = npt.NDArray[np.int64]


def isqrt64(n: npt.ArrayLike) -> IntArray:
    """``elt_isqrt64`` (firmware/elt_intmath.c): floor √n for 0 ≤ n < 2⁶² (the CMA-ES norms and
    Cholesky pivots, the input normalisation's gains)."""
    a = np.asarray(n, dtype=np.int64)
    if np.any(a < 0) or np.any(a >= 1 << 62):
        raise ValueError("isqrt64 needs 0 <= n < 2^62")
    # float64 √ of n < 2^62 is within 2^-20 of the true root, so its floor is off by at most 1
    r = np.floor(np.sqrt(a.astype(np.float64))).astype(np.int64)
    r = r - (r * r > a)
    return np.asarray(r + ((r + 1) * (r + 1) <= a), dtype=np.int64)


def sigmoid_lut(lut: IntArray, index_shift: int, v: IntArray) -> IntArray:
    """elt_sigmoid_q15 (firmware/elt_lstm_s16.c): v Q4.11 raw (int16) -> σ Q0.15 by table +
    linear interpolation. Here beside the rounding rule because both sides use it: the emitter
    tabulates it at every int16 input for the NEON kernel, the integer reference replays it.

    a = min(|v|, 32767); j = a >> s; frac = a & (2^s − 1);
    σ⁺ = T[j] + ((T[j+1] − T[j])·frac + 2^(s−1)) >> s   (floor shift, as ARM ASR);
    σ = σ⁺ for v ≥ 0, 32768 − σ⁺ for v < 0 (σ(−x) = 1 − σ(x), exact mirror).
    """
    vv = np.asarray(v, dtype=np.int64)
    a = np.minimum(np.abs(vv), 32767)
    j = a >> index_shift
    frac = a & ((1 << index_shift) - 1)
    lo = lut[j]
    hi = lut[j + 1]
    pos = lo + (((hi - lo) * frac + (1 << (index_shift - 1))) >> index_shift)
    out: IntArray = np.where(vv < 0, 32768 - pos, pos)
    return out
