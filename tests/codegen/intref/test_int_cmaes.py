"""Integer CMA-ES (docs/cmaes.md §6) against its float twin `codegen.elatta.cmaes.Cmaes` (chol):
constants rounded once, helpers exact, lockstep drift bounds (docs/cmaes.md §7b.2), best-f
distribution in the ELaTTA regime (docs/cmaes.md §7c) and QELaTTA quantisers."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from codegen.base.errors import ConfigError
from codegen.elatta.cmaes import Cmaes, CmaesParams
from codegen.elatta.float_ref import quantize_1bit
from codegen.intref.cmaes_int import (
    C_FRAC,
    GAIN_FRAC,
    LNSIG_FRAC,
    LNSIG_MAX,
    LNSIG_MIN,
    NORM2_FRAC,
    RATE_FRAC,
    X_FRAC,
    Z_FRAC,
    CmaesIntState,
    Grid,
    chol_s32,
    clip_norm_s32,
    div_round,
    isqrt64,
    q1bit_s32,
    sample_s32,
    sigma_expand,
    tell_s32,
    unpack_tri,
)
from codegen.intref.rng import Xoshiro128ss
from codegen.quantize.adapt import cmaes_constants

X = 2.0**X_FRAC


def sphere(x: np.ndarray) -> np.ndarray:
    return np.sum((x - 1.0) ** 2, axis=-1)


def ellipsoid(x: np.ndarray) -> np.ndarray:
    k = x.shape[-1]
    c = 10.0 ** (4.0 * np.arange(k) / max(k - 1, 1))  # condition 1e4 (docs/cmaes.md §7c)
    return np.sum(c * (x - 1.0) ** 2, axis=-1)


FUNCS = {"sphere": sphere, "ellipsoid": ellipsoid}


@pytest.mark.parametrize("k", [1, 2, 3, 4, 8, 16, 32])
@pytest.mark.parametrize("active", [True, False])
def test_constants_rounded_once(k: int, active: bool) -> None:
    p = CmaesParams.for_dim(k, active=active)
    ip = cmaes_constants(p, 10, 0.1)
    q30 = 2.0**RATE_FRAC
    assert ip.lam == p.lam and ip.mu == p.mu
    for wi, fw in zip(ip.w, p.weights[: p.mu], strict=True):
        assert abs(wi / q30 - fw) <= 0.5 / q30
    for i, wci in enumerate(ip.wc):
        ref = p.cmu * p.weights[i] * (1 if i < p.mu else k)
        assert abs(wci / q30 - ref) <= 0.5 / q30
        assert (wci == 0) == (ref == 0)
    assert abs(ip.one_minus_cs / q30 - (1 - p.cs)) <= 0.5 / q30
    assert abs(ip.gain_s / 2.0**GAIN_FRAC - math.sqrt(p.cs * (2 - p.cs) * p.mueff)) <= 2.0**-29
    assert abs(ip.inv_chi / q30 - 1 / p.chi) <= 0.5 / q30
    thr = [(1 + p.hsig_threshold) * k * (1 - (1 - p.cs) ** (2 * g)) for g in range(1, 11)]
    np.testing.assert_allclose(np.array(ip.hsig_thr) / 2.0**NORM2_FRAC, thr, rtol=1e-12)
    assert abs(ip.ln_sigma0 / 2.0**LNSIG_FRAC - math.log(0.1)) <= 2.0**-24


def test_constant_errors() -> None:
    p = CmaesParams.for_dim(2)
    for kw, needle in (
        ({"sigma0": 100.0}, "sigma0=100.0"),
        ({"sigma0": 1e-9}, "sigma0="),
        ({"n_iter": 0}, "n_iter=0"),
    ):
        args = {"n_iter": 2, "sigma0": 0.1, **kw}
        with pytest.raises(ConfigError, match=needle):
            cmaes_constants(p, int(args["n_iter"]), float(args["sigma0"]))
    with pytest.raises(ConfigError, match="k=33"):
        cmaes_constants(CmaesParams.for_dim(33), 2, 0.1)
    with pytest.raises(ConfigError, match="x_bits=1"):
        Grid(1, 1)
    with pytest.raises(ConfigError, match="y_int_bits=6"):
        Grid(8, 6)


def test_isqrt_and_division_are_exact() -> None:
    rng = np.random.default_rng(0)
    n = np.concatenate(
        [
            np.arange(0, 5000),
            rng.integers(0, 2**62, 20000),
            np.array([2**62 - 1, (2**31 - 1) ** 2, (2**31 - 1) ** 2 - 1]),
        ]
    )
    r = isqrt64(n)
    np.testing.assert_array_equal(r, [math.isqrt(int(v)) for v in n])
    num = rng.integers(-(2**57), 2**57, 20000)
    den = rng.integers(1, 2**31, 20000)
    num[:6] = [7, -7, 5, -5, 0, 3]
    den[:6] = [2, 2, 2, 2, 9, 6]
    q = div_round(num, den)
    ref = [
        int(math.copysign(int(abs(Fraction(int(a), int(b))) + Fraction(1, 2)), a))
        for a, b in zip(num, den, strict=True)
    ]
    np.testing.assert_array_equal(q, ref)
    assert list(q[:6]) == [4, -4, 3, -3, 0, 1]  # half away from zero


def test_sigma_expansion() -> None:
    ln = np.linspace(LNSIG_MIN, LNSIG_MAX, 50001).astype(np.int64)
    mant, e = sigma_expand(ln)
    assert np.all((mant >= 2**29) & (mant <= 2**30))
    assert e.min() >= -21 and e.max() <= 4  # shift 29 − e stays in [25, 50]
    sigma = mant * 2.0 ** (e + 1) / 2.0**30
    rel = np.abs(sigma / np.exp(ln / 2.0**LNSIG_FRAC) - 1)
    assert rel.max() < 1.5e-6


def test_cholesky_of_spd_and_pivot_fix() -> None:
    rng = np.random.default_rng(1)
    for k in (1, 2, 4, 8):
        M = rng.normal(size=(200, k, k))
        Cf = M @ np.transpose(M, (0, 2, 1)) / k + 0.05 * np.eye(k)
        r, c = np.tril_indices(k)
        Cp = np.round(Cf[:, r, c] * 2**C_FRAC).astype(np.int64)
        A, nfix = chol_s32(Cp, k)
        assert not nfix.any()
        Af = unpack_tri(A, k) / 2.0**C_FRAC
        np.testing.assert_allclose(Af @ np.transpose(Af, (0, 2, 1)), Cf, atol=1e-6)
    # not positive definite: pivot raised to eps and counted, no overflow
    bad = np.array([[1 << 26, 2 << 26, 1 << 26]], dtype=np.int64)  # [[1, 2], [2, 1]]
    A, nfix = chol_s32(bad, 2)
    assert nfix[0] == 1 and A[0, 2] == 2**16
    A, nfix = chol_s32(np.array([[-(2**31), 2**31 - 1, -(2**31)]], dtype=np.int64), 2)
    assert nfix[0] == 2 and np.all(np.abs(A) < 2**31)


def run_lockstep(
    k: int, fname: str, seed: int, n: int, sigma0: float, active: bool
) -> tuple[dict[str, float], int]:
    """Integer run; the float twin is told the dequantized integer X and the integer ranking
    (docs/cmaes.md §7b.2). Returns the worst drift per quantity and the iterations compared."""
    fn = FUNCS[fname]
    p = CmaesParams.for_dim(k, active=active)
    ip = cmaes_constants(p, n, sigma0)
    st = CmaesIntState.initial(np.zeros((1, k), np.int64), ip.ln_sigma0, k)
    es = Cmaes.start(p, np.zeros(k), sigma0, whitening="chol")
    rng = Xoshiro128ss(seed, [0])
    worst = {"m": 0.0, "sigma": 0.0, "C": 0.0, "pc": 0.0, "ps": 0.0}
    for t in range(n):
        A, _ = chol_s32(st.C, k)
        mant, e = sigma_expand(st.ln_sigma)
        sig_int = float(mant[0] * 2.0 ** (e[0] + 1) / 2**30)
        worst["sigma"] = max(worst["sigma"], abs(sig_int / es.state.sigma - 1))
        z = rng.gauss_block((p.lam, k))
        y, x = sample_s32(st.m, A, z, mant, e, k)
        Xf = x[0] / X
        order = np.argsort(fn(Xf), kind="stable")
        hs = tell_s32(ip, st, z, y, x, order[None, :])
        ranks = np.empty(p.lam)
        ranks[order] = np.arange(p.lam)
        prev_ps = es.state.ps.copy()
        fs = es.tell(Xf, ranks)
        if bool(hs[0]) != fs.hsig:
            # allowed only near the threshold (docs/cmaes.md §7b.2)
            g = fs.g
            q = np.sum(fs.ps**2) / (1 - (1 - p.cs) ** (2 * g)) / k - 1
            assert abs(q - p.hsig_threshold) < 1e-4 * (1 + p.hsig_threshold), (q, prev_ps)
            return worst, t
        Cf = unpack_tri(st.C, k)[0] / 2.0**C_FRAC
        Cf = Cf + np.tril(Cf, -1).T
        worst["m"] = max(worst["m"], float(np.max(np.abs(st.m[0] / X - fs.m))))
        worst["C"] = max(worst["C"], float(np.max(np.abs(Cf - fs.C))))
        worst["pc"] = max(worst["pc"], float(np.max(np.abs(st.pc[0] / X - fs.pc))))
        worst["ps"] = max(worst["ps"], float(np.max(np.abs(st.ps[0] / X - fs.ps))))
    return worst, n


@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize("fname", ["sphere", "ellipsoid"])
def test_lockstep_drift_within_bounds(k: int, fname: str) -> None:
    """Per-iteration drift (docs/cmaes.md §7b.2): |Δm| ≤ 2⁻²⁰, σ ≤ 1e-5 relative,
    |ΔC|, |Δp| ≤ 1e-5."""
    total: dict[str, float] = {}
    compared = 0
    for seed in range(8):
        worst, its = run_lockstep(k, fname, seed, 10, 0.5, active=seed % 3 != 0)
        compared += its
        for key, v in worst.items():
            total[key] = max(total.get(key, 0.0), v)
    print(f"k={k} {fname}: worst drift {total} over {compared} iterations")
    assert compared >= 70
    assert total["m"] <= 2.0**-20
    assert total["sigma"] <= 1e-5
    assert total["C"] <= 1e-5 and total["pc"] <= 1e-5 and total["ps"] <= 1e-5


def best_f_runs(
    k: int, fname: str, n: int, seeds: int, sigma0: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """Best sampled f over n iterations from m = 0, integer (all seeds as one batch) and the
    float twin driven by the same normals, each ranking by its own f (docs/cmaes.md §7c)."""
    fn = FUNCS[fname]
    p = CmaesParams.for_dim(k)
    ip = cmaes_constants(p, n, sigma0)
    st = CmaesIntState.initial(np.zeros((seeds, k), np.int64), ip.ln_sigma0, k)
    rng = Xoshiro128ss(99, np.arange(seeds))
    Z = np.empty((seeds, n, p.lam, k), np.int64)
    best_i = np.full(seeds, np.inf)
    for t in range(n):
        A, _ = chol_s32(st.C, k)
        mant, e = sigma_expand(st.ln_sigma)
        z = rng.gauss_block((p.lam, k))
        Z[:, t] = z
        y, x = sample_s32(st.m, A, z, mant, e, k)
        f = fn(x / X)
        best_i = np.minimum(best_i, f.min(axis=1))
        tell_s32(ip, st, z, y, x, np.argsort(f, axis=1, kind="stable"))
    best_f = np.full(seeds, np.inf)
    for s in range(seeds):
        es = Cmaes.start(p, np.zeros(k), sigma0, whitening="chol")
        for t in range(n):
            Xf = es.ask_from_z(Z[s, t] / 2.0**Z_FRAC)
            f = fn(Xf)
            best_f[s] = min(best_f[s], float(f.min()))
            es.tell(Xf, f)
    return best_i, best_f


@pytest.mark.parametrize(
    "k,fname,n", [(2, "ellipsoid", 2), (2, "sphere", 5), (4, "ellipsoid", 5), (8, "sphere", 10)]
)
def test_best_f_median_within_5_percent_fast(k: int, fname: str, n: int) -> None:
    bi, bf = best_f_runs(k, fname, n, 100)
    ratio = float(np.median(bi) / np.median(bf))
    print(
        f"k={k} {fname} n={n}: median best f int {np.median(bi):.4g} float "
        f"{np.median(bf):.4g} ratio {ratio:.4f}"
    )
    assert abs(ratio - 1) <= 0.05


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize("fname", ["sphere", "ellipsoid"])
@pytest.mark.parametrize("n", [2, 5, 10])
def test_best_f_distribution_1000_seeds(k: int, fname: str, n: int) -> None:
    from scipy.stats import ks_2samp

    bi, bf = best_f_runs(k, fname, n, 1000)
    ratio = float(np.median(bi) / np.median(bf))
    ks = ks_2samp(bi, bf)
    print(f"k={k} {fname} n={n}: ratio {ratio:.4f}, KS p = {ks.pvalue:.3g}")
    assert abs(ratio - 1) <= 0.05
    assert ks.pvalue > 0.01


def test_q1bit_matches_float_quantiser() -> None:
    rng = np.random.default_rng(5)
    for k in (1, 2):
        P = rng.integers(-(2**30), 2**30, size=(100, k))
        np.testing.assert_array_equal(q1bit_s32(P), P)  # identity: "natural 1-bit"
    for k in (3, 4, 8):
        P = np.round(rng.normal(size=(3000, k)) * 2**27).astype(np.int64)
        Q = q1bit_s32(P)
        assert all(len(set(row)) <= 2 for row in Q.tolist())
        F = quantize_1bit(P / X)
        close = np.max(np.abs(Q / X - F), axis=1) <= 2.0 / X
        print(f"k={k}: {close.mean():.4f} of rows equal the float quantiser within 2 LSB")
        assert close.mean() >= 0.999
    # ties: equal values stay together, lowest split wins
    np.testing.assert_array_equal(q1bit_s32(np.array([[5, 5, 5, 5]])), [[5, 5, 5, 5]])


def test_clip_norm_and_grid() -> None:
    rng = np.random.default_rng(2)
    v = np.round(rng.normal(size=(2000, 4)) * 3 * X).astype(np.int64)
    r23 = round(1.5 * 2**23)
    out = clip_norm_s32(v, r23)
    n_in = np.linalg.norm(v / X, axis=1)
    n_out = np.linalg.norm(out / X, axis=1)
    assert np.all(n_out <= 1.5 * (1 + 2.0**-22))
    inside = n_in <= 1.5 - 1e-6
    np.testing.assert_array_equal(out[inside], v[inside])
    cos = np.sum(out * v, axis=1) / (np.linalg.norm(out, axis=1) * np.linalg.norm(v, axis=1))
    assert np.all(cos > 1 - 1e-9)
    g = Grid(4, 2)  # ap_fixed<4, 2>: step 1/4, range [-2, 1.75]
    vals = np.array([0.1, 0.125, -0.125, 1.8, -3.0, 0.3]) * X
    np.testing.assert_array_equal(
        g.requant(np.round(vals).astype(np.int64), X_FRAC) / X, [0.0, 0.25, 0.0, 1.75, -2.0, 0.25]
    )
    assert Grid(8, 4).frac == 4 and Grid(8, 4).lo == -128 and Grid(8, 4).hi == 127
