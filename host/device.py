"""Device client: typed calls on top of :class:`elatta_host.transport.Link`."""

from __future__ import annotations

import struct

from elatta_host.errors import ProtocolError
from elatta_host.protocol import Frame, Info, Msg
from elatta_host.transport import UNCAPPED, Link

SYNC_TRY = 0.25  # s between HELLOs while the device boots


class Device:
    def __init__(self, link: Link) -> None:
        self.link = link
        self._info: Info | None = None

    def hello(self, *, sync_timeout: float | None = None) -> Info:
        """HELLO(session nonce) -> INFO. The INFO must echo this link's session: an INFO that
        does not (a late answer to another session's HELLO with the same seq) is not taken as
        the answer, so once this returns the device keys its replay record by our session.
        With ``sync_timeout``, retry every 0.25 s until the device answers or the time is up:
        right after boot (QEMU, a board just reset) the UART may not yet be enabled and the
        first frames are lost."""
        session = self.link.session

        def ours(reply: Frame) -> bool:
            try:
                return Info.unpack(reply.payload).session == session
            except ValueError:
                return True  # malformed: taken, and refused below with the reason

        nonce = struct.pack("<I", session)
        if sync_timeout is None:
            reply = self.link.request(Msg.HELLO, nonce, expect=Msg.INFO, accept=ours)
        else:
            reply = self.link.request(
                Msg.HELLO,
                nonce,
                expect=Msg.INFO,
                timeout=SYNC_TRY,
                budget=max(sync_timeout, SYNC_TRY),
                retries=UNCAPPED,  # the sync time alone ends it, whatever the link's cap
                accept=ours,
            )
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
