"""The device's modes, declared once: every consumer (the IR's validation, the integer and float
references, the emitter and the firmware it builds, the host bench and its reports, `codegen
eval`) reads this table, so adding a mode is one entry here (`register` for one process) plus the
mode's own kernels.

A mode is what runs around the encoder for one sample: an optional input stage before it
(``before_encoder``: an entry of the stage registry `codegen.stages.registry`, which owns its
settings, quantizer, float twin, integer reference and firmware part; built in: "cmvn", the
continual input normalisation of docs/adaptation.md, "cmvn_causal", its causal form, and
"cmvn_select", which encodes the clip both as it is and after cmvn and answers with the more
confident run) and one of the paper's latent searches after it (``search``: a mode of
``codegen.elatta.float_ref.MODES``; paper §3, Algorithm 1). The wire id is the mode byte of
INFER, AUDIO_BEGIN and RESULT (docs/protocol.md); ``firmware/elt_modes.h`` names the built-in
modes for the kernels, and every build's ``fw_app_model.h`` carries the table as the build saw
it (`firmware_table`).

The names exported below (``MODES``, ``DEVICE_MODES``, ``MODE_IDS``, ...) are views of the one
table: a mode `register` adds is in them at once, wherever they were imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, overload

from codegen.base.errors import ConfigError
from codegen.base.resources import jinja_env
from codegen.elatta.float_ref import MODES as SEARCHES
from codegen.stages import registry as stages


@dataclass(frozen=True)
class Mode:
    name: str
    wire_id: int  # the mode byte on the link; ELT_MODE_<NAME> in C
    label: str  # the method's row name in the bench's reports
    search: str  # the latent search after the encoder (codegen.elatta.float_ref.MODES)
    before_encoder: str | None = None  # an input stage of codegen.stages.registry, or None
    carries_p: bool = False  # p_prev goes from sample to sample (RESET p_prev resumes it)
    stateful: bool = False  # any state goes from sample to sample (a resume must rebuild it)
    audio: bool = True  # served by the streaming audio mode
    why_not_audio: str = ""  # the reason the audio mode refuses it, for error messages
    # `codegen eval`: the row name in its fixed-width tables (at most 17 characters) and the
    # loss against no-adapt, in points, it allows at every SNR and on every shift family before
    # it reports the mode UNSAFE (docs/targets.md §1 "adaptation safety"; None: no limit)
    eval_label: str = ""
    safety_limit: float | None = None

    def __post_init__(self) -> None:
        if self.search not in SEARCHES:
            raise ValueError(f"mode {self.name}: search {self.search!r} not in {SEARCHES}")
        if self.before_encoder is not None:
            if self.before_encoder not in stages.names():
                raise ValueError(
                    f"mode {self.name}: unknown input stage {self.before_encoder!r} "
                    f"(registered: {stages.names()})"
                )
            form = stages.stage(self.before_encoder).form
            if form == "select" and self.search != "no_adapt":
                raise ValueError(
                    f"mode {self.name}: a select stage answers with a run's no-adapt class; "
                    f"its search must be no_adapt, not {self.search!r}"
                )
        if self.carries_p and not self.stateful:
            raise ValueError(f"mode {self.name}: carrying p_prev makes a mode stateful")
        if not self.audio and not self.why_not_audio:
            raise ValueError(f"mode {self.name}: say why the audio mode refuses it")
        if len(self.eval_label or self.name) > EVAL_LABEL_MAX:
            raise ValueError(
                f"mode {self.name}: eval_label {self.eval_label!r} is longer than "
                f"{EVAL_LABEL_MAX} characters (codegen eval's table column)"
            )

    @property
    def c_name(self) -> str:
        return f"ELT_MODE_{self.name.upper()}"

    @property
    def config_section(self) -> str:
        """The TOML table holding its settings: its input stage's, else [elatta]."""
        if self.before_encoder is None:
            return "elatta"
        return stages.stage(self.before_encoder).table.name

    @property
    def table_label(self) -> str:
        """Its row name in `codegen eval`'s tables."""
        return self.eval_label or self.name


EVAL_LABEL_MAX = 17

BUILTIN: tuple[Mode, ...] = (
    Mode("no_adapt", 0, "no-adapt", "no_adapt", eval_label="No Adapt"),
    Mode("strict", 1, "ELaTTA (strict)", "strict", eval_label="ELaTTA strict", safety_limit=-0.5),
    Mode(
        "continual",
        2,
        "ELaTTA (continual, paper)",
        "continual",
        carries_p=True,
        stateful=True,
        eval_label="ELaTTA continual",
        safety_limit=-1.0,
    ),
    Mode(
        "continual_bounded",
        3,
        "ELaTTA (continual, bounded)",
        "continual_bounded",
        carries_p=True,
        stateful=True,
        eval_label="ELaTTA bounded",
        safety_limit=-1.0,
    ),
    Mode(
        "cmvn",
        4,
        "cmvn (continual input normalisation)",
        "no_adapt",
        before_encoder="cmvn",
        stateful=True,
        eval_label="cmvn",
        safety_limit=-0.5,
    ),
    Mode(
        "cmvn_causal",
        5,
        "cmvn causal (gated input normalisation)",
        "no_adapt",
        before_encoder="cmvn_causal",
        stateful=True,
        eval_label="cmvn causal",
        safety_limit=-0.5,
    ),
    Mode(
        "cmvn_select",
        6,
        "cmvn select (confidence-selected input normalisation)",
        "no_adapt",
        before_encoder="cmvn_select",
        stateful=True,
        eval_label="cmvn select",
        safety_limit=-0.5,
    ),
)

_TABLE: list[Mode] = list(BUILTIN)


class _Names(Sequence[str]):
    """The names of the modes a predicate picks, in wire-id order, read from the table on
    every use (a tuple's equality and repr)."""

    def __init__(self, pick: Callable[[Mode], bool]) -> None:
        self._pick = pick

    def _now(self) -> tuple[str, ...]:
        return tuple(m.name for m in _TABLE if self._pick(m))

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[str, ...]: ...
    def __getitem__(self, i: int | slice) -> str | tuple[str, ...]:
        return self._now()[i]

    def __len__(self) -> int:
        return len(self._now())

    def __eq__(self, other: object) -> bool:
        return self._now() == (tuple(other) if isinstance(other, Sequence) else other)

    def __hash__(self) -> int:
        return hash(self._now())

    def __repr__(self) -> str:
        return repr(self._now())


class _NameSet(Set[str]):
    """The names of the modes a predicate picks, as a set read from the table on every use."""

    def __init__(self, pick: Callable[[Mode], bool]) -> None:
        self._pick = pick

    def __contains__(self, name: object) -> bool:
        return any(m.name == name and self._pick(m) for m in _TABLE)

    def __iter__(self) -> Iterator[str]:
        return iter([m.name for m in _TABLE if self._pick(m)])

    def __len__(self) -> int:
        return sum(1 for m in _TABLE if self._pick(m))

    def __repr__(self) -> str:
        return repr(frozenset(self))


class _Table(Sequence[Mode]):
    """Every mode, in wire-id order."""

    @overload
    def __getitem__(self, i: int) -> Mode: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Mode, ...]: ...
    def __getitem__(self, i: int | slice) -> Mode | tuple[Mode, ...]:
        return tuple(_TABLE)[i]

    def __len__(self) -> int:
        return len(_TABLE)

    def __repr__(self) -> str:
        return repr(tuple(_TABLE))


class _ByName(Mapping[str, Any]):
    """name -> a field of the mode (the mode itself by default)."""

    def __init__(self, field: Callable[[Mode], Any]) -> None:
        self._field = field

    def __getitem__(self, name: str) -> Any:
        for m in _TABLE:
            if m.name == name:
                return self._field(m)
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter([m.name for m in _TABLE])

    def __len__(self) -> int:
        return len(_TABLE)


MODES: Sequence[Mode] = _Table()
BY_NAME: Mapping[str, Mode] = _ByName(lambda m: m)
DEVICE_MODES: Sequence[str] = _Names(lambda m: True)
MODE_IDS: Mapping[str, int] = _ByName(lambda m: m.wire_id)
LABELS: Mapping[str, str] = _ByName(lambda m: m.label)
STATEFUL_MODES: Set[str] = _NameSet(lambda m: m.stateful)
CONTINUAL_MODES: Set[str] = _NameSet(lambda m: m.carries_p)
STREAM_MODES: Sequence[str] = _Names(lambda m: m.audio)


def mode(name: str) -> Mode:
    """The mode called ``name``; ConfigError naming the allowed ones otherwise."""
    try:
        return BY_NAME[name]
    except (KeyError, TypeError):
        raise ConfigError(f"mode={name!r} is not allowed: use one of {DEVICE_MODES}") from None


def by_wire_id(wire_id: int) -> Mode:
    for m in _TABLE:
        if m.wire_id == wire_id:
            return m
    raise ValueError(f"mode byte {wire_id} names no mode (0..{len(_TABLE) - 1})")


def register(m: Mode) -> None:
    """Add a mode for this process: the next wire id, a new name, a plain search mode."""
    _check_table([*_TABLE, m])
    _TABLE.append(m)


def unregister(name: str) -> None:
    """Remove the last mode `register` added (wire ids stay dense); built-in ones stay."""
    if not _TABLE or _TABLE[-1].name != name or len(_TABLE) <= len(BUILTIN):
        raise ConfigError(f"mode {name!r} is not the last registered mode")
    _TABLE.pop()


@contextmanager
def registered(*added: Mode) -> Iterator[None]:
    """The modes ``added`` in the table for the ``with`` block."""
    done: list[str] = []
    try:
        for m in added:
            register(m)
            done.append(m.name)
        yield
    finally:
        for name in reversed(done):
            unregister(name)


@dataclass(frozen=True)
class FirmwareTable:
    """The table as a build's firmware takes it (``fw_app_model.h``, fw_app_kws.c): per mode in
    wire-id order its search's C name and its input stage's ``elt_stage_t`` (None: none); the
    audio mode's modes as a bit mask; the stages' symbols, each once."""

    count: int
    searches: tuple[str, ...]
    stages: tuple[str | None, ...]
    audio_mask: str
    symbols: tuple[str, ...]


def firmware_table() -> FirmwareTable:
    by_stage = [
        None if m.before_encoder is None else stages.stage(m.before_encoder).symbol for m in _TABLE
    ]
    return FirmwareTable(
        count=len(_TABLE),
        searches=tuple(mode(m.search).c_name for m in _TABLE),
        stages=tuple(by_stage),
        audio_mask=f"0x{sum(1 << m.wire_id for m in _TABLE if m.audio):02X}",
        symbols=tuple(dict.fromkeys(s for s in by_stage if s is not None)),
    )


def render_c_header() -> str:
    """``firmware/elt_modes.h``: the built-in modes' names for the firmware
    (templates/elt_modes.h.j2)."""
    return jinja_env().get_template("elt_modes.h.j2").render(modes=BUILTIN)


def _check_table(table: list[Mode]) -> None:
    ids = [m.wire_id for m in table]
    if ids != list(range(len(table))):
        raise ValueError(f"mode wire ids must be 0..{len(table) - 1} in order, got {ids}")
    names = [m.name for m in table]
    if len(set(names)) != len(names):
        raise ValueError(f"mode names must be unique, got {names}")
    if len(table) > 32:
        raise ValueError(f"{len(table)} modes: the firmware's mode masks hold 32")
    plain = {m.name for m in table if m.before_encoder is None}
    for m in table:
        if m.search not in plain:
            raise ValueError(f"mode {m.name}: its search must be a plain mode of this table")


_check_table(_TABLE)


if __name__ == "__main__":  # the header, before clang-format (see its banner)
    print(render_c_header(), end="")
