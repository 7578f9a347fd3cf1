"""The activations and trace names the integer encoders share (the LSTM's
`codegen.intref.lstm`, the GRU's `codegen.intref.gru`): σ from the table, tanh from σ."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

TraceFn = Callable[[str, int, np.ndarray], None]

TRACE_H = "lstm.h"  # h[t] after step t, Q0.15
TRACE_C = "lstm.c"  # c[t] after step t, c format
TRACE_Z = "z"  # z_t = h_T, Q0.15: the hand-off to the adaptation core


def sigmoid_lut(lut: IntArray, index_shift: int, v: IntArray) -> IntArray:
    """elt_sigmoid_q15: v Q4.11 raw (int16) -> σ Q0.15 by table + linear interpolation.

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


def tanh_from_sigmoid(s: IntArray) -> IntArray:
    """elt_tanh_q15 tail: tanh(x) = 2σ(2x) − 1 in Q0.15 (σ raw ∈ [0, 32767] -> [−32768, 32766])."""
    out: IntArray = 2 * s - 32768
    return out
