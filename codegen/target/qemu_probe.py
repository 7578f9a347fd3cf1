"""Boot a bare-metal probe ELF in the QEMU machine of its board's core (codegen/target/cores.py;
``qemu-system-arm -M xilinx-zynq-a9`` for the default board) with UART0 on stdio and read what it
prints up to its "END" line (docs/targets.md §3). Probes are self-contained programs (a
benchmark main, a kernel check) that print and stop; the serial server runs through the host
bench (`host/qemu.py`), not here. With ``icount`` the core's timer counts guest instructions
(``-icount shift=0``, docs/targets.md §4), so ticks printed by the probe are deterministic."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from codegen.base.errors import CodegenError
from codegen.base.resources import firmware_dir
from codegen.target import sources as firmware_sources
from codegen.target.boards import DEFAULT_BOARD, get_board
from codegen.target.toolchain import ARM_LDFLAGS, find_tool, run_tool


def link_probe(
    elf: Path,
    sources: Sequence[str | Path],
    *,
    cflags: Sequence[str] = (),
    includes: Sequence[str | Path] = (),
    libs: Sequence[str] = (),
    variant: firmware_sources.KernelVariant | None = None,
    board: str = DEFAULT_BOARD,
) -> Path:
    """Compile and link a probe for ``board``'s core as fw.elf is built (its compiler flags, its
    linker script with the RAM checks): the board folder and the runtime support (reset vectors,
    UART, timer, fault reporter; the linker drops what a probe does not call) plus ``sources``,
    with the kernels' operations of ``variant`` (None: the core's, as fw.elf); BuildError with
    the compiler's output on failure."""
    fw = firmware_dir()
    folder = get_board(board).folder
    variant = folder.core.kernels if variant is None else variant
    run_tool(
        [
            find_tool("arm-none-eabi-gcc"),
            *folder.core.cflags,
            *cflags,
            *(f"-I{d}" for d in includes),
            *variant.compile_flags(fw),
            f"-I{fw}",
            f"-T{fw / folder.path / folder.linker_script}",
            *ARM_LDFLAGS,
            "-o",
            str(elf),
            *(str(fw / r) for r in folder.probe_runtime),
            *map(str, sources),
            "-lgcc",
            *libs,
        ],
        what="arm-none-eabi-gcc",
    )
    return elf


def qemu_probe_lines(elf: Path, *, icount: bool = False, board: str = DEFAULT_BOARD) -> list[str]:
    """The lines ``elf`` (linked for ``board``) prints on UART0 before "END" (newlines stripped).
    QEMU runs in its own process group and is killed when the probe is done; a probe that exits
    or crashes before "END" raises CodegenError naming the ELF and the lines it printed last."""
    folder = get_board(board).folder
    cmd = [find_tool("qemu-system-arm"), "-M", folder.core.qemu_machine, "-nographic"]
    cmd += ["-monitor", "none"]
    if icount:
        cmd += ["-icount", "shift=0"]
    cmd += ["-kernel", str(elf), "-serial", "stdio"]
    cmd += ["-serial", "null"] * (folder.qemu_serials - 1)
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
