"""IMA ADPCM on the link (docs/numeric.md §8): codegen/base/adpcm.py against two independent
implementations (Python's stdlib audioop, deprecated but present in 3.11, and a scalar
transcription of the IMA reference written here), per-block decoding against continuous
decoding, the block format byte by byte, and firmware/elt_adpcm.c (host-compiled with
ASan/UBSan; on the Cortex-A9 under QEMU with its cost) against the Python decoder."""

from __future__ import annotations

import os
import struct
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from repopaths import ROOT

from codegen.base import adpcm
from codegen.base.resources import firmware_dir
from codegen.target.toolchain import COMMON_CFLAGS, find_tool

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop

FSDD_DIR = Path(os.environ.get("FSDD_DIR", ROOT.parent / "shared/data/fsdd"))
SR = 16000

# ------------------------------------------------------------------ an independent scalar codec
# Transcribed from the IMA recommended practice (rev. 3.00, 1992, ADPCM section) without the
# module under test: its tables are written out again here, not imported.
IMA_STEPS = [
    7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 19, 21, 23, 25, 28, 31, 34, 37, 41, 45, 50, 55, 60, 66,
    73, 80, 88, 97, 107, 118, 130, 143, 157, 173, 190, 209, 230, 253, 279, 307, 337, 371, 408,
    449, 494, 544, 598, 658, 724, 796, 876, 963, 1060, 1166, 1282, 1411, 1552, 1707, 1878, 2066,
    2272, 2499, 2749, 3024, 3327, 3660, 4026, 4428, 4871, 5358, 5894, 6484, 7132, 7845, 8630,
    9493, 10442, 11487, 12635, 13899, 15289, 16818, 18500, 20350, 22385, 24623, 27086, 29794,
    32767,
]  # fmt: skip
IMA_INDEX = [-1, -1, -1, -1, 2, 4, 6, 8]


def ref_encode(x: list[int], pred: int = 0, index: int = 0) -> tuple[list[int], int, int]:
    codes = []
    for v in x:
        step = IMA_STEPS[index]
        diff = v - pred
        sign = 8 if diff < 0 else 0
        diff = abs(diff)
        delta, vpdiff = 0, step >> 3
        if diff >= step:
            delta, diff, vpdiff = 4, diff - step, vpdiff + step
        step >>= 1
        if diff >= step:
            delta, diff, vpdiff = delta | 2, diff - step, vpdiff + step
        step >>= 1
        if diff >= step:
            delta, vpdiff = delta | 1, vpdiff + step
        pred = pred - vpdiff if sign else pred + vpdiff
        pred = max(-32768, min(32767, pred))
        index = max(0, min(88, index + IMA_INDEX[delta]))
        codes.append(delta | sign)
    return codes, pred, index


def ref_decode(codes: list[int], pred: int = 0, index: int = 0) -> list[int]:
    out = []
    for c in codes:
        step = IMA_STEPS[index]
        vpdiff = step >> 3
        if c & 4:
            vpdiff += step
        if c & 2:
            vpdiff += step >> 1
        if c & 1:
            vpdiff += step >> 2
        pred = pred - vpdiff if c & 8 else pred + vpdiff
        pred = max(-32768, min(32767, pred))
        index = max(0, min(88, index + IMA_INDEX[c & 7]))
        out.append(pred)
    return out


# ------------------------------------------------------------------------------ test signals


def _voiced(rng: np.random.Generator, n: int) -> np.ndarray:
    """Speech-like: a gliding harmonic source under a syllable envelope, plus breath noise."""
    t = np.arange(n) / SR
    f0 = rng.uniform(80, 300) * (1 + 0.05 * np.sin(2 * np.pi * rng.uniform(2, 6) * t))
    phase = 2 * np.pi * np.cumsum(f0) / SR
    sig = sum(np.sin(k * phase) / k**2 for k in range(1, 25) if k * f0.max() < SR / 2)
    env = np.clip(np.sin(np.pi * t * rng.integers(1, 4) / t[-1]), 0, 1) ** 2
    return np.asarray(sig * env * 8000 * 10 ** rng.uniform(-2, 0.4) + rng.standard_normal(n) * 60)


def signals(rng: np.random.Generator, n: int = SR) -> dict[str, np.ndarray]:
    """int16 clips: speech-like, noise, the clamp corners (full-scale square wave, alternating
    extremes at Nyquist, silence, constants at the rails, impulses) and a chirp."""
    t = np.arange(n) / SR
    f = 50 * (7900 / 50) ** (t / t[-1])
    imp = np.zeros(n)
    imp[rng.integers(0, n, 30)] = rng.choice([-32768, 32767], 30)
    x = {
        "voiced": _voiced(rng, n),
        "voiced_loud_clipped": _voiced(rng, n) * 40,
        "noise": rng.standard_normal(n) * 3000,
        "full_range": rng.integers(-32768, 32768, n),
        "square_full_scale": np.where((np.arange(n) // 40) % 2 == 0, 32767, -32768),
        "nyquist_full_scale": np.where(np.arange(n) % 2 == 0, 32767, -32768),
        "silence": np.zeros(n),
        "rail_high": np.full(n, 32767),
        "rail_low": np.full(n, -32768),
        "impulses": imp,
        "chirp": np.sin(2 * np.pi * np.cumsum(f) / SR) * 20000,
    }
    return {k: np.clip(np.round(v), -32768, 32767).astype(np.int16) for k, v in x.items()}


def fsdd_speech(limit: int) -> list[np.ndarray]:
    """Up to ``limit`` FSDD recordings as 16 kHz int16 clips, when the recordings are present."""
    if not (FSDD_DIR / "recordings").is_dir():
        return []
    from codegen.data.fsdd import find_recordings, read_recording, to_clip

    _, recs = find_recordings(FSDD_DIR)
    rng = np.random.default_rng(3)
    return [to_clip(read_recording(r), rng) for r in recs[:: max(1, len(recs) // limit)][:limit]]


# ------------------------------------------------------------------------------- pure Python


def test_tables_are_the_ima_tables() -> None:
    assert list(adpcm.STEP_TABLE) == IMA_STEPS
    assert list(adpcm.INDEX_TABLE) == IMA_INDEX * 2
    assert adpcm.INDEX_MAX == 88 and adpcm.HEADER_BYTES == 4


def test_tables_hold_the_reference_arithmetic_for_every_state() -> None:
    """Exhaustively: for every step index and every |difference| 0 … 65535 the magnitude the
    encoder reads off CODE_PARTS is the reference's three compare-and-subtract steps, and
    CODE_DIFF / CODE_NEXT are the scalar decoder's step for every (index, code)."""
    d = np.arange(65536)
    for i, step in enumerate(IMA_STEPS):
        rest, mag = d.copy(), np.zeros_like(d)
        for bit, part in ((4, step), (2, step >> 1), (1, step >> 2)):
            on = rest >= part
            rest, mag = np.where(on, rest - part, rest), mag | np.where(on, bit, 0)
        np.testing.assert_array_equal((d[:, None] >= adpcm.CODE_PARTS[i, 1:]).sum(1), mag)
        for c in range(16):
            start = 32767 if c & 8 else -32768  # from the far rail: no clamp (|d| <= 61436)
            assert adpcm.CODE_DIFF[16 * i + c] == ref_decode([c], start, i)[0] - start, (i, c)
            nxt = max(0, min(88, i + IMA_INDEX[c & 7]))
            assert adpcm.CODE_NEXT[16 * i + c] == nxt, (i, c)


@pytest.mark.parametrize("name", sorted(signals(np.random.default_rng(0))))
def test_codes_and_samples_equal_audioop(name: str) -> None:
    """audioop's lin2adpcm/adpcm2lin (the same IMA algorithm, first nibble HIGH): the codes, the
    decoded samples and the state at every block start, block by block from our headers."""
    x = signals(np.random.default_rng(0))[name]
    enc = adpcm.encode(x, 1000)
    dec = adpcm.decode(enc)[0]
    packed, state = audioop.lin2adpcm(x.tobytes(), 2, None)
    raw = np.frombuffer(packed, np.uint8)
    hi_first = np.empty(2 * raw.size, np.uint8)
    hi_first[0::2], hi_first[1::2] = raw >> 4, raw & 15
    np.testing.assert_array_equal(enc.codes[0], hi_first)
    lin, _ = audioop.adpcm2lin(packed, 2, None)
    np.testing.assert_array_equal(dec, np.frombuffer(lin, np.int16))
    for b, block in enumerate(adpcm.clip_blocks(enc, 0)):
        n = enc.block_len(b)
        head = (int(enc.predictor[0, b]), int(enc.step_index[0, b]))
        codes, nxt = audioop.lin2adpcm(x[b * 1000 : b * 1000 + n].tobytes(), 2, head)
        lin, _ = audioop.adpcm2lin(codes, 2, head)
        np.testing.assert_array_equal(adpcm.decode_block(block, n), np.frombuffer(lin, np.int16))
        if b + 1 < enc.n_blocks:
            assert nxt == (int(enc.predictor[0, b + 1]), int(enc.step_index[0, b + 1]))
    assert state == (int(dec[-1]), ref_encode(x.tolist())[2])


@pytest.mark.parametrize("n", [1, 2, 3, 7, 160, 999])
def test_equals_the_scalar_transcription(n: int) -> None:
    """Codes, headers and samples equal the scalar transcription above, odd lengths included."""
    rng = np.random.default_rng(n)
    x = np.stack(list(signals(rng).values()))[:, ::-1][:, :n].copy()
    for block in sorted({1, 2, 5, 64, n}):
        enc = adpcm.encode(x, block)
        dec = adpcm.decode(enc)
        for c in range(len(x)):
            codes, _, _ = ref_encode(x[c].tolist())
            assert enc.codes[c].tolist() == codes
            assert dec[c].tolist() == ref_decode(codes)
            p, i = 0, 0
            for b in range(enc.n_blocks):
                assert (int(enc.predictor[c, b]), int(enc.step_index[c, b])) == (p, i)
                _, p, i = ref_encode(x[c, b * block : (b + 1) * block].tolist(), p, i)


def test_per_block_decoding_equals_continuous_decoding() -> None:
    """Every block decoded on its own from its header (bytes in, as the device gets them) equals
    decoding the whole clip continuously; the block length never changes the decoded audio."""
    rng = np.random.default_rng(5)
    x = np.stack([*signals(rng).values(), *fsdd_speech(8)])
    whole = adpcm.roundtrip(x)
    for block, n in ((2, 3001), (320, 8000), (1001, SR)):
        enc = adpcm.encode(x[:, :n], block)
        np.testing.assert_array_equal(adpcm.decode(enc), whole[:, :n])
        np.testing.assert_array_equal(adpcm.decode_continuous(enc), whole[:, :n])
        sizes = [enc.block_len(b) for b in range(enc.n_blocks)]
        assert sizes[-1] == n - (enc.n_blocks - 1) * block
        for c in (0, len(x) - 1):
            blocks = adpcm.clip_blocks(enc, c)
            assert blocks == adpcm.encode_blocks(x[c, :n], block)
            np.testing.assert_array_equal(adpcm.decode_blocks(blocks, sizes), whole[c, :n])
    np.testing.assert_array_equal(adpcm.roundtrip(x[3]), whole[3])


def test_block_format_byte_by_byte() -> None:
    """predictor i16 LE, step index u8, reserved 0, codes low nibble first; 4 + ceil(n/2) bytes."""
    x = np.array([-300, -1000, -3000, -6000, 30000, -32768, 12], np.int16)
    enc = adpcm.encode(x, 4)
    codes, _, _ = ref_encode(x.tolist())
    b0, b1 = adpcm.clip_blocks(enc, 0)
    assert b0[:4] == b"\x00\x00\x00\x00"
    assert b0[4:] == bytes([codes[0] | codes[1] << 4, codes[2] | codes[3] << 4])
    _, p, i = ref_encode(x[:4].tolist())
    assert b1[:4] == struct.pack("<hBB", p, i, 0) and p < 0 and i > 0
    assert b1[4:] == bytes([codes[4] | codes[5] << 4, codes[6]])
    assert [len(b0), len(b1)] == [adpcm.block_bytes(4), adpcm.block_bytes(3)] == [6, 6]
    assert adpcm.block_codes(b1, 3)[:2] == (p, i)
    with pytest.raises(ValueError, match="6 bytes"):
        adpcm.decode_block(b1 + b"\0", 3)
    with pytest.raises(ValueError, match="int16"):
        adpcm.encode(x.astype(np.int32), 4)


def test_header_index_above_88_decodes_as_88() -> None:
    block = struct.pack("<hBB", 100, 200, 0) + bytes([0x37, 0xF9])
    same = struct.pack("<hBB", 100, 88, 0) + bytes([0x37, 0xF9])
    np.testing.assert_array_equal(adpcm.decode_block(block, 4), adpcm.decode_block(same, 4))
    assert adpcm.decode_block(same, 4).tolist() == ref_decode([7, 3, 9, 15], 100, 88)


def test_on_wire_each_batches_without_changing_a_sample() -> None:
    """The evaluators' path: raw is the input itself; adpcm equals `roundtrip` clip by clip,
    whatever the batching, in order."""
    rng = np.random.default_rng(6)
    x = np.stack(list(signals(rng, 800).values()))
    parts = [x[:3], x[3:4], x[4:9], x[9:]]
    raw = list(adpcm.on_wire_each(parts, "raw"))
    assert all(a is b for a, b in zip(raw, parts, strict=True))
    want = adpcm.roundtrip(x)
    for batch in (1, 4, 2048):
        got = list(adpcm.on_wire_each(iter(parts), "adpcm", batch=batch))
        assert [len(g) for g in got] == [len(p) for p in parts]
        np.testing.assert_array_equal(np.concatenate(got), want)
    np.testing.assert_array_equal(adpcm.on_wire(x[0], "adpcm"), want[0])
    with pytest.raises(ValueError, match="raw, adpcm"):
        adpcm.on_wire(x, "mp3")


def test_speech_is_reproduced_closely() -> None:
    """Not bit-exactness (that is above) but a sanity bound on the codec's quality: on speech
    (FSDD when present, the speech-like clips otherwise) the pooled SNR is above 20 dB
    (docs/numeric.md §8 measures about 30 dB median per FSDD clip)."""
    rng = np.random.default_rng(9)
    x = np.stack(fsdd_speech(16) or [_voiced(rng, SR) for _ in range(8)])
    x = x.clip(-32768, 32767).astype(np.int16)
    err = adpcm.roundtrip(x).astype(np.float64) - x
    snr = 10 * np.log10((x.astype(np.float64) ** 2).sum() / (err**2).sum())
    assert snr > 20.0, snr


# ------------------------------------------------------------------------- host-compiled C

DRIVER = r"""
/* tests/codegen/base/test_adpcm.py: records "u32 n, ELT_ADPCM_BLOCK_BYTES(n) bytes" on stdin,
 * the decoded int16 samples of each on stdout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "elt_adpcm.h"
int main(void)
{
    uint32_t n;
    while (fread(&n, 4, 1, stdin) == 1) {
        const uint32_t bytes = ELT_ADPCM_BLOCK_BYTES(n);
        uint8_t *block = malloc(bytes);
        int16_t *out = malloc(sizeof(int16_t) * n);
        if (block == NULL || out == NULL || fread(block, 1, bytes, stdin) != bytes) {
            return 2;
        }
        elt_adpcm_decode(block, n, out);
        fwrite(out, sizeof(int16_t), n, stdout);
        free(block);
        free(out);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def host_decoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """firmware/elt_adpcm.c compiled for the host with ASan and UBSan (every block in its own
    exactly-sized heap buffer, so a read past the block is reported)."""
    out = tmp_path_factory.mktemp("adpcm_host")
    (out / "driver.c").write_text(DRIVER)
    fw = firmware_dir()
    exe = out / "adpcm_decode"
    subprocess.run(
        [
            find_tool("cc"),
            *COMMON_CFLAGS,
            "-O2",
            "-g",
            "-fno-omit-frame-pointer",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            f"-I{fw}",
            str(out / "driver.c"),
            str(fw / "elt_adpcm.c"),
            "-o",
            str(exe),
        ],
        check=True,
    )
    return exe


def c_decode(exe: Path, blocks: list[bytes], sizes: list[int]) -> list[np.ndarray]:
    data = b"".join(struct.pack("<I", n) + b for b, n in zip(blocks, sizes, strict=True))
    proc = subprocess.run([str(exe)], input=data, capture_output=True, check=True)
    flat = np.frombuffer(proc.stdout, np.int16)
    assert flat.size == sum(sizes)
    return np.split(flat, np.cumsum(sizes)[:-1])


def corner_blocks(rng: np.random.Generator) -> tuple[list[bytes], list[int]]:
    """Random blocks (any header, a step index up to 255, any codes) and the clamp corners:
    the rails with the largest step and codes that push past them, n = 1 and odd n."""
    blocks, sizes = [], []
    for n in (1, 2, 3, 5, 16, 31, 64, 333, 1000, 1001):
        for _ in range(8):
            blocks.append(rng.integers(0, 256, adpcm.block_bytes(n), dtype=np.uint8).tobytes())
            sizes.append(n)
    for p, idx, code in ((32767, 88, 0x7), (-32768, 88, 0xF), (32767, 88, 0xF), (0, 0, 0x8)):
        for n in (1, 2, 7, 200):
            byte = code | code << 4
            blocks.append(struct.pack("<hBB", p, idx, 0) + bytes([byte]) * ((n + 1) // 2))
            sizes.append(n)
    return blocks, sizes


def test_host_c_equals_python(host_decoder: Path) -> None:
    """Random blocks and clamp corners against decode_block; blocks of encoded speech-like
    clips, every corner signal and FSDD speech when present (blocks of 1000, 999 and 1
    samples) against the clip's vectorised decode: the C decoder equals Python byte for byte."""
    rng = np.random.default_rng(11)
    blocks, sizes = corner_blocks(rng)
    got = c_decode(host_decoder, blocks, sizes)
    for j, (b, n) in enumerate(zip(blocks, sizes, strict=True)):
        np.testing.assert_array_equal(got[j], adpcm.decode_block(b, n), err_msg=f"block {j}")
    seen = np.concatenate(got)
    # every (step index, code) of the table, from the middle and from both rails
    one = [
        (struct.pack("<hBB", p, i, 0) + bytes([c]), p, i, c)
        for p in (0, 32767, -32768)
        for i in range(89)
        for c in range(16)
    ]
    got = c_decode(host_decoder, [b for b, *_ in one], [1] * len(one))
    for (b, p, i, c), g in zip(one, got, strict=True):
        assert g.tolist() == ref_decode([c], p, i) == adpcm.decode_block(b, 1).tolist(), (p, i, c)
    clips = np.stack([*signals(rng).values(), *fsdd_speech(20)])
    for block, n in ((1000, SR), (999, SR), (1, 64)):
        enc = adpcm.encode(clips[:, :n], block)
        want = adpcm.decode(enc)
        for c in range(enc.n_clips):
            out = c_decode(
                host_decoder,
                adpcm.clip_blocks(enc, c),
                [enc.block_len(b) for b in range(enc.n_blocks)],
            )
            np.testing.assert_array_equal(np.concatenate(out), want[c], err_msg=f"clip {c}")
        seen = np.concatenate([seen, want.reshape(-1)])
    assert (seen == 32767).any() and (seen == -32768).any()


# --------------------------------------------------------------------------- QEMU, Cortex-A9


@pytest.mark.qemu
def test_arm_build_equals_python_and_costs_under_ten_instructions_a_sample(
    tmp_path: Path,
) -> None:
    """The Cortex-A9 build (its flags, codegen/target/cores.py) under QEMU -icount: every decoded
    sample equals the Python decoder, and one second of speech-like audio decodes in < 1.2 ticks
    a sample (about ten guest instructions a tick, docs/targets.md §4; the loop is 17
    instructions for two samples, docs/numeric.md §8)."""
    from elatta_measure.bench_adpcm import run_adpcm_probe

    rng = np.random.default_rng(12)
    blocks, sizes = corner_blocks(rng)
    blocks, sizes = blocks[::5], sizes[::5]
    speech = adpcm.encode(_voiced(rng, SR).clip(-32768, 32767).astype(np.int16), SR)
    blocks.append(adpcm.clip_blocks(speech, 0)[0])
    sizes.append(SR)
    run = run_adpcm_probe(blocks, sizes, tmp_path)
    for j, (b, n) in enumerate(zip(blocks, sizes, strict=True)):
        np.testing.assert_array_equal(run.samples[j], adpcm.decode_block(b, n), err_msg=str(j))
    assert run.ticks[-1] / SR < 1.2, run.ticks[-1]
