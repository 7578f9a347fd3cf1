"""Protocol v3 codec, host side (docs/protocol.md; mirrors firmware/fw_proto.h, fw_frame.c).
The fixed payloads (the header, STATUS, INFO and its blocks, BAUD) are read and written by the
one description the firmware's offsets come from too (``codegen.ir.link_wire``,
``firmware/fw_link_wire.h``).

A frame body is ``version:u8 type:u8 seq:u32 length:u16 payload CRC-32:u32`` (little-endian),
COBS-encoded and terminated by one 0x00. v3 is the windowed link: ordered frames carry the
session's tag and a counter in their seq, a message may go in parts (``FW_TYPE_MORE``), the
device reports its window in STATUS and can switch its rate (BAUD).
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from codegen.ir import link_wire as lw
from codegen.ir.wire import TYPES, Payload, Value

if TYPE_CHECKING:
    from codegen.target.boards import Board

PROTO_VERSION = 3
HDR_SIZE = lw.HEADER.fixed_size
CRC_SIZE = 4
SEQ_READABLE = lw.proto_sizes()["FW_SEQ_READABLE"]
SESSION_SIZE = lw.HELLO.fixed_size
BUILD_ID_SIZE = lw.field(lw.INFO, "build_id").width
INFO_SIZE = lw.INFO.fixed_size
# INFO's board block after the fixed part (fw_proto.h FW_INFO_BOARD_*): tag, size, then what the
# board reads back at run time; absent in INFO of a firmware without it.
INFO_BOARD_TAG = 0xB1
INFO_BOARD_SIZE = lw.INFO_BOARD.fixed_size
INFO_BOARD_NAME_SIZE = lw.field(lw.INFO_BOARD, "name").width
INFO_BOARD_L2_FOUND = 0x01
# INFO's link block after the board block (fw_proto.h FW_INFO_LINK_TAG): its fixed fields, then
# room for INFO_LINK_RATES_MAX rates
INFO_LINK_TAG = 0xB2
INFO_LINK_FIXED = lw.INFO_LINK.offsets()["rates"]
INFO_LINK_RATES_MAX = lw.field(lw.INFO_LINK, "rates").width
INFO_LINK_SIZE = lw.INFO_LINK.fixed_size
# Ordered seqs: bit 31 clear, the session's tag in bits 30..24, the copy in 23..20, a counter in
# 19..0 (fw_proto.h)
SEQ_CONTROL = 0x80000000
SEQ_TAG_SHIFT = 24
SEQ_TAG_MASK = 0x7F
SEQ_COPY_MASK = 0x00F00000  # which transmission of a frame, modulo 16 (echoed by the device)
SEQ_COPY_SHIFT = 20
SEQ_COUNT_MASK = 0x000FFFFF
TYPE_MORE = 0x40  # a part of a longer message; more parts follow
WINDOW = 32  # STATUS's bitmap: a frame is held when 0 < seq - next < WINDOW
STATUS_SIZE = lw.STATUS.fixed_size
BAUD_SIZE = lw.BAUD.fixed_size
BAUD_ACK_SIZE = lw.BAUD_ACK.fixed_size
_HDR = struct.Struct(lw.HEADER.fixed_format)
# where STATUS's cause and ERROR's code and offending type lie (codegen.ir.link_wire)
STATUS_CAUSE = lw.STATUS.offsets()["cause"]
ERROR_CODE = lw.ERROR.offsets()["code"]
ERROR_TYPE = lw.ERROR.offsets()["type"]
ERROR_SIZE = lw.ERROR.fixed_size
# A recorded reply asked for again in parts (fw_proto.h FW_PART_*): bytes a part carries at
# least, parts of one reply at most (the want bitmap), times a part is sent at most per ask
PART_MIN = 8
PART_COUNT_MAX = 32
PART_COPIES_MAX = 8


def hello_payload(session: int) -> bytes:
    """HELLO that opens (or re-announces) the session ``session``."""
    return lw.HELLO.pack(session=session)


def reply_parts_payload(part: int, copies: int, want: int) -> bytes:
    """REPLY_PARTS: the recorded reply again as parts of ``part`` bytes, those ``want`` names
    (bit i: part i; 0: every part), each sent ``copies`` times (docs/protocol.md, "Replies in
    parts")."""
    return lw.REPLY_PARTS.pack(part=part, copies=copies, want=want)


@dataclass(frozen=True)
class ReplyPart:
    """One REPLY_PART: a slice of a recorded reply of type ``type`` and ``total`` payload bytes,
    cut into ``count`` parts of ``part`` bytes (the last one what is left)."""

    type: int
    index: int
    count: int
    part: int
    total: int
    data: bytes

    @classmethod
    def unpack(cls, payload: bytes) -> ReplyPart:
        head = lw.REPLY_PART.fixed_size
        if len(payload) < head:
            raise ValueError(
                f"REPLY_PART payload of {len(payload)} bytes, at least {head} expected"
            )
        v = lw.REPLY_PART.unpack(payload[:head])
        p = cls(
            int(v["type"]),  # type: ignore[arg-type]
            int(v["index"]),  # type: ignore[arg-type]
            int(v["count"]),  # type: ignore[arg-type]
            int(v["part"]),  # type: ignore[arg-type]
            int(v["total"]),  # type: ignore[arg-type]
            payload[head:],
        )
        want = min(p.part, p.total - p.index * p.part)
        if not (1 <= p.count <= PART_COUNT_MAX and p.index < p.count and p.part > 0):
            raise ValueError(f"REPLY_PART {p.index} of {p.count}: no such part")
        if p.count != max(1, -(-p.total // p.part)) or len(p.data) != max(0, want):
            raise ValueError(
                f"REPLY_PART {p.index} of {p.count} ({p.part} of {p.total} bytes) carries "
                f"{len(p.data)} bytes"
            )
        return p


def baud_payload(rate: int, revert_ms: int) -> bytes:
    """BAUD: the rate asked for and the device's revert time (docs/protocol.md)."""
    return lw.BAUD.pack(rate=rate, revert_ms=revert_ms)


class Msg(IntEnum):
    HELLO = 0x01
    ECHO = 0x02
    INFER = 0x03
    RESET = 0x04
    INFO = 0x81
    ECHO_REPLY = 0x82
    RESULT = 0x83
    RESET_ACK = 0x84
    AUDIO_BEGIN = 0x05
    AUDIO = 0x06
    AUDIO_END = 0x07
    BAUD = 0x08
    BAUD_ACK = 0x88
    AUDIO_ADPCM = 0x09
    STREAM_BEGIN = 0x0A
    STREAM = 0x0B
    STREAM_ADPCM = 0x0C
    STREAM_END = 0x0D
    DETECTIONS = 0x8B
    STREAM_SUMMARY = 0x8D
    STATUS = 0x8F
    REPLY_PARTS = 0x0E
    REPLY_PART = 0x8E
    ERROR = 0x7F


# Served by the device on arrival, whatever their seq; every other request type is ordered.
CONTROL_TYPES = frozenset({Msg.HELLO, Msg.ECHO, Msg.BAUD})


class Err(IntEnum):
    CRC = 1
    SHORT = 2
    LENGTH = 3
    TOO_LONG = 4
    COBS = 5
    VERSION = 6
    TYPE = 7
    PAYLOAD = 8


class Cause(IntEnum):
    """Why a STATUS was sent: 0, a link-damage Err code (1-6), or one of these (fw_proto.h)."""

    ACK = 0
    GAP = 9
    DUP = 10
    FULL = 11
    STALE = 12


@dataclass(frozen=True)
class Status:
    """STATUS payload (docs/protocol.md): the device's window as it stands."""

    next: int  # the next ordered seq it serves (tag included)
    held: int  # bit i: seq next + i is held
    cause: int
    type: int  # the type of the frame that made the device speak, as read
    ring_free: int  # bytes free in its receive ring (saturated at 65535)
    last_error: int = 0  # the seq of the last ordered request answered with ERROR (0: none)

    @classmethod
    def unpack(cls, payload: bytes) -> Status:
        size = lw.STATUS.fixed_size
        if len(payload) != size:
            raise ValueError(f"STATUS payload of {len(payload)} bytes, expected {size}")
        return cls(**lw.STATUS.unpack(payload))  # type: ignore[arg-type]

    def pack(self) -> bytes:
        return lw.STATUS.pack(**{f.name: getattr(self, f.name) for f in lw.STATUS.fields})


def cause_name(code: int) -> str:
    if code in Cause._value2member_map_:
        return Cause(code).name
    if code in Err._value2member_map_:
        return Err(code).name
    return f"cause {code}"


def cobs_max(n: int) -> int:
    """Worst-case COBS size of an n-byte body (fw_proto.h FW_COBS_MAX)."""
    return n + (n + 253) // 254 + 1


def cobs_encode(data: bytes) -> bytes:
    out = bytearray([0])
    code_pos, code = 0, 1
    for byte in data:
        if byte == 0:
            out[code_pos] = code
            code_pos, code = len(out), 1
            out.append(0)
        else:
            out.append(byte)
            code += 1
            if code == 0xFF:  # a full 254-byte block carries no implicit zero
                out[code_pos] = code
                code_pos, code = len(out), 1
                out.append(0)
    out[code_pos] = code
    return bytes(out)


@dataclass(frozen=True)
class CobsResult:
    data: bytes  # the decodable prefix
    status: int  # 0 ok, -1 malformed, -2 larger than the capacity


def cobs_decode(enc: bytes, cap: int | None = None) -> CobsResult:
    """Lenient decode, byte for byte the same as fw_cobs_decode (fw_frame.c)."""
    limit = len(enc) * 2 if cap is None else cap
    out = bytearray()
    i, n = 0, len(enc)
    while i < n:
        code = enc[i]
        i += 1
        if code == 0:
            return CobsResult(bytes(out), -1)
        for _ in range(code - 1):
            if i >= n:
                return CobsResult(bytes(out), -1)
            if len(out) >= limit:
                return CobsResult(bytes(out), -2)
            out.append(enc[i])
            i += 1
        if code != 0xFF and i < n:
            if len(out) >= limit:
                return CobsResult(bytes(out), -2)
            out.append(0)
    return CobsResult(bytes(out), 0)


@dataclass(frozen=True)
class Frame:
    type: int
    seq: int
    payload: bytes = b""
    version: int = PROTO_VERSION

    def body(self) -> bytes:
        head = _HDR.pack(self.version, self.type, self.seq & 0xFFFFFFFF, len(self.payload))
        raw = head + self.payload
        return raw + struct.pack("<I", zlib.crc32(raw))

    def encode(self) -> bytes:
        """Wire bytes: COBS(body) + 0x00."""
        return cobs_encode(self.body()) + b"\0"

    @property
    def wire_size(self) -> int:
        """An upper bound on len(encode()) without encoding: COBS adds at most one byte per 254
        (at least one), then the 0x00 delimiter."""
        n = HDR_SIZE + len(self.payload) + CRC_SIZE
        return n + max(1, -(-n // 254)) + 1


@dataclass(frozen=True)
class BadFrame:
    """A delimited chunk that is not a valid frame; ``raw`` keeps the bytes for diagnostics.
    ``version`` is set when the chunk is an intact frame (its CRC holds) of another protocol
    version: a peer of another version, not link damage."""

    reason: str
    raw: bytes
    version: int | None = None


def parse_body(body: bytes) -> Frame | BadFrame:
    if len(body) < HDR_SIZE + CRC_SIZE:
        return BadFrame(f"short body ({len(body)} bytes)", body)
    version, type_, seq, length = _HDR.unpack_from(body)
    if HDR_SIZE + length + CRC_SIZE != len(body):
        return BadFrame(f"length field {length} does not match body of {len(body)} bytes", body)
    (crc,) = struct.unpack_from("<I", body, HDR_SIZE + length)
    if crc != zlib.crc32(body[: HDR_SIZE + length]):
        return BadFrame("CRC mismatch", body)
    # Every version shares the header and the CRC: the CRC holding tells a peer of another
    # version from a version byte damaged on the link.
    if version != PROTO_VERSION:
        return BadFrame(f"protocol version {version}, expected {PROTO_VERSION}", body, version)
    return Frame(type_, seq, bytes(body[HDR_SIZE : HDR_SIZE + length]), version)


class FrameDecoder:
    """Streaming decoder: feed arbitrary chunks, iterate complete frames (or bad chunks)."""

    def __init__(self, max_encoded: int = cobs_max(HDR_SIZE + 65535 + CRC_SIZE)) -> None:
        self._buf = bytearray()
        self._max = max_encoded
        self._overflow = False

    def feed(self, data: bytes) -> Iterator[Frame | BadFrame]:
        for chunk_end in _split_keep(data):
            part, complete = chunk_end
            if not self._overflow:
                self._buf += part
                if len(self._buf) > self._max:
                    self._overflow = True
            if complete:
                raw, overflow = bytes(self._buf), self._overflow
                self._buf.clear()
                self._overflow = False
                if overflow:
                    yield BadFrame("frame longer than any valid frame", raw[:64])
                elif raw:
                    dec = cobs_decode(raw)
                    if dec.status != 0:
                        yield BadFrame("malformed COBS", raw)
                    else:
                        yield parse_body(dec.data)


def _split_keep(data: bytes) -> Iterator[tuple[bytes, bool]]:
    start = 0
    while True:
        end = data.find(b"\0", start)
        if end < 0:
            if start < len(data):
                yield data[start:], False
            return
        yield data[start:end], True
        start = end + 1


def _values(cls: type, p: Payload, data: bytes, *, partial: bool = False) -> dict[str, Any]:
    """The values of ``p``'s fields that dataclass ``cls`` has, by name (text decoded); with
    ``partial`` only those ``data`` holds whole."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {
        k: v.decode("ascii", "replace") if isinstance(v, bytes) else v
        for k, v in p.unpack(data, partial=partial).items()
        if k in names
    }


def _pack(p: Payload, obj: object, **given: Value) -> bytes:
    """``p``'s fixed part: the ``given`` values, the rest from ``obj``'s fields of the same names
    (text encoded)."""
    values = dict(given)
    for f in p.fixed:
        if f.name not in given:
            v = getattr(obj, f.name)
            values[f.name] = v.encode("ascii") if isinstance(v, str) else v
    return p.pack(**values)


def _block(rest: bytes, p: Payload, tag: int) -> tuple[bytes | None, bytes]:
    """INFO's block ``p`` at the start of ``rest`` when its tag is there and its size fits, and
    what follows it; else (None, rest)."""
    offs = p.offsets()
    at_tag, at_size = offs["tag"], offs["size"]
    if len(rest) <= max(at_tag, at_size) or rest[at_tag] != tag or len(rest) < rest[at_size]:
        return None, rest
    return rest[: rest[at_size]], rest[rest[at_size] :]


def _preset(name: str | None) -> Board:
    """The board preset INFO names (codegen/target/boards.py): its core and board folder say what
    the board block's words are; a name no preset has reads as the default board's."""
    from codegen.target.boards import BOARDS, DEFAULT_BOARD

    return BOARDS.get(name or DEFAULT_BOARD, BOARDS[DEFAULT_BOARD])


@dataclass(frozen=True)
class BoardInfo:
    """INFO's board block (docs/protocol.md): registers the firmware reads back at run time."""

    name: str
    sctlr: int  # CP15 SCTLR (ARM DDI 0406C B4.1.130)
    actlr: int  # CP15 ACTLR (Cortex-A9 TRM §4.3.10)
    l2_found: bool  # a PL310 answered the probe at 0xF8F02000
    l2_id: int  # its reg0_cache_id
    l2_control: int  # reg1_control (bit 0: enabled)
    l2_aux: int  # reg1_aux_control
    uart_cd: int  # console UART BAUDGEN.CD, read back
    uart_bdiv: int  # console UART BAUDDIV, read back
    # RX FIFO overruns (UG585 Chnl_int_sts ROVR) the UART driver counted; None: a firmware whose
    # block has no such field (48 bytes)
    uart_rx_overruns: int | None = 0

    _FMT = struct.Struct(lw.INFO_BOARD.fixed_format)

    @classmethod
    def unpack(cls, block: bytes) -> BoardInfo:
        # a block of a firmware from before the overrun count ends where the count would start
        least = lw.INFO_BOARD.offsets()["uart_rx_overruns"]
        if len(block) < least:
            raise ValueError(f"INFO board block of {len(block)} bytes, expected >= {least}")
        v = _values(cls, lw.INFO_BOARD, block, partial=True)
        v["l2_found"] = bool(block[lw.INFO_BOARD.offsets()["flags"]] & INFO_BOARD_L2_FOUND)
        v.setdefault("uart_rx_overruns", None)  # not in the block: not reported
        return cls(**v)

    def pack(self) -> bytes:
        return _pack(
            lw.INFO_BOARD,
            self,
            tag=INFO_BOARD_TAG,
            size=lw.INFO_BOARD.fixed_size,
            flags=INFO_BOARD_L2_FOUND if self.l2_found else 0,
            reserved=0,
            uart_rx_overruns=self.uart_rx_overruns or 0,
        )

    def sctlr_bits(self) -> dict[str, bool]:
        """SCTLR M, C, I, Z (DDI 0406C B4.1.130)."""
        bit = {"M": 0, "C": 2, "Z": 11, "I": 12}
        return {k: bool(self.sctlr >> b & 1) for k, b in bit.items()}

    def actual_baud(self, uart_ref_hz: int) -> float | None:
        """baud = ref / (CD · (BDIV + 1)) (UG585 §19.2.3); None when the divisors read 0."""
        if self.uart_cd == 0:
            return None
        return uart_ref_hz / (self.uart_cd * (self.uart_bdiv + 1))

    def describe(self, uart_ref_hz: int, baud: int) -> list[str]:
        """The block as `codegen device info` prints it: the control registers and the L2 cache
        as the board's core and folder define them (codegen/target/cores.py; a board name no
        preset has reads as the default board's)."""
        preset = _preset(self.name)
        on = {True: "on", False: "off"}
        lines = [f"board          {self.name or '?'}"]
        for reg, word in zip(preset.core.control, (self.sctlr, self.actlr), strict=True):
            bits = ", ".join(f"{label} {on[bool(word >> b & 1)]}" for label, b in reg.bits)
            lines.append(f"{reg.name:<15}0x{word:08x}" + (f": {bits}" if bits else ""))
        l2_probe = preset.folder.l2
        if l2_probe is not None:
            if self.l2_found:
                l2 = (
                    f"PL310 (cache id 0x{self.l2_id:08x}), "
                    f"{'enabled' if self.l2_control & 1 else 'disabled'}, aux 0x{self.l2_aux:08x}"
                )
            else:
                l2 = f"absent (no cache ID from the {l2_probe})"
            lines.append(f"l2 cache       {l2}")
        actual = self.actual_baud(uart_ref_hz)
        rate = (
            "baud generator off"
            if actual is None
            else f"{actual:.0f} baud at {uart_ref_hz / 1e6:g} MHz "
            f"({100 * abs(actual - baud) / baud:.2f} % off {baud})"
        )
        return [
            *lines,
            f"uart divisors  CD {self.uart_cd}, BDIV {self.uart_bdiv} (read back): {rate}",
            "uart overruns  "
            + (
                "not reported by this firmware"
                if self.uart_rx_overruns is None
                else f"{self.uart_rx_overruns} (bytes lost to a full receiver, the UART's "
                "overrun flag)"
            ),
        ]


@dataclass(frozen=True)
class LinkInfo:
    """INFO's link block (docs/protocol.md): what the host's window may use, the link's counters
    and the rates BAUD may ask for."""

    rx_ring: int  # bytes the device's receive ring holds
    window: int  # STATUS's bitmap width
    hold_slots: int  # ordered frames held while an earlier one is missing
    records: int  # replies kept for requests sent again
    hold_payload: int  # the largest payload a held frame may have
    baud: int  # the rate the UART runs at now
    ring_overruns: int
    rate_reverts: int
    frames_held: int
    frames_stale: int
    next: int  # the next ordered seq it serves
    reply_max: int  # the largest reply payload a record keeps
    rates: tuple[int, ...]  # the rates BAUD may ask for

    @classmethod
    def unpack(cls, block: bytes) -> LinkInfo:
        offs = lw.INFO_LINK.offsets()
        at = offs["rates"]  # the fixed fields before the rates
        if len(block) < at:
            raise ValueError(f"INFO link block of {len(block)} bytes, expected >= {at}")
        v = _values(cls, lw.INFO_LINK, block, partial=True)
        # the rates listed, as many of them as the block holds
        code, size = TYPES[lw.field(lw.INFO_LINK, "rates").type]
        n = min(block[offs["n_rates"]], (len(block) - at) // size)
        v["rates"] = struct.unpack_from(f"<{n}{code}", block, at)
        return cls(**v)

    def pack(self) -> bytes:
        return _pack(
            lw.INFO_LINK,
            self,
            tag=INFO_LINK_TAG,
            size=lw.INFO_LINK.fixed_size,
            n_rates=len(self.rates),
        )

    def describe(self) -> list[str]:
        return [
            f"link           {self.baud} baud now; switchable to "
            + (", ".join(f"{r:,}" for r in self.rates) or "none"),
            f"window         receive ring {self.rx_ring} bytes ({self.ring_overruns} overruns), "
            f"{self.hold_slots} frames of <= {self.hold_payload} bytes held out of order, "
            f"{self.records} replies recorded",
            f"link counters  {self.frames_held} held, {self.frames_stale} stale, "
            f"{self.rate_reverts} rate switches reverted",
        ]


@dataclass(frozen=True)
class Info:
    """INFO payload (docs/protocol.md)."""

    protocol_version: int
    uart: int
    max_payload: int
    baud: int
    uart_ref_hz: int
    frames_ok: int
    frames_err: int
    frames_dropped: int
    stack_size: int
    stack_used: int
    build_id: str
    frames_replayed: int = 0
    app: bytes = b""  # the application's description (model, shapes, formats), if any
    session: int = 0  # the nonce of the last HELLO that carried one
    board: BoardInfo | None = None  # the board block; None: a firmware without one
    link: LinkInfo | None = None  # the link block; None: a firmware without one

    @classmethod
    def unpack(cls, payload: bytes) -> Info:
        fixed = _values(cls, lw.INFO, payload)  # refuses a payload shorter than the fixed part
        rest = bytes(payload[lw.INFO.fixed_size :])
        board = None
        # The block is there when its tag is: a description is ASCII text, never 0xB1.
        block, rest = _block(rest, lw.INFO_BOARD, INFO_BOARD_TAG)
        if block is not None:
            board = BoardInfo.unpack(block)
        link = None
        block, rest = _block(rest, lw.INFO_LINK, INFO_LINK_TAG)
        if block is not None:
            link = LinkInfo.unpack(block)
        return cls(**fixed, app=rest, board=board, link=link)

    def pack(self) -> bytes:
        return (
            _pack(lw.INFO, self)
            + (b"" if self.board is None else self.board.pack())
            + (b"" if self.link is None else self.link.pack())
            + self.app
        )

    def describe(self) -> str:
        bases = _preset(None if self.board is None else self.board.name).folder.uart.bases
        base = f"0x{bases[self.uart]:08X}" if self.uart < len(bases) else "?"
        return "\n".join(
            [
                f"protocol       v{self.protocol_version}",
                f"firmware       {self.build_id}",
                f"uart           UART{self.uart} ({base}), {self.baud} baud "
                f"(ref clock {self.uart_ref_hz / 1e6:g} MHz)",
                f"max payload    {self.max_payload} bytes",
                f"frames         {self.frames_ok} ok, {self.frames_err} answered with ERROR, "
                f"{self.frames_dropped} dropped, {self.frames_replayed} replayed",
                f"stack          {self.stack_used} of {self.stack_size} bytes used (high-water)",
                f"session        0x{self.session:08x}",
                *([] if self.board is None else self.board.describe(self.uart_ref_hz, self.baud)),
                *([] if self.link is None else self.link.describe()),
            ]
        )
