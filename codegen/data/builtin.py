"""The built-in GSC-C stand-in, synthesised offline and reproducibly (docs/data.md §3–§5).

Source speech comes from TTS engines in Debian main (tier `tts`: espeak-ng pseudo-speakers plus
flite and festival voices, whole voices held out for val/test) or, without any engine, from the
pure-numpy formant synthesiser (tier `numpy`). Target noises are procedural (`noise.py`).
Every clip is seeded by `sha1(seed, speaker, word, rep)`, so results do not depend on the number
of worker processes or on the order of synthesis.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codegen.base.progress import bar as progress_bar
from codegen.data import formant, noise, tts
from codegen.data.common import (
    CLASSES,
    KEYWORDS,
    NOISES,
    SAMPLE_RATE,
    SILENCE,
    SPLITS,
    UNKNOWN,
    UNKNOWN_WORDS,
    DataError,
    SourceSet,
    place_in_clip,
    resample,
    rng_for,
    stable_seed,
    to_int16,
    trim,
)

TIERS: tuple[str, ...] = ("tts", "numpy")


@dataclass(frozen=True)
class Preset:
    name: str
    speakers: int  # espeak-ng (tts tier) or formant (numpy tier) pseudo-speakers
    settings_per_voice: int  # prosody settings per flite/festival voice (tts tier)
    noise_clips: int  # clips per target noise (ESC-50 has 40; one ESC-50 fold has 8)
    noise_seconds: float
    background_per_kind: int
    background_seconds: float
    snrs: tuple[float, ...]


SNRS_BUILTIN: tuple[float, ...] = (0.0, -5.0, -10.0, -15.0, -20.0)
PRESETS: dict[str, Preset] = {
    "tiny": Preset("tiny", 12, 1, 2, 3.0, 1, 2.0, SNRS_BUILTIN),
    "demo": Preset("demo", 120, 6, 8, 5.0, 2, 10.0, SNRS_BUILTIN),
    # docs/data.md §5.3 "large": more source data for a more robust source model (~7k clips)
    "large": Preset("large", 600, 24, 16, 5.0, 4, 10.0, SNRS_BUILTIN),
}

# Whole voices held out (docs/data.md §5.2, §5.4: within-engine speaker splits are too easy).
# Voices not listed are training voices.
HELD_OUT: dict[tuple[str, str], str] = {
    ("flite", "rms"): "test",
    ("festival", "kal_diphone"): "test",
    ("festival", "ked_diphone"): "test",
    ("flite", "awb"): "val",
}
# Engines whose voices are assigned to splits whole (the others give pseudo-speakers).
WHOLE = frozenset({"flite", "festival"})
# Fractions of the primary pseudo-speakers in val and test (docs/data.md §5.2: 15 % / 25 %).
VAL_FRACTION = 0.15
TEST_FRACTION = 0.25


@dataclass(frozen=True)
class Speaker:
    id: str
    engine: str  # formant | espeak-ng | flite | festival
    voice: str
    split: str
    params: tuple[tuple[str, float], ...]

    def param(self, key: str) -> float:
        return dict(self.params)[key]


@dataclass(frozen=True)
class Utt:
    """One clip to render: a word by a speaker, or a `_silence_` clip (speaker None)."""

    speaker: Speaker | None
    word: str
    label: int
    split: str
    seed: int


def select_tier(tier: str) -> tuple[str, tuple[tts.Engine, ...]]:
    """Resolve `auto|tts|numpy` to a tier and its engines (TTS preferred when installed)."""
    if tier not in ("auto", *TIERS):
        raise DataError(f"unknown tier {tier!r}; allowed: auto, {', '.join(TIERS)}")
    if tier == "numpy":
        return "numpy", ()
    engines = tts.detect_engines()
    if not any(e.name == "espeak-ng" for e in engines):
        if tier == "tts":
            from codegen.base.errors import ToolMissingError

            raise ToolMissingError("espeak-ng", "espeak-ng")
        return "numpy", ()
    return "tts", engines


def _rank_split(ids: Sequence[str], seed: int) -> dict[str, str]:
    """Speaker-disjoint split by a stable hash of the speaker id (GSC style, docs/data.md §5.2)."""
    order = sorted(ids, key=lambda s: stable_seed("split", seed, s))
    n_val = max(1, round(VAL_FRACTION * len(order)))
    n_test = max(1, round(TEST_FRACTION * len(order)))
    out = {}
    for i, s in enumerate(order):
        out[s] = "val" if i < n_val else "test" if i < n_val + n_test else "train"
    return out


def make_speakers(
    preset: Preset, tier: str, engines: tuple[tts.Engine, ...], seed: int
) -> list[Speaker]:
    out: list[Speaker] = []
    if tier == "numpy":
        ids = [f"formant-{k:03d}" for k in range(preset.speakers)]
        split = _rank_split(ids, seed)
        for sid in ids:
            sp = formant.draw_speaker(rng_for(seed, "speaker", sid))
            params: tuple[tuple[str, float], ...] = (
                ("f0", sp.f0),
                ("scale", sp.scale),
                ("rate", sp.rate),
            )
            params += (("breath", sp.breath), ("rising", sp.rising))
            out.append(Speaker(sid, "formant", "formant", split[sid], params))
        return out
    by_name = {e.name: e for e in engines}
    esp = by_name["espeak-ng"]
    ids = [f"espeak-{k:03d}" for k in range(preset.speakers)]
    split = _rank_split(ids, seed)
    for sid in ids:
        # pseudo-speaker: (accent, variant, base pitch, base speed, VTLP factor), docs/data.md §3
        rng = rng_for(seed, "speaker", sid)
        accent = tts.ESPEAK_ACCENTS[int(rng.integers(len(tts.ESPEAK_ACCENTS)))]
        variant = esp.voices[int(rng.integers(len(esp.voices)))]
        params = (("pitch", float(rng.uniform(20, 80))), ("speed", float(rng.uniform(120, 200))))
        params += (("vtlp", float(rng.uniform(0.88, 1.12))),)
        out.append(Speaker(sid, "espeak-ng", f"{accent}+{variant}", split[sid], params))
    for eng in engines:
        if eng.name == "espeak-ng":
            continue
        for voice in eng.voices:
            for j in range(preset.settings_per_voice):
                sid = f"{eng.name}-{voice}-{j}"
                rng = rng_for(seed, "speaker", sid)
                params = (("stretch", float(rng.uniform(0.85, 1.25))),)
                params += (("vtlp", float(rng.uniform(0.92, 1.08))),)
                sp_split = HELD_OUT.get((eng.name, voice), "train")
                out.append(Speaker(sid, eng.name, voice, sp_split, params))
    return out


def make_utterances(speakers: list[Speaker], seed: int) -> dict[str, list[Utt]]:
    """Per split: every keyword once and 1 (val/test) or 2 (train) unknown words per speaker,
    then ceil(n/11) `_silence_` clips (docs/data.md §5.2)."""
    out: dict[str, list[Utt]] = {s: [] for s in SPLITS}
    for sp in speakers:
        n_unk = 2 if sp.split == "train" else 1
        rng = rng_for(seed, "unknown", sp.id)
        unk = [str(w) for w in rng.choice(UNKNOWN_WORDS, size=n_unk, replace=False)]
        for word in (*KEYWORDS, *unk):
            label = CLASSES.index(word) if word in KEYWORDS else CLASSES.index(UNKNOWN)
            out[sp.split].append(Utt(sp, word, label, sp.split, stable_seed(seed, sp.id, word, 0)))
    for split, items in out.items():
        for k in range(math.ceil(len(items) / 11)):
            s = stable_seed(seed, "silence", split, k)
            items.append(Utt(None, SILENCE, CLASSES.index(SILENCE), split, s))
    return out


# ------------------------------------------------------------------------------ rendering


def _render_word(u: Utt, raw: tuple[np.ndarray, int] | None) -> np.ndarray:
    rng = np.random.default_rng(u.seed)
    sp = u.speaker
    if sp is None:
        return to_int16(noise.silence_clip(rng))
    if sp.engine == "formant":
        fs = formant.FormantSpeaker(**dict(sp.params))
        x = formant.synthesize(u.word, fs, rng)
        return to_int16(place_in_clip(x, rng))
    assert raw is not None
    x, sr = raw
    # speed and vocal-tract length perturbation through the resampling factor, ±3 % per clip
    factor = SAMPLE_RATE / sr * sp.param("vtlp") * float(rng.uniform(0.97, 1.03))
    x = resample(trim(x), factor)
    return to_int16(place_in_clip(x, rng))


def _espeak_args(u: Utt) -> tuple[str, int, int]:
    assert u.speaker is not None
    rng = np.random.default_rng([u.seed, 1])
    pitch = int(np.clip(u.speaker.param("pitch") + rng.uniform(-6, 6), 0, 99))
    speed = int(u.speaker.param("speed") * rng.uniform(0.88, 1.12))
    punct = ("", ".", "!", "?")[int(rng.integers(4))]  # intonation variety (docs/data.md §3)
    return u.word + punct, pitch, speed


def _stretch(u: Utt) -> float:
    assert u.speaker is not None
    rng = np.random.default_rng([u.seed, 1])
    return u.speaker.param("stretch") * float(rng.uniform(0.93, 1.07))


def render_chunk(utts: list[Utt]) -> np.ndarray:
    """Render utterances to int16 [n, 16000] (runs in a worker process)."""
    out = np.zeros((len(utts), SAMPLE_RATE), dtype=np.int16)
    raw: dict[int, tuple[np.ndarray, int]] = {}
    with tts.scratch_dir() as tmpname:
        tmp = Path(tmpname)
        fest = [i for i, u in enumerate(utts) if u.speaker and u.speaker.engine == "festival"]
        if fest:
            items = []
            for i in fest:
                sp = utts[i].speaker
                assert sp is not None
                items.append((utts[i].word, sp.voice, _stretch(utts[i])))
            for i, r in zip(fest, tts.festival_batch(items, tmp), strict=True):
                raw[i] = r
        for i, u in enumerate(utts):
            if u.speaker is not None and u.speaker.engine == "espeak-ng":
                text, pitch, speed = _espeak_args(u)
                raw[i] = tts.espeak(text, voice=u.speaker.voice, pitch=pitch, speed=speed)
            elif u.speaker is not None and u.speaker.engine == "flite":
                raw[i] = tts.flite(u.word, voice=u.speaker.voice, stretch=_stretch(u), tmp=tmp)
            out[i] = _render_word(u, raw.get(i))
    return out


def _noise_task(task: tuple[str, str, int, float, int]) -> np.ndarray:
    kind, name, k, seconds, seed = task
    if kind == "noise":
        return to_int16(noise.esc_clip(name, rng_for(seed, "noise", name, k), seconds))
    return to_int16(noise.background_clip(name, rng_for(seed, "background", name, k), seconds))


def _engines(speakers: list[Speaker]) -> list[str]:
    return sorted({sp.engine for sp in speakers})


def _run_task(task: tuple[Any, ...]) -> np.ndarray:
    if task[0] == "clips":
        return render_chunk(task[1])
    return _noise_task(task)


def _chunks(items: list[Utt], size: int) -> Iterator[list[Utt]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def build_builtin(
    preset_name: str, *, tier: str, seed: int, jobs: int, progress: bool
) -> SourceSet:
    if preset_name not in PRESETS:
        raise DataError(f"unknown preset {preset_name!r}; allowed: {', '.join(PRESETS)}")
    preset = PRESETS[preset_name]
    tier, engines = select_tier(tier)
    speakers = make_speakers(preset, tier, engines, seed)
    utts = make_utterances(speakers, seed)
    ordered = [u for s in SPLITS for u in utts[s]]

    tasks: list[tuple[Any, ...]] = [("clips", c) for c in _chunks(ordered, 24)]
    n_clip_tasks = len(tasks)
    for c in NOISES:
        tasks += [("noise", c, k, preset.noise_seconds, seed) for k in range(preset.noise_clips)]
    bg_kinds = [k for k in noise.BACKGROUND_GENERATORS for _ in range(preset.background_per_kind)]
    bg_index = [j for _ in noise.BACKGROUND_GENERATORS for j in range(preset.background_per_kind)]
    tasks += [
        ("background", kind, j, preset.background_seconds, seed)
        for kind, j in zip(bg_kinds, bg_index, strict=True)
    ]
    weights = [len(t[1]) if t[0] == "clips" else 1 for t in tasks]
    results: list[np.ndarray] = []
    with progress_bar(
        sum(weights), f"builtin {preset_name} ({tier})", "clip", enabled=progress
    ) as bar:
        if jobs > 1:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                for w, r in zip(weights, pool.map(_run_task, tasks), strict=True):
                    results.append(r)
                    bar.update(w)
        else:
            for w, t in zip(weights, tasks, strict=True):
                results.append(_run_task(t))
                bar.update(w)

    pcm_all = np.concatenate(results[:n_clip_tasks], axis=0)
    rest = results[n_clip_tasks:]
    bank = {}
    for i, c in enumerate(NOISES):
        bank[c] = np.stack(rest[i * preset.noise_clips : (i + 1) * preset.noise_clips])
    background = np.stack(rest[len(NOISES) * preset.noise_clips :])

    splits: dict[str, dict[str, np.ndarray]] = {}
    pos = 0
    for s in SPLITS:
        items = utts[s]
        n = len(items)
        splits[s] = {
            "pcm": pcm_all[pos : pos + n],
            "labels": np.array([u.label for u in items], dtype=np.int64),
            "ids": np.arange(pos, pos + n, dtype=np.int64),
            "speakers": np.array([u.speaker.id if u.speaker else "" for u in items], dtype=str),
            "words": np.array([u.word for u in items], dtype=str),
            "sources": np.array(
                [f"{u.speaker.engine}:{u.speaker.voice}" if u.speaker else "noise" for u in items],
                dtype=str,
            ),
        }
        pos += n
    # per split: speakers per engine and the whole voices of the non-espeak engines
    by_split: dict[str, dict[str, Any]] = {}
    for s in SPLITS:
        mine = [sp for sp in speakers if sp.split == s]
        by_split[s] = {
            "speakers": {e: sum(1 for sp in mine if sp.engine == e) for e in _engines(mine)},
            "voices": sorted({f"{sp.engine}:{sp.voice}" for sp in mine if sp.engine in WHOLE}),
        }
    meta = {
        "tier": tier,
        "engines": [
            {"name": e.name, "version": e.version, "voices": list(e.voices)} for e in engines
        ]
        or [{"name": "formant (numpy)", "version": "1", "voices": []}],
        "speakers": by_split,
        "held_out_voices": {f"{e}:{v}": s for (e, v), s in HELD_OUT.items()},
        "noise_source": "procedural (codegen/data/noise.py)",
        "background_source": "procedural non-target noises",
    }
    return SourceSet(splits, bank, background, bg_kinds, meta)
