"""The device's CRC-32 (firmware/fw_frame.c) on the Cortex-A9 under QEMU, NEON (carry-less
products) and -DELT_SCALAR (slice-by-8) builds, against zlib.crc32 for every length 0 ... 2,100
and pieces of any split (fw_crc32_update from a running value)."""

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
    return [*out, str(all_), str(zlib.crc32(bytes(buf[:2056])))]


@pytest.mark.parametrize("cflags", [(), ("-DELT_SCALAR",)], ids=["neon", "scalar"])
def test_device_crc32_equals_zlib(tmp_path: Path, cflags: tuple[str, ...]) -> None:
    from codegen.base.resources import firmware_dir

    main_c = tmp_path / "crc_main.c"
    main_c.write_text(PROBE % {"n": N})
    lines = run_arm_probe(tmp_path, [main_c, firmware_dir() / "fw_frame.c"], [], cflags)
    assert " ".join(lines).split() == expected()
