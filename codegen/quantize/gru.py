"""Quantization of a GRU encoder layer (torch.nn.GRU, gate rows r, z, n).

The integer GRU step (`codegen.intref.gru`, ``firmware/elt_gru_s16.c``), every sum in int32 at
A fraction bits from rounded operands xs = rshift_round(x, x_opshift), hs = rshift_round(h,
h_opshift), exactly as the LSTM's (docs/numeric.md §4):

    ax = W_ih xs + b_ih,  ah = W_hh hs + b_hh                       (int32 at A, per row)
    r = σ(rshift_round(ax_r + ah_r, A − 11)),  z = σ(rshift_round(ax_z + ah_z, A − 11))
    n = tanh: 2σ(2x) − 1 with 2x = rshift_round(ax_n + rshift_round(r·ah_n, 15), A − 12)
    h' = sat16(n + rshift_round(z·(h − n), 15))                      ((1 − z) n + z h)

σ is the LSTM's table (Q4.11 in, Q0.15 out); every Q4.11 index is saturated to int16 first.
The proof: for every row, Σ|W_ih|·max|xs| + Σ|W_hh|·max|hs| + |b_ih| + |b_hh| + 2^(s − 1) ≤
2^31 − 1 bounds ax + ah and ax_n + r·ah_n (|r| ≤ 1) alike; the largest A that proves it wins.
"""

from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt

from codegen.base.errors import CodegenError, ConfigError
from codegen.base.qformat import QFormat
from codegen.ir.nodes import (
    Accumulator,
    CalibStats,
    GateProof,
    Lstm,
    LstmShifts,
    QLstm,
    QuantOptions,
    SigmoidLut,
)

GRU_GATES = 3  # r, z, n


def gru_row_shifts(hidden: int, acc_frac: int) -> list[int]:
    """Final rounding shift per gate row: A − 11 for r and z (σ input), A − 12 for n (2x)."""
    return [acc_frac - 11] * (2 * hidden) + [acc_frac - 12] * hidden


def _bound_rows(
    w_ih: np.ndarray, w_hh: np.ndarray, b_ih: np.ndarray, b_hh: np.ndarray,
    fw_ih: int, fx: int, fw_hh: int, a: int,
) -> list[tuple[int, int, int, int]]:  # fmt: skip
    from codegen.quantize.common import H_FMT, operand_max

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
    lstm: Lstm,
    x_calib: npt.ArrayLike,
    opts: QuantOptions,
    source: str = "api",
    x_fmt: QFormat | None = None,
) -> tuple[QLstm, CalibStats, np.ndarray]:
    """Calibrate on float features [N, T, F] and quantize a GRU layer (`quantize_lstm`'s
    contract: the fixed IR, the calibration statistics, the float latents)."""
    from codegen.elatta.float_ref import lstm_float
    from codegen.quantize.common import (
        GATE_FMT,
        H_FMT,
        INT32_MAX,
        LUT_INDEX_SHIFT,
        MIN_ACC_FRAC,
        _fmt_for,
        _quantize,
        sigmoid_table,
    )

    X = np.asarray(x_calib, dtype=np.float64)
    F, H, T = lstm.input_size, lstm.hidden_size, lstm.num_frames
    if X.ndim != 3 or X.shape[1:] != (T, F) or X.shape[0] < 1:
        raise ConfigError(f"calibration features have shape {X.shape}; expected [N >= 1, {T}, {F}]")
    if not np.all(np.isfinite(X)):
        raise CodegenError("calibration features contain NaN/Inf")
    z_f, _ = lstm_float(X, lstm)
    x_fmt = x_fmt or _fmt_for(float(np.max(np.abs(X))), float(opts.range_margin), "input features")
    w_ih = _quantize("gru.weight_ih_l0", lstm.w_ih.values, QFormat.for_range(lstm.w_ih.max_abs))
    w_hh = _quantize("gru.weight_hh_l0", lstm.w_hh.values, QFormat.for_range(lstm.w_hh.max_abs))
    fw_ih, fw_hh, fx = w_ih.fmt.frac_bits, w_hh.fmt.frac_bits, x_fmt.frac_bits
    b_ih, b_hh = lstm.b_ih.values, lstm.b_hh.values
    top = min(fw_ih + fx, fw_hh + H_FMT.frac_bits)
    proof = None
    above: int | None = None
    worst_terms: tuple[int, tuple[int, int, int, int]] = (0, (0, 0, 0, 0))
    for a in range(top, MIN_ACC_FRAC - 1, -1):
        rows = _bound_rows(w_ih.raw, w_hh.raw, b_ih, b_hh, fw_ih, fx, fw_hh, a)
        totals = [sum(t) for t in rows]
        worst = max(range(len(totals)), key=totals.__getitem__)
        if totals[worst] <= INT32_MAX:
            proof = GateProof(a, top, totals[worst], worst, rows[worst], above)
            break
        above, worst_terms = totals[worst], (worst, rows[worst])
    if proof is None:
        r, terms = worst_terms
        raise CodegenError(
            f"gru gate row {r}: the int32 accumulator cannot be proven at any A >= "
            f"{MIN_ACC_FRAC}: worst-case bound {sum(terms)} exceeds 2^31 − 1 (scale the weights)"
        )
    A = proof.acc_frac
    bias = _quantize("gru.bias_ih", b_ih, QFormat(31 - A, A, 32))
    bias_hh = _quantize("gru.bias_hh", b_hh, QFormat(31 - A, A, 32))
    shifts = LstmShifts(
        acc_frac=A,
        x_opshift=fw_ih + fx - A,
        h_opshift=fw_hh + H_FMT.frac_bits - A,
        sig_rshift=A - 11,
        tanh_rshift=A - 12,
        cell_ig_lshift=0,
        cell_tanh_rshift=0,
    )
    q = QLstm(
        input_size=F,
        hidden_size=H,
        num_frames=T,
        x_fmt=x_fmt,
        gate_fmt=GATE_FMT,
        c_fmt=QFormat(0, 15),  # a GRU has no cell state: h only
        h_fmt=H_FMT,
        w_ih=w_ih,
        w_hh=w_hh,
        bias=bias,
        acc_gate=Accumulator("gru.gates", 32, proof.bound, proof.worst_row),
        proof=proof,
        shifts=shifts,
        lut=SigmoidLut(sigmoid_table(), GATE_FMT, LUT_INDEX_SHIFT),
        pool=lstm.pool,
        cell="gru",
        bias_hh=bias_hh,
    )
    stats = CalibStats(
        samples=int(X.shape[0]),
        source=source,
        sha256=hashlib.sha256(np.ascontiguousarray(X, dtype="<f8").tobytes()).hexdigest(),
        x_max_abs=float(np.max(np.abs(X))),
        c_max_abs=0.0,
        gate_max_abs={},
        h_max_abs=float(np.max(np.abs(z_f))) if z_f.size else 0.0,
        gate_saturation={},
    )
    return q, stats, z_f
