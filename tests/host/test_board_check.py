"""The board check: the BOARD message of firmware/board/zynq7000/fw_check.c against its host side
(elatta_host.board_check), then `codegen board check` on the bare firmware in QEMU. The check on
the SD image booted in QEMU, with its bit-exact run, is in
tests/codegen/target/test_board_boot.py."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from elatta_host import board_check as bc
from elatta_host.device import Device
from elatta_host.errors import DeviceError
from elatta_host.protocol import Msg
from elatta_host.qemu import Qemu, free_port, qemu_command, spawn

from codegen.base.errors import ConfigError
from codegen.base.resources import firmware_dir
from codegen.target.boards import get_board
from codegen.target.firmware import FirmwareBuild

HEADER = firmware_dir() / "board" / "zynq7000" / "fw_check.h"
MIB = 1 << 20


def header_values() -> dict[str, int]:
    text = HEADER.read_text()
    out = {}
    for name, expr in re.findall(r"^#define (FW_\w+) (.+?)(?:\s*/\*.*)?$", text, re.MULTILINE):
        out[name] = eval(re.sub(r"(0x[0-9A-Fa-f]+|\d+)u\b", r"\1", expr))  # noqa: S307
    return out


def test_constants_match_the_firmware_header() -> None:
    v = header_values()
    assert (v["FW_MSG_BOARD"], v["FW_MSG_BOARD_REPLY"]) == (bc.MSG_BOARD, bc.MSG_BOARD_REPLY)
    assert (v["FW_CHECK_REQ_SIZE"], v["FW_CHECK_REPLY_SIZE"]) == (
        bc.CHECK_REQ_SIZE,
        bc.CHECK_REPLY_SIZE,
    )
    ops = (v["FW_CHECK_OP_TIME"], v["FW_CHECK_OP_FILL"], v["FW_CHECK_OP_CHECK"])
    assert ops == (bc.OP_TIME, bc.OP_FILL, bc.OP_CHECK)
    assert v["FW_CHECK_WALK_MAX"] == bc.WALK_MAX and v["FW_CHECK_PATTERN_MUL"] == bc.PATTERN_MUL
    # an application type: below the control and part bits, above the model runtime's
    assert bc.MSG_BOARD < 0x40 and bc.MSG_BOARD not in set(Msg)


def test_reply_decoding_and_errors() -> None:
    import struct

    payload = struct.pack("<B3xII5I", 3, 0x89ABCDEF, 0x1, 10, 20, 30, 40, 50)
    r = bc.BoardReply.unpack(payload)
    assert r.op == 3 and r.timer == 0x1_89ABCDEF and r.words == (10, 20, 30, 40, 50)
    with pytest.raises(ConfigError, match="32"):
        bc.BoardReply.unpack(payload[:-1])
    assert bc.pattern(0x0100_0000, 0) == (0x0040_0000 * 0x9E3779B1) & 0xFFFFFFFF
    # distinct words of the DDR window get distinct patterns (the multiplier is odd)
    words = [bc.pattern(a, 0x1234) for a in range(0, 1 << 16, 4)]
    assert len(set(words)) == len(words)


def test_board_message_in_qemu(firmware: FirmwareBuild) -> None:
    """TIME reports the preset's DDR and timer; a FILL then CHECK with the same seed finds no
    difference, with another seed every word, the first one at the base with the word FILL
    wrote (host and firmware agree on the pattern); ranges outside [16 MiB, DDR) are refused;
    a model message still gets ERROR(TYPE) from the bare firmware."""
    qemu = get_board("qemu")
    with Qemu(firmware.elf, icount=False, link_timeout=5.0) as link:
        dev = Device(link)
        dev.hello(sync_timeout=30)
        t = bc.board_request(dev, bc.OP_TIME)
        assert t.words[:3] == (qemu.ddr_bytes, 16 * MIB, qemu.timer_hz)
        base, length = 16 * MIB, 4 * MIB
        fill = bc.board_request(dev, bc.OP_FILL, base, length, 0xA5A5A5A5)
        assert fill.words[0] == length // 4 and fill.timer > t.timer
        same = bc.board_request(dev, bc.OP_CHECK, base, length, 0xA5A5A5A5)
        assert same.words[0] == length // 4 and same.words[2] == 0
        other = bc.board_request(dev, bc.OP_CHECK, base, length, 0x5A5A5A5A)
        assert other.words[2] == length // 4
        assert other.words[3:] == (base, bc.pattern(base, 0xA5A5A5A5))
        for b, n in ((15 * MIB, 4096), (qemu.ddr_bytes - 4096, 8192), (base + 2, 4),
                     (base, bc.WALK_MAX + 4), (base, 6)):  # fmt: skip
            with pytest.raises(DeviceError, match="PAYLOAD"):
                bc.board_request(dev, bc.OP_FILL, b, n, 0)
        with pytest.raises(DeviceError, match="PAYLOAD"):
            bc.board_request(dev, 9)
        with pytest.raises(DeviceError, match="TYPE"):
            link.request(Msg.INFER, bytes(16), expect=Msg.RESULT)
        assert dev.hello().build_id == firmware.build_id


def test_cli_on_the_bare_firmware_in_qemu(firmware: FirmwareBuild) -> None:
    """`codegen board check` prints every check with a value; without --build the bit-exact run
    says why it did not run; QEMU's limits are N/A with the reason."""
    port = free_port()
    proc = spawn(
        qemu_command(firmware.elf, port, uart=0, icount=False),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    try:
        r = subprocess.run(
            [sys.executable, "-m", "codegen", "board", "check", "--port",
             f"socket://127.0.0.1:{port}", "--seconds", "1", "--baud", "115200,921600"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        proc.kill()
        proc.communicate()
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    lines = {ln.split()[0] + (" " + ln.split()[1] if ln.startswith("uart") else ""): ln
             for ln in out.splitlines() if ln and not ln.startswith(" ")}  # fmt: skip
    assert "QEMU" in out.splitlines()[0]
    assert re.search(r"mmu/caches\s+PASS\s+SCTLR 0x[0-9a-f]{8}: MMU on", lines["mmu/caches"])
    assert "N/A" in lines["smp"] and "N/A" in lines["l2"]
    assert re.search(r"global timer\s+N/A\s+\d+\.\d+ MHz over", out)
    assert re.search(
        r"ddr walk\s+PASS\s+112 MiB at 0x01000000\.\.0x08000000 .*: 0 words differ", out
    )
    for rate in (115200, 921600):
        assert re.search(rf"uart {rate}\s+N/A\s+20 ECHOes of 2048 bytes bit-exact", out), out
    assert re.search(r"bit-exact run\s+N/A\s+not run", out)
    assert "no failure" in out.splitlines()[-1]


def test_cli_errors() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "codegen", "board", "check", "--port", "socket://127.0.0.1:1",
         "--build", "x"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and "--build and --data go together" in r.stderr


def test_board_actions_still_dispatch(tmp_path: Path) -> None:
    """`codegen board bootscr` (an action of codegen.target.board_cmd) through the CLI: boot.scr
    is the script image, fw.elf a copy of the build's."""
    from codegen.target.boards import FW_LOADADDR
    from codegen.target.firmware import FirmwareConfig, build_firmware
    from codegen.target.sdcard import boot_script, script_image

    build = tmp_path / "build"
    fw = build_firmware(FirmwareConfig.from_board("pynq-z2"), build)
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "codegen", "board", "bootscr", "--board", "pynq-z2", "--build",
         str(build), "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    scr = (out / "boot.scr").read_bytes()
    assert scr == script_image(boot_script(FW_LOADADDR), name="elatta fw.elf")
    assert b"setenv autostart yes\nbootelf -p 0x08000000" in scr
    assert (out / "fw.elf").read_bytes() == fw.elf.read_bytes()
    r = subprocess.run(
        [sys.executable, "-m", "codegen", "board", "bootscr", "--board", "zedboard", "--build",
         str(build), "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2 and "rebuild with --board zedboard" in r.stderr
