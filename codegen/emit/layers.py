"""The C emitter of every encoder layer kind (`codegen.ir.layers.KINDS`), by kind name.

An entry gives, for the generated ``<prefix>model.c`` (`codegen.emit.c.model_context`):

- ``layer(prefix, q, n, last)``: layer ``n``'s context for its template (arrays, kernel,
  parameters; the dict names the template);
- ``scratch(prefix, layers, top)``: the scratch the kind's layers share (its template);
- ``run(prefix, layer, x, out, last)``: the call that runs a whole sequence;
- ``seq_size(q)``: the int16 an inner layer's output sequence takes;
- ``tables``: the shared σ tables its kernels read (``sigmoid_lut``, ``sigmoid_pairs``; an LSTM
  layer's kernel generated with the exhaustive tables, `codegen.emit.views.ACT_TABLES`, adds
  ``sigmoid_full`` and ``tanh_full``);
- ``stream(prefix, q, n, last, x, z, t, scratch)``: the layer's state and calls in the
  streaming audio mode, for the kinds that stream (`codegen.ir.layers.LayerKind.streaming`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from codegen.base.errors import ConfigError
from codegen.emit import gru, lstm


@dataclass(frozen=True)
class LayerEmitter:
    layer: Callable[..., dict[str, Any]]
    scratch: Callable[..., dict[str, Any]]
    run: Callable[..., Any]
    seq_size: Callable[[Any], int]
    tables: tuple[str, ...]
    stream: Callable[..., dict[str, Any]] | None = None


EMITTERS: dict[str, LayerEmitter] = {
    "lstm": LayerEmitter(
        layer=lstm.layer_context,
        scratch=lstm.scratch_context,
        run=lstm.run_call,
        seq_size=lstm.seq_size,
        tables=("sigmoid_lut", "sigmoid_pairs"),
        stream=lstm.stream_context,
    ),
    "gru": LayerEmitter(
        layer=gru.layer_context,
        scratch=gru.scratch_context,
        run=gru.run_call,
        seq_size=gru.seq_size,
        tables=("sigmoid_lut", "sigmoid_pairs"),
    ),
}


def emitter(layer: Any) -> LayerEmitter:
    kind = getattr(layer, "kind", None)
    if kind not in EMITTERS:
        raise ConfigError(f"no C emitter for a layer of kind {kind!r}: have {sorted(EMITTERS)}")
    return EMITTERS[str(kind)]
