"""Float ELaTTA reference: modes, best-sample rule, order independence, continual divergence,
configuration errors, QELaTTA-V1 quantiser, σ₀/β/radius selection and the shift measurement."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from codegen.base.errors import ConfigError
from codegen.elatta.float_ref import (
    ElattaConfig,
    TraceEvent,
    accuracy,
    adapt,
    default_sigma0_grid,
    entropy,
    format_rows,
    head_logits,
    latent_spread,
    quantize_1bit,
    select_bounded,
    select_sigma0,
    shift_recovery,
)


def synthetic(
    n: int = 120, d: int = 8, c: int = 4, k: int = 2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gaussian class clusters, nearest-mean linear head, V_k from the SVD of centred latents."""
    rng = np.random.default_rng(seed)
    means = 2.0 * rng.normal(size=(c, d))
    y = rng.integers(0, c, n)
    z = means[y] + rng.normal(size=(n, d))
    W = means.copy()
    b = -0.5 * np.sum(means**2, axis=1)
    V = np.linalg.svd(z - z.mean(axis=0), full_matrices=False)[2][:k].T
    return z, y, W, b, V


def test_entropy_is_stable_and_exact() -> None:
    L = np.random.default_rng(1).normal(size=(50, 12)) * 3
    P = np.exp(L) / np.exp(L).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(entropy(L), -np.sum(P * np.log(P), axis=1), rtol=1e-12)
    assert entropy(np.zeros(12)) == pytest.approx(np.log(12), rel=1e-15)
    big = entropy(np.array([[1e6, 0.0, -1e6], [800.0, 800.0, 0.0]]))
    assert np.all(np.isfinite(big))
    assert big[0] == 0.0
    assert big[1] == pytest.approx(np.log(2), rel=1e-12)


def test_no_adapt_returns_p_zero() -> None:
    z, _, W, b, V = synthetic()
    res = adapt(z, W, b, V, np.arange(len(z)), ElattaConfig(mode="no_adapt"))
    np.testing.assert_array_equal(res.p_best, 0.0)
    np.testing.assert_array_equal(res.pred, res.pred_noadapt)
    np.testing.assert_array_equal(res.logits, head_logits(z, W, b))
    np.testing.assert_array_equal(res.H_best, res.H_noadapt)


def test_tiny_sigma0_reproduces_no_adapt() -> None:
    """(a) σ₀ → 0 gives the no-adapt predictions exactly."""
    z, _, W, b, V = synthetic()
    for mode in ("strict", "continual", "continual_bounded"):
        res = adapt(z, W, b, V, np.arange(len(z)), ElattaConfig(sigma0=1e-12, mode=mode))
        np.testing.assert_array_equal(res.pred, res.pred_noadapt)
        assert np.max(np.abs(res.p_best)) < 1e-10
        np.testing.assert_allclose(res.logits, res.logits_noadapt, rtol=0, atol=1e-9)


@pytest.mark.parametrize("mode", ["strict", "continual", "continual_bounded"])
@pytest.mark.parametrize("qv1", [False, True])
def test_returned_p_is_lowest_entropy_candidate(mode: str, qv1: bool) -> None:
    """(b) p_best is the first lowest-H candidate in (H, iteration, index) order."""
    z, _, W, b, V = synthetic(n=40, k=3)
    events: list[TraceEvent] = []
    cfg = ElattaConfig(k=3, n_iter=4, sigma0=0.7, mode=mode, qelatta_v1=qv1, radius=2.0)
    res = adapt(z, W, b, V, np.arange(100, 140), cfg, trace=events.append)
    lam = cfg.popsize
    assert len(events) == 40 * cfg.n_iter
    for i in range(40):
        ev = [e for e in events if e.sample_index == i]
        assert [e.iteration for e in ev] == list(range(cfg.n_iter))
        assert all(e.sample_id == 100 + i and e.candidates.shape == (lam, 3) for e in ev)
        H = np.concatenate([e.H for e in ev])
        P = np.concatenate([e.candidates for e in ev])
        j = min(range(len(H)), key=lambda t: (H[t], t))  # t = iteration·λ + index
        np.testing.assert_array_equal(res.p_best[i], P[j])
        assert res.H_best[i] == H[j]
        np.testing.assert_allclose(res.logits[i], head_logits(z[i] + V @ P[j], W, b), atol=1e-12)
        assert res.pred[i] == np.argmax(res.logits[i])
        # every recorded H is the entropy of its candidate
        np.testing.assert_allclose(H, entropy(head_logits(z[i] + P @ V.T, W, b)), atol=1e-12)


def test_strict_is_independent_of_sample_order() -> None:
    """(c) permuting samples (with their ids) permutes the results, bit for bit."""
    z, _, W, b, V = synthetic(n=60)
    ids = np.arange(500, 560)
    cfg = ElattaConfig(sigma0=0.8, seed=3)
    ref = adapt(z, W, b, V, ids, cfg)
    perm = np.random.default_rng(5).permutation(60)
    res = adapt(z[perm], W, b, V, ids[perm], cfg)
    for name in ("pred", "logits", "H_best", "p_best", "pred_noadapt"):
        np.testing.assert_array_equal(getattr(res, name), getattr(ref, name)[perm])
    # a subset gives the same rows too
    sub = adapt(z[10:20], W, b, V, ids[10:20], cfg)
    np.testing.assert_array_equal(sub.p_best, ref.p_best[10:20])
    # a different seed changes the search
    other = adapt(z, W, b, V, ids, cfg.replace(seed=4))
    assert not np.array_equal(other.p_best, ref.p_best)


def test_continual_diverges_and_bounded_stays_within_radius() -> None:
    """(d) with a linear head entropy keeps falling as ‖p‖ grows: the paper's continual rule
    walks away and collapses onto one class; continual_bounded keeps ‖m⁰‖ ≤ radius."""
    z, y, W, b, V = synthetic(n=200)
    ids = np.arange(200)
    cfg = ElattaConfig(sigma0=0.5, beta=0.5, radius=1.0)
    strict = adapt(z, W, b, V, ids, cfg)
    cont = adapt(z, W, b, V, ids, cfg.replace(mode="continual"))
    starts: list[float] = []

    def record(e: TraceEvent) -> None:
        if e.iteration == 0:
            starts.append(float(np.linalg.norm(e.mean)))

    bounded = adapt(z, W, b, V, ids, cfg.replace(mode="continual_bounded"), trace=record)
    n_cont = np.linalg.norm(cont.p_best, axis=1)
    n_bound = np.linalg.norm(bounded.p_best, axis=1)
    print(f"\n|p| continual every 25: {np.round(n_cont[::25], 2)}")
    print(f"|p| bounded max {n_bound.max():.3f}, max |m0| {max(starts):.3f}")
    print(
        f"acc no-adapt {accuracy(strict.pred_noadapt, y):.3f} strict {accuracy(strict.pred, y):.3f}"
        f" continual {accuracy(cont.pred, y):.3f} bounded {accuracy(bounded.pred, y):.3f}"
    )
    assert n_cont[-50:].min() > 20 * n_cont[:5].max()  # grows without bound
    assert np.max(np.bincount(cont.pred[-50:])) >= 45  # collapses onto one class
    assert max(starts) <= 1.0 + 1e-12
    assert n_bound.max() < 5.0
    assert accuracy(bounded.pred, y) >= accuracy(strict.pred_noadapt, y) - 0.05
    assert accuracy(cont.pred, y) < accuracy(strict.pred_noadapt, y) - 0.3


def test_continual_depends_on_order_but_is_deterministic() -> None:
    z, _, W, b, V = synthetic(n=30)
    cfg = ElattaConfig(sigma0=0.5, mode="continual")
    a = adapt(z, W, b, V, np.arange(30), cfg)
    again = adapt(z, W, b, V, np.arange(30), cfg)
    np.testing.assert_array_equal(a.p_best, again.p_best)
    rev = adapt(z[::-1], W, b, V, np.arange(30)[::-1], cfg)
    assert not np.array_equal(rev.p_best[::-1], a.p_best)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("k", 0),
        ("k", 2.5),
        ("n_iter", 0),
        ("lam", 1),
        ("lam", 6.0),
        ("sigma0", 0.0),
        ("sigma0", -1.0),
        ("sigma0", float("nan")),
        ("sigma0", float("inf")),
        ("mode", "online"),
        ("seed", -1),
        ("seed", 1.5),
        ("beta", 1.5),
        ("beta", -0.1),
        ("radius", -1.0),
        ("radius", float("inf")),
        ("qelatta_v1", 1),
        ("active", "yes"),
    ],
)
def test_config_errors_name_the_value(field: str, value: object) -> None:
    """(e) every bad field raises ConfigError naming the field and the value."""
    with pytest.raises(ConfigError) as info:
        ElattaConfig(**{field: value})  # type: ignore[arg-type]
    assert f"{field}={value!r}" in str(info.value)
    assert "use" in str(info.value)


def test_input_shape_errors() -> None:
    z, _, W, b, V = synthetic()
    cfg = ElattaConfig()
    with pytest.raises(ConfigError, match="basis V"):
        adapt(z, W, b, V[:, :1], np.arange(len(z)), cfg)
    with pytest.raises(ConfigError, match="sample_ids"):
        adapt(z, W, b, V, np.arange(3), cfg)
    with pytest.raises(ConfigError, match="head W"):
        adapt(z, W[:, :3], b, V, np.arange(len(z)), cfg)
    with pytest.raises(ConfigError, match="NaN"):
        adapt(np.full_like(z, np.nan), W, b, V, np.arange(len(z)), cfg)


def test_quantize_1bit() -> None:
    rng = np.random.default_rng(2)
    p2 = rng.normal(size=(20, 2))
    np.testing.assert_array_equal(quantize_1bit(p2), p2)  # k = 2: identity (paper, KWS)
    for k in (3, 4, 6):
        P = rng.normal(size=(30, k))
        Q = quantize_1bit(P)
        for p, q in zip(P, Q, strict=True):
            assert len(np.unique(q)) <= 2
            # optimal among all two-group splits (brute force)
            best = min(
                np.sum((p - np.where(mask, p[mask].mean(), p[~mask].mean())) ** 2)
                for r in range(1, k)
                for idx in itertools.combinations(range(k), r)
                for mask in [np.isin(np.arange(k), idx)]
            )
            assert np.sum((p - q) ** 2) == pytest.approx(best, abs=1e-12)
    np.testing.assert_array_equal(quantize_1bit(np.full((1, 4), 0.3)), np.full((1, 4), 0.3))


def test_qelatta_v1_outputs_two_level_p() -> None:
    z, _, W, b, V = synthetic(n=30, k=4)
    res = adapt(z, W, b, V, np.arange(30), ElattaConfig(k=4, sigma0=0.5, qelatta_v1=True))
    assert all(len(np.unique(p)) <= 2 for p in res.p_best)
    # k = 2: QELaTTA-V1 is the same run as ELaTTA
    z2, _, W2, b2, V2 = synthetic(n=30, k=2)
    a = adapt(z2, W2, b2, V2, np.arange(30), ElattaConfig(sigma0=0.5, qelatta_v1=True))
    e = adapt(z2, W2, b2, V2, np.arange(30), ElattaConfig(sigma0=0.5))
    np.testing.assert_array_equal(a.p_best, e.p_best)


def test_select_sigma0_follows_its_rule() -> None:
    z, y, W, b, V = synthetic(n=150, seed=4)
    grid = default_sigma0_grid(z, V, fractions=(0.02, 0.1, 0.3, 1.0))
    sigma0, table = select_sigma0(z, y, W, b, V, grid, ElattaConfig())
    print("\n" + format_rows(table))
    assert [r.sigma0 for r in table] == sorted(grid)
    passing = [r.sigma0 for r in table if r.passes]
    assert sigma0 == (max(passing) if passing else min(grid))
    for r in table:
        assert r.passes == (r.delta_points >= -0.25 and r.mean_H_reduction > 0)
        assert 0 <= r.acc_strict <= 1 and 0 <= r.acc_noadapt <= 1


def test_select_bounded_follows_its_rule() -> None:
    z, y, W, b, V = synthetic(n=100, seed=5)
    beta, radius, table = select_bounded(
        z, y, W, b, V, ElattaConfig(sigma0=0.2), betas=(0.25, 0.75), radius_multiples=(0.5, 1.0)
    )
    print("\n" + format_rows(table))
    assert len(table) == 4
    scale = float(np.linalg.norm(latent_spread(z, V)))
    assert all(r.radius == pytest.approx(r.radius_multiple * scale) for r in table)
    for r in table:
        assert r.passes == (r.delta_points >= -0.5)
    passing = [r for r in table if r.passes]
    if passing:
        best = max(passing, key=lambda r: (r.radius, r.beta))
        assert (beta, radius) == (best.beta, best.radius)
    else:
        assert (beta, radius) == (0.0, 0.0)
    ElattaConfig(mode="continual_bounded", beta=beta, radius=radius)  # valid config


def test_shift_recovery_measurement() -> None:
    """(f) shift clean latents inside span(V_k) and measure what strict ELaTTA recovers."""
    z, y, W, b, V = synthetic(n=150, seed=6)
    s = latent_spread(z, V)
    shifts = np.array([[1.5 * s[0], 0.0], [0.0, 1.5 * s[1]], [s[0], -s[1]]])
    rows = shift_recovery(
        z, y, W, b, V, shifts, [0.05 * s[0], 0.2 * s[0], 0.5 * s[0]], ElattaConfig()
    )
    print("\n" + format_rows(rows))
    assert len(rows) == 9
    for r in rows:
        for acc in (r.acc_clean, r.acc_shifted, r.acc_adapted):
            assert 0.0 <= acc <= 1.0
        assert np.isnan(r.recovered) or np.isfinite(r.recovered)
        assert -1.0 <= r.mean_cos_to_correction <= 1.0
