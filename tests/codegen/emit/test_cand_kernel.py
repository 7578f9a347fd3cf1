"""The generated candidate-logit kernel (codegen/emit/adapt_neon.py) for the class counts users
bring:
the program's shape decisions on the host, and one ELF per (C, k) built with ELT_C_MAX = C and
ELT_K_MAX = k (so firmware/elt_adapt.c takes the kernel) run under qemu-system-arm with every
result field equal to the Python integer reference (`adapt_int`, strict mode and others)."""

from __future__ import annotations

import dataclasses
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from adaptprobe import Probe, check_adapt_lines, run_probe

from codegen.emit.adapt import emit_adapt_c
from codegen.emit.adapt_neon import (
    CandSpec,
    cand_asm,
    g_kernel_order,
    instructions_per_candidate,
    kernel_applies,
    vmlal_per_candidate,
)
from codegen.ir.nodes import AdaptParams
from codegen.target.toolchain import find_tool


def test_program_shape_c12_k16() -> None:
    """C = 12, k = 16 (shift 43): 96 VMLAL, G in 6 VLDM of 16 d-registers, p in 2 VLD1 of 4,
    one VLDM of the accumulator start, the finish of 6 VSHRN + 3 VQSHRN #11, one VST1."""
    lines = cand_asm(CandSpec(12, 16, 43))
    ops = [ln.split()[0] for ln in lines if not ln.endswith(":") and not ln.startswith("@")]
    assert ops.count("vmlal.s32") == 96
    assert sum(1 for ln in lines if ln.startswith("vldmia %[g]!, {d4-d19}")) == 6
    assert sum(1 for ln in lines if ln.startswith("vld1.32 {d0-d3}")) == 2
    assert ops.count("vst1.16") == 1
    assert sum(1 for ln in lines if ln.startswith("vqshrn.s32") and ln.endswith("#11")) == 3
    assert instructions_per_candidate(CandSpec(12, 16, 43)) == len(ops) == 118


@pytest.mark.parametrize(
    ("shift", "ops"), [(32, ["vqmovn.s32"]), (48, ["vqshrn.s32"]), (49, ["vshr.s32", "vqmovn.s32"])]
)
def test_finish_by_shift(shift: int, ops: list[str]) -> None:
    """The rest of the floor after the high word: none, VQSHRN #1..16, or VSHR then VQMOVN."""
    lines = cand_asm(CandSpec(4, 2, shift))
    got = [ln.split()[0] for ln in lines if ln.startswith(("vqmovn", "vqshrn", "vshr."))]
    assert got == ops
    if shift > 32:
        assert lines[lines.index(next(ln for ln in lines if ln.startswith(ops[0])))].endswith(
            f"#{shift - 32}"
        )


@pytest.mark.parametrize("C", [1, 2, 3, 10, 11, 12, 13, 20, 35])
@pytest.mark.parametrize("k", [1, 3, 16])
def test_program_counts(C: int, k: int) -> None:
    """C k / 2 VMLAL rounded up per block (an odd C pays one pad class), one store per logit
    lane beyond the groups of 4, and G read exactly once per candidate."""
    spec = CandSpec(C, k)
    lines = cand_asm(spec)
    assert vmlal_per_candidate(spec) == k * (C + (C & 1)) // 2
    assert sum(1 for ln in lines if ln.startswith("vmlal.s32")) == vmlal_per_candidate(spec)
    g_regs = 0
    for ln in lines:
        if ln.startswith("vldmia %[g]!"):
            regs = ln.split("{")[1].rstrip("}")
            lo, _, hi = regs.partition("-")
            g_regs += 1 if not hi else int(hi[1:]) - int(lo[1:]) + 1
    zeros = np.zeros((k, C), dtype=np.int64)
    assert g_regs * 2 == k * spec.padded == len(g_kernel_order(zeros, spec))
    stored = 0
    for ln in lines:
        if ln.startswith("vst1.16"):
            regs = ln.split("{")[1].split("}")[0]
            if "[" in regs:
                stored += 1
            else:
                lo, _, hi = regs.partition("-")
                stored += 4 * (1 if not hi else int(hi[1:]) - int(lo[1:]) + 1)
    assert stored == C


def test_kernel_order_blocks() -> None:
    """C = 13: block 0 = classes 0..11 for every row, then class 12 and a 0 pad class."""
    g_t = np.arange(3 * 13).reshape(3, 13)
    order = g_kernel_order(g_t, CandSpec(13, 3))
    np.testing.assert_array_equal(order[:36], g_t[:, :12].reshape(-1))
    np.testing.assert_array_equal(order[36:], [12, 0, 25, 0, 38, 0])


def test_validity_conditions() -> None:
    assert kernel_applies(29, 14)
    assert kernel_applies(30, 31)
    assert not kernel_applies(31, 14)  # gs > 30: acc0 2^gs may reach 2^62
    assert not kernel_applies(20, 11)  # gs + hs < 32: VSHL by a positive count
    assert not kernel_applies(30, 32)  # gs + hs > 61
    assert not kernel_applies(0, 40)


def test_no_kernel_where_shifts_fail() -> None:
    """Shifts that fail the one-floor conditions: no kernel emitted, cand_rows = 0."""
    P = Probe(16, 10, 3, "strict", 2).params(400)
    bad = type(P)(**{**P.__dict__, "head_shift": 32 - P.g_shift - 1})
    text = emit_adapt_c(bad, "x_")["x_adapt_params.c"]
    assert "x_adapt_cand_rows" not in text and ".cand_rows = 0," in text
    text = emit_adapt_c(P, "x_")["x_adapt_params.c"]
    assert ".cand_rows = X_ADAPT_CAND_ROWS," in text


def run_shape(tmp: Path, probe: Probe) -> None:
    params, lines, inp = run_probe(tmp, False, (probe,))
    P = params[0]
    assert kernel_applies(P.g_shift, P.head_shift), (P.g_shift, P.head_shift)
    dis = subprocess.run(
        [find_tool("arm-none-eabi-objdump"), "-d", str(tmp / "probe.elf")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "<t0_adapt_cand_rows>:" in dis  # the generated kernel is linked (and so reached)
    zs, ids = inp["z"], inp["ids"]
    assert isinstance(zs, list) and isinstance(ids, list)
    check_adapt_lines((probe,), params, lines["A"], zs, ids)


@pytest.mark.qemu
def test_c13_k3_equal_python_under_qemu(tmp_path: Path) -> None:
    """Two blocks (12 + 1 padded), an odd k (a lane load of p), strict mode."""
    run_shape(tmp_path, Probe(20, 13, 3, "strict", 3, samples=16, sigma0=0.5))


@dataclass(frozen=True)
class ShiftProbe(Probe):
    """A probe whose head_shift is set so g_shift + head_shift reaches every finish of the
    kernel (the reference reads the same field, so the expected logits follow)."""

    total_shift: int = 43

    def params(self, seed: int) -> AdaptParams:
        P = super().params(seed)
        return dataclasses.replace(P, head_shift=self.total_shift - P.g_shift)


SLOW_SHAPES = (
    ShiftProbe(24, 20, 3, "strict", 3, samples=10, sigma0=0.5, total_shift=32),
    ShiftProbe(24, 11, 5, "strict", 3, samples=10, sigma0=0.5, total_shift=48),
    ShiftProbe(24, 13, 16, "strict", 3, samples=10, sigma0=0.5, total_shift=50),
    ShiftProbe(24, 9, 2, "strict", 3, samples=10, sigma0=0.5, total_shift=61),
    Probe(16, 2, 1, "strict", 3, samples=12, sigma0=0.5),
    Probe(16, 3, 3, "strict", 3, samples=12, sigma0=0.5),
    Probe(40, 10, 16, "strict", 3, samples=10, sigma0=0.5),
    Probe(40, 20, 16, "strict", 3, samples=10, sigma0=0.5),
    Probe(40, 35, 16, "strict", 3, samples=10, sigma0=0.5),
    Probe(24, 35, 1, "strict", 3, samples=12, sigma0=0.5),
    Probe(24, 20, 3, "continual_bounded", 3, v1=True, samples=10, sigma0=0.5),
    Probe(40, 13, 16, "continual", 3, v2=(8, 4), samples=8, sigma0=0.5),
    Probe(16, 3, 1, "strict", 2, samples=12, saturate=0.5, scale=6.0, sigma0=16.0),
)


@pytest.mark.slow
@pytest.mark.qemu
@pytest.mark.parametrize(
    "probe",
    SLOW_SHAPES,
    ids=lambda p: f"C{p.C}-k{p.k}-{p.mode}-{getattr(p, 'total_shift', 'q')}",
)
def test_class_counts_equal_python_under_qemu(tmp_path: Path, probe: Probe) -> None:
    run_shape(tmp_path, probe)
