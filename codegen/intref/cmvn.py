"""Mode "cmvn": continual per-coefficient input normalisation, bit-exact twin of
``firmware/elt_cmvn_s16.c`` (docs/adaptation.md "Integer specification"; the float form is
`codegen.elatta.methods.cmvn_normalised`).

Per clip, before the encoder and in clip order, from the state of the previous clip: the clip's
coefficient sums update an exponential moving average of the mean and the mean square; the
clip's frames are then shifted by w times the running mean and scaled by 1/√(1 − w + w·v).
Every constant is in `codegen.ir.nodes.CmvnParams`; this module decides nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from codegen.base.errors import ConfigError
from codegen.base.fixed import INT32_MAX, INT32_MIN, rshift_round
from codegen.intref.cmaes_int import isqrt64
from codegen.ir.nodes import CmvnParams

I64 = npt.NDArray[np.int64]
GAIN_FRAC = 14  # G: Q1.14 of 1/√(1 − w + w·v)


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


def cmvn_clip(u: I64, p: CmvnParams, st: CmvnState) -> I64:
    """``elt_cmvn_apply_s16`` on one clip u [T, F] (int16 values): updates ``st`` in place and
    returns the normalised clip (int16 values in the same format)."""
    fs, b = p.state_frac, p.weight_shift
    s1 = u.sum(axis=0)
    s2 = (u * u).sum(axis=0)
    c1 = rshift_round(s1 * p.recip, p.recip_shift - 8)
    c2 = np.clip(rshift_round(s2 * p.recip, p.recip_shift + p.x_frac - 8), INT32_MIN, INT32_MAX)
    st.M = st.M + rshift_round(c1 - st.M, p.alpha_shift)
    st.P = st.P + rshift_round(c2 - st.P, p.alpha_shift)
    v = np.maximum(st.P - rshift_round(st.M * st.M, fs), p.vmin)
    d = (1 << fs) - ((1 << fs) >> b) + rshift_round(v, b)
    offset = rshift_round(st.M, 8 + b)
    gain = isqrt64((np.int64(1) << (28 + fs)) // d)
    return _sat16(rshift_round(_sat16(u - offset) * gain, GAIN_FRAC))


def cmvn_int(
    features: npt.ArrayLike, p: CmvnParams, state: CmvnState | None = None
) -> tuple[I64, CmvnState]:
    """Normalise clips [N, T, F] (int16, the model's input format) in row order from ``state``
    (default: a reset state, as after RESET). Returns the clips as int64 arrays of int16 values
    and the state after the last clip."""
    X = np.asarray(features)
    if X.ndim != 3 or X.shape[1:] != (p.frames, p.features):
        raise ConfigError(f"features must have shape [N, {p.frames}, {p.features}], got {X.shape}")
    if not np.issubdtype(X.dtype, np.integer):
        raise ConfigError(f"features must be integers (int16 raw), got {X.dtype}")
    X = X.astype(np.int64)
    st = CmvnState.reset(p) if state is None else CmvnState(state.M.copy(), state.P.copy())
    out = np.empty_like(X)
    for i in range(X.shape[0]):
        out[i] = cmvn_clip(X[i], p, st)
    return out, st
