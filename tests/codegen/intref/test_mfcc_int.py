"""The integer MFCC front end (docs/numeric.md §7): the quantizer's decisions and bounds, the
Python integer reference against the float front end (a float-vs-fixed report: tolerances
there), and the C kernel (firmware/elt_mfcc_s16.c + generated tables) against the Python
integer reference, bit for bit: host-compiled (scalar C, and with UBSan), under QEMU (the NEON
operations and the reference variant's plain C), on silence, dither, full-scale clipping, DC
offsets, impulses, chirps, Nyquist squares and voiced sounds; the slow layer adds ≥ 2,000 clips
with real speech (FSDD)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from elatta_measure.mfcc_host import HostMfcc, build_host_mfcc
from repopaths import ROOT

from codegen.base.errors import CodegenError, ConfigError
from codegen.base.features import MfccParams, mfcc
from codegen.base.qformat import QFormat
from codegen.intref.mfcc import frames_int, mfcc_int
from codegen.ir.mfcc import QMfcc
from codegen.quantize.mfcc import quantize_mfcc

KINDS = (
    "silence",
    "dither",
    "noise",
    "full_range",
    "clipped",
    "dc_speech",
    "dc_const",
    "chirp",
    "impulses",
    "nyquist",
    "voiced",
    "burst",
)
FSDD_DIR = Path(os.environ.get("FSDD_DIR", ROOT.parent / "shared/data/fsdd"))


def _voiced(rng: np.random.Generator, t: np.ndarray, sr: int) -> np.ndarray:
    f0 = rng.uniform(80, 300) * (1 + 0.05 * np.sin(2 * np.pi * rng.uniform(2, 6) * t))
    phase = 2 * np.pi * np.cumsum(f0) / sr
    sig = sum(np.sin(k * phase) / k for k in range(1, 25) if k * f0.max() < sr / 2)
    env = np.clip(np.sin(np.pi * t / t[-1]) * rng.uniform(0.5, 1.5), 0, 1)
    return np.asarray(sig * env)


def edge_clips(rng: np.random.Generator, n: int, samples: int = 16000) -> np.ndarray:
    """n int16 clips cycling through KINDS (every kind at least once when n >= len(KINDS))."""
    sr = 16000
    t = np.arange(samples) / sr
    out = np.zeros((n, samples), np.int64)
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        if kind == "silence":
            x = np.zeros(samples)
        elif kind == "dither":
            x = rng.integers(-1, 2, samples)
        elif kind == "noise":
            x = rng.standard_normal(samples) * 32767 * 10 ** rng.uniform(-4.5, -0.5)
        elif kind == "full_range":
            x = rng.integers(-32768, 32768, samples)
        elif kind == "clipped":
            x = _voiced(rng, t, sr) * 32768 * rng.uniform(2, 20)
        elif kind == "dc_speech":
            dc = rng.uniform(-20000, 20000)
            x = dc + _voiced(rng, t, sr) * (32767 - abs(dc)) * rng.uniform(0.01, 0.5)
        elif kind == "dc_const":
            x = np.full(samples, rng.choice([-32768, 32767, int(rng.integers(-32768, 32768))]))
        elif kind == "chirp":
            f = 50 * (7900 / 50) ** (t / t[-1])
            x = np.sin(2 * np.pi * np.cumsum(f) / sr) * 32767 * rng.uniform(0.001, 1.0)
        elif kind == "impulses":
            x = np.zeros(samples)
            pos = rng.integers(0, samples, int(rng.integers(1, 40)))
            x[pos] = rng.choice([-32768, 32767], pos.size)
        elif kind == "nyquist":
            x = np.where(np.arange(samples) % 2 == 0, 32767, -32768) * rng.uniform(0.001, 1.0)
        elif kind == "voiced":
            x = _voiced(rng, t, sr) * 8000 * 10 ** rng.uniform(-3, 0.3)
            x = x + rng.standard_normal(samples) * rng.uniform(0, 300)
        else:  # burst: silence, then an abrupt loud segment
            x = np.zeros(samples)
            n = min(2000, samples // 2)
            a = int(rng.integers(0, samples - n))
            x[a : a + n] = rng.standard_normal(n) * 20000
        out[i] = np.clip(np.round(x), -32768, 32767)
    return out.astype(np.int16)


def model_like(params: MfccParams, rng: np.random.Generator) -> QMfcc:
    """A front end with a model's normalisation: statistics of voiced clips' float features and
    an x format for twice their range (as `codegen build` calibrates x)."""
    n = params.clip_samples
    clips = np.stack([edge_clips(rng, 11, n)[10] for _ in range(8)])
    clips = np.concatenate([clips, edge_clips(rng, 12, n)])
    f = mfcc(clips, params).astype(np.float64)
    mean, std = f.mean(axis=(0, 1)), f.std(axis=(0, 1)) + 1e-3
    xmax = float(np.abs((f - mean) / std).max())
    return quantize_mfcc(params, mean, std, QFormat.for_range(2 * xmax))


@pytest.fixture(scope="module")
def qm() -> QMfcc:
    return model_like(MfccParams(), np.random.default_rng(5))


@pytest.fixture(scope="module")
def host(qm: QMfcc, tmp_path_factory: pytest.TempPathFactory) -> HostMfcc:
    return build_host_mfcc(qm, tmp_path_factory.mktemp("mfcc_host"))


def assert_same(c: np.ndarray, py: np.ndarray, what: str) -> None:
    """Every coefficient equal; else name the first differing clip, frame and coefficient."""
    assert c.shape == py.shape, (what, c.shape, py.shape)
    bad = np.argwhere(c != py)
    if bad.size:
        i = tuple(int(v) for v in bad[0])
        raise AssertionError(
            f"{what}: {len(bad)} coefficients differ; first at clip/frame/coefficient {list(i)}: "
            f"C={int(c[i])} Python={int(py[i])}"
        )


# ------------------------------------------------------------------------------- quantizer


def test_default_decisions_and_bounds(qm: QMfcc) -> None:
    p = qm.params
    assert qm.n_cfft == 512 and qm.bin_lo == 2 and qm.bin_hi == 255
    assert 10 <= qm.power_shift <= 24
    for stage, (bound, limit) in qm.bounds.items():
        assert 0 < bound <= limit, stage
    # the Hann window in Q1.30: its peak 1.0 is exact
    assert int(qm.window.max()) == 1 << 30 and int(qm.window[0]) == 0
    # the filters are features._tables' filters in Q15, within half an LSB
    from codegen.base.features import _tables

    fb = _tables(p)[1]
    for m in range(p.n_mels):
        o, n, s = int(qm.mel_off[m]), int(qm.mel_len[m]), int(qm.mel_start[m])
        got = qm.mel_w[o : o + n] / 32768.0
        np.testing.assert_allclose(got, fb[s : s + n, m], atol=0.5 / 32768 + 1e-7)
    assert 2**30 <= qm.floor_mant < 2**31
    assert qm.floor_mant * 2.0**qm.floor_exp == pytest.approx(p.log_floor, rel=1e-9)
    assert int(qm.norm_mult.max()) <= 2**31 - 1 and int(qm.norm_shift.min()) >= 1


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigError, match="n_fft=1000"):
        quantize_mfcc(MfccParams(n_fft=1000), np.zeros(10), np.ones(10), QFormat(4, 11))
    with pytest.raises(ConfigError, match="std must be positive"):
        quantize_mfcc(MfccParams(), np.zeros(10), np.r_[np.ones(9), 0.0], QFormat(4, 11))
    with pytest.raises(ConfigError, match="n_mfcc = 10"):
        quantize_mfcc(MfccParams(), np.zeros(9), np.ones(9), QFormat(4, 11))
    # 8 s windows leave too few bits per sample for int32 FFT values
    big = MfccParams(win_ms=8000.0, hop_ms=500.0, n_fft=131072, clip_samples=128000)
    with pytest.raises(CodegenError, match="128000-sample window leaves 11 bits"):
        quantize_mfcc(big, np.zeros(10), np.ones(10), QFormat(4, 11))


# ------------------------------------------------------------- Python integer vs float


def test_integer_fft_power_tracks_the_float_dft(qm: QMfcc) -> None:
    """Float-vs-fixed report (tolerance): the block-normalised power spectrum of random frames
    against numpy's rfft, relative to each frame's peak bin."""
    from codegen.intref.mfcc import block_normalise, power_int

    rng = np.random.default_rng(1)
    x = rng.integers(-32768, 32768, (16, qm.params.win_length))
    x[:4] //= 1000  # quiet frames keep their precision through the block exponent
    f, sh = block_normalise(x.astype(np.int64) * qm.window, qm.frame_bits)
    p = power_int(f, qm).astype(np.float64) * 2.0**qm.power_shift
    X = np.fft.rfft(f.astype(np.float64), n=qm.params.n_fft, axis=1)
    ref = 4 * np.abs(X[:, qm.bin_lo : qm.bin_hi + 1]) ** 2  # the split returns 2 X[k]
    rel = np.abs(p - ref).max(axis=1) / ref.max(axis=1)
    assert rel.max() < 1e-5, rel.max()


def test_integer_features_track_float_features(qm: QMfcc) -> None:
    """Float-vs-fixed report: the integer features against the float path quantised
    (features.mfcc → normalise → round into x): within a few LSBs on voiced and noisy clips."""
    rng = np.random.default_rng(2)
    clips = np.stack([edge_clips(rng, 11)[i] for i in (2, 10) for _ in range(6)])
    xi = mfcc_int(clips, qm).astype(np.int64)
    mean = qm.norm_mean / 2.0**16
    std = 2.0 ** (qm.norm_shift - 16 + qm.x_frac) / qm.norm_mult
    xf = (mfcc(clips, qm.params) - mean) / std * 2.0**qm.x_frac
    d = np.abs(xi - np.clip(np.round(xf), -32768, 32767))
    assert d.max() <= 32 and d.mean() < 0.5, (d.max(), d.mean())


def test_silence_is_the_log_floor(qm: QMfcc) -> None:
    """All-zero frames: every mel energy is the floor, log2 = log2(1e-6) in Q20."""
    from codegen.intref.mfcc import log2_int, mel_int, power_int

    z = np.zeros((2, qm.params.win_length), np.int64)
    acc = mel_int(power_int(z, qm), qm)
    assert not acc.any()
    L = log2_int(acc, np.full(2, -qm.frame_bits, np.int64), qm)
    assert np.all(np.abs(L / 2.0**20 - np.log2(qm.params.log_floor)) < 4e-6)


# ------------------------------------------------------------------ C == Python (host)


def test_host_c_equals_python_every_kind(qm: QMfcc, host: HostMfcc) -> None:
    clips = edge_clips(np.random.default_rng(3), 24 * len(KINDS))
    assert_same(host.clips(clips), mfcc_int(clips, qm), "host C vs Python")


def test_host_c_stages_equal_python(qm: QMfcc, host: HostMfcc) -> None:
    """The per-frame block exponent and log2 mel energies too (the stage a mismatch hits)."""
    clips = edge_clips(np.random.default_rng(4), len(KINDS))
    frames = clips[:, : qm.params.win_length]
    seen: dict[str, np.ndarray] = {}
    py = frames_int(frames, qm, trace=lambda s, v: seen.__setitem__(s, v))
    out, sh, lg = host.frames(frames)
    np.testing.assert_array_equal(sh, seen["mfcc.shift"][:, 0], err_msg="block exponent")
    np.testing.assert_array_equal(lg, seen["mfcc.log2"], err_msg="log2 mel")
    np.testing.assert_array_equal(out, py, err_msg="features")
    # the edge kinds reach both ends of the block exponent
    assert int(sh.min()) == -qm.frame_bits and int(sh.max()) >= 45 - qm.frame_bits


def test_host_c_ubsan(qm: QMfcc, tmp_path: Path) -> None:
    h = build_host_mfcc(qm, tmp_path, sanitize=True)
    clips = edge_clips(np.random.default_rng(6), 2 * len(KINDS))
    assert_same(h.clips(clips), mfcc_int(clips, qm), "UBSan host C vs Python")


@pytest.mark.parametrize(
    "params",
    [
        MfccParams(win_ms=25.0, hop_ms=10.0, n_fft=512, n_mfcc=13, n_mels=32, window="hamming"),
        MfccParams(n_mfcc=40, n_mels=40, fmax=8000.0, clip_samples=8000),
        MfccParams(win_ms=30.0, hop_ms=15.0, n_fft=2048, n_mels=64, fmin=0.0, log_floor=1e-3),
    ],
    ids=["25ms_512_hamming", "40x40_8k", "2048_64mel"],
)
def test_other_settings_host_c_equals_python(params: MfccParams, tmp_path: Path) -> None:
    q = model_like(params, np.random.default_rng(7))
    h = build_host_mfcc(q, tmp_path)
    clips = edge_clips(np.random.default_rng(8), 2 * len(KINDS), params.clip_samples)
    py = mfcc_int(clips, q)
    assert py.shape == (clips.shape[0], params.n_frames, params.n_mfcc)
    assert_same(h.clips(clips), py, f"{params} host C vs Python")


def test_generated_tables_are_deterministic_and_state_formats(qm: QMfcc) -> None:
    from codegen.emit.mfcc import emit_mfcc_c

    a, b = emit_mfcc_c(qm, "m_"), emit_mfcc_c(qm, "m_")
    assert a == b and set(a) == {"m_mfcc_params.c", "m_mfcc_params.h"}
    text = a["m_mfcc_params.c"]
    for fmt in qm.formats().values():
        assert fmt in text
    assert "static const int32_t m_mfcc_window[640]" in text
    with pytest.raises(ConfigError, match="prefix"):
        emit_mfcc_c(qm, "1bad")


# ---------------------------------------------------------------------- QEMU (Cortex-A9)


@pytest.mark.qemu
@pytest.mark.parametrize("scalar", [False, True], ids=["neon", "scalar"])
def test_arm_build_equals_python_under_qemu(qm: QMfcc, tmp_path: Path, scalar: bool) -> None:
    from elatta_measure.bench_frontend import run_probe

    clips = edge_clips(np.random.default_rng(9), len(KINDS) + 2)
    run = run_probe(qm, clips, tmp_path, scalar=scalar)
    assert_same(run.out, mfcc_int(clips, qm), f"QEMU ({'scalar' if scalar else 'NEON'})")
    assert run.ticks.min() > 0


@pytest.mark.qemu
@pytest.mark.parametrize(
    "params",
    [
        MfccParams(win_ms=2.0, hop_ms=2.0, n_fft=32, n_mels=3, n_mfcc=3, fmax=8000.0,
                   clip_samples=2000),
        MfccParams(win_ms=10.0, hop_ms=25.0, n_fft=256, n_mels=20),
        MfccParams(win_ms=63.0, hop_ms=20.0, n_mels=33, n_mfcc=13),
        MfccParams(win_ms=30.0, hop_ms=15.0, n_fft=2048, n_mels=64, fmin=0.0, log_floor=1e-3,
                   clip_samples=8000),
        MfccParams(win_ms=16.0, hop_ms=16.0, n_fft=256, n_mels=18, n_mfcc=7, fmin=0.0,
                   fmax=3000.0, clip_samples=4000),
    ],
    ids=["32_3mel", "256_short_window", "1008_of_1024_33mel", "2048_64mel", "256_fused_from_16"],
)  # fmt: skip
def test_arm_neon_other_shapes_equal_python_under_qemu(params: MfccParams, tmp_path: Path) -> None:
    """The NEON paths for shapes other than the default: the smallest FFT with the head, a
    window much shorter than n_fft / 2, one longer (every FFT quarter non-zero), the largest
    FFT; mel counts not a multiple of four and odd coefficient counts (the scalar tails); the
    last FFT stage fused with the power from another first bin (bins from 0, the butterflies and
    bins outside the fused steps scalar)."""
    from elatta_measure.bench_frontend import run_probe

    q = model_like(params, np.random.default_rng(7))
    clips = edge_clips(np.random.default_rng(8), len(KINDS), params.clip_samples)
    run = run_probe(q, clips, tmp_path)
    assert_same(run.out, mfcc_int(clips, q), f"QEMU NEON {params}")


@pytest.mark.qemu
def test_arm_neon_every_block_exponent_under_qemu(qm: QMfcc, tmp_path: Path) -> None:
    """Noise whose level rises by 2^16 over each clip: the frames' block exponents sh pass every
    value from near-silent to full scale, across both ends of the NEON head's one-product range
    (17 <= sh <= 31) and of its high-word exponent (some u >= 2^31), full-scale and -32768
    samples at the end."""
    from elatta_measure.bench_frontend import run_probe

    from codegen.intref.mfcc import block_normalise

    rng = np.random.default_rng(11)
    n = 16000
    ramp = 2.0 ** (np.arange(n) / n * 16.0 - 1.0)
    clips = np.stack([rng.standard_normal(n) * ramp, rng.uniform(-1, 1, n) * ramp * 2])
    clips = np.clip(np.round(clips), -32768, 32767).astype(np.int16)
    clips[:, -700:-600] = -32768
    p = qm.params
    T = 1 + (n - p.win_length) // p.hop_length
    idx = np.arange(T)[:, None] * p.hop_length + np.arange(p.win_length)[None, :]
    fr = clips[:, idx].reshape(-1, p.win_length).astype(np.int64)
    sh = set(block_normalise(fr * qm.window, qm.frame_bits)[1].tolist())
    assert {15, 16, 17, 18, 25, 26} <= sh, sorted(sh)
    run = run_probe(qm, clips, tmp_path)
    assert_same(run.out, mfcc_int(clips, qm), "QEMU NEON exponent sweep")


# ------------------------------------------------------------------------ slow: ≥ 2,000


@pytest.mark.slow
def test_two_thousand_clips_with_real_speech(tmp_path: Path) -> None:
    """≥ 2,000 clips: FSDD human speech (clean and mixed with the ten noises at every SNR)
    when the recordings are present, the synthetic kinds for the rest; host C == Python on
    every coefficient of every frame."""
    from codegen.data import conditions, load_condition

    rng = np.random.default_rng(10)
    parts = []
    if (FSDD_DIR / "recordings").is_dir():
        from codegen.data.fsdd import build_fsdd

        build_fsdd(FSDD_DIR, tmp_path / "fsdd", progress=False)
        for c in conditions(str(tmp_path / "fsdd"), "clean") + conditions(
            str(tmp_path / "fsdd"), "additive"
        ):
            parts.append(load_condition(str(tmp_path / "fsdd"), c).pcm[:30])
    speech = np.concatenate(parts) if parts else np.zeros((0, 16000), np.int16)
    clips = np.concatenate([speech, edge_clips(rng, max(2000 - len(speech), 600))])
    assert len(clips) >= 2000
    q = model_like(MfccParams(), rng)
    h = build_host_mfcc(q, tmp_path / "host")
    for s in range(0, len(clips), 250):
        part = clips[s : s + 250]
        assert_same(h.clips(part), mfcc_int(part, q), f"clips {s}..{s + len(part) - 1}")


@pytest.mark.slow
@pytest.mark.qemu
def test_cmsis_anchor_builds_and_runs(qm: QMfcc, tmp_path: Path) -> None:
    """CMSIS-DSP 1.10.3 arm_mfcc_q15 (fetched from PyPI into out/cache/cmsisdsp by the bench's
    setup) builds for the Cortex-A9 in both variants and runs every frame with status 0; its
    q8.7 coefficient 0 follows the frame's log energy as ours does (rank correlation)."""
    from elatta_measure.bench import CMSIS_CACHE
    from elatta_measure.bench_frontend import run_cmsis, run_probe

    clips = edge_clips(np.random.default_rng(11), len(KINDS))[[2, 5, 10, 11]]
    ours = run_probe(qm, clips, tmp_path / "ours")
    for neon in (True, False):
        cm = run_cmsis(qm, clips, tmp_path / f"cm{int(neon)}", CMSIS_CACHE, neon=neon)
        assert cm.ticks.shape == ours.ticks.shape and cm.ticks.min() > 0
        a = np.argsort(np.argsort(cm.out[..., 0].reshape(-1)))
        b = np.argsort(np.argsort(ours.out[..., 0].reshape(-1)))
        assert np.corrcoef(a, b)[0, 1] > 0.9


# ------------------------------------------------------------------ streaming front end


@pytest.mark.parametrize("chunk", [1, 160, 511, 4000])
def test_stream_any_chunking_equals_the_whole_stream(qm: QMfcc, host: HostMfcc, chunk: int) -> None:
    """PCM pushed in chunks of 1, 160, 511 and 4,000 samples (and one frame per push call):
    the C stream, the Python stream and mfcc_int over the whole stream give the same frames."""
    from codegen.intref.mfcc import MfccStream

    rng = np.random.default_rng(12)
    pcm = edge_clips(rng, len(KINDS), 2000).reshape(-1)  # kinds back to back: 24,000 samples
    want = mfcc_int(pcm, qm)
    py = MfccStream(qm)
    got = [py.push(pcm[s : s + chunk]) for s in range(0, pcm.size, chunk)]
    np.testing.assert_array_equal(np.concatenate(got), want)
    np.testing.assert_array_equal(host.stream(pcm, chunk), want)
    np.testing.assert_array_equal(host.stream(pcm, chunk, max_frames=1), want)


def test_stream_40x98_and_hop_beyond_window(tmp_path: Path) -> None:
    """A 2 s, 40-coefficient stream (the 40 x 98 input) and a hop longer than the window."""
    from codegen.intref.mfcc import MfccStream

    rng = np.random.default_rng(13)
    for params in (
        MfccParams(n_mfcc=40, clip_samples=31680),  # 1 + (31680 - 640) // 320 = 98 frames
        MfccParams(win_ms=10.0, hop_ms=25.0, n_fft=256, n_mels=20),
    ):
        q = model_like(params, rng)
        pcm = edge_clips(rng, len(KINDS), 16000)[[10, 4, 5]].reshape(-1)[: params.clip_samples]
        want = mfcc_int(pcm, q)
        if params.n_mfcc == 40:
            assert want.shape == (98, 40)
        h = build_host_mfcc(q, tmp_path / str(params.n_mfcc))
        for chunk in (1, 511):
            np.testing.assert_array_equal(h.stream(pcm, chunk), want)
            py = MfccStream(q)
            got = [py.push(pcm[s : s + chunk]) for s in range(0, pcm.size, chunk)]
            np.testing.assert_array_equal(np.concatenate(got), want)


@pytest.mark.slow
@pytest.mark.qemu
def test_two_thousand_clips_neon_under_qemu(tmp_path: Path) -> None:
    """The device build (NEON) on ≥ 2,000 clips under QEMU, in batches of 250 clips per ELF:
    FSDD speech (clean and mixed) when present plus the synthetic kinds; every coefficient of
    every frame equal to the Python integer reference."""
    from elatta_measure.bench_frontend import run_probe

    from codegen.data import conditions, load_condition

    rng = np.random.default_rng(14)
    parts = []
    if (FSDD_DIR / "recordings").is_dir():
        from codegen.data.fsdd import build_fsdd

        root = tmp_path / "fsdd"
        build_fsdd(FSDD_DIR, root, progress=False)
        for c in conditions(str(root), "clean") + conditions(str(root), "additive"):
            parts.append(load_condition(str(root), c).pcm[:30])
    speech = np.concatenate(parts) if parts else np.zeros((0, 16000), np.int16)
    clips = np.concatenate([speech, edge_clips(rng, max(2000 - len(speech), 600))])
    assert len(clips) >= 2000
    q = model_like(MfccParams(), rng)
    for s in range(0, len(clips), 250):
        part = clips[s : s + 250]
        run = run_probe(q, part, tmp_path / f"b{s}")
        assert_same(run.out, mfcc_int(part, q), f"QEMU NEON clips {s}..{s + len(part) - 1}")
