"""Write every checked-in generated file from its one description (`make generate`), or with
``--check`` say which ones are stale (exit 1) without writing.

The generated files and what each comes from:

- firmware/elt_modes.h: the device's modes, codegen/ir/modes.py;
- firmware/fw_app_wire.h: the model runtime's payload offsets, codegen/ir/wire.py;
- firmware/fw_link_wire.h: the link layer's payload offsets (INFO, STATUS, ...),
  codegen/ir/link_wire.py;
- firmware/fw_crc32_tables.h: the frame codec's CRC-32 tables, tools/gen_crc32_tables.py.

The C headers go through the pinned clang-format (the test extra of pyproject.toml) as
`make lint` checks them; tests/tools/test_generated.py runs ``--check``.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent  # where the generated files are written


@dataclass(frozen=True)
class Generated:
    path: str  # inside the repository
    source: str  # what it is generated from
    render: Callable[[], str]  # its text before clang-format
    clang_format: bool = True


def _modes() -> str:
    from codegen.ir import modes

    return modes.render_c_header()


def _wire() -> str:
    from codegen.ir import wire

    return wire.render_c_header()


def _link_wire() -> str:
    from codegen.ir import link_wire

    return link_wire.render_c_header()


def _crc32() -> str:
    spec = importlib.util.spec_from_file_location("gen_crc32_tables", TOOLS / "gen_crc32_tables.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return str(mod.render())


FILES: tuple[Generated, ...] = (
    Generated("firmware/elt_modes.h", "codegen/ir/modes.py", _modes),
    Generated("firmware/fw_app_wire.h", "codegen/ir/wire.py", _wire),
    Generated("firmware/fw_link_wire.h", "codegen/ir/link_wire.py", _link_wire),
    # its tables are laid out by hand (clang-format off inside): written as rendered
    Generated("firmware/fw_crc32_tables.h", "tools/gen_crc32_tables.py", _crc32, False),
)


def clang_format() -> str:
    exe = shutil.which("clang-format", path=str(Path(sys.executable).parent)) or shutil.which(
        "clang-format"
    )
    if exe is None:
        raise SystemExit(
            "clang-format not found: run `make setup` (it installs the pinned one in .venv)"
        )
    return exe


def text_of(g: Generated) -> str:
    text = g.render()
    if not g.clang_format:
        return text
    return subprocess.run(
        [clang_format(), f"--assume-filename={g.path}"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout


def stale() -> list[Generated]:
    """The generated files whose committed text is not what their description gives."""
    out = []
    for g in FILES:
        f = ROOT / g.path
        if not f.is_file() or f.read_text() != text_of(g):
            out.append(g)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="list stale files, write nothing")
    args = ap.parse_args(argv)
    if args.check:
        old = stale()
        for g in old:
            print(f"{g.path}: stale, not what {g.source} gives (run `make generate`)")
        if not old:
            print(f"{len(FILES)} generated files up to date")
        return 1 if old else 0
    for g in FILES:
        f = ROOT / g.path
        text = text_of(g)
        if f.is_file() and f.read_text() == text:
            print(f"{g.path}: up to date")
            continue
        f.write_text(text)
        print(f"{g.path}: written from {g.source}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
