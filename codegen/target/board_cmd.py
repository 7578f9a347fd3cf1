"""`codegen board`: put a build on a Zynq-7020 board.

``codegen board sdcard --board B --build DIR --out OUT`` writes ``OUT/sd.img`` (an MBR with one
FAT32 partition holding BOOT.BIN: U-Boot's SPL with the board's ps7_init; ``u-boot.img``;
``fw.elf``) and ``OUT/u-boot.elf`` (U-Boot proper, for QEMU and JTAG). U-Boot is built from
Debian's pinned source package by ``tools/uboot.sh`` and cached outside the repository; its
keyed autoboot loads ``fw.elf`` from the card and starts it, and bytes on the serial line do not
stop it (docs/board.md). ``codegen board jtag`` writes an OpenOCD script that loads the SPL into
OCM (clocks, MIO, DDR) and then ``fw.elf``.

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
from codegen.target.boards import UBOOT_BOARDS, board
from codegen.target.jtag import write_jtag_script
from codegen.target.sdcard import write_sd_image

HELP = "put a build on a board: an SD card image (U-Boot + firmware) or a JTAG script"


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
    b = board(name)
    if cfg.get("uart") != b.console_uart or cfg.get("uart_ref_hz") != b.uart_ref_hz:
        raise ConfigError(
            f"{build_dir} is built for UART{cfg.get('uart')} at uart_ref_hz="
            f"{cfg.get('uart_ref_hz')}; {name} has its USB-UART on UART{b.console_uart} clocked "
            f"at {b.uart_ref_hz} Hz: rebuild with --board {name}"
        )
    return elf


def sdcard(name: str, build_dir: Path, out: Path, size_mib: int) -> tuple[Path, Path]:
    elf = firmware_of(build_dir, name)
    ub = build_uboot(name)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "BOOT.BIN": ub["boot_bin"].read_bytes(),
        "u-boot.img": ub["u_boot_img"].read_bytes(),
        "fw.elf": elf.read_bytes(),
    }
    image = write_sd_image(out / "sd.img", files, size_mib=size_mib)
    u_boot_elf = out / "u-boot.elf"
    shutil.copyfile(ub["u_boot_elf"], u_boot_elf)
    return image, u_boot_elf


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    boards = sorted(UBOOT_BOARDS)
    sd = sub.add_parser("sdcard", help="write OUT/sd.img and OUT/u-boot.elf for a board")
    jt = sub.add_parser("jtag", help="write an OpenOCD script: the SPL to OCM, then fw.elf")
    for q in (sd, jt):
        q.add_argument("--board", required=True, help=f"the board: {', '.join(boards)}")
        q.add_argument(
            "--build",
            type=Path,
            required=True,
            help="a `codegen build` or `codegen firmware` --out",
        )
        q.add_argument("--out", type=Path, required=True, help="output directory")
    sd.add_argument("--size-mib", type=int, default=64, help="image size (default 64 MiB)")


def run(args: argparse.Namespace) -> int:
    if args.action == "sdcard":
        image, u_boot_elf = sdcard(args.board, args.build, args.out, args.size_mib)
        print(f"{image}  (write it to a card: dd if={image} of=/dev/sdX bs=4M conv=fsync)")
        print(f"{u_boot_elf}  (U-Boot proper: QEMU -kernel, or JTAG)")
        mem = board(args.board).ddr_mib
        uart_args = "-serial null -serial tcp:127.0.0.1:PORT,server=on,wait=on"
        print(
            "in QEMU: "
            + shlex.join(["qemu-system-arm", "-M", "xilinx-zynq-a9", "-nographic", "-m", str(mem)])
            + f" -kernel {u_boot_elf} -drive if=sd,format=raw,file={image} {uart_args}"
        )
        return 0
    elf = firmware_of(args.build, args.board)
    ub = build_uboot(args.board)
    args.out.mkdir(parents=True, exist_ok=True)
    script = write_jtag_script(args.out / "boot.cfg", ub["spl_bin"], elf, include_target=True)
    print(f"{script}  (openocd -f <your adapter cfg> -f {script} -c 'elatta_boot; shutdown')")
    return 0
