"""The build config `codegen eval` writes beside its report (``REPORT/elatta.toml``).

It is complete: every table `codegen build` reads (`codegen.frontend.reader.parse_config`:
[elatta], each input stage's ([cmvn]), [quant], [target], and [model] / [features] where the
model needed them declared) with every key, so ``codegen build --config REPORT/elatta.toml``
compiles exactly what the evaluation measured, whatever defaults change later. Each key says
where its value came from: ``chosen`` by this evaluation (σ₀, β, radius on source validation
data, or a flag), ``inherited`` from the ``--config`` it was given, or the build's ``default``
(a key that config leaves out), so a reader sees at once what the evaluation decided and what it
took as given.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from typing import Any

from codegen.base.errors import ConfigError
from codegen.frontend.cliargs import Declared
from codegen.frontend.reader import BuildConfig, parse_config
from codegen.stages.registry import tables as stage_tables

ELATTA_KEYS: tuple[str, ...] = (
    "model_sha256",
    "mode",
    "k",
    "n_iter",
    "lam",
    "sigma0",
    "seed",
    "beta",
    "radius",
    "active",
    "qelatta_v1",
    "qelatta_v2",
)


# What the build does with a key that has no value (TOML has no null): left out, it applies
# the rule named here (codegen.ir.nodes.AdaptConfig, codegen.pipeline.build.tuned_for).
UNSET_RULES: dict[str, str] = {
    "model_sha256": "no model is recorded as the one sigma0 was chosen for",
    "select_alpha_shift": "mode cmvn_select's normalised run uses alpha_shift",
    "select_weight_shift": "mode cmvn_select's normalised run uses weight_shift",
}


@dataclass(frozen=True)
class Entry:
    """One key of the written config: its value (None: left out, the build's rule applies) and
    where it came from (``chosen: ...``, ``inherited from PATH``, ``default ...``)."""

    key: str
    value: Any
    origin: str


def toml_value(value: Any) -> str:
    """A TOML literal for a config value (bool, int, finite float or str)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"config value {value!r} is not finite; a build config needs one")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's
    raise ConfigError(f"config value {value!r} ({type(value).__name__}) has no TOML form here")


def _qelatta_v2(value: tuple[int, int] | None) -> str:
    return "" if value is None else f"{value[0]}b{value[1]}"


def build_config_tables(
    build_cfg: BuildConfig,
    raw: dict[str, Any],
    chosen: dict[str, tuple[Any, str]],
    declared: Declared,
) -> dict[str, list[Entry]]:
    """The tables of the written config.

    ``build_cfg``: the ``--config`` as the build reads it; ``raw``: that file's TOML document
    (which keys it sets); ``chosen``: [elatta] keys this evaluation decided, key -> (value, how);
    ``declared``: what the model needed stated ([model], [features]), from flags or the config.
    """
    where = build_cfg.source

    def origin(table: str, key: str) -> str:
        section = raw.get(table)
        if isinstance(section, dict) and key in section:
            return f"inherited from {where}"
        return f"default (not set in {where})"

    tables: dict[str, list[Entry]] = {}
    adapt = build_cfg.adapt
    elatta: list[Entry] = []
    for key in ELATTA_KEYS:
        if key in chosen:
            value, how = chosen[key]
            elatta.append(Entry(key, value, how))
        elif key == "model_sha256":
            elatta.append(Entry(key, build_cfg.tuned_for or None, origin("elatta", key)))
        elif key == "qelatta_v2":
            elatta.append(Entry(key, _qelatta_v2(adapt.qelatta_v2), origin("elatta", key)))
        else:
            elatta.append(Entry(key, getattr(adapt, key), origin("elatta", key)))
    tables["elatta"] = elatta
    # every input stage's table ([cmvn], and any stage registered): its settings dataclass's
    # fields are the table's keys (codegen/stages/stage.py StageTable.settings)
    for t in stage_tables():
        settings = adapt.stage_settings(t.name)
        tables[t.name] = [
            Entry(f.name, getattr(settings, f.name), origin(t.name, f.name))
            for f in fields(settings)
        ]
    tables["quant"] = [
        Entry(f.name, getattr(build_cfg.quant, f.name), origin("quant", f.name))
        for f in fields(build_cfg.quant)
    ]
    target = build_cfg.target
    tg: list[Entry] = []
    for f in fields(target):
        how = origin("target", f.name)
        if target.board and f.name in ("uart", "baud", "uart_ref_hz") and how.startswith("def"):
            how = f"board {target.board}'s (codegen/target/boards.py)"
        tg.append(Entry(f.name, getattr(target, f.name), how))
    tables["target"] = tg

    def said(name: str) -> str:
        source = declared.where(name)
        return f"inherited from {where}" if source.startswith(where) else f"chosen: {source}"

    model = [
        Entry(name, getattr(declared, name), said(name))
        for name in ("pooling", "head_activation")
        if getattr(declared, name) is not None
    ]
    if model:
        tables["model"] = model
    if declared.features is not None:
        feats = [
            Entry(key, value, said("features"))
            for key, value in declared.features.to_dict().items()
        ]
        if declared.frames is not None:
            feats.append(Entry("frames", declared.frames, said("frames")))
        tables["features"] = feats
    return tables


def render(tables: dict[str, list[Entry]], header: list[str]) -> str:
    """The TOML text: ``header`` as comments, then each table, one key a line with its origin
    as a trailing comment; a key without a value is a comment saying which rule applies."""
    lines = [f"# {h}" if h else "#" for h in header]
    for table, entries in tables.items():
        lines += ["", f"[{table}]"]
        for e in entries:
            if e.value is None:
                rule = UNSET_RULES.get(e.key, "the build's default applies")
                lines.append(f"# {e.key}: not set: {rule} ({e.origin})")
            else:
                lines.append(f"{e.key} = {toml_value(e.value)}  # {e.origin}")
    return "\n".join(lines) + "\n"


def as_dict(tables: dict[str, list[Entry]]) -> dict[str, dict[str, Any]]:
    """The tables as ``{table: {key: value}}`` (keys without a value left out), for report.json."""
    return {t: {e.key: e.value for e in es if e.value is not None} for t, es in tables.items()}


def check_round_trip(text: str, tables: dict[str, list[Entry]], source: str) -> BuildConfig:
    """The written text, read back as `codegen build` reads it; a table that does not come back
    as written is a bug here, reported as one."""
    import tomllib

    doc = tomllib.loads(text)
    back = as_dict(tables)
    if {t: dict(v) for t, v in doc.items()} != back:
        raise ConfigError(f"{source}: the written build config does not read back as written")
    return parse_config(doc, source)
