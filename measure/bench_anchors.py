"""FFT anchors for the front end under QEMU (docs/targets.md §4): ticks of one n_fft-point real
FFT (1024 for the default front end) of third-party fixed-point libraries, built at bench time
for the same Cortex-A9 with the same flags, beside our own transform (firmware/elt_mfcc_s16.c:
window, block exponent, FFT, real split and power of the weighted bins, timed stage by stage by
`elatta_measure.bench_frontend.run_stages`).

- **Ne10** (projectNe10/Ne10, BSD-3-Clause): ``ne10_fft_r2c_1d_int16_neon`` and
  ``ne10_fft_r2c_1d_int32_neon`` (its ARMv7 NEON assembly radix-4/8 kernels and their C
  drivers), scaled (``scaled_flag`` 1: no overflow for any input) and unscaled. Never vendored:
  the bench compiles an unmodified source subset from a folder given by ``--anchors`` (default:
  ``anchors`` in the ``shared`` folder beside the repository), and reports the anchor unavailable,
  by name, when the folder is absent or does not build.
- **CMSIS-DSP** 1.10.3 ``arm_rfft_q15`` (fetched from PyPI by `bench_frontend.fetch_cmsis`):
  its Neon build (the rfft from its Ne10 port) and its portable C.

Each probe transforms every frame of the front-end clips (the frame zero-padded to n_fft; int32
inputs are the samples in Q31) and prints the ticks of each call; the summary is the median.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import numpy as np
from elatta_measure.bench_frontend import (
    ANCHOR_RAM_BUDGET,
    CMSIS_SOURCES,
    CMSIS_VERSION,
    _data_header,
    _fw_config,
    _gcc,
    _run_qemu,
    arm_cpu_flags,
    cmsis_includes,
    cmsis_sources,
    compile_cmsis,
    fetch_cmsis,
)

from codegen.base.errors import CodegenError
from codegen.target.qemu_probe import link_probe
from codegen.target.toolchain import find_tool

ROOT = Path(__file__).resolve().parents[1]
# Where the bench looks for the anchor sources unless --anchors says otherwise.
DEFAULT_ANCHORS = ROOT.parent / "shared" / "anchors"

# The Ne10 subset the real FFTs reach: the C drivers, the NEON intrinsics stages, the ARMv7 NEON
# assembly kernels (assembled through the C preprocessor) and the shared FFT helpers.
NE10_SOURCES: tuple[str, ...] = (
    "modules/dsp/NE10_fft.c",
    "modules/dsp/NE10_fft_int16.c",
    "modules/dsp/NE10_fft_int16.neon.c",
    "modules/dsp/NE10_fft_int16.neon.s",
    "modules/dsp/NE10_fft_int32.c",
    "modules/dsp/NE10_fft_int32.neon.c",
    "modules/dsp/NE10_fft_int32.neon.s",
)
NE10_INCLUDES: tuple[str, ...] = ("inc", "common", "modules/dsp")
NE10_CFLAGS: tuple[str, ...] = (
    "-std=gnu11",
    "-O2",
    "-ffreestanding",
    "-ffunction-sections",
    "-fdata-sections",
    "-mno-unaligned-access",
    "-w",  # third-party code: its warnings are not ours to fix
)
NE10_DEFINES: tuple[str, ...] = (
    "-DNDEBUG",  # its asserts would pull newlib's stdio and system calls into the probe
    "-DENABLE_NE10_FFT_C2C_INT16_NEON",
    "-DENABLE_NE10_FFT_C2C_INT32_NEON",
)
# Probe rows: "A <variant> ticks" per frame, variant = index into NE10_VARIANTS.
NE10_VARIANTS: tuple[str, ...] = (
    "ne10_int16_scaled",
    "ne10_int16_unscaled",
    "ne10_int32_scaled",
    "ne10_int32_unscaled",
)

NE10_MAIN = r"""
/* measure/bench_anchors.py: Ne10's real FFTs on every frame of the embedded clips;
 * "A variant clip frame ticks" per call on UART0. Ne10 allocates its plans with malloc: a bump
 * allocator over a static arena serves them (the probe never frees). */
#include <stddef.h>
#include <stdint.h>
#include "NE10_dsp.h"
#include "fw_timer.h"
#include "fw_probe_print.h"
#include "fw_uart.h"
#include "bfe_data.h"
int main(void);
void *malloc(size_t n);
void free(void *p);
static uint8_t arena[AN_ARENA] __attribute__((aligned(16)));
static size_t arena_used;
void *malloc(size_t n)
{
    void *p;
    n = (n + 15u) & ~(size_t)15u;
    if (arena_used + n > sizeof arena) {
        return NULL;
    }
    p = arena + arena_used;
    arena_used += n;
    return p;
}
void free(void *p)
{
    (void)p;
}
/* Ne10's generic-radix int32 butterflies (lengths with factors other than 2 and 4) are outside
 * the subset: a power-of-two transform never calls them, and if it did the probe stops without
 * its rows, so the anchor is reported unavailable. */
static void unsupported(void)
{
    fw_uart_write((const uint8_t *)"NE10 GENERIC RADIX\nEND\n", 23u);
    fw_uart_flush();
    for (;;) {
    }
}
#define AN_GENERIC(name)                                                                        \
    void name(ne10_fft_cpx_int32_t *o, const ne10_fft_cpx_int32_t *i, const ne10_int32_t *f,    \
              const ne10_fft_cpx_int32_t *t, ne10_fft_cpx_int32_t *b, const ne10_int32_t s);    \
    void name(ne10_fft_cpx_int32_t *o, const ne10_fft_cpx_int32_t *i, const ne10_int32_t *f,    \
              const ne10_fft_cpx_int32_t *t, ne10_fft_cpx_int32_t *b, const ne10_int32_t s)     \
    {                                                                                           \
        (void)o, (void)i, (void)f, (void)t, (void)b, (void)s;                                   \
        unsupported();                                                                          \
    }
AN_GENERIC(ne10_mixed_radix_generic_butterfly_int32_c)
AN_GENERIC(ne10_mixed_radix_generic_butterfly_inverse_int32_c)
AN_GENERIC(ne10_mixed_radix_generic_butterfly_int32_neon)
AN_GENERIC(ne10_mixed_radix_generic_butterfly_inverse_int32_neon)
static ne10_int16_t in16[AN_FFT] __attribute__((aligned(16)));
static ne10_int32_t in32[AN_FFT] __attribute__((aligned(16)));
static ne10_fft_cpx_int16_t out16[AN_FFT / 2 + 1] __attribute__((aligned(16)));
static ne10_fft_cpx_int32_t out32[AN_FFT / 2 + 1] __attribute__((aligned(16)));
static void row(uint32_t v, uint32_t c, uint32_t t, uint64_t t0, uint64_t t1)
{
    fw_uart_putc('A');
    fw_uart_putc(' ');
    put_s((int32_t)v);
    put_s((int32_t)c);
    put_s((int32_t)t);
    put_s((int32_t)(t1 - t0));
    fw_uart_putc('\n');
}
int main(void)
{
    uint32_t c, t, j, s;
    ne10_fft_r2c_cfg_int16_t cfg16;
    ne10_fft_r2c_cfg_int32_t cfg32;
    fw_uart_init();
    fw_timer_init();
    cfg16 = ne10_fft_alloc_r2c_int16(AN_FFT);
    cfg32 = ne10_fft_alloc_r2c_int32(AN_FFT);
    fw_uart_putc('U');
    fw_uart_putc(' ');
    put_s((int32_t)arena_used);
    fw_uart_putc('\n');
    if (cfg16 == NULL || cfg32 == NULL) {
        fw_uart_write((const uint8_t *)"INIT FAILED\nEND\n", 16u);
        fw_uart_flush();
        for (;;) {
        }
    }
    for (c = 0; c < BFE_CLIPS; ++c) {
        for (t = 0; t < BFE_FRAMES; ++t) {
            const int16_t *x = bfe_pcm + c * BFE_SAMPLES + t * AN_HOP;
            for (j = 0; j < AN_FFT; ++j) {
                in16[j] = j < AN_WIN ? x[j] : 0;
                in32[j] = (ne10_int32_t)((uint32_t)(int32_t)in16[j] << 16);
            }
            for (s = 0; s < 2; ++s) {
                uint64_t t0 = fw_timer_now();
                ne10_fft_r2c_1d_int16_neon(out16, in16, cfg16, 1 - (ne10_int32_t)s);
                uint64_t t1 = fw_timer_now();
                row(s, c, t, t0, t1);
            }
            for (s = 0; s < 2; ++s) {
                uint64_t t0 = fw_timer_now();
                ne10_fft_r2c_1d_int32_neon(out32, in32, cfg32, 1 - (ne10_int32_t)s);
                uint64_t t1 = fw_timer_now();
                row(2 + s, c, t, t0, t1);
            }
        }
    }
    fw_uart_write((const uint8_t *)"END\n", 4u);
    fw_uart_flush();
    for (;;) {
    }
}
"""

CMSIS_RFFT_MAIN = r"""
/* measure/bench_anchors.py: CMSIS-DSP arm_rfft_q15 on every frame of the embedded
 * clips; "A 0 clip frame ticks" per call on UART0. */
#include <stdint.h>
#include "arm_math.h"
#include "fw_timer.h"
#include "fw_probe_print.h"
#include "fw_uart.h"
#include "bfe_data.h"
int main(void);
static arm_rfft_instance_q15 S;
static q15_t src[AN_FFT];
static q15_t dst[2 * AN_FFT];
#if defined(ARM_MATH_NEON)
static q15_t tmp[2 * AN_FFT];
#endif
int main(void)
{
    uint32_t c, t, j;
    arm_status st;
    fw_uart_init();
    fw_timer_init();
#if defined(ARM_MATH_NEON)
    st = arm_rfft_init_q15(&S, AN_FFT);
#else
    st = arm_rfft_init_q15(&S, AN_FFT, 0, 1);
#endif
    if (st != ARM_MATH_SUCCESS) {
        fw_uart_write((const uint8_t *)"INIT FAILED\nEND\n", 16u);
        fw_uart_flush();
        for (;;) {
        }
    }
    for (c = 0; c < BFE_CLIPS; ++c) {
        for (t = 0; t < BFE_FRAMES; ++t) {
            const int16_t *x = bfe_pcm + c * BFE_SAMPLES + t * AN_HOP;
            for (j = 0; j < AN_FFT; ++j) {
                src[j] = j < AN_WIN ? x[j] : 0;
            }
            uint64_t t0 = fw_timer_now();
#if defined(ARM_MATH_NEON)
            arm_rfft_q15(&S, src, dst, tmp, 0);
#else
            arm_rfft_q15(&S, src, dst);
#endif
            uint64_t t1 = fw_timer_now();
            fw_uart_putc('A');
            fw_uart_putc(' ');
            put_s(0);
            put_s((int32_t)c);
            put_s((int32_t)t);
            put_s((int32_t)(t1 - t0));
            fw_uart_putc('\n');
        }
    }
    fw_uart_write((const uint8_t *)"END\n", 4u);
    fw_uart_flush();
    for (;;) {
    }
}
"""


def _frames(pcm: np.ndarray, win: int, hop: int) -> int:
    return 1 + (pcm.shape[1] - win) // hop


def _probe_src(work: Path, main: str, pcm: np.ndarray, n_fft: int, win: int, hop: int) -> Path:
    src = work / "src"
    src.mkdir(parents=True, exist_ok=True)
    x = np.ascontiguousarray(pcm, dtype=np.int16)
    defs = "\n".join(
        [
            f"#define AN_FFT {n_fft}u",
            f"#define AN_WIN {win}u",
            f"#define AN_HOP {hop}u",
            f"#define AN_ARENA {28 * n_fft}u",  # both Ne10 plans
            "",
        ]
    )
    (src / "bfe_data.h").write_text(defs + _data_header(x, _frames(x, win, hop)))
    (src / "anchor_main.c").write_text(main)
    _fw_config(work / "include")
    return src


def _medians(rows: list[list[int]], names: tuple[str, ...], n_fft: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for v, name in enumerate(names):
        t = [r[3] for r in rows if r[0] == v]
        if not t:
            raise CodegenError(f"anchor probe printed no rows for {name}")
        out[name] = {
            "ticks_per_transform": int(statistics.median_low(t)),
            "ticks_min": int(min(t)),
            "ticks_max": int(max(t)),
            "transforms": len(t),
            "n_fft": n_fft,
        }
    return out


def run_ne10(ne10: Path, pcm: np.ndarray, work: Path, n_fft: int, win: int, hop: int) -> dict:
    """Ne10's int16 and int32 real FFTs (scaled and unscaled) on every frame of ``pcm``, built
    from the sources under ``ne10`` with the default core's CPU flags and -O2. CodegenError when the
    folder is absent or does not build."""
    missing = [s for s in NE10_SOURCES if not (ne10 / s).is_file()]
    if missing:
        raise CodegenError(f"Ne10 sources not found under {ne10} (missing {missing[0]})")
    work.mkdir(parents=True, exist_ok=True)
    src = _probe_src(work, NE10_MAIN, pcm, n_fft, win, hop)
    cpu = arm_cpu_flags()
    inc = [f"-I{ne10 / d}" for d in NE10_INCLUDES]
    objs = []
    obj_dir = work / "obj"
    obj_dir.mkdir(exist_ok=True)
    for s in NE10_SOURCES:
        o = obj_dir / (Path(s).name + ".o")
        if s.endswith(".s"):
            cmd = [find_tool("arm-none-eabi-gcc"), *cpu, "-x", "assembler-with-cpp", *inc]
        else:
            cmd = [find_tool("arm-none-eabi-gcc"), *cpu, *NE10_CFLAGS, *NE10_DEFINES, *inc]
        _gcc([*cmd, "-c", str(ne10 / s), "-o", str(o)])
        objs.append(str(o))
    elf = work / "ne10.elf"
    link_probe(
        elf,
        [src / "anchor_main.c", *objs],
        # a third-party anchor with its own plan arena: the product's 64 KiB RAM budget
        # (firmware/board/zynq7000/link.ld) is not its to meet
        cflags=["-Wno-error", "-w", ANCHOR_RAM_BUDGET],
        includes=[work / "include", src, *(i[2:] for i in inc)],
        libs=("-lc", "-lm"),
    )
    return _medians(_run_qemu(elf, "A"), NE10_VARIANTS, n_fft)


def run_cmsis_rfft(
    cache: Path, pcm: np.ndarray, work: Path, n_fft: int, win: int, hop: int, *, neon: bool
) -> dict[str, Any]:
    """CMSIS-DSP ``arm_rfft_q15`` on every frame of ``pcm`` (Neon or portable C build)."""
    root = fetch_cmsis(cache)
    work.mkdir(parents=True, exist_ok=True)
    src = _probe_src(work, CMSIS_RFFT_MAIN, pcm, n_fft, win, hop)
    defines = ["-DARM_MATH_NEON"] if neon else []
    # the rfft's own sources: not the MFCC, not the matrix functions
    names = [s for s in CMSIS_SOURCES if "mfcc" not in s and "MatrixFunctions" not in s]
    objs = compile_cmsis(root, cmsis_sources(root, names, neon=neon), work / "obj", defines)
    includes = cmsis_includes(root)
    elf = work / "rfft.elf"
    link_probe(
        elf,
        [src / "anchor_main.c", *objs],
        cflags=["-Wno-error", "-D__GNUC_PYTHON__", *defines, ANCHOR_RAM_BUDGET],
        includes=[work / "include", src, *(i[2:] for i in includes)],
        libs=("-lc", "-lm"),
    )
    name = "cmsis_rfft_q15_neon" if neon else "cmsis_rfft_q15_c"
    return _medians(_run_qemu(elf, "A"), (name,), n_fft)


def fft_anchors(
    q: Any,
    data_dir: Path,
    work: Path,
    n_clips: int,
    anchors: Path | None,
    cmsis_cache: Path | None,
) -> dict[str, Any]:
    """`anchors_bench` on the front end of model ``q`` and the clips of
    `bench_frontend.frontend_bench` (the first ``n_clips`` of the data set's first noise
    condition)."""
    from elatta_measure.bench_frontend import frontend_clips

    from codegen.quantize.mfcc import quantize_mfcc_for

    return anchors_bench(
        quantize_mfcc_for(q), frontend_clips(data_dir, n_clips), work, anchors, cmsis_cache
    )


def _why(exc: Exception) -> str:
    """A build or run failure in one line: its first line and, for a tool's output, its last."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    return lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1].strip()}"


def anchors_bench(
    q: Any, pcm: np.ndarray, work: Path, anchors: Path | None, cmsis_cache: Path | None
) -> dict[str, Any]:
    """The FFT anchors per n_fft-point transform: ``ours`` (from `run_stages`), Ne10 (under
    ``anchors``/ne10) and CMSIS-DSP arm_rfft_q15; an anchor that cannot be built or run is listed
    under ``unavailable`` by name with the reason, and the others still stand."""
    from elatta_measure.bench_frontend import run_stages

    p = q.params
    args = (p.n_fft, p.win_length, p.hop_length)
    st = run_stages(q, pcm, work / "ours")
    doc: dict[str, Any] = {
        "n_fft": p.n_fft,
        "ours": {
            "ticks_per_transform": st["fft_ticks"],
            "ticks_min": st["fft_min"],
            "ticks_max": st["fft_max"],
            "n_fft": p.n_fft,
            "what": "window + block exponent + FFT + real split + power of the weighted bins",
            "stages": st["stages"],
            "mismatches": st["mismatches"],
        },
    }
    unavailable: dict[str, str] = {}
    if anchors is None:
        unavailable["ne10"] = "Ne10: not requested"
    else:
        try:
            doc |= run_ne10(anchors / "ne10", pcm, work / "ne10", *args)
        except CodegenError as exc:
            unavailable["ne10"] = f"Ne10: {_why(exc)}"
    if cmsis_cache is None:
        unavailable["cmsis_rfft"] = f"cmsisdsp=={CMSIS_VERSION} arm_rfft_q15: not requested"
    else:
        try:
            for neon in (True, False):
                doc |= run_cmsis_rfft(
                    cmsis_cache, pcm, work / f"rfft_{'neon' if neon else 'c'}", *args, neon=neon
                )
        except CodegenError as exc:
            unavailable["cmsis_rfft"] = f"cmsisdsp=={CMSIS_VERSION} arm_rfft_q15: {_why(exc)}"
    if unavailable:
        doc["unavailable"] = unavailable
    return doc


ANCHOR_LABELS: dict[str, str] = {
    "ours": "ours (firmware/elt_mfcc_s16.c, NEON)",
    "ne10_int16_scaled": "Ne10 int16 r2c, scaled",
    "ne10_int16_unscaled": "Ne10 int16 r2c, unscaled",
    "ne10_int32_scaled": "Ne10 int32 r2c, scaled",
    "ne10_int32_unscaled": "Ne10 int32 r2c, unscaled",
    "cmsis_rfft_q15_neon": f"CMSIS-DSP {CMSIS_VERSION} arm_rfft_q15, Neon",
    "cmsis_rfft_q15_c": f"CMSIS-DSP {CMSIS_VERSION} arm_rfft_q15, C",
}


def anchors_md(d: dict[str, Any] | None) -> list[str]:
    """The bench.md section of `anchors_bench`'s record."""
    if not d:
        return []
    rows = [
        f"### FFT anchors: ticks per {d['n_fft']}-point real transform",
        "",
        "Every frame of the same clips (the frame zero-padded to n_fft), each call timed with the "
        "global timer under -icount shift=0, built with the same -mcpu=cortex-a9 -mfpu=neon -O2. "
        f"Ours: {d['ours']['what']} (firmware/elt_mfcc_s16.c). Ne10 (BSD-3-Clause) is built at "
        "bench time from its sources and never vendored; CMSIS-DSP from its PyPI sources.",
        "",
        "| transform | ticks / transform (median) | min | max |",
        "|---|---:|---:|---:|",
    ]
    for key, label in ANCHOR_LABELS.items():
        r = d.get(key)
        if r is None:
            continue
        rows.append(
            f"| {label} | {r['ticks_per_transform']} | {r['ticks_min']} | {r['ticks_max']} |"
        )
    rows.append("")
    for why in d.get("unavailable", {}).values():
        rows += [f"Anchor unavailable: {why}", ""]
    st = d["ours"].get("stages")
    if st:
        rows += [
            "Our front end stage by stage (median ticks per hop; the timer reads between the "
            "stages cost a few ticks each): " + ", ".join(f"{k} {v}" for k, v in st.items()) + ".",
            "",
        ]
    return rows
