"""Integer LSTM: the Python twin of ``firmware/elt_lstm_s16.c`` (docs/numeric.md §4).

Every line below has a C counterpart with the same name in the kernel; both read the integers of
one `codegen.ir.QLstm` and nothing else. One step, for gate rows r (torch order i, f, g, o):

    acc_r  = (Σ_j W_ih[r,j] x_j) << ih_lshift + (Σ_j W_hh[r,j] h_j) << hh_lshift
             + b_r << bias_lshift                              (int64, acc_frac bits)
    i,f,o  = σ(sat16(rshift_round(acc, sig_rshift)))           (Q4.11 in, Q0.15 out)
    g      = tanh(x) = 2σ(2x) − 1, 2x = sat16(rshift_round(acc, tanh_rshift))
    c      = sat32(rshift_round(f·c + (i·g) << cell_ig_lshift, 15))      (int32, c format)
    h      = sat16(rshift_round(o · tanh(c), 15)),  2c = sat16(rshift_round(c, cell_tanh_rshift))

σ reads a 257-entry Q0.15 table over [0, 16] with linear interpolation and mirrors negative
inputs (σ(−x) = 1 − σ(x); CMSIS-NN style, DESIGN §3).
The matrix products run as float64 BLAS calls: every partial sum is an integer below 2^53
(|w|, |x| ≤ 2^15, at most 2^22 terms; checked by the quantizer), so they are exact.

`lstm_float` is the float64 twin of the same recurrence (torch.nn.LSTM equations), used for
calibration and for the float-vs-fixed report.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from codegen.fixed import rshift_round, sat16, sat32
from codegen.ir import GATES, Lstm, QLstm

IntArray = npt.NDArray[np.int64]
FLOAT64_EXACT = 1 << 53
FloatArray = npt.NDArray[np.float64]
# trace(stage, index, values [N, ...]): named trace points, the same names as the C side.
TraceFn = Callable[[str, int, np.ndarray], None]

TRACE_H = "lstm.h"  # h[t] after step t, Q0.15
TRACE_C = "lstm.c"  # c[t] after step t, c format
TRACE_Z = "z"  # z_t = h_T, Q0.15: the hand-off to the adaptation core


def sigmoid_lut(lut: IntArray, index_shift: int, v: IntArray) -> IntArray:
    """elt_sigmoid_q15: v Q4.11 raw (int16) -> σ Q0.15 by table + linear interpolation.

    a = min(|v|, 32767); j = a >> s; frac = a & (2^s − 1);
    σ⁺ = T[j] + ((T[j+1] − T[j])·frac + 2^(s−1)) >> s   (floor shift, as ARM ASR);
    σ = σ⁺ for v ≥ 0, 32768 − σ⁺ for v < 0 (σ(−x) = 1 − σ(x), exact mirror).
    """
    vv = np.asarray(v, dtype=np.int64)
    a = np.minimum(np.abs(vv), 32767)
    j = a >> index_shift
    frac = a & ((1 << index_shift) - 1)
    lo = lut[j]
    hi = lut[j + 1]
    pos = lo + (((hi - lo) * frac + (1 << (index_shift - 1))) >> index_shift)
    out: IntArray = np.where(vv < 0, 32768 - pos, pos)
    return out


def tanh_from_sigmoid(s: IntArray) -> IntArray:
    """elt_tanh_q15 tail: tanh(x) = 2σ(2x) − 1 in Q0.15 (σ raw ∈ [0, 32767] -> [−32768, 32766])."""
    out: IntArray = 2 * s - 32768
    return out


def exact_matmul(a: npt.ArrayLike, b_t: npt.ArrayLike) -> IntArray:
    """a [N, K] @ b_t [K, M] for integers whose every partial sum stays below 2^53 in magnitude
    (the quantizer checks K·2^30 < 2^53): float64 BLAS is then exact in any summation order."""
    out = np.asarray(a, dtype=np.float64) @ np.asarray(b_t, dtype=np.float64)
    return out.astype(np.int64)


def sigmoid_all(q: QLstm) -> IntArray:
    """`sigmoid_lut` evaluated once for every int16 input (index v + 32768): the same function
    as a 65536-entry gather, which is what the batched reference uses."""
    key = id(q.lut.table.raw)
    hit = _SIG_CACHE.get(key)
    if hit is not None and hit[0] is q.lut.table.raw:
        return hit[1]
    v = np.arange(-32768, 32768, dtype=np.int64)
    full = sigmoid_lut(q.lut.table.raw, q.lut.index_shift, v)
    full.setflags(write=False)
    if len(_SIG_CACHE) >= 8:
        _SIG_CACHE.clear()
    _SIG_CACHE[key] = (q.lut.table.raw, full)
    return full


_SIG_CACHE: dict[int, tuple[np.ndarray, IntArray]] = {}
CHUNK = 1024  # samples per batch: keeps the [N, 4H] temporaries in cache


def lstm_int(x: npt.ArrayLike, q: QLstm, trace: TraceFn | None = None) -> IntArray:
    """x int16 features [N, T, F] (x_fmt raw) -> z_t = h_T [N, H] as int64 holding Q0.15 int16.

    Inputs may be any int16 values (the device accepts any), including saturating ones.
    """
    X = np.asarray(x)
    if not np.issubdtype(X.dtype, np.integer):
        raise TypeError(f"features must be integers (int16 raw in {q.x_fmt.name}), got {X.dtype}")
    if X.ndim != 3 or X.shape[1:] != (q.num_frames, q.input_size):
        raise ValueError(
            f"features must have shape [N, {q.num_frames}, {q.input_size}], got {X.shape}"
        )
    if X.size and (int(X.min()) < -32768 or int(X.max()) > 32767):
        raise ValueError("features must be int16 values")
    if trace is not None or X.shape[0] <= CHUNK:
        return _lstm_int_batch(X, q, trace)
    parts = [_lstm_int_batch(X[i : i + CHUNK], q, None) for i in range(0, X.shape[0], CHUNK)]
    return np.concatenate(parts, axis=0)


def _lstm_int_batch(X: np.ndarray, q: QLstm, trace: TraceFn | None) -> IntArray:
    N, H = X.shape[0], q.hidden_size
    sh = q.shifts
    sig = sigmoid_all(q)  # sig[v + 32768] = sigmoid_lut(lut, shift, v)
    gi, gf, gg, go = (slice(n * H, (n + 1) * H) for n in range(len(GATES)))
    # One exact float64 product per step: u = [x_t, h] times the stacked weights pre-shifted to
    # acc_frac, g rows doubled (rshift_round(acc, s − 1) == rshift_round(2·acc, s), so one
    # shift serves all four gates). Exact because every partial sum is an integer bounded by
    # the proven gate bound (< 2^53, checked here); otherwise two products and int64 shifts.
    scale = np.ones(4 * H)
    scale[gg] = 2.0
    fused = 2 * q.acc_gate.bound < FLOAT64_EXACT
    w = np.vstack([q.w_ih.raw.T * float(1 << sh.ih_lshift),
                   q.w_hh.raw.T * float(1 << sh.hh_lshift)]) * scale
    bias = (q.bias.raw << sh.bias_lshift).astype(np.float64) * scale
    w_ih_t = q.w_ih.raw.T.astype(np.float64)  # two-product path (exact: |w| < 2^15)
    w_hh_t = q.w_hh.raw.T.astype(np.float64)
    u = np.zeros((N, q.input_size + H), dtype=np.float64)
    h = np.zeros((N, H), dtype=np.int64)
    c = np.zeros((N, H), dtype=np.int64)  # int32 values, c_fmt
    for t in range(q.num_frames):
        if fused:
            u[:, : q.input_size] = X[:, t, :]
            u[:, q.input_size :] = h
            acc = (u @ w + bias).astype(np.int64)
        else:
            acc = (exact_matmul(X[:, t, :], w_ih_t) << sh.ih_lshift) + (
                exact_matmul(h, w_hh_t) << sh.hh_lshift) + (q.bias.raw << sh.bias_lshift)
            acc[:, gg] *= 2
        # Q4.11 gate inputs (g: 2x), σ from the gather table; tanh(x) = 2σ(2x) − 1.
        a = sig[sat16(rshift_round(acc, sh.sig_rshift)) + 32768]
        i, f, o = a[:, gi], a[:, gf], a[:, go]
        g = tanh_from_sigmoid(a[:, gg])
        c = sat32(rshift_round(f * c + ((i * g) << sh.cell_ig_lshift), 15))
        tc = tanh_from_sigmoid(sig[sat16(rshift_round(c, sh.cell_tanh_rshift)) + 32768])
        h = sat16(rshift_round(o * tc, 15))
        if trace is not None:
            trace(TRACE_C, t, c)
            trace(TRACE_H, t, h)
    if trace is not None:
        trace(TRACE_Z, 0, h)
    return h


def _sigmoid(x: FloatArray) -> FloatArray:
    out: FloatArray = 0.5 * (1.0 + np.tanh(0.5 * x))
    return out


def lstm_float(
    x: npt.ArrayLike, lstm: Lstm, record: bool = False
) -> tuple[FloatArray, dict[str, FloatArray]]:
    """float64 torch.nn.LSTM recurrence over x [N, T, F] -> (h_T [N, H], ranges).

    With ``record`` the dict holds the per-step maxima over the batch of |c|, |h| and of each
    gate's pre-activation (`max_c`, `max_h`, `max_pre_i` …, each [T]) and the fraction of gate
    pre-activations beyond the integer LUT's input range (`sat_i` …: |x| > 16 for σ gates,
    |x| > 8 for the tanh gate).
    """
    X = np.asarray(x, dtype=np.float64)
    N, T, _ = X.shape
    H = lstm.hidden_size
    w_ih, w_hh = lstm.w_ih.values, lstm.w_hh.values
    b = lstm.b_ih.values + lstm.b_hh.values
    h = np.zeros((N, H))
    c = np.zeros((N, H))
    stats: dict[str, list[float]] = {}
    for t in range(T):
        pre = X[:, t, :] @ w_ih.T + h @ w_hh.T + b
        pi, pf, pg, po = (pre[:, n * H : (n + 1) * H] for n in range(4))
        c = _sigmoid(pf) * c + _sigmoid(pi) * np.tanh(pg)
        h = _sigmoid(po) * np.tanh(c)
        if record:
            for name, p, lim in (("i", pi, 16.0), ("f", pf, 16.0), ("g", pg, 8.0),
                                 ("o", po, 16.0)):
                stats.setdefault(f"max_pre_{name}", []).append(float(np.max(np.abs(p), initial=0)))
                stats.setdefault(f"sat_{name}", []).append(float(np.mean(np.abs(p) > lim)))
            stats.setdefault("max_c", []).append(float(np.max(np.abs(c), initial=0.0)))
            stats.setdefault("max_h", []).append(float(np.max(np.abs(h), initial=0.0)))
    return h, {k: np.asarray(v) for k, v in stats.items()}
