"""Float reference of the gradient-free adaptation methods compared in `docs/adaptation.md`.

Every method runs forward-only on the device's model (MFCC → LSTM → linear head) with a few
hundred bytes of state. Two kinds:

* statistics methods, whose state depends only on the *inputs* of past clips and so can be
  computed for a whole stream at once (`cmvn_stream`, `latent_align_stream`), with a
  per-clip step function (`cmvn_step`) that is the device's algorithm and is tested equal to
  the batched form;
* latent searches: the paper's CMA-ES over z + V p (§3, Algorithm 1; `codegen.elatta.float_ref`)
  with another basis (`nuisance_basis`) or another objective (`search_adapt`).

All arrays are float64 unless stated; frames are MFCC [T, F] before normalisation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import signal

from codegen.base.errors import ConfigError
from codegen.elatta.cmaes import Cmaes
from codegen.elatta.float_ref import ElattaConfig, entropy, head_logits

FloatArray = npt.NDArray[np.float64]
VAR_FLOOR = 1e-4  # variance floor of a coefficient (a constant coefficient must not divide by 0)
OBJECTIVES: tuple[str, ...] = ("entropy", "entropy_pen", "infomax")


# ----------------------------------------------------------------------------- input side: CMVN


@dataclass(frozen=True)
class CmvnConfig:
    """Cepstral mean (and variance) normalisation blended with the training statistics.

    ``alpha=None``: strict, the statistics of the clip itself. Otherwise a causal exponential
    moving average over clips with factor ``alpha`` (a power of two on the device), updated with
    the current clip before it is normalised, starting from the training statistics.
    ``weight`` w blends: μ = (1 − w)·μ_tr + w·m, σ² = (1 − w)·σ_tr² + w·v. With
    ``variance=False`` only the mean is adapted (σ = σ_tr).
    """

    weight: float
    alpha: float | None = None
    variance: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.weight <= 1.0:
            raise ConfigError(f"weight={self.weight!r}: use a float in [0, 1]")
        if self.alpha is not None and not 0.0 < self.alpha <= 1.0:
            raise ConfigError(f"alpha={self.alpha!r}: use None or a float in (0, 1]")


@dataclass(frozen=True)
class CmvnState:
    """Running per-coefficient mean m and mean square q of the MFCC frames (2·F floats)."""

    mean: FloatArray
    sqmean: FloatArray

    @classmethod
    def initial(cls, mu_tr: npt.ArrayLike, sd_tr: npt.ArrayLike) -> CmvnState:
        mu = np.asarray(mu_tr, dtype=np.float64)
        sd = np.asarray(sd_tr, dtype=np.float64)
        return cls(mu.copy(), sd**2 + mu**2)


def _blend(
    m: FloatArray, q: FloatArray, mu_tr: FloatArray, sd_tr: FloatArray, cfg: CmvnConfig
) -> tuple[FloatArray, FloatArray]:
    """(μ, σ) used to normalise, from running statistics m, q (any leading shape)."""
    w = float(cfg.weight)
    mu = (1.0 - w) * mu_tr + w * m
    if not cfg.variance:
        return mu, np.broadcast_to(sd_tr, mu.shape)
    v = np.maximum(q - m**2, VAR_FLOOR)
    sd = np.sqrt((1.0 - w) * sd_tr**2 + w * v)
    return mu, sd


def cmvn_step(
    state: CmvnState,
    frames: npt.ArrayLike,
    mu_tr: npt.ArrayLike,
    sd_tr: npt.ArrayLike,
    cfg: CmvnConfig,
) -> tuple[CmvnState, FloatArray]:
    """One clip: update the state with its frame statistics, return (new state, normalised)."""
    x = np.asarray(frames, dtype=np.float64)
    mu0, sd0 = np.asarray(mu_tr, np.float64), np.asarray(sd_tr, np.float64)
    cm, cq = x.mean(axis=0), (x * x).mean(axis=0)
    if cfg.alpha is None:
        new = CmvnState(cm, cq)
    else:
        a = float(cfg.alpha)
        new = CmvnState((1 - a) * state.mean + a * cm, (1 - a) * state.sqmean + a * cq)
    mu, sd = _blend(new.mean, new.sqmean, mu0, sd0, cfg)
    out: FloatArray = (x - mu) / sd
    return new, out


def _ema(x: FloatArray, alpha: float, init: FloatArray) -> FloatArray:
    """y_i = (1 − α) y_{i−1} + α x_i along axis 0, y_{−1} = init (scipy lfilter, batched)."""
    zi = ((1.0 - alpha) * init)[None, :]
    y, _ = signal.lfilter([alpha], [1.0, -(1.0 - alpha)], x, axis=0, zi=zi)
    out: FloatArray = np.asarray(y, dtype=np.float64)
    return out


def shift_distance(m: FloatArray, q: FloatArray, mu0: FloatArray, sd0: FloatArray) -> FloatArray:
    """The shift gate's distance of running statistics m, q [N, F] from the training ones:
    d = mean_f(m_u² + (v_u − 1)²), m_u, v_u the mean and variance in units of μ_tr, σ_tr."""
    mu_u = (m - mu0) / sd0
    v_u = np.maximum(q - m**2, VAR_FLOOR) / sd0**2
    out: FloatArray = np.mean(mu_u**2 + (v_u - 1.0) ** 2, axis=1)
    return out


def _gate(
    m: FloatArray,
    q: FloatArray,
    mu: FloatArray,
    sd: FloatArray,
    mu0: FloatArray,
    sd0: FloatArray,
    gate: float | None,
) -> tuple[FloatArray, FloatArray]:
    """The shift gate (docs/adaptation.md "Audio mode"): where the running statistics m, q
    [N, F], in units of the training ones, are nearer to them than d = mean_f(m_u² +
    (v_u − 1)²) < τ, the clip keeps the training statistics (μ_tr, σ_tr)."""
    if gate is None:
        return mu, sd
    off = shift_distance(m, q, mu0, sd0) < gate
    mu, sd = mu.copy(), np.array(np.broadcast_to(sd, mu.shape))
    mu[off], sd[off] = mu0, np.broadcast_to(sd0, sd[off].shape)
    return mu, sd


def _lookahead_stats(
    x: FloatArray, mu0: FloatArray, sd0: FloatArray, cfg: CmvnConfig
) -> tuple[FloatArray, FloatArray]:
    """Running mean and mean square [N, F] after each clip of x [N, T, F] joined them."""
    cm, cq = x.mean(axis=1), (x * x).mean(axis=1)
    if cfg.alpha is not None:
        st = CmvnState.initial(mu0, sd0)
        cm = _ema(cm, float(cfg.alpha), st.mean)
        cq = _ema(cq, float(cfg.alpha), st.sqmean)
    return cm, cq


def cmvn_shift(
    feats: npt.ArrayLike, mu_tr: npt.ArrayLike, sd_tr: npt.ArrayLike, cfg: CmvnConfig
) -> FloatArray:
    """Per clip of ``feats`` [N, T, F] in order: the shift distance d (`shift_distance`) of the
    look-ahead running statistics after the clip joined them, what `cmvn_stream`'s gate tests."""
    x = np.asarray(feats, dtype=np.float64)
    mu0, sd0 = np.asarray(mu_tr, np.float64), np.asarray(sd_tr, np.float64)
    return shift_distance(*_lookahead_stats(x, mu0, sd0, cfg), mu0, sd0)


def cmvn_clip_shift(feats: npt.ArrayLike, mu_tr: npt.ArrayLike, sd_tr: npt.ArrayLike) -> FloatArray:
    """Per clip of ``feats`` [N, T, F]: d_clip, the shift distance (`shift_distance`) of the
    clip's own mean and variance from the training statistics (docs/adaptation.md "Round 6")."""
    x = np.asarray(feats, dtype=np.float64)
    mu0, sd0 = np.asarray(mu_tr, np.float64), np.asarray(sd_tr, np.float64)
    return shift_distance(x.mean(axis=1), (x * x).mean(axis=1), mu0, sd0)


def cmvn_stream(
    feats: npt.ArrayLike,
    mu_tr: npt.ArrayLike,
    sd_tr: npt.ArrayLike,
    cfg: CmvnConfig,
    gate: float | None = None,
) -> npt.NDArray[np.float32]:
    """`cmvn_step` over the clips of ``feats`` [N, T, F] in order (batched): float32 [N, T, F].
    ``gate`` τ: the shift gate on the statistics after the clip joined them (`_gate`)."""
    x = np.asarray(feats, dtype=np.float64)
    mu0, sd0 = np.asarray(mu_tr, np.float64), np.asarray(sd_tr, np.float64)
    cm, cq = _lookahead_stats(x, mu0, sd0, cfg)
    mu, sd = _blend(cm, cq, mu0, sd0, cfg)
    mu, sd = _gate(cm, cq, mu, sd, mu0, sd0, gate)
    return ((x - mu[:, None, :]) / sd[:, None, :]).astype(np.float32)


def cmvn_causal_stream(
    feats: npt.ArrayLike,
    mu_tr: npt.ArrayLike,
    sd_tr: npt.ArrayLike,
    cfg: CmvnConfig,
    gate: float | None = None,
) -> npt.NDArray[np.float32]:
    """The causal form of `cmvn_stream` for a device that hears the clip as it is spoken: clip i
    is normalised with the statistics of the clips before it (the EMA through clip i − 1,
    starting from the training statistics), and only then joins them. Nothing of clip i is
    needed before its first frame, so the audio mode can normalise each frame as the front end
    produces it.

    ``gate`` τ (a shift gate): the blend w applies only while the running statistics, in units
    of the training ones (û-domain mean m_u and variance v_u), are away from them:
    d = mean_f(m_u² + (v_u − 1)²) ≥ τ; otherwise the clip passes with the training statistics
    (w = 0). ``None``: no gate."""
    x = np.asarray(feats, dtype=np.float64)
    if cfg.alpha is None:
        raise ConfigError("the causal cmvn needs alpha (an EMA over past clips)")
    mu0, sd0 = np.asarray(mu_tr, np.float64), np.asarray(sd_tr, np.float64)
    st = CmvnState.initial(mu0, sd0)
    cm = _ema(x.mean(axis=1), float(cfg.alpha), st.mean)
    cq = _ema((x * x).mean(axis=1), float(cfg.alpha), st.sqmean)
    # state before clip i = state after clip i - 1
    m = np.concatenate([st.mean[None, :], cm[:-1]], axis=0)
    q = np.concatenate([st.sqmean[None, :], cq[:-1]], axis=0)
    mu, sd = _blend(m, q, mu0, sd0, cfg)
    mu, sd = _gate(m, q, mu, sd, mu0, sd0, gate)
    return ((x - mu[:, None, :]) / sd[:, None, :]).astype(np.float32)


def select_use(
    logits_raw: npt.ArrayLike,
    logits_norm: npt.ArrayLike,
    margin: float,
    fired: npt.ArrayLike | None = None,
    floor_ok: npt.ArrayLike | None = None,
) -> npt.NDArray[np.bool_]:
    """Mode cmvn_select's choice per clip (docs/adaptation.md "Round 3" … "Round 6"): the
    normalised run where its prediction entropy is below the raw run's by more than ``margin``
    nats and ``floor_ok`` (bool [N], the shift floor or the clip floor reached; None: no floor)
    is set, or where ``fired`` (bool [N], the shift gate, or the clip gate with the floor
    reached) is set."""
    use = entropy(np.asarray(logits_norm, np.float64)) < (
        entropy(np.asarray(logits_raw, np.float64)) - margin
    )
    if floor_ok is not None:
        use = use & np.asarray(floor_ok, bool)
    if fired is not None:
        use = use | np.asarray(fired, bool)
    out: npt.NDArray[np.bool_] = np.asarray(use, bool)
    return out


def select_confident(
    logits_raw: npt.ArrayLike,
    logits_norm: npt.ArrayLike,
    margin: float,
    fired: npt.ArrayLike | None = None,
    floor_ok: npt.ArrayLike | None = None,
) -> npt.NDArray[np.int64]:
    """Mode cmvn_select's classes: the normalised run's where `select_use` takes it, else the
    raw one's."""
    l0 = np.asarray(logits_raw, np.float64)
    l1 = np.asarray(logits_norm, np.float64)
    use = select_use(l0, l1, margin, fired, floor_ok)
    out: npt.NDArray[np.int64] = np.where(use, l1.argmax(axis=1), l0.argmax(axis=1))
    return out


def select_masks(
    d: npt.ArrayLike,
    d_clip: npt.ArrayLike,
    gate: float,
    floor: float,
    clip_floor: float,
    clip_gate: float,
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Mode cmvn_select's thresholds per clip, each 0 meaning none (docs/adaptation.md "Round 4"
    … "Round 6"; the integer form is `codegen.stages.cmvn_int.cmvn_select_int`): floor_ok = d ≥
    floor or d_clip ≥ clip floor (the entropy test may take the normalised class); fired = d ≥
    gate or (floor_ok and d_clip ≥ clip gate) (it is taken without the test)."""
    d, d_clip = np.asarray(d), np.asarray(d_clip)
    floor_ok = d >= floor if floor > 0 else np.ones(len(d), bool)
    if clip_floor > 0:
        floor_ok |= d_clip >= clip_floor
    fired = d >= gate if gate > 0 else np.zeros(len(d), bool)
    if clip_gate > 0:
        fired |= floor_ok & (d_clip >= clip_gate)
    return fired, floor_ok


# ------------------------------------------------------------------ latent-statistics alignment


@dataclass(frozen=True)
class AlignConfig:
    """EMA (factor ``alpha``) of the latent mean and variance, blended with source statistics."""

    weight: float
    alpha: float


def latent_align_stream(
    z: npt.ArrayLike, mu_s: npt.ArrayLike, sd_s: npt.ArrayLike, cfg: AlignConfig
) -> FloatArray:
    """z′_i = μ_s + (z_i − μ_i)·σ_s/σ_i, μ_i, σ_i² the blended running statistics up to clip i."""
    Z = np.asarray(z, dtype=np.float64)
    mu0, sd0 = np.asarray(mu_s, np.float64), np.asarray(sd_s, np.float64)
    m = _ema(Z, float(cfg.alpha), mu0)
    q = _ema(Z * Z, float(cfg.alpha), sd0**2 + mu0**2)
    w = float(cfg.weight)
    mu = (1 - w) * mu0 + w * m
    sd = np.sqrt((1 - w) * sd0**2 + w * np.maximum(q - m**2, VAR_FLOOR))
    out: FloatArray = mu0 + (Z - mu) * (sd0 / sd)
    return out


# ------------------------------------------------------------------------------ latent searches


def nuisance_basis(
    z_noisy: npt.ArrayLike, z_clean: npt.ArrayLike, k: int
) -> tuple[FloatArray, float]:
    """(V [D, k], r): principal directions of the paired shifts z(noisy) − z(clean) (uncentred:
    the mean shift is part of the nuisance) and r, the RMS of the shifts along the first one."""
    d = np.asarray(z_noisy, np.float64) - np.asarray(z_clean, np.float64)
    if d.ndim != 2 or d.shape[1] < k:
        raise ConfigError(f"shift pairs must have shape [N, D >= {k}], got {d.shape}")
    _, _, vt = np.linalg.svd(d, full_matrices=False)
    v = vt[:k].T.copy()
    r = float(np.sqrt(np.mean((d @ v[:, 0]) ** 2)))
    return v, r


@dataclass(frozen=True)
class SearchConfig:
    """Latent search: the paper's CMA-ES (``elatta``, mode strict or continual_bounded) with
    another objective. ``entropy_pen``: H + γ‖p‖²/r²; ``infomax`` (continual): over the last
    ``window`` clips' chosen posteriors and the candidate, mean entropy − entropy of the mean."""

    elatta: ElattaConfig
    objective: str = "entropy"
    gamma: float = 0.0
    scale: float = 1.0  # r of the penalty
    window: int = 8

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ConfigError(f"objective={self.objective!r}: use one of {OBJECTIVES}")
        if self.window < 1 or self.scale <= 0 or self.gamma < 0:
            raise ConfigError("window >= 1, scale > 0 and gamma >= 0 are required")


def _softmax(L: FloatArray) -> FloatArray:
    e = np.exp(L - L.max(axis=-1, keepdims=True))
    out: FloatArray = e / e.sum(axis=-1, keepdims=True)
    return out


def search_adapt(
    z_t: npt.ArrayLike,
    W: npt.ArrayLike,
    b: npt.ArrayLike,
    V: npt.ArrayLike,
    sample_ids: npt.ArrayLike,
    cfg: SearchConfig,
) -> npt.NDArray[np.int64]:
    """Predictions after the search over the rows of ``z_t`` (in stream order).

    Same sampling as `codegen.elatta.float_ref.adapt` (normals from ``[seed, id]``, best
    sampled p over all iterations); with objective ``entropy`` and no window it returns the
    same predictions.
    """
    Z = np.asarray(z_t, np.float64)
    Wa, ba, Va = np.asarray(W, np.float64), np.asarray(b, np.float64), np.asarray(V, np.float64)
    ids = np.asarray(sample_ids)
    ec = cfg.elatta
    params = ec.cmaes_params()
    lam, n_iter, k = params.lam, int(ec.n_iter), int(ec.k)
    pred = np.empty(Z.shape[0], dtype=np.int64)
    p_prev = np.zeros(k)
    hist: list[FloatArray] = []
    for i in range(Z.shape[0]):
        normals = np.random.default_rng([int(ec.seed), int(ids[i])]).standard_normal(
            (n_iter, lam, k)
        )
        if ec.mode == "continual_bounded":
            m0 = ec.beta * p_prev
            nrm = float(np.linalg.norm(m0))
            if nrm > ec.radius:
                m0 = m0 * (ec.radius / nrm)
        else:
            m0 = np.zeros(k)
        es = Cmaes.start(params, m0, float(ec.sigma0))
        best = (math.inf, np.zeros(k), head_logits(Z[i], Wa, ba))
        past = np.array(hist[-cfg.window :]) if hist else np.zeros((0, Wa.shape[0]))
        for t in range(n_iter):
            X = es.ask_from_z(normals[t])
            Lc = head_logits(Z[i] + X @ Va.T, Wa, ba)
            if cfg.objective == "infomax":
                P = _softmax(Lc)  # [λ, C]
                n = past.shape[0] + 1
                h_each = (entropy(Lc) + (entropy(np.log(past + 1e-30)).sum() if n > 1 else 0)) / n
                mean_p = (P + past.sum(axis=0)) / n
                f = h_each - (-(mean_p * np.log(mean_p + 1e-30)).sum(axis=1))
            else:
                f = entropy(Lc)
                if cfg.objective == "entropy_pen":
                    f = f + cfg.gamma * np.sum(X * X, axis=1) / cfg.scale**2
            j = int(np.argmin(f))
            if f[j] < best[0]:
                best = (float(f[j]), X[j].copy(), Lc[j].copy())
            es.tell(X, f)
        pred[i] = int(np.argmax(best[2]))
        p_prev = best[1]
        hist.append(_softmax(best[2][None, :])[0])
        if len(hist) > cfg.window:
            hist.pop(0)
    return pred


def cmvn_normalised(
    u: npt.ArrayLike, cfg: CmvnConfig, gate: float | None = None
) -> npt.NDArray[np.float32]:
    """The device's form of `cmvn_stream`: on features already normalised with the training
    statistics, u = (x − μ_tr)/σ_tr, with running statistics m_u, v_u of u (start 0 and 1):
    û = (u − w·m_u) / √(1 − w + w·v_u). Algebraically equal to `cmvn_stream` on x (the
    training statistics cancel), so the device needs no copy of μ_tr, σ_tr."""
    f = np.asarray(u).shape[-1]
    return cmvn_stream(u, np.zeros(f), np.ones(f), cfg, gate)
