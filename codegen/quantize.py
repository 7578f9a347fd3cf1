"""Quantization: float IR -> fixed IR, decided once (DESIGN §2, §3; docs/numeric.md §4).

Calibration runs the float64 LSTM (`codegen.intref.lstm.lstm_float`) over clean SOURCE
features and picks every activation format from the ranges it sees; weights get per-tensor
power-of-two formats from their own range and are quantized by fxpmath (`QFormat.quantize`).
The accumulators are sized by proof, not by calibration: the device accepts any int16 input, so
every bound uses the full int16 range (docs/numeric.md §3).

Formats chosen here (int16 everywhere, `QFormat`):

=============  ======================  =================================================
tensor         format                  why
=============  ======================  =================================================
x (features)   calibrated, e.g. Q4.11  max |x| over the calibration frames × range_margin
W_ih, W_hh     per tensor              max |w| (round to nearest, saturate)
bias           int32, ≤ acc_frac bits  b_ih + b_hh, summed in float64 then quantized once
gate pre-act.  Q4.11                   σ(16) = 1 − 1.1e-7: trained LSTMs drive gates well
                                       beyond ±8 (a ±8 table cost 3× the z error)
c              int32, Q(b).(31 − b)    b = bit length of T: |c_t| ≤ t is proven (below),
                                       so c never saturates; int32 keeps 2^-25 resolution
h, z_t         Q0.15                   h = o·tanh(c) ∈ (−1, 1)
σ table        257 × Q0.15             σ(j/16), j = 0..256, mirrored for negative inputs
=============  ======================  =================================================

The cell bound: with |f|, |i| ≤ 32767 and |g| ≤ 32768 (Q0.15), one step adds less than one
unit: |c_t| ≤ |c_(t−1)| + 1 after rounding, hence |c_t| ≤ t ≤ T < 2^b.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.errors import CodegenError, ConfigError
from codegen.ir import (
    Accumulator,
    CalibStats,
    Lstm,
    LstmShifts,
    Model,
    QLstm,
    QModel,
    QTensor,
    QuantOptions,
    SigmoidLut,
)
from codegen.qformat import QFormat

GATE_FMT = QFormat(4, 11)  # σ input
H_FMT = QFormat(0, 15)  # h, z_t, σ and tanh outputs
LUT_INDEX_SHIFT = 7  # |v| in 0..32767: 32768 >> 7 = 256 intervals of 1/16 -> 257 entries
SIGMOID_LUT_SIZE = (1 << (15 - LUT_INDEX_SHIFT)) + 1
INT16_ABS_MAX = 1 << 15  # largest |raw| of an int16 (−32768)
INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1
FLOAT64_EXACT = 1 << 53


def sigmoid_table(index_shift: int = LUT_INDEX_SHIFT) -> QTensor:
    """σ(j·step) for j = 0 … 2^(15−s), step = 2^(s−11): the non-negative Q4.11 inputs whose low
    s bits are zero, plus the end point 16, quantized to Q0.15 by fxpmath (σ(16) saturates to
    32767). Negative inputs use σ(−x) = 1 − σ(x)."""
    n = 1 << (15 - index_shift)
    xs = np.arange(n + 1, dtype=np.float64) * (16.0 / n)
    sig = 1.0 / (1.0 + np.exp(-xs))
    return QTensor("sigmoid_lut", H_FMT, H_FMT.quantize(sig), sig)


def cell_format(num_frames: int) -> QFormat:
    """int32 c with b = bit length of T integer bits: |c_t| ≤ t < 2^b (module docstring)."""
    b = int(num_frames).bit_length()
    if b > 16:
        raise CodegenError(
            f"num_frames={num_frames}: the int32 cell state supports T < 65536 frames"
        )
    return QFormat(b, 31 - b, 32)


def _fmt_for(max_abs: float, margin: float, what: str, word: int = 16) -> QFormat:
    if not math.isfinite(max_abs):
        raise CodegenError(f"{what}: calibrated range is {max_abs}; inputs contain NaN/Inf")
    return QFormat.for_range(max_abs * margin, word=word)


def _quantize(name: str, values: np.ndarray, fmt: QFormat) -> QTensor:
    return QTensor(name, fmt, fmt.quantize(values), values)


def prove_accumulator(
    name: str, w_raw: np.ndarray, x_abs_max: int, policy: str
) -> Accumulator:
    """Σ|w_raw| per row × max|x_raw|, maximised over rows; int32 if it fits (policy "auto"),
    int64 otherwise; refuse naming the tensor when even int64 (or a forced int32) cannot hold it.
    """
    # Python ints: the proof itself must not wrap.
    rows = [int(v) * int(x_abs_max) for v in np.abs(np.asarray(w_raw, dtype=np.int64)).sum(axis=1)]
    worst = max(range(len(rows)), key=rows.__getitem__) if rows else 0
    bound = rows[worst] if rows else 0
    fits32 = bound <= INT32_MAX
    if bound > INT64_MAX:
        raise CodegenError(
            f"tensor {name}: worst-case accumulator bound {bound} (row {worst}) exceeds int64"
        )
    if policy == "int32" and not fits32:
        raise CodegenError(
            f"tensor {name}: worst-case accumulator bound {bound} = Σ|w|·{x_abs_max} (row {worst}) "
            f"exceeds int32 ({INT32_MAX}); set [quant].accumulator = \"auto\" or \"int64\""
        )
    bits = 32 if (fits32 and policy != "int64") else 64
    return Accumulator(name, bits, bound, worst)


def quantize_lstm(
    lstm: Lstm, x_calib: npt.ArrayLike, opts: QuantOptions, source: str = "api"
) -> tuple[QLstm, CalibStats, np.ndarray]:
    """Calibrate on float features [N, T, F] and quantize the LSTM.

    Returns the fixed IR, the calibration statistics and the float latents z = h_T of the
    calibration set (the adaptation core calibrates its head and basis formats on them).
    """
    from codegen.intref.lstm import lstm_float

    X = np.asarray(x_calib, dtype=np.float64)
    F, H, T = lstm.input_size, lstm.hidden_size, lstm.num_frames
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
    margin = float(opts.range_margin)

    z_f, rec = lstm_float(X, lstm, record=True)
    x_max = float(np.max(np.abs(X)))
    c_max = float(np.max(rec["max_c"]))
    x_fmt = _fmt_for(x_max, margin, "input features")
    c_fmt = cell_format(T)

    w_ih = _quantize("lstm.weight_ih_l0", lstm.w_ih.values,
                     QFormat.for_range(lstm.w_ih.max_abs))
    w_hh = _quantize("lstm.weight_hh_l0", lstm.w_hh.values,
                     QFormat.for_range(lstm.w_hh.max_abs))
    s_ih = w_ih.fmt.frac_bits + x_fmt.frac_bits
    s_hh = w_hh.fmt.frac_bits + H_FMT.frac_bits
    acc_frac = max(s_ih, s_hh)  # >= 15 > gate frac bits: the final shift is a right shift
    b = lstm.b_ih.values + lstm.b_hh.values
    b_auto = QFormat.for_range(float(np.max(np.abs(b))), word=32)
    b_frac = min(b_auto.frac_bits, acc_frac)
    bias = _quantize("lstm.bias", b, QFormat(31 - b_frac, b_frac, 32))

    acc_ih = prove_accumulator("lstm.weight_ih_l0", w_ih.raw, INT16_ABS_MAX, opts.accumulator)
    acc_hh = prove_accumulator("lstm.weight_hh_l0", w_hh.raw, INT16_ABS_MAX, opts.accumulator)
    shifts = LstmShifts(
        acc_frac=acc_frac,
        ih_lshift=acc_frac - s_ih,
        hh_lshift=acc_frac - s_hh,
        bias_lshift=acc_frac - b_frac,
        sig_rshift=acc_frac - GATE_FMT.frac_bits,
        tanh_rshift=acc_frac - (GATE_FMT.frac_bits + 1),
        cell_ig_lshift=c_fmt.frac_bits - H_FMT.frac_bits,
        cell_tanh_rshift=c_fmt.frac_bits - (GATE_FMT.frac_bits + 1),
    )
    # Gate sum: both partial sums and the bias aligned to acc_frac, plus the rounding constant.
    # Python ints, so the proof itself cannot wrap.
    sum_ih = [int(v) for v in np.abs(w_ih.raw).sum(axis=1)]
    sum_hh = [int(v) for v in np.abs(w_hh.raw).sum(axis=1)]
    rows = [
        (sum_ih[r] * INT16_ABS_MAX << shifts.ih_lshift)
        + (sum_hh[r] * INT16_ABS_MAX << shifts.hh_lshift)
        + (abs(int(bias.raw[r])) << shifts.bias_lshift)
        + (1 << (shifts.sig_rshift - 1))
        for r in range(4 * H)
    ]
    worst = max(range(len(rows)), key=rows.__getitem__)
    exact = rows[worst]
    if exact > INT64_MAX:
        raise CodegenError(
            f"tensor lstm.gates: worst-case gate sum {exact} (row {worst}) exceeds int64"
        )
    acc_gate = Accumulator("lstm.gates", 64, exact, worst)

    q = QLstm(
        input_size=F,
        hidden_size=H,
        num_frames=T,
        x_fmt=x_fmt,
        gate_fmt=GATE_FMT,
        c_fmt=c_fmt,
        h_fmt=H_FMT,
        w_ih=w_ih,
        w_hh=w_hh,
        bias=bias,
        acc_ih=acc_ih,
        acc_hh=acc_hh,
        acc_gate=acc_gate,
        shifts=shifts,
        lut=SigmoidLut(sigmoid_table(), GATE_FMT, LUT_INDEX_SHIFT),
    )
    stats = CalibStats(
        samples=int(X.shape[0]),
        source=source,
        sha256=hashlib.sha256(np.ascontiguousarray(X, dtype="<f8").tobytes()).hexdigest(),
        x_max_abs=x_max,
        c_max_abs=c_max,
        gate_max_abs={g: float(np.max(rec[f"max_pre_{g}"])) for g in "ifgo"},
        h_max_abs=float(np.max(rec["max_h"])),
        gate_saturation={g: float(np.mean(rec[f"sat_{g}"])) for g in "ifgo"},
    )
    return q, stats, z_f


def quantize_features(x: npt.ArrayLike, x_fmt: QFormat) -> np.ndarray:
    """Normalised float features -> int16 raw in ``x_fmt`` (round to nearest, saturate): what the
    host sends to the device."""
    return x_fmt.quantize(np.asarray(x, dtype=np.float64)).astype(np.int16)


def adapt_config(model: Model) -> Any:
    """The adaptation core's AdaptConfig for this build."""
    from codegen.intref.adapt import AdaptConfig

    return AdaptConfig.from_float(model.cmaes.elatta, qelatta_v2=model.cmaes.qelatta_v2)


def quantize_model(model: Model, x_calib: npt.ArrayLike, source: str = "api") -> QModel:
    """Float IR + calibration features -> fixed IR (LSTM here, head/basis/CMA-ES by the
    adaptation core's `quantize_adapt`, calibrated on the same source latents)."""
    from codegen.intref.adapt import quantize_adapt

    q, stats, z_f = quantize_lstm(model.lstm, x_calib, model.quant, source)
    params = quantize_adapt(
        model.head.weight.values,
        model.head.bias.values,
        model.basis.V.values,
        adapt_config(model),
        z_f,
    )
    return QModel(source=model, lstm=q, adapt=params, calib=stats)


def calibration_features(model: Model, data_dir: str) -> tuple[np.ndarray, str]:
    """Normalised float features of ``[quant].calib_samples`` clean TRAIN clips (seeded choice,
    sorted so only the chosen set matters) and a description of where they came from."""
    from codegen.data import load_split
    from codegen.model import features_for

    split = load_split(data_dir, "train")
    total = len(split)
    n = min(model.quant.calib_samples, total)
    rng = np.random.default_rng([model.quant.calib_seed, 0xCA11B])
    idx = np.sort(rng.choice(total, size=n, replace=False))
    feats = features_for(split.pcm[idx], model.meta)
    return feats, f"{data_dir} train split, {n} of {total} clips (seed {model.quant.calib_seed})"
