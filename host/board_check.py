"""`codegen board`: the actions of codegen.target.board_cmd (sdcard, jtag, bootscr) and `check`,
which talks to a device: one command for a first boot on real hardware.

``codegen board check --port DEV [--build DIR --data DIR]`` prints one line per check, each with
PASS, FAIL, WARN or N/A and the value it measured:

- the firmware and board it runs (INFO), SCTLR's MMU, caches and branch prediction, ACTLR's SMP
  and FW bits, the PL310 (found, enabled, its auxiliary control as fw_cache.c programs it);
- the global timer against the host's clock: the board's BOARD message (fw_check.h, TIME)
  answers with the timer's count; two bursts of requests ``--seconds`` apart give its rate, the
  host's round trips bound the error; the CPU clock is twice it (UG585 §8.1: the timers run at
  CPU_3x2x, half the CPU clock);
- a DDR walk from the end of the firmware's 16 MiB window to the preset's DDR size: every word
  written (FILL) with an address-unique pattern, then read back (CHECK), 16 MiB per request;
- the UART at each rate of ``--baud`` (default: every rate of the firmware's table up to
  921,600): the switch (elatta_host.device.Device.switch_baud), ECHOs of the largest payload
  checked byte for byte, and INFO's RX FIFO overruns, ring overruns and reverted switches before
  and after; the link goes back to the boot rate at the end;
- with ``--build`` and ``--data``: a short bit-exact run (`codegen run --limit N`).

Run on QEMU (the SD image booted there, docs/board.md §9), every check runs and prints what it
measured, and those QEMU cannot show (the timer's real rate, the SMP bit, the PL310, a UART's line
rate and overruns) say so and count as N/A. QEMU is recognised by the PL310 probe: every
Zynq-7000 has one at 0xF8F02000 (UG585 §3.4), QEMU's xilinx-zynq-a9 models none.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from elatta_host.device import BRIDGE_RATE, Device
from elatta_host.errors import DeviceError
from elatta_host.protocol import Info
from elatta_host.transport import DEFAULT_BUDGET, Link

from codegen.base.errors import ConfigError
from codegen.ir import link_wire as lw
from codegen.target import board_cmd
from codegen.target.boards import BOARDS, Board, get_board

HELP = board_cmd.HELP
FLAGS = {"budget": "--budget", "timeout": "--timeout"}

# firmware/board/zynq7000/fw_check.h (tests/host/test_board_check.py keeps the two equal); the
# payloads' layouts are codegen.ir.link_wire's BOARD and BOARD_REPLY
MSG_BOARD = 0x30
MSG_BOARD_REPLY = 0xB0
CHECK_REQ_SIZE = lw.BOARD.fixed_size
CHECK_REPLY_SIZE = lw.BOARD_REPLY.fixed_size
OP_TIME = 1
OP_FILL = 2
OP_CHECK = 3
WALK_MAX = 16 << 20
PATTERN_MUL = 0x9E3779B1

PASS, FAIL, WARN, NA = "PASS", "FAIL", "WARN", "N/A"
TIME_SAMPLES = 5  # TIME requests per burst; the one with the shortest round trip is kept
TIMER_TOLERANCE = 0.005  # the timer against the host clock: crystals are within 50 ppm
ECHOES = 20  # per rate
# Cortex-A9 MPCore TRM / UG585: SCTLR bits M, C, Z, I; ACTLR SMP (6) and FW (0)
ACTLR_SMP, ACTLR_FW = 1 << 6, 1 << 0
L2_AUX_ZYNQ = 0x72360000  # firmware/board/zynq7000/zynq7000.h: the bits fw_cache.c sets
QEMU_TIMER_HZ = 100_000_000  # hw/timer/a9gtimer.c: one tick per 10 ns of virtual time


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, the verdict and the value measured."""

    name: str
    status: str
    value: str
    note: str = ""

    def line(self) -> str:
        text = f"{self.name:<16} {self.status:<5} {self.value}"
        return text + (f"\n{'':<23}{self.note}" if self.note else "")


@dataclass(frozen=True)
class BoardReply:
    """BOARD_REPLY (fw_check.h): the op, the global timer's count, five op-dependent words."""

    op: int
    timer: int
    words: tuple[int, int, int, int, int]

    @classmethod
    def unpack(cls, payload: bytes) -> BoardReply:
        if len(payload) != CHECK_REPLY_SIZE:
            raise ConfigError(
                f"BOARD_REPLY of {len(payload)} bytes; expected {CHECK_REPLY_SIZE} (fw_check.h)"
            )
        v = lw.BOARD_REPLY.unpack(payload)
        op, lo, hi, words = v["op"], v["timer_lo"], v["timer_hi"], v["words"]
        assert isinstance(op, int) and isinstance(lo, int) and isinstance(hi, int)
        assert isinstance(words, tuple) and len(words) == 5, words
        return cls(op, hi << 32 | lo, (words[0], words[1], words[2], words[3], words[4]))


@dataclass(frozen=True)
class TimeSample:
    host_mid: float  # s, the midpoint of the round trip on the host's monotonic clock
    rtt: float  # s
    ticks: int  # the device's global timer


def pattern(addr: int, seed: int) -> int:
    """fw_check.c's word at byte address ``addr``."""
    return ((addr >> 2) * PATTERN_MUL & 0xFFFFFFFF) ^ seed


def board_request(
    dev: Device, op: int, base: int = 0, length: int = 0, seed: int = 0
) -> BoardReply:
    payload = lw.BOARD.pack(op=op, reserved=(), base=base, length=length, seed=seed)
    reply = dev.link.request(MSG_BOARD, payload, expect=MSG_BOARD_REPLY)
    r = BoardReply.unpack(reply.payload)
    if r.op != op:
        raise ConfigError(f"BOARD_REPLY for op {r.op}, asked op {op}")
    return r


def time_sample(dev: Device) -> TimeSample:
    best: TimeSample | None = None
    for _ in range(TIME_SAMPLES):
        t0 = time.monotonic()
        r = board_request(dev, OP_TIME)
        t1 = time.monotonic()
        s = TimeSample((t0 + t1) / 2, t1 - t0, r.timer)
        if best is None or s.rtt < best.rtt:
            best = s
    assert best is not None
    return best


def state_checks(info: Info, preset: Board, qemu: bool) -> list[Check]:
    b = info.board
    assert b is not None
    bits = b.sctlr_bits()
    on = {True: "on", False: "off"}
    checks = [
        Check(
            "firmware",
            PASS if b.name == preset.name else WARN,
            f"{info.build_id} for {b.name}, UART{info.uart} at {info.baud} baud from "
            f"{info.uart_ref_hz / 1e6:g} MHz",
        ),
        Check(
            "mmu/caches",
            PASS if all(bits.values()) else FAIL,
            f"SCTLR 0x{b.sctlr:08x}: MMU {on[bits['M']]}, D-cache {on[bits['C']]}, "
            f"I-cache {on[bits['I']]}, branch prediction {on[bits['Z']]}",
        ),
    ]
    smp = (
        f"ACTLR 0x{b.actlr:08x}: SMP {on[bool(b.actlr & ACTLR_SMP)]}, "
        f"FW {on[bool(b.actlr & ACTLR_FW)]}"
    )
    smp_ok = b.actlr & (ACTLR_SMP | ACTLR_FW) == ACTLR_SMP | ACTLR_FW
    checks.append(
        Check("smp", NA, smp, "QEMU reads ACTLR as 0: only a board shows the bits")
        if qemu
        else Check("smp", PASS if smp_ok else FAIL, smp)
    )
    if not b.l2_found:
        l2 = "no PL310 answered at 0xF8F02000"
        checks.append(
            Check("l2 cache", NA, l2, "QEMU's xilinx-zynq-a9 models no PL310 (every Zynq has one)")
            if qemu
            else Check("l2 cache", FAIL, l2)
        )
    else:
        ok = b.l2_control & 1 and b.l2_aux & L2_AUX_ZYNQ == L2_AUX_ZYNQ
        checks.append(
            Check(
                "l2 cache",
                PASS if ok else FAIL,
                f"PL310 id 0x{b.l2_id:08x}, {'enabled' if b.l2_control & 1 else 'disabled'}, "
                f"aux 0x{b.l2_aux:08x} (needs 0x{L2_AUX_ZYNQ:08x} set)",
            )
        )
    return checks


def timer_check(dev: Device, seconds: float, timer_hz: int, qemu: bool) -> tuple[Check, float]:
    """The global timer's rate against the host's monotonic clock, and that rate."""
    a = time_sample(dev)
    time.sleep(seconds)
    b = time_sample(dev)
    span = b.host_mid - a.host_mid
    rate = (b.ticks - a.ticks) / span
    err = (a.rtt + b.rtt) / 2 / span
    value = (
        f"{rate / 1e6:.3f} MHz over {span:.1f} s (host round trips: ±{100 * err:.2f} %); "
        f"CPU {2 * rate / 1e6:.1f} MHz"
    )
    if qemu:
        note = (
            f"QEMU's a9gtimer counts {QEMU_TIMER_HZ / 1e6:g} MHz of virtual time "
            f"(hw/timer/a9gtimer.c), not the board's {timer_hz / 1e6:.3f} MHz"
        )
        return Check("global timer", NA, value, note), rate
    off = abs(rate - timer_hz) / timer_hz
    ok = off <= max(TIMER_TOLERANCE, 3 * err)
    note = (
        f"expected {timer_hz / 1e6:.3f} MHz (CPU_3x2x, half the CPU clock): {100 * off:.2f} % off"
    )
    return Check("global timer", PASS if ok else FAIL, value, note), rate


def ddr_check(dev: Device, rate: float, seed: int, qemu: bool) -> Check:
    t = board_request(dev, OP_TIME)
    ddr, start = t.words[0], t.words[1]
    chunks = [(a, min(WALK_MAX, ddr - a)) for a in range(start, ddr, WALK_MAX)]
    fill_ticks = check_ticks = errors = 0
    first: tuple[int, int] | None = None
    for base, length in chunks:
        fill_ticks += board_request(dev, OP_FILL, base, length, seed).words[1]
    for base, length in chunks:
        w = board_request(dev, OP_CHECK, base, length, seed).words
        check_ticks += w[1]
        errors += w[2]
        if w[2] and first is None:
            first = (w[3], w[4])
    walked = ddr - start
    mbs = [walked / (t / rate) / 1e6 if t else 0.0 for t in (fill_ticks, check_ticks)]
    value = (
        f"{walked >> 20} MiB at 0x{start:08x}..0x{ddr:08x} (seed 0x{seed:08x}): {errors} words "
        f"differ; write {mbs[0]:.0f} MB/s, read {mbs[1]:.0f} MB/s"
    )
    if first is not None:
        addr, got = first
        value += f"; first at 0x{addr:08x}: 0x{got:08x}, wrote 0x{pattern(addr, seed):08x}"
    note = "QEMU's RAM is host memory: no DDR training or timing to exercise" if qemu else ""
    return Check("ddr walk", FAIL if errors else PASS, value, note)


def counters(info: Info) -> tuple[int, int, int]:
    """(RX FIFO overruns, ring overruns, reverted switches) from INFO."""
    b, ln = info.board, info.link
    return (
        (b.uart_rx_overruns or 0) if b is not None else 0,
        ln.ring_overruns if ln is not None else 0,
        ln.rate_reverts if ln is not None else 0,
    )


def uart_check(dev: Device, rate: int, rng: random.Random, qemu: bool) -> Check:
    before = counters(dev.hello())
    sw = dev.switch_baud(rate)
    name = f"uart {rate}"
    if not sw.switched and sw.baud != rate:
        after = counters(dev.hello())
        value = f"{sw.note}; reverts {after[2] - before[2]}"
        return Check(name, NA if qemu else WARN, value)
    size = dev.info.max_payload
    t0 = time.monotonic()
    for _ in range(ECHOES):
        dev.echo(rng.randbytes(size))
    dt = time.monotonic() - t0
    after = counters(dev.hello())
    d = [x - y for x, y in zip(after, before, strict=True)]
    line = 2 * ECHOES * size / dt
    value = (
        f"{ECHOES} ECHOes of {size} bytes bit-exact, {line / 1e3:.1f} kB/s both ways "
        f"({100 * line / (2 * rate / 10):.0f} % of the line); RX FIFO overruns {d[0]}, ring "
        f"overruns {d[1]}, reverts {d[2]}"
    )
    if qemu:
        return Check(name, NA, value, "QEMU's UART is not timed: no line rate, no overruns")
    return Check(name, FAIL if any(d) else PASS, value)


def bit_exact_check(args: argparse.Namespace, report: Path) -> Check:
    """`codegen run --limit N` on the same port, its output kept in REPORT/run.log."""
    from elatta_host import run as run_cmd

    p = argparse.ArgumentParser(prog="codegen run")
    run_cmd.add_arguments(p)
    ns = p.parse_args(
        ["--build", str(args.build), "--data", str(args.data), "--port", args.port,
         "--mode", "strict", "--limit", str(args.limit), "--report", str(report),
         "--no-progress", "--budget", str(args.budget)]
    )  # fmt: skip
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        rc = run_cmd.run(ns)
    report.mkdir(parents=True, exist_ok=True)
    (report / "run.log").write_text(log.getvalue())
    rep = json.loads((report / "report.json").read_text())
    be = rep["bit_exact"]
    value = (
        f"{be['compared']} samples (strict), {be['mismatches']} mismatches against the integer "
        f"reference; report in {report}"
    )
    ok = rc == 0 and be["mismatches"] == 0 and be["compared"] > 0
    return Check("bit-exact run", PASS if ok else FAIL, value)


def rate_steps(asked: str | None, info: Info) -> list[int]:
    table = info.link.rates if info.link is not None else ()
    if asked is None:
        return [r for r in table if r <= BRIDGE_RATE] or [info.baud]
    try:
        steps = [int(x) for x in asked.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--baud {asked!r}: a comma-separated list of rates") from None
    bad = [r for r in steps if r not in table]
    if bad or not steps:
        raise ConfigError(
            f"--baud {asked}: {bad or 'nothing'} not in the firmware's rates "
            f"({', '.join(map(str, table))})"
        )
    return steps


@contextlib.contextmanager
def _report_dir(path: Path | None) -> Iterator[Path]:
    if path is not None:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="board-check-") as tmp:
        yield Path(tmp) / "run"


def check(args: argparse.Namespace) -> int:
    if (args.build is None) != (args.data is None):
        raise ConfigError("--build and --data go together (the bit-exact run needs both)")
    rng = random.Random(args.seed)
    checks: list[Check] = []
    with Link(
        args.port, baud=args.boot_baud, timeout=args.timeout, budget=args.budget, flags=FLAGS
    ) as link:
        dev = Device(link)
        info = dev.hello(sync_timeout=args.budget)
        if info.board is None or info.link is None:
            raise ConfigError("the firmware's INFO has no board or link block: rebuild it")
        preset = get_board(info.board.name) if info.board.name in BOARDS else get_board("qemu")
        qemu = not info.board.l2_found
        where = (
            "QEMU (no PL310 answered: every Zynq-7000 has one at 0xF8F02000, QEMU models none)"
            if qemu
            else f"a board ({preset.name} preset: DDR {preset.ddr_mib} MiB, timer "
            f"{preset.timer_hz / 1e6:.3f} MHz)"
        )
        print(f"board check on {args.port}: {where}")
        print(f"{'check':<16} {'':<5} value")
        checks += state_checks(info, preset, qemu)
        for c in checks:
            print(c.line(), flush=True)
        try:
            t, rate = timer_check(dev, args.seconds, preset.timer_hz, qemu)
        except DeviceError as exc:
            raise ConfigError(
                f"the firmware does not serve BOARD requests (fw_check.c): {exc}"
            ) from exc
        checks.append(t)
        print(t.line(), flush=True)
        c = ddr_check(dev, rate, rng.getrandbits(32), qemu)
        checks.append(c)
        print(c.line(), flush=True)
        for r in rate_steps(args.baud, info):
            c = uart_check(dev, r, rng, qemu)
            checks.append(c)
            print(c.line(), flush=True)
        dev.switch_baud(info.baud)
    if args.build is not None:
        with _report_dir(args.report) as report:
            c = bit_exact_check(args, report)
    else:
        c = Check("bit-exact run", NA, "not run: give --build DIR --data DIR")
    checks.append(c)
    print(c.line())
    failed = [c.name for c in checks if c.status == FAIL]
    print(f"{len(checks)} checks: " + (f"FAILED {', '.join(failed)}" if failed else "no failure"))
    return 1 if failed else 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    board_cmd.add_actions(sub)
    c = sub.add_parser("check", help="first boot on a board: caches, timer, DDR, UART, bit-exact")
    c.add_argument("--port", required=True, help="the board's serial device or a socket:// URL")
    c.add_argument("--boot-baud", type=int, default=115_200, metavar="RATE",
                   help="the rate the firmware boots at (default 115200)")  # fmt: skip
    c.add_argument("--baud", metavar="R1,R2,...",
                   help="the rates to check the UART at (default: the firmware's "
                   "up to 921600)")  # fmt: skip
    c.add_argument("--seconds", type=float, default=5.0,
                   help="span of the timer measurement (default 5 s)")  # fmt: skip
    c.add_argument("--build", type=Path, help="a `codegen build` --out, for the bit-exact run")
    c.add_argument("--data", type=Path, help="its data set, for the bit-exact run")
    c.add_argument(
        "--limit",
        type=int,
        default=20,
        help="about N samples in the bit-exact run (`codegen run --limit`, 20)",
    )
    c.add_argument("--report", type=Path, help="where the bit-exact run's report goes")
    c.add_argument("--seed", type=int, default=0, help="seed of the DDR pattern and ECHOes")
    c.add_argument("--timeout", type=float, default=2.0, help="reply time-out in seconds")
    c.add_argument("--budget", type=float, default=DEFAULT_BUDGET, metavar="S",
                   help=f"seconds the device may take to answer ({DEFAULT_BUDGET:g})")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    if args.action != "check":
        return board_cmd.run(args)
    if args.seconds <= 0 or args.limit < 1:
        raise ConfigError(f"--seconds {args.seconds} and --limit {args.limit} must be positive")
    return check(args)
