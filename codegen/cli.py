"""`codegen` command line: one console script, one subcommand per stage.

Each subcommand lives in its own module exposing ``HELP`` (one line), ``add_arguments(parser)``
and ``run(args) -> int``. Modules keep heavy imports (torch) inside ``run`` so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from codegen import __version__
from codegen.errors import CodegenError

# (subcommand, module). Order is the order shown in --help.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("data", "codegen.data.cli"),
    ("train", "codegen.train"),
    ("basis", "codegen.basis"),
    ("eval", "codegen.evaluate"),
    ("build", "codegen.build"),
    ("inspect", "codegen.inspect_cmd"),
    ("firmware", "codegen.firmware_build"),
    ("device", "elatta_host.cli_device"),
    ("run", "elatta_host.run"),
    ("bench", "codegen.bench"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="codegen",
        description="ELaTTA firmware compiler and Zynq-7020 test bench.",
    )
    parser.add_argument("--version", action="version", version=f"codegen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module_name in COMMANDS:
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args))
    except CodegenError as exc:
        print(f"codegen {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"codegen {args.command}: interrupted", file=sys.stderr)
        return 130
