"""Models of the line between the host and a device, as TCP proxies in front of QEMU's serial
socket (which moves a frame in microseconds and never loses a byte): what `codegen bench`
measures the link through, and what the link tests run against. 127.0.0.1 only.

`UsbUart`: a USB-UART bridge. Each direction carries at most ``rate`` bytes/s (the line: 8N1,
10 bits a byte), both directions at once. Device-to-host bytes wait in the bridge until a USB
packet is full or its latency timer runs out (FTDI application note AN232B-04, "Data
Throughput, Latency and Handshaking": a packet goes to the host when 62 data bytes have
gathered or the latency timer, 16 ms by default, expires).

`ChunkFaults`: a noisy line. Each direction is cut into chunks of up to ``chunk`` bytes as they
arrive; each chunk independently, with probability ``rate`` per fault, gets a bit flipped, is
dropped, is sent twice, or is held back ``delay`` seconds (the stream stays in order, as on a
serial line). Seeded.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable

LATENCY_TIMER = 0.016  # s: FTDI's default latency timer (AN232B-04)
USB_PACKET = 62  # data bytes of a full-speed USB packet from an FTDI bridge (64 less 2 status)


def line_rate(baud: int) -> float:
    """Bytes/s of an 8N1 line: 10 bits a byte."""
    return baud / 10.0


class _Proxy:
    """One listener, one host connection, the upstream connected (retried while QEMU starts), a
    pump thread per direction; either side's end ends the other."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self._socks: list[socket.socket] = []
        self._closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def _connect_upstream(self) -> socket.socket:
        deadline = time.monotonic() + 30
        while True:
            try:
                return socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                if time.monotonic() > deadline or self._closed.is_set():
                    raise
                time.sleep(0.05)

    def _serve(self) -> None:
        try:
            host, _ = self.listener.accept()
        except OSError:
            return
        try:
            dev = self._connect_upstream()
        except OSError:
            host.close()
            return
        for s in (host, dev):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socks += [host, dev]
        threading.Thread(target=self._run, args=(host, dev, "to_device"), daemon=True).start()
        threading.Thread(target=self._run, args=(dev, host, "to_host"), daemon=True).start()

    def _run(self, src: socket.socket, dst: socket.socket, direction: str) -> None:
        try:
            self._pump(src, dst, direction)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _pump(self, src: socket.socket, dst: socket.socket, direction: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._closed.set()
        for s in [*self._socks, self.listener]:
            s.close()

    def __enter__(self) -> _Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class UsbUart(_Proxy):
    """A USB-UART bridge at ``baud`` (8N1) with a ``latency`` timer on device-to-host bytes."""

    def __init__(self, upstream_port: int, *, baud: int, latency: float = LATENCY_TIMER) -> None:
        self.rate = line_rate(baud)
        self.latency = latency
        self.bytes: Counter[str] = Counter()
        self.packets = 0
        super().__init__(upstream_port)

    def _pump(self, src: socket.socket, dst: socket.socket, direction: str) -> None:
        if direction == "to_device":
            self._paced(src, dst.sendall, direction)
            return
        # device -> bridge at the line's pace; bridge -> host in USB packets
        held = bytearray()
        lock = threading.Condition()
        done = threading.Event()

        def into_bridge(data: bytes) -> None:
            with lock:
                held.extend(data)
                lock.notify()

        def to_usb() -> None:
            # a byte that finds the bridge's buffer empty starts the timer; the buffer goes out
            # as a packet once 62 bytes have gathered or the timer has run out (the worst case
            # of AN232B-04: a short reply always waits the whole latency)
            started = 0.0
            while True:
                with lock:
                    while not held and not done.is_set():
                        lock.wait(0.05)
                    if not held:
                        return
                    if not started:
                        started = time.monotonic()
                    while len(held) < USB_PACKET and not done.is_set():
                        left = started + self.latency - time.monotonic()
                        if left <= 0:
                            break
                        lock.wait(left)
                    packet = bytes(held[:USB_PACKET])
                    del held[:USB_PACKET]
                    started = time.monotonic() if held else 0.0
                try:
                    dst.sendall(packet)
                except OSError:
                    return
                self.packets += 1

        usb = threading.Thread(target=to_usb, daemon=True)
        usb.start()
        try:
            self._paced(src, into_bridge, direction)
        finally:
            done.set()
            usb.join(1.0)

    def _paced(self, src: socket.socket, out: Callable[[bytes], None], direction: str) -> None:
        """Bytes leave no sooner than the byte before them plus 1/rate (the line's clock)."""
        free_at = time.monotonic()
        while data := src.recv(4096):
            free_at = max(free_at, time.monotonic())
            for i in range(0, len(data), 64):
                part = data[i : i + 64]
                free_at += len(part) / self.rate
                if (wait := free_at - time.monotonic()) > 0:
                    time.sleep(wait)
                out(part)
                self.bytes[direction] += len(part)


FAULTS = ("flip", "drop", "duplicate", "delay")


class ChunkFaults(_Proxy):
    """A line that damages each chunk of up to ``chunk`` bytes with probability ``rate`` for each
    of four faults (bit flip, drop, duplicate, delay of ``delay`` s), both directions."""

    def __init__(
        self,
        upstream_port: int,
        *,
        seed: int,
        rate: float,
        chunk: int = 256,
        delay: float = 0.05,
    ) -> None:
        self.rate = rate
        self.chunk = chunk
        self.delay = delay
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.chunks: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        super().__init__(upstream_port)

    def _damage(self, data: bytes) -> tuple[list[bytes], float]:
        with self.lock:
            out, hold = [data], 0.0
            for kind in FAULTS:
                if self.rng.random() >= self.rate:
                    continue
                self.faults[kind] += 1
                if kind == "flip":
                    pos = self.rng.randrange(len(data))
                    bit = 1 << self.rng.randrange(8)
                    out = [d[:pos] + bytes([d[pos] ^ bit]) + d[pos + 1 :] if d else d for d in out]
                elif kind == "drop":
                    out = []
                elif kind == "duplicate":
                    out = out + out
                else:
                    hold = self.delay
            return out, hold

    def _pump(self, src: socket.socket, dst: socket.socket, direction: str) -> None:
        while data := src.recv(self.chunk):
            with self.lock:
                self.chunks[direction] += 1
            out, hold = self._damage(data)
            if hold:
                time.sleep(hold)
            for part in out:
                dst.sendall(part)
