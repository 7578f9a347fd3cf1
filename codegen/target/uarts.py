"""The console UART drivers of the board folders (codegen/target/cores.py `BoardFolder.uart`):
what each one's registers need from the build, computed here and formatted by
``templates/fw_config.h.j2`` (docs/targets.md "Targets").

Every driver turns (UART index, baud, reference clock) into `UartDivisors`: the register base and
a divisor pair (cd, bdiv) with baud = ref / (cd · (bdiv + 1)). The pair is what INFO's board
block reads back and what the rate table of a BAUD request holds (docs/protocol.md, "Rate
switch"); a driver with a one-stage divider reports it as cd with bdiv 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from codegen.base.errors import ConfigError

BAUD_MAX_ERROR = 0.02  # a UART tolerates a few per cent of mismatch; keep under 2 %
# The standard rates a session may switch to (docs/protocol.md, "Rate switch"): Linux termios
# names each (B115200 .. B3000000, termios(3)); the table of a build holds those its UART
# reference clock reaches within BAUD_MAX_ERROR, at most 8 (INFO's link block).
STANDARD_RATES = (115_200, 230_400, 460_800, 921_600, 1_000_000, 1_500_000, 2_000_000, 3_000_000)


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


@dataclass(frozen=True)
class UartDefine:
    """One driver-specific ``#define`` of fw_config.h: its name, value and the comment above it."""

    name: str
    value: str
    comment: str


class UartDriver(Protocol):
    """A console UART driver of a board folder: its name, its register bases by index, how it
    reaches a baud rate, the rates a BAUD request may switch to, and the defines its C reads."""

    @property
    def name(self) -> str: ...

    @property
    def what(self) -> str:
        """The manual the driver follows, for fw_config.h and the docs."""
        ...

    @property
    def bases(self) -> tuple[int, ...]:
        """The register base of UART i."""
        ...

    def divisors(self, uart: int, baud: int, ref_hz: int) -> UartDivisors: ...

    def rates(self, uart: int, ref_hz: int, build_baud: int) -> tuple[UartDivisors, ...]:
        """The build's own rate and what a BAUD request may switch to, in rate order."""
        ...

    def defines(self, d: UartDivisors) -> tuple[UartDefine, ...]: ...


@dataclass(frozen=True)
class CadenceUart:
    """The Zynq-7000's Cadence UART (UG585 ch. 19): a two-stage generator CD, BDIV."""

    name: str = "cadence"
    what: str = "Cadence UART (UG585 ch. 19)"
    bases: tuple[int, ...] = (0xE0000000, 0xE0001000)  # UG585 Table 4-6

    def divisors(self, uart: int, baud: int, ref_hz: int) -> UartDivisors:
        """Best (CD, BDIV) for baud = ref / (CD · (BDIV + 1)), CD in 2..65535, BDIV in 4..255
        (UG585 §19.2.3; CD 0 disables and 1 bypasses the generator)."""
        if uart not in range(len(self.bases)):
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
        return UartDivisors(uart, self.bases[uart], baud, ref_hz, best[1], best[2])

    def rates(self, uart: int, ref_hz: int, build_baud: int) -> tuple[UartDivisors, ...]:
        """The build's own rate, then every standard rate the reference clock reaches within
        BAUD_MAX_ERROR (one divisor search for every preset), at most 8."""
        out = [self.divisors(uart, build_baud, ref_hz)]
        for rate in STANDARD_RATES:
            if rate == build_baud:
                continue
            try:
                out.append(self.divisors(uart, rate, ref_hz))
            except ConfigError:
                continue
        return tuple(sorted(out, key=lambda d: d.baud)[:8])

    def defines(self, d: UartDivisors) -> tuple[UartDefine, ...]:
        why = (
            f"Baud-rate generator (UG585 §19.2.3): {d.ref_hz} Hz / ({d.cd} * ({d.bdiv} + 1)) "
            f"= {d.actual_baud:.1f} bit/s"
        )
        return (
            UartDefine("FW_UART_CD", f"{d.cd}u", why),
            UartDefine("FW_UART_BDIV", f"{d.bdiv}u", ""),
        )


CADENCE = CadenceUart()


@dataclass(frozen=True)
class CmsdkUart:
    """The CMSDK APB UART of the ARM MPS2 FPGA images (ARM DDI 0479C, "APB UART"): one divider,
    baud = PCLK / BAUDDIV, BAUDDIV 16 .. 2^20 - 1; reported as CD = BAUDDIV with BDIV 0. The
    firmware's driver (firmware/board/mps2_an500/fw_uart.c) switches no rate: the table holds
    the build's own."""

    name: str = "cmsdk"
    what: str = "CMSDK APB UART (ARM DDI 0479C)"
    # UART0 .. UART3 of the AN500 (ARM AN500 memory map; hw/arm/mps2.c uartbase[]), UART0 on
    # QEMU's first -serial
    bases: tuple[int, ...] = (0x40004000, 0x40005000, 0x40006000, 0x40007000)

    def divisors(self, uart: int, baud: int, ref_hz: int) -> UartDivisors:
        if uart not in range(len(self.bases)):
            raise ConfigError(
                f"uart={uart!r}: the AN500 has UART0..UART{len(self.bases) - 1}; use 0 "
                "(QEMU's first -serial)"
            )
        if not 1_000_000 <= ref_hz <= 200_000_000:
            raise ConfigError(f"uart_ref_hz={ref_hz!r}: expected 1 MHz..200 MHz (the APB clock)")
        if baud <= 0:
            raise ConfigError(f"baud={baud!r}: a rate is a positive number of bits/s")
        div = round(ref_hz / baud)
        # 16 bits: INFO's board block reads the divider back as a 16-bit CD (fw_rt.h)
        if not 16 <= div <= 0xFFFF:
            raise ConfigError(
                f"baud={baud}: BAUDDIV {div} from uart_ref_hz={ref_hz} is outside 16..65535 "
                "(DDI 0479C: at least 16; INFO reads it back in 16 bits)"
            )
        d = UartDivisors(uart, self.bases[uart], baud, ref_hz, div, 0)
        if d.error > BAUD_MAX_ERROR:
            raise ConfigError(
                f"baud={baud}: BAUDDIV {div} from uart_ref_hz={ref_hz} misses it by "
                f"{100 * d.error:.1f} % (> {100 * BAUD_MAX_ERROR:.0f} %)"
            )
        return d

    def rates(self, uart: int, ref_hz: int, build_baud: int) -> tuple[UartDivisors, ...]:
        return (self.divisors(uart, build_baud, ref_hz),)

    def defines(self, d: UartDivisors) -> tuple[UartDefine, ...]:
        why = (
            f"Baud divider (DDI 0479C, APB UART): {d.ref_hz} Hz / {d.cd} = "
            f"{d.actual_baud:.1f} bit/s"
        )
        return (UartDefine("FW_UART_BAUDDIV", f"{d.cd}u", why),)


CMSDK = CmsdkUart()
