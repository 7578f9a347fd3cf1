"""Built-in GSC-C: the tiny preset (numpy tier), format, determinism, errors, shifts."""

from __future__ import annotations

import argparse
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from codegen.data import (
    CLASSES,
    NOISES,
    Condition,
    DataError,
    background_noises,
    build,
    conditions,
    dataset_info,
    load_condition,
    load_split,
    noise,
    tts,
)
from codegen.data import cli as data_cli
from codegen.data.common import ID_STRIDE, SILENCE
from codegen.data.shifts import MixResult
from codegen.data.store import mix_condition, noise_bank

SPLIT_NAMES = ("train", "val", "test")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny")
    build(out, preset="tiny", tier="numpy", progress=False, jobs=1)
    return out


def measured_snr(
    mix_pcm: np.ndarray, clean: np.ndarray, res: MixResult, labels: np.ndarray
) -> np.ndarray:
    """SNR of each mixture from the stored int16 audio: residual after removing the clean part."""
    c = clean.astype(np.float64) / 32768.0
    m = mix_pcm.astype(np.float64) / 32768.0
    g = res.gain[:, None]
    residual = m - g * c
    p_speech = (
        np.where(labels == CLASSES.index(SILENCE), 10 ** (-26 / 10), np.mean(c**2, axis=1))
        * res.gain**2
    )
    return 10 * np.log10(p_speech / np.mean(residual**2, axis=1))


def test_tiny_splits_shapes_and_labels(tiny: Path) -> None:
    info = dataset_info(tiny)
    assert info["data"] == "builtin" and info["preset"] == "tiny" and info["tier"] == "numpy"
    assert tuple(info["classes"]) == CLASSES and tuple(info["noises"]) == NOISES
    assert info["sample_rate"] == 16000 and info["snrs"] == [0.0, -5.0, -10.0, -15.0, -20.0]
    all_ids = []
    for name in SPLIT_NAMES:
        s = load_split(tiny, name)
        assert s.name == name and s.classes == CLASSES
        assert s.pcm.dtype == np.int16 and s.pcm.shape == (len(s), 16000)
        assert s.labels.dtype == np.int64 and s.ids.dtype == np.int64
        assert set(s.labels.tolist()) == set(range(12)), f"{name} misses classes"
        assert info["splits"][name]["count"] == len(s)
        assert np.abs(s.pcm.astype(np.int32)).max(axis=1).min() > 0
        all_ids.append(s.ids)
    ids = np.concatenate(all_ids)
    assert np.unique(ids).size == ids.size


def test_condition_ids_unique_and_stable(tiny: Path) -> None:
    seen = set(np.concatenate([load_split(tiny, s).ids for s in SPLIT_NAMES]).tolist())
    conds = conditions(tiny)
    assert conds[0] == Condition("clean", "clean", None)
    test = load_split(tiny, "test")
    for cond in conds[1:]:
        code = next(
            c["code"]
            for c in dataset_info(tiny)["conditions"]
            if (c["family"], c["name"], c["snr_db"]) == (cond.family, cond.name, cond.snr_db)
        )
        ids = test.ids + code * ID_STRIDE
        assert not seen & set(ids.tolist())
        seen |= set(ids.tolist())
    split = load_condition(tiny, Condition("additive", "dog", -10.0))
    assert split.name == "test/additive/dog/-10"
    assert split.ids.max() < 2**31
    np.testing.assert_array_equal(split.labels, test.labels)


def test_rebuild_is_byte_identical_and_worker_independent(tiny: Path, tmp_path: Path) -> None:
    other = tmp_path / "again"
    build(other, preset="tiny", tier="numpy", progress=False, jobs=2)
    names = sorted(p.name for p in tiny.iterdir())
    assert names == sorted(p.name for p in other.iterdir())
    for n in names:
        assert (tiny / n).read_bytes() == (other / n).read_bytes(), n


def test_build_reuses_and_force_rebuilds(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    shutil.copytree(tiny, out)
    stamp = (out / "manifest.json").stat().st_mtime_ns
    build(out, preset="tiny", tier="numpy", progress=False, jobs=1)
    assert (out / "manifest.json").stat().st_mtime_ns == stamp
    build(out, preset="tiny", tier="numpy", progress=False, jobs=1, seed=1)
    assert dataset_info(out)["seed"] == 1
    build(out, preset="tiny", tier="numpy", progress=False, jobs=1, seed=1, force=True)
    assert (out / "manifest.json").stat().st_mtime_ns != stamp


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete", "garbage"])
def test_corrupted_files_name_the_file(tiny: Path, tmp_path: Path, damage: str) -> None:
    out = tmp_path / "broken"
    shutil.copytree(tiny, out)
    target = out / "clean_test.npz"
    data = target.read_bytes()
    if damage == "truncate":
        target.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        target.write_bytes(data[:1000] + bytes([data[1000] ^ 0xFF]) + data[1001:])
    elif damage == "delete":
        target.unlink()
    else:
        # a self-consistent manifest entry for a file that is not an npz at all
        target.write_bytes(b"not a zip file")
        info = json.loads((out / "manifest.json").read_text())
        from codegen.base.files import file_sha256

        info["files"]["clean_test.npz"] = {"bytes": 14, "sha256": file_sha256(target)}
        (out / "manifest.json").write_text(json.dumps(info))
    with pytest.raises(DataError, match="clean_test.npz"):
        load_split(out, "test")
    with pytest.raises(DataError, match="clean_test.npz"):
        load_condition(out, Condition("additive", "cat", -10.0))
    load_split(out, "train")  # the other files are still fine


def test_missing_or_bad_manifest(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="manifest.json"):
        load_split(tmp_path, "train")
    (tmp_path / "manifest.json").write_text("{nope")
    with pytest.raises(DataError, match="manifest.json"):
        dataset_info(tmp_path)


def test_additive_snr_within_0_1_db(tiny: Path) -> None:
    test = load_split(tiny, "test")
    additive = conditions(tiny, "additive")
    assert len(additive) == len(NOISES) * 5
    for cond in additive:
        assert cond.snr_db is not None
        res = mix_condition(tiny, cond)
        snr = measured_snr(res.pcm, test.pcm, res, test.labels)
        assert np.all(np.abs(snr - cond.snr_db) < 0.1), (cond, snr)
        assert not np.array_equal(res.pcm, test.pcm)
    for cond in additive[::7]:
        np.testing.assert_array_equal(load_condition(tiny, cond).pcm, mix_condition(tiny, cond).pcm)


def test_mixing_is_deterministic_and_guards_silent_crops(tiny: Path) -> None:
    cond = Condition("additive", "fireworks", -15.0)
    a, b = mix_condition(tiny, cond), mix_condition(tiny, cond)
    np.testing.assert_array_equal(a.pcm, b.pcm)
    bank = noise_bank(tiny, "fireworks").astype(np.float64)
    powers = [np.mean(bank[k, s : s + 16000] ** 2) for k, s in zip(a.clip, a.start, strict=True)]
    assert min(powers) >= 1e-4  # no near-silent crop was used


def test_some_rows_mix_to_those_rows_of_the_whole(tiny: Path) -> None:
    """Choosing clips first and mixing only them (codegen run, codegen eval with --limit) gives
    the very arrays of mixing everything: each mixture is seeded by its own id."""
    from codegen.data import condition_ids

    n = len(load_split(tiny, "test").ids)
    rows = np.random.default_rng(3).permutation(n)[: max(1, n // 5)]
    for cond in [conditions(tiny, f)[1] for f in ("additive", "reverb", "channel")] + [
        Condition("clean", "clean")
    ]:
        whole, part = load_condition(tiny, cond), load_condition(tiny, cond, rows=rows)
        ids, labels = condition_ids(tiny, cond)
        np.testing.assert_array_equal(ids, whole.ids)
        np.testing.assert_array_equal(labels, whole.labels)
        for f in ("pcm", "ids", "labels"):
            np.testing.assert_array_equal(getattr(part, f), getattr(whole, f)[rows], err_msg=f)
    with pytest.raises(DataError, match="rows must be"):
        load_condition(tiny, Condition("clean", "clean"), rows=np.array([n]))


def test_loaded_arrays_are_private(tiny: Path) -> None:
    cond = Condition("clean", "clean")
    s = load_condition(tiny, cond)
    s.pcm[:] = 0  # callers may modify what they get without touching the cache
    assert np.abs(load_condition(tiny, cond).pcm).max() > 0
    np.testing.assert_array_equal(load_condition(tiny, cond).pcm, load_split(tiny, "test").pcm)


def test_reverb_and_channel_conditions(tiny: Path) -> None:
    test = load_split(tiny, "test")
    reverb = conditions(tiny, "reverb")
    channel = conditions(tiny, "channel")
    assert [c.name for c in reverb] == ["rt60_0.3", "rt60_0.6", "rt60_1.0"]
    assert [c.name for c in channel] == ["gain", "lowpass", "highpass", "peaking"]
    for cond in reverb + channel:
        s = load_condition(tiny, cond)
        assert s.pcm.dtype == np.int16 and s.pcm.shape == test.pcm.shape
        assert s.name == f"test/{cond.family}/{cond.name}"
        assert not np.array_equal(s.pcm, test.pcm)
        np.testing.assert_array_equal(s.pcm, load_condition(tiny, cond).pcm)

    # longer RT60 smears more energy into the clip's tail than shorter RT60
    def tail_energy(name: str) -> float:
        x = load_condition(tiny, Condition("reverb", name)).pcm.astype(np.float64)
        return float(np.mean(x**2))

    assert tail_energy("rt60_1.0") > 0 and tail_energy("rt60_0.3") > 0


def test_unknown_condition_split_family(tiny: Path) -> None:
    with pytest.raises(DataError, match="additive/dog/-7"):
        load_condition(tiny, Condition("additive", "dog", -7.0))
    with pytest.raises(DataError, match="holdout"):
        load_split(tiny, "holdout")
    with pytest.raises(DataError, match="'noisy'"):
        conditions(tiny, "noisy")


def test_background_noises(tiny: Path) -> None:
    bg = background_noises(tiny)
    assert bg.dtype == np.float32 and bg.ndim == 2 and bg.shape[1] >= 16000
    np.testing.assert_allclose(np.abs(bg).max(axis=1), 1.0, atol=1e-6)
    kinds = dataset_info(tiny)["background"]["kinds"]
    assert bg.shape[0] == len(kinds) and not set(kinds) & set(NOISES)


def test_noise_stand_ins_have_events_and_gaps() -> None:
    """Event categories (barks, meows, horns …) alternate loud events and quiet gaps."""
    for cat in ("dog", "cat", "crying_baby", "laughing", "car_horn", "fireworks"):
        x = noise.esc_clip(cat, np.random.default_rng(3), 5.0).astype(np.float64)
        frames = 10 * np.log10(np.mean(x[:80000].reshape(50, 1600) ** 2, axis=1) + 1e-12)
        assert frames.max() - np.percentile(frames, 20) > 15.0, cat
    for cat in NOISES:
        a = noise.esc_clip(cat, np.random.default_rng(5), 2.0)
        np.testing.assert_array_equal(a, noise.esc_clip(cat, np.random.default_rng(5), 2.0))
        assert np.abs(a).max() == pytest.approx(1.0)


def test_held_out_noises_are_new_kinds_and_deterministic() -> None:
    """The held-out kinds of the adaptation study's S_h (docs/adaptation.md "Round 7"): none
    is a training or target noise; each clip is seeded, peak-normalised, and not silence."""
    from codegen.data.common import NOISES

    kinds = set(noise.HELDOUT_GENERATORS)
    assert kinds and not kinds & (set(NOISES) | set(noise.BACKGROUND_GENERATORS))
    for kind in sorted(kinds):
        a = noise.heldout_clip(kind, np.random.default_rng(7), 1.5)
        assert a.dtype == np.float32 and a.shape == (24000,)
        assert float(np.max(np.abs(a))) == pytest.approx(1.0)
        assert float(np.sqrt(np.mean(a.astype(np.float64) ** 2))) > 0.02
        np.testing.assert_array_equal(a, noise.heldout_clip(kind, np.random.default_rng(7), 1.5))
        assert not np.array_equal(a, noise.heldout_clip(kind, np.random.default_rng(8), 1.5))
    with pytest.raises(ValueError, match="held-out noise 'dog': use one of"):
        noise.heldout_clip("dog", np.random.default_rng(0), 1.0)


def test_build_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="preset 'huge'"):
        build(tmp_path, preset="huge", progress=False)
    with pytest.raises(DataError, match="--esc50"):
        build(tmp_path, gsc=tmp_path, progress=False)
    with pytest.raises(DataError, match="tier 'gpu'"):
        build(tmp_path, preset="tiny", tier="gpu", progress=False)
    with pytest.raises(DataError, match="seed -1"):
        build(tmp_path, preset="tiny", seed=-1, progress=False)


def test_cli_builds_and_reuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    data_cli.add_arguments(parser)
    argv = ["--out", str(tmp_path / "d"), "--preset", "tiny", "--tier", "numpy", "--quiet"]
    assert data_cli.run(parser.parse_args(argv)) == 0
    assert "built" in capsys.readouterr().out
    assert data_cli.run(parser.parse_args(argv)) == 0
    assert "reused" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("espeak-ng"), reason="espeak-ng not installed")
def test_tiny_tts_tier(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        info = build(tmp_path, preset="tiny", tier="tts", progress=False)
    assert info["tier"] == "tts"
    assert [e["name"] for e in info["engines"]] == [e.name for e in tts.detect_engines()]
    for name in SPLIT_NAMES:
        s = load_split(tmp_path, name)
        assert set(s.labels.tolist()) == set(range(12))
