"""The build-specialised Cortex-A9 NEON LSTM kernel (docs/numeric.md §4).

Every shape and shift of an LSTM layer is a build-time constant, so ``codegen build`` writes
the layer's whole recurrence as straight ARMv7-A assembly for exactly that layer: the gate
rows, the operand columns, the weight loads and the narrowing shifts are unrolled with their
registers and immediates fixed, and no instruction is spent on loop control, shift vectors or
operand re-moves that the shape decides. ``lstm_layout`` (codegen/emit.py) stores the weights
in the order this program reads them (``column_order``, ``row_gate_unit``); the plain C of
firmware/elt_lstm_s16.c reads the same arrays through the same two functions' rules.

Register plan (ARM DDI 0406C, "ARM Architecture Reference Manual ARMv7-A and ARMv7-R"):

- q4-q7 (d8-d15): four int32x4 accumulators, the 16 gate rows of one block.
- d16-d31: weights, one VLDM of 16 d-registers (A8.8.332 VLDM: at most 16 doubleword
  registers) = 4 columns × 16 rows.
- d0-d7: the operands. VMLAL.S16 by scalar takes its 16-bit scalar from d0-d7 only
  (A8.8.337 VMLA, VMLAL, VMLS, VMLSL (by scalar): Dm is Vm<2:0> for size 16, M:Vm<3> the
  lane), so at most 32 operands are in place at a time. The operand vector u = [hs (H); xs (F)]
  is cut into chunks of ≤ 8 d-registers; blocks alternate the direction in which they walk
  the chunks (even blocks forwards, odd blocks backwards) so that every block starts with the
  chunk the previous one ended with: one operand load per block when u needs two chunks
  (the shipped H = 32, F = 10), none when it fits in one.

Rows are ordered by groups of 8 hidden units: block 2u holds the i and f rows of units
8u..8u+7, block 2u+1 their g and o rows, so one block has one shift per int32x4 (VQRSHRN by
immediate, A8.8.369) and the cell of 8 units reads its four gates with one VLDM. The cell
gathers σ (and tanh) with one VLD1 lane load per value (A8.8.322 VLD1 single element to one
lane) from the exhaustive tables, its addresses moved to core registers two per VMOV
(A8.8.345 VMOV, two ARM core registers to/from a doubleword extension register).
"""

from __future__ import annotations

from dataclasses import dataclass

ROW_BLOCK = 16  # gate rows per block: four int32x4 accumulators
UNIT_GROUP = 8  # hidden units per cell step (two blocks of rows)
COL_GROUP = 4  # operands per d-register (int16 lanes)
OPERAND_REGS = 8  # d0-d7: VMLAL.S16 by scalar reads its scalar from d0-d7 only
WEIGHT_REGS = 16  # d16-d31: one VLDM of at most 16 d-registers
# A kernel whose unrolled step would exceed this many instructions (H = 32, F = 10: ~1,900)
# runs the gate rows and the cell in loops over groups of 8 units instead.
UNROLL_LIMIT = 5000
ROLES = ("last", "seq", "mean", "max")
# Byte offsets in elt_lstm_s16_kargs_t (firmware/elt_lstm_s16.h; the generated C asserts them).
KARGS = {"tables": 0, "xs": 16, "hs": 20, "c": 24, "act": 28, "out": 32, "steps": 36, "w": 40,
         "bias": 44}  # fmt: skip


@dataclass(frozen=True)
class KernelSpec:
    """Everything the kernel program depends on (one LSTM layer and its role)."""

    hidden: int  # H
    hidden_pad: int  # Hp (multiple of 8)
    inputs: int  # F
    gate_rshift: int  # A − 11 (i, f, o rows)
    g_rshift: int  # A − 12 (g rows)
    h_opshift: int  # hs = rshift_round(h, h_opshift)
    ig_lshift: int  # (i·g) << ig_lshift beside f·c
    tanh_rshift: int  # 2c = sat16(rshift_round(c, tanh_rshift))
    role: str  # ROLES: what the kernel writes per step (h, the sequence, Σh or max h)
    tanh_table: bool  # g and tanh(c) gathered from tanh_full (else 2σ − 32768 from σ)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"kernel role {self.role!r}: expected one of {ROLES}")
        if self.hidden_pad % UNIT_GROUP or not 0 < self.hidden <= self.hidden_pad:
            raise ValueError(f"hidden {self.hidden} / pad {self.hidden_pad}: pad = round_up(H, 8)")
        if self.inputs < 1:
            raise ValueError(f"inputs {self.inputs}: at least one input feature")
        for name in ("gate_rshift", "g_rshift"):
            if not 1 <= getattr(self, name) <= 31:
                raise ValueError(f"{name} {getattr(self, name)}: expected 1..31")

    @property
    def groups(self) -> int:
        return self.hidden_pad // UNIT_GROUP

    @property
    def cols(self) -> int:
        return self.hidden + self.inputs


def operand_groups(hidden: int, inputs: int) -> list[tuple[str, int]]:
    """The d-registers of operands u = [hs; xs]: ('h', g) holds hs[4g..4g+3], ('x', g) xs[4g..]."""
    nh = -(-hidden // COL_GROUP)
    nx = -(-inputs // COL_GROUP)
    return [("h", g) for g in range(nh)] + [("x", g) for g in range(nx)]


def chunks(hidden: int, inputs: int) -> list[list[tuple[str, int]]]:
    """Operand groups cut into chunks of OPERAND_REGS (a chunk's k-th group lives in dk)."""
    g = operand_groups(hidden, inputs)
    return [g[i : i + OPERAND_REGS] for i in range(0, len(g), OPERAND_REGS)]


def column_order(hidden: int, inputs: int, block: int) -> list[int]:
    """The operand columns of a row block in the order the kernel (and the packed weights)
    take them: index k < H is hs[k], H + j is xs[j]; even blocks ascending, odd descending."""
    cols = list(range(hidden + inputs))
    return cols if block % 2 == 0 else cols[::-1]


def row_gate_unit(row: int) -> tuple[int, int]:
    """(gate, unit) of stored gate row `row` (gates i, f, g, o = 0..3): rows are grouped by 8
    units, 32 rows per group: i, f (block 2u), then g, o (block 2u + 1)."""
    u, r = divmod(row, 2 * ROW_BLOCK)
    return r // UNIT_GROUP, UNIT_GROUP * u + r % UNIT_GROUP


def arm_imm(v: int) -> bool:
    """Is v an ARM data-processing modified immediate (8 bits rotated right by an even amount)?"""
    if v < 0 or v > 0xFFFFFFFF:
        return False
    for rot in range(0, 32, 2):
        x = ((v << rot) | (v >> (32 - rot))) & 0xFFFFFFFF
        if x < 256:
            return True
    return False


class _Asm:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.labels = 0

    def __call__(self, text: str) -> None:
        self.lines.append(text)

    def label(self) -> int:
        self.labels += 1
        return self.labels

    def add_imm(self, rd: str, rn: str, v: int, scratch: str = "r10") -> None:
        """rd = rn + v (v may be negative), in one instruction when v encodes."""
        if v == 0:
            if rd != rn:
                self(f"mov {rd}, {rn}")
            return
        op, m = ("add", v) if v > 0 else ("sub", -v)
        if arm_imm(m):
            self(f"{op} {rd}, {rn}, #{m}")
        else:
            self(f"movw {scratch}, #{m & 0xFFFF}")
            if m >> 16:
                self(f"movt {scratch}, #{m >> 16}")
            self(f"{op} {rd}, {rn}, {scratch}")


def _dlist(first: int, n: int) -> str:
    return f"d{first}" if n == 1 else f"d{first}-d{first + n - 1}"


def estimate_step(spec: KernelSpec) -> int:
    """Instructions of one unrolled step (the unroll decision; within a few percent)."""
    rows = 4 * spec.hidden_pad
    vmlal = rows * spec.cols // 4
    loads = rows * spec.cols // 4 // WEIGHT_REGS + 3 * rows // ROW_BLOCK
    return vmlal + loads + 2 * rows // 4 + 115 * spec.groups


class _Kernel:
    """One kernel's program text (see the module docstring for the register plan)."""

    def __init__(self, spec: KernelSpec) -> None:
        self.s = spec
        self.a = _Asm()
        self.chunks = chunks(spec.hidden, spec.inputs)
        self.unrolled = estimate_step(spec) <= UNROLL_LIMIT
        # hs of cell group j < 4 written straight into q_j = d2j, d2j+1: the first chunk's h
        # groups 2j, 2j+1 (every chunk starts at d0, and h groups come first)
        self.keep_hs = self.unrolled
        self.wpos = 0  # position in the weight stream, in d-registers
        self.wlen = 0  # d-registers of the current stream segment (a step or a group)

    # -- operands --------------------------------------------------------------------------
    def load_segments(self, chunk: list[tuple[str, int]], which: str) -> None:
        """Load the `which` ('h' or 'x') groups of a chunk into their registers."""
        a = self.a
        k = 0
        while k < len(chunk):
            src, g0 = chunk[k]
            n = 1
            while k + n < len(chunk) and chunk[k + n][0] == src and chunk[k + n][1] == g0 + n:
                n += 1
            if src == which:
                if src == "h":
                    if n == 1:
                        a(f"vldr d{k}, [r5, #{8 * g0}]")
                    elif g0 == 0:
                        a(f"vldmia r5, {{{_dlist(k, n)}}}")
                    else:
                        a.add_imm("r10", "r5", 8 * g0)
                        a(f"vldmia r10, {{{_dlist(k, n)}}}")
                else:
                    # xs frames are only 2-byte aligned: VLD1.16 (no alignment), <= 4 registers
                    done = 0
                    while done < n:
                        m = min(4, n - done)
                        off = 8 * (g0 + done)
                        base = "r4"
                        if off:
                            a.add_imm("r10", "r4", off)
                            base = "r10"
                        regs = ", ".join(f"d{k + done + i}" for i in range(m))
                        a(f"vld1.16 {{{regs}}}, [{base}]")
                        done += m
            k += n

    def load_chunk(self, ci: int) -> None:
        self.load_segments(self.chunks[ci], "h")
        self.load_segments(self.chunks[ci], "x")

    # -- gates ---------------------------------------------------------------------------------
    def weights(self) -> int:
        """The register of the next column's first weight d-register (loads when due)."""
        if self.wpos % WEIGHT_REGS == 0:
            n = min(WEIGHT_REGS, self.wlen - self.wpos)
            self.a(f"vldmia r1!, {{{_dlist(16, n)}}}")
        r = 16 + self.wpos % WEIGHT_REGS
        self.wpos += 4
        return r

    def block(self, half: int) -> None:
        """One block of 16 gate rows (half 0: i, f rows; half 1: g, o) of the current group;
        the first chunk it needs is in place, and so is the last when it returns."""
        s, a = self.s, self.a
        a("vldmia r2!, {d8-d15}")
        order = range(len(self.chunks)) if half == 0 else range(len(self.chunks) - 1, -1, -1)
        first = True
        for ci in order:
            if not first:
                self.load_chunk(ci)
            first = False
            regs = list(enumerate(self.chunks[ci]))
            if half:
                regs = regs[::-1]
            for reg, (_, _) in regs:
                lanes = range(COL_GROUP) if half == 0 else range(COL_GROUP - 1, -1, -1)
                src, g = self.chunks[ci][reg]
                n_real = (s.hidden if src == "h" else s.inputs) - COL_GROUP * g
                for lane in lanes:
                    if lane >= n_real:
                        continue  # a pad lane: no column
                    w = self.weights()
                    for k in range(4):
                        a(f"vmlal.s16 q{4 + k}, d{w + k}, d{reg}[{lane}]")
        # pre = sat16(rshift_round(acc, s)) in place (VQRSHRN.S32 #s, A8.8.369: 1 <= s <= 16)
        for k in range(4):
            sh = s.g_rshift if half == 1 and k < 2 else s.gate_rshift
            if sh <= 16:
                a(f"vqrshrn.s32 d{8 + k}, q{4 + k}, #{sh}")
            else:
                a(f"vrshr.s32 q{4 + k}, q{4 + k}, #{sh}")
                a(f"vqmovn.s32 d{8 + k}, q{4 + k}")
        a("vstmdb r3!, {d8-d11}")

    # -- cell ----------------------------------------------------------------------------------
    def gather(self, lo: int, hi: int, mid: int, qa: int, qb: int) -> None:
        """d_lo, d_hi (8 Q4.11 values) := table[v] in place; table base (entry 0) in q_mid."""
        a = self.a
        a(f"vshll.s16 q{qa}, d{lo}, #1")
        a(f"vshll.s16 q{qb}, d{hi}, #1")
        a(f"vadd.i32 q{qa}, q{qa}, q{mid}")
        a(f"vadd.i32 q{qb}, q{qb}, q{mid}")
        for d, q in ((lo, qa), (hi, qb)):
            a(f"vmov r10, r11, d{2 * q}")
            a(f"vmov r12, lr, d{2 * q + 1}")
            for lane, r in enumerate(("r10", "r11", "r12", "lr")):
                a(f"vld1.16 {{d{d}[{lane}]}}, [{r}]")

    def narrow(self, dst: int, src: int, sh: int, tmp: int) -> None:
        """d_dst = sat16(rshift_round(q_src, sh)) (q_tmp may be used)."""
        a = self.a
        if sh == 0:
            a(f"vqmovn.s32 d{dst}, q{src}")
        elif sh <= 16:
            a(f"vqrshrn.s32 d{dst}, q{src}, #{sh}")
        else:
            a(f"vrshr.s32 q{tmp}, q{src}, #{sh}")
            a(f"vqmovn.s32 d{dst}, q{tmp}")

    def cell(self, j: int | None) -> None:
        """The cell of one group of 8 units (j: its index when unrolled, to keep hs in q_j)."""
        s, a = self.s, self.a
        tq = 15 if s.tanh_table else 14  # table of g and tanh(c)
        # gates of the group (the blocks were stored downwards): g q8, o q9, i q10, f q11
        a("vldmia r3!, {d16-d23}")
        self.gather(20, 21, 14, 12, 13)  # i = σ
        self.gather(22, 23, 14, 12, 13)  # f = σ
        self.gather(16, 17, tq, 12, 13)  # g = tanh (pre is 2x)
        self.gather(18, 19, 14, 12, 13)  # o = σ
        if not s.tanh_table:
            # tanh = 2σ − 32768: as int16, 2σ with bit 15 flipped (q15 = 0x8000 per lane)
            a("vshl.i16 q8, q8, #1")
            a("veor q8, q8, q15")
        a("vmull.s16 q12, d20, d16")  # i·g, units 0-3 (int32)
        a("vmull.s16 q13, d21, d17")  # units 4-7
        a("vmovl.s16 q10, d22")  # f, units 0-3 (int32)
        a("vmovl.s16 q8, d23")  # units 4-7
        a("vldmdb r6!, {d8-d11}")  # c, units 0-3 in q4, 4-7 in q5
        # c = sat32(rshift_round(f·c + (i·g)·2^L, 15)): int64 lanes, two units per instruction
        for ig, f, c in ((24, 20, 8), (25, 21, 9), (26, 16, 10), (27, 17, 11)):
            q = 6 + (ig % 2)
            if s.ig_lshift:
                a(f"vshll.s32 q{q}, d{ig}, #{s.ig_lshift}")
            else:
                a(f"vmovl.s32 q{q}, d{ig}")
            a(f"vmlal.s32 q{q}, d{f}, d{c}")
            a(f"vqrshrn.s64 d{c}, q{q}, #15")
        a("vstmia r6, {d8-d11}")
        # 2c = sat16(rshift_round(c, tanh_rshift)), then tanh(c) from the table
        self.narrow(24, 4, s.tanh_rshift, 6)
        self.narrow(25, 5, s.tanh_rshift, 7)
        self.gather(24, 25, tq, 6, 7)
        if not s.tanh_table:
            a("vshl.i16 q12, q12, #1")
            a("veor q12, q12, q15")
        # h = sat16(rshift_round(o·tanh(c), 15)) = VQRDMULH (A8.8.375)
        hs_q = j if self.keep_hs and j is not None and j < 4 else 12
        h_q = hs_q if s.h_opshift == 0 else 12
        a(f"vqrdmulh.s16 q{h_q}, q9, q12")
        if s.role in ("last", "seq"):
            a(f"vstmdb r7!, {{d{2 * h_q}, d{2 * h_q + 1}}}")
        elif s.role == "mean":
            a("vldmdb r7!, {d8-d11}")
            a(f"vaddw.s16 q4, q4, d{2 * h_q}")
            a(f"vaddw.s16 q5, q5, d{2 * h_q + 1}")
            a("vstmia r7, {d8-d11}")
        else:
            a("vldmdb r7!, {d8, d9}")
            a(f"vmax.s16 q4, q4, q{h_q}")
            a("vstmia r7, {d8, d9}")
        if s.h_opshift > 16:
            a(f"vmov.i16 q{hs_q}, #0")  # |h| <= 2^15 < 2^(s - 1): rshift_round(h, s) = 0
        elif s.h_opshift:
            a(f"vrshr.s16 q{hs_q}, q{h_q}, #{s.h_opshift}")
        a(f"vstmdb r5!, {{d{2 * hs_q}, d{2 * hs_q + 1}}}")

    # -- program -------------------------------------------------------------------------------
    def program(self) -> list[str]:
        s, a = self.s, self.a
        hp, n = s.hidden_pad, s.groups
        a("push {r4-r11, lr}")
        a("vpush {d8-d15}")
        a("mov r9, r0")
        for reg, field in (("r4", "xs"), ("r5", "hs"), ("r6", "c"), ("r3", "act"), ("r7", "out"),
                           ("r8", "steps"), ("r1", "w"), ("r2", "bias")):  # fmt: skip
            a(f"ldr {reg}, [r9, #{KARGS[field]}]")
        # the cell walks act upwards and c, hs and out downwards from their ends
        a.add_imm("r3", "r3", 8 * hp)
        a.add_imm("r6", "r6", 4 * hp)
        a.add_imm("r7", "r7", (4 if s.role == "mean" else 2) * hp)
        if self.keep_hs:
            self.load_segments(self.chunks[0], "h")
        top = a.label()
        a(f"{top}:")
        self.load_segments(self.chunks[0], "x")
        if not self.keep_hs:
            self.load_segments(self.chunks[0], "h")
        col_regs = 2 * ROW_BLOCK * s.cols // 4  # weight d-registers of one group
        if self.unrolled:
            self.wpos, self.wlen = 0, n * col_regs
            for _ in range(n):
                self.block(0)
                self.block(1)
        else:
            a(f"mov r0, #{n}")
            loop = a.label()
            a(f"{loop}:")
            self.wpos, self.wlen = 0, col_regs
            self.block(0)
            self.block(1)
            a("subs r0, r0, #1")
            a(f"bne {loop}b")
        # the tables' bases (σ, σ; tanh or 0x8000 twice) in every lane of q14, q15
        a(f"vld4.32 {{d28[], d29[], d30[], d31[]}}, [r9]")
        a.add_imm("r5", "r5", 2 * hp)
        if self.unrolled:
            for j in range(n - 1, -1, -1):
                self.cell(j)
        else:
            a(f"mov r0, #{n}")
            loop = a.label()
            a(f"{loop}:")
            self.cell(None)
            a("subs r0, r0, #1")
            a(f"bne {loop}b")
        # the next step: weights and bias from the start, c and out back to their ends
        a(f"ldr r1, [r9, #{KARGS['w']}]")
        a.add_imm("r2", "r2", -16 * hp)
        a.add_imm("r6", "r6", 4 * hp)
        out_step = {"last": 2 * hp, "seq": 2 * hp + 2 * s.hidden, "mean": 4 * hp, "max": 2 * hp}
        a.add_imm("r7", "r7", out_step[s.role])
        a.add_imm("r4", "r4", 2 * s.inputs)
        a("subs r8, r8, #1")
        a(f"bne {top}b")
        a("vpop {d8-d15}")
        a("pop {r4-r11, pc}")
        return a.lines


def kernel_asm(spec: KernelSpec) -> list[str]:
    """The kernel's instructions, one per line (a naked function's body: r0 = the arguments)."""
    return _Kernel(spec).program()


def is_unrolled(spec: KernelSpec) -> bool:
    return estimate_step(spec) <= UNROLL_LIMIT
