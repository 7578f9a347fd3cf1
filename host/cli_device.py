"""`codegen device`: talk to a device running the firmware, in QEMU or on a board."""

from __future__ import annotations

import argparse
import contextlib
import random
import time
from collections.abc import Iterator
from pathlib import Path

from elatta_host.device import Device
from elatta_host.qemu import Qemu, build_uart, stop_on_signals
from elatta_host.transport import DEFAULT_BUDGET, Link

from codegen.base.errors import ConfigError

FLAGS = {"budget": "--budget", "timeout": "--timeout"}  # named in the link's errors
HELP = "talk to the firmware: `info` prints INFO, `echo` tests the link"


def add_link_arguments(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--qemu",
        type=Path,
        metavar="FW.elf",
        help="boot this ELF in qemu-system-arm, on the machine of the target its build "
        "directory names (codegen/target/cores.py; xilinx-zynq-a9 for the Cortex-A9)",
    )
    where.add_argument(
        "--port",
        metavar="DEV",
        help="serial device of a board, e.g. /dev/ttyUSB1, or any pyserial URL "
        "(socket://HOST:PORT, rfc2217://...)",
    )
    p.add_argument(
        "--boot-baud",
        type=int,
        default=115_200,
        metavar="RATE",
        help="the rate the firmware boots at, which --port opens with (default 115200)",
    )
    p.add_argument(
        "--baud",
        type=int,
        metavar="RATE",
        help="switch the link to this rate after HELLO (docs/protocol.md, 'Rate switch'; INFO "
        "lists the rates the firmware offers; default: no switch)",
    )
    p.add_argument(
        "--uart",
        type=int,
        choices=(0, 1),
        help="with --qemu: which UART the firmware was built for (default: the one its build "
        "directory's firmware.json or manifest.json names, else 0)",
    )
    p.add_argument("--timeout", type=float, default=2.0, help="reply time-out in seconds")
    p.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        metavar="S",
        help="seconds the device may take to boot and answer, and each request, re-sends "
        f"included ({DEFAULT_BUDGET:g})",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    info = sub.add_parser("info", help="send HELLO and print INFO")
    add_link_arguments(info)
    echo = sub.add_parser("echo", help="echo random payloads and check every byte")
    add_link_arguments(echo)
    echo.add_argument("--count", type=int, default=100, help="number of payloads (default 100)")
    echo.add_argument("--seed", type=int, default=0)


@contextlib.contextmanager
def open_link(args: argparse.Namespace) -> Iterator[Link]:
    if args.qemu is not None:
        stop_on_signals()  # SIGTERM/SIGHUP take QEMU down with this process
        uart = build_uart(args.qemu) if args.uart is None else args.uart
        with Qemu(
            args.qemu, uart=uart, link_timeout=args.timeout, budget=args.budget, flags=FLAGS
        ) as link:
            yield link
    else:
        with Link(
            args.port, baud=args.boot_baud, timeout=args.timeout, budget=args.budget, flags=FLAGS
        ) as link:
            yield link


def run(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    with open_link(args) as link:
        dev = Device(link)
        info = dev.hello(sync_timeout=args.budget)
        if args.baud is not None:
            if args.baud <= 0:
                raise ConfigError(f"--baud {args.baud}: a rate is a positive number of bits/s")
            print(dev.switch_baud(args.baud).note)
            info = dev.hello()
        if args.action == "info":
            print(info.describe())
            print(f"(answered {time.monotonic() - t0:.2f} s after start)")
            return 0
        if args.count < 1:
            raise ConfigError(f"--count={args.count}: must be at least 1")
        rng = random.Random(args.seed)
        t1 = time.monotonic()
        total = 0
        for _ in range(args.count):
            payload = rng.randbytes(rng.randint(0, info.max_payload))
            dev.echo(payload)
            total += len(payload)
        dt = time.monotonic() - t1
        print(
            f"{args.count} echoes, {total} bytes, every byte checked: "
            f"{args.count / dt:.1f} frames/s, {2 * total / dt / 1024:.1f} KiB/s both ways"
        )
    return 0
