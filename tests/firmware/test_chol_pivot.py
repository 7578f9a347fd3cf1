"""elt_chol_pivot (firmware/elt_cmaes_s32.c, static): the Cholesky pivot A_jj = floor(sqrt(p 2^26))
and the column reciprocal r = floor(2^(e+29) / A_jj), e = bit length of A_jj, from one reciprocal
square root. Compiled for the host with the kernel source included; every pivot near a power of
two (where the normalisation and the seed segments change) and a stride over the whole range
[ELT_PIVOT_EPS, 2^31) are checked against s^2 <= p 2^26 < (s + 1)^2 and 0 <= 2^(e+29) - r s < s
in the C program, and a random sample against Python's math.isqrt and // here."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cmaesharness import build_host_program

PROG = r"""
#include <stdio.h>
#include <stdlib.h>
#include "elt_cmaes_s32.c"

static int check(uint32_t p)
{
    int32_t r = 0;
    int e = 0;
    const uint32_t s = (uint32_t)elt_chol_pivot(p, &r, &e);
    const uint64_t n = (uint64_t)p << ELT_C_FRAC;
    const int64_t rem = (int64_t)((uint64_t)1 << (e + 29)) - (int64_t)r * s;
    if ((uint64_t)s * s > n || (uint64_t)(s + 1u) * (s + 1u) <= n || s >> (e - 1) != 1u ||
        rem < 0 || rem >= (int64_t)s) {
        printf("FAIL p %u: s %u r %d e %d\n", p, s, r, e);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long n = 0;
    uint32_t p;
    int b;
    int32_t d;
    if (argc > 1) { /* pivots from the command line: s r e per line */
        for (int i = 1; i < argc; i++) {
            int32_t r = 0;
            int e = 0;
            p = (uint32_t)strtoul(argv[i], 0, 10);
            const int32_t s = elt_chol_pivot(p, &r, &e);
            printf("%d %d %d\n", s, r, e);
        }
        return 0;
    }
    for (b = 6; b <= 31; b++) {
        for (d = -4096; d <= 4096; d++) {
            const int64_t q = ((int64_t)1 << b) + d;
            if (q >= ELT_PIVOT_EPS && q < ((int64_t)1 << 31)) {
                if (check((uint32_t)q)) {
                    return 1;
                }
                n++;
            }
        }
    }
    for (p = ELT_PIVOT_EPS; p < 0x80000000u - 61u; p += 61u) {
        if (check(p)) {
            return 1;
        }
        n++;
    }
    printf("OK %lu\n", n);
    return 0;
}
"""


@pytest.mark.slow
def test_chol_pivot_exact(tmp_path: Path) -> None:
    exe = build_host_program(tmp_path, "pivot", PROG)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.startswith("OK "), out
    assert int(out.split()[1]) > 35_000_000
    ps = np.random.default_rng(16).integers(64, 2**31, 2000).tolist()
    rows = subprocess.run(
        [str(exe), *map(str, ps)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for p, row in zip(ps, rows, strict=True):
        s, r, e = map(int, row.split())
        want = math.isqrt(p << 26)
        assert (s, e, r) == (want, want.bit_length(), (1 << (want.bit_length() + 29)) // want), p
