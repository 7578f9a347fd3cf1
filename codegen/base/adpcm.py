"""IMA ADPCM for audio on the serial link: 4 bits a sample, encoded by the host and decoded
identically by the firmware (``firmware/elt_adpcm.c``) and by this module (docs/numeric.md §8).

The codec is the IMA reference algorithm (IMA Digital Audio Focus and Technical Working Groups,
"Recommended Practices for Enhancing Digital Audio Compatibility in Multimedia Systems",
rev. 3.00, 1992, the ADPCM section): the 89-entry step table `STEP_TABLE`, the 16-entry index
table `INDEX_TABLE`, the decoder's difference computed by shifts and adds
(``step >> 3`` plus ``step``, ``step >> 1``, ``step >> 2`` for code bits 2, 1, 0), the predictor
clamped to int16 and the step index to 0 … 88. The encoder is the reference encoder: it picks
each code bit by comparing the remaining difference with the same three step parts and adds the
same parts to its own predictor, so its predictor is the decoder's output sample for sample.
Every clip starts from the reference's initial state, predictor 0 and step index 0.

Block format (what one AUDIO payload of the link carries; ``block_bytes(n)`` bytes)::

    offset 0  predictor   i16 little-endian  the encoder's predictor before the block's first sample
    offset 2  step_index  u8                 the encoder's step index there (0 … 88)
    offset 3  reserved    u8                 0
    offset 4  codes       ceil(n / 2) bytes  sample i's 4-bit code: the low nibble of byte i // 2
                                             for even i, the high nibble for odd i

The nibble order is the one of Microsoft's IMA ADPCM WAV format (low nibble first); unlike that
format, the header's predictor is not itself an output sample: n codes give n samples. n is the
caller's (the payload length tells it): even, except possibly for a clip's last block. Because
the header carries the encoder's state at the block's start, every block decodes on its own and
the samples equal those of decoding the whole clip continuously; the block length therefore
never changes the decoded audio (`roundtrip` needs none). A decoder given a step index above 88
uses 88 (the encoder never writes one; the firmware must not index past its table).

Vectorised across clips: the per-sample recursion runs as a Python loop over samples with numpy
over the clip axis, so 2,000 one-second clips encode in a few seconds. Both directions read the
reference's arithmetic from tables made once for every (step index, code) pair (`CODE_PARTS`,
`CODE_DIFF`, `CODE_NEXT`), as the firmware does; tests/codegen/base/test_adpcm.py checks the
encoder and the decoder against audioop and against a scalar transcription of the reference, the
tables exhaustively.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# The IMA step-size table (the recommended practice's ADPCM section): 89 entries, roughly
# 7 * 1.1^i, ending at 32767.
STEP_TABLE: tuple[int, ...] = (
    7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 19, 21, 23, 25, 28, 31, 34, 37, 41, 45,
    50, 55, 60, 66, 73, 80, 88, 97, 107, 118, 130, 143, 157, 173, 190, 209, 230, 253, 279, 307,
    337, 371, 408, 449, 494, 544, 598, 658, 724, 796, 876, 963, 1060, 1166, 1282, 1411, 1552,
    1707, 1878, 2066, 2272, 2499, 2749, 3024, 3327, 3660, 4026, 4428, 4871, 5358, 5894, 6484,
    7132, 7845, 8630, 9493, 10442, 11487, 12635, 13899, 15289, 16818, 18500, 20350, 22385,
    24623, 27086, 29794, 32767,
)  # fmt: skip
# The IMA index table: the step index change after a code (its magnitude bits; the sign bit 8
# does not matter).
INDEX_TABLE: tuple[int, ...] = (-1, -1, -1, -1, 2, 4, 6, 8, -1, -1, -1, -1, 2, 4, 6, 8)
INDEX_MAX = len(STEP_TABLE) - 1  # 88
HEADER_BYTES = 4


def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reference's arithmetic for every (step index i, code c), flattened as 16 i + c:
    (the magnitude parts the encoder compares with [89, 8], the decoder's signed difference,
    the next step index). The decoder's difference is step >> 3 plus the parts of c's bits 2, 1
    and 0 (step, step >> 1, step >> 2), negated by bit 3; the next index is clamped to 0 … 88."""
    step = np.array(STEP_TABLE, np.int64)[:, None]
    c = np.arange(16)[None, :]
    part = np.where(c & 4, step, 0) + np.where(c & 2, step >> 1, 0) + np.where(c & 1, step >> 2, 0)
    diff = np.where(c & 8, -1, 1) * ((step >> 3) + part)
    nxt = np.clip(np.arange(len(STEP_TABLE))[:, None] + np.array(INDEX_TABLE)[None, :], 0, 88)
    return part[:, :8].astype(np.int32), diff.reshape(-1).astype(np.int32), nxt.reshape(-1)


# CODE_PARTS[i, m]: the sum of the step parts of magnitude m (0 … 7) at index i. The parts are
# superincreasing (step > (step >> 1) + (step >> 2), step >> 1 > step >> 2 for every step >= 7),
# so the reference encoder's three compare-and-subtract steps pick the largest m whose parts fit
# in |difference|: m = #{m' in 1 … 7 : CODE_PARTS[i, m'] <= |difference|}. CODE_DIFF and
# CODE_NEXT at 16 i + c are the decoder's step; firmware/elt_adpcm.c packs both in one word.
CODE_PARTS, CODE_DIFF, CODE_NEXT = _tables()
_PARTS_POS = np.ascontiguousarray(CODE_PARTS[:, 1:])


I16 = npt.NDArray[np.int16]


def block_bytes(n: int) -> int:
    """Bytes of a block of ``n`` samples: the 4-byte header and ceil(n / 2) code bytes."""
    if n < 1:
        raise ValueError(f"a block holds at least one sample, got n = {n}")
    return HEADER_BYTES + (n + 1) // 2


@dataclass(frozen=True)
class AdpcmClips:
    """Clips encoded in blocks of ``block`` samples (the last block of a clip may be shorter).

    ``codes`` uint8 [clips, samples] (each 0 … 15); ``predictor`` int16 and ``step_index`` uint8
    [clips, blocks]: the encoder's state before each block's first sample, the block headers.
    """

    codes: npt.NDArray[np.uint8]
    predictor: I16
    step_index: npt.NDArray[np.uint8]
    block: int

    def __post_init__(self) -> None:
        n, s = self.codes.shape
        if self.block < 1:
            raise ValueError(f"block must be >= 1 sample, got {self.block}")
        want = (n, -(-s // self.block))
        if self.predictor.shape != want or self.step_index.shape != want:
            raise ValueError(
                f"headers must have shape {want}, got {self.predictor.shape} and "
                f"{self.step_index.shape}"
            )

    @property
    def n_clips(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_samples(self) -> int:
        return int(self.codes.shape[1])

    @property
    def n_blocks(self) -> int:
        return int(self.predictor.shape[1])

    def block_len(self, b: int) -> int:
        """Samples in block ``b``."""
        return min(self.block, self.n_samples - b * self.block)


def _clips(pcm: npt.ArrayLike) -> I16:
    x = np.asarray(pcm)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"pcm must be int16 [samples] or [clips, samples], got {x.shape}")
    if x.dtype != np.int16:
        raise ValueError(f"pcm must be int16, got {x.dtype}")
    return x


def encode(
    pcm: npt.ArrayLike, block: int, start: tuple[npt.ArrayLike, npt.ArrayLike] | None = None
) -> AdpcmClips:
    """Encode int16 clips [clips, samples] (or one clip [samples]) with the IMA reference encoder,
    each clip from predictor 0 and step index 0 (or from ``start``: each clip's predictor and
    step index, the pieces of a stream coded on their own), recording the state at every block
    start."""
    x = _clips(pcm).astype(np.int32)
    if block < 1:
        raise ValueError(f"block must be >= 1 sample, got {block}")
    n, s = x.shape
    n_blocks = -(-s // block)
    codes = np.zeros((n, s), np.uint8)
    pred_hdr = np.zeros((n, n_blocks), np.int16)
    index_hdr = np.zeros((n, n_blocks), np.uint8)
    p = np.zeros(n, np.int32)
    idx = np.zeros(n, np.int64)
    if start is not None:
        p0, i0 = np.asarray(start[0], np.int64), np.asarray(start[1], np.int64)
        if p0.shape != (n,) or i0.shape != (n,) or p0.min() < -32768 or p0.max() > 32767:
            raise ValueError(f"start must be {n} int16 predictors and {n} step indices")
        if i0.min() < 0 or i0.max() > INDEX_MAX:
            raise ValueError(f"start step indices must be in 0 … {INDEX_MAX}")
        p, idx = p0.astype(np.int32), i0
    for i in range(s):
        if i % block == 0:
            pred_hdr[:, i // block] = p
            index_hdr[:, i // block] = idx
        diff = x[:, i] - p
        mag = (np.abs(diff)[:, None] >= _PARTS_POS[idx]).sum(axis=1)
        e = 16 * idx + mag + 8 * (diff < 0)
        p = np.minimum(np.maximum(p + CODE_DIFF[e], -32768), 32767)
        idx = CODE_NEXT[e]
        codes[:, i] = e & 15
    return AdpcmClips(codes, pred_hdr, index_hdr, block)


def _decode(
    codes: npt.NDArray[np.uint8], pred: npt.ArrayLike, index: npt.ArrayLike, block: int
) -> I16:
    """Decode codes [clips, samples]; before sample i with i % block == 0 the state is the
    header (pred, index)[:, i // block] (a step index above 88 taken as 88)."""
    n, s = codes.shape
    heads_p = np.asarray(pred, np.int32).reshape(n, -1)
    heads_i = np.minimum(np.asarray(index, np.int64).reshape(n, -1), INDEX_MAX)
    p = heads_p[:, 0]
    idx = heads_i[:, 0]
    out = np.zeros((n, s), np.int16)
    c = codes.astype(np.int64)
    for i in range(s):
        if i % block == 0:
            p, idx = heads_p[:, i // block], heads_i[:, i // block]
        e = 16 * idx + c[:, i]
        p = np.minimum(np.maximum(p + CODE_DIFF[e], -32768), 32767)
        idx = CODE_NEXT[e]
        out[:, i] = p
    return out


def decode(enc: AdpcmClips) -> I16:
    """int16 PCM [clips, samples], each block decoded from its own header (as the device does)."""
    return _decode(enc.codes, enc.predictor, enc.step_index, enc.block)


def decode_continuous(enc: AdpcmClips) -> I16:
    """int16 PCM [clips, samples] from the first header only, through every block boundary."""
    return _decode(enc.codes, enc.predictor[:, :1], enc.step_index[:, :1], enc.n_samples)


def roundtrip(pcm: npt.ArrayLike) -> I16:
    """The samples the device computes on when the host sends ``pcm`` as ADPCM: decode(encode),
    in the input's shape. Independent of the block length (module docstring)."""
    x = _clips(pcm)
    enc = encode(x, x.shape[1])
    out = decode(enc)
    return out.reshape(np.shape(pcm))


def clip_blocks(enc: AdpcmClips, clip: int) -> list[bytes]:
    """Clip ``clip`` as its blocks in the block format, in order."""
    out = []
    for b in range(enc.n_blocks):
        n = enc.block_len(b)
        c = enc.codes[clip, b * enc.block : b * enc.block + n]
        if n % 2:
            c = np.append(c, np.uint8(0))
        packed = (c[0::2] | (c[1::2] << 4)).astype(np.uint8)
        head = int(enc.predictor[clip, b]).to_bytes(2, "little", signed=True)
        out.append(head + bytes([int(enc.step_index[clip, b]), 0]) + packed.tobytes())
    return out


def encode_blocks(clip: npt.ArrayLike, block: int) -> list[bytes]:
    """One int16 clip [samples] as the blocks the host sends, ``block`` samples each (the last
    one shorter when ``block`` does not divide the clip)."""
    x = np.asarray(clip)
    if x.ndim != 1:
        raise ValueError(f"encode_blocks takes one clip [samples], got shape {x.shape}")
    return clip_blocks(encode(x, block), 0)


def block_codes(block: bytes, n: int) -> tuple[int, int, npt.NDArray[np.uint8]]:
    """(predictor, step index as written, codes [n]) of one block of ``n`` samples."""
    if len(block) != block_bytes(n):
        raise ValueError(f"a block of {n} samples is {block_bytes(n)} bytes, got {len(block)}")
    raw = np.frombuffer(block, np.uint8, offset=HEADER_BYTES)
    codes = np.empty(2 * raw.size, np.uint8)
    codes[0::2] = raw & 15
    codes[1::2] = raw >> 4
    return int.from_bytes(block[:2], "little", signed=True), block[2], codes[:n]


def decode_block(block: bytes, n: int) -> I16:
    """int16 [n]: one block decoded on its own, the computation of ``elt_adpcm_decode``."""
    p, idx, codes = block_codes(block, n)
    return _decode(codes[None, :], [p], [idx], n)[0]


def decode_blocks(blocks: Sequence[bytes], sizes: Sequence[int]) -> I16:
    """int16 [sum(sizes)]: blocks of ``sizes`` samples decoded one by one and concatenated."""
    if len(blocks) != len(sizes):
        raise ValueError(f"{len(blocks)} blocks but {len(sizes)} sizes")
    parts = [decode_block(b, n) for b, n in zip(blocks, sizes, strict=True)]
    return np.concatenate(parts) if parts else np.zeros(0, np.int16)


# How the host sends audio on the link: int16 PCM as it is, or IMA ADPCM blocks.
WIRES: tuple[str, ...] = ("raw", "adpcm")


def on_wire(pcm: npt.ArrayLike, wire: str) -> I16:
    """The int16 samples the device computes on when the host sends ``pcm`` over ``wire``:
    ``pcm`` itself for "raw", `roundtrip` for "adpcm"."""
    if wire not in WIRES:
        raise ValueError(f"wire {wire!r}: use one of {', '.join(WIRES)}")
    x = np.asarray(pcm)
    if x.dtype != np.int16:
        raise ValueError(f"pcm must be int16, got {x.dtype}")
    return x if wire == "raw" else roundtrip(x)


def on_wire_each(parts: Iterable[npt.ArrayLike], wire: str, batch: int = 2048) -> Iterator[I16]:
    """`on_wire` of each array of clips [n_i, samples] (same samples), yielded in order. For
    "adpcm" up to ``batch`` clips are coded together: the per-sample loop costs about the same
    for one clip as for two thousand. For "raw" each part is yielded as soon as it arrives."""
    pending: list[I16] = []
    count = 0

    def flush() -> Iterator[I16]:
        whole = on_wire(np.concatenate(pending), wire)
        yield from np.split(whole, np.cumsum([len(x) for x in pending])[:-1])

    for part in parts:
        x = np.asarray(part)
        if wire == "raw":
            yield on_wire(x, wire)
            continue
        pending.append(x)
        count += len(x)
        if count >= batch:
            yield from flush()
            pending, count = [], 0
    if pending:
        yield from flush()
