"""Serial transport over ``serial.serial_for_url``: ``socket://127.0.0.1:PORT`` (QEMU),
``/dev/ttyUSB1`` (a board), ``loop://`` (tests) all work the same way.

One request outstanding at a time; replies are matched by sequence number; a time-out re-sends
the same frame with the same ``seq`` (docs/protocol.md, "Host rules").
"""

from __future__ import annotations

import select
import socket
import time
from collections import deque
from types import TracebackType

import serial
from elatta_host.errors import DeviceError, LinkClosed, LinkError, LinkTimeout, ProtocolError
from elatta_host.protocol import BadFrame, Err, Frame, FrameDecoder, Msg

# ERROR codes that say the request frame was damaged on the link, not that it was wrong: the
# host re-sends the same frame (same seq); the device's replay rule makes that safe.
LINK_ERRORS: frozenset[int] = frozenset(
    {Err.CRC, Err.SHORT, Err.LENGTH, Err.TOO_LONG, Err.COBS, Err.VERSION}
)


class Link:
    def __init__(
        self,
        url: str,
        *,
        baud: int = 115_200,
        timeout: float = 2.0,
        retries: int = 3,
        open_timeout: float = 5.0,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.retries = retries
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
        self.bad_frames = 0
        self.retransmits = 0  # requests re-sent after a time-out or a damage ERROR (same seq)
        self.damaged_requests = 0  # requests the device answered with one of retry_errors
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

    def recv(self, timeout: float) -> Frame | None:
        """Next valid frame, or None after ``timeout`` seconds. Bad chunks are counted."""
        deadline = time.monotonic() + timeout
        while True:
            while self._pending:
                item = self._pending.popleft()
                if isinstance(item, Frame):
                    return item
                self.bad_frames += 1
                self.recent_bad.append(item)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            data = self._read_some(left)
            if data:
                self._pending.extend(self._decoder.feed(data))

    def request(
        self,
        type_: int,
        payload: bytes = b"",
        *,
        expect: int,
        timeout: float | None = None,
        retries: int | None = None,
        retry_errors: frozenset[int] = frozenset(),
    ) -> Frame:
        """Send a request and return the reply of type ``expect`` with the same seq.

        ``retry_errors``: ERROR codes that mean the request was damaged on the way (e.g.
        `LINK_ERRORS`); they re-send the same frame, like a time-out, instead of raising."""
        timeout = self.timeout if timeout is None else timeout
        retries = self.retries if retries is None else retries
        frame = Frame(type_, self.next_seq(), payload)
        for attempt in range(retries + 1):
            if attempt:
                self.retransmits += 1
            self.send(frame)
            deadline = time.monotonic() + timeout
            while (left := deadline - time.monotonic()) > 0:
                reply = self.recv(left)
                if reply is None:
                    break
                if reply.seq != frame.seq:
                    continue  # late answer to an earlier request that timed out
                if reply.type == Msg.ERROR:
                    if reply.payload[:1] and reply.payload[0] in retry_errors:
                        self.damaged_requests += 1
                        break  # same frame, same seq again (docs/protocol.md, "Host rules")
                    raise _device_error(reply)
                if reply.type != expect:
                    raise ProtocolError(
                        f"reply to seq {frame.seq} has type 0x{reply.type:02x}, "
                        f"expected 0x{expect:02x}"
                    )
                return reply
        detail = ""
        if self.recent_bad:
            last = self.recent_bad[-1]
            detail = f"; last undecodable bytes: {last.raw[:80]!r} ({last.reason})"
        raise LinkTimeout(
            f"{self.url}: no reply to {_type_name(type_)} seq {frame.seq} after "
            f"{retries + 1} tries of {timeout:g} s{detail}"
        )


def _type_name(type_: int) -> str:
    return Msg(type_).name if type_ in Msg._value2member_map_ else f"type 0x{type_:02x}"


def _device_error(reply: Frame) -> LinkError:
    if len(reply.payload) < 2:
        return ProtocolError(f"ERROR frame with a {len(reply.payload)}-byte payload")
    code, offending = reply.payload[0], reply.payload[1]
    name = Err(code).name if code in Err._value2member_map_ else f"UNKNOWN({code})"
    return DeviceError(code, name, reply.seq, offending)
