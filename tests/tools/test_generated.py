"""Every checked-in generated file is what its description gives (`make generate` writes them
all: tools/generate.py), and the check notices a stale one."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from repopaths import ROOT


def _generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate", ROOT / "tools" / "generate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["generate"] = mod  # its dataclass looks its module up
    spec.loader.exec_module(mod)
    return mod


def test_every_generated_file_is_current() -> None:
    gen = _generate()
    assert [g.path for g in gen.stale()] == [], "run `make generate`"
    assert {g.path for g in gen.FILES} >= {
        "firmware/elt_modes.h",
        "firmware/fw_app_wire.h",
        "firmware/fw_crc32_tables.h",
    }


def test_a_stale_file_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gen = _generate()
    first = gen.FILES[0]
    copy = tmp_path / first.path
    copy.parent.mkdir(parents=True)
    copy.write_text((ROOT / first.path).read_text().replace("#define", "#define  ", 1))
    (tmp_path / ".clang-format").write_text((ROOT / ".clang-format").read_text())
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    for g in gen.FILES[1:]:
        (tmp_path / g.path).write_text((ROOT / g.path).read_text())
    assert [g.path for g in gen.stale()] == [first.path]
