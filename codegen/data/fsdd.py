"""FSDD: the Free Spoken Digit Dataset as a GSC-C-style benchmark of real human speech.

Input: a folder of `{digit}_{speaker}_{index}.wav` files (8 kHz mono 16-bit; Jackson et al.,
github.com/Jakobovski/free-spoken-digit-dataset, CC BY-SA 4.0), either directly or in a
`recordings/` subfolder. Each file is resampled 8 → 16 kHz (`resample_poly`, ratio 2/1),
its level normalised (RMS of the recording to `LEVEL_DBFS`, peak limited to `PEAK_DBFS`),
centred in the 1-s model window (longer words keep their centre second), given the same
−70 dBFS seeded floor as the built-in clips, and rounded to int16.

Split by recording index, never by file order, so a speaker's take of a digit never appears in
two splits (FSDD README): index 5–9 test, 10–14 validation, 15 and above training. Index 0–4 is
the dataset's own test split and is never read (it is kept aside elsewhere). Classes are the ten
digit words `zero` … `nine`; there is no `_silence_` or `_unknown_` class.

The test-time shifts are the built-in set's, unchanged: the ten target noises of the `demo`
preset noise bank (procedural, `codegen.data.noise`, same seeds, so the same noise clips as
`codegen data --preset demo`), mixed at 0 … −20 dB by `codegen.data.shifts`, the three reverb
and four channel conditions; the non-target training noises are the demo preset's too. The
on-disk format is `codegen.data.store`'s, so every loader and stage reads it unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import signal
from scipy.io import wavfile

from codegen.base.progress import bar as progress_bar
from codegen.data import noise
from codegen.data.builder import Outputs, noise_sections, write_manifest
from codegen.data.builtin import PRESETS
from codegen.data.common import (
    CLIP_SAMPLES,
    ID_STRIDE,
    NOISES,
    SAMPLE_RATE,
    SPLITS,
    DataError,
    rng_for,
    to_int16,
)
from codegen.data.store import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    dataset_info,
)

FSDD_CLASSES: tuple[str, ...] = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
)  # fmt: skip
FSDD_VERSION = 1
NAME_RE = re.compile(r"^(\d)_([A-Za-z]+)_(\d+)\.wav$")
RESERVED_BELOW = 5  # index 0–4: FSDD's own test split, never used here
TEST_INDEX = range(5, 10)
VAL_INDEX = range(10, 15)
LEVEL_DBFS = -20.0  # RMS of the whole recording after normalisation
PEAK_DBFS = -1.0  # peak limit after the RMS normalisation
FLOOR_DBFS = -70.0  # seeded white floor, as the built-in processing chain adds
NOISE_PRESET = "demo"  # noise bank and training noises: the built-in demo preset's


@dataclass(frozen=True)
class Recording:
    path: Path
    digit: int
    speaker: str
    index: int


def split_of(index: int) -> str | None:
    """Split of a recording index: test 5–9, val 10–14, train ≥ 15, None for 0–4."""
    if index < RESERVED_BELOW:
        return None
    if index in TEST_INDEX:
        return "test"
    if index in VAL_INDEX:
        return "val"
    return "train"


def find_recordings(path: str | os.PathLike[str]) -> tuple[Path, list[Recording]]:
    """(folder, recordings sorted by (digit, speaker, index)); errors name the folder."""
    base = Path(path)
    if not base.is_dir():
        raise DataError(f"--fsdd {path}: not a directory (expected the FSDD recordings folder)")
    for folder in (base / "recordings", base):
        if not folder.is_dir():
            continue
        recs = []
        for p in folder.iterdir():
            m = NAME_RE.match(p.name)
            if m:
                recs.append(Recording(p, int(m.group(1)), m.group(2), int(m.group(3))))
        if recs:
            recs.sort(key=lambda r: (r.digit, r.speaker, r.index))
            return folder, recs
    raise DataError(
        f"--fsdd {path}: no {{digit}}_{{speaker}}_{{index}}.wav files in {base} or "
        f"{base / 'recordings'}"
    )


def read_recording(rec: Recording) -> np.ndarray:
    """The recording as float64 at 16 kHz (mono), no level change."""
    try:
        sr, data = wavfile.read(rec.path)
    except Exception as exc:  # scipy raises ValueError, OSError, EOFError … for bad files
        raise DataError(
            f"{rec.path}: not a readable WAV file ({type(exc).__name__}: {exc})"
        ) from exc
    x = np.asarray(data)
    if x.ndim == 2:
        x = x.mean(axis=1)
    if data.dtype == np.int16:
        xf = x.astype(np.float64) / 32768.0
    elif np.issubdtype(data.dtype, np.floating):
        xf = x.astype(np.float64)
    else:
        raise DataError(f"{rec.path}: unsupported sample type {data.dtype}; use 16-bit PCM")
    if xf.size == 0 or not np.all(np.isfinite(xf)):
        raise DataError(f"{rec.path}: empty or contains NaN/Inf samples")
    if sr == SAMPLE_RATE:
        return xf
    if SAMPLE_RATE % int(sr):
        raise DataError(f"{rec.path}: sample rate {sr} Hz; FSDD is 8000 Hz")
    up = SAMPLE_RATE // int(sr)
    out: np.ndarray = signal.resample_poly(xf, up, 1)
    return out


def to_clip(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Level-normalise, centre in 1 s (or keep the centre second), add the floor → int16."""
    rms = float(np.sqrt(np.mean(x**2)))
    if rms > 0:
        x = x * (10.0 ** (LEVEL_DBFS / 20.0) / rms)
        peak = float(np.max(np.abs(x)))
        limit = 10.0 ** (PEAK_DBFS / 20.0)
        if peak > limit:
            x = x * (limit / peak)
    out = np.zeros(CLIP_SAMPLES)
    if x.size >= CLIP_SAMPLES:
        s = (x.size - CLIP_SAMPLES) // 2
        out[:] = x[s : s + CLIP_SAMPLES]
    else:
        s = (CLIP_SAMPLES - x.size) // 2
        out[s : s + x.size] = x
    out += rng.standard_normal(CLIP_SAMPLES) * 10.0 ** (FLOOR_DBFS / 20.0)
    return to_int16(out)


def _fingerprint(folder: Path, recs: list[Recording]) -> list[Any]:
    return [[r.path.name, r.path.stat().st_size, r.path.stat().st_mtime_ns] for r in recs]


def _code_digest() -> str:
    h = hashlib.sha256()
    here = Path(__file__).parent
    for name in ("fsdd.py", "noise.py", "common.py", "store.py"):
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
    return h.hexdigest()


def _noise_banks(seed: int, progress: bool) -> tuple[dict[str, np.ndarray], np.ndarray, list[str]]:
    """The demo preset's target-noise bank and non-target training noises (same seeds)."""
    preset = PRESETS[NOISE_PRESET]
    bank: dict[str, np.ndarray] = {}
    total = len(NOISES) * preset.noise_clips
    total += len(noise.BACKGROUND_GENERATORS) * preset.background_per_kind
    with progress_bar(total, "noises", "noise", enabled=progress) as bar:
        for c in NOISES:
            clips = []
            for k in range(preset.noise_clips):
                rng = rng_for(seed, "noise", c, k)
                clips.append(to_int16(noise.esc_clip(c, rng, preset.noise_seconds)))
                bar.update(1)
            bank[c] = np.stack(clips)
        bg, kinds = [], []
        for kind in noise.BACKGROUND_GENERATORS:
            for j in range(preset.background_per_kind):
                rng = rng_for(seed, "background", kind, j)
                bg.append(to_int16(noise.background_clip(kind, rng, preset.background_seconds)))
                kinds.append(kind)
                bar.update(1)
    return bank, np.stack(bg), kinds


def build_fsdd(
    fsdd: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    seed: int = 0,
    force: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Build (or reuse) the FSDD benchmark in `out_dir`; returns the manifest."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise DataError(f"seed {seed!r}: must be an integer in [0, 2**32)")
    folder, recs = find_recordings(fsdd)
    out = Path(out_dir)
    snrs = PRESETS[NOISE_PRESET].snrs
    config = {
        "format": FORMAT_VERSION,
        "fsdd_builder": FSDD_VERSION,
        "seed": seed,
        "code": _code_digest(),
        "folder": str(folder.resolve()),
        "files": _fingerprint(folder, recs),
    }
    config_hash = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
    if not force:
        try:
            info = dataset_info(out)
        except DataError:
            info = None
        if info is not None and info.get("config_hash") == config_hash:
            stored = info.get("files", {})
            if all(
                (out / f).is_file() and (out / f).stat().st_size == m["bytes"]
                for f, m in stored.items()
            ):
                return info
    if out.exists() and not out.is_dir():
        raise DataError(f"--out {out}: exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)

    by_split: dict[str, list[Recording]] = {s: [] for s in SPLITS}
    reserved = 0
    for r in recs:
        s = split_of(r.index)
        if s is None:
            reserved += 1
        else:
            by_split[s].append(r)
    empty = [s for s in SPLITS if not by_split[s]]
    if empty:
        raise DataError(
            f"--fsdd {fsdd}: no recordings for split(s) {empty} (test = index 5–9, "
            f"val = 10–14, train = 15+)"
        )

    outputs = Outputs(out)
    save, files = outputs.save, outputs.files

    split_info: dict[str, Any] = {}
    pos = 0
    n_total = sum(len(v) for v in by_split.values())
    with progress_bar(n_total, "FSDD", "clip", enabled=progress) as bar:
        for s in SPLITS:
            items = by_split[s]
            pcm = np.empty((len(items), CLIP_SAMPLES), dtype=np.int16)
            for i, r in enumerate(items):
                pcm[i] = to_clip(read_recording(r), rng_for(seed, "fsdd", r.path.name))
                bar.update(1)
            labels = np.array([r.digit for r in items], dtype=np.int64)
            ids = np.arange(pos, pos + len(items), dtype=np.int64)
            pos += len(items)
            save(
                f"clean_{s}.npz",
                {
                    "pcm": pcm,
                    "labels": labels,
                    "ids": ids,
                    "speakers": np.array([r.speaker for r in items], dtype=str),
                    "words": np.array([FSDD_CLASSES[r.digit] for r in items], dtype=str),
                    "sources": np.array([r.path.name for r in items], dtype=str),
                },
            )
            counts = np.bincount(labels, minlength=len(FSDD_CLASSES))
            split_info[s] = {
                "file": f"clean_{s}.npz",
                "count": len(items),
                "class_counts": {c: int(k) for c, k in zip(FSDD_CLASSES, counts, strict=True)},
                "id_range": [int(ids[0]), int(ids[-1]) + 1],
                "indices": sorted({r.index for r in items}),
            }
    if pos >= ID_STRIDE:
        raise DataError(f"{pos} clips exceed the {ID_STRIDE} clean ids of the id space")
    bank, background, kinds = _noise_banks(seed, progress)
    save("noise_bank.npz", dict(bank))
    save("background.npz", {"pcm": background, "kinds": np.array(kinds)})
    preset = PRESETS[NOISE_PRESET]
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "builder_version": FSDD_VERSION,
        "data": "fsdd",
        "preset": None,
        "classes": list(FSDD_CLASSES),
        "sample_rate": SAMPLE_RATE,
        "clip_samples": CLIP_SAMPLES,
        "snrs": list(snrs),
        "noises": list(NOISES),
        "seed": seed,
        "tier": None,
        "engines": [],
        "fsdd_folder": str(folder.resolve()),
        "split_rule": "by recording index: test 5-9, val 10-14, train >= 15 (0-4 never read)",
        "reserved_files_skipped": reserved,
        "speakers": {s: sorted({r.speaker for r in by_split[s]}) for s in SPLITS},
        "level": {"rms_dbfs": LEVEL_DBFS, "peak_dbfs": PEAK_DBFS, "floor_dbfs": FLOOR_DBFS},
        "speech_source": "FSDD (Jackson et al., CC BY-SA 4.0): do not redistribute the clips",
        "noise_source": f"procedural (codegen/data/noise.py), built-in {NOISE_PRESET} preset",
        "background_source": "procedural non-target noises",
        "splits": split_info,
        **noise_sections(bank, background, kinds, preset.noise_seconds, snrs),
        "files": files,
        "config_hash": config_hash,
    }
    write_manifest(out, manifest)
    return manifest
