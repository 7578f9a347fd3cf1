"""Procedural stand-ins for the ten ESC-50 categories and the non-target training noises.

Each target generator `f(rng, n)` follows docs/data.md §4.2 and returns float32 audio at 16 kHz.
`esc_clip` wraps them like an ESC-50 clip: sound events with gaps over a quiet floor, and
sometimes digital-zero padding at the end (many ESC-50 clips are padded to 5 s, docs/data.md §1.3),
so a random 1-s crop may hold a loud event, a partial event or only floor — as with ESC-50.
The training noises (white/pink/brown/hum/babble/fan/clatter/knock/music/typing) are deliberately
none of the ten target categories, so the target shift stays unseen (docs/data.md §4.2, §5.4).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from scipy import signal

from codegen.data import formant
from codegen.data.common import NOISES, SAMPLE_RATE, UNKNOWN_WORDS

SR = SAMPLE_RATE
NYQ = SR / 2.0
Generator = Callable[[np.random.Generator, int], np.ndarray]


# ---------------------------------------------------------------------------- building blocks


@functools.lru_cache(maxsize=256)
def _sos(kind: str, lo: float, hi: float = 0.0, order: int = 4) -> np.ndarray:
    if kind == "band":
        return signal.butter(order, [lo / NYQ, min(hi, NYQ - 50.0) / NYQ], "band", output="sos")
    return signal.butter(order, lo / NYQ, kind, output="sos")


def _filt(x: np.ndarray, kind: str, lo: float, hi: float = 0.0, order: int = 4) -> np.ndarray:
    return signal.sosfilt(_sos(kind, float(lo), float(hi), order), x)


def _unit(x: np.ndarray) -> np.ndarray:
    r = float(np.sqrt(np.mean(x**2)))
    return x / r if r > 0 else x


def _peak_unit(x: np.ndarray) -> np.ndarray:
    """float32, peak 1 (silence stays silence): the clips' common scale before mixing."""
    peak = float(np.max(np.abs(x)))
    return (x / peak if peak > 0 else x).astype(np.float32)


def white(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.standard_normal(n)


def pink(rng: np.random.Generator, n: int) -> np.ndarray:
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(spec.size, dtype=np.float64)
    f[0] = 1.0
    return _unit(np.fft.irfft(spec / np.sqrt(f), n))


def brown(rng: np.random.Generator, n: int) -> np.ndarray:
    x = np.cumsum(rng.standard_normal(n))
    return _unit(_filt(x, "high", 20.0, order=2))


def _tone(
    f0: np.ndarray,
    formants: list[tuple[float, float]],
    *,
    tilt: float = 1.0,
    saw: bool = False,
    phase0: float = 0.0,
) -> np.ndarray:
    """Additive harmonics of a per-sample f0, weighted by fixed resonances (F, bandwidth)."""
    n = f0.size
    n_harm = max(int(7500.0 / max(float(f0.min()), 30.0)), 1)
    h = np.arange(1, n_harm + 1, dtype=np.float64)[:, None]
    phase = phase0 + 2.0 * np.pi * np.cumsum(f0) / SR
    hop = 64
    ctrl = np.arange(0, n, hop)
    freq = h * f0[ctrl][None, :]
    env = np.ones_like(freq)
    for fk, bk in formants:
        env *= fk**2 / np.sqrt((fk**2 - freq**2) ** 2 + (bk * freq) ** 2)
    env *= h ** (-1.0 if saw else -tilt)
    env[freq > 7500.0] = 0.0
    amps = np.repeat(env, hop, axis=1)[:, :n]
    out = np.einsum("hn,hn->n", amps, np.sin(h * phase[None, :]))
    return _unit(out)


def _ad_env(n: int, attack: float, decay: float) -> np.ndarray:
    """Attack/decay envelope with times in seconds."""
    t = np.arange(n) / SR
    a = np.clip(t / max(attack, 1e-4), 0.0, 1.0)
    return a * np.exp(-np.maximum(t - attack, 0.0) / max(decay, 1e-4))


def _fade(n: int, fade_s: float) -> np.ndarray:
    m = min(int(fade_s * SR), n // 2)
    env = np.ones(n)
    if m > 0:
        env[:m] = np.linspace(0.0, 1.0, m)
        env[n - m :] = np.linspace(1.0, 0.0, m)
    return env


def _place(dst: np.ndarray, ev: np.ndarray, start: int, gain: float = 1.0) -> None:
    if start >= dst.size:
        return
    m = min(ev.size, dst.size - start)
    dst[start : start + m] += gain * ev[:m]


def _event_times(
    rng: np.random.Generator, n: int, count: int, gap: tuple[float, float]
) -> list[int]:
    """Start samples of `count` events separated by random gaps, from a random first onset."""
    t = float(rng.uniform(0.0, 1.0))
    out = []
    for _ in range(count):
        out.append(int(t * SR))
        t += float(rng.uniform(*gap))
    return [s for s in out if s < n]


# ---------------------------------------------------------------------------- the ten categories


def dog(rng: np.random.Generator, n: int) -> np.ndarray:
    out = np.zeros(n)
    t = float(rng.uniform(0.0, 0.8))
    while t < n / SR:
        for _ in range(int(rng.integers(1, 5))):  # a burst of 1-4 barks
            dur = float(rng.uniform(0.08, 0.22))
            m = int(dur * SR)
            f_hi = float(rng.uniform(350.0, 750.0))
            f0 = np.linspace(f_hi, f_hi * float(rng.uniform(0.55, 0.8)), m)
            form = [(1100.0 * float(rng.uniform(0.85, 1.15)), 250.0), (2500.0, 400.0)]
            bark = _tone(f0, form, tilt=0.6) + 0.5 * _unit(_filt(white(rng, m), "band", 500, 4000))
            _place(out, bark * _ad_env(m, 0.01, dur / 3.0), int(t * SR), float(rng.uniform(0.6, 1)))
            t += dur + float(rng.uniform(0.08, 0.25))
        t += float(rng.uniform(0.4, 1.5))
    return out


def cat(rng: np.random.Generator, n: int) -> np.ndarray:
    out = np.zeros(n)
    t = float(rng.uniform(0.0, 1.0))
    while t < n / SR:
        m = int(float(rng.uniform(0.5, 1.3)) * SR)
        x = np.linspace(0.0, 1.0, m)
        a, b, c = rng.uniform(450, 650), rng.uniform(700, 1000), rng.uniform(350, 550)
        f0 = np.where(x < 0.4, a + (b - a) * x / 0.4, b + (c - b) * (x - 0.4) / 0.6)
        f0 = f0 * (1.0 + 0.02 * np.sin(2 * np.pi * 6.0 * x * m / SR))
        # formants glide /i/ -> /a/ -> /u/ (three overlapping vowel segments)
        parts = []
        for fs in ([(300, 80), (2300, 150)], [(750, 100), (1200, 120)], [(350, 80), (800, 100)]):
            parts.append(_tone(f0, [(float(f), float(bw)) for f, bw in fs]))
        w = np.stack([np.clip(1 - np.abs(x - c0) / 0.45, 0, 1) for c0 in (0.0, 0.5, 1.0)])
        meow = (w * np.stack(parts)).sum(0) * _fade(m, 0.06)
        _place(out, meow, int(t * SR), float(rng.uniform(0.6, 1.0)))
        t += m / SR + float(rng.uniform(0.5, 2.0))
    return out


def pouring_water(rng: np.random.Generator, n: int) -> np.ndarray:
    mod = 1.0 + 0.4 * _filt(white(rng, n), "low", 3.0, order=2) / 0.02
    bed = _unit(_filt(white(rng, n), "band", 400, 6000)) * np.clip(mod, 0.2, 2.0) * 0.4
    out = bed
    rate = float(rng.uniform(60, 160))
    count = int(rate * n / SR)
    starts = rng.integers(0, n, count)
    for s in starts:
        d = float(rng.uniform(0.004, 0.03))
        m = int(d * SR)
        f = float(rng.uniform(400, 3000))
        fr = np.linspace(f, f * float(rng.uniform(1.1, 1.6)), m)
        bub = np.sin(2 * np.pi * np.cumsum(fr) / SR) * np.exp(-np.arange(m) / (0.3 * m))
        _place(out, bub, int(s), float(rng.uniform(0.2, 1.0)))
    # a pour has a beginning and an end inside the clip
    dur = float(rng.uniform(2.0, 5.0))
    start = float(rng.uniform(0.0, max(n / SR - dur, 0.0)))
    env = np.zeros(n)
    a, b = int(start * SR), min(int((start + dur) * SR), n)
    env[a:b] = _fade(b - a, 0.15)
    return out * env


def thunderstorm(rng: np.random.Generator, n: int) -> np.ndarray:
    rain = _unit(_filt(pink(rng, n), "high", 1000.0)) * float(rng.uniform(0.1, 0.35))
    clicks = np.zeros(n)
    idx = rng.integers(0, n, int(n / SR * rng.uniform(50, 200)))
    clicks[idx] = rng.uniform(-1.0, 1.0, idx.size)
    rain += _filt(clicks, "high", 2000.0) * 0.5
    out = rain
    for _ in range(int(rng.integers(1, 3))):
        dur = float(rng.uniform(1.5, 4.0))
        m = int(dur * SR)
        boom = _unit(_filt(brown(rng, m), "low", float(rng.uniform(80, 250))))
        env = _ad_env(m, float(rng.uniform(0.05, 0.4)), dur / 3.0)
        _place(out, boom * env * 1.5, int(rng.integers(0, max(n - m // 2, 1))))
    return out


def crying_baby(rng: np.random.Generator, n: int) -> np.ndarray:
    out = np.zeros(n)
    t = float(rng.uniform(0.0, 0.6))
    while t < n / SR:
        m = int(float(rng.uniform(0.6, 1.6)) * SR)
        x = np.linspace(0.0, 1.0, m)
        base = float(rng.uniform(380, 600))
        vib = float(rng.uniform(5, 9))
        f0 = (
            base
            * (1.0 + 0.15 * np.sin(np.pi * x))
            * (1 + 0.03 * np.sin(2 * np.pi * vib * x * m / SR))
        )
        f0 *= 1.0 + 0.01 * np.repeat(rng.standard_normal(m // 80 + 1), 80)[:m]
        cry = _tone(f0, [(1100.0, 200.0), (3000.0, 400.0)], tilt=0.7)
        cry += 0.3 * _unit(_filt(white(rng, m), "band", 1000, 5000))
        _place(out, cry * _fade(m, 0.05), int(t * SR))
        t += m / SR
        # inhalation: a short weak noisy gasp
        g = int(float(rng.uniform(0.15, 0.45)) * SR)
        gasp = _unit(_filt(white(rng, g), "band", 800, 4000)) * _fade(g, 0.05) * 0.15
        _place(out, gasp, int(t * SR))
        t += g / SR + float(rng.uniform(0.0, 0.8))
    return out


def laughing(rng: np.random.Generator, n: int) -> np.ndarray:
    out = np.zeros(n)
    for s in _event_times(rng, n, 3, (1.5, 3.0)):
        rate = float(rng.uniform(3.5, 6.0))
        count = int(rng.integers(3, 9))
        f_start = float(rng.uniform(170, 330))
        pos = s
        for k in range(count):
            period = int(SR / rate)
            asp = int(0.3 * period)
            vow = int(0.45 * period)
            amp = 0.85**k
            h = _unit(_filt(white(rng, asp), "band", 500, 4000)) * _fade(asp, 0.01) * 0.3
            f0 = np.linspace(f_start, f_start * 0.85, vow) * (1 - 0.02 * k)
            a = _tone(f0, [(750.0, 100.0), (1200.0, 120.0), (2500.0, 200.0)]) * _fade(vow, 0.02)
            _place(out, h * amp, pos)
            _place(out, a * amp, pos + asp)
            pos += period
    return out


def washing_machine(rng: np.random.Generator, n: int) -> np.ndarray:
    t = np.arange(n) / SR
    f_hum = float(rng.uniform(45, 120))
    hum = np.zeros(n)
    for k in range(1, 6):
        hum += np.sin(2 * np.pi * f_hum * k * t + rng.uniform(0, 6.3)) / k
    rot = float(rng.uniform(0.5, 1.5))
    slosh = _unit(_filt(white(rng, n), "low", 600.0))
    slosh *= 0.6 + 0.4 * np.sin(2 * np.pi * rot * t + rng.uniform(0, 6.3))
    thumps = np.zeros(n)
    for k in range(int(n / SR * rot) + 1):
        s = int((k / rot + float(rng.uniform(0, 0.1))) * SR)
        m = int(0.15 * SR)
        _place(thumps, _unit(_filt(white(rng, m), "low", 150.0)) * _ad_env(m, 0.005, 0.04), s)
    return 0.4 * _unit(hum) + slosh + 0.8 * thumps


def vacuum_cleaner(rng: np.random.Generator, n: int) -> np.ndarray:
    air = _unit(_filt(white(rng, n), "band", 300, 7000))
    drift = 1.0 + 0.02 * _unit(_filt(white(rng, n), "low", 1.0, order=2))
    f0 = float(rng.uniform(250, 550)) * drift
    if rng.random() < 0.4:  # spin-up
        m = int(float(rng.uniform(0.5, 1.5)) * SR)
        f0[:m] *= np.linspace(0.3, 1.0, m)
        air[:m] *= np.linspace(0.1, 1.0, m)
    whine = np.zeros(n)
    phase = 2 * np.pi * np.cumsum(f0) / SR
    for k in range(1, 12):
        whine += np.sin(k * phase) / k
    return air + 0.35 * _unit(whine)


def car_horn(rng: np.random.Generator, n: int) -> np.ndarray:
    bed = _unit(_filt(brown(rng, n), "low", 300.0)) * float(rng.uniform(0.02, 0.08))
    out = bed
    f1 = float(rng.uniform(350, 480))
    ratio = float(rng.uniform(1.18, 1.30))
    for s in _event_times(rng, n, int(rng.integers(1, 4)), (0.4, 1.6)):
        m = int(float(rng.uniform(0.15, 1.2)) * SR)
        t = np.arange(m) / SR
        saw = np.zeros(m)
        for k in range(1, 20):  # two sawtooth tones, the second one 1.18-1.30 times higher
            saw += np.sin(2 * np.pi * f1 * k * t) / k
            if k < 16:
                saw += np.sin(2 * np.pi * f1 * ratio * k * t) / k
        honk = _unit(_filt(np.asarray(saw), "band", 300, 4000)) * _fade(m, 0.01)
        _place(out, honk, s)
    return out


def fireworks(rng: np.random.Generator, n: int) -> np.ndarray:
    out = np.zeros(n)
    for s in _event_times(rng, n, int(rng.integers(2, 7)), (0.3, 1.5)):
        if rng.random() < 0.4:  # rising whistle before the bang
            m = int(float(rng.uniform(0.4, 1.0)) * SR)
            f = np.linspace(float(rng.uniform(800, 1500)), float(rng.uniform(2000, 4000)), m)
            wh = np.sin(2 * np.pi * np.cumsum(f) / SR) * np.linspace(0.05, 0.3, m)
            _place(out, wh, max(s - m, 0))
        m = int(float(rng.uniform(0.8, 2.0)) * SR)
        boom = _unit(_filt(white(rng, m), "low", float(rng.uniform(200, 800)))) * _ad_env(
            m, 0.002, float(rng.uniform(0.1, 0.4))
        )
        crack = _unit(_filt(white(rng, m), "high", 1500.0)) * _ad_env(m, 0.0005, 0.01)
        tail = np.zeros(m)
        idx = rng.integers(int(0.1 * SR), m, int(rng.integers(20, 120)))
        tail[idx] = rng.uniform(-1, 1, idx.size) * np.exp(-idx / (0.5 * m))
        tail = _filt(tail, "high", 1000.0)
        _place(out, boom + 0.7 * crack + 2.0 * tail, s, float(rng.uniform(0.5, 1.0)))
    return out


TARGET_GENERATORS: dict[str, Generator] = {
    "dog": dog,
    "cat": cat,
    "pouring_water": pouring_water,
    "thunderstorm": thunderstorm,
    "crying_baby": crying_baby,
    "laughing": laughing,
    "washing_machine": washing_machine,
    "vacuum_cleaner": vacuum_cleaner,
    "car_horn": car_horn,
    "fireworks": fireworks,
}
assert tuple(TARGET_GENERATORS) == NOISES


def esc_clip(category: str, rng: np.random.Generator, seconds: float) -> np.ndarray:
    """One ESC-50-like clip of a target category: events, a quiet floor, maybe zero padding."""
    n = int(seconds * SR)
    x = _unit(TARGET_GENERATORS[category](rng, n)[:n])
    # recording floor 35-55 dB below the clip's RMS (ESC-50 clips come from field recordings)
    x += pink(rng, n) * 10.0 ** (-float(rng.uniform(35.0, 55.0)) / 20.0)
    if rng.random() < 0.3:  # zero-padded like a short Freesound source (docs/data.md §1.3)
        end = int(float(rng.uniform(0.5, 0.9)) * n)
        x[end:] = 0.0
        x[max(end - 160, 0) : end] *= np.linspace(1.0, 0.0, min(160, end))
    return _peak_unit(x)


# ---------------------------------------------------------------------------- non-target noises


def hum(rng: np.random.Generator, n: int) -> np.ndarray:
    t = np.arange(n) / SR
    f = 50.0 if rng.random() < 0.5 else 60.0
    x = np.zeros(n)
    for k in range(1, 9):
        x += np.sin(2 * np.pi * f * k * t + rng.uniform(0, 6.3)) / k**1.2
    return _unit(np.asarray(x) + 0.05 * white(rng, n))


def babble(rng: np.random.Generator, n: int) -> np.ndarray:
    """Overlapping formant-synthesised unknown words from six random talkers."""
    out = np.zeros(n)
    for _ in range(6):
        spk = formant.draw_speaker(rng)
        pos = int(rng.integers(0, SR // 2))
        while pos < n:
            w = formant.synthesize(str(rng.choice(UNKNOWN_WORDS)), spk, rng)
            _place(out, w, pos, float(rng.uniform(0.5, 1.0)))
            pos += w.size + int(rng.integers(0, SR // 4))
    return _unit(out)


def fan(rng: np.random.Generator, n: int) -> np.ndarray:
    t = np.arange(n) / SR
    bed = _unit(_filt(white(rng, n), "low", float(rng.uniform(800, 2500))))
    blade = float(rng.uniform(20, 60))
    return bed * (1.0 + 0.2 * np.sin(2 * np.pi * blade * t)) + 0.2 * np.sin(
        2 * np.pi * 3 * blade * t
    )


def clatter(rng: np.random.Generator, n: int) -> np.ndarray:
    """Sparse ringing clinks (dishes/cutlery-like), not one of the ten target categories."""
    out = 0.02 * _unit(pink(rng, n))
    for s in rng.integers(0, n, int(n / SR * rng.uniform(2, 8))):
        m = int(0.2 * SR)
        f = float(rng.uniform(1500, 6000))
        t = np.arange(m) / SR
        clink = np.sin(2 * np.pi * f * t) * np.exp(-t / float(rng.uniform(0.02, 0.08)))
        clink += 0.5 * np.sin(2 * np.pi * f * 2.7 * t) * np.exp(-t / 0.02)
        _place(out, clink, int(s), float(rng.uniform(0.3, 1.0)))
    return out


def knock(rng: np.random.Generator, n: int) -> np.ndarray:
    """Door knocks and footsteps: groups of dull low-frequency thumps over a quiet room."""
    out = 0.01 * _unit(pink(rng, n))
    t = float(rng.uniform(0.0, 0.5))
    while t < n / SR:
        for _ in range(int(rng.integers(2, 6))):
            m = int(0.12 * SR)
            thump = _unit(_filt(white(rng, m), "band", 80, float(rng.uniform(400, 1200))))
            _place(out, thump * _ad_env(m, 0.002, 0.02), int(t * SR), float(rng.uniform(0.5, 1)))
            t += float(rng.uniform(0.15, 0.6))
        t += float(rng.uniform(0.5, 2.0))
    return out


def music(rng: np.random.Generator, n: int) -> np.ndarray:
    """A radio in the room: random triads of harmonic notes changing every 0.25-1 s."""
    out = np.zeros(n)
    pos = 0
    while pos < n:
        m = int(float(rng.uniform(0.25, 1.0)) * SR)
        root = 110.0 * 2.0 ** (int(rng.integers(0, 24)) / 12.0)
        t = np.arange(m) / SR
        chord = np.zeros(m)
        for semis in (0, int(rng.choice([3, 4])), 7):
            f = root * 2.0 ** (semis / 12.0)
            for k in range(1, 6):
                chord += np.sin(2 * np.pi * f * k * t) / k**1.5
        _place(out, chord * _ad_env(m, 0.01, 0.5 * m / SR), pos)
        pos += m
    return out


def typing(rng: np.random.Generator, n: int) -> np.ndarray:
    """Keyboard typing: bursts of short clicks at 4-10 per second."""
    out = 0.005 * _unit(pink(rng, n))
    t = float(rng.uniform(0.0, 0.5))
    while t < n / SR:
        m = int(0.02 * SR)
        click = _unit(_filt(white(rng, m), "band", 1000, 6000)) * _ad_env(m, 0.0005, 0.004)
        _place(out, click, int(t * SR), float(rng.uniform(0.3, 1.0)))
        t += float(rng.uniform(0.1, 0.25)) if rng.random() < 0.9 else float(rng.uniform(0.5, 1.5))
    return out


BACKGROUND_GENERATORS: dict[str, Generator] = {
    "white": white,
    "pink": pink,
    "brown": brown,
    "hum": hum,
    "babble": babble,
    "fan": fan,
    "clatter": clatter,
    "knock": knock,
    "music": music,
    "typing": typing,
}
# Kinds used for the low-level built-in `_silence_` clips (docs/data.md §4.2).
SILENCE_KINDS: tuple[str, ...] = ("white", "pink", "brown", "hum")


def background_clip(kind: str, rng: np.random.Generator, seconds: float) -> np.ndarray:
    """A peak-normalised non-target noise clip."""
    n = int(seconds * SR)
    x = BACKGROUND_GENERATORS[kind](rng, n)[:n]
    return _peak_unit(x)


# ---------------------------------------------------------------------------- held-out noises
# Kinds that are neither a training noise nor one of the ten target categories. They serve one
# purpose: a selection set of *unseen* noises for adaptation hyperparameters (docs/adaptation.md
# "Round 7"), in the way ImageNet-C holds out validation corruptions apart from its test ones
# (Hendrycks & Dietterich, ICLR 2019, §3). No model is trained with them.


def wind(rng: np.random.Generator, n: int) -> np.ndarray:
    """Wind: low-passed noise under slow random gusts, with a drifting whistle band."""
    t = np.arange(n) / SR
    gust = np.cumsum(rng.standard_normal(n // 800 + 2))
    gust = np.interp(np.arange(n) / 800.0, np.arange(gust.size), gust - gust.mean())
    env = np.exp(0.35 * gust / (np.std(gust) + 1e-9))
    bed = _unit(_filt(pink(rng, n), "band", 80.0, float(rng.uniform(600, 1500))))
    fc = float(rng.uniform(500, 900)) * (1.0 + 0.3 * np.sin(2 * np.pi * 0.15 * t))
    whistle = np.sin(2 * np.pi * np.cumsum(fc) / SR) * _unit(_filt(white(rng, n), "low", 8.0))
    return _unit(bed * env + 0.05 * whistle * env)


def siren(rng: np.random.Generator, n: int) -> np.ndarray:
    """An emergency siren passing: a wailing or yelping harmonic tone sweeping 600-1500 Hz."""
    t = np.arange(n) / SR
    rate = float(rng.uniform(0.2, 0.4)) if rng.random() < 0.5 else float(rng.uniform(2.5, 4.0))
    lo, hi = float(rng.uniform(550, 750)), float(rng.uniform(1200, 1500))
    f0 = lo + (hi - lo) * 0.5 * (1.0 - np.cos(2 * np.pi * rate * t + rng.uniform(0, 6.3)))
    tone = _tone(f0, [(1500.0, 600.0), (3000.0, 900.0)], tilt=1.5)
    swell = 0.4 + 0.6 * np.sin(np.pi * np.clip(t / max(n / SR, 1e-3), 0.0, 1.0))
    return tone * swell + 0.05 * _unit(pink(rng, n))


def applause(rng: np.random.Generator, n: int) -> np.ndarray:
    """Applause: dense independent hand claps, 15-40 per second, each a short band of noise."""
    out = 0.02 * _unit(pink(rng, n))
    count = int(n / SR * rng.uniform(15, 40))
    m = int(0.03 * SR)
    for s in np.sort(rng.integers(0, n, count)):
        lo = float(rng.uniform(600, 1500))
        clap = _unit(_filt(white(rng, m), "band", lo, lo * float(rng.uniform(2.0, 3.5))))
        _place(out, clap * _ad_env(m, 0.0005, float(rng.uniform(0.004, 0.012))), int(s),
               float(rng.uniform(0.3, 1.0)))  # fmt: skip
    return out


def birdsong(rng: np.random.Generator, n: int) -> np.ndarray:
    """Birds: trills of short frequency-modulated chirps at 2-6 kHz over a quiet outdoor floor."""
    out = 0.01 * _unit(_filt(pink(rng, n), "low", 1500.0))
    for s in _event_times(rng, n, int(rng.integers(3, 9)), (0.2, 1.0)):
        f_hi, f_lo = float(rng.uniform(3500, 6000)), float(rng.uniform(2000, 3500))
        pos = s
        for _ in range(int(rng.integers(2, 8))):
            m = int(float(rng.uniform(0.03, 0.12)) * SR)
            f = np.linspace(f_hi, f_lo, m) if rng.random() < 0.7 else np.linspace(f_lo, f_hi, m)
            chirp = np.sin(2 * np.pi * np.cumsum(f) / SR) * np.hanning(m)
            _place(out, chirp, pos, float(rng.uniform(0.4, 1.0)))
            pos += m + int(float(rng.uniform(0.01, 0.06)) * SR)
    return out


HELDOUT_GENERATORS: dict[str, Generator] = {
    "wind": wind,
    "siren": siren,
    "applause": applause,
    "birdsong": birdsong,
}
assert not set(HELDOUT_GENERATORS) & (set(NOISES) | set(BACKGROUND_GENERATORS))


def heldout_clip(kind: str, rng: np.random.Generator, seconds: float) -> np.ndarray:
    """A peak-normalised held-out noise clip (neither a training noise nor a target one)."""
    if kind not in HELDOUT_GENERATORS:
        raise ValueError(f"held-out noise {kind!r}: use one of {sorted(HELDOUT_GENERATORS)}")
    n = int(seconds * SR)
    x = HELDOUT_GENERATORS[kind](rng, n)[:n]
    return _peak_unit(x)


def silence_clip(rng: np.random.Generator) -> np.ndarray:
    """A built-in `_silence_` clip: low-level white/pink/brown noise or hum at −60…−30 dBFS RMS."""
    kind = SILENCE_KINDS[int(rng.integers(len(SILENCE_KINDS)))]
    x = _unit(BACKGROUND_GENERATORS[kind](rng, SR))
    return (x * 10.0 ** (float(rng.uniform(-60.0, -30.0)) / 20.0)).astype(np.float32)
