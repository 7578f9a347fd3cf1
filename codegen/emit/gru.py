"""The C of a GRU encoder layer (``firmware/elt_gru_s16.h``): its weights in the kernel's
layout, its parameters, the scratch the GRU layers share and the calls the encoder makes.
Templates: ``model_gru_layer.c.j2``, ``model_gru_scratch.c.j2``. The GRU kernel has no
per-step form, so a GRU layer does not stream (`codegen.ir.layers.KINDS`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from codegen.emit.views import (
    COL_GROUP,
    HIDDEN_ALIGN,
    ROW_BLOCK,
    Call,
    TensorView,
    array_view,
    recurrent_weights_view,
    round_up,
)
from codegen.ir.layers import KINDS
from codegen.ir.nodes import QGru

C = KINDS["gru"].c  # the kernel's names (firmware/elt_gru_s16.h)

# elt_gru_s16_params_t.pool: ELT_LSTM_POOL_LAST / _MEAN / _MAX (firmware/elt_lstm_s16.h)
POOL_CODES = {"last": 0, "mean": 1, "max": 2}


@dataclass(frozen=True)
class GruLayout:
    """One integer GRU layer in the NEON kernel's layout (firmware/elt_gru_s16.h; every integer
    from the fixed IR, rearranged).

    Hidden units padded to Hp (a multiple of 8; pad units have zero weights and bias, so their
    h stays exactly 0). Gate rows: r at j, z at Hp + j, n at 2 Hp + j, the n rows padded to
    Rn = round_up(Hp, 16) so every block of 16 rows lies within r, z or n. Operand columns
    u = [hs (Hp); xs (F); Fp − F zero-weight pad], Fp = round_up(F, 4): the kernel reads xs
    frames padded to Fp. ``w`` is [R/16][K][16] like the LSTM's (4 consecutive columns of a
    block are 64 consecutive int16). The r and z rows sum both operands in one accumulator from
    b_ih + b_hh (ax + ah, the proof bounds it); the n rows keep W_hh hs + b_hh (bias rows
    2 Hp..R) apart from W_ih xs + b_ih (bias rows R..R + Rn), as r ⊙ (W_hn h + b_hn) needs."""

    hidden_pad: int  # Hp
    input_pad: int  # Fp
    cols: int  # K = Hp + Fp
    n_rows: int  # Rn
    rows: int  # R = 2 Hp + Rn
    w: np.ndarray  # [R/16, K, 16] int16
    bias: np.ndarray  # [R + Rn] int32 at A fraction bits


def gru_layout(L: QGru) -> GruLayout:
    H, F = L.hidden_size, L.input_size
    Hp, Fp = round_up(H, HIDDEN_ALIGN), round_up(F, COL_GROUP)
    Rn = round_up(Hp, ROW_BLOCK)
    K, R = Hp + Fp, 2 * Hp + Rn
    dense = np.zeros((R, K), dtype=np.int64)
    bias = np.zeros(R + Rn, dtype=np.int64)
    b_ih, b_hh = L.b_ih.raw.astype(np.int64), L.b_hh.raw.astype(np.int64)
    for g in range(3):
        src = slice(g * H, (g + 1) * H)
        dense[g * Hp : g * Hp + H, :H] = L.w_hh.raw[src]
        dense[g * Hp : g * Hp + H, Hp : Hp + F] = L.w_ih.raw[src]
    bias[0:H] = b_ih[0:H] + b_hh[0:H]
    bias[Hp : Hp + H] = b_ih[H : 2 * H] + b_hh[H : 2 * H]
    bias[2 * Hp : 2 * Hp + H] = b_hh[2 * H :]
    bias[R : R + H] = b_ih[2 * H :]
    w = np.ascontiguousarray(dense.reshape(R // ROW_BLOCK, ROW_BLOCK, K).transpose(0, 2, 1))
    return GruLayout(Hp, Fp, K, Rn, R, w, bias)


def layer_views(L: QGru, lay: GruLayout, sym: dict[str, str]) -> list[TensorView]:
    """The kernel-layout weights and bias rows of one GRU layer, documented."""
    F, Hp, K = L.input_size, lay.hidden_pad, lay.cols
    bl, bh = L.b_ih.float_range
    return [
        recurrent_weights_view(
            L,
            sym["w"],
            lay.w,
            f" (kernel layout [R/{ROW_BLOCK}][K][{ROW_BLOCK}]: R = {lay.rows} gate rows, r at j, "
            f"z at Hp + j, n at 2 Hp + j, Hp = {Hp}; K = {K} columns u = [hs (Hp); xs (F = {F}); "
            f"{K - Hp - F} pad]; pad rows and columns 0)",
            Hp,
        ),
        array_view(
            f"{L.b_ih.name} | {L.b_hh.name}",
            sym["bias"],
            "int32_t",
            lay.bias.shape,
            f" (at A = {L.shifts.acc_frac} fraction bits: rows r, z b_ih + b_hh, rows n b_hh, "
            f"then the {lay.n_rows} n rows' b_ih; pad rows 0)",
            f"{L.b_ih.fmt.name} (32-bit)",
            bl,
            bh,
            max(L.b_ih.max_abs_error, L.b_hh.max_abs_error),
            lay.bias,
        ),
    ]


def layer_context(p: str, L: QGru, n: int, last: bool, act_tables: str = "pairs") -> dict[str, Any]:
    """Layer ``n``'s arrays and elt_gru_s16_params_t (``model_gru_layer.c.j2``). The GRU's C
    kernels read the pair table whatever ``act_tables`` (the σ form of generated LSTM kernels)."""
    del act_tables
    sym = {k: f"{p}layer_{n}_{k}" for k in ("w", "bias", "params")}
    lay = gru_layout(L)
    return {
        "template": "model_gru_layer.c.j2",
        "kernels": C,
        "n": n,
        "L": L,
        "sym": sym,
        "tensors": layer_views(L, lay, sym),
        "shifts": L.shifts,
        "layout": lay,
        "margin_text": f"{L.acc_gate.margin_bits:.2f}",
        # an inner layer's pool is "last" (check_encoder): it hands on seq and pools nothing
        "pool_code": POOL_CODES[L.pool],
    }


def seq_size(L: QGru) -> int:
    """int16 an inner layer's output sequence takes: [T][H] (elt_gru_s16_run stores no more)."""
    return L.num_frames * L.hidden_size


def scratch_context(p: str, layers: list[QGru], top: QGru | None) -> dict[str, Any]:
    """The scratch every GRU layer shares (``model_gru_scratch.c.j2``), every buffer at the
    largest layer's size; the mean pooling sum is the top layer's."""
    lays = [gru_layout(L) for L in layers]
    return {
        "template": "model_gru_scratch.c.j2",
        "kernels": C,
        "sym": f"{p}gru_scratch",
        "buf": {k: f"{p}gru_{k}" for k in ("h", "hs", "xs", "pre", "ax", "ah", "acc")},
        "hp": max(la.hidden_pad for la in lays),
        "xs": max(L.num_frames * la.input_pad for L, la in zip(layers, lays, strict=True)),
        "pre": max(2 * la.hidden_pad for la in lays),
        "nr": max(la.n_rows for la in lays),
        "acc": top.hidden_size if top is not None else max(L.hidden_size for L in layers),
    }


def run_call(p: str, layer: dict[str, Any], x: str, out: str, last: bool) -> Call:
    """The whole sequence of frames ``x``: the top layer writes z (``out``), an inner layer
    every h_t to ``out``."""
    params, scratch = f"&{layer['sym']['params']}", f"&{p}gru_scratch"
    if last:
        return Call(C.run, (params, x, scratch, out, "0"))
    return Call(
        C.run_seq,
        (params, x, scratch, f"{p}gru_h", out),
        why="an inner layer's z is its last h: written onto the scratch's own h",
    )
