"""Typed link errors: time-out, closed link, protocol error, a device's ERROR, a stop request."""

from __future__ import annotations

from codegen.base.errors import CodegenError


class LinkError(CodegenError):
    """Base class for everything that can go wrong between host and device."""


class LinkTimeout(LinkError):
    """No valid reply within the time-out, after every retry."""


class LinkClosed(LinkError):
    """The serial port or socket closed (device reset, QEMU exited, cable pulled)."""


class ProtocolError(LinkError):
    """Bytes arrived but do not form a valid frame, or a reply has the wrong shape."""


class VersionMismatch(ProtocolError):
    """An intact frame of another protocol version arrived: the device runs other firmware."""


class DeviceError(LinkError):
    """The device answered ERROR."""

    def __init__(self, code: int, name: str, seq: int, offending_type: int) -> None:
        super().__init__(
            f"device answered ERROR {name} (code {code}) to seq {seq} "
            f"(message type 0x{offending_type:02x})"
        )
        self.code = code
        self.name = name
        self.seq = seq
        self.offending_type = offending_type


class Stopped(LinkError):
    """The link's stop flag was set (Ctrl-C): it stopped waiting; nothing received is lost."""


class QemuError(LinkError):
    """QEMU failed to start or exited; the message carries its stderr."""
