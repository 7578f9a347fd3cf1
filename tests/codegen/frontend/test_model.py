"""KwsLstm, its checkpoint format and validation, features_for, and the V_k basis (no data set)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from codegen.base.errors import CodegenError, ConfigError
from codegen.base.features import MfccParams, mfcc
from codegen.data import CLASSES
from codegen.frontend.basis import Basis, compute_basis, load_basis, save_basis
from codegen.frontend.model import (
    KwsLstm,
    encode_numpy,
    head_numpy,
    load_checkpoint,
    save_checkpoint,
)
from codegen.ir.meta import ModelMeta, features_for

torch.set_num_threads(1)

F, H, C = 10, 8, len(CLASSES)


def make_meta(**changes: object) -> ModelMeta:
    meta = ModelMeta(
        input_size=F,
        hidden_size=H,
        num_classes=C,
        num_frames=MfccParams().n_frames,
        classes=tuple(CLASSES),
        features=MfccParams().to_dict(),
        norm_mean=tuple(float(i) for i in range(F)),
        norm_std=tuple(1.0 + i for i in range(F)),
        seed=0,
        train={"epochs": 1},
    )
    return dataclasses.replace(meta, **changes)  # type: ignore[arg-type]


def make_model(seed: int = 0) -> KwsLstm:
    torch.manual_seed(seed)
    return KwsLstm(F, H, C).eval()


def test_encode_is_final_hidden_state_and_forward_is_head_of_it() -> None:
    model = make_model()
    x = torch.randn(3, 49, F)
    z = model.encode(x)
    out, _ = model.lstm(x)
    assert z.shape == (3, H)
    torch.testing.assert_close(z, out[:, -1])
    torch.testing.assert_close(model(x), model.head(z))
    # parameters live in lstm and head only (the MLP head's Sequential is empty by default)
    assert {n.split(".")[0] for n, _ in model.named_parameters()} == {"lstm", "head"}


def test_checkpoint_round_trip_weights_only(tmp_path: Path) -> None:
    model, meta = make_model(), make_meta()
    path = tmp_path / "m.pt"
    save_checkpoint(path, model, meta)
    raw = torch.load(path, weights_only=True)
    assert set(raw) == {"state_dict", "meta"} and isinstance(raw["meta"], str)
    assert json.loads(raw["meta"])["hidden_size"] == H
    loaded, meta2 = load_checkpoint(path)
    assert meta2 == meta
    x = torch.randn(2, 49, F)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x))
    w, b = head_numpy(loaded)
    assert w.shape == (C, H) and b.shape == (C,) and w.dtype == np.float64


def _write(path: Path, obj: object) -> Path:
    torch.save(obj, path)
    return path


def _good() -> tuple[dict[str, torch.Tensor], str]:
    model, meta = make_model(), make_meta()
    return dict(model.state_dict()), meta.to_json()


def _meta_without(text: str, key: str) -> str:
    doc = json.loads(text)
    del doc[key]
    return json.dumps(doc)


def _meta_with(text: str, **changes: object) -> str:
    doc = json.loads(text)
    doc.update(changes)
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda sd, m: {"state_dict": sd}, "'meta' missing"),
        (lambda sd, m: {"meta": m}, "'state_dict' missing"),
        (lambda sd, m: [sd, m], "must be a dict"),
        (lambda sd, m: {"state_dict": sd, "meta": "{not json"}, "not valid JSON"),
        (lambda sd, m: {"state_dict": sd, "meta": _meta_without(m, "hidden_size")}, "hidden_size"),
        (lambda sd, m: {"state_dict": sd, "meta": _meta_with(m, num_classes=0)}, "num_classes"),
        (
            lambda sd, m: {"state_dict": sd, "meta": _meta_with(m, norm_std=[0.0] * F)},
            "norm_std",
        ),
        (
            lambda sd, m: {"state_dict": sd, "meta": _meta_with(m, norm_mean=[0.0] * 3)},
            "norm_mean",
        ),
        (
            lambda sd, m: {"state_dict": sd, "meta": _meta_with(m, classes=["a", "b"])},
            "classes",
        ),
        (lambda sd, m: {"state_dict": sd, "meta": _meta_with(m, format="other")}, "format"),
        (
            lambda sd, m: {
                "state_dict": {k: v for k, v in sd.items() if k != "head.bias"},
                "meta": m,
            },
            "head.bias",
        ),
        (
            lambda sd, m: {"state_dict": {**sd, "head.weight": torch.zeros(C, H + 1)}, "meta": m},
            "head.weight",
        ),
        (
            lambda sd, m: {
                "state_dict": {**sd, "lstm.weight_ih_l1": torch.zeros(4 * H, H)},
                "meta": m,
            },
            "lstm.weight_ih_l1",
        ),
        (
            lambda sd, m: {
                "state_dict": {**sd, "lstm.bias_hh_l0": torch.full((4 * H,), float("nan"))},
                "meta": m,
            },
            "lstm.bias_hh_l0",
        ),
    ],
)
def test_bad_checkpoints_are_rejected_with_the_field_named(
    tmp_path: Path, mutate: Callable[[dict[str, torch.Tensor], str], object], needle: str
) -> None:
    sd, meta_json = _good()
    path = _write(tmp_path / "bad.pt", mutate(sd, meta_json))
    with pytest.raises(CodegenError, match=needle):
        load_checkpoint(path)


def test_missing_file_and_arbitrary_pickle_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(CodegenError, match="not found"):
        load_checkpoint(tmp_path / "nope.pt")
    path = _write(tmp_path / "pickle.pt", {"state_dict": {}, "meta": dataclasses.field})
    with pytest.raises(CodegenError, match="weights-only"):
        load_checkpoint(path)


def test_features_for_applies_mfcc_then_stored_normalisation() -> None:
    meta = make_meta()
    pcm = (np.random.default_rng(0).standard_normal((2, 16000)) * 3000).astype(np.int16)
    got = features_for(pcm, meta)
    want = (mfcc(pcm) - np.arange(F, dtype=np.float32)) / (1.0 + np.arange(F, dtype=np.float32))
    assert got.dtype == np.float32 and got.shape == (2, 49, F)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    z = encode_numpy(make_model(), got)
    assert z.shape == (2, H) and z.dtype == np.float64


def test_features_for_rejects_feature_size_mismatch() -> None:
    meta = make_meta(input_size=12, norm_mean=(0.0,) * 12, norm_std=(1.0,) * 12)
    with pytest.raises(CodegenError, match="input_size=12"):
        features_for(np.zeros((1, 16000), np.int16), meta)


# ------------------------------------------------------------------------------ basis


def _latents(n: int = 50, d: int = 32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scales = np.linspace(3.0, 0.1, d)
    return rng.standard_normal((n, d)) * scales + 5.0


def test_basis_is_orthonormal_centred_and_spans_top_principal_directions() -> None:
    z = _latents()
    v, s, mean, explained = compute_basis(z, 2)
    assert v.shape == (32, 2) and s.shape == (2,)
    np.testing.assert_allclose(v.T @ v, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(mean, z.mean(axis=0))
    zc = z - mean
    np.testing.assert_allclose(zc.mean(axis=0), 0.0, atol=1e-12)
    evals, evecs = np.linalg.eigh(zc.T @ zc)
    top = evecs[:, ::-1][:, :2]
    np.testing.assert_allclose(np.abs(top.T @ v), np.eye(2), atol=1e-8)
    np.testing.assert_allclose(s**2, evals[::-1][:2], rtol=1e-10)
    assert 0 < explained < 1
    # sign convention: the largest-magnitude entry of each column is positive
    assert np.all(v[np.argmax(np.abs(v), axis=0), [0, 1]] > 0)


@pytest.mark.parametrize("k", [0, 50, 33])
def test_basis_rejects_k_out_of_range(k: int) -> None:
    with pytest.raises(ConfigError, match=f"--k {k}"):
        compute_basis(_latents(n=50), k)


def test_basis_file_round_trip_and_validation(tmp_path: Path) -> None:
    v, s, mean, explained = compute_basis(_latents(), 2)
    basis = Basis(v, s, mean, 50, 2, 7, "ab" * 32, explained)
    path = tmp_path / "b.npz"
    save_basis(path, basis)
    with np.load(path) as npz:
        assert {"V", "singular_values", "mean", "n", "k", "seed", "model_sha256"} <= set(npz.files)
        assert npz["V"].dtype == np.float64
    got = load_basis(path, model_sha256="ab" * 32)
    np.testing.assert_array_equal(got.V, v)
    assert (got.n, got.k, got.seed) == (50, 2, 7)
    with pytest.raises(CodegenError, match="rerun `codegen basis`"):
        load_basis(path, model_sha256="cd" * 32)
    bad = tmp_path / "bad.npz"
    np.savez(bad, V=v * 2.0, singular_values=s, mean=mean, n=50, k=2, seed=0, model_sha256="x")
    with pytest.raises(CodegenError, match="not orthonormal"):
        load_basis(bad)
    np.savez(bad, V=v, singular_values=s, mean=mean, n=50, k=2, seed=0)
    with pytest.raises(CodegenError, match="model_sha256"):
        load_basis(bad)
