"""templates/ and firmware/ are found from an editable install and from a built wheel, which
carries every import root (docs/architecture.md §8) and the version of codegen/base/version.py."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from repopaths import ROOT

from codegen.base.resources import firmware_dir, jinja_env, templates_dir
from codegen.base.version import __version__


def test_source_checkout_layout() -> None:
    assert templates_dir() == ROOT / "templates"
    assert firmware_dir() == ROOT / "firmware"
    assert jinja_env().get_template("fw_config.h.j2")


def test_wheel_carries_templates_and_firmware(tmp_path: Path) -> None:
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    # pyproject.toml tells setuptools every package and the licence as it wants them: no
    # deprecation or "absent from the `packages` configuration" warning per folder
    assert "BuildBackendWarning" not in built.stdout + built.stderr
    (wheel,) = tmp_path.glob("*.whl")
    assert wheel.name.startswith(f"elatta_codegen-{__version__}-")
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in ("codegen/cli.py", "elatta_host/run.py", "elatta_measure/evaluate.py"):
        assert module in names
    for root, folder in (("elatta_host", "host"), ("elatta_measure", "measure")):
        assert {f"{root}/{p.name}" for p in (ROOT / folder).glob("*.py")} <= names, root
    assert not any(n.startswith("codegen/measure/") for n in names)
    assert "codegen/templates/fw_config.h.j2" in names
    # every file of firmware/ (kernels/*, board/*, host/ included): a build from the wheel
    # compiles the same sources as one from the checkout
    shipped = {
        f"codegen/firmware/{p.relative_to(ROOT / 'firmware').as_posix()}"
        for p in (ROOT / "firmware").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert {
        "codegen/firmware/board/zynq7000/startup.S",
        "codegen/firmware/kernels/neon_a32/elt_lstm_s16_ops.h",
        "codegen/firmware/kernels/ref/elt_lstm_s16_ops.h",
        "codegen/firmware/host/server_stdio.c",
    } <= shipped
    assert sorted(shipped - names) == []
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from codegen.base.resources import templates_dir, firmware_dir;"
            "import elatta_measure.evaluate as e;"
            "print(templates_dir()); print(firmware_dir()); print(e.__file__)",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(site)},
    ).stdout.split()
    assert out == [
        str(site / "codegen" / "templates"),
        str(site / "codegen" / "firmware"),
        str(site / "elatta_measure" / "evaluate.py"),
    ]
