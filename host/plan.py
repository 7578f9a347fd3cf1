"""What a run streams: the build's program, the chosen clips per (mode, condition) and their
integer and float references (`make_plan`); and the record of one answered sample.

Selection. Every additive condition (noise x SNR) of the data set; ``--limit N`` takes about
N / (number of conditions) clips of each (at least one), dealt by `codegen.data.selection.deal` so
the union covers as many distinct utterances as possible, every class evenly.

Streams. One *stream* per (mode, condition): the device gets RESET, then the condition's clips
in order. The continual modes carry p_prev from clip to clip inside a stream only, and the
integer reference (`codegen.intref.model.infer_int`, which starts from a reset state) runs the
same stream, so results do not depend on how streams are spread over devices.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from elatta_host.infer import InferResult, mode_index

from codegen.base.adpcm import AdpcmClips, decode, encode
from codegen.base.errors import CodegenError
from codegen.data.streams import StreamSpec, build_stream
from codegen.ir.layers import why_not_streaming
from codegen.ir.modes import mode as device_mode


class RunError(CodegenError):
    """The run could not start or a device stopped answering."""


# --wire adpcm: the samples between two block headers the host keeps (an AUDIO_ADPCM chunk
# starts at a multiple of it)
ADPCM_BLOCK = 64


# ----------------------------------------------------------------------------- selection


@dataclass(frozen=True, eq=False)
class Stream:
    """One ordered stream in one mode: RESET, then these clips. By default a stream is one
    condition's clips; with a stream definition (`codegen.data.streams.StreamSpec`) it is the mode's
    whole continual stream, segments of several conditions one after the other."""

    key: str  # "<mode>/<noise>/<snr>", or "<mode>/stream"
    mode: str
    noises: np.ndarray  # str [n]: each clip's noise
    snrs: np.ndarray  # float64 [n]: each clip's SNR
    positions: np.ndarray  # int64 [n]: position in its segment (0 = first clip after a switch)
    ids: np.ndarray  # int64 [n]
    labels: np.ndarray  # int64 [n]
    x: np.ndarray  # int16 [n, T, F] in the model's input format
    ref: dict[str, np.ndarray]  # integer reference, codegen.intref.model.RESULT_FIELDS
    float_pred: np.ndarray  # float64 reference: adapted class
    float_pred0: np.ndarray  # float64 reference: no-adapt class
    fixed_pred0: np.ndarray  # integer reference: no-adapt class (in cmvn, without cmvn)
    # int16 [n, samples]: the clips' mixed audio when the run streams PCM (the audio mode),
    # None for feature input; with --wire adpcm the audio as the device decodes it
    pcm: np.ndarray | None = None
    # --wire adpcm: the clips IMA-ADPCM coded in blocks of ADPCM_BLOCK samples (the host cuts
    # AUDIO_ADPCM chunks at those boundaries, each with its block's header)
    adpcm: AdpcmClips | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def expected(self, i: int) -> dict[str, Any]:
        """The RESULT fields the device must send for clip i (integers)."""
        r = self.ref
        return {
            "sample_id": int(self.ids[i]) & 0xFFFFFFFF,
            "mode": mode_index(self.mode),
            "pred_noadapt": int(r["pred_noadapt"][i]),
            "pred": int(r["pred"][i]),
            "H_noadapt": int(r["H_noadapt"][i]),
            "H_best": int(r["H_best"][i]),
            "n_pivot_fix": int(r["n_pivot_fix"][i]),
            "p_best": tuple(int(v) for v in r["p_best"][i]),
            "logits_noadapt": tuple(int(v) for v in r["logits_noadapt"][i]),
            "logits": tuple(int(v) for v in r["logits"][i]),
            "z": tuple(int(v) for v in r["z"][i]),
        }


@dataclass(frozen=True)
class ClipSelection:
    modes: tuple[str, ...]
    per_condition: tuple[tuple[str, int], ...]  # (condition key, clips)
    distinct_utterances: int  # distinct test utterances the union of conditions covers
    available_utterances: int  # distinct test utterances the data set has
    stream: dict[str, Any] | None = None  # the stream definition, None: one per condition

    def digest(self) -> str:
        doc = [self.modes, self.per_condition, self.stream]
        return hashlib.sha256(json.dumps(doc).encode()).hexdigest()


@dataclass(frozen=True, eq=False)
class Plan:
    manifest: dict[str, Any]
    data_dir: Path
    data_info: dict[str, Any]
    streams: tuple[Stream, ...]
    selection: ClipSelection

    @property
    def total(self) -> int:
        return sum(len(s) for s in self.streams)


def load_build(build_dir: Path) -> tuple[dict[str, Any], Any]:
    """The build's manifest and its frozen program (`codegen.artefact.program`): the fixed IR
    exactly as
    `codegen build` decided it, without the checkpoint, basis, config or calibration data."""
    from codegen.artefact.program import ProgramError, load_manifest, load_program

    try:
        manifest = load_manifest(build_dir)
    except CodegenError as exc:
        raise RunError(str(exc)) from exc
    try:
        q = load_program(build_dir, manifest.get("program"))
    except ProgramError as exc:
        raise RunError(str(exc)) from exc
    return manifest, q


def _check_classes(q: Any, info: dict[str, Any], data_dir: Path) -> None:
    """The data set's labels must mean the model's classes (same names, same order)."""
    want = tuple(q.source.classes)
    have = tuple(info.get("classes") or ())
    if have and have != want:
        raise RunError(
            f"--data {data_dir} labels its clips with classes {list(have)}, the build's model "
            f"predicts {list(want)}: accuracy would be meaningless; use the data set the model "
            "was trained for"
        )


def check_input(q: Any, manifest: dict[str, Any], input_kind: str, build_dir: Path) -> None:
    """The input kind must be one the build's firmware serves (docs/protocol.md, "Audio
    mode"), checked before any reference is computed or frame sent: a device asked for a kind
    it does not serve never answers."""
    if input_kind == "features" and not q.feature_infer:
        raise RunError(
            f"--input features: the build {build_dir} serves the streaming audio mode only "
            f'([target] input = "pcm"): use --input pcm, or rebuild with input = "both"'
        )
    if input_kind == "pcm" and q.mfcc is None:
        why = manifest.get("streaming", {}).get("unavailable", "built before the audio mode")
        way = (
            "use --input features"
            if why_not_streaming(q.encoder)  # a layer without a per-step kernel: rebuild in vain
            else 'rebuild with [target] input = "both" or "pcm", or use --input features'
        )
        raise RunError(
            f"--input pcm: the build {build_dir} does not serve the streaming audio mode "
            f"({why}); {way}"
        )


def _elatta_mode(mode: str) -> str:
    """The float ELaTTA mode of a device mode: its latent search (codegen.ir.modes)."""
    return device_mode(mode).search


def make_plan(
    build_dir: Path,
    data_dir: Path,
    modes: tuple[str, ...],
    limit: int | None,
    stream: StreamSpec | None = None,
    input_kind: str = "features",
    wire: str = "raw",
    progress: bool = False,
) -> Plan:
    """Load the build, deal the clips over the conditions (`codegen.data.selection.deal`) and
    compute every reference. ``stream``: play each mode as one continual stream of segments
    (`codegen.data.streams.build_stream` over the dealt clips), state carried across switches;
    default: one stream per (mode, condition), each from a reset state. ``wire``: "adpcm"
    sends the audio IMA-ADPCM coded, and every reference computes on the audio as the device
    decodes it (`codegen.base.adpcm`)."""
    from codegen.data import condition_ids, conditions, dataset_info, load_condition, utterance_of
    from codegen.data.selection import deal

    manifest, q = load_build(build_dir)
    check_input(q, manifest, input_kind, build_dir)
    if wire != "raw" and input_kind != "pcm":
        raise RunError(f"--wire {wire} codes the audio on the link: it needs --input pcm")
    if input_kind == "pcm":
        for m in map(device_mode, modes):
            if not m.audio:
                raise RunError(
                    f"--input pcm --mode {m.name}: {m.why_not_audio} (the device refuses it); "
                    "stream another mode or use --input features"
                )
    model = q.source
    info = dataset_info(str(data_dir))
    _check_classes(q, info, data_dir)
    conds = [c for c in conditions(str(data_dir), "additive") if c.snr_db is not None]
    if not conds:
        raise RunError(f"{data_dir} has no additive noise conditions")
    from codegen.base.progress import bar

    index = [condition_ids(str(data_dir), c) for c in conds]
    seed = int(model.adapt.seed)
    dealt = deal([utterance_of(ids) for ids, _ in index], [lab for _, lab in index], limit, seed)
    groups = []
    # only the dealt clips are mixed (each mixture is seeded by its own id)
    with bar(len(conds), "preparing: conditions", "cond", enabled=progress) as b:
        for cond, rows in zip(conds, dealt.rows, strict=True):
            split = load_condition(str(data_dir), cond, rows=rows)
            every = np.arange(len(rows))
            groups.append(_Clips.of(cond, split, every, q, adpcm=wire == "adpcm"))
            b.update(1)
    if stream is not None:
        order = build_stream([len(g.ids) for g in groups], stream)
        whole = _Clips.concat(
            [groups[c].take([i]) for c, i in zip(order.condition, order.clip, strict=True)]
        )
        whole = dataclasses.replace(whole, positions=order.position.copy())
        plays = [("stream", whole)]
    else:
        plays = [(f"{g.noises[0]}/{g.snrs[0]:g}", g) for g in groups]
    streams = []
    frames: dict[str, dict[str, np.ndarray]] = {}  # each play's integer MFCC, shared by modes
    with bar(len(modes) * len(plays), "preparing: references", "stream", enabled=progress) as b:
        for mode in modes:
            for name, clips in plays:
                streams.append(_stream(q, mode, name, clips, pcm=input_kind == "pcm",
                                       frames=frames.setdefault(name, {})))  # fmt: skip
                b.update(1)
    sel = ClipSelection(
        modes,
        tuple(
            (f"{c.name}/{float(c.snr_db or 0.0):g}", len(g.ids))
            for c, g in zip(conds, groups, strict=True)
        ),
        dealt.distinct,
        dealt.available,
        None if stream is None else dataclasses.asdict(stream),
    )
    data = {
        k: info.get(k)
        for k in ("format", "data", "preset", "tier", "seed", "snrs", "noises", "config_hash")
    }
    data["path"] = str(data_dir)
    return Plan(manifest, data_dir, data, tuple(streams), sel)


@dataclass(frozen=True, eq=False)
class _Clips:
    """Some clips with what every reference needs: ids, labels, conditions, float features."""

    noises: np.ndarray
    snrs: np.ndarray
    positions: np.ndarray
    ids: np.ndarray
    labels: np.ndarray
    xf: np.ndarray  # float64 normalised features [n, T, F]
    pcm: np.ndarray  # int16 [n, samples]: the mixed audio the features come from
    # --wire adpcm: codes [n, samples], block headers [n, blocks] (else empty)
    codes: np.ndarray
    predictor: np.ndarray
    step_index: np.ndarray

    @classmethod
    def of(cls, cond: Any, split: Any, rows: np.ndarray, q: Any, *, adpcm: bool) -> _Clips:
        from codegen.ir.meta import features_for

        n = len(rows)
        pcm = np.asarray(split.pcm[rows], dtype=np.int16)
        empty = np.zeros((n, 0), np.uint8)
        enc = encode(pcm, ADPCM_BLOCK) if adpcm else None
        if enc is not None:
            pcm = decode(enc)  # what the device computes on
        return cls(
            np.full(n, cond.name, dtype=object),
            np.full(n, float(cond.snr_db or 0.0)),  # additive conditions always carry an SNR
            np.arange(n, dtype=np.int64),
            split.ids[rows].astype(np.int64),
            split.labels[rows].astype(np.int64),
            features_for(pcm, q.source.meta),
            pcm,
            empty if enc is None else enc.codes,
            empty.astype(np.int16) if enc is None else enc.predictor,
            empty if enc is None else enc.step_index,
        )

    def adpcm(self) -> AdpcmClips | None:
        if self.codes.shape[1] == 0:
            return None
        return AdpcmClips(self.codes, self.predictor, self.step_index, ADPCM_BLOCK)

    def take(self, rows: Any) -> _Clips:
        return _Clips(*(np.asarray(getattr(self, f.name))[rows] for f in dataclasses.fields(self)))

    @classmethod
    def concat(cls, parts: list[_Clips]) -> _Clips:
        return cls(
            *(np.concatenate([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(cls))
        )


def _stream(
    q: Any,
    mode: str,
    name: str,
    c: _Clips,
    *,
    pcm: bool = False,
    frames: dict[str, np.ndarray] | None = None,
) -> Stream:
    """One stream's integer reference (`codegen.intref.model.infer_int`; with ``pcm``, the
    audio mode's whole chain `codegen.intref.model.stream_infer_int`: integer MFCC, encoder,
    head and adaptation) and float classes."""
    from codegen.base.features import quantize_features
    from codegen.elatta.float_ref import adapt, encode_float, head_logits
    from codegen.intref.mfcc import mfcc_int
    from codegen.intref.model import infer_int, stream_infer_int
    from codegen.stages.registry import stage_classes

    model = q.source
    W, b, V = model.head.weight.values, model.head.bias.values, model.basis.V.values
    if pcm:
        memo = {} if frames is None else frames
        if "x" not in memo:
            memo["x"] = mfcc_int(c.pcm, q.mfcc)
        xi = memo["x"]
        ref = stream_infer_int(c.pcm, q, c.ids, mode=mode, frames=xi).fields()
    else:
        xi = quantize_features(c.xf, q.x_fmt)
        ref = infer_int(xi, q, c.ids, mode=mode).fields()
    z_f = encode_float(c.xf, model)
    el = model.adapt.to_float()  # the float reference's view of the same settings
    fres = adapt(z_f, W, b, V, c.ids, el.replace(mode=_elatta_mode(mode)))
    pred = np.asarray(fres.pred)
    pred0 = np.asarray(ref["pred_noadapt"])
    stage = device_mode(mode).before_encoder
    if stage is not None:  # the float twin: the input stage on the float features
        pred = stage_classes(
            c.xf, stage, model.adapt.stages, lambda u: head_logits(encode_float(u, model), W, b)
        )
        # the device's pred_noadapt is cmvn's class too: no-adapt itself from the reference
        pred0 = np.asarray(infer_int(xi, q, c.ids, mode="no_adapt").pred_noadapt)
    return Stream(
        key=f"{mode}/{name}",
        mode=mode,
        noises=c.noises,
        snrs=c.snrs,
        positions=c.positions,
        ids=c.ids,
        labels=c.labels,
        x=xi,
        ref={k: np.asarray(v) for k, v in ref.items()},
        float_pred=pred,
        float_pred0=np.asarray(fres.pred_noadapt),
        fixed_pred0=pred0,
        pcm=c.pcm if pcm else None,
        adpcm=c.adpcm() if pcm else None,
    )


# ----------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Record:
    """One answered sample as written to results.jsonl."""

    stream: str
    index: int
    label: int
    device: str
    result: InferResult
    mismatches: tuple[str, ...]

    def to_json(self) -> str:
        return json.dumps(
            {
                "stream": self.stream,
                "index": self.index,
                "label": self.label,
                "device": self.device,
                "mismatches": list(self.mismatches),
                "result": self.result.to_json(),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, line: str) -> Record:
        d = json.loads(line)
        return cls(
            str(d["stream"]),
            int(d["index"]),
            int(d["label"]),
            str(d["device"]),
            InferResult.from_json(d["result"]),
            tuple(d["mismatches"]),
        )
