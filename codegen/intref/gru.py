"""Integer GRU encoder: the Python twin of ``firmware/elt_gru_s16.c`` (the step is written out in
`codegen.quantize.gru`). Exact int64 arithmetic on numpy arrays: every sum is proven below 2^31
by the compiler, every product below 2^47."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from codegen.base.fixed import rshift_round
from codegen.intref.activations import TRACE_H, TRACE_Z, TraceFn, sigmoid_lut, tanh_from_sigmoid
from codegen.ir.nodes import POOL_SHIFT, QGru

IntArray = npt.NDArray[np.int64]


def _sat16(x: IntArray) -> IntArray:
    return np.minimum(np.maximum(x, -32768), 32767)


def gru_int(
    x: npt.ArrayLike, q: QGru, trace: TraceFn | None = None, sequence: bool = False
) -> IntArray:
    """int16 features [N, T, F] (x_fmt) -> z [N, H] (Q0.15: h_T, mean or max over time by
    ``q.pool``), or the whole sequence [N, T, H] with ``sequence``."""
    X = np.asarray(x)
    if not np.issubdtype(X.dtype, np.integer):
        raise TypeError(f"inputs must be integers (int16 raw in {q.x_fmt.name}), got {X.dtype}")
    if X.ndim != 3 or X.shape[1:] != (q.num_frames, q.input_size):
        raise ValueError(
            f"features must have shape [N, {q.num_frames}, {q.input_size}], got {X.shape}"
        )
    H = q.hidden_size
    sh = q.shifts
    lut = np.asarray(q.lut.table.raw, dtype=np.int64)
    w_ih, w_hh = q.w_ih.raw.astype(np.int64), q.w_hh.raw.astype(np.int64)
    b_ih, b_hh = q.b_ih.raw.astype(np.int64), q.b_hh.raw.astype(np.int64)
    xs = rshift_round(X.astype(np.int64), sh.x_opshift)
    N = X.shape[0]
    h = np.zeros((N, H), dtype=np.int64)
    acc = np.zeros((N, H), np.int64) if q.pool == "mean" else np.full((N, H), -32768, np.int64)
    seq = np.empty((N, q.num_frames, H), np.int64) if sequence else None
    for t in range(q.num_frames):
        hs = rshift_round(h, sh.h_opshift)
        ax = xs[:, t] @ w_ih.T + b_ih
        ah = hs @ w_hh.T + b_hh
        rz = sigmoid_lut(lut, q.lut.index_shift, _sat16(rshift_round(ax + ah, sh.sig_rshift)))
        r, z = rz[:, :H], rz[:, H : 2 * H]
        pre_n = ax[:, 2 * H :] + rshift_round(r * ah[:, 2 * H :], 15)
        n2 = _sat16(rshift_round(pre_n, sh.tanh_rshift))
        n = tanh_from_sigmoid(sigmoid_lut(lut, q.lut.index_shift, n2))
        h = _sat16(n + rshift_round(z * (h - n), 15))
        if trace is not None:
            trace(TRACE_H, t, h.copy())
        if seq is not None:
            seq[:, t] = h
        if q.pool == "mean":
            acc += h
        elif q.pool == "max":
            np.maximum(acc, h, out=acc)
    if seq is not None:
        return seq
    if q.pool == "mean":
        out = _sat16(rshift_round(acc * q.pool_recip, POOL_SHIFT))
    elif q.pool == "max":
        out = acc
    else:
        out = h
    if trace is not None:
        trace(TRACE_Z, 0, out)
    return out
