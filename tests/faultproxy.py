"""A seeded TCP proxy that damages frames between the host and QEMU (the link-fault test).

Each direction is cut at the 0x00 delimiters; a frame is damaged with probability ``rate``:
dropped, one byte dropped, one bit flipped, sent twice, or held back for ``delay`` seconds (the
stream stays in order, as on a serial line). Bounded: one fault per frame at most, delays at
most ``delay``, 127.0.0.1 only. Counts per kind are kept for the test's assertions, and with
``log`` every frame sent towards the device as it arrived from the host; a ``preamble`` (line
noise) reaches the device before the host's first byte.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections import Counter

from proxykit import Proxy

KINDS = ("drop", "drop_byte", "flip", "duplicate", "delay")


class FaultProxy(Proxy):
    def __init__(
        self,
        upstream_port: int,
        *,
        seed: int,
        rate: float,
        delay: float = 0.3,
        log: bool = False,
        preamble: bytes = b"",
    ) -> None:
        """``preamble``: bytes sent to the device before anything of the host's (line noise
        on the wire before a session starts)."""
        self.preamble = preamble
        self._first_to_device = preamble
        self.log: list[bytes] | None = [] if log else None
        self.rate = rate
        self.delay = delay
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.frames: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        super().__init__(upstream_port)

    def _damage(self, frame: bytes, direction: str) -> list[bytes]:
        with self.lock:
            self.frames[direction] += 1
            if self.log is not None and direction == "to_device":
                self.log.append(frame)
            if self.rng.random() >= self.rate:
                return [frame]
            kind = self.rng.choice(KINDS)
            self.faults[kind] += 1
            pos = self.rng.randrange(len(frame))
            bit = 1 << self.rng.randrange(8)
        if kind == "drop":
            return []
        if kind == "drop_byte":
            return [frame[:pos] + frame[pos + 1 :]]
        if kind == "flip":
            return [frame[:pos] + bytes([frame[pos] ^ bit]) + frame[pos + 1 :]]
        if kind == "duplicate":
            return [frame, frame]
        time.sleep(self.delay)
        return [frame]

    def _pump(self, src: socket.socket, dst: socket.socket, direction: str) -> None:
        buf = b""
        try:
            while data := src.recv(65536):
                buf += data
                while (end := buf.find(b"\0")) >= 0:
                    frame, buf = buf[: end + 1], buf[end + 1 :]
                    for out in self._damage(frame, direction):
                        dst.sendall(out)
        except OSError:
            pass
        finally:
            self._shut(src, dst)
