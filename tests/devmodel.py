"""Executable model of how the device treats received bytes (docs/protocol.md, "How the device
treats a frame"), written from the spec independently of firmware/fw_server.c. Tests compare the
firmware's (host-compiled or QEMU) output with this model byte for byte."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from elatta_host.protocol import (
    CRC_SIZE,
    HDR_SIZE,
    PROTO_VERSION,
    SEQ_READABLE,
    SESSION_SIZE,
    BoardInfo,
    Err,
    Frame,
    Info,
    Msg,
    cobs_decode,
    cobs_max,
)


@dataclass
class DeviceModel:
    max_payload: int
    build_id: str
    uart: int = 0
    baud: int = 115_200
    uart_ref_hz: int = 100_000_000
    board: str = "qemu"  # FW_BOARD_NAME of FirmwareConfig()
    frames_ok: int = 0
    frames_err: int = 0
    frames_dropped: int = 0
    frames_replayed: int = 0
    session: int = 0  # the nonce of the last HELLO that carried one
    with_test_app: bool = False  # firmware/host/server_stdio.c's stand-in application
    app_count: int = 0
    _last: tuple[int, int, int, Frame] | None = None  # (session, type, seq, reply)
    _buf: bytearray = field(default_factory=bytearray)

    def _error(self, code: Err, type_: int, seq: int) -> Frame:
        self.frames_err += 1
        return Frame(Msg.ERROR, seq, bytes([code, type_]))

    def handle(self, enc: bytes) -> Frame | None:
        """Reply to one delimited chunk (non-empty, without the 0x00), or None if dropped."""
        body_cap = HDR_SIZE + self.max_payload + CRC_SIZE
        enc_max = cobs_max(body_cap)
        overflow = len(enc) > enc_max
        dec = cobs_decode(enc[:enc_max], cap=body_cap)
        b = dec.data
        if len(b) < SEQ_READABLE:
            self.frames_dropped += 1
            return None
        type_ = b[1]
        (seq,) = struct.unpack_from("<I", b, 2)
        if overflow or dec.status == -2:
            return self._error(Err.TOO_LONG, type_, seq)
        if b[0] != PROTO_VERSION:
            return self._error(Err.VERSION, type_, seq)
        if dec.status != 0:
            return self._error(Err.COBS, type_, seq)
        if len(b) < HDR_SIZE + CRC_SIZE:
            return self._error(Err.SHORT, type_, seq)
        (length,) = struct.unpack_from("<H", b, 6)
        if length > self.max_payload:
            return self._error(Err.TOO_LONG, type_, seq)
        if HDR_SIZE + length + CRC_SIZE != len(b):
            return self._error(Err.LENGTH, type_, seq)
        (crc,) = struct.unpack_from("<I", b, HDR_SIZE + length)
        if crc != zlib.crc32(b[: HDR_SIZE + length]):
            return self._error(Err.CRC, type_, seq)
        payload = b[HDR_SIZE : HDR_SIZE + length]
        if type_ == Msg.HELLO:
            if len(payload) == SESSION_SIZE:
                (self.session,) = struct.unpack("<I", payload)
            elif payload:
                return self._error(Err.PAYLOAD, type_, seq)
            self.frames_ok += 1
            return Frame(Msg.INFO, seq, self.info(stack_size=0, stack_used=0).pack())
        if type_ == Msg.ECHO:
            self.frames_ok += 1
            return Frame(Msg.ECHO_REPLY, seq, payload)
        if self._last is not None and self._last[:3] == (self.session, type_, seq):
            self.frames_replayed += 1
            return self._last[3]
        reply = self._app(type_, seq, payload)
        if reply.type != Msg.ERROR:
            self.frames_ok += 1
            self._last = (self.session, type_, seq, reply)
        return reply

    def _app(self, type_: int, seq: int, payload: bytes) -> Frame:
        if not self.with_test_app or type_ not in (Msg.INFER, Msg.RESET):
            return self._error(Err.TYPE, type_, seq)
        if type_ == Msg.RESET:
            self.app_count = 0
            return Frame(Msg.RESET_ACK, seq, b"")
        if not payload:
            return self._error(Err.PAYLOAD, type_, seq)
        reply = Frame(Msg.RESULT, seq, struct.pack("<II", self.app_count, zlib.crc32(payload)))
        self.app_count += 1
        return reply

    def info(self, *, stack_size: int, stack_used: int) -> Info:
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
            b"test-app" if self.with_test_app else b"",
            self.session,
            # the host harness reports no registers (fw_platform_t.board_report = NULL)
            BoardInfo(self.board, 0, 0, False, 0, 0, 0, 0, 0),
        )

    def feed(self, data: bytes) -> list[Frame]:
        """All replies to a byte stream, splitting at 0x00 like fw_server_feed."""
        replies = []
        for byte in data:
            if byte != 0:
                self._buf.append(byte)
                continue
            if self._buf:
                reply = self.handle(bytes(self._buf))
                if reply is not None:
                    replies.append(reply)
            self._buf.clear()
        return replies
