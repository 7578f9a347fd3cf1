"""Host integer reference throughput (issue 6, acceptance 4; DESIGN §7 "host reference").

Samples/s of the Python fixed-point reference (`codegen.intref.model.infer_int`: LSTM encoder,
head, entropy and, for strict, the integer CMA-ES search) with features precomputed as int16,
for no_adapt and strict ELaTTA, on 1 process and on W worker processes (default: every core).
Strict samples are independent (per-sample seeds), so the batch splits into contiguous chunks,
one per worker; each worker runs the batched numpy reference on its chunk. Not a timed test.

    python bench/host_reference.py [--build out/build/kws] [--data out/data/demo] [--n 20000]
                                    [--workers 2] [--out out/bench/host_reference.json]

Results are checked: the multi-process output equals the single-process output field by field.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Each worker: one BLAS thread (two workers on two cores, no oversubscription).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

_Q: Any = None


def _init(q: Any) -> None:
    global _Q
    _Q = q


def _run(args: tuple[np.ndarray, np.ndarray, str]) -> dict[str, np.ndarray]:
    from codegen.intref.model import infer_int

    x, ids, mode = args
    return infer_int(x, _Q, ids, mode=mode).fields()


def features(build: Path, data: Path, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n int16 feature matrices: the demo set's noisy test clips, tiled to n, ids 0..n-1."""
    from codegen.bench import samples
    from codegen.model import load_checkpoint
    from codegen.qformat import QFormat

    manifest = json.loads((build / "manifest.json").read_text())
    _, meta = load_checkpoint(ROOT / manifest["inputs"]["model"]["path"])
    _, xf = samples(data, meta, 512)
    frac = int(manifest["x_frac_bits"])
    x = QFormat(15 - frac, frac).quantize(xf).astype(np.int16)
    reps = -(-n // len(x))
    return np.tile(x, (reps, 1, 1))[:n], np.arange(n, dtype=np.int64)


def measure(q: Any, x: np.ndarray, ids: np.ndarray, mode: str, workers: int
            ) -> tuple[float, dict[str, np.ndarray]]:
    chunks = np.array_split(np.arange(len(x)), workers)
    with ProcessPoolExecutor(workers, initializer=_init, initargs=(q,)) as ex:
        # warm-up: imports, tables and caches in every worker, outside the timing
        list(ex.map(_run, [(x[:8], ids[:8], mode)] * workers))
        t0 = time.perf_counter()
        parts = list(ex.map(_run, [(x[c], ids[c], mode) for c in chunks]))
        dt = time.perf_counter() - t0
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return len(x) / dt, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, default=ROOT / "out/build/kws")
    ap.add_argument("--data", type=Path, default=ROOT / "out/data/demo")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    from host.run import load_qmodel

    x, ids = features(a.build, a.data, a.n)
    manifest = json.loads((a.build / "manifest.json").read_text())
    _, q = load_qmodel(manifest, a.data, a.build)
    res: dict[str, Any] = {"n": a.n, "workers": a.workers, "cores": os.cpu_count()}
    for mode in ("no_adapt", "strict"):
        r1, o1 = measure(q, x, ids, mode, 1)
        rw, ow = measure(q, x, ids, mode, a.workers)
        for k in o1:
            np.testing.assert_array_equal(ow[k], o1[k], err_msg=f"{mode} field {k}")
        res[mode] = {"samples_per_s_1": round(r1, 1), f"samples_per_s_{a.workers}": round(rw, 1)}
        print(f"{mode:9s} 1 process {r1:9.0f} samples/s   {a.workers} processes {rw:9.0f} "
              f"samples/s   (N = {a.n}, outputs equal)")
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
