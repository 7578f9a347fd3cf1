"""The windowed link (docs/protocol.md, "Windowed link") between the host's Link and the
device's own server (fw_server.c compiled for the host, tests/hostkit.py), through the line
models of elatta_host.linkmodel: a noisy line that damages, drops, duplicates and delays
chunks, and a USB-UART. The stand-in application answers INFER with {count, CRC-32 of the
payload}, so every reply says whether its request arrived whole and was served exactly once,
in order."""

from __future__ import annotations

import hashlib
import socket
import struct
import threading
import time
import zlib
from pathlib import Path

import pytest
from devmodel import DeviceModel
from elatta_host.device import Device
from elatta_host.linkmodel import ChunkFaults, UsbUart
from elatta_host.protocol import Err, Frame, FrameDecoder, Info, Msg, hello_payload
from elatta_host.transport import PAYLOAD_STEPS, Link, Pipe, _Sizer
from hostkit import HarnessServer


def payloads(n: int, most: int) -> list[bytes]:
    """Requests of many sizes: one byte to the device's largest payload (longer than a frame
    on a noisy line: sent in parts)."""
    return [bytes((i * 7 + j) % 251 + 1 for j in range(1 + (i * 397) % most)) for i in range(n)]


def run_stream(link: Link, items: list[bytes]) -> list[tuple[int, int]]:
    """INFER each payload (an AUDIO, served without a reply, after every third one), in a pipe;
    returns each RESULT's (count, CRC)."""
    pipe = Pipe(link)
    got: dict[int, tuple[int, int]] = {}
    for i, p in enumerate(items):
        done = pipe.put(i, link.submit(Msg.INFER, p, expect=Msg.RESULT))
        if i % 3 == 2:
            pipe.put(None, link.submit(Msg.AUDIO, bytes(10), expect=None))
        for key, t in done:
            if isinstance(key, int):
                got[key] = struct.unpack("<II", t.result().payload)  # type: ignore[union-attr]
    for key, t in pipe.drain():
        if isinstance(key, int):
            got[key] = struct.unpack("<II", t.result().payload)  # type: ignore[union-attr]
    return [got[i] for i in range(len(items))]


def expected(items: list[bytes]) -> list[tuple[int, int]]:
    """The stand-in application's answers: the count advances by one per INFER and by the
    payload's length per AUDIO (served in order, each once)."""
    out, count = [], 0
    for i, p in enumerate(items):
        out.append((count, zlib.crc32(p)))
        count += 1
        if i % 3 == 2:
            count += 10
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_noisy_line_serves_every_request_once_in_order(
    host_server: tuple[Path, int], seed: int
) -> None:
    """One chunk in five flipped, one in five dropped, duplicated, delayed (each independently,
    both directions): every request is served exactly once, in order, and answered."""
    exe, most = host_server
    items = payloads(40, most)
    with HarnessServer(exe) as dev, ChunkFaults(dev.port, seed=seed, rate=0.2) as line:
        with Link(line.url) as link:
            Device(link).hello(sync_timeout=30)
            assert run_stream(link, items) == expected(items)
            assert link.retransmits > 0  # the line did damage: the test is not vacuous
            assert sum(line.faults.values()) > 50


def test_usb_uart_line(host_server: tuple[Path, int]) -> None:
    """The same through a 115,200-baud USB-UART model (line pace, latency timer)."""
    exe, most = host_server
    items = payloads(12, most)
    with HarnessServer(exe) as dev, UsbUart(dev.port, baud=115_200) as line:
        with Link(line.url) as link:
            Device(link).hello(sync_timeout=30)
            assert run_stream(link, items) == expected(items)
            assert link.retransmits == 0 and line.packets > 0


def test_frames_grow_on_a_clean_line_and_stay_holdable_on_a_noisy_one() -> None:
    """The frame size (`_Sizer`): doubling while nothing is lost, up to the device's payload;
    after a loss, never larger than what the device can hold out of order; towards the size
    whose measured goodput is best."""
    s = _Sizer()
    sizes = [s.size(2048, 256) for _ in range(64)]
    assert sizes[0] == 256 and sizes[-1] == 2048 and sizes == sorted(sizes)
    s.on_loss(s.index(2048))
    assert s.size(2048, 256) <= 256
    # a line that loses every frame of 256 bytes or more, and none shorter
    for _ in range(2000):
        k = s.index(s.size(2048, 256))
        s.on_send(k)
        if PAYLOAD_STEPS[k] >= 256:
            s.on_loss(k)
    assert PAYLOAD_STEPS[s.i] == 128


def test_a_served_request_whose_reply_was_lost_is_asked_again(
    host_server: tuple[Path, int],
) -> None:
    """A line that drops the first RESULT: the device shows it served the request (the next
    STATUS), so the host sends it again and the device answers from its record, without
    serving it twice."""
    exe, _ = host_server
    with HarnessServer(exe) as dev, _DropFirstResult(dev.port) as line:
        with Link(line.url) as link:
            Device(link).hello(sync_timeout=30)
            first = link.submit(Msg.INFER, b"one", expect=Msg.RESULT)
            link.submit(Msg.AUDIO, bytes(3), expect=None)  # its STATUS shows "one" served
            reply = link.wait(first)
            assert reply is not None
            assert struct.unpack("<II", reply.payload) == (0, zlib.crc32(b"one"))
            assert link.replies_asked >= 1
            info = Device(link).hello()
            assert info.frames_replayed >= 1


class _FrameLine(ChunkFaults):
    """No random faults; every frame from the device goes through `device_frame`, which says
    what the line carries instead (undecodable bytes are not carried)."""

    def __init__(self, upstream_port: int) -> None:
        super().__init__(upstream_port, seed=0, rate=0.0)

    def device_frame(self, f: Frame) -> bytes:
        raise NotImplementedError

    def _pump(self, src, dst, direction):  # type: ignore[no-untyped-def]
        if direction == "to_device":
            return super()._pump(src, dst, direction)
        dec = FrameDecoder()
        while data := src.recv(4096):
            for f in dec.feed(data):
                dst.sendall(self.device_frame(f) if isinstance(f, Frame) else b"")
        return None


class _DropFirstResult(_FrameLine):
    """The device's first RESULT frame is cut out of the stream."""

    dropped = False

    def device_frame(self, f: Frame) -> bytes:
        if f.type == Msg.RESULT and not self.dropped:
            self.dropped = True
            return b""
        return f.encode()


def _long_reply(payload: bytes) -> bytes:
    """200 bytes that only this payload gives."""
    return (hashlib.sha256(payload).digest() * 7)[:200]


class _ModelDevice:
    """The device's link as the spec model (tests/devmodel.py) behind a TCP port, with an
    application whose RESULT is 200 bytes long."""

    def __init__(self) -> None:
        def app(type_: int, payload: bytes) -> tuple[int, bytes]:
            return (Msg.RESULT, _long_reply(payload)) if payload else (-Err.PAYLOAD, b"")

        self.model = DeviceModel(max_payload=512, build_id="model", reply_max=256, app=app)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _ = self.listener.accept()
            while data := conn.recv(65536):
                conn.sendall(b"".join(f.encode() for f in self.model.feed(data)))
        except OSError:
            pass

    def close(self) -> None:
        self.listener.close()


class _ResultsDamaged(_FrameLine):
    """Every RESULT damaged, every other frame carried: a whole RESULT of 200 bytes never
    arrives, a part of one does."""

    damaged = 0

    def device_frame(self, f: Frame) -> bytes:
        wire = f.encode()
        if f.type != Msg.RESULT:
            return wire
        self.damaged += 1
        return wire[:30] + bytes([wire[30] ^ 0x10]) + wire[31:]


def test_a_reply_the_line_never_carries_whole_comes_in_parts() -> None:
    """The device's RESULTs are damaged every time they are sent whole: the host asks for each
    in parts (REPLY_PARTS) and puts it together, byte for byte what the device recorded, each
    request served once."""
    dev = _ModelDevice()
    try:
        with _ResultsDamaged(dev.port) as line, Link(line.url) as link:
            link.configure(Info.unpack(dev.model.info(stack_size=0, stack_used=0).pack()))
            link.request(Msg.HELLO, hello_payload(link.session), expect=Msg.INFO)
            items = [bytes([i + 1]) * (10 + i) for i in range(12)]
            pipe = Pipe(link)
            got: dict[int, bytes] = {}
            for i, p in enumerate(items):
                for key, t in pipe.put(i, link.submit(Msg.INFER, p, expect=Msg.RESULT)):
                    got[key] = t.result().payload  # type: ignore[union-attr]
            for key, t in pipe.drain():
                got[key] = t.result().payload  # type: ignore[union-attr]
            assert [got[i] for i in range(len(items))] == [_long_reply(p) for p in items]
            assert line.damaged >= len(items) and link.reply_parts >= 7 * len(items)
            assert dev.model.frames_ok == len(items) + 1  # each INFER served once, and HELLO
    finally:
        dev.close()


def test_stop_ends_a_wait(host_server: tuple[Path, int]) -> None:
    """A set stop flag ends a wait for a device that no longer answers (`Stopped`), not the
    budget."""
    import threading

    from elatta_host.errors import Stopped

    exe, _ = host_server
    stop = threading.Event()
    with HarnessServer(exe) as dev, ChunkFaults(dev.port, seed=3, rate=1.0) as line:
        with Link(dev.url, stop=stop, budget=600) as link:
            Device(link).hello(sync_timeout=30)
        with Link(line.url, stop=stop, budget=600) as link:  # every chunk dropped
            t = link.submit(Msg.INFER, b"x", expect=Msg.RESULT)
            threading.Timer(0.3, stop.set).start()
            t0 = time.monotonic()
            with pytest.raises(Stopped):
                link.wait(t)
            assert time.monotonic() - t0 < 600  # the budget did not end it
