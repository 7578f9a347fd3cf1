"""Quantization: float IR -> fixed IR, decided once (docs/architecture.md §3; docs/numeric.md §4).

Calibration runs the float64 LSTM (`codegen.elatta.float_ref.lstm_float`) over clean SOURCE
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

import hashlib
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.errors import CodegenError, ConfigError
from codegen.base.qformat import QFormat
from codegen.ir.nodes import (
    GATES,
    LATENT_FMT,
    Accumulator,
    AdaptConfig,
    CalibStats,
    CmvnParams,
    GateProof,
    Lstm,
    LstmShifts,
    Model,
    QDense,
    QLstm,
    QModel,
    QuantOptions,
    SigmoidLut,
)
from codegen.ir.nodes import H_FMT as ENTROPY_FMT  # Q5.26 of the adaptation's entropies
from codegen.quantize.common import (
    FLOAT64_EXACT,
    GATE_FMT,
    H_FMT,
    INT16_ABS_MAX,
    INT32_MAX,
    LUT_INDEX_SHIFT,
    MIN_ACC_FRAC,
    _fmt_for,
    _quantize,
    operand_max,
    sigmoid_table,
)


def cell_format(num_frames: int) -> QFormat:
    """int32 c with b = bit length of T integer bits: |c_t| ≤ t < 2^b (module docstring)."""
    b = int(num_frames).bit_length()
    if b > 16:
        raise CodegenError(
            f"num_frames={num_frames}: the int32 cell state supports T < 65536 frames"
        )
    return QFormat(b, 31 - b, 32)


def weight_format(max_abs: float, drop: int) -> QFormat:
    """The int16 weight format that holds ``max_abs``, with ``drop`` fraction bits moved to the
    integer part: the product W·operand keeps its A fraction bits, so each bit dropped from the
    weight is a bit kept in the operand (x_opshift or h_opshift one smaller)."""
    f = QFormat.for_range(max_abs)
    if not 0 <= drop <= f.frac_bits:
        raise ConfigError(f"weight fraction-bit drop {drop}: allowed 0..{f.frac_bits}")
    return QFormat(f.int_bits + drop, f.frac_bits - drop, f.word)


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
) -> tuple[list[tuple[int, int, int, int]], np.ndarray]:
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
) -> GateProof:
    """The largest A ≤ min(fw_ih + fx, fw_hh + 15) whose worst-case gate sum
    max_r Σ|W_ih[r]|·max|xs| + Σ|W_hh[r]|·max|hs| + |bias_A[r]| + 2^(s_r − 1) fits int32
    (module docstring); CodegenError naming the tensor, row and bound when even A = 13 does not.
    """
    top = min(fw_ih + fx, fw_hh + H_FMT.frac_bits)
    if top < MIN_ACC_FRAC:
        raise CodegenError(
            f"tensor lstm.weight_ih_l0: W_ih (frac {fw_ih}) times x (frac {fx}) leaves "
            f"{fw_ih + fx} fraction bits; the int32 gate accumulator needs at least "
            f"{MIN_ACC_FRAC} (Q4.11 gates, g at 2x): the weights or inputs are too large"
        )
    above: int | None = None
    failed: tuple[int, tuple[int, int, int, int]] = (0, (0, 0, 0, 0))
    for a in range(top, MIN_ACC_FRAC - 1, -1):
        rows, _ = gate_bound_rows(w_ih_raw, w_hh_raw, b, fw_ih, fx, fw_hh, a)
        totals = [sum(t) for t in rows]
        worst = max(range(len(totals)), key=totals.__getitem__)
        if totals[worst] <= INT32_MAX:
            return GateProof(a, top, totals[worst], worst, rows[worst], above)
        above = totals[worst]
        failed = (worst, rows[worst])
    r, terms = failed
    names = ("lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias")
    tensor = names[max(range(3), key=terms.__getitem__)]
    raise CodegenError(
        f"tensor {tensor} (gate row {r}): the int32 gate accumulator cannot be proven even at "
        f"A = {MIN_ACC_FRAC} fraction bits: worst-case bound {sum(terms)} = Σ|W_ih|·max|xs| "
        f"{terms[0]} + Σ|W_hh|·max|hs| {terms[1]} + |bias| {terms[2]} + rounding {terms[3]} "
        f"exceeds 2^31 − 1 = {INT32_MAX}"
    )


def quantize_lstm(
    lstm: Lstm,
    x_calib: npt.ArrayLike,
    opts: QuantOptions,
    source: str = "api",
    x_fmt: QFormat | None = None,
    weight_shift: tuple[int, int] = (0, 0),
) -> tuple[QLstm, CalibStats, np.ndarray]:
    """Calibrate on float features [N, T, F] and quantize the LSTM.

    Returns the fixed IR, the calibration statistics and the float latents z (h_T or pooled)
    of the calibration set (the adaptation core calibrates its head and basis formats on them).
    ``x_fmt``: the input format when it is given, not calibrated (a stacked layer reads the
    layer below's h_t in Q0.15). ``weight_shift``: fraction bits (W_ih, W_hh) handed from the
    weights to the operands xs and hs (`weight_format`); the GRU keeps its own formats.
    """
    from codegen.elatta.float_ref import lstm_float

    if lstm.cell == "gru":  # the GRU's own design and proof (codegen.quantize.gru)
        from codegen.quantize.gru import quantize_gru

        return quantize_gru(lstm, x_calib, opts, source, x_fmt)
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
    x_fmt = x_fmt if x_fmt is not None else _fmt_for(x_max, margin, "input features")
    c_fmt = cell_format(T)

    w_ih = _quantize(
        "lstm.weight_ih_l0", lstm.w_ih.values, weight_format(lstm.w_ih.max_abs, weight_shift[0])
    )
    w_hh = _quantize(
        "lstm.weight_hh_l0", lstm.w_hh.values, weight_format(lstm.w_hh.max_abs, weight_shift[1])
    )
    b = lstm.b_ih.values + lstm.b_hh.values
    fw_ih, fw_hh = w_ih.fmt.frac_bits, w_hh.fmt.frac_bits
    proof = prove_gate_accumulator(w_ih.raw, w_hh.raw, b, fw_ih, x_fmt.frac_bits, fw_hh)
    A = proof.acc_frac
    bias = _quantize("lstm.bias", b, QFormat(31 - A, A, 32))
    # the proof bounds the unsaturated rounding, so fxpmath's (saturating) one equals it
    _, bias_a = gate_bound_rows(w_ih.raw, w_hh.raw, b, fw_ih, x_fmt.frac_bits, fw_hh, A)
    if not np.array_equal(bias.raw, bias_a.astype(np.int64)):
        raise AssertionError("lstm.bias: fxpmath rounding differs from the proof's")
    acc_gate = Accumulator("lstm.gates", 32, proof.bound, proof.worst_row)
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
        acc_gate=acc_gate,
        proof=proof,
        shifts=shifts,
        lut=SigmoidLut(sigmoid_table(), GATE_FMT, LUT_INDEX_SHIFT),
        pool=lstm.pool,
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


def quantize_model(
    model: Model,
    x_calib: npt.ArrayLike,
    source: str = "api",
    weight_shifts: tuple[tuple[int, int], ...] = (),
) -> QModel:
    """Float IR + calibration features -> fixed IR (LSTM here, head/basis/CMA-ES by the
    adaptation core's `quantize_adapt`, calibrated on the same source latents).
    ``weight_shifts``: per recurrent layer, the (W_ih, W_hh) fraction bits moved to the operands
    (`weight_format`; chosen by `codegen.quantize.format_search`); absent layers keep (0, 0)."""
    from codegen.quantize.adapt import quantize_adapt

    shifts = tuple(weight_shifts) + ((0, 0),) * (2 - len(weight_shifts))
    q, stats, z_f = quantize_lstm(model.lstm, x_calib, model.quant, source, weight_shift=shifts[0])
    q2 = None
    if model.lstm2 is not None:  # the stacked layer, calibrated on the first layer's outputs
        from codegen.elatta.float_ref import lstm_float

        seq, _ = lstm_float(np.asarray(x_calib, np.float64), model.lstm, sequence=True)
        q2, _, z_f = quantize_lstm(
            model.lstm2, seq, model.quant, source, x_fmt=H_FMT, weight_shift=shifts[1]
        )
    mlp: tuple[QDense, ...] = ()
    zt_fmt, latent_fmt = H_FMT, LATENT_FMT
    if model.mlp:  # hidden Linear + ReLU layers: the latent is their output
        mlp, z_f = quantize_mlp(model.mlp, z_f, model.quant)
        zt_fmt = mlp[-1].out_fmt
        # two bits of headroom above z_t for V p, as for h (Q0.15 -> Q2.13)
        ib = min(15, zt_fmt.int_bits + 2)
        latent_fmt = QFormat(ib, 15 - ib)
    params = quantize_adapt(
        model.head.weight.values,
        model.head.bias.values,
        model.basis.V.values,
        model.adapt,
        z_f,
        latent_fmt=latent_fmt,
        zt_fmt=zt_fmt,
    )
    cmvn = cmvn_params(q, model.adapt)
    return QModel(source=model, lstm=q, adapt=params, calib=stats, cmvn=cmvn, lstm2=q2, mlp=mlp)


def quantize_mlp(
    layers: tuple[Any, ...], z_calib: np.ndarray, opts: QuantOptions
) -> tuple[tuple[QDense, ...], np.ndarray]:
    """Hidden Linear + ReLU layers after the encoder, one after the other on the calibration
    latents: W int16 in the finest format that holds it and proves the int32 sum (Σ|w|·2^15 +
    |b| + rounding ≤ 2^31 − 1 for every row, any int16 input); the output format from the
    largest ReLU output seen, times ``range_margin``. Returns the layers and the float output
    of the last (the adaptation core's calibration latents)."""
    out: list[QDense] = []
    x = np.asarray(z_calib, np.float64)
    in_fmt = H_FMT
    for i, d in enumerate(layers):
        Wf, bf = d.weight.values, d.bias.values
        y = np.maximum(x @ Wf.T + bf, 0.0)
        calibrated = _fmt_for(float(np.max(y, initial=0.0)), float(opts.range_margin), f"mlp.{i}")
        chosen = None
        for fw in range(QFormat.for_range(float(np.max(np.abs(Wf)))).frac_bits, -1, -1):
            acc_frac = fw + in_fmt.frac_bits
            if acc_frac > 31 or float(np.max(np.abs(bf), initial=0.0)) * 2.0**acc_frac >= 2**31:
                continue
            w = _quantize(f"mlp.{i}.weight", Wf, QFormat(15 - fw, fw))
            b = _quantize(f"mlp.{i}.bias", bf, QFormat(31 - acc_frac, acc_frac, 32))
            # the output keeps at most the accumulator's fraction bits: a right shift only
            of = min(calibrated.frac_bits, acc_frac)
            out_fmt = QFormat(15 - of, of)
            shift = acc_frac - of
            rnd = (1 << (shift - 1)) if shift > 0 else 0
            bound = np.abs(w.raw).sum(axis=1) * INT16_ABS_MAX + np.abs(b.raw) + rnd
            row = int(np.argmax(bound))
            if int(bound[row]) <= INT32_MAX:
                acc = Accumulator(f"mlp.{i}", 32, int(bound[row]), row)
                chosen = QDense(d.in_features, d.out_features, w, b, in_fmt, out_fmt, shift, acc)
                break
        if chosen is None:
            raise CodegenError(
                f"tensor mlp.{i}.weight: the int32 sum of a row cannot be proven in any int16 "
                "format (scale the layer down)"
            )
        out.append(chosen)
        x, in_fmt = y, out_fmt
    return tuple(out), x


CMVN_RECIP_SHIFT = 22  # the 1/T reciprocal's fraction bits (docs/adaptation.md)


def cmvn_params(q: QLstm, cfg: AdaptConfig) -> CmvnParams:
    """Mode "cmvn"'s integer constants for this encoder's input format and the configured
    shifts (``cfg``: the build's `AdaptConfig`). The state has 8 fraction bits more than the
    input; the 1/T of the clip means is one rounded reciprocal."""
    n = q.x_fmt.frac_bits
    fs = n + 8
    if 28 + fs > 61:
        raise ConfigError(
            f"input format {q.x_fmt.name}: mode cmvn needs x fraction bits <= 25 (2^(28+n+8) "
            "must fit the 64-bit division)"
        )
    return CmvnParams(
        frames=q.num_frames,
        features=q.input_size,
        x_frac=n,
        state_frac=fs,
        recip=round((1 << CMVN_RECIP_SHIFT) / q.num_frames),
        recip_shift=CMVN_RECIP_SHIFT,
        alpha_shift=int(cfg.cmvn_alpha_shift),
        weight_shift=int(cfg.cmvn_weight_shift),
        vmin=max(1, round(1e-4 * (1 << fs))),
        causal_alpha_shift=int(cfg.cmvn_causal_alpha_shift),
        # τ·F in Q.F_s: the gates compare the sum over coefficients, not the mean
        gate_sum=round(float(cfg.cmvn_gate) * q.input_size * (1 << fs)),
        causal_gate_sum=round(float(cfg.cmvn_causal_gate) * q.input_size * (1 << fs)),
        select_margin=round(float(cfg.cmvn_select_margin) * (1 << ENTROPY_FMT.frac_bits)),
        select_gate_sum=round(float(cfg.cmvn_select_gate) * q.input_size * (1 << fs)),
        select_floor_sum=round(float(cfg.cmvn_select_floor) * q.input_size * (1 << fs)),
        select_clip_floor_sum=round(float(cfg.cmvn_select_clip_floor) * q.input_size * (1 << fs)),
        select_clip_gate_sum=round(float(cfg.cmvn_select_clip_gate) * q.input_size * (1 << fs)),
        select_alpha_shift=int(cfg.select_shifts[0]),
        select_weight_shift=int(cfg.select_shifts[1]),
    )


def calibration_features(model: Model, data_dir: str) -> tuple[np.ndarray, str]:
    """Normalised float features of ``[quant].calib_samples`` clean TRAIN clips (seeded choice,
    sorted so only the chosen set matters) and a description of where they came from."""
    from codegen.data import load_split
    from codegen.ir.meta import features_for

    split = load_split(data_dir, "train")
    total = len(split)
    n = min(model.quant.calib_samples, total)
    rng = np.random.default_rng([model.quant.calib_seed, 0xCA11B])
    idx = np.sort(rng.choice(total, size=n, replace=False))
    feats = features_for(split.pcm[idx], model.meta)
    return feats, f"{data_dir} train split, {n} of {total} clips (seed {model.quant.calib_seed})"
