"""Integer LSTM: the Python twin of ``firmware/elt_lstm_s16.c`` (docs/numeric.md §4).

Every line below has a C counterpart with the same name in the kernel; both read the integers of
one `codegen.ir.QLstm` and nothing else. One step, for gate rows r (torch order i, f, g, o):

    xs, hs = rshift_round(x_t, x_opshift), rshift_round(h, h_opshift)      (int16 operands)
    acc_r  = b_r + Σ_j W_ih[r,j] xs_j + Σ_j W_hh[r,j] hs_j     (int32, exact by proof, A bits)
    i,f,o  = σ(sat16(rshift_round(acc, sig_rshift)))           (Q4.11 in, Q0.15 out)
    g      = tanh(x) = 2σ(2x) − 1, 2x = sat16(rshift_round(acc, tanh_rshift))
    c      = sat32(rshift_round(f·c + (i·g) << cell_ig_lshift, 15))      (int32, c format)
    h      = sat16(rshift_round(o · tanh(c), 15)),  2c = sat16(rshift_round(c, cell_tanh_rshift))

σ reads a 257-entry Q0.15 table over [0, 16] with linear interpolation and mirrors negative
inputs (σ(−x) = 1 − σ(x); CMSIS-NN style, DESIGN §3).
The matrix product runs as one float64 BLAS call: every partial sum is an integer bounded by the
proven int32 bound (< 2^53), so it is exact in any summation order.

`lstm_float` is the float64 twin of the same recurrence (torch.nn.LSTM equations), used for
calibration and for the float-vs-fixed report.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from codegen.fixed import rshift_round
from codegen.ir import GATES, Lstm, QLstm

IntArray = npt.NDArray[np.int64]
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
CHUNK = 512  # samples per batch: keeps the [N, 4H] float64 temporaries (512 KiB) in L2


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


def gate_shifts(q: QLstm) -> IntArray:
    """The final rounding shift of every gate row: sig_rshift for i, f, o; tanh_rshift for g."""
    s = np.full(len(GATES) * q.hidden_size, q.shifts.sig_rshift, dtype=np.int64)
    g = GATES.index("g")
    s[g * q.hidden_size : (g + 1) * q.hidden_size] = q.shifts.tanh_rshift
    return s


def _lstm_int_batch(X: np.ndarray, q: QLstm, trace: TraceFn | None) -> IntArray:
    """The step of the module docstring on a batch, in float64 arrays holding exact integers.

    Every value below is an integer (or an integer times a power of two) far inside float64's
    53-bit significand, so each floor, product and sum is the integer operation it stands for:

    * gates: v_r = Σ_j w_rj·u_j·2^−s_r + (b_r + 2^(s_r−1))·2^−s_r + 32768, so
      floor(v_r) = rshift_round(acc_r, s_r) + 32768; the partial sums are multiples of 2^−s_r
      below (2^31 + 2^(15+s_r))·2^−s_r in magnitude (the int32 proof), exact in any BLAS
      summation order. Truncating v to an integer and clipping the index to [0, 65535]
      (inside the gather) is floor-then-sat16 shifted into the σ table's index range:
      truncation and floor differ only on (−1, 0), which clips to 0 either way.
    * sat32 of c and sat16 of h are never active and are left out: |c_t| ≤ t (§4) and
      |o·tanh(c)| ≤ 32767·32766 < 2^30, so |h| ≤ 32766.
    * cell: |f·c| < 2^46, |i·g·2^L| ≤ 2^46 (L = cell_ig_lshift ≤ 16), so the sum and the
      rounding shift by 15 are exact; likewise o·tanh(c) < 2^30 and the rounding shifts of c
      and h (the operand shift) are exact.

    One BLAS product and a handful of in-place whole-array passes per step: ≈20k samples/s
    per core for the encoder alone (bench/host_reference.py measures the whole reference).
    """
    N, F, H = X.shape[0], q.input_size, q.hidden_size
    sh = q.shifts
    # sigf[v + 32768] = σ(v); float32 holds these 15-bit integers exactly and halves the
    # gather's cache footprint; the arithmetic below widens them to float64 exactly.
    sigf = sigmoid_all(q).astype(np.float32)
    gi, gf, gg, go = (slice(n * H, (n + 1) * H) for n in range(len(GATES)))
    s = gate_shifts(q).astype(np.float64)
    inv = 2.0 ** -s
    # u = [xs_t, hs, 1]: the bias and the rounding constant ride on the constant column.
    w = np.vstack([q.w_ih.raw.T.astype(np.float64), q.w_hh.raw.T.astype(np.float64),
                   (q.bias.raw.astype(np.float64) + 2.0 ** (s - 1))[None, :]]) * inv
    w[-1] += 32768.0  # index offset of the σ table
    xs = rshift_round(X.astype(np.int64), sh.x_opshift).astype(np.float64)  # all frames
    u = np.ones((N, F + H + 1), dtype=np.float64)
    u[:, F : F + H] = 0.0  # hs of h_0 = 0
    h = np.zeros((N, H), dtype=np.float64)
    c = np.zeros((N, H), dtype=np.float64)  # int32 values, c_fmt
    v = np.empty((N, 4 * H), dtype=np.float64)
    L = float(1 << sh.cell_ig_lshift)
    cs = sh.cell_tanh_rshift
    c_off = 2.0 ** (cs - 1) * 2.0 ** -cs + 32768.0  # rounding constant and table offset
    hs_inv, hs_off = 2.0 ** -sh.h_opshift, (2.0 ** (sh.h_opshift - 1) if sh.h_opshift else 0.0)
    a = np.empty((N, 4 * H), dtype=np.float32)
    ix = np.empty((N, 4 * H), dtype=np.intp)
    ig = np.empty((N, H), dtype=np.float64)
    cix = np.empty((N, H), dtype=np.intp)
    tc = np.empty((N, H), dtype=np.float64)
    tc32 = np.empty((N, H), dtype=np.float32)
    for t in range(q.num_frames):
        u[:, :F] = xs[:, t, :]
        np.matmul(u, w, out=v)
        # floor + sat16 + table offset: truncate, then clip the index into [0, 65535] inside
        # the gather (truncation differs from floor only on (−1, 0), which clips to 0 anyway)
        ix[...] = v
        np.take(sigf, ix, out=a, mode="clip")
        i, f, o = a[:, gi], a[:, gf], a[:, go]
        # c = rshift_round(f·c + (i·g) << L, 15), g = 2σ(2x) − 1 = 2a − 32768; in place
        np.multiply(a[:, gg], 2.0 * L, out=ig)
        ig -= 32768.0 * L
        ig *= i
        c *= f
        c += ig
        c += 16384.0
        c *= 1.0 / 32768.0
        np.floor(c, out=c)  # sat32 is never active: |c_t| <= t (numeric.md §4)
        # tanh(c) = 2σ(2c) − 1, 2c = sat16(rshift_round(c, cs)) (+ table offset)
        np.multiply(c, 2.0**-cs, out=tc)
        tc += c_off
        cix[...] = tc
        np.take(sigf, cix, out=tc32, mode="clip")
        tc[...] = tc32
        # h = sat16(rshift_round(o·tanh(c), 15)); o·tanh(c) < 2^30, never saturates
        tc *= 2.0
        tc -= 32768.0
        tc *= o
        tc += 16384.0
        tc *= 1.0 / 32768.0
        h = np.floor(tc, out=tc).copy()
        u[:, F : F + H] = np.floor((h + hs_off) * hs_inv) if sh.h_opshift else h
        if trace is not None:
            trace(TRACE_C, t, c.astype(np.int64))
            trace(TRACE_H, t, h.astype(np.int64))
    out: IntArray = h.astype(np.int64)
    if trace is not None:
        trace(TRACE_Z, 0, out)
    return out


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
