"""The targets the firmware builds for, in one registry (docs/targets.md "Targets"): a `Core` (the
instruction set and compiler flags, the kernels' variant, the generated assembly it runs, the
QEMU machine that models it and the timer its ticks count) and the `BoardFolder` that runs it
(``firmware/board/<name>``: start-up code, UART driver, memory map, boot). The board presets of
codegen/target/boards.py each name their folder, and through it their core.

Everything that builds, boots or times firmware takes its target from here: the firmware build
and the probes (codegen/target/firmware.py, qemu_probe.py: the core's flags and kernels, the
folder's sources and linker script), QEMU (host/qemu.py), `codegen bench`, `codegen device`.
The generated C is the same for every core: its NEON assembly sits under ``#if ELT_NEON``,
which a core without NEON never compiles. Adding a target is one `Core`, one `BoardFolder` and
a board preset (docs/targets.md §7).
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.base.errors import ConfigError
from codegen.target import sources
from codegen.target.toolchain import COMMON_CFLAGS, FIRMWARE_CFLAGS
from codegen.target.uarts import CADENCE, CMSDK, UartDriver

# The generated assembly (codegen/emit/lstm_neon.py, codegen/emit/adapt_neon.py): A32 Advanced
# SIMD, so only a core with NEON in A32 state runs it; the generated C keeps it under ELT_NEON.
NEON_ASM = ("lstm_neon", "adapt_neon")


@dataclass(frozen=True)
class ControlRegister:
    """One of the core's system control registers that INFO's board block reads back (its first
    two words, firmware/fw_rt.h `fw_board_report_t`): its name and the bits `codegen device
    info` shows, each as (label, bit)."""

    name: str
    bits: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Core:
    """A CPU the firmware compiles for, and how QEMU runs and times it."""

    name: str
    what: str
    isa: str  # the instruction set the firmware is compiled to: "A32" or "T32"
    cpu_flags: tuple[str, ...]  # -mcpu, -mfpu, -mfloat-abi, the instruction set
    kernels: sources.KernelVariant  # the kernels' operations (firmware/kernels/<variant>)
    asm: tuple[str, ...]  # the generated assembly it runs (NEON_ASM or none)
    qemu_machine: str  # qemu-system-arm -M: the board QEMU models around the core
    timer: str  # what fw_timer_now counts on it
    qemu_timer_hz: int  # that timer's clock under QEMU, ticks per virtual second
    default_board: str  # the board preset `--target NAME` builds for (codegen/target/boards.py)
    # what INFO's board block's first two words are on this core
    control: tuple[ControlRegister, ControlRegister]

    @property
    def cflags(self) -> tuple[str, ...]:
        """Every flag a firmware translation unit compiles with, before the build's own."""
        return (*self.cpu_flags, *COMMON_CFLAGS, *FIRMWARE_CFLAGS)

    @property
    def instructions_per_tick(self) -> float:
        """Guest instructions per timer tick under ``-icount shift=0``, where one instruction
        takes one virtual nanosecond (QEMU docs/devel/tcg-icount.rst): 10 at 100 MHz."""
        return 1e9 / self.qemu_timer_hz


@dataclass(frozen=True)
class BoardFolder:
    """``firmware/board/<name>``: the start-up code, drivers and memory map of one board family,
    implementing the target interface (firmware/fw_uart.h, fw_timer.h, fw_rt.h, fw_board.h)."""

    name: str
    core: Core
    sources: tuple[str, ...]  # startup first, then the UART and timer drivers, then the rest
    linker_script: str
    uart: UartDriver
    boot: str  # how an image starts on it
    qemu_serials: int  # -serial arguments QEMU gets: UART i is the i-th
    l2: str | None  # the L2 cache controller the start-up code probes (INFO's board block)

    @property
    def path(self) -> str:
        return f"board/{self.name}"

    def files(self, names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(f"{self.path}/{n}" for n in names)

    @property
    def runtime(self) -> tuple[str, ...]:
        """The bare-metal runtime a firmware links, in link order: start-up, the main loop, the
        UART and timer drivers, frames and the protocol server, the portable runtime support,
        then the rest of the board (names under firmware/)."""
        own = self.files(self.sources)
        return (own[0], sources.MAIN, *own[1:3], *sources.LINK, sources.RT, *own[3:])

    @property
    def probe_runtime(self) -> tuple[str, ...]:
        """What a probe links besides its own sources: the board and the runtime support (the
        linker drops what a probe does not call, --gc-sections)."""
        own = self.files(self.sources)
        return (*own[:3], sources.RT, *own[3:])


# Cortex-A9 with NEON, hard-float ABI, ARM state (Zynq-7000, UG585 §3.1).
CORTEX_A9 = Core(
    name="cortex-a9",
    what="Arm Cortex-A9 (ARMv7-A) with NEON, A32 (Zynq-7000 PS, UG585 §3.1)",
    isa="A32",
    cpu_flags=("-mcpu=cortex-a9", "-mfpu=neon", "-mfloat-abi=hard", "-marm"),
    kernels=sources.NEON_A32,
    asm=NEON_ASM,
    qemu_machine="xilinx-zynq-a9",
    # the MPCore global timer (ARM DDI 0407 §4.3); QEMU's a9gtimer counts one tick per 10 ns of
    # virtual time (hw/timer/a9gtimer.c, a9_gtimer_get_conv)
    timer="Cortex-A9 global timer (ARM DDI 0407 §4.3)",
    qemu_timer_hz=100_000_000,
    default_board="qemu",
    control=(
        # CP15 SCTLR (ARM DDI 0406C B4.1.130) and ACTLR (Cortex-A9 TRM §4.3.10)
        ControlRegister(
            "sctlr", (("MMU", 0), ("D-cache", 2), ("I-cache", 12), ("branch prediction", 11))
        ),
        ControlRegister("actlr", (("SMP", 6),)),
    ),
)

# The Zynq-7000 PS (UG585): reset vectors, MMU and caches, stacks (startup.S, fw_mmu.c), the
# memory map (link.ld), the register map (zynq7000.h), the Cadence UART, the global timer, the
# GIC dispatch of the UART's receive interrupt, the platform of the protocol server.
ZYNQ7000 = BoardFolder(
    name="zynq7000",
    core=CORTEX_A9,
    sources=(
        "startup.S",
        "fw_uart.c",
        "fw_timer.c",
        "fw_platform.c",
        "fw_mmu.c",
        "fw_cache.c",
        "fw_irq.c",
        "fw_check.c",
    ),
    linker_script="link.ld",
    uart=CADENCE,
    boot="QEMU -kernel, U-Boot bootelf, or JTAG: the image runs from DDR at 0x00100000",
    qemu_serials=2,
    l2="PL310 at 0xF8F02000",
)

# Cortex-M7 with the double-precision FPv5 FPU, hard-float ABI, Thumb (the MPS2 AN500 image;
# QEMU's cortex-m7 model has that FPU, target/arm/cpu_tcg.c). No NEON: the plain-C kernels.
CORTEX_M7 = Core(
    name="cortex-m7",
    what="Arm Cortex-M7 (ARMv7E-M) with FPv5-D16, T32 (MPS2 AN500 image)",
    isa="T32",
    cpu_flags=("-mcpu=cortex-m7", "-mthumb", "-mfpu=fpv5-d16", "-mfloat-abi=hard"),
    kernels=sources.REF,
    asm=(),
    qemu_machine="mps2-an500",
    # CMSDK APB timer 0 on the AN500's 25 MHz PCLK (QEMU: SYSCLK_FRQ, hw/arm/mps2.c); why not
    # SysTick: firmware/board/mps2_an500/fw_timer.c
    timer="CMSDK APB timer 0 (ARM DDI 0479C)",
    qemu_timer_hz=25_000_000,
    default_board="mps2-an500",
    control=(
        # SCB CCR (ARM DDI 0403E B3.2.8: DC bit 16, IC bit 17) and ACTLR (its bits the core's)
        ControlRegister("ccr", (("D-cache", 16), ("I-cache", 17))),
        ControlRegister("actlr", ()),
    ),
)

# The MPS2 board with the AN500 image: the Armv7-M vector table and reset handler (startup.S),
# the memory map (link.ld: code in SSRAM1 at 0, data in SSRAM2/3 at 0x20000000), the register
# map (mps2_an500.h), the CMSDK UART, polled, and timer 0, the platform (fw_platform.c).
MPS2_AN500 = BoardFolder(
    name="mps2_an500",
    core=CORTEX_M7,
    sources=("startup.S", "fw_uart.c", "fw_timer.c", "fw_platform.c"),
    linker_script="link.ld",
    uart=CMSDK,
    boot="QEMU -kernel: the core resets from the vector table at 0 (VTOR's reset value)",
    qemu_serials=1,
    l2=None,
)

CORES: dict[str, Core] = {c.name: c for c in (CORTEX_A9, CORTEX_M7)}
FOLDERS: dict[str, BoardFolder] = {f.name: f for f in (ZYNQ7000, MPS2_AN500)}
DEFAULT_CORE = CORTEX_A9


def get_core(name: str) -> Core:
    """The core called ``name``; the error names the bad value and lists the cores."""
    try:
        return CORES[name]
    except KeyError:
        raise ConfigError(
            f"target={name!r}: unknown core; allowed cores are {', '.join(CORES)}"
        ) from None


def get_folder(name: str) -> BoardFolder:
    try:
        return FOLDERS[name]
    except KeyError:
        raise ConfigError(
            f"board folder {name!r}: unknown; allowed are {', '.join(FOLDERS)}"
        ) from None
