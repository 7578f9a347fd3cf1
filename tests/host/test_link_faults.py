"""Runs that survive a bad link and a crash, and never lose or misattribute a result.

Through the noisy-line model (`elatta_host.linkmodel.ChunkFaults`: each chunk of the stream
flipped, dropped, duplicated or delayed, both directions) between the host and QEMU's serial
socket, `codegen run`'s defaults complete without --resume, every sample answered exactly once
and bit-exact; the same through a USB-UART model (`UsbUart`); a rate switch is confirmed, or
undone by both sides when the line cannot carry it; Ctrl-C keeps every result and prints the
command that resumes; a new session on a device that is still up is never answered from the
previous session's records; --resume refuses instead of deleting results; QEMU does not outlive
a host killed with SIGTERM or SIGKILL. The longer runs are slow tests."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest
from elatta_host.device import Device
from elatta_host.errors import LinkClosed, LinkTimeout, ProtocolError, VersionMismatch
from elatta_host.linkmodel import ChunkFaults, UsbUart
from elatta_host.plan import Plan, RunError, make_plan
from elatta_host.protocol import SEQ_COUNT_MASK, Frame, FrameDecoder, Msg
from elatta_host.report import format_summary
from elatta_host.run import DeviceSpec, execute, read_results, what_failed
from elatta_host.transport import Link
from faultproxy import FaultProxy
from qemukit import check_complete, start_qemu, wait_listening
from repopaths import ROOT

from codegen.data.streams import StreamSpec

pytestmark = pytest.mark.qemu
MODE = ("continual_bounded",)


class _Line(Protocol):
    port: int

    def close(self) -> None: ...


L = TypeVar("L", bound=_Line)


def run_through_line(
    plan: Plan, build_dir: Path, out: Path, make_line: Callable[[int], L], **spec: Any
) -> tuple[dict, L]:  # type: ignore[type-arg]
    """``plan`` run by ``codegen run``'s executor on a QEMU behind the line ``make_line(port)``
    makes (a proxy with ``port`` and ``close``), with ``spec``'s device settings (else the
    defaults); the run must end without errors, every sample recorded once. Returns the report
    and the line."""
    proc, qport = start_qemu(build_dir / "fw.elf")
    line = make_line(qport)
    try:
        url = f"socket://127.0.0.1:{line.port}"
        got = execute(plan, [DeviceSpec("line", url=url, **spec)], out, resume=False,
                      target={"kind": "qemu"}, progress=False)  # fmt: skip
    finally:
        line.close()
        proc.kill()
        proc.wait()
    assert got.errors == (), got.errors
    check_complete(got.report, out, plan.total)
    return got.report, line


def through_proxy(
    plan: Plan, build_dir: Path, out: Path, *, rate: float, seed: int
) -> tuple[dict, ChunkFaults]:  # type: ignore[type-arg]
    """One run of ``plan`` with default link settings through a line damaging each chunk with
    probability ``rate`` for each of four faults; returns the report and the line (its
    counts)."""
    report, line = run_through_line(
        plan, build_dir, out, lambda port: ChunkFaults(port, seed=seed, rate=rate)
    )
    assert report["complete"] and report["run"]["resumed_from"] == 0
    chunks = sum(line.chunks.values())
    assert sum(line.faults.values()) >= rate * chunks, (line.faults, line.chunks)
    run = report["run"]
    print(
        f"\n{rate:.0%} faults: {dict(line.faults)} of {chunks} chunks; "
        f"{run['samples_per_s']} samples/s, {run['retransmits']} re-sends "
        f"({run['resends_per_sample']} per sample), {run['replayed']} replays"
    )
    return report, line


def test_faults_5_percent_with_default_settings(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    build_dir, data = kws_build
    plan = make_plan(build_dir, data, MODE, 100)
    report, line = through_proxy(plan, build_dir, tmp_path / "r", rate=0.05, seed=14)
    assert len(line.faults) == 4, line.faults
    run = report["run"]
    assert run["retransmits"] > 0  # frames were lost: nothing completes without a re-send
    assert run["replayed"] is not None and not run["replayed_unknown"]
    assert format_summary(report).startswith("BIT-EXACT: 100 results compared, 0 mismatches")


# QEMU writes its UART's bytes to the socket one at a time, so a reply reaches the line in
# chunks of a few bytes, each damaged on its own: a RESULT sent whole may never come through, and
# these runs finish because the host asks for it in parts (docs/protocol.md, "Replies in parts").
# The audio runs are short (some 32 KB a clip, about 10-20 s a clip on this line).
@pytest.mark.parametrize(
    ("input_kind", "rate", "limit", "seed"),
    [
        ("features", 0.20, 30, 2026),
        ("features", 0.20, 100, 7),
        ("pcm", 0.10, 6, 2026),
        ("pcm", 0.10, 10, 7),
    ],
)
def test_heavy_faults_with_default_settings(
    kws_build: tuple[Path, Path],
    tmp_path: Path,
    input_kind: str,
    rate: float,
    limit: int,
    seed: int,
) -> None:
    """One chunk in five damaged by each fault (features), one in ten (audio: some 32 KB a
    clip): the windowed link, frames cut to what the line carries and re-sends on evidence let
    the run finish by itself, every sample once and bit-exact."""
    build_dir, data = kws_build
    plan = make_plan(build_dir, data, MODE, limit, input_kind=input_kind)
    through_proxy(plan, build_dir, tmp_path / "r", rate=rate, seed=seed)


def test_session_behind_a_mebibyte_of_line_noise(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """1 MiB of random bytes reaches the device before the session's first HELLO: the device
    answers thousands of STATUS damage reports while it reads them; the HELLO sync waits on its
    --budget (the reports show progress) and re-sends once per try, not once per report, then
    the run completes with default settings, every sample once and bit-exact."""
    import random

    build_dir, data = kws_build
    plan = make_plan(build_dir, data, MODE, 20)
    noise = random.Random(26).randbytes(1 << 20)
    report, proxy = run_through_line(
        plan,
        build_dir,
        tmp_path / "r",
        lambda port: FaultProxy(port, seed=0, rate=0.0, log=True, preamble=noise),
    )
    assert proxy.log is not None
    sent = [f for chunk in proxy.log for f in FrameDecoder().feed(chunk) if isinstance(f, Frame)]
    hellos = sum(f.type == Msg.HELLO for f in sent)
    errors = report["run"]["workers"][0]["damaged"]
    # the protocol's pacing, not a speed: HELLOs are one per try, never one per ERROR
    assert errors > 100 and hellos < errors, (hellos, errors)


@pytest.mark.parametrize(
    ("input_kind", "wire", "baud"),
    [
        ("features", "raw", 115_200),
        ("pcm", "adpcm", 115_200),
        pytest.param("pcm", "raw", 921_600, marks=pytest.mark.slow),
    ],
)
def test_run_through_a_usb_uart(
    kws_build: tuple[Path, Path], tmp_path: Path, input_kind: str, wire: str, baud: int
) -> None:
    """The line a board has (`UsbUart`: the line's pace both ways, device-to-host bytes held by
    the bridge's 16 ms latency timer); default settings, complete and bit-exact. How fast: the
    bench's `audio_realtime_factor` and `features_per_s_115200`."""
    build_dir, data = kws_build
    plan = make_plan(build_dir, data, MODE, 10, input_kind=input_kind, wire=wire)
    report, line = run_through_line(
        plan, build_dir, tmp_path / "r", lambda port: UsbUart(port, baud=baud)
    )
    assert line.packets > 0 and line.bytes["to_device"] > 0
    run = report["run"]
    print(f"\n{baud} baud ({input_kind}, {wire}): {dict(line.bytes)}; {run['samples_per_s']}/s")


def test_rate_switch_confirmed_and_reported(kws_build: tuple[Path, Path], tmp_path: Path) -> None:
    """--baud 921600 on a device that boots at 115,200: BAUD, BAUD_ACK, HELLO at the new rate;
    INFO then reports the rate programmed (its link block and the UART's divisors, read back),
    and the run completes at it."""
    build_dir, data = kws_build
    plan = make_plan(build_dir, data, MODE, 10)
    proc, qport = start_qemu(build_dir / "fw.elf")
    try:
        wait_listening(qport)
        spec = DeviceSpec("port0", url=f"socket://127.0.0.1:{qport}", baud_switch=921_600)
        got = execute(plan, [spec], tmp_path / "r", resume=False, target={"kind": "qemu"},
                      progress=False)  # fmt: skip
        with Link(f"socket://127.0.0.1:{qport}") as link:
            info = Device(link).hello(sync_timeout=10)
    finally:
        proc.kill()
        proc.wait()
    assert got.errors == (), got.errors
    check_complete(got.report, tmp_path / "r", plan.total)
    assert got.report["run"]["workers"][0]["baud"] == 921_600
    assert info.link is not None and info.link.baud == 921_600 and info.link.rate_reverts == 0
    assert info.board is not None and (info.board.uart_cd, info.board.uart_bdiv) == (18, 5)


class _DeafAfterSwitch(ChunkFaults):
    """A bridge that cannot carry the new rate: from BAUD_ACK on, nothing gets through either
    way for ``deaf`` seconds (the device's revert time and the host's fall-back)."""

    def __init__(self, upstream_port: int, deaf: float) -> None:
        self.deaf = deaf
        self.until = 0.0
        super().__init__(upstream_port, seed=0, rate=0.0)

    def _pump(self, src, dst, direction):  # type: ignore[no-untyped-def]
        dec = FrameDecoder()
        while data := src.recv(4096):
            if time.monotonic() < self.until:
                continue
            # deaf from before the host can see the BAUD_ACK (it answers 20 ms after it)
            if direction == "to_host" and any(
                isinstance(f, Frame) and f.type == Msg.BAUD_ACK for f in dec.feed(data)
            ):
                self.until = time.monotonic() + self.deaf
            dst.sendall(data)
        return None


def test_rate_switch_falls_back_by_itself(kws_build: tuple[Path, Path], tmp_path: Path) -> None:
    """A switch that no frame survives: both sides go back to the old rate by themselves (the
    device after its revert time, counted in INFO), and the run completes at it."""
    build_dir, data = kws_build
    plan = make_plan(build_dir, data, MODE, 10)
    report, _ = run_through_line(
        plan,
        build_dir,
        tmp_path / "r",
        lambda port: _DeafAfterSwitch(port, deaf=2.5),
        baud_switch=921_600,
    )
    worker = report["run"]["workers"][0]
    assert worker["baud"] == 115_200 and "went back to 115200" in worker["note"], worker


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_keeps_results_and_prints_the_resume_command(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """SIGINT mid-run (a noisy line, a busy device): the run stops by itself, keeps every
    result that arrived, writes its report, prints the command that resumes it and exits 130;
    that command completes the run, every sample once."""
    build_dir, data = kws_build
    out = tmp_path / "r"
    cmd = [sys.executable, "-m", "codegen", "run", "--build", str(build_dir), "--data", str(data)]
    # under -icount QEMU streams at its emulated UART's pace (about a second a clip), so the run
    # is still going when the third result is in, however slowly this test gets scheduled
    cmd += ["--qemu", "--input", "pcm", "--mode", "strict", "--limit", "40"]
    cmd += ["--report", str(out), "--no-progress"]
    # SIGINT as a terminal delivers it: a pytest-xdist worker may have it ignored, and an ignored
    # signal stays ignored across exec (Python then installs no KeyboardInterrupt handler)
    cli = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=ROOT, preexec_fn=default_sigint)  # fmt: skip
    try:
        results = out / "results.jsonl"
        deadline = time.monotonic() + 180
        while not results.is_file() or len(results.read_bytes().splitlines()) < 3:
            assert time.monotonic() < deadline and cli.poll() is None, "no results came"
            time.sleep(0.02)
        assert cli.poll() is None, "the run ended before it could be interrupted"
        cli.send_signal(signal.SIGINT)
        stdout, err = cli.communicate(timeout=120)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == 130, err[-3000:]
    kept = len(read_results(out / "results.jsonl"))
    assert kept >= 3 and (out / "report.json").is_file()
    assert "Traceback" not in err, err[-3000:]
    m = re.search(r"continue with: (codegen run .*--resume)$", err, re.M)
    assert m, err[-3000:]
    argv = [sys.executable, "-m", "codegen", *shlex.split(m.group(1))[1:]]
    again = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    check_complete(report, out, report["bit_exact"]["compared"])
    assert report["run"]["resumed_from"] == kept


@pytest.mark.slow
def test_soak_10000_continual_bounded_at_2_percent(
    kws_build: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """10,000 samples of one continual_bounded run at 2 % faults (the built-in demo data set:
    the tiny one has 3,000 clips per mode)."""
    from codegen.data import build as build_data

    build_dir, _ = kws_build
    demo = tmp_path_factory.mktemp("demo")
    build_data(demo, preset="demo", tier="numpy", progress=False, jobs=1)
    plan = make_plan(build_dir, demo, MODE, 10_000)
    assert plan.total >= 10_000
    t0 = time.monotonic()
    through_proxy(plan, build_dir, tmp_path_factory.mktemp("soak"), rate=0.02, seed=2)
    print(f"soak: {plan.total} samples in {time.monotonic() - t0:.0f} s")


def _session(port: int, nonce: int | None, p_prev: tuple[int, ...]) -> None:
    """A session that stops right after its first RESET (the session's ordered counter 1)."""
    deadline = time.monotonic() + 10
    while True:  # QEMU opens its port a moment after it starts
        try:
            link = Link(f"socket://127.0.0.1:{port}", session=nonce)
            break
        except LinkClosed:
            assert time.monotonic() < deadline, "QEMU did not open its serial port"
            time.sleep(0.05)
    with link:
        dev = Device(link)
        dev.hello(sync_timeout=10)
        link.request(Msg.RESET, struct.pack(f"<{len(p_prev)}i", *p_prev), expect=Msg.RESET_ACK)


@pytest.mark.parametrize("same_nonce", [False, True], ids=["new-session", "v1-like-collision"])
def test_new_session_is_not_answered_from_the_old_record(
    kws_build: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    same_nonce: bool,
) -> None:
    """A session stops after its first RESET (p_prev = A, ordered counter 1); a new session on
    the same still-running device starts its stream with RESET (p_prev = 0) and counter 1. With
    a new session nonce the window starts over and the RESET runs: 0 mismatches. The control
    repeats the old nonce: the device takes counter 1 for a frame it served, answers it from
    its record, p_prev stays A, and the run sees the mismatch in the adaptation, so this test
    can tell the two apart."""
    build_dir, data = kws_build
    plan = make_plan(build_dir, data, MODE, 20)
    proc, qport = start_qemu(build_dir / "fw.elf")
    proxy = FaultProxy(qport, seed=0, rate=0.0, log=True)  # only to see the run's frames
    try:
        k = len(plan.streams[0].ref["p_best"][0])
        old = 0x0BAD5E55
        _session(qport, old, tuple((1 << 26) * (-1) ** j for j in range(k)))
        if same_nonce:
            monkeypatch.setattr("elatta_host.transport.new_session", lambda: old)
        spec = DeviceSpec("port0", url=f"socket://127.0.0.1:{proxy.port}")
        got = execute(plan, [spec], tmp_path / "r", resume=False, target={"kind": "qemu"},
                      progress=False)  # fmt: skip
    finally:
        proxy.close()
        proc.kill()
        proc.wait()
    assert proxy.log is not None
    sent = [f for chunk in proxy.log for f in FrameDecoder().feed(chunk) if isinstance(f, Frame)]
    resets = [f for f in sent if f.type == Msg.RESET]
    # the collision is set up: the run's first RESET has counter 1 too
    assert resets[0].seq & SEQ_COUNT_MASK == 1 and resets[0].payload == b""
    assert got.errors == ()
    be = got.report["bit_exact"]
    if same_nonce:
        assert be["mismatches"] > 0 and "first divergent stage: adaptation" in be["first_mismatch"]
    else:
        # each sample answered once and right: the new session's RESET ran (from the old
        # record, p_prev would stay A and the adaptation would differ). Replays may happen:
        # a re-send after a time-out on a loaded machine is answered from this session's
        # record; none comes from the old session's, so there are no more than re-sends.
        check_complete(got.report, tmp_path / "r", plan.total)
        run = got.report["run"]
        assert run["replayed"] is not None and run["replayed"] <= run["retransmits"]


def _untimed(out: Path) -> list[tuple[str, int, int, dict]]:  # type: ignore[type-arg]
    """Every results record of ``out`` in stream order, without its device name, timer ticks
    (QEMU without -icount: they differ from run to run) and the link's byte count (a restarted
    device's first request counts the new session's HELLO too)."""
    rows = []
    for r in read_results(out / "results.jsonl"):
        res = {
            k: v
            for k, v in dataclasses.asdict(r.result).items()
            if not k.startswith("ticks") and k != "link_bytes"
        }
        rows.append((r.stream, r.index, r.label, res))
    return sorted(rows, key=lambda row: (row[0], row[1]))


def _tables(out: Path) -> dict:  # type: ignore[type-arg]
    """report.json without the run facts, the timer ticks and the target description."""
    rep = json.loads((out / "report.json").read_text())
    return {k: v for k, v in rep.items() if k not in ("run", "ticks", "target")}


def test_qemu_killed_and_restarted_on_the_same_port(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """`codegen run --port socket://...` (default settings); the QEMU serving the port is
    killed mid-run and started again on the same port. The run either completes by itself or
    stops printing the exact command that resumes it; after that command (if any), the results
    and the report tables equal an uninterrupted run's, each sample answered once. A continual
    stream and cmvn cross the restart mid-stream, so the state the new device is given counts."""
    build_dir, data = kws_build
    modes = ("continual_bounded", "cmvn")
    plan = make_plan(build_dir, data, modes, 100, StreamSpec(segment_len=2, seed=3))
    # the uninterrupted run
    proc, qport = start_qemu(build_dir / "fw.elf")
    try:
        wait_listening(qport)
        spec = DeviceSpec("port0", url=f"socket://127.0.0.1:{qport}")
        whole = execute(plan, [spec], tmp_path / "whole", resume=False, target={"kind": "serial"},
                        progress=False)  # fmt: skip
    finally:
        proc.kill()
        proc.wait()
    assert whole.errors == (), whole.errors
    check_complete(whole.report, tmp_path / "whole", plan.total)

    out = tmp_path / "restarted"
    proc, qport = start_qemu(build_dir / "fw.elf")
    wait_listening(qport)
    cmd = [sys.executable, "-m", "codegen", "run", "--build", str(build_dir), "--data", str(data)]
    cmd += ["--port", f"socket://127.0.0.1:{qport}", "--limit", "100", "--stream-segment", "2"]
    cmd += ["--stream-seed", "3", "--report", str(out), "--no-progress"]
    cmd += [a for m in modes for a in ("--mode", m)]
    # SIGINT as a terminal delivers it: a pytest-xdist worker may have it ignored, and an ignored
    # signal stays ignored across exec (Python then installs no KeyboardInterrupt handler)
    cli = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=ROOT, preexec_fn=default_sigint)  # fmt: skip
    try:
        results = out / "results.jsonl"
        deadline = time.monotonic() + 120
        while not results.is_file() or len(results.read_bytes().splitlines()) < 30:
            assert time.monotonic() < deadline and cli.poll() is None, "no results came"
            time.sleep(0.02)
        proc.kill()  # mid-run: some 30 of 200 samples answered
        proc.wait()
        at_kill = len(read_results(results))
        proc, _ = start_qemu(build_dir / "fw.elf", qport)
        stdout, err = cli.communicate(timeout=300)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        proc.kill()
        proc.wait()
    assert 30 <= at_kill < plan.total  # the restart fell mid-run
    if cli.returncode != 0:  # stopped: it must say how to go on, and that must work
        m = re.search(r"continue with: (codegen run .*--resume)$", err, re.M)
        assert m, err[-3000:]
        proc, _ = start_qemu(build_dir / "fw.elf", qport)
        try:
            wait_listening(qport)
            argv = [sys.executable, "-m", "codegen", *shlex.split(m.group(1))[1:]]
            again = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300)
        finally:
            proc.kill()
            proc.wait()
        assert again.returncode == 0, again.stderr[-3000:]
    else:  # went on by itself, in a new session
        assert stdout.startswith(f"BIT-EXACT: {plan.total} results compared"), stdout
        sessions = json.loads((out / "report.json").read_text())["run"]["workers"]
        assert len(sessions) >= 2 and "opened again" in sessions[0]["note"], sessions
    report = json.loads((out / "report.json").read_text())
    check_complete(report, out, plan.total)
    assert _untimed(out) == _untimed(tmp_path / "whole")
    assert _tables(out) == _tables(tmp_path / "whole")


def _fake_results(out: Path) -> bytes:
    out.mkdir(parents=True)
    body = b"".join(b'{"stream":"x","index":%d}\n' % i for i in range(199))
    (out / "results.jsonl").write_bytes(body)
    return body


def test_resume_never_deletes_results(kws_build: tuple[Path, Path], tmp_path: Path) -> None:
    """run.json deleted: --resume refuses (the API and the CLI), results.jsonl stays byte for
    byte; a different run.json, or a plain run over recorded results, is refused too; only
    --force-restart discards them."""
    build_dir, data = kws_build
    plan = make_plan(build_dir, data, ("strict",), 10)
    out = tmp_path / "r"
    body = _fake_results(out)
    spec = [DeviceSpec("qemu0", elf=build_dir / "fw.elf", icount=False)]
    with pytest.raises(RunError, match=r"run.json is missing.*199 results.*--force-restart"):
        execute(plan, spec, out, resume=True, target={"kind": "qemu"}, progress=False)
    assert (out / "results.jsonl").read_bytes() == body and not (out / "run.json").exists()
    cmd = [sys.executable, "-m", "codegen", "run", "--build", str(build_dir), "--data", str(data)]
    cmd += ["--qemu", "--no-icount", "--mode", "strict", "--limit", "10", "--report", str(out)]
    cli = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert cli.returncode != 0 and "run.json is missing" in cli.stderr, cli.stderr[-2000:]
    assert "--force-restart" in cli.stderr
    assert (out / "results.jsonl").read_bytes() == body
    with pytest.raises(RunError, match=r"already holds 199 results: --resume .*--force-restart"):
        execute(plan, spec, out, resume=False, target={"kind": "qemu"}, progress=False)
    (out / "run.json").write_text(json.dumps({"format": "elatta-run", "selection": "other"}))
    with pytest.raises(RunError, match=r"holds another run \(.*selection.*\).*left as they are"):
        execute(plan, spec, out, resume=True, target={"kind": "qemu"}, progress=False)
    assert (out / "results.jsonl").read_bytes() == body
    # the explicit discard, then a real run
    got = execute(plan, spec, out, resume=False, force_restart=True, target={"kind": "qemu"},
                  progress=False)  # fmt: skip
    check_complete(got.report, out, plan.total)


def _qemu_children(pid: int) -> list[int]:
    """Children of every thread of ``pid`` (QEMU is forked by the spawner thread)."""
    return [
        int(c)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for c in (task / "children").read_text().split()
    ]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie has exited; only its exit status is left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_qemu_dies_with_its_host(
    kws_build: tuple[Path, Path], tmp_path: Path, sig: signal.Signals
) -> None:
    build_dir, data = kws_build
    out = tmp_path / "r"
    cli = subprocess.Popen(
        [sys.executable, "-m", "codegen", "run", "--build", str(build_dir), "--data", str(data)]
        + ["--qemu", "--no-icount", "--mode", "strict", "--limit", "100", "--jobs", "2"]
        + ["--report", str(out), "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 120
        while (
            not (out / "results.jsonl").is_file()
            or len((out / "results.jsonl").read_bytes().splitlines()) < 5
        ):
            assert time.monotonic() < deadline and cli.poll() is None, "no results came"
            time.sleep(0.05)
        qemus = _qemu_children(cli.pid)
        assert len(qemus) == 2 and all(_alive(q) for q in qemus), qemus
        os.kill(cli.pid, sig)
        assert cli.wait(timeout=30) == -sig
        deadline = time.monotonic() + 10
        while any(_alive(q) for q in qemus) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(q) for q in qemus), f"QEMU {qemus} outlived its host ({sig.name})"
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()


def test_failures_are_worded_by_kind() -> None:
    assert what_failed(ProtocolError("wrong reply type: ...")) == "sent a wrong reply"
    assert what_failed(VersionMismatch("v1")) == "speaks another protocol version"
    assert what_failed(LinkTimeout("...")) == "stopped answering"
