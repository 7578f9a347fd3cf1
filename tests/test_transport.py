"""Host transport without a device: time-outs, retries with the same seq, stale replies,
closed links and wrong reply types, over loop:// and a local TCP peer."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from elatta_host.errors import DeviceError, LinkClosed, LinkTimeout, ProtocolError
from elatta_host.protocol import Frame, FrameDecoder, Msg
from elatta_host.transport import Link

Peer = Callable[[socket.socket], None]


@pytest.fixture
def tcp_peer() -> Iterator[Callable[[Peer], str]]:
    servers: list[socket.socket] = []

    def start(behaviour: Peer) -> str:
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        servers.append(srv)

        def serve() -> None:
            conn, _ = srv.accept()
            with conn:
                behaviour(conn)

        threading.Thread(target=serve, daemon=True).start()
        return f"socket://127.0.0.1:{srv.getsockname()[1]}"

    yield start
    for s in servers:
        s.close()


def requests(conn: socket.socket) -> Iterator[Frame]:
    dec = FrameDecoder()
    while data := conn.recv(4096):
        for f in dec.feed(data):
            if isinstance(f, Frame):
                yield f


def test_loop_reply_of_wrong_type() -> None:
    with Link("loop://", timeout=0.2, retries=0) as link:
        with pytest.raises(ProtocolError, match="has type 0x02, expected 0x82"):
            link.request(Msg.ECHO, b"x", expect=Msg.ECHO_REPLY)


def test_timeout_names_request_and_tries(tcp_peer: Callable[[Peer], str]) -> None:
    url = tcp_peer(lambda conn: [None for _ in requests(conn)])
    with Link(url, timeout=0.1, retries=2) as link:
        with pytest.raises(LinkTimeout, match=r"no reply to HELLO seq 1 after 3 tries of 0.1 s"):
            link.request(Msg.HELLO, expect=Msg.INFO)


def test_retry_uses_same_seq_and_skips_stale(tcp_peer: Callable[[Peer], str]) -> None:
    seen: list[int] = []

    def peer(conn: socket.socket) -> None:
        for i, req in enumerate(requests(conn)):
            seen.append(req.seq)
            if i == 0:
                continue  # lose the first try
            conn.sendall(
                Frame(Msg.ECHO_REPLY, req.seq - 1, b"stale").encode()
                + b"\x13\x37\x00"  # line noise
                + Frame(Msg.ECHO_REPLY, req.seq, req.payload).encode()
            )

    with Link(tcp_peer(peer), timeout=0.2, retries=2) as link:
        assert link.request(Msg.ECHO, b"hi", expect=Msg.ECHO_REPLY).payload == b"hi"
        assert link.bad_frames == 1
        assert link.retransmits == 1
    assert seen == [1, 1]


def test_device_error_is_typed(tcp_peer: Callable[[Peer], str]) -> None:
    def peer(conn: socket.socket) -> None:
        for req in requests(conn):
            conn.sendall(Frame(Msg.ERROR, req.seq, bytes([1, req.type])).encode())

    with Link(tcp_peer(peer), timeout=0.5) as link:
        with pytest.raises(DeviceError, match="ERROR CRC .* seq 1 .*0x02") as exc:
            link.request(Msg.ECHO, b"x", expect=Msg.ECHO_REPLY)
        assert exc.value.code == 1


def test_closed_link(tcp_peer: Callable[[Peer], str]) -> None:
    with Link(tcp_peer(lambda conn: None), timeout=1.0) as link:
        with pytest.raises(LinkClosed):
            link.request(Msg.HELLO, expect=Msg.INFO)


def test_cannot_open() -> None:
    with pytest.raises(LinkClosed, match="cannot open socket://127.0.0.1:1"):
        Link("socket://127.0.0.1:1")
