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

LINE_RATE = 11_520  # bytes/s at 115,200 baud, 10 bits per byte
TURN = 0.016  # s: FTDI's default latency timer


class SlowLink:
    def __init__(self, upstream_port: int, *, rate: float = LINE_RATE, turn: float = TURN) -> None:
        self.upstream_port = upstream_port
        self.rate = rate
        self.turn = turn
        self.bytes = {"to_device": 0, "to_host": 0}
        self.turns = 0
        self._last: str | None = None
        self._lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        host, _ = self.listener.accept()
        deadline = time.monotonic() + 10
        while True:
            try:
                dev = socket.create_connection(("127.0.0.1", self.upstream_port))
                break
            except OSError:
                if time.monotonic() > deadline:
                    host.close()
                    return
                time.sleep(0.05)
        for s in (host, dev):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socks += [host, dev]
        threading.Thread(target=self._pump, args=(host, dev, "to_device"), daemon=True).start()
        threading.Thread(target=self._pump, args=(dev, host, "to_host"), daemon=True).start()

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
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        for s in [*self._socks, self.listener]:
            s.close()
