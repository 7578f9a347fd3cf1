"""Quantization: float IR -> fixed IR, decided once (docs/architecture.md §3; docs/numeric.md §4).

`quantize_model` quantizes the encoder layer by layer (`quantize_encoder`: each layer by its
kind's quantizer, `codegen.quantize.layers.QUANTIZERS`, calibrated on the float outputs of the
layer below), the MLP head's hidden layers (`quantize_mlp`), the adaptation core
(`codegen.quantize.adapt.quantize_adapt`) on the float latents of the same calibration clips,
and the input stages' constants (`stage_params`: each table's quantizer,
`codegen.stages.registry`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.errors import CodegenError, ConfigError
from codegen.base.qformat import QFormat
from codegen.ir.nodes import (
    LATENT_FMT,
    Accumulator,
    AdaptConfig,
    CalibStats,
    Model,
    QDense,
    QEncoderLayer,
    QModel,
    QuantOptions,
)
from codegen.quantize.common import (
    H_FMT,
    INT16_ABS_MAX,
    INT32_MAX,
    _fmt_for,
    _quantize,
)
from codegen.quantize.layers import quantizer


def quantize_encoder(
    model: Model,
    x_calib: npt.ArrayLike,
    source: str = "api",
    weight_shifts: tuple[tuple[int, int], ...] = (),
) -> tuple[tuple[QEncoderLayer, ...], CalibStats, np.ndarray]:
    """The encoder's layers bottom to top, each by its kind's quantizer: layer 0 on the
    calibration features (its input format calibrated), layer n + 1 on the float output sequence
    of layer n (its input is the layer below's h, Q0.15). Returns the fixed layers, layer 0's
    calibration statistics (the features') and the encoder's float outputs (the pooled top).
    ``weight_shifts``: per layer, the (W_ih, W_hh) fraction bits moved to the operands
    (`codegen.quantize.lstm.weight_format`); absent layers keep (0, 0)."""
    from codegen.elatta.float_ref import layer_float

    enc = model.encoder
    if len(weight_shifts) > len(enc):
        raise ConfigError(f"{len(weight_shifts)} weight shifts for {len(enc)} encoder layers")
    shifts = tuple(weight_shifts) + ((0, 0),) * (len(enc) - len(weight_shifts))
    x = np.asarray(x_calib, dtype=np.float64)
    layers: list[QEncoderLayer] = []
    stats: CalibStats | None = None
    z_f = x
    for n, layer in enumerate(enc):
        q, st, z_f = quantizer(layer).quantize(
            layer,
            x,
            model.quant,
            source,
            x_fmt=None if n == 0 else H_FMT,
            weight_shift=shifts[n],
            index=n,
        )
        layers.append(q)
        stats = st if stats is None else stats
        if n < len(enc) - 1:  # the next layer is calibrated on this one's float outputs
            x = layer_float(x, layer, sequence=True)
    assert stats is not None  # Model.encoder is never empty
    return tuple(layers), stats, z_f


def quantize_model(
    model: Model,
    x_calib: npt.ArrayLike,
    source: str = "api",
    weight_shifts: tuple[tuple[int, int], ...] = (),
) -> QModel:
    """Float IR + calibration features -> fixed IR (the encoder here, head/basis/CMA-ES by the
    adaptation core's `quantize_adapt`, calibrated on the same source latents).
    ``weight_shifts``: per encoder layer, the (W_ih, W_hh) fraction bits moved to the operands
    (chosen by `codegen.quantize.format_search`); absent layers keep (0, 0)."""
    from codegen.quantize.adapt import quantize_adapt

    encoder, stats, z_f = quantize_encoder(model, x_calib, source, weight_shifts)
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
    stages = stage_params(encoder[0], model.adapt)
    return QModel(source=model, encoder=encoder, adapt=params, calib=stats, stages=stages, mlp=mlp)


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


def stage_params(q: QEncoderLayer, adapt: AdaptConfig) -> dict[str, Any]:
    """Every input-stage table's integer params (`codegen.stages.registry`, in table order) for
    the encoder's input (its first layer ``q``) from the build's settings (``adapt.stages``;
    a table the config does not have takes its defaults)."""
    from codegen.stages.registry import tables
    from codegen.stages.stage import StageShape

    shape = StageShape(frames=q.num_frames, features=q.input_size, x_fmt=q.x_fmt)
    return {t.name: t.quantize(adapt.stage_settings(t.name), shape) for t in tables()}


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
