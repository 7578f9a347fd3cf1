"""The firmware ELaTTA kernels + generated params, host-compiled with -fsanitize=address,undefined,
against the Python integer reference: byte-equal on every result field and on every trace stage
(CMA-ES state per iteration), all modes, k ∈ {1, 2, 4, 8}, n ∈ {1, 2, 5}, QELaTTA-V1 and V2.
Also: the kernels build for the Cortex-A9, the state fits docs/targets.md §1, and the generated
params equal the Python integers."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import numpy as np
import pytest
from intharness.driver import (
    FAST,
    Case,
    Harness,
    build_harness,
    div_cases,
    first_result_mismatch,
    first_trace_mismatch,
    isqrt_cases,
    random_head,
    random_latents,
    shared_harness,
)

from codegen.base import contract
from codegen.base.resources import firmware_dir
from codegen.emit.adapt import adapt_cflags, emit_adapt_c
from codegen.intref import entropy
from codegen.intref.adapt import adapt_int
from codegen.ir.nodes import AdaptConfig, AdaptParams
from codegen.quantize.adapt import quantize_adapt
from codegen.target import sources
from codegen.target.cores import get_core
from codegen.target.toolchain import COMMON_CFLAGS, find_tool

QUANT = ((False, None), (True, None), (False, (8, 4)), (False, (4, 2)))
FULL = tuple(
    Case(
        mode,
        k,
        n,
        v1=v1,
        v2=v2,
        samples=600 if mode in ("strict", "no_adapt") else 120,
        saturate=0.02,
        traced=4,
    )
    for mode, k, n, (v1, v2) in itertools.product(
        ("no_adapt", "strict", "continual", "continual_bounded"), (1, 2, 4, 8), (1, 2, 5), QUANT
    )
)


def check_case(h: Harness, idx: int, case: Case, seed: int, tmp: Path) -> None:
    P = h.params[idx]
    rng = np.random.default_rng(seed + 1000)
    z = random_latents(rng, case.samples, saturate=case.saturate)
    ids = rng.integers(0, 2**32, case.samples)
    c_res, _ = h.adapt(idx, z, ids)
    py = adapt_int(z, P, ids)
    msg = first_result_mismatch(py, c_res)
    assert msg is None, f"{case}: {msg}"
    for f in ("pred", "logits", "H_best", "p_best", "logits_noadapt", "H_noadapt"):
        np.testing.assert_array_equal(np.asarray(getattr(py, f), np.int64), c_res[f], err_msg=f)
    # full traces (CMA-ES state per iteration) of the first samples
    nt = min(case.traced, case.samples)
    recs: list = []
    adapt_int(z[:nt], P, ids[:nt], trace=lambda s, st, i, d: recs.append((s, st, i, d)))
    _, c_tr = h.adapt(idx, z[:nt], ids[:nt], tmp / f"trace{idx}.bin")
    assert c_tr is not None and len(c_tr) == len(recs)
    msg = first_trace_mismatch(recs, c_tr)
    assert msg is None, f"{case}: {msg}"


@pytest.fixture(scope="module")
def fast_harness() -> Harness:
    return shared_harness()


def test_fast_slice_bit_exact(fast_harness: Harness, tmp_path: Path) -> None:
    assert sum(c.samples for c in FAST) >= 10_000
    for i, case in enumerate(FAST):
        check_case(fast_harness, i, case, i, tmp_path)


@pytest.mark.slow
def test_full_grid_bit_exact(tmp_path: Path) -> None:
    h = build_harness([c.params(100 + i) for i, c in enumerate(FULL)])
    for i, case in enumerate(FULL):
        check_case(h, i, case, 100 + i, tmp_path)


def test_exact_division_and_isqrt_equal_python(fast_harness: Harness) -> None:
    """elt_udiv64 / elt_udiv64_r (reciprocal + Newton + correction instead of libgcc's 64-bit
    division) equal Python // on every case, the largest numerators and quotients >= 2^32
    included; elt_isqrt64 equals math.isqrt."""
    import math

    rng = np.random.default_rng(61)
    num, den = div_cases(rng)
    q1, q2 = fast_harness.udiv(np.array(num, np.uint64), np.array(den, np.uint64))
    want = [a // b for a, b in zip(num, den, strict=True)]
    for i, (a, b) in enumerate(zip(num, den, strict=True)):
        assert int(q1[i]) == want[i] and int(q2[i]) == want[i], f"{a} // {b}: {q1[i]}, {q2[i]}"
    vals = isqrt_cases(rng)
    got = fast_harness.isqrt(np.array(vals, np.uint64))
    for v, r in zip(vals, got, strict=True):
        assert int(r) == math.isqrt(v), f"isqrt({v}) = {r}"


def test_generated_params_equal_python(fast_harness: Harness) -> None:
    """The C struct the template fills holds exactly the AdaptParams integers."""
    for i, P in enumerate(fast_harness.params):
        got = fast_harness.params_text(i)
        cm = P.cmaes
        want = {
            "n_classes": P.n_classes,
            "dim": P.dim,
            "seed": P.cfg.seed,
            "head_shift": P.head_shift,
            "logit_frac": P.logit_fmt.frac_bits,
            "zt_shift": P.zt_shift,
            "g_shift": P.g_shift,
            "beta": P.beta_q30,
            "radius": P.radius_q23,
            "qv1": int(P.cfg.qelatta_v1),
            "k": P.k,
            "lam": cm.lam,
            "mu": cm.mu,
            "n_iter": cm.n_iter,
            "one_minus_cs": cm.one_minus_cs,
            "gain_s": cm.gain_s,
            "one_minus_cc": cm.one_minus_cc,
            "gain_c": cm.gain_c,
            "c1": cm.c1,
            "decay_h1": cm.decay_h1,
            "decay_h0": cm.decay_h0,
            "cs_over_ds": cm.cs_over_ds,
            "inv_chi": cm.inv_chi,
            "ln_sigma0": cm.ln_sigma0,
            "grid_on": int(P.grid is not None),
            "mode": ("no_adapt", "strict", "continual", "continual_bounded").index(P.cfg.mode),
        }
        want |= {f"w.{j}": v for j, v in enumerate(cm.w)}
        want |= {f"wc.{j}": v for j, v in enumerate(cm.wc)}
        want |= {f"wc_sqrt.{j}": v for j, v in enumerate(cm.wc_sqrt)}
        want["c1_sqrt"] = cm.c1_sqrt
        want |= {f"hsig_thr.{j}": v for j, v in enumerate(cm.hsig_thr)}
        want |= {f"W.{j}": int(v) for j, v in enumerate(P.W.reshape(-1))}
        want |= {f"b.{j}": int(v) for j, v in enumerate(P.b)}
        want |= {f"G.{j}": int(v) for j, v in enumerate(P.G.reshape(-1))}
        if P.grid is not None:
            want |= {"grid_frac": P.grid.frac, "grid_lo": P.grid.lo, "grid_hi": P.grid.hi}
        for key, v in want.items():
            assert got[key] == v, f"params {i} field {key}: C {got[key]} != Python {v}"


def test_c_format_macros_equal_python(fast_harness: Harness) -> None:
    got = fast_harness.sizes()
    want = {
        "ELT_X_FRAC": contract.X_FRAC,
        "ELT_Z_FRAC": contract.Z_FRAC,
        "ELT_C_FRAC": contract.C_FRAC,
        "ELT_RATE_FRAC": contract.RATE_FRAC,
        "ELT_GAIN_FRAC": contract.GAIN_FRAC,
        "ELT_LNSIG_FRAC": contract.LNSIG_FRAC,
        "ELT_NORM2_FRAC": contract.NORM2_FRAC,
        "ELT_H_FRAC": contract.H_FRAC,
        "ELT_PIVOT_EPS": contract.PIVOT_EPS,
        "ELT_LNSIG_MIN": contract.LNSIG_MIN,
        "ELT_LNSIG_MAX": contract.LNSIG_MAX,
        "ELT_LOG2E_Q30": entropy.LOG2E_Q30,
        "ELT_LN2_Q30": entropy.LN2_Q30,
    }
    for key, v in want.items():
        assert got[key] == v, f"{key}: C {got[key]} != Python {v}"


def kws_params() -> AdaptParams:
    W, b, V, zc = random_head(np.random.default_rng(0), D=32, C=12, k=2)
    return quantize_adapt(W, b, V, AdaptConfig(), zc)


def test_state_fits_design_budget(tmp_path: Path) -> None:
    """docs/targets.md §1: ELaTTA state <= 1 KiB for k = 2 together with V (kernels sized by
    adapt_cflags). Plain host compile: every member is an int32/int16/uint8 array, so the size is
    the same under the ARM EABI (also checked by the cross build below)."""
    P = kws_params()
    src = tmp_path / "sizes.c"
    src.write_text(
        '#include <stdio.h>\n#include "elt_adapt.h"\nint main(void) {\n'
        '    printf("%zu %zu\\n", sizeof(elt_adapt_state_t),\n'
        "           sizeof(elt_adapt_result_t));\n"
        "    return 0;\n}\n"
    )
    exe = tmp_path / "sizes"
    subprocess.run(
        [
            find_tool("cc"),
            *COMMON_CFLAGS,
            *adapt_cflags(P),
            f"-I{firmware_dir()}",
            str(src),
            "-o",
            str(exe),
        ],
        check=True,
    )
    state, result = map(
        int, subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    )
    v_bytes = P.G.size * 4  # the device reads V only through G = W V (int32 [C, k])
    print(f"elt_adapt_state_t {state} B + G {v_bytes} B = {state + v_bytes} B; result {result} B")
    assert state + v_bytes <= 1024


ARM_FLAGS = (*get_core("cortex-a9").cpu_flags, "-ffreestanding", "-mno-unaligned-access")
SIZES = {
    1: (1, 4, 8, 2),
    2: (2, 6, 32, 12),
    3: (3, 7, 16, 3),
    8: (8, 10, 64, 16),
    32: (32, 32, 64, 256),
}


def compile_kernels(
    tmp: Path,
    cc: str,
    target: tuple[str, ...],
    opt: str,
    sizes: tuple[int, int, int, int],
    trace: bool,
    extra_sources: tuple[Path, ...] = (),
    variant: sources.KernelVariant = sources.HOST,
) -> Path:
    """Object-only build of every kernel with -Werror (GCC's flow warnings depend on -O and on
    the array sizes, so the matrix matters), with one variant's operations."""
    k, lam, d, c = sizes
    out = tmp / f"{Path(cc).name}{opt}k{k}{'t' if trace else ''}-{variant.name}"
    out.mkdir()
    fw = firmware_dir()
    cmd = [
        cc,
        *target,
        *COMMON_CFLAGS,
        opt,
        f"-DELT_K_MAX={k}",
        f"-DELT_LAM_MAX={lam}",
        f"-DELT_D_MAX={d}",
        f"-DELT_C_MAX={c}",
        *(["-DELT_TRACE"] if trace else []),
        *variant.compile_flags(fw),
        f"-I{fw}",
        f"-I{tmp}",
        "-c",
        *(str(fw / s) for s in sources.ADAPT),
        *map(str, extra_sources),
    ]
    proc = subprocess.run(cmd, cwd=out, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"$ {' '.join(cmd)}\n{proc.stderr}"
    return out


def test_kernels_build_for_cortex_a9(tmp_path: Path) -> None:
    """Object-only cross build of every kernel and a generated params file (docs/targets.md §2
    flags), sized by adapt_cflags, with and without the trace points."""
    cc = find_tool("arm-none-eabi-gcc")
    P = kws_params()
    for name, text in emit_adapt_c(P, "kws_").items():
        (tmp_path / name).write_text(text)
    sizes = tuple(int(f.split("=")[1]) for f in adapt_cflags(P))
    assert sizes == SIZES[2]
    for variant in (sources.NEON_A32, sources.REF):
        objs = compile_kernels(
            tmp_path,
            cc,
            ARM_FLAGS,
            "-O2",
            SIZES[2],
            False,
            (tmp_path / "kws_adapt_params.c",),
            variant,
        )
        compile_kernels(tmp_path, cc, ARM_FLAGS, "-O2", SIZES[1], True, (), variant)
        # the device path is pure integer: no floating-point instructions or calls in the kernels
        if _has("arm-none-eabi-objdump"):
            for s in sources.ADAPT:
                dis = subprocess.run(
                    [find_tool("arm-none-eabi-objdump"), "-d", str(objs / (Path(s).stem + ".o"))],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                assert not any(
                    tok in dis for tok in ("vadd.f", "vmul.f", "vcvt", "__aeabi_d", "__aeabi_f")
                ), (s, variant.name)


def test_kernels_build_for_host_at_o2(tmp_path: Path) -> None:
    """k = 1 at -O2 is where GCC's maybe-uninitialized analysis once fired (hostlib build)."""
    compile_kernels(tmp_path, find_tool("cc"), (), "-O2", SIZES[1], True)


@pytest.mark.slow
def test_kernels_build_matrix(tmp_path: Path) -> None:
    builds = (
        (find_tool("cc"), (), sources.REF),
        (find_tool("arm-none-eabi-gcc"), ARM_FLAGS, sources.NEON_A32),
        (find_tool("arm-none-eabi-gcc"), ARM_FLAGS, sources.REF),
    )
    for cc, target, variant in builds:
        for opt, k, trace in itertools.product(
            ("-O0", "-O1", "-O2", "-O3", "-Os"), SIZES, (False, True)
        ):
            compile_kernels(tmp_path, cc, tuple(target), opt, SIZES[k], trace, (), variant)


def _has(tool: str) -> bool:
    import shutil

    return shutil.which(tool) is not None
