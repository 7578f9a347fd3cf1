"""Bad inputs of `codegen data`, `codegen build` and `codegen eval`, as a user types them
(`python -m codegen ...` in a subprocess): exit code 2, no traceback, and one error line that
names the bad value and how to fix it: the commands a new user runs before a device is
involved."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from repopaths import ROOT

from codegen.data import build as build_data

MODEL = str(ROOT / "models/default/model.pt")
BASIS = str(ROOT / "models/default/basis.npz")
CONFIG = str(ROOT / "configs/default.toml")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The tiny data set and a foreign .npz (arrays, but not a basis)."""
    work = tmp_path_factory.mktemp("cli_errors")
    data = work / "data"
    build_data(data, preset="tiny", tier="numpy", progress=False)
    foreign = work / "foreign.npz"
    np.savez(foreign, a=np.arange(3))
    return {"data": str(data), "foreign": str(foreign), "work": str(work)}


def _codegen(argv: list[str], cwd: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "codegen", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


# (argv with {data}/{foreign}/{work} filled in, the cause it must name, the fix it must give)
CASES: list[tuple[str, list[str], str, str]] = [
    ("data-out-under-a-file", ["data", "--out", "/dev/null/x"], "--out /dev/null/x", "choose"),
    (
        "build-model-is-a-directory",
        ["build", "--model", "models", "--basis", BASIS, "--config", CONFIG]
        + ["--data", "{data}", "--out", "{work}/b1", "--no-elf"],
        "--model models is a directory",
        "pass the model file itself",
    ),
    (
        "build-foreign-basis",
        ["build", "--model", MODEL, "--basis", "{foreign}", "--config", CONFIG]
        + ["--data", "{data}", "--out", "{work}/b2", "--no-elf"],
        "{foreign} is not a basis file",
        "codegen basis --model",
    ),
    (
        "build-config-missing",
        ["build", "--model", MODEL, "--basis", BASIS, "--config", "{work}/none.toml"]
        + ["--data", "{data}", "--out", "{work}/b3", "--no-elf"],
        "{work}/none.toml: not found",
        "pass a TOML build config",
    ),
    (
        "build-no-data-set",
        ["build", "--model", MODEL, "--basis", BASIS, "--config", CONFIG]
        + ["--data", "{work}/nothing", "--out", "{work}/b4", "--no-elf"],
        "no data set here",
        "codegen data --out",
    ),
    (
        "eval-seeds-0",
        ["eval", "--model", MODEL, "--basis", BASIS, "--data", "{data}"]
        + ["--report", "{work}/e1", "--seeds", "0"],
        "--seeds 0",
        "e.g. --seeds 3",
    ),
    (
        "eval-foreign-basis",
        ["eval", "--model", MODEL, "--basis", "{foreign}", "--data", "{data}"]
        + ["--report", "{work}/e2", "--no-progress"],
        "{foreign} is not a basis file",
        "codegen basis --model",
    ),
    (
        "eval-report-under-a-file",
        ["eval", "--model", MODEL, "--basis", BASIS, "--data", "{data}"]
        + ["--report", "/dev/null/x"],
        "--report /dev/null/x: cannot write there",
        "choose a directory",
    ),
    (
        "eval-config-not-toml",
        ["eval", "--model", MODEL, "--basis", BASIS, "--data", "{data}"]
        + ["--report", "{work}/e3", "--config", "{foreign}"],
        "{foreign}: not valid TOML",
        "pass a TOML build config",
    ),
]


@pytest.mark.parametrize(
    ("argv", "cause", "fix"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_bad_input_is_one_line_with_the_cause_and_the_fix(
    inputs: dict[str, str], argv: list[str], cause: str, fix: str
) -> None:
    argv = [a.format(**inputs) for a in argv]
    done = _codegen(argv, cwd=str(ROOT))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith(f"codegen {argv[0]}: error:")]
    assert len(errors) == 1, done.stderr
    # the other lines, if any, are the build's stage lines ("build: reading ... (0 s)")
    others = [ln for ln in done.stderr.splitlines() if ln and ln not in errors]
    assert all(ln.startswith(f"{argv[0]}: ") for ln in others), others
    assert cause.format(**inputs) in errors[0] and fix in errors[0], errors[0]


def test_eval_finds_the_checkouts_config_from_another_directory(tmp_path: Path) -> None:
    """Without --config, `codegen eval` takes the model's config from the checkout's configs/
    wherever it is started (it read ./configs only, and failed elsewhere)."""
    from elatta_measure.evaluate import config_for_model

    here = Path.cwd()
    try:
        os.chdir(tmp_path)
        assert Path(config_for_model(Path(MODEL))) == ROOT / "configs/default.toml"
        fsdd = ROOT / "models/fsdd/model.pt"
        assert Path(config_for_model(fsdd)) == ROOT / "configs/fsdd.toml"
    finally:
        os.chdir(here)
