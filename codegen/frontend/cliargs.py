"""Command-line arguments of the model file, declared once for `codegen basis`, `eval` and `build`.
Light imports only. (The continual stream's flags live beside the stream:
`codegen.data.streams`.)"""

from __future__ import annotations

import argparse
from typing import Any


def add_model_arguments(p: argparse.ArgumentParser, **model_kw: Any) -> None:
    """--model (any file `codegen.frontend.importer` reads) and --trust-pickle."""
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
