"""`codegen run`: stream GSC-C samples to the firmware, check every RESULT bit-exactly against
the Python integer reference, and report accuracy and cost (docs/protocol.md,
docs/targets.md §1, §4).

Selection and streams: `elatta_host.plan` (the build's program, clips dealt over the conditions so
the slice covers as many distinct utterances as fit, one stream per (mode, condition)).

Devices. ``--jobs J`` boots J QEMU instances (or uses J ``--port`` links) and gives each a
contiguous block of streams; a stream never leaves its device, so every continual stream is one
ordered stream on one device. Each device's streams run in order.

Link faults. Time-outs and damaged frames re-send the same frame with the same seq
(`elatta_host.transport.Link.request`); the device's replay rule answers a repeated seq from
its record without running the model again, so continual state advances exactly once per
sample. A device that stops answering ends its worker with a message naming its last good
sample.

Results. ``OUT/results.jsonl`` gets one line per answered sample, flushed as it arrives.
``--resume`` keeps those lines and continues every stream after its last recorded sample; a
continual stream is resumed with RESET carrying the last recorded best p (the device's p_prev).
``OUT/run.json`` records the selection so a resume cannot mix two different runs.

Report. ``OUT/report.json`` / ``report.md`` / ``report.png`` (`elatta_host.report`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elatta_host.errors import DeviceError, LinkError
from elatta_host.infer import (
    COMPARED_FIELDS,
    CONTINUAL_MODES,
    DEVICE_MODES,
    AppInfo,
    InferResult,
    decode_result,
    encode_infer,
    encode_reset,
    mode_index,
    parse_description,
)
from elatta_host.plan import Plan, Record, RunError, Stream, make_plan

from codegen.cliargs import add_stream_arguments, stream_from_args
from codegen.ir import STATEFUL_MODES

HELP = "stream GSC-C samples to the firmware (QEMU or a board), check every result bit-exactly"
RUN_FORMAT = "elatta-run"
DEFAULT_MODES = ("strict", "continual_bounded")


def compare(res: InferResult, want: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Every RESULT field against the reference, integer equality (docs/numeric.md)."""
    got = res.compared()
    return [(f, got[f], want[f]) for f in COMPARED_FIELDS if got[f] != want[f]]


def read_results(path: Path) -> list[Record]:
    """Complete lines of results.jsonl; a torn last line (killed mid-write) is cut off."""
    if not path.is_file():
        return []
    raw = path.read_bytes()
    keep = raw[: raw.rfind(b"\n") + 1]
    if len(keep) != len(raw):
        with open(path, "r+b") as f:
            f.truncate(len(keep))
    return [Record.from_json(line) for line in keep.decode().splitlines() if line.strip()]


class Recorder:
    """Thread-safe sink: checks each result, appends it to results.jsonl, drives the bar."""

    def __init__(self, plan: Plan, path: Path, previous: list[Record], bar: Any) -> None:
        self.plan = plan
        self.by_key = {s.key: s for s in plan.streams}
        self.records: dict[tuple[str, int], Record] = {}
        for r in previous:
            if r.stream in self.by_key:
                self.records.setdefault((r.stream, r.index), r)
        self.lock = threading.Lock()
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self.bar = bar
        self.mismatches = sum(1 for r in self.records.values() if r.mismatches)
        self.first_mismatch: str | None = None
        self.last_good: dict[str, str] = {}

    def done(self, key: str) -> int:
        """Length of the recorded prefix of a stream (results of one stream arrive in order)."""
        n = 0
        while (key, n) in self.records:
            n += 1
        return n

    def last_p(self, key: str, n: int) -> tuple[int, ...] | None:
        return None if n == 0 else self.records[(key, n - 1)].result.p_best

    def add(self, stream: Stream, i: int, device: str, res: InferResult) -> None:
        diffs = compare(res, stream.expected(i))
        rec = Record(
            stream.key, i, int(stream.labels[i]), device, res, tuple(f for f, _, _ in diffs)
        )
        with self.lock:
            if (stream.key, i) in self.records:
                raise RunError(f"sample {stream.key} #{i} answered twice")
            self.records[(stream.key, i)] = rec
            self.file.write(rec.to_json() + "\n")
            self.file.flush()
            self.last_good[device] = f"sample id {int(stream.ids[i])} ({stream.key} #{i})"
            if diffs:
                self.mismatches += 1
                if self.first_mismatch is None:
                    # z is the encoder's output: when it differs, the encoder diverged first
                    f, dv, rv = next((d for d in diffs if d[0] == "z"), diffs[0])
                    stage = "encoder (z_t)" if f == "z" else "adaptation"
                    self.first_mismatch = (
                        f"first mismatch: sample id {int(stream.ids[i])} ({stream.key} #{i}), "
                        f"field {f}: device {dv} != reference {rv} "
                        f"(first divergent stage: {stage}; {len(diffs)} fields differ)"
                    )
                    self.bar.write(self.first_mismatch)
            self.bar.update(1)
            self.bar.set_postfix(mismatches=self.mismatches, refresh=False)

    def close(self) -> None:
        self.file.close()


# ----------------------------------------------------------------------------- devices


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    elf: Path | None = None  # QEMU
    url: str | None = None  # serial port or socket:// URL
    baud: int = 115_200
    icount: bool = True
    timeout: float = 2.0
    retries: int = 5


@dataclass
class LinkStats:
    retransmits: int = 0
    damaged: int = 0
    bad_frames: int = 0
    stack_used: int = 0
    stack_size: int = 0
    replayed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@contextmanager
def open_device(spec: DeviceSpec) -> Iterator[tuple[Any, Callable[[], str]]]:
    """A connected Link and a function describing the device's state (for error messages)."""
    from elatta_host.qemu import Qemu
    from elatta_host.transport import Link

    if spec.elf is not None:
        qemu = Qemu(spec.elf, icount=spec.icount, link_timeout=spec.timeout, retries=spec.retries)
        link = qemu.start()

        def state() -> str:
            proc = qemu.proc
            if proc is not None and proc.poll() is not None:
                return f"QEMU exited with status {proc.returncode}"
            return "QEMU still running"

        try:
            yield link, state
        finally:
            qemu.stop()
    else:
        assert spec.url is not None
        with Link(spec.url, baud=spec.baud, timeout=spec.timeout, retries=spec.retries) as link:
            yield link, lambda: f"link {spec.url}"


def check_device(app: AppInfo, manifest: dict[str, Any]) -> None:
    inputs = manifest["inputs"]
    for key in ("model", "basis", "config", "calib"):
        have, want = app.get(key), inputs[key]["sha256"][:16]
        if have != want:
            raise RunError(
                f"the device runs another build: its {key} hash is {have}, the "
                f"build directory's is {want} (flash/boot this build's fw.elf)"
            )


def run_device(
    spec: DeviceSpec, streams: list[Stream], rec: Recorder, plan: Plan, stop: threading.Event
) -> LinkStats:
    from elatta_host.device import Device
    from elatta_host.protocol import Msg
    from elatta_host.transport import LINK_ERRORS

    stats = LinkStats()
    synced = 0
    with open_device(spec) as (link, state):
        try:
            dev = Device(link)
            dev.hello(sync_timeout=10.0)
            synced = link.retransmits  # HELLOs sent while the device booted are not re-sends
            info = dev.hello()
            check_device(parse_description(info.app), plan.manifest)
            for s in streams:
                start = rec.done(s.key)
                if start == len(s) or stop.is_set():
                    continue
                p_prev = rec.last_p(s.key, start) if s.mode in CONTINUAL_MODES else None
                link.request(
                    Msg.RESET, encode_reset(p_prev), expect=Msg.RESET_ACK, retry_errors=LINK_ERRORS
                )
                mode = mode_index(s.mode)
                if start and s.mode in STATEFUL_MODES and s.mode not in CONTINUAL_MODES:
                    # cmvn's running statistics cannot be set by RESET: rebuild them by
                    # replaying the recorded prefix (checked again, not recorded twice)
                    for i in range(start):
                        reply = link.request(
                            Msg.INFER,
                            encode_infer(int(s.ids[i]), mode, s.x[i]),
                            expect=Msg.RESULT,
                            retry_errors=LINK_ERRORS,
                        )
                        if compare(decode_result(reply.payload), s.expected(i)):
                            raise RunError(
                                f"{spec.name}: replaying {s.key} #{i} to resume gave another "
                                "result than the recorded one"
                            )
                for i in range(start, len(s)):
                    if stop.is_set():
                        break
                    reply = link.request(
                        Msg.INFER,
                        encode_infer(int(s.ids[i]), mode, s.x[i]),
                        expect=Msg.RESULT,
                        retry_errors=LINK_ERRORS,
                    )
                    try:
                        res = decode_result(reply.payload)
                    except ValueError as exc:
                        raise RunError(f"{spec.name}: bad RESULT for {s.key} #{i}: {exc}") from exc
                    rec.add(s, i, spec.name, res)
            info = dev.hello()
            stats.stack_used, stats.stack_size = info.stack_used, info.stack_size
            stats.replayed = info.frames_replayed
        except LinkError as exc:
            last = rec.last_good.get(spec.name, "none")
            what = "rejected a request" if isinstance(exc, DeviceError) else "stopped answering"
            raise RunError(
                f"{spec.name} {what} ({state()}): {exc}; last good sample: {last}"
            ) from exc
        finally:
            stats.retransmits = link.retransmits - synced
            stats.damaged = link.damaged_requests
            stats.bad_frames = link.bad_frames
    return stats


def shard(streams: tuple[Stream, ...], jobs: int) -> list[list[Stream]]:
    """J contiguous blocks of streams, balanced by sample count (a stream is never split)."""
    total = sum(len(s) for s in streams)
    blocks: list[list[Stream]] = [[] for _ in range(jobs)]
    acc = 0
    for s in streams:
        j = min(jobs - 1, acc * jobs // max(total, 1))
        blocks[j].append(s)
        acc += len(s)
    return blocks


# ----------------------------------------------------------------------------- main


@dataclass(frozen=True)
class RunOutcome:
    report: dict[str, Any]
    errors: tuple[str, ...]


def run_config(plan: Plan, args_target: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": RUN_FORMAT,
        "build_id": plan.manifest.get("firmware", {}).get("build_id"),
        "inputs": plan.manifest["inputs"],
        "data": plan.data_info,
        "selection": plan.selection.digest(),
        "modes": list(plan.selection.modes),
        "target_kind": args_target["kind"],
    }


def execute(
    plan: Plan,
    specs: list[DeviceSpec],
    out: Path,
    *,
    resume: bool,
    target: dict[str, Any],
    progress: bool = True,
) -> RunOutcome:
    from elatta_host.report import build_report, write_report
    from tqdm import tqdm

    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    cfg = run_config(plan, target)
    cfg_path = out / "run.json"
    previous: list[Record] = []
    if resume and cfg_path.is_file():
        old = json.loads(cfg_path.read_text())
        if old != cfg:
            raise RunError(
                f"{out} holds another run (build, data, modes or --limit differ): "
                "use another --report directory or drop --resume"
            )
        previous = read_results(results)
    elif results.exists():
        results.unlink()
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    blocks = [b for b in shard(plan.streams, len(specs)) if b]
    t0 = time.monotonic()
    stop = threading.Event()
    errors: list[str] = []
    stats: list[LinkStats] = []
    with tqdm(
        total=plan.total,
        unit="sample",
        desc="device",
        disable=not progress,
        dynamic_ncols=True,
        smoothing=0.1,
    ) as bar:
        rec = Recorder(plan, results, previous, bar)
        done0 = len(rec.records)
        bar.update(done0)
        bar.set_postfix(mismatches=rec.mismatches)
        try:
            with ThreadPoolExecutor(max_workers=len(blocks)) as pool:
                futs = [
                    pool.submit(run_device, spec, block, rec, plan, stop)
                    for spec, block in zip(specs, blocks, strict=False)
                ]
                try:
                    for fut in futs:
                        while True:
                            try:
                                stats.append(fut.result(timeout=0.5))
                                break
                            except TimeoutError:
                                continue
                            except (RunError, LinkError) as exc:
                                errors.append(str(exc))
                                bar.write(f"error: {exc}")
                                break
                except KeyboardInterrupt:
                    stop.set()
                    raise
        finally:
            rec.close()
    seconds = time.monotonic() - t0
    new = len(rec.records) - done0
    run_facts = {
        "jobs": len(blocks),
        "seconds": round(seconds, 3),
        "samples_this_session": new,
        "samples_per_s": round(new / seconds, 2) if seconds > 0 else None,
        "retransmits": sum(s.retransmits for s in stats),
        "damaged_requests": sum(s.damaged for s in stats),
        "bad_frames": sum(s.bad_frames for s in stats),
        "replayed": sum(s.replayed for s in stats),
        "resumed_from": done0,
        "errors": errors,
    }
    stack = max((s.stack_used for s in stats), default=None)
    report = build_report(
        plan, list(rec.records.values()), target, run_facts, stack, rec.first_mismatch
    )
    write_report(report, out)
    return RunOutcome(report, tuple(errors))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--build", required=True, type=Path, help="`codegen build` output directory")
    p.add_argument(
        "--data",
        required=True,
        type=Path,
        help="data directory (`codegen data`; the one the build was calibrated on)",
    )
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument(
        "--qemu",
        action="store_true",
        help="boot BUILD/fw.elf in qemu-system-arm (xilinx-zynq-a9), one per job",
    )
    g.add_argument(
        "--port",
        action="append",
        metavar="DEV",
        help="serial device or pyserial URL of a board (repeat for several boards)",
    )
    p.add_argument("--baud", type=int, default=115_200, help="baud rate of --port (115200)")
    p.add_argument(
        "--mode",
        action="append",
        choices=DEVICE_MODES,
        metavar="M",
        help=f"adaptation mode, repeatable: {', '.join(DEVICE_MODES)} "
        f"(default: {' and '.join(DEFAULT_MODES)})",
    )
    p.add_argument(
        "--limit",
        type=int,
        help="about N clips per mode, spread over every noise and SNR and dealt so they cover "
        "as many distinct test utterances as possible (default: every clip)",
    )
    add_stream_arguments(p)
    p.add_argument("--jobs", type=int, default=1, help="QEMU instances (with --qemu)")
    p.add_argument(
        "--resume", action="store_true", help="continue the run in --report after an interruption"
    )
    p.add_argument("--report", required=True, type=Path, help="output directory")
    p.add_argument(
        "--no-icount",
        dest="icount",
        action="store_false",
        help="QEMU without -icount: faster link, timer ticks not deterministic",
    )
    p.add_argument("--timeout", type=float, default=2.0, help="seconds before a re-send (2)")
    p.add_argument("--retries", type=int, default=5, help="re-sends before giving up (5)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    modes = tuple(dict.fromkeys(args.mode)) if args.mode else DEFAULT_MODES
    if args.jobs < 1:
        raise RunError("--jobs must be >= 1")
    if args.limit is not None and args.limit < 1:
        raise RunError("--limit must be >= 1")
    elf = args.build / "fw.elf"
    if args.qemu:
        if not elf.is_file():
            raise RunError(f"{elf} not found: `codegen build` without --no-elf makes it")
        specs = [
            DeviceSpec(
                f"qemu{j}", elf=elf, icount=args.icount, timeout=args.timeout, retries=args.retries
            )
            for j in range(args.jobs)
        ]
        target = {
            "kind": "qemu",
            "machine": "xilinx-zynq-a9",
            "icount": args.icount,
            "ticks": "QEMU icount ticks"
            if args.icount
            else "global-timer ticks (QEMU without -icount: not deterministic)",
        }
    else:
        specs = [
            DeviceSpec(
                f"port{j}", url=u, baud=args.baud, timeout=args.timeout, retries=args.retries
            )
            for j, u in enumerate(args.port)
        ]
        target = {
            "kind": "serial",
            "baud": args.baud,
            "ticks": "Cortex-A9 global timer ticks (PERIPHCLK)",
        }
    print(f"preparing: reference for {', '.join(modes)} on {args.data} ...", file=sys.stderr)
    plan = make_plan(args.build, args.data, modes, args.limit, stream_from_args(args))
    target["build_id"] = plan.manifest.get("firmware", {}).get("build_id")
    print(
        f"{plan.total} samples in {len(plan.streams)} streams over {len(specs)} device(s)",
        file=sys.stderr,
    )
    outcome = execute(
        plan,
        specs,
        args.report,
        resume=args.resume,
        target=target,
        progress=args.progress and os.environ.get("CODEGEN_NO_PROGRESS") is None,
    )
    from elatta_host.report import format_summary

    print(format_summary(outcome.report))
    print(f"wrote {args.report / 'report.json'}, report.md, report.png, results.jsonl")
    if outcome.errors:
        for e in outcome.errors:
            print(f"codegen run: error: {e}", file=sys.stderr)
        if any("runs another build" in e for e in outcome.errors):
            # --resume would meet the same device: the fix is the right firmware or build
            print(
                "codegen run: the device runs another build: boot or flash "
                f"{args.build / 'fw.elf'}, or pass the --build directory of the firmware it runs",
                file=sys.stderr,
            )
        else:
            print("codegen run: incomplete; continue with --resume", file=sys.stderr)
        return 1
    be = outcome.report["bit_exact"]
    return 0 if be["mismatches"] == 0 and be["compared"] == plan.total else 1
