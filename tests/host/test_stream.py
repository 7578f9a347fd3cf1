"""The streaming audio mode end to end through QEMU (docs/protocol.md, "Audio mode"): int16 PCM
in chunks of any size, the integer MFCC and one LSTM step per frame on the device, every RESULT
field equal to the Python integer reference of the whole chain (integer MFCC -> encoder -> head
and adaptation), the same RESULTs for every chunking; the app's checks (offsets, retried
chunks, an unknown mode refused, sample counts); the input normalisations in the audio mode
(cmvn on the held clip, cmvn_causal frame by frame) equal feature INFER on the same frames; a
40-MFCC x 98-frame model that only fits RAM in the
audio-only build.

Fast layer: 10 clips x 2 chunk sizes of the default model, the protocol checks and the 40 x 98
build with 3 clips. Slow layer: >= 1,000 samples over chunk sizes 1, 160, 511 and 4,000."""

from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from elatta_host.plan import make_plan
from elatta_host.run import DeviceSpec, execute, read_results
from repopaths import ROOT

from codegen.ir.modes import MODES
from codegen.pipeline.build import build
from codegen.target.toolchain import find_tool

pytestmark = pytest.mark.qemu
TARGET = {"kind": "qemu", "machine": "xilinx-zynq-a9", "icount": True}


def run_pcm(
    build_dir: Path,
    data: Path,
    out: Path,
    modes: tuple[str, ...],
    limit: int,
    chunk: int,
) -> dict[tuple[str, int], dict[str, Any]]:
    """codegen run --input pcm --chunk N; returns every sample's compared fields."""
    plan = make_plan(build_dir, data, modes, limit, input_kind="pcm")
    spec = DeviceSpec("qemu0", elf=build_dir / "fw.elf", icount=True, timeout=5.0)
    outcome = execute(plan, [spec], out, resume=False, target=TARGET, progress=False, chunk=chunk)
    assert not outcome.errors, outcome.errors
    be = outcome.report["bit_exact"]
    assert be == {"compared": plan.total, "mismatches": 0, "fields": {}, "first_mismatch": None}
    assert outcome.report["ticks"]["frontend"]["median"] > 0
    # the front end's work area lives on the main stack: its high-water mark stays inside it
    mem = outcome.report["memory"]
    assert 0 < mem["stack_high_water_bytes"] < 16384
    recs = read_results(out / "results.jsonl")
    assert len(recs) == plan.total
    # keyed by stream (mode and condition) and sample id: the same clip in every run
    return {(r.stream, r.result.sample_id): r.result.compared() for r in recs}


def test_audio_mode_bit_exact_and_chunking_invariant(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    build_dir, data = kws_build
    a = run_pcm(build_dir, data, tmp_path / "c160", ("continual",), 10, 160)
    b = run_pcm(build_dir, data, tmp_path / "c511", ("continual",), 10, 511)
    assert len(a) >= 10 and a == b


def test_audio_protocol_checks(kws_build: tuple[Path, Path]) -> None:
    """AUDIO without AUDIO_BEGIN, an unknown mode, a wrong offset, too much audio, an ADPCM block
    whose length does not match its count, and a wrong END count are ERROR(PAYLOAD) and change
    nothing; a chunk that arrives again (another copy of a served frame) is not consumed twice
    (STATUS DUP: AUDIO keeps no record); the utterance then still gives the reference's RESULT,
    and feature INFER keeps working."""
    from elatta_host.device import Device
    from elatta_host.errors import DeviceError
    from elatta_host.infer import (
        decode_result,
        encode_audio,
        encode_audio_adpcm,
        encode_audio_begin,
        encode_audio_end,
        encode_infer,
        parse_description,
    )
    from elatta_host.protocol import SEQ_COPY_SHIFT, Err, Frame, Msg
    from elatta_host.qemu import Qemu

    build_dir, data = kws_build
    plan = make_plan(build_dir, data, ("strict",), 2, input_kind="pcm")
    s = plan.streams[0]
    assert s.pcm is not None
    pcm = s.pcm[0]
    sid = int(s.ids[0])

    def refused(link: Any, type_: Msg, payload: bytes) -> None:
        with pytest.raises(DeviceError) as err:
            link.wait(link.submit(type_, payload, expect=None))
        assert err.value.code == Err.PAYLOAD

    def taken(link: Any, type_: Msg, payload: bytes) -> Any:
        t = link.submit(type_, payload, expect=None)
        assert link.wait(t) is None  # served, acknowledged by STATUS
        return t

    with Qemu(build_dir / "fw.elf", icount=False, link_timeout=5.0) as link:
        dev = Device(link)
        dev.hello(sync_timeout=10)
        app = parse_description(dev.hello().app)
        assert app.get("input") == "features,pcm" and int(app.get("adpcm") or 0) >= 64
        link.request(Msg.RESET, b"", expect=Msg.RESET_ACK)
        refused(link, Msg.AUDIO, encode_audio(0, pcm[:100]))  # no utterance open
        refused(link, Msg.AUDIO_BEGIN, encode_audio_begin(sid, len(MODES)))  # no such mode
        refused(link, Msg.AUDIO_BEGIN, encode_audio_begin(sid, 1) + b"\0")  # size
        taken(link, Msg.AUDIO_BEGIN, encode_audio_begin(sid, 1))
        first = taken(link, Msg.AUDIO, encode_audio(0, pcm[:700]))
        # another copy of the served chunk: not consumed again (the RESULT below says so)
        again = Frame(Msg.AUDIO, first.seq | 1 << SEQ_COPY_SHIFT, encode_audio(0, pcm[:700]))
        link.send(again)
        refused(link, Msg.AUDIO, encode_audio(0, pcm[:700]))  # new seq, old offset
        refused(link, Msg.AUDIO, encode_audio(701, pcm[701:800]))  # a gap
        refused(link, Msg.AUDIO, encode_audio(700, pcm[700:701]) + b"\0")  # odd byte count
        refused(link, Msg.AUDIO_ADPCM, encode_audio_adpcm(700, 10, 0, 0, bytes(5)) + b"\0")
        got = 700
        for off in range(700, len(pcm), 1000):
            part = pcm[off : off + 1000]
            taken(link, Msg.AUDIO, encode_audio(got, part))
            got += len(part)
        refused(link, Msg.AUDIO, encode_audio(got, pcm[:320]))  # a 50th frame: more than T
        with pytest.raises(DeviceError) as err:
            link.request(Msg.AUDIO_END, encode_audio_end(got + 1), expect=Msg.RESULT)
        assert err.value.code == Err.PAYLOAD
        res = decode_result(
            link.request(Msg.AUDIO_END, encode_audio_end(got), expect=Msg.RESULT).payload,
            stream=True,
        )
        assert res.compared() == s.expected(0)
        assert res.ticks_frontend is not None and res.ticks_frontend > 0
        # the link's share is reported: every AUDIO byte was received; no unpacking (the front end
        # takes the samples from the payloads)
        assert res.link_bytes is not None and res.link_bytes >= 2 * len(pcm)
        assert res.ticks_link is not None and res.ticks_link > 0
        assert res.ticks_unpack == 0
        refused(link, Msg.AUDIO, encode_audio(got, pcm[:10]))  # closed by AUDIO_END
        # feature INFER of the same clip's integer features: the same answer
        x = struct.unpack(f"<{s.x[0].size}h", s.x[0].astype("<i2").tobytes())
        feats = np.asarray(x, np.int16).reshape(s.x[0].shape)
        link.request(Msg.RESET, b"", expect=Msg.RESET_ACK)
        r2 = decode_result(
            link.request(Msg.INFER, encode_infer(sid, 1, feats), expect=Msg.RESULT).payload
        )
        assert r2.compared() == s.expected(0)


def test_adpcm_wire_is_bit_exact_against_the_decoded_audio(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """--wire adpcm: the device decodes each AUDIO_ADPCM block (firmware/elt_adpcm.c) into the
    front end; every RESULT equals the integer reference run on the decoded audio, which is not
    the raw audio (so the test can tell)."""
    from elatta_host.plan import make_plan as plan_of
    from elatta_host.run import DeviceSpec, execute

    build_dir, data = kws_build
    plan = plan_of(build_dir, data, ("strict",), 10, input_kind="pcm", wire="adpcm")
    raw = plan_of(build_dir, data, ("strict",), 10, input_kind="pcm")
    assert any((a.pcm != b.pcm).any() for a, b in zip(plan.streams, raw.streams, strict=True))
    spec = DeviceSpec("qemu0", elf=build_dir / "fw.elf", icount=False)
    got = execute(plan, [spec], tmp_path / "r", resume=False, target={"kind": "qemu"},
                  progress=False)  # fmt: skip
    assert got.errors == ()
    assert got.report["bit_exact"]["compared"] == plan.total
    assert got.report["bit_exact"]["mismatches"] == 0


def test_default_audio_only_ram_within_feature_only(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """The default model: the audio-only firmware's static RAM is at most the feature-only
    firmware's plus the one T x F clip it holds for modes cmvn and cmvn_select and the
    continuous mode's state (`app_listen`, its size read from the ELF's symbol table; no feature
    payload, no all-frames operand buffer; the front end's work area on the stack), and the
    split adds up."""
    _, data = kws_build
    ram = {}
    for kind in ("features", "pcm"):
        cfg = (ROOT / "configs/default.toml").read_text()
        cfg = cfg.replace('prefix = "kws_"', f'prefix = "kws_"\ninput = "{kind}"')
        (tmp_path / f"{kind}.toml").write_text(cfg)
        res = build(
            ROOT / "models/default/model.pt",
            ROOT / "models/default/basis.npz",
            tmp_path / f"{kind}.toml",
            tmp_path / kind,
            data_dir=data,
        )
        st = res.manifest["streaming"]
        assert st["audio_mode"] == (kind == "pcm") and st["feature_infer"] == (kind != "pcm")
        assert sum(st["ram_split_bytes"].values()) == st["ram_bytes"]
        ram[kind] = st["ram_bytes"]
        if kind == "pcm":
            nm = subprocess.run(
                [find_tool("arm-none-eabi-nm"), "-S", str(tmp_path / kind / "fw.elf")],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            sizes = [int(ln.split()[1], 16) for ln in nm.splitlines() if ln.endswith(" app_listen")]
            assert len(sizes) == 1, "the continuous mode's state app_listen is not in the ELF"
            listen = sizes[0]
    held = 2 * 49 * 10  # int16 [T][F] of the default model
    assert ram["pcm"] <= ram["features"] + held + listen, (ram, listen)


def long_window_build(tmp: Path, data: Path, input_kind: str) -> Any:
    """A randomly initialised 40-MFCC x 98-frame model (25 ms window, 10 ms hop over 1 s clips,
    normalised with the statistics of the data set's clean train clips), built with
    [target] input = ``input_kind``."""
    import torch
    from buildkit import config_text

    from codegen.base.features import MfccParams, mfcc
    from codegen.base.files import file_sha256
    from codegen.data import dataset_info, load_split
    from codegen.frontend.basis import Basis, compute_basis, save_basis
    from codegen.frontend.model import KwsLstm, save_checkpoint
    from codegen.ir.meta import ModelMeta

    F, H, k = 40, 32, 2
    mp = MfccParams(n_mfcc=F, win_ms=25.0, hop_ms=10.0)
    T = mp.n_frames
    assert T == 98
    classes = tuple(dataset_info(str(data))["classes"])
    feats = np.asarray(mfcc(load_split(str(data), "train").pcm[:64], mp), np.float64)
    mean, std = feats.mean(axis=(0, 1)), feats.std(axis=(0, 1)) + 1e-3
    torch.manual_seed(3)
    m = KwsLstm(F, H, len(classes))
    tmp.mkdir(parents=True, exist_ok=True)
    meta = ModelMeta(
        input_size=F,
        hidden_size=H,
        num_classes=len(classes),
        num_frames=T,
        classes=classes,
        features=mp.to_dict(),
        norm_mean=tuple(float(v) for v in mean),
        norm_std=tuple(float(v) for v in std),
        seed=3,
    )
    save_checkpoint(tmp / "model.pt", m, meta)
    z = np.tanh(np.random.default_rng(3).standard_normal((20, H)))
    V, sv, zm, ev = compute_basis(z, k)
    save_basis(tmp / "basis.npz", Basis(V, sv, zm, 20, k, 3, file_sha256(tmp / "model.pt"), ev))
    (tmp / "config.toml").write_text(config_text(k=k) + f'input = "{input_kind}"\n')
    return build(tmp / "model.pt", tmp / "basis.npz", tmp / "config.toml", tmp / "b", data_dir=data)


def test_long_window_streams_bit_exact_within_64k(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """40 x 98 (7,840 features per clip): the audio-only build fits the 64 KiB RAM budget and
    streams bit-exactly; the manifest states the RAM split."""
    _, data = kws_build
    res = long_window_build(tmp_path / "m", data, "pcm")
    st = res.manifest["streaming"]
    assert st["audio_mode"] and not st["feature_infer"]
    assert st["ram_bytes"] <= 65536
    split = st["ram_split_bytes"]
    assert sum(split.values()) == st["ram_bytes"]
    assert split["front end"] > 0 and split["frame buffers"] > 0 and split["stacks"] > 0
    run_pcm(res.out_dir, data, tmp_path / "r", ("strict",), 3, 511)


def test_feature_infer_of_40x98_does_not_fit_and_says_so(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """The same model with feature INFER: 9 + 2 T F = 15,689 payload bytes, above the largest
    max_payload (8,192); the build names the audio-only way out."""
    from codegen.base.errors import CodegenError

    _, data = kws_build
    with pytest.raises(CodegenError, match='input = "pcm"'):
        long_window_build(tmp_path / "m", data, "both")


@pytest.mark.slow
def test_audio_mode_1000_samples_every_chunking(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """>= 1,000 samples in all over chunk sizes 1, 160, 511 and 4,000 samples, every mode the
    audio mode serves; identical RESULTs for every chunking (chunk 1: one request per sample, so
    few clips, in the stateless strict mode, compared clip by clip)."""
    _, data = kws_build
    big = default_with_payload(data, tmp_path / "big", 8192)
    modes = ("no_adapt", "strict", "continual", "continual_bounded")
    runs = {
        chunk: run_pcm(big, data, tmp_path / f"c{chunk}", modes, 80, chunk)
        for chunk in (4000, 511, 160)
    }
    one = run_pcm(big, data, tmp_path / "c1", ("strict",), 2, 1)
    assert sum(len(r) for r in runs.values()) + len(one) >= 1000
    assert runs[4000] == runs[511] == runs[160]
    # the same selection in whole 4,000-sample chunks: the same RESULTs
    assert one == run_pcm(big, data, tmp_path / "c1-4000", ("strict",), 2, 4000)


def default_with_payload(data: Path, out: Path, max_payload: int) -> Path:
    """The default model rebuilt with another max_payload (a 4,000-sample chunk is 8,004 bytes
    of payload)."""
    cfg = (ROOT / "configs/default.toml").read_text()
    assert "max_payload = 2048" in cfg
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.toml").write_text(
        cfg.replace("max_payload = 2048", f"max_payload = {max_payload}")
    )
    res = build(
        ROOT / "models/default/model.pt",
        ROOT / "models/default/basis.npz",
        out / "config.toml",
        out / "b",
        data_dir=data,
    )
    return res.out_dir


def test_input_normalisations_in_the_audio_mode(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """cmvn (the clip's frames held and normalised when it ends), cmvn_causal (each frame
    normalised from the past as it arrives) and cmvn_select (the clip encoded as it is and
    normalised, the more confident answer) through QEMU's audio mode: bit-exact with the
    reference (cmvn_causal in two chunkings, the same RESULTs), and the reference equals feature
    INFER's on the front end's frames (one mode, both input modes); feature INFER of the same
    modes is bit-exact too. A clip that is not 49 frames is refused by name."""
    from elatta_host.plan import load_build

    from codegen.base.errors import ConfigError
    from codegen.intref.mfcc import mfcc_int
    from codegen.intref.model import infer_int, stream_infer_int

    build_dir, data = kws_build
    modes = ("cmvn", "cmvn_causal", "cmvn_select")
    b = run_pcm(build_dir, data, tmp_path / "c1022", modes, 8, 1022)
    # chunks of 160 (one hop each) for the mode that normalises frame by frame as they arrive;
    # cmvn and cmvn_select hold the clip and normalise it at AUDIO_END whatever the chunking
    a = run_pcm(build_dir, data, tmp_path / "c160", ("cmvn_causal",), 8, 160)
    causal = {key: r for key, r in b.items() if key[0].split("/")[0] == "cmvn_causal"}
    assert len(a) >= 8 and a == causal
    # feature INFER of the same modes through the device (its own code path)
    plan_f = make_plan(build_dir, data, modes, 8)
    spec = DeviceSpec("qemu0", elf=build_dir / "fw.elf", icount=True, timeout=5.0)
    out = execute(plan_f, [spec], tmp_path / "feat", resume=False, target=TARGET, progress=False)
    assert not out.errors, out.errors
    assert out.report["bit_exact"]["compared"] == plan_f.total > 0
    assert out.report["bit_exact"]["mismatches"] == 0
    _, q = load_build(build_dir)
    plan = make_plan(build_dir, data, ("strict",), 8, input_kind="pcm")
    pcm = plan.streams[0].pcm
    assert pcm is not None
    ids = np.arange(len(pcm))
    for mode in modes:
        audio = stream_infer_int(pcm, q, ids, mode=mode).fields()
        feats = infer_int(mfcc_int(pcm, q.mfcc), q, ids, mode=mode).fields()
        for name, want in feats.items():
            np.testing.assert_array_equal(audio[name], want, err_msg=f"{mode}: {name}")
    with pytest.raises(ConfigError, match="exactly T = 49"):
        stream_infer_int(np.zeros((1, 8000), np.int16), q, np.array([1]), mode="strict")


@pytest.fixture(scope="module")
def select_gate_build(
    kws_build: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """The default model built with cmvn_select's shift gate on (`[cmvn] select_gate`,
    docs/adaptation.md "Round 4"), a shift floor below it (`select_floor`, "Round 5"), round
    6's clip floor and clip gate on the clip's own shift d_clip (`select_clip_floor`,
    `select_clip_gate`) and round 8's own shifts of the normalised run (`select_alpha_shift` =
    3, `select_weight_shift` = 1: α = 1/8, w = 1/2, where mode cmvn has 1/16 and 1/4) at margin
    0: a clip takes the normalised answer where d ≥ 0.04, or where d_clip ≥ 1.5 and the floor
    is reached, or where the normalised run is more confident and the floor is reached (0.01 ≤
    d or 0.5 ≤ d_clip; d from the run's own α): (build dir, data dir). The thresholds sit
    between the distances of the tiny set's clips, so each of the five changes some answers."""
    _, data = kws_build
    tmp = tmp_path_factory.mktemp("selgate")
    text = (ROOT / "configs/default.toml").read_text()
    text = re.sub(r"\nselect_margin = [0-9.]+\n", "\nselect_margin = 0.0\n", text)
    text = text.replace("\nselect_gate = 0.0\n", "\nselect_gate = 0.04\n")
    text = re.sub(r"\nselect_floor = [0-9.]+", "\nselect_floor = 0.01", text)
    text = re.sub(r"\nselect_clip_floor = [0-9.]+", "\nselect_clip_floor = 0.5", text)
    text = re.sub(r"\nselect_clip_gate = [0-9.]+", "\nselect_clip_gate = 1.5", text)
    text = text.replace("\n[cmvn]\n", "\n[cmvn]\nselect_alpha_shift = 3\nselect_weight_shift = 1\n")
    keys = ("select_gate = 0.04", "select_margin = 0.0", "select_floor = 0.01")
    shifts = ("select_alpha_shift = 3", "select_weight_shift = 1")
    for key in (*keys, "select_clip_floor = 0.5", "select_clip_gate = 1.5", *shifts):
        assert f"\n{key}" in text, key
    (tmp / "gated.toml").write_text(text)
    out = tmp / "build"
    build(
        ROOT / "models/default/model.pt",
        ROOT / "models/default/basis.npz",
        tmp / "gated.toml",
        out,
        data_dir=data,
    )
    return out, data


def test_select_gate_in_the_audio_mode(
    select_gate_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """cmvn_select with its shift gate, its shift floor, its clip floor, its clip gate and its
    own shifts through QEMU's audio mode (chunks of 1,022 samples; the mode holds the clip and
    decides at AUDIO_END, so the chunking is not what is tested here): bit-exact with the
    reference (run_pcm, every field); the gates fire on some clips and not on others, the floor
    holds some clips back, and the reference differs from the same build's reference without
    the gate, without the floor, without the clip floor, without the clip gate and with mode
    cmvn's shifts, so a device or a reference that ignored any of them would fail."""
    import dataclasses

    from elatta_host.plan import load_build

    from codegen.intref.mfcc import mfcc_int
    from codegen.intref.model import stream_infer_int
    from codegen.stages.cmvn_int import cmvn_select_int

    build_dir, data = select_gate_build
    a = run_pcm(build_dir, data, tmp_path / "c1022", ("cmvn_select",), 8, 1022)
    assert len(a) >= 8
    _, q = load_build(build_dir)
    cm = q.stage_params("cmvn")
    assert cm is not None and cm.select_gate_sum > cm.select_floor_sum > 0
    assert cm.select_clip_gate_sum > cm.select_clip_floor_sum > 0 and cm.select_margin == 0
    assert (
        (cm.select_alpha_shift, cm.select_weight_shift)
        == (3, 1)
        != (
            cm.alpha_shift,
            cm.weight_shift,
        )
    )
    changes: dict[str, dict[str, int]] = {
        name: {name: 0}
        for name in (
            "select_gate_sum",
            "select_floor_sum",
            "select_clip_floor_sum",
            "select_clip_gate_sum",
        )
    }
    changes["mode cmvn's shifts"] = {
        "select_alpha_shift": cm.alpha_shift,
        "select_weight_shift": cm.weight_shift,
    }
    without = {
        name: dataclasses.replace(q, stages={**q.stages, "cmvn": dataclasses.replace(cm, **kw)})
        for name, kw in changes.items()
    }
    plan = make_plan(build_dir, data, ("cmvn_select",), 8, input_kind="pcm")
    fired_all, held_all = [], []
    changed = dict.fromkeys(without, 0)
    for st in plan.streams:
        assert st.pcm is not None
        _, fired, floor_ok = cmvn_select_int(mfcc_int(st.pcm, q.mfcc), cm)
        ref = stream_infer_int(st.pcm, q, st.ids, mode="cmvn_select")
        fired_all += fired.tolist()
        held_all += (~floor_ok).tolist()
        for name, qw in without.items():
            other = stream_infer_int(st.pcm, qw, st.ids, mode="cmvn_select")
            changed[name] += int((np.asarray(ref.z) != np.asarray(other.z)).any(axis=1).sum())
        for i in range(len(st.ids)):  # the device's RESULT is this reference's (every field)
            assert a[(st.key, int(st.ids[i]))]["pred"] == int(ref.pred[i])
    assert any(fired_all) and not all(fired_all), fired_all
    assert any(held_all) and not all(held_all), held_all
    assert all(n > 0 for n in changed.values()), changed


def test_audio_payload_codec() -> None:
    from elatta_host.infer import (
        decode_result,
        encode_audio,
        encode_audio_adpcm,
        encode_audio_begin,
        encode_audio_end,
        max_chunk_samples,
    )

    assert encode_audio_begin(0x1_0000_0005, 3) == b"\x05\0\0\0\x03"
    assert encode_audio(7, np.array([1, -2], np.int16)) == b"\x07\0\0\0\x01\0\xfe\xff"
    assert encode_audio_end(16000) == (16000).to_bytes(4, "little")
    adpcm = encode_audio_adpcm(7, 3, -2, 88, b"\x21\x03")
    assert adpcm == b"\x07\0\0\0\x03\0\xfe\xff\x58\0\x21\x03"
    with pytest.raises(ValueError, match="3 samples take 2 code bytes"):
        encode_audio_adpcm(0, 3, 0, 0, b"\x00")
    assert max_chunk_samples(2048) == 1022 and max_chunk_samples(8192) == 4094
    assert max_chunk_samples(2048, "adpcm") == 4076
    with pytest.raises(ValueError, match="int16"):
        encode_audio(0, np.array([1.0]))
    C, k, H = 2, 1, 1
    body = struct.pack("<IBBBBiiiiiIII", 9, 1, C, k, H, 0, 1, 2, 3, 0, 10, 20, 30)
    body += struct.pack("<i2h2hh", 4, 5, 6, 7, 8, 9)
    res = decode_result(body + struct.pack("<IIII", 99, 98, 97, 96), stream=True)
    assert res.ticks_frontend == 99 and res.z == (9,) and res.logits == (7, 8)
    assert (res.ticks_link, res.link_bytes, res.ticks_unpack) == (98, 97, 96)
    with pytest.raises(ValueError, match="expected"):
        decode_result(body, stream=True)
    with pytest.raises(ValueError, match="expected"):
        decode_result(body)  # INFER's RESULT ends in the link's ticks and bytes
    res = decode_result(body + struct.pack("<II", 95, 94))
    assert res.ticks_frontend is None and res.ticks_unpack is None
    assert (res.ticks_link, res.link_bytes) == (95, 94)
