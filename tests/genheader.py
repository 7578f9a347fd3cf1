"""Check a checked-in generated C header against its Python description, after clang-format (the
header is formatted as the hand-written C is, .clang-format)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from repopaths import ROOT


def formatted(text: str, as_file: Path) -> str:
    """``text`` as clang-format (the test extra's, pinned) formats it for ``as_file``."""
    exe = shutil.which("clang-format", path=str(Path(sys.executable).parent)) or shutil.which(
        "clang-format"
    )
    assert exe is not None, "clang-format is a test dependency (pyproject's test extra)"
    return subprocess.run(
        [exe, f"--assume-filename={as_file}"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
