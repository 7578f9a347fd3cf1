"""The ELaTTA kernels as the Cortex-A9 runs them: NEON paths (and, for comparison, the reference
build) under qemu-system-arm (xilinx-zynq-a9), every result field equal to the Python integer
reference.

The host harness (tests/firmware/test_int_host_c.py) compiles the portable scalar loops; this probe
compiles the same kernels with arm-none-eabi-gcc and the device flags, so the NEON code is what
runs: odd shapes (D not a multiple of 8, C not a multiple of 4, k = 1, 3, 4, 8, odd λ) reach
every tail and every fast path (k = 2 latent, sampler and covariance update; two-candidate head
passes), with saturating latents and heads, QELaTTA-V1/V2 and every mode. The exact division,
isqrt, entropy and argmax kernels are checked on their own edge cases too. The slow layer adds
one ELF per shape with ELT_K_MAX = k (k = 12, 16, 32, odd λ) for the k = ELT_K_MAX
specialisations of the CMA-ES core."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from adaptprobe import (
    ENTROPY_ROWS,
    PROBES,
    Probe,
    check_adapt_lines,
    check_chol_lines,
    run_probe,
)

from codegen.intref.entropy import argmax_s16, entropy_s16

pytestmark = pytest.mark.qemu


@pytest.mark.parametrize("scalar", [False, True], ids=["neon", "scalar"])
def test_arm_kernels_equal_python_under_qemu(tmp_path: Path, scalar: bool) -> None:
    params, lines, inp = run_probe(tmp_path, scalar)
    zs, ids = inp["z"], inp["ids"]
    assert isinstance(zs, list) and isinstance(ids, list)
    check_adapt_lines(PROBES, params, lines["A"], zs, ids)
    ent = inp["ent"]
    assert isinstance(ent, list) and len(lines["E"]) == len(ent)
    for (C, frac, lg), (h, am) in zip(ent, lines["E"], strict=True):
        assert h == int(entropy_s16(lg[None, :], frac)[0]), (C, frac, lg)
        assert am == int(argmax_s16(lg[None, :])[0]), (C, frac, lg)
    # the same cases ENTROPY_ROWS at a time through elt_entropy_s16_rows (four-row finish + tail)
    assert len(lines["R"]) * ENTROPY_ROWS == len(ent)
    for g, got in enumerate(lines["R"]):
        group = ent[g * ENTROPY_ROWS : (g + 1) * ENTROPY_ROWS]
        assert len({(C, frac) for C, frac, _ in group}) == 1
        C, frac, _ = group[0]
        want = entropy_s16(np.stack([lg for _, _, lg in group]), frac)
        np.testing.assert_array_equal(got, want, err_msg=f"rows C={C} frac={frac}")
    num, den, sq = inp["num"], inp["den"], inp["sq"]
    assert isinstance(num, list) and isinstance(den, list) and isinstance(sq, list)
    assert len(lines["D"]) == len(num) and len(lines["S"]) == len(sq)
    for a, b, (q1, q2) in zip(num, den, lines["D"], strict=True):
        assert q1 == a // b and q2 == a // b, (a, b, q1, q2)
    for v, (r,) in zip(sq, lines["S"], strict=True):
        assert r == math.isqrt(v), v
    check_chol_lines(lines["C"], inp["chol"])


# One ELF per shape with ELT_K_MAX = k, so the k = ELT_K_MAX specialisations run (the column
# Cholesky, the two-candidate sampler for k <= 16 and a multiple of 4, the tiled covariance
# update) at the paper's k = 16 and at k = 32 (no unrolling), with odd lambda and mu. The
# sampler's three forms of x = m + sigma y (elt_sample_xform: shift <= 29, 30..31, >= 32) need
# sigma above 1 (sigma0 3), around 1/2 and below 1/4 (sigma0 0.05).
K_MAX_PROBES = (
    Probe(64, 12, 16, "strict", 4, samples=10, sigma0=0.5),
    Probe(64, 12, 16, "strict", 3, samples=6, sigma0=3.0),
    Probe(64, 12, 16, "continual", 3, samples=6, sigma0=0.05),
    Probe(64, 12, 16, "continual_bounded", 3, v1=True, v2=(8, 4), samples=8, sigma0=0.5, lam=13),
    Probe(40, 9, 12, "continual", 3, samples=8, sigma0=0.5, lam=11),
    Probe(64, 12, 32, "strict", 3, samples=6, sigma0=0.5, lam=15),
)


@pytest.mark.slow
@pytest.mark.parametrize("probe", K_MAX_PROBES, ids=lambda p: f"k{p.k}-lam{p.lam or 'default'}")
def test_k_max_shapes_equal_python_under_qemu(tmp_path: Path, probe: Probe) -> None:
    params, lines, inp = run_probe(tmp_path, False, (probe,))
    zs, ids = inp["z"], inp["ids"]
    assert isinstance(zs, list) and isinstance(ids, list)
    check_adapt_lines((probe,), params, lines["A"], zs, ids)
    check_chol_lines(lines["C"], inp["chol"])
