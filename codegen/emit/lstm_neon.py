"""The build-specialised Cortex-A9 NEON LSTM kernel (docs/numeric.md §4).

Every shape and shift of an LSTM layer is a build-time constant, so ``codegen build`` writes
the layer's whole recurrence as straight ARMv7-A assembly for exactly that layer: the gate
rows, the operand columns, the weight loads and the narrowing shifts are unrolled with their
registers and immediates fixed, and no instruction is spent on loop control, shift vectors or
operand re-moves that the shape decides. ``lstm_layout`` (codegen/emit/c.py) stores the weights
in the order this program reads them (``column_order``, ``row_gate_unit``); the plain C of
firmware/elt_lstm_s16.c reads the same arrays through the same two functions' rules.

Register plan (ARM DDI 0406C.c, "ARM Architecture Reference Manual ARMv7-A and ARMv7-R
edition", section numbers of chapter A8):

- q4-q7 (d8-d15): four int32x4 accumulators, the 16 gate rows of one block.
- d16-d31: weights, one VLDM of 16 d-registers (A8.8.332 VLDM: at most 16 doubleword
  registers) = 4 columns × 16 rows.
- d0-d7: the operands. VMLAL.S16 by scalar takes its 16-bit scalar from d0-d7 only
  (A8.8.338 VMLA, VMLAL, VMLS, VMLSL (by scalar): Dm is Vm<2:0> for size 16, M:Vm<3> the
  lane), so at most 32 operands are in place at a time. The operand vector u = [hs (H); xs (F)]
  is cut into chunks of ≤ 8 d-registers; blocks alternate the direction in which they walk
  the chunks (even blocks forwards, odd blocks backwards) so that every block starts with the
  chunk the previous one ended with: one operand load per block when u needs two chunks
  (the shipped H = 32, F = 10), none when it fits in one.

Rows are ordered by groups of 8 hidden units: block 2u holds the i and f rows of units
8u..8u+7, block 2u+1 their g and o rows, so one block has one shift per int32x4 (VQRSHRN by
immediate, A8.8.378) and the cell of 8 units reads its four gates with one VLDM. The cell
gathers σ and tanh with one VLD1 lane load per value (A8.8.321 VLD1 single element to one
lane): a 32-bit word of the pair table (T[j] and T[j+1] − T[j], codegen.emit.views.pair_table,
1 KiB, inside the Cortex-A9's L1 data cache), then the contract's interpolation and mirror in
eight lanes (`_Kernel.act8`); the addresses reach the core registers 8 per LDM through the
stack (looping kernels: two per VMOV, A8.8.345, between two ARM core registers and a
doubleword extension register). The former form, a halfword from exhaustive 2 x 128 KiB
tables per value, remains as ``tables = "full"`` (the bench's before figure).
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.emit.asm import Asm as _Asm
from codegen.emit.asm import dlist, instructions

ROW_BLOCK = 16  # gate rows per block: four int32x4 accumulators
UNIT_GROUP = 8  # hidden units per cell step (two blocks of rows)
COL_GROUP = 4  # operands per d-register (int16 lanes)
OPERAND_REGS = 8  # d0-d7: VMLAL.S16 by scalar reads its scalar from d0-d7 only
WEIGHT_REGS = 16  # d16-d31: one VLDM of at most 16 d-registers
# A kernel whose unrolled step would exceed this many instructions (H = 32, F = 10: ~1,900)
# runs the gate rows and the cell in loops over groups of 8 units instead.
UNROLL_LIMIT = 5000
ROLES = ("last", "seq", "mean", "max")
# The σ forms (codegen.emit.views.ACT_TABLES): "pairs", the 1 KiB pair table and the contract's
# interpolation in the cell; "full", the former exhaustive 2 x 128 KiB tables (one halfword
# gather per value), kept as the bench's before figure.
TABLE_FORMS = ("pairs", "full")
# Instructions per group of 8 units outside the gate rows (estimate_step), by σ form.
CELL_COST = {"pairs": 175, "full": 115}
# Byte offsets in elt_lstm_s16_kargs_t and elt_lstm_s16_kconst_t (firmware/elt_lstm_s16.h; the
# generated C asserts them).
KARGS = {"xs": 0, "hs": 4, "c": 8, "act": 12, "out": 16, "steps": 20}
KCONST = {"tables": 0, "w": 64, "bias": 68}
# The unrolled cell moves gather addresses to these core registers with one LDM (in ascending
# register order, as LDM loads them), through ADDR_BUF bytes of stack.
LDM_REGS = ("r0", "r1", "r2", "r4", "r8", "r10", "r11", "r12")
ADDR_BUF = 128


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
    kconst: str  # the C symbol of the layer's elt_lstm_s16_kconst_t
    tables: str = "pairs"  # TABLE_FORMS: the σ form the cell reads

    def __post_init__(self) -> None:
        if self.tables not in TABLE_FORMS:
            raise ValueError(f"tables {self.tables!r}: expected one of {TABLE_FORMS}")
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


def estimate_step(spec: KernelSpec) -> int:
    """Instructions of one unrolled step (the unroll decision; within a few percent)."""
    rows = 4 * spec.hidden_pad
    vmlal = rows * spec.cols // 4
    loads = rows * spec.cols // 4 // WEIGHT_REGS + 3 * rows // ROW_BLOCK
    return vmlal + loads + 2 * rows // 4 + CELL_COST[spec.tables] * spec.groups


class _Kernel:
    """One kernel's program text (see the module docstring for the register plan).

    Core registers: r1 weights, r2 bias, r3 gate pre-activations (written downwards by the
    gates, read upwards by the cell), r4 the frame's operands, r5 hs, r6 c, r7 out, r8 steps
    left, r9 the layer's constants (elt_lstm_s16_kconst_t), r10 scratch, r0 the group counter
    (loops) or 2F (unrolled: the last operand load steps to the next frame). The gather's
    addresses: r10-r12 and lr (VMOV, loops) or LDM_REGS with lr walking the stack buffer
    (unrolled; r1 and r2 are reloaded after the cell, r4 and r8 pushed around it).
    """

    def __init__(self, spec: KernelSpec) -> None:
        self.s = spec
        self.a = _Asm()
        self.chunks = chunks(spec.hidden, spec.inputs)
        self.unrolled = estimate_step(spec) <= UNROLL_LIMIT
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
                        a(f"vldmia r5, {{{dlist(k, n)}}}")
                    else:
                        a.add_imm("r10", "r5", 8 * g0)
                        a(f"vldmia r10, {{{dlist(k, n)}}}")
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
            self.a(f"vldmia r1!, {{{dlist(16, n)}}}")
        r = 16 + self.wpos % WEIGHT_REGS
        self.wpos += 4
        return r

    def block(self, half: int, last: bool = False) -> None:
        """One block of 16 gate rows (half 0: i, f rows; half 1: g, o) of the current group;
        the first chunk it needs is in place, and so is the last when it returns. The last
        block of an unrolled step keeps its gates in d8-d11 for the cell."""
        s, a = self.s, self.a
        a.note(
            f"block: 16 {'g, o' if half else 'i, f'} gate rows; q4-q7 = bias, then one VMLAL.S16 "
            "by scalar per operand column (weights d16-d31, operands d0-d7), narrowed to Q4.11"
        )
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
            for reg, (src, g) in regs:
                lanes = range(COL_GROUP) if half == 0 else range(COL_GROUP - 1, -1, -1)
                n_real = (s.hidden if src == "h" else s.inputs) - COL_GROUP * g
                for lane in lanes:
                    if lane >= n_real:
                        continue  # a pad lane: no column
                    w = self.weights()
                    for k in range(4):
                        a(f"vmlal.s16 q{4 + k}, d{w + k}, d{reg}[{lane}]")
        # pre = sat16(rshift_round(acc, s)) in place (VQRSHRN.S32 #s, A8.8.378: 1 <= s <= 16)
        for k in range(4):
            sh = s.g_rshift if half == 1 and k < 2 else s.gate_rshift
            if sh <= 16:
                a(f"vqrshrn.s32 d{8 + k}, q{4 + k}, #{sh}")
            else:
                a(f"vrshr.s32 q{4 + k}, q{4 + k}, #{sh}")
                a(f"vqmovn.s32 d{8 + k}, q{4 + k}")
        if not last:
            a("vstmdb r3!, {d8-d11}")

    # -- cell ----------------------------------------------------------------------------------
    def gather(self, lo: int, hi: int, table: int, qa: int, qb: int,
               dst: list[tuple[int, int]] | None = None) -> None:  # fmt: skip
        """8 Q4.11 values in d_lo, d_hi := table[v], the table's entry 0 in every lane of
        q_table; into the same lanes, or into dst (d-register, lane) per value. The addresses
        go to core registers two per VMOV (the looping kernels)."""
        a = self.a
        if dst is None:
            dst = [(lo, k) for k in range(4)] + [(hi, k) for k in range(4)]
        self.addresses(lo, hi, table, qa, qb)
        for half, q in enumerate((qa, qb)):
            a(f"vmov r10, r11, d{2 * q}")
            a(f"vmov r12, lr, d{2 * q + 1}")
            for k, r in enumerate(("r10", "r11", "r12", "lr")):
                d, lane = dst[4 * half + k]
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

    def addresses(self, lo: int, hi: int, table: int, qa: int, qb: int) -> None:
        """q_qa, q_qb := the table addresses of 8 Q4.11 values in d_lo, d_hi: VSHLL.S16 #1
        sign-extends and doubles them, VADD adds the table's entry 0 (q_table, every lane)."""
        a = self.a
        a(f"vshll.s16 q{qa}, d{lo}, #1")
        a(f"vshll.s16 q{qb}, d{hi}, #1")
        a(f"vadd.i32 q{qa}, q{qa}, q{table}")
        a(f"vadd.i32 q{qb}, q{qb}, q{table}")

    def lanes(self, dst: list[tuple[int, int]]) -> None:
        """One VLD1.16 lane load per value from the 8 addresses in LDM_REGS (walker lr)."""
        self.a(f"ldmia lr!, {{{', '.join(LDM_REGS)}}}")
        for (d, lane), r in zip(dst, LDM_REGS, strict=True):
            self.a(f"vld1.16 {{d{d}[{lane}]}}, [{r}]")

    def act8(self, x: int, tanh: bool, tmp: tuple[int, int, int, int]) -> None:
        """σ (tanh: 2σ − 32768, the contract's tanh of an input that is already 2x) of the 8
        Q4.11 values in q_x, in place, from the pair table (docs/numeric.md §4, "σ lookup"):
        m = x >> 15 (the sign), a = VQABS x = min(|x|, 32767), f = a & 127 (q1), the word
        addresses base + 4 (a >> 7) = VADDW.U16 of q0 and (a >> 5) & ~3; one VLD1.32 lane load
        per value (values 0-3 into q_x, 4-7 into q_qa); VUZP.16 splits the knots T[j] from the
        differences d; σ⁺ = T[j] + ((d·f + 64) >> 7) is VMUL.I16 (d·f < 2^16, unsigned) and
        VRSRA.U16 #7 (A8.8.374); σ = m ? 32768 − σ⁺ : σ⁺ is VSUB from q2 (32768 in every lane)
        and VBIT by m. tmp = (qa, qa + 1, qf, qm)."""
        a = self.a
        qa, qb, qf, qm = tmp
        xl, xh = 2 * x, 2 * x + 1
        a(f"vshr.s16 q{qm}, q{x}, #15")
        a(f"vqabs.s16 q{x}, q{x}")
        a(f"vand q{qf}, q{x}, q1")
        a(f"vshr.u16 q{x}, q{x}, #5")
        a(f"vbic.i16 q{x}, #3")
        a(f"vaddw.u16 q{qa}, q0, d{xl}")
        a(f"vaddw.u16 q{qb}, q0, d{xh}")
        dst = [(xl, 0), (xl, 1), (xh, 0), (xh, 1)]
        dst += [(2 * qa, 0), (2 * qa, 1), (2 * qa + 1, 0), (2 * qa + 1, 1)]
        if self.unrolled:
            a(f"vstmia lr, {{{dlist(2 * qa, 4)}}}")  # qb = qa + 1: the 8 addresses in order
            a(f"ldmia lr, {{{', '.join(LDM_REGS)}}}")
            for (d, lane), r in zip(dst, LDM_REGS, strict=True):
                a(f"vld1.32 {{d{d}[{lane}]}}, [{r}]")
        else:
            for half, q in enumerate((qa, qb)):
                a(f"vmov r10, r11, d{2 * q}")
                a(f"vmov r12, lr, d{2 * q + 1}")
                for k, r in enumerate(("r10", "r11", "r12", "lr")):
                    d, lane = dst[4 * half + k]
                    a(f"vld1.32 {{d{d}[{lane}]}}, [{r}]")
        a(f"vuzp.16 q{x}, q{qa}")
        a(f"vmul.i16 q{qa}, q{qa}, q{qf}")
        a(f"vrsra.u16 q{x}, q{qa}, #7")
        a(f"vsub.i16 q{qa}, q2, q{x}")
        a(f"vbit q{x}, q{qa}, q{qm}")
        if tanh:
            # 2σ − 32768 = 2σ XOR 0x8000 in 16 bits (2σ in [2, 65534])
            a(f"vshl.i16 q{x}, q{x}, #1")
            a(f"veor q{x}, q{x}, q2")

    def cell_pairs(self, in_regs: bool, store_h: bool, buf: int = 0) -> None:
        """The cell of one group of 8 units with the pair table (`act8`). Gates from memory (the
        blocks were stored downwards: g d16-17, o d18-19, i d20-21, f d22-23) or, in_regs, g
        and o still in d8-d11 from the step's last block and only i, f from memory. q0-q2 hold
        the pair table's address, 127 and 32768 (elt_lstm_s16_kconst_t); unrolled kernels pass
        the addresses through the stack at sp + buf (lr)."""
        s, a = self.s, self.a
        a.note(
            "cell of 8 units: i, f, o = sigma, g = tanh (pair-table gathers, one VLD1.32 lane "
            "each, and the interpolation); c = sat32(rshift_round(f c + (i g) << L, 15)) in "
            "int64 lanes; h = sat16(rshift_round(o tanh(c), 15)) by VQRDMULH; "
            "hs = rshift_round(h, h_opshift)"
        )
        if in_regs:
            g, o, c0 = 4, 5, 8  # g, o in q4, q5; c into q8, q9
            a("vldmia r3!, {d20-d23}")
        else:
            g, o, c0 = 8, 9, 4  # c into q4, q5
            a("vldmia r3!, {d16-d23}")
        cd = [2 * c0, 2 * c0 + 1, 2 * c0 + 2, 2 * c0 + 3]  # c of units 0-1, 2-3, 4-5, 6-7
        if self.unrolled:
            a.add_imm("lr", "sp", buf)
        tmp = (12, 13, 14, 15)
        self.act8(10, False, tmp)  # i
        self.act8(11, False, tmp)  # f
        self.act8(g, True, tmp)  # g = tanh (its pre-activation is 2x)
        self.act8(o, False, tmp)  # o
        a(f"vmull.s16 q12, d20, d{2 * g}")  # i·g, units 0-3 (int32)
        a(f"vmull.s16 q13, d21, d{2 * g + 1}")  # units 4-7
        a("vmovl.s16 q14, d22")  # f as int32, units 0-3
        a("vmovl.s16 q15, d23")  # units 4-7
        a(f"vldmdb r6!, {{{dlist(cd[0], 4)}}}")  # c
        # c = sat32(rshift_round(f·c + (i·g)·2^L, 15)): int64 lanes, two units per instruction
        for k in range(4):
            q = 6 + k % 2
            if s.ig_lshift:
                a(f"vshll.s32 q{q}, d{24 + k}, #{s.ig_lshift}")
            else:
                a(f"vmovl.s32 q{q}, d{24 + k}")
            a(f"vmlal.s32 q{q}, d{28 + k}, d{cd[k]}")
            a(f"vqrshrn.s64 d{cd[k]}, q{q}, #15")
        a(f"vstmia r6, {{{dlist(cd[0], 4)}}}")
        # 2c = sat16(rshift_round(c, tanh_rshift)), then tanh(c)
        self.narrow(24, c0, s.tanh_rshift, 6)
        self.narrow(25, c0 + 1, s.tanh_rshift, 7)
        self.act8(12, True, (6, 7, 13, 14))
        self.cell_out(o, c0, cd, store_h)

    def cell_out(self, o: int, c0: int, cd: list[int], store_h: bool) -> None:
        """h = sat16(rshift_round(o·tanh(c), 15)) from o in q_o and tanh(c) in q12, what the
        role writes, and the next operands hs (c's registers q_c0, q_c0+1 are free)."""
        s, a = self.s, self.a
        # h = sat16(rshift_round(o·tanh(c), 15)) = VQRDMULH (A8.8.376)
        a(f"vqrdmulh.s16 q12, q{o}, q12")
        if s.role in ("last", "seq"):
            if store_h:
                a("vstmdb r7!, {d24, d25}")
        elif s.role == "mean":
            a(f"vldmdb r7!, {{{dlist(cd[0], 4)}}}")
            a(f"vaddw.s16 q{c0}, q{c0}, d24")
            a(f"vaddw.s16 q{c0 + 1}, q{c0 + 1}, d25")
            a(f"vstmia r7, {{{dlist(cd[0], 4)}}}")
        else:
            a(f"vldmdb r7!, {{d{cd[0]}, d{cd[1]}}}")
            a(f"vmax.s16 q{c0}, q{c0}, q12")
            a(f"vstmia r7, {{d{cd[0]}, d{cd[1]}}}")
        if s.h_opshift > 16:
            a("vmov.i16 q12, #0")  # |h| <= 2^15 < 2^(s - 1): rshift_round(h, s) = 0
        elif s.h_opshift:
            a(f"vrshr.s16 q12, q12, #{s.h_opshift}")
        a("vstmdb r5!, {d24, d25}")

    def cell_full(self, in_regs: bool, store_h: bool, buf: int = 0) -> None:
        """The cell of one group of 8 units with the exhaustive tables. Gates from memory (the
        blocks were stored downwards: g d16-17, o d18-19, i d20-21, f d22-23) or, in_regs, g and
        o still in d8-d11 from the step's last block and only i, f from memory. q0, q1 hold 0
        in every odd int16
        lane (f is gathered into the even ones: int32 lanes), q2 the σ table, q3 tanh's
        (entry 0 of each, in every lane). Unrolled kernels move the gather's addresses to core
        registers 8 at a time through the stack (VSTM, then LDM: two instructions per 8
        instead of four VMOVs), at sp + buf; the loops move them with VMOV."""
        s, a = self.s, self.a
        a.note(
            "cell of 8 units: i, f, o = sigma, g = tanh (table gathers, one VLD1 lane each); "
            "c = sat32(rshift_round(f c + (i g) << L, 15)) in int64 lanes; "
            "h = sat16(rshift_round(o tanh(c), 15)) by VQRDMULH; hs = rshift_round(h, h_opshift)"
        )
        if in_regs:
            g, o, c0 = (8, 9), (10, 11), 8  # c into q8, q9
            a("vldmia r3!, {d20-d23}")
        else:
            g, o, c0 = (16, 17), (18, 19), 4  # c into q4, q5
            a("vldmia r3!, {d16-d23}")
        i, f = (20, 21), (22, 23)
        cd = [2 * c0, 2 * c0 + 1, 2 * c0 + 2, 2 * c0 + 3]  # c of units 0-1, 2-3, 4-5, 6-7
        # f = σ into the even int16 lanes of q0, q1: int32 f of units 0-3, 4-7 for VMLAL.S32
        f_dst = [(d, lane) for d in range(4) for lane in (0, 2)]
        if self.unrolled:
            qi = 6 if in_regs else 4  # i, f addresses in q_qi..q_qi+3, g, o in q12-q15
            self.addresses(*i, 2, qi, qi + 1)  # i = σ
            self.addresses(*f, 2, qi + 2, qi + 3)  # f = σ
            self.addresses(*g, 3, 12, 13)  # g = tanh (its pre-activation is 2x)
            self.addresses(*o, 2, 14, 15)  # o = σ
            a.add_imm("lr", "sp", buf)
            a(f"vstmia lr, {{{dlist(2 * qi, 8)}}}")
            self.lanes([(i[0], k) for k in range(4)] + [(i[1], k) for k in range(4)])
            self.lanes(f_dst)
            a("vstmia lr, {d24-d31}")
            self.lanes([(g[0], k) for k in range(4)] + [(g[1], k) for k in range(4)])
            self.lanes([(o[0], k) for k in range(4)] + [(o[1], k) for k in range(4)])
        else:
            self.gather(*i, 2, 12, 13)  # i = σ
            self.gather(*f, 2, 12, 13, f_dst)  # f = σ
            self.gather(*g, 3, 12, 13)  # g = tanh (its pre-activation is 2x)
            self.gather(*o, 2, 12, 13)  # o = σ
        a(f"vmull.s16 q12, d{i[0]}, d{g[0]}")  # i·g, units 0-3 (int32)
        a(f"vmull.s16 q13, d{i[1]}, d{g[1]}")  # units 4-7
        a(f"vldmdb r6!, {{{dlist(cd[0], 4)}}}")  # c
        # c = sat32(rshift_round(f·c + (i·g)·2^L, 15)): int64 lanes, two units per instruction
        for k in range(4):
            q = 6 + k % 2
            if s.ig_lshift:
                a(f"vshll.s32 q{q}, d{24 + k}, #{s.ig_lshift}")
            else:
                a(f"vmovl.s32 q{q}, d{24 + k}")
            a(f"vmlal.s32 q{q}, d{k}, d{cd[k]}")
            a(f"vqrshrn.s64 d{cd[k]}, q{q}, #15")
        a(f"vstmia r6, {{{dlist(cd[0], 4)}}}")
        # 2c = sat16(rshift_round(c, tanh_rshift)), then tanh(c) from the table
        self.narrow(24, c0, s.tanh_rshift, 6)
        self.narrow(25, c0 + 1, s.tanh_rshift, 7)
        if self.unrolled:
            self.addresses(24, 25, 3, 6, 7)
            a("vstmdb lr!, {d12-d15}")  # lr: the end of the 32 addresses above
            self.lanes([(24, k) for k in range(4)] + [(25, k) for k in range(4)])
        else:
            self.gather(24, 25, 3, 6, 7)
        self.cell_out(o[0] // 2, c0, cd, store_h)

    def cell(self, in_regs: bool, store_h: bool, buf: int = 0) -> None:
        if self.s.tables == "pairs":
            self.cell_pairs(in_regs, store_h, buf)
        else:
            self.cell_full(in_regs, store_h, buf)

    def cells(self, store_h: bool, buf: int = 0) -> None:
        """The cell of every group (downwards: the last block's group first)."""
        a, n = self.a, self.s.groups
        if self.unrolled:
            for j in range(n):
                self.cell(j == 0, store_h, buf)
        else:
            a(f"mov r0, #{n}")
            loop = a.label()
            a(f"{loop}:")
            self.cell(False, store_h)
            a("subs r0, r0, #1")
            a(f"bne {loop}b")

    # -- program -------------------------------------------------------------------------------
    def gates(self) -> list[str]:
        """One step's gate rows, from the step's first operand load to the last block's
        narrowing (as a list, so the last operand load can be made to step the frame)."""
        s = self.s
        outer, self.a = self.a, _Asm()
        self.a.labels = outer.labels
        n = s.groups
        self.a.note("gates of one step: the operands u = [hs; xs_t] into d0-d7, chunk by chunk")
        self.load_chunk(0)
        col_regs = 2 * ROW_BLOCK * s.cols // 4  # weight d-registers of one group
        if self.unrolled:
            self.wpos, self.wlen = 0, n * col_regs
            for u in range(n):
                self.block(0)
                self.block(1, last=u == n - 1)
        else:
            self.a(f"mov r0, #{n}")
            loop = self.a.label()
            self.a(f"{loop}:")
            self.wpos, self.wlen = 0, col_regs
            self.block(0)
            self.block(1)
            self.a("subs r0, r0, #1")
            self.a(f"bne {loop}b")
        lines, self.a = self.a.lines, outer
        self.a.labels += len([ln for ln in lines if ln.endswith(":")])
        return lines

    def program(self) -> list[str]:
        s, a = self.s, self.a
        hp = s.hidden_pad
        for line in (
            f"LSTM layer kernel, H {s.hidden} (padded {hp}), F {s.inputs}, pooling {s.role}, "
            f"{'unrolled' if self.unrolled else 'looping'} (codegen/emit/lstm_neon.py)",
            "r0 arguments (elt_lstm_s16_kargs_t) or the group counter, r1 weights, r2 bias, "
            "r3 gate pre-activations, r4 the frame's operands, r5 hs, r6 c, r7 out, r8 steps "
            "left, r9 constants (elt_lstm_s16_kconst_t), r10-r12 lr scratch and gather addresses",
            "q4-q7 accumulators (16 gate rows), d16-d31 weights, d0-d7 operands; in the cell "
            + (
                "q0 the pair table's address, q1 127, q2 32768 in every lane"
                if s.tables == "pairs"
                else "q0 q1 zeros, q2 q3 the sigma and tanh tables' entry 0 in every lane"
            ),
            "prologue: save r4-r11 lr d8-d15, load the arguments and the constants",
        ):
            a.note(line)
        a("push {r4-r11, lr}")
        a("vpush {d8-d15}")
        if self.unrolled:
            a(f"sub sp, sp, #{ADDR_BUF}")  # the gather's addresses on their way to LDM
        for reg, field in (("r4", "xs"), ("r5", "hs"), ("r6", "c"), ("r3", "act"), ("r7", "out"),
                           ("r8", "steps")):  # fmt: skip
            a(f"ldr {reg}, [r0, #{KARGS[field]}]")
        a(f"movw r9, #:lower16:{s.kconst}")
        a(f"movt r9, #:upper16:{s.kconst}")
        a(f"ldr r1, [r9, #{KCONST['w']}]")
        a(f"ldr r2, [r9, #{KCONST['bias']}]")
        # the cell walks act upwards and c, hs and out downwards from their ends
        a.add_imm("r3", "r3", 8 * hp)
        a.add_imm("r6", "r6", 4 * hp)
        a.add_imm("r7", "r7", (4 if s.role == "mean" else 2) * hp)
        step_x = False
        top = a.label()
        a.note("step t: gates, then the cells of every group of 8 units")
        a(f"{top}:")
        if self.unrolled:
            a(f"movw r0, #{2 * s.inputs}")
        gates = self.gates()
        if self.unrolled:
            # the step's last use of the frame pointer, a load at offset 0, steps to the next frame
            uses = [k for k, ln in enumerate(gates) if "r4" in ln and not ln.startswith("@")]
            if uses and gates[uses[-1]].startswith("vld1.16") and gates[uses[-1]].endswith("[r4]"):
                gates[uses[-1]] += ", r0"
                step_x = True
        a.lines += gates
        # the cell's constants (elt_lstm_s16_kconst_t.tables)
        a("vldmia r9, {d0-d7}")
        a.add_imm("r5", "r5", 2 * hp)
        peel = s.role == "last"  # only the last step's h is the encoder's output
        last = a.label()
        if peel:
            a("subs r8, r8, #1")
            a(f"beq {last}f")
        if self.unrolled:
            a("push {r4, r8}")  # free for the gather's LDMs; the addresses at sp + 8
            self.cells(store_h=not peel, buf=8)
            a("pop {r4, r8}")
        else:
            self.cells(store_h=not peel)
        # the next step: weights and bias from the start, c and out back to their ends
        a.note("next step: weights and bias from their start, c and out back to their ends")
        a(f"ldr r1, [r9, #{KCONST['w']}]")
        a(f"ldr r2, [r9, #{KCONST['bias']}]")
        a.add_imm("r6", "r6", 4 * hp)
        out_step = {"last": 0, "seq": 2 * hp + 2 * s.hidden, "mean": 4 * hp, "max": 2 * hp}
        a.add_imm("r7", "r7", out_step[s.role])
        if not step_x:
            a.add_imm("r4", "r4", 2 * s.inputs)
        if peel:
            a(f"b {top}b")
            a(f"{last}:")
            self.cells(store_h=True)  # r4, r8 are not needed after the last step
        else:
            a("subs r8, r8, #1")
            a(f"bne {top}b")
        a.note("epilogue: restore and return")
        if self.unrolled:
            a(f"add sp, sp, #{ADDR_BUF}")
        a("vpop {d8-d15}")
        a("pop {r4-r11, pc}")
        return a.lines


def kernel_listing(spec: KernelSpec) -> list[str]:
    """The kernel's program, one instruction or comment ('@ ...') per line: a naked function's
    body (r0 = the arguments), commented block by block for the generated C."""
    return _Kernel(spec).program()


def kernel_asm(spec: KernelSpec) -> list[str]:
    """The kernel's instructions alone, one per line."""
    return instructions(kernel_listing(spec))


def is_unrolled(spec: KernelSpec) -> bool:
    return estimate_step(spec) <= UNROLL_LIMIT


def instruction_floor(frames: int, inputs: int, hidden: int, h_opshift: int) -> dict[str, int]:
    """A lower bound on the instructions of the LSTM encoder under the numeric contract on
    ARMv7-A NEON, term by term per sequence (docs/numeric.md §4, "Lower bound"). Every term
    counts what the contract's arithmetic needs at the widest instruction that does it; address
    arithmetic, operand and state traffic and control are left out (they only add)."""
    T, F, H = frames, inputs, hidden
    R, K = 4 * H, H + F

    def up(a: int, b: int) -> int:
        return -(-a // b)

    return {
        # R·K products into int32 sums: VMLAL.S16 does 4 (A8.8.338); none does more
        "mac": T * up(R * K, 4),
        # every weight every step; at most 32 d-registers (128 int16) could stay in place,
        # one load moves at most 16 d-registers = 64 int16 (VLDM, A8.8.332)
        "weights": T * up(max(R * K - 128, 0), 64),
        # σ(i, f, o), tanh(g), tanh(c) from tables of > 32 bytes: no gather instruction, a
        # VTBL/VTBX indexes at most 32 bytes (A8.8.419): one load per value (A8.8.321)
        "lookups": T * 5 * H,
        # a table that fits the Cortex-A9's 32 KiB L1 data cache (the exhaustive σ of a 16-bit
        # input is 128 KiB, 64 KiB mirrored) interpolates: per 8 values at least the product
        # d·f, its rounding shift-and-add (VMUL.I16, VRSRA.U16, 8 lanes) and the mirror's select
        "interpolate": T * 3 * up(5 * H, 8),
        # each table index is sat16(rshift_round(int32, s)): at most 4 int32 lanes per
        # narrowing instruction (VQRSHRN, A8.8.378); R gate rows and the H values 2c
        "narrow": T * (up(R, 4) + up(H, 4)),
        # c = sat32(rshift_round(f·c + (i·g)·2^L, 15)) in int64: the product, the second term
        # and the narrowing are 64-bit-lane operations, 2 lanes each
        "cell_int64": T * 3 * up(H, 2),
        # i·g (16 x 16 -> 32 bits, 4 lanes) and h = o·tanh(c) (VQRDMULH.S16, 8 lanes, A8.8.376)
        "cell_16bit": T * (up(H, 4) + up(H, 8)),
        # hs = rshift_round(h, h_opshift), 8 lanes
        "operand_round": T * up(H, 8) if h_opshift else 0,
    }
