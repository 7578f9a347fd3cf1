"""ELaTTA adaptation core after z_t, bit-exact twin of ``firmware/elt_adapt.c``.

Per sample (paper Algorithm 1; float reference `codegen.elatta.float_ref.adapt`):

* no-adapt: latent z = z_t in the latent format, logits = W z + b, H, argmax;
* adapting modes: per-sample seed → xoshiro128** (`rng`), fresh integer CMA-ES (`cmaes_int`) from
  m⁰ (strict: 0; continual: previous best p; continual_bounded: β·p_prev clipped to the radius),
  n iterations of λ candidates p, the logits of z_t + V p by the head folded onto the basis
  (W z_t + b once, then (W V) p per candidate: the head is linear), entropy (`entropy`),
  ranking by (H, index); the output is the best *sampled* p over all iterations, ties by
  (H, iteration, index), exactly the rule of ``float_ref.adapt``.
* QELaTTA-V1: candidates are evaluated after the two-level quantiser, CMA-ES is told the
  continuous candidates, the mean is quantised after each tell (float_ref's reading).
* QELaTTA-V2 (x b y): the stored CMA-ES state (m, p_σ, p_c, C, ln σ) and every candidate live on
  the signed x-bit grid with y integer bits (docs/numeric.md §5 gives the reading).

Formats (docs/numeric.md §5): z_t int16 Q0.15 (LSTM h_T); latent int16 Q2.13; V int16; W int16
with the finest format that keeps the int32 head accumulator provably in range; b int32 in the
accumulator format; G = W V int32 (row sums of |G| < 2^31); logits int16, format calibrated on
clean source latents; H int32 Q5.26; p int32 Q4.27.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.errors import ConfigError
from codegen.base.fixed import INT32_MAX, rshift_round, sat16
from codegen.base.qformat import QFormat
from codegen.intref.cmaes_int import (
    LNSIG_FRAC,
    X_FRAC,
    CmaesIntState,
    chol_s32,
    clip_norm_s32,
    mul_rr,
    q1bit_s32,
    sample_s32,
    sigma_expand,
    tell_s32,
)
from codegen.intref.entropy import argmax_s16, entropy_s16, rank_by_h
from codegen.intref.rng import Xoshiro128ss
from codegen.ir.nodes import BETA_FRAC, H_FMT, P_FMT, AdaptParams

I64 = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
TraceFn = Callable[[int, str, int, I64], None]
"""trace(sample_index, stage, index, data): the Python side of ``elt_trace`` (index = iteration,
−1 for per-sample stages). Stages, in emission order per sample: logits_noadapt, entropy_noadapt,
cmaes.m0, then per iteration cmaes.A, cmaes.sigma, cmaes.z, cmaes.x, p_eval, logits, entropy,
order, cmaes.hsig, cmaes.m, cmaes.ps, cmaes.pc, cmaes.C, cmaes.ln_sigma; finally best_p."""


@dataclass(frozen=True, eq=False)
class IntAdaptResult:
    """Per-sample integer outputs (N rows); every field is compared bit-exactly with the C."""

    pred_noadapt: npt.NDArray[np.int32]
    logits_noadapt: npt.NDArray[np.int16]  # [N, C], logit_format
    H_noadapt: npt.NDArray[np.int32]  # Q5.26
    pred: npt.NDArray[np.int32]
    logits: npt.NDArray[np.int16]
    H_best: npt.NDArray[np.int32]
    p_best: npt.NDArray[np.int32]  # [N, k], p_format
    n_pivot_fix: npt.NDArray[np.int32]  # raised Cholesky pivots per sample (docs/cmaes.md §6)
    logit_format: QFormat
    H_format: QFormat = H_FMT
    p_format: QFormat = P_FMT

    FIELDS = (
        "pred_noadapt",
        "logits_noadapt",
        "H_noadapt",
        "pred",
        "logits",
        "H_best",
        "p_best",
        "n_pivot_fix",
    )


# --------------------------------------------------------------------------- reference kernels


def latent_zt(z_q15: I64, params: AdaptParams) -> I64:
    """z_t (Q0.15) in the latent format: round and saturate (``elt_adapt_run``)."""
    return np.asarray(sat16(rshift_round(np.asarray(z_q15, np.int64), params.zt_shift)))


def _rshift_round_f64(x: npt.NDArray[np.float64], s: int) -> npt.NDArray[np.float64]:
    """`rshift_round` on float64 arrays holding integers below 2^52: x + 2^(s−1) is exact,
    the scaling by 2^−s is exact and floor is the arithmetic shift; s ≤ 0 is x << −s."""
    if s > 0:
        x += 2.0 ** (s - 1)
    x *= 2.0**-s
    return np.floor(x, out=x) if s > 0 else x


def head_acc_s16(z: npt.ArrayLike, params: AdaptParams) -> I64:
    """The head's int32 accumulators W z + b (``elt_head_s16``'s ``acc``; the proven bound)."""
    # |W z + b| ≤ the proven int32 head bound < 2^53: float64 BLAS is exact in any order
    acc = np.asarray(z, np.float64) @ params.W.T.astype(np.float64)
    acc += params.b
    return acc.astype(np.int64)


def head_s16(z: npt.ArrayLike, params: AdaptParams) -> I64:
    """``elt_head_s16``: logits = sat16(round((W z + b)/2^s)); int32 accumulator (proven)."""
    return np.asarray(sat16(rshift_round(head_acc_s16(z, params), params.head_shift)))


def cand_logits_s16(acc0: I64, P: I64, params: AdaptParams) -> I64:
    """``elt_cand_logits_s16``: logits of the candidates z_t + V p by the folded head,
    sat16(round((acc0 + round(G p / 2^g_shift)) / 2^head_shift)), acc0 = W z_t + b [B, C],
    P [B, λ, k] → [B, λ, C]. Σ_j |G_cj| < 2^31 and |p| < 2^31: G p < 2^62 in int64."""
    gp = np.einsum("blk,ck->blc", np.asarray(P, np.int64), params.G)
    acc = acc0[:, None, :] + rshift_round(gp, params.g_shift)
    return np.asarray(sat16(rshift_round(acc, params.head_shift)))


def _emit(trace: TraceFn | None, idx: npt.ArrayLike, stage: str, it: int, data: I64) -> None:
    if trace is None:
        return
    rows = np.asarray(data, dtype=np.int64)
    for b, s in enumerate(np.asarray(idx).reshape(-1)):
        trace(int(s), stage, it, rows[b].reshape(-1).copy())


def _initial_mean(params: AdaptParams, p_prev: I64) -> I64:
    """m⁰ (``elt_adapt_run``): strict 0; continual p_prev; bounded clip(β·p_prev, radius)."""
    mode = params.cfg.mode
    if mode == "continual":
        m0 = p_prev.copy()
    elif mode == "continual_bounded":
        m0 = clip_norm_s32(mul_rr(params.beta_q30, p_prev, BETA_FRAC), params.radius_q23)
    else:
        m0 = np.zeros_like(p_prev)
    return params.grid.requant(m0, X_FRAC) if params.grid is not None else m0


def _search(
    params: AdaptParams,
    idx: I64,
    ids: I64,
    zt: I64,
    m0: I64,
    L0: I64,
    acc0: I64,
    trace: TraceFn | None,
    normals: I64 | None = None,
) -> tuple[I64, I64, I64, I64]:
    """One CMA-ES search per row of ``zt`` (a batch of independent samples, ``elt_adapt_run``).

    ``normals`` [B, n, λ, k]: the samples' streams drawn in advance (they depend on (seed, id)
    only), else they are drawn here iteration by iteration. Returns (best p [B, k], best H [B],
    logits of the best p [B, C], raised pivots [B]).
    """
    cfg, cm, grid = params.cfg, params.cmaes, params.grid
    k, lam = cfg.k, cfg.lam
    B = zt.shape[0]
    rows = np.arange(B)
    rng = Xoshiro128ss(cfg.seed, ids) if normals is None else None
    ln0 = cm.ln_sigma0 if grid is None else int(grid.requant(np.int64(cm.ln_sigma0), LNSIG_FRAC))
    st = CmaesIntState.initial(m0, ln0, k)
    _emit(trace, idx, "cmaes.m0", -1, st.m)
    best_H = np.full(B, INT32_MAX, dtype=np.int64)
    best_p = np.zeros((B, k), np.int64)
    best_L = L0.copy()
    best_t = np.zeros(B, np.int64)
    best_i = np.zeros(B, np.int64)
    nfix = np.zeros(B, np.int64)
    for t in range(cfg.n_iter):
        # 1. A = chol(C) (docs/cmaes.md §6 step 1); at t = 0 every row holds the reset C = I, so one
        # row's factor is every row's
        if t == 0:
            A1, nf1 = chol_s32(st.C[:1], k)
            A, nf = np.repeat(A1, B, axis=0), np.repeat(nf1, B)
        else:
            A, nf = chol_s32(st.C, k)
        nfix += nf
        # 2. σ from ln σ, λ·k normals in draw order (docs/cmaes.md §4, §6 step 2)
        mant, e = sigma_expand(st.ln_sigma)
        _emit(trace, idx, "cmaes.A", t, A)
        _emit(trace, idx, "cmaes.sigma", t, np.stack([st.ln_sigma, mant, e], axis=1))
        z = rng.gauss_block((lam, k)) if rng is not None else normals[:, t]  # type: ignore[index]
        # 3. y = A z, x = m + σ y; QELaTTA-V2 keeps candidates on the grid
        y, x = sample_s32(st.m, A, z, mant, e, k)
        if grid is not None:
            x = grid.requant(x, X_FRAC)
        # QELaTTA-V1: the evaluated p is two-level (identity for k <= 2)
        P = q1bit_s32(x.reshape(-1, k)).reshape(B, lam, k) if cfg.qelatta_v1 else x
        if grid is not None and cfg.qelatta_v1:
            P = grid.requant(P, X_FRAC)
        # evaluate: z = sat(z_t + V p), logits, H; rank by (H, index) (docs/cmaes.md §5, §6 step 3)
        L = cand_logits_s16(acc0, P, params)  # [B, λ, C]
        H = entropy_s16(L, params.logit_fmt.frac_bits)  # [B, λ]
        order = rank_by_h(H)
        j = order[:, 0]
        Hj = H[rows, j]
        better = Hj < best_H  # strict: an earlier iteration wins ties (H, iteration, index)
        best_H = np.where(better, Hj, best_H)
        best_p = np.where(better[:, None], P[rows, j], best_p)
        best_L = np.where(better[:, None], L[rows, j], best_L)
        best_t = np.where(better, t, best_t)
        best_i = np.where(better, j, best_i)
        _emit(trace, idx, "cmaes.z", t, z)
        _emit(trace, idx, "cmaes.x", t, x)
        _emit(trace, idx, "p_eval", t, P)
        _emit(trace, idx, "logits", t, L)
        _emit(trace, idx, "entropy", t, H)
        _emit(trace, idx, "order", t, order)
        if trace is None and t == cfg.n_iter - 1:
            break  # nothing reads the last update but its trace (the C side skips it too)
        # 4-10. tell with the continuous candidates (docs/cmaes.md §6 steps 4-10)
        hsig = tell_s32(cm, st, z, y, x, order)
        if cfg.qelatta_v1:
            st.m = q1bit_s32(st.m)  # QELaTTA-V1: the iteration's solution is quantised too
        if grid is not None:
            st.requant(grid)  # QELaTTA-V2: the stored state lives on the grid
        _emit(trace, idx, "cmaes.hsig", t, np.stack([hsig, np.full(B, st.g)], axis=1))
        _emit(trace, idx, "cmaes.m", t, st.m)
        _emit(trace, idx, "cmaes.ps", t, st.ps)
        _emit(trace, idx, "cmaes.pc", t, st.pc)
        _emit(trace, idx, "cmaes.C", t, st.C)
        _emit(trace, idx, "cmaes.ln_sigma", t, st.ln_sigma[:, None])
    _emit(
        trace,
        idx,
        "best_p",
        -1,
        np.concatenate([best_p, np.stack([best_H, best_t, best_i], axis=1)], axis=1),
    )
    return best_p, best_H, best_L, nfix


def adapt_int(
    z_q15: npt.ArrayLike,
    params: AdaptParams,
    sample_ids: npt.ArrayLike,
    trace: TraceFn | None = None,
) -> IntAdaptResult:
    """Integer ELaTTA over the rows of ``z_q15`` [N, D] (int16 Q0.15), in order.

    Strict and no-adapt samples are independent and run as one vectorised batch; the continual
    modes carry p_prev from row to row (``elt_adapt_state_t``, reset at the start) and run
    sample by sample. ``trace(sample_index, stage, index, data)`` sees every stage
    ``elt_trace`` reports, with the same data.
    """
    Z = np.asarray(z_q15)
    if Z.ndim != 2 or Z.shape[1] != params.dim or not np.issubdtype(Z.dtype, np.integer):
        raise ConfigError(f"z_q15 must be an integer array [N, {params.dim}], got {Z.shape}")
    Z = Z.astype(np.int64)
    if Z.size and (Z.min() < -32768 or Z.max() > 32767):
        raise ConfigError("z_q15 values must fit int16 (Q0.15)")
    ids = np.asarray(sample_ids)
    if ids.shape != (Z.shape[0],) or not np.issubdtype(ids.dtype, np.integer):
        raise ConfigError(f"sample_ids must be an integer array of shape [{Z.shape[0]}]")
    ids = ids.astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= 2**32):
        raise ConfigError("sample_ids must be in [0, 2^32) (uint32 on the device)")
    cfg = params.cfg
    N, k = Z.shape[0], cfg.k
    idx = np.arange(N)
    zt = latent_zt(Z, params)
    acc0 = head_acc_s16(zt, params)
    L0 = np.asarray(sat16(rshift_round(acc0, params.head_shift)))
    H0 = entropy_s16(L0, params.logit_fmt.frac_bits)
    pred0 = argmax_s16(L0)
    _emit(trace, idx, "logits_noadapt", -1, L0)
    _emit(trace, idx, "entropy_noadapt", -1, H0[:, None])
    if cfg.mode == "no_adapt":
        p_best = np.zeros((N, k), np.int64)
        _emit(
            trace,
            idx,
            "best_p",
            -1,
            np.concatenate([p_best, np.stack([H0, 0 * H0, 0 * H0], axis=1)], axis=1),
        )
        return _result(params, pred0, L0, H0, pred0, L0, H0, p_best, np.zeros(N, np.int64))
    if cfg.mode == "strict":
        m0 = _initial_mean(params, np.zeros((N, k), np.int64))
        bp, bH, bL, nfix = _search(params, idx, ids, zt, m0, L0, acc0, trace)
    else:
        bp = np.zeros((N, k), np.int64)
        bH = np.zeros(N, np.int64)
        bL = np.zeros_like(L0)
        nfix = np.zeros(N, np.int64)
        p_prev = np.zeros((1, k), np.int64)
        chunk = 256
        for c0 in range(0, N, chunk):
            # every sample's stream depends on (seed, id) only: draw a chunk at once
            normals = Xoshiro128ss(cfg.seed, ids[c0 : c0 + chunk]).gauss_blocks(
                cfg.n_iter, (cfg.lam, k)
            )
            for i in range(c0, min(N, c0 + chunk)):
                sl = slice(i, i + 1)
                m0 = _initial_mean(params, p_prev)
                own = normals[i - c0 : i - c0 + 1]
                bp[sl], bH[sl], bL[sl], nfix[sl] = _search(
                    params, idx[sl], ids[sl], zt[sl], m0, L0[sl], acc0[sl], trace, own
                )
                p_prev = bp[sl].copy()
    return _result(params, pred0, L0, H0, argmax_s16(bL), bL, bH, bp, nfix)


def _result(
    params: AdaptParams,
    pred0: I64,
    L0: I64,
    H0: I64,
    pred: I64,
    L: I64,
    H: I64,
    p: I64,
    nfix: I64,
) -> IntAdaptResult:
    def ro(a: npt.ArrayLike, dt: type) -> Any:
        out: Any = np.array(a, dtype=dt)
        out.setflags(write=False)
        return out

    return IntAdaptResult(
        pred_noadapt=ro(pred0, np.int32),
        logits_noadapt=ro(L0, np.int16),
        H_noadapt=ro(H0, np.int32),
        pred=ro(pred, np.int32),
        logits=ro(L, np.int16),
        H_best=ro(H, np.int32),
        p_best=ro(p, np.int32),
        n_pivot_fix=ro(nfix, np.int32),
        logit_format=params.logit_fmt,
    )
