"""The continuous mode without a device (docs/stream.md): the detector's probabilities against
the softmax, its averaging, threshold, suppression and keyword mask on written sequences, the
firmware's detector (firmware/elt_detect_s16.c, host-compiled with UBSan) equal to the integer
reference, the DETECTIONS codec, the reference's independence of the chunking, the threshold
sweep's rule equal to the reference's decisions, the evaluation stream's layout and SNR, and
the matching of detections to labels."""

from __future__ import annotations

import ctypes
import json
import math
import struct
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from elatta_measure.hostlib import HOST_CFLAGS, UBSAN_CFLAGS

from codegen.base.errors import ConfigError
from codegen.base.resources import firmware_dir
from codegen.data.common import DataError
from codegen.data.kwstream import (
    Word,
    match_detections,
    score_detections,
    wav_blocks,
    write_wav,
)
from codegen.intref.listen import (
    FLAG_DETECT,
    Detector,
    DetectorConfig,
    WindowRecord,
    keyword_mask,
    probs_q15,
)
from codegen.ir import wire
from codegen.target import sources
from codegen.target.toolchain import find_tool, run_tool

# ----------------------------------------------------------------------------- probabilities


@pytest.mark.parametrize("frac", [6, 10, 13])
def test_probs_follow_the_softmax(frac: int) -> None:
    """Q0.15 probabilities within 2^-9 of the float softmax of the same logits (the exp2 LUT's
    interpolation and the rounding), the top class's at most 2^15, the sum within C of 2^15."""
    rng = np.random.default_rng(frac)
    L = np.clip(rng.normal(0, 3, (500, 12)) * (1 << frac), -32768, 32767).astype(np.int16)
    p = probs_q15(L, frac)
    x = L.astype(np.float64) / (1 << frac)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    soft = e / e.sum(axis=1, keepdims=True)
    assert np.abs(p / 32768 - soft).max() < 2**-9
    assert p.max() <= 32768 and p.min() >= 0
    assert np.abs(p.sum(axis=1) - 32768).max() <= 12
    # equal logits: equal shares
    assert (probs_q15(np.zeros((1, 4), np.int16), frac) == 8192).all()


# ----------------------------------------------------------------------------- the detector


def run_detector(cfg: DetectorConfig, probs: list[list[int]], frames: list[int]) -> list[tuple]:
    d = Detector(cfg, len(probs[0]))
    return [d.step(f, p) for f, p in zip(frames, probs, strict=True)]


def test_detector_averages_thresholds_and_suppresses() -> None:
    """Written sequences: the mean of the last `smooth` windows, rounded; its first maximum;
    nothing until `smooth` windows were seen; a filler class never detects; after a detection
    none of any class for `suppress` frames, then again."""
    cfg = DetectorConfig(every=5, smooth=2, threshold=20000, suppress=20, keywords=0b011)
    P = [
        [30000, 0, 2768],  # frame 0: one window seen: no detection yet
        [30000, 0, 2768],  # 5: mean 30000 of class 0: detects
        [0, 30001, 2767],  # 10: class 1 leads the sums, its mean 15001 is below the threshold
        [0, 30001, 2767],  # 15: class 1 at 30001, but 15 - 5 < 20: suppressed
        [0, 30001, 2767],  # 25: 25 - 5 >= 20: detects class 1
        [0, 0, 32768],  # 30: class 2 leads (a filler class): never detects
        [0, 0, 32768],  # 35
    ]
    got = run_detector(cfg, P, [0, 5, 10, 15, 25, 30, 35])
    assert got == [
        (0, 30000, False),
        (0, 30000, True),
        (1, 15001, False),  # (30001 + 1) // 2: the mean rounded half up
        (1, 30001, False),
        (1, 30001, True),
        (2, 17768, False),  # (2767 + 32768 + 1) // 2
        (2, 32768, False),
    ]


def test_detector_first_maximum_on_equal_sums() -> None:
    cfg = DetectorConfig(smooth=1, threshold=0, suppress=0, keywords=0b111)
    assert run_detector(cfg, [[100, 300, 300]], [0])[0] == (1, 300, True)


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="smooth=17"):
        DetectorConfig(smooth=wire.STREAM_SMOOTH_MAX + 1)
    with pytest.raises(ConfigError, match="threshold=32769"):
        DetectorConfig(threshold=32769)
    with pytest.raises(ConfigError, match="every=0"):
        DetectorConfig(every=0)
    assert keyword_mask(("yes", "no", "_silence_", "_unknown_")) == 0b11
    with pytest.raises(ConfigError, match="33 classes"):
        keyword_mask(tuple(f"w{i}" for i in range(33)))


# ----------------------------------------------------------------------------- the C detector


class _Params(ctypes.Structure):
    _fields_ = [
        ("smooth", ctypes.c_uint32),
        ("threshold", ctypes.c_uint32),
        ("suppress", ctypes.c_uint32),
        ("keywords", ctypes.c_uint32),
        ("n_classes", ctypes.c_int32),
    ]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    fw = firmware_dir()
    out = tmp_path_factory.mktemp("detect") / "libdetect.so"
    srcs = [fw / "elt_detect_s16.c", fw / "elt_entropy_s16.c", fw / "elt_intmath.c"]
    run_tool(
        [find_tool("cc"), *HOST_CFLAGS, *UBSAN_CFLAGS, "-fvisibility=default", f"-I{fw}"]
        + [*sources.REF.compile_flags(fw), "-o", str(out), *map(str, srcs)],
        what="host gcc",
    )
    return ctypes.CDLL(str(out))


@pytest.mark.parametrize(
    ("frac", "C", "smooth", "suppress", "threshold"),
    [(10, 10, 3, 50, 26214), (13, 12, 1, 0, 16384), (6, 2, 16, 7, 32768), (11, 16, 5, 13, 0)],
)
def test_firmware_detector_equals_reference(
    kernel: ctypes.CDLL, frac: int, C: int, smooth: int, suppress: int, threshold: int
) -> None:
    """Random logits (spread from flat to peaked, with saturated extremes): every window's
    probabilities, class, score and decision of the C detector equal the reference's."""
    from codegen.base.tables import EXP2_LUT  # what the build's exp2_lut holds

    rng = np.random.default_rng(C * 100 + smooth)
    n = 600
    scale = rng.choice([0.3, 2.0, 8.0], size=(n, 1))
    L = rng.normal(0, 1, (n, C)) * scale
    # runs of windows where one class leads by a margin, as a spoken word makes them
    for start in range(0, n, 20):
        L[start : start + int(rng.integers(3, 12)), int(rng.integers(C))] += rng.uniform(2, 9)
    L = np.clip(L * (1 << frac), -32768, 32767)
    L[rng.random(n) < 0.05] = 32767
    L = L.astype(np.int16)
    keywords = int(rng.integers(1, 1 << C)) & ((1 << C) - 1)
    cfg = DetectorConfig(
        every=5, smooth=smooth, threshold=threshold, suppress=suppress, keywords=keywords
    )
    ref = Detector(cfg, C)
    want_p = probs_q15(L, frac)
    lut = np.ascontiguousarray(np.asarray(EXP2_LUT, np.int32))
    prm = _Params(smooth, threshold, suppress, keywords, C)
    state = (ctypes.c_uint8 * 4096)()
    kernel.elt_detect_reset(state)
    probs = (ctypes.c_uint16 * C)()
    cls, score = ctypes.c_int32(), ctypes.c_uint32()
    detections = 0
    for i in range(n):
        row = np.ascontiguousarray(L[i])
        kernel.elt_probs_q15(
            row.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)),
            C,
            frac,
            lut.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
            probs,
        )
        assert list(probs) == [int(v) for v in want_p[i]], i
        frame = 5 * i
        got = kernel.elt_detect_step(
            ctypes.byref(prm), state, frame, probs, ctypes.byref(cls), ctypes.byref(score)
        )
        want = ref.step(frame, want_p[i])
        assert (cls.value, score.value, bool(got)) == want, i
        detections += want[2]
    assert detections > 0 or threshold == 32768


# ----------------------------------------------------------------------------- codec


def test_detections_round_trip() -> None:
    """A DETECTIONS packed by the documented layout (the arrays one after the other) decodes to
    every value; a byte short is refused."""
    from elatta_host.listen import decode_detections

    C = 3
    dets = [(53, 1, 30000), (98, 2, 27000)]
    wins = [(53, 1, 1, 30000, (5, -7, 9)), (58, 0, 0, 100, (-32768, 32767, 0)),
            (98, 2, 3, 27000, (1, 2, 3))]  # fmt: skip
    payload = struct.pack("<IIBB", 1600, 99, len(wins), len(dets))
    payload += struct.pack(f"<{len(dets)}I", *(d[0] for d in dets))
    payload += bytes(d[1] for d in dets)
    payload += struct.pack(f"<{len(dets)}H", *(d[2] for d in dets))
    payload += struct.pack(f"<{len(wins)}I", *(w[0] for w in wins))
    payload += bytes(w[1] for w in wins) + bytes(w[2] for w in wins)
    payload += struct.pack(f"<{len(wins)}H", *(w[3] for w in wins))
    payload += struct.pack(f"<{len(wins) * C}h", *(v for w in wins for v in w[4]))
    got = decode_detections(payload, C)
    assert (got.offset, got.frames) == (1600, 99)
    assert [(d.frame, d.cls, d.score) for d in got.detections] == dets
    assert got.windows == tuple(WindowRecord(w[0], w[1], w[3], w[2], w[4]) for w in wins)
    assert got.windows[0].detects is False and got.windows[2].flags & FLAG_DETECT
    with pytest.raises(ValueError, match="expected"):
        decode_detections(payload[:-1], C)


def test_realtime_sends_a_chunk_once_recorded() -> None:
    """--realtime paces the audio as a microphone delivers it: a chunk leaves once its last
    sample has been recorded (started + (offset + n) / 16 kHz), never at its first sample's
    time; every chunk's reply is taken and the stream is cut in order."""
    import time
    from types import SimpleNamespace

    from elatta_host.listen import DET_HDR, Listener
    from elatta_host.protocol import Msg

    sent: list[tuple[float, int, int]] = []  # (wall, offset, samples)

    class Ticket:
        done = True

        def __init__(self, reply: object) -> None:
            self.reply = reply

        def result(self) -> object:
            return self.reply

    class FakeLink:
        def payload_size(self) -> int:
            return 4 + 2 * 400  # 400 samples a chunk: 25 ms

        def submit(self, type_: int, payload: bytes, expect: int | None) -> Ticket:
            if type_ != Msg.STREAM:
                return Ticket(None)
            off = struct.unpack_from("<I", payload)[0]
            sent.append((time.monotonic(), off, (len(payload) - 4) // 2))
            return Ticket(SimpleNamespace(payload=DET_HDR.pack(off, 0, 0, 0)))

        def poll(self) -> None:
            pass

        def wait(self, ticket: Ticket) -> object:
            return ticket.result()

    taken: list[int] = []
    checker = SimpleNamespace(audio=lambda pcm: None, device=lambda d: taken.append(d.offset))
    q = SimpleNamespace(
        mfcc=SimpleNamespace(params=SimpleNamespace(hop_length=320)),
        adapt=SimpleNamespace(n_classes=10),
    )
    link: Any = FakeLink()
    lis = Listener(link, q, "no_adapt", DetectorConfig(), checker, lambda d, w: None, realtime=True)
    lis.begin()
    lis.feed(np.zeros(2000, np.int16))
    lis._take(lis.pipe.drain())
    assert [(o, n) for _, o, n in sent] == [(o, 400) for o in range(0, 2000, 400)]
    for wall, off, n in sent:
        assert wall >= lis.started + (off + n) / 16000
    assert taken == [o for _, o, _ in sent]


def test_stream_begin_layout() -> None:
    from elatta_host.listen import encode_stream_begin

    cfg = DetectorConfig(every=7, smooth=4, threshold=30000, suppress=61, keywords=0x3FF)
    b = encode_stream_begin(6, cfg)
    assert len(b) == wire.STREAM_BEGIN.fixed_size == 12
    assert struct.unpack("<BBBBHHI", b) == (6, 1, 7, 4, 30000, 61, 0x3FF)


def test_adpcm_pieces_decode_as_the_device_does() -> None:
    """Pieces of a stream coded on their own from `start_state`: each block decodes (the
    device's computation, codegen.base.adpcm.decode_block) to the samples the reference is
    given, and the coding keeps the signal (SNR above 15 dB on speech-like audio)."""
    from elatta_host.listen import adpcm_chunks

    from codegen.base.adpcm import decode_block

    rng = np.random.default_rng(3)
    t = np.arange(8 * 1024) / 16000
    x = (8000 * np.sin(2 * np.pi * 300 * t) * (1 + np.sin(2 * np.pi * 3 * t))
         + rng.normal(0, 300, t.size))  # fmt: skip
    pcm = np.clip(x, -32768, 32767).astype(np.int16).reshape(8, 1024)
    out = adpcm_chunks(pcm)
    for block, decoded in out:
        assert (decode_block(block, 1024) == decoded).all()
    dec = np.concatenate([d for _, d in out]).astype(np.float64)
    err = dec - pcm.reshape(-1)
    assert 10 * math.log10(np.mean(pcm.astype(np.float64) ** 2) / np.mean(err**2)) > 15


# ----------------------------------------------------------------------------- labels


def test_matching_and_metrics() -> None:
    """A detection hits the first keyword of its class whose [start, end + 1 s] holds it, once;
    the rest are false accepts; delays are from the keyword's end."""
    sr = 16000
    labels = [
        Word("keyword", "one", 1, 1 * sr, int(1.5 * sr)),
        Word("unknown", "bird", -1, 3 * sr, int(3.4 * sr)),
        Word("keyword", "two", 2, 5 * sr, int(5.5 * sr)),
        Word("keyword", "one", 1, 8 * sr, int(8.5 * sr)),
    ]
    dets = [(1.7, 1), (1.9, 1), (3.5, 4), (5.6, 1), (6.6, 2), (8.4, 1)]
    assert match_detections(labels, dets) == [0, None, None, None, None, 3]
    s = score_detections(labels, dets, 3600.0)
    assert (s.keywords, s.hits, s.misses, s.false_accepts) == (3, 2, 1, 4)
    assert s.fa_per_hour == 4.0 and abs(s.miss_rate - 100 / 3) < 1e-9
    assert [round(d, 3) for d in s.delays] == [0.2, -0.1]


def test_wav_reader_refuses_other_formats(tmp_path: Path) -> None:
    p = tmp_path / "x.wav"
    with wave.open(str(p), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(bytes(400))
    with pytest.raises(DataError, match="2 channel.*8000 Hz"):
        list(wav_blocks(p))
    q = tmp_path / "ok.wav"
    pcm = np.arange(-500, 500, dtype=np.int16)
    write_wav(q, pcm)
    assert (np.concatenate(list(wav_blocks(q, 300))) == pcm).all()


# ----------------------------------------------------------------------------- the stream


def test_stream_layout_and_snr(kws_build: tuple[Path, Path], tmp_path: Path) -> None:
    """Words in order without overlap, inside the stream, keywords with their class; the noise
    at −10 dB below the keywords' clip power (within 0.1 dB: the mixture minus the clean
    speech); the same seed gives the same stream."""
    from codegen.data.kwstream import StreamSettings, build_stream, load_labels, read_wav

    tiny = kws_build[1]
    s = StreamSettings(minutes=0.5, seed=4, snrs=(-10.0,))
    info = build_stream(tiny, tmp_path / "a", s)
    labels = load_labels(tmp_path / "a")
    assert info["keywords"] == sum(w.kind == "keyword" for w in labels) > 5
    assert info["unknown_words"] > 0
    classes = info["classes"]
    prev = 0
    for w in labels:
        assert prev <= w.start < w.end <= info["samples"]
        prev = w.end
        if w.kind == "keyword":
            assert classes[w.cls] == w.word and not w.word.startswith("_")
        else:
            assert w.cls == -1
    clean = read_wav(tmp_path / "a" / "clean.wav").astype(np.float64) / 32768
    mix = read_wav(tmp_path / "a" / "snr_-10.wav").astype(np.float64) / 32768
    scale = info["mix"]["-10"]["peak_scale"]
    noise = mix / scale - clean
    snr = 10 * math.log10(10 ** (info["keyword_clip_power_dbfs"] / 10) / np.mean(noise**2))
    assert abs(snr + 10.0) < 0.1
    again = build_stream(tiny, tmp_path / "b", s)
    assert again["digest"] == info["digest"]
    assert json.loads((tmp_path / "b" / "stream.json").read_text())["samples"] == 8000 * 60


def test_reference_does_not_depend_on_chunking(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """The integer reference's records are the same for chunks of 777 samples and of 60,000;
    the threshold sweep's rule (elatta_measure.continuous.decide) reproduces its decisions."""
    from elatta_host.plan import load_build
    from elatta_measure.continuous import Windows, decide

    from codegen.data.kwstream import StreamSettings, build_stream, read_wav
    from codegen.intref.listen import run_stream

    out, tiny = kws_build
    _, q = load_build(out)
    build_stream(tiny, tmp_path / "s", StreamSettings(minutes=0.25, seed=1, snrs=(-5.0,)))
    pcm = read_wav(tmp_path / "s" / "snr_-5.wav")
    cfg = DetectorConfig(threshold=16384, suppress=25, keywords=keyword_mask(q.source.classes))
    for mode in ("no_adapt", "cmvn_select"):
        a = list(run_stream(pcm, q, mode, cfg, chunk=777))
        b = list(run_stream(pcm, q, mode, cfg, chunk=60000))
        frames = 1 + (len(pcm) - 640) // 320
        assert a == b and len(a) == 1 + (frames - q.num_frames) // 5
        w = Windows(
            np.array([r.frame for r in a]),
            np.array([r.cls for r in a]),
            np.array([r.score / 32768 for r in a]),
        )
        assert (decide(w, cfg, cfg.threshold / 32768) == [r.detects for r in a]).all()
    with pytest.raises(ConfigError, match="latent search"):
        list(run_stream(pcm, q, "strict", cfg))


def test_det_curve_is_exact_at_high_thresholds() -> None:
    """The miss rate at equal false accepts read off the DET curve equals the lower envelope
    over every threshold that changes a decision (each distinct Q0.15 score), for windows whose
    scores all lie in the top of the range where the operating points are (a grid that jumps
    from 0.999 to 1.0 reads 100 % where a threshold in between keeps most keywords)."""
    from types import SimpleNamespace

    from elatta_measure.continuous import EQUAL_FA, Windows, det_curve, miss_at_fa

    rng = np.random.default_rng(3)
    n, every = 600, 5
    frames = 48 + every * np.arange(n)
    cls = rng.integers(0, 10, n)
    lo = int(np.ceil(0.98 * 32768))
    w = Windows(frames, cls, rng.integers(lo, 32769, n) / 32768)
    hop, win = 320, 640
    seconds = (frames[-1] * hop + win) / 16000
    labels = []
    for i in rng.choice(n, 40, replace=False):
        end = int(frames[i]) * hop + win - int(rng.integers(0, 4000))
        labels.append(Word("keyword", str(cls[i]), int(cls[i]), end - 6000, end))
    labels.sort(key=lambda x: x.start)
    q = SimpleNamespace(
        mfcc=SimpleNamespace(params=SimpleNamespace(hop_length=hop, win_length=win))
    )
    cfg = DetectorConfig(suppress=10, keywords=0x3FF)
    curve = det_curve(w, cfg, labels, seconds, q)
    exact = []
    for t in sorted({*w.score.tolist(), 1.0}):
        m = score_detections(labels, _times(w, cfg, t, hop, win), seconds).to_json()
        exact.append((t, m["miss_rate"], m["fa_per_hour"]))
    rates = sorted({f for _, _, f in exact} | set(EQUAL_FA))
    assert [miss_at_fa(curve, r) for r in rates] == [miss_at_fa(exact, r) for r in rates]
    assert len({m for _, m, _ in exact}) > 5  # the envelope has steps to miss


def _times(w: Any, cfg: DetectorConfig, t: float, hop: int, win: int) -> list[tuple[float, int]]:
    from elatta_measure.continuous import decide

    det = decide(w, cfg, t)
    return [
        ((int(f) * hop + win) / 16000, int(c))
        for f, c in zip(w.frames[det], w.cls[det], strict=True)
    ]
