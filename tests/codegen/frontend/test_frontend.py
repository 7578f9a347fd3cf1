"""Frontend: what it accepts becomes a frozen IR; what it cannot compile is refused by name."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from buildkit import config_text, make_kit, make_meta
from repopaths import ROOT

from codegen.base.errors import CodegenError, ConfigError
from codegen.base.files import file_sha256
from codegen.frontend.basis import Basis, compute_basis, save_basis
from codegen.frontend.reader import load_config, parse_config, parse_qelatta_v2, read_model


def test_target_board_in_config() -> None:
    """[target] board names a preset: its UART settings apply, the table's own keys override."""
    cfg = parse_config({"target": {"board": "zedboard"}})
    assert (cfg.target.board, cfg.target.uart, cfg.target.uart_ref_hz) == (
        "zedboard",
        1,
        50_000_000,
    )
    own = parse_config({"target": {"board": "zedboard", "uart_ref_hz": 100_000_000}})
    assert (own.target.uart, own.target.uart_ref_hz) == (1, 100_000_000)
    with pytest.raises(ConfigError, match="board='zed': unknown board; allowed boards are qemu"):
        parse_config({"target": {"board": "zed"}}, "x.toml")


def test_default_config_parses() -> None:
    cfg = load_config(ROOT / "configs" / "default.toml")
    assert cfg.adapt.k == 2 and cfg.adapt.lam == 6
    assert cfg.quant.act_bits == 16 and cfg.target.prefix == "kws_"
    assert len(cfg.sha256) == 64


def test_good_inputs_give_a_frozen_ir(tmp_path: Path) -> None:
    kit = make_kit(
        tmp_path, F=7, H=12, C=5, T=9, k=3, config=config_text(k=3, extra='qelatta_v2 = "8b4"')
    )
    m = read_model(kit.model, kit.basis, kit.config)
    assert (m.encoder[0].input_size, m.encoder[0].hidden_size, m.encoder[0].num_frames) == (
        7,
        12,
        9,
    )
    assert m.encoder[0].w_ih.shape == (48, 7) and m.head.weight.shape == (5, 12)
    assert m.basis.V.shape == (12, 3) and m.adapt.qelatta_v2 == (8, 4)
    assert m.hashes.model == file_sha256(kit.model)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.encoder[0].hidden_size = 3  # type: ignore[misc]
    with pytest.raises(ValueError):
        m.encoder[0].w_ih.values[0, 0] = 1.0  # arrays inside the IR are read-only


def _save_raw(path: Path, state: dict[str, torch.Tensor], meta: dict[str, object]) -> Path:
    torch.save({"state_dict": state, "meta": json.dumps(meta)}, path)
    return path


def _raw(tmp_path: Path) -> tuple[dict[str, torch.Tensor], dict[str, object], Path]:
    kit = make_kit(tmp_path / "kit", F=4, H=6, C=3, T=5)
    obj = torch.load(kit.model, weights_only=True)
    return dict(obj["state_dict"]), json.loads(obj["meta"]), kit.basis


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda s, m: s.update({"lstm.weight_ih_l1": torch.zeros(24, 6)}), "num_layers=2"),
        (
            lambda s, m: s.update({"lstm.weight_ih_l0_reverse": torch.zeros(24, 4)}),
            "bidirectional=True",
        ),
        (lambda s, m: s.update({"lstm.weight_hr_l0": torch.zeros(2, 6)}), "proj_size=2"),
        (lambda s, m: m.update({"num_layers": 3}), "num_layers=3"),
        (lambda s, m: s["lstm.weight_hh_l0"].__setitem__((0, 0), float("nan")), "NaN"),
        (lambda s, m: s["head.bias"].__setitem__(1, float("inf")), "NaN/inf"),
        (lambda s, m: s.update({"head.weight": torch.zeros(3, 5)}), "head.weight"),
    ],
)
def test_unsupported_checkpoints_are_refused_by_name(tmp_path: Path, mutate, needle: str) -> None:
    state, meta, basis = _raw(tmp_path)
    mutate(state, meta)
    path = _save_raw(tmp_path / "bad.pt", state, meta)
    cfg = tmp_path / "c.toml"
    cfg.write_text(config_text())
    with pytest.raises(CodegenError, match=needle.replace("(", r"\(")):
        read_model(path, basis, cfg)


def test_batch_first_in_meta_does_not_matter(tmp_path: Path) -> None:
    """The weights of a time-major LSTM are the same: a checkpoint recording batch_first=False
    reads as any other (the layout is the caller's, not the weights')."""
    state, meta, basis = _raw(tmp_path)
    meta["batch_first"] = False
    path = _save_raw(tmp_path / "tm.pt", state, meta)
    cfg = tmp_path / "c.toml"
    cfg.write_text(config_text())
    b = _basis_for(path, tmp_path / "b2.npz", 6, 2)
    assert read_model(path, b, cfg).encoder[0].hidden_size == 6


def _basis_for(model: Path, out: Path, D: int, k: int) -> Path:
    z = np.random.default_rng(0).standard_normal((20, D))
    V, s, mean, ev = compute_basis(z, k)
    save_basis(out, Basis(V, s, mean, 20, k, 0, file_sha256(model), ev))
    return out


def test_shape_mismatches_between_model_basis_and_config(tmp_path: Path) -> None:
    kit = make_kit(tmp_path, F=4, H=8, C=3, T=5, k=2)
    wrong_d = _basis_for(kit.model, tmp_path / "d.npz", D=6, k=2)
    with pytest.raises(
        CodegenError, match=r"D=6 rows but the model's latent \(the head's input\) has 8"
    ):
        read_model(kit.model, wrong_d, kit.config)
    k3 = _basis_for(kit.model, tmp_path / "k3.npz", D=8, k=3)
    with pytest.raises(CodegenError, match=r"\[elatta\].k = 2 but the basis V has k=3"):
        read_model(kit.model, k3, kit.config)
    other = make_kit(tmp_path / "other", F=4, H=8, C=3, T=5, k=2, seed=7)
    with pytest.raises(CodegenError, match="basis was computed from model sha256"):
        read_model(kit.model, other.basis, kit.config)


@pytest.mark.parametrize(
    "doc, needle",
    [
        ({"quant": {"act_bits": 8}}, r"\[quant\].act_bits = 8: only 16-bit"),
        ({"quant": {"weight_bits": 32}}, r"\[quant\].weight_bits = 32: only 16-bit"),
        (
            {"quant": {"accumulator": "int48"}},
            "accumulator = 'int48': allowed values are 'auto', 'int32'",
        ),
        (
            {"quant": {"accumulator": "int64"}},
            "accumulator = 'int64': allowed .* int64 accumulators were removed",
        ),
        ({"quant": {"calib_samples": 2}}, "calib_samples = 2"),
        ({"elatta": {"k": 0}}, "k=0 is not allowed"),
        ({"elatta": {"mode": "greedy"}}, "mode='greedy'"),
        ({"elatta": {"qelatta_v2": "8x4"}}, "qelatta_v2 = '8x4'"),
        ({"elatta": {"qelatta_v2": "4b4"}}, "1 <= y < x"),
        ({"elatta": {"sigma0": "big"}}, r"\[elatta\].sigma0 = 'big' has type str"),
        ({"elatta": {"kk": 2}}, r"unknown key\(s\) kk"),
        ({"target": {"prefix": "Kws-"}}, "prefix = 'Kws-'"),
        ({"target": {"uart": 2}}, "uart=2"),
        ({"target": {"baud": 10}}, "baud=10"),
        ({"extra": {}}, r"unknown key\(s\) extra"),
    ],
)
def test_config_errors_name_key_value_and_what_is_allowed(doc: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse_config(doc)


def test_qelatta_v2_parsing() -> None:
    assert parse_qelatta_v2("8b4") == (8, 4)
    assert parse_qelatta_v2("4b2") == (4, 2)
    assert parse_qelatta_v2("") is None and parse_qelatta_v2("off") is None


def test_meta_helper_shapes() -> None:
    meta = make_meta(3, 4, 5, 6)
    assert (meta.input_size, meta.hidden_size, meta.num_classes, meta.num_frames) == (3, 4, 5, 6)
