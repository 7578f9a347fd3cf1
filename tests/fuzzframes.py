"""Seeded generator of valid, truncated, oversized and corrupted frames (wire bytes)."""

from __future__ import annotations

import random
import struct
import zlib

from elatta_host.protocol import PROTO_VERSION, Frame, Msg, cobs_encode

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
)


def _payload(rng: random.Random, max_payload: int) -> bytes:
    n = min(max_payload, int(2 ** rng.uniform(0, max_payload.bit_length())) - 1)
    return rng.randbytes(n)


def _body(version: int, type_: int, seq: int, payload: bytes, length: int | None = None) -> bytes:
    head = struct.pack("<BBIH", version, type_, seq, len(payload) if length is None else length)
    return head + payload + struct.pack("<I", zlib.crc32(head + payload))


def make_frame(rng: random.Random, kind: str, seq: int, max_payload: int) -> bytes:
    """Wire bytes for one test frame of the given kind (always ends with 0x00)."""
    if kind == "valid_echo":
        return Frame(Msg.ECHO, seq, _payload(rng, max_payload)).encode()
    if kind == "valid_hello":  # INFO only, a session nonce, or a payload of a wrong size
        payload = rng.choice((b"", b"", struct.pack("<I", rng.choice(SESSIONS)), b"\1\2\3"))
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
    if kind == "unknown_type":
        t = rng.choice([t for t in range(256) if t not in (Msg.HELLO, Msg.ECHO)])
        return cobs_encode(_body(V, t, seq, _payload(rng, 16))) + b"\0"
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
        return Frame(Msg.INFER, seq, payload).encode()
    if kind == "reset":
        return Frame(Msg.RESET, seq).encode()
    raise ValueError(kind)


def fuzz_stream(seed: int, count: int, max_payload: int) -> list[tuple[str, bytes]]:
    """``replay`` repeats the previous INFER frame byte for byte (a host retry)."""
    rng = random.Random(seed)
    out: list[tuple[str, bytes]] = []
    last_infer = Frame(Msg.INFER, 0, b"first").encode()
    for _ in range(count):
        kind = rng.choice(KINDS)
        if kind == "replay":
            wire = last_infer
        else:
            wire = make_frame(rng, kind, rng.getrandbits(32), max_payload)
            if kind == "infer":
                last_infer = wire
        out.append((kind, wire))
    return out
