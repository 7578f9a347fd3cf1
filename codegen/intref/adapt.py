"""ELaTTA adaptation core after z_t, bit-exact twin of ``firmware/elt_adapt.c``.

Per sample (paper Algorithm 1; float reference `codegen.elatta.float_ref.adapt`):

* no-adapt: latent z = z_t in the latent format, logits = W z + b, H, argmax;
* adapting modes: per-sample seed → xoshiro128** (`rng`), fresh integer CMA-ES (`cmaes_int`) from
  m⁰ (strict: 0; continual: previous best p; continual_bounded: β·p_prev clipped to the radius),
  n iterations of λ candidates z = sat(z_t + V p), logits, entropy (`entropy`), ranking by
  (H, index); the output is the best *sampled* p over all iterations, ties by
  (H, iteration, index), exactly the rule of ``float_ref.adapt``.
* QELaTTA-V1: candidates are evaluated after the two-level quantiser, CMA-ES is told the
  continuous candidates, the mean is quantised after each tell (float_ref's reading).
* QELaTTA-V2 (x b y): the stored CMA-ES state (m, p_σ, p_c, C, ln σ) and every candidate live on
  the signed x-bit grid with y integer bits (docs/numeric.md §5 gives the reading).

Formats (docs/numeric.md §5): z_t int16 Q0.15 (LSTM h_T); latent int16 Q2.13; V int16; W int16
with the finest format that keeps the int32 head accumulator provably in range; b int32 in the
accumulator format; logits int16, format calibrated on clean source latents; H int32 Q5.26;
p int32 Q4.27.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen import __version__
from codegen.elatta.cmaes import CmaesParams
from codegen.elatta.float_ref import MODES, ElattaConfig, is_int
from codegen.errors import ConfigError
from codegen.fixed import INT32_MAX, rshift_round, sat16
from codegen.intref.cmaes_int import (
    C_FRAC,
    K_MAX,
    LAM_MAX,
    LNSIG_FRAC,
    N_ITER_MAX,
    SIGMA_MAX,
    SIGMA_MIN,
    X_FRAC,
    Z_FRAC,
    CmaesIntParams,
    CmaesIntState,
    Grid,
    chol_s32,
    clip_norm_s32,
    mul_rr,
    q1bit_s32,
    q_round,
    sample_s32,
    sigma_expand,
    tell_s32,
    tri,
)
from codegen.intref.entropy import H_FRAC, MAX_CLASSES, argmax_s16, entropy_s16, rank_by_h
from codegen.intref.rng import Xoshiro128ss
from codegen.intref.tables import EXP2_LUT, GAUSS_LUT, LOG2_LUT, table_hash
from codegen.qformat import QFormat

I64 = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
TraceFn = Callable[[int, str, int, I64], None]
"""trace(sample_index, stage, index, data): the Python side of ``elt_trace`` (index = iteration,
−1 for per-sample stages). Stages, in emission order per sample: logits_noadapt, entropy_noadapt,
cmaes.m0, then per iteration cmaes.A, cmaes.sigma, cmaes.z, cmaes.x, p_eval, logits, entropy,
order, cmaes.hsig, cmaes.m, cmaes.ps, cmaes.pc, cmaes.C, cmaes.ln_sigma; finally best_p."""

# firmware/*.c of the ELaTTA kernels, in link order (codegen.firmware_build.RUNTIME_SOURCES style);
# elt_intmath.c: the exact division and square root the others call
ADAPT_FIRMWARE_SOURCES: tuple[str, ...] = (
    "elt_intmath.c",
    "elt_rng.c",
    "elt_entropy_s16.c",
    "elt_cmaes_s32.c",
    "elt_adapt.c",
)

Z_T_FMT = QFormat(0, 15)  # LSTM h_T
LATENT_FMT = QFormat(2, 13)  # 2 bits of headroom for V p over |z_t| < 1
P_FMT = QFormat(31 - X_FRAC, X_FRAC, 32)  # Q4.27
H_FMT = QFormat(31 - H_FRAC, H_FRAC, 32)  # Q5.26
LNSIG_FMT = QFormat(31 - LNSIG_FRAC, LNSIG_FRAC, 32)  # Q8.23
RADIUS_FRAC = 23  # continual_bounded radius, Q8.23
BETA_FRAC = 30  # Q1.30
MODE_IDS = {m: i for i, m in enumerate(MODES)}  # ELT_MODE_* in firmware/elt_adapt.h
_PREFIX_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)?$")


@dataclass(frozen=True)
class AdaptConfig:
    """One integer ELaTTA run (the float `ElattaConfig` plus QELaTTA-V2); λ is resolved."""

    k: int = 2
    n_iter: int = 2
    lam: int = 6
    sigma0: float = 0.1
    mode: str = "strict"
    seed: int = 0
    beta: float = 0.5
    radius: float = 1.0
    qelatta_v1: bool = False
    qelatta_v2: tuple[int, int] | None = None  # (x_bits, y_int_bits), e.g. (8, 4), (4, 2)
    active: bool = True

    def __post_init__(self) -> None:
        if not is_int(self.k) or not 1 <= self.k <= K_MAX:
            raise ConfigError(f"k={self.k!r} is not allowed: use an integer in 1..{K_MAX}")
        if not is_int(self.n_iter) or not 1 <= self.n_iter <= N_ITER_MAX:
            raise ConfigError(f"n_iter={self.n_iter!r} is not allowed: use 1..{N_ITER_MAX}")
        if not is_int(self.lam) or not 2 <= self.lam <= LAM_MAX:
            raise ConfigError(f"lam={self.lam!r} is not allowed: use an integer in 2..{LAM_MAX}")
        s0 = self.sigma0
        if (
            not isinstance(s0, int | float)
            or isinstance(s0, bool)
            or not (math.isfinite(s0) and SIGMA_MIN <= s0 <= SIGMA_MAX)
        ):
            raise ConfigError(
                f"sigma0={s0!r} is not allowed: use a float in [2^-20, {SIGMA_MAX:g}]"
            )
        if self.mode not in MODES:
            raise ConfigError(f"mode={self.mode!r} is not allowed: use one of {MODES}")
        if not is_int(self.seed) or not 0 <= self.seed < 2**64:
            raise ConfigError(f"seed={self.seed!r} is not allowed: use an integer in [0, 2^64)")
        if not isinstance(self.beta, int | float) or not 0.0 <= self.beta <= 1.0:
            raise ConfigError(f"beta={self.beta!r} is not allowed: use a float in [0, 1]")
        if not isinstance(self.radius, int | float) or not 0.0 <= self.radius < 256.0:
            raise ConfigError(
                f"radius={self.radius!r} is not allowed: use a float in [0, 256) (Q8.23)"
            )
        if not isinstance(self.qelatta_v1, bool):
            raise ConfigError(f"qelatta_v1={self.qelatta_v1!r} is not allowed: use True or False")
        if self.qelatta_v2 is not None:
            v2 = self.qelatta_v2
            if not (isinstance(v2, tuple) and len(v2) == 2 and all(is_int(x) for x in v2)):
                raise ConfigError(
                    f"qelatta_v2={v2!r} is not allowed: use None or (x_bits, y_int_bits), "
                    "e.g. (8, 4)"
                )
            Grid(int(v2[0]), int(v2[1]))
        if not isinstance(self.active, bool):
            raise ConfigError(f"active={self.active!r} is not allowed: use True or False")

    @classmethod
    def from_float(
        cls, cfg: ElattaConfig, qelatta_v2: tuple[int, int] | None = None
    ) -> AdaptConfig:
        """The integer twin of a float configuration (λ resolved to 4 + ⌊3 ln k⌋ if None)."""
        return cls(
            k=int(cfg.k),
            n_iter=int(cfg.n_iter),
            lam=int(cfg.popsize),
            sigma0=float(cfg.sigma0),
            mode=str(cfg.mode),
            seed=int(cfg.seed),
            beta=float(cfg.beta),
            radius=float(cfg.radius),
            qelatta_v1=bool(cfg.qelatta_v1),
            qelatta_v2=qelatta_v2,
            active=bool(cfg.active),
        )

    @property
    def grid(self) -> Grid | None:
        return None if self.qelatta_v2 is None else Grid(*self.qelatta_v2)

    def to_float(self) -> ElattaConfig:
        """The float configuration this one twins (QELaTTA-V2 has no float counterpart)."""
        return ElattaConfig(
            k=self.k,
            n_iter=self.n_iter,
            lam=self.lam,
            sigma0=self.sigma0,
            mode=self.mode,
            seed=self.seed,
            beta=self.beta,
            radius=self.radius,
            qelatta_v1=self.qelatta_v1,
            active=self.active,
        )


@dataclass(frozen=True, eq=False)
class AdaptParams:
    """Every integer the kernels read; the C emitter and `adapt_int` read exactly these."""

    cfg: AdaptConfig
    W: I64  # [C, D] int16, w_fmt
    w_fmt: QFormat
    b: I64  # [C] int32, b_fmt (the accumulator format)
    b_fmt: QFormat
    V: I64  # [D, k] int16, v_fmt
    v_fmt: QFormat
    latent_fmt: QFormat
    logit_fmt: QFormat
    zt_shift: int  # Q0.15 → latent: 15 − latent frac
    v_shift: int  # V·p (Q.(fv+27)) → latent frac
    head_shift: int  # accumulator → logit frac
    cmaes: CmaesIntParams
    beta_q30: int
    radius_q23: int
    grid: Grid | None
    exp2_lut: I64
    log2_lut: I64
    gauss_lut: I64
    w_range: tuple[float, float]
    b_range: tuple[float, float]
    v_range: tuple[float, float]
    head_bound: int  # max over rows of the proven |accumulator| bound
    input_hash: str

    @property
    def n_classes(self) -> int:
        return int(self.W.shape[0])

    @property
    def dim(self) -> int:
        return int(self.W.shape[1])

    @property
    def k(self) -> int:
        return self.cfg.k


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
    # |round(V p)| <= k·2^15·2^31 / 2^v_shift must stay below 2^30: the NEON latent narrows it
    # to int32 before adding z_t (elt_latent_s16); an orthonormal V (Q0.15) gives k·2^17
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
    cm = CmaesIntParams.from_float(
        CmaesParams.for_dim(cfg.k, cfg.lam, cfg.active), cfg.n_iter, float(cfg.sigma0)
    )
    beta_q30 = q_round(cfg.beta, BETA_FRAC, "beta")
    radius_q23 = q_round(cfg.radius, RADIUS_FRAC, "radius")
    h = hashlib.sha256()
    for arr in (Wq, bq, Vq):
        h.update(np.ascontiguousarray(arr, dtype="<i8").tobytes())
    h.update(repr((cfg, w_fmt, b_fmt, v_fmt, latent_fmt, logit_fmt, head_shift)).encode())
    h.update(repr(tuple(getattr(cm, f) for f in ("w", "wc", "hsig_thr", "ln_sigma0"))).encode())
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
        zt_shift=Z_T_FMT.frac_bits - fz,
        v_shift=v_shift,
        head_shift=head_shift,
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


def latent_s16(zt: I64, P: I64, params: AdaptParams) -> npt.NDArray[np.float64]:
    """``elt_latent_s16``: z = sat16(z_t + round(V p)); zt [B, D], P [B, λ, k] → [B, λ, D], as
    float64 arrays of integers (the head's operand, without a round trip through int64)."""
    # |V p| ≤ k·2^46 < 2^53 (k ≤ K_MAX): float64 BLAS is exact in any summation order
    vp = np.asarray(P, np.float64) @ params.V.T.astype(np.float64)
    vp = _rshift_round_f64(vp, params.v_shift)
    vp += zt[:, None, :]
    return np.clip(vp, -32768.0, 32767.0, out=vp)


def head_s16(z: npt.ArrayLike, params: AdaptParams) -> I64:
    """``elt_head_s16``: logits = sat16(round((W z + b)/2^s)); int32 accumulator (proven)."""
    # |W z + b| ≤ the proven int32 head bound < 2^53: float64 BLAS is exact in any order
    acc = np.asarray(z, np.float64) @ params.W.T.astype(np.float64)
    acc += params.b
    acc = _rshift_round_f64(acc, params.head_shift)
    return np.clip(acc, -32768.0, 32767.0, out=acc).astype(np.int64)


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
        L = head_s16(latent_s16(zt, P, params), params)  # [B, λ, C]
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
    L0 = head_s16(zt, params)
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
        bp, bH, bL, nfix = _search(params, idx, ids, zt, m0, L0, trace)
    else:
        bp = np.zeros((N, k), np.int64)
        bH = np.zeros(N, np.int64)
        bL = np.zeros_like(L0)
        nfix = np.zeros(N, np.int64)
        p_prev = np.zeros((1, k), np.int64)
        chunk = 256
        for c0 in range(0, N, chunk):
            # every sample's stream depends on (seed, id) only: draw a chunk at once
            normals = Xoshiro128ss(cfg.seed, ids[c0 : c0 + chunk]).gauss_block(
                (cfg.n_iter, cfg.lam, k)
            )
            for i in range(c0, min(N, c0 + chunk)):
                sl = slice(i, i + 1)
                m0 = _initial_mean(params, p_prev)
                own = normals[i - c0 : i - c0 + 1]
                bp[sl], bH[sl], bL[sl], nfix[sl] = _search(
                    params, idx[sl], ids[sl], zt[sl], m0, L0[sl], trace, own
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


# --------------------------------------------------------------------------- C emission


def adapt_cflags(params: AdaptParams) -> tuple[str, ...]:
    """-D flags that size ``elt_adapt_state_t`` exactly for this model (docs/targets.md §1 RAM)."""
    return (
        f"-DELT_K_MAX={params.k}",
        f"-DELT_LAM_MAX={params.cfg.lam}",
        f"-DELT_D_MAX={params.dim}",
        f"-DELT_C_MAX={params.n_classes}",
    )


def _rng(lo: float, hi: float) -> str:
    return f"[{lo:.6g}, {hi:.6g}]"


def _array(
    name: str,
    ctype: str,
    values: npt.ArrayLike,
    shape: tuple[int, ...],
    fmt: str,
    rng: str,
    what: str,
    per_line: int = 12,
) -> dict[str, object]:
    """One flat ``static const`` array: rows of the last dimension, labelled for 2-D shapes."""
    vals = np.asarray(values, dtype=np.int64).reshape(-1)
    if ctype == "int64_t":
        text = [f"INT64_C({int(v)})" for v in vals]
    elif ctype == "int32_t":
        text = [str(int(v)) if v != -(2**31) else "INT32_MIN" for v in vals]
    else:
        text = [str(int(v)) for v in vals]
    row_len = shape[-1] if len(shape) > 1 else len(text)
    groups = []
    for r in range(0, len(text), row_len):
        row = text[r : r + row_len]
        groups.append(
            {
                "label": f"[{r // row_len}]" if len(shape) > 1 else "",
                "lines": [", ".join(row[i : i + per_line]) for i in range(0, len(row), per_line)],
            }
        )
    return {
        "name": name,
        "ctype": ctype,
        "length": len(text),
        "shape": " x ".join(str(d) for d in shape),
        "fmt": fmt,
        "range": rng,
        "what": what,
        "groups": groups,
    }


def _field(name: str, value: object, comment: str) -> dict[str, str]:
    return {"name": name, "value": str(value), "comment": comment}


def emit_adapt_c(params: AdaptParams, prefix: str) -> dict[str, str]:
    """Render the params instance ``const elt_adapt_params_t <prefix>adapt_params`` (and its
    arrays and tables) from ``templates/adapt_params.{c,h}.j2``. Deterministic."""
    from codegen.resources import jinja_env

    if not _PREFIX_RE.match(prefix):
        raise ConfigError(f"prefix={prefix!r} is not allowed: use a C identifier prefix")
    cfg, cm = params.cfg, params.cmaes
    src = cm.source
    C, D, k = params.n_classes, params.dim, params.k
    grid = params.grid
    pfx = prefix
    wq = f"{params.w_fmt.name}"
    arrays = [
        _array(
            f"{pfx}adapt_W",
            "int16_t",
            params.W.T,
            (D, C),
            wq,
            _rng(*params.w_range),
            "head weights W transposed (row d = the weights of latent d for every class)",
        ),
        _array(
            f"{pfx}adapt_b",
            "int32_t",
            params.b,
            (C,),
            params.b_fmt.name,
            _rng(*params.b_range),
            "head bias b in the accumulator format",
        ),
        _array(
            f"{pfx}adapt_V",
            "int16_t",
            params.V.T,
            (k, D),
            params.v_fmt.name,
            _rng(*params.v_range),
            "latent basis V_k transposed (row l = basis vector l; orthonormal)",
        ),
        _array(
            f"{pfx}adapt_w",
            "int32_t",
            cm.w,
            (cm.mu,),
            "Q1.30",
            _rng(min(src.weights[: cm.mu]), max(src.weights[: cm.mu])),
            "positive recombination weights w_i, i < mu (docs/cmaes.md §1)",
        ),
        _array(
            f"{pfx}adapt_wc",
            "int32_t",
            cm.wc,
            (cm.lam,),
            "Q1.30",
            _rng(*(lambda v: (min(v), max(v)))([x / 2**30 for x in cm.wc])),
            "c_mu*w_i (i < mu), c_mu*w_i*k (active negative weights) (docs/cmaes.md §1.2 step 6)",
        ),
        _array(
            f"{pfx}adapt_hsig_thr",
            "int64_t",
            cm.hsig_thr,
            (cm.n_iter,),
            "Q.46",
            _rng(cm.hsig_thr[0] / 2**46, cm.hsig_thr[-1] / 2**46),
            "h_sigma thresholds T_g = (1 + 4/(k+1)) k (1 - (1-c_s)^(2g)), g = 1..n",
            4,
        ),
        _array(
            f"{pfx}adapt_exp2_lut",
            "int32_t",
            params.exp2_lut,
            (len(params.exp2_lut),),
            "Q1.30",
            "[0.5, 1]",
            f"2^(-j/256), j = 0..256; sha256 {table_hash(params.exp2_lut)}",
            8,
        ),
        _array(
            f"{pfx}adapt_log2_lut",
            "int32_t",
            params.log2_lut,
            (len(params.log2_lut),),
            "Q1.30",
            "[0, 1]",
            f"log2(1 + j/256), j = 0..256; sha256 {table_hash(params.log2_lut)}",
            8,
        ),
        _array(
            f"{pfx}adapt_gauss_lut",
            "int32_t",
            params.gauss_lut,
            params.gauss_lut.shape,
            "Q3.28",
            f"[0, {params.gauss_lut.max() / 2**28:.6g}]",
            "half-normal inverse CDF |z| = Phi^-1(1 - t/2), t = 2^-(o+1)(1 + j/32); sha256 "
            f"{table_hash(params.gauss_lut)}",
            11,
        ),
    ]
    es_fields = [
        _field("k", k, "latent subspace dimension"),
        _field("lam", cm.lam, "candidates per iteration (lambda)"),
        _field("mu", cm.mu, "parents (positive weights)"),
        _field("n_iter", cm.n_iter, "iterations per sample"),
        _field("w", f"{pfx}adapt_w", ""),
        _field("wc", f"{pfx}adapt_wc", ""),
        _field("one_minus_cs", cm.one_minus_cs, f"Q1.30 1 - c_s = {1 - src.cs:.17g}"),
        _field("gain_s", cm.gain_s, f"Q3.28 sqrt(c_s(2-c_s)mu_eff), mu_eff = {src.mueff:.17g}"),
        _field("one_minus_cc", cm.one_minus_cc, f"Q1.30 1 - c_c = {1 - src.cc:.17g}"),
        _field("gain_c", cm.gain_c, "Q3.28 sqrt(c_c(2-c_c)mu_eff)"),
        _field("c1", cm.c1, f"Q1.30 c1 = {src.c1:.17g}"),
        _field("decay_h1", cm.decay_h1, f"Q1.30 1 - c1 - c_mu sum(w), c_mu = {src.cmu:.17g}"),
        _field("decay_h0", cm.decay_h0, "Q1.30 1 - c1(1 - c_c(2-c_c)) - c_mu sum(w)"),
        _field("cs_over_ds", cm.cs_over_ds, f"Q1.30 c_s/d_s, d_s = {src.damps:.17g}"),
        _field("inv_chi", cm.inv_chi, f"Q1.30 1/chi_k, chi_k = {src.chi:.17g}"),
        _field("hsig_thr", f"{pfx}adapt_hsig_thr", ""),
        _field("ln_sigma0", cm.ln_sigma0, f"Q8.23 ln(sigma0), sigma0 = {cfg.sigma0!r}"),
        _field("exp2_lut", f"{pfx}adapt_exp2_lut", ""),
        _field(
            "grid_on",
            int(grid is not None),
            "QELaTTA-V2 " + (f"{grid.name}" if grid is not None else "off"),
        ),
        _field("grid_frac", grid.frac if grid is not None else 0, "grid fraction bits"),
        _field("grid_lo", grid.lo if grid is not None else 0, "grid raw minimum"),
        _field("grid_hi", grid.hi if grid is not None else 0, "grid raw maximum"),
    ]
    fields = [
        _field("n_classes", C, "C"),
        _field("dim", D, "D (latent size)"),
        _field("mode", MODE_IDS[cfg.mode], f"ELT_MODE_{cfg.mode.upper()}"),
        _field("seed", f"UINT64_C({cfg.seed})", "base seed of the per-sample xoshiro128** streams"),
        _field("W", f"{pfx}adapt_W", ""),
        _field("b", f"{pfx}adapt_b", ""),
        _field(
            "head_shift",
            params.head_shift,
            f"accumulator {params.b_fmt.name} -> logits {params.logit_fmt.name}; proven "
            f"|acc| <= {params.head_bound}",
        ),
        _field("logit_frac", params.logit_fmt.frac_bits, f"logits {params.logit_fmt.name}"),
        _field("V", f"{pfx}adapt_V", ""),
        _field("zt_shift", params.zt_shift, f"z_t Q0.15 -> latent {params.latent_fmt.name}"),
        _field("v_shift", params.v_shift, f"V p Q.{params.v_fmt.frac_bits + X_FRAC} -> latent"),
        _field("beta", params.beta_q30, f"Q1.30 beta = {cfg.beta!r}"),
        _field("radius", params.radius_q23, f"Q8.23 radius = {cfg.radius!r}"),
        _field("qv1", int(cfg.qelatta_v1), "QELaTTA-V1 two-level p"),
        _field("log2_lut", f"{pfx}adapt_log2_lut", ""),
        _field("gauss_lut", f"{pfx}adapt_gauss_lut", ""),
    ]
    ctx = {
        "version": __version__,
        "input_hash": params.input_hash,
        "prefix": pfx,
        "guard": f"{pfx.upper()}ADAPT_PARAMS_H",
        "header": f"{pfx}adapt_params.h",
        "config": repr(cfg),
        "formats": [
            ("z_t", Z_T_FMT.name),
            ("latent z", params.latent_fmt.name),
            ("W", params.w_fmt.name),
            ("b / accumulator", params.b_fmt.name),
            ("V", params.v_fmt.name),
            ("logits", params.logit_fmt.name),
            ("H", H_FMT.name),
            ("p, m, x", P_FMT.name),
            ("C, A", f"Q{31 - C_FRAC}.{C_FRAC}"),
            ("z (normals)", f"Q{31 - Z_FRAC}.{Z_FRAC}"),
            ("ln sigma", LNSIG_FMT.name),
        ],
        "sizes": [("K", k), ("LAM", cm.lam), ("D", D), ("C", C)],
        "arrays": arrays,
        "fields": fields,
        "es_fields": es_fields,
    }
    env = jinja_env()
    return {
        f"{pfx}adapt_params.h": env.get_template("adapt_params.h.j2").render(**ctx),
        f"{pfx}adapt_params.c": env.get_template("adapt_params.c.j2").render(**ctx),
    }


__all__ = [
    "ADAPT_FIRMWARE_SOURCES",
    "AdaptConfig",
    "AdaptParams",
    "IntAdaptResult",
    "TraceFn",
    "adapt_cflags",
    "adapt_int",
    "emit_adapt_c",
    "quantize_adapt",
    "tri",
    "Z_FRAC",
]
