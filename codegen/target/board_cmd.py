"""`codegen board`: put a build on a Zynq-7020 board (the actions that need no device; `codegen
board check`, which talks to one, is elatta_host.board_check, which also dispatches these).

``codegen board sdcard --board B --build DIR --out OUT`` writes ``OUT/sd.img`` (an MBR with one
FAT32 partition holding BOOT.BIN: U-Boot's SPL with the board's ps7_init; ``u-boot.img``;
``fw.elf``) and ``OUT/u-boot.elf`` (U-Boot proper, for QEMU). U-Boot is built from Debian's
pinned source package by ``tools/uboot.sh`` and cached outside the repository; its keyed
autoboot loads ``fw.elf`` from the card and starts it, and bytes on the serial line do not stop
it (docs/board.md).

``codegen board jtag --board B --build DIR --out OUT`` writes the whole OpenOCD command:
``OUT/adapter.cfg`` (the board's JTAG adapter) and ``OUT/boot.cfg`` (reset, the SPL to its
hand-off, then ``fw.elf``; codegen/target/jtag.py), and prints the command line.

``codegen board bootscr --board B --build DIR --out OUT`` writes ``OUT/boot.scr`` and
``OUT/fw.elf`` for the FAT partition of a card whose own boot chain ends in U-Boot's distro boot
(the PYNQ image): that U-Boot runs boot.scr, which starts fw.elf.

The build must be for the board (``codegen build --board B`` or ``codegen firmware``
with the board's UART and reference clock): a firmware on the wrong UART or with divisors for
another clock would be silent or garble every byte, so both are checked against the preset.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
from pathlib import Path

from codegen.base.errors import ConfigError
from codegen.base.resources import firmware_dir
from codegen.target.boards import (
    BOARDS,
    FW_LOADADDR,
    JTAG_BOARDS,
    UBOOT_BOARDS,
    board,
    get_board,
    jtag_board,
)
from codegen.target.jtag import write_jtag_files
from codegen.target.sdcard import boot_script, fix_boot_header, script_image, write_sd_image

HELP = "put a build on a board: an SD card image, a JTAG command, a boot.scr, or check a board"
ACTIONS = ("sdcard", "jtag", "bootscr")
# docs/board.md's output directories, one per board (tests/codegen/target/test_jtag.py reads the
# commands there)
DOC_OUT = {
    "zybo-z7-20": "out/jtag/zybo",
    "zedboard": "out/jtag/zed",
    "microzed-7020": "out/jtag/microzed",
    "pynq-z2": "out/jtag/pynq",
}


def uboot_script() -> Path:
    """tools/uboot.sh of the source checkout this package runs from."""
    script = firmware_dir().parent / "tools" / "uboot.sh"
    if not script.is_file():
        raise ConfigError(
            f"{script} not found: building U-Boot needs the project's source checkout "
            "(tools/uboot.sh), not an installed wheel"
        )
    return script


def build_uboot(name: str) -> dict[str, Path]:
    """Run tools/uboot.sh for the board (cached after the first build): its output paths."""
    r = subprocess.run(
        ["bash", str(uboot_script()), name], stdout=subprocess.PIPE, stderr=None, text=True
    )
    if r.returncode != 0:
        raise ConfigError(f"tools/uboot.sh {name} failed (exit {r.returncode}); see above")
    return {k: Path(v) for k, v in (ln.split("=", 1) for ln in r.stdout.splitlines() if "=" in ln)}


def firmware_of(build_dir: Path, name: str) -> Path:
    """The build's fw.elf, checked against the board's console UART and UART clock."""
    elf, facts = build_dir / "fw.elf", build_dir / "firmware.json"
    if not elf.is_file() or not facts.is_file():
        raise ConfigError(
            f"{build_dir} has no fw.elf and firmware.json: give the --out of `codegen build` or "
            "`codegen firmware`"
        )
    cfg = json.loads(facts.read_text())["config"]
    b = get_board(name)
    if cfg.get("uart") != b.console_uart or cfg.get("uart_ref_hz") != b.uart_ref_hz:
        raise ConfigError(
            f"{build_dir} is built for UART{cfg.get('uart')} at uart_ref_hz="
            f"{cfg.get('uart_ref_hz')}; {name} has its USB-UART on UART{b.console_uart} clocked "
            f"at {b.uart_ref_hz} Hz: rebuild with --board {name}"
        )
    return elf


def sdcard(name: str, build_dir: Path, out: Path, size_mib: int) -> tuple[Path, Path]:
    b = board(name)
    elf = firmware_of(build_dir, b.name)
    ub = build_uboot(name)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "BOOT.BIN": fix_boot_header(ub["boot_bin"].read_bytes()),
        "u-boot.img": ub["u_boot_img"].read_bytes(),
        "fw.elf": elf.read_bytes(),
    }
    image = write_sd_image(out / "sd.img", files, size_mib=size_mib)
    u_boot_elf = out / "u-boot.elf"
    shutil.copyfile(ub["u_boot_elf"], u_boot_elf)
    return image, u_boot_elf


def jtag(name: str, build_dir: Path, out: Path) -> str:
    """Write OUT/adapter.cfg and OUT/boot.cfg for the board; returns the OpenOCD command."""
    b = jtag_board(name)
    assert b.jtag_adapter is not None
    elf = firmware_of(build_dir, name)
    if name not in UBOOT_BOARDS:  # the board's own boot loader has set the PS up
        return write_jtag_files(out, b.jtag_adapter, elf)
    ub = build_uboot(name)
    return write_jtag_files(
        out, b.jtag_adapter, elf, spl_bin=ub["spl_bin"], uboot_config=ub["dir"] / "config"
    )


def bootscr(name: str, build_dir: Path, out: Path) -> tuple[Path, Path]:
    """Write OUT/boot.scr (a `mkimage -T script` image) and OUT/fw.elf."""
    elf = firmware_of(build_dir, name)
    out.mkdir(parents=True, exist_ok=True)
    scr = out / "boot.scr"
    scr.write_bytes(script_image(boot_script(FW_LOADADDR), name="elatta fw.elf"))
    fw = out / "fw.elf"
    shutil.copyfile(elf, fw)
    return scr, fw


def add_actions(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The actions of this module on `codegen board`'s subparsers."""
    sd = sub.add_parser("sdcard", help="write OUT/sd.img and OUT/u-boot.elf for a board")
    jt = sub.add_parser(
        "jtag", help="write OUT/adapter.cfg and OUT/boot.cfg and print the OpenOCD command"
    )
    bs = sub.add_parser(
        "bootscr", help="write OUT/boot.scr and OUT/fw.elf for a card whose U-Boot runs boot.scr"
    )
    choices = {sd: UBOOT_BOARDS, jt: JTAG_BOARDS, bs: BOARDS}
    for q, boards in choices.items():
        names = sorted(n for n in boards if n != "qemu")
        q.add_argument("--board", required=True, help=f"the board: {', '.join(names)}")
        q.add_argument(
            "--build",
            type=Path,
            required=True,
            help="a `codegen build` or `codegen firmware` --out",
        )
        q.add_argument("--out", type=Path, required=True, help="output directory")
    sd.add_argument("--size-mib", type=int, default=64, help="image size (default 64 MiB)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    add_actions(sub)


def run(args: argparse.Namespace) -> int:
    if args.action == "sdcard":
        image, u_boot_elf = sdcard(args.board, args.build, args.out, args.size_mib)
        print(f"{image}  (write it to a card: dd if={image} of=/dev/sdX bs=4M conv=fsync)")
        print(f"{u_boot_elf}  (U-Boot proper: QEMU -kernel)")
        mem = board(args.board).ddr_mib
        uart_args = "-serial null -serial tcp:127.0.0.1:PORT,server=on,wait=on"
        print(
            "in QEMU: "
            + shlex.join(["qemu-system-arm", "-M", "xilinx-zynq-a9", "-nographic", "-m", str(mem)])
            + f" -kernel {u_boot_elf} -drive if=sd,format=raw,file={image} {uart_args}"
        )
        return 0
    if args.action == "bootscr":
        scr, fw = bootscr(args.board, args.build, args.out)
        print(f"{scr}\n{fw}\ncopy both to the card's FAT (boot) partition, replacing its boot.scr")
        return 0
    command = jtag(args.board, args.build, args.out)
    print(f"{args.out / 'adapter.cfg'}\n{args.out / 'boot.cfg'}")
    print(command)
    return 0
