"""The SD card image `codegen board sdcard` writes for a Zybo Z7-20, booted exactly as written:
QEMU runs U-Boot proper (OUT/u-boot.elf) with OUT/sd.img as its SD card and the board's console
UART (UART1) on a socket; `codegen run --port socket://...` starts at t = 0, before U-Boot has
printed anything, and streams 200 samples bit-exactly in features mode and in audio mode.

QEMU cannot run the SPL of BOOT.BIN (no DDR controller model), so U-Boot proper starts with
-kernel; everything after it, the keyed autoboot, `load mmc 0:1`, `bootelf -p` and the firmware,
is what a board runs. U-Boot is built by tools/uboot.sh from Debian's source (minutes, cached)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from elatta_host.qemu import free_port, qemu_command, spawn
from repopaths import ROOT

from codegen.target.boards import board

pytestmark = [pytest.mark.slow, pytest.mark.qemu]

BOARD = "zybo-z7-20"
SAMPLES = 200


@pytest.fixture(scope="module")
def image(
    kws_build: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """The default model built for the board, and the image's directory (sd.img, u-boot.elf)."""
    from codegen.pipeline.build import build

    _, data = kws_build
    out = tmp_path_factory.mktemp("boardbuild")
    build(ROOT / "models/default/model.pt", ROOT / "models/default/basis.npz",
          ROOT / "configs/default.toml", out, data_dir=data, board=BOARD)  # fmt: skip
    facts = json.loads((out / "firmware.json").read_text())["config"]
    assert (facts["uart"], facts["uart_ref_hz"]) == (1, 100_000_000)  # the Zybo Z7's console
    sd = tmp_path_factory.mktemp("sd")
    r = subprocess.run(
        [sys.executable, "-m", "codegen", "board", "sdcard", "--board", BOARD, "--build", str(out),
         "--out", str(sd)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-4000:]
    assert (sd / "sd.img").is_file() and (sd / "u-boot.elf").is_file()
    return out, sd


def boot(sd_dir: Path) -> tuple[subprocess.Popen[bytes], int]:
    """QEMU running U-Boot proper with the image as its SD card, UART1 on a fresh port."""
    port = free_port()
    cmd = qemu_command(
        sd_dir / "u-boot.elf",
        port,
        uart=board(BOARD).console_uart,
        icount=False,
        extra_args=(
            "-m", str(board(BOARD).ddr_mib), "-drive", f"if=sd,format=raw,file={sd_dir / 'sd.img'}"
        ),
    )  # fmt: skip
    return spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL), port


def test_device_info_reads_back_mmu_and_caches(image: tuple[Path, Path]) -> None:
    """What the firmware reads back at run time after U-Boot handed over: SCTLR's MMU, caches and
    branch prediction on; no PL310 under QEMU (a board reports it on)."""
    qemu, port = boot(image[1])
    try:
        r = subprocess.run(
            [sys.executable, "-m", "codegen", "device", "info", "--port",
             f"socket://127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        qemu.kill()
        qemu.communicate()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "MMU on, D-cache on, I-cache on, branch prediction on" in r.stdout, r.stdout
    assert "absent" in r.stdout.split("l2 cache", 1)[1].splitlines()[0], r.stdout
    assert "board          zybo-z7-20" in r.stdout, r.stdout


@pytest.mark.parametrize("input_kind", ["features", "pcm"])
def test_run_through_uboot_from_t0(
    image: tuple[Path, Path], kws_build: tuple[Path, Path], tmp_path: Path, input_kind: str
) -> None:
    build_dir, sd_dir = image
    data = kws_build[1]
    qemu, port = boot(sd_dir)
    report = tmp_path / "report"
    try:
        run = subprocess.run(
            [sys.executable, "-m", "codegen", "run", "--build", str(build_dir), "--data",
             str(data), "--port", f"socket://127.0.0.1:{port}", "--mode", "strict", "--limit",
             str(SAMPLES), "--input", input_kind, "--report", str(report), "--no-progress"],
            capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
    finally:
        qemu.kill()
        qemu.communicate()
    assert run.returncode == 0, run.stderr[-4000:]
    rep = json.loads((report / "report.json").read_text())
    assert rep["bit_exact"]["compared"] == SAMPLES
    assert rep["bit_exact"]["mismatches"] == 0


def test_board_check_on_the_sd_image(
    image: tuple[Path, Path], kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """`codegen board check` on the SD image booted in QEMU: every check prints a measured value
    (the DDR walk over the Zybo Z7's 1 GiB less the firmware's 16 MiB, the timer's rate, every
    rate of the table up to 921,600, a bit-exact run), and the checks QEMU cannot show are N/A
    with the reason."""
    build_dir, sd_dir = image
    qemu, port = boot(sd_dir)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "codegen", "board", "check", "--port",
             f"socket://127.0.0.1:{port}", "--build", str(build_dir), "--data",
             str(kws_build[1]), "--limit", "10", "--seconds", "2", "--report",
             str(tmp_path / "run")],
            capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
    finally:
        qemu.kill()
        qemu.communicate()
    out = r.stdout
    assert r.returncode == 0, out + r.stderr[-3000:]
    rows = [ln for ln in out.splitlines() if ln and not ln.startswith(" ")][2:-1]
    names = [re.match(r"(uart \d+|\S+(?: \S+)?)\s+(PASS|FAIL|WARN|N/A)\s+(.+)", ln) for ln in rows]
    assert all(names), rows
    got = {m.group(1): (m.group(2), m.group(3)) for m in names if m}
    assert got["firmware"][0] == "PASS" and "for zybo-z7-20, UART1" in got["firmware"][1]
    assert got["mmu/caches"][0] == "PASS"
    assert "MMU on, D-cache on, I-cache on, branch prediction on" in got["mmu/caches"][1]
    assert got["smp"][0] == "N/A" and got["l2 cache"][0] == "N/A"
    status, timer = got["global timer"]
    assert status == "N/A" and re.match(r"\d+\.\d{3} MHz over \d", timer)
    assert got["ddr walk"][0] == "PASS"
    assert got["ddr walk"][1].startswith("1008 MiB at 0x01000000..0x40000000")
    assert "0 words differ" in got["ddr walk"][1]
    rates = [k for k in got if k.startswith("uart ")]
    assert rates == ["uart 115200", "uart 230400", "uart 460800", "uart 921600"]
    assert all("bit-exact" in got[k][1] and "reverts 0" in got[k][1] for k in rates)
    assert got["bit-exact run"][0] == "PASS"
    rep = json.loads((tmp_path / "run" / "report.json").read_text())
    compared = rep["bit_exact"]["compared"]
    assert compared >= 10 and rep["bit_exact"]["mismatches"] == 0
    assert got["bit-exact run"][1].startswith(f"{compared} samples (strict), 0 mismatches")
