"""The frozen program of a build: every integer and setting `codegen build` decided, on disk.

`codegen build` writes ``DIR/program.json`` and ``DIR/program.npz`` beside ``manifest.json``
(format in ``docs/program.md``). Everything that runs a build afterwards — ``codegen run``,
``codegen bench``, ``codegen inspect``, the host integer reference and the bench scripts — loads
the fixed IR (`codegen.ir.nodes.QModel`) from there with `load_program` and never calls the frontend
or the quantizer, so a build directory copied to another machine runs without the checkpoint,
the basis, the config or the calibration data it came from.

Encoding. The fixed IR is a tree of frozen dataclasses. ``program.json`` holds that tree: a
dataclass is ``{"$type": NAME, "fields": {...}}`` with NAME from `_TYPES` (a closed list: the
loader never imports or calls anything else), an array is ``{"$array": KEY}`` naming an entry of
``program.npz`` (``np.load(allow_pickle=False)``), a tuple is ``{"$tuple": [...]}``; numbers,
strings, booleans, None, lists and string-keyed objects are JSON as they are. Python writes
floats with ``repr``, which reads back to the same float64, so no value changes on the way.
``program.json`` records the sha256 of ``program.npz`` and the manifest records the sha256 of
both files, so a truncated or edited program is refused before anything runs.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from codegen.base.errors import CodegenError
from codegen.base.files import file_sha256, write_npz

MANIFEST_FORMAT = "elatta-build"
MANIFEST_VERSION = 1
PROGRAM_FORMAT = "elatta-program"
PROGRAM_VERSION = 4
# Older versions this loader reads, each upgraded to the current tree (`_UPGRADES`).
PROGRAM_READS = (2, 3, 4)
JSON_NAME = "program.json"
NPZ_NAME = "program.npz"


class ProgramError(CodegenError):
    """A build directory's program is missing, damaged or of another format."""


def _types() -> dict[str, type]:
    """Every dataclass the fixed IR is made of, under a stable name (the file format's
    vocabulary: renaming or moving a class in Python does not change it). The loader builds
    nothing else. The input stages' settings and params join under their class names (the
    registry's tables, `codegen.stages.registry`: the built-in ``CmvnSettings`` and
    ``CmvnParams``, and any table registered in this process)."""
    from codegen.base.features import MfccParams
    from codegen.base.qformat import QFormat
    from codegen.elatta.cmaes import CmaesParams as FloatCmaesConstants
    from codegen.ir import nodes as ir
    from codegen.ir.meta import ModelMeta
    from codegen.ir.mfcc import QMfcc
    from codegen.stages.registry import tables

    core: dict[str, type] = {
        "QFormat": QFormat,
        "Tensor": ir.Tensor,
        "Lstm": ir.Lstm,
        "Gru": ir.Gru,
        "Dense": ir.Dense,
        "LatentBasis": ir.LatentBasis,
        "QuantOptions": ir.QuantOptions,
        "TargetOptions": ir.TargetOptions,
        "InputHashes": ir.InputHashes,
        "Model": ir.Model,
        "QTensor": ir.QTensor,
        "Accumulator": ir.Accumulator,
        "GateShifts": ir.GateShifts,
        "LstmShifts": ir.LstmShifts,
        "GateProof": ir.GateProof,
        "SigmoidLut": ir.SigmoidLut,
        "QLstm": ir.QLstm,
        "QGru": ir.QGru,
        "CalibStats": ir.CalibStats,
        "QModel": ir.QModel,
        "ModelMeta": ModelMeta,
        "FloatCmaesConstants": FloatCmaesConstants,
        "CmaesIntParams": ir.CmaesIntParams,
        "Grid": ir.Grid,
        "AdaptConfig": ir.AdaptConfig,
        "AdaptParams": ir.AdaptParams,
        "QDense": ir.QDense,
        "MfccParams": MfccParams,
        "QMfcc": QMfcc,
    }
    stage_types = {c.__name__: c for t in tables() for c in (t.settings, t.params)}
    clash = sorted(set(stage_types) & set(core))
    if clash:
        raise ProgramError(f"input-stage classes {clash} take names of the program's own types")
    return core | stage_types


def _encode(obj: Any, arrays: dict[str, np.ndarray], path: str) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        name = _names().get(type(obj))
        if name is None:
            raise ProgramError(f"{path}: {type(obj).__qualname__} is not a program type")
        return {
            "$type": name,
            "fields": {
                f.name: _encode(getattr(obj, f.name), arrays, f"{path}.{f.name}")
                for f in dataclasses.fields(obj)
                if f.init
            },
        }
    if isinstance(obj, np.ndarray):
        key = path.lstrip(".") or "root"
        if obj.dtype == object:
            raise ProgramError(f"{key}: object arrays cannot be stored")
        arrays[key] = obj
        return {"$array": key}
    if isinstance(obj, tuple):
        return {"$tuple": [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        if not all(isinstance(k, str) and not k.startswith("$") for k in obj):
            raise ProgramError(f"{path}: only string keys (not starting with $) can be stored")
        return {k: _encode(v, arrays, f"{path}.{k}") for k, v in obj.items()}
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise ProgramError(f"{path}: a {type(obj).__name__} cannot be stored in a program")


def _names() -> dict[type, str]:
    """class -> its program name (read each time: a stage registered later has its names)."""
    return {cls: name for name, cls in _types().items()}


def _decode(doc: Any, arrays: Any, types: dict[str, type], path: str) -> Any:
    if isinstance(doc, list):
        return [_decode(v, arrays, types, path) for v in doc]
    if not isinstance(doc, dict):
        return doc
    if "$type" in doc:
        cls = types.get(str(doc["$type"]))
        if cls is None:
            raise ProgramError(f"{path}: unknown type {doc['$type']!r} in the program")
        fields = doc.get("fields")
        if not isinstance(fields, dict):
            raise ProgramError(f"{path}: {doc['$type']} has no fields")
        kw = {k: _decode(v, arrays, types, f"{path}.{k}") for k, v in fields.items()}
        try:
            return cls(**kw)
        except (TypeError, ValueError, CodegenError) as exc:
            raise ProgramError(f"{path}: {doc['$type']} does not load ({exc})") from exc
    if "$array" in doc:
        key = str(doc["$array"])
        if key not in arrays:
            raise ProgramError(f"{path}: array {key!r} missing from {NPZ_NAME}")
        out = np.array(arrays[key])
        out.setflags(write=False)
        return out
    if "$tuple" in doc:
        return tuple(_decode(v, arrays, types, path) for v in doc["$tuple"])
    return {k: _decode(v, arrays, types, f"{path}.{k}") for k, v in doc.items()}


def write_program(q: Any, out_dir: str | Path) -> dict[str, str]:
    """Write ``q`` (a `codegen.ir.nodes.QModel`) as ``program.json`` + ``program.npz`` into
    ``out_dir``; deterministic bytes for the same program. Returns {file name: sha256}."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(q, arrays, "")
    write_npz(out / NPZ_NAME, arrays, compresslevel=6)
    doc = {
        "format": PROGRAM_FORMAT,
        "version": PROGRAM_VERSION,
        "npz_sha256": file_sha256(out / NPZ_NAME),
        "program": tree,
    }
    tmp = out / (JSON_NAME + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n")
    tmp.replace(out / JSON_NAME)
    return {name: file_sha256(out / name) for name in (JSON_NAME, NPZ_NAME)}


def load_program(build_dir: str | Path, expected: dict[str, str] | None = None) -> Any:
    """The `codegen.ir.nodes.QModel` a build wrote. ``expected`` ({file name: sha256}, the
    manifest's
    ``program`` entry) is checked first; a missing, damaged or foreign file is a ProgramError
    naming the file and what to do."""
    d = Path(build_dir)
    jpath, npath = d / JSON_NAME, d / NPZ_NAME
    for p in (jpath, npath):
        if not p.is_file():
            raise ProgramError(
                f"{p} not found: {d} is not a complete build (rebuild with `codegen build "
                f"--out {d}`; builds from before the program files did not write them)"
            )
    if expected:
        for p in (jpath, npath):
            want = expected.get(p.name)
            if want is not None and file_sha256(p) != want:
                raise ProgramError(
                    f"{p} differs from the build's manifest (sha256): the build directory was "
                    "modified or copied incompletely; rebuild it"
                )
    try:
        doc = json.loads(jpath.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProgramError(f"{jpath}: unreadable ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != PROGRAM_FORMAT:
        raise ProgramError(f"{jpath}: not an {PROGRAM_FORMAT} file")
    version = doc.get("version")
    if version not in PROGRAM_READS:
        raise ProgramError(
            f"{jpath}: program version {version!r}; this codegen reads versions "
            f"{', '.join(str(v) for v in PROGRAM_READS)} (rebuild with this codegen)"
        )
    if file_sha256(npath) != doc.get("npz_sha256"):
        raise ProgramError(f"{npath} does not match {jpath.name} (sha256): rebuild")
    try:
        with np.load(npath, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise ProgramError(f"{npath}: unreadable ({exc})") from exc
    tree = doc["program"]
    for v in range(int(version), PROGRAM_VERSION):
        tree = _UPGRADES[v](tree)
    return _decode(tree, arrays, _types(), "program")


def _upgrade_v2(tree: Any) -> Any:
    """A version 2 tree as version 3 writes it. Version 2 held the encoder in fixed slots
    (``lstm``, ``lstm2`` of `Model` and `QModel`) and both kinds in one class each (``Lstm``,
    ``QLstm`` with ``cell`` "lstm" or "gru"); version 3 holds ``encoder``, a tuple of layers, and
    a class per kind: ``Gru``, ``QGru`` (its biases ``b_ih``, ``b_hh``; no cell state, so no
    ``c_fmt``; its shifts ``GateShifts``, without the cell's). Integers and arrays are unchanged."""
    if isinstance(tree, list):
        return [_upgrade_v2(v) for v in tree]
    if not isinstance(tree, dict):
        return tree
    if "$type" not in tree:
        return {k: _upgrade_v2(v) for k, v in tree.items()}
    name = str(tree["$type"])
    fields = dict(tree.get("fields") or {})
    if name in ("Model", "QModel"):
        layers = [fields.pop("lstm", None), fields.pop("lstm2", None)]
        fields = {"encoder": {"$tuple": [v for v in layers if v is not None]}, **fields}
    elif name in ("Lstm", "QLstm"):
        gru = fields.pop("cell", "lstm") == "gru"
        bias_hh = fields.pop("bias_hh", None)
        if gru and name == "Lstm":
            name = "Gru"
        elif gru:
            name = "QGru"
            fields.pop("c_fmt", None)
            fields["b_ih"] = fields.pop("bias")
            fields["b_hh"] = bias_hh
            shifts = dict(fields["shifts"])
            shifts["$type"] = "GateShifts"
            shifts["fields"] = {
                k: v
                for k, v in shifts["fields"].items()
                if k not in ("cell_ig_lshift", "cell_tanh_rshift")
            }
            fields["shifts"] = shifts
    return {"$type": name, "fields": {k: _upgrade_v2(v) for k, v in fields.items()}}


# the [cmvn] keys of version 3's AdaptConfig, as ``cmvn_<key>`` fields
_V3_CMVN_KEYS = (
    "alpha_shift",
    "weight_shift",
    "gate",
    "causal_alpha_shift",
    "causal_gate",
    "select_margin",
    "select_gate",
    "select_floor",
    "select_clip_floor",
    "select_clip_gate",
    "select_alpha_shift",
    "select_weight_shift",
)


def _upgrade_v3(tree: Any) -> Any:
    """A version 3 tree as version 4 writes it. Version 3 held the settings of [cmvn] as
    ``cmvn_<key>`` fields of ``AdaptConfig`` and their integers as ``QModel.cmvn``
    (``CmvnParams``); version 4 holds the input stages' settings and params by table
    (``AdaptConfig.stages``, ``QModel.stages``: ``{"cmvn": CmvnSettings}``, ``{"cmvn":
    CmvnParams}``, `codegen.stages.registry`). Values are unchanged."""
    if isinstance(tree, list):
        return [_upgrade_v3(v) for v in tree]
    if not isinstance(tree, dict):
        return tree
    if "$type" not in tree:
        return {k: _upgrade_v3(v) for k, v in tree.items()}
    name = str(tree["$type"])
    fields = {k: _upgrade_v3(v) for k, v in dict(tree.get("fields") or {}).items()}
    if name == "AdaptConfig":
        cm = {k: fields.pop(f"cmvn_{k}") for k in _V3_CMVN_KEYS if f"cmvn_{k}" in fields}
        fields["stages"] = {"cmvn": {"$type": "CmvnSettings", "fields": cm}}
    elif name == "QModel":
        cmvn = fields.pop("cmvn", None)
        fields["stages"] = {} if cmvn is None else {"cmvn": cmvn}
    return {"$type": name, "fields": fields}


# version v -> version v + 1
_UPGRADES = {2: _upgrade_v2, 3: _upgrade_v3}


def load_manifest(build_dir: str | Path) -> dict[str, Any]:
    """A build's manifest.json (DIR or the file itself), format and version checked."""
    path = Path(build_dir) / "manifest.json"
    if Path(build_dir).is_file() and Path(build_dir).name == "manifest.json":
        path = Path(build_dir)
    if not path.is_file():
        raise CodegenError(f"{path}: not found; run `codegen build --out {build_dir}` first")
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CodegenError(f"{path}: unreadable manifest ({exc})") from exc
    if doc.get("format") != MANIFEST_FORMAT or doc.get("version") != MANIFEST_VERSION:
        raise CodegenError(
            f"{path}: not a {MANIFEST_FORMAT} v{MANIFEST_VERSION} manifest "
            f"(format={doc.get('format')!r}, version={doc.get('version')!r})"
        )
    return doc
