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
* a plain ``state_dict`` (weights only, e.g. ``torch.save(model.state_dict())``): nothing in it
  says how its forward pass pools or what lies between its head's Linear layers, so the user
  states them (``--pooling``, ``--head-activation``; `codegen.frontend.cliargs.Declared`).

The family lowered today: an ``nn.LSTM`` or ``nn.GRU`` of 1 or 2 unidirectional layers (with or
without bias, ``batch_first`` either way) whose last layer's hidden state, taken at the last
step or pooled (mean, max) over time, feeds ``nn.Linear`` layers with ``nn.ReLU`` between them.
The ELaTTA latent is the input of the final Linear. Anything else is refused with the module that
does not fit and what is supported, for every form: from the modules of a whole module, the
graph of a torch.export program (its ``nn_module_stack``), the modules of a TorchScript archive
and the parameter names and shapes of a state_dict. The head's Linear layers are chained in the
order the forward pass calls them (torch.export) or were registered (state_dict order). A model
that *looks* like the family but computes something else is caught by `verify_against_user`,
which runs the user's own forward pass on the calibration clips.

Only the `codegen train` checkpoint carries its feature settings and class names. For any other
file the MFCC settings it was trained on are declared (``--features`` or ``[features]``), never
guessed: features computed otherwise would compile another model than the user's. The class
names come from the data set (whose class count must be the model's), the normalisation from
its clean training clips; `ImportedModel.provenance` says where each setting came from.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from codegen.base.errors import CodegenError
from codegen.base.files import file_sha256
from codegen.frontend.cliargs import Declared
from codegen.frontend.model import KwsLstm
from codegen.ir.meta import ModelMeta

if TYPE_CHECKING:
    from codegen.base.features import MfccParams

SUPPORTED = (
    "an nn.LSTM or nn.GRU with 1 or 2 unidirectional layers (bias optional, batch_first either "
    "way) whose last layer's last-step hidden state, or mean or maximum over time, feeds "
    "nn.Linear layers with nn.ReLU between them (the ELaTTA latent is the last Linear's input)"
)
# The layer counts read from a model file: those whose whole path (import, firmware, QEMU run)
# the tests cover (tests/codegen/frontend/test_import.py). The compiler itself takes any depth from
# the IR (codegen.ir.nodes.Model.encoder; tests/codegen/ir/test_layers.py checks three layers on the
# host).
FILE_LAYERS = (1, 2)
_FILE_LAYERS_TEXT = " or ".join(str(n) for n in FILE_LAYERS)
TWIN_TOLERANCE = 1e-4  # max |logit| difference between the user's model and the float twin
_PREFIXES = ("module.", "_orig_mod.")  # DataParallel / DistributedDataParallel, torch.compile

Forward = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True, eq=False)
class ImportedModel:
    """A user's model as the compiler reads it.

    ``twin``: the canonical `KwsLstm` with the user's weights (batch-first, last-step pooling):
    the float model every later stage lowers. ``forward``: the user's own forward pass on
    batch-first float32 features [N, T, F] (None when the file holds weights only).
    ``lstm_module``: the recurrent module of the user's model (for hooks). ``provenance``: where
    each setting the file does not carry came from (declared, the data set). ``declared``: what
    the user stated (checked against what the forward pass shows).
    """

    twin: KwsLstm
    meta: ModelMeta
    forward: Forward | None
    kind: str  # "checkpoint" | "torch.export" | "nn.Module" | "state_dict" | "TorchScript"
    provenance: tuple[str, ...]
    sha256: str
    path: str
    lstm_module: nn.Module | None = None
    declared: Declared = Declared()


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


def _features_needed(kind: str, src: str) -> ImportError_:
    return ImportError_(
        f"{src}: a {kind} carries no feature settings (the MFCC settings the model was trained "
        "on): pass --features KEY=VALUE,... (e.g. --features n_mfcc=40,win_ms=25,hop_ms=10; "
        "keys: the fields of codegen.base.features.MfccParams, plus frames to check) or a "
        "[features] table in the config; a `codegen train` checkpoint carries them"
    )


def check_data(meta: ModelMeta, data_dir: str | os.PathLike[str], src: str) -> None:
    """The data set must be the model's: the same class names in the same order and clips of
    the sample rate and length its features are computed from. Calibration, the agreement and
    every report would otherwise be computed on other data than the model's."""
    from codegen.data import dataset_info

    info = dataset_info(str(data_dir))
    classes = tuple(info.get("classes") or ())
    if classes != tuple(meta.classes):
        raise ImportError_(
            f"--data {data_dir} has classes {list(classes)}, the model {src} predicts "
            f"{list(meta.classes)}: pass the data set the model was trained on"
        )
    for key in ("sample_rate", "clip_samples"):
        have, want = info.get(key), meta.features.get(key)
        if have is not None and want is not None and int(have) != int(want):
            raise ImportError_(
                f"--data {data_dir} has {key} = {have}, the model {src} was trained on features "
                f"of {key} = {want}: pass the data set the model was trained on"
            )


def meta_from_data(
    data_dir: str | os.PathLike[str],
    input_size: int,
    hidden_size: int,
    num_classes: int,
    cell: str = "lstm",
    *,
    features: MfccParams,
    features_from: str = "--features",
    pool: str = "last",
) -> tuple[ModelMeta, tuple[str, ...]]:
    """Metadata for a model file that has none: the declared feature settings ``features``
    (their n_mfcc must be the model's input size), the normalisation (mean and standard
    deviation of the data set's clean training clips' features), the data set's class names."""
    from codegen.base.features import mfcc
    from codegen.data import dataset_info, load_split

    info = dataset_info(str(data_dir))
    classes = tuple(info.get("classes") or ())
    if len(classes) != num_classes:
        raise ImportError_(
            f"the model has {num_classes} outputs but --data {data_dir} has {len(classes)} "
            f"classes {list(classes)}: pass the data set the model was trained on"
        )
    if features.n_mfcc != input_size:
        raise ImportError_(
            f"{features_from}: n_mfcc = {features.n_mfcc} but the model reads {input_size} "
            f"features per frame: state n_mfcc = {input_size} and the other settings it was "
            "trained on"
        )
    params = features
    train = load_split(str(data_dir), "train")
    if train.pcm.shape[1] != params.clip_samples:
        raise ImportError_(
            f"--data {data_dir} has clips of {train.pcm.shape[1]} samples but {features_from} "
            f"states clip_samples = {params.clip_samples}: pass the data set the model was "
            "trained on"
        )
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
        train={"source": f"features from {features_from}, statistics from {data_dir}"},
        pool=pool,
        cell=cell,
    )
    p = params
    provenance = (
        f"feature settings ({features_from}): n_mfcc {p.n_mfcc}, window {p.win_ms:g} ms, hop "
        f"{p.hop_ms:g} ms, {p.n_frames} frames, {p.n_mels} mels {p.fmin:g}-{p.fmax:g} Hz, "
        f"{p.sample_rate} Hz",
        f"normalisation: mean and std of {len(pick)} clean training clips of {data_dir}",
        f"class names: {data_dir}'s ({', '.join(classes)})",
    )
    return meta, provenance


# ------------------------------------------------------------------------------- the family


def _check_lstm(lstm: nn.Module, where: str) -> None:
    if not isinstance(lstm, nn.LSTM | nn.GRU):
        kind = type(lstm).__name__
        raise ImportError_(f"{where}: encoder is {kind}; supported: {SUPPORTED}")
    problems = []
    if lstm.num_layers not in FILE_LAYERS:
        problems.append(f"num_layers={lstm.num_layers} (supported: {_FILE_LAYERS_TEXT})")
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


# ------------------------------------------------------------------------------- structure

_ENC_KEY = re.compile(r"(^|\.)weight_ih_l0$")
# modules allowed after the encoder (docs/model.md "Bring your own model"); the root module and
# containers hold no computation of their own
_HEAD_MODULES = ("Linear", "ReLU", "Dropout", "Sequential", "ModuleList", "Identity")
# functional calls in a forward pass that change what the head computes: named when seen
_FUNCTIONAL = {
    "tanh": "torch.tanh",
    "sigmoid": "torch.sigmoid",
    "gelu": "F.gelu",
    "silu": "F.silu",
    "elu": "F.elu",
    "leaky_relu": "F.leaky_relu",
    "hardtanh": "F.hardtanh",
    "softplus": "F.softplus",
    "layer_norm": "F.layer_norm",
    "batch_norm": "F.batch_norm",
    "group_norm": "F.group_norm",
    "instance_norm": "F.instance_norm",
    "softmax": "softmax",
    "_softmax": "softmax",
    "log_softmax": "log_softmax",
    "_log_softmax": "log_softmax",
}
_RNN_OPS = ("lstm", "gru", "rnn_tanh", "rnn_relu")


@dataclass(frozen=True)
class _Encoder:
    """A recurrent weight set found in a state dict: its module name and shape."""

    prefix: str  # "rnn." ("" for a bare nn.LSTM saved on its own)
    cell: str  # "lstm" | "gru"
    input_size: int
    hidden_size: int
    layers: int
    bias: bool


def _encoder(state: dict[str, Any], src: str, kind: str | None = None) -> _Encoder:
    """The one recurrent layer of a state dict, refusing by name what is not lowered: nn.RNN,
    bidirectional, proj_size, more than 2 layers (PyTorch names: weight_ih_l<k>[_reverse],
    weight_hr_l<k> for the projection; docs of torch.nn.LSTM)."""
    found = [k for k in state if _ENC_KEY.search(k)]
    if len(found) != 1:
        names = ", ".join(k[: -len("weight_ih_l0")].rstrip(".") or "(root)" for k in found)
        raise ImportError_(
            f"{src}: found {len(found)} recurrent layers ({names or 'none'}; a recurrent layer's "
            f"weights are named <module>.weight_ih_l0); supported: {SUPPORTED}"
        )
    prefix = found[0][: -len("weight_ih_l0")]
    name = prefix.rstrip(".") or "(root)"
    enc = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
    proj = sorted(k for k in enc if k.startswith("weight_hr_l"))
    H = int(enc[proj[0]].shape[1]) if proj else int(enc["weight_hh_l0"].shape[1])
    rows = int(enc["weight_ih_l0"].shape[0])
    cell = {4 * H: "lstm", 3 * H: "gru", H: "rnn"}.get(rows)
    if kind in ("RNN", "rnn_tanh", "rnn_relu"):
        cell = "rnn"
    layers = 1 + max(
        int(m.group(1)) for k in enc if (m := re.fullmatch(r"weight_ih_l(\d+)(_reverse)?", k))
    )
    problems = []
    if any(k.endswith("_reverse") for k in enc):
        problems.append("bidirectional=True (supported: False)")
    if proj:
        problems.append(f"proj_size={int(enc[proj[0]].shape[0])} (supported: 0)")
    if layers not in FILE_LAYERS:
        problems.append(f"num_layers={layers} (supported: {_FILE_LAYERS_TEXT})")
    if cell == "rnn":
        raise ImportError_(
            f"{src}: encoder {name!r} is an nn.RNN (weight_ih_l0 has {rows} rows for hidden size "
            f"{H}: an Elman RNN; an LSTM has 4H, a GRU 3H)"
            + (f", with {', '.join(problems)}" if problems else "")
            + f"; supported: {SUPPORTED}"
        )
    if cell is None:
        raise ImportError_(
            f"{src}: encoder {name!r}: weight_ih_l0 has {rows} rows for hidden size {H}; an "
            f"nn.LSTM has 4H, an nn.GRU 3H; supported: {SUPPORTED}"
        )
    if problems:
        kind_name = "LSTM" if cell == "lstm" else "GRU"
        raise ImportError_(
            f"{src}: encoder {name!r} is an nn.{kind_name} with {', '.join(problems)}; "
            f"supported: {SUPPORTED}"
        )
    F = int(enc["weight_ih_l0"].shape[1])
    return _Encoder(prefix, cell, F, H, layers, "bias_ih_l0" in enc)


def _describe(keys: dict[str, tuple[int, ...]]) -> str:
    """What kind of layer a module's parameter names and shapes suggest (for refusals)."""
    if "running_mean" in keys:
        return "a batch normalisation (nn.BatchNorm)"
    w = keys.get("weight")
    if w is not None and len(w) == 1:
        return "a normalisation layer (nn.LayerNorm or similar: a 1-D weight)"
    if w is not None and len(w) >= 3:
        return f"a convolution ({len(w)}-D weight)"
    return "a layer with weights that is not an nn.Linear"


def _chains(state: dict[str, Any], mods: list[str], width: int) -> bool:
    for m in mods:
        w = state[m + "weight"]
        if int(w.shape[1]) != width:
            return False
        width = int(w.shape[0])
    return True


def _head_chain(
    state: dict[str, Any], enc: _Encoder, src: str, order: list[str] | None = None
) -> list[str]:
    """The head's Linear modules (name prefixes ending in "."), first to last: in the order the
    forward pass calls them (``order``, from a torch.export graph) or, for weights alone, in
    the state dict's order (PyTorch's state_dict lists parameters in module registration
    order); by unique shapes only when neither chains. Everything else with weights besides the
    encoder is refused by name."""
    groups: dict[str, dict[str, tuple[int, ...]]] = {}
    for k, v in state.items():
        if k.startswith(enc.prefix) and enc.prefix:
            continue
        if not enc.prefix and re.match(r"(weight|bias)_(ih|hh|hr)_l\d", k):
            continue
        mod, _, leaf = k.rpartition(".")
        groups.setdefault(mod + "." if mod else "", {})[leaf] = tuple(v.shape)
    others = {
        m: keys
        for m, keys in groups.items()
        if not (set(keys) <= {"weight", "bias"} and len(keys.get("weight", ())) == 2)
    }
    if others:
        names = "; ".join(f"{m.rstrip('.') or '(root)'}: {_describe(k)}" for m, k in others.items())
        raise ImportError_(
            f"{src}: besides the encoder {enc.prefix.rstrip('.') or '(root)'!r}: {names}; only "
            f"nn.Linear layers (nn.ReLU between them) may follow the encoder; supported: "
            f"{SUPPORTED}"
        )
    linears = list(groups)
    if not linears:
        raise ImportError_(
            f"{src}: no nn.Linear head after the encoder {enc.prefix.rstrip('.')!r}; supported: "
            f"{SUPPORTED}"
        )
    candidates = [order] if order else []
    candidates.append(linears)
    for chain in candidates:
        if chain and sorted(chain) == sorted(linears) and _chains(state, chain, enc.hidden_size):
            return chain
    chain, width, left = [], enc.hidden_size, set(linears)
    while left:
        nxt = [m for m in left if int(state[m + "weight"].shape[1]) == width]
        if len(nxt) != 1:
            break
        chain.append(nxt[0])
        left.discard(nxt[0])
        width = int(state[nxt[0] + "weight"].shape[0])
    if not left:
        return chain
    shapes = ", ".join(
        f"{m.rstrip('.')} {tuple(int(s) for s in state[m + 'weight'].shape[::-1])}" for m in linears
    )
    raise ImportError_(
        f"{src}: the Linear layers besides the encoder ({shapes}, as (in, out)) do not chain "
        f"from its hidden size {enc.hidden_size} in registration order; supported: {SUPPORTED}"
    )


def _canonical(
    state: dict[str, Any], src: str, kind: str | None = None, order: list[str] | None = None
) -> dict[str, Any]:
    """``lstm.* / mlp.<2i>.* / head.*`` names (`KwsLstm`'s) for a state dict under the user's
    module names."""
    enc = _encoder(state, src, kind)
    chain = _head_chain(state, enc, src, order)
    if enc.prefix:
        n = len(enc.prefix)
        canon = {"lstm." + k[n:]: v for k, v in state.items() if k.startswith(enc.prefix)}
    else:
        canon = {"lstm." + k: v for k, v in state.items() if re.match(r"(weight|bias)_", k)}
    names = [f"mlp.{2 * i}." for i in range(len(chain) - 1)] + ["head."]
    for mod, name in zip(chain, names, strict=True):
        leaves = [leaf for leaf in ("weight", "bias") if mod + leaf in state]
        canon |= {name + leaf: state[mod + leaf] for leaf in leaves}
    return canon


def _twin_from_state(state: dict[str, Any], src: str, pool: str = "last") -> KwsLstm:
    """The twin of a canonical state dict (`_canonical`)."""
    H = int(state["lstm.weight_hh_l0"].shape[1])
    F = int(state["lstm.weight_ih_l0"].shape[1])
    layers = 2 if "lstm.weight_ih_l1" in state else 1
    gru = int(state["lstm.weight_ih_l0"].shape[0]) == 3 * H
    rnn = nn.GRU if gru else nn.LSTM
    lstm = rnn(F, H, num_layers=layers, batch_first=True, bias="lstm.bias_ih_l0" in state)
    hidden = []
    i = 0
    while f"mlp.{i}.weight" in state:
        w = state[f"mlp.{i}.weight"]
        d = nn.Linear(int(w.shape[1]), int(w.shape[0]), bias=f"mlp.{i}.bias" in state)
        d.load_state_dict({k: state[f"mlp.{i}.{k}"].float() for k in d.state_dict()})
        hidden.append(d)
        i += 2
    C = int(state["head.weight"].shape[0])
    head = nn.Linear(int(state["head.weight"].shape[1]), C, bias="head.bias" in state)
    sub = {k[5:]: v for k, v in state.items() if k.startswith("lstm.")}
    try:
        lstm.load_state_dict({k: v.float() for k, v in sub.items()})
        head.load_state_dict({k[5:]: v.float() for k, v in state.items() if k.startswith("head.")})
    except RuntimeError as exc:
        raise ImportError_(f"{src}: {_clean_message(exc)}") from exc
    twin = _twin_from_lstm(lstm, [*hidden, head], src)
    twin.pool = pool
    return twin


# ------------------------------------------------------------------------------- loading


def load_model(
    path: str | os.PathLike[str],
    *,
    data_dir: str | os.PathLike[str] | None = None,
    trust_pickle: bool = False,
    declared: Declared | None = None,
) -> ImportedModel:
    """Read ``path`` in any accepted form (module docstring). ``declared``: what the user states
    about the model (`codegen.frontend.cliargs.Declared`: feature settings, pooling, head
    activation, the code of a module saved whole); ``data_dir`` supplies the normalisation and
    class names a file without them needs and must match the model (`check_data`)."""
    d = declared or Declared()
    src = str(path)
    p = Path(src)
    if p.is_dir():
        raise ImportError_(
            f"--model {src} is a directory; pass the model file itself (a PyTorch .pt / .pth / "
            ".pt2 file, e.g. models/default/model.pt)"
        )
    if not p.is_file():
        raise ImportError_(f"model file not found: {src}")
    if p.stat().st_size == 0:
        raise ImportError_(f"{src}: the file is empty: truncated or not a PyTorch file")
    if p.suffix == ".pt2":
        m = _load_exported(p, data_dir, d)
    elif _is_torchscript(p):
        m = _load_torchscript(p, data_dir, d)
    else:
        m = _load_torch_file(p, data_dir, trust_pickle, d)
    if data_dir is not None:
        check_data(m.meta, data_dir, src)
    return m


def _load_torch_file(
    p: Path, data_dir: str | os.PathLike[str] | None, trust_pickle: bool, d: Declared
) -> ImportedModel:
    src = str(p)
    try:
        obj = torch.load(src, map_location="cpu", weights_only=True)
    except Exception as exc:
        return _load_pickled(p, data_dir, trust_pickle, exc, d)
    if isinstance(obj, dict) and "state_dict" in obj and "meta" in obj:
        return _load_checkpoint(src, d)
    if isinstance(obj, dict) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
        state = _canonical(_strip_prefixes(obj), src)
        if "mlp.0.weight" in state and d.head_activation is None:
            raise ImportError_(
                f"{src}: a state_dict does not show what lies between its head's Linear layers: "
                "pass --head-activation relu if it is nn.ReLU ([model] head_activation in the "
                "config; the only one supported), or save a torch.export program (.pt2), whose "
                "forward pass names it"
            )
        if d.pooling is None:
            raise ImportError_(
                f"{src}: a state_dict holds weights only, not how the forward pass pools the "
                "recurrent outputs over time: pass --pooling last|mean|max (the last step's "
                "hidden state, or the mean or maximum over time; [model] pooling in the config), "
                "or save a torch.export program (.pt2), whose forward pass the build runs"
            )
        twin = _twin_from_state(state, src, d.pooling)
        meta, notes = _need_meta(twin, data_dir, src, d, "state_dict")
        notes = (
            *notes,
            f"pooling: {d.pooling} ({d.where('pooling')}; the file holds no forward pass)",
        )
        if "mlp.0.weight" in state:
            notes = (*notes, f"head activation: nn.ReLU ({d.where('head_activation')})")
        return ImportedModel(twin, meta, None, "state_dict", notes, file_sha256(src), src, None, d)
    raise ImportError_(
        f"{src}: holds a {type(obj).__name__}; accepted: the project checkpoint, a state_dict, "
        "an nn.Module saved whole (with --trust-pickle) or a torch.export program (.pt2)"
    )


def _load_checkpoint(src: str, d: Declared) -> ImportedModel:
    """The `codegen train` checkpoint: its meta carries the feature settings and pooling; a
    declaration that differs from them is refused."""
    from codegen.base.features import MfccParams
    from codegen.frontend.model import load_checkpoint

    twin, meta = load_checkpoint(src)
    if d.features is not None and d.features != MfccParams.from_dict(meta.features):
        raise ImportError_(
            f"{src}: {d.where('features')} states feature settings {d.features.to_dict()}, the "
            f"checkpoint was trained on {meta.features}: drop the declaration (the checkpoint "
            "carries its settings)"
        )
    if d.pooling is not None and d.pooling != meta.pool:
        raise ImportError_(
            f"{src}: {d.where('pooling')} states pooling {d.pooling!r}, the checkpoint pools "
            f"{meta.pool!r}: drop the declaration (the checkpoint carries it)"
        )
    notes = ("feature settings, normalisation, class names, pooling: the checkpoint's meta",)
    return ImportedModel(twin, meta, twin, "checkpoint", notes, file_sha256(src), src, twin.lstm, d)


def _is_torchscript(p: Path) -> bool:
    """A TorchScript archive: a zip whose entries include <name>/constants.pkl and code/."""
    import zipfile

    if not zipfile.is_zipfile(p):
        return False
    with zipfile.ZipFile(p) as z:
        names = z.namelist()
    return any(n.endswith("/constants.pkl") for n in names) and any("/code/" in n for n in names)


def _need_meta(
    twin: KwsLstm, data_dir: str | os.PathLike[str] | None, src: str, d: Declared, kind: str
) -> tuple[ModelMeta, tuple[str, ...]]:
    if d.features is None:
        raise _features_needed(kind, src)
    if data_dir is None:
        raise ImportError_(
            f"{src}: the file has no normalisation or class names: pass --data DIR (a "
            "`codegen data` directory of the classes the model was trained on)"
        )
    L = twin.lstm
    cell = "gru" if isinstance(L, nn.GRU) else "lstm"
    return meta_from_data(
        data_dir,
        L.input_size,
        L.hidden_size,
        twin.head.out_features,
        cell,
        features=d.features,
        features_from=d.where("features"),
        pool=twin.pool,
    )


_GLOBAL = re.compile(r"GLOBAL ([\w.]+)\.(\w+)")


def _load_pickled(
    p: Path,
    data_dir: str | os.PathLike[str] | None,
    trust: bool,
    exc: BaseException,
    d: Declared,
) -> ImportedModel:
    src = str(p)
    g = _GLOBAL.search(str(exc))
    if g is None:  # not a pickle of objects: torch.load fails before any class is named
        raise ImportError_(
            f"{src}: truncated or not a PyTorch file ({_clean_message(exc).split('. ')[0]}); "
            "accepted: a file "
            "written by torch.save, torch.export.save or torch.jit.save"
        ) from exc
    module_name, cls = g.group(1), g.group(2)
    if not trust:
        raise ImportError_(
            f"{src}: holds a pickled {module_name}.{cls} (an nn.Module saved whole?). Loading it "
            "runs code stored in the file: pass --trust-pickle if you trust its origin, or save "
            "model.state_dict() or a torch.export program (.pt2)"
        ) from exc
    code = _import_code(d.model_code) if d.model_code else None
    try:
        obj = torch.load(
            src, map_location="cpu", weights_only=False, pickle_module=_pickle_with(code)
        )
    except (AttributeError, ModuleNotFoundError, ImportError) as exc2:
        where = (
            "the saving script's __main__"
            if module_name == "__main__"
            else f"module {module_name!r}, which cannot be imported here"
        )
        raise ImportError_(
            f"{src}: the module was saved whole and its class {cls} lived in {where} "
            f"({_clean_message(exc2)}): pass --model-code FILE.py (the file defining {cls}, "
            "imported before unpickling), or save model.state_dict() or a torch.export "
            "program (.pt2)"
        ) from exc2
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
    meta, notes = _need_meta(twin, data_dir, src, d, "nn.Module saved whole")
    forward = _module_forward(module, lstm.batch_first)
    return ImportedModel(twin, meta, forward, "nn.Module", notes, file_sha256(src), src, lstm, d)


def _import_code(path: str) -> Any:
    """The user's model definition file as a module (its classes resolve the pickle's)."""
    import importlib.util

    p = Path(path)
    if not p.is_file():
        raise ImportError_(f"--model-code {path}: file not found")
    spec = importlib.util.spec_from_file_location(f"_codegen_model_code_{p.stem}", p)
    if spec is None or spec.loader is None:
        raise ImportError_(f"--model-code {path}: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    # registered first, as `import` does, so code in the file that pickles its own classes runs
    sys.modules[spec.name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as exc:
        why = _clean_message(exc)
        raise ImportError_(f"--model-code {path}: importing it failed ({why})") from exc
    return mod


def _pickle_with(code: Any) -> Any:
    """A pickle module for torch.load whose Unpickler takes a class from ``code`` (the user's
    --model-code) where its recorded module (often the saving script's __main__) lacks it;
    torch.load subclasses ``pickle_module.Unpickler`` (torch.serialization)."""
    import pickle
    import types

    if code is None:
        return pickle

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            try:
                return super().find_class(module, name)
            except (AttributeError, ModuleNotFoundError, ImportError):
                if hasattr(code, name):
                    return getattr(code, name)
                raise

    mod = types.ModuleType("_codegen_pickle")
    mod.__dict__.update({k: getattr(pickle, k) for k in dir(pickle) if not k.startswith("__")})
    mod.Unpickler = Unpickler  # type: ignore[attr-defined]
    return mod


def _module_forward(module: nn.Module, batch_first: bool) -> Forward:
    def run(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            out = module(x if batch_first else x.transpose(0, 1))
        if isinstance(out, tuple):
            out = out[0]
        return torch.as_tensor(out)

    return run


def _graph_structure(ep: Any, src: str) -> tuple[str | None, list[str]]:
    """From a torch.export graph: the recurrent op's kind and the head's Linear modules in call
    order; refuses, naming the module (its nn_module_stack entry), any layer after the encoder
    that is not nn.Linear, nn.ReLU or nn.Dropout, and the functional calls that change the head
    (torch.tanh, F.layer_norm ...)."""
    params = dict(ep.graph_signature.inputs_to_parameters)
    kind: str | None = None
    enc_path = ""
    order: list[str] = []
    bad: list[str] = []
    before: list[str] = []
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        op = str(getattr(node.target, "__name__", node.target)).split(".")[0]
        stack = list((node.meta.get("nn_module_stack") or {}).values())
        path, typ = (str(stack[-1][0]), str(stack[-1][1])) if stack else ("", "")
        short = typ.rsplit(".", 1)[-1]
        if op in _RNN_OPS and kind is None:
            kind, enc_path = op, path
            continue
        if path and path == enc_path:
            continue
        if kind is None:
            if path and short not in (*_HEAD_MODULES, "LSTM", "GRU", "RNN"):
                before.append(f"{path} (nn.{short})")
            continue
        if op == "linear" and len(node.args) > 1:
            w = params.get(str(node.args[1]))
            if w and w.endswith("weight"):
                order.append(w[: -len("weight")])
        if path and short not in _HEAD_MODULES and path != enc_path:
            name = f"{path} (nn.{short})"
            if name not in bad:
                bad.append(name)
        elif op in _FUNCTIONAL:
            name = f"{_FUNCTIONAL[op]} in the forward pass"
            if name not in bad:
                bad.append(name)
    if before:
        raise ImportError_(
            f"{src}: layers before the encoder ({', '.join(dict.fromkeys(before))}); supported: "
            f"{SUPPORTED}"
        )
    if bad:
        raise ImportError_(
            f"{src}: after the encoder {enc_path!r}: {', '.join(bad)}; between the head's "
            f"nn.Linear layers only nn.ReLU (and nn.Dropout) are supported; supported: {SUPPORTED}"
        )
    return kind, order


def _load_exported(p: Path, data_dir: str | os.PathLike[str] | None, d: Declared) -> ImportedModel:
    src = str(p)
    try:
        ep = torch.export.load(src)
    except Exception as exc:
        raise ImportError_(
            f"{src}: truncated or not a torch.export program ({_clean_message(exc)})"
        ) from exc
    kind, order = _graph_structure(ep, src)
    state = _strip_prefixes({k: v for k, v in ep.state_dict.items()})
    canon = _canonical(state, src, kind, _strip_list(order))
    twin = _twin_from_state(canon, src)
    meta, notes = _need_meta(twin, data_dir, src, d, "torch.export program")
    module = ep.module()
    T, F = meta.num_frames, meta.input_size
    batch_first, batch = True, None
    user_inputs = set(ep.graph_signature.user_inputs)
    for node in ep.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            shape = tuple(getattr(node.meta.get("val"), "shape", ()))
            if len(shape) == 3 and shape[0] == T and shape[2] == F and shape[1] != T:
                batch_first = False
            t = shape[0 if not batch_first else 1] if len(shape) == 3 else None
            if isinstance(t, int) and t != T:
                raise ImportError_(
                    f"{src}: the program was exported for {t} frames but "
                    f"{d.where('features')} gives {T} (clip_samples {meta.features['clip_samples']}"
                    f", win_ms {meta.features['win_ms']:g}, hop_ms {meta.features['hop_ms']:g}): "
                    "state the feature settings the model was trained on"
                )
            b = shape[0 if batch_first else 1] if len(shape) == 3 else None
            batch = int(b) if isinstance(b, int) else None  # a static batch size, else dynamic
            break
    run = _chunked(module, batch_first, batch)
    return ImportedModel(twin, meta, run, "torch.export", notes, file_sha256(src), src, None, d)


def _strip_list(names: list[str]) -> list[str]:
    return list(_strip_prefixes({n: None for n in names}))


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


def _load_torchscript(
    p: Path, data_dir: str | os.PathLike[str] | None, d: Declared
) -> ImportedModel:
    """A TorchScript archive (torch.jit.save of a scripted or traced model): its parameters by
    module path, and its own forward, run by the TorchScript interpreter."""
    src = str(p)
    try:
        sm = torch.jit.load(src, map_location="cpu")
    except Exception as exc:
        raise ImportError_(
            f"{src}: truncated or not a loadable TorchScript archive ({_clean_message(exc)})"
        ) from exc
    sm.eval()
    leaves = [
        (n, str(getattr(m, "original_name", "")))
        for n, m in sm.named_modules()
        if n and not list(m.children())
    ]
    rec = [(n, k) for n, k in leaves if k in ("LSTM", "GRU", "RNN")]
    kind = rec[0][1] if len(rec) == 1 else None
    bad = [f"{n} (nn.{k})" for n, k in leaves if k not in (*_HEAD_MODULES, "LSTM", "GRU", "RNN")]
    canon = _canonical(_strip_prefixes(dict(sm.state_dict())), src, kind)
    if bad:
        raise ImportError_(
            f"{src}: {', '.join(bad)}: besides the encoder only nn.Linear layers with nn.ReLU "
            f"(and nn.Dropout) between them are supported; supported: {SUPPORTED}"
        )
    twin = _twin_from_state(canon, src)
    meta, notes = _need_meta(twin, data_dir, src, d, "TorchScript archive")
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
            f"features with {meta.num_classes} outputs ({T} frames from {d.where('features')}: "
            f"state the feature settings it was trained on); supported: {SUPPORTED}"
        )
    run = _chunked(sm, *layout)
    return ImportedModel(twin, meta, run, "TorchScript", notes, file_sha256(src), src, None, d)


# ------------------------------------------------------------------------------- verification


def resolve_pooling(m: ImportedModel, feats: np.ndarray) -> ImportedModel:
    """Which pooling the user's model applies to the LSTM outputs, told by running it: the twin
    with the last step, the mean or the maximum over time, whichever reproduces the user's
    logits on (a part of) the calibration clips. Without a forward pass: unchanged (the
    pooling was declared). A declared pooling the forward pass does not show is refused."""
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
            said = m.declared.pooling
            if said is not None and said != pool:
                raise ImportError_(
                    f"{m.path}: {m.declared.where('pooling')} states pooling {said!r}, but the "
                    f"model's forward pass pools {pool!r} (its logits equal the head of the "
                    f"{pool} over time): drop the declaration or correct it"
                )
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
