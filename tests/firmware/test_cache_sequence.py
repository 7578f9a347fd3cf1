"""The PL310 L2 and SMP register sequences of firmware/board/zynq7000/fw_cache.c, compiled for the
host with FW_REG_STUB against a register file (tests/regfile/regfile.c) that prints every
access: the writes must be exactly the manuals' sequences, in order, and the rules the manuals
state must hold on the trace. Every write of the source, moved or changed in a mutated copy, is
caught. The ARM build of fw_l2_off, which startup.S calls before any stack exists, must not
touch the stack."""

from __future__ import annotations

import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from repopaths import ROOT

from codegen.base.resources import firmware_dir
from codegen.target.cores import CORTEX_A9
from codegen.target.toolchain import COMMON_CFLAGS, find_tool

BOARD = firmware_dir() / "board" / "zynq7000"
SOURCE = BOARD / "fw_cache.c"
REGFILE = ROOT / "tests" / "regfile" / "regfile.c"
SCENARIOS = ("boot", "boot-absent", "off-enabled", "off-disabled", "off-absent")

SCU, L2, SLCR = 0xF8F0_0000, 0xF8F0_2000, 0xF800_0000
L2_CONTROL, L2_AUX, L2_TAG, L2_DATA = L2 + 0x100, L2 + 0x104, L2 + 0x108, L2 + 0x10C
L2_INT_CLEAR, L2_SYNC, L2_INV_WAY, L2_CLEAN_INV_WAY = L2 + 0x220, L2 + 0x730, L2 + 0x77C, L2 + 0x7FC
SLCR_LOCK, SLCR_UNLOCK, SLCR_L2C_RAM = SLCR + 0x004, SLCR + 0x008, SLCR + 0xA1C
SCU_CONTROL, SCU_INVALIDATE = SCU + 0x00, SCU + 0x0C
WAY_OPS = (L2_INV_WAY, L2_CLEAN_INV_WAY, L2_SYNC)

# (register, value, source). "ACTLR" is CP15 c1 c0 1; "DSB" a barrier.
SMP_WRITES: list[tuple[object, int | None, str]] = [
    (SCU_INVALIDATE, 0xF, "DDI 0407 §2.2: SCU Invalidate All, CPU0's four tag RAM ways [3:0]"),
    (SCU_CONTROL, 0x1, "DDI 0407 §2.2: SCU Control, enable (bit 0) after the invalidation"),
    ("ACTLR", 0x41, "DDI 0388 §4.3.10: SMP (bit 6) and FW (bit 0), before caches and MMU"),
]
L2_ON_WRITES: list[tuple[object, int | None, str]] = [
    (SLCR_UNLOCK, 0xDF0D, "UG585 Appendix B slcr SLCR_UNLOCK: the unlock key"),
    (SLCR_L2C_RAM, 0x00020202, "UG585 §3.4 and Appendix B slcr L2C_RAM: 0x00020202"),
    (SLCR_LOCK, 0x767B, "UG585 Appendix B slcr SLCR_LOCK: the lock key"),
    (
        L2_AUX,
        0x72360000,
        "UG585 Appendix B reg1_aux_control: reset 0x02060000 with early "
        "BRESP, I/D prefetch, round robin, parity, event bus, 64 KiB ways; only while disabled",
    ),
    (L2_TAG, 0x111, "DDI 0246 §3.3 reg1_tag_ram_control: setup/read/write latency 2 cycles"),
    (L2_DATA, 0x121, "DDI 0246 §3.3 reg1_data_ram_control: read latency 3, setup/write 2"),
    (L2_INV_WAY, 0xFF, "DDI 0246 §3.3.10: invalidate all 8 ways before enabling"),
    (L2_SYNC, 0x0, "DDI 0246 §3.3.10: Cache Sync after the maintenance"),
    (L2_INT_CLEAR, 0x1FF, "DDI 0246 §3.3 reg2_int_clear: every interrupt source"),
    (L2_CONTROL, 0x1, "DDI 0246 §3.3.1 reg1_control: enable, last"),
    ("DSB", None, "DDI 0406C A3.8.3: the enable completes before the MMU and caches go on"),
]
L2_OFF_WRITES: list[tuple[object, int | None, str]] = [
    (L2_CLEAN_INV_WAY, 0xFF, "DDI 0246 §3.3.10: clean and invalidate all 8 ways"),
    (L2_SYNC, 0x0, "DDI 0246 §3.3.10: Cache Sync"),
    (L2_CONTROL, 0x0, "DDI 0246 §3.3.1: disable once nothing is dirty"),
    ("DSB", None, "the disable completes before memory is written non-cacheably"),
]
EXPECTED: dict[str, list[tuple[object, int | None, str]]] = {
    "boot": SMP_WRITES + L2_ON_WRITES,
    "boot-absent": SMP_WRITES,
    "off-enabled": L2_OFF_WRITES,
    "off-disabled": [],
    "off-absent": [],
}

Access = tuple[str, object, int | None]  # (kind, register, value)


def parse(log: str) -> list[Access]:
    out: list[Access] = []
    for line in log.splitlines():
        kind, *rest = line.split()
        if kind == "DSB":
            out.append(("W", "DSB", None))
            continue
        reg: object = rest[0] if rest[0] == "ACTLR" else int(rest[0], 16)
        out.append((kind, reg, int(rest[1], 16) if len(rest) > 1 else None))
    return out


def rule_violations(trace: list[Access]) -> list[str]:
    """The manuals' rules on the whole trace, whatever the exact values."""
    bad = [f"slave error writing 0x{r:08x} while the L2 was enabled (DDI 0246 §3.3)"
           for k, r, _ in trace if k == "SLVERR"]  # fmt: skip
    writes = [(i, r, v) for i, (k, r, v) in enumerate(trace) if k == "W"]
    for n, (i, reg, _) in enumerate(writes):
        if reg not in WAY_OPS:
            continue
        # a background operation completes (reads 0) before any other write (§3.3.10)
        end = writes[n + 1][0] if n + 1 < len(writes) else len(trace)
        if not any(k == "R" and r == reg and v == 0 for k, r, v in trace[i + 1 : end]):
            bad.append(f"write {n}: 0x{reg:08x} not seen complete before the next write")
    order = [r for _, r, _ in writes]

    def before(a: object, b: object, why: str) -> None:
        if a in order and b in order and order.index(a) > order.index(b):
            bad.append(why)

    before(SCU_INVALIDATE, SCU_CONTROL, "SCU enabled before its tag RAMs were invalidated")
    before(SCU_CONTROL, "ACTLR", "ACTLR.SMP set before the SCU was enabled")
    before(SLCR_UNLOCK, SLCR_L2C_RAM, "L2C_RAM written while the SLCR was locked")
    before(SLCR_L2C_RAM, SLCR_LOCK, "SLCR locked before L2C_RAM was written")
    on = [n for n, (_, r, v) in enumerate(writes) if r == L2_CONTROL and v == 1]
    for reg in (SLCR_L2C_RAM, L2_AUX, L2_TAG, L2_DATA, L2_INV_WAY):
        if on and reg not in order[: on[0]]:
            bad.append(f"L2 enabled before 0x{reg:08x} was written")
    off = [n for n, (_, r, v) in enumerate(writes) if r == L2_CONTROL and v == 0]
    if off and L2_CLEAN_INV_WAY not in order[: off[0]]:
        bad.append("L2 disabled before it was cleaned")
    return bad


def problems(scenario: str, log: str) -> list[str]:
    trace = parse(log)
    got = [(r, v) for k, r, v in trace if k == "W"]
    want = [(r, v) for r, v, _ in EXPECTED[scenario]]
    out = rule_violations(trace)
    if got != want:
        out.append(f"{scenario}: writes {fmt(got)}, the manuals' sequence is {fmt(want)}")
    return out


def fmt(writes: list[tuple[object, int | None]]) -> str:
    return ", ".join(r if isinstance(r, str) else f"0x{r:08x}={v:#x}" for r, v in writes)


def build(source: Path, out: Path) -> Path:
    exe = out.with_suffix("")
    cmd = [find_tool("cc"), *COMMON_CFLAGS, "-O1", "-DFW_REG_STUB", f"-I{BOARD}",
           f"-I{firmware_dir()}", str(source), str(REGFILE), "-o", str(exe)]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return exe


def run(exe: Path) -> dict[str, str]:
    return {
        s: subprocess.run([str(exe), s], check=True, capture_output=True, text=True).stdout
        for s in SCENARIOS
    }


def all_problems(exe: Path) -> list[str]:
    return [p for s, log in run(exe).items() for p in problems(s, log)]


def test_sequences_are_the_manuals(tmp_path: Path) -> None:
    logs = run(build(SOURCE, tmp_path / "regfile"))
    assert "ID 0x410000C8" in logs["boot"] and "ID 0x00000000" in logs["boot-absent"]
    for scenario, log in logs.items():
        assert problems(scenario, log) == [], log


@dataclass(frozen=True)
class Mutant:
    what: str
    text: str


_WRITE = re.compile(r"^(\s*)(fw_reg_write|fw_actlr_write)\((.*)\);$", re.S)


def functions(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line index of every function body (a `{` and `}` in column 0)."""
    opens = [i for i, ln in enumerate(lines) if ln == "{"]
    closes = [i for i, ln in enumerate(lines) if ln == "}"]
    return list(zip(opens, closes, strict=True))


def split_args(args: str) -> list[str]:
    depth, start, out = 0, 0, []
    for i, ch in enumerate(args):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(args[start:i].strip())
            start = i + 1
    return out + [args[start:].strip()]


def statements(source: str) -> tuple[list[str], list[tuple[int, int, int]]]:
    """The source as statements: every register write joined onto one line (a write that
    clang-format wrapped spans several); and (function, first, last) indexes of the bodies."""
    out: list[str] = []
    bodies = []
    lines = source.splitlines()
    i = 0
    while i < len(lines):
        if re.match(r"^\s*(fw_reg_write|fw_actlr_write)\(", lines[i]):
            j = i
            while not lines[j].rstrip().endswith(";"):
                j += 1
            out.append(lines[i].rstrip() + " " + " ".join(x.strip() for x in lines[i + 1 : j + 1]))
            out[-1] = out[-1].replace("( ", "(").rstrip()
            i = j + 1
            continue
        out.append(lines[i])
        i += 1
    for k, (lo, hi) in enumerate(functions(out)):
        bodies.append((k, lo, hi))
    return out, bodies


def mutants(source: str) -> list[Mutant]:
    """For every register write of the source: the write moved (swapped with the next write of
    its function, the last one with the previous; a function's only write moved to its end) and
    the write with its value changed (one bit flipped)."""
    lines, bodies = statements(source)
    out = []
    for _, lo, hi in bodies:
        idx = [i for i in range(lo, hi) if _WRITE.match(lines[i])]
        for n, i in enumerate(idx):
            indent, fn, args = _WRITE.match(lines[i]).groups()  # type: ignore[union-attr]
            parts = split_args(args)
            parts[-1] = f"({parts[-1]}) ^ 1u"
            changed = lines.copy()
            changed[i] = f"{indent}{fn}({', '.join(parts)});"
            out.append(Mutant(f"{fn} of line {i + 1}: value changed", "\n".join(changed)))
            moved = lines.copy()
            if len(idx) > 1:
                j = idx[n + 1] if n + 1 < len(idx) else idx[n - 1]
                moved[i], moved[j] = moved[j], moved[i]
            else:
                moved.insert(hi - 1, moved.pop(i))  # before the closing brace
            out.append(Mutant(f"{fn} of line {i + 1}: moved", "\n".join(moved)))
    return out


def test_every_moved_or_changed_write_is_caught(tmp_path: Path) -> None:
    ms = mutants(SOURCE.read_text())
    writes = len(re.findall(r"^\s*(fw_reg_write|fw_actlr_write)\(", SOURCE.read_text(), re.M))
    assert len(ms) == 2 * writes and writes >= 14

    def verdict(k: int) -> tuple[str, list[str]]:
        src = tmp_path / f"mutant{k}.c"
        src.write_text(ms[k].text)
        return ms[k].what, all_problems(build(src, tmp_path / f"mutant{k}"))

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(verdict, range(len(ms))))
    missed = [what for what, found in results if not found]
    assert missed == [], f"mutants the check accepted: {missed}"


def test_l2_off_needs_no_stack(tmp_path: Path) -> None:
    """startup.S calls fw_l2_off before any stack exists: the ARM build of it may use r0-r3,
    r12 and lr only (AAPCS caller-saved registers), never sp."""
    obj = tmp_path / "fw_cache.o"
    subprocess.run(
        [find_tool("arm-none-eabi-gcc"), *CORTEX_A9.cflags, f"-I{BOARD}",
         f"-I{firmware_dir()}", "-c", str(SOURCE), "-o", str(obj)],
        check=True,
    )  # fmt: skip
    dis = subprocess.run(
        [find_tool("arm-none-eabi-objdump"), "-d", "--no-show-raw-insn", str(obj)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    body = re.search(r"<fw_l2_off>:\n(.*?)(?:\n\n|\Z)", dis, re.S)
    assert body is not None, dis
    insns = [ln.split(":", 1)[1].strip() for ln in body.group(1).splitlines() if ":" in ln]
    assert insns, dis
    used = {
        r for ins in insns for r in re.findall(r"\b(r\d+|sp|fp|ip|lr|pc)\b", ins.split(None, 1)[-1])
    }
    assert "sp" not in used and not any(i.startswith(("push", "pop", "stm", "ldm")) for i in insns)
    assert used <= {"r0", "r1", "r2", "r3", "ip", "lr"}, used
    # a negative control: fw_l2_on calls fw_probe_read32 and does save lr on the stack
    on = re.search(r"<fw_l2_on>:\n(.*?)(?:\n\n|\Z)", dis, re.S)
    assert on is not None and "push" in on.group(1)


@pytest.mark.parametrize("scenario", ["boot", "off-enabled"])
def test_the_check_reads_the_trace_it_claims(scenario: str, tmp_path: Path) -> None:
    """Negative controls on the checker itself: a trace with one write dropped, or one
    background operation never seen complete, is refused."""
    log = run(build(SOURCE, tmp_path / "regfile"))[scenario]
    lines = log.splitlines()
    first_write = next(i for i, ln in enumerate(lines) if ln.startswith("W "))
    assert problems(scenario, "\n".join(lines[:first_write] + lines[first_write + 1 :]))
    done = next(i for i, ln in enumerate(lines) if re.match(r"R 0xF8F027[7F]C 0x00000000", ln))
    assert any(
        "complete" in p for p in problems(scenario, "\n".join(lines[:done] + lines[done + 1 :]))
    )
