"""External tools: the ARM cross compiler, QEMU and the host C compiler.

A missing tool raises :class:`ToolMissingError` naming the Debian package that provides it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from codegen.base.errors import BuildError, ToolMissingError

# tool -> Debian package (docs/targets.md §2)
PACKAGES = {
    "arm-none-eabi-gcc": "gcc-arm-none-eabi",
    "arm-none-eabi-size": "binutils-arm-none-eabi",
    "qemu-system-arm": "qemu-system-arm",
    "cc": "gcc",
}

# Numeric contract (docs/numeric.md §2): -fwrapv. Unaligned accesses are allowed (GCC's default
# for ARMv7-A and ARMv7-M): the Zynq-7000's start-up code maps DDR as Normal memory with SCTLR.A
# clear before any C code that touches a byte buffer runs (firmware/board/zynq7000/fw_mmu.c;
# DDI 0406C A3.5.6). The CPU flags come first, from the core (codegen/target/cores.py).
COMMON_CFLAGS: tuple[str, ...] = (
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-fwrapv",
    "-fno-strict-aliasing",
)
# What every firmware translation unit adds after the core's CPU flags and COMMON_CFLAGS.
FIRMWARE_CFLAGS: tuple[str, ...] = (
    "-O2",
    "-g",
    "-ffreestanding",
    "-fno-tree-loop-distribute-patterns",
    "-ffunction-sections",
    "-fdata-sections",
)
ARM_LDFLAGS: tuple[str, ...] = ("-nostdlib", "-nostartfiles", "-Wl,--gc-sections")


def find_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ToolMissingError(name, PACKAGES.get(name, name))
    return path


def run_tool(cmd: Sequence[str], *, what: str, cwd: Path | None = None) -> str:
    """Run a compiler-like tool; on failure raise BuildError with its full output."""
    proc = subprocess.run(
        list(cmd), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if proc.returncode != 0:
        raise BuildError(
            f"{what} failed (exit {proc.returncode}):\n$ {' '.join(cmd)}\n{proc.stdout}"
        )
    return proc.stdout


def section_sizes(elf: Path) -> dict[str, tuple[int, int]]:
    """Section name -> (size, address) from `arm-none-eabi-size -A -d`."""
    out = run_tool([find_tool("arm-none-eabi-size"), "-A", "-d", str(elf)], what="size")
    sizes: dict[str, tuple[int, int]] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit():
            sizes[parts[0]] = (int(parts[1]), int(parts[2]))
    return sizes
