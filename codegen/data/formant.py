"""Pure-numpy "formant words": the fallback speech tier (docs/data.md §5.1, tier `formant`).

A lexicon of the 35 GSC words as ARPAbet-like phone strings is rendered by additive harmonic
synthesis: every harmonic of a time-varying f0 is weighted by a cascade-resonator envelope of
time-varying formants (F1..F5), plus band-filtered noise for fricatives, stop bursts,
aspiration and breathiness. Speakers vary f0 (85–260 Hz), vocal-tract scale (0.9–1.25), rate
and breathiness, as in the prototype of docs/data.md §5.1. No dependency beyond numpy and scipy.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import signal

from codegen.data.common import SAMPLE_RATE

# word -> phones (CMU dictionary style, stress dropped).
LEXICON: dict[str, tuple[str, ...]] = {
    "yes": ("Y", "EH", "S"),
    "no": ("N", "OW"),
    "up": ("AH", "P"),
    "down": ("D", "AW", "N"),
    "left": ("L", "EH", "F", "T"),
    "right": ("R", "AY", "T"),
    "on": ("AA", "N"),
    "off": ("AO", "F"),
    "stop": ("S", "T", "AA", "P"),
    "go": ("G", "OW"),
    "bed": ("B", "EH", "D"),
    "bird": ("B", "ER", "D"),
    "cat": ("K", "AE", "T"),
    "dog": ("D", "AO", "G"),
    "happy": ("HH", "AE", "P", "IY"),
    "house": ("HH", "AW", "S"),
    "marvin": ("M", "AA", "R", "V", "IH", "N"),
    "sheila": ("SH", "IY", "L", "AH"),
    "tree": ("T", "R", "IY"),
    "wow": ("W", "AW"),
    "zero": ("Z", "IH", "R", "OW"),
    "one": ("W", "AH", "N"),
    "two": ("T", "UW"),
    "three": ("TH", "R", "IY"),
    "four": ("F", "AO", "R"),
    "five": ("F", "AY", "V"),
    "six": ("S", "IH", "K", "S"),
    "seven": ("S", "EH", "V", "AH", "N"),
    "eight": ("EY", "T"),
    "nine": ("N", "AY", "N"),
    "backward": ("B", "AE", "K", "W", "ER", "D"),
    "forward": ("F", "AO", "R", "W", "ER", "D"),
    "follow": ("F", "AA", "L", "OW"),
    "learn": ("L", "ER", "N"),
    "visual": ("V", "IH", "ZH", "UW", "AH", "L"),
}


@dataclass(frozen=True)
class Phone:
    """Targets of one phone for an adult male vocal tract (Peterson & Barney style values)."""

    kind: str  # vowel | diph | glide | nasal | fric | stop | asp
    f_start: tuple[float, float, float]  # F1..F3 at onset (Hz); the locus for stops
    f_end: tuple[float, float, float]  # F1..F3 at offset (differs for diphthongs)
    dur_ms: float
    voice: float  # voicing amplitude
    noise: float  # frication / burst amplitude
    band: tuple[float, float]  # noise band (Hz)


def _v(f: tuple[float, float, float], dur: float = 130.0) -> Phone:
    return Phone("vowel", f, f, dur, 1.0, 0.0, (0.0, 0.0))


def _d(a: tuple[float, float, float], b: tuple[float, float, float]) -> Phone:
    return Phone("diph", a, b, 190.0, 1.0, 0.0, (0.0, 0.0))


PHONES: dict[str, Phone] = {
    "IY": _v((270, 2290, 3010)),
    "IH": _v((390, 1990, 2550), 100.0),
    "EH": _v((530, 1840, 2480), 110.0),
    "AE": _v((660, 1720, 2410), 140.0),
    "AA": _v((730, 1090, 2440), 140.0),
    "AO": _v((570, 840, 2410), 140.0),
    "AH": _v((640, 1190, 2390), 100.0),
    "UW": _v((300, 870, 2240), 130.0),
    "ER": _v((490, 1350, 1690), 140.0),
    "OW": _d((570, 900, 2400), (330, 870, 2250)),
    "EY": _d((530, 1840, 2480), (300, 2200, 2900)),
    "AY": _d((730, 1090, 2440), (350, 2100, 2800)),
    "AW": _d((730, 1090, 2440), (380, 900, 2300)),
    "Y": Phone("glide", (250, 2200, 3000), (250, 2200, 3000), 60.0, 0.6, 0.0, (0, 0)),
    "W": Phone("glide", (300, 650, 2200), (300, 650, 2200), 60.0, 0.6, 0.0, (0, 0)),
    "R": Phone("glide", (350, 1100, 1500), (350, 1100, 1500), 65.0, 0.6, 0.0, (0, 0)),
    "L": Phone("glide", (360, 1000, 2600), (360, 1000, 2600), 65.0, 0.6, 0.0, (0, 0)),
    "M": Phone("nasal", (250, 1100, 2300), (250, 1100, 2300), 75.0, 0.28, 0.0, (0, 0)),
    "N": Phone("nasal", (250, 1600, 2600), (250, 1600, 2600), 75.0, 0.28, 0.0, (0, 0)),
    "S": Phone("fric", (400, 1700, 2600), (400, 1700, 2600), 120.0, 0.0, 0.35, (4000, 7800)),
    "Z": Phone("fric", (300, 1700, 2600), (300, 1700, 2600), 100.0, 0.25, 0.25, (4000, 7800)),
    "SH": Phone("fric", (400, 1800, 2500), (400, 1800, 2500), 120.0, 0.0, 0.4, (2000, 6000)),
    "ZH": Phone("fric", (300, 1800, 2500), (300, 1800, 2500), 90.0, 0.25, 0.28, (2000, 6000)),
    "F": Phone("fric", (400, 1100, 2400), (400, 1100, 2400), 110.0, 0.0, 0.09, (1200, 7500)),
    "V": Phone("fric", (300, 1100, 2400), (300, 1100, 2400), 80.0, 0.3, 0.07, (1200, 7500)),
    "TH": Phone("fric", (400, 1400, 2600), (400, 1400, 2600), 100.0, 0.0, 0.07, (1500, 7500)),
    "HH": Phone("asp", (600, 1500, 2500), (600, 1500, 2500), 70.0, 0.0, 0.12, (400, 5000)),
    "P": Phone("stop", (300, 800, 2200), (300, 800, 2200), 65.0, 0.0, 0.5, (300, 2000)),
    "B": Phone("stop", (250, 800, 2200), (250, 800, 2200), 60.0, 0.08, 0.35, (300, 2000)),
    "T": Phone("stop", (400, 1800, 2700), (400, 1800, 2700), 65.0, 0.0, 0.5, (3000, 7000)),
    "D": Phone("stop", (300, 1800, 2700), (300, 1800, 2700), 60.0, 0.08, 0.35, (3000, 7000)),
    "K": Phone("stop", (350, 2000, 2300), (350, 2000, 2300), 70.0, 0.0, 0.5, (1500, 3500)),
    "G": Phone("stop", (300, 2000, 2300), (300, 2000, 2300), 60.0, 0.08, 0.35, (1500, 3500)),
}
VOICELESS_STOPS = frozenset({"P", "T", "K"})
VOICED_FMAX = 5500.0


@dataclass(frozen=True)
class FormantSpeaker:
    """One pseudo-speaker of the numpy tier."""

    f0: float  # base f0 (Hz)
    scale: float  # vocal-tract scale applied to F1..F5
    rate: float  # >1 speaks faster
    breath: float  # 0..1 breathiness
    rising: float  # probability of a rising (question) contour


def draw_speaker(rng: np.random.Generator) -> FormantSpeaker:
    f0 = float(rng.uniform(85.0, 260.0))
    # Higher voices come with shorter vocal tracts, with spread (docs/data.md §5.1: scale 0.9–1.25).
    scale = float(np.clip(0.9 + 0.3 * (f0 - 85.0) / 175.0 + rng.normal(0.0, 0.05), 0.9, 1.25))
    return FormantSpeaker(
        f0=f0,
        scale=scale,
        rate=float(rng.uniform(0.8, 1.3)),
        breath=float(rng.uniform(0.0, 0.6)),
        rising=float(rng.uniform(0.0, 0.4)),
    )


@functools.lru_cache(maxsize=64)
def _band_sos(lo: float, hi: float) -> np.ndarray:
    nyq = SAMPLE_RATE / 2.0
    return signal.butter(4, [lo / nyq, min(hi, nyq - 100.0) / nyq], btype="band", output="sos")


def _smooth(x: np.ndarray, n: int) -> np.ndarray:
    w = np.hanning(n + 2)[1:-1]
    w /= w.sum()
    pad = np.pad(x, (n, n), mode="edge")
    return np.convolve(pad, w, mode="same")[n:-n]


def synthesize(word: str, speaker: FormantSpeaker, rng: np.random.Generator) -> np.ndarray:
    """Render one word; float32 at 16 kHz with peak 1."""
    sr = SAMPLE_RATE
    phones = LEXICON[word]
    rate = speaker.rate * float(rng.uniform(0.9, 1.1))
    durs: list[int] = []
    for i, name in enumerate(phones):
        d = PHONES[name].dur_ms * float(rng.uniform(0.85, 1.15)) / rate
        if i == len(phones) - 1:
            d *= 1.3  # phrase-final lengthening
        durs.append(max(int(d * sr / 1000.0), 320))
    n = int(sum(durs))
    fmt = np.zeros((3, n))
    voice = np.zeros(n)
    noise_sig = np.zeros(n)
    pos = 0
    for name, d in zip(phones, durs, strict=True):
        ph = PHONES[name]
        ramp = np.linspace(0.0, 1.0, d)[None, :]
        fmt[:, pos : pos + d] = (
            np.asarray(ph.f_start)[:, None] * (1 - ramp) + np.asarray(ph.f_end)[:, None] * ramp
        )
        if ph.kind == "stop":
            # closure (silent, or a weak voice bar), 12 ms burst, aspiration if voiceless
            burst = int(0.012 * sr)
            asp = int(0.045 * sr / rate) if name in VOICELESS_STOPS else 0
            clos = max(d - burst - asp, int(0.02 * sr))
            voice[pos : pos + clos] = ph.voice
            _add_band_noise(noise_sig, rng, pos + clos, burst, ph.band, ph.noise, decay=True)
            _add_band_noise(noise_sig, rng, pos + clos + burst, asp, (400, 5000), 0.1, decay=True)
        else:
            voice[pos : pos + d] = ph.voice
            if ph.noise > 0:
                _add_band_noise(noise_sig, rng, pos, d, ph.band, ph.noise, decay=False)
        pos += d
    hop = 32  # control rate: 2 ms
    ctrl = np.arange(0, n, hop)
    fmt = np.stack([_smooth(f[ctrl], 15) for f in fmt]) * speaker.scale  # 30 ms smoothing
    voice = np.interp(np.arange(n), ctrl, _smooth(voice[ctrl], 7))  # 15 ms smoothing

    # f0: falling (statement) or rising (question) contour, slow jitter
    t = np.linspace(0.0, 1.0, n)
    base = speaker.f0 * float(rng.uniform(0.94, 1.06))
    if rng.random() < speaker.rising:
        contour = 0.95 + 0.35 * t**2
    else:
        contour = 1.15 - 0.3 * t
    walk = _smooth(rng.standard_normal(n // 160 + 2), 4)
    jitter = 1.0 + 0.02 * np.interp(t, np.linspace(0, 1, walk.size), walk)
    f0 = base * contour * jitter
    phase = 2.0 * np.pi * np.cumsum(f0) / sr

    # harmonic amplitudes from a cascade of five resonators; voiced energy is kept below
    # VOICED_FMAX (fricatives supply the high band; the MFCC front end stops at 4 kHz)
    n_harm = int(VOICED_FMAX / f0.min())
    h = np.arange(1, n_harm + 1, dtype=np.float64)[:, None]
    freq = h * f0[ctrl][None, :]
    formants = [fmt[0], fmt[1], fmt[2]]
    formants += [np.full(ctrl.size, 3500.0 * speaker.scale), np.full(ctrl.size, 4500.0)]
    env = np.ones_like(freq)
    for fk, bk in zip(formants, (80.0, 100.0, 150.0, 220.0, 300.0), strict=True):
        fk2 = fk[None, :] ** 2
        env *= fk2 / np.sqrt((fk2 - freq**2) ** 2 + (bk * freq) ** 2)
    env *= h ** -(1.0 + speaker.breath)
    env[freq > VOICED_FMAX] = 0.0
    pos_c = np.arange(n) / hop
    i0 = np.minimum(pos_c.astype(np.int64), ctrl.size - 1)
    i1 = np.minimum(i0 + 1, ctrl.size - 1)
    a = (pos_c - i0).astype(np.float32)[None, :]
    env32 = env.astype(np.float32)
    amps = env32[:, i0] * (1.0 - a) + env32[:, i1] * a
    harm_phase = h.astype(np.float32) * phase.astype(np.float32)[None, :]
    voiced = np.einsum("hn,hn->n", amps, np.sin(harm_phase)).astype(np.float64)
    peak = float(np.max(np.abs(voiced)))
    voiced = voiced / peak if peak > 0 else voiced
    out = voiced * voice
    # breathiness: aspiration noise riding on the voicing
    if speaker.breath > 0:
        breath = signal.sosfilt(_band_sos(500.0, 6000.0), rng.standard_normal(n))
        out += 0.12 * speaker.breath * voice * breath / (np.std(breath) + 1e-12)
    out += noise_sig
    peak = float(np.max(np.abs(out)))
    return (out / peak if peak > 0 else out).astype(np.float32)


def _add_band_noise(
    dst: np.ndarray,
    rng: np.random.Generator,
    start: int,
    length: int,
    band: tuple[float, float],
    amp: float,
    *,
    decay: bool,
) -> None:
    length = min(length, dst.size - start)
    if length <= 8 or amp <= 0:
        return
    x = signal.sosfilt(_band_sos(float(band[0]), float(band[1])), rng.standard_normal(length + 256))
    x = x[256:] / (np.std(x[256:]) + 1e-12)
    if decay:
        env = np.exp(-np.arange(length) / (0.35 * length))
    else:
        ramp = min(int(0.012 * SAMPLE_RATE), length // 2)
        env = np.ones(length)
        env[:ramp] = np.linspace(0.0, 1.0, ramp)
        env[length - ramp :] = np.linspace(1.0, 0.0, ramp)
    dst[start : start + length] += amp * env * x
