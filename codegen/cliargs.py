"""Command-line arguments several subcommands share, declared once: the model file
(`codegen basis`, `eval`, `build`) and the continual stream protocol (`codegen eval`, `run`).
Light imports only: every subcommand's parser is built at start-up."""

from __future__ import annotations

import argparse
from typing import Any

from codegen.errors import ConfigError
from codegen.streams import ORDERS, StreamSpec


def add_model_arguments(p: argparse.ArgumentParser, **model_kw: Any) -> None:
    """--model (any file `codegen.importer` reads) and --trust-pickle."""
    p.add_argument(
        "--model",
        required=True,
        help="the model: a `codegen train` checkpoint, a state_dict, a torch.export program "
        "(.pt2), a TorchScript archive or an nn.Module saved whole (with --trust-pickle)",
        **model_kw,
    )
    p.add_argument(
        "--trust-pickle",
        action="store_true",
        help="load an nn.Module saved whole: unpickling runs code stored in the file",
    )


def add_stream_arguments(p: argparse.ArgumentParser) -> None:
    """--stream-segment/--stream-order/--stream-seed: the continual protocol (codegen.streams)."""
    p.add_argument(
        "--stream-segment",
        type=int,
        default=None,
        metavar="N",
        help="the continual protocol: one stream of segments of N clips of one condition, then "
        "a switch, state carried across switches (default: each condition on its own)",
    )
    p.add_argument(
        "--stream-order",
        choices=ORDERS,
        default="random",
        help="segment order with --stream-segment (random: seeded shuffle; grouped: condition "
        "by condition)",
    )
    p.add_argument("--stream-seed", type=int, default=0, help="seed of the segment shuffles")


def stream_from_args(args: argparse.Namespace) -> StreamSpec | None:
    """The stream definition the flags give, None without --stream-segment."""
    if args.stream_segment is None:
        return None
    try:
        return StreamSpec(args.stream_segment, args.stream_order, args.stream_seed)
    except ValueError as exc:
        raise ConfigError(f"--stream-segment/--stream-order/--stream-seed: {exc}") from exc
