"""C emission of the adaptation core: ``<prefix>adapt_params.{c,h}`` from
``templates/adapt_params.{c,h}.j2`` and the -D flags that size its state. Formats only: every
integer comes from `codegen.ir.nodes.AdaptParams` as the quantizer decided it."""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from codegen.base.contract import C_FRAC, X_FRAC, Z_FRAC
from codegen.base.errors import ConfigError
from codegen.base.tables import table_hash
from codegen.base.version import __version__
from codegen.emit.adapt_neon import (
    CandSpec,
    cand_asm,
    g_kernel_order,
    instructions_per_candidate,
    kernel_applies,
    unrolled,
    vmlal_per_candidate,
)
from codegen.ir.modes import MODE_IDS
from codegen.ir.nodes import H_FMT, LNSIG_FMT, P_FMT, Z_T_FMT, AdaptParams

_PREFIX_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)?$")


def adapt_cflags(params: AdaptParams) -> tuple[str, ...]:
    """-D flags that size ``elt_adapt_state_t`` exactly for this model (docs/targets.md §1 RAM)."""
    return (
        f"-DELT_K_MAX={params.k}",
        f"-DELT_LAM_MAX={params.cfg.lam}",
        f"-DELT_D_MAX={params.dim}",
        f"-DELT_C_MAX={params.n_classes}",
    )


def _rng(lo: float, hi: float) -> str:
    return f"[{lo:.6g}, {hi:.6g}]"


# The exp2 table's alignment: its address has bits 2..9 clear, so the NEON entropy kernel puts
# the byte offset 4 j of entry j there by one VBIT
# (firmware/kernels/neon_a32/elt_entropy_s16_ops.h).
EXP2_LUT_ALIGN = 1024


def _array(
    name: str,
    ctype: str,
    values: npt.ArrayLike,
    shape: tuple[int, ...],
    fmt: str,
    rng: str,
    what: str,
    per_line: int = 12,
    align: int = 0,
    align_why: str = "",
) -> dict[str, object]:
    """One flat ``static const`` array: rows of the last dimension, labelled for 2-D shapes."""
    vals = np.asarray(values, dtype=np.int64).reshape(-1)
    if ctype == "int64_t":
        text = [f"INT64_C({int(v)})" for v in vals]
    elif ctype == "int32_t":
        text = [str(int(v)) if v != -(2**31) else "INT32_MIN" for v in vals]
    else:
        text = [str(int(v)) for v in vals]
    row_len = shape[-1] if len(shape) > 1 else len(text)
    groups = []
    for r in range(0, len(text), row_len):
        row = text[r : r + row_len]
        groups.append(
            {
                "label": f"[{r // row_len}]" if len(shape) > 1 else "",
                "lines": [", ".join(row[i : i + per_line]) for i in range(0, len(row), per_line)],
            }
        )
    return {
        "name": name,
        "ctype": ctype,
        "length": len(text),
        "shape": " x ".join(str(d) for d in shape),
        "fmt": fmt,
        "range": rng,
        "what": what,
        "groups": groups,
        "align": align,
        "align_why": align_why,
    }


def _field(name: str, value: object, comment: str) -> dict[str, str]:
    return {"name": name, "value": str(value), "comment": comment}


def _cand_kernel(params: AdaptParams, pfx: str, g_frac: int) -> dict[str, object] | None:
    """The generated candidate-logit kernel (codegen.emit.adapt_neon) for the template, or None
    where
    the one-floor finish is not exact for these shifts or the program would be too long (the
    intrinsic path of firmware/elt_adapt.c runs then)."""
    if not kernel_applies(params.g_shift, params.head_shift):
        return None
    spec = CandSpec(params.n_classes, params.k, params.g_shift + params.head_shift)
    if not unrolled(spec):
        return None
    order = g_kernel_order(params.G.T, spec)
    g_array = None
    g_sym = f"{pfx}adapt_G"
    if not np.array_equal(order, np.asarray(params.G.T, dtype=np.int64).reshape(-1)):
        g_sym = f"{pfx}adapt_G_kernel"
        g_array = _array(
            g_sym,
            "int32_t",
            order,
            (len(order),),
            f"Q.{g_frac}",
            "",
            "G^T in the kernel's order: per block of 12 classes its k rows, padded to an even "
            "class count with a 0 class (codegen.emit.adapt_neon.g_kernel_order)",
        )
    return {
        "fn": f"{pfx}adapt_cand_rows",
        "macro": f"{pfx.upper()}ADAPT_CAND_ROWS",
        "n_classes": spec.n_classes,
        "k": spec.k,
        "shift": spec.shift,
        "padded": spec.padded,
        "vmlal": vmlal_per_candidate(spec),
        "instructions": instructions_per_candidate(spec),
        "g_sym": g_sym,
        "g_array": g_array,
        "lines": [f'"{line}\\n\\t"' for line in cand_asm(spec)],
    }


def emit_adapt_c(params: AdaptParams, prefix: str) -> dict[str, str]:
    """Render the params instance ``const elt_adapt_params_t <prefix>adapt_params`` (and its
    arrays and tables) from ``templates/adapt_params.{c,h}.j2``. Deterministic."""
    from codegen.base.resources import jinja_env

    if not _PREFIX_RE.match(prefix):
        raise ConfigError(f"prefix={prefix!r} is not allowed: use a C identifier prefix")
    cfg, cm = params.cfg, params.cmaes
    src = cm.source
    C, D, k = params.n_classes, params.dim, params.k
    g_frac = params.g_shift + params.b_fmt.frac_bits - X_FRAC  # G p in Q.(g_frac + 27)
    grid = params.grid
    pfx = prefix
    wq = f"{params.w_fmt.name}"
    arrays = [
        _array(
            f"{pfx}adapt_W",
            "int16_t",
            params.W.T,
            (D, C),
            wq,
            _rng(*params.w_range),
            "head weights W transposed (row d = the weights of latent d for every class)",
        ),
        _array(
            f"{pfx}adapt_b",
            "int32_t",
            params.b,
            (C,),
            params.b_fmt.name,
            _rng(*params.b_range),
            "head bias b in the accumulator format",
        ),
        _array(
            f"{pfx}adapt_G",
            "int32_t",
            params.G.T,
            (k, C),
            f"Q.{g_frac}",
            _rng(float(params.G.min()) / 2**g_frac, float(params.G.max()) / 2**g_frac),
            "head folded onto the basis, (W V_k)^T (row l = the logits of basis vector l; "
            "docs/numeric.md §5.1)",
        ),
        _array(
            f"{pfx}adapt_w",
            "int32_t",
            cm.w,
            (cm.mu,),
            "Q1.30",
            _rng(min(src.weights[: cm.mu]), max(src.weights[: cm.mu])),
            "positive recombination weights w_i, i < mu (docs/cmaes.md §1)",
        ),
        _array(
            f"{pfx}adapt_wc",
            "int32_t",
            cm.wc,
            (cm.lam,),
            "Q1.30",
            _rng(*(lambda v: (min(v), max(v)))([x / 2**30 for x in cm.wc])),
            "c_mu*w_i (i < mu), c_mu*w_i*k (active negative weights) (docs/cmaes.md §1.2 step 6)",
        ),
        _array(
            f"{pfx}adapt_wc_sqrt",
            "int32_t",
            cm.wc_sqrt,
            (cm.lam,),
            "Q1.30",
            _rng(min(cm.wc_sqrt) / 2**30, max(cm.wc_sqrt) / 2**30),
            "sqrt|wc_i|: the covariance terms as outer products of scaled vectors "
            "(docs/cmaes.md §6 step 9)",
        ),
        _array(
            f"{pfx}adapt_hsig_thr",
            "int64_t",
            cm.hsig_thr,
            (cm.n_iter,),
            "Q.46",
            _rng(cm.hsig_thr[0] / 2**46, cm.hsig_thr[-1] / 2**46),
            "h_sigma thresholds T_g = (1 + 4/(k+1)) k (1 - (1-c_s)^(2g)), g = 1..n",
            4,
        ),
        _array(
            f"{pfx}adapt_exp2_lut",
            "int32_t",
            params.exp2_lut,
            (len(params.exp2_lut),),
            "Q1.30",
            "[0.5, 1]",
            f"2^(-j/256), j = 0..256; sha256 {table_hash(params.exp2_lut)}",
            8,
            EXP2_LUT_ALIGN,
            "the NEON entropy inserts entry j's offset 4 j into its bits 2..9",
        ),
        _array(
            f"{pfx}adapt_log2_lut",
            "int32_t",
            params.log2_lut,
            (len(params.log2_lut),),
            "Q1.30",
            "[0, 1]",
            f"log2(1 + j/256), j = 0..256; sha256 {table_hash(params.log2_lut)}",
            8,
        ),
        _array(
            f"{pfx}adapt_gauss_lut",
            "int32_t",
            params.gauss_lut,
            params.gauss_lut.shape,
            "Q3.28",
            f"[0, {params.gauss_lut.max() / 2**28:.6g}]",
            "half-normal inverse CDF |z| = Phi^-1(1 - t/2), t = 2^-(o+1)(1 + j/32); sha256 "
            f"{table_hash(params.gauss_lut)}",
            11,
        ),
    ]
    cand = _cand_kernel(params, pfx, g_frac)
    es_fields = [
        _field("k", k, "latent subspace dimension"),
        _field("lam", cm.lam, "candidates per iteration (lambda)"),
        _field("mu", cm.mu, "parents (positive weights)"),
        _field("n_iter", cm.n_iter, "iterations per sample"),
        _field("w", f"{pfx}adapt_w", ""),
        _field("wc", f"{pfx}adapt_wc", ""),
        _field("wc_sqrt", f"{pfx}adapt_wc_sqrt", ""),
        _field("one_minus_cs", cm.one_minus_cs, f"Q1.30 1 - c_s = {1 - src.cs:.17g}"),
        _field("gain_s", cm.gain_s, f"Q3.28 sqrt(c_s(2-c_s)mu_eff), mu_eff = {src.mueff:.17g}"),
        _field("one_minus_cc", cm.one_minus_cc, f"Q1.30 1 - c_c = {1 - src.cc:.17g}"),
        _field("gain_c", cm.gain_c, "Q3.28 sqrt(c_c(2-c_c)mu_eff)"),
        _field("c1", cm.c1, f"Q1.30 c1 = {src.c1:.17g}"),
        _field("c1_sqrt", cm.c1_sqrt, "Q1.30 sqrt(c1)"),
        _field("decay_h1", cm.decay_h1, f"Q1.30 1 - c1 - c_mu sum(w), c_mu = {src.cmu:.17g}"),
        _field("decay_h0", cm.decay_h0, "Q1.30 1 - c1(1 - c_c(2-c_c)) - c_mu sum(w)"),
        _field("cs_over_ds", cm.cs_over_ds, f"Q1.30 c_s/d_s, d_s = {src.damps:.17g}"),
        _field("inv_chi", cm.inv_chi, f"Q1.30 1/chi_k, chi_k = {src.chi:.17g}"),
        _field("hsig_thr", f"{pfx}adapt_hsig_thr", ""),
        _field("ln_sigma0", cm.ln_sigma0, f"Q8.23 ln(sigma0), sigma0 = {cfg.sigma0!r}"),
        _field("exp2_lut", f"{pfx}adapt_exp2_lut", ""),
        _field(
            "grid_on",
            int(grid is not None),
            "QELaTTA-V2 " + (f"{grid.name}" if grid is not None else "off"),
        ),
        _field("grid_frac", grid.frac if grid is not None else 0, "grid fraction bits"),
        _field("grid_lo", grid.lo if grid is not None else 0, "grid raw minimum"),
        _field("grid_hi", grid.hi if grid is not None else 0, "grid raw maximum"),
    ]
    fields = [
        _field("n_classes", C, "C"),
        _field("dim", D, "D (latent size)"),
        _field("mode", MODE_IDS[cfg.mode], f"ELT_MODE_{cfg.mode.upper()}"),
        _field("seed", f"UINT64_C({cfg.seed})", "base seed of the per-sample xoshiro128** streams"),
        _field("W", f"{pfx}adapt_W", ""),
        _field("b", f"{pfx}adapt_b", ""),
        _field(
            "head_shift",
            params.head_shift,
            f"accumulator {params.b_fmt.name} -> logits {params.logit_fmt.name}; proven "
            f"|acc| <= {params.head_bound}",
        ),
        _field("logit_frac", params.logit_fmt.frac_bits, f"logits {params.logit_fmt.name}"),
        _field("G", f"{pfx}adapt_G", ""),
        _field(
            "cand_rows",
            cand["macro"] if cand else 0,
            "candidate-logit kernel of this C and k (codegen.emit.adapt_neon)"
            if cand
            else "no generated candidate-logit kernel: the shifts fail the one-floor conditions",
        ),
        _field("zt_shift", params.zt_shift, f"z_t Q0.15 -> latent {params.latent_fmt.name}"),
        _field("g_shift", params.g_shift, f"G p Q.{g_frac + X_FRAC} -> accumulator"),
        _field("beta", params.beta_q30, f"Q1.30 beta = {cfg.beta!r}"),
        _field("radius", params.radius_q23, f"Q8.23 radius = {cfg.radius!r}"),
        _field("qv1", int(cfg.qelatta_v1), "QELaTTA-V1 two-level p"),
        _field("log2_lut", f"{pfx}adapt_log2_lut", ""),
        _field("gauss_lut", f"{pfx}adapt_gauss_lut", ""),
    ]
    ctx = {
        "version": __version__,
        "input_hash": params.input_hash,
        "prefix": pfx,
        "guard": f"{pfx.upper()}ADAPT_PARAMS_H",
        "header": f"{pfx}adapt_params.h",
        "config": repr(cfg),
        "formats": [
            ("z_t", Z_T_FMT.name),
            ("latent z", params.latent_fmt.name),
            ("W", params.w_fmt.name),
            ("b / accumulator", params.b_fmt.name),
            ("G = W V", f"Q.{g_frac}"),
            ("logits", params.logit_fmt.name),
            ("H", H_FMT.name),
            ("p, m, x", P_FMT.name),
            ("C, A", f"Q{31 - C_FRAC}.{C_FRAC}"),
            ("z (normals)", f"Q{31 - Z_FRAC}.{Z_FRAC}"),
            ("ln sigma", LNSIG_FMT.name),
        ],
        "sizes": [("K", k), ("LAM", cm.lam), ("D", D), ("C", C)],
        "arrays": arrays,
        "fields": fields,
        "es_fields": es_fields,
        "cand": cand,
    }
    env = jinja_env()
    return {
        f"{pfx}adapt_params.h": env.get_template("adapt_params.h.j2").render(**ctx),
        f"{pfx}adapt_params.c": env.get_template("adapt_params.c.j2").render(**ctx),
    }
