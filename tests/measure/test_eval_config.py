"""`codegen eval` on the shipped model and the tiny built-in set: what it runs by default (the
deployed cmvn_select beside no-adapt, ELaTTA one flag away), what a seed means for each mode,
when ELaTTA's hyperparameters are chosen, and the complete build config it writes: building
REPORT/elatta.toml gives the cmvn, quant and target settings the evaluation measured with."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from repopaths import ROOT

from codegen.cli import main
from codegen.data import build as build_data

MODEL = ROOT / "models/default/model.pt"
BASIS = ROOT / "models/default/basis.npz"

# A config whose [cmvn], [quant] and [target] differ from the defaults in every table, so a
# value that the written config dropped or replaced by a default shows in the build.
CUSTOM = """
[elatta]
mode = "cmvn_select"
n_iter = 3
sigma0 = 0.05
beta = 0.25
radius = 0.5

[cmvn]
alpha_shift = 3
weight_shift = 1
select_margin = 0.05
select_floor = 0.2
select_clip_gate = 1.5
select_alpha_shift = 2

[quant]
calib_samples = 64
calib_seed = 3
range_margin = 1.5
weight_format = "max"

[target]
uart = 1
max_payload = 1024
prefix = "abc_"
input = "features"
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny")
    build_data(out, preset="tiny", tier="numpy", progress=False)
    return out


def _eval(tiny: Path, report: Path, *extra: str) -> dict:
    argv = ["eval", "--model", str(MODEL), "--basis", str(BASIS), "--data", str(tiny)]
    argv += ["--report", str(report), "--limit", "3", "--no-progress", *extra]
    assert main(argv) == 0
    return json.loads((report / "report.json").read_text())


def test_the_written_config_builds_what_was_measured(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "custom.toml"
    config.write_text(CUSTOM)
    report_dir = tmp_path / "eval"
    report = _eval(tiny, report_dir, "--config", str(config))
    capsys.readouterr()
    # what the evaluation measured the input stage with: the custom [cmvn]
    measured = report["config"]["cmvn"]
    assert (measured["alpha_shift"], measured["weight_shift"]) == (3, 1)
    assert measured["select_margin"] == 0.05 and measured["select_alpha_shift"] == 2

    text = (report_dir / "elatta.toml").read_text()
    written = tomllib.loads(text)
    assert set(written) == {"elatta", "cmvn", "quant", "target"}
    assert written == report["build_config"]
    # every key says where it came from
    lines = {ln.split(" = ")[0]: ln for ln in text.splitlines() if " = " in ln}
    assert "inherited from" in lines["alpha_shift"] and str(config) in lines["alpha_shift"]
    assert "chosen: the basis's k" in lines["k"]
    assert "default (not set in" in lines["act_bits"]
    # no ELaTTA mode ran: sigma0 is the config's, not chosen
    assert written["elatta"]["sigma0"] == 0.05 and "inherited" in lines["sigma0"]
    assert written["elatta"]["n_iter"] == 3 and written["elatta"]["mode"] == "cmvn_select"

    out = tmp_path / "build"
    argv = ["build", "--model", str(MODEL), "--basis", str(BASIS), "--config"]
    argv += [str(report_dir / "elatta.toml"), "--data", str(tiny), "--out", str(out), "--no-elf"]
    assert main(argv) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    built_cmvn = {k: manifest["elatta"]["stages"]["cmvn"][k] for k in written["cmvn"]}
    assert built_cmvn == written["cmvn"] == {k: measured[k] for k in written["cmvn"]}
    assert manifest["quant"] == written["quant"]
    assert (manifest["quant"]["calib_samples"], manifest["quant"]["weight_format"]) == (64, "max")
    assert manifest["target"] == written["target"]
    assert (manifest["target"]["uart"], manifest["target"]["prefix"]) == (1, "abc_")
    el = manifest["elatta"]
    assert (el["n_iter"], el["sigma0"], el["mode"]) == (3, 0.05, "cmvn_select")


def test_default_modes_are_the_deployed_one_and_skip_elattas_selection(
    tiny: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import elatta_measure.evaluate as ev

    calls: list[int] = []

    def selection_set(*args: object, **kw: object) -> None:
        calls.append(1)
        raise RuntimeError("selection ran")

    monkeypatch.setattr(ev, "selection_set", selection_set)
    report = _eval(tiny, tmp_path / "r", "--seeds", "3")
    printed = capsys.readouterr().out
    assert tuple(report["float"]) == ("no_adapt", "cmvn_select") and calls == []
    assert report["seconds"]["selection"] == 0.0
    assert report["config"]["chosen_by"]["sigma0"].startswith("inherited from configs/")
    assert report["config"]["seeded_modes"] == []
    # a deterministic mode runs once, whatever --seeds says: no spread is claimed for it
    assert len(report["gains"]["cmvn_select"]["additive/-10"]["per_seed_points"]) == 1
    assert "Deterministic (one run, no seed spread): No Adapt, cmvn select" in printed
    assert "±" not in printed.split("Did adaptation help?")[1].split("Safety")[0]
    assert "Not run: ELaTTA strict (strict): --elatta." in printed

    # --elatta is the one flag that adds the paper's method, and with it the selection
    with pytest.raises(RuntimeError, match="selection ran"):
        _eval(tiny, tmp_path / "r2", "--elatta")
    assert calls == [1]


def test_seeds_vary_elatta_and_leave_deterministic_modes_alone(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _eval(
        tiny,
        tmp_path / "r",
        "--elatta",
        "--seeds",
        "2",
        "--sigma0",
        "0.05",
        "--beta",
        "0.5",
        "--radius",
        "1.0",
    )
    printed = capsys.readouterr().out
    assert tuple(report["float"]) == ("no_adapt", "strict", "continual_bounded", "cmvn_select")
    assert report["config"]["seeded_modes"] == ["strict", "continual_bounded"]
    gains = report["gains"]
    assert len(gains["strict"]["clean"]["per_seed_points"]) == 2
    assert len(gains["continual_bounded"]["clean"]["per_seed_points"]) == 2
    assert len(gains["cmvn_select"]["clean"]["per_seed_points"]) == 1
    assert "seeds [0, 1] (the CMA-ES samples)" in printed
    # the flags chose sigma0, beta and radius for this model: the config records them as such
    written = tomllib.loads((tmp_path / "r" / "elatta.toml").read_text())["elatta"]
    assert (written["sigma0"], written["beta"], written["radius"]) == (0.05, 0.5, 1.0)
    assert written["model_sha256"] == report["model"]["sha256"]
