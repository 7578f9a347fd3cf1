"""The built-in input stages: the continual input normalisation cmvn and its forms
(docs/adaptation.md "Deployed method", "Audio mode: causal cmvn", "Round 3" … "Round 8").

* ``cmvn`` (form ``clip``): each clip joins running statistics of the input, then is
  normalised with them (under its shift gate);
* ``cmvn_causal`` (form ``frame``): each clip is normalised with the statistics of the clips
  before it, frame by frame, then joins them;
* ``cmvn_select`` (form ``select``): the clip is encoded as it is and after cmvn with its own
  shifts and no shift gate, and the more confident run answers, under its shift gate, floor,
  clip floor and clip gate.

The three share one table, [cmvn] (`CmvnSettings`), one integer form (`CmvnParams`,
`quantize_cmvn`), one state on the device (``firmware/elt_cmvn_stage.c`` over the kernel
``firmware/elt_cmvn_s16.c``) and one integer reference (`codegen.stages.cmvn_int`); the float
twins are the float reference's methods (`codegen.elatta.methods`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.contract import H_FRAC
from codegen.base.errors import ConfigError
from codegen.base.resources import jinja_env
from codegen.elatta.float_ref import is_int
from codegen.elatta.methods import (
    CmvnConfig,
    cmvn_causal_stream,
    cmvn_clip_shift,
    cmvn_normalised,
    cmvn_shift,
    select_masks,
    select_use,
)
from codegen.stages.cmvn_int import CmvnParams, cmvn_int, cmvn_select_int
from codegen.stages.cmvn_int import select_use as select_use_int
from codegen.stages.stage import FloatRun, InputStage, IntRun, StageShape, StageTable

CMVN_MARGIN_MAX = 8.0  # cmvn_select's entropy margin in nats (Q5.26 holds < 32)
CMVN_GATE_MAX = 64.0  # the shift gate's τ (docs/adaptation.md "Audio mode: causal cmvn")
CMVN_SHIFT_MAX = 15  # α = 2^-a, w = 2^-b with a in 1..15, b in 0..15
CMVN_RECIP_SHIFT = 22  # the 1/T reciprocal's fraction bits (docs/adaptation.md)


def _shift(name: str, v: Any, lo: int, what: str, absent: str = "") -> None:
    if not is_int(v) or not lo <= v <= CMVN_SHIFT_MAX:
        raise ConfigError(
            f"{name}={v!r} is not allowed: use an integer in {lo}..{CMVN_SHIFT_MAX} ({what})"
            + absent
        )


def _real(name: str, v: Any, hi: float, what: str) -> None:
    if (
        not isinstance(v, int | float)
        or isinstance(v, bool)
        or not (math.isfinite(v) and 0.0 <= v <= hi)
    ):
        raise ConfigError(f"{name}={v!r} is not allowed: use a float in [0, {hi:g}] ({what})")


@dataclass(frozen=True)
class CmvnSettings:
    """[cmvn] of the build config (docs/adaptation.md "Deployed method"), one field per key.

    Mode cmvn: EMA factor α = 2^-alpha_shift, blend w = 2^-weight_shift, shift gate τ ``gate``
    (0: none); mode cmvn_causal: its EMA factor 2^-causal_alpha_shift and shift gate
    ``causal_gate`` ("Audio mode"); mode cmvn_select: the entropy margin m in nats ("Round 3"),
    its shift gate τ (0: none; "Round 4": the normalised class also where d ≥ τ after the
    update), its shift floor (0: none; "Round 5": the normalised class only where d ≥ floor), the
    thresholds τ on the clip's own shift distance d_clip ("Round 6"; 0: none): the clip floor (the
    floor is also reached where d_clip ≥ τ) and the clip gate (where the floor is reached and
    d_clip ≥ τ, the normalised class without the entropy test); and its normalised run's own EMA
    factor 2^-select_alpha_shift and blend 2^-select_weight_shift ("Round 8"; None: mode cmvn's).
    """

    alpha_shift: int = 4
    weight_shift: int = 2
    gate: float = 0.0
    causal_alpha_shift: int = 2
    causal_gate: float = 0.0
    select_margin: float = 0.0
    select_gate: float = 0.0
    select_floor: float = 0.0
    select_clip_floor: float = 0.0
    select_clip_gate: float = 0.0
    select_alpha_shift: int | None = None
    select_weight_shift: int | None = None

    def __post_init__(self) -> None:
        _shift("alpha_shift", self.alpha_shift, 1, "alpha = 2^-alpha_shift")
        _shift("weight_shift", self.weight_shift, 0, "w = 2^-weight_shift")
        if self.select_alpha_shift is not None:
            _shift(
                "select_alpha_shift",
                self.select_alpha_shift,
                1,
                "alpha = 2^-select_alpha_shift",
                ", or leave it out (alpha_shift)",
            )
        if self.select_weight_shift is not None:
            _shift(
                "select_weight_shift",
                self.select_weight_shift,
                0,
                "w = 2^-select_weight_shift",
                ", or leave it out (weight_shift)",
            )
        _shift("causal_alpha_shift", self.causal_alpha_shift, 1, "alpha = 2^-causal_alpha_shift")
        _real("select_margin", self.select_margin, CMVN_MARGIN_MAX, "nats")
        for name in (
            "gate",
            "causal_gate",
            "select_gate",
            "select_floor",
            "select_clip_floor",
            "select_clip_gate",
        ):
            _real(name, getattr(self, name), CMVN_GATE_MAX, "0: no shift gate")

    @property
    def select_shifts(self) -> tuple[int, int]:
        """(alpha_shift, weight_shift) of mode cmvn_select's normalised run."""
        a, b = self.select_alpha_shift, self.select_weight_shift
        return (self.alpha_shift if a is None else a, self.weight_shift if b is None else b)


def quantize_cmvn(s: CmvnSettings, shape: StageShape) -> CmvnParams:
    """The integer constants of [cmvn] for the encoder's input: the state has 8 fraction bits
    more than the input; the 1/T of the clip means is one rounded reciprocal; the thresholds
    τ become sums over the F coefficients in the state's format, the margin the entropy's
    Q5.26."""
    n = shape.x_fmt.frac_bits
    fs = n + 8
    if 28 + fs > 61:
        raise ConfigError(
            f"input format {shape.x_fmt.name}: mode cmvn needs x fraction bits <= 25 "
            "(2^(28+n+8) must fit the 64-bit division)"
        )
    F = shape.features

    def gate_sum(tau: float) -> int:  # τ·F in Q.F_s: the gates compare the sum over coefficients
        return round(float(tau) * F * (1 << fs))

    return CmvnParams(
        frames=shape.frames,
        features=F,
        x_frac=n,
        state_frac=fs,
        recip=round((1 << CMVN_RECIP_SHIFT) / shape.frames),
        recip_shift=CMVN_RECIP_SHIFT,
        alpha_shift=int(s.alpha_shift),
        weight_shift=int(s.weight_shift),
        vmin=max(1, round(1e-4 * (1 << fs))),
        causal_alpha_shift=int(s.causal_alpha_shift),
        gate_sum=gate_sum(s.gate),
        causal_gate_sum=gate_sum(s.causal_gate),
        select_margin=round(float(s.select_margin) * (1 << H_FRAC)),
        select_gate_sum=gate_sum(s.select_gate),
        select_floor_sum=gate_sum(s.select_floor),
        select_clip_floor_sum=gate_sum(s.select_clip_floor),
        select_clip_gate_sum=gate_sum(s.select_clip_gate),
        select_alpha_shift=int(s.select_shifts[0]),
        select_weight_shift=int(s.select_shifts[1]),
    )


# ------------------------------------------------------------------------------- float twins
# On features already normalised with the training statistics (u = (x − μ_tr)/σ_tr, whose
# training statistics are 0 and 1), as the device sees them.


def _config(alpha_shift: int, weight_shift: int) -> CmvnConfig:
    return CmvnConfig(weight=2.0**-weight_shift, alpha=2.0**-alpha_shift, variance=True)


def cmvn_float(u: npt.ArrayLike, s: CmvnSettings) -> FloatRun:
    """Mode cmvn: `cmvn_normalised` with α, w and the shift gate of [cmvn]."""
    cfg = _config(s.alpha_shift, s.weight_shift)
    return FloatRun(cmvn_normalised(u, cfg, float(s.gate) or None))


def cmvn_causal_float(u: npt.ArrayLike, s: CmvnSettings) -> FloatRun:
    """Mode cmvn_causal: `cmvn_causal_stream` with its own α and shift gate."""
    cfg = _config(s.causal_alpha_shift, s.weight_shift)
    f = np.asarray(u).shape[-1]
    gate = float(s.causal_gate) or None
    return FloatRun(cmvn_causal_stream(u, np.zeros(f), np.ones(f), cfg, gate))


def cmvn_select_float(u: npt.ArrayLike, s: CmvnSettings) -> FloatRun:
    """Mode cmvn_select: the normalised run (its own shifts, ungated) and the choice
    `select_use`, each threshold 0 meaning none: the shift gate d ≥ select_gate and the shift
    floor d ≥ select_floor on the look-ahead statistics (`cmvn_shift`; docs/adaptation.md
    "Round 4", "Round 5"); the clip floor d_clip ≥ select_clip_floor (the floor is reached too)
    and the clip gate d_clip ≥ select_clip_gate (with the floor reached, the normalised class
    without the entropy test) on the clip's own statistics (`cmvn_clip_shift`, "Round 6")."""
    cfg = _config(*s.select_shifts)
    run = cmvn_normalised(u, cfg, None)
    tau, floor = float(s.select_gate), float(s.select_floor)
    clip_floor, clip_gate = float(s.select_clip_floor), float(s.select_clip_gate)
    fired = floor_ok = None
    if tau > 0 or floor > 0 or clip_floor > 0 or clip_gate > 0:
        f = np.asarray(u).shape[-1]
        d = cmvn_shift(u, np.zeros(f), np.ones(f), cfg)
        dc = cmvn_clip_shift(u, np.zeros(f), np.ones(f))
        fired, floor_ok = select_masks(d, dc, tau, floor, clip_floor, clip_gate)
    margin = float(s.select_margin)

    def choose(l0: Any, l1: Any) -> npt.NDArray[np.bool_]:
        return select_use(l0, l1, margin, fired, floor_ok)

    return FloatRun(run, choose)


# ------------------------------------------------------------------------- integer references


def cmvn_ref(x: Any, p: CmvnParams) -> IntRun:
    """Mode cmvn in integers (`cmvn_int`)."""
    return IntRun(cmvn_int(x, p)[0])


def cmvn_causal_ref(x: Any, p: CmvnParams) -> IntRun:
    """Mode cmvn_causal in integers (`cmvn_int` causal)."""
    return IntRun(cmvn_int(x, p, causal=True)[0])


def cmvn_select_ref(x: Any, p: CmvnParams) -> IntRun:
    """Mode cmvn_select in integers: the normalised run and its shift gate, floor, clip floor
    and clip gate (`cmvn_select_int`), then the entropy test (`select_use`)."""
    x1, fired, floor_ok = cmvn_select_int(x, p)

    def choose(raw: Any, run: Any) -> npt.NDArray[np.bool_]:
        return select_use_int(raw.H_noadapt, run.H_noadapt, p.select_margin, fired, floor_ok)

    return IntRun(x1, choose)


# -------------------------------------------------------------------------------- firmware


def c_constants(p: CmvnParams) -> str:
    """``FW_APP_CMVN_PARAMS`` of the build's fw_app_model.h (templates/stage_cmvn.h.j2)."""
    return jinja_env().get_template("stage_cmvn.h.j2").render(cmvn=p)


def cflags(p: CmvnParams) -> tuple[str, ...]:
    """The cmvn state's size: the model's F coefficients (elt_cmvn_s16.h ELT_CMVN_F_MAX)."""
    return (f"-DELT_CMVN_F_MAX={p.features}",)


def describe(p: CmvnParams | None) -> tuple[tuple[str, str], ...]:
    """INFO's pairs (docs/protocol.md, "Model runtime"): mode cmvn's shifts and gate, mode
    cmvn_causal's; "-" without params."""
    if p is None:
        return (("cmvn", "-"), ("cmvn_causal", "-"))
    return (
        ("cmvn", f"a{p.alpha_shift}w{p.weight_shift}g{p.gate_sum}"),
        ("cmvn_causal", f"a{p.causal_alpha_shift}g{p.causal_gate_sum}"),
    )


def report(s: CmvnSettings) -> dict[str, Any]:
    """[cmvn] as `codegen eval` reports it: the select run's shifts resolved."""
    a, b = s.select_shifts
    return {
        "alpha_shift": s.alpha_shift,
        "weight_shift": s.weight_shift,
        "causal_alpha_shift": s.causal_alpha_shift,
        "gate": s.gate,
        "causal_gate": s.causal_gate,
        "select_margin": s.select_margin,
        "select_gate": s.select_gate,
        "select_floor": s.select_floor,
        "select_clip_floor": s.select_clip_floor,
        "select_clip_gate": s.select_clip_gate,
        "select_alpha_shift": a,
        "select_weight_shift": b,
    }


TABLE = StageTable(
    name="cmvn",
    settings=CmvnSettings,
    params=CmvnParams,
    quantize=quantize_cmvn,
    sources=("elt_cmvn_s16.c", "elt_cmvn_stage.c"),
    c_constants=c_constants,
    cflags=cflags,
    describe=describe,
    report=report,
)

STAGES: tuple[InputStage, ...] = (
    InputStage(
        "cmvn",
        TABLE,
        "clip",
        cmvn_float,
        cmvn_ref,
        "elt_stage_cmvn",
        "continual input normalisation of the whole clip (elt_cmvn_apply_s16)",
    ),
    InputStage(
        "cmvn_causal",
        TABLE,
        "frame",
        cmvn_causal_float,
        cmvn_causal_ref,
        "elt_stage_cmvn_causal",
        "its causal form, frame by frame (elt_cmvn_causal_begin, _frame, _end)",
    ),
    InputStage(
        "cmvn_select",
        TABLE,
        "select",
        cmvn_select_float,
        cmvn_select_ref,
        "elt_stage_cmvn_select",
        "cmvn on a second run of the clip, then the more confident answer",
    ),
)
