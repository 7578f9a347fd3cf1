"""Offline TTS engines from Debian main: espeak-ng, flite, festival (docs/data.md §3, §5.1).

Engines are found at build time; each synthesises a word to a float32 waveform at the engine's
native rate. Nothing is downloaded; the audio only ever lands in the output directory.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.io import wavfile

from codegen.data.common import DataError

# English accents of espeak-ng 1.51 used for pseudo-speakers (docs/data.md §3).
ESPEAK_ACCENTS: tuple[str, ...] = (
    "en-us", "en-gb", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-gbcwmd", "en-gb-x-rp",
    "en-029", "en-us-nyc",
)  # fmt: skip
# Voice variants: human-sounding ones; whisper, robot and novelty variants are left out.
ESPEAK_VARIANTS: tuple[str, ...] = (
    "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "f1", "f2", "f3", "f4", "f5",
    "klatt", "klatt2", "klatt3", "klatt4", "klatt5", "klatt6", "adam", "Alex", "Alicia", "Andy",
    "Annie", "aunty", "belinda", "benjamin", "boris", "caleb", "david", "ed", "edward",
    "edward2", "Gene", "Gene2", "Hugo", "iven", "iven2", "iven3", "iven4", "Jacky", "john",
    "Lee", "linda", "max", "Michael", "Mike", "norbert", "paul", "quincy", "rob", "robert",
    "sandro", "shelby", "steph", "steph2", "steph3", "travis", "victor", "zac", "anika",
    "grandpa", "grandma", "croak",
)  # fmt: skip
# flite voices (awb_time is a clock-reading voice and is skipped).
FLITE_VOICES: tuple[str, ...] = ("kal", "kal16", "awb", "rms", "slt")
FESTIVAL_DIRS: tuple[str, ...] = ("/usr/share/festival/voices",)


@dataclass(frozen=True)
class Engine:
    name: str  # espeak-ng | flite | festival
    version: str
    voices: tuple[str, ...]


def _run(cmd: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)


@functools.lru_cache(maxsize=1)
def detect_engines() -> tuple[Engine, ...]:
    """The engines installed here, with versions and English voices, in a fixed order."""
    found: list[Engine] = []
    if shutil.which("espeak-ng"):
        out = _run(["espeak-ng", "--version"]).stdout.decode(errors="replace")
        m = re.search(r"(\d+\.\d+[\w.\-]*)", out)
        listed = _run(["espeak-ng", "--voices=variant"]).stdout.decode(errors="replace")
        names = {line.split()[-1].split("/")[-1] for line in listed.splitlines()[1:] if line}
        variants = tuple(v for v in ESPEAK_VARIANTS if v in names)
        if variants:
            found.append(Engine("espeak-ng", m.group(1) if m else "unknown", variants))
    if shutil.which("flite"):
        out = _run(["flite", "-lv"]).stdout.decode(errors="replace")
        avail = set(out.replace("Voices available:", "").split())
        ver = _run(["flite", "--version"]).stdout.decode(errors="replace")
        m = re.search(r"flite-(\S+)", ver) or re.search(r"(\d+\.\d+\S*)", ver)
        voices = tuple(v for v in FLITE_VOICES if v in avail)
        if voices:
            found.append(Engine("flite", m.group(1) if m else "unknown", voices))
    if shutil.which("festival"):
        voices_f: list[str] = []
        for root in FESTIVAL_DIRS:
            for d in sorted(Path(root).glob("*/*")):
                if d.is_dir() and d.name.isidentifier():
                    voices_f.append(d.name)
        ver = _run(["festival", "--version"]).stdout.decode(errors="replace")
        m = re.search(r"(\d+\.\d+\.\d+)", ver)
        if voices_f:
            found.append(Engine("festival", m.group(1) if m else "unknown", tuple(voices_f)))
    return tuple(found)


def _read_wav_bytes(data: bytes, what: str) -> tuple[np.ndarray, int]:
    """Parse a RIFF/WAV stream; tolerates espeak-ng's streaming header (size 0x7fffffff)."""
    if data[:4] != b"RIFF" or len(data) < 44:
        raise DataError(f"{what}: engine produced no WAV audio ({len(data)} bytes)")
    sr = int.from_bytes(data[24:28], "little")
    pos = data.find(b"data", 12)
    if pos < 0:
        raise DataError(f"{what}: WAV stream without a data chunk")
    pcm = np.frombuffer(data[pos + 8 : pos + 8 + (len(data) - pos - 8) // 2 * 2], dtype="<i2")
    return pcm.astype(np.float32) / 32768.0, sr


def espeak(word: str, *, voice: str, pitch: int, speed: int) -> tuple[np.ndarray, int]:
    cmd = ["espeak-ng", "-v", voice, "-p", str(pitch), "-s", str(speed), "--stdout", word]
    proc = _run(cmd)
    if proc.returncode != 0:
        raise DataError(f"espeak-ng failed for {word!r} ({voice}): {proc.stderr.decode()[:200]}")
    return _read_wav_bytes(proc.stdout, f"espeak-ng {voice} {word!r}")


def flite(word: str, *, voice: str, stretch: float, tmp: Path) -> tuple[np.ndarray, int]:
    out = tmp / "flite.wav"
    cmd = ["flite", "-voice", voice, "-t", word, "-o", str(out)]
    cmd += ["--setf", f"duration_stretch={stretch:.3f}"]
    proc = _run(cmd)
    if proc.returncode != 0 or not out.exists():
        raise DataError(f"flite failed for {word!r} ({voice}): {proc.stderr.decode()[:200]}")
    sr, pcm = wavfile.read(out)
    return pcm.astype(np.float32) / 32768.0, int(sr)


def festival_batch(items: list[tuple[str, str, float]], tmp: Path) -> list[tuple[np.ndarray, int]]:
    """Synthesise (word, voice, duration stretch) triples in one festival process."""
    lines = []
    for k, (word, voice, stretch) in enumerate(items):
        lines.append(f"(voice_{voice})")
        lines.append(f"(Parameter.set 'Duration_Stretch {stretch:.3f})")
        path = tmp / f"fest_{k}.wav"
        lines.append(f'(utt.save.wave (utt.synth (Utterance Text "{word}")) "{path}" \'riff)')
    script = tmp / "batch.scm"
    script.write_text("\n".join(lines) + "\n")
    proc = _run(["festival", "-b", str(script)], timeout=600.0)
    out = []
    for k, (word, voice, _) in enumerate(items):
        path = tmp / f"fest_{k}.wav"
        if not path.exists():
            raise DataError(
                f"festival produced no audio for {word!r} ({voice}): {proc.stderr.decode()[:200]}"
            )
        sr, pcm = wavfile.read(path)
        out.append((pcm.astype(np.float32) / 32768.0, int(sr)))
        path.unlink()
    return out


def scratch_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="elatta-tts-")
