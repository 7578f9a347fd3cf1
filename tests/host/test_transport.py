"""Host transport without a device: time-outs, retries with the same seq, stale replies,
immediate re-sends on damage, the adaptive time-out (RFC 6298), the request budget, sessions,
another protocol version, closed links and wrong reply types, over loop:// and a local TCP
peer."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from elatta_host.device import Device
from elatta_host.errors import DeviceError, LinkClosed, LinkTimeout, ProtocolError, VersionMismatch
from elatta_host.protocol import SEQ_CONTROL, Err, Frame, FrameDecoder, Info, Msg
from elatta_host.transport import Link, RttEstimator

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
        with pytest.raises(
            ProtocolError, match=r"wrong reply type: .* is ECHO \(0x02\), expected ECHO_REPLY"
        ):
            link.request(Msg.ECHO, b"x", expect=Msg.ECHO_REPLY)


def test_timeout_names_request_and_tries(tcp_peer: Callable[[Peer], str]) -> None:
    url = tcp_peer(lambda conn: [None for _ in requests(conn)])
    with Link(url, timeout=0.1, retries=2) as link:
        with pytest.raises(LinkTimeout, match=r"no valid reply to HELLO after 3 tries in"):
            link.request(Msg.HELLO, expect=Msg.INFO)
        assert link.resent_on_timeout == link.retransmits == 2


def test_retry_uses_same_seq_and_skips_stale(tcp_peer: Callable[[Peer], str]) -> None:
    seen: list[int] = []

    def peer(conn: socket.socket) -> None:
        for i, req in enumerate(requests(conn)):
            seen.append(req.seq)
            if i == 0:
                continue  # lose the first try
            conn.sendall(
                Frame(Msg.ECHO_REPLY, req.seq - 1, b"stale").encode()
                + Frame(Msg.ECHO_REPLY, req.seq, req.payload).encode()
            )

    with Link(tcp_peer(peer), timeout=0.2) as link:
        assert link.request(Msg.ECHO, b"hi", expect=Msg.ECHO_REPLY).payload == b"hi"
        # a loaded scheduler may let another time-out pass: every try, however many, is seq 1
        assert link.stale_replies >= 1
        assert link.retransmits == link.resent_on_timeout >= 1
    assert len(seen) >= 2 and set(seen) == {SEQ_CONTROL | 1}  # a control seq: bit 31 set


def raw_peer(answer: Callable[[int, Frame], bytes], log: list[bytes]) -> Peer:
    """A peer that records every byte it receives and answers the i-th request with
    ``answer(i, request)``."""

    def peer(conn: socket.socket) -> None:
        dec = FrameDecoder()
        i = 0
        while data := conn.recv(4096):
            log.append(data)
            for f in dec.feed(data):
                if isinstance(f, Frame):
                    conn.sendall(answer(i, f))
                    i += 1

    return peer


def test_damaged_reply_resent_at_once_behind_a_delimiter(
    tcp_peer: Callable[[Peer], str],
) -> None:
    """A damaged reply re-sends the request at once (not after the 5 s time-out), behind a
    0x00, with the same seq; the reply to the re-send is taken."""
    log: list[bytes] = []

    def answer(i: int, req: Frame) -> bytes:
        wire = bytearray(Frame(Msg.ECHO_REPLY, req.seq, req.payload).encode())
        if i == 0:
            wire[3] ^= 0x10  # one flipped bit: the CRC fails
        return bytes(wire)

    with Link(tcp_peer(raw_peer(answer, log)), timeout=5.0, budget=20.0) as link:
        reply = link.request(Msg.ECHO, b"payload", expect=Msg.ECHO_REPLY)
        assert reply.payload == b"payload" and reply.seq == SEQ_CONTROL | 1
        assert (link.resent_on_damage, link.resent_on_timeout, link.bad_frames) == (1, 0, 1)
        wire = Frame(Msg.ECHO, SEQ_CONTROL | 1, b"payload").encode()
        # the link's opening 0x00, the first try, then 0x00 + the same frame
        assert b"".join(log) == b"\0" + wire + b"\0" + wire


def test_damage_error_with_a_damaged_seq_resends_at_once(
    tcp_peer: Callable[[Peer], str],
) -> None:
    """A request damaged in its seq field is answered ERROR(CRC) with that damaged seq: the
    host re-sends at once; a matching ERROR of another kind is raised."""
    log: list[bytes] = []

    def answer(i: int, req: Frame) -> bytes:
        if i == 0:
            return Frame(Msg.ERROR, req.seq ^ 0x0100, bytes([Err.CRC, req.type])).encode()
        if req.type == Msg.INFER:
            return Frame(Msg.ERROR, req.seq, bytes([Err.PAYLOAD, req.type])).encode()
        return Frame(Msg.ECHO_REPLY, req.seq, req.payload).encode()

    with Link(tcp_peer(raw_peer(answer, log)), timeout=5.0) as link:
        assert link.request(Msg.ECHO, b"x", expect=Msg.ECHO_REPLY).payload == b"x"
        assert (link.resent_on_damage, link.damaged_requests, link.resent_on_timeout) == (1, 1, 0)
        with pytest.raises(DeviceError, match="PAYLOAD"):
            link.request(Msg.INFER, b"y", expect=Msg.RESULT)


def test_budget_bounds_a_request(tcp_peer: Callable[[Peer], str]) -> None:
    """Silence: re-sends after each time-out until the budget is spent; the error names the
    budget that ran out and the flag that raises it (however many tries the scheduler allowed)."""
    url = tcp_peer(lambda conn: [None for _ in requests(conn)])
    with Link(url, timeout=0.1, budget=1.0, flags={"budget": "--budget"}) as link:
        t0 = time.monotonic()
        with pytest.raises(LinkTimeout) as exc:
            link.request(Msg.ECHO, b"x", expect=Msg.ECHO_REPLY)
        assert time.monotonic() - t0 >= 1.0  # the budget was honoured, not cut by a try count
        msg = str(exc.value)
        assert (
            "nothing valid came from the device for the 1 s budget; raise it with --budget" in msg
        )
        assert "(last try: no reply)" in msg
        tries = int(msg.split(" tries")[0].rsplit(" ", 1)[1])
        assert tries == link.retransmits + 1, msg


def test_budget_follows_progress(tcp_peer: Callable[[Peer], str]) -> None:
    """A device that keeps answering (here: ERROR CRC to every try, the link damaging each
    request) is not lost after one budget; the request ends after PATIENCE budgets, saying so."""
    from elatta_host.transport import PATIENCE

    def peer(conn: socket.socket) -> None:
        try:
            for req in requests(conn):
                conn.sendall(Frame(Msg.ERROR, req.seq, bytes([Err.CRC, req.type])).encode())
        except OSError:
            pass

    with Link(tcp_peer(peer), timeout=0.1, budget=0.5, flags={"budget": "--budget"}) as link:
        t0 = time.monotonic()
        with pytest.raises(LinkTimeout, match=r"kept sending, but not this reply.*--budget"):
            link.request(Msg.ECHO, b"x", expect=Msg.ECHO_REPLY)
        assert time.monotonic() - t0 >= PATIENCE * 0.5


class StalledLink(Link):
    """A host process that is not scheduled for ``stall`` seconds after each write (a busy
    machine): the device's answer is already waiting when it runs again."""

    stall = 0.0

    def write(self, data: bytes) -> None:
        super().write(data)
        time.sleep(self.stall)


@pytest.mark.parametrize("answer", ["echo", "error-crc"])
def test_a_stalled_host_does_not_blame_the_device(
    tcp_peer: Callable[[Peer], str], answer: str
) -> None:
    """The host sleeps longer than the whole budget after every send; the device answered at
    once. What arrived meanwhile is read before any deadline: the reply is taken, and a device
    that answers every try (ERROR CRC) is never reported silent."""
    from elatta_host.transport import PATIENCE

    def peer(conn: socket.socket) -> None:
        try:
            for req in requests(conn):
                if answer == "echo":
                    conn.sendall(Frame(Msg.ECHO_REPLY, req.seq, req.payload).encode())
                else:
                    conn.sendall(Frame(Msg.ERROR, req.seq, bytes([Err.CRC, req.type])).encode())
        except OSError:
            pass

    with StalledLink(tcp_peer(peer), timeout=0.1, budget=0.5, flags={"budget": "--budget"}) as link:
        link.stall = 0.7
        if answer == "echo":
            got = link.request(Msg.ECHO, b"hi", expect=Msg.ECHO_REPLY)
            assert got.payload == b"hi" and link.retransmits == 0
        else:
            with pytest.raises(LinkTimeout) as exc:
                link.request(Msg.ECHO, b"x", expect=Msg.ECHO_REPLY)
            msg = str(exc.value)
            assert f"kept sending, but not this reply, for {PATIENCE} budgets" in msg, msg
            assert "nothing valid came" not in msg


def test_rtt_estimator_follows_rfc6298() -> None:
    est = RttEstimator(initial=1.0, floor=0.2, ceiling=4.0)
    assert est.rto == 1.0
    est.sample(0.1)  # first: SRTT = R, RTTVAR = R/2, RTO = 0.1 + 4 * 0.05
    assert (est.srtt, est.rttvar, est.rto) == pytest.approx((0.1, 0.05, 0.3))
    est.sample(0.2)  # RTTVAR = 3/4 * 0.05 + 1/4 * |0.1 - 0.2|, SRTT = 7/8 * 0.1 + 1/8 * 0.2
    assert (est.srtt, est.rttvar, est.rto) == pytest.approx((0.1125, 0.0625, 0.3625))
    est.backoff()
    assert est.rto == pytest.approx(0.725)
    for _ in range(5):
        est.backoff()
    assert est.rto == 4.0  # ceiling
    for _ in range(50):
        est.sample(0.001)
    assert est.rto == 0.2  # floor


def test_timeout_adapts_to_measured_round_trips(tcp_peer: Callable[[Peer], str]) -> None:
    url = tcp_peer(raw_peer(lambda i, r: Frame(Msg.ECHO_REPLY, r.seq, r.payload).encode(), []))
    with Link(url, timeout=2.0) as link:
        for _ in range(20):
            link.request(Msg.ECHO, b"e", expect=Msg.ECHO_REPLY)
        assert link.rto(Msg.ECHO) < 2.0  # learnt from the round trips
        assert link.rto(Msg.HELLO) == 2.0  # each request type has its own estimate


def test_timeout_covers_the_frames_time_on_a_slow_line(tcp_peer: Callable[[Peer], str]) -> None:
    """9,600 baud (960 bytes/s): a 2,400-byte request is 2.5 s on the wire, longer than the
    default 2 s time-out. Once a small exchange has measured the line's pace, the time-out
    covers the frame's time on the wire and the request is not re-sent while it is still
    moving (a re-send would double the traffic of every large frame)."""
    rate = 960.0

    def peer(conn: socket.socket) -> None:
        dec = FrameDecoder()
        while data := conn.recv(65536):
            for f in dec.feed(data):
                if isinstance(f, Frame):
                    reply = Frame(Msg.ECHO_REPLY, f.seq, b"ok").encode()
                    # the request's and the reply's bytes at the line's pace
                    time.sleep((len(f.encode()) + len(reply)) / rate)
                    conn.sendall(reply)

    with Link(tcp_peer(peer)) as link:
        assert link.line_rate is None and link.wire_time(Msg.ECHO, 1000) == 0.0  # unknown yet
        link.request(Msg.ECHO, b"hi", expect=Msg.ECHO_REPLY)
        assert link.line_rate is not None and link.line_rate <= rate  # a lower bound
        for _ in range(2):
            got = link.request(Msg.ECHO, bytes(2400), expect=Msg.ECHO_REPLY)
            assert got.payload == b"ok"
        assert link.retransmits == 0


def test_hello_carries_the_session_and_waits_for_its_info(
    tcp_peer: Callable[[Peer], str],
) -> None:
    """HELLO sends this link's nonce; a damage ERROR is retried; an INFO that echoes another
    session (a late answer to another session's HELLO) is not taken."""
    nonces: list[int] = []

    def info(seq: int, session: int) -> bytes:
        i = Info(2, 0, 2048, 115200, 100_000_000, 0, 0, 0, 0, 0, "fw", 0, b"", session)
        return Frame(Msg.INFO, seq, i.pack()).encode()

    def answer(i: int, req: Frame) -> bytes:
        (nonce,) = struct.unpack("<I", req.payload)
        nonces.append(nonce)
        if i == 0:
            return Frame(Msg.ERROR, req.seq, bytes([Err.COBS, req.type])).encode()
        return info(req.seq, nonce ^ 1) + info(req.seq, nonce)

    with Link(tcp_peer(raw_peer(answer, [])), timeout=5.0, session=0x1234ABCD) as link:
        got = Device(link).hello()
        assert got.session == 0x1234ABCD
        assert nonces == [0x1234ABCD, 0x1234ABCD]
        assert (link.damaged_requests, link.stale_replies) == (1, 1)
    assert Link("loop://").session != Link("loop://").session  # random per link


def test_peer_of_another_protocol_version_is_named(tcp_peer: Callable[[Peer], str]) -> None:
    """An intact v1 frame (the device runs older firmware): refused at once, both versions
    named, no re-sends."""

    def answer(i: int, req: Frame) -> bytes:
        return Frame(Msg.ERROR, req.seq, bytes([Err.VERSION, req.type]), version=1).encode()

    with Link(tcp_peer(raw_peer(answer, [])), timeout=5.0) as link:
        with pytest.raises(VersionMismatch, match=r"device speaks protocol v1, this host .* v3"):
            Device(link).hello()
        assert link.retransmits == 0


def test_device_error_is_typed(tcp_peer: Callable[[Peer], str]) -> None:
    def peer(conn: socket.socket) -> None:
        for req in requests(conn):
            code = Err.TYPE if req.type == Msg.ECHO else Err.CRC
            conn.sendall(Frame(Msg.ERROR, req.seq, bytes([code, req.type])).encode())

    with Link(tcp_peer(peer), timeout=0.5) as link:
        with pytest.raises(DeviceError, match=r"ERROR TYPE .* seq 2147483649 .*0x02") as exc:
            link.request(Msg.ECHO, b"x", expect=Msg.ECHO_REPLY)
        assert exc.value.code == Err.TYPE and link.retransmits == 0


def test_closed_link(tcp_peer: Callable[[Peer], str]) -> None:
    with Link(tcp_peer(lambda conn: None), timeout=1.0) as link:
        with pytest.raises(LinkClosed):
            link.request(Msg.HELLO, expect=Msg.INFO)


def test_cannot_open() -> None:
    with pytest.raises(LinkClosed, match="cannot open socket://127.0.0.1:1"):
        Link("socket://127.0.0.1:1")


def test_line_noise_burst_resends_once_per_holdoff(tcp_peer: Callable[[Peer], str]) -> None:
    """Twenty garbage chunks right after a request re-send it once (at half a smoothed round
    trip), not twenty times: the host never sends faster than the link answers."""

    def peer(conn: socket.socket) -> None:
        try:
            for req in requests(conn):
                if req.payload == b"noisy":
                    conn.sendall(b"\x07\x07\x00" * 20)
                time.sleep(0.3)
                conn.sendall(Frame(Msg.ECHO_REPLY, req.seq, req.payload).encode())
        except OSError:
            pass  # the host closed the link before the answer to its re-send

    with Link(tcp_peer(peer), timeout=5.0) as link:
        link.request(Msg.ECHO, b"quiet", expect=Msg.ECHO_REPLY)  # SRTT about 0.3 s
        link.request(Msg.ECHO, b"noisy", expect=Msg.ECHO_REPLY)
        assert link.bad_frames == 20
        # one burst, at most one re-send for it (a loaded scheduler may also let a time-out
        # pass, which is not the burst's doing): never one per garbage chunk
        assert link.resent_on_damage <= 1
