"""Evaluation streams for keyword spotting without clip boundaries (docs/stream.md).

`build_stream` lays a long recording out of one split of a data set built by `codegen data`:
its keyword clips (every class whose name does not start with an underscore) at known times,
unknown words between them (the split's `_unknown_` clips on the built-in set; on a set without
that class, FSDD, words outside the model's vocabulary synthesised as the built-in set's test
voices say them, `codegen.data.builtin`), and silence (the clips' own −70 dBFS floor) in the
gaps. Each word is its clip trimmed to the speech (`codegen.data.common.trim`, −40 dB below the
peak), so its start and end in the stream are known to the sample. The same speech is then
mixed with background noise at each SNR: the data set's ten target noises
(`noise_bank.npz`), one kind per segment, crops of its clips joined with short cross-fades,
each segment scaled to the same power. SNR is defined as the data set defines it for a clip
(`codegen.data.shifts.mix_additive`): speech power over a keyword's whole 1-s clip, here the
mean over the stream's keywords, against the noise's power; a mixture whose peak would clip is
scaled down whole, which keeps the SNR.

Files (``--out DIR``): ``stream.json`` (what was built, from what, the SNRs), ``labels.csv``
(one row per word: kind, word, class index, start and end in samples and seconds), ``clean.wav``
and ``snr_<db>.wav`` (16-bit mono 16 kHz). Reading them: `load_labels`, `read_wav`.

`score_detections` matches detections to the labels (the metrics of docs/stream.md): a keyword
is hit by the first detection of its class between its start and ``tolerance`` seconds after
its end; every other detection is a false accept; misses per keyword, false accepts per hour of
stream, and each hit's delay after the keyword's end.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import wave
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.data.common import (
    CLIP_SAMPLES,
    KEYWORDS,
    NOISES,
    SAMPLE_RATE,
    UNKNOWN_WORDS,
    DataError,
    rng_for,
    stable_seed,
    to_int16,
    trim,
)

STREAM_FORMAT = "elatta-kws-stream"
STREAM_VERSION = 1
MANIFEST = "stream.json"
LABELS = "labels.csv"
TRIM_DB = -40.0  # a word is its clip's samples within 40 dB of the clip's peak (common.trim)
FADE = 160  # samples of cross-fade between two noise crops (10 ms)
TOLERANCE = 1.0  # s after a keyword's end in which its detection still counts (a window's length)


@dataclass(frozen=True)
class StreamSettings:
    """How a stream is laid out; every value is recorded in ``stream.json``."""

    minutes: float = 10.0
    seed: int = 0
    split: str = "test"
    snrs: tuple[float, ...] = (0.0, -5.0, -10.0, -15.0, -20.0)
    unknown_share: float = 0.25  # of the words: unknown ones
    gap: tuple[float, float] = (1.5, 3.0)  # s of silence between two words, drawn uniformly
    noise_segment: float = 30.0  # s of one noise kind before the next

    def __post_init__(self) -> None:
        if not (isinstance(self.minutes, int | float) and 0 < self.minutes <= 600):
            raise DataError(f"--minutes {self.minutes!r}: a length in (0, 600] minutes")
        if self.split not in ("train", "val", "test"):
            raise DataError(f"split {self.split!r}: train, val or test")
        if not 0.0 <= self.unknown_share < 1.0:
            raise DataError(f"unknown share {self.unknown_share!r}: in [0, 1)")
        lo, hi = self.gap
        if not 0.0 <= lo <= hi:
            raise DataError(f"gap {self.gap!r}: 0 <= shortest <= longest seconds")
        if self.noise_segment <= 0:
            raise DataError(f"noise segment {self.noise_segment!r}: > 0 seconds")
        for s in self.snrs:
            if not -60.0 <= s <= 60.0:
                raise DataError(f"--snr {s!r}: in [-60, 60] dB")


@dataclass(frozen=True)
class Word:
    """One word of a stream (a row of labels.csv)."""

    kind: str  # "keyword" or "unknown"
    word: str
    cls: int  # the class index of a keyword, -1 for an unknown word
    start: int  # first sample in the stream
    end: int  # one past its last sample

    @property
    def start_s(self) -> float:
        return self.start / SAMPLE_RATE

    @property
    def end_s(self) -> float:
        return self.end / SAMPLE_RATE


def keyword_classes(classes: Sequence[str]) -> list[int]:
    """The classes a keyword spotter reports: every name not starting with an underscore."""
    return [c for c, name in enumerate(classes) if not name.startswith("_")]


def _words_of(pcm: npt.NDArray[np.int16]) -> list[npt.NDArray[np.float32]]:
    """Each clip trimmed to its speech (float in [-1, 1])."""
    return [trim(clip.astype(np.float32) / 32768.0, TRIM_DB) for clip in pcm]


def _synth_unknowns(
    words: list[str], n: int, seed: int
) -> list[tuple[str, npt.NDArray[np.float32]]]:
    """n words outside the model's vocabulary, as the built-in set's held-out test voices say
    them (`codegen.data.builtin`: espeak-ng pseudo-speakers and the held-out flite and festival
    voices; the formant synthesiser where no engine is installed)."""
    from codegen.data import builtin

    tier, engines = builtin.select_tier("auto")
    speakers = [
        sp
        for sp in builtin.make_speakers(builtin.PRESETS["tiny"], tier, engines, seed)
        if sp.split == "test"
    ]
    rng = rng_for(seed, "stream-unknown")
    utts = []
    for k in range(n):
        sp = speakers[int(rng.integers(len(speakers)))]
        w = str(rng.choice(words))
        utts.append(builtin.Utt(sp, w, -1, "test", stable_seed(seed, "stream-unknown", k)))
    pcm = builtin.render_chunk(utts) if utts else np.zeros((0, CLIP_SAMPLES), np.int16)
    return [(u.word, w) for u, w in zip(utts, _words_of(pcm), strict=True)]


def _noise_track(bank: dict[str, np.ndarray], n: int, segment: int, seed: int) -> np.ndarray:
    """n samples of background: one noise kind per segment (kinds in a seeded order), random
    crops of its clips joined by FADE-sample cross-fades, each segment at unit power."""
    rng = rng_for(seed, "stream-noise")
    kinds = [k for k in NOISES if k in bank]
    if not kinds:
        raise DataError("the data set's noise_bank.npz holds none of the target noises")
    out = np.zeros(n, np.float64)
    order: list[str] = []
    ramp = np.linspace(0.0, 1.0, FADE)
    for s0 in range(0, n, segment):
        if not order:
            order = [kinds[i] for i in rng.permutation(len(kinds))]
        clips = bank[order.pop()].astype(np.float64) / 32768.0
        m = min(segment, n - s0)
        seg = np.zeros(m + FADE)
        pos = 0
        while pos < m:
            clip = clips[int(rng.integers(len(clips)))]
            take = min(len(clip), m + FADE - pos)
            a = int(rng.integers(0, len(clip) - take + 1))
            piece = clip[a : a + take].copy()
            if pos > 0:  # cross-fade into what is there
                f = min(FADE, take)
                seg[pos : pos + f] *= 1.0 - ramp[:f]
                piece[:f] *= ramp[:f]
            seg[pos : pos + take] += piece
            pos += max(take - FADE, 1)
        seg = seg[:m]
        power = float(np.mean(seg**2))
        out[s0 : s0 + m] = seg / math.sqrt(power) if power > 0 else seg
    return out


def write_wav(path: Path, pcm: npt.NDArray[np.int16]) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(np.asarray(pcm, "<i2").tobytes())


def wav_blocks(path: Path | str, block: int = 16000) -> Iterator[npt.NDArray[np.int16]]:
    """A 16 kHz mono 16-bit WAV file in blocks of ``block`` samples, read as it goes (the
    stdlib `wave` module); any other format is refused, naming it."""
    try:
        w = wave.open(str(path), "rb")
    except (OSError, EOFError, wave.Error) as exc:
        raise DataError(f"{path}: not a readable WAV file ({exc})") from exc
    with w:
        fmt = (w.getnchannels(), w.getsampwidth(), w.getframerate())
        if fmt != (1, 2, SAMPLE_RATE):
            raise DataError(
                f"{path}: {fmt[0]} channel(s), {8 * fmt[1]}-bit, {fmt[2]} Hz; the model listens "
                f"to 1 channel, 16-bit, {SAMPLE_RATE} Hz (convert it, e.g. `sox IN -c 1 -b 16 "
                f"-r {SAMPLE_RATE} OUT.wav`)"
            )
        while True:
            raw = w.readframes(block)
            if not raw:
                return
            yield np.frombuffer(raw, "<i2").astype(np.int16)


def read_wav(path: Path | str) -> npt.NDArray[np.int16]:
    parts = list(wav_blocks(path, 1 << 20))
    return np.concatenate(parts) if parts else np.zeros(0, np.int16)


def snr_file(snr: float | None) -> str:
    """The stream's file at an SNR (None: the clean speech)."""
    return "clean.wav" if snr is None else f"snr_{snr:g}.wav"


def build_stream(
    data_dir: str | Path, out_dir: str | Path, settings: StreamSettings
) -> dict[str, Any]:
    """Lay the stream out (module docstring), write its files; returns the manifest."""
    from codegen.data.store import dataset_info, load_split

    info = dataset_info(str(data_dir))
    classes = tuple(info["classes"])
    split = load_split(str(data_dir), settings.split)
    kw = set(keyword_classes(classes))
    seed = settings.seed
    rng = rng_for(seed, "stream-layout")
    total = int(round(settings.minutes * 60 * SAMPLE_RATE))
    # keyword clips in a seeded order, each used once before any is used again
    kw_rows = [i for i in range(len(split.labels)) if int(split.labels[i]) in kw]
    if not kw_rows:
        raise DataError(f"{data_dir} split {settings.split} has no keyword clips")
    unk_rows = [i for i in range(len(split.labels)) if classes[int(split.labels[i])] == "_unknown_"]
    n_words_est = int(total / SAMPLE_RATE / (0.6 + sum(settings.gap) / 2)) + 2
    n_unk = int(round(n_words_est * settings.unknown_share))
    if unk_rows:
        chosen = [unk_rows[int(i)] for i in rng.integers(0, len(unk_rows), n_unk)]
        unknowns = [("_unknown_", w) for w in _words_of(split.pcm[chosen].astype(np.int16))]
        unknown_from = f"the {settings.split} split's _unknown_ clips"
    else:
        vocab = [w for w in (*UNKNOWN_WORDS, *KEYWORDS) if w not in classes]
        unknowns = _synth_unknowns(vocab, n_unk, seed)
        unknown_from = "synthesised words outside the vocabulary (built-in test voices)"
    words_kw = _words_of(split.pcm[kw_rows].astype(np.int16))
    # the keywords' reference power: their whole 1-s clips, as the data set's SNR is defined
    clip_power = float(np.mean((split.pcm[kw_rows].astype(np.float64) / 32768.0) ** 2))
    # unknown words at the keywords' active level (median RMS of the trimmed words)
    level = float(np.median([np.sqrt(np.mean(w**2)) for w in words_kw if w.size]))
    speech = np.zeros(total, np.float64)
    floor = 10.0 ** (-70.0 / 20.0)
    speech += rng_for(seed, "stream-floor").standard_normal(total) * floor
    labels: list[Word] = []
    pos = int(rng.uniform(*settings.gap) * SAMPLE_RATE)
    kw_order = list(rng.permutation(len(kw_rows)))
    unk_i = 0
    while True:
        is_unk = unk_i < len(unknowns) and rng.random() < settings.unknown_share
        if is_unk:
            name, w = unknowns[unk_i]
            unk_i += 1
            rms = float(np.sqrt(np.mean(w**2))) if w.size else 0.0
            w = w * (level / rms) if rms > 0 else w
            cls = -1
        else:
            if not kw_order:
                kw_order = list(rng.permutation(len(kw_rows)))
            j = int(kw_order.pop())
            w = words_kw[j]
            cls = int(split.labels[kw_rows[j]])
            name = classes[cls]
        if w.size == 0:
            continue
        if pos + w.size > total:
            break
        speech[pos : pos + w.size] += w
        labels.append(Word("unknown" if is_unk else "keyword", name, cls, pos, pos + w.size))
        pos += w.size + int(rng.uniform(*settings.gap) * SAMPLE_RATE)
    bank_file = np.load(Path(data_dir) / "noise_bank.npz")
    bank = {k: bank_file[k] for k in bank_file.files}
    noise = _noise_track(bank, total, int(settings.noise_segment * SAMPLE_RATE), seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"clean": snr_file(None)}
    write_wav(out / files["clean"], to_int16(speech))
    gains = {}
    for snr in settings.snrs:
        g = math.sqrt(clip_power / 10.0 ** (snr / 10.0))
        mix = speech + g * noise
        peak = float(np.max(np.abs(mix)))
        scale = 0.999 / peak if peak > 0.999 else 1.0
        write_wav(out / snr_file(snr), to_int16(mix * scale))
        files[f"{snr:g}"] = snr_file(snr)
        gains[f"{snr:g}"] = {"noise_rms": g * scale, "peak_scale": scale}
    with (out / LABELS).open("w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(("kind", "word", "class", "start", "end", "start_s", "end_s"))
        for lab in labels:
            wr.writerow(
                (lab.kind, lab.word, lab.cls, lab.start, lab.end, f"{lab.start_s:.4f}",
                 f"{lab.end_s:.4f}")
            )  # fmt: skip
    manifest = {
        "format": STREAM_FORMAT,
        "version": STREAM_VERSION,
        "data": {
            "path": str(Path(data_dir).resolve()),
            "kind": info.get("data"),
            "config_hash": info.get("config_hash"),
        },
        "classes": list(classes),
        "settings": asdict(settings),
        "samples": total,
        "seconds": total / SAMPLE_RATE,
        "keywords": sum(lab.kind == "keyword" for lab in labels),
        "unknown_words": sum(lab.kind == "unknown" for lab in labels),
        "unknown_from": unknown_from,
        "keyword_clip_power_dbfs": round(10 * math.log10(clip_power), 3),
        "snr_definition": "mean power of the keywords' whole 1-s clips over the noise's power",
        "mix": gains,
        "files": files,
        "labels": LABELS,
        "digest": hashlib.sha256((out / LABELS).read_bytes()).hexdigest(),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def stream_info(stream_dir: str | Path) -> dict[str, Any]:
    path = Path(stream_dir) / MANIFEST
    try:
        info: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DataError(
            f"{path}: not an evaluation stream ({exc}); build one with `codegen data --stream`"
        ) from exc
    if info.get("format") != STREAM_FORMAT:
        raise DataError(f"{path}: format {info.get('format')!r}, expected {STREAM_FORMAT!r}")
    return info


def stream_file(stream_dir: str | Path, snr: float | None) -> Path:
    """The stream's WAV at ``snr`` (None: clean); a missing SNR names the ones there are."""
    info = stream_info(stream_dir)
    key = "clean" if snr is None else f"{snr:g}"
    if key not in info["files"]:
        have = ", ".join(k for k in info["files"] if k != "clean")
        raise DataError(f"{stream_dir} has no stream at {key} dB; it has: clean, {have}")
    return Path(stream_dir) / str(info["files"][key])


def load_labels(path: str | Path) -> list[Word]:
    p = Path(path)
    if p.is_dir():
        p = p / LABELS
    try:
        with p.open(newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise DataError(f"{p}: cannot read the labels ({exc})") from exc
    try:
        return [
            Word(r["kind"], r["word"], int(r["class"]), int(r["start"]), int(r["end"]))
            for r in rows
        ]
    except (KeyError, ValueError) as exc:
        raise DataError(f"{p}: not a labels file of `codegen data --stream` ({exc})") from exc


@dataclass(frozen=True)
class StreamScore:
    """Detections against the labels (docs/stream.md, "Metrics")."""

    keywords: int
    hits: int
    false_accepts: int
    hours: float
    delays: tuple[float, ...]  # s after each hit keyword's end

    @property
    def misses(self) -> int:
        return self.keywords - self.hits

    @property
    def miss_rate(self) -> float:
        """Percent of the keywords not detected."""
        return 100.0 * self.misses / self.keywords if self.keywords else 0.0

    @property
    def fa_per_hour(self) -> float:
        return self.false_accepts / self.hours if self.hours > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        d = np.asarray(self.delays)
        return {
            "keywords": self.keywords,
            "hits": self.hits,
            "misses": self.misses,
            "miss_rate": round(self.miss_rate, 4),
            "false_accepts": self.false_accepts,
            "hours": round(self.hours, 6),
            "fa_per_hour": round(self.fa_per_hour, 4),
            "delay_median_s": round(float(np.median(d)), 4) if d.size else None,
            "delay_p90_s": round(float(np.percentile(d, 90)), 4) if d.size else None,
            "delay_p95_s": round(float(np.percentile(d, 95)), 4) if d.size else None,
            "delay_max_s": round(float(d.max()), 4) if d.size else None,
        }


def match_detections(
    labels: Sequence[Word], detections: Sequence[tuple[float, int]], tolerance: float = TOLERANCE
) -> list[int | None]:
    """For each detection (time s, class), the index of the keyword it hits, or None (a false
    accept): the first detection of a keyword's class in [start, end + tolerance]."""
    kws = [(i, lab) for i, lab in enumerate(labels) if lab.kind == "keyword"]
    hit: set[int] = set()
    out: list[int | None] = []
    j0 = 0
    for t, c in detections:
        while j0 < len(kws) and kws[j0][1].end_s + tolerance < t:
            j0 += 1
        found = None
        for i, lab in kws[j0:]:
            if lab.start_s > t:
                break
            if i not in hit and lab.cls == c and lab.end_s + tolerance >= t:
                found = i
                break
        if found is not None:
            hit.add(found)
        out.append(found)
    return out


def score_detections(
    labels: Sequence[Word],
    detections: Sequence[tuple[float, int]],
    seconds: float,
    tolerance: float = TOLERANCE,
) -> StreamScore:
    """Misses, false accepts per hour and delays of ``detections`` (time s, class; in time
    order) over a stream of ``seconds``."""
    m = match_detections(labels, detections, tolerance)
    delays = tuple(detections[k][0] - labels[i].end_s for k, i in enumerate(m) if i is not None)
    return StreamScore(
        keywords=sum(lab.kind == "keyword" for lab in labels),
        hits=sum(i is not None for i in m),
        false_accepts=sum(i is None for i in m),
        hours=seconds / 3600.0,
        delays=delays,
    )
