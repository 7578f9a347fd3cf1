"""Boot firmware in QEMU's ``xilinx-zynq-a9`` board with a UART on a TCP socket
(docs/targets.md §3).

``Qemu(elf)`` picks a free port, starts ``qemu-system-arm ... -serial tcp:127.0.0.1:PORT,
server=on,wait=on`` (QEMU waits for us before the guest runs, so no byte is lost), connects a
:class:`~elatta_host.transport.Link`, and kills QEMU on exit or error. QEMU's stderr is kept
in a file and quoted in errors.
"""

from __future__ import annotations

import atexit
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from elatta_host.errors import LinkClosed, QemuError
from elatta_host.transport import Link

from codegen.toolchain import find_tool


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def qemu_command(
    elf: Path, port: int, *, uart: int = 0, icount: bool = True, extra_args: Sequence[str] = ()
) -> list[str]:
    qemu = find_tool("qemu-system-arm")
    # nodelay: QEMU writes the UART byte by byte; Nagle + delayed ACK would add 40 ms per reply.
    tcp = f"tcp:127.0.0.1:{port},server=on,wait=on,nodelay=on"
    # The first -serial is UART0 (0xE0000000), the second UART1 (0xE0001000).
    serials = (
        ["-serial", tcp, "-serial", "null"] if uart == 0 else ["-serial", "null", "-serial", tcp]
    )
    cmd = [
        qemu,
        "-M",
        "xilinx-zynq-a9",
        "-nographic",
        "-monitor",
        "none",
        "-kernel",
        str(elf),
        *serials,
    ]
    if icount:
        # One virtual ns per guest instruction: global-timer ticks become deterministic.
        cmd += ["-icount", "shift=0"]
    return cmd + list(extra_args)


class Qemu:
    def __init__(
        self,
        elf: Path | str,
        *,
        uart: int = 0,
        icount: bool = True,
        startup_timeout: float = 10.0,
        link_timeout: float = 2.0,
        retries: int = 3,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.elf = Path(elf)
        self.extra_args = tuple(extra_args)  # e.g. QEMU -d logging (bench/profile.py)
        if not self.elf.is_file():
            raise QemuError(
                f"firmware ELF {self.elf} does not exist (build it with `codegen firmware`)"
            )
        self.uart = uart
        self.icount = icount
        self.startup_timeout = startup_timeout
        self.link_timeout = link_timeout
        self.retries = retries
        self.proc: subprocess.Popen[bytes] | None = None
        self.link: Link | None = None
        self._stderr = tempfile.TemporaryFile()

    def stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace").strip()

    def start(self) -> Link:
        for _attempt in range(3):  # another process may grab the port between probe and bind
            port = free_port()
            self.proc = subprocess.Popen(
                qemu_command(
                    self.elf, port, uart=self.uart, icount=self.icount, extra_args=self.extra_args
                ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
            )
            atexit.register(self.stop)
            link = self._connect(port)
            if link is not None:
                self.link = link
                return link
            if "Address already in use" not in self.stderr_text():
                break
        self.stop()
        raise QemuError(f"qemu-system-arm did not start: {self.stderr_text() or 'no output'}")

    def _connect(self, port: int) -> Link | None:
        assert self.proc is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return None
            try:
                return Link(
                    f"socket://127.0.0.1:{port}", timeout=self.link_timeout, retries=self.retries
                )
            except LinkClosed:
                time.sleep(0.02)
        self.stop()
        raise QemuError(
            f"qemu-system-arm did not open port {port} within "
            f"{self.startup_timeout:g} s: {self.stderr_text() or 'no output'}"
        )

    def stop(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        atexit.unregister(self.stop)

    def __enter__(self) -> Link:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
