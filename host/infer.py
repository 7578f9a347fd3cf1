"""INFER / RESULT / RESET payloads of the model runtime (docs/protocol.md, "Model runtime";
device side ``firmware/fw_app_kws.c``), laid out as ``codegen.ir.wire`` describes them (INFER,
RESULT, RESET). Little-endian throughout. RESET is empty (p_prev = 0) or p_prev (resume a
continual stream).

Audio mode (docs/protocol.md, "Audio mode"): AUDIO_BEGIN, then AUDIO chunks (or AUDIO_ADPCM
blocks), then AUDIO_END, answered with RESULT followed by the front end's and the link's figures
(``wire.RESULT_STREAM``); AUDIO_BEGIN and the chunks have no reply of their own (the link
acknowledges them).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields

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
# the single values after RESULT's arrays (the front end's, the link's and the unpacking's
# figures of the answer to AUDIO_END; the link's of INFER's): None in a result that lacks them
STREAM_TICKS: tuple[str, ...] = tuple(f.name for f in wire.RESULT_STREAM.arrays if f.count == "1")
# RESULT's arrays, kept as tuples
_ARRAYS = frozenset(f.name for f in wire.RESULT.arrays if f.count != "1")
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
    """One RESULT, every field as the device sent it (integers, compared exactly): the fields of
    ``wire.RESULT_STREAM`` but its sizes (tests/codegen/ir/test_wire.py keeps the two lists equal),
    the one list of them the host keeps."""

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
        """Every field in order, arrays as lists; a figure the result lacks is left out."""
        out: dict[str, object] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None:
                out[f.name] = list(v) if f.name in _ARRAYS else v
        return out

    @classmethod
    def from_json(cls, d: dict[str, object]) -> InferResult:
        def value(key: str) -> int | tuple[int, ...] | None:
            v = d.get(key) if key in STREAM_TICKS else d[key]
            if key in _ARRAYS:
                assert isinstance(v, list), key
                return tuple(int(x) for x in v)
            if v is None and key in STREAM_TICKS:
                return None
            assert isinstance(v, int), key
            return v

        return cls(**{f.name: value(f.name) for f in fields(cls)})  # type: ignore[arg-type]


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
