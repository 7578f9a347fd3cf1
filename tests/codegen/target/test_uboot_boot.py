"""Boot the SD card image a Zybo Z7-20 would boot, in QEMU: U-Boot proper (tools/uboot.sh, from
Debian's u-boot source) finds fw.elf on the card's FAT partition, `bootelf -p` starts it, and
the firmware answers HELLO on the board's console UART (UART1, the one U-Boot printed on).

QEMU cannot run the SPL in BOOT.BIN (xilinx-zynq-a9 has no DDR controller model for ps7_init),
so QEMU starts U-Boot proper from u-boot.elf with -kernel; BOOT.BIN and u-boot.img are still on
the card, byte for byte what a board gets. U-Boot proper needs -m 1024: the Zybo Z7 device tree
declares 1 GiB and U-Boot relocates itself to the top of it.
"""

from __future__ import annotations

import re
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest
from elatta_host.device import Device
from elatta_host.qemu import Qemu, free_port, qemu_command, spawn
from elatta_host.transport import Link
from ubootkit import build_uboot

from codegen.target.boards import FW_LOADADDR, UBOOT_BOARDS, board
from codegen.target.firmware import FirmwareConfig, build_firmware
from codegen.target.sdcard import boot_script, fix_boot_header, script_image, write_sd_image
from codegen.target.toolchain import find_tool

pytestmark = [pytest.mark.slow, pytest.mark.qemu]

BOARD = "zybo-z7-20"


def check_boot_header(boot_bin: bytes) -> None:
    """BootROM header of BOOT.BIN (UG585 §6.3.2, Table 6-3 "BootROM Header") as the SD card gets
    it (codegen.target.sdcard.fix_boot_header): the image from its offset to the end of the
    file, and nothing past it, is what the BootROM copies to OCM."""
    width, ident = struct.unpack_from("<I4s", boot_bin, 0x20)
    assert width == 0xAA995566 and ident == b"XNLX", "width detection word, image id"
    src, length, load, start, total = struct.unpack_from("<IIIII", boot_bin, 0x30)
    assert load == 0 and start == 0, "the SPL runs from OCM at 0"
    assert 0 < length <= 192 * 1024, "the SPL must fit in the 192 KiB the BootROM loads to OCM"
    assert src + length == len(boot_bin) and length == total
    words = struct.unpack_from("<10I", boot_bin, 0x20)
    assert struct.unpack_from("<I", boot_bin, 0x48)[0] == ~sum(words) & 0xFFFFFFFF, "checksum"


def test_uboot_boot_header_is_fixed(uboot: dict[str, Path]) -> None:
    """U-Boot 2023.01's tools/zynqimage.c stores the whole file's size (header included) as the
    image length; the card gets the SPL's own length, and the image itself unchanged."""
    raw = uboot["boot_bin"].read_bytes()
    src, length = struct.unpack_from("<II", raw, 0x30)
    assert length == len(raw) > len(raw) - src, "the length U-Boot writes covers the header too"
    fixed = fix_boot_header(raw)
    check_boot_header(fixed)
    assert fixed[src:] == raw[src:] == uboot["spl_bin"].read_bytes().ljust(len(raw) - src, b"\0")


def qemu_args(sd: Path) -> list[str]:
    return ["-m", "1024", "-drive", f"if=sd,format=raw,file={sd}"]


@pytest.fixture(scope="module")
def uboot() -> dict[str, Path]:
    return build_uboot(BOARD)


@pytest.fixture(scope="module")
def sd_image(
    uboot: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, str]:
    b = board(BOARD)
    cfg = FirmwareConfig(uart=b.console_uart, uart_ref_hz=b.uart_ref_hz)
    fw = build_firmware(cfg, tmp_path_factory.mktemp("fw"))
    files = {
        "BOOT.BIN": fix_boot_header(uboot["boot_bin"].read_bytes()),
        "u-boot.img": uboot["u_boot_img"].read_bytes(),
        "fw.elf": fw.elf.read_bytes(),
        "boot.scr": script_image(boot_script(FW_LOADADDR), name="elatta fw.elf"),
    }
    check_boot_header(files["BOOT.BIN"])
    sd = write_sd_image(tmp_path_factory.mktemp("sd") / "sd.img", files)
    return uboot["u_boot_elf"], sd, fw.build_id


def mask_write(ps7_init: str, reg: int, mask: int) -> int:
    """The value ps7_init_gpl.c writes under `mask` to SLCR register `reg` (first occurrence)."""
    m = re.search(
        rf"EMIT_MASKWRITE\(0x{reg:08X}U?\s*,\s*0x{mask:08X}U?\s*,\s*(0x[0-9A-F]+)U?\)",
        ps7_init,
        re.IGNORECASE,
    )
    assert m, f"no write of {reg:#x} mask {mask:#x}"
    return int(m.group(1), 16)


def test_board_table_matches_uboot_source(uboot: dict[str, Path]) -> None:
    """codegen.target.boards against the DTS and ps7_init_gpl.c tools/uboot.sh built from."""
    src = uboot["src"]
    assert f"bootelf -p {FW_LOADADDR:#010x}" in (uboot["dir"] / "config").read_text()
    for b in UBOOT_BOARDS.values():
        dts = (src / "arch/arm/dts" / f"{b.device_tree}.dts").read_text()
        assert f"serial0 = &uart{b.console_uart};" in dts
        mem = re.search(r"memory@0 \{[^}]*reg = <(?:0x)?0 (0x[0-9a-f]+)>", dts)
        assert mem and int(mem.group(1), 16) == b.ddr_mib << 20, b.name
        ps7 = (src / "board/xilinx/zynq" / b.device_tree / "ps7_init_gpl.c").read_text()
        fdiv = (mask_write(ps7, 0xF8000108, 0x0007F000) >> 12) & 0x7F
        uart_clk = mask_write(ps7, 0xF8000154, 0x00003F33)
        assert (uart_clk >> 4) & 3 == 0, "UART_CLK_CTRL.SRCSEL = IO PLL"
        ref = 33_333_333 * fdiv // ((uart_clk >> 8) & 0x3F)
        assert abs(ref - b.uart_ref_hz) < b.uart_ref_hz // 100, (b.name, ref)
    # The firmware sits below fw.elf's load buffer on every board.
    assert FW_LOADADDR >= 16 << 20 and all(
        FW_LOADADDR < b.ddr_mib << 20 for b in UBOOT_BOARDS.values()
    )


def test_uboot_console_boots_fw_elf(sd_image: tuple[Path, Path, str], tmp_path: Path) -> None:
    """U-Boot's own console (UART1) to a file: autoboot, the load from mmc 0:1 and the jump."""
    u_boot_elf, sd, _ = sd_image
    console = tmp_path / "console.txt"
    cmd = [
        find_tool("qemu-system-arm"), "-M", "xilinx-zynq-a9", "-nographic", "-monitor", "none",
        "-kernel", str(u_boot_elf), *qemu_args(sd),
        "-serial", "null", "-serial", f"file:{console}",
    ]  # fmt: skip
    proc = spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    want = "## Starting application at 0x00100000"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            if console.exists() and want in console.read_text(errors="replace"):
                break
            time.sleep(0.2)
    finally:
        proc.kill()
        _, err = proc.communicate()
    text = console.read_text(errors="replace") if console.exists() else ""
    assert "Model: Digilent Zybo Z7 board" in text, text + err.decode(errors="replace")
    assert "autoboot in" in text, text
    assert want in text, text
    assert "Bad Linux ARM zImage" not in text and "Unknown command" not in text, text


def test_firmware_answers_hello_after_uboot(sd_image: tuple[Path, Path, str]) -> None:
    u_boot_elf, sd, build_id = sd_image
    t0 = time.monotonic()
    # The firmware UART is the U-Boot console: HELLO sync tries sent while U-Boot still runs are
    # ignored by the keyed autoboot; the Link skips U-Boot's text as non-frame bytes.
    with Qemu(u_boot_elf, uart=1, icount=False, link_timeout=5.0, extra_args=qemu_args(sd)) as link:
        dev = Device(link)
        info = dev.hello(sync_timeout=60)
        boot_s = time.monotonic() - t0
        assert info.build_id == build_id
        assert info.uart == board(BOARD).console_uart and info.baud == 115200
        assert info.uart_ref_hz == board(BOARD).uart_ref_hz
        payload = bytes(range(256)) * 4
        assert dev.echo(payload) == payload
    assert boot_s < 60


def console_until(sock: socket.socket, want: bytes, seen: bytearray, timeout: float) -> None:
    """Read the console into ``seen`` until it holds ``want``."""
    deadline = time.monotonic() + timeout
    while want not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {want!r} within {timeout} s: {seen.decode(errors='replace')}"
        sock.settimeout(left)
        chunk = sock.recv(4096)
        assert chunk, seen.decode(errors="replace")
        seen += chunk


def test_boot_scr_starts_fw_elf(sd_image: tuple[Path, Path, str]) -> None:
    """The boot.scr of `codegen board bootscr` (the PYNQ-Z2's path, docs/board.md §5) run by
    U-Boot 2023.01 from the card: the autoboot stopped with its key, the script loaded and
    sourced at the prompt, and the firmware it starts answers HELLO."""
    u_boot_elf, sd, build_id = sd_image
    port = free_port()
    proc = spawn(
        qemu_command(u_boot_elf, port, uart=1, icount=False, extra_args=qemu_args(sd)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    seen = bytearray()
    try:
        deadline = time.monotonic() + 30
        while True:  # QEMU binds the port a moment after it starts
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline, "QEMU did not open its serial port"
                time.sleep(0.1)
        with sock:
            console_until(sock, b"autoboot in", seen, 60)
            sock.sendall(b"elatta-stop")
            console_until(sock, b"Zynq> ", seen, 30)
            sock.sendall(b"load mmc 0:1 0x03000000 boot.scr\r")
            console_until(sock, b"bytes read", seen, 30)
            sock.sendall(b"source 0x03000000\r")
            console_until(sock, b"## Starting application at 0x00100000", seen, 30)
        text = seen.decode(errors="replace")
        assert "elatta: loading fw.elf from mmc 0:1" in text, text
        link = Link(f"socket://127.0.0.1:{port}", timeout=5.0)
        with link:
            assert Device(link).hello(sync_timeout=30).build_id == build_id
    finally:
        proc.kill()
        proc.communicate()
