"""Zynq-7020 boards that tools/uboot.sh builds for, and what the firmware must match on them.

Values are read from U-Boot 2023.01 (Debian's u-boot source package):

* ``device_tree``: arch/arm/dts/<name>.dts, and board/xilinx/zynq/<name>/ps7_init_gpl.c for the
  SPL (board/xilinx/zynq/Makefile picks the file by that name).
* ``console_uart``: the DTS ``aliases { serial0 = &uartN; }`` with ``stdout-path = "serial0..."``;
  U-Boot prints there, and the board's USB-UART bridge is wired to it.
* ``ddr_mib``: the DTS ``memory`` node.
* ``uart_ref_hz``: what the SPL's ps7_init programs. IO_PLL_CTRL (0xF8000108) PLL_FDIV [18:12]
  = 30 from PS_CLK 33.333 MHz gives 1000 MHz; UART_CLK_CTRL (0xF8000154) SRCSEL [5:4] = IO PLL,
  DIVISOR [13:8] = 10 (Zybo Z7) or 20 (ZedBoard, MicroZed): UG585 §25.6 "UART Clocks", Appendix B
  "slcr" register descriptions. Firmware started by this U-Boot must be built with this
  reference clock (``codegen firmware --uart-ref-hz``) or its baud rate is off by the ratio.
  QEMU does not model baud rates, so only a board shows a mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.base.errors import ConfigError

FW_LOADADDR = 0x0800_0000  # tools/uboot.sh: where `load` puts fw.elf before `bootelf -p`


@dataclass(frozen=True)
class Board:
    name: str
    device_tree: str
    console_uart: int
    uart_ref_hz: int
    ddr_mib: int


BOARDS: dict[str, Board] = {
    b.name: b
    for b in (
        Board("zybo-z7-20", "zynq-zybo-z7", console_uart=1, uart_ref_hz=100_000_000, ddr_mib=1024),
        Board("zedboard", "zynq-zed", console_uart=1, uart_ref_hz=50_000_000, ddr_mib=512),
        Board(
            "microzed-7020", "zynq-microzed", console_uart=1, uart_ref_hz=50_000_000, ddr_mib=1024
        ),
    )
}


def board(name: str) -> Board:
    try:
        return BOARDS[name]
    except KeyError:
        if name == "pynq-z2":
            raise ConfigError(
                "pynq-z2: U-Boot 2023.01 has no ps7_init_gpl.c for the PYNQ-Z2 (see tools/uboot.sh)"
            ) from None
        raise ConfigError(f"unknown board {name!r}: one of {', '.join(BOARDS)}") from None
