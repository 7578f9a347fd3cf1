"""Device client: typed calls on top of :class:`elatta_host.transport.Link`."""

from __future__ import annotations

import time
from dataclasses import dataclass

from elatta_host.errors import DeviceError, LinkError, LinkTimeout, ProtocolError
from elatta_host.protocol import Frame, Info, Msg, baud_payload, hello_payload
from elatta_host.transport import UNCAPPED, Link

SYNC_TRY = 0.25  # s between HELLOs while the device boots
# The rate switch (docs/protocol.md, "Rate switch"): the device goes back to its old rate this
# long after BAUD_ACK unless a frame arrives whole at the new one; the host tries the new rate
# for half of it, then the old one.
REVERT_MS = 2000
# The fastest rate every USB-UART bridge of the board presets carries (FTDI FT2232H, Silicon Labs
# CP2104, Cypress CY7C64225; Linux termios B921600): the default of --baud.
BRIDGE_RATE = 921_600
# s after BAUD_ACK before the first frame at the new rate: the device sends the ACK's last bytes
# and resets the UART (its RX FIFO with it) in well under this
SWITCH_GUARD = 0.02


@dataclass(frozen=True)
class BaudSwitch:
    """How a rate switch ended: ``baud`` is the rate both sides use now."""

    asked: int
    baud: int
    switched: bool
    note: str


def default_baud(rates: tuple[int, ...], build_baud: int) -> int:
    """The fastest rate of the device's table that common USB-UART bridges carry (at most
    BRIDGE_RATE), else the build's own."""
    fit = [r for r in rates if r <= BRIDGE_RATE]
    return max(fit) if fit else build_baud


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

        nonce = hello_payload(session)
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
        self.link.configure(self._info)
        return self._info

    def switch_baud(self, rate: int, *, revert_ms: int = REVERT_MS) -> BaudSwitch:
        """Agree on ``rate`` (as esptool's change-baudrate does): BAUD at the current rate,
        BAUD_ACK back at it, both sides switch, then a HELLO at the new rate confirms it. If no
        HELLO gets through within half the revert time (a bridge that cannot carry the rate),
        the host goes back to the old rate, waits out the device's revert time and says HELLO
        there. Nothing ordered may be in flight."""
        info = self.info
        now = info.link.baud if info.link is not None else info.baud
        rates = info.link.rates if info.link is not None else ()
        if rate == now:
            return BaudSwitch(rate, now, False, f"already at {now} baud")
        if rate not in rates:
            offered = ", ".join(str(r) for r in rates) or "none (a firmware without the switch)"
            raise ProtocolError(
                f"--baud {rate}: the device's UART cannot switch to it; its rates are {offered}"
            )
        self.link.flush()
        host_old = self.link.baud
        try:
            self.link.request(Msg.BAUD, baud_payload(rate, revert_ms), expect=Msg.BAUD_ACK)
        except DeviceError as exc:
            return BaudSwitch(rate, now, False, f"the device refused {rate} baud: {exc}")
        except LinkTimeout:
            pass  # BAUD_ACK lost: the device may have switched; the HELLOs below tell
        acked = time.monotonic()
        self.link.drain_output()
        time.sleep(SWITCH_GUARD)  # the device empties its TX FIFO, then reprograms the UART
        self.link.set_baud(rate)
        try:
            self.hello(sync_timeout=revert_ms / 2000)
            return BaudSwitch(rate, rate, True, f"switched to {rate} baud")
        except LinkError:
            pass
        # Not confirmed: the device goes back once its revert time has passed without a whole
        # frame (a bridge that cannot carry the rate), or stays (the INFO was lost on a noisy
        # line). Look for it at the old rate, then at the new one, within the link's budget.
        time.sleep(max(0.0, acked + revert_ms / 1000 + 0.1 - time.monotonic()))
        end = time.monotonic() + self.link.budget
        last: LinkError | None = None
        while time.monotonic() < end:
            for r, host_rate in ((now, host_old), (rate, rate)):
                self.link.set_baud(host_rate)
                try:
                    info = self.hello(sync_timeout=max(2.0, revert_ms / 1000))
                except LinkError as exc:
                    last = exc
                    continue
                got = info.link.baud if info.link is not None else r
                note = (
                    f"switched to {rate} baud (the first confirmation was lost)"
                    if got == rate
                    else f"no frame got through at {rate} baud within {revert_ms / 2000:g} s "
                    f"(a USB-UART bridge that cannot carry it?); both sides went back to {now} "
                    "baud"
                )
                return BaudSwitch(rate, got, got == rate, note)
        assert last is not None
        raise last

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
