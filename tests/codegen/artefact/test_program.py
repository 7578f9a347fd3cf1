"""The build directory's program (codegen.artefact.program): written by `codegen build`, loaded
without
the checkpoint, basis, config or data, and equal to the in-memory fixed IR integer for integer."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from buildkit import calib, config_text, make_kit
from numpy.testing import assert_array_equal
from repopaths import TESTS

from codegen.artefact.program import ProgramError, load_program
from codegen.base.features import quantize_features
from codegen.intref.model import infer_int
from codegen.pipeline.build import build


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object, np.ndarray]:
    tmp = tmp_path_factory.mktemp("program")
    kit = make_kit(
        tmp / "kit",
        F=8,
        H=16,
        C=5,
        T=12,
        k=3,
        config=config_text(k=3, mode="continual_bounded", extra='qelatta_v2 = "8b4"'),
    )
    x = calib(kit, n=48)
    res = build(kit.model, kit.basis, kit.config, tmp / "b", calib_features=x, compile_elf=False)
    return tmp / "b", res.qmodel, x


def test_program_round_trip_is_integer_exact(built: tuple[Path, object, np.ndarray]) -> None:
    bdir, q, x = built
    manifest = json.loads((bdir / "manifest.json").read_text())
    p = load_program(bdir, manifest["program"])
    xi = quantize_features(x, q.x_fmt)  # type: ignore[attr-defined]
    assert_array_equal(p.encoder[0].w_ih.raw, q.encoder[0].w_ih.raw)  # type: ignore[attr-defined]
    assert json.loads((bdir / "program.json").read_text())["version"] == 4
    assert p.adapt.input_hash == q.adapt.input_hash  # type: ignore[attr-defined]
    ids = np.arange(len(xi))
    for mode in ("no_adapt", "strict", "continual_bounded"):
        a = infer_int(xi, q, ids, mode=mode).fields()
        b = infer_int(xi, p, ids, mode=mode).fields()
        for name in a:
            assert_array_equal(b[name], a[name], err_msg=f"{mode}: {name}")


def test_program_bytes_are_deterministic(
    built: tuple[Path, object, np.ndarray], tmp_path: Path
) -> None:
    from codegen.artefact.program import write_program

    bdir, q, _ = built
    write_program(q, tmp_path)
    for name in ("program.json", "program.npz"):
        assert (tmp_path / name).read_bytes() == (bdir / name).read_bytes(), name


def test_damaged_program_is_refused(built: tuple[Path, object, np.ndarray], tmp_path: Path) -> None:
    bdir, _, _ = built
    d = tmp_path / "copy"
    shutil.copytree(bdir, d)
    manifest = json.loads((d / "manifest.json").read_text())
    npz = d / "program.npz"
    npz.write_bytes(npz.read_bytes()[:-100])
    with pytest.raises(ProgramError, match="program.npz"):
        load_program(d, manifest["program"])
    with pytest.raises(ProgramError, match="program.npz"):
        load_program(d)
    (d / "program.json").unlink()
    with pytest.raises(ProgramError, match="not found"):
        load_program(d)


def test_foreign_types_are_refused(built: tuple[Path, object, np.ndarray], tmp_path: Path) -> None:
    bdir, _, _ = built
    d = tmp_path / "copy"
    shutil.copytree(bdir, d)
    doc = json.loads((d / "program.json").read_text())
    doc["program"]["fields"]["calib"]["$type"] = "os.system"
    (d / "program.json").write_text(json.dumps(doc))
    with pytest.raises(ProgramError, match="unknown type 'os.system'"):
        load_program(d)


V2 = TESTS / "data" / "program_v2"


@pytest.mark.parametrize(("name", "kinds"), [("lstm2", ("lstm", "lstm")), ("gru2", ("gru", "gru"))])
def test_a_version_2_program_loads_with_the_same_integers(
    name: str, kinds: tuple[str, str], tmp_path: Path
) -> None:
    """A build directory written by program version 2 (the encoder in fixed slots, the GRU as an
    LSTM with cell "gru"; tests/data/program_v2) loads as the encoder list, and every field of
    the integer reference equals what that version computed (the strict fields that depend on
    the random draws: what the four-lane streams draw, tests/data/program_v2/README.md)."""
    d = tmp_path / name
    shutil.copytree(V2 / name, d)
    assert json.loads((d / "program.json").read_text())["version"] == 2
    q = load_program(d)
    assert tuple(layer.kind for layer in q.encoder) == kinds  # type: ignore[attr-defined]
    # the [cmvn] settings and integers of versions 2 and 3 (AdaptConfig.cmvn_<key>, QModel.cmvn)
    # are the input stages' of version 4, value for value (AdaptConfig.stages, QModel.stages)
    tree = json.loads((d / "program.json").read_text())["program"]["fields"]
    adapt_v2 = tree["source"]["fields"]["adapt"]["fields"]
    settings = q.source.adapt.stage_settings("cmvn")  # type: ignore[attr-defined]
    assert {f"cmvn_{k}": v for k, v in dataclasses.asdict(settings).items()} == {
        k: v for k, v in adapt_v2.items() if k.startswith("cmvn_")
    }
    params = dataclasses.asdict(q.stage_params("cmvn"))  # type: ignore[attr-defined]
    assert params == tree["cmvn"]["fields"]
    want = np.load(d / "expected.npz")
    for mode in ("no_adapt", "strict"):
        got = infer_int(want["x"], q, want["ids"], mode=mode).fields()
        for field, values in got.items():
            assert_array_equal(values, want[f"{mode}.{field}"], err_msg=f"{name} {mode}: {field}")


@pytest.mark.parametrize("version", [1, 5, "2"])
def test_other_program_versions_are_refused_by_name(version: object, tmp_path: Path) -> None:
    d = tmp_path / "v"
    shutil.copytree(V2 / "lstm2", d)
    doc = json.loads((d / "program.json").read_text())
    doc["version"] = version
    (d / "program.json").write_text(json.dumps(doc))
    with pytest.raises(ProgramError, match=rf"program version {version!r}; this codegen reads "
                       r"versions 2, 3, 4 \(rebuild with this codegen\)"):  # fmt: skip
        load_program(d)


def test_drift_warning_names_the_figures(
    built: tuple[Path, object, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    from codegen.intref import quality

    _, q, x = built
    monkeypatch.setattr(quality, "Z_DRIFT_WARN", 0.0)
    warned = quality.float_vs_fixed(q, x)
    assert any("integer latent drift: max |z error|" in w for w in warned["warnings"])
    assert warned["z_clips_above_warn"] > 0
    monkeypatch.setattr(quality, "Z_DRIFT_WARN", 10.0)
    assert not any("drift" in w for w in quality.float_vs_fixed(q, x)["warnings"])


def test_run_refuses_a_data_set_with_other_classes(tmp_path: Path) -> None:
    """A 2-class model against the 12-class built-in set: refused by name, not 0.00 % silently."""
    from elatta_host.plan import RunError, make_plan

    from codegen.data import build as build_data

    kit = make_kit(tmp_path / "kit", F=10, H=8, C=2, T=49, classes=("yes", "no_thanks"))
    build(kit.model, kit.basis, kit.config, tmp_path / "b", calib_features=calib(kit, n=16),
          compile_elf=False)  # fmt: skip
    data = tmp_path / "data"
    build_data(data, preset="tiny", tier="numpy", progress=False, jobs=1)
    with pytest.raises(RunError, match=r"classes \['yes', 'no'.*predicts \['yes', 'no_thanks'\]"):
        make_plan(tmp_path / "b", data, ("strict",), 10)
