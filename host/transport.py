"""Serial transport over ``serial.serial_for_url``: ``socket://127.0.0.1:PORT`` (QEMU),
``/dev/ttyUSB1`` (a board), ``loop://`` (tests) all work the same way.

One request outstanding at a time; replies are matched by sequence number. Recovery
(docs/protocol.md, "Host rules"): the same frame (same seq) is re-sent, behind a 0x00 that ends
any half-received frame on the device, at once when a damaged frame or a link-damage ERROR
arrives, and after an adaptive time-out otherwise; every request has a total time budget.
"""

from __future__ import annotations

import secrets
import select
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

import serial
from elatta_host.errors import (
    DeviceError,
    LinkClosed,
    LinkError,
    LinkTimeout,
    ProtocolError,
    VersionMismatch,
)
from elatta_host.protocol import PROTO_VERSION, BadFrame, Err, Frame, FrameDecoder, Msg

# ERROR codes that say the request frame was damaged on the link, not that it was wrong: the
# host re-sends the same frame (same seq); the device's replay rule makes that safe.
LINK_ERRORS: frozenset[int] = frozenset(
    {Err.CRC, Err.SHORT, Err.LENGTH, Err.TOO_LONG, Err.COBS, Err.VERSION}
)

DEFAULT_TIMEOUT = 2.0  # s: time-out before the first measured round trip, and its ceiling
DEFAULT_BUDGET = 30.0  # s: everything one request may take, re-sends included
# `retries` for a request that only its time budget may end (the boot-time HELLO sync: a device
# still booting answers nothing for seconds, however many tries that takes)
UNCAPPED = 1 << 62
MIN_TIMEOUT = 0.2  # s: floor of the adaptive time-out (scheduling jitter of a loaded host)
# s: the least hold-off of a damage-triggered re-send (before a round trip is measured, and on a
# link far faster than the device's serial line), doubled by each further one
MIN_HOLDOFF = 0.02
# A request ends after `budget` seconds without any valid frame from the device, or after
# PATIENCE budgets in all: a device that keeps answering (ERRORs of a link that damages every
# request) but never this request is not waited for forever.
PATIENCE = 4


@dataclass
class RttEstimator:
    """Retransmission time-out from measured round trips, RFC 6298 §2-§5 (Jacobson/Karels):
    SRTT and RTTVAR smoothed with gains 1/8 and 1/4, RTO = SRTT + max(G, 4·RTTVAR) clamped to
    [floor, ceiling]; a time-out doubles RTO (§5.5) until the next measurement. Karn's rule
    (§3): only requests answered on their first try are measured."""

    initial: float
    floor: float
    ceiling: float
    granularity: float = 0.001  # G: time.monotonic() is far finer; 1 ms keeps RTO > SRTT
    srtt: float | None = None
    rttvar: float = 0.0
    rto: float = 0.0

    def __post_init__(self) -> None:
        self.rto = self._clamp(self.initial)

    def _clamp(self, v: float) -> float:
        return min(self.ceiling, max(self.floor, v))

    def sample(self, rtt: float) -> None:
        if self.srtt is None:  # §2.2
            self.srtt, self.rttvar = rtt, rtt / 2
        else:  # §2.3, RTTVAR first (it uses the old SRTT)
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self.rto = self._clamp(self.srtt + max(self.granularity, 4 * self.rttvar))

    def backoff(self) -> None:
        self.rto = self._clamp(2 * self.rto)


def new_session() -> int:
    """A random non-zero 32-bit session nonce (0 is the device's state before any HELLO)."""
    while (nonce := secrets.randbits(32)) == 0:
        pass
    return nonce


class Link:
    def __init__(
        self,
        url: str,
        *,
        baud: int = 115_200,
        timeout: float = DEFAULT_TIMEOUT,
        budget: float = DEFAULT_BUDGET,
        retries: int | None = None,
        open_timeout: float = 5.0,
        session: int | None = None,
        flags: dict[str, str] | None = None,
    ) -> None:
        """``timeout``: the time-out before a round trip is measured and the adaptive time-out's
        ceiling; ``budget``: seconds one request may take in all; ``retries``: an optional cap
        on re-sends per request (None: the budget alone decides); ``session``: the nonce HELLO
        sends (default: a fresh random one per link); ``flags``: the command-line flag that
        sets each budget ("budget", "timeout"), named in the errors so they say how to raise
        it."""
        if timeout <= 0 or budget <= 0:
            raise ValueError(f"timeout={timeout!r}, budget={budget!r}: both must be > 0 seconds")
        self.url = url
        self.timeout = timeout
        self.budget = budget
        self.retries = retries
        self.flags = dict(flags or {})
        self.session = new_session() if session is None else session & 0xFFFFFFFF
        try:
            self._ser = serial.serial_for_url(url, baudrate=baud, timeout=0, write_timeout=timeout)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise LinkClosed(f"cannot open {url}: {exc}") from exc
        # Wait in select() on the descriptor where there is one (sockets, ttys), then read all
        # that arrived without blocking; loop:// has none and falls back to short read time-outs.
        self._fd: int | None
        try:
            self._fd = self._ser.fileno()
        except (AttributeError, NotImplementedError, OSError, serial.SerialException):
            self._fd = None
        sock = getattr(self._ser, "_socket", None)
        if isinstance(sock, socket.socket):  # small request frames must not wait for Nagle
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._decoder = FrameDecoder()
        self._pending: deque[Frame | BadFrame] = deque()
        self._seq = 0
        self._rtt: dict[int, RttEstimator] = {}  # per request type: INFER is slower than HELLO
        # The line's pace (bytes/s), for time-outs that cover a frame's time on the wire: a
        # serial device's nominal rate (8N1: 10 bits a byte) from the start; on a socket (QEMU,
        # a proxy, a network UART) unknown until measured (`line_rate`).
        self.nominal_rate = None if "://" in url else baud / 10.0
        self._measured_rate = 0.0
        self._reply_bytes: dict[int, int] = {}  # per request type: the last reply's frame size
        self.bad_frames = 0
        self.retransmits = 0  # requests re-sent, for any reason (same seq)
        self.resent_on_timeout = 0
        self.resent_on_damage = 0  # at once: a damaged frame or a link-damage ERROR arrived
        self.damaged_requests = 0  # link-damage ERRORs the device answered
        self.stale_replies = 0  # valid frames for an earlier seq (late or duplicated answers)
        self.refused_replies = 0  # the right seq and type, refused by `accept` (another session)
        self._heard = time.monotonic()  # when the last valid frame came from the device
        self.recent_bad: deque[BadFrame] = deque(maxlen=4)
        # A leading delimiter makes the device drop any half-received frame (resync).
        self.write(b"\0")

    def close(self) -> None:
        self._ser.close()

    def __enter__(self) -> Link:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def next_seq(self) -> int:
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        return self._seq

    def rto(self, type_: int) -> float:
        """The current time-out for requests of this type."""
        return self._estimator(type_).rto

    @property
    def line_rate(self) -> float | None:
        """Bytes/s the link moves at least: the nominal rate of a serial device, else the best
        (bytes there and back) / (round trip) of the requests answered on their first try. A
        round trip also holds the device's work, so the measured figure is a lower bound, and
        the wire times computed from it are upper bounds. None before anything is known."""
        rate = max(self.nominal_rate or 0.0, self._measured_rate)
        return rate if rate > 0 else None

    def wire_time(self, type_: int, request_bytes: int) -> float:
        """Seconds a request of this size and its reply (as large as the last reply of this
        type) take on the wire at `line_rate`: at 9,600 baud a 2 KiB AUDIO frame alone is 2.1 s,
        more than the default time-out, which must not fire while the frame is still moving."""
        rate = self.line_rate
        if rate is None:
            return 0.0
        return (request_bytes + self._reply_bytes.get(type_, 0)) / rate

    def _estimator(self, type_: int) -> RttEstimator:
        est = self._rtt.get(type_)
        if est is None:
            est = self._rtt[type_] = RttEstimator(
                self.timeout, min(MIN_TIMEOUT, self.timeout), self.timeout
            )
        return est

    def write(self, data: bytes) -> None:
        try:
            self._ser.write(data)
            self._ser.flush()
        except (serial.SerialException, OSError) as exc:
            raise LinkClosed(f"{self.url}: write failed: {exc}") from exc

    def send(self, frame: Frame) -> None:
        self.write(frame.encode())

    def _read_some(self, wait: float) -> bytes:
        try:
            if self._fd is not None:
                ready, _, _ = select.select([self._fd], [], [], wait)
                return bytes(self._ser.read(65536)) if ready else b""
            self._ser.timeout = min(wait, 0.05)
            return bytes(self._ser.read(max(1, self._ser.in_waiting)))
        except (serial.SerialException, OSError) as exc:
            raise LinkClosed(f"{self.url}: link closed: {exc}") from exc

    def _next_item(self, timeout: float) -> Frame | BadFrame | None:
        """Next decoded chunk (valid or not), or None after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self._pending:
            left = deadline - time.monotonic()
            # at least one look, even with the time up: what arrived while this process was
            # not scheduled (a busy machine) is read before any deadline is declared
            data = self._read_some(max(0.0, left))
            if data:
                self._pending.extend(self._decoder.feed(data))
            elif left <= 0:
                return None
        item = self._pending.popleft()
        if isinstance(item, BadFrame):
            self.bad_frames += 1
            self.recent_bad.append(item)
            if item.version is not None:
                raise VersionMismatch(
                    f"{self.url}: the device speaks protocol v{item.version}, this host speaks "
                    f"v{PROTO_VERSION}: boot or flash firmware built by this codegen (or use the "
                    "codegen that built the device's firmware)"
                )
        return item

    def recv(self, timeout: float) -> Frame | None:
        """Next valid frame, or None after ``timeout`` seconds. Bad chunks are counted."""
        deadline = time.monotonic() + timeout
        while True:
            item = self._next_item(max(0.0, deadline - time.monotonic()))
            if item is None or isinstance(item, Frame):
                return item

    def request(
        self,
        type_: int,
        payload: bytes = b"",
        *,
        expect: int,
        timeout: float | None = None,
        budget: float | None = None,
        retries: int | None = None,
        retry_errors: frozenset[int] = LINK_ERRORS,
        accept: Callable[[Frame], bool] | None = None,
    ) -> Frame:
        """Send a request and return the reply of type ``expect`` with the same seq.

        Re-sends the same frame (same seq, behind a 0x00) when a damaged frame or an ERROR with
        a code in ``retry_errors`` arrives (the latter whatever its seq: a request damaged in
        its seq field is answered with that damaged seq), paced (below), and after the adaptive
        time-out otherwise. ``timeout`` fixes the time-out of every try instead of the adaptive
        one (the boot-time HELLO sync). ``accept``: a check of a reply of type ``expect`` and
        the right seq; a reply it refuses counts as stale.

        Pacing (docs/protocol.md, "Host rules"): damage is acted on no sooner than the hold-off
        after the try, half a smoothed round trip (a fixed ``timeout``: the whole of it, so a
        burst of noise re-sends once per try), doubled by each damage-triggered re-send of
        this request up to the time-out: a re-send cuts the copy the device is still reading,
        whose ERROR must not trigger the next re-send at once.

        Budgets are time, never a try count, and follow progress: the request fails when no
        valid frame has come from the device for ``budget`` seconds (it is lost), or when it
        has taken ``PATIENCE`` budgets in all (a device that answers, but never this request).
        ``retries``: an optional cap on re-sends, for tests (None: the budgets alone decide)."""
        budget = self.budget if budget is None else budget
        retries = self.retries if retries is None else retries
        est = self._estimator(type_)
        frame = Frame(type_, self.next_seq(), payload)
        wire = frame.encode()
        t_start = time.monotonic()
        self._heard = t_start  # the budget of silence counts from the request's start
        hard_end = t_start + PATIENCE * budget
        tries = damage_resends = 0
        refused0 = self.refused_replies
        while True:
            # the 0x00 ends whatever part of an earlier try the device may still hold
            self.write(wire if tries == 0 else b"\0" + wire)
            sent_at = time.monotonic()
            tries += 1
            # the adaptive time-out, never shorter than twice the frames' time on the wire
            on_wire = self.wire_time(type_, len(wire)) if timeout is None else 0.0
            wait = max(est.rto, 2 * on_wire + est.floor) if timeout is None else timeout
            if timeout is None:
                srtt = est.srtt if est.srtt is not None else 0.0
                # a damaged copy's ERROR comes once the device has read it: not before it could
                base = max(MIN_HOLDOFF, 0.5 * srtt, len(wire) / (self.line_rate or float("inf")))
                holdoff = min(wait, base * 2**damage_resends)
            else:
                holdoff = timeout
            got = self._await(
                frame,
                expect,
                sent_at,
                sent_at + wait,
                holdoff,
                retry_errors,
                accept,
                lambda: min(hard_end, self._heard + budget),
            )
            if isinstance(got, Frame):
                reply_bytes = got.wire_size  # the reply's bytes on the line, at most
                self._reply_bytes[type_] = reply_bytes
                if tries == 1 and timeout is None:  # Karn: a re-sent request is not measured
                    rtt = time.monotonic() - sent_at
                    est.sample(rtt)
                    if rtt > 0:
                        moved = (len(wire) + reply_bytes) / rtt
                        self._measured_rate = max(self._measured_rate, moved)
                return got
            now = time.monotonic()
            # silence is counted only while a try is out: a valid frame after this try (say an
            # ERROR for a damaged copy) shows the device alive however late this process looks
            silent = self._heard < sent_at and now >= self._heard + budget
            if now >= hard_end or silent:
                break
            if retries is not None and tries > retries:
                break
            if got is None:
                if timeout is None:
                    est.backoff()
                self.resent_on_timeout += 1
            else:
                self.resent_on_damage += 1
                damage_resends += 1
            self.retransmits += 1
        now = time.monotonic()
        silent = self._heard < sent_at and now >= self._heard + budget
        if retries is not None and tries > retries and now < hard_end and not silent:
            why = f"the cap of {retries} re-sends was reached"
        elif now >= hard_end and not silent:
            why = (
                f"the device kept sending, but not this reply, for {PATIENCE} budgets "
                f"({PATIENCE * budget:g} s){self._raise_hint('budget')}"
            )
        else:
            why = (
                f"nothing valid came from the device for the {budget:g} s budget"
                f"{self._raise_hint('budget')}"
            )
        detail = ""
        if self.refused_replies > refused0:
            detail += (
                f"; {self.refused_replies - refused0} replies with this seq were not taken "
                "(another session's)"
            )
        if self.recent_bad:
            last = self.recent_bad[-1]
            detail += f"; last undecodable bytes: {last.raw[:80]!r} ({last.reason})"
        raise LinkTimeout(
            f"{self.url}: no valid reply to {_type_name(type_)} seq {frame.seq} after {tries} "
            f"tries in {now - t_start:.1f} s: {why} (last try: {got or 'no reply'}){detail}"
        )

    def _raise_hint(self, which: str) -> str:
        flag = self.flags.get(which)
        return f"; raise it with {flag}" if flag else ""

    def _await(
        self,
        frame: Frame,
        expect: int,
        sent_at: float,
        deadline: float,
        holdoff: float,
        retry_errors: frozenset[int],
        accept: Callable[[Frame], bool] | None,
        budget_end: Callable[[], float],
    ) -> Frame | str | None:
        """The reply to ``frame``; or why to re-send (str); or None at the deadline (the try's
        time-out or the request's budget, ``budget_end()``, which moves on with every valid
        frame). Damage seen sooner than ``holdoff`` after the send is acted on only at
        ``holdoff``: a burst of line noise must not re-send faster than the link carries the
        frame."""
        damage: str | None = None
        looked = False  # the one look at what has arrived, once the time is up
        while True:
            now = time.monotonic()
            end = min(deadline, budget_end())
            if damage is not None and now >= sent_at + holdoff:
                return damage
            if now >= end:
                # a deadline passed while this process was not running is not the device's
                # silence: take what came meanwhile (one read, then what it decoded) first
                if looked and not self._pending:
                    return damage
                looked = True
                item = self._next_item(0.0)
                if item is None:
                    return damage
            else:
                until = end if damage is None else min(end, sent_at + holdoff)
                item = self._next_item(until - now)
                if item is None:
                    continue
            if isinstance(item, BadFrame):
                damage = damage or f"damaged frame ({item.reason})"
                continue
            self._heard = time.monotonic()  # a valid frame: the device is alive
            if item.type == Msg.ERROR and item.payload[:1] and item.payload[0] in retry_errors:
                self.damaged_requests += 1
                damage = damage or f"the device answered ERROR {Err(item.payload[0]).name}"
                continue
            if item.seq != frame.seq:
                self.stale_replies += 1  # a late or duplicated answer to an earlier request
                continue
            if item.type == Msg.ERROR:
                raise _device_error(item)
            if item.type != expect:
                raise ProtocolError(
                    f"wrong reply type: the reply to {_type_name(frame.type)} seq {frame.seq} "
                    f"is {_type_name(item.type)} (0x{item.type:02x}), expected "
                    f"{_type_name(expect)} (0x{expect:02x})"
                )
            if accept is not None and not accept(item):
                self.stale_replies += 1
                self.refused_replies += 1
                continue
            return item


def _type_name(type_: int) -> str:
    return Msg(type_).name if type_ in Msg._value2member_map_ else f"type 0x{type_:02x}"


def _device_error(reply: Frame) -> LinkError:
    if len(reply.payload) < 2:
        return ProtocolError(f"ERROR frame with a {len(reply.payload)}-byte payload")
    code, offending = reply.payload[0], reply.payload[1]
    name = Err(code).name if code in Err._value2member_map_ else f"UNKNOWN({code})"
    return DeviceError(code, name, reply.seq, offending)
