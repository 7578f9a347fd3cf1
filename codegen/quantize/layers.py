"""The quantizer of every encoder layer kind (`codegen.ir.layers.KINDS`), by kind name.

``quantize(layer, x_calib, opts, source, x_fmt, weight_shift, index)`` calibrates one float
layer on its float inputs [N, T, F] and returns (fixed layer, calibration statistics, float
outputs); ``weight_search``: whether `codegen.quantize.format_search` moves weight fraction
bits of this kind to its operands (docs/numeric.md §4: GRU layers keep the formats of their
range).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from codegen.base.errors import ConfigError
from codegen.quantize.gru import quantize_gru
from codegen.quantize.lstm import quantize_lstm


@dataclass(frozen=True)
class LayerQuantizer:
    quantize: Callable[..., tuple[Any, Any, Any]]
    weight_search: bool


QUANTIZERS: dict[str, LayerQuantizer] = {
    "lstm": LayerQuantizer(quantize_lstm, weight_search=True),
    "gru": LayerQuantizer(quantize_gru, weight_search=False),
}


def quantizer(layer: Any) -> LayerQuantizer:
    kind = getattr(layer, "kind", None)
    if kind not in QUANTIZERS:
        raise ConfigError(f"no quantizer for a layer of kind {kind!r}: have {sorted(QUANTIZERS)}")
    return QUANTIZERS[str(kind)]
