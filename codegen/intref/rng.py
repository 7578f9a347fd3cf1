"""Uniform and Gaussian random numbers, bit-exact twin of ``firmware/elt_rng.c`` (docs/cmaes.md §4).

* **Seeding** (per sample, so results do not depend on order or device; docs/numeric.md §5.3): the
  base seed is mixed once by splitmix64, the key is xor-ed with the 32-bit sample id, and the next
  eight splitmix64 outputs fill the four words of each of four xoshiro128** lanes (two outputs a
  lane, lane 0 first, low half first)::

      key = splitmix64(seed)            # first output of a splitmix64 stream at state = seed
      st  = key ^ sample_id
      for lane l = 0..3:  s0 | s1 << 32 = splitmix64 next(st);  s2 | s3 << 32 = splitmix64 next(st)

  splitmix64's output function is a bijection of its counter, so two consecutive outputs are
  never both zero and no lane's state is all-zero.
* **Uniforms**: four xoshiro128** lanes (Blackman & Vigna), 32-bit xor/shift/rotate and ×5, ×9
  only, drawn in blocks (one CMA-ES iteration's λ·k): draw j of a block is lane j mod 4's output
  at its step j div 4; every lane takes ceil(n/4) steps and the outputs past n are dropped. The
  four lanes are one NEON step on the device (``elt_sample_draw``).
* **Normals** (`gauss_from_u32`): one 32-bit draw u per normal. Bit 31 is the sign;
  v' = 2·(u & 0x7fff_ffff) + 1 is odd, t = v'/2³² ∈ (0, 1). The octave o = CLZ(v') ∈ [0, 31];
  the normalised mantissa v'·2^o gives a 5-bit segment (bits 30..26) and a 16-bit
  interpolation fraction (bits 25..10).
  |z| = T[o][s] + round((T[o][s+1] − T[o][s])·f / 2¹⁶), Q3.28, T = `tables.GAUSS_LUT`.

All functions work on numpy arrays over a batch of independent generators (one per sample), which
is how the reference stays fast; every lane advances exactly as the C ``elt_rng_t`` does.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from codegen.base.fixed import rshift_round
from codegen.base.tables import GAUSS_LUT, GAUSS_SEGMENTS

U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _u64(x: int) -> np.uint64:
    return np.uint64(x & 0xFFFF_FFFF_FFFF_FFFF)


def splitmix64_next(state: U64) -> tuple[U64, U64]:
    """One splitmix64 step on an array of states: (new state, output). Mod 2⁶⁴ arithmetic."""
    st = (state + _GOLDEN).astype(np.uint64)
    z = st.copy()
    z = ((z ^ (z >> np.uint64(30))) * _M1).astype(np.uint64)
    z = ((z ^ (z >> np.uint64(27))) * _M2).astype(np.uint64)
    return st, (z ^ (z >> np.uint64(31))).astype(np.uint64)


LANES = 4  # xoshiro128** lanes of one sample's generator (ELT_RNG_LANES)


class Xoshiro128ss:
    """A batch of four-lane xoshiro128** generators (``elt_rng_t``), one per sample id; the words
    s0..s3 are [batch, lane] arrays."""

    __slots__ = ("s0", "s1", "s2", "s3")

    def __init__(self, seed: int, sample_ids: npt.ArrayLike) -> None:
        """``elt_rng_seed``: key = splitmix64(seed); st = key ^ id; two outputs a lane."""
        if not 0 <= int(seed) < 2**64:
            raise ValueError(f"seed={seed} must be in [0, 2^64)")
        ids = np.asarray(sample_ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= 2**32):
            raise ValueError("sample ids must be in [0, 2^32)")
        mask = np.uint64(0xFFFF_FFFF)
        words: list[list[U32]] = [[], [], [], []]
        with np.errstate(over="ignore"):
            _, key = splitmix64_next(np.array([_u64(int(seed))], dtype=np.uint64))
            st = (key ^ ids.astype(np.uint64)).astype(np.uint64)
            for _ in range(LANES):
                st, a = splitmix64_next(st)
                st, b = splitmix64_next(st)
                for w, v in enumerate((a & mask, a >> np.uint64(32), b & mask, b >> np.uint64(32))):
                    words[w].append(v.astype(np.uint32))
        self.s0, self.s1, self.s2, self.s3 = (np.stack(ws, axis=1) for ws in words)

    @property
    def size(self) -> int:
        return int(self.s0.shape[0])

    def step(self) -> U32:
        """One step of every lane: xoshiro128** output, then the state update (Blackman & Vigna);
        [batch, lane]."""
        s0, s1, s2, s3 = self.s0, self.s1, self.s2, self.s3
        with np.errstate(over="ignore"):
            r = _rotl(s1 * np.uint32(5), 7) * np.uint32(9)
            t = s1 << np.uint32(9)
        s2 = s2 ^ s0
        s3 = s3 ^ s1
        s1 = s1 ^ s2
        s0 = s0 ^ s3
        s2 = s2 ^ t
        s3 = _rotl(s3, 11)
        self.s0, self.s1, self.s2, self.s3 = s0, s1, s2, s3
        return r.astype(np.uint32)

    def block_u32(self, n: int) -> U32:
        """``elt_rng_block_u32``: a block of n uniforms, draw j from lane j mod 4 at its step
        j div 4; ceil(n/4) steps of every lane; [batch, n]."""
        steps = -(-int(n) // LANES)
        u = np.empty((self.size, steps, LANES), dtype=np.uint32)
        for i in range(steps):
            u[:, i] = self.step()
        return u.reshape(self.size, steps * LANES)[:, :n]

    def gauss_block(self, shape: tuple[int, ...]) -> I64:
        """``elt_rng_gauss_block``: one block of normals in draw order (C order over ``shape``,
        e.g. one iteration's (λ, k)): [B, *shape]."""
        n = int(np.prod(shape)) if shape else 1
        return gauss_from_u32(self.block_u32(n)).reshape((self.size, *shape))

    def gauss_blocks(self, blocks: int, shape: tuple[int, ...]) -> I64:
        """``blocks`` consecutive blocks of ``shape`` (every iteration of a search):
        [B, blocks, *shape]."""
        return np.stack([self.gauss_block(shape) for _ in range(blocks)], axis=1)


def _rotl(x: U32, r: int) -> U32:
    return ((x << np.uint32(r)) | (x >> np.uint32(32 - r))).astype(np.uint32)


def clz32(v: U32) -> I64:
    """Count of leading zeros of non-zero uint32 values (ARM CLZ); frexp is exact below 2⁵³."""
    _, e = np.frexp(np.asarray(v, dtype=np.float64))
    return (32 - e).astype(np.int64)


def gauss_from_u32(u: U32) -> I64:
    """Map 32-bit uniforms to Q3.28 normals through the octave table (docs/cmaes.md §4)."""
    u = np.asarray(u, dtype=np.uint32)
    v = ((u & np.uint32(0x7FFF_FFFF)) << np.uint32(1)) | np.uint32(1)  # odd, t = v/2^32 ∈ (0,1)
    o = clz32(v)  # octave: t ∈ [2^-(o+1), 2^-o)
    mn = (v.astype(np.uint64) << o.astype(np.uint64)).astype(np.int64)  # leading one at bit 31
    seg = (mn >> 26) & (GAUSS_SEGMENTS - 1)
    frac = (mn >> 10) & 0xFFFF
    a = GAUSS_LUT[o, seg]
    b = GAUSS_LUT[o, seg + 1]
    mag = a + rshift_round((b - a) * frac, 16)
    return np.where((u >> np.uint32(31)) != 0, -mag, mag).astype(np.int64)
