"""U-Boot for the board tests: tools/uboot.sh's build (cached after the first), skipped when
Debian's archive cannot be reached (its exit status 75, EX_TEMPFAIL)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from repopaths import ROOT as REPO

EX_TEMPFAIL = 75  # tools/uboot.sh: Debian's archive unreachable


def build_uboot(board: str) -> dict[str, Path]:
    r = subprocess.run(
        ["bash", str(REPO / "tools" / "uboot.sh"), board], capture_output=True, text=True
    )
    if r.returncode == EX_TEMPFAIL:
        pytest.skip(f"tools/uboot.sh could not reach Debian's archive: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr[-4000:]
    paths = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    return {k: Path(v) for k, v in paths.items()}
