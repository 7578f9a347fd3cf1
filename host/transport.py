"""Serial transport over ``serial.serial_for_url``: ``socket://127.0.0.1:PORT`` (QEMU),
``/dev/ttyUSB1`` (a board), ``loop://`` (tests) all work the same way.

The windowed link (docs/protocol.md, "Windowed link", "Host rules"):

- Control requests (HELLO, ECHO, BAUD) go one at a time and are re-sent, behind a 0x00 that ends
  any half-received frame on the device, on damage (paced by a hold-off) or after a time-out.
- Ordered requests (INFER, RESET, the AUDIO messages) are *submitted*: cut into frames no longer
  than the line's measured damage makes worth it, numbered with the session's tag and a counter,
  and sent while the device's window has room: the bytes in flight fit its receive ring, the
  counters fit its STATUS bitmap, the replies awaited fit its records. The device serves them in
  order; its replies and STATUS frames say what arrived (selective repeat).
- A frame is re-sent when the device shows it received a frame sent after the frame's last copy
  (the line keeps bytes in order, so that copy was lost) or reported the copy damaged; a reply is
  asked for again, in parts (REPLY_PARTS, docs/protocol.md "Replies in parts"), when the device
  acknowledged its request but the reply never came. Only
  silence (nothing from the device for the re-send time-out) re-sends the oldest frame and
  doubles the time-out, RFC 6298 §5.5; damage never slows the link down.
- Re-send time-outs come from measured round trips, RFC 6298 §2-§5 (`RttEstimator`), never
  shorter than the time the bytes in flight need on the wire at the line's pace.
- Budgets are time and follow progress: the link fails when nothing valid has come from the
  device for ``budget`` seconds while something is outstanding, or when the oldest outstanding
  request has waited ``PATIENCE`` budgets. A set ``stop`` flag ends any wait within
  ``STOP_POLL`` seconds with `Stopped`; what was received stays received.
"""

from __future__ import annotations

import secrets
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

import serial
from elatta_host.errors import (
    DeviceError,
    LinkClosed,
    LinkError,
    LinkTimeout,
    ProtocolError,
    Stopped,
    VersionMismatch,
)
from elatta_host.protocol import (
    CONTROL_TYPES,
    ERROR_CODE,
    ERROR_SIZE,
    ERROR_TYPE,
    HDR_SIZE,
    PART_COPIES_MAX,
    PROTO_VERSION,
    SEQ_CONTROL,
    SEQ_COPY_MASK,
    SEQ_COPY_SHIFT,
    SEQ_COUNT_MASK,
    SEQ_TAG_MASK,
    SEQ_TAG_SHIFT,
    STATUS_CAUSE,
    TYPE_MORE,
    WINDOW,
    BadFrame,
    Cause,
    Err,
    Frame,
    FrameDecoder,
    Info,
    Msg,
    ReplyPart,
    Status,
    cause_name,
    reply_parts_payload,
)

# ERROR codes and STATUS causes that say a frame was damaged on the link, not that it was wrong.
LINK_ERRORS: frozenset[int] = frozenset(
    {Err.CRC, Err.SHORT, Err.LENGTH, Err.TOO_LONG, Err.COBS, Err.VERSION}
)

DEFAULT_TIMEOUT = 2.0  # s: time-out before the first measured round trip, and its ceiling
DEFAULT_BUDGET = 30.0  # s: silence from the device that ends the link
# `retries` for a request that only its time budget may end (the boot-time HELLO sync: a device
# still booting answers nothing for seconds, however many tries that takes)
UNCAPPED = 1 << 62
MIN_TIMEOUT = 0.2  # s: floor of the adaptive time-out (scheduling jitter of a loaded host)
# s: the least hold-off of a damage-triggered re-send of a control request
MIN_HOLDOFF = 0.02
# The oldest outstanding request fails after PATIENCE budgets, however much the device says.
PATIENCE = 4
STOP_POLL = 0.1  # s: how often a waiting link looks at its stop flag
# A frame's bytes besides its payload: header, CRC, COBS's first code byte, the delimiter.
FRAME_OVERHEAD = HDR_SIZE + 4 + 2
# Payload sizes the link cuts messages into (`_Sizer`), and where it starts: small enough that a
# line which damages one chunk in five still carries a frame now and then.
PAYLOAD_STEPS = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
FIRST_PAYLOAD = 256
SIZER_MEMORY = 0.99  # decay per frame of a size's goodput figures (about 100 frames)
SIZER_TRIAL = 24  # frames at the chosen size between two trials of a neighbouring size
SIZER_TRIAL_FRAMES = 8  # frames of a trial
SIZER_MIN = 16  # frames a size needs before its goodput is compared
SIZER_GROW = 8  # frames without any loss on the link before the next larger size
QUEUE_MESSAGES = 64  # messages submitted and not yet sent before `submit` waits
# A reply asked for again comes in parts of this many bytes (REPLY_PARTS), each sent twice at
# first and up to PART_COPIES_MAX times as asks for the same reply go unanswered: on a line that
# damages short chunks of the stream a part of 54 bytes on the wire gets through where a reply of
# some hundreds rarely does, and every part that came is kept.
REPLY_PART_BYTES = 32
REPLY_PART_COPIES = 2


@dataclass
class RttEstimator:
    """Retransmission time-out from measured round trips, RFC 6298 §2-§5 (Jacobson/Karels):
    SRTT and RTTVAR smoothed with gains 1/8 and 1/4, RTO = SRTT + max(G, 4·RTTVAR) clamped to
    [floor, ceiling]; a time-out doubles RTO (§5.5) until the next measurement. Karn's rule
    (§3): only frames answered on their first transmission are measured."""

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


@dataclass(frozen=True)
class Window:
    """What the device lets the host keep in flight (INFO's link block)."""

    rx_ring: int  # unacknowledged bytes on their way (its receive ring)
    frames: int  # counters beyond the device's next it can place (STATUS's bitmap)
    hold_payload: int  # the largest payload of a frame it can hold out of order
    records: int  # replies it keeps: requests awaiting a reply at once
    max_payload: int

    @classmethod
    def from_info(cls, info: Info) -> Window:
        if info.link is None:
            return STOP_AND_WAIT
        ln = info.link
        return cls(ln.rx_ring, ln.window, ln.hold_payload, ln.records, info.max_payload)


# Before INFO has been read: one frame at a time, no larger than any firmware takes.
STOP_AND_WAIT = Window(rx_ring=0, frames=1, hold_payload=0, records=1, max_payload=256)


@dataclass
class Ticket:
    """A submitted ordered request: done once its reply came (``expect`` set) or once the
    device acknowledged its last frame (``expect`` None); ``error`` when it failed."""

    type: int
    expect: int | None
    seq: int  # the seq of its last frame
    submitted: float
    reply: Frame | None = None
    error: LinkError | None = None
    done: bool = False

    def result(self) -> Frame | None:
        if self.error is not None:
            raise self.error
        return self.reply


@dataclass(eq=False)
class _Out:
    """One ordered frame and what the host knows of it."""

    count: int
    seq: int  # tag and counter; each transmission adds its copy number
    type: int
    payload: bytes
    size: int  # its bytes on the wire, at most
    ticket: Ticket | None  # on the message's last frame
    copy_tx: dict[int, int] = field(default_factory=dict)  # copy number -> transmission
    copy_at: dict[int, float] = field(default_factory=dict)  # copy number -> when it was sent
    measured: bool = False  # a round trip was taken from it
    first_tx: int = -1  # transmission order of its first and last copies
    last_tx: int = -1
    sends: int = 0
    first_at: float = 0.0
    last_at: float = 0.0
    copies: int = 0  # copies on the wire not known lost
    acked: bool = False  # the device served it
    held: bool = False  # the device holds it until the frames before it come
    queued: bool = False  # waiting in the send queue (first send or a re-send)
    # its reply asked for again in parts: the parts that came, their shape (type, count, part,
    # total) and the asks so far
    parts: dict[int, bytes] = field(default_factory=dict)
    part_shape: tuple[int, int, int, int] | None = None
    asks: int = 0


@dataclass(eq=False)
class _Msg:
    """An ordered request not yet wholly cut into frames."""

    type: int
    payload: bytes
    ticket: Ticket
    offset: int = 0  # bytes cut so far


class _Sizer:
    """The payload a frame carries: the size that carries the most payload per byte sent,
    measured. For each size the copies sent and the copies known lost are counted (decayed as
    that size is used); the goodput of size F is (1 - lost/sent) · F / (F + FRAME_OVERHEAD). The
    size in use is compared with its neighbours, each tried for a few frames now and then, so
    no model of the line is assumed: random bit errors favour short frames, damage to whole
    chunks of the stream favours frames as long as a chunk, a clean line the longest frames."""

    def __init__(self) -> None:
        self.i = PAYLOAD_STEPS.index(FIRST_PAYLOAD)
        self.sent = [0.0] * len(PAYLOAD_STEPS)
        self.lost = [0.0] * len(PAYLOAD_STEPS)
        self.cut = 0  # frames cut at the chosen size since the last trial
        self.trial = 0  # frames of the running trial still to cut
        self.up = True  # the direction of the next trial
        self.losses = 0

    def _top(self, most: int, cap: int) -> int:
        fits = [k for k, v in enumerate(PAYLOAD_STEPS) if v <= most] or [0]
        if self.losses:  # once the line has lost a frame, frames must be holdable
            fits = [k for k in fits if PAYLOAD_STEPS[k] <= max(cap, PAYLOAD_STEPS[0])] or [0]
        return max(fits)

    def size(self, most: int, cap: int) -> int:
        """The size to cut the next frame at, within ``most`` (the device's payload) and
        ``cap`` (the largest it holds out of order, once the line has lost anything). Until the
        line loses a frame the size doubles every SIZER_GROW frames."""
        top = self._top(most, cap)
        self.i = min(self.i, top)
        if not self.losses:
            self.cut += 1
            if self.cut >= SIZER_GROW:
                self.cut = 0
                self.i = min(top, self.i + 1)
            return min(PAYLOAD_STEPS[self.i], most)
        k = self.i
        if self.trial:
            self.trial -= 1
            k = min(top, k + 1) if self.up else max(0, k - 1)
        else:
            self.cut += 1
            if self.cut >= SIZER_TRIAL:
                self.cut = 0
                self.trial = SIZER_TRIAL_FRAMES
                self.up = not self.up
        return min(PAYLOAD_STEPS[k], most)

    @staticmethod
    def index(payload: int) -> int:
        return max(k for k, v in enumerate(PAYLOAD_STEPS) if v <= max(payload, PAYLOAD_STEPS[0]))

    def goodput(self, k: int) -> float | None:
        if self.sent[k] < SIZER_MIN * SIZER_MEMORY**SIZER_MIN:
            return None
        f = PAYLOAD_STEPS[k]
        return (1.0 - min(1.0, self.lost[k] / self.sent[k])) * f / (f + FRAME_OVERHEAD)

    def on_send(self, k: int) -> None:
        self.sent[k] = self.sent[k] * SIZER_MEMORY + 1.0
        self.lost[k] *= SIZER_MEMORY
        self._choose()

    def on_loss(self, k: int, copies: int = 1) -> None:
        self.losses += 1
        self.lost[k] += copies
        self._choose()

    def _choose(self) -> None:
        here = self.goodput(self.i)
        if here is None:
            return
        for k in (self.i + 1, self.i - 1):
            g = self.goodput(k) if 0 <= k < len(PAYLOAD_STEPS) else None
            if g is not None and g > here + 0.03:
                self.i, here = k, g


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
        stop: threading.Event | None = None,
    ) -> None:
        """``timeout``: the time-out before a round trip is measured and the adaptive time-out's
        ceiling; ``budget``: seconds of silence from the device that end the link; ``retries``:
        an optional cap on re-sends of a control request (None: the budget alone decides);
        ``session``: the nonce HELLO sends (default: a fresh random one per link); ``flags``:
        the command-line flag that sets each budget ("budget", "timeout"), named in the errors
        so they say how to raise it; ``stop``: set it to end every wait (`Stopped`)."""
        if timeout <= 0 or budget <= 0:
            raise ValueError(f"timeout={timeout!r}, budget={budget!r}: both must be > 0 seconds")
        self.url = url
        self.timeout = timeout
        self.budget = budget
        self.retries = retries
        self.flags = dict(flags or {})
        self.stop = stop
        # frames in flight at most (None: as the device's window allows; 1: stop-and-wait, what
        # `codegen bench` times the device's work with, no byte arriving while it computes)
        self.max_in_flight: int | None = None
        self.session = new_session() if session is None else session & 0xFFFFFFFF
        self.baud = baud
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
        self._seq = 0  # control requests' counter (their seqs have bit 31 set)
        self._rtt: dict[int, RttEstimator] = {}  # control requests, per type
        # The line's pace (bytes/s), for time-outs that cover a frame's time on the wire: a
        # serial device's nominal rate (8N1: 10 bits a byte) from the start; on a socket (QEMU,
        # a proxy, a network UART) unknown until measured (`line_rate`).
        self.nominal_rate = None if "://" in url else baud / 10.0
        self._measured_rate = 0.0
        self._reply_bytes: dict[int, int] = {}  # control requests: the last reply's frame size
        self.bad_frames = 0
        self.retransmits = 0  # frames re-sent, for any reason
        self.resent_on_timeout = 0
        self.resent_on_damage = 0  # re-sent because the device showed the copy lost or damaged
        self.replies_asked = 0  # requests sent again because their reply was lost
        self.reply_parts = 0  # parts of recorded replies that came (REPLY_PART)
        self.damaged_requests = 0  # damage the device reported (STATUS, link-damage ERROR)
        self.stale_replies = 0  # valid frames for an earlier or another session's request
        self.refused_replies = 0  # the right seq and type, refused by `accept` (another session)
        self.frames_sent = 0  # ordered frames sent (first copies)
        self.bytes_sent = 0
        self._heard = time.monotonic()  # when the last valid frame came from the device
        self.recent_bad: deque[BadFrame] = deque(maxlen=4)
        # the ordered stream
        self.window = STOP_AND_WAIT
        self._info_read = False  # the device's INFO (its MAX_PAYLOAD) has been read
        self._count = 0  # the last counter given
        self._dev_next = 1  # the device's next counter, as last heard
        self._out: dict[int, _Out] = {}  # sent or queued, not yet served
        self._awaiting: dict[int, _Out] = {}  # served, their reply not yet here
        self._queue: deque[_Out] = deque()  # frames to send again
        self._msgs: deque[_Msg] = deque()  # messages not yet wholly cut into frames
        self._tx = 0  # transmissions so far (ordered)
        self._unacked = 0  # frames sent and not yet served
        self._delivered_tx = -1  # the latest transmission known to have arrived
        self._in_flight = 0  # bytes of copies on the wire not known to have arrived or been lost
        # the tickets with a reply sent so far, from the oldest whose reply has not come: the
        # device keeps the last `records` replies, so no more may be sent past that oldest one
        self._reply_span: deque[Ticket] = deque()
        self._ordered_rtt = RttEstimator(timeout, min(MIN_TIMEOUT, timeout), timeout)
        self._progress = time.monotonic()  # the last time the device moved the window
        self._sizer = _Sizer()
        self._last_error = 0  # STATUS last_error as last seen
        self._control_seq: int | None = None  # the control request waiting for its reply
        self._control_got: list[Frame | str] = []
        # A leading delimiter makes the device drop any half-received frame (resync).
        self.write(b"\0")

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        self._ser.close()

    def __enter__(self) -> Link:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def tag(self) -> int:
        return (self.session & SEQ_TAG_MASK) << SEQ_TAG_SHIFT

    def next_seq(self) -> int:
        """A fresh control seq (bit 31 set)."""
        self._seq = (self._seq + 1) & 0x7FFFFFFF
        return SEQ_CONTROL | self._seq

    def ordered_seq(self, count: int) -> int:
        return self.tag | (count & SEQ_COUNT_MASK)

    def configure(self, info: Info) -> None:
        """Take the device's window from its INFO (`Device.hello` calls it)."""
        self.window = Window.from_info(info)
        self._info_read = True

    def set_baud(self, baud: int) -> None:
        """The host side's rate (a serial device; a socket has none)."""
        self.baud = baud
        if self.nominal_rate is not None:
            self._ser.baudrate = baud
            self.nominal_rate = baud / 10.0

    def drain_output(self) -> None:
        try:
            self._ser.flush()
        except (serial.SerialException, OSError) as exc:
            raise LinkClosed(f"{self.url}: write failed: {exc}") from exc

    def rto(self, type_: int | None = None) -> float:
        """The current re-send time-out: of the ordered stream, or of a control request type."""
        if type_ is None or type_ not in CONTROL_TYPES:
            return self._ordered_rtt.rto
        return self._estimator(type_).rto

    @property
    def line_rate(self) -> float | None:
        """Bytes/s the link moves at least: the nominal rate of a serial device, else the best
        measured figure. None before anything is known."""
        rate = max(self.nominal_rate or 0.0, self._measured_rate)
        return rate if rate > 0 else None

    def wire_time(self, type_: int, request_bytes: int) -> float:
        """Seconds a control request of this size and its reply take on the wire at
        `line_rate`."""
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

    def _check_stop(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise Stopped(f"{self.url}: stopped")

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
            data = self._read_some(max(0.0, min(left, STOP_POLL)))
            if data:
                self._pending.extend(self._decoder.feed(data))
            elif left <= 0:
                return None
            else:
                self._check_stop()
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

    def _raise_hint(self, which: str) -> str:
        flag = self.flags.get(which)
        return f"; raise it with {flag}" if flag else ""

    # ------------------------------------------------------------------ requests

    def request(
        self,
        type_: int,
        payload: bytes = b"",
        *,
        expect: int,
        timeout: float | None = None,
        budget: float | None = None,
        retries: int | None = None,
        accept: Callable[[Frame], bool] | None = None,
    ) -> Frame:
        """Send a request and return its reply of type ``expect``: a control request (HELLO,
        ECHO, BAUD) one try at a time (`_control`), an ordered one through the window
        (`submit`, then `wait`)."""
        if type_ in CONTROL_TYPES:
            if self._info_read and len(payload) > self.window.max_payload:
                raise ProtocolError(
                    f"{_type_name(type_)} of {len(payload)} bytes: the device takes payloads of "
                    f"at most {self.window.max_payload} bytes (its MAX_PAYLOAD, INFO)"
                )
            return self._control(type_, payload, expect, timeout, budget, retries, accept)
        ticket = self.submit(type_, payload, expect=expect)
        reply = self.wait(ticket)
        assert reply is not None
        return reply

    def submit(self, type_: int, payload: bytes = b"", *, expect: int | None) -> Ticket:
        """Queue an ordered request and send what the window allows. A message is cut into
        frames as they go out, each of `payload_size` bytes at that moment, so the cut follows
        the line. Waits (taking replies as they come) while more than QUEUE_MESSAGES messages
        are queued."""
        if type_ in CONTROL_TYPES or type_ & TYPE_MORE:
            raise ValueError(f"type 0x{type_:02x} is not an ordered request type")
        ticket = Ticket(type_, expect, 0, time.monotonic())
        self._msgs.append(_Msg(type_, payload, ticket))
        self._send_ready()
        while len(self._msgs) > QUEUE_MESSAGES:
            self._step()
        return ticket

    def wait(self, ticket: Ticket) -> Frame | None:
        """Its reply (None for an acknowledged request without one), taking every other reply
        as it comes; raises its error."""
        while not ticket.done:
            self._step()
        return ticket.result()

    def poll(self) -> None:
        """Take what has arrived and send what the window allows, without waiting."""
        self._check_stop()
        self._send_ready()
        while (item := self._next_item(0.0)) is not None:
            self._on_item(item)
        self._check_timers()
        self._send_ready()

    def flush(self) -> None:
        """Wait until every submitted request is served and answered."""
        while self._out or self._awaiting or self._msgs:
            self._step()

    def state(self) -> str:
        """The ordered stream as the host sees it (for errors)."""
        sent = [o for o in self._out.values() if o.sends]
        held = sum(o.held for o in sent)
        head = self._queue[0] if self._queue else None
        return (
            f"device next {self._dev_next}, {len(sent)} frames sent and unserved ({held} held), "
            f"{len(self._awaiting)} awaiting a reply, {len(self._queue)} to send again, "
            f"{len(self._msgs)} messages waiting"
            + (
                f" (head {head.count}{' re-send' if head.sends else ''}, "
                f"{'room' if self._room(head) else 'no room'})"
                if head
                else ""
            )
            + f", {self._in_flight} bytes in flight, {self._open_span()} replies in the record "
            "span, "
            f"payload {self.payload_size()} bytes"
        )

    @property
    def outstanding(self) -> int:
        """Ordered frames not yet served or not yet answered."""
        return len(self._out) + len(self._awaiting) + len(self._msgs)

    def payload_size(self) -> int:
        """The payload the next frame carries (`_Sizer`)."""
        return self._sizer.size(self.window.max_payload, self.window.hold_payload)

    # ------------------------------------------------------------------ the ordered stream

    def _room(self, o: _Out) -> bool:
        """Whether the device's window takes this frame now. A served frame sent again (its
        reply was lost) is answered from the record: always."""
        if o.acked:
            return True
        if self.max_in_flight is not None and self._unacked >= self.max_in_flight:
            return False
        if (o.count - self._dev_next) & SEQ_COUNT_MASK >= min(self.window.frames, WINDOW):
            return False
        if self._in_flight and self._in_flight + o.size > self.window.rx_ring:
            return False
        if self.window.rx_ring == 0 and self._in_flight:
            return False
        wants_reply = o.ticket is not None and o.ticket.expect is not None and o.sends == 0
        return not (wants_reply and self._open_span() >= self.window.records)

    def _open_span(self) -> int:
        while self._reply_span and self._reply_span[0].done:
            self._reply_span.popleft()
        return len(self._reply_span)

    def _send_ready(self) -> None:
        """Frames to send again first, then the next messages' next frames, while they fit."""
        while self._queue and self._room(self._queue[0]):
            self._transmit(self._queue.popleft())
        while self._msgs and not self._queue:
            m = self._msgs[0]
            size = self.payload_size()
            part = m.payload[m.offset : m.offset + size]
            last = m.offset + len(part) >= len(m.payload)
            count = (self._count + 1) & SEQ_COUNT_MASK
            seq = self.ordered_seq(count)
            t = m.type if last else m.type | TYPE_MORE
            o = _Out(count, seq, t, part, Frame(t, seq, part).wire_size, m.ticket if last else None)
            if not self._room(o):
                return
            self._count = count
            m.offset += len(part)
            if last:
                self._msgs.popleft()
                m.ticket.seq = seq
            self._out[count] = o
            self._transmit(o)

    def _transmit(self, o: _Out) -> None:
        now = time.monotonic()
        first = o.sends == 0
        copy = o.sends & (SEQ_COPY_MASK >> SEQ_COPY_SHIFT)
        # A frame the device has served whose reply did not come is not sent again: REPLY_PARTS
        # asks for the recorded reply in parts, those still missing (firmware/fw_server.c
        # serve_again); a short ask gets through where a long frame rarely does, and so do the
        # short parts where the whole reply rarely does.
        probe = not first and o.count in self._awaiting
        seq = o.seq | copy << SEQ_COPY_SHIFT
        if probe:
            wire = Frame(Msg.REPLY_PARTS, seq, self._parts_ask(o)).encode()
        else:
            wire = Frame(o.type, seq, o.payload).encode()
        self.write(wire if first else b"\0" + wire)
        self._tx += 1
        o.copy_tx[copy] = self._tx
        o.copy_at[copy] = now
        if first:
            o.first_tx, o.first_at = self._tx, now
            self.frames_sent += 1
            if o.ticket is not None and o.ticket.expect is not None:
                self._reply_span.append(o.ticket)
            if not self._unacked and not self._awaiting:
                # out of idleness: the re-send clock and the budget of silence start now
                self._progress = self._heard = now
            self._unacked += 1
        else:
            self.retransmits += 1
        o.last_tx, o.last_at = self._tx, now
        o.sends += 1
        o.queued = False
        if not o.acked and not o.held:
            o.copies += 1
            self._in_flight += o.size
        self.bytes_sent += len(wire)
        if not probe:
            self._sizer.on_send(self._sizer.index(len(o.payload)))

    def _parts_ask(self, o: _Out) -> bytes:
        """REPLY_PARTS for o's reply: the parts still missing, more copies as asks go
        unanswered."""
        want = 0
        if o.part_shape is not None:
            want = sum(1 << i for i in range(o.part_shape[1]) if i not in o.parts)
        copies = min(PART_COPIES_MAX, REPLY_PART_COPIES + o.asks // 2)
        o.asks += 1
        return reply_parts_payload(REPLY_PART_BYTES, copies, want)

    def _on_part(self, f: Frame) -> None:
        """A part of a recorded reply (REPLY_PART): kept until every part is here, then taken as
        the reply."""
        o = (
            self._copy_arrived(f.seq)
            if f.seq & ~(SEQ_COUNT_MASK | SEQ_COPY_MASK) == self.tag
            else None
        )
        if o is None or o.ticket is None or o.ticket.done:
            self.stale_replies += 1  # another session's, or a reply already whole
            return
        try:
            part = ReplyPart.unpack(f.payload)
        except ValueError as exc:
            raise ProtocolError(f"{self.url}: {exc}") from exc
        shape = (part.type, part.count, part.part, part.total)
        if o.part_shape != shape:  # the first part, or parts of another cut: start over
            o.part_shape, o.parts = shape, {}
        o.parts[part.index] = part.data
        self.reply_parts += 1
        if len(o.parts) == part.count:
            payload = b"".join(o.parts[i] for i in range(part.count))
            self._on_reply(Frame(part.type, f.seq, payload))

    def _resend(self, o: _Out, why: str) -> None:
        """Put a frame at the head of the send queue (once)."""
        if o.queued:
            return
        o.queued = True
        if why == "timeout":
            self.resent_on_timeout += 1
        elif why == "reply":
            self.replies_asked += 1
        else:
            self.resent_on_damage += 1
        self._queue.appendleft(o)

    def _lost(self, o: _Out) -> None:
        """Every copy of an unserved frame is gone: it goes again."""
        if o.copies:
            self._sizer.on_loss(self._sizer.index(len(o.payload)), o.copies)
            self._in_flight -= o.copies * o.size
            o.copies = 0
        self._resend(o, "damage")

    def _arrived(self, o: _Out) -> None:
        """The device has the frame (served or held): its copies left the wire."""
        if o.copies:
            self._in_flight -= o.copies * o.size
            o.copies = 0
        if o.first_tx > self._delivered_tx:
            self._delivered_tx = o.first_tx

    def _advance(self, next_count: int) -> None:
        """The device has served every counter before next_count."""
        if (next_count - self._dev_next) & SEQ_COUNT_MASK >= SEQ_COUNT_MASK // 2:
            return  # an older view of the window than the one held
        now = time.monotonic()
        c = self._dev_next
        moved = c != next_count
        while c != next_count:
            o = self._out.pop(c, None)
            c = (c + 1) & SEQ_COUNT_MASK
            if o is None:
                continue
            self._arrived(o)
            o.acked = True
            if o.sends:
                self._unacked -= 1
            if o.sends == 1 and not o.measured:  # Karn: a frame sent once is measured
                o.measured = True
                rtt = now - o.first_at
                self._ordered_rtt.sample(rtt)
                if rtt > 0:
                    self._measured_rate = max(self._measured_rate, o.size / rtt)
            t = o.ticket
            if t is None or t.done:
                continue
            if t.expect is None and self._last_error != o.seq:
                t.done = True
                continue
            # served, and its reply (or the ERROR last_error names) is not here: lost on the way
            self._awaiting[o.count] = o
            self._resend(o, "reply")
        if moved:
            self._dev_next = next_count
            self._progress = now

    def _finish(self, o: _Out, reply: Frame) -> None:
        t = o.ticket
        assert t is not None
        t.done = True
        if reply.type == Msg.ERROR:
            t.error = _device_error(reply)
        elif t.expect is not None and reply.type != t.expect:
            t.error = ProtocolError(
                f"wrong reply type: the reply to {_type_name(t.type)} seq {t.seq} is "
                f"{_type_name(reply.type)} (0x{reply.type:02x}), expected "
                f"{_type_name(t.expect)} (0x{t.expect:02x})"
            )
        else:
            t.reply = reply
        self._awaiting.pop(o.count, None)

    def _copy_arrived(self, seq: int) -> _Out | None:
        """The frame a device frame speaks of (its seq as the device read it), the copy it names
        noted as arrived: every transmission before that one has reached the device or was
        lost (the line keeps order)."""
        count = seq & SEQ_COUNT_MASK
        o = self._out.get(count) or self._awaiting.get(count)
        if o is None or o.seq != seq & ~SEQ_COPY_MASK:
            return None
        copy = (seq & SEQ_COPY_MASK) >> SEQ_COPY_SHIFT
        tx = o.copy_tx.get(copy)
        if tx is not None and tx > self._delivered_tx:
            self._delivered_tx = tx
        if not o.measured and copy in o.copy_at and o.sends <= 16:
            # the copy is named, so a re-sent frame measures a round trip too (Karn's ambiguity,
            # RFC 6298 §3, does not arise: as with TCP's timestamps, RFC 7323 §4)
            o.measured = True
            self._ordered_rtt.sample(time.monotonic() - o.copy_at[copy])
        return o

    def _on_reply(self, f: Frame) -> None:
        """A reply (or a recorded ERROR) to an ordered request."""
        if f.seq & ~(SEQ_COUNT_MASK | SEQ_COPY_MASK) != self.tag:
            self.stale_replies += 1  # another session's
            return
        count = f.seq & SEQ_COUNT_MASK
        o = self._copy_arrived(f.seq)
        if o is None or o.ticket is None or o.ticket.done:
            self.stale_replies += 1  # a replayed or duplicated answer already taken
            if o is not None and o.ticket is None and f.type == Msg.ERROR:
                raise _device_error(f)  # a part of a message refused on its own
            self._advance((count + 1) & SEQ_COUNT_MASK)
            return
        self._finish(o, f)
        self._advance((count + 1) & SEQ_COUNT_MASK)

    def _on_status(self, f: Frame) -> None:
        try:
            st = Status.unpack(f.payload)
        except ValueError as exc:
            raise ProtocolError(f"{self.url}: {exc}") from exc
        if st.cause in LINK_ERRORS:
            self.damaged_requests += 1
            # the damaged copy's header often survives: when it is the frame's latest copy, that
            # frame goes again at once
            o = self._out.get(f.seq & SEQ_COUNT_MASK)
            copy = (f.seq & SEQ_COPY_MASK) >> SEQ_COPY_SHIFT
            latest = o is not None and copy == (o.sends - 1) & (SEQ_COPY_MASK >> SEQ_COPY_SHIFT)
            if o is not None and latest and o.seq == f.seq & ~SEQ_COPY_MASK and not o.held:
                self._lost(o)
        elif st.cause == Cause.DUP:
            o = self._awaiting.get(f.seq & SEQ_COUNT_MASK)
            if o is not None and o.seq == f.seq & ~SEQ_COPY_MASK and o.ticket is not None:
                raise ProtocolError(
                    f"{self.url}: the device no longer holds the reply to "
                    f"{_type_name(o.ticket.type)} seq {o.seq} (it keeps "
                    f"{self.window.records} replies)"
                )
        elif st.cause == Cause.STALE:
            self.stale_replies += 1
        if st.next & ~SEQ_COUNT_MASK != self.tag:
            return  # the window of another session (before our HELLO reached it)
        if st.cause not in LINK_ERRORS:
            self._copy_arrived(f.seq)  # the frame that made it speak came whole
        self._last_error = st.last_error & ~SEQ_COPY_MASK
        base = st.next & SEQ_COUNT_MASK
        self._advance(base)
        for i in range(1, WINDOW):
            if st.held >> i & 1:
                o = self._out.get((base + i) & SEQ_COUNT_MASK)
                if o is not None and not o.held:
                    o.held = True
                    self._arrived(o)
                    if o.queued:  # a re-send it no longer needs
                        o.queued = False
                        self._queue.remove(o)

    def _infer_losses(self) -> None:
        """Frames whose last copy went out before a transmission the device is known to have
        received: on a line that keeps bytes in order, that copy was lost (or its reply was)."""
        d = self._delivered_tx
        for o in list(self._out.values()):
            if o.sends and not o.queued and not o.held and o.last_tx < d:
                self._lost(o)
        for o in list(self._awaiting.values()):
            if not o.queued and o.last_tx < d:
                self._resend(o, "reply")

    def _missing(self) -> list[_Out]:
        """Sent frames the device has not shown it has, and served ones whose reply did not
        come, oldest first."""
        waiting = [o for o in self._out.values() if o.sends and not o.held and not o.queued]
        waiting += [o for o in self._awaiting.values() if not o.queued]
        base = self._dev_next
        return sorted(waiting, key=lambda o: (o.count - base) & SEQ_COUNT_MASK)

    def _oldest(self) -> _Out | None:
        missing = self._missing()
        return missing[0] if missing else None

    def _rto_now(self) -> float:
        """The ordered stream's time-out: the estimator's, and on a serial line never shorter
        than twice the time the bytes in flight need on the wire at its nominal pace, plus the
        floor (at 9,600 baud 8 KiB in flight take 8.5 s). On a socket the measured round trips
        carry the queueing already."""
        est = self._ordered_rtt
        on_wire = self._in_flight / self.nominal_rate if self.nominal_rate else 0.0
        return max(est.rto, 2 * on_wire + est.floor)

    def _check_timers(self) -> None:
        now = time.monotonic()
        if self._out and self._dev_next not in self._out and self._dev_next not in self._awaiting:
            # frames are cut in counter order: a device waiting for a frame the host no longer
            # has (or never had) cannot be served; say so now rather than at the budget's end
            if any((c - self._dev_next) & SEQ_COUNT_MASK < WINDOW for c in self._out):
                raise ProtocolError(
                    f"{self.url}: the device waits for frame {self._dev_next}, which this host "
                    f"does not hold; link: {self.state()}"
                )
        outstanding = [o for o in self._out.values() if o.sends] or list(self._awaiting.values())
        if not outstanding:
            self._progress = now
            return
        oldest = min(o.first_at for o in outstanding)
        # silence: nothing valid from the device for a budget while frames are out
        if now >= self._heard + self.budget and self._heard < max(o.last_at for o in outstanding):
            self._fail(
                f"nothing valid came from the device for the {self.budget:g} s budget"
                f"{self._raise_hint('budget')}"
            )
        if now >= oldest + PATIENCE * self.budget:
            self._fail(
                f"the device kept answering, but did not serve the oldest request for "
                f"{PATIENCE} budgets ({PATIENCE * self.budget:g} s){self._raise_hint('budget')}"
            )
        if now >= self._progress + self._rto_now():
            # no progress for a time-out: every frame still missing goes again (what the device
            # holds does not), oldest first; the time-out doubles (RFC 6298 §5.5) only when the
            # device said nothing meanwhile (silence), never when it answered (damage)
            missing = self._missing()
            if not missing:
                # nothing known missing, yet no progress: the frame at the device's next, even one
                # it was heard to hold (that STATUS may be older than what was lost since), goes
                # again; the device answers from where it stands
                waiting = [o for o in self._out.values() if o.sends and not o.queued]
                base = self._dev_next
                missing = sorted(waiting, key=lambda o: (o.count - base) & SEQ_COUNT_MASK)[:1]
            for o in reversed(missing):
                # not counted as a loss for the frame size: a time-out is silence, which a
                # long queue on a slow line makes too (the copy numbers show it later)
                if not o.acked and o.copies:
                    self._in_flight -= o.copies * o.size
                    o.copies = 0
                self._resend(o, "timeout")
            if missing and self._heard < self._progress:
                self._ordered_rtt.backoff()
            self._progress = now

    def _fail(self, why: str) -> None:
        o = self._oldest()
        what = (
            f"{_type_name(o.ticket.type if o.ticket else o.type & ~TYPE_MORE)} seq {o.seq}"
            if o is not None
            else "the ordered stream"
        )
        detail = ""
        if self.recent_bad:
            last = self.recent_bad[-1]
            detail = f"; last undecodable bytes: {last.raw[:80]!r} ({last.reason})"
        err = LinkTimeout(
            f"{self.url}: no reply to {what} after {o.sends if o else 0} tries: {why}{detail}; "
            f"link: {self.state()}"
        )
        for x in [*self._out.values(), *self._awaiting.values()]:
            if x.ticket is not None and not x.ticket.done:
                x.ticket.done = True
                x.ticket.error = err
        raise err

    def _step(self) -> None:
        """One turn: send what fits, wait for the next item (at most until a timer is due), take
        it, look at the timers."""
        self._check_stop()
        self._send_ready()
        now = time.monotonic()
        due = min(self._progress + self._rto_now(), self._heard + self.budget)
        item = self._next_item(max(0.0, min(due - now, STOP_POLL)))
        if item is not None:
            self._on_item(item)
            while (more := self._next_item(0.0)) is not None:
                self._on_item(more)
            self._infer_losses()
        self._check_timers()

    def _on_item(self, item: Frame | BadFrame) -> None:
        if isinstance(item, BadFrame):
            return  # counted; later frames show what it was
        self._heard = time.monotonic()
        if item.type == Msg.STATUS:
            # the window is valid whatever the seq (that of the frame it speaks of, as read)
            cause = item.payload[STATUS_CAUSE] if len(item.payload) > STATUS_CAUSE else 0
            if self._control_seq is not None and cause in LINK_ERRORS:
                self._control_got.append(f"the device reported {cause_name(cause)}")
            self._on_status(item)
            return
        if item.seq & SEQ_CONTROL:
            if item.type == Msg.ERROR and _error_code(item) in LINK_ERRORS:
                # a damaged request (its version byte, say): link damage whatever the seq
                self.damaged_requests += 1
                if self._control_seq is not None:
                    name = Err(item.payload[ERROR_CODE]).name
                    self._control_got.append(f"the device answered ERROR {name}")
            elif self._control_seq is not None and item.seq == self._control_seq:
                self._control_got.append(item)
            else:
                self.stale_replies += 1
            return
        if item.type == Msg.ERROR and _error_code(item) == Err.VERSION:
            self.damaged_requests += 1  # a damaged version byte; a peer of another version
            return  # is told by an intact frame of its version (VersionMismatch)
        if item.type == Msg.REPLY_PART:
            self._on_part(item)
            return
        self._on_reply(item)

    # ------------------------------------------------------------------ control requests

    def _control(
        self,
        type_: int,
        payload: bytes,
        expect: int,
        timeout: float | None,
        budget: float | None,
        retries: int | None,
        accept: Callable[[Frame], bool] | None,
    ) -> Frame:
        """One control request, stop-and-wait: re-sent (same seq, behind a 0x00) on damage after
        the hold-off (half a smoothed round trip, at least 20 ms and the request's own time on
        the wire: a re-send cuts the copy the device is still reading, whose report must not
        trigger the next re-send at once; never longer for more damage) and after the adaptive
        time-out otherwise, which doubles (silence); with a fixed ``timeout`` (the boot-time
        HELLO sync) once per try. Ordered replies that arrive meanwhile are taken as usual."""
        budget = self.budget if budget is None else budget
        retries = self.retries if retries is None else retries
        est = self._estimator(type_)
        frame = Frame(type_, self.next_seq(), payload)
        wire = frame.encode()
        t_start = time.monotonic()
        heard0 = self._heard = t_start
        hard_end = t_start + PATIENCE * budget
        tries = 0
        refused0 = self.refused_replies
        self._control_seq = frame.seq
        got: Frame | str | None = None
        try:
            while True:
                self.write(wire if tries == 0 else b"\0" + wire)
                sent_at = time.monotonic()
                tries += 1
                on_wire = self.wire_time(type_, len(wire)) if timeout is None else 0.0
                wait = max(est.rto, 2 * on_wire + est.floor) if timeout is None else timeout
                if timeout is None:
                    srtt = est.srtt if est.srtt is not None else 0.0
                    rate = self.line_rate or float("inf")
                    holdoff = min(wait, max(MIN_HOLDOFF, 0.5 * srtt, len(wire) / rate))
                else:
                    holdoff = timeout
                got = self._control_await(frame, expect, sent_at, sent_at + wait, holdoff, accept,
                                          lambda: min(hard_end, self._heard + budget))  # fmt: skip
                if isinstance(got, Frame):
                    reply_bytes = got.wire_size
                    self._reply_bytes[type_] = reply_bytes
                    if tries == 1 and timeout is None:
                        rtt = time.monotonic() - sent_at
                        est.sample(rtt)
                        if rtt > 0:
                            moved = (len(wire) + reply_bytes) / rtt
                            self._measured_rate = max(self._measured_rate, moved)
                    return got
                now = time.monotonic()
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
                self.retransmits += 1
        finally:
            self._control_seq = None
            self._control_got.clear()
        now = time.monotonic()
        silent = self._heard < sent_at and now >= self._heard + budget
        if retries is not None and tries > retries and now < hard_end and not silent:
            why = f"the cap of {retries} re-sends was reached"
        elif now >= hard_end and not silent and self._heard > heard0:
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
            f"{self.url}: no valid reply to {_type_name(type_)} after {tries} tries in "
            f"{now - t_start:.1f} s: {why} (last try: {got or 'no reply'}){detail}"
        )

    def _control_await(
        self,
        frame: Frame,
        expect: int,
        sent_at: float,
        deadline: float,
        holdoff: float,
        accept: Callable[[Frame], bool] | None,
        budget_end: Callable[[], float],
    ) -> Frame | str | None:
        """The reply to a control ``frame``; or why to re-send (str); or None at the deadline.
        Damage seen sooner than ``holdoff`` after the send is acted on only at ``holdoff``."""
        damage: str | None = None
        looked = False
        while True:
            self._check_stop()
            now = time.monotonic()
            end = min(deadline, budget_end())
            if damage is not None and now >= sent_at + holdoff:
                return damage
            if now >= end:
                if looked and not self._pending:
                    return damage
                looked = True
                item = self._next_item(0.0)
            else:
                until = end if damage is None else min(end, sent_at + holdoff)
                item = self._next_item(until - now)
            if item is None:
                if now >= end:
                    return damage
                continue
            if isinstance(item, BadFrame):
                damage = damage or f"damaged frame ({item.reason})"
                continue
            self._on_item(item)
            while self._control_got:
                got = self._control_got.pop(0)
                if isinstance(got, str):
                    damage = damage or got
                    continue
                if got.type == Msg.ERROR:
                    raise _device_error(got)
                if got.type != expect:
                    raise ProtocolError(
                        f"wrong reply type: the reply to {_type_name(frame.type)} seq "
                        f"{frame.seq} is {_type_name(got.type)} (0x{got.type:02x}), expected "
                        f"{_type_name(expect)} (0x{expect:02x})"
                    )
                if accept is not None and not accept(got):
                    self.stale_replies += 1
                    self.refused_replies += 1
                    continue
                return got


def _type_name(type_: int) -> str:
    base = type_ & ~TYPE_MORE if type_ & TYPE_MORE and type_ < 0x80 else type_
    return Msg(base).name if base in Msg._value2member_map_ else f"type 0x{type_:02x}"


def _error_code(item: Frame) -> int | None:
    """An ERROR's code; None when its payload is too short to hold one."""
    return item.payload[ERROR_CODE] if len(item.payload) > ERROR_CODE else None


def _device_error(reply: Frame) -> LinkError:
    if len(reply.payload) < ERROR_SIZE:
        return ProtocolError(f"ERROR frame with a {len(reply.payload)}-byte payload")
    code, offending = reply.payload[ERROR_CODE], reply.payload[ERROR_TYPE]
    name = Err(code).name if code in Err._value2member_map_ else f"UNKNOWN({code})"
    return DeviceError(code, name, reply.seq, offending)


@dataclass
class Pipe:
    """Requests submitted in order and taken back in order: what `codegen run` keeps in flight.
    ``limit``: requests awaiting their reply before `put` waits for the oldest."""

    link: Link
    limit: int = 64
    items: deque[tuple[object, Ticket]] = field(default_factory=deque)

    def put(self, key: object, ticket: Ticket) -> list[tuple[object, Ticket]]:
        """Add a request; returns the oldest ones that are done (in order)."""
        self.items.append((key, ticket))
        while len(self.items) > self.limit:
            self.link.wait(self.items[0][1])
            return self.take()
        self.link.poll()
        return self.take()

    def take(self) -> list[tuple[object, Ticket]]:
        out = []
        while self.items and self.items[0][1].done:
            out.append(self.items.popleft())
        return out

    def drain(self) -> list[tuple[object, Ticket]]:
        out: list[tuple[object, Ticket]] = []
        while self.items:
            self.link.wait(self.items[0][1])
            out += self.take()
        return out
