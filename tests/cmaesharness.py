"""A host build of a C program against the CMA-ES kernels' integer math (elt_cmaes_s32.c's inline
helpers and elt_intmath.c), shared by the exhaustive pivot and norm checks in tests/firmware/."""

from __future__ import annotations

import subprocess
from pathlib import Path

from codegen.base.resources import firmware_dir
from codegen.target import sources
from codegen.target.toolchain import COMMON_CFLAGS, find_tool


def build_host_program(tmp_path: Path, name: str, prog: str) -> Path:
    """Compile `prog` (a C main that includes the firmware sources it tests) at -O2 with the
    host's kernel flags and the integer math it links against; returns the executable."""
    fw = firmware_dir()
    src = tmp_path / f"{name}.c"
    src.write_text(prog)
    exe = tmp_path / name
    subprocess.run(
        [
            find_tool("cc"),
            *COMMON_CFLAGS,
            "-O2",
            "-Wno-unused-function",
            *sources.HOST.compile_flags(fw),
            f"-I{fw}",
            str(src),
            str(fw / "elt_intmath.c"),
            str(fw / "elt_entropy_s16.c"),
            str(fw / "elt_rng.c"),
            "-o",
            str(exe),
        ],
        check=True,
    )
    return exe
