"""Executable model of how the device treats received bytes (docs/protocol.md, "How the device
treats a frame" and "Windowed link"), written from the spec independently of
firmware/fw_server.c. Tests compare the firmware's (host-compiled or QEMU) output with this model
byte for byte; tests/fakedevice.py serves a plan's references through it."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from elatta_host.protocol import (
    CRC_SIZE,
    HDR_SIZE,
    PART_COPIES_MAX,
    PART_COUNT_MAX,
    PART_MIN,
    PROTO_VERSION,
    SEQ_CONTROL,
    SEQ_COPY_MASK,
    SEQ_COUNT_MASK,
    SEQ_READABLE,
    SEQ_TAG_MASK,
    SEQ_TAG_SHIFT,
    SESSION_SIZE,
    TYPE_MORE,
    WINDOW,
    BoardInfo,
    Cause,
    Err,
    Frame,
    Info,
    LinkInfo,
    Msg,
    Status,
    cobs_decode,
    cobs_max,
)

ACK = 0x100  # an application handler's "served, no reply of its own" (FW_APP_ACK)
RECORDS = 8  # FW_RECORDS
HOLD_SLOTS = 24  # FW_HOLD_SLOTS
HOLD_PAYLOAD = 256  # FW_HOLD_PAYLOAD
RX_RING = 8192  # the host harness's ring (firmware/host/server_stdio.c board_report)
# The rates of FirmwareConfig()'s table (the "qemu" preset's 100 MHz UART clock)
RATES = (115_200, 230_400, 460_800, 921_600, 1_000_000, 1_500_000, 2_000_000, 3_000_000)

# (type, payload) -> (reply type | ACK | -error code, reply payload)
App = Callable[[int, bytes], tuple[int, bytes]]


@dataclass
class DeviceModel:
    max_payload: int
    build_id: str
    uart: int = 0
    baud: int = 115_200
    uart_ref_hz: int = 100_000_000
    board: str = "qemu"  # FW_BOARD_NAME of FirmwareConfig()
    reply_max: int = 64  # FW_REPLY_MAX of the bare runtime
    frames_ok: int = 0
    frames_err: int = 0
    frames_dropped: int = 0
    frames_replayed: int = 0
    frames_held: int = 0
    frames_stale: int = 0
    session: int = 0  # the nonce of the last HELLO that carried one
    with_test_app: bool = False  # firmware/host/server_stdio.c's stand-in application
    app: App | None = None  # another application (tests/fakedevice.py)
    description: bytes = b""
    app_count: int = 0
    next: int = 1  # the next ordered key (tag | counter)
    held: dict[int, tuple[int, int, bytes]] = field(default_factory=dict)  # key -> (seq, type, p)
    records: list[tuple[int, int, bytes]] = field(default_factory=list)  # (seq, type, payload)
    asm_type: int = 0
    asm: bytearray = field(default_factory=bytearray)
    ack_due: bool = False
    last_error: int = 0
    last_in: int = 1
    _buf: bytearray = field(default_factory=bytearray)

    def __post_init__(self) -> None:
        self._open(self.session)

    # ------------------------------------------------------------------ sessions and window

    def _tag(self) -> int:
        return (self.session & SEQ_TAG_MASK) << SEQ_TAG_SHIFT

    def _open(self, session: int) -> None:
        self.session = session
        self.next = self._tag() | 1
        self.held.clear()
        self.records.clear()
        self.asm_type = 0
        self.asm.clear()
        self.ack_due = False
        self.last_error = 0
        self.last_in = self.next

    def _advance(self) -> None:
        self.next = (self.next & ~SEQ_COUNT_MASK) | ((self.next + 1) & SEQ_COUNT_MASK)

    def _held_mask(self) -> int:
        mask = 0
        for key in self.held:
            d = (key - self.next) & SEQ_COUNT_MASK
            mask |= 1 << d
        return mask

    def status(self, cause: int, type_: int, seq: int) -> Frame:
        if cause != Cause.ACK:
            self.frames_err += 1
        self.ack_due = False
        st = Status(self.next, self._held_mask(), cause, type_, RX_RING, self.last_error)
        return Frame(Msg.STATUS, seq, st.pack())

    def _error(self, code: int, type_: int, seq: int) -> Frame:
        self.frames_err += 1
        return Frame(Msg.ERROR, seq, bytes([code, type_]))

    # ------------------------------------------------------------------ frames

    def handle(self, enc: bytes) -> list[Frame]:
        """Replies to one delimited chunk (non-empty, without the 0x00)."""
        out = self._check(enc)
        if self.ack_due:
            out.append(self.status(Cause.ACK, 0, self.last_in))
        return out

    def _check(self, enc: bytes) -> list[Frame]:
        body_cap = HDR_SIZE + self.max_payload + CRC_SIZE
        enc_max = cobs_max(body_cap)
        overflow = len(enc) > enc_max
        dec = cobs_decode(enc[:enc_max], cap=body_cap)
        b = dec.data
        if len(b) < SEQ_READABLE:
            self.frames_dropped += 1
            return []
        type_ = b[1]
        (seq,) = struct.unpack_from("<I", b, 2)
        if overflow or dec.status == -2:
            return [self.status(Err.TOO_LONG, type_, seq)]
        if b[0] != PROTO_VERSION:
            return [self._error(Err.VERSION, type_, seq)]
        if dec.status != 0:
            return [self.status(Err.COBS, type_, seq)]
        if len(b) < HDR_SIZE + CRC_SIZE:
            return [self.status(Err.SHORT, type_, seq)]
        (length,) = struct.unpack_from("<H", b, 6)
        if length > self.max_payload:
            return [self.status(Err.TOO_LONG, type_, seq)]
        if HDR_SIZE + length + CRC_SIZE != len(b):
            return [self.status(Err.LENGTH, type_, seq)]
        (crc,) = struct.unpack_from("<I", b, HDR_SIZE + length)
        if crc != zlib.crc32(b[: HDR_SIZE + length]):
            return [self.status(Err.CRC, type_, seq)]
        payload = bytes(b[HDR_SIZE : HDR_SIZE + length])
        if type_ == Msg.HELLO:
            if len(payload) == SESSION_SIZE:
                (nonce,) = struct.unpack("<I", payload)
                if nonce != self.session:
                    self._open(nonce)
            elif payload:
                return [self._error(Err.PAYLOAD, type_, seq)]
            self.frames_ok += 1
            return [Frame(Msg.INFO, seq, self.info(stack_size=0, stack_used=0).pack())]
        if type_ == Msg.ECHO:
            self.frames_ok += 1
            return [Frame(Msg.ECHO_REPLY, seq, payload)]
        if type_ == Msg.BAUD:  # the harness has no rate switch (set_rate = NULL)
            return [self._error(Err.PAYLOAD, type_, seq)]
        return self._ordered(type_, seq, payload)

    def _ordered(self, type_: int, seq: int, payload: bytes) -> list[Frame]:
        key = seq & ~SEQ_COPY_MASK
        if seq & SEQ_CONTROL or key & ~SEQ_COUNT_MASK != self._tag():
            self.frames_stale += 1
            return [self.status(Cause.STALE, type_, seq)]
        self.last_in = seq
        d = (key - self.next) & SEQ_COUNT_MASK
        if type_ == Msg.REPLY_PARTS and d < (SEQ_COUNT_MASK + 1) // 2:
            return [self.status(Cause.FULL, type_, seq)]  # not served yet: nothing to ask for
        if d == 0:
            out = self._deliver(type_, seq, payload)
            self._advance()
            while self.next in self.held:
                s2, t2, p2 = self.held.pop(self.next)
                out += self._deliver(t2, s2, p2)
                self._advance()
            return out
        if d < WINDOW:
            if key in self.held:
                return [self.status(Cause.GAP, type_, seq)]
            if len(self.held) >= HOLD_SLOTS or len(payload) > HOLD_PAYLOAD:
                return [self.status(Cause.FULL, type_, seq)]
            self.held[key] = (seq, type_, payload)
            self.frames_held += 1
            return [self.status(Cause.GAP, type_, seq)]
        if d >= (SEQ_COUNT_MASK + 1) // 2:
            for rseq, rtype, rpayload in self.records:
                if rseq & ~SEQ_COPY_MASK == key:
                    self.frames_replayed += 1
                    if type_ == Msg.REPLY_PARTS:
                        return self._parts(rtype, seq, rpayload, payload)
                    return [Frame(rtype, seq, rpayload), self.status(Cause.ACK, type_, seq)]
            return [self.status(Cause.DUP, type_, seq)]
        return [self.status(Cause.FULL, type_, seq)]

    def _parts(self, rtype: int, seq: int, record: bytes, ask: bytes) -> list[Frame]:
        """REPLY_PARTS ("Replies in parts"): the record cut into parts of the asked size (at
        least PART_MIN, and long enough that PART_COUNT_MAX parts hold it), the wanted ones
        (none named: all), the whole set `copies` times (brought into 1..PART_COPIES_MAX); a
        short ask reads as part 0, copies 1, want 0."""
        part, copies, want = struct.unpack("<BBI", ask[:6]) if len(ask) >= 6 else (0, 1, 0)
        part = max(part, PART_MIN)
        if len(record) > part * PART_COUNT_MAX:
            part = -(-len(record) // PART_COUNT_MAX)
        copies = min(max(copies, 1), PART_COPIES_MAX)
        count = max(1, -(-len(record) // part))
        out = []
        for _ in range(copies):
            for i in range(count):
                if want and not want >> i & 1:
                    continue
                head = struct.pack("<BBBBHH", rtype, i, count, 0, part, len(record))
                out.append(Frame(Msg.REPLY_PART, seq, head + record[i * part : (i + 1) * part]))
        return out

    def _deliver(self, type_: int, seq: int, payload: bytes) -> list[Frame]:
        base = type_ & ~TYPE_MORE
        if not type_ & TYPE_MORE and not self.asm_type:
            return self._call(type_, seq, payload)
        if self.asm_type and self.asm_type != base:
            self.asm.extend(bytes(self.max_payload + 1))  # parts of two types: refused whole
        self.asm_type = base
        self.asm.extend(payload)
        if type_ & TYPE_MORE:
            self.frames_ok += 1
            self.ack_due = True
            return []
        whole = bytes(self.asm)
        self.asm_type = 0
        self.asm.clear()
        if len(whole) > self.max_payload:
            return [self._record_error(Err.TOO_LONG, base, seq)]
        return self._call(base, seq, whole)

    def _record(self, type_: int, seq: int, payload: bytes) -> Frame:
        self.records.append((seq, type_, payload[: self.reply_max]))
        del self.records[:-RECORDS]
        self.ack_due = False
        return Frame(type_, seq, payload[: self.reply_max])

    def _record_error(self, code: int, type_: int, seq: int) -> Frame:
        self.frames_err += 1
        self.last_error = seq
        return self._record(Msg.ERROR, seq, bytes([code, type_]))

    def _call(self, type_: int, seq: int, payload: bytes) -> list[Frame]:
        app = self.app or (self._test_app if self.with_test_app else None)
        r, reply = app(type_, payload) if app is not None else (0, b"")
        if r == ACK:
            self.frames_ok += 1
            self.ack_due = True
            return []
        if r > 0:
            self.frames_ok += 1
            return [self._record(r, seq, reply)]
        return [self._record_error(Err.TYPE if r == 0 else -r, type_, seq)]

    def _test_app(self, type_: int, payload: bytes) -> tuple[int, bytes]:
        """firmware/host/server_stdio.c's stand-in application."""
        if type_ == Msg.INFER:
            if not payload:
                return -Err.PAYLOAD, b""
            reply = struct.pack("<II", self.app_count, zlib.crc32(payload))
            self.app_count += 1
            return Msg.RESULT, reply
        if type_ == Msg.RESET:
            self.app_count = 0
            return Msg.RESET_ACK, b""
        if type_ == Msg.AUDIO:
            self.app_count += len(payload)
            return ACK, b""
        return 0, b""

    def info(self, *, stack_size: int, stack_used: int) -> Info:
        link = LinkInfo(RX_RING, WINDOW, HOLD_SLOTS, RECORDS, HOLD_PAYLOAD, 0, 0, 0,
                        self.frames_held, self.frames_stale, self.next, self.reply_max,
                        RATES)  # fmt: skip
        return Info(
            PROTO_VERSION,
            self.uart,
            self.max_payload,
            self.baud,
            self.uart_ref_hz,
            self.frames_ok,
            self.frames_err,
            self.frames_dropped,
            stack_size,
            stack_used,
            self.build_id,
            self.frames_replayed,
            self.description or (b"test-app" if self.with_test_app else b""),
            self.session,
            # the host harness reports no registers but its ring (server_stdio.c board_report)
            BoardInfo(self.board, 0, 0, False, 0, 0, 0, 0, 0),
            link,
        )

    def feed(self, data: bytes) -> list[Frame]:
        """All replies to a byte stream, splitting at 0x00 like fw_server_feed."""
        replies: list[Frame] = []
        for byte in data:
            if byte != 0:
                self._buf.append(byte)
                continue
            if self._buf:
                replies += self.handle(bytes(self._buf))
            self._buf.clear()
        return replies
