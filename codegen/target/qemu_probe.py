"""Boot a bare-metal probe ELF in ``qemu-system-arm -M xilinx-zynq-a9`` with UART0 on stdio and
read what it prints up to its "END" line (docs/targets.md §3). Probes are self-contained
programs (a benchmark main, a kernel check) that print and stop; the serial server runs through
the host bench (`host/qemu.py`), not here. With ``icount`` the global timer counts guest
instructions (``-icount shift=0``, docs/targets.md §4), so ticks printed by the probe are
deterministic."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from codegen.base.errors import CodegenError
from codegen.base.resources import firmware_dir
from codegen.target import sources as firmware_sources
from codegen.target.toolchain import ARM_CFLAGS, ARM_LDFLAGS, find_tool, run_tool

# What every probe links besides its own sources: the board (reset vectors, UART, the global
# timer, the fault reporter); the linker drops what a probe does not call (--gc-sections).
RUNTIME = firmware_sources.BOARD


def link_probe(
    elf: Path,
    sources: Sequence[str | Path],
    *,
    cflags: Sequence[str] = (),
    includes: Sequence[str | Path] = (),
    libs: Sequence[str] = (),
    variant: firmware_sources.KernelVariant = firmware_sources.ARM_DEFAULT,
) -> Path:
    """Compile and link a probe for the Cortex-A9 as fw.elf is built (ARM_CFLAGS, link.ld with
    its RAM checks): the firmware runtime plus ``sources``, with the kernels' operations of
    ``variant`` (NEON by default, as fw.elf); BuildError with the compiler's output on
    failure."""
    fw = firmware_dir()
    run_tool(
        [
            find_tool("arm-none-eabi-gcc"),
            *ARM_CFLAGS,
            *cflags,
            *(f"-I{d}" for d in includes),
            *variant.compile_flags(fw),
            f"-I{fw}",
            f"-T{fw / firmware_sources.LINKER_SCRIPT}",
            *ARM_LDFLAGS,
            "-o",
            str(elf),
            *(str(fw / r) for r in RUNTIME),
            *map(str, sources),
            "-lgcc",
            *libs,
        ],
        what="arm-none-eabi-gcc",
    )
    return elf


def qemu_probe_lines(elf: Path, *, icount: bool = False) -> list[str]:
    """The lines ``elf`` prints on UART0 before "END" (newlines stripped). QEMU runs in its own
    process group and is killed when the probe is done; a probe that exits or crashes before
    "END" raises CodegenError naming the ELF and the lines it printed last."""
    cmd = [find_tool("qemu-system-arm"), "-M", "xilinx-zynq-a9", "-nographic", "-monitor", "none"]
    if icount:
        cmd += ["-icount", "shift=0"]
    cmd += ["-kernel", str(elf), "-serial", "stdio", "-serial", "null"]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("END"):
                return lines
            lines.append(line.rstrip("\n"))
        tail = "\n".join(lines[-5:])
        raise CodegenError(
            f"{elf.name}: QEMU ended before the probe printed END; last lines:\n{tail}"
        )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
