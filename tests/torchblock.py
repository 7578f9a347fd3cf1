"""Run Python with torch made unimportable: what a user without torch gets, for the checks that
reading and running a build directory needs no torch."""

from __future__ import annotations

import sys

# prepended to a `python -c` program: any import of torch raises ImportError from then on
TORCH_BLOCKER = """import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked for this check")
        return None
sys.meta_path.insert(0, _NoTorch())
"""


def codegen_without_torch() -> list[str]:
    """The command prefix of `codegen` run with torch blocked (arguments follow)."""
    code = TORCH_BLOCKER + "from codegen.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return [sys.executable, "-c", code]
