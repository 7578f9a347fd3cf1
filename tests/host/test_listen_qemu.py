"""The continuous mode end to end through QEMU (docs/stream.md): a 40-s evaluation stream at
−10 dB through `codegen listen`'s session, every window record (class, score, flags, logits)
and every detection equal to the integer reference, in no-adapt and the deployed cmvn_select,
raw and ADPCM; and the app's checks: a stream must be opened, a mode with a latent search and
out-of-range settings are refused, only the next offset is taken, a chunk sent again is
answered from the reply record with the same DETECTIONS (no detection lost or made twice),
STREAM_END checks the count, AUDIO_BEGIN closes the stream."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from elatta_host.listen import (
    decode_detections,
    decode_summary,
    encode_stream_begin,
    encode_stream_chunk,
    encode_stream_end,
    listen,
)
from elatta_host.plan import load_build
from elatta_host.run import DeviceSpec

from codegen.data.kwstream import (
    StreamSettings,
    build_stream,
    load_labels,
    read_wav,
    wav_blocks,
)
from codegen.intref.listen import DetectorConfig, StreamReference, keyword_mask
from codegen.ir import wire

pytestmark = pytest.mark.qemu


@pytest.fixture(scope="module")
def stream(kws_build: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kwstream")
    build_stream(kws_build[1], out, StreamSettings(minutes=40 / 60, seed=2, snrs=(-10.0,)))
    return out


@pytest.mark.parametrize(("mode", "wire_kind"), [("no_adapt", "raw"), ("cmvn_select", "raw"),
                                                 ("cmvn_select", "adpcm")])  # fmt: skip
def test_stream_bit_exact(
    kws_build: tuple[Path, Path], stream: Path, tmp_path: Path, mode: str, wire_kind: str
) -> None:
    build_dir, _ = kws_build
    _, q = load_build(build_dir)
    # a low threshold so the stream detects often: every detection is compared
    cfg = DetectorConfig(threshold=13107, suppress=25, keywords=keyword_mask(q.source.classes))
    spec = DeviceSpec("qemu0", elf=build_dir / "fw.elf", timeout=5.0)
    lines: list[str] = []
    got = listen(
        build_dir,
        wav_blocks(stream / "snr_-10.wav"),
        tmp_path / "r",
        mode=mode,
        cfg=cfg,
        device=spec,
        wire_kind=wire_kind,
        labels=load_labels(stream),
        out=lines.append,
    )
    r = got.report
    frames = 1 + (40 * 16000 - 640) // 320
    windows = 1 + (frames - q.num_frames) // cfg.every
    assert r["bit_exact"]["mismatches"] == 0, r["bit_exact"]
    assert r["bit_exact"]["windows_compared"] == windows == r["summary"]["windows"]
    assert r["bit_exact"]["detections_compared"] == r["summary"]["detections"] == len(lines) > 3
    assert r["summary"]["frames"] == frames and r["summary"]["samples"] == 40 * 16000
    per_s = r["ticks_per_audio_second"]
    assert per_s["ticks_encoder"] > 0 and per_s["ticks_frontend"] > 0
    assert 0 < r["stack_high_water_bytes"] < 16384
    assert "metrics" in r and r["metrics"]["keywords"] > 5


def test_stream_protocol_checks(kws_build: tuple[Path, Path], stream: Path) -> None:
    from elatta_host.device import Device
    from elatta_host.errors import DeviceError
    from elatta_host.infer import encode_audio_begin
    from elatta_host.protocol import SEQ_COPY_SHIFT, Err, Frame, Msg
    from elatta_host.qemu import Qemu

    build_dir, _ = kws_build
    _, q = load_build(build_dir)
    C = q.adapt.n_classes
    pcm = read_wav(stream / "snr_-10.wav")[: 6 * 16000]
    kw = keyword_mask(q.source.classes)
    cfg = DetectorConfig(threshold=6554, suppress=10, keywords=kw)

    def refused(link: Any, type_: Msg, payload: bytes) -> None:
        with pytest.raises(DeviceError) as err:
            link.wait(link.submit(type_, payload, expect=None))
        assert err.value.code == Err.PAYLOAD

    def chunk(link: Any, offset: int, part: np.ndarray) -> Any:
        t = link.submit(Msg.STREAM, encode_stream_chunk(offset, part), expect=Msg.DETECTIONS)
        link.wait(t)
        return t

    with Qemu(build_dir / "fw.elf", icount=False, link_timeout=5.0) as link:
        dev = Device(link)
        replayed0 = dev.hello(sync_timeout=10).frames_replayed
        refused(link, Msg.STREAM, encode_stream_chunk(0, pcm[:100]))  # no stream open
        refused(link, Msg.STREAM_BEGIN, encode_stream_begin(1, cfg))  # strict: a latent search
        refused(link, Msg.STREAM_BEGIN, encode_stream_begin(0, cfg) + b"\0")  # size
        bad = encode_stream_begin(0, cfg)
        for pos, value in ((2, 0), (3, 0), (3, wire.STREAM_SMOOTH_MAX + 1), (1, 2)):
            refused(link, Msg.STREAM_BEGIN, bad[:pos] + bytes([value]) + bad[pos + 1 :])
        refused(link, Msg.STREAM_BEGIN, bad[:4] + struct.pack("<H", 32769) + bad[6:])
        refused(link, Msg.STREAM_BEGIN, bad[:8] + struct.pack("<I", 1 << C) + bad[12:])
        link.wait(link.submit(Msg.STREAM_BEGIN, encode_stream_begin(6, cfg), expect=None))
        ref = StreamReference(q, "cmvn_select", cfg)
        first = chunk(link, 0, pcm[:1000])
        want = ref.push(pcm[:1000])
        # another copy of the served chunk: the recorded reply, the same DETECTIONS
        payload0 = encode_stream_chunk(0, pcm[:1000])
        link.send(Frame(Msg.STREAM, first.seq | 1 << SEQ_COPY_SHIFT, payload0))
        refused(link, Msg.STREAM, encode_stream_chunk(0, pcm[:1000]))  # new seq, old offset
        refused(link, Msg.STREAM, encode_stream_chunk(1001, pcm[1001:1100]))  # a gap
        refused(link, Msg.STREAM, encode_stream_chunk(1000, pcm[1000:1001]) + b"\0")  # odd
        recs = list(decode_detections(first.reply.payload, C).windows)
        off = 1000
        while off < len(pcm):
            part = pcm[off : off + 1000]
            t = chunk(link, off, part)
            recs += decode_detections(t.reply.payload, C).windows
            want += ref.push(part)
            off += len(part)
        assert recs == want and len(recs) > 40
        # the copy was answered from the reply record (the application not called again: the
        # detections above would differ); a loaded host's own re-sends may add replays
        assert dev.hello().frames_replayed - replayed0 >= 1
        assert any(r.detects for r in recs)
        with pytest.raises(DeviceError):
            link.request(Msg.STREAM_END, encode_stream_end(off + 1), expect=Msg.STREAM_SUMMARY)
        summary = decode_summary(
            link.request(Msg.STREAM_END, encode_stream_end(off), expect=Msg.STREAM_SUMMARY).payload
        )
        assert summary.windows == len(recs)
        assert summary.detections == sum(r.detects for r in recs)
        refused(link, Msg.STREAM, encode_stream_chunk(off, pcm[:10]))  # closed by STREAM_END
        # AUDIO_BEGIN closes an open stream: its chunks are refused after it
        link.wait(link.submit(Msg.STREAM_BEGIN, encode_stream_begin(0, cfg), expect=None))
        link.wait(link.submit(Msg.AUDIO_BEGIN, encode_audio_begin(1, 0), expect=None))
        refused(link, Msg.STREAM, encode_stream_chunk(0, pcm[:10]))
