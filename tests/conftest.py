"""Shared fixtures: one firmware build per session, host builds of the C protocol server."""

from __future__ import annotations

import os

# numpy's OpenBLAS threads fight over the 2 cores of CI machines; tests are single-threaded.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import subprocess
from pathlib import Path

import pytest

from codegen.base.resources import firmware_dir
from codegen.target.firmware import FirmwareBuild, FirmwareConfig, build_firmware, render_config
from codegen.target.toolchain import COMMON_CFLAGS, find_tool

HOST_BUILD_ID = "fw-hosttest"


@pytest.fixture(scope="session")
def firmware(tmp_path_factory: pytest.TempPathFactory) -> FirmwareBuild:
    return build_firmware(FirmwareConfig(), tmp_path_factory.mktemp("fw"))


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


@pytest.fixture(scope="session")
def kws_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The default model built on the tiny data set (QEMU run tests): (build dir, data dir)."""
    from codegen.data import build as build_data
    from codegen.pipeline.build import build

    root = Path(__file__).resolve().parents[1]
    data = tmp_path_factory.mktemp("rundata")
    build_data(data, preset="tiny", tier="numpy", progress=False, jobs=1)
    out = tmp_path_factory.mktemp("runbuild")
    build(
        root / "models/default/model.pt",
        root / "models/default/basis.npz",
        root / "configs/default.toml",
        out,
        data_dir=data,
    )
    return out, data


@pytest.fixture(scope="session")
def host_server(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    max_payload = 512
    return build_host_server(tmp_path_factory.mktemp("hostsrv"), max_payload), max_payload
