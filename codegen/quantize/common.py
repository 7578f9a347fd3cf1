"""What the recurrent quantizers share (`codegen.quantize.lstm`, `codegen.quantize.gru`): the
gate and state formats, the σ table, the input-format and weight-format rules, the calibration
input check, the operand bound, and the gate accumulator's proof (the largest admissible
fraction, at least MIN_ACC_FRAC)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.errors import CodegenError, ConfigError
from codegen.base.fixed import rshift_round
from codegen.base.qformat import QFormat
from codegen.ir.nodes import GateProof, QTensor

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


def check_calibration(x_calib: npt.ArrayLike, layer: Any) -> np.ndarray:
    """The calibration input of one recurrent layer as float64 [N, T, F], N >= 1, finite; the
    sizes small enough for the integer reference's float64 products."""
    X = np.asarray(x_calib, dtype=np.float64)
    F, H, T = layer.input_size, layer.hidden_size, layer.num_frames
    if X.ndim != 3 or X.shape[1:] != (T, F):
        raise ConfigError(
            f"calibration features have shape {X.shape}; expected [N, {T}, {F}] "
            f"(num_frames={T}, input_size={F})"
        )
    if X.shape[0] < 1:
        raise ConfigError("calibration needs at least one sample")
    if not np.all(np.isfinite(X)):
        raise CodegenError("calibration features contain NaN/Inf")
    for n, what in ((F, "input_size"), (H, "hidden_size")):
        if n * (1 << 30) >= FLOAT64_EXACT:
            raise CodegenError(f"{what}={n}: the integer reference needs {what} < 2^23")
    return X


def calib_sha256(X: np.ndarray) -> str:
    """sha256 of the float64 calibration features (they decide the input format)."""
    return hashlib.sha256(np.ascontiguousarray(X, dtype="<f8").tobytes()).hexdigest()


def weight_format(max_abs: float, drop: int) -> QFormat:
    """The int16 weight format that holds ``max_abs``, with ``drop`` fraction bits moved to the
    integer part: the product W·operand keeps its A fraction bits, so each bit dropped from the
    weight is a bit kept in the operand (x_opshift or h_opshift one smaller)."""
    f = QFormat.for_range(max_abs)
    if not 0 <= drop <= f.frac_bits:
        raise ConfigError(f"weight fraction-bit drop {drop}: allowed 0..{f.frac_bits}")
    return QFormat(f.int_bits + drop, f.frac_bits - drop, f.word)


# Per gate row of a recurrent layer, the worst-case terms of |acc| at A fraction bits:
# Σ|W_ih|·max|xs|, Σ|W_hh|·max|hs|, |bias|, rounding 2^(s_r − 1).
Terms = tuple[int, int, int, int]


def prove_accumulator(
    rows_at: Callable[[int], list[Terms]], fracs: tuple[int, int], names: tuple[str, str, str]
) -> GateProof:
    """The largest A from min(``fracs``) down to MIN_ACC_FRAC whose worst-case sum over every
    gate row, Σ ``rows_at(A)[r]``, fits 2^31 − 1 (docs/numeric.md §4: every operand may be any
    int16, so the bound is over the whole range). ``fracs``: the fraction bits of W_ih·x and of
    W_hh·h (A cannot exceed either); ``names``: the layer's W_ih, W_hh and bias tensors, for
    the refusal, which names the tensor with the largest term of the worst row, the row and the
    bound."""
    top = min(fracs)
    if top < MIN_ACC_FRAC:
        which = 0 if fracs[0] <= fracs[1] else 1
        product = ("W_ih·x", "W_hh·h")[which]
        raise CodegenError(
            f"tensor {names[which]}: {product} leaves {top} fraction bits; the int32 gate "
            f"accumulator needs at least {MIN_ACC_FRAC} (Q4.11 gates, the tanh gate at 2x): the "
            "weights or inputs are too large"
        )
    above: int | None = None
    failed: tuple[int, Terms] = (0, (0, 0, 0, 0))
    for a in range(top, MIN_ACC_FRAC - 1, -1):
        rows = rows_at(a)
        totals = [sum(t) for t in rows]
        worst = max(range(len(totals)), key=totals.__getitem__)
        if totals[worst] <= INT32_MAX:
            return GateProof(a, top, totals[worst], worst, rows[worst], above)
        above = totals[worst]
        failed = (worst, rows[worst])
    r, terms = failed
    tensor = names[max(range(3), key=terms.__getitem__)]
    raise CodegenError(
        f"tensor {tensor} (gate row {r}): the int32 gate accumulator cannot be proven even at "
        f"A = {MIN_ACC_FRAC} fraction bits: worst-case bound {sum(terms)} = Σ|W_ih|·max|xs| "
        f"{terms[0]} + Σ|W_hh|·max|hs| {terms[1]} + |bias| {terms[2]} + rounding {terms[3]} "
        f"exceeds 2^31 − 1 = {INT32_MAX}"
    )
