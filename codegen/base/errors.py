"""Typed errors shared by the compiler and the host bench.

Every message names the offending value and what is allowed, so the CLI can print it as is.
"""

from __future__ import annotations


class CodegenError(Exception):
    """Base class: an error the user can act on (bad input, missing tool, device trouble)."""


class ToolMissingError(CodegenError):
    """An external program is not installed; the message names the Debian package to install."""

    def __init__(self, tool: str, package: str) -> None:
        super().__init__(
            f"{tool} not found on PATH: install the Debian package {package} "
            f"(sudo apt-get install {package}, or run `make setup`)"
        )
        self.tool = tool
        self.package = package


class ConfigError(CodegenError):
    """A configuration value is out of range or of the wrong kind."""


class BuildError(CodegenError):
    """The cross compiler or linker failed; the message carries its output."""
