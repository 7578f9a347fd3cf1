"""Fixed-point vs float accuracy of a build, per SNR, from its program alone (no device).

    python bench/fixed_vs_float.py --build out/build/kws --data out/data/demo \
        --mode cmvn --mode strict [--limit N] [--stream-segment 50] [--out fixed_vs_float.json]

For every requested mode (and no-adapt) it runs the Python integer reference
(`codegen.intref.model.infer_int`, the device's integers) and the float reference (float LSTM,
float ELaTTA or float cmvn) on the same clips in the same stream order (`elatta_host.plan`), and
prints accuracy per SNR (mean over the ten noises), the fixed − float difference and the share
of clips whose class agrees. The device equals the integer reference bit for bit
(`codegen run`), so these are the device's numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from elatta_host.plan import make_plan

    from codegen.data.streams import ORDERS, StreamSpec

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, default=ROOT / "out/build/kws")
    ap.add_argument("--data", type=Path, default=ROOT / "out/data/demo")
    ap.add_argument("--mode", action="append", default=None)
    ap.add_argument("--limit", type=int, default=None, help="clips per mode (default: all)")
    ap.add_argument("--stream-segment", type=int, default=50)
    ap.add_argument("--stream-order", choices=ORDERS, default="random")
    ap.add_argument("--stream-seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    modes = tuple(a.mode or ("cmvn",))
    spec = StreamSpec(a.stream_segment, a.stream_order, a.stream_seed)
    plan = make_plan(a.build, a.data, modes, a.limit, spec)
    hits: dict[tuple[str, str, float], list[bool]] = defaultdict(list)
    agree: dict[str, list[bool]] = defaultdict(list)
    for s in plan.streams:
        y = s.labels
        for who, pred, pred0 in (
            ("float", s.float_pred, s.float_pred0),
            ("fixed", s.ref["pred"], s.fixed_pred0),
        ):
            for m, p in ((s.mode, pred), ("no_adapt", pred0)):
                for snr, ok in zip(s.snrs, np.asarray(p) == y, strict=True):
                    hits[(who, m, float(snr))].append(bool(ok))
        agree[s.mode] += (np.asarray(s.float_pred) == np.asarray(s.ref["pred"])).tolist()
        agree["no_adapt"] += (np.asarray(s.float_pred0) == np.asarray(s.fixed_pred0)).tolist()
    snrs = sorted({k[2] for k in hits}, reverse=True)
    doc: dict[str, dict[str, dict[str, float]]] = {}
    print(f"{plan.total // len(modes)} clips per mode, stream {spec}, build {a.build}")
    print("mode               " + "".join(f"{s:>22g} dB" for s in snrs) + "   same class")
    for m in ("no_adapt", *modes):
        cells, row = [], {}
        for snr in snrs:
            f = 100 * float(np.mean(hits[("float", m, snr)]))
            x = 100 * float(np.mean(hits[("fixed", m, snr)]))
            row[f"{snr:g}"] = {"float": round(f, 3), "fixed": round(x, 3), "delta": round(x - f, 3)}
            cells.append(f"{f:6.2f}/{x:6.2f} ({x - f:+.2f})")
        same = 100 * float(np.mean(agree[m]))
        row["same_class"] = {"percent": round(same, 3)}
        doc[m] = row
        print(f"{m:<18} " + " ".join(f"{c:>24}" for c in cells) + f"   {same:6.2f} %")
    if a.out is not None:
        a.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
