"""Float64 CMA-ES written from the equations of pycma 4.5.0 (the canonical reference).

Every constant and every update line cites `docs/cmaes.md`: §1.1 holds the defaults table and
§1.2 the ordered update of pycma's ``tell2`` (pycma source lines are cited alongside). pycma itself
is used only as the test oracle (`tests/codegen/elatta/test_cmaes_float.py`): driven by the same
candidates X and fitness values f, the state after every ``tell`` (m, σ, C, p_c, p_σ, h_σ) equals
pycma's to ~1e-13.

Two deliberate differences from pycma's defaults, both parameters here:

* the initial covariance is ``C0`` (default I). pycma starts from ``diag(exp(1e-4 i / k))`` to
  avoid equal eigenvalues (docs/cmaes.md §1.3); the oracle tests reset pycma to I.
* ties in f are ranked by (f, index) with a stable sort; pycma's ``np.argsort`` is unstable.

``whitening="eigh"`` samples y = B D z from the eigendecomposition C = B D² Bᵀ and whitens the
mean shift with C^{-1/2} = B D⁻¹ Bᵀ: exactly pycma. ``whitening="chol"`` samples y = A z with the
lower Cholesky factor C = A Aᵀ and whitens with A⁻¹ (Krause et al. 2016, docs/cmaes.md §3): this
is the integer design of docs/cmaes.md §6; it equals the canonical update while C is a multiple of
I (first iteration, C0 = I) and is statistically equivalent afterwards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.linalg import solve_triangular

from codegen.base.errors import ConfigError

FloatArray = npt.NDArray[np.float64]
Whitening = Literal["eigh", "chol"]
WHITENINGS: tuple[str, ...] = ("eigh", "chol")

# π to 50 digits, for the exact E‖N(0, I)‖ below (float π would cost the last ulp).
_PI = Decimal("3.14159265358979323846264338327950288419716939937510")


def default_popsize(k: int) -> int:
    """λ = 4 + ⌊3 ln k⌋ (docs/cmaes.md §1.1, pycma ``options_parameters.py:87``)."""
    return int(4 + 3 * math.log(k))


def expected_norm(k: int) -> float:
    """χ_k = E‖N(0, I_k)‖ = √2·Γ((k+1)/2)/Γ(k/2), correctly rounded to float64.

    pycma 4.5 uses an exact table up to k = 100 (docs/cmaes.md §1.1, ``utilities/math.py:842``).
    ``math.lgamma`` loses up to ~3e-14 here, so the ratio is evaluated in closed form with
    Γ(m + 1/2) = (2m)!·√π / (4^m·m!) in exact rationals and one 50-digit square root:
    even k = 2m: χ² = 2π·R², R = (2m)! / (4^m·m!·(m−1)!);
    odd k = 2m+1: χ² = 2R²/π, R = 4^m·(m!)² / (2m)!.
    """
    if k < 1:
        raise ConfigError(f"dimension k={k!r} must be an integer >= 1")
    if k % 2 == 0:
        m = k // 2
        r = Fraction(math.factorial(2 * m), 4**m * math.factorial(m) * math.factorial(m - 1))
    else:
        m = (k - 1) // 2
        r = Fraction(4**m * math.factorial(m) ** 2, math.factorial(2 * m))
    with localcontext() as ctx:
        ctx.prec = 50
        r2 = Decimal(r.numerator**2) / Decimal(r.denominator**2)
        chi2 = 2 * r2 * _PI if k % 2 == 0 else 2 * r2 / _PI
        return float(chi2.sqrt())


@dataclass(frozen=True)
class CmaesParams:
    """All CMA-ES constants for dimension k (pycma 4.5.0 defaults, docs/cmaes.md §1.1).

    ``weights`` has λ entries sorted by rank: μ positive weights summing to 1, then the active
    (negative) weights, which are all zero when ``active`` is False (pycma ``CMA_active=False``).
    """

    k: int
    lam: int
    mu: int
    weights: tuple[float, ...]
    mueff: float
    c1: float
    cmu: float
    cc: float
    cs: float
    damps: float
    chi: float
    hsig_threshold: float
    active: bool

    @classmethod
    def for_dim(cls, k: int, lam: int | None = None, active: bool = True) -> CmaesParams:
        """Build the pycma 4.5.0 default constants for dimension ``k`` and population ``lam``."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"CMA-ES dimension k={k!r} is not allowed: use an integer >= 1")
        if lam is None:
            lam = default_popsize(k)
        if isinstance(lam, bool) or not isinstance(lam, int) or lam < 2:
            raise ConfigError(
                f"CMA-ES population lam={lam!r} is not allowed: use an integer >= 2 "
                f"(default for k={k} is {default_popsize(k)})"
            )
        if not isinstance(active, bool):
            raise ConfigError(f"CMA-ES active={active!r} is not allowed: use True or False")
        n = float(k)
        # raw weights w'_i = ln((λ+1)/2) − ln i, i = 1..λ (docs/cmaes.md §1.1,
        # recombination_weights.py:177)
        raw = [math.log((lam + 1) / 2.0) - math.log(i) for i in range(1, lam + 1)]
        # μ = number of positive weights = ⌊λ/2⌋ (docs/cmaes.md §1.1)
        mu = sum(1 for w in raw if w > 0)
        # positive weights normalised to sum 1 (docs/cmaes.md §1.1, recombination_weights.py:266)
        spos = sum(raw[:mu])
        pos = [w / spos for w in raw[:mu]]
        # μ_eff = 1 / Σ_{i≤μ} w_i² (docs/cmaes.md §1.1)
        mueff = 1.0 / sum(w * w for w in pos)
        # c1 = min(1, λ/6)·2/((k+1.3)² + μ_eff) (docs/cmaes.md §1.1, interfaces.py:330)
        c1 = min(1.0, lam / 6) * 2 / ((n + 1.3) ** 2 + mueff)
        # cμ = min(1 − c1, 2(0.25 + μ_eff − 2 + 1/μ_eff)/((k+2)² + μ_eff))
        # (docs/cmaes.md §1.1, interfaces.py:334)
        cmu = min(1 - c1, 2 * (0.25 + mueff - 2 + 1 / mueff) / ((n + 2) ** 2 + 2 * mueff / 2))
        neg_raw = raw[mu:]
        sneg = sum(neg_raw)  # ≤ 0; zero only if there is no negative raw weight
        if active and sneg < 0:
            # μ⁻_eff = (Σ w'⁻)² / Σ w'⁻² (docs/cmaes.md §1.1, recombination_weights.py mueffminus)
            mueff_minus = sneg * sneg / sum(w * w for w in neg_raw)
            # α⁻ = min(1 + c1/cμ, 1 + 2μ⁻_eff/(μ_eff+2), (1−c1−cμ)/(k·cμ))
            # (docs/cmaes.md §1.1, recombination_weights.py:316-320)
            alpha_minus = min(
                1 + c1 / cmu,
                1 + 2 * mueff_minus / (mueff + 2),
                (1 - c1 - cmu) / cmu / n,
            )
            # w_i = w'_i·α⁻/Σ_{j>μ}|w'_j| (docs/cmaes.md §1.1)
            neg = [w * (alpha_minus / -sneg) for w in neg_raw]
        else:
            # CMA_active=False zeroes the negative weights (docs/cmaes.md §1.4)
            neg = [0.0 for _ in neg_raw]
        # c_c = (4 + μ_eff/k)/(k + 4 + 2μ_eff/k) (docs/cmaes.md §1.1, options_parameters.py:982)
        cc = (4.0 + mueff / n) / (n + (4.0 + 2 * mueff / n))
        # c_σ = min(0.5, (μ_eff+2)/(k+μ_eff+3)), 4.5 cap (docs/cmaes.md §1.1,
        # sigma_adaptation.py:422)
        cs = min(0.5, (mueff + 2) / (n + (mueff + 3)))
        # d_in = max(1, 3(1 − 0.5^{k/9})) (docs/cmaes.md §1.1, sigma_adaptation.py:380)
        d_in = max(1.0, 3 * (1 - 0.5 ** (n / 9)))
        # d_σ = 1 + 2·max(0, d_in·√((μ_eff−1)/(k+1)) − 1) + c_σ (docs/cmaes.md §1.1,
        # sigma_adaptation.py:380)
        damps = 1.0 + 2 * max(0.0, d_in * ((mueff - 1) / (n + 1)) ** 0.5 - 1) + cs
        return cls(
            k=k,
            lam=lam,
            mu=mu,
            weights=tuple(pos + neg),
            mueff=mueff,
            c1=c1,
            cmu=cmu,
            cc=cc,
            cs=cs,
            damps=damps,
            # χ_k = E‖N(0,I)‖ exactly (docs/cmaes.md §1.1, pycma 4.5 utilities/math.py:842)
            chi=expected_norm(k),
            # h_σ threshold 1 + 4/(k+1) (docs/cmaes.md §1.2 step 4, sigma_adaptation.py:92-95)
            hsig_threshold=1 + 4.0 / (k + 1),
            active=active,
        )

    @property
    def weights_array(self) -> FloatArray:
        """The λ recombination weights as a float64 array."""
        return np.asarray(self.weights, dtype=np.float64)


def _readonly(a: npt.ArrayLike) -> FloatArray:
    out = np.array(a, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class CmaesState:
    """One immutable snapshot of the CMA-ES state (arrays are read-only copies).

    ``g`` counts completed ``tell`` calls (pycma ``countiter``); ``hsig`` is the h_σ of the last
    ``tell`` (True before the first one).
    """

    m: FloatArray
    sigma: float
    C: FloatArray
    pc: FloatArray
    ps: FloatArray
    g: int = 0
    hsig: bool = True

    @classmethod
    def initial(
        cls, mean: npt.ArrayLike, sigma: float, C0: npt.ArrayLike | None = None
    ) -> CmaesState:
        """State before the first iteration: paths zero, C = C0 (default I)."""
        m = np.asarray(mean, dtype=np.float64)
        if m.ndim != 1 or m.size < 1 or not np.all(np.isfinite(m)):
            raise ConfigError(f"CMA-ES mean must be a finite non-empty vector, got {m!r}")
        k = m.size
        if not (isinstance(sigma, float | int) and math.isfinite(sigma) and sigma > 0):
            raise ConfigError(f"CMA-ES sigma={sigma!r} is not allowed: use a finite float > 0")
        if C0 is None:
            C = np.eye(k)
        else:
            C = np.asarray(C0, dtype=np.float64)
            if C.shape != (k, k) or not np.all(np.isfinite(C)) or not np.allclose(C, C.T):
                raise ConfigError(f"CMA-ES C0 must be a finite symmetric {k}x{k} matrix")
        return cls(
            m=_readonly(m),
            sigma=float(sigma),
            C=_readonly(C),
            pc=_readonly(np.zeros(k)),
            ps=_readonly(np.zeros(k)),
        )


@dataclass(frozen=True, eq=False)
class _Factor:
    """Factorisation of one covariance matrix: samples are y = T z, whitening is T⁻¹ (chol) or
    B D⁻¹ Bᵀ (eigh, the symmetric C^{-1/2})."""

    T: FloatArray  # eigh: B·diag(D); chol: lower A
    B: FloatArray | None  # eigh only
    D: FloatArray | None  # eigh only


@dataclass
class Cmaes:
    """pycma-4.5.0-equivalent CMA-ES. ``ask_from_z`` → evaluate → ``tell``; state is immutable.

    The instance owns only the current `CmaesState` and a cached factorisation of its C.
    """

    params: CmaesParams
    state: CmaesState
    whitening: Whitening = "eigh"
    _factor: _Factor | None = field(default=None, init=False, repr=False)

    @classmethod
    def start(
        cls,
        params: CmaesParams,
        mean: npt.ArrayLike,
        sigma: float,
        C0: npt.ArrayLike | None = None,
        whitening: Whitening = "eigh",
    ) -> Cmaes:
        """New run from mean m⁰, step size σ₀ and covariance C0 (default I)."""
        if whitening not in WHITENINGS:
            raise ConfigError(f"whitening={whitening!r} is not allowed: use one of {WHITENINGS}")
        state = CmaesState.initial(mean, sigma, C0)
        if state.m.size != params.k:
            raise ConfigError(f"CMA-ES mean has {state.m.size} entries, params.k is {params.k}")
        es = cls(params=params, state=state, whitening=whitening)
        if C0 is None:
            # C = I: eigh gives B = I, D = 1 and Cholesky gives A = I exactly; skip the call
            eye = np.eye(params.k)
            es._factor = _Factor(
                T=eye,
                B=eye if whitening == "eigh" else None,
                D=np.ones(params.k) if whitening == "eigh" else None,
            )
        return es

    def set_mean(self, mean: npt.ArrayLike) -> None:
        """Replace m (used by QELaTTA-V1, which quantises m after each iteration)."""
        m = np.asarray(mean, dtype=np.float64)
        if m.shape != self.state.m.shape:
            raise ConfigError(f"mean shape {m.shape} does not match {self.state.m.shape}")
        s = self.state
        self.state = CmaesState(
            m=_readonly(m), sigma=s.sigma, C=s.C, pc=s.pc, ps=s.ps, g=s.g, hsig=s.hsig
        )

    def factor(self) -> _Factor:
        """Factorisation of the current C, computed once per state (docs/cmaes.md §1.2 step 8)."""
        if self._factor is None:
            C = self.state.C
            if self.whitening == "eigh":
                # C ← (C+Cᵀ)/2; eigh, eigenvalues ascending; D = √eig (docs/cmaes.md §1.2 step 8,
                # sampler.py:404)
                d2, B = np.linalg.eigh((C + C.T) / 2)
                if np.any(d2 <= 0):  # pycma repairs and warns here; we refuse
                    raise FloatingPointError(
                        f"covariance matrix is not positive definite (min eigenvalue {d2.min()!r})"
                    )
                D = np.sqrt(d2)
                self._factor = _Factor(T=B * D, B=B, D=D)
            else:
                # C = A Aᵀ, A lower triangular (docs/cmaes.md §3 Krause et al. 2016, §6 step 1)
                A = np.asarray(np.linalg.cholesky((C + C.T) / 2), dtype=np.float64)
                self._factor = _Factor(T=A, B=None, D=None)
        return self._factor

    def _whiten(self, v: FloatArray) -> FloatArray:
        """C^{-1/2} v = B D⁻¹ Bᵀ v (eigh, docs/cmaes.md §1.2 step 3) or A⁻¹ v (chol, §3 there)."""
        fac = self.factor()
        if fac.B is not None and fac.D is not None:
            d = fac.D if v.ndim == 1 else fac.D[:, None]
            out: FloatArray = fac.B @ ((fac.B.T @ v) / d)
            return out
        res: FloatArray = solve_triangular(fac.T, v, lower=True)
        return res

    def ask_from_z(self, z: npt.ArrayLike) -> FloatArray:
        """Candidates x_i = m + σ·T z_i for normals z [λ', k] (docs/cmaes.md §1.2 step 8)."""
        Z = np.asarray(z, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != self.params.k:
            raise ConfigError(f"z must have shape [n, {self.params.k}], got {Z.shape}")
        # y = B D z (eigh, sampler.py:306) or y = A z (chol, docs/cmaes.md §6 step 2)
        Y = Z @ self.factor().T.T
        X: FloatArray = self.state.m + self.state.sigma * Y
        return X

    def ask(self, rng: np.random.Generator) -> FloatArray:
        """Draw λ standard normal vectors from ``rng`` and return the candidates [λ, k]."""
        return self.ask_from_z(rng.standard_normal((self.params.lam, self.params.k)))

    def tell(self, X: npt.ArrayLike, f: npt.ArrayLike) -> CmaesState:
        """One update in pycma ``tell2`` order (docs/cmaes.md §1.2 steps 1-7); returns the state."""
        p = self.params
        s = self.state
        Xa = np.asarray(X, dtype=np.float64)
        fa = np.asarray(f, dtype=np.float64)
        if Xa.shape != (p.lam, p.k) or fa.shape != (p.lam,):
            raise ConfigError(
                f"tell needs X [{p.lam}, {p.k}] and f [{p.lam}], got {Xa.shape} and {fa.shape}"
            )
        if not (np.all(np.isfinite(Xa)) and np.all(np.isfinite(fa))):
            raise ConfigError("tell got non-finite candidates or fitness values")
        n = float(p.k)
        w = p.weights_array
        g = s.g + 1  # pycma countiter, incremented before the update
        # 1. sort by (f, index): stable argsort (docs/cmaes.md §1.2 step 1; ties:
        # docs/numeric.md §5.4)
        order = np.argsort(fa, kind="stable")
        Xs = Xa[order]
        # 2. m' = Σ_{i≤μ} w_i x_{i:λ}, positive weights, c_m = 1 (docs/cmaes.md §1.2 step 2, :2810)
        m_new = w[: p.mu] @ Xs[: p.mu]
        dm = m_new - s.m
        # 3. p_σ ← (1−c_σ)p_σ + √(c_σ(2−c_σ)μ_eff)·C^{-1/2}(m'−m)/σ, old B, D
        # (docs/cmaes.md §1.2 step 3)
        z_mean = self._whiten(dm) * (p.mueff**0.5 / s.sigma)
        ps = (1 - p.cs) * s.ps + math.sqrt(p.cs * (2 - p.cs)) * z_mean
        # 4. h_σ = [‖p_σ‖²/(1−(1−c_σ)^{2g})/k − 1 < 1 + 4/(k+1)] (docs/cmaes.md §1.2 step 4)
        squared_sum = float(np.sum(ps**2)) / (1 - (1 - p.cs) ** (2 * g))
        hsig = squared_sum / n - 1 < p.hsig_threshold
        h = 1.0 if hsig else 0.0
        # 5. p_c ← (1−c_c)p_c + h_σ√(c_c(2−c_c)μ_eff)(m'−m)/σ (docs/cmaes.md §1.2 step 5, :2881)
        pc = (1 - p.cc) * s.pc + h * ((p.cc * (2 - p.cc) * p.mueff) ** 0.5 / s.sigma) * dm
        # 6a. c1a = c1(1 − (1−h_σ)c_c(2−c_c)) (docs/cmaes.md §1.2 step 6, :2879)
        c1a = p.c1 * (1 - (1 - h * h) * p.cc * (2 - p.cc))
        # 6b. y_i = (x_{i:λ} − m)/σ (docs/cmaes.md §1.2 step 6, pop_zero_encoded)
        Y = (Xs - s.m) / s.sigma
        # 6c. w°_i = w_i·k/(‖C^{-1/2}y_i‖ + 1e-9)² for w_i < 0 (docs/cmaes.md §1.2 step 6,
        # sampler.py:337)
        wc = p.cmu * w
        neg = wc < 0
        if np.any(neg):
            norms = np.sqrt(np.sum(self._whiten(Y[neg].T) ** 2, axis=0))
            wc[neg] *= n / (norms + 1e-9) ** 2
        # 6d. C ← (1 − c1a − cμΣw)C + c1 p_c p_cᵀ + cμ Σ w°_i y_i y_iᵀ (docs/cmaes.md §1.2 step 6);
        # pycma feeds √(c1/c1a)·p_c with weight c1a, i.e. c1 p_c p_cᵀ up to 1e-23.
        decay = 1 - (c1a + p.cmu * float(np.sum(w)))
        C = decay * s.C + p.c1 * np.outer(pc, pc) + (Y.T * wc) @ Y
        C = (C + C.T) / 2  # symmetric by construction (docs/cmaes.md §1.2 step 8 symmetrises)
        # 7. σ ← σ·exp(clip((c_σ/d_σ)(‖p_σ‖/χ_k − 1), −1, 1)) (docs/cmaes.md §1.2 step 7, :2988)
        s_log = (float(np.linalg.norm(ps)) / p.chi - 1) * (p.cs / p.damps)
        sigma = s.sigma * math.exp(min(1.0, max(-1.0, s_log)))
        self.state = CmaesState(
            m=_readonly(m_new),
            sigma=sigma,
            C=_readonly(C),
            pc=_readonly(pc),
            ps=_readonly(ps),
            g=g,
            hsig=bool(hsig),
        )
        # 8. the new C is factorised lazily at the next ask (docs/cmaes.md §1.2 step 8)
        self._factor = None
        return self.state
