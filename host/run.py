"""`codegen run`: stream GSC-C samples to the firmware, check every RESULT bit-exactly against
the Python integer reference, and report accuracy and cost (docs/protocol.md,
docs/targets.md §1, §4).

Selection and streams: `elatta_host.plan` (the build's program, clips dealt over the conditions so
the slice covers as many distinct utterances as fit, one stream per (mode, condition)).

Devices. ``--jobs J`` boots J QEMU instances (or uses J ``--port`` links) and gives each a
contiguous block of streams; a stream never leaves its device, so every continual stream is one
ordered stream on one device. Each device's streams run in order.

Link faults. Damaged frames re-send the same frame with the same seq at once, silence after an
adaptive time-out, within a per-request budget (`elatta_host.transport.Link.request`); the
device's replay rule answers a repeated (session, type, seq) from its record without running
the model again, so continual state advances exactly once per sample, and each worker's link
is a new session, so no request is answered from another session's record. A --port link that
closes (QEMU killed and started again on its port) is opened again within --budget as a new
session and the run goes on from the state the reference assumes (`run_device`). A device that
stops answering ends its worker with a message naming its last good sample; its link
statistics are kept, and `codegen run` prints the exact command that resumes the run.

Results. ``OUT/results.jsonl`` gets one line per answered sample, flushed as it arrives; the
host keeps only what the report needs (a few integers per sample), not the records.
``--resume`` checks every recorded line against the integer reference and the file's integrity
(`Recorder.load`), redoes what does not hold, and runs every stream's unanswered samples from the
state the reference assumes (`run_stream`: a continual stream is RESET with the best p of the
sample before each hole).
``OUT/run.json`` records the selection so a resume cannot mix two different runs: a missing or
different one is refused, and so is a new run over recorded results; only ``--force-restart``
discards them. ``OUT/sessions.jsonl`` gets one line per device session (link statistics, this
session's replays, the stack high-water), so the report's figures cover every session.

Report. ``OUT/report.json`` / ``report.md`` / ``report.png`` (`elatta_host.report`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import secrets
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from elatta_host.device import default_baud
from elatta_host.errors import (
    DeviceError,
    LinkClosed,
    LinkError,
    LinkTimeout,
    ProtocolError,
    Stopped,
    VersionMismatch,
)
from elatta_host.infer import (
    AUDIO_ADPCM_HDR,
    AUDIO_HDR,
    COMPARED_FIELDS,
    CONTINUAL_MODES,
    DEVICE_MODES,
    STREAM_MODES,
    AppInfo,
    InferResult,
    decode_result,
    encode_audio,
    encode_audio_adpcm,
    encode_audio_begin,
    encode_audio_end,
    encode_infer,
    encode_reset,
    max_chunk_samples,
    mode_index,
    parse_description,
)
from elatta_host.plan import ADPCM_BLOCK, Plan, Record, RunError, Stream, make_plan
from elatta_host.report import Answered, segment_lengths
from elatta_host.reportdir import (
    MAX_LINE,
    Line,
    Lock,
    bounded_lines,
    digest,
    open_append,
    regular_file,
    split_digest,
    with_digest,
    write_file,
)
from elatta_host.transport import DEFAULT_BUDGET, DEFAULT_TIMEOUT

from codegen.base.adpcm import AdpcmClips
from codegen.data.streams import add_stream_arguments, stream_from_args
from codegen.ir.modes import STATEFUL_MODES

HELP = "stream GSC-C samples to the firmware (QEMU or a board), check every result bit-exactly"
RUN_FORMAT = "elatta-run"
DEFAULT_MODES = ("strict", "continual_bounded")


def compare(res: InferResult, want: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Every RESULT field against the reference, integer equality (docs/numeric.md)."""
    got = res.compared()
    return [(f, got[f], want[f]) for f in COMPARED_FIELDS if got[f] != want[f]]


def read_results(path: Path) -> list[Record]:
    """Every complete record of results.jsonl (tests, tools; a run streams them instead)."""
    return [Record.from_json(split_digest(ln.text.decode())[0]) for ln in _lines(path)]


def _lines(path: Path) -> Iterator[Line]:
    return (ln for ln in bounded_lines(path) if not ln.too_long)


def count_results(path: Path) -> int:
    return sum(1 for _ in bounded_lines(path))


REJECTED = "results.rejected.jsonl"  # recorded lines a resume did not keep, with the reason
REJECTED_TEXT = 2000  # bytes of a rejected line kept beside its reason


@dataclass(frozen=True)
class _Checked:
    """One recorded line, checked: the sample it names (None: none of this run), its record
    when it holds, else the reason it does not; the digest written with it."""

    stream: Stream | None
    index: int
    record: Record | None
    reason: str | None
    line: Line
    written: str | None = None  # the digest the line carries


class Recorder:
    """Thread-safe sink: checks each result, appends it to results.jsonl, drives the bar, and
    keeps per stream only what the report and a resume need (answered flags, classes, ticks,
    best p), so the host's memory does not grow with the number of samples."""

    def __init__(self, plan: Plan, path: Path, bar: Any) -> None:
        self.plan = plan
        self.by_key = {s.key: s for s in plan.streams}
        self.mask = {s.key: np.zeros(len(s), dtype=bool) for s in plan.streams}
        self.pred = {s.key: np.zeros(len(s), dtype=np.int64) for s in plan.streams}
        self.pred0 = {s.key: np.zeros(len(s), dtype=np.int64) for s in plan.streams}
        self.ticks = {s.key: np.zeros((len(s), 4), dtype=np.int64) for s in plan.streams}
        self.p_best = {s.key: np.zeros_like(s.ref["p_best"], dtype=np.int64) for s in plan.streams}
        self.count = 0
        self.mismatches = 0
        self.fields: dict[str, int] = {}
        self.first_mismatch: str | None = None
        self.lock = threading.Lock()
        self.last_good: dict[str, str] = {}
        self.bar = bar
        self.path = path
        self.file: Any = None
        self.recorded_lines = 0  # lines of results.jsonl when the run started
        self.problems: list[str] = []  # recorded lines that did not hold, each with its reason
        # the run's key of the results lines' digests (host/reportdir.py), from run.json
        self.key = ""

    def load(self) -> int:
        """Take in the records already in results.jsonl (a resume); returns their number.

        Nothing recorded is trusted: every line must parse as a record of a sample of this
        run's selection, with that sample's label and every compared field equal to the
        integer reference, and a sample must be named by one line only (docs/protocol.md,
        "Streams, sharding and resume"). A line that fails is reported (`problems`) and moved
        to results.rejected.jsonl with the reason; a sample named twice loses every line that
        names it. Samples without a line that holds are left unanswered, so the run redoes
        them on the device. Two passes, so the file is never held in memory."""
        counts = {s.key: np.zeros(len(s), dtype=np.int64) for s in self.plan.streams}
        clean = True
        for c in self._checked():
            self.recorded_lines += 1
            if c.stream is not None:
                counts[c.stream.key][c.index] += 1
            clean = clean and c.reason is None
        if not clean or any(int(n.max(initial=0)) > 1 for n in counts.values()):
            self._rewrite(counts)
        else:  # every line holds: the file stays as it is
            for c in self._checked():
                assert c.stream is not None and c.record is not None
                self._tally(c.stream, c.index, c.record.result, ())
        self.file = open_append(self.path)
        return self.count

    def _checked(self) -> Iterator[_Checked]:
        """Every line of the file, checked in order."""
        for ln in bounded_lines(self.path):
            yield self._check_line(ln)

    def _check_line(self, ln: Line) -> _Checked:
        """A recorded line against its digest, the selection and the integer reference."""
        if ln.too_long:
            return _Checked(None, -1, None, f"a line of {ln.too_long} bytes (a record is about "
                            f"a kilobyte; lines over {MAX_LINE} are not read)", ln)  # fmt: skip
        try:
            body, written = split_digest(ln.text.decode())
            r = Record.from_json(body)
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as exc:
            if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
                return _Checked(None, -1, None, "not JSON", ln)
            return _Checked(None, -1, None, "not a result record (fields missing or mistyped)",
                            ln)  # fmt: skip
        except (KeyError, TypeError, AssertionError, AttributeError):
            return _Checked(None, -1, None, "not a result record (fields missing or mistyped)", ln)
        c = self._check_record(r, ln)
        c = dataclasses.replace(c, written=written)
        if c.reason is None and c.stream is not None and written != digest(self.key, body):
            why = (
                "its digest does not hold: edited after it was written (a measured field or "
                "any other)"
                if written
                else "it carries no digest (written by an older codegen, or by hand)"
            )
            return dataclasses.replace(c, record=None, reason=f"{c.stream.key} #{c.index}: {why}")
        return c

    def _check_record(self, r: Record, ln: Line) -> _Checked:
        """A parsed record against the selection and the integer reference."""
        s = self.by_key.get(r.stream)
        if s is None or not 0 <= r.index < len(s):
            return _Checked(None, -1, None, f"{r.stream} #{r.index}: no sample of this run", ln)
        if r.label != int(s.labels[r.index]):
            why = f"{s.key} #{r.index}: label {r.label}, the data set's {int(s.labels[r.index])}"
            return _Checked(s, r.index, None, why, ln)
        diffs = compare(r.result, s.expected(r.index))
        if diffs:
            why = (
                f"{s.key} #{r.index}: {', '.join(f for f, _, _ in diffs)} differ from the "
                "integer reference"
            )
            return _Checked(s, r.index, None, why, ln)
        return _Checked(s, r.index, r, None, ln)

    def _rewrite(self, counts: dict[str, np.ndarray]) -> None:
        """Keep the lines that hold, move the others to results.rejected.jsonl with their
        reasons; results.jsonl is replaced atomically (a kill leaves the old or the new one)."""
        tmp = self.path.with_suffix(".jsonl.tmp")
        rejected = self.path.with_name(REJECTED)
        regular_file(rejected, "rejected-lines file")
        with open(tmp, "w", encoding="utf-8") as keep, open_append(rejected) as rj:
            for c in list(self._checked()):
                no = c.line.number
                why = c.reason
                if c.stream is not None and (n := int(counts[c.stream.key][c.index])) > 1:
                    why = f"{c.stream.key} #{c.index} is named by {n} lines" + (
                        f" ({why})" if why else ""
                    )
                if why is None and c.stream is not None and c.record is not None:
                    keep.write(with_digest(c.record.to_json(), self.key) + "\n")
                    self._tally(c.stream, c.index, c.record.result, ())
                    continue
                self.problems.append(f"results.jsonl line {no}: {why}")
                # the rejected line's start only: a line may be as long as the disk
                text = c.line.text[:REJECTED_TEXT].decode(errors="replace").rstrip("\n")
                rj.write(json.dumps({"line": no, "reason": why, "text": text}) + "\n")
        os.replace(tmp, self.path)

    def _tally(self, s: Stream, i: int, res: InferResult, mismatches: tuple[str, ...]) -> None:
        self.mask[s.key][i] = True
        self.pred[s.key][i] = res.pred
        self.pred0[s.key][i] = res.pred_noadapt
        self.ticks[s.key][i] = (
            res.ticks_encoder,
            res.ticks_adapt,
            res.ticks_total,
            res.ticks_frontend or 0,
        )
        self.p_best[s.key][i] = res.p_best
        self.count += 1
        self.mismatches += bool(mismatches)
        for f in mismatches:
            self.fields[f] = self.fields.get(f, 0) + 1

    def missing(self, key: str) -> list[int]:
        """The stream's samples without a result, in order (a resume redoes each)."""
        return [int(i) for i in np.flatnonzero(~self.mask[key])]

    def has(self, key: str, i: int) -> bool:
        return bool(self.mask[key][i])

    def last_p(self, key: str, n: int) -> tuple[int, ...] | None:
        """The best p of sample n-1 (checked against the reference when loaded): the continual
        state a device must start sample n from; None for n = 0 (a reset state)."""
        return None if n == 0 else tuple(int(v) for v in self.p_best[key][n - 1])

    def add(self, stream: Stream, i: int, device: str, res: InferResult) -> None:
        diffs = compare(res, stream.expected(i))
        rec = Record(
            stream.key, i, int(stream.labels[i]), device, res, tuple(f for f, _, _ in diffs)
        )
        with self.lock:
            if self.mask[stream.key][i]:
                raise RunError(f"sample {stream.key} #{i} answered twice")
            self._tally(stream, i, res, rec.mismatches)
            self.file.write(with_digest(rec.to_json(), self.key) + "\n")
            self.file.flush()
            self.last_good[device] = f"sample id {int(stream.ids[i])} ({stream.key} #{i})"
            if diffs and self.first_mismatch is None:
                # z is the encoder's output: when it differs, the encoder diverged first
                f, dv, rv = next((d for d in diffs if d[0] == "z"), diffs[0])
                stage = "encoder (z_t)" if f == "z" else "adaptation"
                self.first_mismatch = (
                    f"first mismatch: sample id {int(stream.ids[i])} ({stream.key} #{i}), "
                    f"field {f}: device {dv} != reference {rv} "
                    f"(first divergent stage: {stage}; {len(diffs)} fields differ)"
                )
                self.bar.write(self.first_mismatch, file=sys.stderr)
            self.bar.update(1)
            self.bar.set_postfix(mismatches=self.mismatches, refresh=False)

    def answered(self) -> Answered:
        with self.lock:
            return Answered(
                mask={k: v.copy() for k, v in self.mask.items()},
                pred={k: v.copy() for k, v in self.pred.items()},
                pred_noadapt={k: v.copy() for k, v in self.pred0.items()},
                ticks={k: v.copy() for k, v in self.ticks.items()},
                mismatches=self.mismatches,
                fields=dict(sorted(self.fields.items())),
                first_mismatch=self.first_mismatch,
            )

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


# ----------------------------------------------------------------------------- devices


# the flags that set the link's budgets, named in its errors (how to raise a budget that ran out)
FLAGS = {"budget": "--budget", "timeout": "--timeout"}


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    elf: Path | None = None  # QEMU
    uart: int = 0  # QEMU: the UART the ELF was built for (served on the socket)
    url: str | None = None  # serial port or socket:// URL
    baud: int = 115_200  # the rate the device boots at (the build's): the port opens at it
    icount: bool = True
    timeout: float = DEFAULT_TIMEOUT  # first time-out and ceiling of the adaptive one (s)
    budget: float = DEFAULT_BUDGET  # silence from the device that ends the session (s)
    # the rate switch after HELLO (docs/protocol.md, "Rate switch"): 0 the fastest rate common
    # USB-UART bridges carry that the device offers, a rate, or None for none
    baud_switch: int | None = None


@dataclass
class LinkStats:
    """One worker's session, filled in as it goes so a worker that dies keeps its figures."""

    device: str
    session: str | None = None  # the session nonce, hex
    samples: int = 0  # answered in this session
    baud: int | None = None  # the rate the session ran at after the switch
    frames_sent: int = 0
    replies_asked: int = 0  # requests sent again because their reply was lost
    reply_parts: int = 0  # parts of such replies that came (REPLY_PART)
    retransmits: int = 0
    resent_on_timeout: int = 0
    resent_on_damage: int = 0
    damaged: int = 0
    bad_frames: int = 0
    stale: int = 0
    replayed: int | None = None  # this session's replays (INFO delta); None: no final INFO
    stack_used: int | None = None
    stack_size: int | None = None
    rto_infer: float | None = None  # the adaptive INFER time-out at the end (s)
    error: str | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@contextmanager
def open_device(spec: DeviceSpec) -> Iterator[tuple[Any, Callable[[], str]]]:
    """A connected Link and a function describing the device's state (for error messages)."""
    from elatta_host.qemu import Qemu
    from elatta_host.transport import Link

    if spec.elf is not None:
        qemu = Qemu(
            spec.elf,
            uart=spec.uart,
            icount=spec.icount,
            link_timeout=spec.timeout,
            budget=spec.budget,
            flags=FLAGS,
        )
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
        with Link(
            spec.url, baud=spec.baud, timeout=spec.timeout, budget=spec.budget, flags=FLAGS
        ) as link:
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


def what_failed(exc: LinkError) -> str:
    """How a worker's end is worded: each kind of failure by its name."""
    if isinstance(exc, VersionMismatch):
        return "speaks another protocol version"
    if isinstance(exc, DeviceError):
        return "rejected a request"
    if isinstance(exc, ProtocolError):
        return "sent a wrong reply"
    if isinstance(exc, (LinkTimeout, LinkClosed)):
        return "stopped answering"
    return "failed"


def audio_requests(
    link: Any,
    sample_id: int,
    mode: int,
    pcm: np.ndarray,
    chunk: int | None,
    adpcm: tuple[AdpcmClips, int] | None = None,
) -> Iterator[tuple[int, bytes, int | None]]:
    """One clip through the audio mode (docs/protocol.md, "Audio mode") as requests: AUDIO_BEGIN,
    the PCM in AUDIO chunks (each with its offset; the device takes a chunk only at the next
    offset, so none is used twice), AUDIO_END -> RESULT. ``chunk``: samples per AUDIO (None: as
    many as the link's frame size carries now, so a chunk is one frame). ``adpcm``: the clip's
    codes (the clips and its row): AUDIO_ADPCM chunks instead, each starting at a block header
    and at most `wire.ADPCM_MAX_SAMPLES` samples."""
    from elatta_host.protocol import Msg

    from codegen.ir.wire import ADPCM_MAX_SAMPLES

    yield Msg.AUDIO_BEGIN, encode_audio_begin(sample_id, mode), None
    n = len(pcm)
    off = 0
    while off < n:
        if adpcm is None:
            c = chunk or max(1, (link.payload_size() - AUDIO_HDR.size) // 2)
            part = pcm[off : off + c]
            yield Msg.AUDIO, encode_audio(off, part), None
            off += len(part)
            continue
        enc, row = adpcm
        want = chunk or 2 * (link.payload_size() - AUDIO_ADPCM_HDR.size)
        c = min(n - off, max(enc.block, min(want, ADPCM_MAX_SAMPLES) // enc.block * enc.block))
        b = off // enc.block
        codes = enc.codes[row, off : off + c]
        if c % 2:
            codes = np.append(codes, np.uint8(0))
        packed = (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8).tobytes()
        p, i = int(enc.predictor[row, b]), int(enc.step_index[row, b])
        yield Msg.AUDIO_ADPCM, encode_audio_adpcm(off, c, p, i, packed), None
        off += c
    yield Msg.AUDIO_END, encode_audio_end(n), Msg.RESULT


def stream_audio(
    link: Any, sample_id: int, mode: int, pcm: np.ndarray, chunk: int | None = None
) -> InferResult:
    """One clip through the audio mode, its requests submitted and its RESULT waited for (the
    benches and tests; a run pipelines clips instead)."""
    last = None
    for type_, payload, expect in audio_requests(link, sample_id, mode, pcm, chunk):
        t = link.submit(type_, payload, expect=expect)
        if expect is not None:
            last = t
    assert last is not None
    reply = link.wait(last)
    assert reply is not None
    return decode_result(reply.payload, stream=True)


def check_audio(app: AppInfo, max_payload: int, chunk: int | None, wire: str = "raw") -> int | None:
    """The device must serve the audio mode (and, for --wire adpcm, decode ADPCM) and take the
    chunk size; returns the chunk (None: the link's frame size decides)."""
    paths = (app.get("input") or "features").split(",")
    if "pcm" not in paths:
        raise RunError(
            f"--input pcm: the device's firmware serves input={','.join(paths)} only (no audio "
            'mode); rebuild with [target] input = "both" or "pcm"'
        )
    if wire == "adpcm":
        most = int(app.get("adpcm") or 0)
        if most <= 0:
            raise RunError(
                "--wire adpcm: the device's firmware decodes no ADPCM (built by an older "
                "codegen); rebuild it, or use --wire raw"
            )
        if chunk is not None and not (1 <= chunk <= most and chunk % ADPCM_BLOCK == 0):
            raise RunError(
                f"--chunk {chunk} with --wire adpcm: a multiple of {ADPCM_BLOCK} samples up to "
                f"{most} (the device's decode buffer)"
            )
        return chunk
    most = max_chunk_samples(max_payload)
    if chunk is not None and not 1 <= chunk <= most:
        raise RunError(
            f"--chunk {chunk}: the device takes 1..{most} samples per AUDIO frame (MAX_PAYLOAD "
            f"{max_payload} bytes = 4-byte offset + 2 bytes per sample); raise [target] "
            "max_payload or send smaller chunks"
        )
    return chunk


@dataclass
class _Sample:
    """A sample whose requests are in flight: the ticket of the one that answers RESULT."""

    stream: Stream
    index: int
    audio: bool


def _requests(
    link: Any, s: Stream, i: int, chunk: int | None
) -> Iterator[tuple[int, bytes, int | None]]:
    from elatta_host.protocol import Msg

    mode = mode_index(s.mode)
    if s.pcm is not None:
        adpcm = None if s.adpcm is None else (s.adpcm, i)
        yield from audio_requests(link, int(s.ids[i]), mode, s.pcm[i], chunk, adpcm)
    else:
        yield Msg.INFER, encode_infer(int(s.ids[i]), mode, s.x[i]), Msg.RESULT


def _take(device: str, item: _Sample | None, ticket: Any, rec: Recorder, stats: LinkStats) -> None:
    """A finished request: its error, or (a sample's RESULT) its check and record. A sample
    replayed to rebuild the device's state is checked against its record, not recorded again."""
    reply = ticket.result()  # raises the device's ERROR, if any
    if item is None:
        return
    s, i = item.stream, item.index
    try:
        res = decode_result(reply.payload, stream=item.audio)
    except ValueError as exc:
        raise RunError(f"{device}: bad RESULT for {s.key} #{i}: {exc}") from exc
    if rec.has(s.key, i):
        if compare(res, s.expected(i)):
            raise RunError(
                f"{device}: replaying {s.key} #{i} to resume gave another result than the "
                "recorded one"
            )
        return
    rec.add(s, i, device, res)
    stats.samples += 1


def stream_plan(s: Stream, rec: Recorder) -> Iterator[tuple[int, bool]]:
    """(sample, RESET before it) in the order a device must run them so that each answers from
    the state the reference assumes. A fresh stream is RESET then every sample. On a resume the
    holes may be anywhere (lines deleted or rejected mid-file): a continual stream is RESET with
    the best p of the sample before each hole (docs/protocol.md, RESET); cmvn's statistics
    cannot be sent, so its recorded samples before the last hole are replayed (compared, not
    recorded again)."""
    todo = rec.missing(s.key)
    if not todo:
        return
    continual = s.mode in CONTINUAL_MODES
    replay = s.mode in STATEFUL_MODES and not continual  # state only a replay rebuilds
    at = -1
    for i in range(todo[-1] + 1) if replay else todo:
        yield i, at < 0 or (continual and at != i - 1)
        at = i


def run_streams(
    link: Any,
    streams: list[Stream],
    rec: Recorder,
    device: str,
    stop: threading.Event,
    stats: LinkStats,
    chunk: int | None,
) -> None:
    """Every stream's unanswered samples, pipelined: requests go out as the device's window
    allows (`elatta_host.transport.Link.submit`), streams one after the other, and results are
    taken in order as they arrive. Stopping (``stop``) records what has arrived and returns."""
    from elatta_host.protocol import Msg
    from elatta_host.transport import Pipe

    pipe = Pipe(link)

    def take(done: list[tuple[object, Any]]) -> None:
        for item, ticket in done:
            _take(device, item if isinstance(item, _Sample) else None, ticket, rec, stats)

    try:
        for s in streams:
            for i, reset in stream_plan(s, rec):
                if stop.is_set():
                    return
                if reset:
                    p_prev = rec.last_p(s.key, i) if s.mode in CONTINUAL_MODES else None
                    t = link.submit(Msg.RESET, encode_reset(p_prev), expect=Msg.RESET_ACK)
                    take(pipe.put(None, t))
                for type_, payload, expect in _requests(link, s, i, chunk):
                    t = link.submit(type_, payload, expect=expect)
                    key = _Sample(s, i, s.pcm is not None) if expect == Msg.RESULT else None
                    take(pipe.put(key, t))
        take(pipe.drain())
    except Stopped:
        # every RESULT that arrived is kept, in whatever order (a resume fills the holes)
        for item, ticket in list(pipe.items):
            if ticket.done and ticket.error is None and isinstance(item, _Sample):
                take([(item, ticket)])


# A --port link that closed (the QEMU serving it killed and started again on its port, a
# USB-UART that re-enumerates) is opened again, as long as the sessions answer samples: this
# many sessions in a row that answer none end the worker.
MAX_IDLE_REOPENS = 2


def run_device(
    spec: DeviceSpec,
    streams: list[Stream],
    rec: Recorder,
    plan: Plan,
    stop: threading.Event,
    sessions: list[LinkStats],
    chunk: int | None = None,
) -> None:
    """The worker: its streams in order, one device session after another. A --port link
    that closes (the QEMU serving the port was killed, a USB-UART went away) does not end the
    worker: the link is opened again within --budget, the new session says HELLO (a restarted
    device answers it as a new session; `check_device` checks it runs the build), and every
    stream continues from the state the reference assumes, as --resume does (`run_stream`:
    RESET with the best p of the last answered sample, cmvn's recorded prefix replayed). The
    sample in flight when the link closed has no result and is run again. Each session's
    figures are a LinkStats in ``sessions``. A QEMU this host started (--qemu) that dies ends
    the worker: `run` then prints the command that resumes the run."""
    idle = 0
    reopen_until: float | None = None  # while the link is being opened again
    while True:
        stats = sessions[-1]
        try:
            run_session(spec, streams, rec, plan, stop, stats, chunk)
            return
        except LinkClosed as exc:  # could not open it: before the first session, the end
            if reopen_until is None or stop.is_set():
                raise
            if time.monotonic() >= reopen_until:
                raise RunError(
                    f"{spec.name}: the link closed and could not be opened again within the "
                    f"{spec.budget:g} s budget (raise it with --budget): {exc}; last good "
                    f"sample: {rec.last_good.get(spec.name, 'none')}"
                ) from exc
            time.sleep(0.1)
            continue
        except RunError as exc:
            cause = exc.__cause__
            if spec.url is None or not isinstance(cause, LinkClosed) or stop.is_set():
                raise  # a QEMU this host started and lost: stop, with the resume command
            idle = 0 if stats.samples > 0 else idle + 1
            if idle > MAX_IDLE_REOPENS:
                raise
            stats.note = "the link closed; opened again as a new session"
            sessions.append(LinkStats(spec.name))
            reopen_until = time.monotonic() + spec.budget


def run_session(
    spec: DeviceSpec,
    streams: list[Stream],
    rec: Recorder,
    plan: Plan,
    stop: threading.Event,
    stats: LinkStats,
    chunk: int | None = None,
) -> None:
    from elatta_host.device import Device

    with open_device(spec) as (link, state):
        stats.session = f"{link.session:08x}"
        synced = synced_to = 0
        try:
            dev = Device(link)
            # the device may still boot (QEMU, a board behind U-Boot) or chew through line noise
            # sent before this session: the time budget of --budget, no try count
            info = dev.hello(sync_timeout=spec.budget)
            replayed0 = info.frames_replayed
            stats.stack_used, stats.stack_size = info.stack_used, info.stack_size
            app = parse_description(info.app)
            check_device(app, plan.manifest)
            audio = any(s.pcm is not None for s in streams)
            if audio:
                wire = "adpcm" if any(s.adpcm is not None for s in streams) else "raw"
                chunk = check_audio(app, info.max_payload, chunk, wire)
            baud = spec.baud_switch
            if baud is not None and info.link is not None:
                want = baud if baud > 0 else default_baud(info.link.rates, info.baud)
                switch = dev.switch_baud(want)
                stats.baud = switch.baud
                stats.note = switch.note
            # HELLOs sent while the device booted (and to confirm a rate) are not re-sends
            synced, synced_to = link.retransmits, link.resent_on_timeout
            link.stop = stop
            run_streams(link, streams, rec, spec.name, stop, stats, chunk)
            link.stop = None
            if stop.is_set():
                stats.note = "stopped (Ctrl-C)"
                return
            try:
                info = dev.hello()
            except LinkError as exc:  # every sample is recorded: the figures are what is lost
                stats.note = f"no final INFO (replays and stack high-water unknown): {exc}"
            else:
                stats.replayed = info.frames_replayed - replayed0
                stats.stack_used = info.stack_used
        except LinkError as exc:
            last = rec.last_good.get(spec.name, "none")
            stats.error = (
                f"{spec.name} {what_failed(exc)} ({state()}): {exc}; last good sample: {last}"
            )
            raise RunError(stats.error) from exc
        except RunError as exc:
            stats.error = str(exc)
            raise
        finally:
            stats.retransmits = link.retransmits - synced
            stats.resent_on_timeout = link.resent_on_timeout - synced_to
            stats.resent_on_damage = link.resent_on_damage
            stats.frames_sent = link.frames_sent
            stats.replies_asked = link.replies_asked
            stats.reply_parts = link.reply_parts
            stats.damaged = link.damaged_requests
            stats.bad_frames = link.bad_frames
            stats.stale = link.stale_replies
            stats.rto_infer = round(link.rto(), 4)


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
    interrupted: bool = False  # Ctrl-C: the run stopped early, every result so far recorded


def run_config(plan: Plan, args_target: dict[str, Any], chunk: int | None = None) -> dict[str, Any]:
    audio = any(s.pcm is not None for s in plan.streams)
    wire = "adpcm" if any(s.adpcm is not None for s in plan.streams) else "raw"
    extra = {"input": "pcm", "chunk": chunk, "wire": wire} if audio else {}
    return extra | {
        "format": RUN_FORMAT,
        "build_id": plan.manifest.get("firmware", {}).get("build_id"),
        "inputs": plan.manifest["inputs"],
        "data": plan.data_info,
        "selection": plan.selection.digest(),
        "modes": list(plan.selection.modes),
        "target_kind": args_target["kind"],
    }


RESTART_HINT = "--force-restart (discards them) or another --report directory"


def prepare_output(
    out: Path, cfg: dict[str, Any] | None, *, resume: bool, force_restart: bool
) -> None:
    """Check what OUT holds against what this run asks, before anything is written: recorded
    results are only ever kept (--resume, same run.json) or discarded on --force-restart.
    ``cfg`` None: the checks that need no plan (`run` makes them before the references)."""
    if resume and force_restart:
        raise RunError(
            "--resume keeps the recorded results, --force-restart discards them: pick one"
        )
    results, cfg_path = out / "results.jsonl", out / "run.json"
    n = count_results(results)
    if force_restart:
        if cfg is not None:
            for f in (results, out / SESSIONS):
                f.unlink(missing_ok=True)
    elif resume:
        if not cfg_path.is_file():
            raise RunError(
                f"--resume: {cfg_path} is missing, so the {n} results in {results} cannot be "
                "matched to a build, data set and selection; nothing was changed. To start "
                f"over, run without --resume and with {RESTART_HINT}"
            )
        try:
            old = json.loads(cfg_path.read_text())
        except (OSError, ValueError) as exc:
            raise RunError(
                f"--resume: {cfg_path} cannot be read ({exc}); nothing was changed. To start "
                f"over, run without --resume and with {RESTART_HINT}"
            ) from exc
        if cfg is not None and (not isinstance(old, dict) or _resolved(old) != _resolved(cfg)):
            old = _resolved(old) if isinstance(old, dict) else {}
            new = _resolved(cfg)
            differ = sorted(k for k in {*old, *new} if old.get(k) != new.get(k))
            raise RunError(
                f"--resume: {out} holds another run ({', '.join(differ)} differ from this "
                f"command's); its {n} results were left as they are. To start over, run without "
                f"--resume and with {RESTART_HINT}"
            )
    elif n:
        raise RunError(
            f"{out} already holds {n} results: --resume continues that run; to start over use "
            f"{RESTART_HINT}"
        )


SESSIONS = "sessions.jsonl"
SHOWN_PROBLEMS = 20  # rejected recorded lines named one by one (all are in REJECTED)


def read_sessions(path: Path) -> list[dict[str, Any]]:
    """Every earlier session's figures; a line that is not a JSON object is skipped (the
    figures are statistics, never a verdict)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict):
            out.append(d)
    return out


RESULTS_KEY = "results_key"  # run.json: the key of the results lines' digests


def _results_key(out: Path) -> str:
    """The key an earlier session of this run wrote into run.json ("": none, so every line
    without a digest of it is redone)."""
    try:
        old = json.loads((out / "run.json").read_text())
    except (OSError, ValueError):
        return ""
    key = old.get(RESULTS_KEY) if isinstance(old, dict) else None
    return key if isinstance(key, str) and key else secrets.token_hex(8)


def _resolved(cfg: dict[str, Any]) -> dict[str, Any]:
    """run.json with every "path" resolved: the same --data spelled relative or absolute, or
    through a symlink, is the same run; the results' key is no part of what the run is."""

    def walk(v: Any, key: str = "") -> Any:
        if isinstance(v, dict):
            return {k: walk(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if key == "path" and isinstance(v, str) and v:
            return str(Path(v).expanduser().resolve())
        return v

    return {k: v for k, v in dict(walk(cfg)).items() if k != RESULTS_KEY}


def execute(
    plan: Plan,
    specs: list[DeviceSpec],
    out: Path,
    *,
    resume: bool,
    target: dict[str, Any],
    progress: bool = True,
    force_restart: bool = False,
    chunk: int | None = None,
) -> RunOutcome:
    """The run of ``plan`` on ``specs`` into ``out``, which it holds (host/reportdir.py:
    another run on the same directory is refused, naming this one)."""
    with Lock(out, "codegen run" if not sys.argv else shlex.join(sys.argv)):
        return _execute(plan, specs, out, resume=resume, target=target, progress=progress,
                        force_restart=force_restart, chunk=chunk)  # fmt: skip


def _execute(
    plan: Plan,
    specs: list[DeviceSpec],
    out: Path,
    *,
    resume: bool,
    target: dict[str, Any],
    progress: bool = True,
    force_restart: bool = False,
    chunk: int | None = None,
) -> RunOutcome:
    from elatta_host.report import build_report, write_report

    from codegen.base.progress import bar as progress_bar

    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    cfg = run_config(plan, target, chunk)
    prepare_output(out, cfg, resume=resume, force_restart=force_restart)
    if not resume:  # no results recorded (checked above): no earlier session belongs to this run
        (out / SESSIONS).unlink(missing_ok=True)
    # the results lines' digests (host/reportdir.py) are keyed per run: a resume keeps the key
    key = _results_key(out) if resume else secrets.token_hex(8)
    # resolved: a resume from another directory or with another spelling finds the same run
    write_file(out / "run.json", json.dumps(_resolved(cfg) | {RESULTS_KEY: key}, indent=2) + "\n")
    blocks = [b for b in shard(plan.streams, len(specs)) if b]
    t0 = time.monotonic()
    stop = threading.Event()
    interrupted = False
    errors: list[str] = []
    # each worker's sessions: one, and another each time its link closed and was opened again
    per_worker = [[LinkStats(spec.name)] for spec in specs[: len(blocks)]]
    with progress_bar(plan.total, "device", "sample", enabled=progress) as bar:
        rec = Recorder(plan, results, bar)
        rec.key = key
        done0 = rec.load()
        for line in rec.problems[:SHOWN_PROBLEMS]:
            bar.write(f"resume: {line}; the sample is redone", file=sys.stderr)
        if len(rec.problems) > SHOWN_PROBLEMS:
            bar.write(
                f"resume: {len(rec.problems) - SHOWN_PROBLEMS} more recorded lines did not hold "
                f"(all in {out / REJECTED})",
                file=sys.stderr,
            )
        bar.update(done0)
        bar.set_postfix(mismatches=rec.mismatches)
        try:
            with ThreadPoolExecutor(max_workers=len(blocks)) as pool:
                futs = [
                    pool.submit(run_device, spec, block, rec, plan, stop, st, chunk)
                    for spec, block, st in zip(specs, blocks, per_worker, strict=False)
                ]
                try:
                    for fut in futs:
                        while True:
                            try:
                                fut.result(timeout=0.5)
                                break
                            except TimeoutError:
                                continue
                            except (RunError, LinkError) as exc:
                                errors.append(str(exc))
                                bar.write(f"error: {exc}", file=sys.stderr)
                                break
                except KeyboardInterrupt:
                    # every link looks at the flag at least every STOP_POLL seconds; what has
                    # arrived is recorded, the sessions end, the report is written below
                    interrupted = True
                    stop.set()
                    bar.write("interrupted: stopping, every result so far is kept", file=sys.stderr)
                    for fut in futs:
                        try:
                            fut.result()
                        except (RunError, LinkError):
                            pass
        finally:
            rec.close()
            stats = [st for sessions in per_worker for st in sessions]
            regular_file(out / SESSIONS, "sessions file")
            with open_append(out / SESSIONS) as f:
                for st in stats:
                    f.write(json.dumps(st.to_json(), separators=(",", ":")) + "\n")
    seconds = time.monotonic() - t0
    new = rec.count - done0
    unknown = [st.device for st in stats if st.replayed is None]
    run_facts = {
        "jobs": len(blocks),
        "seconds": round(seconds, 3),
        "samples_this_session": new,
        "samples_per_s": round(new / seconds, 2) if seconds > 0 else None,
        "retransmits": sum(st.retransmits for st in stats),
        "resends_per_sample": round(sum(st.retransmits for st in stats) / new, 4) if new else None,
        "damaged_requests": sum(st.damaged for st in stats),
        "bad_frames": sum(st.bad_frames for st in stats),
        # this session's replays, from each device's INFO at its start and end
        "replayed": sum(st.replayed or 0 for st in stats),
        "replayed_unknown": unknown,
        "resumed_from": done0,
        # every recorded line was checked against the reference; these did not hold
        "resume": {
            "recorded_lines": rec.recorded_lines,
            "kept": done0,
            "rejected": len(rec.problems),
            "problems": rec.problems[:SHOWN_PROBLEMS],
        },
        "workers": [st.to_json() for st in stats],
        "errors": errors,
    }
    sessions = read_sessions(out / SESSIONS)
    report = build_report(plan, rec.answered(), target, run_facts, sessions)
    write_report(report, out)
    return RunOutcome(report, tuple(errors), interrupted)


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{v}: must be a positive number")
    return v


def build_baud(build: Path) -> int:
    """The rate the build's firmware boots at (its firmware.json), 115200 when unknown."""
    try:
        fw = json.loads((build / "firmware.json").read_text())
        return int(fw["console"]["baud"])
    except (OSError, ValueError, KeyError, TypeError):
        return 115_200


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
        help="boot BUILD/fw.elf in qemu-system-arm (its target's machine), one per job",
    )
    g.add_argument(
        "--port",
        action="append",
        metavar="DEV",
        help="serial device or pyserial URL of a board (repeat for several boards)",
    )
    p.add_argument(
        "--baud",
        type=_positive_int,
        metavar="RATE",
        help="the rate to switch the link to after HELLO (the port opens at the build's rate; "
        "default: the fastest the device's UART offers up to 921600, which common USB-UART "
        "bridges carry; the build's rate: no switch). `codegen device --port P` lists the rates",
    )
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
    p.add_argument(
        "--input",
        choices=("features", "pcm"),
        default="features",
        help="features: INFER with the host's integer features (default); pcm: stream each "
        "clip's mixed audio through the device's audio mode (integer MFCC and one encoder step "
        f"per frame on the device; modes {', '.join(STREAM_MODES)})",
    )
    p.add_argument(
        "--chunk",
        type=int,
        metavar="N",
        help="--input pcm: samples per AUDIO frame (default: as many as the link's frame size "
        "carries, which follows the line's measured damage)",
    )
    p.add_argument(
        "--wire",
        choices=("raw", "adpcm"),
        default="raw",
        help="--input pcm: how the audio travels: raw int16 PCM (32 KB a second), or IMA-ADPCM "
        "(4 bits a sample, 8 KB a second; the device decodes it, and every reference computes "
        "on the decoded audio; accuracy effect: docs/protocol.md)",
    )
    p.add_argument("--jobs", type=int, default=1, help="QEMU instances (with --qemu)")
    p.add_argument(
        "--resume", action="store_true", help="continue the run in --report after an interruption"
    )
    p.add_argument(
        "--force-restart",
        action="store_true",
        help="discard the results already in --report and start the run over",
    )
    p.add_argument("--report", required=True, type=Path, help="output directory")
    p.add_argument(
        "--no-icount",
        dest="icount",
        action="store_false",
        help="QEMU without -icount: faster link, timer ticks not deterministic",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds before a re-send until round trips are measured, and the ceiling of the "
        f"adaptive time-out ({DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        metavar="S",
        help="seconds one request may take, re-sends included, before the device counts as "
        f"lost ({DEFAULT_BUDGET:g})",
    )
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def resume_command(args: argparse.Namespace, modes: tuple[str, ...]) -> str:
    """The command line that continues this run: every setting that selects the run (so
    run.json matches), the link's, and --resume in place of --force-restart."""
    import shlex

    cmd = ["codegen", "run", "--build", str(args.build), "--data", str(args.data)]
    if args.qemu:
        cmd += ["--qemu", "--jobs", str(args.jobs)]
        if not args.icount:
            cmd.append("--no-icount")
    else:
        for url in args.port:
            cmd += ["--port", url]
        cmd += ["--baud", str(args.baud)]
    for m in modes:
        cmd += ["--mode", m]
    if args.limit is not None:
        cmd += ["--limit", str(args.limit)]
    if args.stream_segment is not None:
        cmd += ["--stream-segment", str(args.stream_segment)]
        cmd += ["--stream-order", args.stream_order, "--stream-seed", str(args.stream_seed)]
    cmd += ["--input", args.input]
    if args.input == "pcm" and args.wire != "raw":
        cmd += ["--wire", args.wire]
    if args.chunk is not None:
        cmd += ["--chunk", str(args.chunk)]
    cmd += ["--timeout", f"{args.timeout:g}", "--budget", f"{args.budget:g}"]
    if not args.progress:
        cmd.append("--no-progress")
    cmd += ["--report", str(args.report), "--resume"]
    return shlex.join(cmd)


def check_elf(build: Path) -> None:
    """fw.elf must be the ELF the build made (firmware.json's sha256): a truncated or replaced
    one is named here, not met as a device that never answers."""
    import hashlib

    try:
        want = json.loads((build / "firmware.json").read_text()).get("elf_sha256")
    except (OSError, ValueError, AttributeError):
        return
    if not want:
        return  # a build from before the hash was recorded
    have = hashlib.sha256((build / "fw.elf").read_bytes()).hexdigest()
    if have != want:
        raise RunError(
            f"{build / 'fw.elf'} is not the ELF this build made (sha256 {have[:16]}…, "
            f"firmware.json says {want[:16]}…): it was changed or truncated; run `codegen build` "
            "again"
        )


def check_port(url: str, baud: int) -> None:
    """The port opens (a device path, a pyserial URL): said at once, not after the references."""
    import serial

    try:
        port = serial.serial_for_url(url, baudrate=baud, timeout=0, do_not_open=False)
    except (serial.SerialException, OSError, ValueError) as exc:
        raise RunError(
            f"--port {url}: cannot open it ({exc}); check the device name (`ls -l "
            "/dev/serial/by-id/`), that no other program holds it, and your access to it (the "
            "dialout group); nothing was run"
        ) from None
    port.close()


def run(args: argparse.Namespace) -> int:
    modes = tuple(dict.fromkeys(args.mode)) if args.mode else DEFAULT_MODES
    if args.jobs < 1:
        raise RunError("--jobs must be >= 1")
    if args.limit is not None and args.limit < 1:
        raise RunError("--limit must be >= 1")
    if args.chunk is not None and args.input != "pcm":
        raise RunError("--chunk sets the audio chunk size: it needs --input pcm")
    if args.wire != "raw" and args.input != "pcm":
        raise RunError(f"--wire {args.wire} codes the audio on the link: it needs --input pcm")
    if args.chunk is not None and args.chunk < 1:
        raise RunError(f"--chunk {args.chunk}: must be >= 1 sample")
    for flag, v in (("--timeout", args.timeout), ("--budget", args.budget)):
        if not v > 0:
            raise RunError(f"{flag} {v}: must be a positive number of seconds")
    if args.resume and args.force_restart:
        raise RunError(
            "--resume keeps the recorded results, --force-restart discards them: pick one"
        )
    if not (args.build / "manifest.json").is_file():
        raise RunError(
            f"--build {args.build}: no manifest.json there (not a `codegen build` output "
            "directory); pass the directory `codegen build --out` wrote"
        )
    elf = args.build / "fw.elf"
    if args.qemu:
        if not elf.is_file():
            raise RunError(f"{elf} not found: `codegen build` without --no-elf makes it")
        check_elf(args.build)
        from elatta_host.qemu import build_uart, qemu_machine

        uart = build_uart(elf)
        specs = [
            DeviceSpec(
                f"qemu{j}",
                elf=elf,
                uart=uart,
                icount=args.icount,
                timeout=args.timeout,
                budget=args.budget,
                baud_switch=args.baud,  # QEMU's UART has no rate: a switch only when asked
            )
            for j in range(args.jobs)
        ]
        target = {
            "kind": "qemu",
            "machine": qemu_machine(elf),
            "uart": uart,
            "icount": args.icount,
            "ticks": "QEMU icount ticks"
            if args.icount
            else "global-timer ticks (QEMU without -icount: not deterministic)",
        }
    else:
        boot = build_baud(args.build)
        specs = [
            DeviceSpec(
                f"port{j}",
                url=u,
                baud=boot,
                timeout=args.timeout,
                budget=args.budget,
                # a serial device switches to the fastest rate by default; a socket (a network
                # UART, a proxy, QEMU) has no line rate to gain, so only when asked
                baud_switch=args.baud if args.baud or "://" in u else 0,
            )
            for j, u in enumerate(args.port)
        ]
        target = {
            "kind": "socket" if all("://" in u for u in args.port) else "serial",
            "port": list(args.port),
            "baud": args.baud or "auto",
            "ticks": "Cortex-A9 global timer ticks (PERIPHCLK)",
        }
    if args.port:  # a serial device opens before anything expensive is prepared (a socket is
        for url in args.port:  # not probed: a proxy or QEMU may take one connection only)
            if "://" not in url:
                check_port(url, build_baud(args.build))
    # the report directory is this run's before anything expensive (host/reportdir.py)
    with Lock(args.report, shlex.join(["codegen", *sys.argv[1:]])) as lock:
        if lock.stale is not None:
            print(
                f"note: {args.report} was left locked by a run that is gone "
                f"({lock.stale.describe()}); taken over",
                file=sys.stderr,
            )
        return _run_locked(args, modes, specs, target)


def _run_locked(
    args: argparse.Namespace,
    modes: tuple[str, ...],
    specs: list[DeviceSpec],
    target: dict[str, Any],
) -> int:
    prepare_output(args.report, None, resume=args.resume, force_restart=args.force_restart)
    if args.qemu:
        from elatta_host.qemu import stop_on_signals

        stop_on_signals()  # SIGTERM/SIGHUP take the QEMU children down with this process
    print(f"preparing: reference for {', '.join(modes)} on {args.data} ...", file=sys.stderr)
    plan = make_plan(
        args.build,
        args.data,
        modes,
        args.limit,
        stream_from_args(args),
        input_kind=args.input,
        wire=args.wire,
        progress=args.progress and os.environ.get("CODEGEN_NO_PROGRESS") is None,
    )
    target["build_id"] = plan.manifest.get("firmware", {}).get("build_id")
    busy = min(len(specs), len(plan.streams))
    print(
        f"{plan.total} samples in {len(plan.streams)} streams over {busy} device(s)",
        file=sys.stderr,
    )
    per_mode = plan.total // max(1, len(modes))
    if args.limit is not None and per_mode > args.limit:
        print(
            f"note: --limit {args.limit}: every one of the {len(plan.selection.per_condition)} "
            f"noise x SNR conditions gets at least one clip, so {per_mode} clips per mode",
            file=sys.stderr,
        )
    if busy < len(specs):
        print(
            f"note: --jobs {len(specs)}: {len(plan.streams)} stream(s) (a stream never leaves "
            f"its device; --stream-segment makes one continual stream per mode), so {busy} "
            "device(s) work",
            file=sys.stderr,
        )
    wanted = (plan.selection.stream or {}).get("segment_len")
    seg = segment_lengths(plan.streams)
    if wanted is not None and seg["max"] < wanted:
        # --limit deals clips over every condition; a condition holds fewer clips than a segment
        print(
            f"note: --stream-segment {wanted}: --limit {args.limit} leaves "
            f"{seg['min']} to {seg['max']} clips per condition, so the {seg['segments']} segments "
            f"as streamed are that long; raise --limit to "
            f"{wanted * len(plan.selection.per_condition)} for full segments",
            file=sys.stderr,
        )
    outcome = execute(
        plan,
        specs,
        args.report,
        resume=args.resume,
        force_restart=args.force_restart,
        target=target,
        progress=args.progress and os.environ.get("CODEGEN_NO_PROGRESS") is None,
        chunk=args.chunk,
    )
    from elatta_host.report import format_summary

    print(format_summary(outcome.report))
    print(f"wrote {args.report / 'report.json'}, report.md, report.png, results.jsonl")
    if outcome.interrupted:
        print(
            f"codegen run: interrupted; continue with: {resume_command(args, modes)}",
            file=sys.stderr,
        )
        return 130
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
            print(
                f"codegen run: incomplete; continue with: {resume_command(args, modes)}",
                file=sys.stderr,
            )
        return 1
    be = outcome.report["bit_exact"]
    return 0 if be["mismatches"] == 0 and be["compared"] == plan.total else 1
