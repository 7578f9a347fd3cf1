"""What a run streams: the build's program, the chosen clips per (mode, condition) and their
integer and float references (`make_plan`); and the record of one answered sample.

Selection. Every additive condition (noise x SNR) of the data set; ``--limit N`` takes about
N / (number of conditions) clips of each (at least one), dealt by `codegen.selection.deal` so
the union covers as many distinct utterances as possible, every class evenly.

Streams. One *stream* per (mode, condition): the device gets RESET, then the condition's clips
in order. The continual modes carry p_prev from clip to clip inside a stream only, and the
integer reference (`codegen.intref.model.infer_int`, which starts from a reset state) runs the
same stream, so results do not depend on how streams are spread over devices.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from elatta_host.infer import InferResult, mode_index

from codegen.errors import CodegenError


class RunError(CodegenError):
    """The run could not start or a device stopped answering."""


# ----------------------------------------------------------------------------- selection


@dataclass(frozen=True, eq=False)
class Stream:
    """One ordered stream: RESET, then these clips of one condition in one mode."""

    key: str  # "<mode>/<noise>/<snr>"
    mode: str
    noise: str
    snr: float
    ids: np.ndarray  # int64 [n]
    labels: np.ndarray  # int64 [n]
    x: np.ndarray  # int16 [n, T, F] in the model's input format
    ref: dict[str, np.ndarray]  # integer reference, codegen.intref.model.RESULT_FIELDS
    float_pred: np.ndarray  # float64 reference: adapted class
    float_pred0: np.ndarray  # float64 reference: no-adapt class

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

    def digest(self) -> str:
        return hashlib.sha256(json.dumps([self.modes, self.per_condition]).encode()).hexdigest()


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
    """The build's manifest and its frozen program (`codegen.program`): the fixed IR exactly as
    `codegen build` decided it, without the checkpoint, basis, config or calibration data."""
    from codegen.program import ProgramError, load_program

    mpath = build_dir / "manifest.json"
    if not mpath.is_file():
        raise RunError(f"{mpath} not found: build with `codegen build --out {build_dir}`")
    try:
        manifest = json.loads(mpath.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunError(f"{mpath}: unreadable manifest ({exc})") from exc
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


def _elatta_mode(mode: str) -> str:
    """The float ELaTTA mode of a device mode (cmvn runs no latent search)."""
    return "no_adapt" if mode == "cmvn" else mode


def cmvn_float(cfg: Any) -> Any:
    """The float `codegen.elatta.methods.CmvnConfig` of a build's `AdaptConfig`."""
    from codegen.elatta.methods import CmvnConfig

    return CmvnConfig(
        weight=2.0**-cfg.cmvn_weight_shift, alpha=2.0**-cfg.cmvn_alpha_shift, variance=True
    )


def make_plan(build_dir: Path, data_dir: Path, modes: tuple[str, ...], limit: int | None) -> Plan:
    from codegen.data import conditions, dataset_info, load_condition, utterance_of
    from codegen.elatta.float_ref import adapt, head_logits, lstm_float
    from codegen.elatta.methods import cmvn_normalised
    from codegen.features import quantize_features
    from codegen.intref.model import infer_int
    from codegen.model import features_for
    from codegen.selection import deal

    manifest, q = load_build(build_dir)
    model = q.source
    el = model.adapt.to_float()  # the float reference's view of the same settings
    W, b, V = model.head.weight.values, model.head.bias.values, model.basis.V.values
    info = dataset_info(str(data_dir))
    _check_classes(q, info, data_dir)
    conds = [c for c in conditions(str(data_dir), "additive") if c.snr_db is not None]
    if not conds:
        raise RunError(f"{data_dir} has no additive noise conditions")
    splits = [load_condition(str(data_dir), c) for c in conds]
    dealt = deal(
        [utterance_of(s.ids) for s in splits], [s.labels for s in splits], limit, int(el.seed)
    )
    per_cond = []
    for cond, split, rows in zip(conds, splits, dealt.rows, strict=True):
        xf = features_for(split.pcm[rows], model.meta)
        per_cond.append(
            (
                cond,
                split.ids[rows].astype(np.int64),
                split.labels[rows].astype(np.int64),
                quantize_features(xf, q.lstm.x_fmt),
                lstm_float(xf, model.lstm)[0],
                xf,
            )
        )
    streams = []
    for mode in modes:
        for cond, ids, labels, xi, z_f, xf in per_cond:
            snr = float(cond.snr_db or 0.0)  # additive conditions always carry an SNR
            ref = infer_int(xi, q, ids, mode=mode).fields()
            fres = adapt(z_f, W, b, V, ids, el.replace(mode=_elatta_mode(mode)))
            pred = np.asarray(fres.pred)
            if mode == "cmvn":  # the float twin: cmvn on the float features, then the model
                z_c = lstm_float(cmvn_normalised(xf, cmvn_float(model.adapt)), model.lstm)[0]
                pred = np.argmax(head_logits(z_c, W, b), axis=1)
            streams.append(
                Stream(
                    key=f"{mode}/{cond.name}/{snr:g}",
                    mode=mode,
                    noise=cond.name,
                    snr=snr,
                    ids=ids,
                    labels=labels,
                    x=xi,
                    ref={k: np.asarray(v) for k, v in ref.items()},
                    float_pred=pred,
                    float_pred0=np.asarray(fres.pred_noadapt),
                )
            )
    sel = ClipSelection(
        modes,
        tuple((f"{c.name}/{float(c.snr_db or 0.0):g}", len(ids)) for c, ids, *_ in per_cond),
        dealt.distinct,
        dealt.available,
    )
    data = {
        k: info.get(k)
        for k in ("format", "data", "preset", "tier", "seed", "snrs", "noises", "config_hash")
    }
    data["path"] = str(data_dir)
    return Plan(manifest, data_dir, data, tuple(streams), sel)


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
