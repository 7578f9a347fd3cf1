"""Real data: Google Speech Commands v2 and ESC-50 in their native layouts (docs/data.md §1, §6).

The standard 12-class protocol (TF `input_data.py` recipe): the ten keywords, `_unknown_`
sampled from the 25 auxiliary words (10 % of the split's keyword count, fixed shuffle seed
59185) and `_silence_` windows cut from `_background_noise_` (10 %). The test split is the
canonical `speech_commands_test_set_v0.02` when present, else `testing_list.txt` treated the
same way. The ten GSC-C noises are read from ESC-50 by category name (never by id), resampled
44.1 → 16 kHz with `resample_poly`, kept whole (5 s) and cropped at mix time.
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
import re
import warnings
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy import signal
from scipy.io import wavfile

from codegen.base.progress import bar as progress_bar
from codegen.base.progress import each
from codegen.data.common import (
    CLASSES,
    CLIP_SAMPLES,
    KEYWORDS,
    NOISES,
    SAMPLE_RATE,
    SILENCE,
    SPLITS,
    UNKNOWN,
    DataError,
    SourceSet,
    to_int16,
)

StrPath = str | os.PathLike[str]
TF_RANDOM_SEED = 59185  # `RANDOM_SEED` of TF input_data.py (docs/data.md §1.2)
UNKNOWN_PCT = 10.0
SILENCE_PCT = 10.0
MAX_NUM_WAVS_PER_CLASS = 2**27 - 1  # TF which_set() constant (docs/data.md §1.1)
BACKGROUND = "_background_noise_"
CANONICAL_TEST = "speech_commands_test_set_v0.02"
# Position ranges of every `_background_noise_` file used per split, so silence windows and
# augmentation noise of the training split never overlap the test windows.
BG_RANGES: dict[str, tuple[float, float]] = {
    "train": (0.0, 0.8),
    "val": (0.8, 0.9),
    "test": (0.9, 1.0),
}
BG_SEGMENT_SECONDS = 10.0
ESC50_COLUMNS = ("filename", "fold", "target", "category", "esc10", "src_file", "take")


@dataclass(frozen=True)
class Item:
    path: Path
    label: int
    word: str
    speaker: str


def read_wav(path: Path, *, seconds: float | None = 1.0) -> np.ndarray:
    """Mono float32 at 16 kHz; 1-s clips are right-padded or cropped. Errors name the file."""
    try:
        sr, data = wavfile.read(path)
    except Exception as exc:  # scipy raises ValueError, OSError, EOFError … for bad files
        raise DataError(f"{path}: not a readable WAV file ({type(exc).__name__}: {exc})") from exc
    x = np.asarray(data)
    if x.ndim == 2:
        x = x.mean(axis=1)
    if data.dtype == np.int16:
        xf = x.astype(np.float32) / 32768.0
    elif data.dtype == np.int32:
        xf = x.astype(np.float32) / 2.0**31
    elif data.dtype == np.uint8:
        xf = (x.astype(np.float32) - 128.0) / 128.0
    elif np.issubdtype(data.dtype, np.floating):
        xf = x.astype(np.float32)
    else:
        raise DataError(f"{path}: unsupported sample type {data.dtype}; use 16-bit PCM")
    if not np.all(np.isfinite(xf)):
        raise DataError(f"{path}: contains NaN or infinite samples")
    if sr != SAMPLE_RATE:
        frac = Fraction(SAMPLE_RATE, int(sr))
        xf = signal.resample_poly(xf, frac.numerator, frac.denominator).astype(np.float32)
    if seconds is not None:
        n = int(seconds * SAMPLE_RATE)
        xf = xf[:n] if xf.size >= n else np.pad(xf, (0, n - xf.size))
    return xf


def find_gsc_root(path: StrPath) -> tuple[Path, bool]:
    """(root, has_lists): the folder holding the word folders (docs/data.md §6 root discovery)."""
    base = Path(path)
    if not base.is_dir():
        raise DataError(f"--gsc {path}: not a directory (expected a GSC v2 tree)")
    candidates = [
        base,
        base / "speech_commands_v0.02",
        base / "SpeechCommands" / "speech_commands_v0.02",
    ]
    for c in candidates:
        if (c / "validation_list.txt").is_file() and (c / "testing_list.txt").is_file():
            return c, True
    for c in candidates:
        if c.is_dir() and all((c / w).is_dir() for w in KEYWORDS):
            warnings.warn(
                f"{c}: validation_list.txt/testing_list.txt missing; using the hash rule of "
                "TF which_set()",
                stacklevel=2,
            )
            return c, False
    raise DataError(
        f"--gsc {path}: no GSC v2 tree found (looked for validation_list.txt and "
        f"testing_list.txt in {', '.join(str(c) for c in candidates)})"
    )


def which_set(filename: str, validation_pct: float = 10.0, testing_pct: float = 10.0) -> str:
    """TF `which_set()`: a stable speaker-level split from the file name (docs/data.md §1.1)."""
    base = re.sub(r"_nohash_.*$", "", Path(filename).name)
    h = int(hashlib.sha1(base.encode()).hexdigest(), 16)
    pct = (h % (MAX_NUM_WAVS_PER_CLASS + 1)) * (100.0 / MAX_NUM_WAVS_PER_CLASS)
    if pct < validation_pct:
        return "val"
    if pct < validation_pct + testing_pct:
        return "test"
    return "train"


def _read_list(path: Path) -> set[str]:
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: unreadable ({exc})") from exc
    return {ln.strip().replace("\\", "/") for ln in lines if ln.strip()}


def _wavs(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir() if p.suffix.lower() == ".wav" and not p.name.startswith(".")
    )


def _word_folders(root: Path) -> list[Path]:
    return sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "_")))


def _speaker(path: Path) -> str:
    return path.name.split("_nohash_")[0]


def scan_gsc(root: Path, has_lists: bool) -> dict[str, list[Item]]:
    """Keyword and auxiliary-word files per split, before 12-class sampling."""
    val = _read_list(root / "validation_list.txt") if has_lists else set()
    test = _read_list(root / "testing_list.txt") if has_lists else set()
    out: dict[str, list[Item]] = {s: [] for s in SPLITS}
    for d in _word_folders(root):
        if d.name == CANONICAL_TEST:
            continue
        word = d.name.lower()
        label = CLASSES.index(word) if word in KEYWORDS else CLASSES.index(UNKNOWN)
        for p in _wavs(d):
            rel = f"{d.name}/{p.name}"
            if has_lists:
                split = "val" if rel in val else "test" if rel in test else "train"
            else:
                split = which_set(p.name)
            out[split].append(Item(p, label, word, _speaker(p)))
    if not any(it.label < len(KEYWORDS) for it in out["train"]):
        raise DataError(f"{root}: no keyword recordings found in the word folders")
    return out


def select_12class(items: list[Item], split: str) -> tuple[list[Item], int]:
    """Keywords, plus UNKNOWN_PCT % unknowns (seeded shuffle); returns (items, n_silence)."""
    kw = [it for it in items if it.label < len(KEYWORDS)]
    aux = [it for it in items if it.label == CLASSES.index(UNKNOWN)]
    rng = np.random.default_rng([TF_RANDOM_SEED, SPLITS.index(split)])
    order = rng.permutation(len(aux))
    n_unk = min(math.ceil(len(kw) * UNKNOWN_PCT / 100.0), len(aux))
    chosen = sorted((aux[i] for i in order[:n_unk]), key=lambda it: str(it.path))
    n_sil = math.ceil(len(kw) * SILENCE_PCT / 100.0)
    return kw + chosen, n_sil


def read_background(root: Path) -> list[tuple[Path, np.ndarray]]:
    folder = root / BACKGROUND
    if not folder.is_dir():
        raise DataError(f"{folder}: missing (GSC v2 ships _background_noise_/*.wav)")
    files = _wavs(folder)
    if not files:
        raise DataError(f"{folder}: no .wav files")
    out = [(p, read_wav(p, seconds=None)) for p in files]
    for p, x in out:
        if x.size < 2 * CLIP_SAMPLES * 10:
            raise DataError(f"{p}: too short ({x.size / SAMPLE_RATE:.1f} s; need at least 20 s)")
    return out


def silence_clips(
    background: list[tuple[Path, np.ndarray]], split: str, count: int, seed: int
) -> tuple[np.ndarray, list[str]]:
    """`_silence_` clips: random 1-s windows of the split's part of each background file,
    scaled by U(0, 1) as TF scales silence (docs/data.md §1.2)."""
    lo, hi = BG_RANGES[split]
    rng = np.random.default_rng([seed, TF_RANDOM_SEED, SPLITS.index(split)])
    pcm = np.zeros((count, CLIP_SAMPLES), dtype=np.int16)
    names = []
    for i in range(count):
        p, x = background[int(rng.integers(len(background)))]
        a, b = int(lo * x.size), int(hi * x.size) - CLIP_SAMPLES
        s = int(rng.integers(a, max(b, a + 1)))
        pcm[i] = to_int16(x[s : s + CLIP_SAMPLES] * float(rng.uniform(0.0, 1.0)))
        names.append(f"{p.name}@{s}")
    return pcm, names


def background_segments(background: list[tuple[Path, np.ndarray]]) -> tuple[np.ndarray, list[str]]:
    """Training parts of the background files cut into 10-s segments, peak-normalised."""
    n = int(BG_SEGMENT_SECONDS * SAMPLE_RATE)
    segs, names = [], []
    lo, hi = BG_RANGES["train"]
    for p, x in background:
        part = x[int(lo * x.size) : int(hi * x.size)]
        for k in range(part.size // n):
            s = part[k * n : (k + 1) * n]
            peak = float(np.max(np.abs(s)))
            segs.append(to_int16(s / peak * 0.999 if peak > 0 else s))
            names.append(f"{p.name}#{k}")
    return np.stack(segs), names


def find_canonical_test(root: Path, given: StrPath | None) -> Path | None:
    if given is not None:
        p = Path(given)
        if not all((p / c).is_dir() for c in CLASSES):
            raise DataError(f"--gsc-test {given}: expected 12 folders {', '.join(CLASSES)}")
        return p
    for c in (root / CANONICAL_TEST, root.parent / CANONICAL_TEST):
        if all((c / k).is_dir() for k in CLASSES):
            return c
    return None


def read_canonical_test(test_root: Path) -> list[Item]:
    items = []
    for label, name in enumerate(CLASSES):
        for p in _wavs(test_root / name):
            items.append(Item(p, label, name, _speaker(p)))
    return items


def find_esc50_root(path: StrPath) -> Path:
    base = Path(path)
    for c in (base, base / "ESC-50-master"):
        if (c / "audio").is_dir() and (c / "meta" / "esc50.csv").is_file():
            return c
    raise DataError(
        f"--esc50 {path}: no ESC-50 tree found (expected audio/ and meta/esc50.csv in {base} "
        f"or {base / 'ESC-50-master'})"
    )


def read_esc50(
    path: StrPath, *, progress: bool
) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """The GSC-C categories as int16 [40, 80000] peak-normalised 16-kHz clips, by category name."""
    root = find_esc50_root(path)
    meta = root / "meta" / "esc50.csv"
    try:
        with open(meta, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in ESC50_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise DataError(
                    f"{meta}: columns {missing} missing; expected {list(ESC50_COLUMNS)}"
                )
            rows = [r for r in reader if r["category"] in NOISES]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{meta}: unreadable ({exc})") from exc
    rows.sort(key=lambda r: (NOISES.index(r["category"]), int(r["fold"]), r["filename"]))
    absent = [c for c in NOISES if not any(r["category"] == c for r in rows)]
    if absent:
        raise DataError(f"{meta}: no clips of categories {absent} (GSC-C needs all ten: {NOISES})")
    n = 5 * SAMPLE_RATE
    bank: dict[str, list[np.ndarray]] = {c: [] for c in NOISES}
    names: dict[str, list[str]] = {c: [] for c in NOISES}
    for r in each(rows, "ESC-50", "clip", enabled=progress):
        p = root / "audio" / r["filename"]
        if not p.is_file():
            raise DataError(f"{p}: listed in {meta} but missing")
        x = read_wav(p, seconds=5.0)[:n]
        peak = float(np.max(np.abs(x)))
        bank[r["category"]].append(to_int16(x / peak * 0.999 if peak > 0 else x))
        names[r["category"]].append(r["filename"])
    return {c: np.stack(v) for c, v in bank.items()}, names


def build_real(
    gsc: StrPath, esc50: StrPath, *, gsc_test: StrPath | None, seed: int, progress: bool
) -> SourceSet:
    root, has_lists = find_gsc_root(gsc)
    esc_root = find_esc50_root(esc50)
    scanned = scan_gsc(root, has_lists)
    background = read_background(root)
    test_root = find_canonical_test(root, gsc_test)
    chosen: dict[str, tuple[list[Item], int]] = {}
    for s in SPLITS:
        chosen[s] = select_12class(scanned[s], s)
    if test_root is not None:
        chosen["test"] = (read_canonical_test(test_root), 0)
    total = sum(len(v[0]) for v in chosen.values())
    splits: dict[str, dict[str, np.ndarray]] = {}
    pos = 0
    with progress_bar(total, "GSC v2", "clip", enabled=progress) as bar:
        for s in SPLITS:
            items, n_sil = chosen[s]
            pcm = np.zeros((len(items) + n_sil, CLIP_SAMPLES), dtype=np.int16)
            for i, it in enumerate(items):
                pcm[i] = to_int16(read_wav(it.path))
                bar.update(1)
            sil_pcm, sil_names = silence_clips(background, s, n_sil, seed)
            pcm[len(items) :] = sil_pcm
            n = pcm.shape[0]
            labels = [it.label for it in items] + [CLASSES.index(SILENCE)] * n_sil
            splits[s] = {
                "pcm": pcm,
                "labels": np.array(labels, dtype=np.int64),
                "ids": np.arange(pos, pos + n, dtype=np.int64),
                "speakers": np.array([it.speaker for it in items] + [""] * n_sil, dtype=str),
                "words": np.array([it.word for it in items] + [SILENCE] * n_sil, dtype=str),
                "sources": np.array(
                    [str(it.path.relative_to(it.path.parent.parent)) for it in items] + sil_names,
                    dtype=str,
                ),
            }
            pos += n
    bank, bank_names = read_esc50(esc_root, progress=progress)
    bg, bg_names = background_segments(background)
    meta = {
        "tier": None,
        "engines": [],
        "gsc_root": str(root.resolve()),
        "split_rule": "validation_list.txt/testing_list.txt" if has_lists else "TF which_set hash",
        "test_source": str(test_root.resolve()) if test_root else "testing_list.txt (12-class)",
        "esc50_root": str(esc_root.resolve()),
        "noise_source": "ESC-50 (CC BY-NC 3.0; ESC-10 subset CC BY): do not redistribute",
        "noise_files": bank_names,
        "background_source": f"GSC {BACKGROUND} (training part {BG_RANGES['train']})",
        "background_files": sorted({p.name for p, _ in background}),
        "speakers": {s: len(set(splits[s]["speakers"].tolist()) - {""}) for s in SPLITS},
    }
    return SourceSet(splits, bank, bg, bg_names, meta)
