"""The QEMU probe of the ELaTTA kernels: a probe main linked with the kernels and one model's
generated parameters, its lines checked field by field against the Python integer reference
(tests/firmware/test_int_qemu.py, tests/codegen/emit/test_cand_kernel.py)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from intharness.driver import div_cases, isqrt_cases, random_head, random_latents

from codegen.base.resources import firmware_dir
from codegen.elatta.cmaes import default_popsize
from codegen.emit.adapt import emit_adapt_c
from codegen.intref.adapt import adapt_int
from codegen.intref.cmaes_int import chol_s32
from codegen.ir.nodes import AdaptConfig, AdaptParams
from codegen.quantize.adapt import quantize_adapt
from codegen.target import sources
from codegen.target.firmware import FirmwareConfig, render_config
from codegen.target.qemu_probe import link_probe, qemu_probe_lines
from codegen.target.toolchain import find_tool


@dataclass(frozen=True)
class Probe:
    D: int
    C: int
    k: int
    mode: str
    n: int
    v1: bool = False
    v2: tuple[int, int] | None = None
    samples: int = 24
    saturate: float = 0.02
    scale: float = 0.5
    sigma0: float = 0.3
    lam: int = 0  # 0: pycma's default population size for k

    def params(self, seed: int) -> AdaptParams:
        rng = np.random.default_rng(seed)
        W, b, V, zc = random_head(rng, D=self.D, C=self.C, k=self.k, scale=self.scale)
        cfg = AdaptConfig(
            k=self.k,
            n_iter=self.n,
            lam=self.lam or default_popsize(self.k),
            sigma0=self.sigma0,
            mode=self.mode,
            seed=seed * 31,
            beta=0.6,
            radius=0.8,
            qelatta_v1=self.v1,
            qelatta_v2=self.v2,
        )
        return quantize_adapt(W, b, V, cfg, zc)


PROBES = (
    Probe(32, 12, 2, "strict", 2, samples=40),  # the KWS shape
    Probe(32, 12, 2, "continual_bounded", 2, sigma0=0.8),
    Probe(32, 12, 2, "strict", 8, sigma0=2.0),
    Probe(20, 13, 3, "continual", 3, v1=True),  # D % 8 = 4, C % 4 = 1, λ = 7
    Probe(36, 7, 1, "strict", 2, v2=(8, 4)),  # k = 1, C < 8
    Probe(64, 17, 8, "strict", 2),  # a 16-class block + a tail class, λ = 10
    Probe(28, 8, 4, "continual_bounded", 3, v1=True, v2=(8, 4)),
    Probe(12, 2, 2, "no_adapt", 2, saturate=0.5, scale=6.0, sigma0=16.0),
    Probe(12, 5, 2, "strict", 3, v2=(4, 2), saturate=0.5, scale=6.0, sigma0=16.0),
    Probe(10, 4, 2, "continual", 2, saturate=0.3, sigma0=4.0),  # D % 4 != 0: scalar head
)
ENTROPY_C = (2, 3, 4, 5, 8, 10, 12, 13, 16, 17, 31, 35)
ENTROPY_ROWS = 5  # cases per (C, frac): also run as one elt_entropy_s16_rows call

PROBE_MAIN = r"""
/* tests/firmware/test_int_qemu.py: the ELaTTA kernels on embedded inputs; every result on the
 * UART. */
#include <stdint.h>
#include "fw_uart.h"
#include "fw_probe_print.h"
#include "elt_adapt.h"
#include "elt_cmaes_s32.h"
#include "elt_entropy_s16.h"
#include "probe_data.h"
int main(void);
static elt_adapt_state_t st;
static elt_adapt_result_t res;
static int32_t chol_a[PROBE_KC * (PROBE_KC + 1) / 2];
int main(void)
{
    uint32_t c, i, j, off = 0;
    fw_uart_init();
    for (c = 0; c < PROBE_CONFIGS; ++c) {
        const elt_adapt_params_t *p = probe_params[c];
        elt_adapt_reset(&st);
        for (i = 0; i < probe_n[c]; ++i, off += (uint32_t)p->dim) {
            elt_adapt_run(p, &st, probe_z + off, probe_ids[c][i], &res);
            fw_uart_putc('A');
            fw_uart_putc(' ');
            put_s(res.pred_noadapt);
            put_s(res.pred);
            put_s(res.H_noadapt);
            put_s(res.H_best);
            put_s(res.n_pivot_fix);
            for (j = 0; j < (uint32_t)p->es.k; ++j) put_s(res.p_best[j]);
            for (j = 0; j < (uint32_t)p->n_classes; ++j) put_s(res.logits_noadapt[j]);
            for (j = 0; j < (uint32_t)p->n_classes; ++j) put_s(res.logits[j]);
            fw_uart_putc('\n');
        }
    }
    for (i = 0, off = 0; i < PROBE_NE; ++i) {
        const int16_t *l = probe_logits + off;
        fw_uart_putc('E');
        fw_uart_putc(' ');
        put_s(elt_entropy_s16(l, probe_ec[i], probe_ef[i], probe_params[0]->es.exp2_lut,
                              probe_params[0]->log2_lut));
        put_s(elt_argmax_s16(l, probe_ec[i]));
        fw_uart_putc('\n');
        off += (uint32_t)probe_ec[i];
    }
    for (i = 0, off = 0; i < PROBE_NE; i += PROBE_ER) {
        int32_t h[PROBE_ER];
        elt_entropy_s16_rows(probe_logits + off, probe_ec[i], PROBE_ER, probe_ec[i], probe_ef[i],
                             probe_params[0]->es.exp2_lut, probe_params[0]->log2_lut, h);
        fw_uart_putc('R');
        fw_uart_putc(' ');
        for (j = 0; j < PROBE_ER; ++j) put_s(h[j]);
        fw_uart_putc('\n');
        off += PROBE_ER * (uint32_t)probe_ec[i];
    }
    for (i = 0; i < PROBE_ND; ++i) {
        elt_recip_t r;
        elt_recip_init(&r, probe_den[i]);
        fw_uart_putc('D');
        fw_uart_putc(' ');
        put_u64(elt_udiv64(probe_num[i], probe_den[i]));
        put_u64(elt_udiv64_r(probe_num[i], &r));
        fw_uart_putc('\n');
    }
    for (i = 0; i < PROBE_NS; ++i) {
        fw_uart_putc('S');
        fw_uart_putc(' ');
        put_u64(elt_isqrt64(probe_sq[i]));
        fw_uart_putc('\n');
    }
    for (i = 0; i < PROBE_NCH; ++i) {
        const int32_t nf =
            elt_cmaes_chol_s32(probe_chol + i * (PROBE_KC * (PROBE_KC + 1) / 2), PROBE_KC, chol_a);
        fw_uart_putc('C');
        fw_uart_putc(' ');
        put_s(nf);
        for (j = 0; j < PROBE_KC * (PROBE_KC + 1) / 2; ++j) put_s(chol_a[j]);
        fw_uart_putc('\n');
    }
    fw_uart_write((const uint8_t *)"END\n", 4u);
    fw_uart_flush();
    for (;;) {
    }
}
"""


def carray(values: np.ndarray | list[int], per_line: int = 12) -> str:
    vals = [str(int(v)) for v in np.asarray(values, dtype=np.int64).reshape(-1)]
    return "\n".join(
        "    " + ", ".join(vals[i : i + per_line]) + "," for i in range(0, len(vals), per_line)
    )


def u64array(values: list[int]) -> str:
    return "\n".join(
        "    " + ", ".join(f"UINT64_C({v})" for v in values[i : i + 4]) + ","
        for i in range(0, len(values), 4)
    )


def entropy_cases(rng: np.random.Generator) -> list[tuple[int, int, np.ndarray]]:
    """(C, frac, logits): random, saturated, all-equal and one-hot logits, every tail size."""
    out = []
    for C in ENTROPY_C:
        for frac in (0, 7, 10, 15):
            out.append((C, frac, rng.integers(-32768, 32768, C)))
            out.append((C, frac, rng.integers(-300, 300, C)))
            out.append((C, frac, np.full(C, int(rng.integers(-32768, 32768)))))
            one = np.full(C, -32768)
            one[int(rng.integers(0, C))] = 32767
            out.append((C, frac, one))
            out.append((C, frac, np.where(rng.random(C) < 0.5, -32768, 32767)))
    return out


def chol_cases(rng: np.random.Generator, k: int) -> np.ndarray:
    """Packed covariances (Q.26) for elt_cmaes_chol_s32 at k = ELT_K_MAX: I, random positive
    definite ones whose factor stays below 1 (the NEON form's int32 sums) or passes it (its
    int64 form from the start: diagonals up to 30, strong correlations near 1), one with only its
    last row large, and random int32 symmetric ones (raised pivots, saturated quotients)."""
    ii, jj = np.tril_indices(k)
    out = [np.where(ii == jj, 1 << 26, 0)]
    for scale, corr in ((0.3, 0.5), (0.95, 0.5), (0.999, 0.99), (4.0, 0.5), (30.0, 0.9)):
        b = rng.standard_normal((k, k))
        s = corr * (b @ b.T) / k + (1 - corr) * np.eye(k)
        s *= scale / np.max(np.diag(s))
        out.append(np.round(s[ii, jj] * 2**26))
    s = np.eye(k) * 0.5
    s[k - 1, :] = s[:, k - 1] = 0.2
    s[k - 1, k - 1] = 25.0
    out.append(np.round(s[ii, jj] * 2**26))
    for _ in range(3):
        m = rng.integers(-(2**31), 2**31, (k, k))
        out.append(np.tril(m)[ii, jj])
    # the NEON fast form's quotient by VQRDMULH(num 2^(28-e), r): small pivots (e down to 17,
    # shifts up to 11) and a pivot of 20 (e > 28) whose column's numerators are all 0, which the
    # fast form completes; then the same pivot with a nonzero numerator (the int64 form)
    b = rng.standard_normal((k, k))
    s = 0.5 * (b @ b.T) / k + 0.5 * np.eye(k)
    out.append(np.round(s[ii, jj] * 2**-12 * 2**26))
    s = 0.5 * (b @ b.T) / k + 0.5 * np.eye(k)
    s *= 0.8 / np.max(np.diag(s))
    h = k // 2
    s[h, :] = s[:, h] = 0.0
    s[h, h] = 20.0
    out.append(np.round(s[ii, jj] * 2**26))
    s[k - 1, h] = s[h, k - 1] = 0.1
    out.append(np.round(s[ii, jj] * 2**26))
    return np.stack(out).astype(np.int64)


def run_probe(
    tmp: Path, scalar: bool, probes: tuple[Probe, ...] = PROBES
) -> tuple[list[AdaptParams], dict[str, list[list[int]]], dict[str, object]]:
    """The probe with the kernels' NEON operations (firmware/kernels/neon_a32), or with
    ``scalar`` their reference ones (firmware/kernels/ref, the whole build -DELT_SCALAR)."""
    params = [pr.params(400 + i) for i, pr in enumerate(probes)]
    src = tmp / "src"
    src.mkdir()
    headers = []
    for i, P in enumerate(params):
        for name, text in emit_adapt_c(P, f"t{i}_").items():
            (src / name).write_text(text)
            if name.endswith(".h"):
                headers.append(name)
    rng = np.random.default_rng(17)
    zs, ids = [], []
    for pr in probes:
        zs.append(random_latents(rng, pr.samples, D=pr.D, saturate=pr.saturate))
        ids.append(rng.integers(0, 2**32, pr.samples))
    ent = entropy_cases(rng)
    num, den = div_cases(rng, 1500)
    sq = isqrt_cases(rng, 1500)
    k_chol = max(p.k for p in params)
    chol = chol_cases(rng, k_chol)
    n_ids = max(pr.samples for pr in probes)
    ids_rows = [carray(np.concatenate([x, np.zeros(n_ids - len(x), np.int64)])) for x in ids]
    data = [
        "#include <stdint.h>",
        *(f'#include "{h}"' for h in headers),
        f"#define PROBE_CONFIGS {len(params)}u",
        "static const elt_adapt_params_t *const probe_params[] = {",
        *(f"    &t{i}_adapt_params," for i in range(len(params))),
        "};",
        f"static const uint32_t probe_n[] = {{{', '.join(str(pr.samples) for pr in probes)}}};",
        f"static const uint32_t probe_ids[][{n_ids}] = {{",
        *(f"    {{\n{row}\n    }}," for row in ids_rows),
        "};",
        "static const int16_t probe_z[] = {\n"
        f"{carray(np.concatenate([z.reshape(-1) for z in zs]))}\n}};",
        f"#define PROBE_NE {len(ent)}u",
        f"#define PROBE_ER {ENTROPY_ROWS}u",
        f"static const int32_t probe_ec[] = {{\n{carray([c for c, _, _ in ent])}\n}};",
        f"static const int32_t probe_ef[] = {{\n{carray([f for _, f, _ in ent])}\n}};",
        "static const int16_t probe_logits[] = {\n"
        f"{carray(np.concatenate([lg for _, _, lg in ent]))}\n}};",
        f"#define PROBE_ND {len(num)}u",
        f"static const uint64_t probe_num[] = {{\n{u64array(num)}\n}};",
        f"static const uint64_t probe_den[] = {{\n{u64array(den)}\n}};",
        f"#define PROBE_NS {len(sq)}u",
        f"static const uint64_t probe_sq[] = {{\n{u64array(sq)}\n}};",
        f"#define PROBE_KC {k_chol}",
        f"#define PROBE_NCH {len(chol)}u",
        f"static const int32_t probe_chol[] = {{\n{carray(chol.reshape(-1))}\n}};",
        "",
    ]
    (src / "probe_data.h").write_text("\n".join(data))
    (src / "probe_main.c").write_text(PROBE_MAIN)
    inc = tmp / "include"
    inc.mkdir()
    (inc / "fw_config.h").write_text(render_config(FirmwareConfig(), "fw-probe", "0" * 64))
    fw = firmware_dir()
    sizes = (
        f"-DELT_K_MAX={max(p.k for p in params)}",
        f"-DELT_LAM_MAX={max(p.cfg.lam for p in params)}",
        f"-DELT_D_MAX={max(p.dim for p in params)}",
        f"-DELT_C_MAX={max(p.n_classes for p in params)}",
    )
    elf = tmp / "probe.elf"
    srcs = [
        src / "probe_main.c",
        *sorted(src.glob("t*_adapt_params.c")),
        *(fw / s for s in sources.ADAPT),
    ]
    link_probe(
        elf,
        srcs,
        cflags=sizes,
        includes=[inc, src],
        variant=sources.REF if scalar else sources.NEON_A32,
    )
    if not scalar:  # the device build really takes the NEON paths
        dis = subprocess.run(
            [find_tool("arm-none-eabi-objdump"), "-d", str(elf)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for insn in ("vmlal.s16", "vld2.32", "vqmovn.s64", "vrsra.s64", "vclz.i32"):
            assert f"\t{insn}" in dis, insn
    lines: dict[str, list[list[int]]] = {"A": [], "E": [], "R": [], "D": [], "S": [], "C": []}
    for line in qemu_probe_lines(elf):
        tag, *vals = line.split()
        lines[tag].append([int(v) for v in vals])
    return (
        params,
        lines,
        {
            "z": zs,
            "ids": ids,
            "ent": ent,
            "num": num,
            "den": den,
            "sq": sq,
            "chol": (k_chol, chol),
        },
    )


def check_chol_lines(rows_c: list[list[int]], cases: object) -> None:
    """Every 'C' line (raised pivots, then the packed factor) equals `chol_s32`."""
    assert isinstance(cases, tuple)
    k, chol = cases
    a, nfix = chol_s32(chol, k)
    assert len(rows_c) == len(chol)
    for i, row in enumerate(rows_c):
        np.testing.assert_array_equal(row[0], nfix[i], err_msg=f"chol case {i} n_pivot_fix")
        np.testing.assert_array_equal(row[1:], a[i], err_msg=f"chol case {i} A")


def check_adapt_lines(
    probes: tuple[Probe, ...],
    params: list[AdaptParams],
    rows_a: list[list[int]],
    zs: list[np.ndarray],
    ids: list[np.ndarray],
) -> None:
    """Every 'A' line of the probe equals `adapt_int` field for field, in probe order."""
    assert len(rows_a) == sum(pr.samples for pr in probes)
    row = 0
    for c, (pr, P) in enumerate(zip(probes, params, strict=True)):
        py = adapt_int(zs[c], P, ids[c])
        for i in range(pr.samples):
            v = np.array(rows_a[row], dtype=np.int64)
            row += 1
            parts = np.split(v, np.cumsum([1, 1, 1, 1, 1, P.k, P.n_classes]))
            names = (
                "pred_noadapt",
                "pred",
                "H_noadapt",
                "H_best",
                "n_pivot_fix",
                "p_best",
                "logits_noadapt",
                "logits",
            )
            for name, got in zip(names, parts, strict=True):
                want = np.atleast_1d(np.asarray(getattr(py, name))[i]).astype(np.int64)
                np.testing.assert_array_equal(got, want, err_msg=f"{pr} sample {i} {name}")
