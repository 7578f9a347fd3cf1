"""Float vs integer MFCC front end on a data set: the per-coefficient feature error and the
model's accuracy per SNR (docs/numeric.md §7.4), written to OUT/mfcc_accuracy.{json,md}.

    python bench/mfcc_accuracy.py --build out/build/default --data out/data/demo --out out/mfcc
                                  [--limit N] [--wire adpcm]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from elatta_measure.mfcc_eval import evaluate_front_end


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, type=Path)
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--limit", type=int, default=None, help="clips per condition (default all)")
    ap.add_argument(
        "--wire",
        choices=("raw", "adpcm"),
        default="raw",
        help="the clips as the device gets them: raw PCM or ADPCM-decoded (docs/numeric.md §8)",
    )
    a = ap.parse_args()
    t0 = time.time()
    r = evaluate_front_end(a.build, a.data, a.limit, a.wire)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "mfcc_accuracy.json").write_text(json.dumps(dataclasses.asdict(r), indent=1))
    lines = [
        f"Data: {a.data} ({r.clips} clips, wire {a.wire}); features equal to the float path's: "
        f"{100 * r.exact_fraction:.2f} %",
        "",
        "| coefficient | mean error | rms error | max abs error | max LSB |",
        "|---:|---:|---:|---:|---:|",
        *(
            f"| {c['coefficient']} | {c['mean']:.2e} | {c['rms']:.2e} | {c['max_abs']:.2e} | "
            f"{c['max_lsb']} |"
            for c in r.coefficients
        ),
        "",
        "| SNR (dB) | clips | int model, float MFCC | int model, int MFCC | diff | "
        "float model, float MFCC | float model, int MFCC | diff | same class |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {x['snr']} | {x['clips']} | {x['int_model_float']:.2f} | "
            f"{x['int_model_int']:.2f} | {x['int_model_delta']:+.2f} | "
            f"{x['float_model_float']:.2f} | {x['float_model_int']:.2f} | "
            f"{x['float_model_delta']:+.2f} | {x['same_class']:.2f} % |"
            for x in r.accuracy
        ),
    ]
    (a.out / "mfcc_accuracy.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
