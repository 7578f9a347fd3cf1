"""The encoder's layer kinds: what each kind of recurrent layer is, in one table.

An encoder (`codegen.ir.nodes.Model.encoder`, `QModel.encoder`) is a tuple of layers, each of a
kind named here. A kind's entry says which float and fixed IR classes it has, the C kernels the
generated model calls (``firmware/``), and whether the device's streaming audio mode can step
it one frame at a time (docs/numeric.md §7.6). The other stages keep their part of a kind in
their own role package, keyed by the same name (docs/architecture.md §3):

=============================  ==============================================================
stage                          the kind's entry
=============================  ==============================================================
float reference                `codegen.elatta.float_ref.FLOAT_LAYERS`
integer reference              `codegen.intref.layers.INT_LAYERS`
quantizer                      `codegen.quantize.layers.QUANTIZERS`
C emitter                      `codegen.emit.layers.EMITTERS` (and ``templates/layer_<kind>.c.j2``)
=============================  ==============================================================

Adding a kind is one entry in each table plus its modules; ``tests/codegen/ir/test_layers.py``
checks that every table names the same kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codegen.base.errors import ConfigError
from codegen.ir.nodes import Gru, Lstm, QGru, QLstm

# How a kind serves the streaming audio mode: "step" (the kernel's step_begin / step /
# step_end, one frame per call, carrying the layer's state between calls).
STREAMING = ("step",)


@dataclass(frozen=True)
class CKernels:
    """The C a kind's layers compile to (one header, the parameter and scratch types, the
    functions the generated encoder calls). ``run``: a whole sequence, the top layer's pooled
    output; ``run_seq``: a whole sequence, every step's h (an inner layer's output);
    ``step``: (begin, step, end) of the streaming form, () when the kind does not stream."""

    header: str
    params: str
    scratch: str
    run: str
    run_seq: str
    step: tuple[str, ...] = ()


@dataclass(frozen=True)
class LayerKind:
    name: str
    float_type: type
    fixed_type: type
    torch_module: str  # the torch module the frontend reads it from
    c: CKernels
    streaming: str | None  # STREAMING, or None: the audio mode cannot step it
    why_not_streaming: str = ""  # said when ``streaming`` is None

    def __post_init__(self) -> None:
        if self.streaming is not None and self.streaming not in STREAMING:
            raise ValueError(f"{self.name}: streaming={self.streaming!r}, not in {STREAMING}")
        if (self.streaming == "step") != bool(self.c.step):
            raise ValueError(f"{self.name}: streaming 'step' needs the step kernels, and only it")
        if self.streaming is None and not self.why_not_streaming:
            raise ValueError(f"{self.name}: say why the kind does not stream")


KINDS: dict[str, LayerKind] = {
    "lstm": LayerKind(
        name="lstm",
        float_type=Lstm,
        fixed_type=QLstm,
        torch_module="nn.LSTM",
        c=CKernels(
            header="elt_lstm_s16.h",
            params="elt_lstm_s16_params_t",
            scratch="elt_lstm_s16_scratch_t",
            run="elt_lstm_s16_run",
            run_seq="elt_lstm_s16_run_seq",
            step=("elt_lstm_s16_step_begin", "elt_lstm_s16_step", "elt_lstm_s16_step_end"),
        ),
        streaming="step",
    ),
    "gru": LayerKind(
        name="gru",
        float_type=Gru,
        fixed_type=QGru,
        torch_module="nn.GRU",
        c=CKernels(
            header="elt_gru_s16.h",
            params="elt_gru_s16_params_t",
            scratch="elt_gru_s16_scratch_t",
            run="elt_gru_s16_run",
            run_seq="elt_gru_s16_run",
        ),
        streaming=None,
        why_not_streaming="the GRU kernel has no per-step form (firmware/elt_gru_s16.h)",
    ),
}


def kind_of(layer: Any) -> LayerKind:
    """The kind of a float or fixed layer."""
    name = getattr(layer, "kind", None)
    if name not in KINDS:
        raise ConfigError(f"a layer of kind {name!r}: the encoder's kinds are {sorted(KINDS)}")
    return KINDS[str(name)]


def kinds_of(encoder: tuple[Any, ...]) -> list[LayerKind]:
    """The kinds an encoder uses, each once, in the order of their first layer."""
    out: list[LayerKind] = []
    for layer in encoder:
        k = kind_of(layer)
        if k not in out:
            out.append(k)
    return out


def why_not_streaming(encoder: tuple[Any, ...]) -> str | None:
    """None when the audio mode can step every layer of the encoder, else why not."""
    for n, layer in enumerate(encoder):
        k = kind_of(layer)
        if k.streaming is None:
            return f"layer {n} is a {k.name.upper()}: {k.why_not_streaming}"
    return None
