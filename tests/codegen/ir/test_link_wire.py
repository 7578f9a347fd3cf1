"""The link layer's fixed payloads are described once (codegen.ir.link_wire): the firmware's
offsets (firmware/fw_link_wire.h) are the description's rendering, fw_server.c writes and reads
the payloads only through them, protocol v3's bytes are what they were when the offsets were
written by hand, and a changed description moves the compiled server and the host's parsers
together."""

from __future__ import annotations

import dataclasses
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from elatta_host import protocol as p
from elatta_host.protocol import BoardInfo, Frame, FrameDecoder, Info, LinkInfo, Msg, Status
from genheader import formatted
from hostkit import HOST_BUILD_ID, build_host_server
from repopaths import ROOT

from codegen.base.resources import firmware_dir
from codegen.ir import link_wire as lw
from codegen.ir.wire import Field, Payload
from codegen.target.firmware import uart_rates

HEADER = ROOT / "firmware" / "fw_link_wire.h"

# Protocol v3 as host/protocol.py and fw_server.c wrote it by hand before the description (struct
# formats; "B" for a reserved byte): the description must keep every byte where it was.
V3_FORMATS = {
    "HEADER": "<BBIH",
    "HELLO": "<I",
    "ERROR": "<BB",
    "STATUS": "<IIBBHI",
    "BAUD": "<IH",
    "BAUD_ACK": "<IHH",
    "INFO": "<BBHIIIIIII24sII",
    "INFO_BOARD": "<BBBBIIIIIHH20sI",
    "INFO_LINK": "<BBBBIBBHIIIIIII8I",
    "BOARD": "<B3BIII",  # host/board_check.py had "<B3xIII" and "<B3xII5I"
    "BOARD_REPLY": "<B3BII5I",
}


def _defines(text: str) -> dict[str, int]:
    """Every ``#define LINK_* N u`` of a header (clang-format may break a long line after the
    name)."""
    return {m[0]: int(m[1]) for m in re.findall(r"#define (LINK_\w+)\s+(?:\\\s+)?(\d+)u", text)}


def test_firmware_header_is_the_description() -> None:
    rendered = formatted(lw.render_c_header(), HEADER)
    assert HEADER.read_text() == rendered, (
        "firmware/fw_link_wire.h departs from codegen.ir.link_wire: run `make generate`"
    )


def test_the_v3_bytes_are_unchanged() -> None:
    """The description's layouts are protocol v3's, and the rendered offsets are where the v3
    formats put each field."""
    defs = _defines(HEADER.read_text())
    for name, fmt in V3_FORMATS.items():
        pay = lw.PAYLOADS[name]
        assert pay.fixed_format == fmt, name
        codes = re.findall(r"\d*[A-Za-z]", fmt[1:])
        assert len(codes) == len(pay.fixed), name
        for i, f in enumerate(pay.fixed):
            at = struct.calcsize("<" + "".join(codes[:i]))
            assert defs[f"LINK_{name}_{f.name.upper()}"] == at, (name, f.name)
        assert defs[f"LINK_{name}_FIXED"] == struct.calcsize(fmt)
    assert defs["LINK_INFO_DESCRIPTION"] == 188  # docs/protocol.md, "INFO payload"


def test_a_reference_info_packed_by_hand_reads_back() -> None:
    """An INFO packed with the v3 formats, field by field, reads to every value it carries, and the
    host packs the same bytes back."""
    fixed = struct.pack(
        V3_FORMATS["INFO"], 3, 1, 2048, 921600, 50_000_000, 7, 2, 1, 16384, 3000,
        b"fw-abc", 4, 0xA1B2C3D4,
    )  # fmt: skip
    board = struct.pack(
        V3_FORMATS["INFO_BOARD"], 0xB1, 52, 1, 0, 0x00C5187D, 0x41, 0x410000C8, 1, 0x72360000,
        62, 6, b"zedboard", 9,
    )  # fmt: skip
    rates = (115200, 230400, 921600)
    link = struct.pack(
        V3_FORMATS["INFO_LINK"], 0xB2, 72, 3, 32, 8192, 24, 8, 256, 921600, 5, 1, 11, 2,
        0x01000007, 1400, *rates, 0, 0, 0, 0, 0,
    )  # fmt: skip
    raw = fixed + board + link + b"T=49 F=13"
    info = Info.unpack(raw)
    assert (info.protocol_version, info.uart, info.max_payload, info.baud) == (3, 1, 2048, 921600)
    assert (info.uart_ref_hz, info.frames_ok, info.frames_err, info.frames_dropped) == (
        50_000_000, 7, 2, 1,
    )  # fmt: skip
    assert (info.stack_size, info.stack_used, info.build_id) == (16384, 3000, "fw-abc")
    assert (info.frames_replayed, info.session, info.app) == (4, 0xA1B2C3D4, b"T=49 F=13")
    assert info.board == BoardInfo(
        "zedboard", 0x00C5187D, 0x41, True, 0x410000C8, 1, 0x72360000, 62, 6, 9
    )
    assert info.link == LinkInfo(8192, 32, 24, 8, 256, 921600, 5, 1, 11, 2, 0x01000007, 1400, rates)
    assert info.pack() == raw
    status = struct.pack(V3_FORMATS["STATUS"], 0x05000011, 0b110, 9, 0x03, 4000, 0x05000002)
    assert Status.unpack(status) == Status(0x05000011, 0b110, 9, 0x03, 4000, 0x05000002)
    assert Status.unpack(status).pack() == status
    assert p.baud_payload(921600, 500) == struct.pack(V3_FORMATS["BAUD"], 921600, 500)
    assert p.hello_payload(0xDEADBEEF) == struct.pack(V3_FORMATS["HELLO"], 0xDEADBEEF)


def test_fw_server_uses_only_the_described_offsets() -> None:
    """fw_server.c indexes a payload or the header by a generated offset, never by a number, and
    writes every field of the payloads it sends (a reserved byte and padding are zeroed)."""
    text = (firmware_dir() / "fw_server.c").read_text()
    assert not re.search(r"\b(p|b|h|hdr|ack|payload|data)\[\d", text), "a literal offset"
    sent = ("HEADER", "ERROR", "STATUS", "BAUD_ACK", "INFO", "INFO_BOARD", "INFO_LINK")
    for name in sent:
        for f in lw.PAYLOADS[name].fixed:
            c = f"LINK_{name}_{f.name.upper()}"
            if f.name != "reserved":
                assert f"{c}]" in text or f"{c} +" in text, c
    for c in ("LINK_BAUD_RATE", "LINK_BAUD_REVERT_MS", "LINK_HELLO_SESSION"):  # read
        assert f"{c}]" in text, c


# how fw_server.c writes (and reads) a field of each type: at the field's generated offset
_WRITERS = {
    "u8": r"\[{c}\] =",
    "u16": r"fw_(?:put|get)_u16\(&\w+(?:->\w+)?\[(?:FW_HDR_SIZE \+ )?{c}\]",
    "u32": r"fw_(?:put|get)_u32\(&\w+(?:->\w+)?\[(?:FW_HDR_SIZE \+ )?{c}(?:\]| \+)",
    "char": r"\[{c} \+ i\] = \(uint8_t\)",
}


def test_fw_server_writes_each_field_at_its_width() -> None:
    """Every field fw_server.c writes or reads is accessed at its described type (a u16 by
    fw_put_u16 ...): a type changed in the description and not in the C fails here."""
    text = (firmware_dir() / "fw_server.c").read_text()
    for name in ("HEADER", "ERROR", "STATUS", "BAUD", "BAUD_ACK", "HELLO", "INFO", "INFO_BOARD",
                 "INFO_LINK"):  # fmt: skip
        for f in lw.PAYLOADS[name].fixed:
            c = f"LINK_{name}_{f.name.upper()}"
            if f.name == "reserved" or (name == "HEADER" and f.type == "u8"):
                continue  # zeroed; the header's bytes are compared as well as written
            assert re.search(_WRITERS[f.type].format(c=c), text), f"{c}: not accessed as {f.type}"
    assert "b[LINK_HEADER_VERSION] != FW_PROTO_VERSION" in text
    assert re.search(r"\b\w+\[LINK_HEADER_TYPE\] = type;", text), "the reply header's type byte"


def test_the_board_check_uses_only_the_described_offsets() -> None:
    """fw_check.c (the Zynq-7000 board's BOARD message) reads and writes its payloads through the
    generated offsets at their described widths; the host packs and reads the same bytes."""
    text = (firmware_dir() / "board" / "zynq7000" / "fw_check.c").read_text()
    handle = text[text.index("static int32_t handle(") :]
    handle = handle[: handle.index("\n}\n")]  # where the payloads are read and written
    assert not re.search(r"\b(payload|out)\[\d", handle), "a literal offset"
    for name in ("BOARD", "BOARD_REPLY"):
        for f in lw.PAYLOADS[name].fixed:
            c = f"LINK_{name}_{f.name.upper()}"
            if f.name == "reserved":
                assert f"[{c} + i] = 0u" in text or name == "BOARD", c
            elif f.type == "u8":
                assert f"[{c}]" in text, c
            else:
                assert re.search(_WRITERS[f.type].format(c=c), text), f"{c}: not as {f.type}"
    from elatta_host import board_check as bc

    req = struct.pack(V3_FORMATS["BOARD"], 3, 0, 0, 0, 0x00200000, 4096, 0x5EED)
    assert lw.BOARD.pack(op=3, reserved=(), base=0x00200000, length=4096, seed=0x5EED) == req
    reply = struct.pack(V3_FORMATS["BOARD_REPLY"], 3, 0, 0, 0, 0x89ABCDEF, 0x1234, 1, 2, 3, 4, 5)
    assert bc.BoardReply.unpack(reply) == bc.BoardReply(3, 0x1234_89ABCDEF, (1, 2, 3, 4, 5))


def test_a_field_after_a_run_or_a_text_array_is_refused() -> None:
    with pytest.raises(ValueError, match="width 2"):
        Payload("X", "x", (Field("a", "u8", "", "n", width=2),))
    with pytest.raises(ValueError, match="text is a run"):
        Payload("X", "x", (Field("a", "char", "", "n"),))
    with pytest.raises(KeyError, match="has no field 'nope'"):
        lw.field(lw.INFO, "nope")
    with pytest.raises(ValueError, match="expected"):
        lw.STATUS.pack(next=1)


def _changed(pay: Payload, **fields: Field) -> Payload:
    """``pay`` with the named fields replaced."""
    return dataclasses.replace(pay, fields=tuple(fields.get(f.name, f) for f in pay.fields))


def _moved(pay: Payload, name: str) -> Payload:
    """``pay`` with field ``name`` moved to the end of its fixed part."""
    moved = [f for f in pay.fields if f.name == name]
    return dataclasses.replace(pay, fields=(*[f for f in pay.fields if f.name != name], *moved))


def _exchange(exe: Path, frames: list[bytes]) -> list[Frame]:
    """The host-built server's answers to ``frames``, sent in one go."""
    out = subprocess.run([str(exe)], input=b"".join(frames), capture_output=True, timeout=60)
    return [f for f in FrameDecoder().feed(out.stdout) if isinstance(f, Frame)]


def test_a_changed_description_moves_the_server_and_the_host_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """INFO's build id moved after the session, the link block's room for rates widened to 10,
    STATUS's held moved last: the header rendered from the changed description moves the
    offsets, the device's own server compiled with it answers HELLO and a damaged frame, and the
    host's parsers, built from the same changed description, read every field right; the
    unchanged parsers do not. (A field's type is the C writer's too: checked statically, by
    test_fw_server_writes_each_field_at_its_width.)"""
    changed = {
        "INFO": _moved(lw.INFO, "build_id"),
        "INFO_LINK": _changed(
            lw.INFO_LINK, rates=dataclasses.replace(lw.field(lw.INFO_LINK, "rates"), width=10)
        ),
        "STATUS": _moved(lw.STATUS, "held"),
    }
    before = _defines(HEADER.read_text())
    ping = Frame(Msg.HELLO, p.SEQ_CONTROL | 1).encode()
    body = bytearray(Frame(Msg.ECHO, p.SEQ_CONTROL | 2, b"x").body())
    body[-1] ^= 0xFF  # the CRC no longer holds: a STATUS(CRC)
    damaged = p.cobs_encode(bytes(body)) + b"\0"

    with monkeypatch.context() as m:
        for name, pay in changed.items():
            m.setattr(lw, name, pay)
            m.setitem(lw.PAYLOADS, name, pay)
        text = lw.render_c_header()
        fw = tmp_path / "firmware"
        shutil.copytree(firmware_dir(), fw)
        (fw / "fw_link_wire.h").write_text(text)
        exe = build_host_server(tmp_path / "build", 512, fw)
        info_frame, status_frame = _exchange(exe, [ping, damaged])
        assert (info_frame.type, status_frame.type) == (Msg.INFO, Msg.STATUS)
        info = Info.unpack(info_frame.payload)
        status = Status.unpack(status_frame.payload)

    after = _defines(text)
    assert (before["LINK_INFO_BUILD_ID"], after["LINK_INFO_BUILD_ID"]) == (32, 40)
    assert (before["LINK_INFO_SESSION"], after["LINK_INFO_SESSION"]) == (60, 36)
    assert (before["LINK_INFO_LINK_FIXED"], after["LINK_INFO_LINK_FIXED"]) == (72, 80)
    assert (before["LINK_INFO_DESCRIPTION"], after["LINK_INFO_DESCRIPTION"]) == (188, 196)
    assert (before["LINK_STATUS_HELD"], after["LINK_STATUS_HELD"]) == (4, 12)
    assert (before["LINK_STATUS_CAUSE"], after["LINK_STATUS_CAUSE"]) == (8, 4)
    assert (before["LINK_STATUS_LAST_ERROR"], after["LINK_STATUS_LAST_ERROR"]) == (12, 8)

    # what the host-built server says of itself (firmware/host/server_stdio.c, fw_config.h)
    assert (info.protocol_version, info.max_payload, info.build_id) == (3, 512, HOST_BUILD_ID)
    assert (info.frames_ok, info.session) == (1, 0)
    assert info.board is not None and info.link is not None
    assert (info.link.window, info.link.rx_ring, info.link.reply_max) == (p.WINDOW, 8192, 64)
    table = uart_rates(info.uart, info.uart_ref_hz, info.baud)
    assert info.link.rates == tuple(r.baud for r in table) and len(table) > 1
    assert (status.cause, status.type, status.last_error) == (p.Err.CRC, Msg.ECHO, 0)
    assert (status.next, status.held, status.ring_free) == (1, 0, 8192)

    # the unchanged description reads these bytes wrong
    assert Info.unpack(info_frame.payload).build_id != HOST_BUILD_ID
    assert Status.unpack(status_frame.payload) != status


def _rows(doc: str, start: str, end: str) -> list[tuple[int, int]]:
    """(offset, size) of every table row of docs/protocol.md between two headings' texts."""
    part = doc[doc.index(start) : doc.index(end)]
    return [(int(a), int(b)) for a, b in re.findall(r"^\| (\d+) \| (\d+) \|", part, re.M)]


def _layout(pay: Payload, at: int = 0) -> list[tuple[int, int]]:
    return [(at + o, f.size) for f, o in zip(pay.fixed, pay.offsets().values(), strict=True)]


def test_the_documented_tables_are_the_description() -> None:
    """docs/protocol.md's STATUS and INFO tables give each field's offset and size as the
    description does."""
    doc = (ROOT / "docs" / "protocol.md").read_text()
    assert _rows(doc, "STATUS payload (", "**Rate switch.**") == _layout(lw.STATUS)
    board_at, link_at = lw.INFO.fixed_size, lw.INFO.fixed_size + lw.INFO_BOARD.fixed_size
    assert _rows(doc, "INFO payload (", "## How the device treats a frame") == [
        *_layout(lw.INFO),
        (board_at, lw.INFO_BOARD.fixed_size),
        (link_at, lw.INFO_LINK.fixed_size),
        *_layout(lw.INFO_BOARD, board_at),
        *_layout(lw.INFO_LINK, link_at),
    ]
