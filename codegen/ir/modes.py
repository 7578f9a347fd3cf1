"""The device's modes, declared once: every consumer (the IR's validation, the integer and float
references, the emitter, the host bench and its reports, the firmware's generated header
``firmware/elt_modes.h``) reads this table, so adding a mode is one entry here plus the mode's
own kernels.

A mode is what runs around the encoder for one sample: an optional input stage before it
(``before_encoder``: "cmvn", the continual input normalisation of docs/adaptation.md,
``codegen.intref.cmvn`` / ``firmware/elt_cmvn_s16.c``, which the audio mode runs on the clip's
held frames when the clip ends, "cmvn_causal", its causal form, which normalises each frame as
it arrives, or "cmvn_select", which encodes the clip both as it is and after cmvn and answers
with the more confident run) and one of the paper's latent searches
after it (``search``: a mode of ``codegen.elatta.float_ref.MODES``; paper §3, Algorithm 1).
The wire id is the mode byte of INFER, AUDIO_BEGIN and RESULT (docs/protocol.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.base.errors import ConfigError
from codegen.base.resources import jinja_env
from codegen.elatta.float_ref import MODES as SEARCHES

# The input stages a mode may run before the encoder, with the kernel that implements each.
BEFORE_ENCODER: dict[str, str] = {
    "cmvn": "elt_cmvn_s16.c (codegen.intref.cmvn)",
    "cmvn_causal": "elt_cmvn_s16.c, causal form (codegen.intref.cmvn.cmvn_causal_clip)",
    "cmvn_select": "elt_cmvn_s16.c on a second copy of the clip, then the confidence selection "
    "(codegen.intref.model.select_confident)",
}


@dataclass(frozen=True)
class Mode:
    name: str
    wire_id: int  # the mode byte on the link; ELT_MODE_<NAME> in C
    label: str  # the method's row name in reports
    search: str  # the latent search after the encoder (codegen.elatta.float_ref.MODES)
    before_encoder: str | None = None  # an input stage of BEFORE_ENCODER, or None
    carries_p: bool = False  # p_prev goes from sample to sample (RESET p_prev resumes it)
    stateful: bool = False  # any state goes from sample to sample (a resume must rebuild it)
    audio: bool = True  # served by the streaming audio mode
    config_section: str = "elatta"  # the TOML table holding its settings
    why_not_audio: str = ""  # the reason the audio mode refuses it, for error messages

    def __post_init__(self) -> None:
        if self.search not in SEARCHES:
            raise ValueError(f"mode {self.name}: search {self.search!r} not in {SEARCHES}")
        if self.before_encoder is not None and self.before_encoder not in BEFORE_ENCODER:
            raise ValueError(f"mode {self.name}: unknown input stage {self.before_encoder!r}")
        if self.carries_p and not self.stateful:
            raise ValueError(f"mode {self.name}: carrying p_prev makes a mode stateful")
        if not self.audio and not self.why_not_audio:
            raise ValueError(f"mode {self.name}: say why the audio mode refuses it")

    @property
    def c_name(self) -> str:
        return f"ELT_MODE_{self.name.upper()}"


MODES: tuple[Mode, ...] = (
    Mode("no_adapt", 0, "no-adapt", "no_adapt"),
    Mode("strict", 1, "ELaTTA (strict)", "strict"),
    Mode("continual", 2, "ELaTTA (continual, paper)", "continual", carries_p=True, stateful=True),
    Mode(
        "continual_bounded",
        3,
        "ELaTTA (continual, bounded)",
        "continual_bounded",
        carries_p=True,
        stateful=True,
    ),
    Mode(
        "cmvn",
        4,
        "cmvn (continual input normalisation)",
        "no_adapt",
        before_encoder="cmvn",
        stateful=True,
        config_section="cmvn",
    ),
    Mode(
        "cmvn_causal",
        5,
        "cmvn causal (gated input normalisation)",
        "no_adapt",
        before_encoder="cmvn_causal",
        stateful=True,
        config_section="cmvn",
    ),
    Mode(
        "cmvn_select",
        6,
        "cmvn select (confidence-selected input normalisation)",
        "no_adapt",
        before_encoder="cmvn_select",
        stateful=True,
        config_section="cmvn",
    ),
)

BY_NAME: dict[str, Mode] = {m.name: m for m in MODES}
DEVICE_MODES: tuple[str, ...] = tuple(m.name for m in MODES)
MODE_IDS: dict[str, int] = {m.name: m.wire_id for m in MODES}
STATEFUL_MODES: frozenset[str] = frozenset(m.name for m in MODES if m.stateful)
CONTINUAL_MODES: frozenset[str] = frozenset(m.name for m in MODES if m.carries_p)
STREAM_MODES: tuple[str, ...] = tuple(m.name for m in MODES if m.audio)


def mode(name: str) -> Mode:
    """The mode called ``name``; ConfigError naming the allowed ones otherwise."""
    try:
        return BY_NAME[name]
    except (KeyError, TypeError):
        raise ConfigError(f"mode={name!r} is not allowed: use one of {DEVICE_MODES}") from None


def by_wire_id(wire_id: int) -> Mode:
    for m in MODES:
        if m.wire_id == wire_id:
            return m
    raise ValueError(f"mode byte {wire_id} names no mode (0..{len(MODES) - 1})")


def render_c_header() -> str:
    """``firmware/elt_modes.h``: the table above for the firmware (templates/elt_modes.h.j2)."""
    return (
        jinja_env()
        .get_template("elt_modes.h.j2")
        .render(
            modes=MODES,
            searches={m.name: BY_NAME[m.search] for m in MODES},
            audio_mask=f"0x{sum(1 << m.wire_id for m in MODES if m.audio):02X}",
            before_masks={
                s: f"0x{sum(1 << m.wire_id for m in MODES if m.before_encoder == s):02X}"
                for s in sorted(BEFORE_ENCODER)
            },
        )
    )


def _check_table() -> None:
    ids = [m.wire_id for m in MODES]
    if ids != list(range(len(MODES))):
        raise ValueError(f"mode wire ids must be 0..{len(MODES) - 1} in order, got {ids}")
    for m in MODES:
        if m.search not in BY_NAME or BY_NAME[m.search].before_encoder is not None:
            raise ValueError(f"mode {m.name}: its search must be a plain mode of this table")


_check_table()


if __name__ == "__main__":  # the header, before clang-format (see its banner)
    print(render_c_header(), end="")
