"""The compiler's version, stamped into generated files, the firmware config and the manifest.
`pyproject.toml` reads it from here (``[tool.setuptools.dynamic]``), so the distribution and the
stamps cannot disagree."""

__version__ = "0.1.0"
