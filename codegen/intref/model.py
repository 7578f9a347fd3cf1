"""End-to-end integer reference: int16 features -> integer encoder -> z_t -> integer ELaTTA.

``infer_int`` is what the device computes for a batch of samples, integer for integer: the
encoder's layers (`codegen.intref.layers`: the LSTM of `codegen.intref.lstm`,
``firmware/elt_lstm_s16.c``, or the GRU of `codegen.intref.gru`) hand z_t (int16 Q0.15) to the
adaptation core `codegen.intref.adapt.adapt_int` (``firmware/elt_adapt.c``), after the mode's
input stage where it has one (its integer reference, `codegen.stages.registry`). All read the
integers of one `codegen.ir.nodes.QModel`.

Trace points, in the order the C reports them per sample: ``lstm.c``/``lstm.h`` for every step
t of every layer, ``z``, then the adaptation core's stages (`codegen.intref.adapt.TraceFn`).
The callback is the adaptation core's: ``trace(sample_index, stage, index, values)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.errors import ConfigError
from codegen.base.fixed import rshift_round
from codegen.intref.adapt import IntAdaptResult
from codegen.intref.layers import layer_int
from codegen.ir.modes import mode as device_mode
from codegen.ir.nodes import QModel
from codegen.stages.registry import stage as input_stage
from codegen.stages.stage import IntRun

SampleTraceFn = Callable[[int, str, int, np.ndarray], None]
# every per-sample output: the encoder's z_t, then the adaptation core's fields
RESULT_FIELDS: tuple[str, ...] = ("z", *IntAdaptResult.FIELDS)


@dataclass(frozen=True, eq=False)
class IntInferResult:
    """Per-sample integer outputs of the whole pipeline (every field compared bit-exactly)."""

    z: np.ndarray  # [N, H] int16, Q0.15
    adapt: Any  # codegen.intref.adapt.IntAdaptResult

    def __getattr__(self, name: str) -> Any:
        # pred, logits, H_best, p_best, ... come from the adaptation core's result
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.adapt, name)

    def fields(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(getattr(self, name)) for name in RESULT_FIELDS}


CHUNK = 1024  # samples per adaptation batch (no_adapt, strict): amortises per-call overhead


def params_for_mode(q: QModel, mode: str | None) -> Any:
    """The adaptation parameters with another mode (the integers do not depend on the mode;
    the host library switches the same field of its params copy)."""
    params = q.adapt_params
    if mode is None or mode == params.cfg.mode:
        return params
    from codegen.elatta.float_ref import MODES as SEARCHES

    if mode not in SEARCHES:
        raise ConfigError(f"mode={mode!r} is not a latent search: use one of {SEARCHES}")
    return dataclasses.replace(params, cfg=dataclasses.replace(params.cfg, mode=mode))


def encode_int(features: npt.ArrayLike, q: QModel, trace: Any = None) -> np.ndarray:
    """The integer encoder: its layers bottom to top (each hands its whole output sequence,
    int16 Q0.15, to the next; `codegen.intref.layers`), the last one's pooling, then the MLP
    head's hidden layers -> z [N, D] (Q0.15, or the last hidden layer's format)."""
    z = np.asarray(features)
    last = len(q.encoder) - 1
    for n, layer in enumerate(q.encoder):
        z = layer_int(z, layer, trace=trace, sequence=n < last)
        if n < last:
            z = z.astype(np.int16)
    for d in q.mlp:  # elt_dense_relu_s16: y = sat16(rshift_round(max(W x + b, 0), shift))
        acc = np.asarray(z, np.int64) @ d.w.raw.T.astype(np.int64) + d.b.raw.astype(np.int64)
        z = np.minimum(rshift_round(np.maximum(acc, 0), d.shift), 32767)
    return np.asarray(z)


def infer_int(
    features: npt.ArrayLike,
    q: QModel,
    sample_ids: npt.ArrayLike,
    mode: str | None = None,
    trace: SampleTraceFn | None = None,
) -> IntInferResult:
    """features int16 [N, T, F] in the model's input format -> all per-sample outputs.

    Samples run in row order (the continual modes carry state from row to row, starting from
    a reset state, as the device does after RESET).
    """
    from codegen.intref.adapt import adapt_int

    lstm_trace = None
    if trace is not None:
        tr = trace

        def lstm_trace(stage: str, index: int, values: np.ndarray) -> None:
            for row in range(values.shape[0]):
                tr(row, stage, index, np.asarray(values[row]).reshape(-1).copy())

    m = device_mode(mode or q.adapt_params.cfg.mode)
    if m.before_encoder is not None:
        # the mode's input stage (codegen.stages.registry) in row order from a reset state
        # (RESET): the clips the encoder runs on, or, for a select stage, a second run to choose
        st = input_stage(m.before_encoder)
        run = st.int_ref(np.asarray(features), q.stage_params(st.table.name))
        if run.choose is not None:
            return _infer_chosen(features, run, m.name, q, sample_ids, trace)
        features = run.x
    mode = m.search
    z = encode_int(features, q, trace=lstm_trace).astype(np.int16)
    params = params_for_mode(q, mode)
    ids = np.asarray(sample_ids)
    if (
        trace is not None
        or params.cfg.mode not in ("no_adapt", "strict")
        or len(z) <= CHUNK
        or ids.shape != (len(z),)
    ):  # (adapt_int reports a wrong shape)
        return IntInferResult(z=z, adapt=adapt_int(z, params, ids, trace=trace))
    # Independent samples (per-sample seeds): chunks keep the [N, λ, ·] temporaries in cache.
    parts = [
        adapt_int(z[i : i + CHUNK], params, ids[i : i + CHUNK]) for i in range(0, len(z), CHUNK)
    ]
    merged: dict[str, Any] = {
        f: np.concatenate([getattr(r, f) for r in parts]) for f in parts[0].FIELDS
    }
    for a in merged.values():
        a.setflags(write=False)
    return IntInferResult(z=z, adapt=dataclasses.replace(parts[0], **merged))


def _infer_chosen(
    features: npt.ArrayLike,
    run: IntRun,
    name: str,
    q: QModel,
    sample_ids: npt.ArrayLike,
    trace: SampleTraceFn | None,
) -> IntInferResult:
    """A select stage's mode (`codegen.stages.stage`, e.g. cmvn_select): the clip encoded as
    it is and as the stage gives it (``run.x``), both through no-adapt; the no-adapt fields are
    the raw run's, the answer (pred, logits, H_best, z) the run ``run.choose`` picks."""
    from codegen.intref.adapt import adapt_int

    if trace is not None:
        raise ConfigError(f"mode {name} runs two encoders: trace another mode")
    assert run.choose is not None
    params = params_for_mode(q, "no_adapt")
    ids = np.asarray(sample_ids)
    z0 = encode_int(features, q).astype(np.int16)
    r0 = adapt_int(z0, params, ids)
    z1 = encode_int(run.x, q).astype(np.int16)
    r1 = adapt_int(z1, params, ids)
    use = np.asarray(run.choose(r0, r1), bool)

    def pick(raw: npt.NDArray[Any], norm: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return np.where(use.reshape((-1,) + (1,) * (raw.ndim - 1)), norm, raw)

    fields: dict[str, Any] = {
        "pred": pick(r0.pred_noadapt, r1.pred_noadapt),
        "logits": pick(r0.logits_noadapt, r1.logits_noadapt),
        "H_best": pick(r0.H_noadapt, r1.H_noadapt),
    }
    for a in fields.values():
        a.setflags(write=False)
    z = pick(z0, z1).astype(np.int16)
    return IntInferResult(z=z, adapt=dataclasses.replace(r0, **fields))


def stream_infer_int(
    pcm: npt.ArrayLike,
    q: QModel,
    sample_ids: npt.ArrayLike,
    mode: str | None = None,
    frames: npt.NDArray[np.int16] | None = None,
) -> IntInferResult:
    """The device's streaming audio mode (docs/protocol.md, "Audio mode"), int16 PCM
    [N, samples] -> all per-sample outputs: the integer MFCC front end (`codegen.intref.mfcc`,
    frames as `MfccStream` yields them whatever the chunking), then `infer_int`. The encoder's
    one-step-per-frame run gives the same integers as the whole-sequence LSTM; a frame stage
    (cmvn_causal) transforms frame t from the past only, and a clip or select stage (cmvn,
    cmvn_select) runs on the clip's held frames when it ends, so each equals `infer_int` on the
    front end's frames. A mode the audio
    mode does not serve (`codegen.ir.modes.Mode.audio`) is refused as the device refuses it.
    ``frames``: the front end's frames of ``pcm`` computed already (`mfcc_int`), to share them
    between modes."""
    from codegen.intref.mfcc import mfcc_int

    m = device_mode(mode or q.adapt_params.cfg.mode)
    if not m.audio:
        raise ConfigError(
            f"mode {m.name!r} is not served by the streaming audio mode: {m.why_not_audio}; "
            "stream another mode or use feature input"
        )
    if q.mfcc is None:
        raise ConfigError(
            "this build does not serve the streaming audio mode (see the manifest's "
            '\'streaming\' entry); rebuild with [target] input = "pcm" or "both"'
        )
    x = mfcc_int(np.asarray(pcm), q.mfcc) if frames is None else np.asarray(frames)
    T = q.num_frames
    if x.ndim != 3 or x.shape[1] != T:
        raise ConfigError(
            f"the clips give {x.shape[-2]} feature frames; the model takes exactly T = {T}"
        )
    return infer_int(x, q, sample_ids, mode=mode)
