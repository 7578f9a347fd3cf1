"""Helpers of the end-to-end QEMU tests (tests/test_qemu_run.py, tests/test_link_faults.py):
start a firmware in QEMU on a TCP port, and check that a run's report is complete and bit-exact."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from elatta_host.qemu import free_port, qemu_command
from elatta_host.run import read_results

ROOT = Path(__file__).resolve().parents[1]


def check_complete(report: dict[str, Any], out: Path, n: int) -> None:
    assert report["bit_exact"] == {
        "compared": n,
        "mismatches": 0,
        "fields": {},
        "first_mismatch": None,
    }
    recs = read_results(out / "results.jsonl")
    keys = [(r.stream, r.index) for r in recs]
    assert len(keys) == len(set(keys)) == n  # every sample answered exactly once
    device, fixed = report["accuracy"]["device"], report["accuracy"]["fixed"]
    shown = {m for m, row in device.items() if row}
    assert shown and all(device[m] == fixed[m] for m in shown)
    # a cmvn-only run has no device no-adapt row (cmvn's RESULT carries cmvn's class)
    assert set(fixed) - shown <= {"no_adapt"}


def start_qemu(elf: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen(
        qemu_command(elf, port, icount=False),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, port
