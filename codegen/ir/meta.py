"""The model's metadata: what a consumer needs, besides the weights, to reproduce the float
model's inputs (feature settings, normalisation, classes, pooling, cell). Torch-free, so a build
directory (`codegen.artefact.program`) and the serial bench read it without torch.

The checkpoint file of `codegen train` (`codegen.frontend.model`) stores it as a JSON *string*
so the file loads with ``torch.load(path, weights_only=True)`` and non-Python tools read one
well-defined document; ``ModelMeta`` is its typed view.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from codegen.base.errors import CodegenError

META_FORMAT = "elatta-kws-lstm"
META_VERSION = 1


@dataclass(frozen=True)
class ModelMeta:
    """Everything besides the weights that a consumer needs to reproduce the float model's inputs.

    ``features`` is ``MfccParams.to_dict()``; ``norm_mean``/``norm_std`` are per-coefficient
    statistics of the (augmented) training features, applied as ``(mfcc - mean) / std``.
    """

    input_size: int
    hidden_size: int
    num_classes: int
    num_frames: int
    classes: tuple[str, ...]
    features: dict[str, Any]
    norm_mean: tuple[float, ...]
    norm_std: tuple[float, ...]
    seed: int
    train: dict[str, Any] = field(default_factory=dict)
    pool: str = "last"  # the latent: h_T ("last"), or the mean or maximum of h_t over time
    cell: str = "lstm"  # the recurrent cell: "lstm" or "gru"

    def to_json(self) -> str:
        doc: dict[str, Any] = {"format": META_FORMAT, "version": META_VERSION}
        doc.update(asdict(self))
        doc["classes"] = list(self.classes)
        doc["norm_mean"] = list(self.norm_mean)
        doc["norm_std"] = list(self.norm_std)
        return json.dumps(doc, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, source: str = "meta") -> ModelMeta:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CodegenError(f"{source}: 'meta' is not valid JSON ({exc})") from exc
        if not isinstance(doc, dict):
            raise CodegenError(f"{source}: 'meta' must be a JSON object, got {type(doc).__name__}")
        if doc.get("format") != META_FORMAT:
            raise CodegenError(
                f"{source}: meta field 'format' is {doc.get('format')!r}; expected {META_FORMAT!r}"
            )
        if doc.get("version") != META_VERSION:
            raise CodegenError(
                f"{source}: meta field 'version' is {doc.get('version')!r}; "
                f"this codegen reads version {META_VERSION}"
            )
        for name in ("input_size", "hidden_size", "num_classes", "num_frames"):
            _require_int(doc, name, source, minimum=1)
        _require_int(doc, "seed", source, minimum=0)
        classes = _require_list(doc, "classes", source)
        if not all(isinstance(c, str) and c for c in classes):
            raise CodegenError(f"{source}: meta field 'classes' must be non-empty strings")
        if len(classes) != doc["num_classes"]:
            raise CodegenError(
                f"{source}: meta field 'classes' has {len(classes)} names but "
                f"num_classes is {doc['num_classes']}"
            )
        features = doc.get("features")
        if not isinstance(features, dict):
            raise CodegenError(f"{source}: meta field 'features' missing or not an object")
        mean = _require_floats(doc, "norm_mean", doc["input_size"], source)
        std = _require_floats(doc, "norm_std", doc["input_size"], source)
        if any(s <= 0.0 for s in std):
            raise CodegenError(f"{source}: meta field 'norm_std' must be > 0 everywhere")
        train = doc.get("train", {})
        if not isinstance(train, dict):
            raise CodegenError(f"{source}: meta field 'train' must be an object")
        return cls(
            input_size=doc["input_size"],
            hidden_size=doc["hidden_size"],
            num_classes=doc["num_classes"],
            num_frames=doc["num_frames"],
            classes=tuple(classes),
            features=features,
            norm_mean=tuple(mean),
            norm_std=tuple(std),
            seed=doc["seed"],
            train=train,
            pool=_pool(doc.get("pool", "last"), source),
            cell="gru" if doc.get("cell") == "gru" else "lstm",
        )


def _pool(value: Any, source: str) -> str:
    if value not in ("last", "mean", "max"):
        raise CodegenError(
            f"{source}: meta field 'pool' is {value!r}; allowed: 'last', 'mean', 'max'"
        )
    return str(value)


def _require_int(doc: dict[str, Any], name: str, source: str, minimum: int) -> None:
    if name not in doc:
        raise CodegenError(f"{source}: meta field {name!r} missing")
    value = doc[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise CodegenError(
            f"{source}: meta field {name!r} is {value!r}; expected an integer >= {minimum}"
        )


def _require_list(doc: dict[str, Any], name: str, source: str) -> list[Any]:
    value = doc.get(name)
    if not isinstance(value, list):
        raise CodegenError(f"{source}: meta field {name!r} missing or not a list")
    return value


def _require_floats(doc: dict[str, Any], name: str, length: int, source: str) -> list[float]:
    values = _require_list(doc, name, source)
    if len(values) != length:
        raise CodegenError(
            f"{source}: meta field {name!r} has {len(values)} values; expected input_size={length}"
        )
    if not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values
    ):
        raise CodegenError(f"{source}: meta field {name!r} must hold finite numbers")
    return [float(v) for v in values]


def features_for(pcm: np.ndarray, meta: ModelMeta) -> np.ndarray:
    """int16 PCM [N, 16000] -> normalised float32 features [N, T, F], as training saw them."""
    from codegen.base.features import MfccParams, mfcc

    params = MfccParams.from_dict(meta.features)
    feats = np.asarray(mfcc(pcm, params), dtype=np.float32)
    if feats.ndim != 3 or feats.shape[1:] != (meta.num_frames, meta.input_size):
        raise CodegenError(
            f"features have shape {feats.shape[1:]} per clip; the model expects "
            f"(num_frames={meta.num_frames}, input_size={meta.input_size})"
        )
    return normalise(feats, meta)


def normalise(feats: np.ndarray, meta: ModelMeta) -> np.ndarray:
    mean = np.asarray(meta.norm_mean, dtype=np.float32)
    std = np.asarray(meta.norm_std, dtype=np.float32)
    return ((feats - mean) / std).astype(np.float32)
