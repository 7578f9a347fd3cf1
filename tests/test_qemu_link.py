"""End to end through QEMU's xilinx-zynq-a9: boot, HELLO/INFO, >= 1,000 random echoes with
>= 100 malformed frames interleaved (each answered exactly as the spec model says), then clean
echoes again. One QEMU boot; runs in `make test`."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from devmodel import DeviceModel
from elatta_host.device import Device
from elatta_host.errors import DeviceError
from elatta_host.protocol import Frame, Msg
from elatta_host.qemu import Qemu
from fuzzframes import KINDS, make_frame

from codegen.target.firmware import FirmwareBuild

pytestmark = pytest.mark.qemu
MALFORMED = [k for k in KINDS if not k.startswith("valid") and k != "replay"]


def test_qemu_echo_and_malformed(firmware: FirmwareBuild) -> None:
    rng = random.Random(7)
    # icount off: this test checks bytes, not timing, and runs faster without it.
    with Qemu(firmware.elf, icount=False, link_timeout=5.0) as link:
        dev = Device(link)
        dev.hello(sync_timeout=10)
        # Sync tries may or may not have reached the device (its UART comes up during them);
        # a second HELLO, once in sync, gives the exact counters to start the model from.
        info = dev.hello()
        synced = link.retransmits
        assert info.build_id == firmware.build_id
        assert info.max_payload == 2048 and info.uart == 0 and info.baud == 115200
        assert 0 < info.stack_used < info.stack_size == 16384
        # From here the model tracks the device's counters exactly.
        model = DeviceModel(
            max_payload=info.max_payload,
            build_id=info.build_id,
            frames_ok=info.frames_ok,
            frames_err=info.frames_err,
            frames_dropped=info.frames_dropped,
            session=info.session,
        )
        assert info.session == link.session
        echoes = malformed = 0
        for i in range(1200):
            if i % 10 == 5:
                kind = MALFORMED[malformed % len(MALFORMED)]
                wire = make_frame(rng, kind, rng.getrandbits(32), info.max_payload)
                want = model.feed(wire)
                link.write(wire)
                # A valid ECHO right behind: everything before its reply answers the bad frame.
                probe = Frame(Msg.ECHO, link.next_seq(), b"probe")
                model.feed(probe.encode())
                link.send(probe)
                got = []
                while (reply := link.recv(5.0)) is not None and reply.seq != probe.seq:
                    got.append(reply)
                assert reply == Frame(Msg.ECHO_REPLY, probe.seq, b"probe"), (kind, wire[:40])
                assert got == want, f"malformed frame {malformed} ({kind}): {got} != {want}"
                malformed += 1
            else:
                n = min(info.max_payload, int(2 ** rng.uniform(0, 11.01)) - 1)
                payload = rng.randbytes(n)
                model.feed(Frame(Msg.ECHO, 0, payload).encode())
                assert dev.echo(payload) == payload
                echoes += 1
        assert echoes >= 1000 and malformed >= 100
        assert link.bad_frames == 0
        # Long payloads still echo intact after all that, and the counters agree with the model.
        for n in (0, 1, 254, 255, 2047, 2048):
            model.feed(Frame(Msg.ECHO, 0, b"").encode())
            payload = rng.randbytes(n)
            assert dev.echo(payload) == payload
        model.feed(Frame(Msg.HELLO, 0, link.session.to_bytes(4, "little")).encode())
        after = dev.hello()
        # A request re-sent after a time-out (a loaded machine) is served twice by the device,
        # the second copy possibly after the INFO that counts (a re-sent final HELLO): every
        # frame the model served is counted, and every one beyond it is a re-sent copy.
        resent = link.retransmits - synced
        assert model.frames_ok <= after.frames_ok <= model.frames_ok + resent
        assert (after.frames_err, after.frames_dropped) == (model.frames_err, model.frames_dropped)
        with pytest.raises(DeviceError, match="TOO_LONG"):
            link.request(Msg.ECHO, bytes(2049), expect=Msg.ECHO_REPLY, retry_errors=frozenset())


def test_cli_device_info(firmware: FirmwareBuild) -> None:
    """`codegen device info --qemu` boots, syncs and prints INFO (how fast is the bench's
    business: under load the start-up budget, not a test's stopwatch, decides)."""
    proc = subprocess.run(
        [sys.executable, "-m", "codegen", "device", "info", "--qemu", str(firmware.elf)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"firmware       {firmware.build_id}" in proc.stdout
    assert "UART0 (0xE0000000), 115200 baud" in proc.stdout


def test_cli_device_info_without_qemu(firmware: FirmwareBuild) -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    proc = subprocess.run(
        [sys.executable, "-m", "codegen", "device", "info", "--qemu", str(firmware.elf)],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "qemu-system-arm not found" in proc.stderr
    assert "install the Debian package qemu-system-arm" in proc.stderr


def test_cli_device_info_no_device() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "codegen", "device", "info", "--port", "/dev/nonexistent-tty"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "cannot open /dev/nonexistent-tty" in proc.stderr
