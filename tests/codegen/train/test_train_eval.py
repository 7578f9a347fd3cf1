"""End to end on the tiny built-in set: `codegen train` -> `basis` -> `eval`, and their pieces.

The data set is built once per module with the numpy tier (no TTS engine needed, a few
seconds); training runs one epoch, so accuracies here are meaningless and only shapes, schema,
wiring and determinism are checked.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from codegen.base.files import file_sha256
from codegen.cli import main
from codegen.data import NOISES, build, load_split
from codegen.frontend.basis import load_basis
from codegen.frontend.model import load_checkpoint
from codegen.train.fit import TrainConfig, augment

FAST_TRAIN = ["--epochs", "1", "--copies", "2", "--no-progress", "--threads", "1"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny")
    build(out, preset="tiny", tier="numpy", progress=False)
    return out


@pytest.fixture(scope="module")
def trained(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("model")
    model, basis = work / "model.pt", work / "basis.npz"
    assert main(["train", "--data", str(tiny), "--out", str(model), *FAST_TRAIN]) == 0
    assert (
        main(
            ["basis", "--model", str(model), "--data", str(tiny), "--n", "20"]
            + ["--out", str(basis)]
        )
        == 0
    )
    return model, basis


def test_train_writes_a_valid_checkpoint_with_meta(trained: tuple[Path, Path]) -> None:
    model, meta = load_checkpoint(trained[0])
    assert (meta.input_size, meta.hidden_size, meta.num_classes) == (10, 32, 12)
    assert meta.num_frames == 49 and meta.classes[10] == "_silence_"
    assert meta.train["config"]["epochs"] == 1 and meta.train["n_train"] > 0
    assert all(s > 0 for s in meta.norm_std)
    assert meta.features["n_mfcc"] == 10


def test_training_is_seeded(tiny: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    for path in (a, b):
        assert main(["train", "--data", str(tiny), "--out", str(path), *FAST_TRAIN]) == 0
    (ma, meta_a), (mb, meta_b) = load_checkpoint(a), load_checkpoint(b)
    for key, value in ma.state_dict().items():
        assert np.array_equal(value.numpy(), mb.state_dict()[key].numpy()), key
    assert meta_a.norm_mean == meta_b.norm_mean


@pytest.mark.slow
def test_training_learns_well_above_chance(tiny: Path, tmp_path: Path) -> None:
    path = tmp_path / "m.pt"
    argv = ["train", "--data", str(tiny), "--out", str(path), "--epochs", "60", "--copies", "4"]
    assert main([*argv, "--no-progress"]) == 0
    _, meta = load_checkpoint(path)
    # 12 balanced classes: chance is 8 %; 60 epochs on the tiny set measured 50 % clean val.
    assert meta.train["best"]["val_clean"] >= 0.3


def test_basis_from_trained_model_is_orthonormal_and_bound_to_it(
    trained: tuple[Path, Path],
) -> None:
    model, path = trained
    basis = load_basis(path, model_sha256=file_sha256(model))
    assert basis.V.shape == (32, 2) and (basis.n, basis.k) == (20, 2)
    np.testing.assert_allclose(basis.V.T @ basis.V, np.eye(2), atol=1e-10)
    assert np.all(basis.singular_values[:-1] >= basis.singular_values[1:])


def test_augment_mixes_at_the_requested_snr_and_always_noises_silence(tiny: Path) -> None:
    from codegen.data import background_noises

    train = load_split(tiny, "train")
    noises = background_noises(tiny)
    cfg = TrainConfig(aug_prob=0.0, snr_min=10.0, snr_max=10.0, shift_ms=0.0, diversify=False)
    speech = train.labels < 10
    pcm = train.pcm[speech][:4]
    out = augment(pcm, np.zeros(4, bool), noises, cfg, np.random.default_rng(0))
    assert np.array_equal(out, pcm)  # aug_prob 0: speech untouched
    out = augment(pcm, np.ones(4, bool), noises, cfg, np.random.default_rng(0))
    assert not np.array_equal(out, pcm)  # silence clips always get noise
    cfg = TrainConfig(aug_prob=1.0, snr_min=10.0, snr_max=10.0, shift_ms=0.0, diversify=False)
    out = augment(pcm, np.zeros(4, bool), noises, cfg, np.random.default_rng(0))
    x, y = pcm.astype(np.float64), out.astype(np.float64)
    for clean, mixed in zip(x, y, strict=True):
        if np.max(np.abs(mixed)) < 32000:  # not peak-rescaled, so noise = mixed - clean
            snr = 10 * np.log10(np.mean(clean**2) / np.mean((mixed - clean) ** 2))
            assert abs(snr - 10.0) < 0.2


def test_eval_end_to_end_report_schema(
    tiny: Path, trained: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, basis = trained
    report_dir = tmp_path / "report"
    argv = ["eval", "--model", str(model), "--basis", str(basis), "--data", str(tiny)]
    argv += ["--report", str(report_dir), "--limit", "6", "--seeds", "2", "--no-progress"]
    argv += ["--elatta", "--mode", "cmvn", "--mode", "cmvn_causal", "--mode", "cmvn_select"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Table: GSC-C (paper layout)" in printed and "Did adaptation help?" in printed
    assert "reverb family" in printed and "channel family" in printed
    # the unbounded continual is left out unless named, with the reason
    assert "Not run: ELaTTA continual (continual): the paper's unbounded" in printed
    assert re.search(r"cmvn select +limit -0\.5: (safe|UNSAFE); 0 dB", printed), printed

    report = json.loads((report_dir / "report.json").read_text())
    assert report["data"] in ("builtin", "gsc")
    modes = ("no_adapt", "strict", "continual_bounded", "cmvn", "cmvn_causal", "cmvn_select")
    assert tuple(report["float"]) == modes
    assert set(report["config"]["not_run"]) == {"continual"}
    assert report["config"]["cmvn"]["select_margin"] == 0.1  # configs/default.toml's
    for mode in modes:
        per_snr = report["float"][mode]
        assert {"-10", "-15", "-20"} <= set(per_snr)
        for cells in per_snr.values():
            assert set(cells) == {*NOISES, "average"}
            assert all(0.0 <= v <= 1.0 for v in cells.values())
            assert cells["average"] == pytest.approx(np.mean([cells[n] for n in NOISES]), abs=1e-5)
        shifts = report["float_shifts"][mode]
        assert {"reverb", "channel", "clean"} <= set(shifts)
        assert all(0.0 <= v <= 1.0 for fam in shifts.values() for v in fam.values())
    cfg = report["config"]
    assert cfg["sigma0"] > 0 and 0 <= cfg["beta"] <= 1 and cfg["radius"] >= 0
    assert cfg["seeds"] == [0, 1] and cfg["k"] == 2 and cfg["lam"] == 6
    assert "source validation" in cfg["chosen_by"]["sigma0"]
    gain = report["gains"]["strict"]["additive/-10"]
    assert len(gain["per_seed_points"]) == 2
    assert gain["verdict"] in ("helped", "hurt", "no measurable effect")
    assert set(report["safety"]) == set(modes[1:])
    for per in report["safety"].values():  # every SNR and every shift family, clean included
        assert {"-10", "clean", "reverb", "channel"} <= set(per)
        assert all(v["pass"] == (v["gain_points"] >= v["limit_points"]) for v in per.values())

    toml = tomllib.loads((report_dir / "elatta.toml").read_text())["elatta"]
    assert toml["sigma0"] == cfg["sigma0"] and toml["radius"] == cfg["radius"]
    assert toml["k"] == 2 and toml["n_iter"] == 2


def test_eval_single_mode_and_mismatched_basis(
    tiny: Path, trained: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, basis = trained
    other = tmp_path / "other.pt"
    assert (
        main(["train", "--data", str(tiny), "--out", str(other), *FAST_TRAIN, "--seed", "1"]) == 0
    )
    capsys.readouterr()
    argv = ["eval", "--model", str(other), "--basis", str(basis), "--data", str(tiny)]
    assert main([*argv, "--report", str(tmp_path / "r")]) == 2
    assert "rerun `codegen basis`" in capsys.readouterr().err

    argv = ["eval", "--model", str(model), "--basis", str(basis), "--data", str(tiny)]
    argv += ["--report", str(tmp_path / "r2"), "--limit", "4", "--seeds", "1", "--no-progress"]
    assert (
        main([*argv, "--mode", "strict", "--sigma0", "0.05", "--beta", "0.5"] + ["--radius", "1.0"])
        == 0
    )
    report = json.loads((tmp_path / "r2" / "report.json").read_text())
    assert tuple(report["float"]) == ("no_adapt", "strict")
    assert report["config"]["chosen_by"]["sigma0"] == "--sigma0"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["train", "--aug-prob", "2"], "--aug-prob 2.0"),
        (["train", "--epochs", "0"], "--epochs 0"),
        (["basis", "--n", "100000"], "--n 100000"),
        (["basis", "--k", "40"], "--k 40"),
        (["eval", "--seeds", "0"], "--seeds 0"),
    ],
)
def test_bad_values_are_named(
    tiny: Path,
    trained: tuple[Path, Path],
    tmp_path: Path,
    argv: list[str],
    needle: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model, basis = trained
    common = {
        "train": ["--data", str(tiny), "--out", str(tmp_path / "m.pt")],
        "basis": ["--model", str(model), "--data", str(tiny), "--out", str(tmp_path / "b.npz")],
        "eval": ["--model", str(model), "--basis", str(basis), "--data", str(tiny)]
        + ["--report", str(tmp_path / "r")],
    }[argv[0]]
    assert main([argv[0], *common, *argv[1:]]) == 2
    assert needle in capsys.readouterr().err


def test_cli_lists_the_commands_without_importing_torch() -> None:
    code = (
        "import sys\n"
        "import codegen.train.fit, codegen.frontend.basis, elatta_measure.evaluate\n"
        "assert 'torch' not in sys.modules, 'torch imported at module level'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    from codegen.cli import COMMANDS

    modules = {name: module for name, module, _ in COMMANDS}
    assert modules["train"] == "codegen.train.fit"
    assert modules["basis"] == "codegen.frontend.basis"
    assert modules["eval"] == "elatta_measure.evaluate"


def test_eval_fixed_adds_integer_reference_beside_float(
    tiny: Path, trained: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, basis = trained
    report_dir = tmp_path / "fixed"
    argv = [
        "eval",
        "--model",
        str(model),
        "--basis",
        str(basis),
        "--data",
        str(tiny),
        "--report",
        str(report_dir),
        "--limit",
        "6",
        "--seeds",
        "1",
        "--no-progress",
        "--mode",
        "no_adapt",
        "--mode",
        "strict",
        "--fixed",
    ]
    assert main(argv) == 0
    assert "Fixed point (integer reference) vs float" in capsys.readouterr().out
    report = json.loads((report_dir / "report.json").read_text())
    assert tuple(report["fixed"]) == ("no_adapt", "strict")
    for mode in ("no_adapt", "strict"):
        assert set(report["fixed"][mode]) == set(report["float"][mode])
        for snr, cells in report["fixed"][mode].items():
            assert set(cells) == set(report["float"][mode][snr])
            assert all(0.0 <= v <= 1.0 for v in cells.values())


def test_eval_wire_adpcm_runs_float_and_fixed_on_the_decoded_test_audio(
    tiny: Path,
    trained: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--wire adpcm`: every test clip of the float evaluation and of the integer reference
    passes through the ADPCM codec (recorded around the real `roundtrip`) before its features
    are computed, and the report says so; the hyperparameters' source data stays as stored."""
    from codegen.base import adpcm
    from codegen.data import conditions

    seen: list[int] = []
    real = adpcm.roundtrip

    def recorded(pcm: np.ndarray) -> np.ndarray:
        seen.append(len(pcm))
        return real(pcm)

    monkeypatch.setattr(adpcm, "roundtrip", recorded)
    model, basis = trained
    argv = ["eval", "--model", str(model), "--basis", str(basis), "--data", str(tiny)]
    argv += ["--report", str(tmp_path / "w"), "--limit", "3", "--seeds", "1", "--no-progress"]
    assert main([*argv, "--mode", "no_adapt", "--fixed", "--wire", "adpcm"]) == 0
    assert "test audio as the device decodes it from adpcm" in capsys.readouterr().out
    report = json.loads((tmp_path / "w" / "report.json").read_text())
    assert report["config"]["wire"] == "adpcm" and set(report["fixed"]) == {"no_adapt"}
    n_all = len(conditions(str(tiny)))
    n_additive = len([c for c in conditions(str(tiny), "additive") if c.snr_db is not None])
    assert sum(seen) == 3 * (n_all + n_additive), seen
