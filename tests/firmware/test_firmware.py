"""Firmware build: cross compile with -Werror, linker guards, UART divisors, config errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from repopaths import ROOT

from codegen.base.errors import ConfigError, ToolMissingError
from codegen.target.boards import BOARDS, DEFAULT_BOARD, get_board
from codegen.target.firmware import (
    FirmwareBuild,
    FirmwareConfig,
    build_firmware,
    format_size_table,
    render_config,
    uart_divisors,
)
from codegen.target.toolchain import find_tool


def test_elf_sections_and_ram_budget(firmware: FirmwareBuild) -> None:
    s = firmware.sections
    assert s[".text"][1] == 0x00100000  # vectors first, at the link address
    assert 0 < s[".text"][0] < 64 * 1024
    assert firmware.static_ram <= 64 * 1024
    table = format_size_table(firmware)
    assert ".bss" in table and "static RAM" in table
    elf_header = firmware.elf.read_bytes()[:20]
    assert elf_header[:4] == b"\x7fELF" and elf_header[18] == 40  # EM_ARM


def test_build_is_deterministic(firmware: FirmwareBuild, tmp_path: Path) -> None:
    again = build_firmware(FirmwareConfig(), tmp_path)
    assert again.build_id == firmware.build_id
    assert again.config_header.read_bytes() == firmware.config_header.read_bytes()
    other = build_firmware(FirmwareConfig(uart=1), tmp_path / "u1")
    assert other.build_id != firmware.build_id
    assert "#define FW_UART_BASE 0xE0001000u" in other.config_header.read_text()


def test_linker_assert_guards_ram_budget(firmware: FirmwareBuild, tmp_path: Path) -> None:
    fw_src = ROOT / "firmware"
    cmd = firmware.compile_command.split()
    # Ask for a 70 KiB main stack: the RAM budget ASSERT in link.ld must refuse the link.
    cmd = [c.replace(str(firmware.elf), str(tmp_path / "big.elf")) for c in cmd]
    cmd.insert(1, "-Wl,--defsym=STACK_SIZE=0x11800")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=fw_src)
    assert proc.returncode != 0
    assert "exceed the RAM budget" in proc.stderr


@pytest.mark.parametrize(
    ("baud", "ref"),
    [(115200, 100_000_000), (115200, 50_000_000), (921600, 100_000_000), (9600, 100_000_000)],
)
def test_uart_divisors(baud: int, ref: int) -> None:
    d = uart_divisors(0, baud, ref)
    assert 4 <= d.bdiv <= 255 and 2 <= d.cd <= 65535
    assert abs(ref / (d.cd * (d.bdiv + 1)) - baud) / baud < 0.005


def test_uart_100mhz_115200_matches_ug585_table() -> None:
    # UG585 Table 19-1 lists CD = 62, BDIV = 6 for 115200 from 50 MHz (actual 115207); from
    # 100 MHz the same ratio gives CD 124 or CD 62 with BDIV 13 -- both exact to 0.006 %.
    d = uart_divisors(0, 115200, 100_000_000)
    assert abs(d.actual_baud - 115207.4) < 1.0
    assert uart_divisors(0, 115200, 50_000_000).actual_baud == pytest.approx(115207.4, abs=1.0)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (FirmwareConfig(uart=2), "uart=2: the Zynq-7000 has UART0 and UART1"),
        (FirmwareConfig(baud=10), "baud=10: supported range is 300..3000000"),
        (FirmwareConfig(max_payload=10), "max_payload=10: allowed range is 256..8192"),
        (FirmwareConfig(board="zybo"), "board='zybo': unknown board; allowed boards are qemu, "),
        (FirmwareConfig(uart_ref_hz=5), "uart_ref_hz=5: expected 1 MHz..200 MHz"),
    ],
)
def test_config_errors_name_value(cfg: FirmwareConfig, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        render_config(cfg, "x", "0")


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_board_preset_baud_within_2_percent(name: str) -> None:
    """Every preset's divisors from its board's UART driver, put back through the divisor formula
    (UG585 §19.2.3 for the Cadence UART), give 115,200 ± 2 %."""
    cfg = FirmwareConfig.from_board(name)
    board = get_board(name)
    assert (cfg.board, cfg.uart, cfg.uart_ref_hz, cfg.baud) == (
        name,
        board.uart,
        board.uart_ref_hz,
        board.baud,
    )
    d = uart_divisors(cfg.uart, cfg.baud, cfg.uart_ref_hz, name)
    actual = cfg.uart_ref_hz / (d.cd * (d.bdiv + 1))
    assert board.baud == 115_200
    assert abs(actual - 115_200) / 115_200 < 0.02, (name, d)
    assert d.base == board.folder.uart.bases[board.uart]


def test_board_presets_facts() -> None:
    assert FirmwareConfig() == FirmwareConfig.from_board(DEFAULT_BOARD)  # "qemu": the old default
    assert (get_board("qemu").uart, get_board("qemu").uart_ref_hz) == (0, 100_000_000)
    assert get_board("pynq-z2").uart == 0
    for name, ref in (("zybo-z7-20", 100e6), ("zedboard", 50e6), ("microzed-7020", 50e6)):
        assert (get_board(name).uart, get_board(name).uart_ref_hz) == (1, ref)
    assert get_board("zedboard").ddr_bytes == 512 << 20
    assert get_board("zybo-z7-20").device_tree == "zynq-zybo-z7"
    assert get_board("pynq-z2").uboot_defconfig is None and "no open SD boot path" in (
        get_board("pynq-z2").note
    )
    zed = uart_divisors(1, 115_200, 50_000_000)
    assert (zed.cd, zed.bdiv) == (62, 6)  # UG585 Table 19-1's 50 MHz row


def test_board_overrides_say_so() -> None:
    notes: list[str] = []
    cfg = FirmwareConfig.from_board("zedboard", uart_ref_hz=100_000_000, uart=1, notes=notes)
    assert (cfg.uart, cfg.uart_ref_hz) == (1, 100_000_000)
    assert notes == ["uart_ref_hz=100000000 overrides the zedboard preset's uart_ref_hz=50000000"]
    with pytest.raises(ConfigError, match="board='nope': unknown board; allowed boards are"):
        FirmwareConfig.from_board("nope")


def test_cli_firmware_board(tmp_path: Path) -> None:
    import json

    proc = subprocess.run(
        [sys.executable, "-m", "codegen", "firmware", "--board", "pynq-z2", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "board pynq-z2: UART0" in proc.stdout
    doc = json.loads((tmp_path / "firmware.json").read_text())
    assert doc["config"]["board"] == "pynq-z2" and doc["console"]["uart"] == 0
    header = (tmp_path / "include" / "fw_config.h").read_text()
    assert '#define FW_BOARD_NAME "pynq-z2"' in header
    bad = subprocess.run(
        [sys.executable, "-m", "codegen", "firmware", "--board", "zc702", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert "board='zc702': unknown board; allowed boards are qemu, zybo-z7-20" in bad.stderr
    over = subprocess.run(
        [
            sys.executable,
            "-m",
            "codegen",
            "firmware",
            "--board",
            "zedboard",
            "--uart-ref-hz",
            "100000000",
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert over.returncode == 0, over.stderr
    assert "overrides the zedboard preset's uart_ref_hz=50000000" in over.stderr


def test_missing_tool_names_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolMissingError, match="install the Debian package gcc-arm-none-eabi"):
        find_tool("arm-none-eabi-gcc")


def test_cli_firmware_missing_compiler(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    proc = subprocess.run(
        [sys.executable, "-m", "codegen", "firmware", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2
    assert "arm-none-eabi-gcc not found" in proc.stderr
    assert "gcc-arm-none-eabi" in proc.stderr


def test_cli_firmware_prints_size_table(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "codegen", "firmware", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert ".text" in proc.stdout and "static RAM" in proc.stdout
    assert (tmp_path / "fw.elf").is_file() and (tmp_path / "firmware.json").is_file()


def test_hand_written_c_is_clang_formatted() -> None:
    """firmware/ and the test probes follow .clang-format (clang-format 18.1.8, the `test`
    extra's pin: other versions format differently)."""
    exe = Path(sys.executable).parent / "clang-format"
    if not exe.is_file():
        pytest.fail(f"{exe} missing: install the test extra (pip install -e '.[test]')")
    root = ROOT
    files = sorted(
        {
            *root.glob("firmware/**/*.[ch]"),
            *root.glob("tests/neonprobe/*.[ch]"),
            *root.glob("tests/intharness/*.[ch]"),
        }
    )
    assert len(files) > 30
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    assert "18.1.8" in version.stdout, version.stdout
    res = subprocess.run(
        [str(exe), "--dry-run", "--Werror", *map(str, files)],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert res.returncode == 0, res.stderr[:4000]
