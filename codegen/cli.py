"""`codegen` command line: one console script, one subcommand per stage.

Each subcommand lives in its own module exposing ``HELP`` (one line), ``add_arguments(parser)``
and ``run(args) -> int``. Modules keep heavy imports (torch) inside ``run`` so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from codegen.base.errors import CodegenError
from codegen.base.version import __version__

# (subcommand, module, one-line help). Order is the order shown in --help. Only the chosen
# subcommand's module is imported: `codegen run` and `codegen inspect` read a build directory
# and need no torch, so they must not pull in the frontend or the trainer.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("data", "codegen.data.cli", "build a data set (built-in, FSDD or your own)"),
    ("train", "codegen.train.fit", "train the source model on clean data"),
    ("basis", "codegen.frontend.basis", "compute the latent basis V_k from clean latents"),
    ("eval", "elatta_measure.evaluate", "float and fixed accuracy of every mode, per condition"),
    ("build", "codegen.pipeline.build", "compile a model, V_k and a config into C and firmware"),
    ("inspect", "codegen.artefact.inspect", "print a build's decisions readably"),
    ("firmware", "codegen.target.firmware", "build the bare runtime firmware"),
    ("board", "elatta_host.board_check", "a board: SD card image, JTAG, boot.scr; check one"),
    ("device", "elatta_host.cli_device", "talk to a device: info, ping"),
    ("run", "elatta_host.run", "stream samples to a device and check every result bit for bit"),
    ("listen", "elatta_host.listen", "keyword spotting on a live stream, checked bit for bit"),
    ("bench", "elatta_measure.bench", "QEMU icount costs of the builds"),
)


def _chosen(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line (the first argument not starting with '-')."""
    names = {name for name, _, _ in COMMANDS}
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in names else None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv``, only the subcommand it names is imported and wired."""
    parser = argparse.ArgumentParser(
        prog="codegen",
        description="ELaTTA firmware compiler and Zynq-7020 test bench.",
    )
    parser.add_argument("--version", action="version", version=f"codegen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    chosen = None if argv is None else _chosen(argv)
    for name, module_name, summary in COMMANDS:
        if chosen is not None and name != chosen:
            sub.add_parser(name, help=summary)
            continue
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=summary, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        return int(args._run(args))
    except CodegenError as exc:
        print(f"codegen {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"codegen {args.command}: interrupted", file=sys.stderr)
        return 130
