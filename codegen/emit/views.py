"""What every part of the C emitter shares: integer initialisers, the documented view of one
weight array (name, shape, Q format, float range, error: docs/architecture.md §7), and the
kernels' layout constants. Python decides every text here; the templates print it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from codegen.ir.nodes import QTensor

VALUES_PER_LINE = 12
# Kernel layout of the recurrent weights (firmware/elt_lstm_s16.h, firmware/elt_gru_s16.h,
# codegen/emit/lstm_neon.py): 16 gate rows per block (four int32x4 accumulators; one VLDM of 16
# d-registers loads 4 columns of a block), hidden units padded to 8 (one int16x8 vector), the
# GRU's operand columns to 4 (one d-register of VMLAL scalars).
ROW_BLOCK = 16
HIDDEN_ALIGN = 8
COL_GROUP = 4


def carray(values: Iterable[int], per_line: int = VALUES_PER_LINE, indent: int = 4) -> str:
    """Integer initialiser lines; INT32_MIN/INT64_MIN are written so C parses them as signed."""
    items: list[str] = []
    for v in values:
        iv = int(v)
        if iv == -(1 << 31):
            items.append("(-2147483647 - 1)")
        elif iv == -(1 << 63):
            items.append("(-9223372036854775807LL - 1)")
        elif abs(iv) > (1 << 31) - 1:
            items.append(f"{iv}LL")
        else:
            items.append(str(iv))
    pad = " " * indent
    lines = [pad + ", ".join(items[i : i + per_line]) + "," for i in range(0, len(items), per_line)]
    return "\n".join(lines)


def float_text(x: float) -> str:
    """Stable short float text for comments."""
    return f"{x:.6g}"


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


@dataclass(frozen=True)
class TensorView:
    """One weight array as the template sees it (all text decided here)."""

    name: str
    symbol: str
    ctype: str
    size: int
    shape_text: str
    doc: str
    fmt_name: str
    lo_text: str
    hi_text: str
    err_text: str
    raw: Any


def tensor_view(t: QTensor, symbol: str, doc: str = "") -> TensorView:
    """A fixed-IR tensor as it is stored."""
    lo, hi = t.float_range
    return TensorView(
        name=t.name,
        symbol=symbol,
        ctype=t.ctype,
        size=int(t.raw.size),
        shape_text="[" + ", ".join(str(s) for s in t.shape) + "]",
        doc=doc,
        fmt_name=f"{t.fmt.name} ({t.fmt.word}-bit)",
        lo_text=float_text(lo),
        hi_text=float_text(hi),
        err_text=float_text(t.max_abs_error),
        raw=t.raw,
    )


def array_view(
    name: str,
    symbol: str,
    ctype: str,
    shape: tuple[int, ...],
    doc: str,
    fmt_name: str,
    lo: float,
    hi: float,
    err: float,
    raw: np.ndarray,
) -> TensorView:
    """An array in a kernel's layout (rearranged fixed-IR integers), documented by hand."""
    return TensorView(
        name=name,
        symbol=symbol,
        ctype=ctype,
        size=int(raw.size),
        shape_text="[" + ", ".join(str(d) for d in shape) + "]",
        doc=doc,
        fmt_name=fmt_name,
        lo_text=float_text(lo),
        hi_text=float_text(hi),
        err_text=float_text(err),
        raw=raw,
    )


def recurrent_weights_view(
    L: Any, symbol: str, w: np.ndarray, layout: str, ih_col: int
) -> TensorView:
    """A recurrent layer's W_hh and W_ih packed into one kernel-layout array ``w`` (``layout``:
    how, for the comment): W_hh in columns 0..H − 1, W_ih from column ``ih_col``."""
    H, F = L.hidden_size, L.input_size
    (wl, wh), (il, ih) = L.w_hh.float_range, L.w_ih.float_range
    return array_view(
        f"{L.w_hh.name} | {L.w_ih.name}",
        symbol,
        "int16_t",
        w.shape,
        layout,
        f"W_hh {L.w_hh.fmt.name} in columns 0..{H - 1}, W_ih {L.w_ih.fmt.name} in columns "
        f"{ih_col}..{ih_col + F - 1} (16-bit)",
        min(wl, il),
        max(wh, ih),
        max(L.w_hh.max_abs_error, L.w_ih.max_abs_error),
        w,
    )


@dataclass(frozen=True)
class Call:
    """One C call the generated encoder makes: ``fn(args...);``, with why when it is not plain."""

    fn: str
    args: tuple[str, ...]
    why: str = ""


ACT_TABLES = ("pairs", "full")  # the forms of σ the generated LSTM kernel can read


def pair_table(lut: Any) -> np.ndarray:
    """The contract's σ table (a `codegen.ir.nodes.SigmoidLut`, 2^(15 − index_shift) + 1 knots
    T) as 32-bit words T[j] | (T[j+1] − T[j]) << 16, j = 0 .. 2^(15 − index_shift) − 1: one word
    gather per σ brings the two knots' data of the interpolation (docs/numeric.md §4; 1 KiB for
    the 257-knot table, inside the Cortex-A9's L1 data cache). T is increasing, so every
    difference is ≥ 0, and T[j] < 2^15: every word is a non-negative int32."""
    t = np.asarray(lut.table.raw, dtype=np.int64)
    d = t[1:] - t[:-1]
    if np.any(d < 0) or np.any(d >= 1 << 15) or np.any(t < 0) or np.any(t >= 1 << 15):
        raise ValueError("σ table: knots in [0, 2^15) and non-decreasing expected")
    out: np.ndarray = t[:-1] | (d << 16)
    return out


def full_tables(lut: Any) -> tuple[np.ndarray, np.ndarray]:
    """σ (`codegen.base.fixed.sigmoid_lut`) of a `codegen.ir.nodes.SigmoidLut` at every int16
    input v, at index v + 32768, and tanh(x) = 2σ(2x) − 1 of the same table (the contract's
    tanh, docs/numeric.md §4) at the same index: one halfword gather per value instead of the
    interpolation (the same function, tabulated exhaustively; 128 KiB each, four times the
    Cortex-A9's L1 data cache). The shipped kernels read `pair_table`; these remain the form
    ``act_tables = "full"`` of `codegen.emit.c.render_model`, the bench's before figure
    (measure/bench_memory.py)."""
    from codegen.base.fixed import sigmoid_lut

    v = np.arange(-32768, 32768, dtype=np.int64)
    full = sigmoid_lut(lut.table.raw, lut.index_shift, v)
    return full, 2 * full - 32768
