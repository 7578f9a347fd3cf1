"""On-disk format shared by the real (GSC + ESC-50) and the built-in data set, and its readers.

A data directory holds (docs/data.md §5.2 "Storage"):

- `manifest.json`: classes, sample rate, SNRs, noises, seed, conditions with their id codes,
  per-split counts, and the byte size and sha256 of every array file;
- `clean_train.npz`, `clean_val.npz`, `clean_test.npz`: `pcm` int16 [N, 16000], `labels` int64,
  `ids` int64, `speakers`, `words`, `sources` (unicode);
- `noise_bank.npz`: one int16 [K, L] array per target noise (peak-normalised clips);
- `background.npz`: `pcm` int16 [M, L] non-target noises for training augmentation, `kinds`.

Corrupted test sets are never stored: `load_condition` mixes them on the fly, deterministically.
Array files are written as zip archives with fixed timestamps, so rebuilds are byte-identical.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codegen.base.files import file_sha256
from codegen.data import shifts
from codegen.data.common import CLIP_SAMPLES, ID_STRIDE, SILENCE, SPLITS, DataError

FORMAT = "elatta-gsc-c"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
FAMILIES: tuple[str, ...] = ("clean", "additive", "reverb", "channel")


@dataclass(frozen=True)
class Split:
    """Clips of one split or one test condition."""

    pcm: np.ndarray  # int16 [N, 16000]
    labels: np.ndarray  # int64 [N], index into classes
    ids: np.ndarray  # int64 [N], unique across the data set, stable across rebuilds
    classes: tuple[str, ...]
    name: str  # e.g. "train", "test/additive/dog/-10"

    def __len__(self) -> int:
        return int(self.labels.shape[0])


@dataclass(frozen=True)
class Condition:
    """One test-time shift: family clean | additive | reverb | channel."""

    family: str
    name: str  # noise name, "rt60_0.6", "lowpass", …
    snr_db: float | None = None

    @property
    def key(self) -> str:
        """ "additive/dog/-10", "reverb/rt60_0.6", "clean/clean"."""
        if self.snr_db is None:
            return f"{self.family}/{self.name}"
        return f"{self.family}/{self.name}/{float(self.snr_db):g}"


# ------------------------------------------------------------------------------ reading


def _manifest_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / MANIFEST


def dataset_info(data_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The parsed `manifest.json` of a data directory."""
    path = _manifest_path(data_dir)
    if not path.is_file():
        raise DataError(
            f"{path}: no data set here (manifest.json missing); build one with "
            f"`codegen data --out {data_dir}`"
        )
    try:
        info = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: unreadable manifest ({exc}); rebuild with --force") from exc
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise DataError(f"{path}: not a {FORMAT} manifest; rebuild with --force")
    if info.get("format_version") != FORMAT_VERSION:
        raise DataError(
            f"{path}: format_version {info.get('format_version')!r} is not the supported "
            f"{FORMAT_VERSION}; rebuild with --force"
        )
    return info


_verified: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


_cache: dict[tuple[str, int, int, tuple[str, ...]], dict[str, np.ndarray]] = {}
CACHE_ENTRIES = 16


def read_npz(
    data_dir: str | os.PathLike[str], fname: str, keys: tuple[str, ...], *, cache: bool = False
) -> dict[str, np.ndarray]:
    """Read and verify one array file (size and sha256 from the manifest); errors name the file.

    With `cache=True` the arrays are kept (read-only) for the next call on the same unchanged
    file: `load_condition` reuses the clean test split and the noise bank across conditions.
    """
    info = dataset_info(data_dir)
    path = Path(data_dir) / fname
    meta = info.get("files", {}).get(fname)
    if meta is None:
        raise DataError(f"{_manifest_path(data_dir)}: no entry for {fname}; rebuild with --force")
    if not path.is_file():
        raise DataError(f"{path}: file missing; rebuild with `codegen data --out {data_dir}`")
    st = path.stat()
    if st.st_size != meta["bytes"]:
        raise DataError(
            f"{path}: corrupted or truncated ({st.st_size} bytes, manifest says {meta['bytes']}); "
            f"rebuild with `codegen data --out {data_dir} --force`"
        )
    stamp = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _lock:
        known = _verified.get(stamp)
        hit = _cache.get((*stamp, keys)) if cache else None
    if hit is not None and known == meta["sha256"]:
        return hit
    if known != meta["sha256"]:
        digest = file_sha256(path)
        if digest != meta["sha256"]:
            raise DataError(
                f"{path}: corrupted (sha256 {digest[:12]}… differs from the manifest's "
                f"{meta['sha256'][:12]}…); rebuild with `codegen data --out {data_dir} --force`"
            )
        with _lock:
            _verified[stamp] = digest
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in keys if k not in z.files]
            if missing:
                raise DataError(f"{path}: arrays {missing} missing; rebuild with --force")
            arrays = {k: z[k] for k in keys}
    except DataError:
        raise
    except Exception as exc:  # zipfile, zlib, format and OS errors all mean the same here
        raise DataError(
            f"{path}: unreadable ({type(exc).__name__}: {exc}); rebuild with --force"
        ) from exc
    if cache:
        for a in arrays.values():
            a.flags.writeable = False
        with _lock:
            while len(_cache) >= CACHE_ENTRIES:
                del _cache[next(iter(_cache))]
            _cache[(*stamp, keys)] = arrays
    return arrays


def _classes(info: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(c) for c in info["classes"])


def _check_clips(path: str, pcm: np.ndarray, labels: np.ndarray, ids: np.ndarray, nc: int) -> None:
    n = labels.shape[0]
    ok = (
        pcm.dtype == np.int16
        and pcm.ndim == 2
        and pcm.shape == (n, CLIP_SAMPLES)
        and labels.dtype == np.int64
        and ids.dtype == np.int64
        and ids.shape == (n,)
        and (n == 0 or (int(labels.min()) >= 0 and int(labels.max()) < nc))
    )
    if not ok:
        raise DataError(
            f"{path}: unexpected arrays (pcm {pcm.dtype}{list(pcm.shape)}, labels "
            f"{labels.dtype}{list(labels.shape)}, ids {ids.dtype}{list(ids.shape)}); "
            f"rebuild with --force"
        )


def load_split(data_dir: str | os.PathLike[str], split: str) -> Split:
    """The clean `train`, `val` or `test` split."""
    return _load_split(data_dir, split, cache=False)


def _load_split(data_dir: str | os.PathLike[str], split: str, *, cache: bool) -> Split:
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}; allowed: {', '.join(SPLITS)}")
    info = dataset_info(data_dir)
    fname = info["splits"][split]["file"]
    z = read_npz(data_dir, fname, ("pcm", "labels", "ids"), cache=cache)
    classes = _classes(info)
    _check_clips(str(Path(data_dir) / fname), z["pcm"], z["labels"], z["ids"], len(classes))
    return Split(z["pcm"], z["labels"], z["ids"], classes, split)


def conditions(data_dir: str | os.PathLike[str], family: str | None = None) -> list[Condition]:
    """Test conditions in manifest order (clean first), optionally of one family."""
    if family is not None and family not in FAMILIES:
        raise DataError(f"unknown condition family {family!r}; allowed: {', '.join(FAMILIES)}")
    out = []
    for c in dataset_info(data_dir)["conditions"]:
        cond = Condition(
            c["family"], c["name"], None if c["snr_db"] is None else float(c["snr_db"])
        )
        if family is None or cond.family == family:
            out.append(cond)
    return out


def _condition_code(info: dict[str, Any], cond: Condition) -> int:
    for c in info["conditions"]:
        snr = None if c["snr_db"] is None else float(c["snr_db"])
        if (c["family"], c["name"], snr) == (cond.family, cond.name, cond.snr_db):
            return int(c["code"])
    allowed = ", ".join(
        Condition(c["family"], c["name"], c["snr_db"]).key for c in info["conditions"]
    )
    raise DataError(f"condition {cond.key!r} is not in this data set; allowed: {allowed}")


def condition_ids(
    data_dir: str | os.PathLike[str], cond: Condition
) -> tuple[np.ndarray, np.ndarray]:
    """(sample ids, labels) of one condition's clips, without mixing any audio: what choosing
    clips needs (`codegen.data.selection.deal`) before `load_condition` mixes only those."""
    info = dataset_info(data_dir)
    code = _condition_code(info, cond)
    test = _load_split(data_dir, "test", cache=True)
    ids = test.ids.copy() if cond.family == "clean" else test.ids + code * ID_STRIDE
    return ids, test.labels.copy()


def _rows(n: int, rows: np.ndarray | None) -> np.ndarray:
    if rows is None:
        return np.arange(n, dtype=np.int64)
    r = np.asarray(rows, dtype=np.int64)
    if r.ndim != 1 or (r.size and (r.min() < 0 or r.max() >= n)):
        raise DataError(f"rows must be a 1-D index into the {n} test clips")
    return r


def load_condition(
    data_dir: str | os.PathLike[str], cond: Condition, rows: np.ndarray | None = None
) -> Split:
    """The clean test clips under one shift, mixed deterministically (seeded per sample, so
    ``rows``, a subset of the test clips, mixes to exactly those rows of the whole)."""
    info = dataset_info(data_dir)
    code = _condition_code(info, cond)
    test = _load_split(data_dir, "test", cache=True)
    r = _rows(len(test.ids), rows)
    name = f"test/{cond.key}"
    seed = int(info["seed"])
    clean_ids = test.ids[r]
    ids = clean_ids + code * ID_STRIDE
    labels = test.labels[r]
    if cond.family == "clean":
        return Split(test.pcm[r], labels, clean_ids, test.classes, name)
    if cond.family == "additive":
        assert cond.snr_db is not None
        res = mix_condition(data_dir, cond, rows=r)
        return Split(res.pcm, labels, ids, test.classes, name)
    if cond.family == "reverb":
        rt60 = float(cond.name.removeprefix("rt60_"))
        pcm = shifts.apply_reverb(test.pcm[r], clean_ids, rt60=rt60, seed=seed)
        return Split(pcm, labels, ids, test.classes, name)
    pcm = shifts.apply_channel(test.pcm[r], clean_ids, name=cond.name, seed=seed)
    return Split(pcm, labels, ids, test.classes, name)


def mix_condition(
    data_dir: str | os.PathLike[str], cond: Condition, rows: np.ndarray | None = None
) -> shifts.MixResult:
    """The additive mixtures of one condition with their provenance (noise clip, crop, scales);
    ``rows``: of those test clips only."""
    info = dataset_info(data_dir)
    _condition_code(info, cond)
    if cond.family != "additive" or cond.snr_db is None:
        raise DataError(f"condition {cond.key!r} is not an additive-noise condition")
    test = _load_split(data_dir, "test", cache=True)
    r = _rows(len(test.ids), rows)
    bank = noise_bank(data_dir, cond.name)
    # Data sets without a `_silence_` class (FSDD digits) mix every clip at its own level.
    silence = test.labels[r] == (test.classes.index(SILENCE) if SILENCE in test.classes else -1)
    return shifts.mix_additive(
        test.pcm[r],
        test.ids[r],
        silence,
        bank,
        category=cond.name,
        snr_db=cond.snr_db,
        seed=int(info["seed"]),
    )


def noise_bank(data_dir: str | os.PathLike[str], category: str) -> np.ndarray:
    """float32 [K, L] peak-normalised clips of one target noise (ESC-50 or procedural)."""
    info = dataset_info(data_dir)
    if category not in info["noises"]:
        raise DataError(f"noise {category!r} not in this data set; allowed: {info['noises']}")
    fname = info["noise_bank"]["file"]
    z = read_npz(data_dir, fname, (category,), cache=True)
    return z[category].astype(np.float32) / np.float32(32768.0)


def background_noises(data_dir: str | os.PathLike[str]) -> np.ndarray:
    """float32 [M, L ≥ 16000]: non-target noises for training augmentation, peak-normalised."""
    info = dataset_info(data_dir)
    fname = info["background"]["file"]
    z = read_npz(data_dir, fname, ("pcm",))
    pcm = z["pcm"]
    if pcm.dtype != np.int16 or pcm.ndim != 2 or pcm.shape[1] < CLIP_SAMPLES:
        raise DataError(f"{Path(data_dir) / fname}: unexpected pcm {pcm.dtype}{list(pcm.shape)}")
    x = pcm.astype(np.float32)
    peak = np.max(np.abs(x), axis=1, keepdims=True)
    return np.divide(x, peak, out=np.zeros_like(x), where=peak > 0)
