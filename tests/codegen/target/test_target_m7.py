"""The second target, a Cortex-M7 on QEMU's mps2-an500 (docs/targets.md "Targets"), and the
registry it is added through (codegen/target/cores.py).

Pure Python: every board preset, folder and core hang together, and the CMSDK UART's divisor.
Cross-compiled: the M7 runtime links Thumb code at the AN500's addresses, with no NEON and its
linker checks. QEMU: the bare runtime answers HELLO and ECHO; a probe shows the CMSDK timer
counts one tick per 40 guest instructions under -icount shift=0, the same on every run; and the
acceptance test: the default model built for cortex-m7 (`codegen build --target cortex-m7`)
streams 200 feature samples, every RESULT field equal to the Python integer reference, and a few
clips of audio through the device's front end the same way."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from repopaths import ROOT

from codegen.base.errors import ConfigError
from codegen.base.resources import firmware_dir
from codegen.target.boards import BOARDS, boards_of, get_board, target_board
from codegen.target.cores import CORES, FOLDERS, get_core
from codegen.target.firmware import FirmwareBuild, FirmwareConfig, build_firmware, uart_divisors
from codegen.target.toolchain import find_tool

M7 = "cortex-m7"
BOARD = "mps2-an500"


def test_registry_hangs_together() -> None:
    """Every preset's folder is registered and on disk with its sources and linker script; every
    core's default board runs it; the runtime puts the board's start-up code first."""
    fw = firmware_dir()
    for name, b in BOARDS.items():
        assert b.folder is FOLDERS[b.folder_name], name
        for src in (*b.folder.runtime, f"{b.folder.path}/{b.folder.linker_script}"):
            assert (fw / src).is_file(), (name, src)
        assert b.folder.runtime[0] == f"{b.folder.path}/startup.S"
    for name, core in CORES.items():
        assert get_board(core.default_board).core == core, name
        assert core.default_board in boards_of(core)
        assert core.cflags[: len(core.cpu_flags)] == core.cpu_flags
    m7 = get_core(M7)
    assert m7.isa == "T32" and m7.kernels.name == "ref" and m7.asm == ()
    assert not any("neon" in f for f in m7.cpu_flags) and "-mthumb" in m7.cpu_flags
    assert (m7.qemu_machine, m7.qemu_timer_hz, m7.instructions_per_tick) == (
        "mps2-an500",
        25_000_000,
        40.0,
    )


def test_target_and_board_choose_each_other() -> None:
    assert target_board(None, M7) == BOARD
    assert target_board(BOARD, None) == BOARD
    assert target_board(None, None) == "qemu"
    assert target_board("zedboard", "cortex-a9") == "zedboard"
    with pytest.raises(ConfigError, match="board='zedboard' runs a cortex-a9, not target="):
        target_board("zedboard", M7)
    with pytest.raises(ConfigError, match="target='cortex-m3': unknown core; allowed cores are"):
        target_board(None, "cortex-m3")


def test_target_core_in_config() -> None:
    """[target] core = "cortex-m7" takes the core's default board and its UART settings; the
    firmware a build of it links is that board's; a board of another core is refused."""
    from codegen.frontend.reader import parse_config
    from codegen.pipeline.build import firmware_config

    cfg = parse_config({"target": {"core": M7}})
    assert (cfg.target.core, cfg.target.board, cfg.target.uart_ref_hz) == (M7, "", 25_000_000)
    fw = firmware_config(cfg.target, None, {}, None)
    assert fw.board == BOARD and fw.preset.core.name == M7
    with pytest.raises(ConfigError, match="board='pynq-z2' runs a cortex-a9, not target="):
        parse_config({"target": {"core": M7, "board": "pynq-z2"}}, "x.toml")


def test_cmsdk_uart_divisor() -> None:
    """baud = PCLK / BAUDDIV (DDI 0479C): 25 MHz / 115,200 -> 217 (115,207 bit/s); BAUDDIV below
    16 or a second UART index QEMU does not connect are refused by value."""
    d = uart_divisors(0, 115_200, 25_000_000, BOARD)
    assert (d.base, d.cd, d.bdiv) == (0x40004000, 217, 0)
    assert abs(d.actual_baud - 115_207.4) < 0.1
    with pytest.raises(ConfigError, match="BAUDDIV"):
        uart_divisors(0, 3_000_000, 25_000_000, BOARD)
    with pytest.raises(ConfigError, match="uart=5"):
        uart_divisors(5, 115_200, 25_000_000, BOARD)


@pytest.fixture(scope="module")
def m7_runtime(tmp_path_factory: pytest.TempPathFactory) -> FirmwareBuild:
    return build_firmware(FirmwareConfig.from_board(BOARD), tmp_path_factory.mktemp("m7fw"))


def test_m7_runtime_links_thumb_at_the_an500_addresses(m7_runtime: FirmwareBuild) -> None:
    s = m7_runtime.sections
    assert s[".text"][1] == 0x00000000  # the vector table at VTOR's reset value
    assert s[".data"][1] >= 0x20000000 and s[".bss"][1] >= 0x20000000
    assert m7_runtime.static_ram <= 64 * 1024
    header = m7_runtime.config_header.read_text()
    assert '#define FW_BOARD_NAME "mps2-an500"' in header
    assert "#define FW_UART_BASE 0x40004000u" in header and "#define FW_UART_BAUDDIV 217u" in header
    dis = subprocess.run(
        [find_tool("arm-none-eabi-objdump"), "-d", str(m7_runtime.elf)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # Thumb-2 only: no NEON register (q0..q15) anywhere
    assert "q0" not in dis.replace("eq0", "") and "vld1" not in dis
    words = m7_runtime.elf.read_bytes()
    assert words[:4] == b"\x7fELF"


def test_m7_linker_assert_guards_ram_budget(m7_runtime: FirmwareBuild, tmp_path: Path) -> None:
    cmd = m7_runtime.compile_command.split()
    cmd = [c.replace(str(m7_runtime.elf), str(tmp_path / "big.elf")) for c in cmd]
    cmd.insert(1, "-Wl,--defsym=STACK_SIZE=0x11800")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode != 0 and "exceed the RAM budget" in proc.stderr


@pytest.mark.qemu
def test_m7_runtime_hello_and_echo(m7_runtime: FirmwareBuild) -> None:
    """INFO names the board and the stop-and-wait window (no receive ring), reads the divisor
    back, lists the build's rate only; random payloads up to the largest come back whole."""
    from elatta_host.device import Device
    from elatta_host.qemu import Qemu, qemu_machine

    assert qemu_machine(m7_runtime.elf) == "mps2-an500"
    with Qemu(m7_runtime.elf, icount=False, link_timeout=5.0) as link:
        dev = Device(link)
        info = dev.hello(sync_timeout=60.0)
        assert info.board is not None and info.link is not None
        assert info.board.name == BOARD and info.board.uart_cd == 217
        assert info.link.rx_ring == 0 and info.link.rates == (115_200,)
        text = info.describe()
        assert "ccr" in text and "l2 cache" not in text
        rng = random.Random(7)
        for _ in range(30):
            payload = rng.randbytes(rng.randint(0, info.max_payload))
            dev.echo(payload)
        assert dev.hello().frames_err == 0


@pytest.mark.qemu
def test_m7_timer_counts_instructions_deterministically(tmp_path: Path) -> None:
    """A probe times a loop of a known instruction count twice per run, in two runs: under
    -icount shift=0 the CMSDK timer gives instructions / 40 ticks (+-1 for the phase), and the
    same ticks in both runs."""
    from codegen.target.firmware import render_config
    from codegen.target.qemu_probe import link_probe, qemu_probe_lines

    inc = tmp_path / "include"
    inc.mkdir()
    cfg = FirmwareConfig.from_board(BOARD)
    (inc / "fw_config.h").write_text(render_config(cfg, "fw-probe", "0" * 64))
    main = tmp_path / "main.c"
    # movw, movt, then 100,000 iterations of 4 instructions (subs, nop, nop, bne): 400,002
    main.write_text(
        "#include <stdint.h>\n"
        '#include "fw_probe_print.h"\n'
        '#include "fw_timer.h"\n'
        "int main(void);\n"
        "static uint32_t spin(void)\n{\n"
        "    const uint32_t t0 = fw_timer_now32();\n"
        '    __asm__ volatile("movw r0, #0x86A0\\n movt r0, #1\\n"'
        '"1: subs r0, r0, #1\\n nop\\n nop\\n bne 1b"'
        ' ::: "r0", "cc");\n'
        "    return fw_timer_now32() - t0;\n}\n"
        "int main(void)\n{\n    fw_uart_init();\n    fw_timer_init();\n"
        "    put_s((int32_t)spin());\n    put_s((int32_t)spin());\n"
        '    fw_uart_write((const uint8_t *)"\\nEND\\n", 5u);\n    for (;;) {\n    }\n}\n'
    )
    elf = link_probe(tmp_path / "probe.elf", [main], includes=[inc], board=BOARD)
    runs = [qemu_probe_lines(elf, icount=True, board=BOARD) for _ in range(2)]
    ticks = [[int(v) for v in " ".join(r).split()] for r in runs]
    assert ticks[0] == ticks[1]
    for t in ticks[0]:
        assert abs(t - 400_000 / 40) <= 4, t


@pytest.fixture(scope="module")
def m7_build(kws_build: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`codegen build --target cortex-m7` of the default model on the tiny data set."""
    _, data = kws_build
    out = tmp_path_factory.mktemp("m7build")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codegen",
            "build",
            "--model",
            str(ROOT / "models/default/model.pt"),
            "--basis",
            str(ROOT / "models/default/basis.npz"),
            "--config",
            str(ROOT / "configs/default.toml"),
            "--data",
            str(data),
            "--out",
            str(out),
            "--target",
            M7,
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    # default.toml's [target] names the Zynq UART's 100 MHz clock: the M7 board's replaces it
    assert "--target cortex-m7 (board mps2-an500) replaces the config's [target]" in proc.stderr
    return out


@pytest.mark.qemu
def test_m7_build_records_its_target(m7_build: Path) -> None:
    import json

    fw = json.loads((m7_build / "firmware.json").read_text())
    assert fw["config"]["board"] == BOARD and fw["kernels"] == "ref"
    assert fw["target"]["core"] == M7 and fw["target"]["qemu_machine"] == "mps2-an500"
    assert "-mcpu=cortex-m7" in fw["compile_command"]


@pytest.mark.qemu
def test_m7_streams_200_feature_samples_bit_exact(
    m7_build: Path, kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """ACCEPTANCE: 200 feature samples (100 in strict ELaTTA, 100 in cmvn_select) through the
    device on QEMU mps2-an500, every RESULT field equal to the Python integer reference."""
    from elatta_host.plan import make_plan
    from elatta_host.run import DeviceSpec, execute
    from qemukit import check_complete

    _, data = kws_build
    plan = make_plan(m7_build, data, ("strict", "cmvn_select"), 100)
    assert plan.total == 200
    spec = DeviceSpec("m7", elf=m7_build / "fw.elf", icount=True, timeout=5.0)
    target = {"kind": "qemu", "machine": "mps2-an500", "icount": True}
    outcome = execute(plan, [spec], tmp_path, resume=False, target=target, progress=False)
    assert outcome.errors == ()
    check_complete(outcome.report, tmp_path, plan.total)
    assert outcome.report["ticks"]["encoder"]["median"] > 0


@pytest.mark.qemu
def test_m7_audio_mode_bit_exact(
    m7_build: Path, kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """The audio mode on the M7: PCM in chunks, the integer MFCC and one LSTM step per frame on
    the device, every RESULT field equal to the reference of the whole chain."""
    from elatta_host.plan import make_plan
    from elatta_host.run import DeviceSpec, execute

    _, data = kws_build
    plan = make_plan(m7_build, data, ("continual",), 3, input_kind="pcm")
    spec = DeviceSpec("m7", elf=m7_build / "fw.elf", icount=True, timeout=5.0)
    target = {"kind": "qemu", "machine": "mps2-an500", "icount": True}
    outcome = execute(
        plan, [spec], tmp_path, resume=False, target=target, progress=False, chunk=511
    )
    assert outcome.errors == ()
    assert outcome.report["bit_exact"] == {
        "compared": plan.total,
        "mismatches": 0,
        "fields": {},
        "first_mismatch": None,
    }
    assert outcome.report["ticks"]["frontend"]["median"] > 0
