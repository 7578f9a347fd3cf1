"""Integer LSTM: the Python twin of ``firmware/elt_lstm_s16.c`` (docs/numeric.md §4).

Every line below has a C counterpart with the same name in the kernel; both read the integers of
one `codegen.ir.nodes.QLstm` and nothing else. One step, for gate rows r (torch order i, f, g, o):

    xs, hs = rshift_round(x_t, x_opshift), rshift_round(h, h_opshift)      (int16 operands)
    acc_r  = b_r + Σ_j W_ih[r,j] xs_j + Σ_j W_hh[r,j] hs_j     (int32, exact by proof, A bits)
    i,f,o  = σ(sat16(rshift_round(acc, sig_rshift)))           (Q4.11 in, Q0.15 out)
    g      = tanh(x) = 2σ(2x) − 1, 2x = sat16(rshift_round(acc, tanh_rshift))
    c      = sat32(rshift_round(f·c + (i·g) << cell_ig_lshift, 15))      (int32, c format)
    h      = sat16(rshift_round(o · tanh(c), 15)),  2c = sat16(rshift_round(c, cell_tanh_rshift))

σ reads a 257-entry Q0.15 table over [0, 16] with linear interpolation and mirrors negative
inputs (σ(−x) = 1 − σ(x); CMSIS-NN style, docs/numeric.md §4).
The matrix product runs as one float64 BLAS call: every partial sum is an integer bounded by the
proven int32 bound (< 2^53), so it is exact in any summation order.

`lstm_float` is the float64 twin of the same recurrence (torch.nn.LSTM equations), used for
calibration and for the float-vs-fixed report.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import numpy.typing as npt

try:
    import torch
except ImportError:  # a build is replayed without torch too: numpy's GEMM gives the same integers
    torch = None  # type: ignore[assignment]

from codegen.base.fixed import rshift_round
from codegen.intref.activations import (  # noqa: F401 - the LSTM's twins, used by tests
    TRACE_C,
    TRACE_H,
    TRACE_Z,
    TraceFn,
    sigmoid_lut,
    tanh_from_sigmoid,
)
from codegen.ir.nodes import GATES, POOL_SHIFT, QLstm

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


# trace(stage, index, values [N, ...]): named trace points, the same names as the C side.
@contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch's intra-op pool at one thread for the block, restored after."""
    if torch is None:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


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
CHUNK = 1024  # samples per batch: measured best of 256 … 1024 (per-call overhead vs cache)


def lstm_int(
    x: npt.ArrayLike, q: QLstm, trace: TraceFn | None = None, sequence: bool = False
) -> IntArray:
    """x int16 inputs [N, T, F] (x_fmt raw) -> z [N, H] as int64 holding Q0.15 int16 (h_T, or
    the mean or maximum of h_t by ``q.pool``), or with ``sequence`` every h_t [N, T, H].

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
        return _lstm_int_batch(X, q, trace, sequence)
    parts = [
        _lstm_int_batch(X[i : i + CHUNK], q, None, sequence) for i in range(0, X.shape[0], CHUNK)
    ]
    return np.concatenate(parts, axis=0)


def _lstm_int_batch(
    X: np.ndarray, q: QLstm, trace: TraceFn | None, sequence: bool = False
) -> IntArray:
    """The step of the module docstring on a batch, in float64 arrays holding exact integers.

    Layout: samples along the last axis ([rows, N]) and gate rows reordered i, f, o, g, so every
    gate is a contiguous block. Every value below is an integer (or an integer times a power of
    two) far inside float64's 53-bit significand, so each floor, product and sum is the integer
    operation it stands for:

    * gates: v_r = Σ_j w_rj·u_j·2^−s_r + (b_r + 2^(s_r−1))·2^−s_r + 32768, so
      floor(v_r) = rshift_round(acc_r, s_r) + 32768; the partial sums are multiples of 2^−s_r
      below (2^31 + 2^(15+s_r))·2^−s_r in magnitude (the int32 proof), exact in any BLAS
      summation order. Truncating v to an integer and clipping the index to [0, 65535]
      (inside the gather) is floor-then-sat16 shifted into the table's index range:
      truncation and floor differ only on (−1, 0), which clips to 0 either way. The index is
      int32 when every shift is ≥ 1 (then |v| < 2^30 + 2^16); intp otherwise.
    * the g rows gather tanh = 2σ(2x) − 1 from a second table, so i·g is one int16 product
      (|i·g| ≤ 32767·32768 < 2^31, int32).
    * cell, held as c/L (L = 2^cell_ig_lshift, an exact scaling): c/L·f + i·g + 2^14/L is
      (f·c + (i·g)·L + 2^14)/L with |f·c| < 2^46, |i·g·L| ≤ 2^46 (L ≤ 2^16), so the sum is
      exact; times L/2^15 and floored it is rshift_round(·, 15). sat32 is never active:
      |c_t| ≤ t (numeric.md §4).
    * h = floor((o·tanh(c) + 2^14)/2^15) with |o·tanh(c)| ≤ 32767·32768 < 2^31 (int32, and
      |h| ≤ 32767, so sat16 never acts); the next step's operand rshift_round(h, h_opshift) is
      floor((o·tanh(c) + 2^14 + 2^(h_opshift−1)·2^15)/2^(15+h_opshift)) by
      floor((floor(y) + k)/n) = floor((y + k)/n) for integers k, n > 0, so h itself is formed
      only at the last step (and for traces).

    One BLAS product, three table gathers and about fifteen whole-array passes per step
    (bench/host_reference.py measures the whole reference).
    """
    N, F, H = X.shape[0], q.input_size, q.hidden_size
    sh = q.shifts
    sig = sigmoid_all(q)
    sig16 = sig.astype(np.int16)  # σ ∈ [0, 32767]
    tanh16 = (2 * sig - 32768).astype(np.int16)  # tanh(x) = 2σ(2x) − 1 ∈ [−32768, 32766]
    order = [GATES.index(g) for g in ("i", "f", "o", "g")]
    rows = np.concatenate([np.arange(n * H, (n + 1) * H) for n in order])
    s = q.gate_row_shifts()[rows].astype(np.float64)
    # u = [xs_t; hs; 1]: the bias and the rounding constant ride on the constant row.
    w = np.hstack(
        [
            q.w_ih.raw[rows].astype(np.float64),
            q.w_hh.raw[rows].astype(np.float64),
            (q.bias.raw[rows].astype(np.float64) + 2.0 ** (s - 1))[:, None],
        ]
    )
    w *= (2.0**-s)[:, None]
    w[:, -1] += 32768.0  # index offset of the tables
    cs, hop = sh.cell_tanh_rshift, sh.h_opshift
    idx_t = np.int32 if min(int(s.min()), cs) >= 1 else np.intp
    L = float(1 << sh.cell_ig_lshift)
    xs = rshift_round(X.astype(np.int64), sh.x_opshift).astype(np.float64)
    xs_t = np.ascontiguousarray(xs.transpose(1, 2, 0))  # [T, F, N]
    u = np.ones((F + H + 1, N), dtype=np.float64)
    u[F : F + H] = 0.0  # hs of h_0 = 0
    hs = u[F : F + H]
    cl = np.zeros((H, N), dtype=np.float64)  # c / L
    v = np.empty((4 * H, N), dtype=np.float64)
    ix = np.empty((4 * H, N), dtype=idx_t)
    a = np.empty((3 * H, N), dtype=np.int16)
    i, f, o = a[:H], a[H : 2 * H], a[2 * H :]
    g = np.empty((H, N), dtype=np.int16)
    ig = np.empty((H, N), dtype=np.int32)
    tc = np.empty((H, N), dtype=np.float64)
    cix = np.empty((H, N), dtype=idx_t)
    th = np.empty((H, N), dtype=np.int16)
    oth = np.empty((H, N), dtype=np.int32)
    hk = 16384.0 + (2.0 ** (hop - 1) * 32768.0 if hop else 0.0)
    h = np.zeros((H, N), dtype=np.float64)
    # pooling over time (the C kernel's ELT_LSTM_POOL): Σ h_t exactly (|Σ| < 2^31), or max h_t
    pool = q.pool
    acc = np.zeros((H, N)) if pool == "mean" else np.full((H, N), -32768.0)
    every = trace is not None or pool != "last" or sequence
    seq = np.empty((N, q.num_frames, H), dtype=np.int64) if sequence else None
    # The product runs in torch's float64 GEMM (MKL; ~1.3x numpy's OpenBLAS on this narrow
    # shape) on views of the same buffers; exact in any summation order (docstring). One
    # thread: a product this small gains nothing from more, and spinning OpenMP threads of
    # several reference processes would fight over the cores.
    if torch is not None:
        tw, tu, tv = torch.from_numpy(w), torch.from_numpy(u), torch.from_numpy(v)

        def product() -> None:
            torch.matmul(tw, tu, out=tv)
    else:

        def product() -> None:
            np.matmul(w, u, out=v)

    with one_torch_thread():
        for t in range(q.num_frames):
            u[:F] = xs_t[t]
            product()
            ix[...] = v  # truncate; the gathers clip into [0, 65535] (see the docstring)
            np.take(sig16, ix[: 3 * H], out=a, mode="clip")
            np.take(tanh16, ix[3 * H :], out=g, mode="clip")
            # c = rshift_round(f·c + (i·g) << L, 15), held as c/L
            np.multiply(i, g, out=ig, dtype=np.int32)
            cl *= f
            cl += ig
            cl += 16384.0 / L
            cl *= L / 32768.0
            np.floor(cl, out=cl)  # c
            # tanh(c) = 2σ(2c) − 1, 2c = sat16(rshift_round(c, cs)) (+ table offset, clip)
            np.multiply(cl, 2.0**-cs, out=tc)
            cl *= 1.0 / L
            tc += 0.5 + 32768.0
            cix[...] = tc
            np.take(tanh16, cix, out=th, mode="clip")
            np.multiply(o, th, out=oth, dtype=np.int32)
            if every or t == q.num_frames - 1:
                np.floor((oth + 16384.0) * (1.0 / 32768.0), out=h)
                if seq is not None:
                    seq[:, t] = h.T
                if pool == "mean":
                    acc += h
                elif pool == "max":
                    np.maximum(acc, h, out=acc)
            # hs = rshift_round(h, h_opshift) straight from o·tanh(c) (docstring)
            np.add(oth, hk, out=tc)
            tc *= 2.0 ** -(15 + hop)
            np.floor(tc, out=hs)
            if trace is not None:
                trace(TRACE_C, t, (cl * L).T.astype(np.int64))
                trace(TRACE_H, t, h.T.astype(np.int64))
    if pool == "mean":  # sat16(rshift_round(Σ h_t · recip, POOL_SHIFT)), exact below 2^53
        acc *= q.pool_recip
        acc += 2.0 ** (POOL_SHIFT - 1)
        acc *= 2.0**-POOL_SHIFT
        h = np.clip(np.floor(acc), -32768.0, 32767.0)
    elif pool == "max":
        h = acc
    if seq is not None:  # the whole output sequence [N, T, H] (elt_lstm_s16_run_seq)
        return seq
    out: IntArray = h.T.astype(np.int64)
    if trace is not None:
        trace(TRACE_Z, 0, out)
    return out
