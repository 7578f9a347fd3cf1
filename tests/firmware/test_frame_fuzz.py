"""The device's own frame parser (fw_server.c + fw_frame.c) compiled for the host with
AddressSanitizer and UBSan, driven with >= 10,000 random, truncated, oversized and corrupted
frames. Its whole output must equal, byte for byte, what the spec model (devmodel.py) answers."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

from devmodel import DeviceModel
from elatta_host.protocol import Frame, FrameDecoder, Info, Msg, Status
from fuzzframes import KINDS, fuzz_stream
from hostkit import HOST_BUILD_ID


def run_server(exe: Path, data: bytes) -> bytes:
    proc = subprocess.run([str(exe)], input=data, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-4000:]
    assert proc.stderr == b"", proc.stderr.decode(errors="replace")[-4000:]
    return proc.stdout


def first_difference(got: list[Frame], want: list[Frame]) -> str:
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            return f"reply {i}: device {g} != model {w}"
    return f"device sent {len(got)} replies, model {len(want)}"


def test_fuzz_frames_match_spec_model(host_server: tuple[Path, int]) -> None:
    exe, max_payload = host_server
    cases = fuzz_stream(seed=20261125, count=16_000, max_payload=max_payload)
    kinds = Counter(kind for kind, _ in cases)
    assert set(kinds) == set(KINDS) and min(kinds.values()) > 500
    stream = b"".join(wire for _, wire in cases)
    model = DeviceModel(max_payload=max_payload, build_id=HOST_BUILD_ID, with_test_app=True)
    want = model.feed(stream)
    out = run_server(exe, stream)
    got = [f for f in FrameDecoder().feed(out)]
    assert all(isinstance(f, Frame) for f in got), "device emitted an undecodable frame"
    assert out == b"".join(f.encode() for f in want), first_difference(got, want)  # type: ignore[arg-type]
    errors = Counter(f.payload[0] for f in want if f.type == Msg.ERROR)
    causes = Counter(Status.unpack(f.payload).cause for f in want if f.type == Msg.STATUS)
    # Every error and STATUS path was exercised, and the model saw drops too: link damage is
    # reported in STATUS (1-5), a peer of another version in ERROR (6), refusals in ERROR (4, 7,
    # 8), the window's cases in STATUS (0 ACK, 9 GAP, 10 DUP, 11 FULL, 12 STALE).
    assert {4, 6, 7, 8} <= set(errors), errors
    assert set(causes) == {0, 1, 2, 3, 4, 5, 9, 10, 11, 12}, causes
    assert model.frames_dropped > 0 and model.frames_ok > 1000
    assert model.frames_replayed > 100 and model.frames_held > 100
    # records were asked for in parts, and parts came
    assert sum(f.type == Msg.REPLY_PART for f in want) > 100
    # the application's state advanced (a RESULT counted past 0) between RESETs
    assert any(f.type == Msg.RESULT and f.payload[:4] != bytes(4) for f in want)
    # sessions were opened, and a HELLO of a wrong size was refused
    assert any(f.type == Msg.INFO and Info.unpack(f.payload).session for f in want)
    assert any(f.type == Msg.ERROR and f.payload == bytes([8, Msg.HELLO]) for f in want)


def test_partial_frame_then_resync(host_server: tuple[Path, int]) -> None:
    exe, max_payload = host_server
    good = Frame(Msg.ECHO, 42, b"after resync").encode()
    stream = b"\x05\x01\x02" + b"\x00" + good + b"\x00\x00" + b"\xff" * 5000 + b"\x00" + good
    model = DeviceModel(max_payload=max_payload, build_id=HOST_BUILD_ID, with_test_app=True)
    out = run_server(exe, stream)
    assert out == b"".join(f.encode() for f in model.feed(stream))
    assert out.count(Frame(Msg.ECHO_REPLY, 42, b"after resync").encode()) == 2


def test_retried_request_replays_stored_reply(host_server: tuple[Path, int]) -> None:
    """A frame served already (its counter behind next, whatever its copy number) gets the stored
    reply and does not advance application state; the next counter does; HELLO in between does
    not disturb the record; a frame ahead is held and served when the one before it comes."""
    exe, max_payload = host_server
    a = Frame(Msg.INFER, 1, b"sample-a").encode()
    a2 = Frame(Msg.INFER, 1 | 3 << 20, b"sample-a").encode()  # another copy of the same frame
    b = Frame(Msg.INFER, 2, b"sample-b").encode()
    c = Frame(Msg.INFER, 4, b"sample-c").encode()  # ahead: held until 3 comes
    r = Frame(Msg.RESET, 3).encode()
    stream = a + a2 + Frame(Msg.HELLO, 99).encode() + a + b + c + b + r + b
    out = list(FrameDecoder().feed(run_server(exe, stream)))
    counts = [
        int.from_bytes(f.payload[:4], "little")
        for f in out  # type: ignore[union-attr]
        if isinstance(f, Frame) and f.type == Msg.RESULT
    ]
    # a, a2 (replay), a (replay), b, b (replay), then 3 (RESET) frees 4 (c: count 0), b (replay)
    assert counts == [0, 0, 0, 1, 1, 0, 1]
    seqs = [f.seq for f in out if isinstance(f, Frame) and f.type == Msg.RESULT]
    assert seqs[1] == 1 | 3 << 20  # the copy that came is named in the reply
    info = [f for f in out if isinstance(f, Frame) and f.type == Msg.INFO]
    parsed = Info.unpack(info[0].payload)
    assert parsed.frames_replayed == 1 and parsed.app == b"test-app"
