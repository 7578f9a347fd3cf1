"""The integer reference of every encoder layer kind (`codegen.ir.layers.KINDS`), by kind name.

Each entry runs one fixed layer over int16 inputs [N, T, F] in its ``x_fmt``, as its C kernel
does: ``run(x, q, trace=None, sequence=False)`` -> the pooled output [N, H] (Q0.15), or with
``sequence`` every step's h [N, T, H] (the input of the layer above). Trace points carry the
kernels' names (`codegen.intref.activations`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from codegen.base.errors import ConfigError
from codegen.intref.activations import TraceFn
from codegen.intref.gru import gru_int
from codegen.intref.lstm import lstm_int

INT_LAYERS: dict[str, Callable[..., np.ndarray]] = {
    "lstm": lstm_int,
    "gru": gru_int,
}


def layer_int(x: Any, q: Any, trace: TraceFn | None = None, sequence: bool = False) -> np.ndarray:
    """One fixed layer of any kind (``q.kind``) over int16 inputs."""
    run = INT_LAYERS.get(getattr(q, "kind", ""))
    if run is None:
        raise ConfigError(f"no integer reference for a layer of kind {getattr(q, 'kind', None)!r}")
    return run(x, q, trace=trace, sequence=sequence)
