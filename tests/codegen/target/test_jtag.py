"""codegen.target.jtag: for every board with a JTAG path, the command line docs/board.md gives
runs in Debian's OpenOCD 0.12 with its adapter file replaced by the dummy adapter, without an
error, and its dry run lists the boot sequence in order (reset, SPL, breakpoint at the hand-off,
the ELF, resume at its entry); each board's own adapter file parses; the docs' command lines are
the generated ones. The slow test generates the files from the real U-Boot build."""

from __future__ import annotations

import re
import shlex
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from repopaths import ROOT
from ubootkit import build_uboot

from codegen.base.errors import ConfigError
from codegen.target.board_cmd import DOC_OUT
from codegen.target.boards import JTAG_BOARDS, UBOOT_BOARDS
from codegen.target.jtag import (
    ADAPTERS,
    JtagBoot,
    elf_entry,
    openocd_command,
    openocd_script,
    spl_handoff,
    write_jtag_files,
)

DOCS = [ROOT / "docs" / "board.md", ROOT / "README.md"]
ENTRY = 0x0010_0000
# The lines of U-Boot 2023.01's .config (xilinx_zynq_virt_defconfig) the script depends on.
UBOOT_CONFIG = (
    "CONFIG_TEXT_BASE=0x4000000\nCONFIG_SPL_RAM_DEVICE=y\nCONFIG_SPL_RAW_IMAGE_SUPPORT=y\n"
)
DUMMY = "adapter driver dummy\ntransport select jtag\n"


def fake_elf(entry: int) -> bytes:
    """An ELF header only: ELFCLASS32, ELFDATA2LSB, EM_ARM (40), e_entry."""
    head = b"\x7fELF\x01\x01\x01" + bytes(9)
    return head + struct.pack("<HHII", 2, 40, 1, entry) + bytes(24)


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    files = {"spl": tmp_path / "spl.bin", "fw": tmp_path / "fw.elf", "cfg": tmp_path / "config"}
    files["spl"].write_bytes(bytes(1024))
    files["fw"].write_bytes(fake_elf(ENTRY))
    files["cfg"].write_text(UBOOT_CONFIG)
    return files


def generate(board: str, out: Path, inputs: dict[str, Path]) -> str:
    """What `codegen board jtag` writes for the board (codegen.target.board_cmd.jtag), from
    stand-in SPL and U-Boot configuration files."""
    adapter = JTAG_BOARDS[board].jtag_adapter
    assert adapter is not None
    if board in UBOOT_BOARDS:
        return write_jtag_files(
            out, adapter, inputs["fw"], spl_bin=inputs["spl"], uboot_config=inputs["cfg"]
        )
    return write_jtag_files(out, adapter, inputs["fw"])


def openocd(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    assert shutil.which("openocd"), "openocd (Debian openocd): tools/setup.sh installs it"
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd)


def dry_run(out: Path) -> list[str]:
    return re.findall(r"^elatta-dry: (.*)$", out.read_text(), re.MULTILINE)


def docs_commands() -> dict[str, str]:
    """board -> the OpenOCD command line docs/board.md gives for it."""
    text = (ROOT / "docs" / "board.md").read_text()
    found = {}
    for board, where in DOC_OUT.items():
        lines = [ln.strip() for ln in text.splitlines() if f"-f {where}/adapter.cfg" in ln]
        assert len(lines) == 1, (board, lines)
        found[board] = lines[0]
    return found


def test_docs_give_the_generated_command_for_every_jtag_board() -> None:
    assert set(DOC_OUT) == set(JTAG_BOARDS)
    board_md = (ROOT / "docs" / "board.md").read_text()
    for board, line in docs_commands().items():
        assert line == openocd_command(DOC_OUT[board]), board
        assert f"codegen board jtag --board {board} " in board_md, board
        assert f"--out {DOC_OUT[board]}" in board_md, board
    readme = (ROOT / "README.md").read_text()
    # README names the command the same way (one board as the example)
    assert openocd_command(DOC_OUT["zybo-z7-20"]) in readme


@pytest.mark.parametrize("board", sorted(JTAG_BOARDS))
def test_docs_command_runs_with_the_dummy_adapter(
    board: str, tmp_path: Path, inputs: dict[str, Path]
) -> None:
    """The exact command line of docs/board.md, run from a directory where its OUT is the
    generated one, with OUT/adapter.cfg the dummy adapter: no error, and the dry run is the
    boot sequence."""
    out = tmp_path / DOC_OUT[board]
    command = generate(board, out, inputs)
    assert command == openocd_command(out)
    line = docs_commands()[board]
    (out / "adapter.cfg").write_text(DUMMY)  # the interface replaced, nothing else
    r = openocd(shlex.split(line), cwd=tmp_path)
    log = tmp_path / "log.txt"
    log.write_text(r.stdout + r.stderr)
    assert r.returncode == 0, log.read_text()
    assert "Error" not in log.read_text(), log.read_text()
    fw = str(inputs["fw"].resolve())
    load_fw = ["targets zynq.cpu0", f"load_image {fw} 0x0 elf", f"verify_image {fw} 0x0 elf",
               f"resume {ENTRY:#x}"]  # fmt: skip
    if board in UBOOT_BOARDS:
        spl = str(inputs["spl"].resolve())
        want = [
            "init",
            # reset: SLCR unlock, PSS_RST_CTRL.SOFT_RST (UG585 Appendix B slcr)
            "targets zynq.cpu0", "halt 1000", "poll off", "mww phys 0xf8000008 0xdf0d",
            "catch {mww phys 0xf8000200 1}", "sleep 200", "catch {zynq.cpu0 arp_examine}",
            "catch {zynq.cpu1 arp_examine}", "poll on", "halt 1000",
            # the SPL to OCM, halted by a hardware breakpoint at its hand-off
            "targets zynq.cpu0", f"load_image {spl} 0x0 bin", f"verify_image {spl} 0x0 bin",
            "bp 0x04000000 4 hw", "resume 0x0", "wait_halt 5000", "rbp 0x04000000",
            *load_fw,
        ]  # fmt: skip
    else:
        want = ["init", "targets zynq.cpu0", "halt 1000", "cache l1 d flush_all",
                "arm mrc 15 0 1 0 0", "arm mcr 15 0 1 0 0 0", "cache l1 i inval_all",
                *load_fw]  # fmt: skip
    assert dry_run(log) == want


@pytest.mark.parametrize("board", sorted(JTAG_BOARDS))
def test_adapter_files_parse(board: str, tmp_path: Path, inputs: dict[str, Path]) -> None:
    """The board's own adapter.cfg and boot.cfg load in OpenOCD (no probe is opened before
    `init`); the target appears once: the command sources no board file of its own."""
    out = tmp_path / "out"
    generate(board, out, inputs)
    r = openocd(
        ["openocd", "-f", str(out / "adapter.cfg"), "-f", str(out / "boot.cfg"),
         "-c", "echo \"adapter=[adapter name]\"", "-c", "targets", "-c", "shutdown"],
        cwd=tmp_path,
    )  # fmt: skip
    text = r.stdout + r.stderr
    assert r.returncode == 0, text
    assert "adapter=ftdi" in text and "Exists" not in text, text
    assert text.count("zynq.cpu0") >= 1


def test_sourcing_the_target_twice_fails_as_the_review_found(
    tmp_path: Path, inputs: dict[str, Path]
) -> None:
    """Negative control: a board file that sources target/zynq_7000.cfg itself, in front of
    boot.cfg, is the error the old documented command hit; the test above would see it."""
    out = tmp_path / "out"
    generate("zedboard", out, inputs)
    r = openocd(
        ["openocd", "-f", "board/digilent_zedboard.cfg", "-f", str(out / "boot.cfg"),
         "-c", "shutdown"],
        cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode != 0 and "zynq.dap Exists" in r.stdout + r.stderr


def test_script_error_is_caught(tmp_path: Path, inputs: dict[str, Path]) -> None:
    """Negative control: the same run fails on a script error."""
    out = tmp_path / "out"
    generate("zybo-z7-20", out, inputs)
    (out / "adapter.cfg").write_text(DUMMY)
    (out / "boot.cfg").write_text((out / "boot.cfg").read_text() + "\nproc broken {\n")
    r = openocd(shlex.split(openocd_command(out)), cwd=tmp_path)
    assert r.returncode != 0


def test_handoff_from_uboot_config() -> None:
    assert spl_handoff(UBOOT_CONFIG) == 0x0400_0000
    assert spl_handoff(UBOOT_CONFIG + "CONFIG_SYS_UBOOT_START=0x4000040\n") == 0x0400_0040
    with pytest.raises(ConfigError, match="SPL_RAM_DEVICE"):
        spl_handoff(UBOOT_CONFIG.replace("CONFIG_SPL_RAM_DEVICE=y", "# not set"))


def test_errors(tmp_path: Path, inputs: dict[str, Path]) -> None:
    with pytest.raises(ConfigError, match="ARM ELF"):
        elf_entry(b"\x7fELF\x02" + bytes(60))
    with pytest.raises(ConfigError, match="Tcl"):
        openocd_script(JtagBoot("spl", Path("/tmp/a b/fw.elf"), ENTRY, inputs["spl"], 0x4000000))
    with pytest.raises(ConfigError, match="does not exist"):
        write_jtag_files(tmp_path / "o", "digilent-hs1", tmp_path / "missing.elf")
    with pytest.raises(ConfigError, match="allowed are"):
        write_jtag_files(tmp_path / "o", "no-such-adapter", inputs["fw"])
    with pytest.raises(ConfigError, match="both"):
        write_jtag_files(tmp_path / "o", "digilent-hs1", inputs["fw"], spl_bin=inputs["spl"])
    assert set(ADAPTERS) == {b.jtag_adapter for b in JTAG_BOARDS.values()}


@pytest.mark.slow
def test_cli_with_the_real_uboot(tmp_path: Path) -> None:
    """`codegen board jtag` for the Zybo Z7 with tools/uboot.sh's SPL and .config: the hand-off
    is CONFIG_TEXT_BASE (0x04000000) and the SPL the build's."""
    from codegen.target.firmware import FirmwareConfig, build_firmware

    ub = build_uboot("zybo-z7-20")
    build = tmp_path / "build"
    build_firmware(FirmwareConfig.from_board("zybo-z7-20"), build)
    out = tmp_path / "jtag"
    r = subprocess.run(
        [sys.executable, "-m", "codegen", "board", "jtag", "--board", "zybo-z7-20",
         "--build", str(build), "--out", str(out)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert openocd_command(out) in r.stdout
    boot = (out / "boot.cfg").read_text()
    assert f"load_image {ub['spl_bin'].resolve()} 0x0 bin" in boot
    assert "bp 0x04000000 4 hw" in boot
    assert f"resume {elf_entry((build / 'fw.elf').read_bytes()):#x}" in boot
