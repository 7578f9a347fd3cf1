"""Quantization of the adaptation core: head W, b, basis V and the CMA-ES constants, once.

The compiler stage beside `codegen.quantize.model` (the encoder): it decides every format and
integer
of `codegen.ir.nodes.AdaptParams`; the C emitter (`codegen.emit.adapt`) and the integer reference
(`codegen.intref.adapt`) read them and decide nothing.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import numpy.typing as npt

from codegen.base.contract import (
    GAIN_FRAC,
    K_MAX,
    LAM_MAX,
    LNSIG_FRAC,
    MAX_CLASSES,
    N_ITER_MAX,
    NORM2_FRAC,
    RATE_FRAC,
    SIGMA_MAX,
    SIGMA_MIN,
    X_FRAC,
)
from codegen.base.errors import ConfigError
from codegen.base.fixed import INT32_MAX, rshift_round
from codegen.base.qformat import QFormat
from codegen.base.tables import EXP2_LUT, GAUSS_LUT, LOG2_LUT, table_hash
from codegen.elatta.cmaes import CmaesParams
from codegen.ir.nodes import (
    BETA_FRAC,
    LATENT_FMT,
    RADIUS_FRAC,
    Z_T_FMT,
    AdaptConfig,
    AdaptParams,
    CmaesIntParams,
    FloatArray,
    IntArray,
)

I64 = IntArray


def _finite(name: str, a: npt.ArrayLike) -> FloatArray:
    arr = np.asarray(a, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ConfigError(f"{name} contains NaN or Inf")
    return arr


def _frac_for(max_abs: float) -> int:
    return QFormat.for_range(max_abs).frac_bits


def quantize_adapt(
    W: npt.ArrayLike,
    b: npt.ArrayLike,
    V: npt.ArrayLike,
    cfg: AdaptConfig,
    z_calib: npt.ArrayLike,
    latent_fmt: QFormat = LATENT_FMT,
    zt_fmt: QFormat = Z_T_FMT,
) -> AdaptParams:
    """Quantize the head, the basis and the CMA-ES constants once (docs/architecture.md §3).

    * V: int16 in the format that holds max|V| (Q0.15 for an orthonormal basis).
    * W: int16 in the finest format that holds max|W| **and** proves the int32 accumulator:
      Σ_j |W_ij|·2¹⁵ + |b_i| + 2^(s−1) ≤ 2³¹ − 1 for every row (|latent| ≤ 2¹⁵ raw, docs/numeric.md
      §3). No format satisfies it → ConfigError naming ``head W`` and the row.
    * b: int32 in the accumulator format Q.(fw + latent frac).
    * logits: int16, format from max|W z + b| over the clean source latents ``z_calib`` plus
      one bit of headroom (adapted and shifted samples move further out).
    """
    if not isinstance(cfg, AdaptConfig):
        raise ConfigError(f"cfg must be an AdaptConfig, got {type(cfg).__name__}")
    Wf, bf, Vf, Zc = (
        _finite(n, a) for n, a in (("W", W), ("b", b), ("V", V), ("z_calib", z_calib))
    )
    if Wf.ndim != 2 or Wf.shape[0] < 2:
        raise ConfigError(f"head W must have shape [C >= 2, D], got {Wf.shape}")
    C, D = Wf.shape
    if C > MAX_CLASSES:
        raise ConfigError(f"head W has {C} classes: the entropy kernel supports <= {MAX_CLASSES}")
    if bf.shape != (C,):
        raise ConfigError(f"head b must have shape [{C}], got {bf.shape}")
    if Vf.shape != (D, cfg.k):
        raise ConfigError(f"basis V must have shape [{D}, {cfg.k}] (D, k), got {Vf.shape}")
    if Zc.ndim != 2 or Zc.shape[1] != D or Zc.shape[0] < 1:
        raise ConfigError(f"z_calib must have shape [N >= 1, {D}], got {Zc.shape}")
    if latent_fmt.word != 16:
        raise ConfigError(f"latent format {latent_fmt.name} must be a 16-bit format")
    fz = latent_fmt.frac_bits
    v_fmt = QFormat.for_range(float(np.max(np.abs(Vf))))
    Vq = v_fmt.quantize(Vf)
    # |round(V p)| <= k·2^15·2^31 / 2^v_shift must stay below 2^30 latent LSB (2^17 in value):
    # a basis that moves the latent that far is not a basis of latent directions (an
    # orthonormal V, Q0.15, gives k·2^17 LSB)
    v_shift = v_fmt.frac_bits + X_FRAC - fz
    if cfg.k * 2.0 ** (46 - v_shift) >= 2**30:
        raise ConfigError(
            f"basis V: max|V| = {float(np.max(np.abs(Vf))):g} needs format {v_fmt.name}; "
            f"V p overflows the latent path for k = {cfg.k} (use an orthonormal basis)"
        )
    # logit format from the clean source latents (one bit of headroom)
    calib = Zc @ Wf.T + bf
    logit_fmt = QFormat.for_range(float(np.max(np.abs(calib))), headroom_bits=1)
    head: tuple[QFormat, I64, QFormat, I64, int, int] | None = None
    worst = (0, 0)
    for fw in range(_frac_for(float(np.max(np.abs(Wf)))), -1, -1):
        w_fmt = QFormat(15 - fw, fw)
        b_frac = fw + fz
        if b_frac > 31 or float(np.max(np.abs(bf), initial=0.0)) * 2.0**b_frac >= 2**31:
            continue
        b_fmt = QFormat(31 - b_frac, b_frac, 32)
        Wq = w_fmt.quantize(Wf)
        bq = b_fmt.quantize(bf)
        fl = min(logit_fmt.frac_bits, b_frac)
        shift = b_frac - fl
        rnd = (1 << (shift - 1)) if shift > 0 else 0
        bound = np.sum(np.abs(Wq), axis=1) * 32768 + np.abs(bq) + rnd
        row = int(np.argmax(bound))
        if int(bound[row]) > worst[1]:
            worst = (row, int(bound[row]))
        if int(bound[row]) <= INT32_MAX:
            head = (w_fmt, Wq, b_fmt, bq, shift, int(bound[row]))
            logit_fmt = QFormat(15 - fl, fl)
            break
    if head is None:
        raise ConfigError(
            f"head W row {worst[0]}: sum|w|*max|z| + |b| = {worst[1]} exceeds the int32 "
            f"accumulator (2^31 - 1) in every int16 format; scale the head down"
        )
    w_fmt, Wq, b_fmt, bq, head_shift, head_bound = head
    # The head folded onto the basis (docs/numeric.md §5.1): the head is linear, so the logits
    # of z_t + V p are W z_t + b + (W V) p and a candidate costs C·k multiplies instead of
    # D·k + D·C. G = W V exactly in int64 (|G| ≤ D·2^30), then the fewest low bits dropped
    # (one rounding) so that every row's Σ_j |G_cj| ≤ 2^31 − 1: with |p| < 2^31 the int64 sum
    # G p stays below 2^62.
    g_exact = np.asarray(Wq, np.int64) @ np.asarray(Vq, np.int64)  # [C, k]
    g_drop = 0
    Gq = g_exact
    while int(np.max(np.sum(np.abs(Gq), axis=1))) > INT32_MAX:
        g_drop += 1
        Gq = rshift_round(g_exact, g_drop)
    g_shift = v_shift - g_drop
    if g_shift < 1:
        raise ConfigError(
            f"head W x basis V: W V needs {g_drop} dropped bits, more than V p's shift "
            f"{v_shift} to the accumulator; scale the head down"
        )
    cm = cmaes_constants(
        CmaesParams.for_dim(cfg.k, cfg.lam, cfg.active), cfg.n_iter, float(cfg.sigma0)
    )
    beta_q30 = q_round(cfg.beta, BETA_FRAC, "beta")
    radius_q23 = q_round(cfg.radius, RADIUS_FRAC, "radius")
    h = hashlib.sha256()
    for arr in (Wq, bq, Vq):
        h.update(np.ascontiguousarray(arr, dtype="<i8").tobytes())
    h.update(repr((cfg, w_fmt, b_fmt, v_fmt, latent_fmt, logit_fmt, head_shift, g_shift)).encode())
    cm_fields = ("w", "wc", "wc_sqrt", "c1_sqrt", "hsig_thr", "ln_sigma0")
    h.update(repr(tuple(getattr(cm, f) for f in cm_fields)).encode())
    for t in (EXP2_LUT, LOG2_LUT, GAUSS_LUT):
        h.update(table_hash(t).encode())

    def ro(a: npt.ArrayLike) -> I64:
        out = np.array(a, dtype=np.int64)
        out.setflags(write=False)
        return out

    return AdaptParams(
        cfg=cfg,
        W=ro(Wq),
        w_fmt=w_fmt,
        b=ro(bq),
        b_fmt=b_fmt,
        V=ro(Vq),
        v_fmt=v_fmt,
        latent_fmt=latent_fmt,
        logit_fmt=logit_fmt,
        zt_shift=zt_fmt.frac_bits - fz,
        v_shift=v_shift,
        head_shift=head_shift,
        G=ro(Gq),
        g_shift=g_shift,
        cmaes=cm,
        beta_q30=beta_q30,
        radius_q23=radius_q23,
        grid=cfg.grid,
        exp2_lut=EXP2_LUT,
        log2_lut=LOG2_LUT,
        gauss_lut=GAUSS_LUT,
        w_range=(float(Wf.min()), float(Wf.max())),
        b_range=(float(bf.min()), float(bf.max())),
        v_range=(float(Vf.min()), float(Vf.max())),
        head_bound=head_bound,
        input_hash=h.hexdigest(),
    )


def q_round(x: float, frac: int, what: str, word: int = 32) -> int:
    """Round a float64 constant once (half to even, as fxpmath's ``around``) to Q.frac."""
    v = round(float(x) * (1 << frac))
    lim = 1 << (word - 1)
    if not -lim <= v < lim:
        raise ConfigError(f"{what}={x!r} does not fit a {word}-bit Q.{frac} constant")
    return int(v)


def cmaes_constants(p: CmaesParams, n_iter: int, sigma0: float) -> CmaesIntParams:
    """Round every constant of ``p`` once (docs/cmaes.md §6 "Constants")."""
    if not 1 <= p.k <= K_MAX:
        raise ConfigError(f"k={p.k} is not allowed: the integer CMA-ES supports 1..{K_MAX}")
    if not 2 <= p.lam <= LAM_MAX:
        raise ConfigError(f"lam={p.lam} is not allowed: the integer CMA-ES supports 2..{LAM_MAX}")
    if not 1 <= n_iter <= N_ITER_MAX:
        raise ConfigError(f"n_iter={n_iter} is not allowed: use 1..{N_ITER_MAX}")
    if not (math.isfinite(sigma0) and SIGMA_MIN <= sigma0 <= SIGMA_MAX):
        raise ConfigError(
            f"sigma0={sigma0!r} is not allowed: the integer CMA-ES keeps σ in "
            f"[2^-20, {SIGMA_MAX:g}] (p is Q4.27)"
        )
    k = p.k
    w = p.weights_array
    wc = [p.cmu * wi if i < p.mu else p.cmu * wi * k for i, wi in enumerate(w)]
    sum_w = float(np.sum(w))
    ccc = p.cc * (2 - p.cc)
    # T_g: ‖p_σ‖²/(1−(1−c_σ)^{2g})/k − 1 < thr ⟺ ‖p_σ‖² < (1 + thr)·k·(1−(1−c_σ)^{2g})
    thr = tuple(
        q_round(
            (1 + p.hsig_threshold) * k * (1 - (1 - p.cs) ** (2 * g)),
            NORM2_FRAC,
            "h_sigma threshold",
            64,
        )
        for g in range(1, n_iter + 1)
    )
    wc_sqrt = tuple(q_round(math.sqrt(abs(x)), RATE_FRAC, "sqrt|c_mu*w|") for x in wc)
    c1_sqrt = q_round(math.sqrt(p.c1), RATE_FRAC, "sqrt c1")
    decay = [
        q_round(x, RATE_FRAC, "C decay")
        for x in (1 - (p.c1 + p.cmu * sum_w), 1 - (p.c1 * (1 - ccc) + p.cmu * sum_w))
    ]
    # The covariance update sums every term exactly in int64 (docs/cmaes.md §6 step 9): the
    # decayed C (|decay·C| / 2^2 in Q.54) plus one product of two scaled vectors per term,
    # |ỹ| ≤ 2·√|wc_i| + 1 LSB (|ŷ| < 2^31 raw), plus the final rounding constant 2^27.
    # pycma's active weights keep Σ|wc_i| + c1 near 1 (α⁻ caps cμ·k·Σ|w⁻| at 1 − c1 − cμ).
    worst = (
        max(abs(d) for d in decay) * (1 << 31) // 4
        + 1
        + sum((2 * s + 1) ** 2 for s in (*wc_sqrt, c1_sqrt))
        + (1 << 27)
    )
    if worst >= 1 << 63:
        raise ConfigError(
            f"k={k}, lam={p.lam}: the covariance update's int64 sum can reach {worst} >= 2^63 "
            "(sum of |c_mu*w_i| + c1 too large); use the pycma default weights"
        )
    return CmaesIntParams(
        k=k,
        lam=p.lam,
        mu=p.mu,
        n_iter=n_iter,
        active=p.active,
        w=tuple(q_round(x, RATE_FRAC, "w") for x in w[: p.mu]),
        wc=tuple(q_round(x, RATE_FRAC, "c_mu*w") for x in wc),
        wc_sqrt=wc_sqrt,
        one_minus_cs=q_round(1 - p.cs, RATE_FRAC, "1-c_sigma"),
        gain_s=q_round(math.sqrt(p.cs * (2 - p.cs) * p.mueff), GAIN_FRAC, "sigma-path gain"),
        one_minus_cc=q_round(1 - p.cc, RATE_FRAC, "1-c_c"),
        gain_c=q_round(math.sqrt(ccc * p.mueff), GAIN_FRAC, "c-path gain"),
        c1=q_round(p.c1, RATE_FRAC, "c1"),
        c1_sqrt=c1_sqrt,
        decay_h1=q_round(1 - (p.c1 + p.cmu * sum_w), RATE_FRAC, "C decay"),
        decay_h0=q_round(1 - (p.c1 * (1 - ccc) + p.cmu * sum_w), RATE_FRAC, "C decay"),
        cs_over_ds=q_round(p.cs / p.damps, RATE_FRAC, "c_sigma/d_sigma"),
        inv_chi=q_round(1 / p.chi, RATE_FRAC, "1/chi"),
        hsig_thr=thr,
        ln_sigma0=q_round(math.log(sigma0), LNSIG_FRAC, "ln sigma0"),
        source=p,
    )
