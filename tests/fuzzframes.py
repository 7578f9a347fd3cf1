"""Seeded generator of valid, truncated, oversized and corrupted frames (wire bytes), and of
ordered frames around the device's window (docs/protocol.md, "Windowed link"): in order, parts
of longer messages, ahead of the window (held), behind it (answered from the record or
STATUS DUP), beyond it, of another session, with any copy number, and asks for a recorded reply
in parts (REPLY_PARTS), well-formed or not."""

from __future__ import annotations

import random
import struct
import zlib

from elatta_host.protocol import (
    PROTO_VERSION,
    SEQ_COPY_SHIFT,
    SEQ_COUNT_MASK,
    SEQ_TAG_MASK,
    SEQ_TAG_SHIFT,
    TYPE_MORE,
    Frame,
    Msg,
    cobs_encode,
)

V = PROTO_VERSION
# A few session nonces, so that sessions come back and the replay record meets them again.
SESSIONS = (0x00000001, 0x5E55_1011, 0xFFFF_FFFF)

KINDS = (
    "valid_echo",
    "valid_hello",
    "truncated",
    "bitflip",
    "bad_crc",
    "bad_length",
    "oversized",
    "lying_length",
    "bad_version",
    "unknown_type",
    "short_body",
    "garbage",
    "bad_cobs",
    "empty",
    "infer",
    "reset",
    "replay",
    "part",
    "audio",
    "ahead",
    "behind",
    "beyond",
    "stale",
    "baud",
    "reply_parts",
)


class Window:
    """The generator's view of the device's session and next counter (it follows the valid
    HELLOs it makes), to aim ordered frames at, around and past the window."""

    def __init__(self) -> None:
        self.session = 0
        self.next = 1

    def seq(self, rng: random.Random, d: int = 0) -> int:
        tag = (self.session & SEQ_TAG_MASK) << SEQ_TAG_SHIFT
        return tag | rng.randrange(16) << SEQ_COPY_SHIFT | ((self.next + d) & SEQ_COUNT_MASK)


def _payload(rng: random.Random, max_payload: int) -> bytes:
    n = min(max_payload, int(2 ** rng.uniform(0, max_payload.bit_length())) - 1)
    return rng.randbytes(n)


def _body(version: int, type_: int, seq: int, payload: bytes, length: int | None = None) -> bytes:
    head = struct.pack("<BBIH", version, type_, seq, len(payload) if length is None else length)
    return head + payload + struct.pack("<I", zlib.crc32(head + payload))


def make_frame(
    rng: random.Random, kind: str, seq: int, max_payload: int, w: Window | None = None
) -> bytes:
    """Wire bytes for one test frame of the given kind (always ends with 0x00)."""
    w = w or Window()
    if kind == "valid_echo":
        return Frame(Msg.ECHO, seq, _payload(rng, max_payload)).encode()
    if kind == "valid_hello":  # INFO only, a session nonce, or a payload of a wrong size
        payload = rng.choice((b"", b"", struct.pack("<I", rng.choice(SESSIONS)), b"\1\2\3"))
        if len(payload) == 4 and struct.unpack("<I", payload)[0] != w.session:
            (w.session,), w.next = struct.unpack("<I", payload), 1
        return Frame(Msg.HELLO, seq, payload).encode()
    if kind == "truncated":
        enc = Frame(Msg.ECHO, seq, _payload(rng, max_payload)).encode()[:-1]
        return enc[: rng.randrange(1, len(enc))] + b"\0"
    if kind == "bitflip":
        enc = bytearray(Frame(Msg.ECHO, seq, _payload(rng, max_payload)).encode()[:-1])
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(enc))
            enc[i] ^= 1 << rng.randrange(8)  # may create a 0x00: the stream then splits there
        return bytes(enc) + b"\0"
    if kind == "bad_crc":
        body = bytearray(_body(V, Msg.ECHO, seq, _payload(rng, max_payload)))
        body[-1 - rng.randrange(4)] ^= 0x5A
        return cobs_encode(bytes(body)) + b"\0"
    if kind == "bad_length":
        payload = _payload(rng, max_payload)
        wrong = (len(payload) + rng.choice((-3, -1, 1, 2, 100))) % (max_payload + 1)
        return cobs_encode(_body(V, Msg.ECHO, seq, payload, wrong)) + b"\0"
    if kind == "oversized":
        n = max_payload + rng.randint(1, max_payload)
        return cobs_encode(_body(V, Msg.ECHO, seq, rng.randbytes(n), n & 0xFFFF)) + b"\0"
    if kind == "lying_length":
        return cobs_encode(_body(V, Msg.ECHO, seq, b"abc", max_payload + 1)) + b"\0"
    if kind == "bad_version":
        other = rng.choice([v for v in (0, 1, 3, 255) if v != V])
        return cobs_encode(_body(other, Msg.ECHO, seq, b"v")) + b"\0"
    if kind == "unknown_type":  # at the window's next: the application answers ERROR TYPE
        known = (Msg.HELLO, Msg.ECHO, Msg.BAUD, Msg.INFER, Msg.RESET, Msg.AUDIO, Msg.REPLY_PARTS)
        t = rng.choice([t for t in range(256) if t not in known and not t & TYPE_MORE])
        return _next(w, rng, t, _payload(rng, 16))
    if kind == "short_body":
        return cobs_encode(_body(V, Msg.ECHO, seq, b"")[: rng.randrange(0, 12)]) + b"\0"
    if kind == "garbage":
        return bytes(rng.randrange(1, 256) for _ in range(rng.randint(1, 40))) + b"\0"
    if kind == "bad_cobs":
        enc = bytearray(cobs_encode(_body(V, Msg.ECHO, seq, _payload(rng, 64))))
        enc.append(rng.randint(2, 254))  # a final block that claims bytes which never come
        return bytes(enc) + b"\0"
    if kind == "empty":
        return b"\0"
    if kind == "infer":  # an empty payload is rejected with ERROR PAYLOAD by the test app
        payload = _payload(rng, max_payload) if rng.random() < 0.9 else b""
        return _next(w, rng, Msg.INFER, payload)
    if kind == "reset":
        return _next(w, rng, Msg.RESET, b"")
    if kind == "part":  # a part of a longer INFER (the next "infer" ends it, or another type)
        return _next(w, rng, Msg.INFER | TYPE_MORE, _payload(rng, max_payload // 4))
    if kind == "audio":  # served without a reply of its own: acknowledged by STATUS
        return _next(w, rng, Msg.AUDIO, _payload(rng, 64))
    if kind == "ahead":  # held until the frames before it come, or refused (FULL)
        t = rng.choice((Msg.INFER, Msg.AUDIO, Msg.INFER | TYPE_MORE))
        d = rng.randint(1, 40)
        return Frame(t, w.seq(rng, d), _payload(rng, rng.choice((64, 256, 600)))).encode()
    if kind == "behind":  # served already: from the record, or STATUS DUP
        return Frame(Msg.INFER, w.seq(rng, -rng.randint(1, 12)), b"again").encode()
    if kind == "beyond":  # the counter half the space away: neither window nor record
        return Frame(Msg.INFER, w.seq(rng, 1 << 19), b"far").encode()
    if kind == "stale":  # another session's tag, or a control seq on an ordered type
        bad = seq | 0x80000000 if rng.random() < 0.5 else w.seq(rng) ^ (1 << SEQ_TAG_SHIFT)
        return Frame(Msg.INFER, bad, b"stale").encode()
    if kind == "reply_parts":  # mostly behind next (parts of the record, or DUP); else FULL
        d = -rng.randint(1, 12) if rng.random() < 0.85 else rng.randint(0, 3)
        ask = struct.pack("<BBI", rng.randrange(256), rng.randrange(11), rng.getrandbits(32))
        if rng.random() < 0.3:
            ask = struct.pack("<BBI", rng.randrange(256), rng.randrange(11), 0)
        if rng.random() < 0.1:
            ask = ask[: rng.randrange(6)]  # short: read as an ask for every part, once
        return Frame(Msg.REPLY_PARTS, w.seq(rng, d), ask).encode()
    if kind == "baud":  # the host harness has no rate switch: ERROR PAYLOAD
        return Frame(Msg.BAUD, seq, struct.pack("<IH", 921_600, 500)).encode()
    raise ValueError(kind)


def _next(w: Window, rng: random.Random, type_: int, payload: bytes) -> bytes:
    """An ordered frame at the window's next counter, which then moves on."""
    wire = Frame(type_, w.seq(rng), payload).encode()
    w.next = (w.next + 1) & SEQ_COUNT_MASK
    return wire


def fuzz_stream(seed: int, count: int, max_payload: int) -> list[tuple[str, bytes]]:
    """``replay`` repeats the previous INFER frame byte for byte (a host retry)."""
    rng = random.Random(seed)
    out: list[tuple[str, bytes]] = []
    w = Window()
    last_infer = Frame(Msg.INFER, 0, b"first").encode()
    for _ in range(count):
        kind = rng.choice(KINDS)
        if kind == "replay":
            wire = last_infer
        else:
            wire = make_frame(rng, kind, rng.getrandbits(32), max_payload, w)
            if kind == "infer":
                last_infer = wire
        out.append((kind, wire))
    return out
