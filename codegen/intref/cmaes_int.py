"""Integer CMA-ES (docs/cmaes.md §6): bit-exact twin of ``firmware/elt_cmaes_s32.c``.

The float twin is `codegen.elatta.cmaes.Cmaes` with ``whitening="chol"``; the constants are the
same pycma-4.5.0 values (`CmaesParams`), computed in float64 and rounded **once** here. The same
integers are emitted into C (``templates/adapt_params.c.j2``).

State formats (int32 raw, int64 intermediates; docs/numeric.md §5):

=====================  ========  =============================================================
quantity               format    notes
=====================  ========  =============================================================
m, x, y, p_c, p_σ, p   Q4.27     |p| < 16 (latent z is Q2.13, so larger p saturates anyway)
z (standard normals)   Q3.28     the Gaussian table tops out at 6.34 (docs/cmaes.md §4)
C, A (lower, packed)   Q5.26     observed |C| ≤ 7 (docs/cmaes.md §3); saturating
rates and weights      Q1.30     w_i, cμ·w_i, 1−c_σ, 1−c_c, c1, decays, c_σ/d_σ, 1/χ
gains                  Q3.28     √(c_σ(2−c_σ)μ_eff), √(c_c(2−c_c)μ_eff)
ln σ                   Q8.23     clamped to [−20 ln2, 4 ln2]: σ ∈ [2⁻²⁰, 16]
‖·‖²                   Q.46      int64, each square rounded to Q.46 (k ≤ 32 terms)
‖·‖                    Q.23      floor isqrt of the Q.46 sum
=====================  ========  =============================================================

One arithmetic rule everywhere: every product of two int32 is formed in int64 and rounded to the
destination format with (x + 2^(s−1)) >> s; sums of rounded terms are exact in int64 (≤ 34 terms
of ≤ 2³⁶); one saturation to int32 at every store. Signed divisions are sign-magnitude around
the exact positive division (round half away from zero; ``elt_udiv64`` on the device, equal to
`fx_div_pos64` and Python ``//``). Square roots are floor isqrt (``elt_isqrt64``).
Because integer addition is exact, the C loops may sum in any order and stay bit-identical.

Per iteration (docs/cmaes.md §6 "Per iteration"; float equations: docs/cmaes.md §1.2 steps 1-7):

1. A = chol(C); a pivot below ``PIVOT_EPS`` is raised to it and counted (docs/cmaes.md §6 options).
2. σ = 2^(ln σ·log₂e) as mantissa (Q1.30, 257-entry LUT) and exponent; z_i from the sampler.
3. y_i = A z_i, x_i = m + σ y_i.
4. (caller) evaluate and rank by (f, index).
5. m' = Σ_{i≤μ} w_i x_{i:λ}; z_w = Σ w_i z_{i:λ}; y_w = Σ w_i y_{i:λ}  (= A⁻¹(m'−m)/σ and
   (m'−m)/σ of the float twin, Krause et al. 2016, docs/cmaes.md §3).
6. p_σ ← (1−c_σ)p_σ + √(c_σ(2−c_σ)μ_eff)·z_w.
7. h_σ ⇔ ‖p_σ‖² < T_g, T_g = (1 + 4/(k+1))·k·(1 − (1−c_σ)^{2g}) precomputed in Q.46.
8. p_c ← (1−c_c)p_c + h_σ·√(c_c(2−c_c)μ_eff)·y_w.
9. C ← decay_h·C + c1·p_c p_cᵀ + Σ_i wc_i·ŷ_i ŷ_iᵀ with wc_i = cμ w_i (i ≤ μ, ŷ = y) and
   wc_i = cμ w_i k (active negative weights, ŷ = y/‖z_i‖: pycma's k/‖C^{-1/2}y‖² factor).
10. ln σ += clip((c_σ/d_σ)(‖p_σ‖/χ − 1), −1, 1), clamped to the σ range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from codegen.base.contract import (
    C_FRAC,
    GAIN_FRAC,
    LNSIG_FRAC,
    LNSIG_MAX,
    LNSIG_MIN,
    NORM2_FRAC,
    NORM_FRAC,
    PIVOT_EPS,
    RATE_FRAC,
    X_FRAC,
    Z_FRAC,
)
from codegen.base.fixed import INT32_MAX, INT32_MIN, isqrt64, rshift_round
from codegen.base.tables import EXP2_LUT
from codegen.intref.entropy import LOG2E_Q30, lut_interp_q26, rshift_round_var
from codegen.ir.nodes import CmaesIntParams, Grid

I64 = npt.NDArray[np.int64]


ZR_FRAC = 23  # z rounded for the sampler's exact int64 sums (`sample_s32`)


def tri(i: int, j: int) -> int:
    """Index of (i, j), j ≤ i, in the packed lower triangle (row-major): i(i+1)/2 + j."""
    return i * (i + 1) // 2 + j


def mul_rr(a: npt.ArrayLike, b: npt.ArrayLike, s: int) -> I64:
    """``elt_mul_rr``: round((a·b) / 2^s), the product formed in int64."""
    return np.asarray(rshift_round(np.asarray(a, dtype=np.int64) * np.asarray(b, np.int64), s))


def div_round(num: npt.ArrayLike, den: npt.ArrayLike) -> I64:
    """``elt_div_round_s64``: num/den rounded half away from zero, den > 0, around the exact
    positive division (``elt_udiv64`` = fx_div_pos64 = ``//`` on non-negative operands)."""
    n = np.asarray(num, dtype=np.int64)
    d = np.asarray(den, dtype=np.int64)
    if np.any(d <= 0):
        raise ValueError("div_round needs a positive denominator")
    q = (np.abs(n) + (d >> 1)) // d  # both non-negative: C truncation == Python floor
    return np.asarray(np.where(n < 0, -q, q), dtype=np.int64)


def sat32a(x: npt.ArrayLike) -> I64:
    """`codegen.base.fixed.sat32` (fx_sat32_64) without np.clip's per-call overhead."""
    return np.minimum(np.maximum(np.asarray(x, dtype=np.int64), INT32_MIN), INT32_MAX)


@dataclass
class CmaesIntState:
    """Mutable state of a batch of B independent runs (``elt_cmaes_state_t``, one per row)."""

    m: I64  # [B, k] Q4.27
    ps: I64  # [B, k] Q4.27
    pc: I64  # [B, k] Q4.27
    C: I64  # [B, k(k+1)/2] Q5.26, packed lower triangle
    ln_sigma: I64  # [B] Q8.23
    g: int = 0  # completed tells (pycma countiter)

    @classmethod
    def initial(cls, m0: npt.ArrayLike, ln_sigma0: int, k: int) -> CmaesIntState:
        """``elt_cmaes_reset_s32``: C = I, paths zero, ln σ = ln σ₀, g = 0 (docs/cmaes.md §6)."""
        m = np.array(m0, dtype=np.int64).reshape(-1, k)
        B = m.shape[0]
        C = np.zeros((B, k * (k + 1) // 2), dtype=np.int64)
        for i in range(k):
            C[:, tri(i, i)] = 1 << C_FRAC
        z = np.zeros((B, k), dtype=np.int64)
        return cls(m=m, ps=z.copy(), pc=z.copy(), C=C, ln_sigma=np.full(B, ln_sigma0, np.int64))

    def requant(self, grid: Grid) -> None:
        """QELaTTA-V2: the stored state lives on the x-bit grid (docs/numeric.md §5)."""
        self.m = grid.requant(self.m, X_FRAC)
        self.ps = grid.requant(self.ps, X_FRAC)
        self.pc = grid.requant(self.pc, X_FRAC)
        self.C = grid.requant(self.C, C_FRAC)
        self.ln_sigma = grid.requant(self.ln_sigma, LNSIG_FRAC)


def recip_norm(d: npt.ArrayLike) -> tuple[I64, I64]:
    """``elt_recip_norm``: a normalised reciprocal of 0 < d < 2³¹ for division by
    multiplication: e = bit length of d, r = ⌊2^(e+29)/d⌋ ∈ (2²⁹, 2³⁰] (one exact division).
    Then n/d ≈ n·r/2^(e+29) with relative error below 2⁻²⁹ (the numerator scaled by 2^s is
    rounded with ``rshift_round(n·r, e + 29 − s)``)."""
    a = np.asarray(d, dtype=np.int64)
    if np.any(a <= 0) or np.any(a >= 1 << 31):
        raise ValueError("recip_norm needs 0 < d < 2^31")
    e = np.zeros_like(a)
    for b in range(31):  # bit length without float rounding
        e += (a >> b) > 0
    return np.asarray((np.int64(1) << (e + 29)) // a, dtype=np.int64), e


def chol_s32(Cp: I64, k: int) -> tuple[I64, I64]:
    """``elt_cmaes_chol_s32``: lower Cholesky factor A of packed C (docs/cmaes.md §6 step 1).

    A_jj = isqrt(max(C_jj − Σ_l A_jl², ε)·2²⁶); A_ij = (C_ij − Σ_l A_il A_jl)/A_jj, each product
    rounded to Q.26, the numerator saturated to int32, the quotient by one normalised
    reciprocal of A_jj per column (`recip_norm`: num·2²⁶/A_jj = rshift_round(num·r, e + 3),
    |num·r| < 2⁶¹) instead of a division per entry. Returns (A packed, raised pivots per run).
    """
    B = Cp.shape[0]
    A = np.zeros_like(Cp)
    nfix = np.zeros(B, dtype=np.int64)
    for j in range(k):
        s = Cp[:, tri(j, j)].copy()
        for lcol in range(j):
            s -= mul_rr(A[:, tri(j, lcol)], A[:, tri(j, lcol)], C_FRAC)
        low = s < PIVOT_EPS
        nfix += low
        s = np.where(low, PIVOT_EPS, s)  # s ≤ C_jj < 2^31
        ajj = isqrt64(s << C_FRAC)  # Q5.26, ≥ 2^16
        A[:, tri(j, j)] = ajj
        if j + 1 == k:
            break
        r, e = recip_norm(ajj)
        for i in range(j + 1, k):
            num = Cp[:, tri(i, j)].copy()
            for lcol in range(j):
                num -= mul_rr(A[:, tri(i, lcol)], A[:, tri(j, lcol)], C_FRAC)
            A[:, tri(i, j)] = sat32a(rshift_round_var(sat32a(num) * r, e + 3))
    return A, nfix


def sigma_expand(ln_sigma: I64) -> tuple[I64, I64]:
    """``elt_cmaes_sigma_s32``: σ = mant·2^(e+1)/2³⁰ with mant = 2^−(1−f) ∈ [2²⁹, 2³⁰] (Q1.30).

    log₂σ = round(ln σ·log₂e) in Q.23 = e + f/2²³ (e = floor); 2^(e+f) = 2^(e+1)·2^−(1−f); the
    fraction comes from the exp2 LUT at r = (1 − f) in Q.26 ∈ (0, 2²⁶].
    """
    l2 = rshift_round(np.asarray(ln_sigma, dtype=np.int64) * LOG2E_Q30, 30)  # Q.23
    e = l2 >> LNSIG_FRAC
    f = l2 - (e << LNSIG_FRAC)
    r = ((1 << LNSIG_FRAC) - f) << (26 - LNSIG_FRAC)
    mant = lut_interp_q26(EXP2_LUT, r)
    return np.asarray(mant, dtype=np.int64), np.asarray(e, dtype=np.int64)


def _tri_index(k: int) -> tuple[I64, I64]:
    """Row and column of every packed lower-triangle entry, in packing order."""
    rows = np.array([i for i in range(k) for _ in range(i + 1)], dtype=np.int64)
    cols = np.array([j for i in range(k) for j in range(i + 1)], dtype=np.int64)
    return rows, cols


def unpack_tri(P: I64, k: int) -> I64:
    """Packed lower triangle [B, k(k+1)/2] → full lower-triangular [B, k, k] (zeros above)."""
    r, c = _tri_index(k)
    out = np.zeros((P.shape[0], k, k), dtype=np.int64)
    out[:, r, c] = P
    return out


def sample_s32(m: I64, A: I64, z: I64, mant: I64, e: I64, k: int) -> tuple[I64, I64]:
    """``elt_cmaes_sample_s32``: y_i = A z_i (Q4.27), x_i = m + σ y_i (Q4.27); z [B, λ, k].

    z is first rounded to Q3.23 (zr = rshift_round(z, 5): the Gaussian table is accurate to
    5e-5 ≈ 2⁻¹⁴, so nothing is lost); the products Q5.26 × Q3.23 are summed exactly in int64
    (|zr| < 2^25.7, so < 32·2³¹·2^25.7 < 2^61.7 for any int32 A) and rounded once to Q.27.
    """
    Af = unpack_tri(A, k)  # [B, k, k], zero above the diagonal
    zr = rshift_round(np.asarray(z, np.int64), Z_FRAC - ZR_FRAC)
    acc = np.einsum("bal,bil->bia", Af, zr)  # [B, λ, k], exact int64
    y = sat32a(rshift_round(acc, C_FRAC + ZR_FRAC - X_FRAC))
    shift = (RATE_FRAC - 1) - e  # σy = y·mant·2^(e+1)/2^30: Q.57 → Q.27, shift 29 − e ∈ [25, 50]
    sy = rshift_round_var(y * mant[:, None, None], shift[:, None, None])
    x = sat32a(m[:, None, :] + sy)
    return y, x


def tell_s32(p: CmaesIntParams, st: CmaesIntState, z: I64, y: I64, x: I64, order: I64) -> I64:
    """``elt_cmaes_tell_s32``: one pycma ``tell2``-order update (docs/cmaes.md §1.2 steps 2-7, §6).

    ``order`` [B, λ] is the ranking by (f, index). Updates ``st`` in place; returns h_σ [B].
    Sums run over whole axes at once: the terms are rounded first, so integer addition is exact
    and the C loops' order does not matter.
    """
    k, mu = p.k, p.mu
    B = x.shape[0]
    rows = np.arange(B)[:, None]
    xs, zs, ys = x[rows, order], z[rows, order], y[rows, order]  # [B, λ, k] sorted by rank
    st.g += 1  # pycma countiter, incremented before the update
    w = np.asarray(p.w, dtype=np.int64)[None, :, None]
    # 2. m' = Σ_{i≤μ} w_i x_{i:λ} (c_m = 1); z_w, y_w likewise (docs/cmaes.md §1.2 step 2, §3)
    m_new = sat32a(np.sum(mul_rr(w, xs[:, :mu], RATE_FRAC), axis=1))
    zw = sat32a(np.sum(mul_rr(w, zs[:, :mu], RATE_FRAC), axis=1))
    yw = sat32a(np.sum(mul_rr(w, ys[:, :mu], RATE_FRAC), axis=1))
    # 3. p_σ ← (1−c_σ)p_σ + √(c_σ(2−c_σ)μ_eff)·z_w (docs/cmaes.md §1.2 step 3 with
    # A⁻¹(m'−m)/σ = z_w)
    ps = sat32a(
        mul_rr(p.one_minus_cs, st.ps, RATE_FRAC) + mul_rr(p.gain_s, zw, GAIN_FRAC + Z_FRAC - X_FRAC)
    )
    # 4. h_σ ⇔ ‖p_σ‖² < T_g (docs/cmaes.md §1.2 step 4, §6 step 6)
    n2 = np.sum(mul_rr(ps, ps, 2 * X_FRAC - NORM2_FRAC), axis=1)
    hsig = (n2 < p.hsig_thr[st.g - 1]).astype(np.int64)
    # 5. p_c ← (1−c_c)p_c + h_σ·√(c_c(2−c_c)μ_eff)·y_w (docs/cmaes.md §1.2 step 5)
    pc = sat32a(
        mul_rr(p.one_minus_cc, st.pc, RATE_FRAC) + hsig[:, None] * mul_rr(p.gain_c, yw, GAIN_FRAC)
    )
    # 6. C ← decay_h·C + c1 p_c p_cᵀ + Σ wc_i ŷ_i ŷ_iᵀ (docs/cmaes.md §1.2 step 6); ŷ = y/‖z‖ for
    # the active negative weights (pycma's k/‖C^{-1/2}y‖², k folded into wc_i), by one normalised
    # reciprocal of ‖z‖ per candidate: y·2²⁵/‖z‖ = rshift_round(y·r, e + 4)
    wc = np.asarray(p.wc, dtype=np.int64)
    yh = ys.copy()
    neg = np.flatnonzero((np.arange(p.lam) >= mu) & (wc != 0))
    if neg.size:
        zn = zs[:, neg]  # [B, n, k]
        nz2 = np.sum(mul_rr(zn, zn, 2 * Z_FRAC - 50), axis=2)  # Q.50
        nz = np.maximum(isqrt64(nz2), 1)  # ‖z_i‖ in Q.25, ≥ 1 LSB, < 2^31
        r, e = recip_norm(nz)
        yh[:, neg] = sat32a(rshift_round_var(ys[:, neg] * r[:, :, None], e[:, :, None] + 4))
    # every term as an outer product of one scaled vector: ỹ_i = √|wc_i|·ŷ_i, p̃ = √c1·p_c
    # (Q4.27), summed exactly in int64 and rounded once (docs/cmaes.md §6 step 9)
    live = np.flatnonzero(wc != 0)
    sq = np.asarray(p.wc_sqrt, dtype=np.int64)[live]
    sgn = np.where(wc[live] < 0, -1, 1).astype(np.int64)
    yt = sat32a(mul_rr(sq[None, :, None], yh[:, live], RATE_FRAC))  # [B, n, k]
    pt = sat32a(mul_rr(p.c1_sqrt, pc, RATE_FRAC))  # [B, k]
    decay = np.where(hsig == 1, p.decay_h1, p.decay_h0)
    ra, cb = _tri_index(k)
    # Q1.30·Q5.26 → Q.54, the format of the products of two Q4.27; |acc| < 2^63 is proven by
    # `codegen.quantize.adapt.cmaes_constants` from the constants alone
    acc = mul_rr(decay[:, None], st.C, RATE_FRAC + C_FRAC - 2 * X_FRAC)
    acc = acc + pt[:, ra] * pt[:, cb]
    acc = acc + np.sum((sgn[None, :, None] * yt[:, :, ra]) * yt[:, :, cb], axis=1)
    C = sat32a(rshift_round(acc, 2 * X_FRAC - C_FRAC))
    # 7. ln σ += clip((c_σ/d_σ)(‖p_σ‖/χ − 1), −1, 1) (docs/cmaes.md §1.2 step 7; log
    # domain, §6 there)
    nps = isqrt64(n2)  # Q.23
    ratio = mul_rr(nps, p.inv_chi, RATE_FRAC)  # Q.23
    dl = mul_rr(p.cs_over_ds, ratio - (1 << LNSIG_FRAC), RATE_FRAC)
    dl = np.minimum(np.maximum(dl, -(1 << LNSIG_FRAC)), 1 << LNSIG_FRAC)
    st.ln_sigma = np.minimum(np.maximum(st.ln_sigma + dl, LNSIG_MIN), LNSIG_MAX)
    st.m, st.ps, st.pc, st.C = m_new, ps, pc, C
    return hsig


def q1bit_s32(P: I64) -> I64:
    """``elt_q1bit_s32``: QELaTTA-V1 two-level quantiser of each row (integer twin of
    `codegen.elatta.float_ref.quantize_1bit`).

    Sort the k values by (value, index); for every split s = 1..k−1 the group means are the
    rounded integer means; the split with the smallest Σ round((x − mean)²/2⁸) wins, ties to
    the lowest split. k ≤ 2 is the identity (paper: "natural 1-bit").
    """
    P = np.asarray(P, dtype=np.int64)
    B, k = P.shape
    if k <= 2:
        return P.copy()
    order = np.argsort(P, axis=1, kind="stable")
    S = np.take_along_axis(P, order, axis=1)
    best = np.full(B, np.iinfo(np.int64).max, dtype=np.int64)
    best_lo = np.zeros(B, np.int64)
    best_hi = np.zeros(B, np.int64)
    best_s = np.zeros(B, np.int64)
    for s in range(1, k):
        mlo = div_round(np.sum(S[:, :s], axis=1), np.int64(s))
        mhi = div_round(np.sum(S[:, s:], axis=1), np.int64(k - s))
        dlo = sat32a(S[:, :s] - mlo[:, None])
        dhi = sat32a(S[:, s:] - mhi[:, None])
        sse = np.sum(mul_rr(dlo, dlo, 8), axis=1) + np.sum(mul_rr(dhi, dhi, 8), axis=1)
        better = sse < best
        best = np.where(better, sse, best)
        best_lo = np.where(better, mlo, best_lo)
        best_hi = np.where(better, mhi, best_hi)
        best_s = np.where(better, s, best_s)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(k), (B, k)), axis=1)
    return np.where(rank < best_s[:, None], best_lo[:, None], best_hi[:, None]).astype(np.int64)


def clip_norm_s32(v: I64, radius_q23: int) -> I64:
    """``elt_clip_norm_s32``: v scaled to ‖v‖ ≤ radius (Q.23) if it is longer (continual_bounded).

    ‖v‖ = isqrt(Σ round(v²/2⁸)) in Q.23; each element is scaled by radius/‖v‖ with a truncating
    division of magnitudes, so the result never exceeds the radius by more than the isqrt
    rounding (≤ 2⁻²³ relative).
    """
    v = np.asarray(v, dtype=np.int64)
    nrm = isqrt64(np.sum(mul_rr(v, v, 2 * X_FRAC - NORM2_FRAC), axis=1))
    over = nrm > radius_q23
    den = np.where(over, nrm, 1)
    scaled = (np.abs(v) * radius_q23) // den[:, None]
    scaled = np.where(v < 0, -scaled, scaled)
    return np.where(over[:, None], scaled, v).astype(np.int64)


__all__ = [
    "C_FRAC",
    "GAIN_FRAC",
    "INT32_MAX",
    "INT32_MIN",
    "LNSIG_FRAC",
    "LNSIG_MAX",
    "LNSIG_MIN",
    "NORM2_FRAC",
    "NORM_FRAC",
    "PIVOT_EPS",
    "RATE_FRAC",
    "X_FRAC",
    "Z_FRAC",
    "CmaesIntParams",
    "CmaesIntState",
    "Grid",
    "chol_s32",
    "clip_norm_s32",
    "div_round",
    "isqrt64",
    "mul_rr",
    "q1bit_s32",
    "sample_s32",
    "sigma_expand",
    "tell_s32",
    "tri",
]
