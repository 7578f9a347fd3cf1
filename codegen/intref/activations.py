"""The activations and trace names the integer encoders share (the LSTM's
`codegen.intref.lstm`, the GRU's `codegen.intref.gru`): σ from the table, tanh from σ."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

# σ of the contract lives beside rshift_round in codegen.base.fixed (the emitter tabulates it too);
# re-exported here as the encoders' twin of elt_sigmoid_q15.
from codegen.base.fixed import sigmoid_lut  # noqa: F401

IntArray = npt.NDArray[np.int64]

TraceFn = Callable[[str, int, np.ndarray], None]

TRACE_H = "lstm.h"  # h[t] after step t, Q0.15
TRACE_C = "lstm.c"  # c[t] after step t, c format
TRACE_Z = "z"  # z_t = h_T, Q0.15: the hand-off to the adaptation core


def tanh_from_sigmoid(s: IntArray) -> IntArray:
    """elt_tanh_q15 tail: tanh(x) = 2σ(2x) − 1 in Q0.15 (σ raw ∈ [0, 32767] -> [−32768, 32766])."""
    out: IntArray = 2 * s - 32768
    return out
