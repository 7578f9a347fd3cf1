"""Integer ELaTTA adaptation core (`codegen.intref.adapt`): configuration errors, overflow
proofs, agreement with the float reference, modes, best-sample rule, QELaTTA-V1/V2 and the
generated C text."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np
import pytest
from intharness.driver import random_head, random_latents

from codegen.base.errors import ConfigError
from codegen.base.resources import firmware_dir
from codegen.elatta.cmaes import Cmaes
from codegen.elatta.float_ref import ElattaConfig, adapt, entropy, head_logits
from codegen.emit.adapt import adapt_cflags, emit_adapt_c
from codegen.intref.adapt import IntAdaptResult, adapt_int
from codegen.intref.cmaes_int import X_FRAC, Z_FRAC
from codegen.intref.rng import Xoshiro128ss
from codegen.ir.nodes import AdaptConfig
from codegen.quantize.adapt import quantize_adapt
from codegen.target import sources

X = 2.0**X_FRAC


def setup(k: int = 2, seed: int = 0, **cfg: Any) -> Any:
    rng = np.random.default_rng(seed)
    W, b, V, zc = random_head(rng, k=k)
    c = AdaptConfig(k=k, lam=4 + int(3 * np.log(k)), **cfg)
    return quantize_adapt(W, b, V, c, zc), W, b, V, rng


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"k": 0}, "k=0"),
        ({"k": 40}, "k=40"),
        ({"n_iter": 0}, "n_iter=0"),
        ({"lam": 1}, "lam=1"),
        ({"sigma0": 0.0}, "sigma0=0.0"),
        ({"sigma0": 17.0}, "sigma0=17.0"),
        ({"mode": "greedy"}, "mode='greedy'"),
        ({"seed": -1}, "seed=-1"),
        ({"seed": 2**64}, "seed="),
        ({"beta": 1.5}, "beta=1.5"),
        ({"radius": 300.0}, "radius=300.0"),
        ({"qelatta_v1": 1}, "qelatta_v1=1"),
        ({"qelatta_v2": (8,)}, "qelatta_v2=(8,)"),
        ({"qelatta_v2": (8, 6)}, "y_int_bits=6"),
        ({"qelatta_v2": (20, 4)}, "x_bits=20"),
        ({"active": "yes"}, "active='yes'"),
    ],
)
def test_config_errors_name_the_value(kwargs: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)):
        AdaptConfig(**kwargs)


def test_from_float_and_back() -> None:
    f = ElattaConfig(
        k=3,
        n_iter=4,
        sigma0=0.2,
        mode="continual_bounded",
        seed=9,
        beta=0.25,
        radius=2.0,
        qelatta_v1=True,
        active=False,
    )
    c = AdaptConfig.from_float(f, qelatta_v2=(8, 4))
    assert c.lam == 7 and c.qelatta_v2 == (8, 4) and c.grid is not None and c.grid.frac == 4
    assert c.to_float() == f.replace(lam=7)


def test_quantize_errors_name_the_tensor() -> None:
    rng = np.random.default_rng(0)
    W, b, V, zc = random_head(rng)
    cfg = AdaptConfig()
    with pytest.raises(ConfigError, match=r"head b must have shape \[12\]"):
        quantize_adapt(W, b[:3], V, cfg, zc)
    with pytest.raises(ConfigError, match=r"basis V must have shape \[32, 2\]"):
        quantize_adapt(W, b, V[:, :1], cfg, zc)
    with pytest.raises(ConfigError, match="z_calib must have shape"):
        quantize_adapt(W, b, V, cfg, zc[:, :5])
    with pytest.raises(ConfigError, match="W contains NaN"):
        quantize_adapt(np.where(W > 1, np.nan, W), b, V, cfg, zc)
    # Σ|w|·2^15 cannot fit int32 in any int16 format: the build is refused, naming the row
    big = W.copy()
    big[5] = 3000.0
    with pytest.raises(ConfigError, match=r"head W row 5: .* exceeds the int32 accumulator"):
        quantize_adapt(big, b, V, cfg, zc)
    # a basis far from orthonormal: round(V p) would not fit the NEON latent's int32 lanes
    with pytest.raises(ConfigError, match=r"basis V: max\|V\| = .* overflows the latent path"):
        quantize_adapt(W, b, V * 2.0**14, cfg, zc)
    assert quantize_adapt(W, b, V * 4.0, cfg, zc).v_shift >= 27  # |V| < 4: still fine


def test_folded_head_is_w_times_v_and_fits_int64() -> None:
    """G = W V exactly, with the fewest low bits dropped that keep every row's Σ|G| < 2^31
    (so G p < 2^62 for any int32 p); the folded logits equal the float head of z_t + V p."""
    from codegen.base.fixed import rshift_round
    from codegen.intref.adapt import cand_logits_s16, head_acc_s16, latent_zt

    P, W, b, V, _ = setup()
    exact = P.W.astype(np.int64) @ P.V.astype(np.int64)
    drop = P.v_shift - P.g_shift
    np.testing.assert_array_equal(P.G, rshift_round(exact, drop))
    assert int(np.sum(np.abs(P.G), axis=1).max()) <= 2**31 - 1
    if drop > 0:
        assert int(np.sum(np.abs(rshift_round(exact, drop - 1)), axis=1).max()) > 2**31 - 1
    rng = np.random.default_rng(5)
    zq = rng.integers(-20000, 20000, size=(50, P.dim))
    p = rng.normal(0, 0.5, size=(50, 3, P.k))
    pq = np.round(p * 2**27).astype(np.int64)
    zt = latent_zt(zq, P)
    got = cand_logits_s16(head_acc_s16(zt, P), pq, P) / 2.0**P.logit_fmt.frac_bits
    zf = zt / 2.0**P.latent_fmt.frac_bits
    want = (zf[:, None, :] + p @ V.T) @ W.T + b
    assert np.abs(got - want).max() < 4e-3  # W's int16 rounding and the logit LSB


def test_head_accumulator_proof_holds_at_the_worst_latent() -> None:
    P, *_ = setup()
    worst = np.sum(np.abs(P.W), axis=1) * 32768 + np.abs(P.b)
    assert int(worst.max()) <= P.head_bound <= 2**31 - 1
    # the latent that maximises every row's |acc|: z_j = ±32767/-32768 by the sign of w_ij
    for row in range(P.n_classes):
        z = np.where(P.W[row] >= 0, 32767, -32768)
        acc = int(P.W[row] @ z + P.b[row])
        assert -(2**31) <= acc + (1 << (P.head_shift - 1)) <= 2**31 - 1
    # W keeps the finest format that still proves the bound
    assert P.w_fmt.frac_bits <= 15 and P.logit_fmt.frac_bits <= P.b_fmt.frac_bits


def test_no_adapt_agrees_with_float_reference() -> None:
    P, W, b, V, rng = setup(mode="no_adapt")
    z = random_latents(rng, 5000)
    r = adapt_int(z, P, np.arange(5000))
    f = adapt(z / 32768.0, W, b, V, np.arange(5000), P.cfg.to_float())
    same = float(np.mean(r.pred_noadapt == f.pred_noadapt))
    dH = np.abs(r.H_noadapt / 2.0**26 - f.H_noadapt)
    dl = np.abs(r.logits_noadapt / 2.0**P.logit_fmt.frac_bits - f.logits_noadapt)
    print(f"no-adapt: same class {same:.4f}, max |dlogit| {dl.max():.2e}, max |dH| {dH.max():.2e}")
    assert same >= 0.99
    np.testing.assert_array_equal(r.pred, r.pred_noadapt)
    np.testing.assert_array_equal(r.p_best, 0)
    np.testing.assert_array_equal(r.H_best, r.H_noadapt)


def float_twin_with_int_normals(
    z_q15: np.ndarray, W: np.ndarray, b: np.ndarray, V: np.ndarray, cfg: AdaptConfig
) -> np.ndarray:
    """float_ref's strict loop, chol whitening, driven by the integer reference's normals."""
    ecfg = cfg.to_float()
    params = ecfg.cmaes_params()
    zt = z_q15 / 32768.0
    normals = (
        Xoshiro128ss(cfg.seed, np.arange(len(zt))).gauss_blocks(cfg.n_iter, (cfg.lam, cfg.k))
        / 2.0**Z_FRAC
    )
    pred = np.empty(len(zt), np.int64)
    for i in range(len(zt)):
        es = Cmaes.start(params, np.zeros(cfg.k), cfg.sigma0, whitening="chol")
        best_h, best_l = np.inf, np.zeros(W.shape[0])
        for t in range(cfg.n_iter):
            Xc = es.ask_from_z(normals[i, t])
            L = head_logits(zt[i] + Xc @ V.T, W, b)
            H = entropy(L)
            j = int(np.argmin(H))
            if H[j] < best_h:
                best_h, best_l = H[j], L[j]
            es.tell(Xc, H)
        pred[i] = int(np.argmax(best_l))
    return pred


def test_strict_agreement_reported() -> None:
    P, W, b, V, rng = setup(mode="strict", sigma0=0.3)
    n = 600
    z = random_latents(rng, n)
    r = adapt_int(z, P, np.arange(n))
    f = adapt(z / 32768.0, W, b, V, np.arange(n), P.cfg.to_float())
    twin = float_twin_with_int_normals(z, W, b, V, P.cfg)
    a_ref = float(np.mean(r.pred == f.pred))
    a_twin = float(np.mean(r.pred == twin))
    print(
        f"strict: same class as float_ref.adapt (other normals) {a_ref:.4f}, as the float "
        f"twin on the integer normals {a_twin:.4f}; changed by adaptation "
        f"{np.mean(r.pred != r.pred_noadapt):.4f} "
        f"(float {np.mean(f.pred != f.pred_noadapt):.4f})"
    )
    assert a_twin >= 0.98
    assert a_ref >= 0.8


def test_tiny_sigma_reproduces_no_adapt() -> None:
    for mode in ("strict", "continual", "continual_bounded"):
        P, *_, rng = setup(mode=mode, sigma0=2.0**-20)
        z = random_latents(rng, 40)
        r = adapt_int(z, P, np.arange(40))
        np.testing.assert_array_equal(r.pred, r.pred_noadapt)
        assert np.max(np.abs(r.p_best)) / X < 1e-4  # continual modes random-walk by ~σ₀ each


def collect(P: Any, z: np.ndarray, ids: np.ndarray) -> Any:
    recs: list[tuple[int, str, int, np.ndarray]] = []
    res = adapt_int(z, P, ids, trace=lambda s, st, i, d: recs.append((s, st, i, d)))
    return res, recs


@pytest.mark.parametrize("mode", ["strict", "continual", "continual_bounded"])
@pytest.mark.parametrize("v1", [False, True])
def test_best_sample_rule(mode: str, v1: bool) -> None:
    """p_best is the first lowest-H evaluated candidate in (H, iteration, index) order."""
    P, *_, rng = setup(k=4, mode=mode, n_iter=3, sigma0=0.5, qelatta_v1=v1, radius=0.8)
    z = random_latents(rng, 25)
    res, recs = collect(P, z, np.arange(100, 125))
    k, lam = 4, P.cfg.lam
    for s in range(25):
        cand = [(d.reshape(lam, k), i) for ss, st, i, d in recs if ss == s and st == "p_eval"]
        Hs = [(d, i) for ss, st, i, d in recs if ss == s and st == "entropy"]
        flat = [(int(H[j]), t, j) for (H, t) in Hs for j in range(lam)]
        h, t, j = min(flat)
        assert res.H_best[s] == h
        np.testing.assert_array_equal(res.p_best[s], cand[t][0][j])
        if v1:
            assert len(set(res.p_best[s].tolist())) <= 2


def test_qelatta_v1_is_identity_for_k2() -> None:
    P0, *_, rng = setup(k=2, sigma0=0.4)
    P1 = dataclasses.replace(P0, cfg=dataclasses.replace(P0.cfg, qelatta_v1=True))
    z = random_latents(rng, 300)
    a, b_ = adapt_int(z, P0, np.arange(300)), adapt_int(z, P1, np.arange(300))
    for f in IntAdaptResult.FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b_, f))


@pytest.mark.parametrize("grid", [(8, 4), (4, 2)])
def test_qelatta_v2_state_on_the_grid(grid: tuple[int, int]) -> None:
    P, *_, rng = setup(k=2, sigma0=0.4, n_iter=4, qelatta_v2=grid, mode="continual_bounded")
    z = random_latents(rng, 30)
    res, recs = collect(P, z, np.arange(30))
    x_bits, y_int = grid
    step = 1 << (X_FRAC - (x_bits - y_int))
    lim = 2.0 ** (y_int - 1)
    assert np.all(res.p_best % step == 0)
    for _, st, _, d in recs:
        if st in ("cmaes.m", "cmaes.ps", "cmaes.pc", "cmaes.x", "p_eval", "cmaes.m0"):
            assert np.all(d % step == 0), st
            assert np.all(d / X >= -lim) and np.all(d / X < lim), st
        if st == "cmaes.C":
            assert np.all(d % (1 << (26 - (x_bits - y_int))) == 0)
        if st == "cmaes.ln_sigma":
            assert np.all(d % (1 << (23 - (x_bits - y_int))) == 0)


def test_strict_results_do_not_depend_on_order() -> None:
    P, *_, rng = setup(k=2, sigma0=0.3)
    z = random_latents(rng, 200)
    ids = rng.integers(0, 2**32, 200)
    perm = rng.permutation(200)
    a = adapt_int(z, P, ids)
    b_ = adapt_int(z[perm], P, ids[perm])
    for f in IntAdaptResult.FIELDS:
        np.testing.assert_array_equal(np.asarray(getattr(a, f))[perm], getattr(b_, f))
    # and a sample alone gives the same answer as inside the batch
    one = adapt_int(z[7:8], P, ids[7:8])
    for f in IntAdaptResult.FIELDS:
        np.testing.assert_array_equal(np.asarray(getattr(a, f))[7:8], getattr(one, f))


def test_continual_bounded_warm_start_inside_radius() -> None:
    P, *_, rng = setup(k=2, sigma0=1.0, mode="continual_bounded", beta=0.9, radius=0.7, n_iter=3)
    z = random_latents(rng, 80)
    res, recs = collect(P, z, np.arange(80))
    m0 = np.array([d for _, st, _, d in recs if st == "cmaes.m0"]) / X
    assert np.all(np.linalg.norm(m0, axis=1) <= 0.7 * (1 + 2.0**-22))
    assert np.max(np.linalg.norm(m0, axis=1)) > 0.5  # the clip was active
    # m0 of sample i is clip(beta * p_best[i-1])
    prev = res.p_best[:-1] / X * 0.9
    nrm = np.linalg.norm(prev, axis=1, keepdims=True)
    expect = np.where(nrm > 0.7, prev * 0.7 / np.maximum(nrm, 1e-30), prev)
    np.testing.assert_allclose(m0[1:], expect, atol=1e-7)
    Pc = dataclasses.replace(P, cfg=dataclasses.replace(P.cfg, mode="continual"))
    _, rc = collect(Pc, z[:10], np.arange(10))
    m0c = [d for _, st, _, d in rc if st == "cmaes.m0"]
    res_c = adapt_int(z[:10], Pc, np.arange(10))
    for i in range(1, 10):
        np.testing.assert_array_equal(m0c[i], res_c.p_best[i - 1])


def test_emission_is_deterministic_and_documents_every_array() -> None:
    P, *_ = setup(k=2, qelatta_v2=(8, 4))
    a = emit_adapt_c(P, "kws_")
    assert a == emit_adapt_c(P, "kws_")
    assert set(a) == {"kws_adapt_params.c", "kws_adapt_params.h"}
    c = a["kws_adapt_params.c"]
    assert P.input_hash in c and "const elt_adapt_params_t kws_adapt_params" in c
    decls = re.findall(
        r"/\* (.*?)\n \* shape (.*?), (Q[\d.]+|Q\.\d+), float range (\[.*?\]) \*/"
        r"\nstatic const (int16_t|int32_t|int64_t) (\w+)\[(\d+)\]",
        c,
    )
    assert len(decls) == 10, decls
    assert {d[5] for d in decls} >= {"kws_adapt_W", "kws_adapt_G", "kws_adapt_gauss_lut"}
    assert "ELT_MODE_STRICT" in c and "QELaTTA-V2 8b4" in c
    assert "extern const elt_adapt_params_t kws_adapt_params;" in a["kws_adapt_params.h"]
    with pytest.raises(ConfigError, match="prefix="):
        emit_adapt_c(P, "9bad")
    assert adapt_cflags(P) == (
        "-DELT_K_MAX=2",
        "-DELT_LAM_MAX=6",
        "-DELT_D_MAX=32",
        "-DELT_C_MAX=12",
    )
    for src in sources.ADAPT:
        assert (firmware_dir() / src).is_file()


def test_template_is_strict() -> None:
    from jinja2 import UndefinedError

    from codegen.base.resources import jinja_env

    with pytest.raises(UndefinedError):
        jinja_env().get_template("adapt_params.c.j2").render(prefix="x_")


def test_saturating_inputs_stay_in_range() -> None:
    """Saturated latents, a head that saturates the logits, σ₀ at its maximum: every field stays
    inside its format and the reference raises nothing."""
    rng = np.random.default_rng(4)
    W, b, V, zc = random_head(rng, scale=6.0)
    P = quantize_adapt(W, b, V, AdaptConfig(k=2, sigma0=16.0, n_iter=5), zc)
    z = random_latents(rng, 500, saturate=0.5)
    r = adapt_int(z, P, np.arange(500))
    assert np.any(np.abs(r.logits) == 32767) or np.any(r.logits == -32768)
    assert np.any(np.abs(r.p_best) >= 2**31 - 1)  # p saturated at ±16
    assert np.all(r.H_best >= 0) and np.all(r.H_best <= round(np.log(12) * 2**26) + 64)
