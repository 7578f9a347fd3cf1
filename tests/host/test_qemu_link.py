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
from elatta_host.errors import ProtocolError
from elatta_host.protocol import Frame, Msg
from elatta_host.qemu import Qemu
from fuzzframes import KINDS, make_frame

from codegen.target.firmware import FirmwareBuild

pytestmark = pytest.mark.qemu
MALFORMED = [k for k in KINDS if not k.startswith("valid") and k not in ("replay", "baud")]


def no_ring_free(f: Frame) -> Frame:
    if f.type != Msg.STATUS:
        return f
    return Frame(f.type, f.seq, f.payload[:10] + bytes(2) + f.payload[12:])


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
                # STATUS's ring_free follows how QEMU hands bytes over (the probe behind it)
                got, want = [no_ring_free(f) for f in got], [no_ring_free(f) for f in want]
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
        # a request longer than the device takes is refused by the host, not sent
        with pytest.raises(ProtocolError, match="ECHO of 2049 bytes: .* at most 2048"):
            link.request(Msg.ECHO, bytes(2049), expect=Msg.ECHO_REPLY)


def test_uart1_build_served_on_its_uart(tmp_path: Path) -> None:
    """A UART1 board build: `codegen run --qemu`'s device path (host/run.py open_device) takes
    the UART from the build's firmware.json, reaches HELLO, and INFO's board block shows what
    the start-up code left: MMU, caches and branch prediction on, no PL310 under QEMU."""
    from elatta_host.qemu import build_uart
    from elatta_host.run import DeviceSpec, open_device

    from codegen.target.firmware import FirmwareConfig, build_firmware

    fw = build_firmware(FirmwareConfig.from_board("zedboard"), tmp_path)
    assert build_uart(fw.elf) == 1
    spec = DeviceSpec("qemu0", elf=fw.elf, uart=build_uart(fw.elf), icount=False, timeout=5.0)
    with open_device(spec) as (link, _state):
        info = Device(link).hello(sync_timeout=10)
    assert info.uart == 1 and info.uart_ref_hz == 50_000_000 and info.build_id == fw.build_id
    board = info.board
    assert board is not None and board.name == "zedboard"
    assert board.sctlr_bits() == {"M": True, "C": True, "Z": True, "I": True}
    assert not board.l2_found and board.l2_control == 0  # QEMU 7.2: nothing at 0xF8F02000
    assert (board.uart_cd, board.uart_bdiv) == (62, 6)
    assert board.uart_rx_overruns == 0  # QEMU's UART holds bytes back instead of overrunning
    actual = board.actual_baud(info.uart_ref_hz)
    assert actual is not None and abs(actual - 115_200) / 115_200 < 0.02


PROBE_ABORT_MAIN = r"""
#include <stdint.h>

#include "fw_probe_print.h"
#include "fw_rt.h"
#include "fw_uart.h"

static volatile uint32_t words[2] = {0x11223344u, 0x55667788u};

int main(void)
{
    fw_uart_init();
    /* 0xC000_0000 is reserved in the Zynq map and a faulting section in fw_mmu.c's table. */
    uint64_t bad = fw_probe_read32(0xC0000000u);
    uint64_t good = fw_probe_read32((uintptr_t)&words[1]);
    /* DDR is Normal memory with SCTLR.A clear: an unaligned word load does not fault. */
    const volatile uint32_t *odd = (const volatile uint32_t *)((uintptr_t)words + 1u);
    put_u64(bad >> 32);
    put_u64(good >> 32);
    put_u64((uint32_t)good);
    put_u64(*odd);
    fw_uart_write((const uint8_t *)"\nEND\n", 5u);
    for (;;) {
    }
}
"""


def test_probe_read_survives_a_data_abort(tmp_path: Path) -> None:
    """The PL310 probe's abort path, exercised where QEMU does abort: a read of a section the
    table marks invalid (translation fault, MMU on) resumes after the load with the flag set;
    a readable word reads with the flag clear; an unaligned load from DDR works."""
    from codegen.target.firmware import FirmwareConfig, render_config
    from codegen.target.qemu_probe import link_probe, qemu_probe_lines

    inc = tmp_path / "include"
    inc.mkdir()
    (inc / "fw_config.h").write_text(render_config(FirmwareConfig(), "fw-probe", "0" * 64))
    main_c = tmp_path / "probe_main.c"
    main_c.write_text(PROBE_ABORT_MAIN)
    elf = link_probe(tmp_path / "probe.elf", [main_c], includes=[inc])
    fields = " ".join(qemu_probe_lines(elf)).split()
    assert fields == ["1", "0", str(0x55667788), str(0x88112233)]


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
    assert "board          qemu" in proc.stdout
    assert "MMU on, D-cache on, I-cache on, branch prediction on" in proc.stdout
    assert "l2 cache       absent" in proc.stdout
    assert "CD 124, BDIV 6 (read back)" in proc.stdout


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
