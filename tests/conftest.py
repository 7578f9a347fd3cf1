"""Shared fixtures: one firmware build per session, host builds of the C protocol server."""

from __future__ import annotations

import os

from repopaths import ROOT

# numpy's OpenBLAS threads fight over the 2 cores of CI machines; tests are single-threaded.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from pathlib import Path

import pytest
from hostkit import build_host_server

from codegen.target.firmware import FirmwareBuild, FirmwareConfig, build_firmware


@pytest.fixture(scope="session")
def firmware(tmp_path_factory: pytest.TempPathFactory) -> FirmwareBuild:
    return build_firmware(FirmwareConfig(), tmp_path_factory.mktemp("fw"))


@pytest.fixture(scope="session")
def kws_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The default model built on the tiny data set (QEMU run tests): (build dir, data dir)."""
    from codegen.data import build as build_data
    from codegen.pipeline.build import build

    root = ROOT
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
