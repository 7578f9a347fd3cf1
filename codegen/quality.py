"""How far the integer program agrees with the float model it came from, on given features:
errors of the quantized input, of z_t and of the no-adapt logits, and the no-adapt class
agreement. `codegen build` reports it in the manifest (``float_vs_fixed``); nothing decides from
it. It runs both references, so it sits beside the evaluators, not inside a compiler stage."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.ir import QModel


def _err(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    d = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    return {
        "max_abs": float(np.max(np.abs(d))) if d.size else 0.0,
        "rms": float(np.sqrt(np.mean(d**2))) if d.size else 0.0,
    }


def float_vs_fixed(q: QModel, x_float: npt.ArrayLike) -> dict[str, Any]:
    """Activation errors of the integer pipeline against the float64 one on ``x_float``: the
    quantized input, z_t and the no-adapt logits, and the no-adapt class agreement."""
    from codegen.elatta.float_ref import head_logits, lstm_float
    from codegen.features import quantize_features
    from codegen.intref.lstm import lstm_int

    X = np.asarray(x_float, dtype=np.float64)
    L = q.lstm
    xi = quantize_features(X, L.x_fmt)
    z_f, _ = lstm_float(X, q.source.lstm)
    z_i = lstm_int(xi, L)
    out: dict[str, Any] = {
        "samples": int(X.shape[0]),
        "x": _err(L.x_fmt.to_float(xi), X),
        "x_saturated_fraction": float(np.mean(np.abs(X) > L.x_fmt.max_value)),
        "z": _err(L.h_fmt.to_float(z_i), z_f),
    }
    logits_f = head_logits(z_f, q.source.head.weight.values, q.source.head.bias.values)
    pred_f = np.argmax(logits_f, axis=1)
    if q.adapt is not None:
        from codegen.intref.model import infer_int

        res = infer_int(xi, q, np.arange(X.shape[0]), mode="no_adapt")
        out["same_class_noadapt"] = float(np.mean(res.pred_noadapt == pred_f))
        scale = logits_scale(q)
        if scale is not None:
            out["logits_noadapt"] = _err(np.asarray(res.logits_noadapt) * scale, logits_f)
    return out


def logits_scale(q: QModel) -> float | None:
    """Float value of one logit LSB, if the adaptation core exposes the logits format."""
    from codegen.manifest import adapt_formats

    fmts = adapt_formats(q)
    fmt = fmts.get("logits")
    return None if fmt is None else 1.0 / (1 << int(fmt["frac_bits"]))
