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
from pathlib import Path

from codegen.errors import CodegenError
from codegen.toolchain import find_tool


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
