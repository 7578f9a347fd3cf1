"""The C of an LSTM encoder layer (``firmware/elt_lstm_s16.h``): its weights in the kernel's
layout, its NEON kernel (`codegen.emit.lstm_neon`), its parameters, the scratch the LSTM layers
share, the state a layer carries in the streaming audio mode, and the calls the encoder makes.
Templates: ``model_lstm_layer.c.j2``, ``model_lstm_scratch.c.j2``, ``model_lstm_stream.c.j2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from codegen.emit.lstm_neon import (
    KARGS,
    KCONST,
    KernelSpec,
    column_order,
    kernel_listing,
    row_gate_unit,
)
from codegen.emit.views import (
    HIDDEN_ALIGN,
    ROW_BLOCK,
    Call,
    TensorView,
    array_view,
    recurrent_weights_view,
    round_up,
)
from codegen.ir.layers import KINDS
from codegen.ir.nodes import GATES, QLstm

C = KINDS["lstm"].c  # the kernels' names (firmware/elt_lstm_s16.h)


@dataclass(frozen=True)
class LstmLayout:
    """The integer LSTM in the kernel's layout (every integer from the fixed IR, rearranged).

    Gate rows are grouped by 8 hidden units (``codegen.emit.lstm_neon.row_gate_unit``): block 2u of
    16 rows holds the i and f rows of units 8u..8u+7, block 2u + 1 their g and o rows; units
    H..Hp−1 are padding with zero weights and bias, so their c and h stay exactly 0. Operand
    columns u = [hs (H); xs (F)]: column k < H is W_hh[:, k], H + j is W_ih[:, j]. ``w`` is
    [R/16][K][16]: for each block of 16 rows, its columns in the order the kernel takes them
    (``column_order``: even blocks ascending, odd blocks descending) and every column's 16
    weights in row order, so the weights are one stream that the kernel reads front to back,
    16 d-registers (4 columns) per VLDM.
    """

    hidden_pad: int  # Hp
    cols: int  # K = H + F
    rows: int  # R = 4·Hp
    w: np.ndarray  # [R/16, K, 16] int16
    bias: np.ndarray  # [R] int32 at A fraction bits

    @property
    def row_blocks(self) -> int:
        return self.rows // ROW_BLOCK


def lstm_layout(L: QLstm) -> LstmLayout:
    H, F = L.hidden_size, L.input_size
    Hp = round_up(H, HIDDEN_ALIGN)
    K = H + F
    R = len(GATES) * Hp
    dense = np.zeros((R, K), dtype=np.int64)  # stored row order, columns u = [hs; xs]
    bias = np.zeros(R, dtype=np.int64)
    for row in range(R):
        g, j = row_gate_unit(row)
        if j < H:
            dense[row, :H] = L.w_hh.raw[g * H + j]
            dense[row, H:] = L.w_ih.raw[g * H + j]
            bias[row] = L.bias.raw[g * H + j]
    w = np.stack(
        [
            dense[b * ROW_BLOCK : (b + 1) * ROW_BLOCK, column_order(H, F, b)].T
            for b in range(R // ROW_BLOCK)
        ]
    )
    return LstmLayout(Hp, K, R, np.ascontiguousarray(w), bias)


def kernel_spec(L: QLstm, role: str, kconst: str, act_tables: str = "pairs") -> KernelSpec:
    """The NEON kernel of one layer: its shapes and shifts, what it writes per step and the σ
    form it reads (`codegen.emit.views.ACT_TABLES`)."""
    sh = L.shifts
    return KernelSpec(
        hidden=L.hidden_size,
        hidden_pad=round_up(L.hidden_size, HIDDEN_ALIGN),
        inputs=L.input_size,
        gate_rshift=sh.sig_rshift,
        g_rshift=sh.tanh_rshift,
        h_opshift=sh.h_opshift,
        ig_lshift=sh.cell_ig_lshift,
        tanh_rshift=sh.cell_tanh_rshift,
        role=role,
        kconst=kconst,
        tables=act_tables,
    )


def kernel_lines(L: QLstm, role: str, kconst: str, act_tables: str = "pairs") -> list[str]:
    """The kernel's instructions as C string-literal lines of a basic asm statement."""
    spec = kernel_spec(L, role, kconst, act_tables)
    return [f'"{ins}\\n\\t"' for ins in kernel_listing(spec)]


def kconst_tables(p: str, act_tables: str) -> tuple[list[str], str]:
    """The 16 words of elt_lstm_s16_kconst_t.tables (the cell's d0-d7) and what they hold."""
    if act_tables == "full":
        words = ["0"] * 8 + [f"{p}sigmoid_full + 32768"] * 4 + [f"{p}tanh_full + 32768"] * 4
        return words, "zeros, then the exhaustive σ and tanh tables' entry 0"
    words = (
        [f"{p}sigmoid_pairs"] * 4
        + ["(const void *)0x007F007Fu"] * 4
        + ["(const void *)0x80008000u"] * 4
        + ["0"] * 4
    )
    return words, "the pair table's address, 127 and 32768 in every int16 lane, zeros"


def layer_views(L: QLstm, lay: LstmLayout, sym: dict[str, str]) -> list[TensorView]:
    """The kernel-layout weights and bias rows of one LSTM layer, documented."""
    Hp, K, R = lay.hidden_pad, lay.cols, lay.rows
    H, F = L.hidden_size, L.input_size
    return [
        recurrent_weights_view(
            L,
            sym["w"],
            lay.w,
            f" (kernel layout [R/{ROW_BLOCK}][K][{ROW_BLOCK}]: R = 4 x Hp = {R} gate rows "
            f"by groups of 8 units (i, f rows of a group, then g, o), Hp = {Hp}; K = {K} "
            f"columns u = [hs (H = {H}); xs (F = {F})], even blocks in u order, odd blocks "
            f"reversed; per column the block's 16 rows in order, so 4 columns are one VLDM of "
            f"16 d-registers; pad rows 0)",
            H,
        ),
        array_view(
            L.bias.name,
            sym["bias"],
            "int32_t",
            (R,),
            f" (b_ih + b_hh at A = {L.shifts.acc_frac} frac bits, rows as in the weights, pad "
            "rows 0)",
            f"{L.bias.fmt.name} (32-bit)",
            *L.bias.float_range,
            L.bias.max_abs_error,
            lay.bias,
        ),
    ]


def layer_context(
    p: str, L: QLstm, n: int, last: bool, act_tables: str = "pairs"
) -> dict[str, Any]:
    """Layer ``n``'s arrays, NEON kernel and elt_lstm_s16_params_t (``model_lstm_layer.c.j2``):
    the top layer's kernel writes its pooling, an inner layer's every h_t; its σ form
    ``act_tables`` (`codegen.emit.views.ACT_TABLES`)."""
    lay = lstm_layout(L)
    words, what = kconst_tables(p, act_tables)
    sym = {k: f"{p}layer_{n}_{k}" for k in ("w", "bias", "kernel", "kconst", "params")}
    pr = L.proof
    return {
        "template": "model_lstm_layer.c.j2",
        "kernels": C,
        "n": n,
        "L": L,
        "what": (
            "reads the features" if n == 0 else f"reads layer {n - 1}'s h_t (Q0.15) as its frames"
        )
        + (", hands on its pooling" if last else ", hands on every h_t"),
        "sym": sym,
        "tensors": layer_views(L, lay, sym),
        "layout": lay,
        "shifts": L.shifts,
        "proof": pr,
        "margin_text": f"{L.acc_gate.margin_bits:.2f}",
        "kernel": kernel_lines(L, L.pool if last else "seq", sym["kconst"], act_tables),
        "kconst_tables": words,
        "kconst_what": what,
        # mean pooling's 1/T (the top layer's only: an inner layer does not pool)
        "pool_recip": L.pool_recip if last and L.pool == "mean" else None,
    }


def seq_size(L: QLstm) -> int:
    """int16 an inner layer's output sequence takes: [T][H] and the Hp − H values the kernel's
    whole groups of 8 units store after it (elt_lstm_s16_run_seq)."""
    return L.num_frames * L.hidden_size + round_up(L.hidden_size, HIDDEN_ALIGN) - L.hidden_size


def scratch_context(p: str, layers: list[QLstm], top: QLstm | None) -> dict[str, Any]:
    """The scratch every LSTM layer shares (``model_lstm_scratch.c.j2``): the layers run one
    after the other, so each buffer has the largest layer's size; the pooling buffers are the
    top layer's (``top``, None when the top layer is of another kind)."""
    hp = max(round_up(L.hidden_size, HIDDEN_ALIGN) for L in layers)
    return {
        "template": "model_lstm_scratch.c.j2",
        "kernels": C,
        "sym": f"{p}lstm_scratch",
        "buf": {k: f"{p}lstm_{k}" for k in ("xs", "hs", "h", "c", "act", "acc", "hmax")},
        "xs": max(L.num_frames * L.input_size for L in layers),
        "hp": hp,
        "rows": len(GATES) * hp,
        "acc": top is not None and top.pool == "mean",
        "hmax": top is not None and top.pool == "max",
        "kargs": KARGS,
        "kconst": KCONST,
    }


def run_call(p: str, layer: dict[str, Any], x: str, out: str, last: bool) -> Call:
    """The feature path: the whole sequence of frames ``x``; the top layer writes z (its
    pooling), an inner layer every h_t to ``out``."""
    fn = C.run if last else C.run_seq
    return Call(fn, (f"&{layer['sym']['params']}", x, f"&{p}lstm_scratch", out))


def stream_context(
    p: str, L: QLstm, n: int, last: bool, x: str, z: str, t: str, scratch: dict[str, Any]
) -> dict[str, Any]:
    """Layer ``n`` in the streaming audio mode (``model_lstm_stream.c.j2``): one kernel step per
    frame ``x`` (the features, or the layer below's h), its own h, hs and c carried between the
    calls; layer 0 carries them in the feature path's buffers (the device runs one path at a
    time), a layer above in its own. The top layer pools into the feature path's pooling buffer
    and its running output ``z``; the step index is ``t``."""
    own = n > 0
    buf = scratch["buf"]
    step = {k: f"{p}layer_{n}_step_{k}" if own else buf[k] for k in ("hs", "h", "c")}
    sym = f"{p}layer_{n}_step_scratch"
    params = f"&{p}layer_{n}_params"
    zz = z if last else "0"
    c_begin, c_step, c_end = C.step
    return {
        "template": "model_lstm_stream.c.j2",
        "kernels": C,
        "n": n,
        "own": own,
        "hp": round_up(L.hidden_size, HIDDEN_ALIGN),
        # one frame's operands (elt_lstm_s16_step), rounded up to whole int16x8 vectors
        "xs_size": round_up(L.input_size, HIDDEN_ALIGN),
        "xs": f"{p}layer_{n}_step_xs",
        **step,
        "act": buf["act"],
        "acc": buf["acc"] if last and scratch["acc"] else None,
        "hmax": buf["hmax"] if last and scratch["hmax"] else None,
        "sym": sym,
        "begin": Call(c_begin, (params, f"&{sym}", zz)),
        "step": Call(c_step, (params, x, f"&{sym}", t, zz)),
        "end": Call(c_end, (params, f"&{sym}", z)) if last else None,
    }
