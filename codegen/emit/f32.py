"""float32 baseline emitter for `codegen bench` (docs/targets.md §1
"plain float32 C"; docs/architecture.md §7).

The trained float weights of the float IR (``codegen.ir.nodes.Model``: LSTM w_ih, w_hh, b_ih, b_hh
and
the linear head) become ``static const float`` arrays, each commented with its shape and range;
``firmware/elt_lstm_f32.c`` is the hand-written float32 kernel. Built with ``-DELT_ENCODER_F32``,
``firmware/fw_app_kws.c`` includes the generated ``fw_app_f32.h`` and runs this encoder on the
dequantized int16 features instead of the integer one (z rounded to Q0.15, integer adaptation
after it), so RESULT's encoder ticks time the float encoder. Benchmark only: not bit-exact with
anything and never shipped by `codegen build`.

As in ``codegen.emit.c``, Python decides all text (literals, comments) and the templates only
format it; output is deterministic (float32 values printed with 9 significant digits, which
round-trips every float32).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.errors import CodegenError
from codegen.base.resources import jinja_env
from codegen.base.version import __version__
from codegen.ir.nodes import QModel

F32_CFLAGS: tuple[str, ...] = ("-DELT_ENCODER_F32",)
# expf/tanhf from newlib's libm; its error path sets errno (__errno, libc).
F32_LIBS: tuple[str, ...] = ("-lm", "-lc")
VALUES_PER_LINE = 6


def f32_literal(v: float) -> str:
    """C literal of the float32 nearest ``v``: 9 significant digits round-trip any float32."""
    f = np.float32(v)
    if not np.isfinite(f):
        raise ValueError(f"non-finite weight {v!r}")
    s = f"{float(f):.9g}"
    if not any(ch in s for ch in ".e"):
        s += ".0"
    return s + "f"


def f32_array(values: npt.ArrayLike, per_line: int = VALUES_PER_LINE, indent: int = 4) -> str:
    items = [f32_literal(v) for v in np.asarray(values, np.float64).reshape(-1)]
    pad = " " * indent
    return "\n".join(
        pad + ", ".join(items[i : i + per_line]) + "," for i in range(0, len(items), per_line)
    )


def _tensor(name: str, symbol: str, values: npt.ArrayLike, doc: str) -> dict[str, Any]:
    a = np.asarray(values, np.float64)
    f = a.astype(np.float32)
    return {
        "name": name,
        "symbol": symbol,
        "size": int(a.size),
        "shape_text": "[" + ", ".join(str(s) for s in a.shape) + "]",
        "doc": doc,
        "lo_text": f"{float(f.min()):.6g}",
        "hi_text": f"{float(f.max()):.6g}",
        "text": f32_array(a),
    }


def render_f32(q: QModel) -> dict[str, str]:
    """{filename: text}: ``<prefix>model_f32.{c,h}`` and ``fw_app_f32.h`` for the fixed IR's
    source model (float weights) and input format (the dequantization of the int16 features)."""
    from codegen.emit.c import banner

    m = q.source
    L = m.encoder[0]
    if len(m.encoder) != 1 or L.kind != "lstm" or m.mlp:
        raise CodegenError(
            "the float32 baseline (firmware/elt_lstm_f32.c) is one LSTM layer and a linear head; "
            f"this model has {len(m.encoder)} {'/'.join(x.kind for x in m.encoder)} layer(s) and "
            f"{len(m.mlp)} hidden head layer(s)"
        )
    p = q.prefix
    H, F, T = L.hidden_size, L.input_size, L.num_frames
    C = m.head.out_features
    frac = q.x_fmt.frac_bits
    sym = {
        "w_ih": f"{p}f32_lstm_w_ih",
        "w_hh": f"{p}f32_lstm_w_hh",
        "b_ih": f"{p}f32_lstm_b_ih",
        "b_hh": f"{p}f32_lstm_b_hh",
        "head_w": f"{p}f32_head_w",
        "head_b": f"{p}f32_head_b",
    }
    tensors = [
        _tensor(
            L.w_ih.name, sym["w_ih"], L.w_ih.values, f" (4H x F = {4 * H} x {F}, gates i,f,g,o)"
        ),
        _tensor(
            L.w_hh.name, sym["w_hh"], L.w_hh.values, f" (4H x H = {4 * H} x {H}, gates i,f,g,o)"
        ),
        _tensor(L.b_ih.name, sym["b_ih"], L.b_ih.values, f" (4H = {4 * H})"),
        _tensor(L.b_hh.name, sym["b_hh"], L.b_hh.values, f" (4H = {4 * H})"),
        _tensor(m.head.weight.name, sym["head_w"], m.head.weight.values, f" (C x H = {C} x {H})"),
        _tensor(m.head.bias.name, sym["head_b"], m.head.bias.values, f" (C = {C})"),
    ]
    header = f"{p}model_f32.h"
    ctx: dict[str, Any] = {
        "p": p,
        "M": p.upper(),
        "guard": f"{p.upper()}MODEL_F32_H",
        "header": header,
        "T": T,
        "F": F,
        "H": H,
        "C": C,
        "R": 4 * H,
        "TF": T * F,
        "sym": sym,
        "tensors": tensors,
        "x_fmt": q.x_fmt.name,
        "x_frac": frac,
        "x_scale": f32_literal(2.0**-frac),
        "version": __version__,
    }
    e = jinja_env()
    what = "float32 baseline of the model for `codegen bench`"

    def banner_(title: str) -> list[str]:
        return [ln.replace("`codegen build`", "`codegen bench`") for ln in banner(q, title)]

    return {
        header: e.get_template("model_f32.h.j2").render(banner=banner_(f"{header}: {what}"), **ctx),
        f"{p}model_f32.c": e.get_template("model_f32.c.j2").render(
            banner=banner_(f"{p}model_f32.c: {what}: float weights, encoder, head"), **ctx
        ),
        "fw_app_f32.h": e.get_template("fw_app_f32.h.j2").render(**ctx),
    }


def write_f32_sources(q: QModel, out_dir: Path) -> list[Path]:
    """Write the float32 baseline's generated files; returns the .c files to compile."""
    from codegen.emit.c import write_sources

    return [s for s in write_sources(render_f32(q), out_dir) if s.suffix == ".c"]
