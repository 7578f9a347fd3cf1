"""The IMA ADPCM decoder (``firmware/elt_adpcm.c``) on the Cortex-A9 under QEMU
``-icount shift=0`` (docs/targets.md §4): every block decoded once, timed with the global timer
around the call, its samples printed on UART0, so the same run is a bit-exactness check of the
ARM build against `codegen.base.adpcm.decode_block` and a cost measurement ("QEMU icount ticks",
about ten guest instructions each; docs/numeric.md §8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codegen.base.errors import CodegenError
from codegen.base.resources import firmware_dir
from codegen.emit.c import carray
from codegen.target.firmware import FirmwareConfig, render_config
from codegen.target.qemu_probe import link_probe, qemu_probe_lines

PROBE_MAIN = r"""
/* codegen/measure/bench_adpcm.py: "B ticks s0 s1 .." per block on UART0. */
#include <stdint.h>
#include "fw_timer.h"
#include "fw_probe_print.h"
#include "fw_uart.h"
#include "elt_adpcm.h"
#include "bad_data.h"
int main(void);
static int16_t out[BAD_MAX_SAMPLES];
int main(void)
{
    uint32_t b, j;
    fw_uart_init();
    fw_timer_init();
    for (b = 0; b < BAD_BLOCKS; ++b) {
        const uint32_t t0 = fw_timer_now32();
        elt_adpcm_decode(bad_bytes + bad_offset[b], bad_samples[b], out);
        const uint32_t t1 = fw_timer_now32();
        fw_uart_putc('B');
        fw_uart_putc(' ');
        put_s((int32_t)(t1 - t0));
        for (j = 0; j < bad_samples[b]; ++j) {
            put_s(out[j]);
        }
        fw_uart_putc('\n');
    }
    fw_uart_write((const uint8_t *)"END\n", 4u);
    fw_uart_flush();
    for (;;) {
    }
}
"""


@dataclass(frozen=True)
class AdpcmProbeRun:
    """Per block: the QEMU icount ticks of the call and the decoded samples."""

    ticks: tuple[int, ...]
    samples: tuple[np.ndarray, ...]


def _data_header(blocks: Sequence[bytes], sizes: Sequence[int]) -> str:
    offsets = np.cumsum([0, *(len(b) for b in blocks)])[:-1]
    data = b"".join(blocks)
    return "\n".join(
        [
            "#include <stdint.h>",
            f"#define BAD_BLOCKS {len(blocks)}u",
            f"#define BAD_MAX_SAMPLES {max(sizes)}u",
            f"static const uint8_t bad_bytes[{max(len(data), 1)}] = {{",
            carray(data or b"\0"),
            "};",
            f"static const uint32_t bad_offset[{len(blocks)}] = {{",
            carray(offsets.tolist()),
            "};",
            f"static const uint32_t bad_samples[{len(blocks)}] = {{",
            carray(sizes),
            "};",
            "",
        ]
    )


def run_adpcm_probe(blocks: Sequence[bytes], sizes: Sequence[int], work: Path) -> AdpcmProbeRun:
    """Decode ``blocks`` (of ``sizes`` samples each, >= 1) on the Cortex-A9 under QEMU -icount."""
    if not blocks or len(blocks) != len(sizes) or min(sizes) < 1:
        raise ValueError("run_adpcm_probe: one size >= 1 per block, at least one block")
    src = work / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "bad_data.h").write_text(_data_header(blocks, sizes))
    (src / "bad_main.c").write_text(PROBE_MAIN)
    inc = work / "include"
    inc.mkdir(parents=True, exist_ok=True)
    (inc / "fw_config.h").write_text(render_config(FirmwareConfig(), "fw-bench-adpcm", "0" * 64))
    elf = work / "adpcm.elf"
    fw = firmware_dir()
    link_probe(elf, [src / "bad_main.c", fw / "elt_adpcm.c"], includes=[inc, src])
    rows = [line.split() for line in qemu_probe_lines(elf, icount=True)]
    rows = [r for r in rows if r and r[0] == "B"]
    if len(rows) != len(blocks):
        raise CodegenError(f"ADPCM probe printed {len(rows)} blocks, expected {len(blocks)}")
    for r, n in zip(rows, sizes, strict=True):
        if len(r) != n + 2:
            raise CodegenError(f"ADPCM probe printed {len(r) - 2} samples, expected {n}")
    return AdpcmProbeRun(
        tuple(int(r[1]) for r in rows),
        tuple(np.array([int(v) for v in r[2:]], np.int16) for r in rows),
    )
