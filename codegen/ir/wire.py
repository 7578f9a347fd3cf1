"""The model runtime's payloads on the link, described once (docs/protocol.md, "Model runtime"
and "Audio mode"; docs/stream.md, the continuous mode): the firmware's offsets
(``firmware/fw_app_wire.h``, generated from this table) and the host codecs
(``elatta_host.infer``, ``elatta_host.listen``, which build their structs from it) all come
from here, and tests/codegen/ir/test_wire.py fails when either departs. Little-endian throughout; a
payload is its fixed part (the scalar fields, in order) then its arrays, each as long as the
symbol in ``count`` says (k latent coefficients, C classes, H latent units, T*F features, n
samples of a chunk, nd detections and nw window records of a DETECTIONS, or a number).

The link layer's fixed payloads (the frame header, HELLO, ERROR, STATUS, BAUD, BAUD_ACK, INFO
and its board and link blocks) are described the same way in ``codegen.ir.link_wire``
(``firmware/fw_link_wire.h``, ``elatta_host.protocol``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from codegen.base.resources import jinja_env

# struct codes and sizes of the field types ("char": ASCII text, NUL-padded to its width)
TYPES: dict[str, tuple[str, int]] = {
    "char": ("s", 1),
    "u8": ("B", 1),
    "u16": ("H", 2),
    "u32": ("I", 4),
    "i16": ("h", 2),
    "i32": ("i", 4),
    "u64": ("Q", 8),
}


# a fixed-part field's value: a number, a char run's bytes, another run's numbers
Value = int | bytes | tuple[int, ...]


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # a key of TYPES
    doc: str
    count: str | None = None  # None: one value; else the symbol of the array's length
    # a run of this many values inside the fixed part (char[24], u32[8]); only without count
    width: int = 1

    @property
    def size(self) -> int:
        """Bytes of one element of an array; of the whole run in the fixed part."""
        return TYPES[self.type][1] * self.width

    @property
    def code(self) -> str:
        """Its struct code in a fixed format: a char run is one bytes value, another run width
        values."""
        return TYPES[self.type][0] if self.width == 1 else f"{self.width}{TYPES[self.type][0]}"


@dataclass(frozen=True)
class Payload:
    name: str  # the message it travels in
    doc: str
    fields: tuple[Field, ...]

    def __post_init__(self) -> None:
        seen_array = False
        for f in self.fields:
            if f.type not in TYPES:
                raise ValueError(f"{self.name}.{f.name}: type {f.type!r} not in {sorted(TYPES)}")
            if f.count is None and seen_array:
                raise ValueError(f"{self.name}.{f.name}: a scalar after an array has no offset")
            if f.width < 1 or (f.width > 1 and f.count is not None):
                raise ValueError(
                    f"{self.name}.{f.name}: width {f.width}: a run of the fixed part is >= 1 "
                    "values and has no count"
                )
            if f.type == "char" and f.count is not None:
                raise ValueError(f"{self.name}.{f.name}: text is a run of the fixed part (width)")
            seen_array = seen_array or f.count is not None

    @property
    def fixed(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.count is None)

    @property
    def arrays(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.count is not None)

    @property
    def fixed_format(self) -> str:
        return "<" + "".join(f.code for f in self.fixed)

    @property
    def fixed_size(self) -> int:
        return struct.calcsize(self.fixed_format)

    def offsets(self) -> dict[str, int]:
        out, o = {}, 0
        for f in self.fixed:
            out[f.name] = o
            o += f.size
        return out

    def size(self, **counts: int) -> int:
        """The whole payload's bytes for the array lengths ``counts`` (symbol -> length)."""
        total = self.fixed_size
        for f in self.arrays:
            n = 1
            for sym in f.count.split("*") if f.count else ():
                n *= int(sym) if sym.isdigit() else counts[sym]
            total += n * f.size
        return total

    def unpack(self, data: bytes, *, partial: bool = False) -> dict[str, Value]:
        """The fixed part's values by name (a char run as its bytes, NULs stripped; another run
        as a tuple). ``partial``: ``data`` may end early, and only the fields it holds whole are
        read (a block of an older firmware, before a field was added)."""
        if not partial and len(data) < self.fixed_size:
            raise ValueError(
                f"{self.name} payload of {len(data)} bytes, expected >= {self.fixed_size}"
            )
        out: dict[str, Value] = {}
        for f, o in zip(self.fixed, self.offsets().values(), strict=True):
            if o + f.size > len(data):
                break
            got = struct.unpack_from("<" + f.code, data, o)
            if f.type == "char":
                out[f.name] = bytes(got[0]).rstrip(b"\0")
            else:
                out[f.name] = got[0] if f.width == 1 else tuple(got)
        return out

    def pack(self, **values: Value) -> bytes:
        """The fixed part from every field's value (a char run's bytes are NUL-padded, a shorter
        run of numbers zero-filled); a missing or unknown name is refused."""
        names = [f.name for f in self.fixed]
        if sorted(values) != sorted(names):
            raise ValueError(f"{self.name}: values for {sorted(values)}, expected {sorted(names)}")
        flat: list[int | bytes] = []
        for f in self.fixed:
            v = values[f.name]
            if f.type == "char" or f.width == 1:
                flat.append(v)  # type: ignore[arg-type]
            else:
                run = tuple(v)  # type: ignore[arg-type]
                if len(run) > f.width:
                    raise ValueError(f"{self.name}.{f.name}: {len(run)} values, at most {f.width}")
                flat += [*run, *([0] * (f.width - len(run)))]
        return struct.pack(self.fixed_format, *flat)


_RESULT_FIELDS = (
    Field("sample_id", "u32", "the request's sample id"),
    Field("mode", "u8", "the mode byte (codegen.ir.modes)"),
    Field("C", "u8", "classes"),
    Field("k", "u8", "latent coefficients searched"),
    Field("H", "u8", "latent units"),
    Field("pred_noadapt", "i32", "argmax of the no-adapt logits"),
    Field("pred", "i32", "argmax of the adapted logits"),
    Field("H_noadapt", "i32", "entropy of the no-adapt prediction, Q5.26"),
    Field("H_best", "i32", "entropy of the best candidate, Q5.26"),
    Field("n_pivot_fix", "i32", "Cholesky pivots raised to the floor"),
    Field("ticks_encoder", "u32", "global-timer ticks of the encoder"),
    Field("ticks_adapt", "u32", "ticks of the adaptation (and input stage)"),
    Field("ticks_total", "u32", "ticks of the whole request"),
    Field("p_best", "i32", "the best coefficients, Q4.27", "k"),
    Field("logits_noadapt", "i16", "no-adapt logits", "C"),
    Field("logits", "i16", "adapted logits", "C"),
    Field("z", "i16", "the latent z_t, Q0.15", "H"),
)

INFER = Payload(
    "INFER",
    "one sample's features, answered with RESULT",
    (
        Field("sample_id", "u32", "the host's sample id (seeds the per-sample search)"),
        Field("mode", "u8", "the mode byte (codegen.ir.modes)"),
        Field("T", "u16", "frames, checked against the build"),
        Field("F", "u16", "features per frame, checked against the build"),
        Field("features", "i16", "features [T][F] in the model's input format", "T*F"),
    ),
)
_LINK_FIELDS = (
    Field(
        "ticks_link",
        "u32",
        "ticks of the link layer from the previous request's handling to this one's (UART reads, "
        "COBS, CRC-32, checks, replies)",
        "1",
    ),
    Field("link_bytes", "u32", "bytes received over the same span", "1"),
)
RESULT = Payload(
    "RESULT",
    "the answer to INFER: its fields, then the link's ticks and bytes since the request before",
    (*_RESULT_FIELDS, *_LINK_FIELDS),
)
RESULT_STREAM = Payload(
    "RESULT",
    "the answer to AUDIO_END: INFER's RESULT, then the front end's, the link's and the PCM "
    "unpacking's ticks",
    (
        *_RESULT_FIELDS,
        Field("ticks_frontend", "u32", "ticks of the integer MFCC front end", "1"),
        Field(
            "ticks_link",
            "u32",
            "ticks of the link layer from the end of the request before AUDIO_BEGIN to AUDIO_END "
            "(UART reads, COBS, CRC-32, checks, replies)",
            "1",
        ),
        Field("link_bytes", "u32", "bytes received over the same span", "1"),
        Field(
            "ticks_unpack",
            "u32",
            "ticks of copying the PCM out of the AUDIO payloads (0: the front end takes the "
            "samples from them, in ticks_frontend)",
            "1",
        ),
    ),
)
AUDIO_BEGIN = Payload(
    "AUDIO_BEGIN",
    "opens an utterance; no reply of its own (the link's STATUS acknowledges it)",
    (
        Field("sample_id", "u32", "the host's sample id"),
        Field("mode", "u8", "the mode byte; a mode the audio mode does not serve is refused"),
    ),
)
AUDIO = Payload(
    "AUDIO",
    "a chunk of the utterance, taken only at the next expected offset; no reply of its own",
    (
        Field("offset", "u32", "the chunk's first sample in the utterance"),
        Field("pcm", "i16", "int16 PCM samples", "n"),
    ),
)
AUDIO_ADPCM = Payload(
    "AUDIO_ADPCM",
    "AUDIO with its samples as one IMA-ADPCM block (codegen/base/adpcm.py): the decoder's state "
    "at the block's first sample, then the codes; no reply of its own",
    (
        Field("offset", "u32", "the chunk's first sample in the utterance"),
        Field("samples", "u16", "samples in the block"),
        Field("predictor", "i16", "the decoder's prediction before the first code"),
        Field("step_index", "u8", "the decoder's step index, 0..88"),
        Field("reserved", "u8", "0"),
        Field("codes", "u8", "4-bit codes, two a byte, the earlier sample in the low nibble", "nb"),
    ),
)
AUDIO_END = Payload(
    "AUDIO_END",
    "closes the utterance, answered with RESULT (RESULT_STREAM)",
    (Field("samples", "u32", "the utterance's sample count, checked by the device"),),
)
RESET = Payload(
    "RESET",
    "clears the continual state; with k values, sets p_prev (a resume)",
    (Field("p_prev", "i32", "p_prev, Q4.27 (absent: p_prev = 0)", "k"),),
)

# The continuous mode (docs/stream.md): a stream with no clip boundaries, scored every few hops.
STREAM_BEGIN = Payload(
    "STREAM_BEGIN",
    "opens a continuous stream: resets the front end, the input statistics and the detector; no "
    "reply of its own",
    (
        Field("mode", "u8", "the mode byte; only a mode without a latent search is served"),
        Field("flags", "u8", "bit 0: DETECTIONS carry their windows' records"),
        Field("every", "u8", "hops between two scored windows, 1..255"),
        Field("smooth", "u8", "scored windows the probabilities are averaged over"),
        Field("threshold", "u16", "the smoothed probability that detects, Q0.15, 0..32768"),
        Field("suppress", "u16", "hops after a detection in which no other is made"),
        Field("keywords", "u32", "bit c set: class c may be detected"),
    ),
)
STREAM = Payload(
    "STREAM",
    "a chunk of the stream, taken only at the next expected offset; answered with DETECTIONS",
    (
        Field("offset", "u32", "the chunk's first sample in the stream"),
        Field("pcm", "i16", "int16 PCM samples", "n"),
    ),
)
STREAM_ADPCM = Payload(
    "STREAM_ADPCM",
    "STREAM with its samples as one IMA-ADPCM block (as AUDIO_ADPCM); answered with DETECTIONS",
    (
        Field("offset", "u32", "the chunk's first sample in the stream"),
        *AUDIO_ADPCM.fields[1:],
    ),
)
DETECTIONS = Payload(
    "DETECTIONS",
    "the answer to a STREAM chunk: the detections the chunk completed (possibly none) and, on "
    "request, the record of every window it completed",
    (
        Field("offset", "u32", "the chunk's offset (echo)"),
        Field("frames", "u32", "feature frames computed since STREAM_BEGIN"),
        Field("windows", "u8", "window records that follow (0 unless asked for)"),
        Field("detections", "u8", "detections that follow"),
        Field("det_frame", "u32", "the frame that completed the detecting window", "nd"),
        Field("det_class", "u8", "the detected class", "nd"),
        Field("det_score", "u16", "its smoothed probability, Q0.15", "nd"),
        Field("win_frame", "u32", "the window's last frame", "nw"),
        Field("win_class", "u8", "argmax of the smoothed probabilities", "nw"),
        Field("win_flags", "u8", "bit 0: the normalised run answered; bit 1: it detects", "nw"),
        Field("win_score", "u16", "the smoothed probability of win_class, Q0.15", "nw"),
        Field("win_logits", "i16", "the window's logits (the answering run's)", "nw*C"),
    ),
)
STREAM_END = Payload(
    "STREAM_END",
    "closes the stream, answered with STREAM_SUMMARY",
    (Field("samples", "u32", "the stream's sample count, checked by the device"),),
)
STREAM_SUMMARY = Payload(
    "STREAM_SUMMARY",
    "the answer to STREAM_END: what the stream took, in global-timer ticks",
    (
        Field("samples", "u32", "samples received"),
        Field("frames", "u32", "feature frames computed"),
        Field("windows", "u32", "windows scored"),
        Field("detections", "u32", "detections made"),
        Field("ticks_frontend", "u64", "the integer MFCC front end (and ADPCM decoding)"),
        Field("ticks_encoder", "u64", "the encoder over every window (both runs of cmvn_select)"),
        Field("ticks_adapt", "u64", "the input normalisation, the head and the choice"),
        Field("ticks_detect", "u64", "probabilities, smoothing, threshold and suppression"),
        Field("ticks_total", "u64", "every request of the stream"),
        Field("ticks_link", "u64", "the link layer from the request before STREAM_BEGIN"),
        Field("link_bytes", "u64", "bytes received over the same span"),
    ),
)

# The most samples an AUDIO_ADPCM block may carry (the device's decode buffer, on its stack).
ADPCM_MAX_SAMPLES = 1024
# The most windows one STREAM chunk may complete (a DETECTIONS reply's records) and the most
# windows the score may be averaged over (the detector's history).
STREAM_MAX_WINDOWS = 4
STREAM_SMOOTH_MAX = 16

# C names: APP_<NAME>_*
PAYLOADS: dict[str, Payload] = {
    "INFER": INFER,
    "RESULT": RESULT,
    "RESULT_STREAM": RESULT_STREAM,
    "AUDIO_BEGIN": AUDIO_BEGIN,
    "AUDIO": AUDIO,
    "AUDIO_ADPCM": AUDIO_ADPCM,
    "AUDIO_END": AUDIO_END,
    "RESET": RESET,
    "STREAM_BEGIN": STREAM_BEGIN,
    "STREAM": STREAM,
    "STREAM_ADPCM": STREAM_ADPCM,
    "DETECTIONS": DETECTIONS,
    "STREAM_END": STREAM_END,
    "STREAM_SUMMARY": STREAM_SUMMARY,
}


def render_c_header() -> str:
    """``firmware/fw_app_wire.h`` (templates/fw_app_wire.h.j2), before clang-format."""
    return (
        jinja_env()
        .get_template("fw_app_wire.h.j2")
        .render(
            payloads=[(name, p, p.offsets()) for name, p in PAYLOADS.items()],
            adpcm_max=ADPCM_MAX_SAMPLES,
            stream_max_windows=STREAM_MAX_WINDOWS,
            stream_smooth_max=STREAM_SMOOTH_MAX,
        )
    )


if __name__ == "__main__":  # the header, before clang-format (see its banner)
    print(render_c_header(), end="")
