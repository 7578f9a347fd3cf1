"""What the two assembly generators share (the LSTM kernel, codegen/emit/lstm_neon.py, and the
candidate-logit kernel, codegen/emit/adapt_neon.py): a program buffer with numbered local
labels and comment lines, ARM immediate encoding and register-list spelling (ARM DDI 0406C.c).

Comment lines start with ``@`` (the GNU assembler's ARM comment character) and describe the
block that follows: what it computes and with which registers, as XNNPACK's generated kernels
do. ``Asm.instructions`` drops them for anything that counts instructions."""

from __future__ import annotations


def arm_imm(v: int) -> bool:
    """Is v an ARM data-processing modified immediate (8 bits rotated right by an even amount)?"""
    if v < 0 or v > 0xFFFFFFFF:
        return False
    for rot in range(0, 32, 2):
        x = ((v << rot) | (v >> (32 - rot))) & 0xFFFFFFFF
        if x < 256:
            return True
    return False


class Asm:
    """A program being written: instruction and comment lines, and the last local label."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.labels = 0

    def __call__(self, text: str) -> None:
        self.lines.append(text)

    def note(self, text: str) -> None:
        """A comment line before the block it describes (never ends with ':', a label's mark)."""
        self.lines.append(f"@ {text}".rstrip(":"))

    @property
    def instructions(self) -> list[str]:
        return instructions(self.lines)

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


def dlist(first: int, n: int) -> str:
    """The d-register list of n consecutive registers from d<first> (VLDM/VLD1/VST1 operand)."""
    return f"d{first}" if n == 1 else f"d{first}-d{first + n - 1}"


def instructions(lines: list[str]) -> list[str]:
    """The program without its comment lines."""
    return [ln for ln in lines if not ln.startswith("@")]
