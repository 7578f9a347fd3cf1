"""Protocol v2 codec: COBS, CRC, frame layout, streaming decoder, INFO, and C/Python constants."""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import replace

import pytest
from elatta_host import protocol as p
from elatta_host.protocol import (
    BadFrame,
    Err,
    Frame,
    FrameDecoder,
    Info,
    Msg,
    cobs_decode,
    cobs_encode,
)

from codegen.base.resources import firmware_dir


@pytest.mark.parametrize(
    ("raw", "enc"),
    [
        (b"", b"\x01"),
        (b"\x00", b"\x01\x01"),
        (b"\x00\x00", b"\x01\x01\x01"),
        (b"\x11\x22\x00\x33", b"\x03\x11\x22\x02\x33"),
        (b"\x11\x22\x33\x44", b"\x05\x11\x22\x33\x44"),
        (b"\x11\x00\x00\x00", b"\x02\x11\x01\x01\x01"),
        (bytes(range(1, 255)), b"\xff" + bytes(range(1, 255)) + b"\x01"),
        (bytes(range(0, 255)), b"\x01\xff" + bytes(range(1, 255)) + b"\x01"),
        (bytes(range(1, 256)), b"\xff" + bytes(range(1, 255)) + b"\x02\xff"),
    ],
)
def test_cobs_golden(raw: bytes, enc: bytes) -> None:
    # Vectors from Cheshire & Baker's COBS paper examples and the Wikipedia table.
    assert cobs_encode(raw) == enc
    assert cobs_decode(enc) == p.CobsResult(raw, 0)


def test_cobs_round_trip_random() -> None:
    rng = random.Random(1)
    for _ in range(3000):
        n = rng.choice((rng.randrange(0, 10), rng.randrange(250, 520), rng.randrange(0, 3000)))
        zero_rate = rng.random()
        raw = bytes(0 if rng.random() < zero_rate else rng.randrange(1, 256) for _ in range(n))
        enc = cobs_encode(raw)
        assert 0 not in enc
        assert len(enc) <= p.cobs_max(n)
        assert cobs_decode(enc) == p.CobsResult(raw, 0)


def test_cobs_decode_malformed_and_capacity() -> None:
    assert cobs_decode(b"\x05\x11\x22") == p.CobsResult(b"\x11\x22", -1)
    assert cobs_decode(b"\x03\x11\x00\x22").status == -1
    assert cobs_decode(cobs_encode(b"\x01" * 20), cap=10) == p.CobsResult(b"\x01" * 10, -2)


def test_frame_golden_bytes() -> None:
    hello = Frame(Msg.HELLO, 0x01020304)
    body = bytes([3, 0x01, 4, 3, 2, 1, 0, 0])
    assert hello.body() == body + zlib.crc32(body).to_bytes(4, "little")
    # Worked by hand from docs/protocol.md: blocks split at each zero, code = 1 + run length
    # (the CRC bytes 44 49 20 3a and ec d5 85 ab are zlib.crc32 of the two bodies).
    assert hello.encode().hex() == "0703010403020101054449203a00"
    echo = Frame(Msg.ECHO, 7, b"\x00\xff")
    assert echo.encode().hex() == "04030207010102020106ffecd585ab00"


def test_decoder_streams_chunks_and_reports_bad_frames() -> None:
    frames = [Frame(Msg.ECHO, i, bytes(range(i % 7)) * 40) for i in range(50)]
    wire = b"".join(f.encode() for f in frames)
    wire = wire[:100] + b"\x07\x07\x07\x00" + wire[100:]  # garbage inside the stream
    rng = random.Random(2)
    dec = FrameDecoder()
    got: list[Frame | BadFrame] = []
    i = 0
    while i < len(wire):
        step = rng.randint(1, 97)
        got.extend(dec.feed(wire[i : i + step]))
        i += step
    good = [g for g in got if isinstance(g, Frame)]
    bad = [g for g in got if isinstance(g, BadFrame)]
    assert len(bad) == 2  # the garbage, and the frame it cut in two
    assert set(good) <= set(frames) and len(good) == 49


def test_parse_body_rejects() -> None:
    body = Frame(Msg.ECHO, 1, b"xyz").body()
    assert isinstance(p.parse_body(body[:-1]), BadFrame)
    assert isinstance(p.parse_body(body[:-1] + bytes([body[-1] ^ 1])), BadFrame)
    assert p.parse_body(body) == Frame(Msg.ECHO, 1, b"xyz")
    # a damaged version byte breaks the CRC: link damage, no version claimed
    damaged = p.parse_body(b"\x01" + body[1:])
    assert isinstance(damaged, BadFrame) and damaged.version is None
    # an intact frame of protocol v1 (same header and CRC): another peer, named as such
    v1 = p.parse_body(Frame(Msg.ECHO, 1, b"xyz", version=1).body())
    assert isinstance(v1, BadFrame) and v1.version == 1
    assert v1.reason == "protocol version 1, expected 3"


def test_info_pack_unpack() -> None:
    info = Info(2, 1, 2048, 115200, 100_000_000, 5, 6, 7, 16384, 200, "fw-0123456789abcdef")
    raw = info.pack()
    assert len(raw) == p.INFO_SIZE
    assert Info.unpack(raw) == info
    with_app = Info(2, 0, 2048, 115200, 100_000_000, 1, 0, 0, 0, 0, "x", 3, b"model", 0xA1B2C3D4)
    assert Info.unpack(with_app.pack()) == with_app
    assert len(with_app.pack()) == p.INFO_SIZE + 5
    # v2: the session nonce at offset 60; the description is the rest of the payload
    assert with_app.pack()[60:64] == bytes.fromhex("d4c3b2a1")
    assert Info.unpack(with_app.pack()[:-3]).app == b"mo"
    with pytest.raises(ValueError, match="INFO payload of 10 bytes"):
        Info.unpack(raw[:10])
    assert "UART1 (0xE0001000)" in info.describe()
    assert "session        0xa1b2c3d4" in with_app.describe()


def test_info_board_block() -> None:
    """The board block sits between the fixed part and the description; INFO without it (an
    older firmware) still reads, its description at offset 64."""
    board = p.BoardInfo("zedboard", 0x00C5187D, 0x41, True, 0x410000C8, 1, 0x72360000, 62, 6)
    info = Info(2, 1, 2048, 115200, 50_000_000, 1, 0, 0, 0, 0, "x", 0, b"T=49 F=13", 7, board)
    raw = info.pack()
    assert len(raw) == p.INFO_SIZE + p.INFO_BOARD_SIZE + 9
    assert raw[p.INFO_SIZE] == p.INFO_BOARD_TAG and raw[p.INFO_SIZE + 1] == p.INFO_BOARD_SIZE
    assert Info.unpack(raw) == info
    old = Info.unpack(raw[: p.INFO_SIZE] + b"T=49 F=13")
    assert old.board is None and old.app == b"T=49 F=13"
    assert board.sctlr_bits() == {"M": True, "C": True, "Z": True, "I": True}
    text = info.describe()
    assert "board          zedboard" in text
    assert "MMU on, D-cache on, I-cache on, branch prediction on" in text
    assert "PL310 (cache id 0x410000c8), enabled" in text
    # 50 MHz / (62 * 7) = 115,207 baud
    assert "CD 62, BDIV 6 (read back): 115207 baud at 50 MHz (0.01 % off 115200)" in text
    assert "uart overruns  0 " in text
    # the RX FIFO overrun count: round-trips; a 48-byte block (before the count) reads as None
    counted = replace(board, uart_rx_overruns=3)
    assert p.BoardInfo.unpack(counted.pack()).uart_rx_overruns == 3
    short = bytearray(board.pack()[:48])
    short[1] = 48
    assert p.BoardInfo.unpack(bytes(short)).uart_rx_overruns is None
    assert "not reported" in "\n".join(
        p.BoardInfo.unpack(bytes(short)).describe(50_000_000, 115200)
    )


def test_constants_match_c_header() -> None:
    text = (firmware_dir() / "fw_proto.h").read_text()
    defs = {m[0]: int(m[1], 0) for m in re.findall(r"#define (FW_\w+) (0x[0-9A-F]+|\d+)u", text)}
    assert defs["FW_PROTO_VERSION"] == p.PROTO_VERSION
    assert defs["FW_HDR_SIZE"] == p.HDR_SIZE
    assert defs["FW_CRC_SIZE"] == p.CRC_SIZE
    assert defs["FW_SEQ_READABLE"] == p.SEQ_READABLE
    assert defs["FW_SESSION_SIZE"] == p.SESSION_SIZE
    assert defs["FW_BUILD_ID_SIZE"] == p.BUILD_ID_SIZE
    assert defs["FW_INFO_SIZE"] == p.INFO_SIZE
    assert defs["FW_INFO_BOARD_TAG"] == p.INFO_BOARD_TAG
    assert defs["FW_INFO_BOARD_SIZE"] == p.INFO_BOARD_SIZE == p.BoardInfo._FMT.size
    assert defs["FW_INFO_BOARD_NAME_SIZE"] == p.INFO_BOARD_NAME_SIZE
    assert defs["FW_INFO_BOARD_L2_FOUND"] == p.INFO_BOARD_L2_FOUND
    assert defs["FW_PART_MIN"] == p.PART_MIN
    assert defs["FW_PART_COUNT_MAX"] == p.PART_COUNT_MAX
    assert defs["FW_PART_COPIES_MAX"] == p.PART_COPIES_MAX
    for m in Msg:
        assert defs[f"FW_MSG_{m.name}"] == m.value
    for e in Err:
        assert defs[f"FW_ERR_{e.name}"] == e.value
    msgs = {k for k in defs if k.startswith("FW_MSG_")}
    errs = {k for k in defs if k.startswith("FW_ERR_")}
    assert len(msgs) == len(Msg) and len(errs) == len(Err)
