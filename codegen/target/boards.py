"""Board presets: every fact about a board the firmware build needs, in one place, each with its
primary source. A preset names its board folder (codegen/target/cores.py `BoardFolder`:
firmware/board/<folder>, its UART driver, memory map and boot), and through it its core; the
Zynq-7020 boards below are the Cortex-A9's.

A preset names the console UART (UART0 at 0xE0000000 or UART1 at 0xE0001000, UG585 Table 4-6),
the UART reference clock the board's PS design programs (UART_CLK_CTRL, UG585 Appendix B slcr:
IO PLL / DIVISOR; every board below runs the IO PLL at 33.333 MHz x 30 = 1000 MHz, IO_PLL_CTRL
PLL_FDIV = 0x1E in the same ps7_init_gpl.c), the DDR size, how U-Boot is built for it, the
USB-UART as the host sees it and the default baud rate.

U-Boot file names are those of U-Boot v2023.01 (Debian 2023.01+dfsg-2): its Zynq boards share
``configs/xilinx_zynq_virt_defconfig`` and select the board by ``DEVICE_TREE`` (one of that
defconfig's ``CONFIG_OF_LIST``).
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.base.errors import ConfigError
from codegen.target.cores import BoardFolder, Core, get_folder

MIB = 1 << 20


@dataclass(frozen=True)
class Board:
    name: str
    uart: int  # console UART index (its base: the folder's UART driver; Zynq-7000 0 or 1)
    uart_ref_hz: int  # UART_REF_CLK of the board's PS design
    ddr_bytes: int
    uboot_defconfig: str | None  # None: no U-Boot build for this board
    device_tree: str | None  # U-Boot DEVICE_TREE (arch/arm/dts/<name>.dts)
    usb_uart: str  # the console as a Linux host sees it
    # The global timer's clock, Hz: CPU_3x2x, half the CPU clock (UG585 §8.1: the APU timers run
    # at 1/2 of the CPU frequency); QEMU's a9gtimer counts one tick per 10 ns of virtual time
    # (hw/timer/a9gtimer.c, a9_gtimer_get_conv).
    timer_hz: int = 333_333_333
    baud: int = 115_200
    note: str = ""
    # The JTAG adapter OpenOCD drives for it (codegen/target/jtag.py ADAPTERS); None: no JTAG.
    jtag_adapter: str | None = None
    folder_name: str = "zynq7000"  # firmware/board/<folder_name> (codegen/target/cores.py)

    @property
    def folder(self) -> BoardFolder:
        return get_folder(self.folder_name)

    @property
    def core(self) -> Core:
        return self.folder.core

    @property
    def console_uart(self) -> int:
        """The UART U-Boot and the firmware print on (the board's USB-UART)."""
        return self.uart

    @property
    def ddr_mib(self) -> int:
        return self.ddr_bytes >> 20


BOARDS: dict[str, Board] = {
    b.name: b
    for b in (
        # QEMU 7.2 `-M xilinx-zynq-a9`: `-kernel fw.elf` starts the ELF directly; the first
        # -serial is UART0 and its baud generator is not timed, so any divisor pair works. The
        # values are those FirmwareConfig has always defaulted to (UART0, 100 MHz). DDR: the
        # monitor's `info mtree` lists zynq.ext_ram at 0x00000000-0x07FFFFFF (128 MiB).
        Board(
            name="qemu",
            uart=0,
            uart_ref_hz=100_000_000,
            ddr_bytes=128 * MIB,
            uboot_defconfig=None,
            device_tree=None,
            usb_uart="QEMU -serial (a TCP socket that `codegen run --qemu` opens)",
            timer_hz=100_000_000,
            note="no boot loader: qemu-system-arm -M xilinx-zynq-a9 -kernel fw.elf",
        ),
        # Digilent Zybo Z7-20. U-Boot board/xilinx/zynq/zynq-zybo-z7/ps7_init_gpl.c:
        # EMIT_MASKWRITE(0xF8000154, 0x00003F33U, 0x00000A02U): UART_CLK_CTRL DIVISOR = 10 from the
        # IO PLL, CLKACT1 = 1 -> 1000 MHz / 10 = 100 MHz, UART1 clocked.
        # arch/arm/dts/zynq-zybo-z7.dts: serial0 = &uart1, memory@0 reg = <0x0 0x40000000> (1 GiB).
        # USB-UART: FTDI FT2232HQ, channel A JTAG, channel B UART (Zybo Z7 Reference Manual).
        Board(
            name="zybo-z7-20",
            uart=1,
            uart_ref_hz=100_000_000,
            ddr_bytes=1024 * MIB,
            uboot_defconfig="xilinx_zynq_virt_defconfig",
            device_tree="zynq-zybo-z7",
            usb_uart="/dev/ttyUSB1 (FT2232HQ channel B; channel A is JTAG)",
            jtag_adapter="digilent-hs1",
        ),
        # Avnet ZedBoard. U-Boot board/xilinx/zynq/zynq-zed/ps7_init_gpl.c:
        # EMIT_MASKWRITE(0XF8000154, 0x00003F33U, 0x00001402U): UART_CLK_CTRL DIVISOR = 0x14 = 20
        # from the IO PLL, CLKACT1 = 1 -> 1000 MHz / 20 = 50 MHz.
        # arch/arm/dts/zynq-zed.dts: serial0 = &uart1, memory@0 reg = <0x0 0x20000000> (512 MiB).
        # USB-UART: Cypress CY7C64225 (ZedBoard Hardware User's Guide), a CDC-ACM device.
        Board(
            name="zedboard",
            uart=1,
            uart_ref_hz=50_000_000,
            ddr_bytes=512 * MIB,
            uboot_defconfig="xilinx_zynq_virt_defconfig",
            device_tree="zynq-zed",
            usb_uart="/dev/ttyACM0 (Cypress CY7C64225, USB CDC-ACM)",
            jtag_adapter="zedboard-smt2",
        ),
        # Avnet MicroZed 7020. U-Boot board/xilinx/zynq/zynq-microzed/ps7_init_gpl.c:
        # EMIT_MASKWRITE(0XF8000154, 0x00003F33U, 0x00001402U): DIVISOR = 20 -> 50 MHz.
        # arch/arm/dts/zynq-microzed.dts: serial0 = &uart1, memory@0 reg = <0 0x40000000> (1 GiB).
        # USB-UART: Silicon Labs CP2104 (MicroZed Hardware User Guide).
        Board(
            name="microzed-7020",
            uart=1,
            uart_ref_hz=50_000_000,
            ddr_bytes=1024 * MIB,
            uboot_defconfig="xilinx_zynq_virt_defconfig",
            device_tree="zynq-microzed",
            usb_uart="/dev/ttyUSB0 (Silicon Labs CP2104)",
            jtag_adapter="digilent-hs3",
        ),
        # TUL PYNQ-Z2. PYNQ-Z2 board files (preset.xml): PCW_UART0_PERIPHERAL_ENABLE = 1 with
        # PCW_UART0_UART0_IO = MIO 14 .. 15, PCW_UART_PERIPHERAL_FREQMHZ = 100; 512 MiB DDR3
        # (PYNQ-Z2 reference manual). U-Boot v2023.01 has no zynq-pynq board (no ps7_init_gpl.c,
        # no device tree).
        Board(
            name="pynq-z2",
            uart=0,
            uart_ref_hz=100_000_000,
            ddr_bytes=512 * MIB,
            uboot_defconfig=None,
            device_tree=None,
            usb_uart="/dev/ttyUSB1 (FT2232HQ channel B; channel A is JTAG)",
            # PYNQ-Z2 board files: PCW_APU_PERIPHERAL_FREQMHZ = 650 -> CPU_3x2x 325 MHz
            timer_hz=325_000_000,
            note="no open SD boot path: U-Boot has no PYNQ-Z2 board (no ps7_init_gpl.c, no "
            "device tree); the PYNQ image's own FSBL and U-Boot set the PS up: `codegen board "
            "bootscr --board pynq-z2` writes a boot.scr that starts fw.elf from its card, "
            "`codegen board jtag --board pynq-z2` loads it over JTAG at its U-Boot prompt",
            jtag_adapter="pynq-z2-ft2232",
        ),
        # The Cortex-M7's board: the ARM MPS2 with the AN500 FPGA image, as QEMU 7.2 models it
        # (`-M mps2-an500`): UART0 (CMSDK APB UART at 0x40004000) on the first -serial, every APB
        # peripheral on the 25 MHz PCLK (hw/arm/mps2.c SYSCLK_FRQ; ARM AN500). Memory: ZBT
        # SSRAM1 4 MiB at 0 and SSRAM2/3 4 MiB at 0x20000000 (`info mtree`), in ddr_bytes the
        # RAM the image may use for data.
        Board(
            name="mps2-an500",
            uart=0,
            uart_ref_hz=25_000_000,
            ddr_bytes=4 * MIB,
            uboot_defconfig=None,
            device_tree=None,
            usb_uart="QEMU -serial (a TCP socket that `codegen run --qemu` opens)",
            timer_hz=25_000_000,
            note="QEMU only: qemu-system-arm -M mps2-an500 -kernel fw.elf",
            folder_name="mps2_an500",
        ),
    )
}

DEFAULT_BOARD = "qemu"


def boards_of(core: Core) -> tuple[str, ...]:
    """The presets whose board folder runs ``core``."""
    return tuple(n for n, b in BOARDS.items() if b.core == core)


def target_board(board: str | None, core: str | None) -> str:
    """The preset a build is for, from ``--board`` and ``--target`` (either may be None): the
    board named, else the core's default board, else DEFAULT_BOARD; ConfigError when the board
    named does not run the core named, listing the boards that do."""
    from codegen.target.cores import get_core

    if core is None:
        return DEFAULT_BOARD if board is None else get_board(board).name
    c = get_core(core)
    if board is None:
        return c.default_board
    if get_board(board).core != c:
        raise ConfigError(
            f"board={board!r} runs a {get_board(board).core.name}, not target={core!r}; the "
            f"{core} boards are {', '.join(boards_of(c))}"
        )
    return board


def get_board(name: str) -> Board:
    """The preset called ``name``; the error names the bad value and lists the boards."""
    try:
        return BOARDS[name]
    except KeyError:
        raise ConfigError(
            f"board={name!r}: unknown board; allowed boards are {', '.join(BOARDS)}"
        ) from None


# tools/uboot.sh: where U-Boot's `load` puts fw.elf before `bootelf -p` copies its segments to
# their addresses (the firmware at 0x00100000, firmware/board/zynq7000/link.ld): 128 MiB, free on
# every board below, clear of U-Boot (CONFIG_TEXT_BASE 0x04000000, then relocated to the top).
FW_LOADADDR = 0x0800_0000

# The boards with an open SD boot path: U-Boot's SPL initialises their PS (tools/uboot.sh).
UBOOT_BOARDS: dict[str, Board] = {n: b for n, b in BOARDS.items() if b.device_tree is not None}


def board(name: str) -> Board:
    """A board U-Boot boots (`codegen board sdcard`, the SPL of `codegen board jtag`); the error
    says why another cannot."""
    b = get_board(name)
    if name not in UBOOT_BOARDS:
        raise ConfigError(
            f"board={name!r} has no SD card image: {b.note or 'no U-Boot board'}; "
            f"boards with one: {', '.join(UBOOT_BOARDS)}"
        )
    return b


# The boards `codegen board jtag` writes an OpenOCD command for.
JTAG_BOARDS: dict[str, Board] = {n: b for n, b in BOARDS.items() if b.jtag_adapter is not None}


def jtag_board(name: str) -> Board:
    """A board with a JTAG path; the error names the boards that have one."""
    b = get_board(name)
    if name not in JTAG_BOARDS:
        raise ConfigError(
            f"board={name!r} has no JTAG path (QEMU loads fw.elf with -kernel); boards with one: "
            f"{', '.join(JTAG_BOARDS)}"
        )
    return b
