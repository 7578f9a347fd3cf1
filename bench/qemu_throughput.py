"""Throughput of `codegen run` through QEMU (docs/targets.md §1 "serial harness"): strict mode,
default model, the tiny data set. Not a timed test: prints samples/s with QEMU's -icount off
(the fast link; ticks not deterministic) for 1 and 2 jobs, and one -icount run for the
deterministic QEMU icount ticks.

    python bench/qemu_throughput.py [--data DIR] [--build DIR] [--limit N]

QEMU's Cadence UART takes the 1-KiB INFER in 64-byte RX-FIFO chunks; the link, not the model,
sets the rate (docs/protocol.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from elatta_host.plan import make_plan
    from elatta_host.run import DeviceSpec, execute

    from codegen.data import build as build_data
    from codegen.pipeline.build import build

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("/tmp/elatta-bench-data"))
    ap.add_argument("--build", type=Path, default=Path("/tmp/elatta-bench-build"))
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--out", type=Path, default=Path("/tmp/elatta-bench-run"))
    a = ap.parse_args()
    if not (a.data / "manifest.json").is_file():
        build_data(a.data, preset="tiny", progress=False, jobs=2)
    if not (a.build / "fw.elf").is_file():
        build(
            ROOT / "models/default/model.pt",
            ROOT / "models/default/basis.npz",
            ROOT / "configs/default.toml",
            a.build,
            data_dir=a.data,
        )
    plan = make_plan(a.build, a.data, ("strict",), a.limit)
    rows = []
    for icount, jobs in ((False, 1), (False, 2), (True, 1), (True, 2)):
        specs = [DeviceSpec(f"qemu{j}", elf=a.build / "fw.elf", icount=icount) for j in range(jobs)]
        rep = execute(
            plan,
            specs,
            a.out / f"ic{int(icount)}_j{jobs}",
            resume=False,
            force_restart=True,  # this bench's own output of an earlier run
            target={"kind": "qemu", "icount": icount},
            progress=False,
        ).report
        rows.append(
            {
                "icount": icount,
                "jobs": jobs,
                "samples": rep["bit_exact"]["compared"],
                "mismatches": rep["bit_exact"]["mismatches"],
                "samples_per_s": rep["run"]["samples_per_s"],
                "ticks": rep["ticks"],
            }
        )
        print(
            f"icount={'on ' if icount else 'off'} jobs={jobs}: "
            f"{rep['run']['samples_per_s']} samples/s, {rep['bit_exact']['compared']} samples, "
            f"{rep['bit_exact']['mismatches']} mismatches; ticks encoder "
            f"{rep['ticks']['encoder']}, adapt {rep['ticks']['adapt']}, total "
            f"{rep['ticks']['total']}",
            flush=True,
        )
    (a.out / "bench.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
