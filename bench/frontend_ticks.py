"""Ticks per 20 ms hop of the integer MFCC front end under QEMU -icount shift=0 (docs/targets.md
§4), NEON and the reference kernel variant, with every output word checked against the Python
twin (codegen/intref/mfcc.py). The same probe as `codegen bench` (measure/bench_frontend.py)
without a trained model: the default MfccParams, a unit normalisation (the normalisation does
not change the work per frame) and synthetic clips (speech-like, noise, silence, full scale).

    python bench/frontend_ticks.py [--clips 4] [--scalar] [--work DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def clips(n: int, samples: int = 16000) -> np.ndarray:
    """n int16 clips: voiced harmonics with noise, white noise, silence, full-range noise."""
    rng = np.random.default_rng(7)
    t = np.arange(samples) / 16000
    out = np.zeros((n, samples))
    for i in range(n):
        kind = i % 4
        if kind == 0:
            f0 = rng.uniform(90, 250)
            x = sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 20))
            out[i] = x * 6000 * np.sin(np.pi * t / t[-1]) + rng.standard_normal(samples) * 100
        elif kind == 1:
            out[i] = rng.standard_normal(samples) * 3000
        elif kind == 3:
            out[i] = rng.integers(-32768, 32768, samples)
    return np.clip(np.round(out), -32768, 32767).astype(np.int16)


def main() -> int:
    from elatta_measure.bench_frontend import run_probe

    from codegen.base.features import MfccParams
    from codegen.base.qformat import QFormat
    from codegen.intref.mfcc import mfcc_int
    from codegen.quantize.mfcc import quantize_mfcc

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clips", type=int, default=4)
    ap.add_argument(
        "--scalar",
        action="store_true",
        help="also the reference kernel variant (firmware/kernels/ref)",
    )
    ap.add_argument("--work", type=Path, default=None)
    a = ap.parse_args()
    p = MfccParams()
    q = quantize_mfcc(p, np.zeros(p.n_mfcc), np.ones(p.n_mfcc), QFormat(4, 11))
    pcm = clips(a.clips)
    ref = mfcc_int(pcm, q)
    work = a.work or Path(tempfile.mkdtemp(prefix="fe_ticks_"))
    for name, scalar in (("neon", False), ("scalar", True))[: 2 if a.scalar else 1]:
        run = run_probe(q, pcm, work / name, scalar=scalar)
        bad = int((run.out != ref).sum())
        t = run.ticks.reshape(-1).tolist()
        print(
            f"{name}: ticks/hop median {statistics.median_low(t)} min {min(t)} max {max(t)} "
            f"over {len(t)} frames; {bad} of {ref.size} words differ from Python"
        )
        if bad:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
