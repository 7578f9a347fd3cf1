"""A TCP proxy with a real UART's pace between the host and QEMU's serial socket: each direction
carries at most ``rate`` bytes/s (115,200 baud, 8N1: 11,520 bytes/s), and data that turns the
link around (the first bytes in one direction after the other one spoke) waits ``turn``
seconds first, as a USB-UART's latency timer makes it (FTDI's default: 16 ms). QEMU's socket
hides both: it moves a frame in microseconds. 127.0.0.1 only; bytes are never changed, lost
or reordered."""

from __future__ import annotations

import socket
import threading
import time

from proxykit import Proxy

LINE_RATE = 11_520  # bytes/s at 115,200 baud, 10 bits per byte
TURN = 0.016  # s: FTDI's default latency timer


class SlowLink(Proxy):
    def __init__(self, upstream_port: int, *, rate: float = LINE_RATE, turn: float = TURN) -> None:
        self.rate = rate
        self.turn = turn
        self.bytes = {"to_device": 0, "to_host": 0}
        self.turns = 0
        self._last: str | None = None
        self._lock = threading.Lock()
        super().__init__(upstream_port)

    def _pump(self, src: socket.socket, dst: socket.socket, direction: str) -> None:
        # the line's own clock: a byte leaves no sooner than the one before it plus 1/rate
        free_at = time.monotonic()
        try:
            while data := src.recv(4096):
                with self._lock:
                    turned = self._last not in (None, direction)
                    self._last = direction
                    self.turns += turned
                now = time.monotonic()
                free_at = max(free_at, now) + (self.turn if turned else 0.0)
                for i in range(0, len(data), 64):  # a FIFO's worth at a time
                    part = data[i : i + 64]
                    free_at += len(part) / self.rate
                    if (wait := free_at - time.monotonic()) > 0:
                        time.sleep(wait)
                    dst.sendall(part)
                    self.bytes[direction] += len(part)
        except OSError:
            pass
        finally:
            self._shut(src, dst)
