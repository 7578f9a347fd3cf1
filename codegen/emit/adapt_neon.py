"""The build-specialised Cortex-A9 NEON kernel of the candidate logits (docs/numeric.md §5.9).

The class count C and the subspace size k are build-time constants (``-DELT_C_MAX=C
-DELT_K_MAX=k``, codegen/emit/adapt.py), so ``codegen build`` writes the logits
``sat16(rshift_round(acc0 + rshift_round(G p, gs), hs))`` of one candidate as straight ARMv7-A
assembly for exactly that C and k; firmware/elt_adapt.c calls it once per iteration for every
candidate. This module decides the register allocation, the class blocks, the order in which
G is stored and the VLDM sizes; the template only formats the lines it returns.

Register plan (ARM DDI 0406C.c, chapter A8):

- q10-q15 (d20-d31): six int64x2 accumulators, the classes of one block (up to 12). VMLAL.S32
  accumulates the 32 x 32-bit products exactly in 64 bits (A8.8.338).
- d4-d19: G, streamed by VLDM of at most 16 doubleword registers (A8.8.332); a load may end
  inside a row.
- d0-d3: up to 8 elements of p, the by-scalar operands. VMLAL.S32 by scalar takes its 32-bit
  scalar from d0-d15 (A8.8.338: Dm is Vm<3:0>, M the lane), so p_j is d((j mod 8) / 2)[j mod 2].

Class blocks: C is cut into blocks of 12 classes, the last one holds the C mod 12 rest. An odd
C pads the last block with one class whose G column and accumulator start are 0; its logit is
computed and never stored (the stores are per lane at the end), so every stored logit is exact.
G is stored block by block (``g_kernel_order``): block b's k rows of its classes, padded to an
even count, are contiguous, so one pointer streams the whole of G once per candidate.

The finish replaces the two rounding shifts by one floor (exact identities, the validity
conditions in ``kernel_applies``; firmware/elt_adapt.c checks the same at run time):
acc0 + rshift_round(G p, gs) = floor((acc0 2^gs + 2^(gs-1) + G p) / 2^gs) and
rshift_round(x, hs) = floor((x + 2^(hs-1)) / 2^hs); nested floors of integer quotients are the
floor of the product's quotient, so the logit is sat16(floor(Y / 2^(gs+hs))) with
Y = init + G p, init = acc0 2^gs + 2^(gs-1) + 2^(gs+hs-1). With |acc0| < 2^31, gs <= 30,
gs + hs <= 61 and |G p| < 2^62, |Y| < 2^63; floor(Y / 2^32) is the high word (VSHRN.I64 #32),
then floor(. / 2^(gs+hs-32)) and sat16 by VQSHRN.S32 by that immediate when it is 1..16
(truncating: the floor), VQMOVN.S32 when it is 0, VSHR.S32 then VQMOVN.S32 above 16 (ARM DDI
0406C A8.8: VSHRN, VQSHRN, VSHR, VQMOVN). The shifts are the instance's, so they are immediates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from codegen.emit.asm import dlist

BLOCK = 12  # classes per block: six int64x2 accumulators q10-q15
ACC_Q = 10  # first accumulator q-register
G_D = 4  # first G d-register (d4-d19)
G_REGS = 16  # one VLDM of at most 16 doubleword registers
P_GROUP = 8  # p elements in d0-d3
# A program above this many instructions per candidate (C ~ 1,500 at k 16) is not unrolled:
# the intrinsic path of firmware/elt_adapt.c runs instead.
UNROLL_LIMIT = 12000


@dataclass(frozen=True)
class CandSpec:
    """What the kernel program depends on: the build's class count and subspace size."""

    n_classes: int  # C
    k: int  # subspace size
    shift: int = 43  # g_shift + head_shift: the one floor is by 2^shift (32..61)

    def __post_init__(self) -> None:
        if self.n_classes < 1:
            raise ValueError(f"n_classes {self.n_classes}: expected at least 1")
        if self.k < 1:
            raise ValueError(f"k {self.k}: expected at least 1")
        if not 32 <= self.shift <= 61:
            raise ValueError(f"shift {self.shift}: g_shift + head_shift must be in 32..61")

    @property
    def blocks(self) -> tuple[tuple[int, int], ...]:
        """(first class, classes) of every block: blocks of BLOCK, the last one the rest."""
        c = self.n_classes
        return tuple((b, min(BLOCK, c - b)) for b in range(0, c, BLOCK))

    @property
    def padded(self) -> int:
        """Classes with the odd class count's pad: the length of the accumulator start."""
        return self.n_classes + (self.n_classes & 1)


def kernel_applies(g_shift: int, head_shift: int) -> bool:
    """The one-floor finish is exact (module docstring): 1 <= gs <= 30, hs >= 1,
    32 <= gs + hs <= 61."""
    return 1 <= g_shift <= 30 and head_shift >= 1 and 32 <= g_shift + head_shift <= 61


def g_kernel_order(g_t: npt.NDArray[np.int64], spec: CandSpec) -> npt.NDArray[np.int64]:
    """G^T ([k][C], row l = the logits of basis vector l) in the order the kernel streams it:
    block by block, the block's k rows of its classes (padded with a 0 class to an even
    count). Returns a flat array."""
    g_t = np.asarray(g_t, dtype=np.int64)
    if g_t.shape != (spec.k, spec.n_classes):
        raise ValueError(f"G^T shape {g_t.shape}: expected ({spec.k}, {spec.n_classes})")
    parts = []
    for c0, n in spec.blocks:
        blk = g_t[:, c0 : c0 + n]
        if n & 1:
            blk = np.concatenate([blk, np.zeros((spec.k, 1), dtype=np.int64)], axis=1)
        parts.append(blk.reshape(-1))
    return np.concatenate(parts)


def cand_asm(spec: CandSpec) -> list[str]:
    """The program of one call: for each of ``n`` candidates (operands %[p], %[out], %[n],
    %[g0], %[init0]; scratch %[g], %[i]) every block's accumulation and finish."""
    k = spec.k
    nb = len(spec.blocks)
    # one block reads the accumulator start in place; more walk it with %[i]
    a: list[str] = ["1:", "mov %[g], %[g0]"] + (["mov %[i], %[init0]"] if nb > 1 else [])
    for b, (_c0, n) in enumerate(spec.blocks):
        pairs = (n + 1) // 2  # int64x2 accumulators of the block
        cls = f"class {_c0}" if n == 1 else f"classes {_c0}..{_c0 + n - 1}"
        accs = f"q{ACC_Q}" if pairs == 1 else f"q{ACC_Q}-q{ACC_Q + pairs - 1}"
        pad = " (+ the pad class)" if n & 1 else ""
        a.append(f"@ {cls}{pad}: accumulators {accs}")
        init = "%[i]!" if nb > 1 else "%[init0]"
        a.append(f"vldmia {init}, {{{dlist(2 * ACC_Q, 2 * pairs)}}}")
        total = k * pairs  # d-registers of G in this block
        pos = 0  # next d-register of the stream
        buf_end = 0  # stream position one past the loaded registers
        for j in range(k):
            if j % P_GROUP == 0:
                m = min(P_GROUP, k - j)
                if m >= 2:
                    a.append(f"vld1.32 {{{dlist(0, m // 2)}}}, [%[p]]!")
                if m & 1:
                    a.append(f"vld1.32 {{d{m // 2}[0]}}, [%[p]]!")
            scalar = f"d{(j % P_GROUP) // 2}[{j % 2}]"
            for h in range(pairs):
                if pos == buf_end:
                    cnt = min(G_REGS, total - pos)
                    a.append(f"vldmia %[g]!, {{{dlist(G_D, cnt)}}}")
                    buf_end += cnt
                reg = G_D + pos % G_REGS
                a.append(f"vmlal.s32 q{ACC_Q + h}, d{reg}, {scalar}")
                pos += 1
        # finish: the high words (floor by 2^32), the rest of the floor by an immediate
        # (VQSHRN.S32 #1..16 truncates and saturates to int16; beyond 16 a VSHR.S32 first),
        # per-lane stores of the block's n logits
        for h in range(pairs):
            a.append(f"vshrn.i64 d{G_D + h}, q{ACC_Q + h}, #32")
        rest = spec.shift - 32
        for h in range(0, pairs, 2):
            q = (G_D + h) // 2
            if rest > 16:
                a.append(f"vshr.s32 q{q}, q{q}, #{rest}")
            if 1 <= rest <= 16:
                a.append(f"vqshrn.s32 d{h // 2}, q{q}, #{rest}")
            else:
                a.append(f"vqmovn.s32 d{h // 2}, q{q}")
        if n >= 4:
            a.append(f"vst1.16 {{{dlist(0, n // 4)}}}, [%[out]]!")
        for lane in range(n % 4):
            a.append(f"vst1.16 {{d{n // 4}[{lane}]}}, [%[out]]!")
        if b + 1 < nb:
            a.append(f"sub %[p], %[p], #{4 * k}")
    a += ["subs %[n], %[n], #1", "bne 1b"]
    return a


def instructions_per_candidate(spec: CandSpec) -> int:
    """Instructions of one candidate in the program (the loop's two included)."""
    return sum(1 for line in cand_asm(spec) if not line.endswith(":") and not line.startswith("@"))


def vmlal_per_candidate(spec: CandSpec) -> int:
    return spec.k * sum((n + 1) // 2 for _c0, n in spec.blocks)


def unrolled(spec: CandSpec) -> bool:
    return spec.k * spec.padded // 2 * 5 // 4 <= UNROLL_LIMIT
