"""Helpers of the end-to-end QEMU tests (tests/host/test_qemu_run.py,
tests/host/test_link_faults.py): start a firmware in QEMU on a TCP port, and check that a run's
report is complete and bit-exact."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from elatta_host.qemu import free_port, qemu_command
from elatta_host.run import read_results


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


def start_qemu(elf: Path, port: int | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """QEMU serving ``elf``'s UART on ``port`` (default: a free one); it boots the firmware
    once a client connects (`elatta_host.qemu.qemu_command`: wait=on)."""
    port = free_port() if port is None else port
    proc = subprocess.Popen(
        qemu_command(elf, port, icount=False),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, port


def wait_listening(port: int, timeout: float = 30.0) -> None:
    """Until something listens on 127.0.0.1:``port`` (a QEMU just started), seen in
    /proc/net/tcp without connecting: QEMU's wait=on serial takes the first connection as its
    client."""
    want = f"0100007F:{port:04X}"
    deadline = time.monotonic() + timeout
    while True:
        rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
        if any(r.split()[1] == want and r.split()[3] == "0A" for r in rows):  # 0A: LISTEN
            return
        assert time.monotonic() < deadline, f"nothing listens on port {port}"
        time.sleep(0.02)
