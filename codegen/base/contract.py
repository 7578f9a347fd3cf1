"""The numeric contract's fixed constants: formats, limits and table sizes that the quantizer,
the C emitter, the integer reference and the firmware headers (``firmware/elt_types.h``) share.

They are decisions of the integer design (docs/numeric.md §5, docs/cmaes.md §6), not of any
one build: the quantizer checks a configuration against the limits, the emitter writes the
formats into comments and the C, the reference computes in them.
"""

from __future__ import annotations

import math

X_FRAC = 27  # m, x, y, p_c, p_σ, p: Q4.27
Z_FRAC = 28  # z: Q3.28
C_FRAC = 26  # C, A: Q5.26
RATE_FRAC = 30  # Q1.30
GAIN_FRAC = 28  # Q3.28
LNSIG_FRAC = 23  # ln σ: Q8.23
NORM2_FRAC = 46  # squared norms (int64)
NORM_FRAC = 23  # norms (isqrt of Q.46)
PIVOT_EPS = 64  # smallest Cholesky pivot, Q5.26 (≈ 9.5e-7; A_jj ≥ 2^-10)
LNSIG_MIN = round(-20 * math.log(2.0) * (1 << LNSIG_FRAC))  # σ ≥ 2^-20
LNSIG_MAX = round(4 * math.log(2.0) * (1 << LNSIG_FRAC))  # σ ≤ 16
SIGMA_MIN = 2.0**-20
SIGMA_MAX = 16.0
K_MAX = 32
LAM_MAX = 32
N_ITER_MAX = 64
H_FRAC = 26  # entropy Q5.26 (int32)
MAX_CLASSES = 256  # keeps T·2²⁶ < 2⁶³ in the entropy kernel (codegen/intref/entropy.py)
