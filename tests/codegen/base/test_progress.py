"""Progress in a log: codegen.base.progress writes one plain line at each tenth of the way when
stderr is not a terminal (no carriage-return redraws), and it is the only module that uses tqdm,
so every long step of the product logs the same way."""

from __future__ import annotations

import re

import pytest
from repopaths import ROOT

from codegen.base.progress import bar, each


def test_each_in_a_log_writes_a_line_per_tenth(capsys: pytest.CaptureFixture[str]) -> None:
    got = list(each(range(25), "demo step", "clip"))
    assert got == list(range(25))
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    percents = [int(m.group(1)) for ln in lines if (m := re.search(r"\((\d+) %", ln))]
    assert percents == sorted(set(percents)) and percents[-1] == 100, lines
    assert len(lines) <= 11 and lines[-1].startswith("demo step: 25/25 clip (100 %"), lines


def test_a_disabled_bar_is_silent(capsys: pytest.CaptureFixture[str]) -> None:
    with bar(10, "quiet", enabled=False) as b:
        b.update(10)
    assert list(each([1, 2], "quiet", enabled=False)) == [1, 2]
    assert capsys.readouterr().err == ""


def test_only_the_progress_module_uses_tqdm() -> None:
    users = [
        str(p.relative_to(ROOT))
        for pkg in ("codegen", "host", "measure")
        for p in (ROOT / pkg).rglob("*.py")
        if re.search(r"^\s*(from tqdm|import tqdm)", p.read_text(), re.M)
    ]
    assert users == ["codegen/base/progress.py"], users
