"""Host memory of `codegen run` over a long run: the resident set size (VmRSS, proc(5)) of the
host process after 1,000 and after 10,000 answered samples, continual_bounded mode, QEMU with
-icount off, the default model on the built-in demo data set (numpy tier: 12,000 test clips
per mode). Records stream to results.jsonl and the host keeps a few integers per sample, so the
two figures should agree within 10 %. Not a timed test: prints both figures and their ratio.

    python bench/host_memory.py [--data DIR] [--build DIR] [--limit 10000] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import BinaryIO

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


class LineCounter:
    """Counts a growing file's lines, reading only what was appended since the last call."""

    def __init__(self, path: Path) -> None:
        self.path, self.n = path, 0
        self.f: BinaryIO | None = None

    def __call__(self) -> int:
        if self.f is None:
            if not self.path.is_file():
                return 0
            self.f = open(self.path, "rb")  # noqa: SIM115 - kept open while the run lasts
        while chunk := self.f.read(1 << 20):
            self.n += chunk.count(b"\n")
        return self.n


def main() -> int:
    from codegen.data import build as build_data
    from codegen.pipeline.build import build

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("/tmp/elatta-bench-demo-data"))
    ap.add_argument("--build", type=Path, default=Path("/tmp/elatta-bench-build"))
    ap.add_argument("--calib-data", type=Path, default=Path("/tmp/elatta-bench-data"))
    ap.add_argument("--limit", type=int, default=10_000)
    ap.add_argument("--out", type=Path, default=Path("/tmp/elatta-bench-memory"))
    a = ap.parse_args()
    marks = sorted({1_000, a.limit})
    if not (a.data / "manifest.json").is_file():
        build_data(a.data, preset="demo", tier="numpy", progress=False, jobs=2)
    if not (a.build / "fw.elf").is_file():
        if not (a.calib_data / "manifest.json").is_file():
            build_data(a.calib_data, preset="tiny", tier="numpy", progress=False, jobs=2)
        build(
            ROOT / "models/default/model.pt",
            ROOT / "models/default/basis.npz",
            ROOT / "configs/default.toml",
            a.build,
            data_dir=a.calib_data,
        )
    run = a.out / "run"
    shutil.rmtree(run, ignore_errors=True)  # this bench's own output of an earlier run
    cmd = [sys.executable, "-m", "codegen", "run", "--build", str(a.build), "--data", str(a.data)]
    cmd += ["--qemu", "--no-icount", "--mode", "continual_bounded", "--limit", str(a.limit)]
    cmd += ["--report", str(run), "--no-progress"]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    rss: dict[int, int] = {}
    count = LineCounter(run / "results.jsonl")
    while proc.poll() is None and len(rss) < len(marks):
        n = count()
        for m in marks:
            if n >= m and m not in rss:
                rss[m] = rss_kib(proc.pid)
                print(f"after {n} samples: host RSS {rss[m] / 1024:.1f} MiB", flush=True)
        time.sleep(0.02)
    _, err = proc.communicate()
    if proc.returncode != 0 or len(rss) < len(marks):
        print(err.decode(errors="replace")[-3000:], file=sys.stderr)
        return 1
    first, last = rss[marks[0]], rss[marks[-1]]
    row = {
        "samples": a.limit,
        "rss_kib": {str(k): v for k, v in rss.items()},
        "ratio": round(last / first, 4),
        "seconds": round(time.monotonic() - t0, 1),
    }
    print(
        f"host RSS after {marks[0]} samples {first / 1024:.1f} MiB, after {marks[-1]} "
        f"{last / 1024:.1f} MiB: ratio {last / first:.3f} ({row['seconds']} s)"
    )
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "memory.json").write_text(json.dumps(row, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
