"""The model runtime's payloads are described once (codegen.ir.wire): the firmware's offsets
(firmware/fw_app_wire.h) equal the description's rendering, the firmware writes and reads the
payloads only through those offsets, and the host codec round-trips every field of it."""

from __future__ import annotations

import re
import struct
from dataclasses import fields

import pytest
from elatta_host import infer
from genheader import formatted
from repopaths import ROOT

from codegen.ir import wire

HEADER = ROOT / "firmware" / "fw_app_wire.h"


def test_firmware_header_is_the_description() -> None:
    rendered = formatted(wire.render_c_header(), HEADER)
    assert HEADER.read_text() == rendered, (
        "firmware/fw_app_wire.h departs from codegen.ir.wire: regenerate it (see its banner)"
    )


def test_firmware_uses_only_the_described_offsets() -> None:
    """fw_app_kws.c indexes a payload by a generated offset, never by a bare number, and every
    scalar of RESULT is written there."""
    text = (ROOT / "firmware" / "fw_app_kws.c").read_text()
    assert not re.search(r"\b(in|out)\[\d", text), "a payload indexed by a literal offset"
    for f in wire.RESULT.fixed:
        assert f"APP_RESULT_{f.name.upper()}]" in text, f.name
    for name in (
        "APP_INFER_MODE",
        "APP_AUDIO_BEGIN_MODE",
        "APP_AUDIO_OFFSET",
        "APP_AUDIO_ADPCM_SAMPLES",
    ):
        assert name in text


def test_host_structs_come_from_the_description() -> None:
    assert infer.RESULT_FIXED.format == wire.RESULT.fixed_format
    assert infer.RESULT_FIXED.size == 40  # the layout docs/protocol.md documents
    assert infer.INFER_HDR.size == wire.INFER.fixed_size == 9
    kept = [f.name for f in wire.RESULT_STREAM.fields if f.name not in ("C", "k", "H")]
    assert sorted(f.name for f in fields(infer.InferResult)) == sorted(kept)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("C", "k", "H"), [(12, 2, 32), (2, 1, 1), (35, 16, 64)])
def test_result_round_trip(C: int, k: int, H: int, stream: bool) -> None:
    """A RESULT packed independently, field by field with the documented struct codes, decodes to
    every value it carries."""
    vals = {
        "sample_id": 0xDEADBEEF,
        "mode": 3,
        "pred_noadapt": -1,
        "pred": 7,
        "H_noadapt": -(2**31),
        "H_best": 2**31 - 1,
        "n_pivot_fix": 5,
        "ticks_encoder": 9139,
        "ticks_adapt": 2**32 - 1,
        "ticks_total": 1,
        "p_best": tuple(range(-k, 0)),
        "logits_noadapt": tuple(range(C)),
        "logits": tuple(-x for x in range(C)),
        "z": tuple(range(-32768, -32768 + H)),
    }
    payload = struct.pack(
        "<IBBBBiiiiiIII",
        vals["sample_id"], vals["mode"], C, k, H, vals["pred_noadapt"], vals["pred"],
        vals["H_noadapt"], vals["H_best"], vals["n_pivot_fix"], vals["ticks_encoder"],
        vals["ticks_adapt"], vals["ticks_total"],
    )  # fmt: skip
    payload += struct.pack(f"<{k}i{C}h{C}h{H}h", *vals["p_best"], *vals["logits_noadapt"],
                           *vals["logits"], *vals["z"])  # fmt: skip
    payload += (
        struct.pack("<IIII", 344300, 61000, 32305, 1200)
        if stream
        else struct.pack("<II", 61000, 1027)
    )
    r = infer.decode_result(payload, stream=stream)
    for name, v in vals.items():
        assert getattr(r, name) == v, name
    assert r.ticks_frontend == (344300 if stream else None)
    assert (r.ticks_link, r.link_bytes, r.ticks_unpack) == (
        (61000, 32305, 1200) if stream else (61000, 1027, None)
    )
    with pytest.raises(ValueError, match="expected"):
        infer.decode_result(payload[:-1], stream=stream)


def test_a_scalar_after_an_array_is_refused() -> None:
    with pytest.raises(ValueError, match="scalar after an array"):
        wire.Payload("X", "x", (wire.Field("a", "i16", "", "n"), wire.Field("b", "u8", "")))
