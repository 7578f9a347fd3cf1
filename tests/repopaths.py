"""Where the tests find the repository, whatever folder a test file sits in (tests/<package>/,
tests/codegen/<subpackage>/): ROOT is the checkout, TESTS is tests/, which holds the shared helper
modules and the C probes and data the tests compile or read (neonprobe/, intharness/, regfile/,
memprobe/, data/)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
