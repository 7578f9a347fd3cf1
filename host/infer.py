"""INFER / RESULT / RESET payloads of the model runtime (docs/protocol.md, "Model runtime";
device side ``firmware/fw_app_kws.c``). Little-endian throughout.

INFER   ``sample_id:u32 mode:u8 T:u16 F:u16 features:i16[T*F]``
RESULT  ``sample_id:u32 mode:u8 C:u8 k:u8 H:u8 pred_noadapt:i32 pred:i32 H_noadapt:i32
        H_best:i32 n_pivot_fix:i32 ticks_encoder:u32 ticks_adapt:u32 ticks_total:u32
        p_best:i32[k] logits_noadapt:i16[C] logits:i16[C] z:i16[H]``
RESET   empty (p_prev = 0) or ``p_prev:i32[k]`` (resume a continual stream)

Audio mode (docs/protocol.md, "Audio mode"): ``AUDIO_BEGIN sample_id:u32 mode:u8``, then
``AUDIO offset:u32 pcm:i16[n]`` chunks (or ``AUDIO_ADPCM`` blocks), then ``AUDIO_END
samples:u32``, answered with RESULT followed by the front end's and the link's figures;
AUDIO_BEGIN and the chunks have no reply of their own (the link acknowledges them).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from codegen.ir import wire
from codegen.ir.modes import CONTINUAL_MODES, DEVICE_MODES, MODE_IDS, STREAM_MODES

# The mode byte of INFER and RESULT, the modes that carry p_prev and those the audio mode
# serves: all from the one mode table (codegen.ir.modes, firmware/elt_modes.h).
__all__ = ["CONTINUAL_MODES", "DEVICE_MODES", "STREAM_MODES"]
# The fixed parts of the payloads, from the one description (codegen.ir.wire) the firmware's
# offsets (firmware/fw_app_wire.h) come from too.
INFER_HDR = struct.Struct(wire.INFER.fixed_format)
AUDIO_BEGIN = struct.Struct(wire.AUDIO_BEGIN.fixed_format)
AUDIO_HDR = struct.Struct(wire.AUDIO.fixed_format)
AUDIO_END = struct.Struct(wire.AUDIO_END.fixed_format)
AUDIO_ADPCM_HDR = struct.Struct(wire.AUDIO_ADPCM.fixed_format)
RESULT_FIXED = struct.Struct(wire.RESULT.fixed_format)
# RESULT's sizes (C, k, H) are checked against the payload's length, not kept
_SIZES = ("C", "k", "H")
# The link's measurements (ticks and bytes received since the request before): not results
_LINK = ("ticks_link", "link_bytes")
# Fields compared bit-exactly with the integer reference (every field but sizes, ticks and the
# link's bytes).
COMPARED_FIELDS: tuple[str, ...] = tuple(
    f.name
    for f in wire.RESULT.fields
    if f.name not in _SIZES and f.name not in _LINK and not f.name.startswith("ticks_")
)


def mode_index(mode: str) -> int:
    try:
        return MODE_IDS[mode]
    except KeyError:
        raise ValueError(f"mode {mode!r}: use one of {DEVICE_MODES}") from None


def encode_infer(sample_id: int, mode: int, features: npt.ArrayLike) -> bytes:
    """INFER payload for int16 features [T, F] (already in the model's input format)."""
    x = np.asarray(features)
    if x.ndim != 2 or x.dtype != np.int16:
        raise ValueError(f"features must be int16 [T, F], got {x.dtype} {x.shape}")
    T, F = x.shape
    return INFER_HDR.pack(sample_id & 0xFFFFFFFF, mode, T, F) + x.astype("<i2").tobytes()


def encode_reset(p_prev: tuple[int, ...] | None = None) -> bytes:
    """RESET payload: empty, or the continual state to resume from (Q4.27 raw)."""
    return b"" if p_prev is None else struct.pack(f"<{len(p_prev)}i", *p_prev)


@dataclass(frozen=True)
class InferResult:
    """One RESULT, every field as the device sent it (integers, compared exactly)."""

    sample_id: int
    mode: int
    pred_noadapt: int
    pred: int
    H_noadapt: int
    H_best: int
    n_pivot_fix: int
    ticks_encoder: int
    ticks_adapt: int
    ticks_total: int
    p_best: tuple[int, ...]
    logits_noadapt: tuple[int, ...]
    logits: tuple[int, ...]
    z: tuple[int, ...]
    ticks_frontend: int | None = None  # audio mode: the integer MFCC front end's ticks
    # audio mode: the link layer's ticks and received bytes over the utterance, and the ticks of
    # copying the PCM out of the payloads (codegen.ir.wire RESULT_STREAM)
    ticks_link: int | None = None
    link_bytes: int | None = None
    ticks_unpack: int | None = None

    def compared(self) -> dict[str, int | tuple[int, ...]]:
        return {name: getattr(self, name) for name in COMPARED_FIELDS}

    def to_json(self) -> dict[str, object]:
        return {
            "sample_id": self.sample_id,
            "mode": self.mode,
            "pred_noadapt": self.pred_noadapt,
            "pred": self.pred,
            "H_noadapt": self.H_noadapt,
            "H_best": self.H_best,
            "n_pivot_fix": self.n_pivot_fix,
            "ticks_encoder": self.ticks_encoder,
            "ticks_adapt": self.ticks_adapt,
            "ticks_total": self.ticks_total,
            "p_best": list(self.p_best),
            "logits_noadapt": list(self.logits_noadapt),
            "logits": list(self.logits),
            "z": list(self.z),
        } | {k: getattr(self, k) for k in STREAM_TICKS if getattr(self, k) is not None}

    @classmethod
    def from_json(cls, d: dict[str, object]) -> InferResult:
        def tup(key: str) -> tuple[int, ...]:
            v = d[key]
            assert isinstance(v, list)
            return tuple(int(x) for x in v)

        def num(key: str) -> int:
            v = d[key]
            assert isinstance(v, int)
            return v

        return cls(
            num("sample_id"),
            num("mode"),
            num("pred_noadapt"),
            num("pred"),
            num("H_noadapt"),
            num("H_best"),
            num("n_pivot_fix"),
            num("ticks_encoder"),
            num("ticks_adapt"),
            num("ticks_total"),
            tup("p_best"),
            tup("logits_noadapt"),
            tup("logits"),
            tup("z"),
            *(None if d.get(k) is None else num(k) for k in STREAM_TICKS),
        )


# the fields RESULT of AUDIO_END appends to INFER's RESULT
STREAM_TICKS = ("ticks_frontend", "ticks_link", "link_bytes", "ticks_unpack")


def encode_audio_begin(sample_id: int, mode: int) -> bytes:
    """AUDIO_BEGIN payload: opens an utterance in a mode the audio mode serves."""
    return AUDIO_BEGIN.pack(sample_id & 0xFFFFFFFF, mode)


def encode_audio(offset: int, pcm: npt.ArrayLike) -> bytes:
    """AUDIO payload: int16 samples pcm, the first being sample ``offset`` of the utterance."""
    x = np.asarray(pcm)
    if x.ndim != 1 or x.dtype != np.int16:
        raise ValueError(f"audio chunks must be int16 [n], got {x.dtype} {x.shape}")
    return AUDIO_HDR.pack(offset) + x.astype("<i2").tobytes()


def encode_audio_end(samples: int) -> bytes:
    """AUDIO_END payload: the utterance's sample count (the device checks it)."""
    return AUDIO_END.pack(samples)


def encode_audio_adpcm(
    offset: int, samples: int, predictor: int, index: int, codes: bytes
) -> bytes:
    """AUDIO_ADPCM payload: one IMA-ADPCM block of ``samples`` samples starting at sample
    ``offset``, the decoder's state at its first sample, its codes two a byte (low nibble
    first)."""
    if len(codes) != (samples + 1) // 2:
        raise ValueError(
            f"{samples} samples take {(samples + 1) // 2} code bytes, got {len(codes)}"
        )
    return AUDIO_ADPCM_HDR.pack(offset, samples, predictor, index, 0) + codes


def max_chunk_samples(max_payload: int, codec: str = "raw") -> int:
    """The most samples one AUDIO (raw) or AUDIO_ADPCM frame carries under a device's
    MAX_PAYLOAD."""
    if codec == "adpcm":
        return min(0xFFFF, 2 * (max_payload - AUDIO_ADPCM_HDR.size))
    return (max_payload - AUDIO_HDR.size) // 2


def decode_result(payload: bytes, *, stream: bool = False) -> InferResult:
    """A RESULT; ``stream``: the answer to AUDIO_END (the front end's ticks appended). Read field
    by field as codegen.ir.wire describes it."""
    layout = wire.RESULT_STREAM if stream else wire.RESULT
    if len(payload) < RESULT_FIXED.size:
        raise ValueError(f"RESULT of {len(payload)} bytes, expected >= {RESULT_FIXED.size}")
    values: dict[str, object] = dict(
        zip((f.name for f in layout.fixed), RESULT_FIXED.unpack_from(payload), strict=True)
    )
    counts = {s: int(values[s]) for s in _SIZES}  # type: ignore[call-overload]
    want = layout.size(**counts)
    if len(payload) != want:
        raise ValueError(
            f"RESULT of {len(payload)} bytes, expected {want} for C={counts['C']} "
            f"k={counts['k']} H={counts['H']}"
        )
    o = RESULT_FIXED.size
    for f in layout.arrays:
        n = int(f.count) if f.count and f.count.isdigit() else counts[str(f.count)]
        got = struct.unpack_from(f"<{n}{wire.TYPES[f.type][0]}", payload, o)
        values[f.name] = tuple(got) if f.count and not f.count.isdigit() else got[0]
        o += n * f.size
    return InferResult(**{k: v for k, v in values.items() if k not in _SIZES})  # type: ignore[arg-type]


@dataclass(frozen=True)
class AppInfo:
    """INFO's application description (``key=value`` pairs, firmware/fw_app_model.h)."""

    fields: tuple[tuple[str, str], ...]

    def get(self, key: str) -> str | None:
        return dict(self.fields).get(key)

    def shape(self) -> tuple[int, int]:
        T, F = self.get("T"), self.get("F")
        if T is None or F is None:
            raise ValueError("the device's description has no T/F: is a model linked?")
        return int(T), int(F)


def parse_description(app: bytes) -> AppInfo:
    pairs = []
    for item in app.decode("ascii", "replace").split():
        key, _, value = item.partition("=")
        pairs.append((key, value))
    return AppInfo(tuple(pairs))
