"""`codegen firmware`: build the bare-metal runtime ELF for the Zynq-7020 (docs/architecture.md §5,
docs/targets.md §2).

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
from codegen.target.boards import BOARDS, DEFAULT_BOARD, Board, get_board
from codegen.target.toolchain import ARM_CFLAGS, ARM_LDFLAGS, find_tool, run_tool, section_sizes

HELP = "build the bare-metal runtime firmware (ELF) for the Zynq-7020 Cortex-A9"

UART_BASES = {0: 0xE0000000, 1: 0xE0001000}  # UG585 Table 4-6
MAX_PAYLOAD_RANGE = (256, 8192)  # INFO's fixed part, board and link blocks take 188 bytes
BAUD_MAX_ERROR = 0.02  # a UART tolerates a few per cent of mismatch; keep under 2 %
# The standard rates a session may switch to (docs/protocol.md, "Rate switch"): Linux termios
# names each (B115200 .. B3000000, termios(3)); the table of a build holds those its UART
# reference clock reaches within BAUD_MAX_ERROR, at most 8 (INFO's link block).
STANDARD_RATES = (115_200, 230_400, 460_800, 921_600, 1_000_000, 1_500_000, 2_000_000, 3_000_000)
# The receive interrupt's ring (docs/protocol.md, "Windowed link"): bytes that arrive while the
# device computes or transmits; the host keeps at most this many unacknowledged bytes in flight.
RX_RING_RANGE = (1024, 32768)
DEFAULT_RX_RING = 8192


@dataclass(frozen=True)
class UartDivisors:
    index: int
    base: int
    baud: int
    ref_hz: int
    cd: int
    bdiv: int

    @property
    def actual_baud(self) -> float:
        return self.ref_hz / (self.cd * (self.bdiv + 1))

    @property
    def error(self) -> float:
        return abs(self.actual_baud - self.baud) / self.baud

    def template_vars(self) -> dict[str, object]:
        return {
            "index": self.index,
            "base_hex": f"0x{self.base:08X}",
            "baud": self.baud,
            "ref_hz": self.ref_hz,
            "cd": self.cd,
            "bdiv": self.bdiv,
            "actual_baud_text": f"{self.actual_baud:.1f}",
            "error_text": f"{100 * self.error:.3f} %",
        }


def uart_divisors(uart: int, baud: int, ref_hz: int) -> UartDivisors:
    """Best (CD, BDIV) for baud = ref / (CD · (BDIV + 1)), CD in 2..65535, BDIV in 4..255
    (UG585 §19.2.3; CD 0 disables and 1 bypasses the generator)."""
    if uart not in UART_BASES:
        raise ConfigError(f"uart={uart!r}: the Zynq-7000 has UART0 and UART1; use 0 or 1")
    if not 300 <= baud <= 3_000_000:
        raise ConfigError(f"baud={baud!r}: supported range is 300..3000000 bit/s")
    if not 1_000_000 <= ref_hz <= 200_000_000:
        raise ConfigError(f"uart_ref_hz={ref_hz!r}: expected 1 MHz..200 MHz (UG585 §25.6)")
    best: tuple[float, int, int] | None = None
    for bdiv in range(4, 256):
        cd = round(ref_hz / (baud * (bdiv + 1)))
        if not 2 <= cd <= 65535:
            continue
        err = abs(ref_hz / (cd * (bdiv + 1)) - baud) / baud
        if best is None or err < best[0]:
            best = (err, cd, bdiv)
    if best is None or best[0] > BAUD_MAX_ERROR:
        raise ConfigError(
            f"baud={baud}: no divisor pair reaches it within {100 * BAUD_MAX_ERROR:.0f} % "
            f"from uart_ref_hz={ref_hz}"
        )
    return UartDivisors(uart, UART_BASES[uart], baud, ref_hz, best[1], best[2])


def uart_rates(uart: int, ref_hz: int, build_baud: int) -> tuple[UartDivisors, ...]:
    """The rates BAUD may ask for: the build's own, then every standard rate the reference clock
    reaches within BAUD_MAX_ERROR (one divisor search, `uart_divisors`, for every preset)."""
    out = [uart_divisors(uart, build_baud, ref_hz)]
    for rate in STANDARD_RATES:
        if rate == build_baud:
            continue
        try:
            out.append(uart_divisors(uart, rate, ref_hz))
        except ConfigError:
            continue
    return tuple(sorted(out, key=lambda d: d.baud)[:8])


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
        uart_divisors(self.uart, self.baud, self.uart_ref_hz)
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
        div = uart_divisors(self.config.uart, self.config.baud, self.config.uart_ref_hz)
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
    div = uart_divisors(cfg.uart, cfg.baud, cfg.uart_ref_hz)
    rates = uart_rates(cfg.uart, cfg.uart_ref_hz, cfg.baud)
    return (
        jinja_env()
        .get_template("fw_config.h.j2")
        .render(
            version=__version__,
            input_hash=input_hash,
            build_id=build_id,
            uart=div.template_vars(),
            rates=[d.template_vars() for d in rates],
            rate_table="{" + ", ".join(f"{{{d.baud}u, {d.cd}u, {d.bdiv}u}}" for d in rates) + "}",
            max_payload=cfg.max_payload,
            rx_ring=cfg.rx_ring,
            ack_every=cfg.rx_ring // 4,
            timer_hz=cfg.preset.timer_hz,
            ddr_bytes=cfg.preset.ddr_bytes,
            board=cfg.board,
        )
    )


def _input_hash(cfg: FirmwareConfig, sources: list[Path], extra_flags: tuple[str, ...] = ()) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(asdict(cfg), sort_keys=True).encode())
    h.update(" ".join(ARM_CFLAGS + ARM_LDFLAGS + extra_flags).encode())
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
    variant: sources.KernelVariant = sources.ARM_DEFAULT,
) -> FirmwareBuild:
    """Compile the runtime, plus (for `codegen build`) the generated model sources and the
    kernels they need: ``extra_sources`` are compiled after the runtime, ``extra_includes`` come
    first on the include path, ``extra_cflags`` (e.g. ``-D`` sizes) apply to every source,
    ``extra_ldflags`` go to the link (e.g. ``-Wl,--undefined=sym`` to keep an entry point that
    the runtime does not call yet), ``extra_libs`` after the sources, before ``-lgcc`` (e.g.
    ``-lm -lc`` for `codegen bench`'s float baseline); ``variant`` the kernels' operations
    (codegen/target/sources.py: NEON on the Cortex-A9 by default). All of them enter the
    hash."""
    cfg.validate()
    gcc = find_tool("arm-none-eabi-gcc")
    fw = firmware_dir()
    srcs = [fw / s for s in sources.RUNTIME] + [Path(s) for s in extra_sources]
    headers = (
        sorted(fw.glob("*.h"))
        + sorted((fw / sources.BOARD_DIR).glob("*.h"))
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
        *ARM_CFLAGS,
        *extra_cflags,
        f"-I{gen}",
        *(f"-I{d}" for d in extra_includes),
        *variant.compile_flags(fw),
        f"-I{fw}",
        f"-T{fw / sources.LINKER_SCRIPT}",
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
        "config": asdict(cfg),
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
    """--board and the UART options that override its preset (`codegen firmware`, `codegen
    build`)."""
    p.add_argument(
        "--board",
        metavar="B",
        help=f"board preset: {', '.join(BOARDS)} (codegen/target/boards.py: console UART, UART "
        f"reference clock, baud){where}",
    )
    p.add_argument(
        "--uart",
        type=int,
        choices=(0, 1),
        help="console UART, overrides the board's: 0 (0xE0000000, QEMU's first -serial) or 1 "
        "(0xE0001000)",
    )
    p.add_argument("--baud", type=int, help="baud rate, overrides the board's (115200)")
    p.add_argument(
        "--uart-ref-hz",
        type=int,
        help="UART reference clock of the PS design in Hz, overrides the board's",
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
        args.board or DEFAULT_BOARD,
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
    print(format_size_table(build))
    return 0
