"""Float reference of the study's adaptation methods (`codegen.elatta.methods`)."""

from __future__ import annotations

import numpy as np
import pytest

from codegen.base.errors import ConfigError
from codegen.elatta.float_ref import ElattaConfig, adapt
from codegen.elatta.methods import (
    AlignConfig,
    CmvnConfig,
    CmvnState,
    SearchConfig,
    cmvn_normalised,
    cmvn_step,
    cmvn_stream,
    latent_align_stream,
    nuisance_basis,
    search_adapt,
)

RNG = np.random.default_rng(7)
FEATS = RNG.standard_normal((40, 49, 10)) * 2.0 + np.linspace(-3, 3, 10)
MU_TR = np.linspace(-2, 2, 10)
SD_TR = np.linspace(1.0, 3.0, 10)


@pytest.mark.parametrize(
    "cfg",
    [
        CmvnConfig(0.5, 1 / 16, True),
        CmvnConfig(1.0, 1 / 4, False),
        CmvnConfig(0.25, None, True),
        CmvnConfig(0.75, 1.0, True),
    ],
)
def test_cmvn_stream_equals_the_per_clip_step(cfg: CmvnConfig) -> None:
    batched = cmvn_stream(FEATS, MU_TR, SD_TR, cfg)
    state = CmvnState.initial(MU_TR, SD_TR)
    for i, clip in enumerate(FEATS):
        state, y = cmvn_step(state, clip, MU_TR, SD_TR, cfg)
        np.testing.assert_allclose(batched[i], y, rtol=1e-5, atol=1e-5)


def test_cmvn_weight_zero_is_the_training_normalisation() -> None:
    out = cmvn_stream(FEATS, MU_TR, SD_TR, CmvnConfig(0.0, 1 / 8, True))
    np.testing.assert_allclose(out, (FEATS - MU_TR) / SD_TR, rtol=1e-5, atol=1e-5)


def test_cmvn_full_weight_strict_standardises_each_clip() -> None:
    out = cmvn_stream(FEATS, MU_TR, SD_TR, CmvnConfig(1.0, None, True)).astype(np.float64)
    np.testing.assert_allclose(out.mean(axis=1), 0.0, atol=1e-4)
    np.testing.assert_allclose(out.std(axis=1), 1.0, atol=1e-3)


def test_cmvn_ema_converges_to_the_stream_statistics() -> None:
    x = np.repeat(FEATS[:1], 200, axis=0)  # the same clip over and over
    st = CmvnState.initial(MU_TR, SD_TR)
    for clip in x:
        st, _ = cmvn_step(st, clip, MU_TR, SD_TR, CmvnConfig(1.0, 1 / 8, True))
    np.testing.assert_allclose(st.mean, x[0].mean(axis=0), atol=1e-6)


def test_latent_align_identity_at_zero_weight_and_source_statistics() -> None:
    z = RNG.standard_normal((100, 8))
    mu, sd = np.zeros(8), np.ones(8)
    np.testing.assert_allclose(latent_align_stream(z, mu, sd, AlignConfig(0.0, 0.1)), z)
    shifted = RNG.standard_normal((2000, 8)) * 3.0 + 5.0
    out = latent_align_stream(shifted, mu, sd, AlignConfig(1.0, 1 / 16))
    assert abs(out[1000:].mean()) < 0.3 and abs(out[1000:].std() - 1.0) < 0.2


def test_nuisance_basis_finds_a_planted_shift_direction() -> None:
    d = np.zeros(16)
    d[3] = 1.0
    clean = RNG.standard_normal((300, 16))
    noisy = clean + np.outer(RNG.uniform(1, 2, 300), d) + 0.01 * RNG.standard_normal((300, 16))
    v, r = nuisance_basis(noisy, clean, 2)
    assert v.shape == (16, 2) and abs(abs(v[3, 0]) - 1.0) < 1e-3
    assert 1.0 < r < 2.0


@pytest.mark.parametrize("mode", ["strict", "continual_bounded"])
def test_search_with_entropy_objective_is_the_paper_search(mode: str) -> None:
    z = RNG.standard_normal((60, 32))
    w, b = RNG.standard_normal((12, 32)), RNG.standard_normal(12)
    v = np.linalg.qr(RNG.standard_normal((32, 2)))[0]
    ids = np.arange(60) * 3 + 1
    ec = ElattaConfig(sigma0=0.5, mode=mode, beta=0.5, radius=1.0, seed=2)
    np.testing.assert_array_equal(
        search_adapt(z, w, b, v, ids, SearchConfig(ec)), adapt(z, w, b, v, ids, ec).pred
    )
    # a huge penalty keeps p at the sampled point nearest 0: predictions barely move
    pen = search_adapt(
        z, w, b, v, ids, SearchConfig(ec, objective="entropy_pen", gamma=1e6, scale=1.0)
    )
    pred0 = np.argmax(z @ w.T + b, axis=1)
    assert np.mean(pen == pred0) > np.mean(adapt(z, w, b, v, ids, ec).pred == pred0) - 0.05


def test_bad_configs_are_refused() -> None:
    with pytest.raises(ConfigError):
        CmvnConfig(1.5)
    with pytest.raises(ConfigError):
        CmvnConfig(0.5, alpha=0.0)
    with pytest.raises(ConfigError):
        SearchConfig(ElattaConfig(), objective="density")


def test_normalised_domain_form_equals_the_raw_form() -> None:
    u = (FEATS - MU_TR) / SD_TR
    for cfg in (CmvnConfig(0.25, 1 / 16, True), CmvnConfig(0.5, None, True)):
        np.testing.assert_allclose(
            cmvn_normalised(u, cfg), cmvn_stream(FEATS, MU_TR, SD_TR, cfg), rtol=1e-4, atol=1e-4
        )


def test_stage_classes_gated_selection() -> None:
    """cmvn_select's float twin (docs/adaptation.md "Round 4"): with no gate it is round 3's
    `select_confident`; with the gate and a margin no entropy passes, the normalised class is
    taken exactly where the look-ahead shift d (`cmvn_shift`, what cmvn's gate tests) reaches τ;
    the gate's d and cmvn's own gate agree."""
    import dataclasses

    from codegen.elatta.methods import cmvn_shift, select_confident
    from codegen.stages.cmvn import CmvnSettings
    from codegen.stages.registry import stage_classes

    u = (FEATS - MU_TR) / SD_TR * np.linspace(0.5, 2.0, 40)[:, None, None]  # a growing shift
    rng = np.random.default_rng(3)
    W, b = rng.standard_normal((6, 10)), rng.standard_normal(6)

    def logits_of(x: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.asarray(x, np.float64).mean(axis=1) @ W.T + b
        return out

    base = CmvnSettings(alpha_shift=2, weight_shift=2, select_margin=0.1)
    cfg = CmvnConfig(0.25, 0.25, True)
    l0, l1 = logits_of(u), logits_of(cmvn_normalised(u, cfg))
    got = stage_classes(u, "cmvn_select", {"cmvn": base}, logits_of)
    np.testing.assert_array_equal(got, select_confident(l0, l1, 0.1))
    d = cmvn_shift(u, np.zeros(10), np.ones(10), cfg)
    tau = float(np.median(d))
    gated = dataclasses.replace(base, select_margin=8.0, select_gate=tau)
    fired = d >= tau
    assert fired.any() and not fired.all()
    want = np.where(fired, l1.argmax(axis=1), l0.argmax(axis=1))
    np.testing.assert_array_equal(stage_classes(u, "cmvn_select", {"cmvn": gated}, logits_of), want)
    assert (l1.argmax(axis=1) != l0.argmax(axis=1))[fired].any()  # the gate changes answers
    # cmvn's own gate (cmvn_stream's) passes exactly the clips where d < τ
    passed = cmvn_normalised(u, cfg, gate=tau)
    same = np.all(np.abs(passed - u.astype(np.float32)) < 1e-6, axis=(1, 2))
    np.testing.assert_array_equal(same, ~fired)
    # round 5's floor (AND): the normalised class only where the entropy test passes and d
    # reaches the floor; with the gate on too, also where d ≥ τ (docs/adaptation.md "Round 5").
    # Logits that sharpen as the input shrinks, so the normalised run is the more confident one

    def sharp(x: np.ndarray) -> np.ndarray:
        m = np.asarray(x, np.float64).mean(axis=1)
        out: np.ndarray = (m @ W.T + b) / (0.1 + (m * m).mean(axis=1, keepdims=True))
        return out

    k0, k1 = sharp(u), sharp(cmvn_normalised(u, cfg))
    takes = select_confident(k0, k1, 0.0) != k0.argmax(axis=1)
    floor = 3.0
    assert (takes & (d < floor)).any() and (takes & (d >= floor)).any()
    floored = dataclasses.replace(base, select_margin=0.0, select_floor=floor)
    want = np.where(takes & (d >= floor), k1.argmax(axis=1), k0.argmax(axis=1))
    np.testing.assert_array_equal(select_confident(k0, k1, 0.0, floor_ok=d >= floor), want)
    np.testing.assert_array_equal(stage_classes(u, "cmvn_select", {"cmvn": floored}, sharp), want)
    both = dataclasses.replace(floored, select_gate=tau)
    want = select_confident(k0, k1, 0.0, fired=fired, floor_ok=d >= floor)
    np.testing.assert_array_equal(stage_classes(u, "cmvn_select", {"cmvn": both}, sharp), want)
    # round 6 on the clip's own shift d_clip (`cmvn_clip_shift`): the clip floor also opens the
    # floor where d_clip reaches it, the clip gate takes the normalised class without the
    # entropy test where the floor is open and d_clip reaches it (docs/adaptation.md "Round 6")
    from codegen.elatta.methods import cmvn_clip_shift

    dc = cmvn_clip_shift(u, np.zeros(10), np.ones(10))
    np.testing.assert_allclose(dc, cmvn_shift(u, np.zeros(10), np.ones(10), CmvnConfig(0.25)))
    cf = float(np.quantile(dc[d < floor], 0.5))
    opened = (d < floor) & (dc >= cf)
    assert (takes & opened).any()  # the clip floor gives back answers the floor held back
    clip_floored = dataclasses.replace(floored, select_clip_floor=cf)
    ok = (d >= floor) | (dc >= cf)
    want = np.where(takes & ok, k1.argmax(axis=1), k0.argmax(axis=1))
    np.testing.assert_array_equal(
        stage_classes(u, "cmvn_select", {"cmvn": clip_floored}, sharp), want
    )
    # the clip gate with a margin no entropy passes: the normalised class exactly where the
    # floor is open and d_clip reaches it
    cg = float(np.quantile(dc[d < floor], 0.75))
    no_entropy = dataclasses.replace(base, select_margin=8.0, select_floor=floor)
    clip_fired = (d >= floor) & (dc >= cg)
    assert (clip_fired & (l1.argmax(axis=1) != l0.argmax(axis=1))).any()
    assert ((d < floor) & (dc >= cg)).any()  # the floor holds back some clips the gate reaches
    want = np.where(clip_fired, l1.argmax(axis=1), l0.argmax(axis=1))
    gated_clip = dataclasses.replace(no_entropy, select_clip_gate=cg)
    np.testing.assert_array_equal(
        stage_classes(u, "cmvn_select", {"cmvn": gated_clip}, logits_of), want
    )
    # round 8: the normalised run's own shifts (α = w = 1/2 here) make both the normalised run
    # and the floor's distance d; mode cmvn keeps its own (docs/adaptation.md "Round 8")
    own = dataclasses.replace(floored, select_alpha_shift=1, select_weight_shift=1)
    cfg8 = CmvnConfig(0.5, 0.5, True)
    k8 = sharp(cmvn_normalised(u, cfg8))
    d8 = cmvn_shift(u, np.zeros(10), np.ones(10), cfg8)
    want = select_confident(k0, k8, 0.0, floor_ok=d8 >= floor)
    np.testing.assert_array_equal(stage_classes(u, "cmvn_select", {"cmvn": own}, sharp), want)
    assert (want != stage_classes(u, "cmvn_select", {"cmvn": floored}, sharp)).any()
    np.testing.assert_array_equal(
        stage_classes(u, "cmvn", {"cmvn": own}, sharp),
        stage_classes(u, "cmvn", {"cmvn": floored}, sharp),
    )
