"""Float64 CMA-ES vs pycma 4.5.0 (docs/cmaes.md §7a): constants, state after each tell, convergence.

pycma is the oracle only. It is driven with the options of docs/cmaes.md §1.4 and its
initial C reset to I, then fed the same X and f as ours (``tell(..., check_points=False)``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest

from codegen.base.errors import ConfigError
from codegen.elatta.cmaes import Cmaes, CmaesParams, CmaesState, default_popsize, expected_norm

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # cma warns that matplotlib is missing
    cma = pytest.importorskip("cma")
    from cma.utilities.math import Mh

Fitness = Callable[[np.ndarray], np.ndarray]
TOL_STATE = 1e-11
TOL_PARAM = 1e-15


def sphere(X: np.ndarray) -> np.ndarray:
    return np.sum(X**2, axis=1)


def ellipsoid(X: np.ndarray) -> np.ndarray:
    """Condition 1e6 (pycma ``ff.elli``)."""
    k = X.shape[1]
    return np.sum(10.0 ** (6.0 * np.arange(k) / max(k - 1, 1)) * X**2, axis=1)


def rosenbrock(X: np.ndarray) -> np.ndarray:
    return np.sum(100 * (X[:, 1:] - X[:, :-1] ** 2) ** 2 + (1 - X[:, :-1]) ** 2, axis=1)


FUNCTIONS: dict[str, tuple[Fitness, float]] = {
    "sphere": (sphere, 0.5),
    "ellipsoid": (ellipsoid, 0.5),
    "rosenbrock": (rosenbrock, 0.0),
}


def pycma_es(k: int, active: bool, x0: np.ndarray, sigma0: float, lam: int | None = None):
    """pycma with the apples-to-apples options and C reset to I (docs/cmaes.md §1)."""
    opts = {
        "CMA_active": active,
        "CMA_mirrors": 0,
        "CMA_diagonal": 0,
        "CMA_diagonal_decoding": 0,
        "updatecovwait": 0,
        "seed": 1,
        "verbose": -9,
        "verb_log": 0,
    }
    if lam is not None:
        opts["popsize"] = lam
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        es = cma.CMAEvolutionStrategy(x0, sigma0, opts)
    # Two distinct arrays: the usual reset recipe ``es.sm.C = es.sm.B = np.eye(k)`` aliases B to C,
    # and the in-place ``C *= decay`` of the first tell then also scales B (wrong active norms).
    es.sm.C = np.eye(k)
    es.sm.B = np.eye(k)
    es.sm.D = np.ones(k)
    es._updateBDfromSM()
    return es


# ---------------------------------------------------------------------------------------------
# constants


@pytest.mark.parametrize("active", [True, False])
@pytest.mark.parametrize("k", list(range(2, 33)))
def test_params_match_pycma(k: int, active: bool) -> None:
    p = CmaesParams.for_dim(k, active=active)
    es = pycma_es(k, active, np.zeros(k), 1.0)
    sp = es.sp
    pp = es.sm.parameters(mueff=sp.weights.mueff, lam=sp.weights.lambda_)
    assert p.lam == sp.popsize == default_popsize(k)
    assert p.mu == sp.weights.mu
    np.testing.assert_allclose(p.weights_array, np.asarray(sp.weights), rtol=0, atol=TOL_PARAM)
    for ours, theirs in [
        (p.mueff, sp.weights.mueff),
        (p.c1, pp["c1"]),
        (p.cmu, pp["cmu"]),
        (p.cc, sp.cc),
        (p.cs, es.adapt_sigma.cs),
        (p.damps, es.adapt_sigma.damps),
        (p.chi, Mh.chiN(k)),
    ]:
        assert abs(ours - theirs) <= TOL_PARAM, (ours, theirs)
    if not active:
        assert all(w == 0 for w in p.weights[p.mu :])


@pytest.mark.parametrize("lam", [3, 5, 17, 40])
@pytest.mark.parametrize("k", [2, 8])
def test_params_match_pycma_with_popsize(k: int, lam: int) -> None:
    p = CmaesParams.for_dim(k, lam=lam)
    es = pycma_es(k, True, np.zeros(k), 1.0, lam=lam)
    pp = es.sm.parameters(mueff=es.sp.weights.mueff, lam=es.sp.weights.lambda_)
    assert p.lam == es.sp.popsize == lam
    np.testing.assert_allclose(p.weights_array, np.asarray(es.sp.weights), rtol=0, atol=TOL_PARAM)
    assert abs(p.c1 - pp["c1"]) <= TOL_PARAM and abs(p.cmu - pp["cmu"]) <= TOL_PARAM
    assert abs(p.damps - es.adapt_sigma.damps) <= TOL_PARAM


def test_notes_table_values() -> None:
    """The k = 2, 8, 32 rows of the docs/cmaes.md §1.1 table (4.5 values)."""
    for k, lam, mu, mueff, c1, cmu, cc, cs, chi in [
        (2, 6, 3, 2.029, 0.1548, 0.0856, 0.625, 0.500, 1.2533),
        (8, 10, 5, 3.167, 0.0223, 0.0336, 0.344, 0.365, 2.7416),
        (32, 14, 7, 4.287, 0.0018, 0.0048, 0.114, 0.160, 5.6128),
    ]:
        p = CmaesParams.for_dim(k)
        assert (p.lam, p.mu) == (lam, mu)
        for ours, ref in [
            (p.mueff, mueff),
            (p.c1, c1),
            (p.cmu, cmu),
            (p.cc, cc),
            (p.cs, cs),
            (p.chi, chi),
        ]:
            assert abs(ours - ref) < 6e-4, (k, ours, ref)
        assert p.damps == 1 + p.cs  # d_σ = 1 + c_σ for k ≤ 32 (docs/cmaes.md §1)


def test_expected_norm_is_exact() -> None:
    for k in range(1, 101):
        approx = math.sqrt(2) * math.exp(math.lgamma((k + 1) / 2) - math.lgamma(k / 2))
        assert abs(expected_norm(k) - approx) < 1e-13 * approx
        # pycma's table is itself a few ulp off (5 ulp at k = 58); within 1 ulp for k <= 32
        assert abs(expected_norm(k) - Mh.chiN(k)) <= (2 if k <= 32 else 8) * math.ulp(Mh.chiN(k))
    # χ_3 = 2·√(2/π) = 1.59576912160573071175978423973752..., correctly rounded
    assert expected_norm(3) == 1.5957691216057308


def test_expected_norm_correctly_rounded() -> None:
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    for k in range(1, 201):
        exact = (
            mpmath.sqrt(2) * mpmath.gamma(mpmath.mpf(k + 1) / 2) / mpmath.gamma(mpmath.mpf(k) / 2)
        )
        assert expected_norm(k) == float(exact), k


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"k": 0}, "k=0"),
        ({"k": 2.0}, "k=2.0"),
        ({"k": 2, "lam": 1}, "lam=1"),
        ({"k": 2, "lam": True}, "lam=True"),
        ({"k": 2, "active": 1}, "active=1"),
    ],
)
def test_params_validation(kwargs: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        CmaesParams.for_dim(**kwargs)


def test_state_validation() -> None:
    with pytest.raises(ConfigError, match="sigma=0"):
        CmaesState.initial(np.zeros(2), 0)
    with pytest.raises(ConfigError, match="symmetric"):
        CmaesState.initial(np.zeros(2), 1.0, C0=[[1.0, 0.5], [0.0, 1.0]])
    with pytest.raises(ConfigError, match="whitening='svd'"):
        Cmaes.start(CmaesParams.for_dim(2), np.zeros(2), 1.0, whitening="svd")  # type: ignore[arg-type]
    es = Cmaes.start(CmaesParams.for_dim(2), np.zeros(2), 1.0)
    with pytest.raises(ConfigError, match=r"X \[6, 2\]"):
        es.tell(np.zeros((5, 2)), np.zeros(5))


# ---------------------------------------------------------------------------------------------
# dynamics, update by update


def run_lockstep(
    fn: Fitness, k: int, active: bool, x_source: str, iterations: int = 60
) -> tuple[dict[str, float], int]:
    """Drive pycma and ours with the same X and f; return worst errors and h_σ stall count."""
    x0 = np.full(k, 0.5 if fn is not rosenbrock else 0.0)
    sigma0 = 0.3
    es = pycma_es(k, active, x0, sigma0)
    ours = Cmaes.start(CmaesParams.for_dim(k, active=active), x0, sigma0)
    rng = np.random.default_rng(1000 + k)
    worst = dict.fromkeys(("m", "sigma", "C", "pc", "ps"), 0.0)
    stalls = 0
    for it in range(iterations):
        X_py = np.asarray(es.ask())
        X = X_py if x_source == "pycma" else ours.ask(rng)
        f = fn(X)
        es.tell(list(X), list(f), check_points=False)
        st = ours.tell(X, f)
        assert st.g == es.countiter == it + 1
        assert st.hsig == bool(es.adapt_sigma.hsig(es)), f"h_sigma differs at g={st.g}"
        stalls += not st.hsig
        worst["m"] = max(worst["m"], float(np.max(np.abs(es.mean - st.m))))
        worst["sigma"] = max(worst["sigma"], abs(es.sigma / st.sigma - 1))
        worst["C"] = max(worst["C"], float(np.max(np.abs(es.sm.C - st.C))))
        worst["pc"] = max(worst["pc"], float(np.max(np.abs(es.pc - st.pc))))
        worst["ps"] = max(worst["ps"], float(np.max(np.abs(es.adapt_sigma.ps - st.ps))))
    return worst, stalls


@pytest.mark.parametrize("active", [True, False], ids=["active", "passive"])
@pytest.mark.parametrize("k", [2, 3, 5, 8, 16, 32])
@pytest.mark.parametrize("fname", list(FUNCTIONS))
def test_state_matches_pycma_own_samples(fname: str, k: int, active: bool) -> None:
    worst, _ = run_lockstep(FUNCTIONS[fname][0], k, active, "own")
    assert max(worst.values()) < TOL_STATE, worst


@pytest.mark.parametrize("active", [True, False], ids=["active", "passive"])
@pytest.mark.parametrize("k", [2, 5, 32])
@pytest.mark.parametrize("fname", list(FUNCTIONS))
def test_state_matches_pycma_pycma_samples(fname: str, k: int, active: bool) -> None:
    worst, _ = run_lockstep(FUNCTIONS[fname][0], k, active, "pycma")
    assert max(worst.values()) < TOL_STATE, worst


@pytest.mark.parametrize("active", [True, False], ids=["active", "passive"])
def test_hsig_stalls_match_pycma(active: bool) -> None:
    """k = 2 ellipsoid stalls h_σ (docs/cmaes.md §7a.2); stalls and state still match."""
    worst, stalls = run_lockstep(ellipsoid, 2, active, "own")
    assert stalls >= 1
    assert max(worst.values()) < TOL_STATE, worst


def test_short_fresh_runs_match_pycma() -> None:
    """Fresh instances with n = 2..10 iterations, as ELaTTA uses them per sample
    (docs/cmaes.md §7a.3)."""
    for n in range(2, 11):
        worst, _ = run_lockstep(sphere, 2, True, "own", iterations=n)
        assert max(worst.values()) < TOL_STATE, (n, worst)


def test_ties_rank_by_index() -> None:
    """Equal f: ranking is by index (stable sort), so m' = Σ w_i x_i in input order."""
    p = CmaesParams.for_dim(2)
    es = Cmaes.start(p, np.zeros(2), 1.0)
    X = es.ask(np.random.default_rng(0))
    st = es.tell(X, np.zeros(p.lam))
    np.testing.assert_array_equal(st.m, p.weights_array[: p.mu] @ X[: p.mu])


def test_chol_whitening_equals_eigh_while_c_is_identity() -> None:
    """Cholesky mode is exactly canonical at g = 1 with C0 = I (docs/cmaes.md §7a.4)."""
    p = CmaesParams.for_dim(5)
    z = np.random.default_rng(3).standard_normal((p.lam, 5))
    a = Cmaes.start(p, np.full(5, 0.5), 0.3, whitening="eigh")
    b = Cmaes.start(p, np.full(5, 0.5), 0.3, whitening="chol")
    Xa, Xb = a.ask_from_z(z), b.ask_from_z(z)
    np.testing.assert_array_equal(Xa, Xb)
    sa, sb = a.tell(Xa, sphere(Xa)), b.tell(Xb, sphere(Xb))
    for name in ("m", "C", "pc", "ps"):
        np.testing.assert_allclose(getattr(sa, name), getattr(sb, name), rtol=0, atol=1e-15)
    assert sa.sigma == pytest.approx(sb.sigma, rel=1e-15)


def test_initial_covariance_parameter() -> None:
    """pycma's own initial C = diag(exp(1e-4 i/k)) can be given as C0 (docs/cmaes.md §1)."""
    k = 4
    C0 = np.diag(np.exp(1e-4 / k * np.arange(k)))
    es = pycma_es(k, True, np.zeros(k), 0.5)
    es.sm.C = C0.copy()
    es.sm.D = np.sqrt(np.diag(C0))
    es._updateBDfromSM()
    ours = Cmaes.start(CmaesParams.for_dim(k), np.zeros(k), 0.5, C0=C0)
    rng = np.random.default_rng(7)
    for _ in range(20):
        es.ask()
        X = ours.ask(rng)
        es.tell(list(X), list(ellipsoid(X)), check_points=False)
        st = ours.tell(X, ellipsoid(X))
        np.testing.assert_allclose(st.C, es.sm.C, rtol=0, atol=TOL_STATE)
        assert st.sigma == pytest.approx(es.sigma, rel=TOL_STATE)


# ---------------------------------------------------------------------------------------------
# convergence (docs/cmaes.md §7c): median iterations to f < 1e-8 within 1.3x pycma's


def iterations_to_target(step: Callable[[], float], max_iter: int) -> int:
    for it in range(1, max_iter + 1):
        if step() < 1e-8:
            return it
    return max_iter


def ours_iterations(fn: Fitness, k: int, x0v: float, seed: int, max_iter: int) -> int:
    es = Cmaes.start(CmaesParams.for_dim(k), np.full(k, x0v), 0.5)
    rng = np.random.default_rng(seed)

    def step() -> float:
        X = es.ask(rng)
        f = fn(X)
        es.tell(X, f)
        return float(f.min())

    return iterations_to_target(step, max_iter)


def pycma_iterations(fn: Fitness, k: int, x0v: float, seed: int, max_iter: int) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        es = cma.CMAEvolutionStrategy(
            np.full(k, x0v), 0.5, {"seed": seed + 1, "verbose": -9, "verb_log": 0}
        )

    def step() -> float:
        X = np.asarray(es.ask())
        f = fn(X)
        es.tell(list(X), list(f))
        return float(f.min())

    return iterations_to_target(step, max_iter)


CONVERGENCE = [
    pytest.param(name, k, marks=[] if k == 2 else [pytest.mark.slow])
    for name in FUNCTIONS
    for k in (2, 4, 8)
]


@pytest.mark.parametrize(("fname", "k"), CONVERGENCE)
def test_convergence_within_1p3_of_pycma(fname: str, k: int) -> None:
    fn, x0v = FUNCTIONS[fname]
    seeds = range(7)
    ours = [ours_iterations(fn, k, x0v, s, 3000) for s in seeds]
    ref = [pycma_iterations(fn, k, x0v, s, 3000) for s in seeds]
    print(f"{fname} k={k}: ours median {np.median(ours)} {ours}, pycma {np.median(ref)} {ref}")
    assert np.median(ours) <= 1.3 * np.median(ref)
