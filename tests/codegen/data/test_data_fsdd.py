"""FSDD data source (`codegen data --fsdd`): split by recording index, labels, shapes, mixing."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from repopaths import ROOT
from scipy.io import wavfile

from codegen.data import conditions, dataset_info, load_condition, load_split
from codegen.data.common import to_int16
from codegen.data.fsdd import FSDD_CLASSES, build_fsdd, split_of
from codegen.data.store import Condition, mix_condition

FSDD_DIR = Path(os.environ.get("FSDD_DIR", ROOT.parent / "shared/data/fsdd"))
SPEAKERS = ("alice", "bob")
INDICES = (2, 5, 7, 10, 16)  # 2: FSDD's own test split (never read); 5,7 test; 10 val; 16 train
DIGITS = (0, 3, 9)


def _tone_word(digit: int, speaker: str, index: int) -> np.ndarray:
    """A 0.3–0.5 s vowel-like tone burst at 8 kHz whose pitch encodes the digit."""
    rng = np.random.default_rng([digit, len(speaker), index])
    n = int(8000 * (0.3 + 0.02 * index % 0.2))
    t = np.arange(n) / 8000.0
    f0 = 120.0 + 20.0 * digit
    x = sum(np.sin(2 * np.pi * f0 * h * t) / h for h in range(1, 6))
    x = x * np.hanning(n) * (0.1 + 0.3 * rng.random()) + 0.001 * rng.standard_normal(n)
    return to_int16(x / 3.0)


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fsdd_fake")
    rec = root / "recordings"
    rec.mkdir()
    for d in DIGITS:
        for s in SPEAKERS:
            for i in INDICES:
                wavfile.write(rec / f"{d}_{s}_{i}.wav", 8000, _tone_word(d, s, i))
    (rec / "notes.txt").write_text("not a recording")
    out = root / "data"
    build_fsdd(root, out, progress=False)
    return out


def test_split_rule() -> None:
    assert [split_of(i) for i in (0, 4, 5, 9, 10, 14, 15, 49)] == [
        None, None, "test", "test", "val", "val", "train", "train",
    ]  # fmt: skip


def test_fake_split_by_index_labels_and_shapes(fake: Path) -> None:
    info = dataset_info(fake)
    assert info["data"] == "fsdd" and info["classes"] == list(FSDD_CLASSES)
    assert info["reserved_files_skipped"] == len(DIGITS) * len(SPEAKERS)
    expect = {"train": [16], "val": [10], "test": [5, 7]}
    seen_ids: set[int] = set()
    for split, idx in expect.items():
        assert info["splits"][split]["indices"] == idx
        s = load_split(fake, split)
        assert s.pcm.shape == (len(DIGITS) * len(SPEAKERS) * len(idx), 16000)
        assert s.pcm.dtype == np.int16
        assert sorted(set(s.labels.tolist())) == list(DIGITS)
        assert s.classes == FSDD_CLASSES
        with np.load(fake / f"clean_{split}.npz") as z:
            sources = [str(v) for v in z["sources"]]
            words = [str(v) for v in z["words"]]
        for src, lab, word in zip(sources, s.labels, words, strict=True):
            d, _, i = src.removesuffix(".wav").split("_")
            assert int(d) == lab and FSDD_CLASSES[lab] == word and int(i) in idx
        assert not seen_ids & set(s.ids.tolist())
        seen_ids |= set(s.ids.tolist())


def test_fake_level_and_centring(fake: Path) -> None:
    x = load_split(fake, "test").pcm.astype(np.float64) / 32768.0
    env = np.abs(x) > 0.01
    first = env.argmax(axis=1)
    last = 16000 - env[:, ::-1].argmax(axis=1)
    centre = (first + last) / 2
    assert np.all(np.abs(centre - 8000) < 400), centre
    # RMS over the whole 1-s clip: -20 dBFS over the word, diluted by the padding
    word_rms = np.sqrt(np.sum(x**2, axis=1) / (last - first))
    assert np.all(np.abs(20 * np.log10(word_rms) + 20.0) < 1.5), word_rms


def test_fake_conditions_and_snr(fake: Path) -> None:
    conds = conditions(fake)
    assert len(conds) == 1 + 10 * 5 + 3 + 4
    test = load_split(fake, "test")
    c = test.pcm.astype(np.float64) / 32768.0
    for cond in (Condition("additive", "dog", 0.0), Condition("additive", "fireworks", -20.0)):
        res = mix_condition(fake, cond)
        m = res.pcm.astype(np.float64) / 32768.0
        residual = m - res.gain[:, None] * c
        p_speech = np.mean(c**2, axis=1) * res.gain**2
        snr = 10 * np.log10(p_speech / np.mean(residual**2, axis=1))
        assert np.all(np.abs(snr - cond.snr_db) < 0.1), (cond, snr)
    rev = load_condition(fake, Condition("reverb", "rt60_0.6"))
    assert rev.pcm.shape == test.pcm.shape and not np.array_equal(rev.pcm, test.pcm)


def test_fake_rebuild_is_reused_and_identical(fake: Path, tmp_path: Path) -> None:
    info = dataset_info(fake)
    again = build_fsdd(Path(info["fsdd_folder"]), fake, progress=False)
    assert again["config_hash"] == info["config_hash"]
    other = build_fsdd(Path(info["fsdd_folder"]), tmp_path / "copy", progress=False)
    assert other["files"] == info["files"]


@pytest.mark.skipif(not FSDD_DIR.is_dir(), reason=f"FSDD recordings folder {FSDD_DIR} is absent")
def test_real_fsdd(tmp_path: Path) -> None:
    info = build_fsdd(FSDD_DIR, tmp_path / "fsdd", progress=False)
    counts = {s: info["splits"][s]["count"] for s in ("train", "val", "test")}
    assert counts == {"train": 2100, "val": 300, "test": 300}
    assert info["splits"]["test"]["indices"] == [5, 6, 7, 8, 9]
    assert info["splits"]["val"]["indices"] == [10, 11, 12, 13, 14]
    test = load_split(tmp_path / "fsdd", "test")
    assert np.bincount(test.labels).tolist() == [30] * 10
    assert len(info["speakers"]["test"]) == 6
