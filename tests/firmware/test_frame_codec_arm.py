"""The device's frame codec (firmware/fw_frame.c) on the Cortex-A9 under QEMU, with the neon_a32
and the ref kernels' operations (firmware/kernels/*/fw_frame_ops.h): CRC-32 (carry-less
products; slice-by-8) against zlib.crc32 for every length 0 ... 2,100 and in pieces
(fw_crc32_update from a running value), and the in-place COBS decodes (their ARM code-byte walks:
the general one and the one for a frame that holds no zero) against the encoder on bodies from all
zeros to none."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from tests.buildkit import run_arm_probe

N = 2100

PROBE = r"""
#include <stdint.h>

#include "fw_frame.h"
#include "fw_probe_print.h"
#include "fw_uart.h"

static uint8_t buf[%(n)d + 16];
static uint8_t body[2100];
static uint8_t enc[2200];
static uint8_t enc2[2200];

/* Bodies of every zero density (none: full 254-byte blocks; all; between) and length: encoded,
 * decoded in place, compared; the count of those that do not come back. */
static uint32_t cobs_round_trips(uint32_t *x)
{
    uint32_t bad = 0;
    for (uint32_t t = 0; t < 200u; t++) {
        *x = *x * 1664525u + 1013904223u;
        const uint32_t len = (*x >> 8) %% 2100u;
        const uint32_t every = t %% 8u == 0u ? 1000000u : 1u + t %% 13u * (t %% 3u) * 20u;
        for (uint32_t i = 0; i < len; i++) {
            *x = *x * 1664525u + 1013904223u;
            body[i] = (*x >> 16) %% every == 0u ? 0u : (uint8_t)(1u + (*x >> 24) %% 255u);
        }
        const size_t n = fw_cobs_encode(body, len, enc);
        for (uint32_t i = 0; i < n; i++) {
            enc2[i] = enc[i];
        }
        size_t start = 0;
        size_t out = 0;
        const int st = fw_cobs_decode_in_place(enc, n, sizeof body, &start, &out);
        uint32_t ok = st == 0 && out == len;
        for (uint32_t i = 0; ok && i < len; i++) {
            ok = enc[start + i] == body[i];
        }
        /* the decode that relies on the frame holding no zero, as a COBS encoding never does */
        const int st2 = fw_cobs_decode_frame(enc2, n, sizeof body, &start, &out);
        ok = ok && st2 == 0 && out == len;
        for (uint32_t i = 0; ok && i < len; i++) {
            ok = enc2[start + i] == body[i];
        }
        bad += !ok;
    }
    return bad;
}

int main(void)
{
    fw_uart_init();
    uint32_t x = 0x12345678u;
    for (uint32_t i = 0; i < sizeof buf; i++) {
        x = x * 1664525u + 1013904223u; /* Numerical Recipes' LCG */
        buf[i] = (uint8_t)(x >> 24);
    }
    uint32_t all = 0;
    for (uint32_t n = 0; n <= %(n)du; n++) {
        /* every length at every start alignment in turn */
        const uint32_t c = fw_crc32(buf + (n & 7u), n);
        all = all * 31u + c;
        if (n == 2056u || n == 15u || n == 1024u) {
            put_u64(c);
        }
    }
    put_u64(all);
    /* in pieces: 7 + 1030 + 1019 bytes */
    uint32_t r = fw_crc32_update(0xFFFFFFFFu, buf, 7u);
    r = fw_crc32_update(r, buf + 7, 1030u);
    r = fw_crc32_update(r, buf + 1037, 1019u) ^ 0xFFFFFFFFu;
    put_u64(r);
    put_u64(cobs_round_trips(&x));
    fw_uart_write((const uint8_t *)"\nEND\n", 5u);
    for (;;) {
    }
}
"""


def expected() -> list[str]:
    x = 0x12345678
    buf = bytearray()
    for _ in range(N + 16):
        x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
        buf.append(x >> 24)
    out, all_ = [], 0
    for n in range(N + 1):
        c = zlib.crc32(bytes(buf[(n & 7) : (n & 7) + n]))
        all_ = (all_ * 31 + c) & 0xFFFFFFFF
        if n in (2056, 15, 1024):
            out.append(str(c))
    return [*out, str(all_), str(zlib.crc32(bytes(buf[:2056]))), "0"]


@pytest.mark.parametrize("variant", ["neon_a32", "ref"])
def test_device_crc32_and_cobs(tmp_path: Path, variant: str) -> None:
    from codegen.base.resources import firmware_dir
    from codegen.target.sources import VARIANTS

    main_c = tmp_path / "crc_main.c"
    main_c.write_text(PROBE % {"n": N})
    lines = run_arm_probe(
        tmp_path, [main_c, firmware_dir() / "fw_frame.c"], [], VARIANTS[variant].cflags, variant
    )
    assert " ".join(lines).split() == expected()
