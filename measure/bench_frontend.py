"""Front-end cost under QEMU (docs/targets.md §4): the integer MFCC kernel
(firmware/elt_mfcc_s16.c + generated tables) and, as the anchor, CMSIS-DSP 1.10.3's
``arm_mfcc_q15`` built for the same Cortex-A9 with the same flags, each timed per frame with the
global timer under ``qemu-system-arm -icount shift=0`` ("QEMU icount ticks", not cycles).

CMSIS-DSP is never vendored: `fetch_cmsis` downloads the ``cmsisdsp==1.10.3`` source
distribution from PyPI into a cache directory (``pip download --no-binary :all: --no-deps``) the
first time, and unpacks the C sources from it. Without network or pip the anchor is reported as
unavailable, by name, and our figures still stand.

The probe embeds the clips, runs every frame of every clip once and prints the features and the
ticks of each frame on UART0; `run_probe` returns both, so the same run is also a bit-exactness
check of the ARM build against `codegen.intref.mfcc` (tests/codegen/intref/test_mfcc_int.py).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codegen.base.errors import CodegenError
from codegen.base.resources import firmware_dir
from codegen.emit.c import carray
from codegen.emit.mfcc import emit_mfcc_c, mfcc_cflags
from codegen.ir.mfcc import QMfcc
from codegen.target import sources
from codegen.target.cores import DEFAULT_CORE
from codegen.target.qemu_probe import link_probe, qemu_probe_lines
from codegen.target.toolchain import find_tool

# The third-party anchors' probes (CMSIS-DSP, Ne10) link with a larger RAM budget than the
# product's 64 KiB (RAM_BUDGET of firmware/board/zynq7000/link.ld): they hold their own buffers
# and plans, which the product's budget does not cover.
ANCHOR_RAM_BUDGET = "-Wl,--defsym=RAM_BUDGET=0x40000"

CMSIS_VERSION = "1.10.3"
CMSIS_SDIST = f"cmsisdsp-{CMSIS_VERSION}"
# The C files arm_mfcc_q15 and arm_mfcc_init_q15 reach on the non-Helium path (CMSIS-DSP
# Source/*); the linker keeps only what is called (--gc-sections).
CMSIS_SOURCES: tuple[str, ...] = (
    "TransformFunctions/arm_mfcc_q15.c",
    "TransformFunctions/arm_mfcc_init_q15.c",
    "TransformFunctions/arm_rfft_q15.c",
    "TransformFunctions/arm_rfft_init_q15.c",
    "TransformFunctions/arm_cfft_q15.c",
    "TransformFunctions/arm_cfft_init_q15.c",
    "TransformFunctions/arm_cfft_radix4_q15.c",
    "TransformFunctions/arm_cfft_radix2_q15.c",
    "TransformFunctions/arm_bitreversal2.c",
    "TransformFunctions/arm_bitreversal.c",
    "CommonTables/arm_common_tables.c",
    "CommonTables/arm_const_structs.c",
    "StatisticsFunctions/arm_absmax_q15.c",
    "FastMathFunctions/arm_divide_q15.c",
    "FastMathFunctions/arm_vlog_q31.c",
    "BasicMathFunctions/arm_scale_q15.c",
    "BasicMathFunctions/arm_scale_q31.c",
    "BasicMathFunctions/arm_mult_q15.c",
    "BasicMathFunctions/arm_dot_prod_q15.c",
    "BasicMathFunctions/arm_offset_q31.c",
    "BasicMathFunctions/arm_shift_q31.c",
    "ComplexMathFunctions/arm_cmplx_mag_q15.c",
    "MatrixFunctions/arm_mat_vec_mult_q15.c",
    "FastMathFunctions/arm_sqrt_q31.c",
    "BasicMathFunctions/arm_abs_q15.c",
    "BasicMathFunctions/arm_shift_q15.c",
)
# Its Neon variant (_arm_mat_vec_mult_neon.c) passes int32x4_t where vqaddq_s64 wants int64x2_t,
# which AArch64 compilers accept and arm-none-eabi-gcc 12 rejects: built as portable C in the
# Neon build too (the 10 x 40 DCT: a small part of a frame).
CMSIS_NOT_NEON: tuple[str, ...] = ("MatrixFunctions/arm_mat_vec_mult_q15.c",)
CMSIS_NE10: tuple[str, ...] = (
    "CMSIS_NE10_fft_init.c",
    "CMSIS_NE10_fft_generic_int32.neonintrisic.c",
    "NE10_fft_int16.neonintrinsic.c",
)
CMSIS_CFLAGS: tuple[str, ...] = (
    "-std=c11",
    "-O2",
    "-ffreestanding",
    "-ffunction-sections",
    "-fdata-sections",
    "-mno-unaligned-access",
    "-w",  # third-party code: its warnings are not ours to fix
    # the sdist carries no CMSIS-Core headers; its Python build defines this to do without them
    # (arm_math_types.h): plain C for the SIMD intrinsics, or the Neon paths with ARM_MATH_NEON
    "-D__GNUC_PYTHON__",
)

OUR_MAIN = r"""
/* measure/bench_frontend.py: every frame of the embedded clips through elt_mfcc_frame_s16;
 * "F clip frame ticks x0 .. x(n-1)" per frame on UART0. */
#include <stdint.h>
#include "fw_timer.h"
#include "fw_probe_print.h"
#include "fw_uart.h"
#include "bfe_mfcc_params.h"
#include "bfe_data.h"
int main(void);
static elt_mfcc_work_t work;
static int16_t feat[BFE_MFCC_N_MFCC];
int main(void)
{
    uint32_t c, t, j;
    fw_uart_init();
    fw_timer_init();
    for (c = 0; c < BFE_CLIPS; ++c) {
        for (t = 0; t < BFE_FRAMES; ++t) {
            const int16_t *x = bfe_pcm + c * BFE_SAMPLES + t * BFE_MFCC_HOP_LENGTH;
            uint64_t t0 = fw_timer_now();
            elt_mfcc_frame_s16(&bfe_mfcc_params, x, &work, feat);
            uint64_t t1 = fw_timer_now();
            fw_uart_putc('F');
            fw_uart_putc(' ');
            put_s((int32_t)c);
            put_s((int32_t)t);
            put_s((int32_t)(t1 - t0));
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

CMSIS_MAIN = r"""
/* measure/bench_frontend.py: CMSIS-DSP arm_mfcc_q15 on every frame of the embedded clips
 * (the frame zero-padded to fftLen, outside the timed call); "C clip frame ticks status". */
#include <stdint.h>
#include <string.h>
#include "arm_math.h"
#include "fw_timer.h"
#include "fw_probe_print.h"
#include "fw_uart.h"
#include "bfe_data.h"
#include "cmsis_tables.h"
int main(void);
static arm_mfcc_instance_q15 S;
static q15_t src[CM_FFT];
static q15_t dst[CM_DCT];
static q31_t tmp[2 * CM_FFT + 2];
#if defined(ARM_MATH_NEON)
static q15_t tmp_rfft[2 * CM_FFT + 2];
#endif
int main(void)
{
    uint32_t c, t, j;
    arm_status st;
    fw_uart_init();
    fw_timer_init();
    st = arm_mfcc_init_q15(&S, CM_FFT, CM_MELS, CM_DCT, cm_dct, cm_fpos, cm_flen, cm_fcoef,
                           cm_window);
    if (st != ARM_MATH_SUCCESS) {
        fw_uart_write((const uint8_t *)"INIT FAILED\nEND\n", 16u);
        fw_uart_flush();
        for (;;) {
        }
    }
    for (c = 0; c < BFE_CLIPS; ++c) {
        for (t = 0; t < BFE_FRAMES; ++t) {
            const int16_t *x = bfe_pcm + c * BFE_SAMPLES + t * CM_HOP;
            for (j = 0; j < CM_FFT; ++j) {
                src[j] = j < CM_WIN ? x[j] : 0;
            }
            uint64_t t0 = fw_timer_now();
#if defined(ARM_MATH_NEON)
            st = arm_mfcc_q15(&S, src, dst, tmp, tmp_rfft);
#else
            st = arm_mfcc_q15(&S, src, dst, tmp);
#endif
            uint64_t t1 = fw_timer_now();
            fw_uart_putc('C');
            fw_uart_putc(' ');
            put_s((int32_t)c);
            put_s((int32_t)t);
            put_s((int32_t)(t1 - t0));
            put_s((int32_t)st);
            for (j = 0; j < CM_DCT; ++j) {
                put_s(dst[j]);
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


@dataclass(frozen=True)
class ProbeRun:
    """One probe run: per-frame ticks [clips, frames] and outputs [clips, frames, n]."""

    ticks: np.ndarray
    out: np.ndarray
    text_bytes: int


def _data_header(pcm: np.ndarray, frames: int) -> str:
    n, samples = pcm.shape
    return "\n".join(
        [
            "#include <stdint.h>",
            f"#define BFE_CLIPS {n}u",
            f"#define BFE_SAMPLES {samples}u",
            f"#define BFE_FRAMES {frames}u",
            f"static const int16_t bfe_pcm[{n * samples}] = {{",
            carray(pcm.reshape(-1)),
            "};",
            "",
        ]
    )


def _fw_config(inc: Path) -> None:
    from codegen.target.firmware import FirmwareConfig, render_config

    inc.mkdir(parents=True, exist_ok=True)
    (inc / "fw_config.h").write_text(render_config(FirmwareConfig(), "fw-bench-fe", "0" * 64))


def _run_qemu(elf: Path, tag: str) -> list[list[int]]:
    rows: list[list[int]] = []
    for line in qemu_probe_lines(elf, icount=True):
        if line.startswith("INIT FAILED"):
            raise CodegenError(f"{elf.name}: arm_mfcc_init_q15 failed")
        parts = line.split()
        if parts and parts[0] == tag:
            rows.append([int(v) for v in parts[1:]])
    return rows


def _gcc(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CodegenError(f"arm-none-eabi-gcc failed:\n$ {' '.join(cmd)}\n{proc.stderr}")


def _text_bytes(elf: Path, symbols: tuple[str, ...]) -> int:
    """Bytes of code + tables of the named symbol prefixes (arm-none-eabi-nm -S)."""
    out = subprocess.run(
        [find_tool("arm-none-eabi-nm"), "-S", str(elf)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total = 0
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2].lower() in "trd" and parts[3].startswith(symbols):
            total += int(parts[1], 16)
    return total


def run_probe(q: QMfcc, pcm: np.ndarray, work: Path, *, scalar: bool = False) -> ProbeRun:
    """Our front end on every frame of ``pcm`` [clips, samples] under QEMU -icount."""
    p = q.params
    x = np.ascontiguousarray(pcm, dtype=np.int16)
    frames = 1 + (x.shape[1] - p.win_length) // p.hop_length
    src = work / "src"
    src.mkdir(parents=True, exist_ok=True)
    for name, text in emit_mfcc_c(q, "bfe_").items():
        (src / name).write_text(text)
    (src / "bfe_data.h").write_text(_data_header(x, frames))
    (src / "bfe_main.c").write_text(OUR_MAIN)
    inc = work / "include"
    _fw_config(inc)
    fw = firmware_dir()
    elf = work / "fe.elf"
    link_probe(
        elf,
        [src / "bfe_main.c", src / "bfe_mfcc_params.c", *(fw / s for s in sources.MFCC)],
        cflags=mfcc_cflags(q),
        includes=[inc, src],
        variant=sources.REF if scalar else sources.NEON_A32,
    )
    rows = _run_qemu(elf, "F")
    if len(rows) != x.shape[0] * frames:
        raise CodegenError(f"probe printed {len(rows)} frames, expected {x.shape[0] * frames}")
    arr = np.asarray(rows, np.int64)
    return ProbeRun(
        ticks=arr[:, 2].reshape(x.shape[0], frames),
        out=arr[:, 3:].reshape(x.shape[0], frames, p.n_mfcc),
        text_bytes=_text_bytes(elf, ("elt_mfcc", "mfcc_", "bfe_mfcc")),
    )


STAGE_MAIN = r"""
/* measure/bench_frontend.py: the static stage functions of firmware/elt_mfcc_s16.c
 * timed one by one; "S t0 .. t4 x0 .. x(n-1)" per frame on UART0. */
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
            if (p->n_cfft >= 16) {
                sh = mfcc_head(p, x, work.z);
                s[1] = fw_timer_now();
                mfcc_fft_neon(p, work.z);
            } else
#endif
            {
                sh = mfcc_load(p, x, work.z);
                s[1] = fw_timer_now();
                mfcc_fft(p, work.z, 1);
            }
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
# The stages STAGE_MAIN times, in order; the first three are the transform (window, block
# exponent, FFT, real split and power).
STAGES: tuple[str, ...] = ("head", "fft", "power", "mel_log2", "dct")


def run_stages(q: QMfcc, pcm: np.ndarray, work: Path, *, scalar: bool = False) -> dict[str, Any]:
    """Median ticks per hop of each stage of our front end on every frame of ``pcm`` (the probe
    includes firmware/elt_mfcc_s16.c and calls its static stage functions; the timer reads
    between them cost a few ticks each), every feature checked against `codegen.intref.mfcc`.
    ``fft_ticks`` = head + fft + power: the n_fft-point real transform with its window."""
    from codegen.intref.mfcc import mfcc_int

    p = q.params
    x = np.ascontiguousarray(pcm, dtype=np.int16)
    frames = 1 + (x.shape[1] - p.win_length) // p.hop_length
    src = work / "src"
    src.mkdir(parents=True, exist_ok=True)
    for name, text in emit_mfcc_c(q, "bfe_").items():
        (src / name).write_text(text)
    (src / "bfe_data.h").write_text(_data_header(x, frames))
    (src / "stage_main.c").write_text(STAGE_MAIN)
    inc = work / "include"
    _fw_config(inc)
    elf = link_probe(
        work / ("stages_scalar.elf" if scalar else "stages.elf"),
        [src / "stage_main.c", src / "bfe_mfcc_params.c"],
        cflags=mfcc_cflags(q),
        includes=[inc, src, firmware_dir()],
        variant=sources.REF if scalar else sources.NEON_A32,
    )
    rows = np.asarray(_run_qemu(elf, "S"), np.int64).reshape(-1, len(STAGES) + p.n_mfcc)
    mism = int((rows[:, len(STAGES) :] != mfcc_int(x, q).reshape(-1, p.n_mfcc)).sum())
    if mism:
        raise CodegenError(f"front-end stage probe: {mism} coefficients differ from Python")
    med = {s: int(statistics.median_low(rows[:, i].tolist())) for i, s in enumerate(STAGES)}
    fft = rows[:, :3].sum(axis=1)
    return {
        "stages": med,
        "fft_ticks": med["head"] + med["fft"] + med["power"],
        "fft_min": int(fft.min()),
        "fft_max": int(fft.max()),
        "frames": int(len(rows)),
        "mismatches": mism,
    }


# ------------------------------------------------------------------------------ CMSIS-DSP


def fetch_cmsis(cache: Path) -> Path:
    """The unpacked ``cmsisdsp==1.10.3`` source distribution under ``cache`` (downloaded with
    pip the first time). Raises CodegenError naming the package when it cannot be fetched."""
    root = cache / CMSIS_SDIST
    if (root / "Source" / "TransformFunctions" / "arm_mfcc_q15.c").is_file():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    tgz = cache / f"{CMSIS_SDIST}.tar.gz"
    if not tgz.is_file():
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-binary",
            ":all:",
            "--no-deps",
            "--no-build-isolation",
            f"cmsisdsp=={CMSIS_VERSION}",
            "-d",
            str(cache),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not tgz.is_file():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
            raise CodegenError(
                f"could not fetch cmsisdsp=={CMSIS_VERSION} from PyPI (`{' '.join(cmd)}`):\n{tail}"
            )
    with tarfile.open(tgz) as tf:
        members = [
            m
            for m in tf.getmembers()
            if m.isfile()
            and m.name.split("/", 1)[-1].startswith(
                ("Source/", "Include/", "PrivateInclude/", "Ne10/")
            )
        ]
        tf.extractall(cache, members=members, filter="data")
    return root


def arm_cpu_flags() -> list[str]:
    """The default core's CPU flags (-mcpu, -mfpu, -mfloat-abi, -marm; codegen/target/cores.py):
    third-party sources are built for the firmware's core, with their own warnings and
    optimisation flags."""
    return list(DEFAULT_CORE.cpu_flags)


def cmsis_sources(root: Path, names: Sequence[str], *, neon: bool) -> list[Path]:
    """The CMSIS-DSP sources ``names`` (relative to Source/), plus its Neon tables and Ne10
    port with ``neon``."""
    src = [root / "Source" / s for s in names]
    if neon:
        src += [root / "Source" / "CommonTables" / "arm_neon_tables.c"]
        src += [root / "Ne10" / s for s in CMSIS_NE10]
    return src


def cmsis_includes(root: Path) -> list[str]:
    return [f"-I{root / 'Include'}", f"-I{root / 'PrivateInclude'}", f"-I{root / 'Ne10'}"]


def compile_cmsis(
    root: Path,
    files: Sequence[Path],
    obj_dir: Path,
    defines: Sequence[str],
    plain: frozenset[Path] = frozenset(),
) -> list[str]:
    """Object files of the CMSIS-DSP ``files`` built for the Cortex-A9 (arm_cpu_flags,
    CMSIS_CFLAGS) with ``defines``, except for the files in ``plain`` (built without them)."""
    obj_dir.mkdir(parents=True, exist_ok=True)
    objs = []
    for s in files:
        o = obj_dir / (s.stem + ".o")
        _gcc(
            [
                find_tool("arm-none-eabi-gcc"),
                *arm_cpu_flags(),
                *CMSIS_CFLAGS,
                *(defines if s not in plain else []),
                *cmsis_includes(root),
                "-c",
                str(s),
                "-o",
                str(o),
            ]
        )
        objs.append(str(o))
    return objs


def cmsis_tables(q: QMfcc) -> tuple[str, dict[str, int]]:
    """CMSIS-DSP's MFCC inputs for the same features: window (the win_length window zero-padded
    to fftLen), the same mel filters and the orthonormal DCT, all q15 (the layout the cmsisdsp
    Python package's mfcc helpers produce)."""
    from scipy import fft as sfft

    from codegen.base.features import _tables

    p = q.params
    win_f, fb_f, _ = _tables(p)
    win = np.zeros(p.n_fft)
    win[: p.win_length] = win_f
    wq = np.clip(np.round(win * 32768), -32768, 32767).astype(np.int64)
    pos: list[int] = []
    lens: list[int] = []
    coefs: list[int] = []
    for m in range(p.n_mels):
        col = fb_f[:, m].astype(np.float64)
        nz = np.flatnonzero(col > 0)
        lo, hi = int(nz.min()), int(nz.max())
        pos.append(lo)
        lens.append(hi - lo + 1)
        coefs.extend(np.clip(np.round(col[lo : hi + 1] * 32768), -32768, 32767).astype(int))
    dct = sfft.dct(np.eye(p.n_mels), type=2, norm="ortho", axis=0)[: p.n_mfcc]
    dq = np.clip(np.round(dct * 32768), -32768, 32767).astype(np.int64)
    text = "\n".join(
        [
            "#include <stdint.h>",
            '#include "arm_math.h"',
            f"#define CM_FFT {p.n_fft}u",
            f"#define CM_WIN {p.win_length}u",
            f"#define CM_HOP {p.hop_length}u",
            f"#define CM_MELS {p.n_mels}u",
            f"#define CM_DCT {p.n_mfcc}u",
            f"static const q15_t cm_window[{p.n_fft}] = {{\n{carray(wq)}\n}};",
            f"static const uint32_t cm_fpos[{p.n_mels}] = {{\n{carray(pos)}\n}};",
            f"static const uint32_t cm_flen[{p.n_mels}] = {{\n{carray(lens)}\n}};",
            f"static const q15_t cm_fcoef[{len(coefs)}] = {{\n{carray(coefs)}\n}};",
            f"static const q15_t cm_dct[{dq.size}] = {{\n{carray(dq.reshape(-1))}\n}};",
            "",
        ]
    )
    return text, {"filter_taps": len(coefs)}


def run_cmsis(q: QMfcc, pcm: np.ndarray, work: Path, cache: Path, *, neon: bool) -> ProbeRun:
    """CMSIS-DSP ``arm_mfcc_q15`` on every frame of ``pcm`` under QEMU -icount. ``neon``:
    ``-DARM_MATH_NEON`` (CMSIS-DSP's Neon code paths, the rfft from its Ne10 port), else the
    portable C with the Cortex-A9 DSP instructions (``ARM_MATH_DSP``); both with
    -mcpu=cortex-a9 -mfpu=neon -mfloat-abi=hard -O2, as our firmware."""
    root = fetch_cmsis(cache)
    p = q.params
    x = np.ascontiguousarray(pcm, dtype=np.int16)
    frames = 1 + (x.shape[1] - p.win_length) // p.hop_length
    src = work / "src"
    src.mkdir(parents=True, exist_ok=True)
    tables, _ = cmsis_tables(q)
    (src / "cmsis_tables.h").write_text(tables)
    (src / "bfe_data.h").write_text(_data_header(x, frames))
    (src / "cmsis_main.c").write_text(CMSIS_MAIN)
    inc = work / "include"
    _fw_config(inc)
    defines = ["-DARM_MATH_NEON"] if neon else []
    objs = compile_cmsis(
        root,
        cmsis_sources(root, CMSIS_SOURCES, neon=neon),
        work / ("obj_neon" if neon else "obj_c"),
        defines,
        frozenset(root / "Source" / s for s in CMSIS_NOT_NEON),
    )
    includes = cmsis_includes(root)
    elf = work / ("cmsis_neon.elf" if neon else "cmsis_c.elf")
    link_probe(
        elf,
        [src / "cmsis_main.c", *objs],
        cflags=["-Wno-error", "-D__GNUC_PYTHON__", *defines, ANCHOR_RAM_BUDGET],
        includes=[inc, src, *(i[2:] for i in includes)],
        libs=("-lc", "-lm"),
    )
    rows = _run_qemu(elf, "C")
    if len(rows) != x.shape[0] * frames:
        raise CodegenError(
            f"CMSIS probe printed {len(rows)} frames, expected {x.shape[0] * frames}"
        )
    arr = np.asarray(rows, np.int64)
    bad = arr[:, 3] != 0
    if bad.any():
        raise CodegenError(f"arm_mfcc_q15 returned status {int(arr[bad, 3][0])}")
    return ProbeRun(
        ticks=arr[:, 2].reshape(x.shape[0], frames),
        out=arr[:, 4:].reshape(x.shape[0], frames, p.n_mfcc),
        text_bytes=_text_bytes(elf, ("arm_", "cm_", "twiddleCoef", "armBitRev", "realCoef")),
    )


def tick_summary(run: ProbeRun, q: QMfcc) -> dict[str, Any]:
    """Median, min and max ticks per frame (one frame per hop), per second of audio."""
    t = run.ticks.reshape(-1)
    med = int(statistics.median_low(t.tolist()))
    hops_per_s = q.params.sample_rate / q.params.hop_length
    return {
        "ticks_per_hop": med,
        "ticks_min": int(t.min()),
        "ticks_max": int(t.max()),
        "ticks_per_second_audio": int(round(med * hops_per_s)),
        "hop_ms": q.params.hop_ms,
        "frames": int(t.size),
        "code_and_tables_bytes": run.text_bytes,
    }


def frontend_clips(data_dir: Path, n: int) -> np.ndarray:
    """n int16 clips of the data set: the first clips of its first additive-noise condition
    (mixed speech, as `codegen run` streams them)."""
    from codegen.data import condition_ids, conditions, load_condition

    conds = [c for c in conditions(str(data_dir), "additive") if c.snr_db is not None]
    if not conds:
        raise CodegenError(f"{data_dir} has no additive noise conditions")
    m = min(n, len(condition_ids(str(data_dir), conds[0])[0]))
    return np.asarray(load_condition(str(data_dir), conds[0], rows=np.arange(m)).pcm, np.int16)


def frontend_bench(
    q: Any,
    data_dir: Path,
    work: Path,
    n_clips: int = 2,
    cmsis_cache: Path | None = None,
) -> dict[str, Any]:
    """Ticks per hop and per second of audio of our front end (NEON and reference variants) and of
    CMSIS-DSP's arm_mfcc_q15 (Neon and portable C) on the same clips and QEMU; our ARM outputs
    checked against `codegen.intref.mfcc` on every coefficient. ``cmsis_cache`` None: no
    anchor (reported as such). (`elatta_measure.bench_anchors.fft_anchors` adds the per-transform
    anchors as ``fft_anchors``.)"""
    from codegen.intref.mfcc import mfcc_int
    from codegen.quantize.mfcc import quantize_mfcc_for

    qm = quantize_mfcc_for(q)
    pcm = frontend_clips(data_dir, n_clips)
    ref = mfcc_int(pcm, qm)
    doc: dict[str, Any] = {"clips": int(len(pcm)), "hop_ms": qm.params.hop_ms}
    for name, scalar in (("ours_neon", False), ("ours_scalar", True)):
        run = run_probe(qm, pcm, work / name, scalar=scalar)
        mism = int((run.out != ref).sum())
        if mism:
            raise CodegenError(f"front end {name}: {mism} coefficients differ from Python")
        doc[name] = tick_summary(run, qm) | {"mismatches": mism}
    anchors: dict[str, Any] = {}
    if cmsis_cache is None:
        anchors["unavailable"] = f"cmsisdsp=={CMSIS_VERSION}: not requested"
    else:
        try:
            for name, neon in (("cmsis_neon", True), ("cmsis_c", False)):
                run = run_cmsis(qm, pcm, work / name, cmsis_cache, neon=neon)
                anchors[name] = tick_summary(run, qm)
        except CodegenError as exc:
            anchors = {"unavailable": f"cmsisdsp=={CMSIS_VERSION}: {exc}"}
    doc["cmsis"] = anchors
    p = qm.params
    t = q.source.target
    doc["link_budget"] = link_budget(
        LINK_BAUD, p.sample_rate, p.n_frames, p.n_mfcc, p.clip_samples / p.sample_rate,
        int(t.max_payload),
    )  # fmt: skip
    if "cmsis_neon" in anchors:
        ours, cm = doc["ours_neon"]["ticks_per_hop"], anchors["cmsis_neon"]["ticks_per_hop"]
        doc["ours_over_cmsis_neon"] = round(ours / cm, 3)
        doc["goal_met"] = ours <= cm
    return doc


def frontend_md(d: dict[str, Any] | None, anchors: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The bench.md section of `frontend_bench`'s record, ``anchors`` (the per-transform anchors'
    rows) before the link budget."""
    if not d:
        return []
    rows = [
        "## MFCC front end (audio in)",
        "",
        f"Ticks of one frame (one {d['hop_ms']:g} ms hop) over every frame of {d['clips']} "
        "mixed test clips, timed around the call with the global timer under -icount shift=0: "
        "QEMU icount ticks, not cycles. Ours: firmware/elt_mfcc_s16.c + the generated tables "
        "(window, FFT, power, mel, log, DCT, normalisation to the model's int16 input), its "
        "outputs equal to the Python integer reference on every coefficient. CMSIS-DSP "
        f"{CMSIS_VERSION} `arm_mfcc_q15` (fetched from PyPI, never vendored) on the same frames "
        "zero-padded to the same FFT length, built with the same -mcpu=cortex-a9 -mfpu=neon "
        "-O2: `neon` = -DARM_MATH_NEON (its Ne10 int16 rfft), `c` = its portable C. CMSIS "
        "returns unnormalised q8.7 MFCCs of the magnitude spectrum; ours also normalises.",
        "",
        f"frontend_ticks_per_hop (ours, NEON, median): **{d['ours_neon']['ticks_per_hop']}**.",
        "",
        "| front end | ticks / hop (median) | min | max | ticks / s of audio | code + tables B |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    named = [("ours, NEON", d["ours_neon"]), ("ours, reference (plain C)", d["ours_scalar"])]
    cm = d["cmsis"]
    named += [(f"CMSIS-DSP arm_mfcc_q15, {k[6:]}", v) for k, v in cm.items() if k != "unavailable"]
    for name, r in named:
        rows.append(
            f"| {name} | {r['ticks_per_hop']} | {r['ticks_min']} | {r['ticks_max']} | "
            f"{r['ticks_per_second_audio']} | {r['code_and_tables_bytes']} |"
        )
    rows.append("")
    if "unavailable" in cm:
        rows += [f"CMSIS-DSP anchor unavailable: {cm['unavailable']}", ""]
    else:
        verdict = "met" if d["goal_met"] else "NOT met"
        rows += [
            f"Ours / CMSIS-DSP (Neon) = {d['ours_over_cmsis_neon']} per hop: goal "
            f"(front end ≤ CMSIS-DSP ticks per frame) {verdict}.",
            "",
        ]
    return rows + list(anchors) + link_md(d["link_budget"])


LINK_BAUD = 115200  # the board default (README "Running on a real ZYNQ-7020 board")
# Framing of docs/protocol.md: 12 bytes of header and CRC around a payload, COBS adds
# ceil(n / 254) + 1 bytes (with the trailing delimiter).
FRAME_OVERHEAD = 12
# 8N1: start, 8 data, stop (firmware/board/zynq7000/fw_uart.c XUART_MR_8N1; UG585 B.33)
UART_BITS_PER_BYTE = 10


def _frame_bytes(payload: int) -> int:
    body = FRAME_OVERHEAD + payload
    return body + -(-body // 254) + 1


def link_budget(
    baud: int,
    sample_rate: int,
    frames: int,
    features: int,
    clip_s: float,
    max_payload: int,
) -> dict[str, Any]:
    """Bytes per second of audio on the host → device line for today's feature INFER and for
    raw int16 PCM (in frames of ``max_payload`` bytes, the framing above; a streaming chunk's
    own header is not counted, so PCM is a lower bound), against what the UART carries."""
    from elatta_host.infer import INFER_HDR

    line = baud / UART_BITS_PER_BYTE
    feat = _frame_bytes(INFER_HDR.size + 2 * frames * features) / clip_s
    pcm_payload = 2 * sample_rate  # one second of int16 samples
    full, rest = divmod(pcm_payload, max_payload)
    pcm = full * _frame_bytes(max_payload) + (_frame_bytes(rest) if rest else 0)
    need_baud = int(np.ceil(pcm * UART_BITS_PER_BYTE))
    return {
        "baud": baud,
        "line_bytes_per_s": round(line, 1),
        "features_bytes_per_s_audio": round(feat, 1),
        "features_line_fraction": round(feat / line, 4),
        "pcm_bytes_per_s_audio": int(pcm),
        "pcm_line_fraction": round(pcm / line, 3),
        "pcm_realtime": pcm <= line,
        "pcm_min_baud": need_baud,
    }


def link_md(b: dict[str, Any]) -> list[str]:
    verdict = (
        "keeps up with real time"
        if b["pcm_realtime"]
        else f"is {b['pcm_line_fraction']:.2f}x slower than real time"
    )
    return [
        f"### Serial link budget at {b['baud']:,} baud (8N1: {b['line_bytes_per_s']:.0f} B/s)",
        "",
        "| input | bytes per second of audio | share of the line |",
        "|---|---:|---:|",
        f"| features (INFER, today) | {b['features_bytes_per_s_audio']:.0f} | "
        f"{100 * b['features_line_fraction']:.1f} % |",
        f"| int16 PCM at 16 kHz (framed, lower bound) | {b['pcm_bytes_per_s_audio']} | "
        f"{100 * b['pcm_line_fraction']:.0f} % |",
        "",
        f"Raw PCM over this line {verdict}; it needs at least {b['pcm_min_baud']:,} baud "
        "(e.g. 460,800 or 921,600 on a board's USB-UART). Features need a few percent of it.",
        "",
    ]
