"""Host integer reference throughput (docs/targets.md §1 "host integer reference"): samples/s of the
Python fixed-point reference for no_adapt and strict ELaTTA on 1 and W processes
(`elatta_measure.host_throughput`), features precomputed from the demo set's noisy test clips.

    python bench/host_reference.py [--build out/build/kws] [--data out/data/demo] [--n 20000]
                                    [--workers 2] [--repeats 3] [--out FILE.json]

`codegen bench` reports the same figure (``host_reference`` in bench.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main() -> int:
    from elatta_host.plan import load_build
    from elatta_measure.bench import samples
    from elatta_measure.host_throughput import host_throughput

    from codegen.base.features import quantize_features

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, default=ROOT / "out/build/kws")
    ap.add_argument("--data", type=Path, default=ROOT / "out/data/demo")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeats", type=int, default=3, help="timed passes per mode (median)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    _, q = load_build(a.build)
    _, xf = samples(a.data, q.source.meta, 512)
    res = host_throughput(q, quantize_features(xf, q.x_fmt), a.n, a.workers, a.repeats)
    for mode in ("no_adapt", "strict"):
        r = res[mode]
        runs = " / ".join(f"{v:.0f}" for v in r["runs"])
        print(
            f"{mode:9s} 1 process {r['samples_per_s_1']:7.0f} samples/s   {res['workers']} "
            f"processes {r['samples_per_s']:7.0f} samples/s (median of {runs})   "
            f"N = {a.n}, outputs equal"
        )
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
