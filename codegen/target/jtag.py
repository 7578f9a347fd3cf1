"""The whole OpenOCD 0.12 command that boots fw.elf on a Zynq-7020 board over JTAG.

``codegen board jtag --board B --build DIR --out OUT`` writes two files and prints one command::

    openocd -f OUT/adapter.cfg -f OUT/boot.cfg -c "elatta_boot; shutdown"

* ``adapter.cfg``: the board's JTAG adapter and nothing else (``ADAPTERS``: the on-board
  USB-JTAG of the Zybo Z7, ZedBoard and PYNQ-Z2, an external Digilent JTAG-HS3 for the MicroZed);
* ``boot.cfg``: the target, OpenOCD's own ``target/zynq_7000.cfg`` (sourced here exactly once:
  a board file such as ``board/digilent_zedboard.cfg`` sources it too, so the command never names
  one), then the boot procedures. Nothing touches JTAG until ``elatta_boot`` runs.

The sequence for a board with an open SPL (``SPL_BOOT``; boot-mode straps on JTAG, UG585 §6.3.1
"Boot Mode Pin Settings", Table 6-4):

1. reset: halt CPU0, unlock the SLCR (SLCR_UNLOCK 0xF8000008 <- 0xDF0D) and set PSS_RST_CTRL
   (0xF8000200) bit 0 SOFT_RST (UG585 chapter 26 "Reset System", Appendix B "slcr"): the whole PS
   (CPUs, L1 and L2 caches, MMU, OCM mapping, DDR controller) starts over from the BootROM, which
   in JTAG mode loads nothing and leaves OCM mapped at 0x0 (UG585 §6.3 "BootROM"); halt again;
2. the SPL (tools/uboot.sh's spl/u-boot-spl.bin, linked at CONFIG_SPL_TEXT_BASE = 0) to OCM at 0,
   a hardware breakpoint at its hand-off address, resume at 0: the SPL runs the board's ps7_init
   (clocks, MIO, DDR training), then in JTAG boot mode looks for its next stage in RAM (U-Boot
   2023.01 arch/arm/mach-zynq/spl.c maps ZYNQ_BM_JTAG to BOOT_DEVICE_RAM, CONFIG_SPL_RAM_DEVICE;
   common/spl/spl_ram.c), finds no image header and, with CONFIG_SPL_RAW_IMAGE_SUPPORT, jumps to
   CONFIG_SYS_UBOOT_START (common/spl/spl.c spl_set_header_raw_uboot; CONFIG_TEXT_BASE,
   0x04000000). The breakpoint there halts it on that jump, before it runs one instruction of the
   untrained-then-trained, random DDR contents; the script checks the PC is the hand-off address;
3. fw.elf's segments into the now working DDR, read back (``verify_image``), and resume at its
   entry point.

PYNQ-Z2 (``AFTER_BOOT_LOADER``): no open SPL exists for it (boards.py), so the PYNQ image's own
FSBL and U-Boot set the PS up; with U-Boot stopped at its prompt, the script halts the core,
cleans and invalidates L1 and turns the MMU and caches off through the debugger (OpenOCD's
``cache l1 d flush_all``, CP15 SCTLR by ``arm mrc``/``arm mcr``), then loads and starts fw.elf as
in step 3. No reset: it would undo the FSBL's PS set-up.

With the dummy adapter (``adapter name`` is ``dummy``) ``elatta_boot`` is a dry run: every
command that would reach the target is printed as ``elatta-dry: <command>`` instead, in order,
and the rest of the script (its Tcl, the checks between steps) runs as written.
tests/codegen/target/test_jtag.py runs docs/board.md's command lines that way.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from codegen.base.errors import ConfigError

SPL_ADDR = 0x0  # OCM, CONFIG_SPL_TEXT_BASE of xilinx_zynq_virt_defconfig
CPU0 = "zynq.cpu0"  # target/zynq_7000.cfg: ${_CHIPNAME}.cpu0
TARGET_CFG = "target/zynq_7000.cfg"  # OpenOCD 0.12's Zynq-7000 target (both Cortex-A9 cores)
_TCL_SAFE = re.compile(r"[A-Za-z0-9_./+:@=,-]+")

# UG585 Appendix B "System Level Control Registers (slcr)".
SLCR_UNLOCK = 0xF800_0008
SLCR_UNLOCK_KEY = 0xDF0D
PSS_RST_CTRL = 0xF800_0200  # bit 0 SOFT_RST: the whole PS (UG585 chapter 26)
RESET_SETTLE_MS = 200  # the BootROM's JTAG-mode path (no image to read) ends within this
SPL_TIMEOUT_MS = 5000  # ps7_init and DDR training take well under a second
# SCTLR (ARM DDI 0406C B4.1.130): M bit 0, C bit 2, Z bit 11, I bit 12 off for the hand-over.
SCTLR_OFF_MASK = (1 << 0) | (1 << 2) | (1 << 11) | (1 << 12)

SPL_BOOT = "spl"
AFTER_BOOT_LOADER = "after-boot-loader"
BOOT_KINDS = (SPL_BOOT, AFTER_BOOT_LOADER)

COMMAND = 'openocd -f {out}/adapter.cfg -f {out}/boot.cfg -c "elatta_boot; shutdown"'


@dataclass(frozen=True)
class Adapter:
    """A JTAG adapter as OpenOCD 0.12 drives it: what to plug in, the OpenOCD commands that
    configure it (the content of adapter.cfg) and where those settings come from."""

    name: str
    what: str
    lines: tuple[str, ...]
    source: str


ADAPTERS: dict[str, Adapter] = {
    a.name: a
    for a in (
        # Zybo Z7 Reference Manual §"USB-JTAG": channel A of the FT2232HQ is Digilent's USB-JTAG
        # circuit (the same as the JTAG-HS1's: an FT2232 with ADBUS7 as buffer enable), channel B
        # the console UART.
        Adapter(
            "digilent-hs1",
            "the board's own USB-JTAG: FTDI FT2232HQ channel A behind the PROG/UART micro-USB "
            "port (the same cable carries the console on channel B)",
            ("source [find interface/ftdi/digilent-hs1.cfg]", "transport select jtag"),
            "OpenOCD 0.12 interface/ftdi/digilent-hs1.cfg (FT2232 0403:6010, channel 0, "
            "layout_init 0x0088 0x008b)",
        ),
        # OpenOCD 0.12 board/digilent_zedboard.cfg minus its `source target/zynq_7000.cfg`
        # (boot.cfg sources the target): the ZedBoard's on-board Digilent USB-JTAG module is
        # driven as a JTAG-SMT2 (FT232H 0403:6014).
        Adapter(
            "zedboard-smt2",
            "the board's own USB-JTAG: the Digilent module behind the PROG micro-USB port (J17)",
            (
                "source [find interface/ftdi/digilent_jtag_smt2.cfg]",
                "reset_config srst_only srst_push_pull",
                "transport select jtag",
            ),
            "OpenOCD 0.12 board/digilent_zedboard.cfg without its target line",
        ),
        # MicroZed Hardware User Guide: no USB-JTAG on the board, a 14-pin 2 mm Xilinx JTAG
        # header; the Digilent JTAG-HS3 plugs into it (FT232H 0403:6014).
        Adapter(
            "digilent-hs3",
            "an external Digilent JTAG-HS3 on the board's 14-pin Xilinx JTAG header (a Xilinx "
            "Platform Cable USB II is not an OpenOCD adapter)",
            ("source [find interface/ftdi/digilent_jtag_hs3.cfg]", "transport select jtag"),
            "OpenOCD 0.12 interface/ftdi/digilent_jtag_hs3.cfg",
        ),
        # PYNQ-Z2 reference manual: the PROG/UART micro-USB port's FT2232HQ carries JTAG on
        # channel A and UART0 on channel B, a copy of Digilent's circuit (PYNQ-Z1). OpenOCD ships
        # no file for it; these are digilent-hs1.cfg's settings without its USB product string,
        # which the PYNQ-Z2's EEPROM need not carry.
        Adapter(
            "pynq-z2-ft2232",
            "the board's own USB-JTAG: FTDI FT2232HQ channel A behind the PROG/UART micro-USB "
            "port (J8)",
            (
                "adapter driver ftdi",
                "ftdi vid_pid 0x0403 0x6010",
                "ftdi channel 0",
                "ftdi layout_init 0x0088 0x008b",
                "reset_config none",
                "transport select jtag",
            ),
            "OpenOCD 0.12 interface/ftdi/digilent-hs1.cfg's settings, no device_desc",
        ),
    )
}


@dataclass(frozen=True)
class JtagBoot:
    """Inputs of the generated boot.cfg. ``kind``: SPL_BOOT (reset, SPL to its hand-off, then
    the firmware) or AFTER_BOOT_LOADER (the firmware into a PS another boot loader set up)."""

    kind: str
    fw_elf: Path
    fw_entry: int
    spl_bin: Path | None = None
    handoff: int | None = None  # the SPL's jump to its next stage (CONFIG_SYS_UBOOT_START)

    def validate(self) -> None:
        if self.kind not in BOOT_KINDS:
            raise ConfigError(f"JTAG boot kind {self.kind!r}: allowed are {', '.join(BOOT_KINDS)}")
        paths = [self.fw_elf] + ([self.spl_bin] if self.spl_bin is not None else [])
        for p in paths:
            if not _TCL_SAFE.fullmatch(str(p)):
                raise ConfigError(
                    f"path {str(p)!r} has characters OpenOCD's Tcl would interpret "
                    "(allowed: letters, digits and _./+:@=,-)"
                )
        for name, value in (("fw_entry", self.fw_entry), ("handoff", self.handoff)):
            if value is not None and not 0 <= value <= 0xFFFFFFFF:
                raise ConfigError(f"{name}={value:#x} is not a 32-bit address")
        if self.kind == SPL_BOOT and (self.spl_bin is None or self.handoff is None):
            raise ConfigError("an SPL boot needs the SPL (spl_bin) and its hand-off address")


def elf_entry(elf: bytes) -> int:
    """e_entry of a 32-bit little-endian ARM ELF (System V ABI ELF header, ARM AAELF32)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 1 or elf[5] != 1 or elf[18:20] != b"\x28\x00":
        raise ConfigError("fw.elf is not a 32-bit little-endian ARM ELF")
    return int.from_bytes(elf[24:28], "little")


def spl_handoff(uboot_config: str) -> int:
    """Where the SPL of this U-Boot .config jumps in JTAG boot mode: CONFIG_SYS_UBOOT_START,
    which defaults to CONFIG_TEXT_BASE (U-Boot 2023.01 common/spl/spl.c). Refuses a
    configuration whose SPL does not take its next stage from RAM in JTAG mode."""
    values = dict(re.findall(r"^(CONFIG_[A-Z0-9_]+)=(.*)$", uboot_config, re.MULTILINE))
    for need in ("CONFIG_SPL_RAM_DEVICE", "CONFIG_SPL_RAW_IMAGE_SUPPORT"):
        if values.get(need) != "y":
            raise ConfigError(
                f"the U-Boot configuration has no {need}=y: its SPL would not jump to a fixed "
                "address in JTAG boot mode, so no breakpoint can stop it there"
            )
    start = values.get("CONFIG_SYS_UBOOT_START") or values.get("CONFIG_TEXT_BASE")
    if start is None:
        raise ConfigError(
            "the U-Boot configuration has neither CONFIG_SYS_UBOOT_START nor TEXT_BASE"
        )
    return int(start, 16)


def _common(boot: JtagBoot) -> list[str]:
    return [
        "# Generated by codegen.target.jtag (docs/board.md §6). Run:",
        "#   openocd -f adapter.cfg -f boot.cfg -c 'elatta_boot; shutdown'",
        f"source [find {TARGET_CFG}]",
        "",
        "# The dummy adapter: a dry run that prints each command meant for the target.",
        "proc elatta_dry {} { expr {[adapter name] eq {dummy}} }",
        "proc elatta_hw {args} {",
        "    if {[elatta_dry]} {",
        '        echo "elatta-dry: $args"',
        "        return {}",
        "    }",
        "    return [uplevel #0 $args]",
        "}",
        "proc elatta_say {text} {",
        '    if {[elatta_dry]} { echo "elatta (dry run): $text" } else { echo "elatta: $text" }',
        "}",
        "",
        "# `reg pc` answers 'pc (/32): 0x04000000' (OpenOCD 0.12 src/target/target.c).",
        "proc elatta_pc {} {",
        "    if {[elatta_dry]} { return -1 }",
        "    if {![regexp {0x[0-9a-fA-F]+} [reg pc] pc]} { error {elatta: cannot read the PC} }",
        "    return [expr {$pc}]",
        "}",
        "",
        "proc elatta_load_fw {} {",
        f"    elatta_hw targets {CPU0}",
        f"    elatta_hw load_image {boot.fw_elf} 0x0 elf",
        f"    elatta_hw verify_image {boot.fw_elf} 0x0 elf",
        f'    elatta_say "fw.elf loaded and read back; starting it at {boot.fw_entry:#010x}"',
        f"    elatta_hw resume {boot.fw_entry:#x}",
        "}",
        "",
    ]


def _spl_procs(boot: JtagBoot) -> list[str]:
    assert boot.spl_bin is not None and boot.handoff is not None
    h = f"{boot.handoff:#010x}"
    return [
        "# UG585 chapter 26 and Appendix B slcr: SLCR_UNLOCK, then PSS_RST_CTRL.SOFT_RST. The",
        "# write that resets the core may not complete on the bus: its error is expected.",
        "proc elatta_reset {} {",
        f"    elatta_hw targets {CPU0}",
        "    elatta_hw halt 1000",
        "    elatta_hw poll off",
        f"    elatta_hw mww phys {SLCR_UNLOCK:#010x} {SLCR_UNLOCK_KEY:#06x}",
        f"    elatta_hw catch {{mww phys {PSS_RST_CTRL:#010x} 1}}",
        f"    elatta_hw sleep {RESET_SETTLE_MS}",
        "    elatta_hw catch {zynq.cpu0 arp_examine}",
        "    elatta_hw catch {zynq.cpu1 arp_examine}",
        "    elatta_hw poll on",
        "    elatta_hw halt 1000",
        '    elatta_say "PS reset (PSS_RST_CTRL), core halted in the BootROM"',
        "}",
        "",
        "proc elatta_run_spl {} {",
        f"    elatta_hw targets {CPU0}",
        f"    elatta_hw load_image {boot.spl_bin} {SPL_ADDR:#x} bin",
        f"    elatta_hw verify_image {boot.spl_bin} {SPL_ADDR:#x} bin",
        f"    elatta_hw bp {h} 4 hw",
        f"    elatta_hw resume {SPL_ADDR:#x}",
        f"    if {{[catch {{elatta_hw wait_halt {SPL_TIMEOUT_MS}}} err]}} {{",
        f'        error "elatta: the SPL did not reach its hand-off at {h} within '
        f'{SPL_TIMEOUT_MS} ms (boot-mode jumpers on JTAG? the console shows how far it got): $err"',
        "    }",
        "    set pc [elatta_pc]",
        f"    elatta_hw rbp {h}",
        f"    if {{$pc != -1 && $pc != {h}}} {{",
        '        error [format "elatta: the core stopped at 0x%08x, not at the SPL hand-off'
        f' {h}" $pc]',
        "    }",
        f'    elatta_say "SPL stopped at its hand-off {h}: clocks, MIO and DDR are up"',
        "}",
        "",
        "proc elatta_boot {} {",
        "    if {[elatta_dry]} { echo {elatta-dry: init} } else { init }",
        "    elatta_reset",
        "    elatta_run_spl",
        "    elatta_load_fw",
        "}",
        "",
    ]


def _after_boot_loader_procs() -> list[str]:
    off = f"{SCTLR_OFF_MASK:#x}"
    return [
        "# The PS as the board's own boot loader left it (its U-Boot stopped at the prompt): L1",
        "# clean and invalidated, then MMU, caches and branch prediction off (ARM DDI 0406C",
        "# B4.1.130 SCTLR), so that the image goes straight to DDR and runs from there.",
        "proc elatta_quiesce {} {",
        f"    elatta_hw targets {CPU0}",
        "    elatta_hw halt 1000",
        "    elatta_hw cache l1 d flush_all",
        "    set sctlr [elatta_hw arm mrc 15 0 1 0 0]",
        "    if {$sctlr eq {}} { set sctlr 0 }",
        f"    elatta_hw arm mcr 15 0 1 0 0 [expr {{$sctlr & ~{off}}}]",
        "    elatta_hw cache l1 i inval_all",
        '    elatta_say "core halted, L1 cleaned, MMU and caches off"',
        "}",
        "",
        "proc elatta_boot {} {",
        "    if {[elatta_dry]} { echo {elatta-dry: init} } else { init }",
        "    elatta_quiesce",
        "    elatta_load_fw",
        "}",
        "",
    ]


def openocd_script(boot: JtagBoot) -> str:
    boot.validate()
    procs = _spl_procs(boot) if boot.kind == SPL_BOOT else _after_boot_loader_procs()
    return "\n".join(_common(boot) + procs)


def adapter_cfg(adapter: Adapter) -> str:
    return "\n".join(
        [
            f"# JTAG adapter: {adapter.what}.",
            f"# Settings: {adapter.source}.",
            "# Generated by codegen.target.jtag; replace this file to use another adapter.",
            *adapter.lines,
            "",
        ]
    )


def openocd_command(out: Path | str) -> str:
    """The command docs/board.md gives for the files written to ``out``."""
    return COMMAND.format(out=shlex.quote(str(out)))


def write_jtag_files(
    out: Path,
    adapter: str,
    fw_elf: Path,
    *,
    spl_bin: Path | None = None,
    uboot_config: Path | None = None,
) -> str:
    """Write ``out/adapter.cfg`` and ``out/boot.cfg`` (absolute paths recorded) and return the
    command that runs them. With ``spl_bin`` and ``uboot_config`` (tools/uboot.sh's spl.bin and
    config) the boot resets the PS and runs the SPL first; without, it loads the firmware into
    a PS another boot loader has set up."""
    if adapter not in ADAPTERS:
        raise ConfigError(f"JTAG adapter {adapter!r}: allowed are {', '.join(ADAPTERS)}")
    fw_elf = Path(fw_elf).resolve()
    inputs = [fw_elf] + [Path(p) for p in (spl_bin, uboot_config) if p is not None]
    for p in inputs:
        if not p.is_file():
            raise ConfigError(f"{p} does not exist (tools/uboot.sh BOARD, codegen firmware)")
    if (spl_bin is None) != (uboot_config is None):
        raise ConfigError(
            "an SPL boot needs both the SPL and the U-Boot configuration it came from"
        )
    entry = elf_entry(fw_elf.read_bytes())
    if spl_bin is not None and uboot_config is not None:
        handoff = spl_handoff(Path(uboot_config).read_text())
        boot = JtagBoot(SPL_BOOT, fw_elf, entry, Path(spl_bin).resolve(), handoff)
    else:
        boot = JtagBoot(AFTER_BOOT_LOADER, fw_elf, entry)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    script = openocd_script(boot)
    (out / "adapter.cfg").write_text(adapter_cfg(ADAPTERS[adapter]))
    (out / "boot.cfg").write_text(script)
    return openocd_command(out)
