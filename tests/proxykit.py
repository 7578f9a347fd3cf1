"""What the tests' TCP proxies between the host and QEMU's serial socket share (tests/faultproxy.py
damages frames, tests/slowlink.py paces bytes like a real UART): one listener on 127.0.0.1, one
host connection, the upstream connection retried while QEMU starts, a pump thread per direction,
and both sockets shut when either side ends."""

from __future__ import annotations

import socket
import threading
import time


class Proxy:
    """Subclasses implement ``_pump(src, dst, direction)``; ``direction`` is "to_device" or
    "to_host". ``_first_to_device`` is sent upstream before any byte of the host's."""

    _first_to_device = b""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _connect_upstream(self) -> socket.socket:
        deadline = time.monotonic() + 10
        while True:
            try:
                return socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _serve(self) -> None:
        host, _ = self.listener.accept()
        try:
            dev = self._connect_upstream()
        except OSError:
            host.close()
            return
        for s in (host, dev):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socks += [host, dev]
        if self._first_to_device:
            dev.sendall(self._first_to_device)
        threading.Thread(target=self._pump, args=(host, dev, "to_device"), daemon=True).start()
        threading.Thread(target=self._pump, args=(dev, host, "to_host"), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, direction: str) -> None:
        raise NotImplementedError

    @staticmethod
    def _shut(*socks: socket.socket) -> None:
        """Either side ending ends the other: the peer sees the close as a real line would."""
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        for s in [*self._socks, self.listener]:
            s.close()
