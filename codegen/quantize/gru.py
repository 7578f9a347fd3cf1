"""Quantization of a GRU encoder layer (torch.nn.GRU, gate rows r, z, n).

The integer GRU step (`codegen.intref.gru`, ``firmware/elt_gru_s16.c``), every sum in int32 at
A fraction bits from rounded operands xs = rshift_round(x, x_opshift), hs = rshift_round(h,
h_opshift), exactly as the LSTM's (docs/numeric.md §4):

    ax = W_ih xs + b_ih,  ah = W_hh hs + b_hh                       (int32 at A, per row)
    r = σ(rshift_round(ax_r + ah_r, A − 11)),  z = σ(rshift_round(ax_z + ah_z, A − 11))
    n = tanh: 2σ(2x) − 1 with 2x = rshift_round(ax_n + rshift_round(r·ah_n, 15), A − 12)
    h' = sat16(n + rshift_round(z·(h − n), 15))                      ((1 − z) n + z h)

σ is the LSTM's table (Q4.11 in, Q0.15 out); every Q4.11 index is saturated to int16 first.
The proof (`codegen.quantize.common.prove_accumulator`, shared with the LSTM): for every row,
Σ|W_ih|·max|xs| + Σ|W_hh|·max|hs| + |b_ih| + |b_hh| + 2^(s − 1) ≤ 2^31 − 1 bounds ax + ah and
ax_n + r·ah_n (|r| ≤ 1) alike; the largest A that proves it wins. The input format, the
weight formats and the calibration check are the LSTM's (`codegen.quantize.common`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from codegen.base.qformat import QFormat
from codegen.ir.nodes import (
    Accumulator,
    CalibStats,
    GateShifts,
    Gru,
    QGru,
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


def layer_names(index: int) -> tuple[str, str, str, str, str]:
    """W_ih, W_hh, b_ih, b_hh and the gate accumulator of layer ``index`` (torch's names)."""
    tag = "" if index == 0 else f"_l{index}"
    return (
        f"gru.weight_ih_l{index}",
        f"gru.weight_hh_l{index}",
        f"gru.bias_ih_l{index}",
        f"gru.bias_hh_l{index}",
        f"gru.gates{tag}",
    )


def gru_row_shifts(hidden: int, acc_frac: int) -> list[int]:
    """Final rounding shift per gate row: A − 11 for r and z (σ input), A − 12 for n (2x)."""
    return [acc_frac - 11] * (2 * hidden) + [acc_frac - 12] * hidden


def gru_bound_rows(
    w_ih: np.ndarray, w_hh: np.ndarray, b_ih: np.ndarray, b_hh: np.ndarray,
    fw_ih: int, fx: int, fw_hh: int, a: int,
) -> list[Terms]:  # fmt: skip
    """Per-row terms of the worst case at A = ``a`` (module docstring), Python ints."""
    xm = operand_max(fw_ih + fx - a)
    hm = operand_max(fw_hh + H_FMT.frac_bits - a)
    sum_ih = np.abs(w_ih.astype(np.int64)).sum(axis=1)
    sum_hh = np.abs(w_hh.astype(np.int64)).sum(axis=1)
    bias = np.abs(np.rint(b_ih * 2.0**a)) + np.abs(np.rint(b_hh * 2.0**a))
    shifts = gru_row_shifts(w_hh.shape[1], a)
    return [
        (int(sum_ih[r]) * xm, int(sum_hh[r]) * hm, int(bias[r]), 1 << (shifts[r] - 1))
        for r in range(len(shifts))
    ]


def quantize_gru(
    gru: Gru,
    x_calib: npt.ArrayLike,
    opts: QuantOptions,
    source: str = "api",
    x_fmt: QFormat | None = None,
    weight_shift: tuple[int, int] = (0, 0),
    index: int = 0,
) -> tuple[QGru, CalibStats, np.ndarray]:
    """Calibrate on float inputs [N, T, F] and quantize GRU layer ``index`` of the encoder
    (`codegen.quantize.lstm.quantize_lstm`'s contract: the fixed IR, the calibration
    statistics, the float outputs)."""
    from codegen.elatta.float_ref import gru_float

    X = check_calibration(x_calib, gru)
    n_ih, n_hh, n_bih, n_bhh, n_acc = layer_names(index)
    z_f, _ = gru_float(X, gru)
    x_max = float(np.max(np.abs(X)))
    x_fmt = x_fmt if x_fmt is not None else _fmt_for(x_max, opts.range_margin, "input features")
    w_ih = _quantize(n_ih, gru.w_ih.values, weight_format(gru.w_ih.max_abs, weight_shift[0]))
    w_hh = _quantize(n_hh, gru.w_hh.values, weight_format(gru.w_hh.max_abs, weight_shift[1]))
    fw_ih, fw_hh, fx = w_ih.fmt.frac_bits, w_hh.fmt.frac_bits, x_fmt.frac_bits
    b_ih, b_hh = gru.b_ih.values, gru.b_hh.values
    proof = prove_accumulator(
        lambda a: gru_bound_rows(w_ih.raw, w_hh.raw, b_ih, b_hh, fw_ih, fx, fw_hh, a),
        (fw_ih + fx, fw_hh + H_FMT.frac_bits),
        (n_ih, n_hh, f"{n_bih} + {n_bhh}"),
    )
    A = proof.acc_frac
    q = QGru(
        input_size=gru.input_size,
        hidden_size=gru.hidden_size,
        num_frames=gru.num_frames,
        x_fmt=x_fmt,
        gate_fmt=GATE_FMT,
        h_fmt=H_FMT,
        w_ih=w_ih,
        w_hh=w_hh,
        b_ih=_quantize(n_bih, b_ih, QFormat(31 - A, A, 32)),
        b_hh=_quantize(n_bhh, b_hh, QFormat(31 - A, A, 32)),
        acc_gate=Accumulator(n_acc, 32, proof.bound, proof.worst_row),
        proof=proof,
        shifts=GateShifts(
            acc_frac=A,
            x_opshift=fw_ih + fx - A,
            h_opshift=fw_hh + H_FMT.frac_bits - A,
            sig_rshift=A - GATE_FMT.frac_bits,
            tanh_rshift=A - (GATE_FMT.frac_bits + 1),
        ),
        lut=SigmoidLut(sigmoid_table(), GATE_FMT, LUT_INDEX_SHIFT),
        pool=gru.pool,
    )
    stats = CalibStats(
        samples=int(X.shape[0]),
        source=source,
        sha256=calib_sha256(X),
        x_max_abs=x_max,
        c_max_abs=0.0,  # a GRU has no cell state
        gate_max_abs={},
        h_max_abs=float(np.max(np.abs(z_f))) if z_f.size else 0.0,
        gate_saturation={},
    )
    return q, stats, z_f
