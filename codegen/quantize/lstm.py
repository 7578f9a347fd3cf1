"""Quantization of an LSTM encoder layer (torch.nn.LSTM, gate rows i, f, g, o), decided once
(docs/architecture.md §3; docs/numeric.md §4).

Calibration runs the float64 LSTM (`codegen.elatta.float_ref.lstm_float`) over clean SOURCE
features (or, for a stacked layer, the float outputs of the layer below) and picks every
activation format from the ranges it sees; weights get per-tensor
power-of-two formats from their own range and are quantized by fxpmath (`QFormat.quantize`).
The accumulators are sized by proof, not by calibration: the device accepts any int16 input, so
every bound uses the full int16 range (docs/numeric.md §3).

Formats chosen here (int16 everywhere, `QFormat`):

=============  ======================  =================================================
tensor         format                  why
=============  ======================  =================================================
x (features)   calibrated, e.g. Q4.11  max |x| over the calibration frames × range_margin
W_ih, W_hh     per tensor              max |w| (round to nearest, saturate)
bias           int32 at A frac bits    b_ih + b_hh, summed in float64 then quantized once
gate acc.      int32 at A frac bits    the largest A that proves the int32 sum (below)
gate pre-act.  Q4.11                   σ(16) = 1 − 1.1e-7: trained LSTMs drive gates well
                                       beyond ±8 (a ±8 table cost 3× the z error)
c              int32, Q(b).(31 − b)    b = bit length of T: |c_t| ≤ t is proven (below),
                                       so c never saturates; int32 keeps 2^-25 resolution
h, z_t         Q0.15                   h = o·tanh(c) ∈ (−1, 1)
σ table        257 × Q0.15             σ(j/16), j = 0..256, mirrored for negative inputs
=============  ======================  =================================================

The cell bound: with |f|, |i| ≤ 32767 and |g| ≤ 32768 (Q0.15), one step adds less than one
unit: |c_t| ≤ |c_(t−1)| + 1 after rounding, hence |c_t| ≤ t ≤ T < 2^b.

The gate accumulator (`prove_gate_accumulator`): the operands are rounded to A fraction bits
of the product first, xs = rshift_round(x, frac W_ih + frac x − A) and hs = rshift_round(h,
frac W_hh + 15 − A), so bias_A + W_ih xs + W_hh hs is one exact int32 sum (NEON VMLAL.S16
accumulates it four rows per instruction). A is the largest value ≤ min(frac W_ih + frac x,
frac W_hh + 15) whose worst case over every int16 input fits 2^31 − 1, and at least 13 so the
gate shifts A − 11 and A − 12 stay right shifts; below that the build is refused.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from codegen.base.errors import CodegenError
from codegen.base.qformat import QFormat
from codegen.ir.nodes import (
    GATES,
    Accumulator,
    CalibStats,
    GateProof,
    Lstm,
    LstmShifts,
    QLstm,
    QuantOptions,
    SigmoidLut,
)
from codegen.quantize.common import (
    GATE_FMT,
    H_FMT,
    LUT_INDEX_SHIFT,
    Terms,
    _fmt_for,
    _quantize,
    calib_sha256,
    check_calibration,
    operand_max,
    prove_accumulator,
    sigmoid_table,
    weight_format,
)

# The tensors of layer 0 as the proofs and reports name them (layer n > 0: `layer_names`).
NAMES = ("lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias")


def layer_names(index: int) -> tuple[str, str, str, str]:
    """W_ih, W_hh, the summed bias and the gate accumulator of layer ``index`` (torch's
    weight names; layer 0's bias and accumulator keep their unsuffixed names)."""
    tag = "" if index == 0 else f"_l{index}"
    return (
        f"lstm.weight_ih_l{index}",
        f"lstm.weight_hh_l{index}",
        f"lstm.bias{tag}",
        f"lstm.gates{tag}",
    )


def cell_format(num_frames: int) -> QFormat:
    """int32 c with b = bit length of T integer bits: |c_t| ≤ t < 2^b (module docstring)."""
    b = int(num_frames).bit_length()
    if b > 16:
        raise CodegenError(
            f"num_frames={num_frames}: the int32 cell state supports T < 65536 frames"
        )
    return QFormat(b, 31 - b, 32)


def gate_row_shifts(hidden: int, acc_frac: int) -> list[int]:
    """The final shift of every gate row (torch order i, f, g, o): A − 11 to Q4.11 for σ gates,
    A − 12 to 2x in Q4.11 for the g gate (tanh(x) = 2σ(2x) − 1)."""
    g = GATES.index("g")
    return [
        acc_frac - GATE_FMT.frac_bits - (1 if r // hidden == g else 0)
        for r in range(len(GATES) * hidden)
    ]


def gate_bound_rows(
    w_ih_raw: np.ndarray,
    w_hh_raw: np.ndarray,
    b: np.ndarray,
    fw_ih: int,
    fx: int,
    fw_hh: int,
    acc_frac: int,
) -> tuple[list[Terms], np.ndarray]:
    """Per-row terms of the worst case |acc| at A = ``acc_frac`` (Python ints, so the proof
    cannot wrap): Σ|W_ih|·max|xs|, Σ|W_hh|·max|hs|, |bias_A| (unsaturated), 2^(s_r − 1); and
    the bias rounded to A fraction bits (round half to even, as fxpmath)."""
    x_sh, h_sh = fw_ih + fx - acc_frac, fw_hh + H_FMT.frac_bits - acc_frac
    xm, hm = operand_max(x_sh), operand_max(h_sh)
    bias_a = np.rint(np.asarray(b, dtype=np.float64) * math.ldexp(1.0, acc_frac))
    sum_ih = np.abs(np.asarray(w_ih_raw, dtype=np.int64)).sum(axis=1)
    sum_hh = np.abs(np.asarray(w_hh_raw, dtype=np.int64)).sum(axis=1)
    hidden = w_hh_raw.shape[1]
    shifts = gate_row_shifts(hidden, acc_frac)
    rows = [
        (int(sum_ih[r]) * xm, int(sum_hh[r]) * hm, abs(int(bias_a[r])), 1 << (shifts[r] - 1))
        for r in range(len(shifts))
    ]
    return rows, bias_a


def prove_gate_accumulator(
    w_ih_raw: np.ndarray,
    w_hh_raw: np.ndarray,
    b: np.ndarray,
    fw_ih: int,
    fx: int,
    fw_hh: int,
    names: tuple[str, str, str] = NAMES,
) -> GateProof:
    """The largest A ≤ min(fw_ih + fx, fw_hh + 15) whose worst-case gate sum
    max_r Σ|W_ih[r]|·max|xs| + Σ|W_hh[r]|·max|hs| + |bias_A[r]| + 2^(s_r − 1) fits int32
    (module docstring); CodegenError naming the tensor, row and bound when even A = 13 does not.
    """
    return prove_accumulator(
        lambda a: gate_bound_rows(w_ih_raw, w_hh_raw, b, fw_ih, fx, fw_hh, a)[0],
        (fw_ih + fx, fw_hh + H_FMT.frac_bits),
        names,
    )


def quantize_lstm(
    lstm: Lstm,
    x_calib: npt.ArrayLike,
    opts: QuantOptions,
    source: str = "api",
    x_fmt: QFormat | None = None,
    weight_shift: tuple[int, int] = (0, 0),
    index: int = 0,
) -> tuple[QLstm, CalibStats, np.ndarray]:
    """Calibrate on float inputs [N, T, F] and quantize the LSTM layer ``index`` of the encoder.

    Returns the fixed IR, the calibration statistics and the float outputs z (h_T or pooled)
    of the calibration set (the adaptation core calibrates its head and basis formats on them).
    ``x_fmt``: the input format when it is given, not calibrated (a stacked layer reads the
    layer below's h_t in Q0.15). ``weight_shift``: fraction bits (W_ih, W_hh) handed from the
    weights to the operands xs and hs (`weight_format`).
    """
    from codegen.elatta.float_ref import lstm_float

    X = check_calibration(x_calib, lstm)
    T = lstm.num_frames
    n_ih, n_hh, n_bias, n_acc = layer_names(index)
    z_f, rec = lstm_float(X, lstm, record=True)
    x_max = float(np.max(np.abs(X)))
    c_max = float(np.max(rec["max_c"]))
    x_fmt = x_fmt if x_fmt is not None else _fmt_for(x_max, opts.range_margin, "input features")
    c_fmt = cell_format(T)

    w_ih = _quantize(n_ih, lstm.w_ih.values, weight_format(lstm.w_ih.max_abs, weight_shift[0]))
    w_hh = _quantize(n_hh, lstm.w_hh.values, weight_format(lstm.w_hh.max_abs, weight_shift[1]))
    b = lstm.b_ih.values + lstm.b_hh.values
    fw_ih, fw_hh = w_ih.fmt.frac_bits, w_hh.fmt.frac_bits
    proof = prove_gate_accumulator(
        w_ih.raw, w_hh.raw, b, fw_ih, x_fmt.frac_bits, fw_hh, (n_ih, n_hh, n_bias)
    )
    A = proof.acc_frac
    bias = _quantize(n_bias, b, QFormat(31 - A, A, 32))
    # the proof bounds the unsaturated rounding, so fxpmath's (saturating) one equals it
    _, bias_a = gate_bound_rows(w_ih.raw, w_hh.raw, b, fw_ih, x_fmt.frac_bits, fw_hh, A)
    if not np.array_equal(bias.raw, bias_a.astype(np.int64)):
        raise AssertionError(f"{n_bias}: fxpmath rounding differs from the proof's")
    shifts = LstmShifts(
        acc_frac=A,
        x_opshift=fw_ih + x_fmt.frac_bits - A,
        h_opshift=fw_hh + H_FMT.frac_bits - A,
        sig_rshift=A - GATE_FMT.frac_bits,
        tanh_rshift=A - (GATE_FMT.frac_bits + 1),
        cell_ig_lshift=c_fmt.frac_bits - H_FMT.frac_bits,
        cell_tanh_rshift=c_fmt.frac_bits - (GATE_FMT.frac_bits + 1),
    )
    q = QLstm(
        input_size=lstm.input_size,
        hidden_size=lstm.hidden_size,
        num_frames=T,
        x_fmt=x_fmt,
        gate_fmt=GATE_FMT,
        c_fmt=c_fmt,
        h_fmt=H_FMT,
        w_ih=w_ih,
        w_hh=w_hh,
        bias=bias,
        acc_gate=Accumulator(n_acc, 32, proof.bound, proof.worst_row),
        proof=proof,
        shifts=shifts,
        lut=SigmoidLut(sigmoid_table(), GATE_FMT, LUT_INDEX_SHIFT),
        pool=lstm.pool,
    )
    stats = CalibStats(
        samples=int(X.shape[0]),
        source=source,
        sha256=calib_sha256(X),
        x_max_abs=x_max,
        c_max_abs=c_max,
        gate_max_abs={g: float(np.max(rec[f"max_pre_{g}"])) for g in "ifgo"},
        h_max_abs=float(np.max(rec["max_h"])),
        gate_saturation={g: float(np.mean(rec[f"sat_{g}"])) for g in "ifgo"},
    )
    return q, stats, z_f
