"""The input stages "cmvn", "cmvn_causal" and "cmvn_select" in integers: their constants
(`CmvnParams`, decided by `codegen.stages.cmvn.quantize_cmvn`) and their integer reference,
continual per-coefficient input normalisation, bit-exact twin of ``firmware/elt_cmvn_s16.c``
(docs/adaptation.md "Integer specification", "Audio mode: causal cmvn" and "Round 4" …
"Round 6"; the float forms are `codegen.elatta.methods.cmvn_normalised`,
`codegen.elatta.methods.cmvn_causal_stream` and `codegen.elatta.methods.cmvn_shift`).

Per clip, before the encoder and in clip order, from the state of the previous clip: the clip's
coefficient sums update an exponential moving average of the mean and the mean square; the
clip's frames are then shifted by w times the running mean and scaled by 1/√(1 − w + w·v).
The causal form normalises with the state before the clip (under its shift gate) and updates
after it, so the audio mode can normalise each frame as the front end produces it.
Every constant is in `CmvnParams`; this module decides nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from codegen.base.errors import ConfigError
from codegen.base.fixed import INT32_MAX, INT32_MIN, isqrt64, rshift_round

I64 = npt.NDArray[np.int64]
GAIN_FRAC = 14  # G: Q1.14 of 1/√(1 − w + w·v)


@dataclass(frozen=True)
class CmvnParams:
    """Mode "cmvn", integer form (docs/adaptation.md "Integer specification"): continual
    per-coefficient mean and mean square of the int16 input u (x_fmt, ``x_frac`` fraction bits),
    blended with the training statistics (0 and 1 after the model's normalisation).

    State M, P (int32, ``state_frac`` = x_frac + 8 fraction bits); per clip: S1 = Σ_t u,
    S2 = Σ_t u²; c1 = rsr(S1·recip, recip_shift − 8), c2 = sat32(rsr(S2·recip, recip_shift +
    x_frac − 8)); M += rsr(c1 − M, a), P += rsr(c2 − P, a); V = max(P − rsr(M², state_frac),
    vmin); D = 2^F − (2^F >> b) + rsr(V, b); O = rsr(M, 8 + b); G = isqrt(2^(28+F) // D) (Q14);
    û = sat16(rsr(sat16(u − O)·G, 14)).
    """

    frames: int  # T
    features: int  # F
    x_frac: int  # n
    state_frac: int  # F_s = n + 8
    recip: int  # round(2^recip_shift / T)
    recip_shift: int  # 22
    alpha_shift: int  # a
    weight_shift: int  # b
    vmin: int  # max(1, round(1e-4 · 2^F_s))
    # the shift gates (docs/adaptation.md "Audio mode"): thresholds round(τ·F·2^F_s) on
    # Σ_f rsr(M², F_s) + rsr((V − 1)², F_s) of mode cmvn (after the update) and of mode
    # cmvn_causal (before it), 0: no gate; and cmvn_causal's EMA factor 2^-causal_alpha_shift
    gate_sum: int = 0
    causal_alpha_shift: int = 2
    causal_gate_sum: int = 0
    # mode cmvn_select: the normalised run's class is taken where H(cmvn) + margin < H(raw),
    # margin in the entropy's Q5.26 (docs/adaptation.md "Round 3"), or also where the shift
    # distance of the updated state reaches select_gate_sum (Q.F_s as gate_sum; 0: no gate;
    # "Round 4"); and only where that distance reaches select_floor_sum (the same format; 0:
    # no floor; "Round 5"). Round 6, on the clip's own shift distance (the same sum over the
    # clip's mean c1 and mean square c2 instead of M and P; the same format; 0: none): the floor
    # is also reached where it reaches select_clip_floor_sum, and where the floor is reached and
    # it reaches select_clip_gate_sum the normalised class is taken without the entropy test
    select_margin: int = 0
    select_gate_sum: int = 0
    select_floor_sum: int = 0
    select_clip_floor_sum: int = 0
    select_clip_gate_sum: int = 0
    # mode cmvn_select's normalised run ("Round 8"): its EMA factor 2^-select_alpha_shift and
    # blend 2^-select_weight_shift in place of a and b; -1 (the default): a and b themselves,
    # resolved on construction, so the fields always hold the shifts the device uses
    select_alpha_shift: int = -1
    select_weight_shift: int = -1

    def __post_init__(self) -> None:
        if self.select_alpha_shift == -1:
            object.__setattr__(self, "select_alpha_shift", self.alpha_shift)
        if self.select_weight_shift == -1:
            object.__setattr__(self, "select_weight_shift", self.weight_shift)

    @property
    def select_run(self) -> CmvnParams:
        """The parameters of mode cmvn_select's normalised run: its own shifts, no shift gate."""
        return replace(
            self,
            alpha_shift=self.select_alpha_shift,
            weight_shift=self.select_weight_shift,
            gate_sum=0,
        )

    @property
    def state_bytes(self) -> int:
        return 8 * self.features


@dataclass
class CmvnState:
    """``elt_cmvn_state_t``: running mean M and mean square P of the input, Q.state_frac."""

    M: I64  # [F] int32 range
    P: I64  # [F] int32 range

    @classmethod
    def reset(cls, p: CmvnParams) -> CmvnState:
        """``elt_cmvn_reset``: the training statistics (mean 0, mean square 1)."""
        return cls(np.zeros(p.features, np.int64), np.full(p.features, 1 << p.state_frac, np.int64))


def _sat16(x: I64) -> I64:
    return np.minimum(np.maximum(x, -32768), 32767)


def _clip_means(s1: I64, s2: I64, p: CmvnParams) -> tuple[I64, I64]:
    """Step 2: the clip's mean c1 and mean square c2 (Q.state_frac) from the sums S1, S2."""
    c1 = rshift_round(s1 * p.recip, p.recip_shift - 8)
    c2 = np.clip(rshift_round(s2 * p.recip, p.recip_shift + p.x_frac - 8), INT32_MIN, INT32_MAX)
    return c1, c2


def _update(st: CmvnState, s1: I64, s2: I64, p: CmvnParams, alpha_shift: int) -> None:
    """Steps 2–3: the clip means from the sums S1, S2, then the EMA of M and P (in place)."""
    c1, c2 = _clip_means(s1, s2, p)
    st.M = st.M + rshift_round(c1 - st.M, alpha_shift)
    st.P = st.P + rshift_round(c2 - st.P, alpha_shift)


def _variance(st: CmvnState, p: CmvnParams) -> I64:
    """Step 4: V = max(P − rsr(M², F_s), vmin)."""
    return np.maximum(st.P - rshift_round(st.M * st.M, p.state_frac), p.vmin)


def shift_sum(st: CmvnState, p: CmvnParams) -> int:
    """The shift distance of the state from the training statistics that the shift gates
    compare with their thresholds: Σ_f rsr(M², F_s) + rsr((V − 1)², F_s) (Q.F_s; the C kernel's
    ``dist``, docs/adaptation.md "Audio mode")."""
    fs = p.state_frac
    one = np.int64(1) << fs
    v = _variance(st, p)
    d = rshift_round(st.M * st.M, fs) + rshift_round((v - one) * (v - one), fs)
    return int(d.sum())


def clip_shift_sum(u: I64, p: CmvnParams) -> int:
    """The clip's own shift distance (docs/adaptation.md "Round 6"): `shift_sum` of the clip's
    mean c1 and mean square c2 (step 2) in place of M and P (the C kernel's ``clip_dist``)."""
    return shift_sum(CmvnState(*_clip_means(u.sum(axis=0), (u * u).sum(axis=0), p)), p)


def _coefficients(st: CmvnState, p: CmvnParams, gate_sum: int) -> tuple[I64, I64] | None:
    """Steps 4–6: offsets O and gains G from the state; None where the shift gate is closed
    (`shift_sum` < gate_sum, docs/adaptation.md "Audio mode")."""
    fs, b = p.state_frac, p.weight_shift
    one = np.int64(1) << fs
    v = _variance(st, p)
    if gate_sum > 0 and shift_sum(st, p) < gate_sum:
        return None
    d = one - (one >> b) + rshift_round(v, b)
    offset = rshift_round(st.M, 8 + b)
    gain = isqrt64((np.int64(1) << (28 + fs)) // d)
    return offset, gain


def _normalise(u: I64, coef: tuple[I64, I64] | None) -> I64:
    """Step 7 on frames [.., F]; a closed gate passes them unchanged."""
    if coef is None:
        return u.copy()
    offset, gain = coef
    return _sat16(rshift_round(_sat16(u - offset) * gain, GAIN_FRAC))


def cmvn_clip(u: I64, p: CmvnParams, st: CmvnState) -> I64:
    """``elt_cmvn_apply_s16`` on one clip u [T, F] (int16 values): updates ``st`` in place and
    returns the normalised clip (int16 values in the same format), or the clip unchanged where
    the shift gate on the updated state is closed."""
    _update(st, u.sum(axis=0), (u * u).sum(axis=0), p, p.alpha_shift)
    return _normalise(u, _coefficients(st, p, p.gate_sum))


def cmvn_causal_clip(u: I64, p: CmvnParams, st: CmvnState) -> I64:
    """Mode "cmvn_causal" on one clip (``elt_cmvn_causal_begin``, ``_frame`` per frame,
    ``_end``): the clip is normalised with the state before it, under the shift gate, and then
    updates the state (EMA factor 2^-causal_alpha_shift). Frame t's output depends on frame t
    and the past only, so any chunking of the audio gives these integers."""
    out = _normalise(u, _coefficients(st, p, p.causal_gate_sum))
    _update(st, u.sum(axis=0), (u * u).sum(axis=0), p, p.causal_alpha_shift)
    return out


def cmvn_select_int(
    features: npt.ArrayLike, p: CmvnParams, state: CmvnState | None = None
) -> tuple[I64, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Mode cmvn_select's normalised run over clips [N, T, F] from a reset state (or from
    ``state``, which it then updates in place: the continuous mode's windows arrive a few at a
    time, docs/stream.md): mode cmvn's
    clip without its shift gate; per clip ``fired``, the normalised class is taken without the
    entropy test, and ``floor_ok``, the entropy test may take it. With d the updated state's
    `shift_sum` and d_clip the clip's own (`clip_shift_sum`), each threshold 0 meaning none:
    floor_ok = d ≥ select_floor_sum ("Round 5"; always with no floor) or d_clip ≥
    select_clip_floor_sum > 0 ("Round 6", the clip floor); fired = d ≥ select_gate_sum > 0
    ("Round 4", the shift gate) or (floor_ok and d_clip ≥ select_clip_gate_sum > 0; "Round 6",
    the clip gate) (docs/adaptation.md)."""
    X = _check(features, p)
    st = CmvnState.reset(p) if state is None else state
    run = p.select_run  # the normalised run's own shifts ("Round 8"), no shift gate
    out = np.empty_like(X)
    fired = np.zeros(X.shape[0], bool)
    floor_ok = np.ones(X.shape[0], bool)
    cf, cg = p.select_clip_floor_sum, p.select_clip_gate_sum
    for i in range(X.shape[0]):
        u = X[i]
        _update(st, u.sum(axis=0), (u * u).sum(axis=0), run, run.alpha_shift)
        out[i] = _normalise(u, _coefficients(st, run, 0))
        d = shift_sum(st, run)
        dc = clip_shift_sum(u, p) if cf > 0 or cg > 0 else 0
        floor_ok[i] = p.select_floor_sum <= 0 or d >= p.select_floor_sum or (0 < cf <= dc)
        fired[i] = (p.select_gate_sum > 0 and d >= p.select_gate_sum) or (
            floor_ok[i] and 0 < cg <= dc
        )
    return out, fired, floor_ok


def _check(features: npt.ArrayLike, p: CmvnParams) -> I64:
    X = np.asarray(features)
    if X.ndim != 3 or X.shape[1:] != (p.frames, p.features):
        raise ConfigError(f"features must have shape [N, {p.frames}, {p.features}], got {X.shape}")
    if not np.issubdtype(X.dtype, np.integer):
        raise ConfigError(f"features must be integers (int16 raw), got {X.dtype}")
    return X.astype(np.int64)


def cmvn_int(
    features: npt.ArrayLike,
    p: CmvnParams,
    state: CmvnState | None = None,
    causal: bool = False,
) -> tuple[I64, CmvnState]:
    """Normalise clips [N, T, F] (int16, the model's input format) in row order from ``state``
    (default: a reset state, as after RESET), with mode cmvn's clip (or ``causal``: mode
    cmvn_causal's). Returns the clips as int64 arrays of int16 values and the state after the
    last clip."""
    X = _check(features, p)
    st = CmvnState.reset(p) if state is None else CmvnState(state.M.copy(), state.P.copy())
    out = np.empty_like(X)
    for i in range(X.shape[0]):
        out[i] = (cmvn_causal_clip if causal else cmvn_clip)(X[i], p, st)
    return out, st


def select_use(
    h_raw: npt.ArrayLike,
    h_norm: npt.ArrayLike,
    margin: int,
    fired: npt.NDArray[np.bool_] | None = None,
    floor_ok: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.bool_]:
    """Mode cmvn_select's choice per clip (``choose`` of ``firmware/elt_cmvn_stage.c``): the
    normalised run where its shift gate or clip gate ``fired`` or where its no-adapt entropy
    ``h_norm`` plus ``margin`` (both Q5.26) is below the raw run's ``h_raw`` and the floor was
    reached (``floor_ok``: the shift floor or the clip floor; None: no floor)
    (docs/adaptation.md "Round 3" … "Round 6"; `cmvn_select_int`)."""
    use = np.asarray(h_norm, np.int64) + margin < np.asarray(h_raw, np.int64)
    if floor_ok is not None:
        use = use & np.asarray(floor_ok, bool)
    return use if fired is None else use | np.asarray(fired, bool)
