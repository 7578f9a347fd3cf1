"""The device's own protocol server (fw_server.c + fw_frame.c) compiled for the host with
ASan/UBSan, for the link-layer tests that need no QEMU."""

from __future__ import annotations

import subprocess
from pathlib import Path

from codegen.base.resources import firmware_dir
from codegen.target.firmware import FirmwareConfig, render_config
from codegen.target.toolchain import COMMON_CFLAGS, find_tool

HOST_BUILD_ID = "fw-hosttest"


def build_host_server(out: Path, max_payload: int) -> Path:
    """Compile fw_server.c + fw_frame.c for the host with ASan/UBSan (the device's own code)."""
    inc = out / "include"
    inc.mkdir(parents=True, exist_ok=True)
    (inc / "fw_config.h").write_text(
        render_config(FirmwareConfig(max_payload=max_payload), HOST_BUILD_ID, "0" * 64)
    )
    fw = firmware_dir()
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
        f"-I{fw}",
        str(fw / "host" / "server_stdio.c"),
        str(fw / "fw_server.c"),
        str(fw / "fw_frame.c"),
        "-o",
        str(exe),
    ]
    subprocess.run(cmd, check=True)
    return exe
