"""The generated NEON LSTM kernel's program (codegen/emit/lstm_neon.py), statically: what one step
executes against the instruction floor of the numeric contract; the layout rules it shares
with the weights and the plain C. (Its results are checked under QEMU in test_lstm_int.py.)"""

from __future__ import annotations

import collections

import pytest

from codegen.emit.asm import arm_imm
from codegen.emit.lstm_neon import (
    KernelSpec,
    chunks,
    column_order,
    instruction_floor,
    is_unrolled,
    kernel_asm,
    row_gate_unit,
)


def spec(H: int = 32, F: int = 10, role: str = "last", h_opshift: int = 3) -> KernelSpec:
    return KernelSpec(H, -(-H // 8) * 8, F, 12, 11, h_opshift, 10, 13, role, "kws_lstm_kconst")


def one_step(lines: list[str]) -> collections.Counter[str]:
    """Mnemonics of the step loop's body (label 1 to the branch back), the peeled last step's
    cell left out."""
    start = lines.index("1:")
    end = next(k for k, ln in enumerate(lines) if ln in ("b 1b", "bne 1b"))
    return collections.Counter(ln.split()[0] for ln in lines[start + 1 : end + 1])


def test_default_step_meets_the_floor_and_says_where_the_rest_goes() -> None:
    s = spec()
    assert is_unrolled(s)
    step = one_step(kernel_asm(s))
    floor = instruction_floor(1, 10, 32, 3)
    assert floor == {
        "mac": 1344,
        "weights": 82,
        "lookups": 160,
        "interpolate": 60,
        "narrow": 40,
        "cell_int64": 48,
        "cell_16bit": 12,
        "operand_round": 4,
    }
    assert step["vmlal.s16"] == floor["mac"]  # no pad column, no pad row: the floor
    assert step["vld1.32"] == floor["lookups"]  # one pair-table word per value
    assert step["vld1.16"] == 4  # the frame's 4 operand loads
    assert step["vmul.i16"] + step["vrsra.u16"] + step["vbit"] == floor["interpolate"]
    assert step["vqrshrn.s32"] == floor["narrow"]
    assert step["vshll.s32"] + step["vmlal.s32"] + step["vqrshrn.s64"] == floor["cell_int64"]
    assert step["vmov"] == 0 and step["ldmia"] == 20  # addresses: 8 per LDM
    total = sum(step.values())
    assert sum(floor.values()) <= total <= 1.18 * sum(floor.values()), total
    assert 8000 * 10 < sum(instruction_floor(49, 10, 32, 3).values())  # goal 1 is below it


@pytest.mark.parametrize(
    "H, F, role", [(3, 7, "last"), (20, 13, "mean"), (48, 13, "max"), (100, 40, "seq")]
)
def test_every_column_of_every_block_is_one_vmlal_group(H: int, F: int, role: str) -> None:
    s = spec(H, F, role)
    lines = kernel_asm(s)
    vmlal = sum(ln.startswith("vmlal.s16") for ln in lines)
    rows = 4 * s.hidden_pad
    if is_unrolled(s):
        assert vmlal == rows * (H + F) // 4
    else:  # one group of 8 units (32 rows) in the loop body
        assert vmlal == 32 * (H + F) // 4
    assert all(len(c) <= 8 for c in chunks(H, F))


def test_layout_rules() -> None:
    assert column_order(3, 2, 0) == [0, 1, 2, 3, 4]
    assert column_order(3, 2, 1) == [4, 3, 2, 1, 0]
    assert [row_gate_unit(r) for r in (0, 7, 8, 16, 24, 31, 32)] == [
        (0, 0), (0, 7), (1, 0), (2, 0), (3, 0), (3, 7), (0, 8)
    ]  # fmt: skip
    assert arm_imm(512) and arm_imm(0x2A00) and arm_imm(0xFF000000) and not arm_imm(0x101)
    with pytest.raises(ValueError, match="kernel role 'sum'"):
        spec(role="sum")
    with pytest.raises(ValueError, match="pad = round_up"):
        KernelSpec(9, 9, 4, 12, 11, 0, 10, 13, "last", "k")


def test_listing_comments_every_block_and_counts_alike() -> None:
    """The generated kernel carries its register plan and a comment per block; comment lines
    are the only difference between the listing and the instructions."""
    from codegen.emit.lstm_neon import kernel_listing

    s = spec()
    listing = kernel_listing(s)
    notes = [ln for ln in listing if ln.startswith("@")]
    assert [ln for ln in listing if not ln.startswith("@")] == kernel_asm(s)
    assert any("r1 weights" in ln for ln in notes)  # the register plan
    blocks = sum(ln.startswith("@ block") for ln in notes)
    assert blocks == 2 * s.groups  # one per block of 16 gate rows in the unrolled step
    assert sum(ln.startswith("@ cell") for ln in notes) >= s.groups
    assert all('"' not in ln and "\\" not in ln for ln in notes)  # safe in a C string
