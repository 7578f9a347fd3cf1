"""ELaTTA in float64: a pycma-4.5.0-equivalent CMA-ES and the float reference of the adaptation.

`cmaes` is the CMA-ES written from the equations of `docs/cmaes.md` §1; `float_ref`
is the float ELaTTA reference (no-adapt, strict, continual, continual-bounded, QELaTTA-V1) that
the fixed-point reference and the firmware are measured against. See `docs/elatta.md`.
"""

from codegen.elatta.cmaes import Cmaes, CmaesParams, CmaesState, default_popsize, expected_norm

__all__ = ["Cmaes", "CmaesParams", "CmaesState", "default_popsize", "expected_norm"]
