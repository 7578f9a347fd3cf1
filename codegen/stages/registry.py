"""The input stages, declared once (`codegen.stages.stage` says what an entry owns): the mode
table (`codegen.ir.modes`) names a stage by ``before_encoder``, and every consumer reads the
entry from here: the config reader its TOML table, the IR its settings, the quantizer its
integer params, the integer reference (`codegen.intref.model`) and the float twin
(`stage_classes`) its two references, the emitter and the firmware build its C, `codegen eval`
its float and integer runs.

The built-in stages are `codegen.stages.cmvn`'s. `register` adds one more for this process
(`registered` for a while, e.g. a test's stage): a stage is then one entry plus its own modules
and C file, no other code touched.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.errors import ConfigError
from codegen.stages import cmvn
from codegen.stages.stage import FORMS, InputStage, StageTable

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")  # a TOML table, a C identifier's part
SYMBOL_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_STAGES: dict[str, InputStage] = {}


def stages() -> tuple[InputStage, ...]:
    """Every stage, in registration order (the built-in ones first)."""
    return tuple(_STAGES.values())


def names() -> tuple[str, ...]:
    return tuple(_STAGES)


def stage(name: str) -> InputStage:
    """The stage called ``name``; ConfigError naming the registered ones otherwise."""
    try:
        return _STAGES[name]
    except (KeyError, TypeError):
        raise ConfigError(f"input stage {name!r} is not registered: use one of {names()}") from None


def tables() -> tuple[StageTable, ...]:
    """The stages' tables, each once, in the order their first stage was registered."""
    out: dict[str, StageTable] = {}
    for s in _STAGES.values():
        out.setdefault(s.table.name, s.table)
    return tuple(out.values())


def table(name: str) -> StageTable:
    """The table called ``name``; ConfigError naming the tables otherwise."""
    for t in tables():
        if t.name == name:
            return t
    raise ConfigError(
        f"[{name}] is no input stage's table: the tables are {[t.name for t in tables()]}"
    )


def settings_of(settings: Mapping[str, Any], name: str) -> Any:
    """Table ``name``'s settings from a build's ``settings`` (`AdaptConfig.stages`): its own, or
    the table's defaults where the config had none."""
    got = settings.get(name)
    return table(name).default() if got is None else got


def check_settings(settings: Mapping[str, Any]) -> None:
    """Every key a registered table and every value an instance of its settings class."""
    for name, value in settings.items():
        t = table(name)
        if not isinstance(value, t.settings):
            raise ConfigError(
                f"[{name}] settings must be a {t.settings.__name__}, got {type(value).__name__}"
            )


def _check(s: InputStage) -> None:
    """An entry that every consumer can take: names that are TOML tables and C identifiers,
    a known form, frozen dataclasses for settings and params whose defaults validate, and one
    table object per table name."""
    t = s.table
    if not NAME_RE.match(s.name) or not NAME_RE.match(t.name):
        raise ConfigError(
            f"input stage {s.name!r} (table {t.name!r}): names must match {NAME_RE.pattern}"
        )
    if s.name in _STAGES:
        raise ConfigError(f"input stage {s.name!r} is registered already")
    if s.form not in FORMS:
        raise ConfigError(f"input stage {s.name!r}: form {s.form!r} is not one of {FORMS}")
    if not SYMBOL_RE.match(s.symbol):
        raise ConfigError(f"input stage {s.name!r}: symbol {s.symbol!r} is no C identifier")
    for what, cls in (("settings", t.settings), ("params", t.params)):
        if not (dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen):  # type: ignore[attr-defined]
            raise ConfigError(f"table [{t.name}]: its {what} must be a frozen dataclass")
    t.default()  # the defaults validate
    for other in _STAGES.values():
        o = other.table
        if o.name == t.name and o is not t:
            raise ConfigError(f"table [{t.name}] is another stage's: share its StageTable")
        if o is not t and {o.settings, o.params} & {t.settings, t.params}:
            raise ConfigError(f"table [{t.name}]: its classes are table [{o.name}]'s")
        if other.symbol == s.symbol:
            raise ConfigError(f"input stage {s.name!r}: symbol {s.symbol} is {other.name}'s")


def register(s: InputStage) -> None:
    """Add a stage for this process (after the checks of `_check`)."""
    _check(s)
    _STAGES[s.name] = s


def unregister(name: str) -> None:
    """Remove a stage `register` added; the built-in ones stay."""
    if name in BUILTIN:
        raise ConfigError(f"input stage {name!r} is built in")
    stage(name)
    del _STAGES[name]


@contextmanager
def registered(*added: InputStage) -> Iterator[None]:
    """The stages ``added`` registered for the ``with`` block."""
    done: list[str] = []
    try:
        for s in added:
            register(s)
            done.append(s.name)
        yield
    finally:
        for name in reversed(done):
            unregister(name)


def stage_classes(
    u: npt.ArrayLike,
    name: str,
    settings: Mapping[str, Any],
    logits_of: Callable[[Any], npt.ArrayLike],
) -> npt.NDArray[np.int64]:
    """The float twin's classes of stage ``name`` over clips u [N, T, F] (features normalised
    with the training statistics, stream order from a reset state), with a build's stage
    ``settings`` (`AdaptConfig.stages`): the stage's float twin, then ``logits_of`` (features ->
    head logits [N, C]: the caller's encoder and head). A ``select`` stage runs the raw clips
    too and takes, per clip, the class of the run its ``choose`` picks."""
    s = stage(name)
    run = s.float_twin(np.asarray(u), settings_of(settings, s.table.name))
    l1 = np.asarray(logits_of(run.u))
    if run.choose is None:
        out: npt.NDArray[np.int64] = np.argmax(l1, axis=1)
        return out
    l0 = np.asarray(logits_of(u))
    use = run.choose(l0, l1)
    picked: npt.NDArray[np.int64] = np.where(use, l1.argmax(axis=1), l0.argmax(axis=1))
    return picked


BUILTIN: tuple[str, ...] = tuple(s.name for s in cmvn.STAGES)
for _s in cmvn.STAGES:
    register(_s)
