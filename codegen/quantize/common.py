"""What both recurrent quantizers share (`codegen.quantize.model` for the LSTM,
`codegen.quantize.gru`
for the GRU): the gate and state formats, the σ table, the input-format rule, the operand bound
and the accumulator's smallest admissible fraction."""

from __future__ import annotations

import math

import numpy as np

from codegen.base.errors import CodegenError
from codegen.base.fixed import rshift_round
from codegen.base.qformat import QFormat
from codegen.ir.nodes import QTensor

GATE_FMT = QFormat(4, 11)  # σ input
H_FMT = QFormat(0, 15)  # h, z_t, σ and tanh outputs
LUT_INDEX_SHIFT = 7  # |v| in 0..32767: 32768 >> 7 = 256 intervals of 1/16 -> 257 entries
SIGMOID_LUT_SIZE = (1 << (15 - LUT_INDEX_SHIFT)) + 1
INT16_ABS_MAX = 1 << 15  # largest |raw| of an int16 (−32768)
INT32_MAX = (1 << 31) - 1
FLOAT64_EXACT = 1 << 53


def sigmoid_table(index_shift: int = LUT_INDEX_SHIFT) -> QTensor:
    """σ(j·step) for j = 0 … 2^(15−s), step = 2^(s−11): the non-negative Q4.11 inputs whose low
    s bits are zero, plus the end point 16, quantized to Q0.15 by fxpmath (σ(16) saturates to
    32767). Negative inputs use σ(−x) = 1 − σ(x)."""
    n = 1 << (15 - index_shift)
    xs = np.arange(n + 1, dtype=np.float64) * (16.0 / n)
    sig = 1.0 / (1.0 + np.exp(-xs))
    return QTensor("sigmoid_lut", H_FMT, H_FMT.quantize(sig), sig)


def _fmt_for(max_abs: float, margin: float, what: str, word: int = 16) -> QFormat:
    if not math.isfinite(max_abs):
        raise CodegenError(f"{what}: calibrated range is {max_abs}; inputs contain NaN/Inf")
    return QFormat.for_range(max_abs * margin, word=word)


def _quantize(name: str, values: np.ndarray, fmt: QFormat) -> QTensor:
    return QTensor(name, fmt, fmt.quantize(values), values)


# A >= 13: the g gate's final shift A − 12 stays a right shift of at least one bit.
MIN_ACC_FRAC = GATE_FMT.frac_bits + 2


def operand_max(shift: int) -> int:
    """max |rshift_round(v, shift)| over every int16 v: the worst case is v = −32768, whose
    rounded value is −2^(15 − shift) (0 once shift > 15)."""
    return max(abs(rshift_round(-32768, shift)), abs(rshift_round(32767, shift)))
