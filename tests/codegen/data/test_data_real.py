"""Real-data path on a tiny fake GSC v2 + ESC-50 tree written in the native layouts."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from scipy.io import wavfile

from codegen.data import (
    CLASSES,
    NOISES,
    DataError,
    background_noises,
    build,
    conditions,
    dataset_info,
    load_condition,
    load_split,
)
from codegen.data.common import KEYWORDS, SILENCE, UNKNOWN
from codegen.data.store import mix_condition, noise_bank

AUX = ("bed", "cat", "zero", "marvin")
SPEAKERS = [
    f"{k:08x}" for k in (0x1A2B3C4D, 0x22222222, 0x3C3C3C3C, 0x44D44D44, 0x5E5E5E5E, 0x60606060)
]
VAL_SPK, TEST_SPK = SPEAKERS[0], SPEAKERS[1]
ESC_OTHER = ("rain", "clock_tick")  # categories that must be ignored
ESC_TARGETS = {
    "dog": 0,
    "cat": 5,
    "pouring_water": 17,
    "thunderstorm": 19,
    "crying_baby": 20,
    "laughing": 26,
    "washing_machine": 35,
    "vacuum_cleaner": 36,
    "car_horn": 43,
    "fireworks": 48,
    "rain": 10,
    "clock_tick": 38,
}


def _word_audio(rng: np.random.Generator, word_idx: int, seconds: float) -> np.ndarray:
    n = int(seconds * 16000)
    t = np.arange(n) / 16000
    x = 0.3 * np.sin(2 * np.pi * (300 + 80 * word_idx) * t) * np.hanning(n)
    x += 0.01 * rng.standard_normal(n)
    return (x * 32767).astype(np.int16)


def make_gsc(root: Path, *, lists: bool = True, canonical: bool = False) -> Path:
    rng = np.random.default_rng(0)
    gsc = root / "speech_commands_v0.02"
    words = (*KEYWORDS, *AUX)
    val, test = [], []
    for wi, w in enumerate(words):
        (gsc / w).mkdir(parents=True)
        for si, spk in enumerate(SPEAKERS):
            name = f"{spk}_nohash_0.wav"
            secs = 0.8 if si % 2 else 1.0  # some clips are shorter than 1 s
            wavfile.write(gsc / w / name, 16000, _word_audio(rng, wi, secs))
            if spk == VAL_SPK:
                val.append(f"{w}/{name}")
            elif spk == TEST_SPK:
                test.append(f"{w}/{name}")
    (gsc / "_background_noise_").mkdir()
    for k, name in enumerate(("white_noise.wav", "pink_noise.wav")):
        x = rng.standard_normal(30 * 16000) * (0.1 + 0.1 * k)
        wavfile.write(gsc / "_background_noise_" / name, 16000, (x * 32767).astype(np.int16))
    (gsc / "_background_noise_" / "README.md").write_text("background\n")
    (gsc / ".DS_Store").write_text("x")
    if lists:
        (gsc / "validation_list.txt").write_text("\n".join(val) + "\n")
        (gsc / "testing_list.txt").write_text("\n".join(test) + "\n")
    if canonical:
        can = root / "speech_commands_test_set_v0.02"
        for ci, c in enumerate(CLASSES):
            (can / c).mkdir(parents=True)
            for j in range(2):
                wavfile.write(
                    can / c / f"c{j}ab{ci:04d}_nohash_{j}.wav", 16000, _word_audio(rng, ci, 1.0)
                )
    return root


def make_esc50(root: Path) -> Path:
    rng = np.random.default_rng(1)
    esc = root / "ESC-50-master"
    (esc / "audio").mkdir(parents=True)
    (esc / "meta").mkdir()
    rows = []
    for cat, target in ESC_TARGETS.items():
        for fold in (1, 2):
            fname = f"{fold}-{100000 + target * 10 + fold}-A-{target}.wav"
            n = 5 * 44100
            x = rng.standard_normal(n) * 0.2
            x[int(0.3 * n) : int(0.5 * n)] *= 4.0  # an event
            if fold == 2:
                x[int(0.7 * n) :] = 0.0  # zero padding as in ESC-50
            wavfile.write(
                esc / "audio" / fname, 44100, (np.clip(x, -1, 1) * 32767).astype(np.int16)
            )
            rows.append(
                [fname, fold, target, cat, str(cat in ("dog", "crying_baby")), 100000 + target, "A"]
            )
    with open(esc / "meta" / "esc50.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["filename", "fold", "target", "category", "esc10", "src_file", "take"])
        w.writerows(rows)
    return root


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("real")
    make_gsc(base / "gsc")
    make_esc50(base / "esc")
    out = base / "data"
    build(out, gsc=base / "gsc", esc50=base / "esc", progress=False)
    return out


def test_real_splits_and_labels(real: Path) -> None:
    info = dataset_info(real)
    assert info["data"] == "gsc" and info["snrs"] == [-10.0, -15.0, -20.0]
    assert info["split_rule"].startswith("validation_list")
    # train: 4 speakers x 10 keywords = 40, + ceil(10 %) = 4 unknowns, + 4 silence
    expected = {"train": (40, 4, 4), "val": (10, 1, 1), "test": (10, 1, 1)}
    for name, (n_kw, n_unk, n_sil) in expected.items():
        s = load_split(real, name)
        counts = np.bincount(s.labels, minlength=12)
        assert counts[: len(KEYWORDS)].tolist() == [n_kw // 10] * 10
        assert counts[CLASSES.index(UNKNOWN)] == n_unk
        assert counts[CLASSES.index(SILENCE)] == n_sil
        assert s.pcm.shape == (n_kw + n_unk + n_sil, 16000) and s.pcm.dtype == np.int16
    words = np.load(real / "clean_val.npz")["speakers"]
    assert set(words.tolist()) - {""} == {VAL_SPK}
    ids = np.concatenate([load_split(real, s).ids for s in ("train", "val", "test")])
    assert np.unique(ids).size == ids.size


def test_real_short_clips_are_padded(real: Path) -> None:
    z = np.load(real / "clean_train.npz")
    short = [i for i, s in enumerate(z["sources"]) if SPEAKERS[3] in str(s)]
    assert short and np.all(z["pcm"][short, 12900:] == 0)


def test_real_noise_bank_from_esc50_by_category(real: Path) -> None:
    info = dataset_info(real)
    for cat in NOISES:
        bank = noise_bank(real, cat)
        assert bank.shape == (2, 80000)  # 2 clips, 5 s at 16 kHz
        assert info["noise_files"][cat][0].endswith(f"-{dict(ESC_TARGETS)[cat]}.wav")
    assert not set(info["noise_files"]) & set(ESC_OTHER)


def test_real_snr_of_every_mix(real: Path) -> None:
    test = load_split(real, "test")
    additive = conditions(real, "additive")
    assert len(additive) == 30
    sil = test.labels == CLASSES.index(SILENCE)
    for cond in additive:
        res = mix_condition(real, cond)
        c = test.pcm.astype(np.float64) / 32768
        resid = res.pcm.astype(np.float64) / 32768 - res.gain[:, None] * c
        p_s = np.where(sil, 10 ** (-2.6), np.mean(c**2, axis=1)) * res.gain**2
        snr = 10 * np.log10(p_s / np.mean(resid**2, axis=1))
        assert np.all(np.abs(snr - cond.snr_db) < 0.1), (cond, snr)
    assert len(load_condition(real, conditions(real, "reverb")[0])) == len(test)


def test_real_background_is_gsc_background(real: Path) -> None:
    bg = background_noises(real)
    # the training 80 % of each 30-s file, cut into 10-s segments: 2 per file
    assert bg.shape == (4, 160000) and bg.dtype == np.float32
    assert dataset_info(real)["background_files"] == ["pink_noise.wav", "white_noise.wav"]


def test_canonical_test_set_is_used(tmp_path: Path) -> None:
    make_gsc(tmp_path / "gsc", canonical=True)
    make_esc50(tmp_path / "esc")
    build(tmp_path / "d", gsc=tmp_path / "gsc", esc50=tmp_path / "esc", progress=False)
    test = load_split(tmp_path / "d", "test")
    assert np.bincount(test.labels).tolist() == [2] * 12
    assert "speech_commands_test_set_v0.02" in dataset_info(tmp_path / "d")["test_source"]


def test_hash_rule_without_lists(tmp_path: Path) -> None:
    make_gsc(tmp_path / "gsc", lists=False)
    make_esc50(tmp_path / "esc")
    with pytest.warns(UserWarning, match="hash rule"):
        info = build(tmp_path / "d", gsc=tmp_path / "gsc", esc50=tmp_path / "esc", progress=False)
    assert info["split_rule"] == "TF which_set hash"
    total = sum(v["count"] for v in info["splits"].values())
    assert total > 0


def test_bad_wav_is_named(tmp_path: Path) -> None:
    make_gsc(tmp_path / "gsc")
    make_esc50(tmp_path / "esc")
    bad = tmp_path / "gsc" / "speech_commands_v0.02" / "yes" / f"{SPEAKERS[4]}_nohash_0.wav"
    bad.write_bytes(b"RIFF....garbage")
    with pytest.raises(DataError, match=str(bad.name)):
        build(tmp_path / "d", gsc=tmp_path / "gsc", esc50=tmp_path / "esc", progress=False)


def test_esc50_missing_category_and_layout(tmp_path: Path) -> None:
    make_gsc(tmp_path / "gsc")
    make_esc50(tmp_path / "esc")
    meta = tmp_path / "esc" / "ESC-50-master" / "meta" / "esc50.csv"
    lines = [ln for ln in meta.read_text().splitlines() if ",car_horn," not in ln]
    meta.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="car_horn"):
        build(tmp_path / "d", gsc=tmp_path / "gsc", esc50=tmp_path / "esc", progress=False)
    with pytest.raises(DataError, match="ESC-50"):
        build(tmp_path / "d", gsc=tmp_path / "gsc", esc50=tmp_path / "gsc", progress=False)
    with pytest.raises(DataError, match="GSC v2"):
        build(tmp_path / "d", gsc=tmp_path / "esc", esc50=tmp_path / "esc", progress=False)
