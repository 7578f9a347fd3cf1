"""`codegen firmware`: build the bare-metal runtime ELF for a board preset and its core
(codegen/target/boards.py, cores.py; docs/architecture.md §5, docs/targets.md §2).

Python decides every value (UART divisors, build id); ``templates/fw_config.h.j2`` only formats
them; arm-none-eabi-gcc compiles ``firmware/`` with the generated header.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from codegen.base.errors import ConfigError
from codegen.base.resources import firmware_dir, jinja_env
from codegen.base.version import __version__
from codegen.target import sources
from codegen.target.boards import BOARDS, DEFAULT_BOARD, Board, get_board, target_board
from codegen.target.cores import CORES
from codegen.target.toolchain import ARM_LDFLAGS, find_tool, run_tool, section_sizes
from codegen.target.uarts import UartDivisors

HELP = "build the bare-metal runtime firmware (ELF) for a target (default: the Zynq-7020 Cortex-A9)"

MAX_PAYLOAD_RANGE = (256, 8192)  # INFO's fixed part, board and link blocks take 188 bytes
# The receive interrupt's ring (docs/protocol.md, "Windowed link"): bytes that arrive while the
# device computes or transmits; the host keeps at most this many unacknowledged bytes in flight.
RX_RING_RANGE = (1024, 32768)
DEFAULT_RX_RING = 8192


def uart_divisors(uart: int, baud: int, ref_hz: int, board: str = DEFAULT_BOARD) -> UartDivisors:
    """The console UART's register base and divisors for ``baud`` from ``ref_hz`` on ``board``'s
    UART driver (codegen/target/uarts.py); ConfigError naming a value it cannot take."""
    return get_board(board).folder.uart.divisors(uart, baud, ref_hz)


def uart_rates(
    uart: int, ref_hz: int, build_baud: int, board: str = DEFAULT_BOARD
) -> tuple[UartDivisors, ...]:
    """The rates BAUD may ask for on ``board``: the build's own and those its driver offers."""
    return get_board(board).folder.uart.rates(uart, ref_hz, build_baud)


@dataclass(frozen=True)
class FirmwareConfig:
    """What a firmware build is for. ``board`` names a preset (codegen/target/boards.py);
    ``uart``, ``baud`` and ``uart_ref_hz`` are the values the build uses: the preset's, unless
    overridden (`from_board`)."""

    uart: int = 0
    baud: int = 115_200
    uart_ref_hz: int = 100_000_000  # the "qemu" preset's UART reference clock
    max_payload: int = 2048
    board: str = DEFAULT_BOARD
    rx_ring: int = DEFAULT_RX_RING

    @classmethod
    def from_board(
        cls,
        board: str = DEFAULT_BOARD,
        *,
        uart: int | None = None,
        baud: int | None = None,
        uart_ref_hz: int | None = None,
        max_payload: int = 2048,
        notes: list[str] | None = None,
    ) -> FirmwareConfig:
        """The preset's UART, clock and baud rate; an explicit value that differs from the
        preset's overrides it, and ``notes`` gets one line saying so."""
        preset = get_board(board)
        chosen = {"uart": uart, "uart_ref_hz": uart_ref_hz, "baud": baud}
        values: dict[str, int] = {}
        for key, value in chosen.items():
            own = int(getattr(preset, key))
            values[key] = own if value is None else value
            if value is not None and value != own and notes is not None:
                notes.append(f"{key}={value} overrides the {board} preset's {key}={own}")
        return cls(
            uart=values["uart"],
            baud=values["baud"],
            uart_ref_hz=values["uart_ref_hz"],
            max_payload=max_payload,
            board=board,
        )

    @property
    def preset(self) -> Board:
        return get_board(self.board)

    def validate(self) -> None:
        lo, hi = MAX_PAYLOAD_RANGE
        if not lo <= self.max_payload <= hi:
            raise ConfigError(
                f"max_payload={self.max_payload!r}: allowed range is {lo}..{hi} bytes"
            )
        if self.board not in BOARDS:
            get_board(self.board)
        uart_divisors(self.uart, self.baud, self.uart_ref_hz, self.board)
        lo, hi = RX_RING_RANGE
        if not lo <= self.rx_ring <= hi or self.rx_ring & (self.rx_ring - 1):
            raise ConfigError(
                f"rx_ring={self.rx_ring!r}: allowed are powers of two in {lo}..{hi} bytes"
            )


@dataclass(frozen=True)
class FirmwareBuild:
    elf: Path
    config_header: Path
    build_id: str
    sections: dict[str, tuple[int, int]]
    compile_command: str
    config: FirmwareConfig = FirmwareConfig()

    def console(self) -> dict[str, object]:
        """The board and console UART the build is for (manifests; `codegen run --qemu` serves
        this UART)."""
        c = self.config
        div = uart_divisors(c.uart, c.baud, c.uart_ref_hz, c.board)
        return {
            "board": self.config.board,
            "uart": div.index,
            "baud": div.baud,
            "uart_ref_hz": div.ref_hz,
            "uart_cd": div.cd,
            "uart_bdiv": div.bdiv,
            "actual_baud": round(div.actual_baud, 1),
        }

    @property
    def static_ram(self) -> int:
        """.data + .bss + reserved stacks, bytes (the linker ASSERTs this <= 64 KiB)."""
        return sum(self.sections.get(s, (0, 0))[0] for s in (".data", ".bss", ".stack"))


def render_config(cfg: FirmwareConfig, build_id: str, input_hash: str) -> str:
    cfg.validate()
    driver = cfg.preset.folder.uart
    div = driver.divisors(cfg.uart, cfg.baud, cfg.uart_ref_hz)
    rates = driver.rates(cfg.uart, cfg.uart_ref_hz, cfg.baud)
    return (
        jinja_env()
        .get_template("fw_config.h.j2")
        .render(
            version=__version__,
            input_hash=input_hash,
            build_id=build_id,
            uart=div.template_vars(),
            uart_what=driver.what,
            uart_defines=driver.defines(div),
            rates=[d.template_vars() for d in rates],
            rate_table="{" + ", ".join(f"{{{d.baud}u, {d.cd}u, {d.bdiv}u}}" for d in rates) + "}",
            max_payload=cfg.max_payload,
            rx_ring=cfg.rx_ring,
            ack_every=cfg.rx_ring // 4,
            timer_hz=cfg.preset.timer_hz,
            timer=cfg.preset.core.timer,
            ddr_bytes=cfg.preset.ddr_bytes,
            board=cfg.board,
            core=cfg.preset.core.name,
        )
    )


def _input_hash(cfg: FirmwareConfig, sources: list[Path], extra_flags: tuple[str, ...] = ()) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(asdict(cfg), sort_keys=True).encode())
    h.update(" ".join(cfg.preset.core.cflags + ARM_LDFLAGS + extra_flags).encode())
    for src in sorted(sources, key=lambda p: p.name):
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    return h.hexdigest()


def build_firmware(
    cfg: FirmwareConfig,
    out_dir: Path,
    extra_sources: Sequence[Path] = (),
    extra_includes: Sequence[Path] = (),
    extra_ldflags: Sequence[str] = (),
    extra_cflags: Sequence[str] = (),
    extra_libs: Sequence[str] = (),
    variant: sources.KernelVariant | None = None,
) -> FirmwareBuild:
    """Compile the runtime, plus (for `codegen build`) the generated model sources and the
    kernels they need: ``extra_sources`` are compiled after the runtime, ``extra_includes`` come
    first on the include path, ``extra_cflags`` (e.g. ``-D`` sizes) apply to every source,
    ``extra_ldflags`` go to the link (e.g. ``-Wl,--undefined=sym`` to keep an entry point that
    the runtime does not call yet), ``extra_libs`` after the sources, before ``-lgcc`` (e.g.
    ``-lm -lc`` for `codegen bench`'s float baseline); ``variant`` the kernels' operations
    (codegen/target/sources.py; None: the core's, NEON on the Cortex-A9). The board preset
    (``cfg.board``) chooses the board folder and the core (codegen/target/cores.py): its
    sources, linker script and compiler flags. All of them enter the hash."""
    cfg.validate()
    folder = cfg.preset.folder
    core = folder.core
    variant = core.kernels if variant is None else variant
    gcc = find_tool("arm-none-eabi-gcc")
    fw = firmware_dir()
    srcs = [fw / s for s in folder.runtime] + [Path(s) for s in extra_sources]
    headers = (
        sorted(fw.glob("*.h"))
        + sorted((fw / folder.path).glob("*.h"))
        + sorted((fw / variant.folder).glob("*.h"))
        + sorted(h for d in extra_includes for h in Path(d).glob("*.h"))
    )
    input_hash = _input_hash(
        cfg, srcs + headers, (*variant.cflags, *extra_cflags, *extra_ldflags, *extra_libs)
    )
    build_id = f"fw-{input_hash[:16]}"
    out_dir.mkdir(parents=True, exist_ok=True)
    gen = out_dir / "include"
    gen.mkdir(exist_ok=True)
    header = gen / "fw_config.h"
    header.write_text(render_config(cfg, build_id, input_hash))
    elf = out_dir / "fw.elf"
    cmd = [
        gcc,
        *core.cflags,
        *extra_cflags,
        f"-I{gen}",
        *(f"-I{d}" for d in extra_includes),
        *variant.compile_flags(fw),
        f"-I{fw}",
        f"-T{fw / folder.path / folder.linker_script}",
        *ARM_LDFLAGS,
        *extra_ldflags,
        f"-Wl,-Map={out_dir / 'fw.map'}",
        "-o",
        str(elf),
        *map(str, srcs),
        *extra_libs,
        "-lgcc",
    ]
    run_tool(cmd, what="arm-none-eabi-gcc")
    build = FirmwareBuild(elf, header, build_id, section_sizes(elf), shlex.join(cmd), cfg)
    manifest = {
        "build_id": build_id,
        "inputs_sha256": input_hash,
        # the ELF itself: a host checks it before booting it (a copied, truncated or rebuilt
        # fw.elf is named, not met as a device that does not answer)
        "elf_sha256": hashlib.sha256(elf.read_bytes()).hexdigest(),
        "config": asdict(cfg),
        "target": {
            "core": core.name,
            "board_folder": folder.path,
            "qemu_machine": core.qemu_machine,
            "timer": core.timer,
            "qemu_timer_hz": core.qemu_timer_hz,
            "generated_asm": list(core.asm),
        },
        "kernels": variant.name,
        "console": build.console(),
        "sections": {k: {"size": v[0], "addr": v[1]} for k, v in build.sections.items()},
        "static_ram_bytes": build.static_ram,
        "compile_command": build.compile_command,
    }
    (out_dir / "firmware.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return build


def format_size_table(build: FirmwareBuild) -> str:
    rows = [f"{'section':<12} {'bytes':>8}  address"]
    for name, (size, addr) in build.sections.items():
        if name.startswith((".debug", ".ARM.attributes")):
            continue
        rows.append(f"{name:<12} {size:>8}  0x{addr:08x}")
    rows.append(f"{'static RAM':<12} {build.static_ram:>8}  (.data + .bss + .stack; budget 65536)")
    return "\n".join(rows)


def add_board_arguments(p: argparse.ArgumentParser, *, where: str = "") -> None:
    """--target, --board and the UART options that override its preset (`codegen firmware`,
    `codegen build`)."""
    p.add_argument(
        "--target",
        metavar="CORE",
        choices=tuple(CORES),
        help=f"core: {', '.join(CORES)} (codegen/target/cores.py); builds for its default board "
        "unless --board names one of its boards",
    )
    p.add_argument(
        "--board",
        metavar="B",
        help=f"board preset: {', '.join(BOARDS)} (codegen/target/boards.py: board folder and "
        f"core, console UART, UART reference clock, baud){where}",
    )
    p.add_argument(
        "--uart",
        type=int,
        help="console UART, overrides the board's (Zynq-7000: 0 at 0xE0000000, QEMU's first "
        "-serial, or 1 at 0xE0001000)",
    )
    p.add_argument("--baud", type=int, help="baud rate, overrides the board's (115200)")
    p.add_argument(
        "--uart-ref-hz",
        type=int,
        help="UART reference clock of the board in Hz, overrides the board's",
    )


def board_overrides(args: argparse.Namespace) -> dict[str, int]:
    """The UART options given on the command line (None: not given)."""
    return {
        k: v
        for k, v in (("uart", args.uart), ("baud", args.baud), ("uart_ref_hz", args.uart_ref_hz))
        if v is not None
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("build/firmware"), help="output directory")
    add_board_arguments(p, where=f"; default {DEFAULT_BOARD}")
    p.add_argument(
        "--max-payload",
        type=int,
        default=2048,
        help=f"largest frame payload in bytes ({MAX_PAYLOAD_RANGE[0]}..{MAX_PAYLOAD_RANGE[1]}, "
        "default 2048)",
    )


def run(args: argparse.Namespace) -> int:
    notes: list[str] = []
    cfg = FirmwareConfig.from_board(
        target_board(args.board, args.target),
        max_payload=args.max_payload,
        notes=notes,
        **board_overrides(args),
    )
    for note in notes:
        print(f"codegen firmware: note: {note}", file=sys.stderr)
    build = build_firmware(cfg, args.out)
    print(f"{build.elf}  ({build.build_id})")
    div = build.console()
    print(
        f"board {cfg.board}: UART{div['uart']}, {div['baud']} baud from "
        f"{cfg.uart_ref_hz / 1e6:g} MHz (CD {div['uart_cd']}, BDIV {div['uart_bdiv']}: "
        f"{div['actual_baud']} baud)"
    )
    core = cfg.preset.core
    print(f"core {core.name}: {core.what}; kernels {core.kernels.name}; -M {core.qemu_machine}")
    print(format_size_table(build))
    return 0
