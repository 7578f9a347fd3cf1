"""Float vs integer MFCC front end on a data set (docs/numeric.md §7.4): the per-coefficient
feature error and the model's accuracy with integer features against float features, per
additive-noise SNR (all noises pooled) and on the clean clips.

Features: ``float`` = `codegen.ir.meta.features_for` (numpy float32 MFCC + normalisation), then
`codegen.base.features.quantize_features` (today's host path); ``int`` =
`codegen.intref.mfcc.mfcc_int`
(the device's front end). Accuracy is measured twice with the same integer encoder and head
(`codegen.intref.model.infer_int`, mode no_adapt) and with the float model
(`codegen.elatta.float_ref.encode_float` on the float features, and on the integer features
dequantised), so the front end is the only difference in each pair. ``wire="adpcm"`` computes
both from the ADPCM-decoded clips (`codegen.base.adpcm.on_wire`): int model on int MFCC is then
what the device computes in the audio mode when the host sends ADPCM (docs/numeric.md §8).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class FrontEndEval:
    coefficients: list[dict[str, float]]  # per coefficient: error in normalised units and LSBs
    accuracy: list[dict[str, Any]]  # per SNR: clips, accuracies, differences
    exact_fraction: float  # features equal to the float path's quantised ones
    clips: int


def evaluate_front_end(
    build_dir: str | Path, data_dir: str | Path, limit: int | None = None, wire: str = "raw"
) -> FrontEndEval:
    from codegen.artefact.program import load_program
    from codegen.base.adpcm import on_wire
    from codegen.base.features import quantize_features
    from codegen.data import conditions, load_condition
    from codegen.elatta.float_ref import encode_float, head_logits
    from codegen.intref.mfcc import mfcc_int
    from codegen.intref.model import infer_int
    from codegen.ir.meta import features_for
    from codegen.quantize.mfcc import quantize_mfcc_for

    q = load_program(build_dir)
    qm = quantize_mfcc_for(q)
    model = q.source
    W, b = model.head.weight.values, model.head.bias.values
    scale = 2.0**-q.x_fmt.frac_bits
    groups: dict[str, list[Any]] = {}
    for c in conditions(str(data_dir), "additive"):
        key = "clean" if c.snr_db is None else f"{float(c.snr_db):g}"
        groups.setdefault(key, []).append(c)
    for c in conditions(str(data_dir), "clean"):
        groups.setdefault("clean", []).append(c)
    err_sum = np.zeros(qm.params.n_mfcc)
    err_sq = np.zeros(qm.params.n_mfcc)
    err_max = np.zeros(qm.params.n_mfcc)
    lsb_max = np.zeros(qm.params.n_mfcc, np.int64)
    n_frames = 0
    exact = 0
    total = 0
    rows: list[dict[str, Any]] = []
    for key, conds in groups.items():
        hits = {"float_model_float": 0, "float_model_int": 0, "int_model_float": 0}
        hits["int_model_int"] = 0
        n = 0
        same = 0
        for cond in conds:
            split = load_condition(str(data_dir), cond)
            pcm, labels = on_wire(split.pcm[:limit], wire), split.labels[:limit]
            ids = split.ids[:limit].astype(np.int64)
            xf = features_for(pcm, model.meta).astype(np.float64)
            xq = quantize_features(xf, q.x_fmt)
            xi = mfcc_int(pcm, qm).astype(np.int64)
            d = xi * scale - xf
            err_sum += d.sum(axis=(0, 1))
            err_sq += (d * d).sum(axis=(0, 1))
            err_max = np.maximum(err_max, np.abs(d).max(axis=(0, 1)))
            lsb_max = np.maximum(lsb_max, np.abs(xi - xq).max(axis=(0, 1)))
            n_frames += d.shape[0] * d.shape[1]
            exact += int((xi == xq).sum())
            total += xi.size
            p_ff = np.argmax(head_logits(encode_float(xf, model), W, b), axis=1)
            p_fi = np.argmax(head_logits(encode_float(xi * scale, model), W, b), axis=1)
            p_if = np.asarray(infer_int(xq, q, ids, mode="no_adapt").pred_noadapt)
            p_ii = np.asarray(infer_int(xi, q, ids, mode="no_adapt").pred_noadapt)
            for name, pred in (
                ("float_model_float", p_ff),
                ("float_model_int", p_fi),
                ("int_model_float", p_if),
                ("int_model_int", p_ii),
            ):
                hits[name] += int((pred == labels).sum())
            same += int((p_ii == p_if).sum())
            n += len(labels)
        acc = {k: 100.0 * v / n for k, v in hits.items()}
        rows.append(
            {
                "snr": key,
                "clips": n,
                **{k: round(v, 3) for k, v in acc.items()},
                "int_model_delta": round(acc["int_model_int"] - acc["int_model_float"], 3),
                "float_model_delta": round(acc["float_model_int"] - acc["float_model_float"], 3),
                "same_class": round(100.0 * same / n, 3),
            }
        )
    coeffs = [
        {
            "coefficient": j,
            "mean": float(err_sum[j] / n_frames),
            "rms": float(np.sqrt(err_sq[j] / n_frames)),
            "max_abs": float(err_max[j]),
            "max_lsb": int(lsb_max[j]),
        }
        for j in range(qm.params.n_mfcc)
    ]
    clips = sum(int(r["clips"]) for r in rows)
    return FrontEndEval(coeffs, rows, exact / max(total, 1), clips)
