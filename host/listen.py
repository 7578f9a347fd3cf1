"""`codegen listen`: keyword spotting on a live stream (docs/stream.md).

The audio (a WAV file, an evaluation stream of `codegen data --stream`, or raw int16 PCM on
stdin) goes to the device's continuous mode in STREAM chunks, pipelined through the windowed
link (`elatta_host.transport`); each chunk's DETECTIONS says what its samples completed, and
every detection is printed as it arrives, with its time in the stream. The integer reference
of the same stream (`codegen.intref.listen.StreamReference`) runs a little behind, on the same
samples, and every record the device sent is compared with it: the detections always, and with
``--records`` (the default) every window's class, score, flags and logits. A re-sent chunk is
answered from the device's reply record, so a detection is neither lost nor made twice.

Memory stays flat however long the stream: the audio is read as it goes, at most a pipe of
chunks is in flight, the reference holds the last T frames, and the records go to
``REPORT/windows.jsonl`` and ``REPORT/detections.jsonl`` as they are compared; ``report.json``
holds the verdict, the device's ticks per second of audio, the real-time factor, the host's
resident memory over the run, and, with labels, misses, false accepts per hour and delays.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import struct
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt
from elatta_host.infer import mode_index, parse_description
from elatta_host.plan import RunError, check_input, load_build
from elatta_host.protocol import Msg
from elatta_host.run import FLAGS, DeviceSpec, build_baud, check_device, open_device
from elatta_host.transport import DEFAULT_BUDGET, DEFAULT_TIMEOUT, Link, Pipe

from codegen.data.common import SAMPLE_RATE
from codegen.intref.listen import (
    FLAG_DETECT,
    DetectorConfig,
    StreamReference,
    WindowRecord,
    check_stream_mode,
    keyword_mask,
)
from codegen.ir import wire

HELP = (
    "keyword spotting on a live stream: a WAV file, an evaluation stream or raw PCM on stdin "
    "through the device's continuous mode, each detection printed as it happens and checked "
    "bit for bit against the integer reference"
)
BEGIN = struct.Struct(wire.STREAM_BEGIN.fixed_format)
CHUNK_HDR = struct.Struct(wire.STREAM.fixed_format)
ADPCM_HDR = struct.Struct(wire.STREAM_ADPCM.fixed_format)
DET_HDR = struct.Struct(wire.DETECTIONS.fixed_format)
SUMMARY = struct.Struct(wire.STREAM_SUMMARY.fixed_format)
END = struct.Struct(wire.STREAM_END.fixed_format)
READ_BLOCK = 4096  # samples read from the source at a time
REF_BATCH = 2 * SAMPLE_RATE  # samples the reference takes at once (its windows in one batch)
RSS_EVERY = 30.0  # s of audio between two samples of the host's resident memory
POLL_SLICE = 0.005  # s: --realtime, the longest sleep between two looks at the link


# ----------------------------------------------------------------------------- codec


def encode_stream_begin(mode: int, cfg: DetectorConfig) -> bytes:
    """STREAM_BEGIN: the mode byte and the detector's settings."""
    return BEGIN.pack(
        mode, int(cfg.records), cfg.every, cfg.smooth, cfg.threshold, cfg.suppress, cfg.keywords
    )


def encode_stream_chunk(offset: int, pcm: npt.ArrayLike) -> bytes:
    """STREAM: int16 samples, the first being sample ``offset`` of the stream."""
    x = np.asarray(pcm)
    if x.ndim != 1 or x.dtype != np.int16:
        raise ValueError(f"stream chunks must be int16 [n], got {x.dtype} {x.shape}")
    return CHUNK_HDR.pack(offset) + x.astype("<i2").tobytes()


def encode_stream_end(samples: int) -> bytes:
    return END.pack(samples)


def start_state(x: npt.NDArray[np.int16]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The encoder's state at the start of pieces [n, samples] of a stream coded on their own
    (each STREAM_ADPCM carries its state, so any is allowed): the first sample as the
    prediction, and the step whose size is nearest the mean |difference| of the first 16
    samples, so the first codes do not spend samples growing the step from its smallest."""
    from codegen.base.adpcm import INDEX_MAX, STEP_TABLE

    d = np.abs(np.diff(x[:, :17].astype(np.int64), axis=1)).mean(axis=1) if x.shape[1] > 1 else 0
    steps = np.asarray(STEP_TABLE, np.float64)
    idx = np.clip(np.searchsorted(steps, np.asarray(d, np.float64)), 0, INDEX_MAX)
    return x[:, 0].astype(np.int64), idx.astype(np.int64)


def adpcm_chunks(
    pcm: npt.NDArray[np.int16],
) -> list[tuple[bytes, npt.NDArray[np.int16]]]:
    """Pieces [n, samples] of a stream as STREAM_ADPCM blocks, each coded on its own from
    `start_state`: (the block: predictor, step index, reserved, codes; the samples the device
    decodes from it)."""
    from codegen.base.adpcm import decode, encode

    enc = encode(pcm, pcm.shape[1], start=start_state(pcm))
    out = decode(enc)
    blocks = []
    for r in range(pcm.shape[0]):
        c = enc.codes[r]
        if len(c) % 2:
            c = np.append(c, np.uint8(0))
        packed = (c[0::2] | (c[1::2] << 4)).astype(np.uint8).tobytes()
        head = struct.pack("<hBB", int(enc.predictor[r, 0]), int(enc.step_index[r, 0]), 0)
        blocks.append((head + packed, out[r]))
    return blocks


@dataclass(frozen=True)
class Detection:
    frame: int  # the frame that completed the detecting window
    cls: int
    score: int  # smoothed probability, Q0.15


@dataclass(frozen=True)
class Detections:
    """One DETECTIONS: the chunk's offset, the frames so far, its detections and, when asked
    for, its windows' records."""

    offset: int
    frames: int
    detections: tuple[Detection, ...]
    windows: tuple[WindowRecord, ...]


def decode_detections(payload: bytes, n_classes: int) -> Detections:
    """DETECTIONS field by field as codegen.ir.wire describes it; a wrong size is refused."""
    if len(payload) < DET_HDR.size:
        raise ValueError(f"DETECTIONS of {len(payload)} bytes, expected >= {DET_HDR.size}")
    offset, frames, nw, nd = DET_HDR.unpack_from(payload)
    want = wire.DETECTIONS.size(nd=nd, nw=nw, C=n_classes)
    if len(payload) != want:
        raise ValueError(
            f"DETECTIONS of {len(payload)} bytes, expected {want} for {nd} detections and {nw} "
            f"windows of C={n_classes}"
        )
    o = DET_HDR.size
    arrays: dict[str, tuple[int, ...]] = {}
    for f in wire.DETECTIONS.arrays:
        n = {"nd": nd, "nw": nw, "nw*C": nw * n_classes}[str(f.count)]
        arrays[f.name] = struct.unpack_from(f"<{n}{wire.TYPES[f.type][0]}", payload, o)
        o += n * f.size
    dets = tuple(
        Detection(*v)
        for v in zip(arrays["det_frame"], arrays["det_class"], arrays["det_score"], strict=True)
    )
    lg = arrays["win_logits"]
    wins = tuple(
        WindowRecord(
            arrays["win_frame"][i],
            arrays["win_class"][i],
            arrays["win_score"][i],
            arrays["win_flags"][i],
            tuple(lg[i * n_classes : (i + 1) * n_classes]),
        )
        for i in range(nw)
    )
    return Detections(offset, frames, dets, wins)


@dataclass(frozen=True)
class StreamSummary:
    samples: int
    frames: int
    windows: int
    detections: int
    ticks_frontend: int
    ticks_encoder: int
    ticks_adapt: int
    ticks_detect: int
    ticks_total: int
    ticks_link: int
    link_bytes: int

    def per_second(self) -> dict[str, float]:
        """Ticks per second of audio of each part, and of the device's whole work."""
        s = max(self.samples, 1) / SAMPLE_RATE
        out = {
            k: round(getattr(self, k) / s, 1)
            for k in (
                "ticks_frontend",
                "ticks_encoder",
                "ticks_adapt",
                "ticks_detect",
                "ticks_total",
                "ticks_link",
            )
        }
        out["ticks_device"] = round((self.ticks_total + self.ticks_link) / s, 1)
        return out


def decode_summary(payload: bytes) -> StreamSummary:
    if len(payload) != SUMMARY.size:
        raise ValueError(f"STREAM_SUMMARY of {len(payload)} bytes, expected {SUMMARY.size}")
    return StreamSummary(*SUMMARY.unpack(payload))


# ----------------------------------------------------------------------------- sources


def stdin_blocks(stream: BinaryIO, block: int = READ_BLOCK) -> Iterator[npt.NDArray[np.int16]]:
    """Raw little-endian int16 mono PCM at 16 kHz, read as it comes (an odd last byte is
    dropped)."""
    carry = b""
    while True:
        raw = stream.read(2 * block)
        if not raw:
            return
        raw = carry + raw
        n = len(raw) // 2 * 2
        carry = raw[n:]
        if n:
            yield np.frombuffer(raw[:n], "<i2").astype(np.int16)


def rss_mb() -> float:
    """The host process's resident memory now (Linux /proc/self/statm), MB."""
    import os

    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 1e6, 2)


# ----------------------------------------------------------------------------- the session


@dataclass
class Verdict:
    """The comparison with the integer reference, kept as it goes."""

    windows: int = 0  # window records compared
    detections: int = 0  # detections compared
    mismatches: int = 0
    first_mismatch: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "windows_compared": self.windows,
            "detections_compared": self.detections,
            "mismatches": self.mismatches,
            "first_mismatch": self.first_mismatch,
        }


def _window_json(w: WindowRecord) -> dict[str, Any]:
    return {
        "frame": w.frame,
        "class": w.cls,
        "score": w.score,
        "flags": w.flags,
        "logits": list(w.logits),
    }


@dataclass
class Checker:
    """Device records against the reference's, in stream order (each queue bounded by the
    reference's lag, REF_BATCH samples)."""

    ref: StreamReference
    records: bool
    out_windows: Any  # text file: windows.jsonl
    verdict: Verdict = field(default_factory=Verdict)
    device_windows: deque[WindowRecord] = field(default_factory=deque)
    device_dets: deque[Detection] = field(default_factory=deque)
    ref_windows: deque[WindowRecord] = field(default_factory=deque)
    pending: list[npt.NDArray[np.int16]] = field(default_factory=list)
    pending_n: int = 0

    def audio(self, pcm: npt.NDArray[np.int16], force: bool = False) -> None:
        if len(pcm):
            self.pending.append(pcm)
            self.pending_n += len(pcm)
        if self.pending_n >= REF_BATCH or (force and self.pending_n):
            self.ref_windows.extend(self.ref.push(np.concatenate(self.pending)))
            self.pending, self.pending_n = [], 0
        self._compare()

    def device(self, d: Detections) -> None:
        self.device_windows.extend(d.windows)
        self.device_dets.extend(d.detections)
        self._compare()

    def _mismatch(self, what: str, dev: Any, ref: Any) -> None:
        self.verdict.mismatches += 1
        if self.verdict.first_mismatch is None:
            self.verdict.first_mismatch = {"what": what, "device": dev, "reference": ref}

    def _compare(self) -> None:
        while self.ref_windows:
            r = self.ref_windows[0]
            detects = bool(r.flags & FLAG_DETECT)
            if (self.records and not self.device_windows) or (detects and not self.device_dets):
                return  # the device's answer for this window is not in yet
            self.ref_windows.popleft()
            if self.records:
                w = self.device_windows.popleft()
                self.verdict.windows += 1
                if w != r:
                    self._mismatch("window", _window_json(w), _window_json(r))
                line = _window_json(w) | {"equal": w == r}
                self.out_windows.write(json.dumps(line, separators=(",", ":")) + "\n")
            if detects:
                d = self.device_dets.popleft()
                self.verdict.detections += 1
                if (d.frame, d.cls, d.score) != (r.frame, r.cls, r.score):
                    want = {"frame": r.frame, "cls": r.cls, "score": r.score}
                    self._mismatch("detection", d.__dict__, want)

    def finish(self) -> None:
        self.audio(np.zeros(0, np.int16), force=True)
        left = len(self.device_dets) + (len(self.device_windows) if self.records else 0)
        if left or self.ref_windows:
            self._mismatch(
                "count",
                {
                    "windows_left": len(self.device_windows),
                    "detections_left": len(self.device_dets),
                },
                {"windows_left": len(self.ref_windows)},
            )


@dataclass
class Listener:
    """One stream through the device's continuous mode: `feed` submits chunks and takes the
    answers that are in, `end` closes the stream. ``on_detection(detection, wall_s)`` is
    called as each detection arrives."""

    link: Link
    q: Any
    mode: str
    cfg: DetectorConfig
    checker: Checker
    on_detection: Callable[[Detection, float], None]
    chunk: int | None = None  # samples per STREAM (None: as the link's frame size carries)
    realtime: bool = False
    wire: str = "raw"  # or "adpcm": STREAM_ADPCM blocks of at most ADPCM_MAX_SAMPLES
    pipe: Pipe = field(init=False)
    offset: int = 0
    started: float = 0.0
    hop: int = 0

    def __post_init__(self) -> None:
        self.pipe = Pipe(self.link)
        self.hop = self.q.mfcc.params.hop_length

    def most(self) -> int:
        """Samples one chunk may carry: the frame's payload, and at most STREAM_MAX_WINDOWS
        windows completed (docs/stream.md)."""
        by_windows = (wire.STREAM_MAX_WINDOWS - 1) * self.cfg.every * self.hop
        if self.wire == "adpcm":
            by_frame = min(wire.ADPCM_MAX_SAMPLES, 2 * (self.link.payload_size() - ADPCM_HDR.size))
        else:
            by_frame = max(1, (self.link.payload_size() - CHUNK_HDR.size) // 2)
        return max(1, min(self.chunk or by_frame, by_frame, by_windows))

    def begin(self) -> None:
        self.started = time.monotonic()
        t = self.link.submit(
            Msg.STREAM_BEGIN, encode_stream_begin(mode_index(self.mode), self.cfg), expect=None
        )
        self._take(self.pipe.put(None, t))

    def _take(self, done: list[tuple[object, Any]]) -> None:
        for key, ticket in done:
            reply = ticket.result()
            if key is None or reply is None:
                continue
            d = decode_detections(reply.payload, self.q.adapt.n_classes)
            wall = time.monotonic() - self.started
            for det in d.detections:
                self.on_detection(det, wall)
            self.checker.device(d)

    def _pieces(self, pcm: npt.NDArray[np.int16]) -> Iterator[tuple[int, bytes, Any]]:
        """(type, payload without the offset, the samples the device computes on) per chunk."""
        n = self.most()
        if self.wire == "raw":
            for o in range(0, len(pcm), n):
                part = pcm[o : o + n]
                yield Msg.STREAM, part.astype("<i2").tobytes(), part
            return
        whole = len(pcm) // n * n  # the full chunks coded together, then the rest
        for x in (pcm[:whole].reshape(-1, n), pcm[whole:][None, :]):
            if x.shape[1] == 0 or x.shape[0] == 0:
                continue
            for block, decoded in adpcm_chunks(x):
                yield Msg.STREAM_ADPCM, struct.pack("<H", x.shape[1]) + block, decoded

    def captured_at(self, n: int) -> float:
        """The wall time at which a microphone started with the stream has delivered the next
        ``n`` samples: the end of the chunk's last sample, not its first (a chunk cannot leave
        before it was recorded)."""
        return self.started + (self.offset + n) / SAMPLE_RATE

    def wait_until(self, t: float) -> None:
        """Take the replies that come in until wall time ``t`` (each detection is printed as
        its reply arrives, not when the next chunk is due)."""
        while (left := t - time.monotonic()) > 0:
            self.link.poll()
            self._take(self.pipe.take())
            time.sleep(min(left, POLL_SLICE))

    def feed(self, pcm: npt.NDArray[np.int16]) -> None:
        for type_, body, samples in self._pieces(pcm):
            if self.realtime:
                self.wait_until(self.captured_at(len(samples)))
            payload = struct.pack("<I", self.offset) + body
            t = self.link.submit(type_, payload, expect=Msg.DETECTIONS)
            self._take(self.pipe.put(self.offset, t))
            self.checker.audio(samples)
            self.offset += len(samples)

    def end(self) -> StreamSummary:
        t = self.link.submit(
            Msg.STREAM_END, encode_stream_end(self.offset), expect=Msg.STREAM_SUMMARY
        )
        self._take(self.pipe.put(None, t))
        self._take(self.pipe.drain())
        reply = t.result()
        assert reply is not None
        self.checker.finish()
        return decode_summary(reply.payload)


# ----------------------------------------------------------------------------- devices


@contextlib.contextmanager
def usb_uart_qemu(elf: Path, baud: int, budget: float) -> Iterator[Link]:
    """QEMU behind the USB-UART line model (`elatta_host.linkmodel.UsbUart`: both directions
    at the line's pace, device-to-host bytes held by the bridge's 16 ms latency timer)."""
    from elatta_host.linkmodel import UsbUart
    from elatta_host.qemu import build_uart, free_port, qemu_command, spawn

    port = free_port()
    proc = spawn(
        qemu_command(elf, port, uart=build_uart(elf), icount=True),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    line = UsbUart(port, baud=baud)
    try:
        with Link(line.url, budget=budget, flags=FLAGS) as link:
            yield link
    finally:
        line.close()
        proc.kill()
        proc.wait()


def warm_up(q: Any, mode: str, cfg: DetectorConfig) -> None:
    """Score one window of silence with a throwaway reference before the clock starts: its
    first window pays the one-time imports of the encoder and the input stage (torch among
    them, seconds), which inside the stream would hold the link and every detection behind it
    (the reference runs in the link's thread)."""
    ref = StreamReference(q, mode, cfg)
    hop, win = q.mfcc.params.hop_length, q.mfcc.params.win_length
    ref.push(np.zeros((q.num_frames - 1) * hop + win, np.int16))


@dataclass(frozen=True)
class ListenResult:
    report: dict[str, Any]
    detections: list[tuple[float, int, int]]  # (time s, class, score)


def listen(
    build_dir: Path,
    blocks: Iterator[npt.NDArray[np.int16]],
    report_dir: Path,
    *,
    mode: str,
    cfg: DetectorConfig,
    device: DeviceSpec | None = None,
    line_baud: int | None = None,
    chunk: int | None = None,
    realtime: bool = False,
    wire_kind: str = "raw",
    labels: list[Any] | None = None,
    out: Callable[[str], None] = print,
) -> ListenResult:
    """Stream ``blocks`` through the device's continuous mode (QEMU or a board by ``device``;
    with ``line_baud``, QEMU behind the USB-UART model at that rate), print each detection as
    it arrives, compare every record with the integer reference, and write the report."""
    manifest, q = load_build(build_dir)
    check_input(q, manifest, "pcm", build_dir)
    check_stream_mode(mode)
    classes = tuple(q.source.classes)
    hop, win = q.mfcc.params.hop_length, q.mfcc.params.win_length
    report_dir.mkdir(parents=True, exist_ok=True)
    dets: list[tuple[float, int, int]] = []
    rss: list[tuple[float, float]] = []  # (s of audio, MB), from the stream's start
    label_list = list(labels or [])

    def time_of(frame: int) -> float:
        return (frame * hop + win) / SAMPLE_RATE

    det_file = (report_dir / "detections.jsonl").open("w")

    def on_detection(d: Detection, wall: float) -> None:
        t = time_of(d.frame)
        dets.append((t, d.cls, d.score))
        name = classes[d.cls] if d.cls < len(classes) else f"class {d.cls}"
        note = ""
        if label_list:
            from codegen.data.kwstream import match_detections

            hit = match_detections(label_list, [(t, d.cls)])[0]
            note = (
                f"  hit: ended {label_list[hit].end_s:.2f} s ({t - label_list[hit].end_s:+.2f} s)"
                if hit is not None
                else "  (no keyword of that class here)"
            )
        out(f"{t:9.2f} s  {name:>10}  score {d.score / 32768:.3f}  [wall {wall:7.2f} s]{note}")
        det_file.write(
            json.dumps({"time_s": round(t, 4), "frame": d.frame, "class": d.cls,
                        "word": name, "score": d.score, "wall_s": round(wall, 3)})
            + "\n"
        )  # fmt: skip
        det_file.flush()

    if line_baud is not None:
        assert device is not None and device.elf is not None
        opened: Any = usb_uart_qemu(device.elf, line_baud, device.budget)
    else:
        assert device is not None
        opened = open_device(device)
    win_file = (report_dir / "windows.jsonl").open("w")
    try:
        with opened as got:
            link = got[0] if isinstance(got, tuple) else got
            from elatta_host.device import Device

            dev = Device(link)
            info = dev.hello(sync_timeout=device.budget)
            app = parse_description(info.app)
            check_device(app, manifest)
            if "pcm" not in (app.get("input") or "").split(","):
                raise RunError("the device's firmware has no audio front end (input=features)")
            warm_up(q, mode, cfg)
            ref = StreamReference(q, mode, cfg)
            checker = Checker(ref, cfg.records, win_file)
            if wire_kind == "adpcm" and int(app.get("adpcm") or 0) < wire.ADPCM_MAX_SAMPLES:
                raise RunError("--wire adpcm: the device's firmware decodes no ADPCM; use raw")
            lis = Listener(link, q, mode, cfg, checker, on_detection, chunk, realtime, wire_kind)
            # the first sample once everything the stream needs is loaded (the warmed-up
            # reference included): what grows after it is what the stream costs
            rss.append((0.0, rss_mb()))
            t0 = time.monotonic()
            lis.begin()
            next_rss = RSS_EVERY
            for block in blocks:
                lis.feed(block)
                if lis.offset / SAMPLE_RATE >= next_rss:
                    rss.append((round(lis.offset / SAMPLE_RATE, 1), rss_mb()))
                    next_rss += RSS_EVERY
            summary = lis.end()
            wall = time.monotonic() - t0
            info_end = dev.hello()
            link_counts = {
                "frames_sent": link.frames_sent,
                "retransmits": link.retransmits,
                "bytes_sent": link.bytes_sent,
            }
    finally:
        win_file.close()
        det_file.close()
    seconds = lis.offset / SAMPLE_RATE
    rss.append((round(seconds, 1), rss_mb()))
    report: dict[str, Any] = {
        "build": str(build_dir),
        "mode": mode,
        "detector": {
            "every_hops": cfg.every,
            "smooth_windows": cfg.smooth,
            "threshold": cfg.threshold,
            "suppress_hops": cfg.suppress,
            "keywords": [classes[c] for c in range(len(classes)) if cfg.is_keyword(c)],
            "records": cfg.records,
        },
        "line": f"USB-UART model at {line_baud} baud" if line_baud else "direct",
        "wire": wire_kind,
        "audio_seconds": round(seconds, 3),
        "wall_seconds": round(wall, 3),
        "realtime_factor": round(wall / seconds, 4) if seconds else None,
        "bit_exact": checker.verdict.to_json(),
        "summary": summary.__dict__,
        "ticks_per_audio_second": summary.per_second(),
        "link": link_counts,
        "stack_high_water_bytes": info_end.stack_used,
        "host_rss_mb": rss,
        "detections": len(dets),
    }
    if summary.detections != len(dets):
        report["bit_exact"]["mismatches"] += 1
        report["bit_exact"]["detections_count"] = {"summary": summary.detections, "got": len(dets)}
    if label_list:
        from codegen.data.kwstream import score_detections

        report["metrics"] = score_detections(
            label_list, [(t, c) for t, c, _ in dets], seconds
        ).to_json()
    (report_dir / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    return ListenResult(report, dets)


# ----------------------------------------------------------------------------- CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--build", required=True, type=Path, help="`codegen build` output directory")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("input", nargs="?", help="- : raw int16 little-endian PCM, 16 kHz, on stdin")
    src.add_argument("--wav", type=Path, help="a 16 kHz mono 16-bit WAV file")
    src.add_argument(
        "--stream", type=Path, metavar="DIR", help="an evaluation stream (`codegen data --stream`)"
    )
    p.add_argument(
        "--snr", type=float, help="--stream: the SNR to play (dB; default: its clean speech)"
    )
    p.add_argument("--labels", type=Path, help="labels.csv to score the detections with")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--qemu", action="store_true", help="boot BUILD/fw.elf in qemu-system-arm")
    g.add_argument("--port", metavar="DEV", help="serial device or pyserial URL of a board")
    p.add_argument(
        "--line",
        choices=("direct", "usb-uart"),
        default="direct",
        help="--qemu: the line between host and QEMU: direct (its socket), or the USB-UART model "
        "at --baud (elatta_host.linkmodel.UsbUart: line pace both ways, 16 ms latency timer)",
    )
    p.add_argument(
        "--baud",
        type=int,
        help="--line usb-uart: its rate (default 921600); --port: the rate to switch to",
    )
    p.add_argument("--mode", default="cmvn_select", help="no_adapt, cmvn, cmvn_causal, cmvn_select")
    d = DetectorConfig()
    p.add_argument("--every", type=int, default=d.every, help=f"hops between windows ({d.every})")
    p.add_argument("--smooth", type=int, default=d.smooth, help=f"windows averaged ({d.smooth})")
    p.add_argument(
        "--threshold",
        type=float,
        default=d.threshold / 32768,
        help=f"smoothed probability that detects ({d.threshold / 32768:g})",
    )
    p.add_argument(
        "--suppress",
        type=float,
        default=d.suppress * 0.02,
        help=f"seconds after a detection without another ({d.suppress * 0.02:g})",
    )
    p.add_argument(
        "--no-records",
        dest="records",
        action="store_false",
        help="only detections on the link (the windows' logits are not sent nor compared)",
    )
    p.add_argument("--chunk", type=int, help="samples per STREAM (default: the link's frame)")
    p.add_argument(
        "--wire",
        choices=("raw", "adpcm"),
        default="raw",
        help="how the audio travels: raw int16 PCM (32 KB a second) or IMA-ADPCM blocks (8 KB a "
        "second, each chunk coded on its own; the reference computes on the decoded audio)",
    )
    p.add_argument(
        "--realtime", action="store_true", help="send the audio at its own pace (a microphone)"
    )
    p.add_argument("--report", type=Path, default=Path("out/listen"), help="report directory")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="first re-send time-out")
    p.add_argument(
        "--budget", type=float, default=DEFAULT_BUDGET, help="silence that ends the link (s)"
    )


def detector_from_args(args: argparse.Namespace, q: Any) -> DetectorConfig:
    hop_s = q.mfcc.params.hop_length / SAMPLE_RATE
    return DetectorConfig(
        every=args.every,
        smooth=args.smooth,
        threshold=int(round(args.threshold * 32768)),
        suppress=int(round(args.suppress / hop_s)),
        keywords=keyword_mask(tuple(q.source.classes)),
        records=args.records,
    )


def run(args: argparse.Namespace) -> int:
    from codegen.data.kwstream import load_labels, stream_file, wav_blocks

    _, q = load_build(args.build)
    if q.mfcc is None:
        raise RunError(f"{args.build}: the build has no audio front end (input = features)")
    cfg = detector_from_args(args, q)
    labels = load_labels(args.labels) if args.labels else None
    if args.stream is not None:
        path = stream_file(args.stream, args.snr)
        blocks: Iterator[npt.NDArray[np.int16]] = wav_blocks(path, READ_BLOCK)
        labels = labels if labels is not None else load_labels(args.stream)
        what = str(path)
    elif args.wav is not None:
        blocks, what = wav_blocks(args.wav, READ_BLOCK), str(args.wav)
    elif args.input == "-":
        blocks, what = stdin_blocks(sys.stdin.buffer), "stdin"
    else:
        raise RunError(f"input {args.input!r}: give - (raw PCM on stdin), --wav or --stream")
    elf = args.build / "fw.elf"
    if args.qemu:
        spec = DeviceSpec("qemu0", elf=elf, timeout=args.timeout, budget=args.budget)
    else:
        spec = DeviceSpec(
            "board",
            url=args.port,
            baud=build_baud(args.build),
            timeout=args.timeout,
            budget=args.budget,
            baud_switch=args.baud or 0,
        )
    line_baud = None
    if args.line == "usb-uart":
        if not args.qemu:
            raise RunError("--line usb-uart models the line in front of QEMU: use it with --qemu")
        line_baud = args.baud or 921_600
    print(f"listening to {what} ({args.mode}); detections (stream time, class, score):")
    res = listen(
        args.build,
        blocks,
        args.report,
        mode=args.mode,
        cfg=cfg,
        device=spec,
        line_baud=line_baud,
        chunk=args.chunk,
        realtime=args.realtime,
        wire_kind=args.wire,
        labels=labels,
    )
    r = res.report
    be = r["bit_exact"]
    verdict = "BIT-EXACT" if be["mismatches"] == 0 else f"MISMATCH ({be['mismatches']})"
    print(
        f"{verdict}: {be['windows_compared']} windows and {be['detections_compared']} detections "
        f"equal to the integer reference; {r['audio_seconds']:.1f} s of audio in "
        f"{r['wall_seconds']:.1f} s (real-time factor {r['realtime_factor']}); device "
        f"{r['ticks_per_audio_second']['ticks_device']:.0f} ticks per second of audio"
    )
    if "metrics" in r:
        m = r["metrics"]
        print(
            f"keywords {m['keywords']}: miss rate {m['miss_rate']:.2f} %, false accepts "
            f"{m['false_accepts']} ({m['fa_per_hour']:.1f} per hour), delay median "
            f"{m['delay_median_s']} s"
        )
    print(f"wrote {args.report / 'report.json'}")
    return 0 if be["mismatches"] == 0 else 1
