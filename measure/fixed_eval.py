"""Fixed-point accuracy on GSC-C: the Python integer reference (exactly what the device
computes) on every additive-noise condition, in the report.json layout of `codegen eval`.

``evaluate_fixed`` returns ``{mode: {snr: {noise: acc, "average": acc}}}`` (accuracy fractions,
mean over seeds for the adapting modes), the shape of report.json's ``"float"`` table, so
``codegen eval --fixed`` can put it beside it as ``"fixed"``. ``compare_fixed_float`` also runs the
float reference on the same clips and reports the per-sample class agreement (docs/targets.md §1:
no-adapt and strict within 0.5 points of float, ≥ 99 % same class in no-adapt).

Clips, order and sample ids are those of `elatta_measure.evaluate` (`stream_order`, the condition's
ids), and the formats are calibrated on the clean TRAIN split exactly as `codegen build` does,
so the numbers describe the firmware that `codegen build` emits for the same inputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codegen.base.errors import ConfigError

DEFAULT_MODES: tuple[str, ...] = ("no_adapt", "strict")


@dataclass(frozen=True)
class FixedEval:
    fixed: dict[str, Any]  # {mode: {snr: {noise: acc, "average": acc}}}
    float: dict[str, Any]  # same layout, float64 reference on the same clips
    same_class: dict[str, Any]  # {mode: {snr: fraction of clips with equal predictions}}
    clips_per_condition: int
    calibration: str


def _table(per: dict[tuple[str, float, str], list[float]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    # modes in the order they ran (the caller's), SNRs from clean to noisiest
    rank = {m: i for i, m in enumerate(dict.fromkeys(k[0] for k in per))}
    for (mode, snr, noise), accs in sorted(per.items(), key=lambda kv: (rank[kv[0][0]], -kv[0][1])):
        key = f"{snr:g}"
        table.setdefault(mode, {}).setdefault(key, {})[noise] = round(float(np.mean(accs)), 6)
    for per_snr in table.values():
        for cells in per_snr.values():
            cells["average"] = round(float(np.mean(list(cells.values()))), 6)
    return table


def _model_with(model: Any, sigma0: float | None, beta: float | None, radius: float | None) -> Any:
    changes = {
        k: v for k, v in (("sigma0", sigma0), ("beta", beta), ("radius", radius)) if v is not None
    }
    if not changes:
        return model
    return dataclasses.replace(model, adapt=model.adapt.replace(**changes))


def compare_fixed_float(
    model_path: str | Path,
    basis_path: str | Path,
    config: Any,
    data_dir: str | Path,
    *,
    modes: tuple[str, ...] = DEFAULT_MODES,
    limit: int | None = None,
    seeds: tuple[int, ...] | None = None,
    sigma0: float | None = None,
    beta: float | None = None,
    radius: float | None = None,
    with_float: bool = True,
    progress: bool = False,
    trust_pickle: bool = False,
    declared: Any = None,
    stream: Any = None,
    wire: str = "raw",
) -> FixedEval:
    """Integer reference (and float reference) accuracy on every additive GSC-C condition.

    ``config`` is a TOML path or a `codegen.frontend.reader.BuildConfig`; ``sigma0``/``beta``/
    ``radius`` override it (e.g. with the values `codegen eval` selected on source data).
    ``declared`` (`codegen.frontend.cliargs.Declared`): what the model file cannot show; the
    pooling of a model with a forward pass is told by running it, as in `codegen build`.
    ``stream`` (`codegen.data.streams.StreamSpec`): the stateful modes run over one stream of
    every condition, as `codegen eval --stream-segment` runs them; otherwise each condition is
    its own stream from a reset state. ``wire`` (`codegen.base.adpcm.WIRES`): the test clips
    as the device gets them, their features computed from the ADPCM-decoded samples for
    "adpcm", as `codegen eval --wire` does.
    """
    from codegen.base.adpcm import on_wire_each
    from codegen.base.features import quantize_features
    from codegen.base.progress import each
    from codegen.data import condition_ids, conditions, load_condition, load_split
    from codegen.data.selection import stream_order
    from codegen.data.streams import build_stream
    from codegen.elatta.float_ref import adapt, encode_float, head_logits
    from codegen.frontend.cliargs import Declared, merge
    from codegen.frontend.importer import load_model, resolve_pooling
    from codegen.frontend.reader import BuildConfig, load_config, read_model
    from codegen.intref.model import infer_int
    from codegen.ir.meta import features_for
    from codegen.ir.modes import DEVICE_MODES
    from codegen.ir.modes import mode as device_mode
    from codegen.quantize.format_search import search_weight_formats
    from codegen.quantize.model import calibration_features, quantize_model
    from codegen.stages.registry import stage_classes

    bad = [m for m in modes if m not in DEVICE_MODES]
    if bad:
        raise ConfigError(f"modes {bad} are not allowed: use {DEVICE_MODES}")
    cfg = config if isinstance(config, BuildConfig) else load_config(config)
    imported = load_model(
        model_path,
        data_dir=data_dir,
        trust_pickle=trust_pickle,
        declared=merge(declared or Declared(), cfg.declared),
    )
    probe = features_for(load_split(str(data_dir), "train").pcm[:64], imported.meta)
    imported = resolve_pooling(imported, probe)
    model = _model_with(read_model(imported, basis_path, cfg), sigma0, beta, radius)
    feats, source = calibration_features(model, str(data_dir))
    q = quantize_model(
        model, feats, source, search_weight_formats(model, feats, source).weight_shifts
    )
    el = model.adapt.to_float()
    seed_list = seeds if seeds is not None else (int(el.seed),)
    W, b, V = model.head.weight.values, model.head.bias.values, model.basis.V.values

    # With a stream every condition joins it (as in `codegen eval`); the tables are additive.
    conds = [
        c
        for c in conditions(str(data_dir), None if stream is not None else "additive")
        if stream is not None or c.snr_db is not None
    ]
    n_test = len(condition_ids(str(data_dir), conds[0])[0]) if conds else 0
    order = stream_order(n_test, limit, seed_list[0])
    labels: list[tuple[Any, np.ndarray, np.ndarray]] = []

    def test_pcm() -> Iterator[np.ndarray]:
        for cond in each(conds, "fixed eval: features", "cond", enabled=progress):
            split = load_condition(str(data_dir), cond, rows=order)
            labels.append((cond, split.labels, split.ids))
            yield split.pcm

    clips: list[tuple[Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    # the test audio as the device gets it over the wire (raw, or ADPCM-decoded)
    for j, pcm in enumerate(on_wire_each(test_pcm(), wire)):
        cond, y, ids = labels[j]
        xf = features_for(pcm, model.meta)
        clips.append((cond, xf, quantize_features(xf, q.x_fmt), y, ids))
    n_clips = len(clips[0][3]) if clips else 0
    # the order every stateful mode runs in: one stream, or each condition from a reset
    if stream is not None:
        st = build_stream([len(c[3]) for c in clips], stream)
        runs = [list(zip(st.condition.tolist(), st.clip.tolist(), strict=True))]
    else:
        runs = [[(ci, i) for i in range(len(c[3]))] for ci, c in enumerate(clips)]

    def run_order(pairs: list[tuple[int, int]], mode: str, s: int) -> tuple[Any, Any]:
        """(fixed classes, float classes or None) of one order of (condition, clip) pairs."""
        xi = np.stack([clips[c][2][i] for c, i in pairs])
        ids = np.array([clips[c][4][i] for c, i in pairs])
        qs = (
            q
            if s == el.seed
            else dataclasses.replace(
                q,
                adapt=dataclasses.replace(
                    q.adapt_params, cfg=dataclasses.replace(q.adapt_params.cfg, seed=int(s))
                ),
            )
        )
        fixed = np.asarray(infer_int(xi, qs, ids, mode=mode).pred)
        if not with_float:
            return fixed, None
        xf = np.stack([clips[c][1][i] for c, i in pairs])
        stage = device_mode(mode).before_encoder
        if stage is not None:
            return fixed, stage_classes(
                xf, stage, model.adapt.stages, lambda u: head_logits(encode_float(u, model), W, b)
            )
        z_f = encode_float(xf, model)
        search = device_mode(mode).search
        return fixed, adapt(z_f, W, b, V, ids, el.replace(mode=search, seed=int(s))).pred

    acc_fixed: dict[tuple[str, float, str], list[float]] = {}
    acc_float: dict[tuple[str, float, str], list[float]] = {}
    same: dict[tuple[str, float], list[float]] = {}
    for mode in each(modes, "fixed eval", "mode", enabled=progress):
        # a mode without a latent search answers the same for every seed: it runs once
        for s in seed_list if device_mode(mode).search != "no_adapt" else seed_list[:1]:
            pred_i = [np.empty(len(c[3]), np.int64) for c in clips]
            pred_f = [np.empty(len(c[3]), np.int64) for c in clips]
            for pairs in runs:
                fx, fl = run_order(pairs, mode, int(s))
                for j, (c, i) in enumerate(pairs):
                    pred_i[c][i] = fx[j]
                    if fl is not None:
                        pred_f[c][i] = fl[j]
            for ci, (cond, _, _, y, _) in enumerate(clips):
                if cond.family != "additive" or cond.snr_db is None:
                    continue
                snr = float(cond.snr_db)
                acc_fixed.setdefault((mode, snr, cond.name), []).append(
                    float(np.mean(pred_i[ci] == y))
                )
                if with_float:
                    acc_float.setdefault((mode, snr, cond.name), []).append(
                        float(np.mean(pred_f[ci] == y))
                    )
                    same.setdefault((mode, snr), []).append(
                        float(np.mean(pred_f[ci] == pred_i[ci]))
                    )
    same_table: dict[str, Any] = {}
    rank = {m: i for i, m in enumerate(modes)}
    for (mode, snr), vals in sorted(same.items(), key=lambda kv: (rank[kv[0][0]], -kv[0][1])):
        same_table.setdefault(mode, {})[f"{snr:g}"] = round(float(np.mean(vals)), 6)
    return FixedEval(_table(acc_fixed), _table(acc_float), same_table, n_clips, source)


def evaluate_fixed(
    model_path: str | Path,
    basis_path: str | Path,
    config: Any,
    data_dir: str | Path,
    *,
    modes: tuple[str, ...] = DEFAULT_MODES,
    limit: int | None = None,
    seeds: tuple[int, ...] | None = None,
    sigma0: float | None = None,
    beta: float | None = None,
    radius: float | None = None,
    progress: bool = False,
    trust_pickle: bool = False,
    declared: Any = None,
    stream: Any = None,
    wire: str = "raw",
) -> dict[str, Any]:
    """Fixed-point accuracies ``{mode: {snr: {noise: acc, "average": acc}}}`` (report.json's
    ``"float"`` layout) from the Python integer reference."""
    return compare_fixed_float(
        model_path,
        basis_path,
        config,
        data_dir,
        modes=modes,
        limit=limit,
        seeds=seeds,
        sigma0=sigma0,
        beta=beta,
        radius=radius,
        with_float=False,
        progress=progress,
        trust_pickle=trust_pickle,
        declared=declared,
        stream=stream,
        wire=wire,
    ).fixed
