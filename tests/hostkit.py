"""The device's own protocol server (fw_server.c + fw_frame.c) compiled for the host with
ASan/UBSan, for the link-layer tests that need no QEMU."""

from __future__ import annotations

import subprocess
from pathlib import Path

from codegen.base.resources import firmware_dir
from codegen.target.firmware import FirmwareConfig, render_config
from codegen.target.sources import HOST
from codegen.target.toolchain import COMMON_CFLAGS, find_tool

HOST_BUILD_ID = "fw-hosttest"


def build_host_server(out: Path, max_payload: int, fw: Path | None = None) -> Path:
    """Compile fw_server.c + fw_frame.c for the host with ASan/UBSan (the device's own code);
    ``fw``: a copy of the firmware folder to build instead (a changed generated header)."""
    inc = out / "include"
    inc.mkdir(parents=True, exist_ok=True)
    (inc / "fw_config.h").write_text(
        render_config(FirmwareConfig(max_payload=max_payload), HOST_BUILD_ID, "0" * 64)
    )
    fw = fw or firmware_dir()
    exe = out / "server_stdio"
    cmd = [
        find_tool("cc"),
        *COMMON_CFLAGS,
        "-O1",
        "-g",
        "-fno-omit-frame-pointer",
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=all",
        f"-I{inc}",
        *HOST.compile_flags(fw),
        f"-I{fw}",
        str(fw / "host" / "server_stdio.c"),
        str(fw / "fw_server.c"),
        str(fw / "fw_frame.c"),
        "-o",
        str(exe),
    ]
    subprocess.run(cmd, check=True)
    return exe


class HarnessServer:
    """The host-compiled server on a TCP port: each connection gets its own process (a fresh
    device), stdin and stdout bridged to the socket. ``url`` for a Link (or a proxy's
    upstream ``port``)."""

    def __init__(self, exe: Path) -> None:
        import socket
        import threading

        self.exe = exe
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.procs: list[subprocess.Popen[bytes]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        import os
        import threading

        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            proc = subprocess.Popen(
                [str(self.exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
            )
            self.procs.append(proc)
            assert proc.stdin is not None and proc.stdout is not None
            stdin, stdout = proc.stdin, proc.stdout

            def up(conn=conn, stdin=stdin) -> None:  # type: ignore[no-untyped-def]
                try:
                    while data := conn.recv(4096):
                        stdin.write(data)
                finally:
                    stdin.close()

            def down(conn=conn, stdout=stdout) -> None:  # type: ignore[no-untyped-def]
                try:
                    while data := os.read(stdout.fileno(), 4096):
                        conn.sendall(data)
                except OSError:
                    pass
                finally:
                    conn.close()

            threading.Thread(target=up, daemon=True).start()
            threading.Thread(target=down, daemon=True).start()

    def close(self) -> None:
        self.listener.close()
        for p in self.procs:
            p.kill()
            p.wait()

    def __enter__(self) -> HarnessServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
