"""Ticks of each stage of the integer MFCC front end per 20 ms hop under QEMU -icount shift=0
(docs/targets.md §4), for the NEON build and -DELT_SCALAR: the probe includes
firmware/elt_mfcc_s16.c itself and times its static stage functions one by one (the timer reads
between them cost a few ticks each; the whole-frame figure is bench/frontend_ticks.py's, which
times the public call exactly as `codegen bench` does). Default MfccParams, a unit
normalisation, the synthetic clips of bench/frontend_ticks.py; the features are checked against
the Python twin on every word.

    python bench/frontend_stages.py [--clips 2] [--scalar]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

STAGE_MAIN = r"""
#include <stdint.h>
#include "fw_timer.h"
#include "fw_probe_print.h"
#include "fw_uart.h"
#include "bfe_mfcc_params.h"
#include "bfe_data.h"
#include "elt_mfcc_s16.c"
int main(void);
static elt_mfcc_work_t work;
static int16_t feat[BFE_MFCC_N_MFCC];
int main(void)
{
    const elt_mfcc_params_t *p = &bfe_mfcc_params;
    uint32_t c, t, j;
    fw_uart_init();
    fw_timer_init();
    for (c = 0; c < BFE_CLIPS; ++c) {
        for (t = 0; t < BFE_FRAMES; ++t) {
            const int16_t *x = bfe_pcm + c * BFE_SAMPLES + t * BFE_MFCC_HOP_LENGTH;
            uint64_t s[6];
            int32_t sh;
            s[0] = fw_timer_now();
#if ELT_NEON
            sh = mfcc_head(p, x, work.z);
            s[1] = fw_timer_now();
            mfcc_fft_neon(p, work.z, 4);
#else
            sh = mfcc_load(p, x, work.z);
            s[1] = fw_timer_now();
            mfcc_fft(p, work.z, 1);
#endif
            s[2] = fw_timer_now();
            mfcc_power(p, work.z, work.p);
            s[3] = fw_timer_now();
            mfcc_mel(p, &work, sh);
            s[4] = fw_timer_now();
            mfcc_dct(p, &work, feat);
            s[5] = fw_timer_now();
            fw_uart_putc('S');
            fw_uart_putc(' ');
            for (j = 0; j < 5; ++j) {
                put_s((int32_t)(s[j + 1] - s[j]));
            }
            for (j = 0; j < BFE_MFCC_N_MFCC; ++j) {
                put_s(feat[j]);
            }
            fw_uart_putc('\n');
        }
    }
    fw_uart_write((const uint8_t *)"END\n", 4u);
    fw_uart_flush();
    for (;;) {
    }
}
"""
STAGES = ("window + exponent + FFT head", "FFT stages", "split + power", "mel + log2", "DCT")


def main() -> int:
    from frontend_ticks import clips

    from codegen.base.features import MfccParams
    from codegen.base.qformat import QFormat
    from codegen.base.resources import firmware_dir
    from codegen.emit.mfcc import emit_mfcc_c, mfcc_cflags
    from codegen.intref.mfcc import mfcc_int
    from codegen.measure.bench_frontend import _data_header, _fw_config
    from codegen.quantize.mfcc import quantize_mfcc
    from codegen.target.qemu_probe import link_probe, qemu_probe_lines

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clips", type=int, default=2)
    ap.add_argument("--scalar", action="store_true", help="also the -DELT_SCALAR build")
    a = ap.parse_args()
    p = MfccParams()
    q = quantize_mfcc(p, np.zeros(p.n_mfcc), np.ones(p.n_mfcc), QFormat(4, 11))
    pcm = clips(a.clips)
    frames = 1 + (pcm.shape[1] - p.win_length) // p.hop_length
    ref = mfcc_int(pcm, q).reshape(-1, p.n_mfcc)
    work = Path(tempfile.mkdtemp(prefix="fe_stages_"))
    src, inc = work / "src", work / "include"
    src.mkdir(parents=True)
    for name, text in emit_mfcc_c(q, "bfe_").items():
        (src / name).write_text(text)
    (src / "bfe_data.h").write_text(_data_header(pcm, frames))
    (src / "stage_main.c").write_text(STAGE_MAIN)
    _fw_config(inc)
    for name, scalar in (("neon", False), ("scalar", True))[: 2 if a.scalar else 1]:
        elf = link_probe(
            work / f"{name}.elf",
            [src / "stage_main.c", src / "bfe_mfcc_params.c"],
            cflags=[*mfcc_cflags(q), *(["-DELT_SCALAR"] if scalar else [])],
            includes=[inc, src, firmware_dir()],
        )
        rows = np.asarray(
            [[int(v) for v in ln.split()[1:]] for ln in qemu_probe_lines(elf, icount=True)
             if ln.startswith("S ")], np.int64,
        )  # fmt: skip
        bad = int((rows[:, 5:] != ref).sum())
        med = [statistics.median_low(rows[:, i].tolist()) for i in range(5)]
        print(f"{name}: median ticks per hop by stage ({len(rows)} frames, {bad} words differ)")
        for s, v in zip(STAGES, med, strict=True):
            print(f"  {s:32s} {v:6d}")
        print(f"  {'sum':32s} {sum(med):6d}")
        if bad:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
