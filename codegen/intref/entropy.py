"""Fixed-point exp2, log2 and Shannon entropy: bit-exact twin of ``firmware/elt_entropy_s16.c``.

Entropy of softmax(l) for int16 logits l in Q(15−f).f (docs/cmaes.md §5, docs/numeric.md §5.4)::

    d_i = max l − l_i ≥ 0, clamped at 31 (e^−31 ≈ 3e−14 is below every LSB that follows)
    a_i = d_i in Q5.26
    v_i = round(a_i · log₂e)                    Q.26, log₂ units (log₂e in Q1.30)
    e_i = 2^−v_i = exp2neg(v_i)                 Q1.30: shift by ⌊v⌋, 257-entry LUT for the fraction
    S   = Σ e_i                                 int64, S ≥ 2³⁰ (the maximum has e = 1 exactly)
    T   = Σ round(e_i · a_i / 2²⁶)              int64 Q.30; e·|d| ≤ 1/e, so T < 2³⁷ for C ≤ 256
    R   = (T · 2²⁶) / S                         one exact positive division (elt_udiv64), Q.26
    ln S = ln2 · (b − 30 + log₂(1 + x)),        S = 2^b (1 + x), x from the 257-entry log₂ LUT
    H   = ln S + R                              int32 Q5.26

Every product is rounded with the one rule (x + 2^(s−1)) >> s (`codegen.base.fixed.rshift_round`).
Ranking is by (H, index); the predicted class is the first maximum of the logits.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from codegen.base.contract import MAX_CLASSES
from codegen.base.fixed import div_pos, rshift_round
from codegen.base.tables import EXP2_LUT, LOG2_LUT, LUT_BITS, LUT_FRAC

I64 = npt.NDArray[np.int64]

D_FRAC = 26  # logit differences Q5.26
D_CLAMP = 31  # d is clamped at 31 nats (docs/cmaes.md §5 step 1)
LOG2E_Q30 = round(math.log2(math.e) * (1 << 30))  # 1549082005
LN2_Q30 = round(math.log(2.0) * (1 << 30))  # 744261118
_SEG_SHIFT = 26 - LUT_BITS  # 18: fraction bits below the LUT index for a Q.26 argument


def rshift_round_var(x: npt.ArrayLike, s: npt.ArrayLike) -> I64:
    """`codegen.base.fixed.rshift_round` with a per-element shift s ∈ [1, 62]
    (fx_rshift_round64)."""
    xa = np.asarray(x, dtype=np.int64)
    sa = np.asarray(s, dtype=np.int64)
    return np.asarray((xa + (np.int64(1) << (sa - 1))) >> sa, dtype=np.int64)


def lut_interp_q26(lut: I64, r: I64) -> I64:
    """Linear interpolation of a 257-entry LUT at r ∈ [0, 2²⁶] (Q.26 of the LUT's x ∈ [0, 1]).

    r = 2²⁶ lands on the last knot exactly (index 255, fraction 2¹⁸), so no branch is needed.
    """
    j = np.minimum(r >> _SEG_SHIFT, (1 << LUT_BITS) - 1)
    f = r - (j << _SEG_SHIFT)
    a = lut[j]
    return a + rshift_round((lut[j + 1] - a) * f, _SEG_SHIFT)


def exp2neg_q30(v: I64) -> I64:
    """``elt_exp2neg_q30``: 2^−v for v ≥ 0 in Q.26, result Q1.30 (0 below 2^−31)."""
    v = np.asarray(v, dtype=np.int64)
    q = v >> 26
    t = lut_interp_q26(EXP2_LUT, v & ((1 << 26) - 1))
    qs = np.minimum(q, 31)
    out = np.where(qs > 0, rshift_round_var(t, np.maximum(qs, 1)), t)  # rounding shift by ⌊v⌋
    return np.where(q >= 32, 0, out).astype(np.int64)


def bitlen64(x: I64) -> I64:
    """Number of significant bits of positive int64 values below 2⁵³ (64 − CLZ)."""
    _, e = np.frexp(np.asarray(x, dtype=np.float64))
    return e.astype(np.int64)


def ln_q30sum_q26(S: I64) -> I64:
    """``elt_ln_q26``: ln S for S in Q.30 with 2³⁰ ≤ S < 2³⁹, result Q.26 (docs/cmaes.md §5
    step 4)."""
    b = bitlen64(S) - 1  # S = 2^b (1 + x), b ∈ [30, 38]
    xf = rshift_round_var(S - (np.int64(1) << b), b - 26)  # x in Q.26, may round up to 2^26
    l2 = ((b - LUT_FRAC) << 26) + rshift_round(lut_interp_q26(LOG2_LUT, xf), LUT_FRAC - 26)
    return rshift_round(l2 * LN2_Q30, 30)


TABLE_MAX_FRAC = 12  # entropy terms tabulated for logit frac ≤ 12 (≤ 127k entries per table)
_TERMS: dict[int, tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]] = {}


def _terms_direct(d: I64, frac: int) -> tuple[I64, I64]:
    """The per-class terms of one clamped difference d (Q(15−frac).frac), by the formulas of
    the module docstring: e = 2^−round(a·log₂e) (Q1.30) and round(e·a/2²⁶) (Q.30)."""
    a = d << (D_FRAC - frac)  # Q5.26, ≤ 31·2^26
    v = rshift_round(a * LOG2E_Q30, 30)  # log2 units, Q.26
    e = exp2neg_q30(v)  # Q1.30
    return e, rshift_round(e * a, D_FRAC)


def entropy_terms(frac: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """`_terms_direct` for every d ∈ [0, 31·2^frac], as two int32 tables (e ≤ 2³⁰;
    round(e·a/2²⁶) ≤ 2³⁰·max x·e^−x = 2³⁰/e): each term depends on d alone, so a gather is
    the same function as the arithmetic."""
    hit = _TERMS.get(frac)
    if hit is None:
        e, t = _terms_direct(np.arange((D_CLAMP << frac) + 1, dtype=np.int64), frac)
        hit = (e.astype(np.int32), t.astype(np.int32))
        _TERMS[frac] = hit
    return hit


def entropy_s16(logits: npt.ArrayLike, frac: int) -> I64:
    """``elt_entropy_s16``: H of softmax over the last axis of int16 logits (Q(15−frac).frac),
    int32 Q5.26. Works on any batch shape [..., C]."""
    L = np.asarray(logits, dtype=np.int64)
    if not 0 <= frac <= 15:
        raise ValueError(f"logit frac={frac} must be in [0, 15]")
    if L.shape[-1] > MAX_CLASSES:
        raise ValueError(f"{L.shape[-1]} classes: the entropy kernel supports <= {MAX_CLASSES}")
    d = np.max(L, axis=-1, keepdims=True) - L  # ≥ 0
    d = np.minimum(d, D_CLAMP << frac)
    if frac <= TABLE_MAX_FRAC:
        e_tab, t_tab = entropy_terms(frac)
        e, t = e_tab[d], t_tab[d]
    else:
        e, t = _terms_direct(d, frac)
    S: I64 = np.asarray(np.sum(e, axis=-1, dtype=np.int64))
    T: I64 = np.asarray(np.sum(t, axis=-1, dtype=np.int64))  # Q.30
    R = div_pos(T << 26, S)  # Q.26
    H = ln_q30sum_q26(S) + R
    return np.asarray(H, dtype=np.int64)


def argmax_s16(logits: npt.ArrayLike) -> I64:
    """``elt_argmax_s16``: index of the first maximum (ties → lowest index)."""
    return np.argmax(np.asarray(logits), axis=-1).astype(np.int64)


def rank_by_h(H: npt.ArrayLike) -> I64:
    """Ranking by (H, index): the stable sort the C insertion sort reproduces."""
    return np.argsort(np.asarray(H), axis=-1, kind="stable").astype(np.int64)
