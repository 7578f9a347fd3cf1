"""Host integer reference throughput (docs/targets.md §1 "host integer reference").

Samples/s of the Python fixed-point reference (`codegen.intref.model.infer_int`: LSTM encoder,
head, entropy and, for strict, the integer CMA-ES search; vectorised over samples and
candidates) with int16 features precomputed, for no_adapt and strict, on 1 process and on W
worker processes. Strict samples are independent (per-sample seeds), so the batch splits into
contiguous blocks of `BLOCK` samples that the workers take from one queue as they go free (a
core that runs slower, as a shared vCPU does, then takes fewer blocks instead of setting the
pace), each run by the batched numpy reference; the W-process outputs are checked equal,
field by field, to the 1-process outputs. Each worker uses one BLAS
thread. A measurement, not a test: `codegen bench` and bench/host_reference.py report it.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from typing import Any

import numpy as np

MODES = ("no_adapt", "strict")
BLOCK = 1024  # samples per task: one reference chunk, a few ms of pickling per second of work
STARTUP_S = 300.0  # a worker's imports and warm-up
_Q: Any = None
_X: np.ndarray | None = None
_IDS: np.ndarray | None = None
_INIT_ERROR: str | None = None


def _init(q: Any, x: np.ndarray, ids: np.ndarray, ready: Any) -> None:
    """Per worker: the model and the whole (precomputed) feature batch, then one small call
    per mode, so imports (torch, scipy's tables), lookup tables and caches are in place in
    every worker; then wait at the barrier the parent also waits at, so no worker is still
    warming up when the clock starts. Tasks then name rows only: nothing is pickled in the
    timed window but the results."""
    global _Q, _X, _IDS, _INIT_ERROR
    _Q, _X, _IDS = q, x, ids
    try:
        from codegen.intref.model import infer_int

        for mode in MODES:
            infer_int(x[:8], q, ids[:8], mode=mode)
    except Exception as exc:  # reported by every task: a Pool would respawn a dying worker
        _INIT_ERROR = f"{type(exc).__name__}: {exc}"
    finally:
        ready.wait()


def _run(args: tuple[int, int, str]) -> dict[str, np.ndarray]:
    from codegen.intref.model import infer_int

    start, stop, mode = args
    if _INIT_ERROR is not None:
        raise RuntimeError(f"host reference worker warm-up failed: {_INIT_ERROR}")
    if _X is None or _IDS is None:
        raise RuntimeError("host throughput worker used before _init")
    return infer_int(_X[start:stop], _Q, _IDS[start:stop], mode=mode).fields()


def tile(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n feature matrices by repeating x [M, T, F]; sample ids 0 … n−1 (so every strict
    search draws its own normals)."""
    reps = -(-n // len(x))
    return np.tile(x, (reps, 1, 1))[:n], np.arange(n, dtype=np.int64)


def measure(
    q: Any, x: np.ndarray, ids: np.ndarray, mode: str, workers: int, repeats: int = 1
) -> tuple[list[float], dict[str, np.ndarray]]:
    """(samples/s of each of ``repeats`` timed passes, outputs of the first) of ``mode`` over x
    on ``workers`` processes (start-up and warm-up excluded; every pass's outputs must equal
    the first's)."""
    tasks = [(i, min(i + BLOCK, len(x)), mode) for i in range(0, len(x), BLOCK)]
    saved = {v: os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    os.environ.update({v: "1" for v in saved})  # children import numpy with one BLAS thread
    # spawn, not fork: a forked child inherits the parent's BLAS thread pool (W workers x
    # that many threads on W cores); a spawned one imports numpy under the setting above.
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Barrier(workers + 1)
    rates: list[float] = []
    first: dict[str, np.ndarray] = {}
    try:
        # a Pool starts all its workers at once; each warms up in _init, then meets the
        # parent at the barrier (a worker that fails to start breaks it: no silent timing)
        with ctx.Pool(workers, initializer=_init, initargs=(q, x, ids, ready)) as pool:
            try:
                ready.wait(timeout=STARTUP_S)
            except threading.BrokenBarrierError as exc:
                raise RuntimeError(
                    f"{workers} host reference worker(s) did not warm up within "
                    f"{STARTUP_S:.0f} s (their errors are printed above)"
                ) from exc
            for _ in range(max(1, repeats)):
                t0 = time.perf_counter()
                parts = pool.map(_run, tasks, chunksize=1)
                rates.append(len(x) / (time.perf_counter() - t0))
                out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
                for key in first:
                    np.testing.assert_array_equal(out[key], first[key], err_msg=f"{mode} {key}")
                first = first or out
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old
    return rates, first


def host_throughput(
    q: Any, x: np.ndarray, n: int, workers: int | None = None, repeats: int = 3
) -> dict[str, Any]:
    """samples/s per mode on 1 and on ``workers`` processes (default: every core): the median
    of ``repeats`` timed passes, and every pass (shared vCPUs vary by tens of percent from one
    second to the next, so one pass says little)."""
    w = workers or os.cpu_count() or 1
    xs, ids = tile(np.asarray(x, dtype=np.int16), n)
    res: dict[str, Any] = {"n": n, "workers": w, "cores": os.cpu_count(), "repeats": repeats}
    for mode in MODES:
        r1, o1 = measure(q, xs, ids, mode, 1, repeats)
        rw, ow = measure(q, xs, ids, mode, w, repeats)
        for key in o1:
            np.testing.assert_array_equal(ow[key], o1[key], err_msg=f"{mode} field {key}")
        res[mode] = {
            "samples_per_s_1": round(float(np.median(r1)), 1),
            "samples_per_s": round(float(np.median(rw)), 1),
            "runs_1": [round(r, 1) for r in r1],
            "runs": [round(r, 1) for r in rw],
        }
    return res
