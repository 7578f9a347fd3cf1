"""Ticks of each stage of the integer MFCC front end per 20 ms hop under QEMU -icount shift=0
(docs/targets.md §4), for the NEON build and the reference kernel variant: the probe of
`elatta_measure.bench_frontend.run_stages` includes firmware/elt_mfcc_s16.c itself and times its
static stage functions one by one (the timer reads between them cost a few ticks each; the
whole-frame figure is bench/frontend_ticks.py's, which times the public call exactly as
`codegen bench` does). Default MfccParams, a unit normalisation, the synthetic clips of
bench/frontend_ticks.py; the features are checked against the Python twin on every word.

    python bench/frontend_stages.py [--clips 2] [--scalar]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

LABELS = {
    "head": "window + exponent + FFT head",
    "fft": "FFT stages",
    "power": "split + power",
    "mel_log2": "mel + log2",
    "dct": "DCT",
}


def main() -> int:
    from elatta_measure.bench_frontend import run_stages
    from frontend_ticks import clips

    from codegen.base.features import MfccParams
    from codegen.base.qformat import QFormat
    from codegen.quantize.mfcc import quantize_mfcc

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clips", type=int, default=2)
    ap.add_argument(
        "--scalar",
        action="store_true",
        help="also the reference kernel variant (firmware/kernels/ref)",
    )
    a = ap.parse_args()
    p = MfccParams()
    q = quantize_mfcc(p, np.zeros(p.n_mfcc), np.ones(p.n_mfcc), QFormat(4, 11))
    pcm = clips(a.clips)
    work = Path(tempfile.mkdtemp(prefix="fe_stages_"))
    for name, scalar in (("neon", False), ("scalar", True))[: 2 if a.scalar else 1]:
        r = run_stages(q, pcm, work / name, scalar=scalar)
        print(f"{name}: median ticks per hop by stage ({r['frames']} frames, 0 words differ)")
        for s, v in r["stages"].items():
            print(f"  {LABELS[s]:32s} {v:6d}")
        print(f"  {'sum':32s} {sum(r['stages'].values()):6d}")
        print(f"  {'transform (head + FFT + power)':32s} {r['fft_ticks']:6d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
