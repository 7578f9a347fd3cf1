"""The float keyword-spotting model: 1-layer LSTM encoder + linear head, and its checkpoint format.

ELaTTA splits the model as f = Cls ∘ Enc. Here Enc is the LSTM and the latent z is its final
hidden state h_T (D = hidden_size); Cls is one ``nn.Linear``. Only the head is re-run during
adaptation, so the split must be exactly at h_T: ``encode`` returns it and ``forward`` is
``head(encode(x))`` with nothing in between.

Checkpoint file (``torch.save``)::

    {"state_dict": {name: tensor}, "meta": "<json>"}

The metadata is a JSON *string* rather than nested Python objects so the file loads with
``torch.load(path, weights_only=True)`` and so non-Python tools (the compiler frontend, reports)
read one well-defined document. ``ModelMeta`` is its typed view.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from codegen.base.errors import CodegenError
from codegen.ir.meta import ModelMeta


class KwsLstm(nn.Module):
    """``lstm`` (1 layer, batch_first) over MFCC frames, then ``head`` on the final hidden state."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_classes: int,
        pool: str = "last",
        num_layers: int = 1,
        cell: str = "lstm",
        mlp: tuple[int, ...] = (),
    ) -> None:
        super().__init__()
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        # (the attribute keeps its name for a GRU: the state_dict keys are then lstm.* too)
        self.lstm = rnn(
            input_size=input_size, hidden_size=hidden_size, num_layers=num_layers, batch_first=True
        )
        # hidden Linear + ReLU layers before the head (mlp.0, mlp.2, ... in the state_dict)
        layers: list[nn.Module] = []
        width = hidden_size
        for d in mlp:
            layers += [nn.Linear(width, d), nn.ReLU()]
            width = d
        self.mlp = nn.Sequential(*layers)
        self.head = nn.Linear(width, num_classes)
        self.pool = pool

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, T, F] normalised features -> z [B, H], the head's input: the final hidden state
        h_T, or the mean or maximum of h_t over time (``pool``)."""
        out, state = self.lstm(x)
        h_n = state[0] if isinstance(state, tuple) else state  # LSTM (h, c); GRU h
        if self.pool == "mean":
            z = out.mean(dim=1)
        elif self.pool == "max":
            z = out.amax(dim=1)
        else:
            z = h_n[-1]
        return self.mlp(z)  # the latent: the head's input

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encode(x))


def expected_shapes(meta: ModelMeta) -> dict[str, tuple[int, ...]]:
    """State-dict names and shapes of ``KwsLstm`` for the sizes in ``meta`` (PyTorch gate order
    i, f, g, o stacked along dim 0)."""
    f, h, c = meta.input_size, meta.hidden_size, meta.num_classes
    return {
        "lstm.weight_ih_l0": (4 * h, f),
        "lstm.weight_hh_l0": (4 * h, h),
        "lstm.bias_ih_l0": (4 * h,),
        "lstm.bias_hh_l0": (4 * h,),
        "head.weight": (c, h),
        "head.bias": (c,),
    }


def save_checkpoint(path: str | os.PathLike[str], model: KwsLstm, meta: ModelMeta) -> None:
    """Write ``{"state_dict", "meta"}``; tensors are detached CPU float32 copies."""
    state = {k: v.detach().to("cpu", torch.float32).clone() for k, v in model.state_dict().items()}
    _validate_state(state, meta, str(path))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": state, "meta": meta.to_json()}, out)


def load_checkpoint(path: str | os.PathLike[str]) -> tuple[KwsLstm, ModelMeta]:
    """Load and validate a checkpoint; every rejection names the offending field."""
    src = str(path)
    if not Path(src).is_file():
        raise CodegenError(f"model checkpoint not found: {src}")
    try:
        obj = torch.load(src, map_location="cpu", weights_only=True)
    except Exception as exc:
        # weights_only refuses arbitrary pickles; surface that as a user error, not a traceback.
        raise CodegenError(
            f"{src}: cannot load as a weights-only torch checkpoint ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''})"
        ) from exc
    if not isinstance(obj, dict):
        raise CodegenError(
            f"{src}: checkpoint must be a dict with keys 'state_dict' and 'meta', "
            f"got {type(obj).__name__}"
        )
    for key in ("state_dict", "meta"):
        if key not in obj:
            raise CodegenError(f"{src}: checkpoint key {key!r} missing (need 'state_dict', 'meta')")
    if not isinstance(obj["meta"], str):
        raise CodegenError(f"{src}: checkpoint key 'meta' must be a JSON string")
    meta = ModelMeta.from_json(obj["meta"], source=src)
    state = obj["state_dict"]
    if not isinstance(state, dict):
        raise CodegenError(f"{src}: checkpoint key 'state_dict' must be a dict of tensors")
    _validate_state(state, meta, src)
    model = KwsLstm(meta.input_size, meta.hidden_size, meta.num_classes, meta.pool)
    model.load_state_dict({k: v.to(torch.float32) for k, v in state.items()})
    model.eval()
    return model, meta


def _validate_state(state: dict[str, Any], meta: ModelMeta, src: str) -> None:
    shapes = expected_shapes(meta)
    missing = [k for k in shapes if k not in state]
    if missing:
        raise CodegenError(f"{src}: state_dict is missing {', '.join(missing)}")
    extra = sorted(k for k in state if k not in shapes)
    if extra:
        # Typical cause: a 2-layer or bidirectional LSTM, which the compiler cannot lower.
        raise CodegenError(
            f"{src}: state_dict has unexpected entries {', '.join(extra)}; supported is a "
            f"1-layer unidirectional LSTM without projection ('lstm') and a Linear 'head'"
        )
    for name, shape in shapes.items():
        tensor = state[name]
        if not isinstance(tensor, torch.Tensor):
            raise CodegenError(f"{src}: state_dict[{name!r}] is not a tensor")
        if tuple(tensor.shape) != shape:
            raise CodegenError(
                f"{src}: state_dict[{name!r}] has shape {tuple(tensor.shape)}; expected {shape} "
                f"from meta (input_size={meta.input_size}, hidden_size={meta.hidden_size}, "
                f"num_classes={meta.num_classes})"
            )
        if not tensor.is_floating_point():
            raise CodegenError(f"{src}: state_dict[{name!r}] has dtype {tensor.dtype}; need float")
        bad = int((~torch.isfinite(tensor)).sum())
        if bad:
            raise CodegenError(f"{src}: state_dict[{name!r}] contains {bad} NaN/inf values")


@torch.no_grad()
def encode_numpy(model: KwsLstm, feats: np.ndarray, batch_size: int = 4096) -> np.ndarray:
    """Latents z = h_T for normalised features [N, T, F], as float64 [N, H] (batched, no grad)."""
    model.eval()
    out = []
    for start in range(0, len(feats), batch_size):
        # the model's own dtype, whatever the caller's features are (an input stage's float
        # twin may answer in float64)
        dtype = next(model.parameters()).dtype
        x = torch.from_numpy(np.ascontiguousarray(feats[start : start + batch_size])).to(dtype)
        out.append(model.encode(x).double().numpy())
    if not out:
        return np.zeros((0, model.lstm.hidden_size), dtype=np.float64)
    return np.concatenate(out, axis=0)


def head_numpy(model: KwsLstm) -> tuple[np.ndarray, np.ndarray]:
    """The classifier head as float64 (W [C, D], b [C]) for the numpy ELaTTA reference."""
    w = model.head.weight.detach().double().numpy().copy()
    b = model.head.bias.detach().double().numpy().copy()
    return w, b
