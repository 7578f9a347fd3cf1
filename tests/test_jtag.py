"""codegen.target.jtag: the OpenOCD script parses in Debian's openocd with the dummy adapter (no
board), defines the boot procedures, and carries the ELF's entry point."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from codegen.base.errors import ConfigError
from codegen.target.jtag import JtagBoot, elf_entry, openocd_script, write_jtag_script


def fake_elf(entry: int) -> bytes:
    """An ELF header only: ELFCLASS32, ELFDATA2LSB, EM_ARM (40), e_entry."""
    head = b"\x7fELF\x01\x01\x01" + bytes(9)
    return head + struct.pack("<HHII", 2, 40, 1, entry) + bytes(24)


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    spl = tmp_path / "spl.bin"
    spl.write_bytes(bytes(1024))
    fw = tmp_path / "fw.elf"
    fw.write_bytes(fake_elf(0x0010_0000))
    return spl, fw


def test_script_content(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    spl, fw = inputs
    text = write_jtag_script(tmp_path / "boot.cfg", spl, fw).read_text()
    assert f"load_image {spl.resolve()} 0x0 bin" in text
    assert f"load_image {fw.resolve()} 0x0 elf" in text
    assert "resume 0x100000" in text and "source" not in text


def test_errors(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    spl, fw = inputs
    with pytest.raises(ConfigError, match="ARM ELF"):
        elf_entry(b"\x7fELF\x02" + bytes(60))
    with pytest.raises(ConfigError, match="Tcl"):
        openocd_script(JtagBoot(Path("/tmp/a b/spl.bin"), fw, 0x100000))
    with pytest.raises(ConfigError, match="does not exist"):
        write_jtag_script(tmp_path / "x.cfg", tmp_path / "missing.bin", fw)


def run_openocd(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = ["openocd", "-c", "adapter driver dummy", "-c", "transport select jtag", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def test_openocd_parses_with_dummy_adapter(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    assert shutil.which("openocd"), "openocd (Debian openocd): tools/setup.sh installs it"
    spl, fw = inputs
    cfg = write_jtag_script(tmp_path / "boot.cfg", spl, fw, include_target=True)
    check = (
        "foreach p {elatta_boot elatta_load_spl elatta_load_fw} "
        '{if {[info procs $p] eq {}} {error "missing proc $p"}}'
    )
    r = run_openocd("-f", str(cfg), "-c", check, "-c", "shutdown")
    assert r.returncode == 0, r.stdout + r.stderr
    listed = run_openocd("-f", str(cfg), "-c", "targets", "-c", "shutdown")
    assert "zynq.cpu0" in listed.stdout + listed.stderr  # OpenOCD logs to stderr
    # Negative control: the same invocation does fail on a script error.
    bad = tmp_path / "bad.cfg"
    bad.write_text(cfg.read_text() + "\nproc broken {\n")
    assert run_openocd("-f", str(bad), "-c", "shutdown").returncode != 0
