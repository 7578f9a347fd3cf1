"""Device client: typed calls on top of :class:`elatta_host.transport.Link`."""

from __future__ import annotations

from elatta_host.errors import ProtocolError
from elatta_host.protocol import Info, Msg
from elatta_host.transport import Link


class Device:
    def __init__(self, link: Link) -> None:
        self.link = link
        self._info: Info | None = None

    def hello(self, *, sync_timeout: float | None = None) -> Info:
        """HELLO -> INFO. With ``sync_timeout``, retry every 0.25 s until the device answers or
        the time is up: right after boot (QEMU, a board just reset) the UART may not yet be
        enabled and the first frames are lost."""
        if sync_timeout is None:
            reply = self.link.request(Msg.HELLO, expect=Msg.INFO)
        else:
            tries = max(1, int(sync_timeout / 0.25))
            reply = self.link.request(Msg.HELLO, expect=Msg.INFO, timeout=0.25, retries=tries - 1)
        try:
            self._info = Info.unpack(reply.payload)
        except ValueError as exc:
            raise ProtocolError(str(exc)) from exc
        return self._info

    @property
    def info(self) -> Info:
        return self._info if self._info is not None else self.hello()

    def echo(self, payload: bytes) -> bytes:
        reply = self.link.request(Msg.ECHO, payload, expect=Msg.ECHO_REPLY)
        if reply.payload != payload:
            raise ProtocolError(
                f"ECHO of {len(payload)} bytes came back as {len(reply.payload)} different bytes"
            )
        return reply.payload
