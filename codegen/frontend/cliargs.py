"""Command-line arguments of the model file, declared once for `codegen basis`, `eval` and `build`,
and what the user declares about a model its file cannot show (`Declared`). Light imports only.
(The continual stream's flags live beside the stream: `codegen.data.streams`.)

A file may hold weights without the computation around them: a ``state_dict`` has no forward
pass (so no pooling over time, no activation between head layers), and no PyTorch file but the
`codegen train` checkpoint holds the MFCC settings the model was trained on. The compiler never
guesses these (docs/model.md, "Bring your own model"): the user states them with ``--pooling``,
``--head-activation``, ``--features`` or the config's ``[model]`` and ``[features]`` tables, and
a missing one is an error naming the flag.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from codegen.base.errors import ConfigError

if TYPE_CHECKING:
    from codegen.base.features import MfccParams

POOLINGS: tuple[str, ...] = ("last", "mean", "max")
HEAD_ACTIVATIONS: tuple[str, ...] = ("relu",)
# `frames` is not an MfccParams field: it is checked against the frames the settings give
FRAMES_KEY = "frames"


@dataclass(frozen=True)
class Declared:
    """What the user states about the model. ``features``: the MFCC settings it was trained on;
    ``frames``: the frame count it expects (checked against ``features``); ``pooling``: how its
    forward pass pools the recurrent outputs over time; ``head_activation``: what lies between
    its head's Linear layers; ``model_code``: a Python file defining the classes of a module
    saved whole; ``origin``: where each stated value came from (for messages)."""

    pooling: str | None = None
    features: MfccParams | None = None
    frames: int | None = None
    head_activation: str | None = None
    model_code: str | None = None
    origin: tuple[tuple[str, str], ...] = ()

    def where(self, name: str) -> str:
        return dict(self.origin).get(name, name)


def parse_features(table: dict[str, Any], where: str) -> tuple[MfccParams, int | None]:
    """MFCC settings from a mapping (``[features]`` or ``--features``): every key of
    `codegen.base.features.MfccParams` (unset keys keep its documented defaults) plus
    ``frames``, which must equal the frames the settings give."""
    from codegen.base.features import MfccParams

    d = dict(table)
    frames = d.pop(FRAMES_KEY, None)
    if frames is not None and (not isinstance(frames, int) or isinstance(frames, bool)):
        raise ConfigError(f"{where}: frames = {frames!r}: expected an integer")
    allowed = (*(f.name for f in fields(MfccParams)), FRAMES_KEY)
    unknown = sorted(set(d) - set(allowed))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}"
        )
    try:
        params = MfccParams.from_dict(d)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    if frames is not None and frames != params.n_frames:
        raise ConfigError(
            f"{where}: frames = {frames} but clip_samples = {params.clip_samples}, win_ms = "
            f"{params.win_ms}, hop_ms = {params.hop_ms} give {params.n_frames} frames; state "
            "the settings that give the frames your model was trained on"
        )
    return params, frames


def features_from_text(text: str, where: str = "--features") -> tuple[MfccParams, int | None]:
    """``n_mfcc=40,win_ms=25,hop_ms=10`` -> MFCC settings (numbers as numbers)."""
    table: dict[str, Any] = {}
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise ConfigError(
                f"{where} {text!r}: {item!r} is not KEY=VALUE; e.g. "
                "--features n_mfcc=40,win_ms=25,hop_ms=10"
            )
        table[key.strip()] = _number(value.strip())
    if not table:
        raise ConfigError(f"{where} {text!r}: no KEY=VALUE given")
    return parse_features(table, where)


def _number(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def check_choice(value: Any, allowed: tuple[str, ...], where: str) -> str:
    if value not in allowed:
        raise ConfigError(f"{where} = {value!r}: allowed: {', '.join(allowed)}")
    return str(value)


def merge(a: Declared, b: Declared) -> Declared:
    """``a`` and ``b`` together (command line and config); a value stated differently in both
    is refused, naming both."""
    out = a
    for name in ("pooling", "features", "frames", "head_activation", "model_code"):
        va, vb = getattr(a, name), getattr(b, name)
        if vb is None:
            continue
        if va is not None and va != vb:
            raise ConfigError(
                f"{a.where(name)} and {b.where(name)} state different {name}: {va!r} vs {vb!r}; "
                "state it once"
            )
        if va is None:
            out = replace(out, **{name: vb}, origin=(*out.origin, (name, b.where(name))))
    return out


def add_model_arguments(p: argparse.ArgumentParser, required: bool = True, **model_kw: Any) -> None:
    """--model (any file `codegen.frontend.importer` reads), --trust-pickle, --model-code and
    the declarations a file may need (--pooling, --head-activation, --features). ``required``
    False: the command checks --model itself (`codegen eval --continuous` reads a build)."""
    p.add_argument(
        "--model",
        required=required,
        help="the model: a `codegen train` checkpoint, a state_dict, a torch.export program "
        "(.pt2), a TorchScript archive or an nn.Module saved whole (with --trust-pickle)",
        **model_kw,
    )
    p.add_argument(
        "--trust-pickle",
        action="store_true",
        help="load an nn.Module saved whole: unpickling runs code stored in the file",
    )
    p.add_argument(
        "--model-code",
        metavar="FILE.py",
        help="with --trust-pickle: the Python file defining the saved module's class (a class "
        "defined in the saving script's __main__ is looked up here)",
    )
    p.add_argument(
        "--pooling",
        choices=POOLINGS,
        help="how the model pools the recurrent outputs over time (required for a state_dict, "
        "which holds no forward pass; [model] pooling in the config)",
    )
    p.add_argument(
        "--head-activation",
        choices=HEAD_ACTIVATIONS,
        help="what lies between a state_dict's head Linear layers ([model] head_activation)",
    )
    p.add_argument(
        "--features",
        metavar="KEY=VALUE,...",
        help="the MFCC settings the model was trained on, e.g. n_mfcc=40,win_ms=25,hop_ms=10 "
        "(keys of MfccParams, unset ones keep its defaults, plus frames to check); required "
        "unless the file carries them (a `codegen train` checkpoint); [features] in the config",
    )


def declared_from_args(args: argparse.Namespace) -> Declared:
    """The declarations of the command line (`add_model_arguments`)."""
    d = Declared()
    origin: list[tuple[str, str]] = []
    if getattr(args, "features", None):
        params, frames = features_from_text(args.features)
        d = replace(d, features=params, frames=frames)
        origin += [("features", "--features"), ("frames", "--features")]
    pooling = getattr(args, "pooling", None)
    act = getattr(args, "head_activation", None)
    code = getattr(args, "model_code", None)
    for name, flag, value in (
        ("pooling", "--pooling", pooling),
        ("head_activation", "--head-activation", act),
        ("model_code", "--model-code", code),
    ):
        if value is not None:
            origin.append((name, flag))
    return replace(
        d,
        pooling=None if pooling is None else str(pooling),
        head_activation=None if act is None else str(act),
        model_code=None if code is None else str(code),
        origin=tuple(origin),
    )


def declared_from_config(doc: dict[str, Any], source: str) -> Declared:
    """[model] (pooling, head_activation) and [features] (MFCC settings) of a config."""
    md = doc.get("model", {})
    ft = doc.get("features")
    if not isinstance(md, dict):
        raise ConfigError(f"{source}: [model] must be a table")
    unknown = sorted(set(md) - {"pooling", "head_activation"})
    if unknown:
        raise ConfigError(
            f"{source} [model]: unknown key(s) {', '.join(unknown)}; allowed: pooling, "
            "head_activation"
        )
    d = Declared()
    origin: list[tuple[str, str]] = []
    if "pooling" in md:
        d = replace(d, pooling=check_choice(md["pooling"], POOLINGS, f"{source} [model].pooling"))
        origin.append(("pooling", f"{source} [model].pooling"))
    if "head_activation" in md:
        where = f"{source} [model].head_activation"
        act = check_choice(md["head_activation"], HEAD_ACTIVATIONS, where)
        d = replace(d, head_activation=act)
        origin.append(("head_activation", f"{source} [model].head_activation"))
    if ft is not None:
        if not isinstance(ft, dict):
            raise ConfigError(f"{source}: [features] must be a table")
        params, frames = parse_features(ft, f"{source} [features]")
        d = replace(d, features=params, frames=frames)
        origin += [("features", f"{source} [features]"), ("frames", f"{source} [features]")]
    return replace(d, origin=tuple(origin))


def declared_from_toml(path: str) -> Declared:
    """The [model] and [features] tables of a TOML config file (`declared_from_config`)."""
    import tomllib
    from pathlib import Path

    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {p}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{p}: not valid TOML ({exc})") from exc
    return declared_from_config(doc, str(p))
