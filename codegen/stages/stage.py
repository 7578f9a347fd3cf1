"""What an input stage is made of: the types of the stage registry's entries
(`codegen.stages.registry`, docs/architecture.md §3).

An input stage runs on a mode's features before the encoder
(`codegen.ir.modes.Mode.before_encoder`). One entry (`InputStage`) owns every part of it, so
adding a stage is one entry plus its own modules:

* its settings: a frozen dataclass whose fields are the keys of its TOML table (the table's
  defaults are the dataclass's; ``__post_init__`` refuses a bad value, naming it and what is
  allowed) and the key of the stage's settings in `codegen.ir.nodes.AdaptConfig.stages`;
* its quantizer: settings and the encoder's input (`StageShape`) -> a frozen dataclass of
  integers, the key of its params in `codegen.ir.nodes.QModel.stages`;
* its float twin (on float features, with the float reference's methods,
  `codegen.elatta.methods`) and its integer reference (on the int16 features, integer for
  integer what the firmware computes), both over clips [N, T, F] in row order from a reset state;
* its firmware part: the C files that define its ``elt_stage_t`` (``firmware/elt_stage.h``), the
  constants they read from the build's ``fw_app_model.h``, their -D flags and INFO's pairs.

Stages that share settings and state (the three forms of cmvn) share one `StageTable`: the TOML
table, the settings, the integer params, the C files and constants. Every stage has a form, the
way the device runs it around the encoder (``FORMS``; firmware/elt_stage.h names the hooks of
each):

* ``clip``: the whole clip is transformed before the encoder (the audio mode holds its frames
  and runs the encoder when the clip ends);
* ``frame``: each frame is transformed as it arrives, from state of the clips before (the
  audio mode steps the encoder frame by frame);
* ``select``: the clip is encoded as it is and again after the stage, and the stage picks per
  clip which run's no-adapt answer stands (`IntRun.choose`, `FloatRun.choose`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.qformat import QFormat

FloatArray = npt.NDArray[np.floating[Any]]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

FORMS: tuple[str, ...] = ("clip", "frame", "select")


@dataclass(frozen=True)
class StageShape:
    """The encoder's input as a stage's quantizer sees it: T frames of F int16 features in
    ``x_fmt`` (the first encoder layer's input format)."""

    frames: int
    features: int
    x_fmt: QFormat


@dataclass(frozen=True, eq=False)
class IntRun:
    """A stage's integer reference on clips [N, T, F]: ``x``, the clips the encoder runs on
    (int16 values); for a ``select`` stage ``choose(raw, run)``: per clip, whether the second
    run's answer stands (bool [N]) from the adaptation results of the raw run and of the run on
    ``x`` (`codegen.intref.adapt.IntAdaptResult`: no-adapt logits, entropy, class)."""

    x: IntArray
    choose: Callable[[Any, Any], BoolArray] | None = None


@dataclass(frozen=True, eq=False)
class FloatRun:
    """A stage's float twin on clips [N, T, F]: ``u``, the features the encoder runs on; for a
    ``select`` stage ``choose(logits_raw, logits_run)`` (float [N, C] each): per clip, whether
    the run on ``u`` gives the class."""

    u: FloatArray
    choose: Callable[[FloatArray, FloatArray], BoolArray] | None = None


def no_flags(params: Any) -> tuple[str, ...]:
    """A table whose C needs no -D flag."""
    return ()


def no_pairs(params: Any) -> tuple[tuple[str, str], ...]:
    """A table that adds nothing to INFO's description."""
    return ()


def settings_dict(settings: Any) -> dict[str, Any]:
    """A table's settings as `codegen eval` reports them: field by field."""
    return dataclasses.asdict(settings)


@dataclass(frozen=True)
class StageTable:
    """What the stages of one TOML table share (module docstring).

    ``sources``: the C files (names under ``firmware/``, or paths) that define the stages'
    ``elt_stage_t`` objects and their state; ``c_constants(params)``: the lines of the build's
    ``fw_app_model.h`` they read (Python decides the values, a template formats them);
    ``cflags(params)``: -D flags every translation unit of the model takes;
    ``describe(params)`` (None: a build without the table's params): INFO's ``key=value``
    pairs; ``report(settings)``: the settings in `codegen eval`'s report."""

    name: str
    settings: type
    params: type
    quantize: Callable[[Any, StageShape], Any]
    sources: tuple[str | Path, ...]
    c_constants: Callable[[Any], str]
    cflags: Callable[[Any], tuple[str, ...]] = no_flags
    describe: Callable[[Any], tuple[tuple[str, str], ...]] = no_pairs
    report: Callable[[Any], dict[str, Any]] = settings_dict

    def default(self) -> Any:
        """The settings of a config without this table."""
        return self.settings()


@dataclass(frozen=True)
class InputStage:
    """One input stage (module docstring): ``name`` is what a mode names in
    ``before_encoder``, ``symbol`` the ``elt_stage_t`` its table's C defines for it,
    ``float_twin(u, settings)`` and ``int_ref(x, params)`` its two references."""

    name: str
    table: StageTable
    form: str
    float_twin: Callable[[FloatArray, Any], FloatRun]
    int_ref: Callable[[IntArray, Any], IntRun]
    symbol: str
    what: str
