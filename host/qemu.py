"""Boot firmware in the QEMU machine of its target (codegen/target/cores.py: ``xilinx-zynq-a9``
for the Cortex-A9's boards) with a UART on a TCP socket (docs/targets.md §3). The board an ELF
was built for comes from its build directory's records (`build_board`), so its machine, its
serial ports and its console UART need no flag.

``Qemu(elf)`` picks a free port, starts ``qemu-system-arm ... -serial tcp:127.0.0.1:PORT,
server=on,wait=on`` (QEMU waits for us before the guest runs, so no byte is lost), connects a
:class:`~elatta_host.transport.Link`, and kills QEMU on exit or error. QEMU's stderr is kept
in a file and quoted in errors.

QEMU dies with its host. A host that exits normally or by an exception stops it (``stop``,
``atexit``); `stop_on_signals` makes SIGTERM and SIGHUP do the same before the host dies; and a
host killed outright (SIGKILL) takes QEMU with it through Linux's parent-death signal
(prctl(2) PR_SET_PDEATHSIG, set in the child between fork and exec).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from elatta_host.errors import LinkClosed, QemuError
from elatta_host.transport import DEFAULT_BUDGET, DEFAULT_TIMEOUT, Link

from codegen.target.boards import DEFAULT_BOARD, get_board
from codegen.target.toolchain import find_tool

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_LIVE: set[Qemu] = set()  # started and not yet stopped, for the signal handlers
_LIVE_LOCK = threading.Lock()


def _parent_death_guard(parent: int) -> Callable[[], None] | None:
    """preexec_fn for QEMU: SIGKILL it when the thread that forked it dies (prctl(2)). Runs in
    the child after fork, so it only calls prctl and getppid: a parent that died before prctl
    took effect is caught by the getppid check."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl

    def guard() -> None:
        if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != parent:
            os._exit(127)

    return guard


class _Spawner:
    """Forks every QEMU from one thread that lives as long as the host process: the parent-death
    signal fires when the *thread* that forked the child exits (prctl(2)), and `codegen run`
    starts QEMU from short-lived worker threads."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], queue.Queue[Any]]] = queue.Queue()
        threading.Thread(target=self._serve, name="qemu-spawner", daemon=True).start()

    def _serve(self) -> None:
        while True:
            fn, reply = self._jobs.get()
            try:
                reply.put((True, fn()))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                reply.put((False, exc))

    def call(self, fn: Callable[[], Any]) -> Any:
        reply: queue.Queue[Any] = queue.Queue()
        self._jobs.put((fn, reply))
        ok, value = reply.get()
        if not ok:
            raise value
        return value


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


def spawn(cmd: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(cmd)`` with the parent-death guard, forked from the spawner thread."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = _Spawner()
        spawner = _spawner
    guard = _parent_death_guard(os.getpid())
    # its own process group: a Ctrl-C at the terminal (SIGINT to the foreground group) stops the
    # host's run cleanly, which then stops QEMU, instead of killing QEMU under a live link
    proc: subprocess.Popen[bytes] = spawner.call(
        lambda: subprocess.Popen(list(cmd), preexec_fn=guard, process_group=0, **kwargs)
    )
    return proc


def stop_all() -> None:
    """Stop every QEMU this process started and has not stopped yet."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for q in live:
        q.kill_now()


def stop_on_signals(signals: Sequence[int] = (signal.SIGTERM, signal.SIGHUP)) -> None:
    """SIGTERM/SIGHUP: kill this process's QEMUs, then die of the same signal (default action),
    so the host's exit status still says what happened. Call from the main thread."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        stop_all()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for sig in signals:
        signal.signal(sig, handler)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _build_record(elf: Path, key: str) -> Any:
    """The firmware config's ``key`` from the ELF's build directory: firmware.json (`codegen
    firmware`, `codegen build`), else manifest.json's firmware entry; None when neither has it."""
    import json

    for name, path in (("firmware.json", ("config", key)), ("manifest.json", ("firmware", key))):
        f = elf.parent / name
        if not f.is_file():
            continue
        node: Any = json.loads(f.read_text())
        for k in path:
            node = node.get(k) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def build_uart(elf: Path) -> int:
    """The console UART the ELF was built for, from the build directory's records; 0 (QEMU's
    first -serial) when they name none."""
    node = _build_record(elf, "uart")
    return int(node) if isinstance(node, int) and not isinstance(node, bool) else 0


def build_board(elf: Path) -> str:
    """The board preset the ELF was built for, from the build directory's records (its core's
    QEMU machine boots it); DEFAULT_BOARD when they name none."""
    node = _build_record(elf, "board")
    return node if isinstance(node, str) else DEFAULT_BOARD


def qemu_machine(elf: Path) -> str:
    """The QEMU machine that boots the ELF (its board's core, codegen/target/cores.py)."""
    return get_board(build_board(elf)).core.qemu_machine


def qemu_command(
    elf: Path,
    port: int,
    *,
    uart: int | None = None,
    icount: bool = True,
    extra_args: Sequence[str] = (),
    board: str | None = None,
) -> list[str]:
    """The QEMU command that boots ``elf`` with UART ``uart`` on TCP ``port``: the machine and
    serial ports of ``board`` (None: the ELF's build records say which, `build_board`; the UART
    likewise, `build_uart`)."""
    qemu = find_tool("qemu-system-arm")
    folder = get_board(build_board(elf) if board is None else board).folder
    uart = build_uart(elf) if uart is None else uart
    # nodelay: QEMU writes the UART byte by byte; Nagle + delayed ACK would add 40 ms per reply.
    tcp = f"tcp:127.0.0.1:{port},server=on,wait=on,nodelay=on"
    # UART i is the i-th -serial (xilinx-zynq-a9: UART0 0xE0000000, UART1 0xE0001000)
    serials: list[str] = []
    for i in range(max(folder.qemu_serials, uart + 1)):
        serials += ["-serial", tcp if i == uart else "null"]
    cmd = [
        qemu,
        "-M",
        folder.core.qemu_machine,
        "-nographic",
        "-monitor",
        "none",
        "-kernel",
        str(elf),
        *serials,
    ]
    if icount:
        # One virtual ns per guest instruction: the core's timer ticks become deterministic.
        cmd += ["-icount", "shift=0"]
    return cmd + list(extra_args)


class Qemu:
    def __init__(
        self,
        elf: Path | str,
        *,
        uart: int | None = None,
        icount: bool = True,
        startup_timeout: float | None = None,
        link_timeout: float = DEFAULT_TIMEOUT,
        retries: int | None = None,
        budget: float = DEFAULT_BUDGET,
        extra_args: Sequence[str] = (),
        flags: dict[str, str] | None = None,
        board: str | None = None,
    ) -> None:
        """``uart``, ``board``: the console UART and the board preset the ELF was built for
        (None: its build directory's records say, `build_uart`, `build_board`);
        ``startup_timeout``: seconds QEMU may take to open its serial port (default: the
        link's ``budget``: a loaded machine starts QEMU slowly); ``flags``: the command-line
        flag of each budget, named in the errors (`elatta_host.transport.Link`)."""
        self.elf = Path(elf)
        self.extra_args = tuple(extra_args)  # e.g. QEMU -d logging (bench/profile.py)
        if not self.elf.is_file():
            raise QemuError(
                f"firmware ELF {self.elf} does not exist (build it with `codegen firmware`)"
            )
        self.uart = build_uart(self.elf) if uart is None else uart
        self.board = build_board(self.elf) if board is None else board
        self.icount = icount
        self.startup_timeout = budget if startup_timeout is None else startup_timeout
        self.flags = dict(flags or {})
        self.link_timeout = link_timeout
        self.retries = retries
        self.budget = budget
        self.proc: subprocess.Popen[bytes] | None = None
        self.link: Link | None = None
        self._stderr = tempfile.TemporaryFile()

    def stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace").strip()

    def start(self) -> Link:
        for _attempt in range(3):  # another process may grab the port between probe and bind
            port = free_port()
            self.proc = spawn(
                qemu_command(
                    self.elf,
                    port,
                    uart=self.uart,
                    icount=self.icount,
                    extra_args=self.extra_args,
                    board=self.board,
                ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
            )
            with _LIVE_LOCK:
                _LIVE.add(self)
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
                    f"socket://127.0.0.1:{port}",
                    timeout=self.link_timeout,
                    budget=self.budget,
                    retries=self.retries,
                    flags=self.flags,
                )
            except LinkClosed:
                time.sleep(0.02)
        self.stop()
        flag = self.flags.get("budget")
        raise QemuError(
            f"qemu-system-arm did not open port {port} within its {self.startup_timeout:g} s "
            f"start-up budget{f' (raise it with {flag})' if flag else ''}: "
            f"{self.stderr_text() or 'no output'}"
        )

    def kill_now(self) -> None:
        """SIGKILL QEMU without waiting (signal handlers: the host is about to die)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

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
        with _LIVE_LOCK:
            _LIVE.discard(self)
        atexit.unregister(self.stop)

    def __enter__(self) -> Link:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
