"""Float ELaTTA reference: per-sample CMA-ES search of p ∈ R^k minimising the head's entropy.

The method is the paper's Algorithm 1 (§3 "ELaTTA: Latent Subspace Coefficients Adaptation"):
z_t = Enc(x) is computed once; candidates z = z_t + V_k p are scored by the Shannon entropy of
softmax(W z + b); CMA-ES (`codegen.elatta.cmaes`, pycma 4.5.0 equations) runs n iterations of λ
candidates from mean m⁰ with step size σ₀ and C = I; the output is the best *sampled* p over
all iterations and its prediction. Modes (docs/elatta.md §3):

* ``no_adapt``: p = 0.
* ``strict``: m⁰ = 0 for every sample; samples are independent.
* ``continual``: m⁰ = previous sample's best p (the paper's rule; diverges with a linear head,
  see `docs/elatta.md`).
* ``continual_bounded``: m⁰ = β·p_prev with ‖m⁰‖ clipped to ``radius``.

Randomness: sample ``i`` draws its standard normals from ``np.random.default_rng([seed, id_i])``
as one [n, λ, k] block, so a sample's result depends on (seed, sample id, m⁰) only, never on
which other samples ran or in which order (continual modes depend on order through m⁰).

Everything is float64. The fixed-point reference and the firmware are measured against this.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.errors import ConfigError
from codegen.elatta.cmaes import Cmaes, CmaesParams, FloatArray, default_popsize

IntArray = npt.NDArray[np.int64]
MODES: tuple[str, ...] = ("no_adapt", "strict", "continual", "continual_bounded")


def is_int(v: object) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def _is_real(v: object) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(
        v, bool | np.bool_
    )


@dataclass(frozen=True)
class ElattaConfig:
    """One ELaTTA run. Defaults follow the paper's KWS setting (k = 2, n = 2, λ = 6).

    ``lam=None`` means λ = 4 + ⌊3 ln k⌋. ``beta`` and ``radius`` only act in
    ``continual_bounded``; ``select_bounded`` chooses them on source data, ``select_sigma0``
    chooses ``sigma0`` (the paper does not give σ₀).
    """

    k: int = 2
    n_iter: int = 2
    lam: int | None = None
    sigma0: float = 0.1
    mode: str = "strict"
    seed: int = 0
    beta: float = 0.5
    radius: float = 1.0
    qelatta_v1: bool = False
    active: bool = True

    def __post_init__(self) -> None:
        if not is_int(self.k) or self.k < 1:
            raise ConfigError(f"k={self.k!r} is not allowed: use an integer >= 1 (paper KWS: 2)")
        if not is_int(self.n_iter) or self.n_iter < 1:
            raise ConfigError(
                f"n_iter={self.n_iter!r} is not allowed: use an integer >= 1 (paper: 2 KWS, 8 IC)"
            )
        if self.lam is not None and (not is_int(self.lam) or self.lam < 2):
            raise ConfigError(
                f"lam={self.lam!r} is not allowed: use None (4 + floor(3 ln k) = "
                f"{default_popsize(self.k)}) or an integer >= 2"
            )
        if not _is_real(self.sigma0) or not math.isfinite(self.sigma0) or self.sigma0 <= 0:
            raise ConfigError(f"sigma0={self.sigma0!r} is not allowed: use a finite float > 0")
        if self.mode not in MODES:
            raise ConfigError(f"mode={self.mode!r} is not allowed: use one of {MODES}")
        if not is_int(self.seed) or self.seed < 0:
            raise ConfigError(f"seed={self.seed!r} is not allowed: use an integer >= 0")
        if not _is_real(self.beta) or not 0.0 <= self.beta <= 1.0:
            raise ConfigError(f"beta={self.beta!r} is not allowed: use a float in [0, 1]")
        if not _is_real(self.radius) or not math.isfinite(self.radius) or self.radius < 0:
            raise ConfigError(f"radius={self.radius!r} is not allowed: use a finite float >= 0")
        if not isinstance(self.qelatta_v1, bool):
            raise ConfigError(f"qelatta_v1={self.qelatta_v1!r} is not allowed: use True or False")
        if not isinstance(self.active, bool):
            raise ConfigError(f"active={self.active!r} is not allowed: use True or False")

    @property
    def popsize(self) -> int:
        """λ actually used."""
        return default_popsize(self.k) if self.lam is None else int(self.lam)

    def cmaes_params(self) -> CmaesParams:
        """pycma 4.5.0 constants for this k, λ and active setting."""
        return CmaesParams.for_dim(int(self.k), self.popsize, self.active)

    def replace(self, **changes: Any) -> ElattaConfig:
        """A validated copy with some fields changed."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, eq=False)
class ElattaResult:
    """Per-sample outputs (N rows). ``H_*`` are natural-log entropies."""

    pred_noadapt: IntArray
    logits_noadapt: FloatArray
    H_noadapt: FloatArray
    pred: IntArray
    logits: FloatArray
    H_best: FloatArray
    p_best: FloatArray


@dataclass(frozen=True, eq=False)
class TraceEvent:
    """One CMA-ES iteration of one sample, as seen by the ``trace`` callback of `adapt`.

    ``candidates`` are the p actually evaluated (after QELaTTA-V1 quantisation), ``H`` their
    entropies, ``mean``/``sigma`` the distribution they were drawn from.
    """

    sample_index: int
    sample_id: int
    iteration: int
    mean: FloatArray
    sigma: float
    candidates: FloatArray
    H: FloatArray


TraceFn = Callable[[TraceEvent], None]


def entropy(logits: npt.ArrayLike) -> FloatArray:
    """Shannon entropy (nats) of softmax over the last axis, H = ln S + Σ e_i|d_i|/S.

    d_i = l_i − max l ≤ 0, e_i = exp(d_i), S = Σ e_i ≥ 1 (docs/cmaes.md §5): no overflow,
    and the same formula the fixed-point pipeline evaluates.
    """
    L = np.asarray(logits, dtype=np.float64)
    d = L - np.max(L, axis=-1, keepdims=True)
    e = np.exp(d)
    S = np.sum(e, axis=-1)
    H: FloatArray = np.log(S) + np.sum(e * np.abs(d), axis=-1) / S
    return H


def head_logits(z: npt.ArrayLike, W: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    """Linear head: logits = W z + b for z [..., D], W [C, D], b [C]."""
    out: FloatArray = np.asarray(z, np.float64) @ np.asarray(W, np.float64).T + np.asarray(
        b, np.float64
    )
    return out


def quantize_1bit(p: npt.ArrayLike) -> FloatArray:
    """QELaTTA-V1 quantiser: each element of p (last axis) takes one of two values.

    Our reading of the paper's definition ("each element of p can take only two values") is the
    least-squares two-level quantiser of each vector: split the sorted elements into a low and a
    high group at the point that minimises the squared error, and replace every element by the
    mean of its group (1 bit per element plus two shared levels). For k ≤ 2 it is the identity,
    which is what the paper states for KWS: "p consists of two kinds of values ... ELaTTA reduces
    to QELaTTA-V1". Ties in the error pick the lowest split; equal values are kept in order.
    """
    P = np.asarray(p, dtype=np.float64)
    k = P.shape[-1]
    if k <= 2:
        return P.copy()
    flat = P.reshape(-1, k)
    order = np.argsort(flat, axis=1, kind="stable")
    S = np.take_along_axis(flat, order, axis=1)
    c1 = np.cumsum(S, axis=1)
    c2 = np.cumsum(S * S, axis=1)
    tot1, tot2 = c1[:, -1:], c2[:, -1:]
    s = np.arange(1, k, dtype=np.float64)  # size of the low group
    lo1, lo2 = c1[:, :-1], c2[:, :-1]
    hi1, hi2 = tot1 - lo1, tot2 - lo2
    # SSE(split) = Σ_lo x² − (Σ_lo x)²/s + Σ_hi x² − (Σ_hi x)²/(k − s)
    sse = (lo2 - lo1**2 / s) + (hi2 - hi1**2 / (k - s))
    split = np.argmin(sse, axis=1)  # first minimum: lowest split on ties
    rows = np.arange(flat.shape[0])
    n_lo = split + 1
    mean_lo = lo1[rows, split] / n_lo
    mean_hi = hi1[rows, split] / (k - n_lo)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(k)[None, :].repeat(flat.shape[0], 0), axis=1)
    q = np.where(rank < n_lo[:, None], mean_lo[:, None], mean_hi[:, None])
    out: FloatArray = q.reshape(P.shape)
    return out


def _check_inputs(
    z: npt.ArrayLike, W: npt.ArrayLike, b: npt.ArrayLike, V: npt.ArrayLike, k: int
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    Z = np.asarray(z, dtype=np.float64)
    Wa = np.asarray(W, dtype=np.float64)
    ba = np.asarray(b, dtype=np.float64)
    Va = np.asarray(V, dtype=np.float64)
    if Z.ndim != 2:
        raise ConfigError(f"latents must have shape [N, D], got {Z.shape}")
    D = Z.shape[1]
    if Wa.ndim != 2 or Wa.shape[1] != D:
        raise ConfigError(f"head W must have shape [C, {D}], got {Wa.shape}")
    if ba.shape != (Wa.shape[0],):
        raise ConfigError(f"head b must have shape [{Wa.shape[0]}], got {ba.shape}")
    if Va.shape != (D, k):
        raise ConfigError(f"basis V must have shape [{D}, {k}] (D, k), got {Va.shape}")
    for name, a in (("latents", Z), ("W", Wa), ("b", ba), ("V", Va)):
        if not np.all(np.isfinite(a)):
            raise ConfigError(f"{name} contains NaN or Inf")
    return Z, Wa, ba, Va


def _clip_norm(v: FloatArray, radius: float) -> FloatArray:
    """v scaled down to ‖v‖ ≤ radius (unchanged if already inside)."""
    nrm = float(np.linalg.norm(v))
    if nrm > radius:
        out: FloatArray = v * (radius / nrm)
        return out
    return v


def initial_mean(cfg: ElattaConfig, p_prev: FloatArray) -> FloatArray:
    """m⁰ for one sample given the previous sample's best p (zeros for the first sample)."""
    if cfg.mode == "continual":
        return p_prev.copy()
    if cfg.mode == "continual_bounded":
        return _clip_norm(float(cfg.beta) * p_prev, float(cfg.radius))
    return np.zeros(cfg.k)


def adapt(
    z_t: npt.ArrayLike,
    W: npt.ArrayLike,
    b: npt.ArrayLike,
    V: npt.ArrayLike,
    sample_ids: npt.ArrayLike,
    cfg: ElattaConfig,
    trace: TraceFn | None = None,
) -> ElattaResult:
    """Run ELaTTA over the rows of ``z_t`` [N, D] (in this order for the continual modes).

    Returns the best sampled p of each sample (lowest H over all n·λ candidates, ties by
    (H, iteration, index)). p = 0 is not a candidate: as in the paper the output is always a
    sampled point, so ``H_best`` may exceed ``H_noadapt``. ``trace`` is called once per
    iteration with the evaluated candidates.
    """
    Z, Wa, ba, Va = _check_inputs(z_t, W, b, V, cfg.k)
    ids = np.asarray(sample_ids)
    if ids.shape != (Z.shape[0],) or not np.issubdtype(ids.dtype, np.integer):
        raise ConfigError(f"sample_ids must be an integer array of shape [{Z.shape[0]}]")
    if ids.size and int(ids.min()) < 0:
        raise ConfigError(f"sample_ids must be >= 0, got {int(ids.min())}")
    N, k = Z.shape[0], cfg.k
    L0 = head_logits(Z, Wa, ba)
    H0 = entropy(L0)
    pred0 = np.argmax(L0, axis=1).astype(np.int64)
    if cfg.mode == "no_adapt":
        return ElattaResult(pred0, L0, H0, pred0.copy(), L0.copy(), H0.copy(), np.zeros((N, k)))
    params = cfg.cmaes_params()
    lam, n_iter = params.lam, int(cfg.n_iter)
    logits = np.empty_like(L0)
    H_best = np.empty(N)
    p_best = np.empty((N, k))
    p_prev = np.zeros(k)
    for i in range(N):
        sid = int(ids[i])
        normals = np.random.default_rng([int(cfg.seed), sid]).standard_normal((n_iter, lam, k))
        es = Cmaes.start(params, initial_mean(cfg, p_prev), float(cfg.sigma0))
        best_h = math.inf
        best_p = np.zeros(k)
        best_l = L0[i]
        for t in range(n_iter):
            mean, sigma = es.state.m, es.state.sigma
            X = es.ask_from_z(normals[t])
            P = quantize_1bit(X) if cfg.qelatta_v1 else X
            # z = z_t + V_k p, logits = W z + b (paper eq. 1), for all λ candidates at once
            Lc = head_logits(Z[i] + P @ Va.T, Wa, ba)
            Hc = entropy(Lc)
            j = int(np.argmin(Hc))  # first minimum: lowest index among ties
            if Hc[j] < best_h:  # strict: an earlier iteration wins ties
                best_h, best_p, best_l = float(Hc[j]), P[j].copy(), Lc[j].copy()
            if trace is not None:
                trace(TraceEvent(i, sid, t, mean, sigma, P, Hc))
            es.tell(X, Hc)
            if cfg.qelatta_v1:
                # QELaTTA-V1: the iteration's solution (the mean) is quantised too
                es.set_mean(quantize_1bit(es.state.m))
        logits[i], H_best[i], p_best[i] = best_l, best_h, best_p
        p_prev = best_p
    pred = np.argmax(logits, axis=1).astype(np.int64)
    return ElattaResult(pred0, L0, H0, pred, logits, H_best, p_best)


def accuracy(pred: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """Fraction of correct predictions in [0, 1]."""
    p, y = np.asarray(pred), np.asarray(labels)
    if p.shape != y.shape:
        raise ConfigError(f"predictions {p.shape} and labels {y.shape} differ in shape")
    return float(np.mean(p == y)) if p.size else 0.0


def latent_spread(z: npt.ArrayLike, V: npt.ArrayLike) -> FloatArray:
    """Std of the centred latents along each column of V: s_j/√N of the source SVD."""
    Z = np.asarray(z, dtype=np.float64)
    coords = (Z - Z.mean(axis=0)) @ np.asarray(V, dtype=np.float64)
    out: FloatArray = np.sqrt(np.mean(coords**2, axis=0))
    return out


def default_sigma0_grid(
    z_val: npt.ArrayLike,
    V: npt.ArrayLike,
    fractions: Sequence[float] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0),
) -> tuple[float, ...]:
    """σ₀ candidates as fractions of the source spread along the first basis vector."""
    s1 = float(latent_spread(z_val, V)[0])
    return tuple(f * s1 for f in fractions)


@dataclass(frozen=True)
class Sigma0Row:
    """One σ₀ measured in strict mode on clean source validation latents."""

    sigma0: float
    acc_noadapt: float
    acc_strict: float
    delta_points: float
    mean_H_noadapt: float
    mean_H_best: float
    mean_H_reduction: float
    same_pred: float
    passes: bool


def select_sigma0(
    z_val: npt.ArrayLike,
    labels_val: npt.ArrayLike,
    W: npt.ArrayLike,
    b: npt.ArrayLike,
    V: npt.ArrayLike,
    grid: Sequence[float],
    cfg_base: ElattaConfig,
    max_drop_points: float = 0.25,
) -> tuple[float, tuple[Sigma0Row, ...]]:
    """Choose σ₀ target-agnostically on clean SOURCE validation latents.

    Rule: the largest grid value whose strict accuracy is at most ``max_drop_points`` below
    no-adapt (default 0.25: half of the docs/targets.md §1 budget of 0.5 points for strict) and
    whose mean entropy reduction is positive. Clean source data is where the head
    is already right, so adaptation there can only be neutral or harmful: the largest σ₀ that
    is still harmless there gives the search the most room on shifted data without using any
    target sample. If no value passes, the smallest grid value is returned (closest to
    no-adapt) and every row says ``passes=False``.
    """
    if len(grid) == 0:
        raise ConfigError("select_sigma0 needs a non-empty grid of sigma0 values")
    y = np.asarray(labels_val)
    ids = np.arange(np.asarray(z_val).shape[0])
    rows = []
    for s in sorted(float(v) for v in grid):
        res = adapt(z_val, W, b, V, ids, cfg_base.replace(mode="strict", sigma0=s))
        acc0, acc1 = accuracy(res.pred_noadapt, y), accuracy(res.pred, y)
        red = float(np.mean(res.H_noadapt - res.H_best))
        delta = 100.0 * (acc1 - acc0)
        rows.append(
            Sigma0Row(
                sigma0=s,
                acc_noadapt=acc0,
                acc_strict=acc1,
                delta_points=delta,
                mean_H_noadapt=float(np.mean(res.H_noadapt)),
                mean_H_best=float(np.mean(res.H_best)),
                mean_H_reduction=red,
                same_pred=float(np.mean(res.pred == res.pred_noadapt)),
                passes=bool(delta >= -max_drop_points and red > 0),
            )
        )
    passing = [r.sigma0 for r in rows if r.passes]
    return (max(passing) if passing else rows[0].sigma0), tuple(rows)


@dataclass(frozen=True)
class BoundedRow:
    """One (β, radius) measured in continual_bounded mode on a source validation stream."""

    beta: float
    radius_multiple: float
    radius: float
    acc_noadapt: float
    acc_bounded: float
    delta_points: float
    max_norm_p: float
    passes: bool


def select_bounded(
    z_val: npt.ArrayLike,
    labels_val: npt.ArrayLike,
    W: npt.ArrayLike,
    b: npt.ArrayLike,
    V: npt.ArrayLike,
    cfg_base: ElattaConfig,
    betas: Sequence[float] = (0.25, 0.5, 0.75),
    radius_multiples: Sequence[float] = (0.25, 0.5, 1.0),
    max_drop_points: float = 0.5,
) -> tuple[float, float, tuple[BoundedRow, ...]]:
    """Choose β and radius for ``continual_bounded`` on a clean SOURCE validation stream.

    radius = multiple × ‖spread‖, the RMS norm of the centred source latents' coordinates in
    span(V) (`latent_spread`), so the carried-over mean never leaves the region the source data
    occupies. Each pair runs the validation rows as one stream (in the given order) with
    ``cfg_base.sigma0``. Rule: among pairs whose accuracy is at most ``max_drop_points`` below
    no-adapt (default 0.5: half of the docs/targets.md §1 budget of 1 point for bounded continual),
    take the largest radius, then the largest β (the most carry-over the head tolerates). If none
    passes, β = 0 and radius = 0, which makes the mode equal to strict.
    """
    if len(betas) == 0 or len(radius_multiples) == 0:
        raise ConfigError("select_bounded needs non-empty betas and radius_multiples")
    y = np.asarray(labels_val)
    Z = np.asarray(z_val, dtype=np.float64)
    ids = np.arange(Z.shape[0])
    scale = float(np.linalg.norm(latent_spread(Z, V)))
    rows = []
    for mult in sorted(float(v) for v in radius_multiples):
        for beta in sorted(float(v) for v in betas):
            radius = mult * scale
            cfg = cfg_base.replace(mode="continual_bounded", beta=beta, radius=radius)
            res = adapt(Z, W, b, V, ids, cfg)
            acc0, acc1 = accuracy(res.pred_noadapt, y), accuracy(res.pred, y)
            delta = 100.0 * (acc1 - acc0)
            rows.append(
                BoundedRow(
                    beta=beta,
                    radius_multiple=mult,
                    radius=radius,
                    acc_noadapt=acc0,
                    acc_bounded=acc1,
                    delta_points=delta,
                    max_norm_p=float(np.max(np.linalg.norm(res.p_best, axis=1), initial=0.0)),
                    passes=bool(delta >= -max_drop_points),
                )
            )
    passing = [r for r in rows if r.passes]
    if not passing:
        return 0.0, 0.0, tuple(rows)
    best = max(passing, key=lambda r: (r.radius, r.beta))
    return best.beta, best.radius, tuple(rows)


@dataclass(frozen=True)
class ShiftRow:
    """Strict ELaTTA on clean latents shifted by a known vector V·s inside span(V)."""

    shift: tuple[float, ...]
    shift_norm: float
    sigma0: float
    acc_clean: float
    acc_shifted: float
    acc_adapted: float
    recovered: float
    mean_H_shifted: float
    mean_H_adapted: float
    mean_cos_to_correction: float


def shift_recovery(
    z_clean: npt.ArrayLike,
    labels: npt.ArrayLike,
    W: npt.ArrayLike,
    b: npt.ArrayLike,
    V: npt.ArrayLike,
    shifts: npt.ArrayLike,
    sigma_grid: Sequence[float],
    cfg_base: ElattaConfig,
) -> tuple[ShiftRow, ...]:
    """Mechanism measurement: how much of a known in-subspace shift does strict ELaTTA undo?

    For each coefficient shift s (rows of ``shifts`` [S, k]) the latents become z + V s; p = −s
    would restore the clean accuracy exactly. ``recovered`` = (acc_adapted − acc_shifted) /
    (acc_clean − acc_shifted) (NaN when the shift costs no accuracy); ``mean_cos_to_correction``
    is the mean cosine between the chosen p and −s (1 = the search moved straight back).
    """
    Z = np.asarray(z_clean, dtype=np.float64)
    Va = np.asarray(V, dtype=np.float64)
    S = np.atleast_2d(np.asarray(shifts, dtype=np.float64))
    if S.shape[1] != cfg_base.k:
        raise ConfigError(f"shifts must have shape [S, {cfg_base.k}], got {S.shape}")
    y = np.asarray(labels)
    ids = np.arange(Z.shape[0])
    acc_clean = accuracy(np.argmax(head_logits(Z, W, b), axis=1), y)
    rows = []
    for s in S:
        Zs = Z + Va @ s
        for sig in sorted(float(v) for v in sigma_grid):
            res = adapt(Zs, W, b, Va, ids, cfg_base.replace(mode="strict", sigma0=sig))
            acc_sh, acc_ad = accuracy(res.pred_noadapt, y), accuracy(res.pred, y)
            gap = acc_clean - acc_sh
            corr = -s / max(float(np.linalg.norm(s)), 1e-300)
            pn = np.linalg.norm(res.p_best, axis=1)
            cos = (res.p_best @ corr) / np.where(pn > 0, pn, 1.0)
            rows.append(
                ShiftRow(
                    shift=tuple(float(v) for v in s),
                    shift_norm=float(np.linalg.norm(s)),
                    sigma0=sig,
                    acc_clean=acc_clean,
                    acc_shifted=acc_sh,
                    acc_adapted=acc_ad,
                    recovered=(acc_ad - acc_sh) / gap if gap > 0 else math.nan,
                    mean_H_shifted=float(np.mean(res.H_noadapt)),
                    mean_H_adapted=float(np.mean(res.H_best)),
                    mean_cos_to_correction=float(np.mean(cos)),
                )
            )
    return tuple(rows)


def format_rows(rows: Sequence[object]) -> str:
    """Plain-text table of dataclass rows (`Sigma0Row`, `BoundedRow`, `ShiftRow`)."""
    if not rows:
        return "(no rows)"
    names = [f.name for f in dataclasses.fields(rows[0])]  # type: ignore[arg-type]

    def fmt(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        if isinstance(v, tuple):
            return "(" + ", ".join(fmt(x) for x in v) + ")"
        return str(v)

    cells = [[fmt(getattr(r, n)) for n in names] for r in rows]
    widths = [max(len(n), *(len(c[i]) for c in cells)) for i, n in enumerate(names)]
    lines = ["  ".join(n.rjust(w) for n, w in zip(names, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(cr, widths, strict=True)) for cr in cells]
    return "\n".join(lines)


# ------------------------------------------------------------------ the float encoder


def _sigmoid(x: FloatArray) -> FloatArray:
    out: FloatArray = 0.5 * (1.0 + np.tanh(0.5 * x))
    return out


def encode_float(x: npt.ArrayLike, model: Any) -> FloatArray:
    """The float encoder of a `codegen.ir.nodes.Model`: its layers bottom to top (each hands its
    whole output sequence to the next), the last one's pooling, then the MLP head's hidden
    layers -> z [N, D]."""
    z = np.asarray(x, dtype=np.float64)
    last = len(model.encoder) - 1
    for n, layer in enumerate(model.encoder):
        z = layer_float(z, layer, sequence=n < last)
    for d in getattr(model, "mlp", ()):  # hidden Linear + ReLU layers: the latent is the last
        z = np.maximum(z @ d.weight.values.T + d.bias.values, 0.0)
    return z


def layer_float(x: npt.ArrayLike, layer: Any, sequence: bool = False) -> FloatArray:
    """One float layer of any kind (``layer.kind``, `FLOAT_LAYERS`) over x [N, T, F]: its pooled
    output [N, H], or with ``sequence`` every step's h [N, T, H]."""
    run = FLOAT_LAYERS.get(getattr(layer, "kind", ""))
    if run is None:
        raise ValueError(f"no float twin for a layer of kind {getattr(layer, 'kind', None)!r}")
    return run(x, layer, sequence=sequence)[0]


Step = Callable[[FloatArray, FloatArray], tuple[FloatArray, dict[str, FloatArray]]]


def _recurrence(
    x: npt.ArrayLike, layer: Any, step: Step, record: bool, sequence: bool
) -> tuple[FloatArray, dict[str, FloatArray]]:
    """``step(x_t, h) -> (h', values to record)`` over the frames of x [N, T, F] from h = 0, then
    the layer's pooling (``layer.pool``: h_T, the mean or the maximum of h_t) or the whole
    sequence [N, T, H]; with ``record`` the per-step maxima and fractions `step` reports."""
    X = np.asarray(x, dtype=np.float64)
    N, T, _ = X.shape
    H = layer.hidden_size
    h = np.zeros((N, H))
    pool = getattr(layer, "pool", "last")
    acc = np.zeros((N, H)) if pool == "mean" else np.full((N, H), -np.inf)
    seq = np.empty((N, T, H)) if sequence else None
    stats: dict[str, list[float]] = {}
    for t in range(T):
        h, rec = step(X[:, t, :], h)
        if seq is not None:
            seq[:, t] = h
        if pool == "mean":
            acc += h
        elif pool == "max":
            np.maximum(acc, h, out=acc)
        if record:
            for name, v in rec.items():
                stats.setdefault(name, []).append(float(v))
    z = acc / T if pool == "mean" else acc if pool == "max" else h
    if seq is not None:  # the whole output sequence [N, T, H] (a lower layer of a stack)
        z = seq
    return z, {k: np.asarray(v) for k, v in stats.items()}


def lstm_float(
    x: npt.ArrayLike, lstm: Any, record: bool = False, sequence: bool = False
) -> tuple[FloatArray, dict[str, FloatArray]]:
    """float64 torch.nn.LSTM recurrence over x [N, T, F] -> (z [N, H], ranges); ``lstm`` is a
    `codegen.ir.nodes.Lstm` (float weights, torch gate order i, f, g, o); z is h_T, or the mean or
    maximum of h_t over the steps (``lstm.pool``).

    With ``record`` the dict holds the per-step maxima over the batch of |c|, |h| and of each
    gate's pre-activation (`max_c`, `max_h`, `max_pre_i` …, each [T]) and the fraction of gate
    pre-activations beyond the integer LUT's input range (`sat_i` …: |x| > 16 for σ gates,
    |x| > 8 for the tanh gate).
    """
    H = lstm.hidden_size
    w_ih, w_hh = lstm.w_ih.values, lstm.w_hh.values
    b = lstm.b_ih.values + lstm.b_hh.values
    c = np.zeros((np.shape(x)[0], H))

    def step(xt: FloatArray, h: FloatArray) -> tuple[FloatArray, dict[str, FloatArray]]:
        nonlocal c
        pre = xt @ w_ih.T + h @ w_hh.T + b
        pi, pf, pg, po = (pre[:, n * H : (n + 1) * H] for n in range(4))
        c = _sigmoid(pf) * c + _sigmoid(pi) * np.tanh(pg)
        h = _sigmoid(po) * np.tanh(c)
        if not record:
            return h, {}
        rec: dict[str, Any] = {}
        for name, p, lim in (("i", pi, 16.0), ("f", pf, 16.0), ("g", pg, 8.0), ("o", po, 16.0)):
            rec[f"max_pre_{name}"] = np.max(np.abs(p), initial=0)
            rec[f"sat_{name}"] = np.mean(np.abs(p) > lim)
        rec["max_c"] = np.max(np.abs(c), initial=0.0)
        rec["max_h"] = np.max(np.abs(h), initial=0.0)
        return h, rec

    return _recurrence(x, lstm, step, record, sequence)


def gru_float(
    x: npt.ArrayLike, gru: Any, record: bool = False, sequence: bool = False
) -> tuple[FloatArray, dict[str, FloatArray]]:
    """float64 torch.nn.GRU recurrence over x [N, T, F] (gate rows r, z, n;
    n = tanh(x_n + r ⊙ (W_hn h + b_hn)), h' = (1 − z) n + z h) -> (z [N, H], ranges) as
    `lstm_float`; ``record`` keeps the per-step maximum |h| (`max_h`)."""
    H = gru.hidden_size
    w_ih, w_hh = gru.w_ih.values, gru.w_hh.values
    b_ih, b_hh = gru.b_ih.values, gru.b_hh.values

    def step(xt: FloatArray, h: FloatArray) -> tuple[FloatArray, dict[str, FloatArray]]:
        ax = xt @ w_ih.T + b_ih
        ah = h @ w_hh.T + b_hh
        r = _sigmoid(ax[:, :H] + ah[:, :H])
        zg = _sigmoid(ax[:, H : 2 * H] + ah[:, H : 2 * H])
        n = np.tanh(ax[:, 2 * H :] + r * ah[:, 2 * H :])
        h = (1.0 - zg) * n + zg * h
        return h, ({"max_h": np.max(np.abs(h), initial=0.0)} if record else {})

    return _recurrence(x, gru, step, record, sequence)


# The float twin of every layer kind (codegen.ir.layers.KINDS), by the layer's ``kind``.
FLOAT_LAYERS: dict[str, Callable[..., tuple[FloatArray, dict[str, FloatArray]]]] = {
    "lstm": lstm_float,
    "gru": gru_float,
}
