"""Choose the LSTM weight formats by the integer latent's error on the calibration clips.

The int32 gate accumulator fixes A, the fraction bits every product W·operand is summed at
(`codegen.quantize.lstm.prove_gate_accumulator`); its worst case is set by the value range of the
sum, not by how the A bits are split between a weight and its operand. The default split keeps
the most fraction bits each weight tensor allows, so the operands lose the rest:
xs = rshift_round(x, x_opshift), hs = rshift_round(h, h_opshift). A large model reading many
features has a large worst case, A is small, and h then enters every step with as few as 8
fraction bits. That rounding is fresh noise at every step and accumulates over T; the weights'
rounding is one fixed perturbation of the model. Moving d bits from W_hh to hs (or from W_ih
to xs) keeps A and the proof and trades the one for the other.

The trade is measured, not modelled: for each recurrent layer, first the W_ih drop over
0..x_opshift, then the W_hh drop over 0..h_opshift, each candidate quantized and run through
the integer reference on the calibration clips, and the one with the smallest root-mean-square
latent error against the float model is kept (ties keep fewer dropped bits), provided the
integer model's no-adapt class equals the float model's on no fewer clips than with the
unchanged formats. The clips are the
calibration clips only: no test data decides a format. Measured effect (docs/numeric.md §4):
the shipped T = 49 model's rms latent error 0.00040 -> 0.00028; a T = 97, H = 128, 40-MFCC
model 0.00129 -> 0.00049.

It runs the integer reference, so it sits beside the evaluators (like `codegen.intref.quality`), and
hands its decision to the quantizer as numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.ir.nodes import Model, QModel

# Candidates are judged on at most this many calibration clips (the first ones; the
# calibration set is already a seeded random draw of the clean train split).
SEARCH_CLIPS = 256


@dataclass(frozen=True)
class Candidate:
    weight_shifts: tuple[tuple[int, int], ...]  # per recurrent layer: (W_ih, W_hh) bits moved
    opshifts: tuple[tuple[int, int], ...]  # per recurrent layer: (x_opshift, h_opshift)
    z_rms: float
    z_max: float
    same_class: int  # clips whose integer no-adapt class equals the float model's

    def to_dict(self) -> dict[str, Any]:
        return {
            "weight_shifts": [list(s) for s in self.weight_shifts],
            "opshifts": [list(s) for s in self.opshifts],
            "z_rms": self.z_rms,
            "z_max": self.z_max,
            "same_class": self.same_class,
        }


@dataclass(frozen=True)
class FormatSearch:
    chosen: Candidate | None  # None: nothing searched ("max", or GRU layers only)
    clips: int
    tried: tuple[Candidate, ...]  # tried[0] is the "max" formats

    @property
    def weight_shifts(self) -> tuple[tuple[int, int], ...]:
        return () if self.chosen is None else self.chosen.weight_shifts

    def to_dict(self) -> dict[str, Any]:
        return {
            "clips": self.clips,
            "baseline": self.tried[0].to_dict() if self.tried else None,
            "chosen": None if self.chosen is None else self.chosen.to_dict(),
            "tried": [c.to_dict() for c in self.tried],
        }


def _latent_error(q: QModel, X: np.ndarray, z_f: np.ndarray) -> tuple[float, float, int]:
    """rms and max |z_int − z_float|, and on how many clips the integer model's no-adapt class
    equals the float model's."""
    from codegen.base.features import quantize_features
    from codegen.intref.model import encode_int, infer_int

    xi = quantize_features(X, q.x_fmt)
    W, b = q.source.head.weight.values, q.source.head.bias.values
    pred_f = np.argmax(z_f @ W.T + b, axis=1)
    if q.adapt is not None:
        res = infer_int(xi, q, np.arange(len(xi)), mode="no_adapt")
        z_i, pred_i = q.z_fmt.to_float(res.z), np.asarray(res.pred_noadapt)
    else:  # an encoder-only program: the float head on the integer latent
        z_i = q.z_fmt.to_float(encode_int(xi, q))
        pred_i = np.argmax(z_i @ W.T + b, axis=1)
    d = z_i - z_f
    same = int(np.sum(pred_i == pred_f))
    return float(np.sqrt(np.mean(d**2))), float(np.max(np.abs(d))), same


def search_weight_formats(
    model: Model, x_calib: npt.ArrayLike, source: str = "api"
) -> FormatSearch:
    """Coordinate search over the (W_ih, W_hh) fraction-bit drops of every layer whose kind
    searches (module docstring; `codegen.quantize.layers.QUANTIZERS`: GRU layers keep their
    formats)."""
    from codegen.elatta.float_ref import encode_float
    from codegen.quantize.layers import quantizer
    from codegen.quantize.model import quantize_model

    X = np.asarray(x_calib, dtype=np.float64)[:SEARCH_CLIPS]
    layers = model.encoder
    searched = [quantizer(L).weight_search for L in layers]
    if model.quant.weight_format == "max" or not any(searched):
        return FormatSearch(None, int(X.shape[0]), ())
    z_f = encode_float(X, model)
    tried: list[Candidate] = []

    def measure(shifts: tuple[tuple[int, int], ...]) -> Candidate:
        q = quantize_model(model, X, source, weight_shifts=shifts)
        rms, mx, same = _latent_error(q, X, z_f)
        ops = tuple((L.shifts.x_opshift, L.shifts.h_opshift) for L in q.encoder)
        c = Candidate(shifts, ops, rms, mx, same)
        tried.append(c)
        return c

    best = base = measure(((0, 0),) * len(layers))
    for li in range(len(layers)):
        if not searched[li]:
            continue
        for axis in (0, 1):  # W_ih (the x operand), then W_hh (the h operand)
            start = best
            for d in range(1, start.opshifts[li][axis] + 1):
                cand = [list(s) for s in start.weight_shifts]
                cand[li][axis] += d
                c = measure(tuple((a, b) for a, b in cand))
                if c.z_rms < best.z_rms and c.same_class >= base.same_class:
                    best = c
    return FormatSearch(best, int(X.shape[0]), tuple(tried))
