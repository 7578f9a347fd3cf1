"""`codegen run` with bad inputs, through the CLI as a user types them: each one gives exit status
2, one line that names the cause and the fix, and no traceback, before anything expensive (the
references, QEMU) is started; the report directory is left as it was."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repopaths import ROOT


def codegen_run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codegen", "run", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


def refused(p: subprocess.CompletedProcess[str], *words: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    for w in words:
        assert w in p.stderr, (w, p.stderr[-2000:])


@pytest.fixture
def args(kws_build: tuple[Path, Path]) -> list[str]:
    build_dir, data = kws_build
    return ["--build", str(build_dir), "--data", str(data), "--limit", "5", "--no-progress"]


def test_report_naming_a_file(args: list[str], tmp_path: Path) -> None:
    f = tmp_path / "report.txt"
    f.write_text("mine\n")
    refused(codegen_run(*args, "--qemu", "--report", str(f)), "is a file, not a directory")
    assert f.read_text() == "mine\n"


def test_report_where_nothing_can_be_written(args: list[str]) -> None:
    refused(codegen_run(*args, "--qemu", "--report", "/dev/null/r"), "choose a directory you can")


@pytest.mark.parametrize("baud", ["0", "-5", "fast"])
def test_baud_must_be_a_rate(args: list[str], tmp_path: Path, baud: str) -> None:
    p = codegen_run(*args, "--qemu", "--baud", baud, "--report", str(tmp_path / "r"))
    refused(p, "--baud")
    assert not (tmp_path / "r").exists()


def test_a_port_that_does_not_open(args: list[str], tmp_path: Path) -> None:
    p = codegen_run(*args, "--port", "/dev/ttyNOPE0", "--report", str(tmp_path / "r"))
    refused(p, "--port /dev/ttyNOPE0: cannot open it", "nothing was run")
    assert "--resume" not in p.stderr  # nothing ran: there is nothing to resume


def test_a_changed_elf_is_named(kws_build: tuple[Path, Path], tmp_path: Path) -> None:
    build_dir, data = kws_build
    copy = shutil.copytree(build_dir, tmp_path / "build")
    elf = copy / "fw.elf"
    elf.write_bytes(elf.read_bytes()[:4096])  # truncated
    p = codegen_run("--build", str(copy), "--data", str(data), "--qemu", "--report",
                    str(tmp_path / "r"), "--no-progress")  # fmt: skip
    refused(p, "is not the ELF this build made", "codegen build")


def test_build_that_is_not_a_build_directory(kws_build: tuple[Path, Path], tmp_path: Path) -> None:
    _, data = kws_build
    p = codegen_run("--build", str(tmp_path), "--data", str(data), "--qemu", "--report",
                    str(tmp_path / "r"))  # fmt: skip
    refused(p, "not a `codegen build` output directory")
