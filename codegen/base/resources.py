"""Locate the data directories that ship with the compiler.

In a source checkout (editable install) ``templates/`` and ``firmware/`` sit at the repository
root, next to the ``codegen`` package; a wheel carries them inside the package as
``codegen/templates`` and ``codegen/firmware`` (pyproject.toml ``package-dir``).
"""

from __future__ import annotations

from pathlib import Path

import jinja2

_PKG = Path(__file__).resolve().parents[1]  # the codegen package (this file: codegen/base/)


def _find(name: str) -> Path:
    for candidate in (_PKG.parent / name, _PKG / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"{name}/ not found next to the codegen package ({_PKG.parent / name}) or inside it "
        f"({_PKG / name}); reinstall the package"
    )


def templates_dir() -> Path:
    return _find("templates")


def firmware_dir() -> Path:
    return _find("firmware")


def jinja_env() -> jinja2.Environment:
    """Templates only format (docs/architecture.md §4): undefined names fail, output is stable."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
