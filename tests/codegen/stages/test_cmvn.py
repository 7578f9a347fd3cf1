"""Mode cmvn (continual input normalisation): the integer reference (codegen/stages/cmvn_int.py)
equals an independent Python-int reading of docs/adaptation.md's integer specification, the
firmware kernel (firmware/elt_cmvn_s16.c, host-compiled with UBSan) equals the reference on
every value, and the integer form tracks the float method (codegen.elatta.methods)."""

from __future__ import annotations

import ctypes
import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from elatta_measure.hostlib import HOST_CFLAGS, UBSAN_CFLAGS
from numpy.testing import assert_array_equal

from codegen.base.errors import ConfigError
from codegen.base.resources import firmware_dir
from codegen.elatta.methods import CmvnConfig, cmvn_normalised
from codegen.frontend.reader import parse_config
from codegen.stages.cmvn_int import CmvnParams, CmvnState, cmvn_int
from codegen.target.toolchain import find_tool, run_tool


def with_cmvn(q: Any, p: CmvnParams) -> Any:
    """The quantised model ``q`` with [cmvn]'s integer params ``p``."""
    return dataclasses.replace(q, stages={**q.stages, "cmvn": p})


def params(
    T: int,
    F: int,
    n: int,
    a: int,
    b: int,
    ca: int = 2,
    tau: float = 0.0,
    gate: float = 0.0,
    select_gate: float = 0.0,
    select_floor: float = 0.0,
    clip_floor: float = 0.0,
    clip_gate: float = 0.0,
    sa: int = -1,
    sb: int = -1,
) -> CmvnParams:
    fs = n + 8
    return CmvnParams(
        frames=T,
        features=F,
        x_frac=n,
        state_frac=fs,
        recip=round((1 << 22) / T),
        recip_shift=22,
        alpha_shift=a,
        weight_shift=b,
        vmin=max(1, round(1e-4 * (1 << fs))),
        gate_sum=round(gate * F * (1 << fs)),
        causal_alpha_shift=ca,
        causal_gate_sum=round(tau * F * (1 << fs)),
        select_gate_sum=round(select_gate * F * (1 << fs)),
        select_floor_sum=round(select_floor * F * (1 << fs)),
        select_clip_floor_sum=round(clip_floor * F * (1 << fs)),
        select_clip_gate_sum=round(clip_gate * F * (1 << fs)),
        select_alpha_shift=sa,
        select_weight_shift=sb,
    )


CASES = [params(49, 10, 11, 4, 2), params(49, 10, 11, 2, 2), params(98, 40, 8, 1, 0)]
CASES += [params(1, 3, 15, 15, 15), params(25, 13, 12, 3, 1)]
# mode cmvn's shift gate on the updated state, a low and a high threshold
CASES += [params(49, 10, 11, 1, 2, gate=0.75), params(49, 10, 11, 2, 2, gate=40.0)]


def rsr(x: int, s: int) -> int:
    return (x + (1 << (s - 1))) >> s if s > 0 else x << -s


def spec_clip(
    u: list[list[int]],
    p: CmvnParams,
    M: list[int],
    P: list[int],
    dists: list[int] | None = None,
    clip_dists: list[int] | None = None,
) -> list[list[int]]:
    """docs/adaptation.md "Integer specification", step by step in Python ints; the shift
    distance of the updated state is appended to ``dists``, the clip's own ("Round 6": the same
    sum over the clip's mean c1 and mean square c2) to ``clip_dists``."""
    fs = p.state_frac
    own = 0
    for f in range(p.features):
        c1, c2 = _spec_means(u, p, f)
        M[f] += rsr(c1 - M[f], p.alpha_shift)
        P[f] += rsr(c2 - P[f], p.alpha_shift)
        vc = max(c2 - rsr(c1 * c1, fs), p.vmin)
        own += rsr(c1 * c1, fs) + rsr((vc - (1 << fs)) ** 2, fs)
    V, dist = _spec_shift(p, M, P)
    if dists is not None:
        dists.append(dist)
    if clip_dists is not None:
        clip_dists.append(own)
    if p.gate_sum > 0 and dist < p.gate_sum:
        return [row[:] for row in u]
    return _spec_normalise(u, p, M, V)


def _spec_means(u: list[list[int]], p: CmvnParams, f: int) -> tuple[int, int]:
    """Steps 1–2: the clip's mean c1 and mean square c2 of coefficient f, Q.state_frac."""
    s1 = sum(row[f] for row in u)
    s2 = sum(row[f] ** 2 for row in u)
    c1 = rsr(s1 * p.recip, p.recip_shift - 8)
    c2 = min(max(rsr(s2 * p.recip, p.recip_shift + p.x_frac - 8), -(2**31)), 2**31 - 1)
    return c1, c2


def _spec_shift(p: CmvnParams, M: list[int], P: list[int]) -> tuple[list[int], int]:
    """Step 4's floored variances V of the state and its shift distance Σ M² + (V − 1)²."""
    fs = p.state_frac
    V = [max(P[f] - rsr(M[f] * M[f], fs), p.vmin) for f in range(p.features)]
    dist = sum(rsr(M[f] ** 2, fs) + rsr((V[f] - (1 << fs)) ** 2, fs) for f in range(p.features))
    return V, dist


def _spec_normalise(
    u: list[list[int]], p: CmvnParams, M: list[int], V: list[int]
) -> list[list[int]]:
    """Steps 5–7: offset w·M, gain 1/sqrt(1 − w + w·V) in Q14, applied to every frame."""
    fs, b = p.state_frac, p.weight_shift
    out = [row[:] for row in u]
    for f in range(p.features):
        d = (1 << fs) - ((1 << fs) >> b) + rsr(V[f], b)
        o = rsr(M[f], 8 + b)
        g = math.isqrt((1 << (28 + fs)) // d)
        for t, row in enumerate(u):
            c = min(max(row[f] - o, -32768), 32767)
            out[t][f] = min(max(rsr(c * g, 14), -32768), 32767)
    return out


def spec_causal_clip(
    u: list[list[int]], p: CmvnParams, M: list[int], P: list[int]
) -> list[list[int]]:
    """docs/adaptation.md "Audio mode: causal cmvn" in Python ints: normalise with the state
    before the clip when the shift gate is open, then update with causal_alpha_shift."""
    V, dist = _spec_shift(p, M, P)
    out = [row[:] for row in u]
    if p.causal_gate_sum == 0 or dist >= p.causal_gate_sum:
        out = _spec_normalise(u, p, M, V)
    for f in range(p.features):
        c1, c2 = _spec_means(u, p, f)
        M[f] += rsr(c1 - M[f], p.causal_alpha_shift)
        P[f] += rsr(c2 - P[f], p.causal_alpha_shift)
    return out


# causal cases: no gate, a gate that opens and closes over the clips below, a gate never open
CAUSAL = [params(49, 10, 11, 4, 2, 2, 0.0), params(49, 10, 11, 4, 2, 1, 0.75)]
CAUSAL += [params(25, 13, 12, 3, 1, 4, 40.0), params(98, 40, 8, 1, 0, 1, 2.0)]
CAUSAL += [params(1, 3, 15, 15, 15, 15, 0.5)]


def clips(p: CmvnParams, seed: int) -> np.ndarray:
    """Speech-like, loud, silent and full-scale clips, in an order that moves the statistics."""
    rng = np.random.default_rng(seed)
    T, F, one = p.frames, p.features, 1 << p.x_frac
    shape = (T, F)
    gauss = [np.clip(rng.normal(m, s, shape) * one, -32768, 32767) for m, s in ((0, 1), (2, 3))]
    fixed = [np.full(shape, v) for v in (32767, -32768, 0)]
    alt = np.where(np.indices(shape).sum(axis=0) % 2 == 0, 32767, -32768)
    uni = rng.integers(-32768, 32768, size=shape)
    return np.stack([*gauss, *fixed, alt, uni, *gauss]).astype(np.int16)


@pytest.mark.parametrize(
    "p",
    CASES,
    ids=lambda p: f"T{p.frames}F{p.features}n{p.x_frac}a{p.alpha_shift}b{p.weight_shift}",
)
def test_reference_equals_the_written_spec(p: CmvnParams) -> None:
    x = clips(p, 1)
    got, st = cmvn_int(x, p)
    M, P = [0] * p.features, [1 << p.state_frac] * p.features
    want = [spec_clip(clip.astype(int).tolist(), p, M, P) for clip in x]
    assert_array_equal(got, np.array(want))
    assert_array_equal(st.M, M)
    assert_array_equal(st.P, P)
    assert -(2**31) <= min(P) and max(P) < 2**31  # the device's int32 state


@pytest.mark.parametrize(
    "p",
    CAUSAL,
    ids=lambda p: f"T{p.frames}F{p.features}a{p.causal_alpha_shift}g{p.causal_gate_sum}",
)
def test_causal_reference_equals_the_written_spec(p: CmvnParams) -> None:
    x = clips(p, 1)
    got, st = cmvn_int(x, p, causal=True)
    M, P = [0] * p.features, [1 << p.state_frac] * p.features
    want = [spec_causal_clip(clip.astype(int).tolist(), p, M, P) for clip in x]
    assert_array_equal(got, np.array(want))
    assert_array_equal(st.M, M)
    assert_array_equal(st.P, P)


# mode cmvn_select's normalised run (ungated) and its own shift gate on the updated state: a
# threshold that fires on some of the clips below, one that never fires, and none
SELECT = [params(49, 10, 11, 1, 2, select_gate=0.75), params(49, 10, 11, 2, 2, select_gate=40.0)]
SELECT += [params(25, 13, 12, 3, 1), params(49, 10, 11, 1, 2, gate=0.75, select_gate=0.75)]
# and its shift floor ("Round 5"): one that some of the clips below reach and some not, one with
# the gate on too, and a high one
SELECT += [params(49, 10, 11, 1, 2, select_floor=0.75)]
SELECT += [params(49, 10, 11, 1, 2, select_gate=40.0, select_floor=0.75)]
SELECT += [params(49, 10, 11, 2, 2, select_floor=40.0)]
# and round 6's clip floor and clip gate on the clip's own distance: a clip floor that opens a
# floor some clips miss, a clip gate with the floor reached on some clips, both, and no floor
SELECT += [params(49, 10, 11, 1, 2, select_floor=40.0, clip_floor=1.0)]
SELECT += [params(49, 10, 11, 1, 2, select_floor=40.0, clip_gate=1.0)]
SELECT += [params(49, 10, 11, 1, 2, select_floor=40.0, clip_floor=1.0, clip_gate=2.0)]
SELECT += [params(25, 13, 12, 3, 1, select_gate=40.0, clip_gate=0.5)]
# the normalised run's own shifts ("Round 8"): a faster EMA and a stronger blend, a slower EMA
# and w = 1, with a floor and a gate on the run's own shift distance
SELECT += [params(49, 10, 11, 4, 2, select_floor=0.75, sa=1, sb=1)]
SELECT += [params(49, 10, 11, 1, 2, select_gate=0.75, clip_gate=1.0, sa=3, sb=0)]


@pytest.mark.parametrize(
    "p",
    SELECT,
    ids=lambda p: (
        f"a{p.alpha_shift}g{p.gate_sum}s{p.select_gate_sum}f{p.select_floor_sum}"
        f"cf{p.select_clip_floor_sum}cg{p.select_clip_gate_sum}"
        f"sa{p.select_alpha_shift}sb{p.select_weight_shift}"
    ),
)
def test_select_run_equals_the_written_spec(p: CmvnParams) -> None:
    """cmvn_select_int: every clip normalised as mode cmvn without its gate (gate_sum is
    ignored) and with the run's own shifts select_alpha_shift, select_weight_shift in place of
    alpha_shift, weight_shift ("Round 8"; the distances d too); floor_ok where the updated
    state's shift distance d reaches select_floor_sum ("Round 5") or the clip's own distance
    d_clip reaches select_clip_floor_sum ("Round 6");
    fired where d reaches select_gate_sum ("Round 4") or, with floor_ok, d_clip reaches
    select_clip_gate_sum ("Round 6"); each threshold 0 meaning none (docs/adaptation.md)."""
    from codegen.stages.cmvn_int import cmvn_select_int

    x = clips(p, 1)
    got, fired, floor_ok = cmvn_select_int(x, p)
    M, P = [0] * p.features, [1 << p.state_frac] * p.features
    dists: list[int] = []
    own: list[int] = []
    run = dataclasses.replace(
        p, gate_sum=0, alpha_shift=p.select_alpha_shift, weight_shift=p.select_weight_shift
    )
    want = [spec_clip(clip.astype(int).tolist(), run, M, P, dists, own) for clip in x]
    assert_array_equal(got, np.array(want))
    sg, sf = p.select_gate_sum, p.select_floor_sum
    cf, cg = p.select_clip_floor_sum, p.select_clip_gate_sum
    want_ok = [
        sf <= 0 or d >= sf or (cf > 0 and dc >= cf) for d, dc in zip(dists, own, strict=True)
    ]
    assert floor_ok.tolist() == want_ok
    want_fired = [
        (sg > 0 and d >= sg) or (ok and cg > 0 and dc >= cg)
        for d, dc, ok in zip(dists, own, want_ok, strict=True)
    ]
    assert fired.tolist() == want_fired
    if p is SELECT[0]:  # the gate both fires and stays closed on these clips
        assert fired.any() and not fired.all(), fired
    if p is SELECT[4]:  # the floor is reached on some of these clips and not on others
        assert floor_ok.any() and not floor_ok.all(), floor_ok
    if p is SELECT[7]:  # the clip floor opens the floor on a clip below it, not on another
        opened = [d < sf and dc >= cf for d, dc in zip(dists, own, strict=True)]
        assert any(opened) and not floor_ok.all(), (opened, floor_ok)
    if p is SELECT[8]:  # the clip gate fires on some clips, and the floor holds back others
        held = [dc >= cg and not ok for dc, ok in zip(own, want_ok, strict=True)]
        assert fired.any() and any(held), (fired, held)
    if p.select_alpha_shift != p.alpha_shift:  # the own shifts change every normalised clip
        same = dataclasses.replace(
            p, select_alpha_shift=p.alpha_shift, select_weight_shift=p.weight_shift
        )
        other, _, _ = cmvn_select_int(x, same)
        assert all((g != o).any() for g, o in zip(got, other, strict=True))


def test_select_shifts_default_to_mode_cmvns() -> None:
    """Without select_alpha_shift / select_weight_shift the normalised run uses mode cmvn's
    shifts, in the integer parameters and in the build settings (configs written before
    round 8 build what they built)."""
    import tomllib

    p = params(49, 10, 11, 4, 2)
    assert (p.select_alpha_shift, p.select_weight_shift) == (4, 2)
    assert params(49, 10, 11, 4, 2, sa=1).select_weight_shift == 2
    cfg = parse_config(tomllib.loads("[cmvn]\nalpha_shift = 3\nweight_shift = 1\n"))
    assert cfg.adapt.stage_settings("cmvn").select_shifts == (3, 1)
    cfg = parse_config(tomllib.loads("[cmvn]\nalpha_shift = 3\nselect_alpha_shift = 1\n"))
    assert cfg.adapt.stage_settings("cmvn").select_shifts == (1, 2)


def test_cmvn_gate_opens_and_closes() -> None:
    """Mode cmvn's gate (on the state after the clip joined it) both normalises and passes
    clips unchanged over the clips below, at a low and a high threshold; the higher one passes
    more of them."""
    passed = []
    for p in (CASES[5], CASES[6]):
        x = clips(p, 1)
        got, _ = cmvn_int(x, p)
        changed = [bool((g != c).any()) for g, c in zip(got, x, strict=True)]
        assert any(changed) and not all(changed), changed
        passed.append(changed.count(False))
    assert passed[1] > passed[0], passed


def test_causal_gate_opens_and_closes() -> None:
    """The gated case above both normalises and passes clips unchanged (the gate is exercised),
    and the first clip, from the training statistics, always passes unchanged."""
    p = CAUSAL[1]
    x = clips(p, 1)
    got, _ = cmvn_int(x, p, causal=True)
    changed = [bool((g != c).any()) for g, c in zip(got, x, strict=True)]
    assert not changed[0] and any(changed) and not all(changed[1:]), changed


def test_state_continues_across_calls() -> None:
    p = CASES[0]
    x = clips(p, 2)
    whole, _ = cmvn_int(x, p)
    first, st = cmvn_int(x[:3], p)
    rest, _ = cmvn_int(x[3:], p, st)
    assert_array_equal(np.concatenate([first, rest]), whole)
    assert_array_equal(CmvnState.reset(p).P, np.full(p.features, 1 << p.state_frac))


def test_integer_form_tracks_the_float_method() -> None:
    """On normal-scale inputs the integer normalisation is within a few LSBs of the float one
    (the 1/T reciprocal, the shifts and the Q1.14 gain are the only roundings)."""
    p = CASES[0]
    rng = np.random.default_rng(3)
    u = rng.normal(0.5, 1.5, size=(40, p.frames, p.features))
    x = np.clip(np.rint(u * (1 << p.x_frac)), -32768, 32767).astype(np.int16)
    got, _ = cmvn_int(x, p)
    cfg = CmvnConfig(weight=2.0**-p.weight_shift, alpha=2.0**-p.alpha_shift, variance=True)
    want = cmvn_normalised(x / (1 << p.x_frac), cfg)
    err = np.abs(got / (1 << p.x_frac) - want)
    assert err.max() < 8 / (1 << p.x_frac), err.max()


class _Params(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_int32)
        for name in (
            "frames",
            "features",
            "x_frac",
            "state_frac",
            "recip",
            "recip_shift",
            "alpha_shift",
            "weight_shift",
            "vmin",
            "causal_alpha_shift",
        )
    ] + [
        ("gate_sum", ctypes.c_int64),
        ("causal_gate_sum", ctypes.c_int64),
        ("select_margin", ctypes.c_int32),
        ("select_gate_sum", ctypes.c_int64),
        ("select_floor_sum", ctypes.c_int64),
        ("select_clip_floor_sum", ctypes.c_int64),
        ("select_clip_gate_sum", ctypes.c_int64),
        ("select_alpha_shift", ctypes.c_int32),
        ("select_weight_shift", ctypes.c_int32),
    ]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    fw = firmware_dir()
    out = tmp_path_factory.mktemp("cmvn") / "libcmvn.so"
    srcs = [fw / "elt_cmvn_s16.c", fw / "elt_intmath.c"]
    run_tool(
        [find_tool("cc"), *HOST_CFLAGS, *UBSAN_CFLAGS, "-fvisibility=default", f"-I{fw}"]
        + ["-DELT_CMVN_F_MAX=64", "-o", str(out), *map(str, srcs)],
        what="host gcc",
    )
    return ctypes.CDLL(str(Path(out)))


@pytest.mark.parametrize("p", CASES, ids=lambda p: f"a{p.alpha_shift}b{p.weight_shift}n{p.x_frac}")
def test_firmware_kernel_equals_reference(kernel: ctypes.CDLL, p: CmvnParams) -> None:
    """Every clip and the state, the shift distance the kernel returns (mode cmvn_select's
    gate reads it) equals the reference's `shift_sum` of the updated state, and the clip's own
    distance it writes (round 6's clip floor and clip gate read it) equals `clip_shift_sum`;
    with a NULL pointer nothing else changes."""
    from codegen.stages.cmvn_int import clip_shift_sum, shift_sum

    x = clips(p, 4)
    want, st = cmvn_int(x, p)
    want_dist = []
    ref = CmvnState.reset(p)
    for clip in x:
        _, ref = cmvn_int(clip[None], p, ref)
        want_dist.append(shift_sum(ref, p))
    want_own = [clip_shift_sum(clip.astype(np.int64), p) for clip in x]
    prm = _Params(*(getattr(p, name) for name, _ in _Params._fields_))
    kernel.elt_cmvn_apply_s16.restype = ctypes.c_int64
    for with_own in (True, False):
        state = (ctypes.c_int32 * 128)()
        kernel.elt_cmvn_reset(ctypes.byref(prm), state)
        got = np.array(x, dtype=np.int16, copy=True)
        dist, own = [], []
        for clip in got:
            o = ctypes.c_int64(-1)
            dist.append(
                kernel.elt_cmvn_apply_s16(
                    ctypes.byref(prm),
                    state,
                    clip.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)),
                    ctypes.byref(o) if with_own else None,
                )
            )
            own.append(o.value)
        assert_array_equal(got, want)
        assert dist == want_dist
        assert own == (want_own if with_own else [-1] * len(x))
        assert len(set(want_own)) > 1  # the clips differ in their own shift
    c_state = np.frombuffer(state, dtype=np.int32)
    assert_array_equal(c_state[: p.features], st.M)
    assert_array_equal(c_state[64 : 64 + p.features], st.P)


class _Clip(ctypes.Structure):
    _fields_ = [
        ("s1", ctypes.c_int32 * 64),
        ("s2", ctypes.c_int64 * 64),
        ("offset", ctypes.c_int32 * 64),
        ("gain", ctypes.c_int32 * 64),
        ("open", ctypes.c_int32),
    ]


@pytest.mark.parametrize(
    "p",
    CAUSAL,
    ids=lambda p: f"T{p.frames}F{p.features}a{p.causal_alpha_shift}g{p.causal_gate_sum}",
)
def test_firmware_causal_kernel_equals_reference(kernel: ctypes.CDLL, p: CmvnParams) -> None:
    """begin, then one frame at a time (as the audio mode calls it), then end."""
    x = clips(p, 5)
    want, st = cmvn_int(x, p, causal=True)
    prm = _Params(*(getattr(p, name) for name, _ in _Params._fields_))
    state = (ctypes.c_int32 * 128)()
    clip_state = _Clip()
    kernel.elt_cmvn_reset(ctypes.byref(prm), state)
    got = np.array(x, dtype=np.int16, copy=True)
    for clip in got:
        kernel.elt_cmvn_causal_begin(ctypes.byref(prm), state, ctypes.byref(clip_state))
        for frame in clip:
            kernel.elt_cmvn_causal_frame(
                ctypes.byref(prm),
                ctypes.byref(clip_state),
                frame.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)),
            )
        kernel.elt_cmvn_causal_end(ctypes.byref(prm), state, ctypes.byref(clip_state))
    assert_array_equal(got, want)
    c_state = np.frombuffer(state, dtype=np.int32)
    assert_array_equal(c_state[: p.features], st.M)
    assert_array_equal(c_state[64 : 64 + p.features], st.P)


def test_causal_integer_form_tracks_the_float_method() -> None:
    """Without a gate the causal integer form is within a few LSBs of cmvn_causal_stream; with
    the gate, it opens on the same clips as the float gate away from the threshold."""
    from codegen.elatta.methods import cmvn_causal_stream

    p = CAUSAL[0]
    rng = np.random.default_rng(3)
    u = rng.normal(0.5, 1.5, size=(40, p.frames, p.features))
    x = np.clip(np.rint(u * (1 << p.x_frac)), -32768, 32767).astype(np.int16)
    got, _ = cmvn_int(x, p, causal=True)
    cfg = CmvnConfig(weight=2.0**-p.weight_shift, alpha=2.0**-p.causal_alpha_shift)
    xf = x / (1 << p.x_frac)
    zeros, ones = np.zeros(p.features), np.ones(p.features)
    want = cmvn_causal_stream(xf, zeros, ones, cfg)
    err = np.abs(got / (1 << p.x_frac) - want)
    assert err.max() < 8 / (1 << p.x_frac), err.max()
    # a stream that starts clean and then shifts: the gate closes, then opens, in both forms
    shifted = np.concatenate([rng.normal(0, 1, (6, p.frames, p.features)), u[:10] * 2 + 1])
    xs = np.clip(np.rint(shifted * (1 << p.x_frac)), -32768, 32767).astype(np.int16)
    pg = params(p.frames, p.features, p.x_frac, 4, 2, 2, 1.0)
    gi, _ = cmvn_int(xs, pg, causal=True)
    gf = cmvn_causal_stream(xs / (1 << p.x_frac), zeros, ones, cfg, gate=1.0)
    open_i = [bool((a != b).any()) for a, b in zip(gi, xs, strict=True)]
    open_f = [
        bool(np.abs(a - b / (1 << p.x_frac)).max() > 1e-6) for a, b in zip(gf, xs, strict=True)
    ]
    assert open_i == open_f and open_i[:6] == [False] * 6 and any(open_i), open_i


@pytest.mark.parametrize(
    ("table", "match"),
    [
        ("alpha_shift = 0", "alpha_shift=0 is not allowed: use an integer in 1..15"),
        ("weight_shift = 16", "weight_shift=16 is not allowed: use an integer in 0..15"),
        ("alpha_shift = 0.5", r"\[cmvn\].alpha_shift = 0.5 has type float; expected int"),
        ("gamma = 1", r"unknown key\(s\) gamma; allowed: alpha_shift, weight_shift"),
        ("causal_alpha_shift = 0", "causal_alpha_shift=0 is not allowed: use an integer in 1..15"),
        ("gate = -1.0", r"gate=-1.0 is not allowed: use a float in \[0, 64\]"),
        ("causal_gate = 65.0", r"causal_gate=65.0 is not allowed: use a float in \[0, 64\]"),
        ("gate = nan", r"gate=nan is not allowed"),
        ("select_gate = -0.5", r"select_gate=-0.5 is not allowed: use a float in \[0, 64\]"),
        ("select_floor = -0.5", r"select_floor=-0.5 is not allowed: use a float in \[0, 64\]"),
        ("select_clip_floor = -1.0", r"clip_floor=-1.0 is not allowed: use a float in \[0, 64\]"),
        ("select_clip_gate = 65.0", r"clip_gate=65.0 is not allowed: use a float in \[0, 64\]"),
        ("select_clip_gate = 'on'", r"\[cmvn\].select_clip_gate = 'on' has type str"),
        ("select_alpha_shift = 0", r"select_alpha_shift=0 is not allowed: use an integer in 1..15"),
        ("select_weight_shift = 16", r"select_weight_shift=16 is not allowed: use an integer in"),
        ("select_weight_shift = 1.0", r"\[cmvn\].select_weight_shift = 1.0 has type float"),
        ("gate = 'on'", r"\[cmvn\].gate = 'on' has type str; expected float"),
    ],
)
def test_cmvn_config_errors_name_the_value(table: str, match: str) -> None:
    import tomllib

    with pytest.raises(ConfigError, match=match):
        parse_config(tomllib.loads(f"[cmvn]\n{table}\n"))
    cfg = parse_config(tomllib.loads("[cmvn]\nalpha_shift = 2\n[elatta]\nmode = 'cmvn'\n"))
    cm = cfg.adapt.stage_settings("cmvn")
    assert (cm.alpha_shift, cm.weight_shift, cfg.adapt.mode) == (
        2,
        2,
        "cmvn",
    )


def test_select_reference_is_the_more_confident_run(tmp_path: Path) -> None:
    """Mode cmvn_select's reference (codegen.intref.model._infer_select) on a quantised model:
    its no-adapt fields are the raw run's, its answer the run `select_confident` picks, field
    by field; a margin larger than any entropy keeps every raw answer."""
    import dataclasses

    from buildkit import calib, int16_inputs, make_kit

    from codegen.frontend.reader import read_model
    from codegen.intref.model import infer_int
    from codegen.quantize.model import quantize_model

    kit = make_kit(tmp_path, T=12)
    q = quantize_model(read_model(kit.model, kit.basis, kit.config), calib(kit))
    cm = q.stage_params("cmvn")
    x = int16_inputs(np.random.default_rng(5), 24, kit.T, kit.F, q.x_fmt.frac_bits)
    x = np.clip(x.astype(np.int64) * 3 + 700, -32768, 32767).astype(np.int16)  # a shifted input
    ids = np.arange(24)
    raw = infer_int(x, q, ids, mode="no_adapt")
    ungated = with_cmvn(q, dataclasses.replace(cm, gate_sum=0))
    norm = infer_int(x, ungated, ids, mode="cmvn")
    sel = infer_int(x, q, ids, mode="cmvn_select")
    use = norm.adapt.H_noadapt.astype(np.int64) + cm.select_margin < raw.adapt.H_noadapt
    assert use.any() and not use.all(), use  # both runs are picked on these clips
    for f in ("pred_noadapt", "logits_noadapt", "H_noadapt"):
        assert_array_equal(getattr(sel.adapt, f), getattr(raw.adapt, f), err_msg=f)
    assert_array_equal(sel.adapt.pred, np.where(use, norm.adapt.pred, raw.adapt.pred))
    assert_array_equal(sel.adapt.H_best, np.where(use, norm.adapt.H_best, raw.adapt.H_best))
    want_logits = np.where(use[:, None], norm.adapt.logits, raw.adapt.logits)
    assert_array_equal(sel.adapt.logits, want_logits)
    assert_array_equal(sel.z, np.where(use[:, None], norm.z, raw.z))
    big = with_cmvn(q, dataclasses.replace(cm, select_margin=2**31 - 1))
    kept = infer_int(x, big, ids, mode="cmvn_select")
    assert_array_equal(kept.adapt.pred, raw.adapt.pred)
    # round 4's shift gate: with a margin no entropy passes, the normalised answer is taken
    # exactly where the gate fires on the updated state (docs/adaptation.md "Round 4")
    from codegen.stages.cmvn_int import cmvn_select_int, shift_sum

    st, dists = CmvnState.reset(cm), []
    for clip in x:  # the updated state's shift distance per clip, for thresholds between them
        _, st = cmvn_int(clip[None], cm, st)
        dists.append(shift_sum(st, cm))
    for sg in sorted(set(dists))[1:-1:4]:
        gated = dataclasses.replace(big.stages["cmvn"], select_gate_sum=sg)
        _, fired, _ = cmvn_select_int(x, gated)
        assert fired.any() and not fired.all(), (sg, fired)
        assert (norm.z != raw.z).any(axis=1)[fired].any()  # an ignored gate would show
        g = infer_int(x, with_cmvn(q, gated), ids, mode="cmvn_select")
        assert_array_equal(g.adapt.pred, np.where(fired, norm.adapt.pred, raw.adapt.pred))
        assert_array_equal(g.z, np.where(fired[:, None], norm.z, raw.z))
        assert_array_equal(g.adapt.pred_noadapt, raw.adapt.pred_noadapt)
    # round 5's shift floor: the normalised answer only where the entropy test passes AND the
    # updated state's distance reaches the floor; the floors below drop some of the clips the
    # entropy test alone would take, so an ignored floor would show (docs/adaptation.md "Round 5")
    dropped = 0
    for sf in sorted(set(dists))[1:-1:4]:
        floored = dataclasses.replace(cm, select_floor_sum=sf)
        _, fired, floor_ok = cmvn_select_int(x, floored)
        assert not fired.any() and floor_ok.tolist() == [d >= sf for d in dists]
        want = use & floor_ok
        dropped += int((use & ~floor_ok & (norm.adapt.pred != raw.adapt.pred)).sum())
        f = infer_int(x, with_cmvn(q, floored), ids, mode="cmvn_select")
        assert_array_equal(f.adapt.pred, np.where(want, norm.adapt.pred, raw.adapt.pred))
        assert_array_equal(f.adapt.H_best, np.where(want, norm.adapt.H_best, raw.adapt.H_best))
        assert_array_equal(f.z, np.where(want[:, None], norm.z, raw.z))
        assert_array_equal(f.adapt.pred_noadapt, raw.adapt.pred_noadapt)
    assert dropped > 0  # some floor changed an answer the entropy test alone gives
    # round 6 on the clip's own distance d_clip (`clip_shift_sum`): with a margin no entropy
    # passes, the clip gate takes the normalised answer exactly where d_clip reaches it; and the
    # clip floor gives back, where d_clip reaches it, answers a floor above every d took away, so
    # an ignored clip gate or clip floor would show (docs/adaptation.md "Round 6")
    from codegen.stages.cmvn_int import clip_shift_sum

    own = np.array([clip_shift_sum(clip.astype(np.int64), cm) for clip in x])
    dist = np.array(dists)
    for cg in sorted(set(own.tolist()))[1:-1:4]:
        gate = dataclasses.replace(big.stages["cmvn"], select_clip_gate_sum=cg)
        _, fired, floor_ok = cmvn_select_int(x, gate)
        assert_array_equal(fired, own >= cg)
        assert floor_ok.all() and fired.any() and not fired.all()
        g = infer_int(x, with_cmvn(q, gate), ids, mode="cmvn_select")
        assert_array_equal(g.adapt.pred, np.where(fired, norm.adapt.pred, raw.adapt.pred))
        assert_array_equal(g.z, np.where(fired[:, None], norm.z, raw.z))
    reopened = 0
    high = int(dist.max()) + 1  # a floor no clip reaches: the clip floor alone opens it
    for cf in sorted(set(own.tolist()))[1:-1:4]:
        cfl = dataclasses.replace(cm, select_floor_sum=high, select_clip_floor_sum=cf)
        _, fired, floor_ok = cmvn_select_int(x, cfl)
        assert not fired.any()
        assert_array_equal(floor_ok, own >= cf)
        want = use & floor_ok
        reopened += int((want & (norm.adapt.pred != raw.adapt.pred)).sum())
        f = infer_int(x, with_cmvn(q, cfl), ids, mode="cmvn_select")
        assert_array_equal(f.adapt.pred, np.where(want, norm.adapt.pred, raw.adapt.pred))
        assert_array_equal(f.z, np.where(want[:, None], norm.z, raw.z))
    assert reopened > 0  # some clip floor gave back an answer the floor alone holds back
