"""The mode table (codegen.ir.modes) is the one description of the device's modes: the
firmware's generated header equals its rendering, the firmware names modes only through it, and
every consumer (IR validation, references, host codec, reports) answers from it."""

from __future__ import annotations

import dataclasses
import re

import pytest
from genheader import formatted
from repopaths import ROOT

from codegen.base.errors import ConfigError
from codegen.ir import modes
from codegen.ir.modes import MODES, Mode

HEADER = ROOT / "firmware" / "elt_modes.h"


def test_firmware_header_is_the_table() -> None:
    rendered = formatted(modes.render_c_header(), HEADER)
    assert HEADER.read_text() == rendered, (
        "firmware/elt_modes.h departs from codegen.ir.modes: regenerate it (see its banner)"
    )
    for m in MODES:
        assert re.search(rf"^#define {m.c_name} {m.wire_id}\b", rendered, re.M), m.name


def test_firmware_names_modes_only_through_the_header() -> None:
    """No hand-written mode number in the firmware: every mode test goes through elt_modes.h or
    the build's table, and the model runtime names no input stage (elt_stage.h)."""
    for src in ("fw_app_kws.c", "elt_adapt.c", "elt_adapt.h"):
        text = (ROOT / "firmware" / src).read_text()
        assert "APP_MODE_CMVN" not in text
        assert not re.search(r'#include "elt_cmvn|\belt_cmvn_\w+\(|\bapp_cmvn', text), src
        assert not re.search(r"#define ELT_MODE_\w+ \d", text), src
        assert not re.search(r"mode\s*[=!<>]=?\s*\d+u?\b", text), src


def test_wire_ids_are_dense_and_unique() -> None:
    assert [m.wire_id for m in MODES] == list(range(len(MODES)))
    assert modes.by_wire_id(4).name == "cmvn"
    with pytest.raises(ValueError, match="names no mode"):
        modes.by_wire_id(len(MODES))


def test_unknown_mode_is_refused_with_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="'bogus' is not allowed: use one of"):
        modes.mode("bogus")


def test_consumers_read_the_table() -> None:
    from elatta_host import infer, report

    from codegen.ir.nodes import AdaptConfig

    assert infer.DEVICE_MODES == tuple(m.name for m in MODES)
    assert set(infer.STREAM_MODES) == {m.name for m in MODES if m.audio}
    assert report.METHOD_NAMES == {m.name: m.label for m in MODES}
    for m in MODES:
        assert infer.mode_index(m.name) == m.wire_id
        assert AdaptConfig(mode=m.name).to_float().mode == m.search


def test_a_mode_must_be_well_formed() -> None:
    with pytest.raises(ValueError, match="search"):
        Mode("x", 9, "x", "nothing")
    with pytest.raises(ValueError, match="input stage"):
        Mode("x", 9, "x", "strict", before_encoder="pcen")
    with pytest.raises(ValueError, match="stateful"):
        Mode("x", 9, "x", "continual", carries_p=True)
    with pytest.raises(ValueError, match="why the audio mode"):
        Mode("x", 9, "x", "strict", audio=False)


def test_a_new_mode_is_one_entry() -> None:
    """A mode declared in the table only (cmvn's normalisation, then the strict search) reaches
    every view of the table and the firmware's table of a build: its id, its search and its
    input stage, no code touched; the table is as it was afterwards."""
    from elatta_host import infer

    extra = Mode(
        "cmvn_strict",
        len(MODES),
        "cmvn + strict",
        "strict",
        before_encoder="cmvn",
        stateful=True,
        audio=False,
        why_not_audio="it needs the whole clip",
        eval_label="cmvn + strict",
        safety_limit=-0.5,
    )
    n = len(MODES)
    with modes.registered(extra):
        assert modes.DEVICE_MODES[-1] == "cmvn_strict" and infer.mode_index("cmvn_strict") == n
        assert "cmvn_strict" in modes.STATEFUL_MODES and "cmvn_strict" not in modes.STREAM_MODES
        assert modes.mode("cmvn_strict").config_section == "cmvn"
        fw = modes.firmware_table()
        assert fw.count == n + 1
        assert fw.searches[n] == "ELT_MODE_STRICT"
        assert fw.stages[n] == fw.stages[4] == "elt_stage_cmvn"
        assert int(fw.audio_mask, 16) == (1 << n) - 1  # the new mode is not the audio mode's
        assert fw.symbols.count("elt_stage_cmvn") == 1
        with pytest.raises(ValueError, match="wire ids"):
            modes.register(dataclasses.replace(extra, name="other", wire_id=n + 5))
    assert len(MODES) == n and "cmvn_strict" not in modes.DEVICE_MODES
    with pytest.raises(ConfigError, match="not allowed"):
        modes.mode("cmvn_strict")


def test_a_select_stage_answers_with_no_adapt() -> None:
    """A select stage answers with a run's no-adapt class: its mode's search must be no_adapt."""
    with pytest.raises(ValueError, match="search must be no_adapt"):
        Mode("x", 9, "x", "strict", before_encoder="cmvn_select")
