"""Golden vectors of the ELaTTA random streams (docs/cmaes.md §4, §7b.1): splitmix64 seeding,
four xoshiro128** lanes drawn in blocks, the Gaussian octave table and 1e6 normals, equal in C
and Python."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from intharness.driver import Harness, shared_harness
from scipy.special import ndtri

from codegen.base.tables import (
    EXP2_LUT,
    GAUSS_FRAC,
    GAUSS_LUT,
    LOG2_LUT,
    table_hash,
)
from codegen.intref.rng import LANES, Xoshiro128ss, gauss_from_u32, splitmix64_next

# Golden values (computed once by this reference and checked against the C build below).
GAUSS_LUT_SHA256 = "905bb827b8aed953d2826a0acdb077871b1827567be4e75bbefe59ff80486580"
EXP2_LUT_SHA256 = "21c50821b132c0a124613b2ee76cac286c1cb8148ed63fb62a3763910318da50"
LOG2_LUT_SHA256 = "4b753a068ac6a6d9b35ea9d127e23d910098e83db07c96e0567113aaafcdd3dd"
# Lane 0's first outputs (its state is the single-stream seeding's: splitmix64 outputs 1 and 2)
XOSHIRO_SEED0_ID0 = [
    0x1A70A2A9,
    0x57C0A5A3,
    0x720CD457,
    0x5B91CA8B,
    0x6EC4187B,
    0x70E93B99,
    0xD351E8CB,
    0x6014F20F,
]
XOSHIRO_DEADBEEF_ID7 = [0x1B3F1FB2, 0x9A7C55CD, 0x1A0EEBBC, 0xA96B65FD]
XOSHIRO_MAX_MAX = [0x19791CFF, 0xF061AC56, 0x214A83FC, 0xF3D23285]
# 1000 generators (seed 20260101, ids 0..999) x one block of 1000 normals, int32 little-endian,
# generator-major
NORMALS_1E6_SHA256 = "58eb61ecbbc5228774a8c426b410e1cfe1de12836eee41176b198f74b165ff1a"
NORMALS_SEED = 20260101


@pytest.fixture(scope="module")
def harness() -> Harness:
    return shared_harness()


def xoshiro_scalar(s: list[int], n: int) -> list[int]:
    """Blackman & Vigna's reference xoshiro128** (xoshiro128starstar.c), on Python ints."""
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    out = []
    s = list(s)
    for _ in range(n):
        out.append(rotl((s[1] * 5) & m, 7) * 9 & m)
        t = (s[1] << 9) & m
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 11)
    return out


def test_splitmix64_reference_value() -> None:
    # splitmix64 from state 0: the published first output (Vigna, splitmix64.c)
    _, out = splitmix64_next(np.array([0], dtype=np.uint64))
    assert int(out[0]) == 0xE220A8397B1DCDAF


def lane_state(r: Xoshiro128ss, lane: int) -> list[int]:
    return [int(w[0, lane]) for w in (r.s0, r.s1, r.s2, r.s3)]


def test_xoshiro_matches_reference_algorithm() -> None:
    r = Xoshiro128ss(0, [0])
    states = [lane_state(r, lane) for lane in range(LANES)]
    u = r.block_u32(4 * 64)[0]
    for lane in range(LANES):  # draw j of a block: lane j mod 4, its step j div 4
        assert [int(v) for v in u[lane::LANES]] == xoshiro_scalar(states[lane], 64)
    assert len({tuple(s) for s in states}) == LANES  # four different lanes
    r.s0, r.s1, r.s2, r.s3 = (np.full((1, LANES), v, np.uint32) for v in (1, 2, 3, 4))
    assert list(r.block_u32(4)[0]) == [11520] * LANES  # rotl(2*5, 7)*9


def test_block_drops_the_outputs_past_its_end() -> None:
    whole = Xoshiro128ss(5, [3]).block_u32(16)[0]
    r = Xoshiro128ss(5, [3])
    first = r.block_u32(6)[0]  # two steps of every lane, the last two outputs dropped
    second = r.block_u32(8)[0]
    np.testing.assert_array_equal(first, whole[:6])
    np.testing.assert_array_equal(second, whole[8:])


def test_golden_xoshiro_outputs() -> None:
    for seed, sid, gold in (
        (0, 0, XOSHIRO_SEED0_ID0),
        (0xDEADBEEF, 7, XOSHIRO_DEADBEEF_ID7),
        (2**64 - 1, 2**32 - 1, XOSHIRO_MAX_MAX),
    ):
        r = Xoshiro128ss(seed, [sid])
        assert [int(v) for v in r.block_u32(LANES * len(gold))[0, ::LANES]] == gold


def test_streams_depend_only_on_seed_and_id() -> None:
    ids = np.array([5, 17, 2**32 - 1, 0])
    batch = Xoshiro128ss(3, ids).gauss_block((50,))
    for j, sid in enumerate(ids):
        np.testing.assert_array_equal(Xoshiro128ss(3, [sid]).gauss_block((50,))[0], batch[j])
    assert not np.array_equal(Xoshiro128ss(4, [5]).gauss_block((50,))[0], batch[0])


def test_table_hashes() -> None:
    assert table_hash(GAUSS_LUT) == GAUSS_LUT_SHA256
    assert table_hash(EXP2_LUT) == EXP2_LUT_SHA256
    assert table_hash(LOG2_LUT) == LOG2_LUT_SHA256
    # octaves join continuously, magnitudes fall within an octave, t = 1 maps to 0
    np.testing.assert_array_equal(GAUSS_LUT[1:, -1], GAUSS_LUT[:-1, 0])
    assert np.all(np.diff(GAUSS_LUT, axis=1) < 0)
    assert GAUSS_LUT[0, -1] == 0


def test_gaussian_accuracy_and_moments() -> None:
    u = np.random.default_rng(0).integers(0, 2**32, 400_000, dtype=np.uint64).astype(np.uint32)
    z = gauss_from_u32(u) / 2.0**GAUSS_FRAC
    t = ((u.astype(np.uint64) & 0x7FFFFFFF) * 2 + 1).astype(np.float64) / 2.0**32
    exact = -ndtri(t / 2) * np.where(u >> 31, -1.0, 1.0)
    assert np.max(np.abs(z - exact)) < 6e-5  # docs/cmaes.md §4: 5e-5
    normals = Xoshiro128ss(1, np.arange(500)).gauss_block((2000,)) / 2.0**GAUSS_FRAC
    assert abs(normals.mean()) < 0.005
    assert abs(normals.var() - 1) < 0.005
    assert abs(np.mean(normals**4) / normals.var() ** 2 - 3) < 0.05
    # the extreme draws reach the table ends
    ends = gauss_from_u32(np.array([0x0, 0x80000000, 0x7FFFFFFF], dtype=np.uint32))
    assert ends[0] == GAUSS_LUT[31, 0] and ends[1] == -GAUSS_LUT[31, 0]
    assert abs(GAUSS_LUT[31, 0] / 2.0**GAUSS_FRAC - 6.3379) < 1e-3


def test_one_million_normals_hash_python() -> None:
    z = Xoshiro128ss(NORMALS_SEED, np.arange(1000)).gauss_block((1000,))
    assert hashlib.sha256(z.astype("<i4").tobytes()).hexdigest() == NORMALS_1E6_SHA256


def test_c_uniforms_equal_python(harness: Harness) -> None:
    for seed, ids in ((0, [0, 1, 2, 2**32 - 1]), (0xDEADBEEF, [7]), (2**64 - 1, [2**32 - 1])):
        c = harness.rng(seed, ids, 256)
        np.testing.assert_array_equal(c, Xoshiro128ss(seed, ids).block_u32(256))
        # a block whose end is not a step's: ceil(n / 4) steps of every lane, the rest dropped
        np.testing.assert_array_equal(
            harness.rng(seed, ids, 7), Xoshiro128ss(seed, ids).block_u32(7)
        )
    assert list(harness.rng(0, [0], 32)[0, ::LANES]) == XOSHIRO_SEED0_ID0


def test_c_tables_and_one_million_normals(harness: Harness) -> None:
    exp2, log2, gauss = harness.tables(0)
    assert table_hash(exp2) == EXP2_LUT_SHA256
    assert table_hash(log2) == LOG2_LUT_SHA256
    assert table_hash(gauss) == GAUSS_LUT_SHA256
    c = harness.gauss(0, NORMALS_SEED, list(range(1000)), 1000)
    assert hashlib.sha256(c.astype("<i4").tobytes()).hexdigest() == NORMALS_1E6_SHA256
