"""`build()`: one entry point for the built-in and the real (GSC v2 + ESC-50) data set.

Idempotent: the manifest carries a hash of everything the build depends on (format and builder
version, the builder's source code, preset, tier, engines and their versions, seed, input
trees); an up-to-date build is reused unless `force=True`. The manifest is removed before a
rebuild and written last, so an interrupted build never looks complete.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from codegen.base.files import file_sha256, write_npz
from codegen.data import builtin, real, shifts
from codegen.data.common import (
    CLASSES,
    CLIP_SAMPLES,
    ID_STRIDE,
    NOISES,
    SAMPLE_RATE,
    SPLITS,
    DataError,
    SourceSet,
)
from codegen.data.store import FORMAT, FORMAT_VERSION, MANIFEST, dataset_info

BUILDER_VERSION = 1
# Sources whose code determines the stored arrays, relative to the codegen package: editing any
# of them invalidates old builds (base/files.py writes the array files).
BUILD_SOURCES: tuple[str, ...] = (
    "data/builder.py", "data/builtin.py", "data/common.py", "data/formant.py", "data/noise.py",
    "data/real.py", "data/store.py", "data/tts.py", "base/files.py",
)  # fmt: skip


def _code_digest() -> str:
    h = hashlib.sha256()
    for name in BUILD_SOURCES:
        h.update(name.encode() + b"\0" + (Path(__file__).parents[1] / name).read_bytes())
    return h.hexdigest()


SNRS_REAL: tuple[float, ...] = (-10.0, -15.0, -20.0)  # GSC-C (docs/data.md §5.2)


class Outputs:
    """The data files a build writes into ``out``, with the size and sha256 of each for the
    manifest's ``files`` section."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.files: dict[str, dict[str, Any]] = {}

    def save(self, fname: str, arrays: dict[str, np.ndarray]) -> None:
        path = self.out / fname
        write_npz(path, arrays)
        self.files[fname] = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}


def noise_sections(
    bank: dict[str, np.ndarray],
    background: np.ndarray,
    background_kinds: list[str],
    clip_seconds: float,
    snrs: tuple[float, ...] | list[float],
) -> dict[str, Any]:
    """The manifest sections every data source shares: the target-noise bank, the non-target
    training noises, the mixing, reverb and channel rules, the id space and the conditions."""
    return {
        "noise_bank": {
            "file": "noise_bank.npz",
            "clips_per_noise": {c: int(v.shape[0]) for c, v in bank.items()},
            "clip_seconds": clip_seconds,
        },
        "background": {
            "file": "background.npz",
            "count": int(background.shape[0]),
            "seconds": background.shape[1] / SAMPLE_RATE,
            "kinds": sorted(set(background_kinds)),
        },
        "mixing": {
            "snr": "whole 1-s clip: 10*log10(P_speech / P_noise)",
            "silence_ref_dbfs": shifts.SILENCE_REF_DBFS,
            "min_crop_power": shifts.MIN_CROP_POWER,
            "retries": shifts.MIX_RETRIES,
            "peak_limit": shifts.PEAK_LIMIT,
        },
        "reverb": {"rt60_s": list(shifts.RT60S), "rir": "procedural, DRR -6..+6 dB"},
        "channel": {"names": list(shifts.CHANNELS)},
        "id_stride": ID_STRIDE,
        "conditions": conditions_table(tuple(snrs)),
    }


def write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    """manifest.json, written beside and renamed so a reader never sees half a file."""
    tmp = out / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    os.replace(tmp, out / MANIFEST)


def _stat(p: Path) -> list[Any]:
    try:
        st = p.stat()
    except OSError:
        return [str(p), None]
    return [str(p), st.st_size, st.st_mtime_ns]


def _real_fingerprint(
    gsc: real.StrPath, esc50: real.StrPath, gsc_test: real.StrPath | None
) -> dict[str, Any]:
    root, has_lists = real.find_gsc_root(gsc)
    esc = real.find_esc50_root(esc50)
    watched = [root / "validation_list.txt", root / "testing_list.txt", root / real.BACKGROUND]
    watched += [esc / "meta" / "esc50.csv", esc / "audio"]
    watched += [d for d in sorted(root.iterdir()) if d.is_dir()]
    return {
        "gsc": str(root.resolve()),
        "esc50": str(esc.resolve()),
        "gsc_test": None if gsc_test is None else str(Path(gsc_test).resolve()),
        "lists": has_lists,
        "stat": [_stat(p) for p in watched],
    }


def conditions_table(snrs: tuple[float, ...]) -> list[dict[str, Any]]:
    """All test conditions with their id codes (clean is code 0; see common.ID_STRIDE)."""
    table: list[dict[str, Any]] = [{"family": "clean", "name": "clean", "snr_db": None}]
    table += [{"family": "additive", "name": c, "snr_db": s} for c in NOISES for s in snrs]
    table += [{"family": "reverb", "name": f"rt60_{r:.1f}", "snr_db": None} for r in shifts.RT60S]
    table += [{"family": "channel", "name": c, "snr_db": None} for c in shifts.CHANNELS]
    for code, c in enumerate(table):
        c["code"] = code
    if len(table) * ID_STRIDE >= 2**31:
        raise DataError(f"{len(table)} conditions overflow the 31-bit sample-id space")
    return table


def _up_to_date(out: Path, config_hash: str) -> dict[str, Any] | None:
    try:
        info = dataset_info(out)
    except DataError:
        return None
    if info.get("config_hash") != config_hash:
        return None
    for fname, meta in info.get("files", {}).items():
        p = out / fname
        if not p.is_file() or p.stat().st_size != meta["bytes"]:
            return None
    return info


def build(
    out_dir: str | os.PathLike[str],
    *,
    preset: str = "demo",
    gsc: str | os.PathLike[str] | None = None,
    esc50: str | os.PathLike[str] | None = None,
    seed: int = 0,
    progress: bool = True,
    tier: str = "auto",
    jobs: int = 2,
    force: bool = False,
    gsc_test: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Build (or reuse) a GSC-C data set in `out_dir`; returns the manifest."""
    out = Path(out_dir)
    if (gsc is None) != (esc50 is None):
        given, missing = ("--gsc", "--esc50") if gsc is not None else ("--esc50", "--gsc")
        raise DataError(f"{given} needs {missing} too: real GSC-C mixes GSC v2 with ESC-50")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise DataError(f"seed {seed!r}: must be an integer in [0, 2**32)")
    if jobs < 1:
        raise DataError(f"jobs {jobs!r}: must be at least 1")
    config: dict[str, Any] = {"format": FORMAT_VERSION, "builder": BUILDER_VERSION, "seed": seed}
    config["code"] = _code_digest()
    if gsc is not None and esc50 is not None:
        config |= {"data": "gsc", **_real_fingerprint(gsc, esc50, gsc_test)}
    else:
        if preset not in builtin.PRESETS:
            raise DataError(f"unknown preset {preset!r}; allowed: {', '.join(builtin.PRESETS)}")
        resolved, engines = builtin.select_tier(tier)
        config |= {"data": "builtin", "preset": preset, "tier": resolved}
        config["engines"] = [[e.name, e.version, list(e.voices)] for e in engines]
        tier = resolved
    config_hash = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
    if not force:
        cached = _up_to_date(out, config_hash)
        if cached is not None:
            return cached
    if out.exists() and not out.is_dir():
        raise DataError(f"--out {out}: exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)

    if config["data"] == "gsc":
        assert gsc is not None and esc50 is not None
        res: SourceSet = real.build_real(
            gsc, esc50, gsc_test=gsc_test, seed=seed, progress=progress
        )
        snrs, preset_name = SNRS_REAL, None
    else:
        res = builtin.build_builtin(preset, tier=tier, seed=seed, jobs=jobs, progress=progress)
        snrs, preset_name = builtin.PRESETS[preset].snrs, preset

    outputs = Outputs(out)
    save, files = outputs.save, outputs.files

    split_info: dict[str, Any] = {}
    for s in SPLITS:
        arrays = res.splits[s]
        save(f"clean_{s}.npz", arrays)
        counts = np.bincount(arrays["labels"], minlength=len(CLASSES))
        ids = arrays["ids"]
        split_info[s] = {
            "file": f"clean_{s}.npz",
            "count": int(ids.size),
            "class_counts": {c: int(k) for c, k in zip(CLASSES, counts, strict=True)},
            "id_range": [int(ids.min()), int(ids.max()) + 1] if ids.size else [0, 0],
        }
    save("noise_bank.npz", dict(res.bank))
    save("background.npz", {"pcm": res.background, "kinds": np.array(res.background_kinds)})
    first = res.bank[NOISES[0]]
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "builder_version": BUILDER_VERSION,
        "data": config["data"],
        "preset": preset_name,
        "classes": list(CLASSES),
        "sample_rate": SAMPLE_RATE,
        "clip_samples": CLIP_SAMPLES,
        "snrs": list(snrs),
        "noises": list(NOISES),
        "seed": seed,
        **res.meta,
        "splits": split_info,
        **noise_sections(
            res.bank, res.background, res.background_kinds, first.shape[1] / SAMPLE_RATE, snrs
        ),
        "files": files,
        "config_hash": config_hash,
    }
    write_manifest(out, manifest)
    return manifest
