"""The Python API for notebooks: compile an ``nn.Module`` you have in memory.

    import codegen
    res = codegen.compile(model, example_input, basis=2, config="configs/default.toml",
                          out="build/mine", data="out/data/demo",
                          features={"n_mfcc": 10, "win_ms": 40, "hop_ms": 20})

The module goes through the same import as a file (`codegen.frontend.importer`: the family is
matched
from its layers, the float twin is checked against the module's own forward pass on the
calibration clips) and the same build as `codegen build`, whose summary it prints (the result's
``text``). A module carries no feature settings: ``features`` states the MFCC settings it was
trained on (or the config's [features]), as ``--features`` does for a file.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from codegen.base.errors import CodegenError

StrPath = str | os.PathLike[str]


def module_sha256(module: nn.Module) -> str:
    """A stable identity for an in-memory module: sha256 over its state_dict (names, shapes and
    float32 bytes, sorted by name). A basis computed from the module records it."""
    h = hashlib.sha256()
    for name, t in sorted(module.state_dict().items()):
        a = t.detach().to("cpu", torch.float32).contiguous().numpy()
        h.update(name.encode() + repr(a.shape).encode() + a.tobytes())
    return h.hexdigest()


def compile(  # noqa: A001 - the name the notebooks use
    module: nn.Module,
    example_input: torch.Tensor,
    basis: int | StrPath,
    config: StrPath,
    out: StrPath,
    *,
    data: StrPath,
    n_basis: int = 50,
    compile_elf: bool = True,
    features: Any = None,
    quiet: bool = False,
) -> Any:
    """Compile ``module`` into ``out`` (a `codegen.pipeline.build.BuildResult`).

    ``example_input``: one batch the module accepts ([N, T, F] or, for a time-major LSTM,
    [T, N, F]); it is run once to check the module works before anything else. ``basis``: k (the
    basis is computed from ``n_basis`` clean training latents of ``data`` and written to
    ``out/basis.npz``) or a basis file computed from this module. ``data``: the `codegen data`
    directory that supplies the normalisation, class names and the calibration clips.
    ``features``: the MFCC settings the module was trained on (`codegen.base.features.
    MfccParams` or a mapping of its fields, plus ``frames`` to check), unless the config has
    a [features] table. ``quiet``: do not print the summary.
    """
    from codegen.base.features import MfccParams
    from codegen.data import load_split
    from codegen.frontend.basis import Basis, compute_basis, load_basis, save_basis
    from codegen.frontend.cliargs import Declared, merge, parse_features
    from codegen.frontend.importer import (
        ImportedModel,
        _module_forward,
        check_data,
        match_module,
        meta_from_data,
    )
    from codegen.frontend.model import encode_numpy
    from codegen.frontend.reader import load_config
    from codegen.ir.meta import features_for
    from codegen.pipeline.build import build, prepare_out_dir

    if not isinstance(module, nn.Module):
        raise CodegenError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    module = module.float().eval()
    where = f"<{type(module).__name__} in memory>"
    twin, lstm = match_module(module, where)
    with torch.no_grad():
        try:
            module(example_input)
        except Exception as exc:
            raise CodegenError(f"{where}: the module fails on example_input ({exc})") from exc
    cell = "gru" if isinstance(twin.lstm, nn.GRU) else "lstm"
    said = Declared()
    if isinstance(features, MfccParams):
        said = Declared(features=features, origin=(("features", "features="),))
    elif features is not None:
        if not isinstance(features, dict):
            raise CodegenError(
                f"features={features!r}: pass an MfccParams or a mapping of its fields"
            )
        params, frames = parse_features(features, "features=")
        said = Declared(features=params, frames=frames, origin=(("features", "features="),))
    said = merge(said, load_config(Path(config)).declared)
    if said.features is None:
        raise CodegenError(
            f"{where}: a module carries no feature settings: pass features={{...}} (the MFCC "
            "settings it was trained on: the fields of codegen.base.features.MfccParams, e.g. "
            "{'n_mfcc': 10, 'win_ms': 40, 'hop_ms': 20}) or a [features] table in the config"
        )
    meta, provenance = meta_from_data(
        data,
        twin.lstm.input_size,
        twin.lstm.hidden_size,
        twin.head.out_features,
        cell,
        features=said.features,
        features_from=said.where("features"),
    )
    check_data(meta, data, where)
    shape = tuple(example_input.shape)
    T = meta.num_frames
    if len(shape) == 3 and T not in (shape[0], shape[1]):
        raise CodegenError(
            f"{where}: example_input has shape {list(shape)} but {said.where('features')} gives "
            f"{T} frames: state the feature settings the module was trained on"
        )
    sha = module_sha256(module)
    forward = _module_forward(module, bool(lstm.batch_first))
    imported = ImportedModel(
        twin, meta, forward, "nn.Module (Python API)", provenance, sha, where, lstm, said
    )
    out_dir = Path(out)
    prepare_out_dir(out_dir)
    if isinstance(basis, int) and not isinstance(basis, bool):
        split = load_split(str(data), "train")
        n = min(n_basis, len(split))
        idx = np.sort(np.random.default_rng(0).choice(len(split), size=n, replace=False))
        z = encode_numpy(twin, features_for(split.pcm[idx], meta))
        V, s, mean, ev = compute_basis(z, basis)
        basis_path = out_dir / "basis.npz"
        save_basis(basis_path, Basis(V, s, mean, n, basis, 0, sha, ev))
    elif isinstance(basis, str | os.PathLike):
        basis_path = Path(basis)
        if load_basis(basis_path).model_sha256 != sha:
            raise CodegenError(
                f"{basis_path} was computed from another model (its model_sha256 is not this "
                "module's state_dict hash): pass basis=k to compute it from the module"
            )
    else:
        raise CodegenError(f"basis={basis!r}: pass k (an int) or a basis file")
    res = build(
        imported, basis_path, Path(config), out_dir, data_dir=Path(data), compile_elf=compile_elf
    )
    if not quiet:
        print(res.text)
    return res
