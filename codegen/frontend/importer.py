"""Bring your own PyTorch model: read it as it was saved, match it to the family the compiler
lowers, and keep the user's own forward pass to check the compiled model against.

Accepted files (``--model`` of `codegen basis`, `eval` and `build`):

* the project's checkpoint (``{"state_dict", "meta"}``, `codegen.frontend.model.save_checkpoint`);
* a ``torch.export`` program (``.pt2``, `torch.export.save`): loaded without running pickled
  code, run as it was exported;
* an ``nn.Module`` saved whole (``torch.save(module)``): unpickling runs code from the file, so
  it is loaded only with ``trust_pickle`` (``--trust-pickle``);
* a TorchScript archive (``torch.jit.save`` of a scripted or traced model): run by the
  TorchScript interpreter;
* a plain ``state_dict`` (weights only, e.g. ``torch.save(model.state_dict())``): nothing says
  how its forward pass pools, so the compiler's own reading (head of the last hidden state) is
  *assumed* and reported as such.

The family lowered today: an ``nn.LSTM`` or ``nn.GRU`` of 1 or 2 unidirectional layers (with or
without bias, ``batch_first`` either way) whose last layer's hidden state, taken at the last
step or pooled (mean, max) over time, feeds ``nn.Linear`` layers with ``nn.ReLU`` between them.
The ELaTTA latent is the input of the final Linear. Anything else is refused with the module that
does not fit and what is supported; a model that *looks* like the family but computes something
else (mean or max pooling over time, a different head input) is caught by `verify_against_user`,
which runs the user's own forward pass on the calibration clips.

A model file carries no feature settings or class names: they come from the data set (its MFCC
settings, with ``n_mfcc`` = the model's input size, and its class names), the normalisation from
the data set's clean training clips, and `ImportedModel.assumed` says which were taken so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from codegen.base.errors import CodegenError
from codegen.frontend.model import KwsLstm
from codegen.ir.meta import ModelMeta, file_sha256

SUPPORTED = (
    "an nn.LSTM or nn.GRU with 1 or 2 unidirectional layers (bias optional, batch_first either "
    "way) whose last layer's last-step hidden state, or mean or maximum over time, feeds "
    "nn.Linear layers with nn.ReLU between them (the ELaTTA latent is the last Linear's input)"
)
TWIN_TOLERANCE = 1e-4  # max |logit| difference between the user's model and the float twin
_PREFIXES = ("module.", "_orig_mod.")  # DataParallel / DistributedDataParallel, torch.compile

Forward = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True, eq=False)
class ImportedModel:
    """A user's model as the compiler reads it.

    ``twin``: the canonical `KwsLstm` with the user's weights (batch-first, last-step pooling):
    the float model every later stage lowers. ``forward``: the user's own forward pass on
    batch-first float32 features [N, T, F] (None when the file holds weights only).
    ``lstm_name``: the LSTM's module name in the user's model (for hooks and messages).
    """

    twin: KwsLstm
    meta: ModelMeta
    forward: Forward | None
    kind: str  # "checkpoint" | "torch.export" | "nn.Module" | "state_dict"
    assumed: tuple[str, ...]
    sha256: str
    path: str
    lstm_module: nn.Module | None = None


class ImportError_(CodegenError):
    """A model file the compiler cannot read or lower; the message names the part and the fix."""


def _strip_prefixes(state: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in state.items():
        name = str(k)
        for p in _PREFIXES:
            while name.startswith(p):
                name = name[len(p) :]
        out[name] = v
    return out


def _clean_message(exc: BaseException) -> str:
    """torch's first line without ANSI codes (its messages run on and colour their advice)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:300]


# ------------------------------------------------------------------------------- data settings


def meta_from_data(
    data_dir: str | os.PathLike[str],
    input_size: int,
    hidden_size: int,
    num_classes: int,
    cell: str = "lstm",
) -> tuple[ModelMeta, tuple[str, ...]]:
    """Feature settings, normalisation and class names for a model file that has none: from the
    data set ``data_dir`` (its MFCC settings with n_mfcc = the model's input size; mean and
    standard deviation of its clean training clips' features; its class names)."""
    from codegen.base.features import MfccParams, mfcc
    from codegen.data import dataset_info, load_split

    info = dataset_info(str(data_dir))
    classes = tuple(info.get("classes") or ())
    if len(classes) != num_classes:
        raise ImportError_(
            f"the model has {num_classes} outputs but --data {data_dir} has {len(classes)} "
            f"classes {list(classes)}: pass the data set the model was trained on"
        )
    params = MfccParams(n_mfcc=input_size)
    train = load_split(str(data_dir), "train")
    rng = np.random.default_rng([0, 0x1A7E])
    pick = np.sort(rng.choice(len(train), size=min(1024, len(train)), replace=False))
    feats = np.asarray(mfcc(train.pcm[pick], params), dtype=np.float64)
    flat = feats.reshape(-1, feats.shape[-1])
    mean, std = flat.mean(axis=0), flat.std(axis=0) + 1e-6
    meta = ModelMeta(
        input_size=input_size,
        hidden_size=hidden_size,
        num_classes=num_classes,
        num_frames=int(feats.shape[1]),
        classes=classes,
        features=params.to_dict(),
        norm_mean=tuple(float(v) for v in mean),
        norm_std=tuple(float(v) for v in std),
        seed=0,
        train={"source": f"assumed from the data set {data_dir}"},
        cell=cell,
    )
    assumed = (
        f"feature settings: {data_dir}'s MFCC settings with n_mfcc = {input_size}",
        f"normalisation: mean and std of {len(pick)} clean training clips of {data_dir}",
        f"class names: {data_dir}'s ({', '.join(classes)})",
    )
    return meta, assumed


# ------------------------------------------------------------------------------- the family


def _check_lstm(lstm: nn.Module, where: str) -> None:
    if not isinstance(lstm, nn.LSTM | nn.GRU):
        kind = type(lstm).__name__
        raise ImportError_(f"{where}: encoder is {kind}; supported: {SUPPORTED}")
    problems = []
    if lstm.num_layers not in (1, 2):
        problems.append(f"num_layers={lstm.num_layers} (supported: 1 or 2)")
    if lstm.bidirectional:
        problems.append("bidirectional=True (supported: False)")
    if getattr(lstm, "proj_size", 0):
        problems.append(f"proj_size={lstm.proj_size} (supported: 0)")
    if problems:
        kind = type(lstm).__name__
        raise ImportError_(f"{where}: nn.{kind} with {', '.join(problems)}; supported: {SUPPORTED}")


def _twin_from_lstm(
    lstm: nn.LSTM | nn.GRU, head_layers: nn.Linear | list[nn.Linear], where: str
) -> KwsLstm:
    """The canonical twin of an encoder and its head (the final Linear, after hidden Linear +
    ReLU layers if there are several)."""
    _check_lstm(lstm, where)
    linears = head_layers if isinstance(head_layers, list) else [head_layers]
    head, hidden = linears[-1], linears[:-1]
    width = lstm.hidden_size
    for d in hidden:
        if d.in_features != width:
            raise ImportError_(
                f"{where}: a head layer reads {d.in_features} features after {width}; supported: "
                f"{SUPPORTED}"
            )
        width = d.out_features
    if head.in_features != width:
        raise ImportError_(
            f"{where}: the final nn.Linear reads {head.in_features} features but the LSTM's "
            f"hidden size is {lstm.hidden_size}; supported: {SUPPORTED}"
        )
    L = int(lstm.num_layers)
    cell = "gru" if isinstance(lstm, nn.GRU) else "lstm"
    dims = tuple(d.out_features for d in hidden)
    twin = KwsLstm(
        lstm.input_size, lstm.hidden_size, head.out_features, num_layers=L, cell=cell, mlp=dims
    )
    zeros = torch.zeros((3 if cell == "gru" else 4) * lstm.hidden_size)
    with torch.no_grad():
        for layer in range(L):
            for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                name = f"{kind}_l{layer}"
                have = getattr(lstm, name) if (lstm.bias or kind.startswith("weight")) else zeros
                getattr(twin.lstm, name).copy_(have.detach().float())
        for j, d in enumerate(hidden):
            dst = twin.mlp[2 * j]
            assert isinstance(dst, nn.Linear)
            dst.weight.copy_(d.weight.detach().float())
            bias = d.bias.detach().float() if d.bias is not None else torch.zeros(d.out_features)
            dst.bias.copy_(bias)
        twin.head.weight.copy_(head.weight.detach().float())
        bias = head.bias
        twin.head.bias.copy_(
            bias.detach().float() if bias is not None else torch.zeros(head.out_features)
        )
    twin.eval()
    return twin


def match_module(module: nn.Module, where: str) -> tuple[KwsLstm, nn.LSTM | nn.GRU]:
    """The family in an ``nn.Module``: exactly one recurrent layer and, after it in registration
    order, exactly one nn.Linear (the head) and nothing with weights besides."""
    mods = [(n, m) for n, m in module.named_modules() if n and not list(m.children())]
    rec = [(n, m) for n, m in mods if isinstance(m, nn.RNNBase)]
    if len(rec) != 1:
        found = ", ".join(f"{n} ({type(m).__name__})" for n, m in rec) or "none"
        raise ImportError_(
            f"{where}: found {len(rec)} recurrent layers ({found}); supported: {SUPPORTED}"
        )
    rname, rmod = rec[0]
    if not isinstance(rmod, nn.LSTM | nn.GRU):
        raise ImportError_(
            f"{where}: encoder {rname!r} is nn.{type(rmod).__name__}; supported: {SUPPORTED}"
        )
    _check_lstm(rmod, f"{where}: encoder {rname!r}")
    after = [(n, m) for n, m in mods[mods.index(rec[0]) + 1 :]]
    weighted = [(n, m) for n, m in after if any(True for _ in m.parameters(recurse=False))]
    linears = [(n, m) for n, m in weighted if isinstance(m, nn.Linear)]
    before = [n for n, m in mods[: mods.index(rec[0])] if any(m.parameters(recurse=False))]
    if before:
        raise ImportError_(
            f"{where}: layers with weights before the encoder ({', '.join(before)}); "
            f"supported: {SUPPORTED}"
        )
    if not linears or len(weighted) != len(linears):
        names = ", ".join(f"{n} ({type(m).__name__})" for n, m in weighted) or "none"
        raise ImportError_(
            f"{where}: after the encoder {rname!r} the layers with weights are {names}; the "
            f"head must be nn.Linear layers (ReLU between them); supported: {SUPPORTED}"
        )
    acts = [n for n, m in after if not isinstance(m, nn.Linear | nn.ReLU | nn.Dropout)]
    if acts:
        raise ImportError_(
            f"{where}: after the encoder: {', '.join(acts)}; between the head's nn.Linear "
            f"layers only nn.ReLU (and nn.Dropout) are supported; supported: {SUPPORTED}"
        )
    return _twin_from_lstm(rmod, [m for _, m in linears], where), rmod


def _state_shapes(state: dict[str, Any], where: str) -> tuple[int, int, int, bool]:
    """(F, H, C, has_bias) of a canonical ``lstm.* / head.*`` state dict, refusing others."""
    keys = set(state)
    enc = {k.split(".", 1)[0] for k in keys if re.search(r"\.weight_ih_l\d", k)}
    if enc != {"lstm"}:
        raise ImportError_(
            f"{where}: state_dict has no 'lstm.weight_ih_l0' (recurrent layers found: "
            f"{sorted(enc) or 'none'}); name the LSTM 'lstm' and the final Linear 'head', or save "
            f"the whole module (torch.save(model)) or a torch.export program; supported: "
            f"{SUPPORTED}"
        )
    extra_layers = sorted(
        k for k in keys if re.match(r"lstm\.\w+_l([2-9]|1\d)", k) or "_reverse" in k
    )
    if extra_layers:
        raise ImportError_(f"{where}: {', '.join(extra_layers)}: supported: {SUPPORTED}")
    if "head.weight" not in state:
        heads = sorted(k for k in keys if not k.startswith("lstm."))
        raise ImportError_(
            f"{where}: no 'head.weight' (other entries: {', '.join(heads) or 'none'}); "
            f"supported: {SUPPORTED}"
        )
    others = sorted(k for k in keys if not k.startswith(("lstm.", "head.", "mlp.")))
    if others:
        raise ImportError_(
            f"{where}: entries besides lstm.*, mlp.* and head.*: {', '.join(others)}; "
            f"supported: {SUPPORTED}"
        )
    rows, F = (int(s) for s in state["lstm.weight_ih_l0"].shape)
    H = int(state["lstm.weight_hh_l0"].shape[1])
    if rows not in (3 * H, 4 * H):
        raise ImportError_(
            f"{where}: lstm.weight_ih_l0 has {rows} rows for hidden size {H}: neither an LSTM "
            f"(4H) nor a GRU (3H); supported: {SUPPORTED}"
        )
    C = int(state["head.weight"].shape[0])
    return F, H, C, "lstm.bias_ih_l0" in state


def _twin_from_state(state: dict[str, Any], where: str) -> KwsLstm:
    F, H, C, has_bias = _state_shapes(state, where)
    layers = 2 if "lstm.weight_ih_l1" in state else 1
    gru = int(state["lstm.weight_ih_l0"].shape[0]) == 3 * H
    rnn = nn.GRU if gru else nn.LSTM
    lstm = rnn(F, H, num_layers=layers, batch_first=True, bias=has_bias)
    hidden = []
    i = 0
    while f"mlp.{i}.weight" in state:  # hidden Linear layers of an MLP head (ReLU assumed)
        w = state[f"mlp.{i}.weight"]
        d = nn.Linear(int(w.shape[1]), int(w.shape[0]), bias=f"mlp.{i}.bias" in state)
        d.load_state_dict({k: state[f"mlp.{i}.{k}"].float() for k in d.state_dict()})
        hidden.append(d)
        i += 2
    head = nn.Linear(int(state["head.weight"].shape[1]), C, bias="head.bias" in state)
    sub = {k[5:]: v for k, v in state.items() if k.startswith("lstm.")}
    try:
        lstm.load_state_dict({k: v.float() for k, v in sub.items()})
        head.load_state_dict({k[5:]: v.float() for k, v in state.items() if k.startswith("head.")})
    except RuntimeError as exc:
        raise ImportError_(f"{where}: {_clean_message(exc)}") from exc
    return _twin_from_lstm(lstm, [*hidden, head], where)


# ------------------------------------------------------------------------------- loading


def load_model(
    path: str | os.PathLike[str],
    *,
    data_dir: str | os.PathLike[str] | None = None,
    trust_pickle: bool = False,
) -> ImportedModel:
    """Read ``path`` in any accepted form (module docstring). ``data_dir`` supplies the feature
    settings, normalisation and class names a file without them needs."""
    src = str(path)
    p = Path(src)
    if not p.is_file():
        raise ImportError_(f"model file not found: {src}")
    if p.suffix == ".pt2":
        return _load_exported(p, data_dir)
    if _is_torchscript(p):
        return _load_torchscript(p, data_dir)
    try:
        obj = torch.load(src, map_location="cpu", weights_only=True)
    except Exception as exc:
        return _load_pickled(p, data_dir, trust_pickle, exc)
    if isinstance(obj, dict) and "state_dict" in obj and "meta" in obj:
        from codegen.frontend.model import load_checkpoint

        twin, meta = load_checkpoint(src)
        return ImportedModel(twin, meta, twin, "checkpoint", (), file_sha256(src), src, twin.lstm)
    if isinstance(obj, dict) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
        state = _strip_prefixes(obj)
        if "lstm.weight_ih_l0" not in state:  # other names (gru.*, rnn.*, classifier.*)
            state = _canonical(state, src)
        twin = _twin_from_state(state, src)
        meta, assumed = _need_meta(twin, data_dir, src)
        note = "forward pass: not in the file (weights only); assumed head(last-step h_T)"
        return ImportedModel(
            twin, meta, None, "state_dict", (*assumed, note), file_sha256(src), src, None
        )
    raise ImportError_(
        f"{src}: holds a {type(obj).__name__}; accepted: the project checkpoint, a state_dict, "
        "an nn.Module saved whole (with --trust-pickle) or a torch.export program (.pt2)"
    )


def _is_torchscript(p: Path) -> bool:
    """A TorchScript archive: a zip whose entries include <name>/constants.pkl and code/."""
    import zipfile

    if not zipfile.is_zipfile(p):
        return False
    with zipfile.ZipFile(p) as z:
        names = z.namelist()
    return any(n.endswith("/constants.pkl") for n in names) and any("/code/" in n for n in names)


def _need_meta(
    twin: KwsLstm, data_dir: str | os.PathLike[str] | None, src: str
) -> tuple[ModelMeta, tuple[str, ...]]:
    if data_dir is None:
        raise ImportError_(
            f"{src}: the file has no feature settings or class names: pass --data DIR (a "
            "`codegen data` directory) to take them from the data set"
        )
    L = twin.lstm
    cell = "gru" if isinstance(L, nn.GRU) else "lstm"
    return meta_from_data(data_dir, L.input_size, L.hidden_size, twin.head.out_features, cell)


def _load_pickled(
    p: Path, data_dir: str | os.PathLike[str] | None, trust: bool, exc: BaseException
) -> ImportedModel:
    src = str(p)
    if not trust:
        raise ImportError_(
            f"{src}: not a weights-only file ({_clean_message(exc)}). If it is an nn.Module "
            "saved whole, loading it runs code stored in the file: pass --trust-pickle if you "
            "trust its origin, or save model.state_dict() or a torch.export program (.pt2)"
        ) from exc
    try:
        obj = torch.load(src, map_location="cpu", weights_only=False)
    except Exception as exc2:
        raise ImportError_(f"{src}: cannot be loaded ({_clean_message(exc2)})") from exc2
    if isinstance(obj, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
        obj = obj.module
    if not isinstance(obj, nn.Module):
        raise ImportError_(
            f"{src}: unpickled a {type(obj).__name__}, not an nn.Module; accepted: "
            "the project checkpoint, a state_dict, an nn.Module, a torch.export program"
        )
    module = obj.float().eval()
    twin, lstm = match_module(module, src)
    meta, assumed = _need_meta(twin, data_dir, src)
    forward = _module_forward(module, lstm.batch_first)
    return ImportedModel(twin, meta, forward, "nn.Module", assumed, file_sha256(src), src, lstm)


def _module_forward(module: nn.Module, batch_first: bool) -> Forward:
    def run(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            out = module(x if batch_first else x.transpose(0, 1))
        if isinstance(out, tuple):
            out = out[0]
        return torch.as_tensor(out)

    return run


def _load_exported(p: Path, data_dir: str | os.PathLike[str] | None) -> ImportedModel:
    src = str(p)
    try:
        ep = torch.export.load(src)
    except Exception as exc:
        raise ImportError_(f"{src}: not a torch.export program ({_clean_message(exc)})") from exc
    canon = _canonical(_strip_prefixes({k: v for k, v in ep.state_dict.items()}), src)
    twin = _twin_from_state(canon, src)
    meta, assumed = _need_meta(twin, data_dir, src)
    module = ep.module()
    T, F = meta.num_frames, meta.input_size
    batch_first, batch = True, None
    user_inputs = set(ep.graph_signature.user_inputs)
    for node in ep.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            shape = tuple(getattr(node.meta.get("val"), "shape", ()))
            if len(shape) == 3 and shape[0] == T and shape[2] == F and shape[1] != T:
                batch_first = False
            b = shape[0 if batch_first else 1] if len(shape) == 3 else None
            batch = int(b) if isinstance(b, int) else None  # a static batch size, else dynamic
            break
    run = _chunked(module, batch_first, batch)
    return ImportedModel(twin, meta, run, "torch.export", assumed, file_sha256(src), src, None)


def _chunked(module: Callable[..., Any], batch_first: bool, batch: int | None) -> Forward:
    """A forward on batch-first [N, T, F]; a model traced or exported with a static batch size
    runs in chunks of it (the last one padded)."""

    def run(x: torch.Tensor) -> torch.Tensor:
        step = batch or len(x)
        outs = []
        for i in range(0, len(x), step):
            chunk = x[i : i + step]
            pad = step - len(chunk)
            if pad:
                chunk = torch.cat([chunk, chunk.new_zeros((pad, *chunk.shape[1:]))])
            with torch.no_grad():
                out = module(chunk if batch_first else chunk.transpose(0, 1))
            out = torch.as_tensor(out[0] if isinstance(out, tuple) else out)
            outs.append(out[: step - pad])
        return torch.cat(outs)

    return run


def _load_torchscript(p: Path, data_dir: str | os.PathLike[str] | None) -> ImportedModel:
    """A TorchScript archive (torch.jit.save of a scripted or traced model): its parameters by
    module path, and its own forward, run by the TorchScript interpreter."""
    src = str(p)
    try:
        sm = torch.jit.load(src, map_location="cpu")
    except Exception as exc:
        raise ImportError_(
            f"{src}: not a loadable TorchScript archive ({_clean_message(exc)})"
        ) from exc
    sm.eval()
    kinds = {getattr(m, "original_name", "") for _, m in sm.named_modules()}
    if "GRU" in kinds or "RNN" in kinds:
        raise ImportError_(
            f"{src}: a {'GRU' if 'GRU' in kinds else 'RNN'} encoder; supported: {SUPPORTED}"
        )
    canon = _canonical(_strip_prefixes(dict(sm.state_dict())), src)
    twin = _twin_from_state(canon, src)
    meta, assumed = _need_meta(twin, data_dir, src)
    T, F = meta.num_frames, meta.input_size
    layout: tuple[bool, int | None] | None = None
    for batch_first in (True, False):  # a traced model may only take the layout it was traced in
        for batch in (None, 1, 2, 4, 8, 16, 32):
            try:
                y = _chunked(sm, batch_first, batch)(torch.zeros(3, T, F))
            except Exception:
                continue
            if tuple(y.shape) == (3, meta.num_classes):
                layout = (batch_first, batch)
                break
        if layout:
            break
    if layout is None:
        raise ImportError_(
            f"{src}: the TorchScript model does not run on [N, {T}, {F}] or [{T}, N, {F}] "
            f"features with {meta.num_classes} outputs; supported: {SUPPORTED}"
        )
    run = _chunked(sm, *layout)
    return ImportedModel(twin, meta, run, "TorchScript", assumed, file_sha256(src), src, None)


def _canonical(state: dict[str, Any], src: str) -> dict[str, Any]:
    """``lstm.* / head.*`` names for parameters kept under their module paths (an exported or
    scripted model): the one recurrent weight set and the one 2-D weight beside it."""
    lstm_keys = [k for k in state if re.search(r"(^|\.)weight_ih_l0$", k)]
    if len(lstm_keys) != 1:
        raise ImportError_(
            f"{src}: found {len(lstm_keys)} recurrent weight sets; supported: {SUPPORTED}"
        )
    prefix = lstm_keys[0][: -len("weight_ih_l0")]
    linear_w = [k for k in state if k.endswith(".weight") and state[k].dim() == 2]
    linear_w = [k for k in linear_w if not k.startswith(prefix)]
    # the head's Linear layers, chained by their shapes from the encoder's hidden size
    width = int(state[prefix + "weight_hh_l0"].shape[1])
    chain: list[str] = []
    left = set(linear_w)
    while left:
        nxt = [k for k in left if int(state[k].shape[1]) == width]
        if len(nxt) != 1:
            break
        chain.append(nxt[0])
        left.discard(nxt[0])
        width = int(state[nxt[0]].shape[0])
    if not chain or left:
        raise ImportError_(
            f"{src}: the layers with weights besides the encoder "
            f"({', '.join(k[: -len('.weight')] for k in linear_w) or 'none'}) do not chain as "
            f"Linear layers from its hidden size; supported: {SUPPORTED}"
        )
    canon = {"lstm." + k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
    names = [f"mlp.{2 * i}." for i in range(len(chain) - 1)] + ["head."]
    for key, name in zip(chain, names, strict=True):
        base = key[: -len("weight")]
        canon |= {name + k[len(base) :]: v for k, v in state.items() if k.startswith(base)}
    return canon


# ------------------------------------------------------------------------------- verification


def resolve_pooling(m: ImportedModel, feats: np.ndarray) -> ImportedModel:
    """Which pooling the user's model applies to the LSTM outputs, told by running it: the twin
    with the last step, the mean or the maximum over time, whichever reproduces the user's
    logits on (a part of) the calibration clips. Without a forward pass: unchanged (assumed)."""
    import dataclasses

    x = np.asarray(feats, dtype=np.float32)[:64]
    user = run_user(m, x)
    if user is None:
        return m
    for pool in ("last", "mean", "max"):
        twin = KwsLstm(
            m.twin.lstm.input_size,
            m.twin.lstm.hidden_size,
            m.meta.num_classes,
            pool,
            num_layers=m.twin.lstm.num_layers,
            cell=m.meta.cell,
            mlp=tuple(d.out_features for d in m.twin.mlp if isinstance(d, nn.Linear)),
        )
        twin.load_state_dict(m.twin.state_dict())
        twin.eval()
        with torch.no_grad():
            y = twin(torch.from_numpy(x)).double().numpy()
        if np.max(np.abs(user - y)) <= TWIN_TOLERANCE * max(1.0, float(np.max(np.abs(user)))):
            if pool == m.twin.pool:
                return m
            return dataclasses.replace(m, twin=twin, meta=dataclasses.replace(m.meta, pool=pool))
    return m  # verify_against_user names the part that differs


@dataclass(frozen=True, eq=False)
class UserCheck:
    """The float twin against the user's own forward pass on the calibration clips."""

    samples: int
    max_abs_logit_error: float
    same_class: float
    checked: bool  # False: the file had no forward pass (state_dict), nothing to run
    logits: np.ndarray | None = None  # the user's logits on the clips (None: not run)


def run_user(m: ImportedModel, feats: np.ndarray, batch: int = 256) -> np.ndarray | None:
    """The user's logits on normalised features [N, T, F] (None without a forward pass)."""
    if m.forward is None:
        return None
    out = []
    x = np.asarray(feats, dtype=np.float32)
    for i in range(0, len(x), batch):
        try:
            y = m.forward(torch.from_numpy(x[i : i + batch]))
        except Exception as exc:
            raise ImportError_(
                f"{m.path}: the model's forward pass failed on [N, T, F] = "
                f"{list(x[i : i + batch].shape)} features ({_clean_message(exc)})"
            ) from exc
        out.append(np.asarray(y.detach().double().numpy()))
    logits = np.concatenate(out)
    if logits.shape != (len(x), m.meta.num_classes):
        raise ImportError_(
            f"{m.path}: the forward pass returns {list(logits.shape)}; expected [N, "
            f"{m.meta.num_classes}] logits; supported: {SUPPORTED}"
        )
    return logits


def verify_against_user(m: ImportedModel, feats: np.ndarray) -> UserCheck:
    """Run the user's model and the float twin (the head of the pooled LSTM outputs) on
    ``feats``; a difference above `TWIN_TOLERANCE` means the model computes something the
    compiler does not lower: refuse, naming the first part that differs."""
    from codegen.frontend.model import encode_numpy, head_numpy

    x = np.asarray(feats, dtype=np.float32)
    user = run_user(m, x)
    z = encode_numpy(m.twin, x)
    W, b = head_numpy(m.twin)
    twin = z.astype(np.float64) @ W.T.astype(np.float64) + b.astype(np.float64)
    if user is None:
        return UserCheck(len(x), float("nan"), float("nan"), False)
    err = float(np.max(np.abs(user - twin))) if len(x) else 0.0
    if not err <= TWIN_TOLERANCE * max(1.0, float(np.max(np.abs(user)))):
        raise ImportError_(
            f"{m.path}: the compiled model would not compute your model: its logits differ from "
            f"head(pooled h_t) for every supported pooling (last step, mean, max) by up to "
            f"{err:.3g} on {len(x)} calibration clips; "
            f"{_first_difference(m, x, z)}; supported: {SUPPORTED}"
        )
    same = float(np.mean(np.argmax(user, axis=1) == np.argmax(twin, axis=1)))
    return UserCheck(len(x), err, same, True, user)


def _first_difference(m: ImportedModel, x: np.ndarray, z: np.ndarray) -> str:
    """Where the user's model leaves the family: the LSTM's last-step state itself, or what is
    done with the LSTM outputs (pooling over time, a different head input)."""
    if m.lstm_module is None or m.forward is None:
        return "the difference lies after the parameters the compiler reads (pooling or head)"
    seen: list[torch.Tensor] = []

    def hook(_mod: nn.Module, _inp: Any, out: Any) -> None:
        if isinstance(out, tuple):
            state = out[1]  # LSTM: (h_n, c_n); GRU: h_n
            seen.append((state[0] if isinstance(state, tuple) else state)[-1].detach())

    handle = m.lstm_module.register_forward_hook(hook)
    try:
        m.forward(torch.from_numpy(x[:64]))
    finally:
        handle.remove()
    if not seen:
        return "the model's forward pass does not call its LSTM"
    h_user = seen[0].double().numpy()
    if h_user.shape != z[:64].shape or np.max(np.abs(h_user - z[:64])) > TWIN_TOLERANCE:
        return "the first part that differs is the encoder (the LSTM's last hidden state)"
    return (
        "the LSTM's last hidden state matches, so the head reads something else than the last "
        "step, the mean or the maximum over time: the first part that differs is the pooling"
    )
