"""elt_norm_recip (firmware/elt_cmaes_s32.c, static): the active weights' ||z|| = max(isqrt(n), 1)
(Q.25) and its normalised reciprocal r = floor(2^(e+29) / ||z||), e = bit length of ||z||, from
one reciprocal square root, for n < 2^62 (||z|| < 2^31, cmaes_int.recip_norm's range). Compiled
for the host with the kernel source included; every n near a power of two and near the squares
around them (where the normalisation, the seed segments and the floor change) and a geometric
sweep over [0, 2^62) are checked against s = max(isqrt(n), 1) by s^2 <= max(n, 1) < (s + 1)^2 and
0 <= 2^(e+29) - r s < s in the C program, and a random sample against Python's math.isqrt and
// here."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
from cmaesharness import build_host_program

PROG = r"""
#include <stdio.h>
#include <stdlib.h>
#include "elt_cmaes_s32.c"

static int check(uint64_t n)
{
    int32_t r = 0;
    int e = 0;
    const uint64_t s = (uint64_t)elt_norm_recip(n, &r, &e);
    const uint64_t m = n > 0u ? n : 1u;
    const int64_t rem = (int64_t)((uint64_t)1 << (e + 29)) - (int64_t)r * (int64_t)s;
    if (s < 1u || s * s > m || (s + 1u) * (s + 1u) <= m || s >> (e - 1) != 1u || rem < 0 ||
        rem >= (int64_t)s) {
        printf("FAIL n %llu: s %llu r %d e %d\n", (unsigned long long)n, (unsigned long long)s, r,
               e);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long cnt = 0;
    int b;
    int64_t d;
    uint64_t n;
    if (argc > 1) { /* n from the command line: s r e per line */
        for (int i = 1; i < argc; i++) {
            int32_t r = 0;
            int e = 0;
            const int32_t s = elt_norm_recip(strtoull(argv[i], 0, 10), &r, &e);
            printf("%d %d %d\n", s, r, e);
        }
        return 0;
    }
    for (b = 0; b < 62; b++) { /* around 2^b and around the squares (2^(b/2) + j)^2 */
        for (d = -2048; d <= 2048; d++) {
            const int64_t q = ((int64_t)1 << b) + d;
            const uint64_t root = ((uint64_t)1 << (b / 2)) + (uint64_t)(d + 2048) / 64u;
            if (q >= 0 && q < ((int64_t)1 << 62)) {
                cnt++;
                if (check((uint64_t)q)) {
                    return 1;
                }
            }
            if (root * root + 1u < ((uint64_t)1 << 62)) {
                cnt += 3;
                if (check(root * root - 1u) || check(root * root) || check(root * root + 1u)) {
                    return 1;
                }
            }
        }
    }
    for (n = 1; n < ((uint64_t)1 << 62); n += n / 4096u + 1u) {
        cnt++;
        if (check(n)) {
            return 1;
        }
    }
    printf("OK %lu\n", cnt);
    return 0;
}
"""


def test_norm_recip_exact(tmp_path: Path) -> None:
    exe = build_host_program(tmp_path, "norm", PROG)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.startswith("OK "), out
    assert int(out.split()[1]) > 1_000_000
    rng = np.random.default_rng(25)
    ns = [0, 1, 2, 3, 4, *(int(v) for v in rng.integers(0, 2**62, 1500, dtype=np.uint64))]
    ns += [int(v) for v in np.exp2(rng.uniform(0, 62, 1500)).astype(np.uint64) if v < 2**62]
    rows = subprocess.run(
        [str(exe), *map(str, ns)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for n, row in zip(ns, rows, strict=True):
        s, r, e = map(int, row.split())
        want = max(math.isqrt(n), 1)
        assert (s, e, r) == (want, want.bit_length(), (1 << (want.bit_length() + 29)) // want), n
