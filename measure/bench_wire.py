"""The wire on a board, measured through the project's line models (`elatta_host.linkmodel`):
QEMU's serial socket behind a USB-UART model (each direction at the line's pace, device-to-host
bytes held by a 16 ms latency timer), the host streaming with default link settings.

- ``audio_realtime_factor``: wall seconds of streaming per second of audio, in steady state
  (from the first clip's RESULT to the last one's, over the clips between), at 115,200 baud raw,
  115,200 ADPCM and 921,600 raw, and 921,600 ADPCM.
- ``features_per_s_115200``: feature INFERs answered per second at 115,200 baud, steady state.
- ``stop_seconds``: how long a run through a noisy line (one chunk in ten damaged by each fault)
  takes to stop once its stop flag is set (what Ctrl-C sets).

Wall-clock figures on the machine that runs the bench (the line's pace is the model's; QEMU's
own speed shows only where the line is faster than it).
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CLIP_SECONDS = 1.0  # the data sets' clips: 16,000 samples at 16 kHz


def _qemu(elf: Path) -> tuple[subprocess.Popen[bytes], int]:
    from elatta_host.qemu import free_port, qemu_command

    port = free_port()
    proc = subprocess.Popen(
        qemu_command(elf, port, icount=True),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        process_group=0,
    )
    return proc, port


def _requests(
    plan: Any, wire_pcm: bool, link: Any
) -> Iterator[tuple[object, int, bytes, int | None]]:
    from elatta_host.infer import encode_infer, encode_reset, mode_index
    from elatta_host.protocol import Msg
    from elatta_host.run import _requests as sample_requests

    for s in plan.streams:
        yield None, Msg.RESET, encode_reset(None), Msg.RESET_ACK
        for i in range(len(s)):
            if wire_pcm:
                for type_, payload, expect in sample_requests(link, s, i, None):
                    yield (i if expect is not None else None), type_, payload, expect
            else:
                x = encode_infer(int(s.ids[i]), mode_index(s.mode), s.x[i])
                yield i, Msg.INFER, x, Msg.RESULT


def stream_through(
    elf: Path, plan: Any, *, baud: int | None = None, faults: float = 0.0, seed: int = 1
) -> dict[str, Any]:
    """Every sample of ``plan`` through a USB-UART model at ``baud`` (or a noisy line with
    ``faults``), pipelined; returns the arrival time of every RESULT and the link's counters."""
    from elatta_host.device import Device
    from elatta_host.linkmodel import ChunkFaults, UsbUart
    from elatta_host.transport import Link, Pipe

    proc, port = _qemu(elf)
    line: Any = UsbUart(port, baud=baud) if baud else ChunkFaults(port, seed=seed, rate=faults)
    pcm = any(s.pcm is not None for s in plan.streams)
    arrivals: list[float] = []
    try:
        with Link(line.url) as link:
            Device(link).hello(sync_timeout=60)
            pipe = Pipe(link)
            for key, type_, payload, expect in _requests(plan, pcm, link):
                for k, t in pipe.put(key, link.submit(type_, payload, expect=expect)):
                    t.result()
                    if isinstance(k, int):
                        arrivals.append(time.monotonic())
            for k, t in pipe.drain():
                t.result()
                if isinstance(k, int):
                    arrivals.append(time.monotonic())
            counters = {
                "frames_sent": link.frames_sent,
                "retransmits": link.retransmits,
                "bytes_sent": link.bytes_sent,
            }
    finally:
        line.close()
        proc.kill()
        proc.wait()
    return {"arrivals": arrivals, **counters}


def steady_interval(arrivals: list[float]) -> float:
    """Seconds per sample between the first and the last answer (start-up left out)."""
    if len(arrivals) < 2:
        raise ValueError("steady state needs at least two answers")
    return (arrivals[-1] - arrivals[0]) / (len(arrivals) - 1)


def stop_seconds(elf: Path, plan: Any, after: float = 1.0) -> float:
    """A run of ``plan``'s audio through a noisy line (10 % per fault); the stop flag is set
    ``after`` seconds in; the seconds until the link has stopped (`Stopped`)."""
    from elatta_host.device import Device
    from elatta_host.errors import Stopped
    from elatta_host.linkmodel import ChunkFaults
    from elatta_host.transport import Link, Pipe

    proc, port = _qemu(elf)
    line = ChunkFaults(port, seed=5, rate=0.10)
    stop = threading.Event()
    set_at: list[float] = []

    def fire() -> None:
        set_at.append(time.monotonic())
        stop.set()

    try:
        with Link(line.url, stop=stop) as link:
            Device(link).hello(sync_timeout=60)
            pipe = Pipe(link)
            timer = threading.Timer(after, fire)
            timer.start()
            try:
                for key, type_, payload, expect in _requests(plan, True, link):
                    pipe.put(key, link.submit(type_, payload, expect=expect))
                pipe.drain()
            except Stopped:
                return time.monotonic() - set_at[0]
            finally:
                timer.cancel()
    finally:
        line.close()
        proc.kill()
        proc.wait()
    return 0.0  # finished before the flag was set


def measure_wire(
    build_dir: Path, data_dir: Path, clips: int = 8, features: int = 60
) -> dict[str, Any]:
    """The figures of the module docstring, each from one run."""
    from elatta_host.plan import make_plan

    elf = build_dir / "fw.elf"

    def plan(kind: str, n: int, wire: str = "raw") -> Any:
        return make_plan(build_dir, data_dir, ("strict",), n, input_kind=kind, wire=wire)

    out: dict[str, Any] = {"line": "USB-UART model: line pace both ways, 16 ms latency timer"}
    rtf: dict[str, float] = {}
    runs: dict[str, Any] = {}
    for name, baud, wire in (
        ("115200_raw", 115_200, "raw"),
        ("115200_adpcm", 115_200, "adpcm"),
        ("921600_raw", 921_600, "raw"),
        ("921600_adpcm", 921_600, "adpcm"),
    ):
        p = plan("pcm", clips, wire)
        got = stream_through(elf, p, baud=baud)
        rtf[name] = round(steady_interval(got["arrivals"]) / CLIP_SECONDS, 3)
        runs[name] = {k: v for k, v in got.items() if k != "arrivals"} | {
            "samples": len(got["arrivals"])
        }
    got = stream_through(elf, plan("features", features), baud=115_200)
    out["audio_realtime_factor"] = rtf
    out["features_per_s_115200"] = round(1.0 / steady_interval(got["arrivals"]), 2)
    runs["features_115200"] = {k: v for k, v in got.items() if k != "arrivals"}
    out["stop_seconds"] = round(stop_seconds(elf, plan("pcm", clips)), 3)
    out["runs"] = runs
    return out
