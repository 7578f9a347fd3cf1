"""What a board's memory will do: the audio mode under a model of the Zynq-7000's caches.

QEMU does not model caches (docs/targets.md §5), so its icount ticks rank instruction counts
only. `codegen bench` therefore also runs the audio mode under the project's QEMU TCG plugin
``tools/qemu_plugin/elt_cache.c`` (built by ``tools/build_qemu_plugin.sh`` from setup): every
instruction fetch and every cacheable data access goes through an L1I and an L1D of 32 KiB,
4 ways, 32-byte lines (ARM DDI 0388, Cortex-A9 TRM §7.1; UG585 §3.1.1) and a 512 KiB 8-way PL310
L2 (ARM DDI 0246 §1.1; UG585 §3.4), pseudo-random replacement and write-back write-allocate at
both levels, as the firmware sets them (firmware/board/zynq7000/fw_mmu.c). The plugin counts
instructions, misses and writebacks per instruction address; `function_table` names them by the
ELF's symbols. Not modelled: the MMU's translation-table walks (QEMU's plugin API does not report
them; the firmware's 1 MiB sections fit the TLB), cache maintenance by set/way at start-up, the
PL310's prefetch and the store buffer's merging of writes.

How an audio second is counted: the plugin snapshots its running totals each time the firmware
enters ``elt_<kind>_s16_step_end`` (once per utterance, in AUDIO_END's handling). Each clip is
streamed twice in a row (stop-and-wait, as `elatta_measure.bench.measure_audio` does), so the
window between the two passes' snapshots holds exactly one utterance of that clip: the rest of
the first pass's AUDIO_END (encoder end, adaptation, RESULT), the wait for the next request
(every instruction of the WFI wait loop and the receive interrupt's entry and exit), AUDIO_BEGIN,
every AUDIO chunk, and AUDIO_END up to the mark. Every instruction the core executes in it
counts, whichever function runs it; ``ticks_all`` is that count / 10 (QEMU -icount shift=0: ten
instructions per global-timer tick, docs/targets.md §4), normalised to one second of audio.

Estimated cycles (a model, stated with its parts; the board is the measurement):
``insns × CPI + L1 misses served by the L2 × L2_HIT_CYCLES + L2 misses × DDR_CYCLES`` with
CPI = 1 (the Cortex-A9 issues up to two instructions a cycle but the NEON kernels are dependent
chains; ARM DDI 0388 §1.3), the penalties added serially (no overlap of a miss with work: an
upper estimate of their cost). The TRMs fix the geometry but not the latencies: the PL310's
tag and data RAM latencies are programmable (ARM DDI 0246 §3.3.5, Tag and Data RAM Latency
Control) and the DDR's depend on the board's DDR3 and its controller (UG585 §10). The penalties
used are therefore assumptions, stated here and in bench.json, with the miss counts beside them
so that other penalties can be applied: ``L2_HIT_CYCLES`` = 25 (XAPP1206 §"Before You Begin":
cache misses "stall instructions that are dependent on them for tens of cycles"; the L2 sits
behind the SCU and runs at half the core's clock on the Zynq-7000, UG585 §3.4) and
``DDR_CYCLES`` = 100 (about 150 ns at 667 MHz for a DDR3 row access through the DDR controller's
AXI port, UG585 §10.1; "hundreds of cycles" under contention, XAPP1206).
"""

from __future__ import annotations

import bisect
import statistics
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codegen.base.errors import CodegenError
from codegen.target.toolchain import find_tool

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIR = ROOT / "out" / "cache" / "qemu-plugin"
PLUGIN = PLUGIN_DIR / "libelt_cache.so"
CLOCK_HZ = 667_000_000  # the Zynq-7020's Cortex-A9 at speed grade -1 (DS187 Table 13: 667 MHz)
CPI = 1
L2_HIT_CYCLES = 25
DDR_CYCLES = 100
INSNS_PER_TICK = 10  # QEMU -icount shift=0 against the 100 MHz global timer (docs/targets.md §4)
COUNTERS = (
    "insns",
    "l1i_miss",
    "l1d_rd",
    "l1d_wr",
    "l1d_rd_miss",
    "l1d_wr_miss",
    "l1d_wb",
    "l2_miss_i",
    "l2_miss_d",
    "l2_wb",
)
MARK_SYMBOLS = ("elt_lstm_s16_step_end", "elt_gru_s16_step_end")
# Functions grouped into the kernels the report names, by the source file that defines them
# (the firmware is built with -g: `nm -l` names it; a kernel's *_ops.h counts as its .c).
KERNELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("encoder", ("elt_lstm_", "elt_gru_", "elt_dense_", "model.c")),
    ("front end", ("elt_mfcc_", "elt_adpcm", "mfcc_params.c")),
    (
        "adaptation",
        (
            "elt_adapt",
            "elt_cmaes_",
            "elt_entropy_",
            "elt_rng",
            "elt_intmath",
            "elt_cmvn_",
            "adapt_params.c",
        ),
    ),  # fmt: skip
    ("link", ("fw_server", "fw_frame", "fw_uart", "fw_irq", "main.c")),
    ("application", ("fw_app_kws",)),
)


class MemoryModelError(CodegenError):
    """The memory model could not run or its output could not be read."""


@dataclass(frozen=True)
class Penalties:
    clock_hz: int = CLOCK_HZ
    cpi: int = CPI
    l2_hit_cycles: int = L2_HIT_CYCLES
    ddr_cycles: int = DDR_CYCLES

    def cycles(self, c: dict[str, float]) -> float:
        """The cycle estimate of one set of counts (module docstring)."""
        l1_miss = c["l1i_miss"] + c["l1d_rd_miss"] + c["l1d_wr_miss"]
        l2_miss = c["l2_miss_i"] + c["l2_miss_d"]
        return (
            self.cpi * c["insns"]
            + (l1_miss - l2_miss) * self.l2_hit_cycles
            + l2_miss * self.ddr_cycles
        )

    def describe(self) -> dict[str, Any]:
        return {
            "clock_hz": self.clock_hz,
            "cpi": self.cpi,
            "l2_hit_cycles": self.l2_hit_cycles,
            "ddr_cycles": self.ddr_cycles,
            "formula": "insns*cpi + (L1 misses - L2 misses)*l2_hit_cycles + L2 misses*ddr_cycles",
            "sources": "geometry: ARM DDI 0388 §7.1, ARM DDI 0246 §1.1, UG585 §3.1.1, §3.4; "
            "latencies: assumptions (PL310 latencies programmable, ARM DDI 0246 §3.3.5; "
            "XAPP1206: misses stall dependents for tens of cycles, DDR hundreds under "
            "contention), measure/bench_memory.py",
        }


def plugin_status() -> tuple[Path | None, str]:
    """The plugin library, or None and why it is absent (tools/build_qemu_plugin.sh's reason)."""
    if PLUGIN.is_file():
        return PLUGIN, ""
    why = PLUGIN_DIR / "ABSENT"
    if why.is_file():
        return None, why.read_text().strip()
    return None, f"{PLUGIN} not built: run tools/build_qemu_plugin.sh (tools/setup.sh runs it)"


@dataclass(frozen=True)
class Counts:
    """The plugin's output: totals, per-address counts and the marks' snapshots."""

    geometry: str
    total: dict[str, int]
    per_pc: dict[int, tuple[int, ...]]
    marks: list[tuple[int, tuple[int, ...]]]


def parse_counts(text: str) -> Counts:
    lines = text.splitlines()
    if not lines or lines[0] != "elt_cache 1":
        raise MemoryModelError("the memory-model plugin's output has no 'elt_cache 1' header")
    geometry = ""
    names: tuple[str, ...] = ()
    total: dict[str, int] = {}
    per_pc: dict[int, tuple[int, ...]] = {}
    marks: list[tuple[int, tuple[int, ...]]] = []
    for ln in lines[1:]:
        f = ln.split()
        if f[0] == "geometry":
            geometry = " ".join(f[1:])
        elif f[0] == "counters":
            names = tuple(f[1:])
            if names != COUNTERS:
                raise MemoryModelError(f"unexpected counters {names}")
        elif f[0] == "total":
            total = dict(zip(COUNTERS, map(int, f[1:]), strict=True))
        elif f[0] == "pc":
            per_pc[int(f[1], 16)] = tuple(map(int, f[2:]))
        elif f[0] == "mark":
            marks.append((int(f[1], 16), tuple(map(int, f[2:]))))
    return Counts(geometry, total, per_pc, marks)


def symbols(elf: Path) -> list[tuple[int, int, str, str]]:
    """(address, size, name, source file name) of every function of the ELF, by address."""
    nm = find_tool("arm-none-eabi-nm")
    out = subprocess.run(
        [nm, "-S", "-n", "-l", str(elf)], check=True, capture_output=True, text=True
    )
    syms = []
    for line in out.stdout.splitlines():
        head, _, where = line.partition("\t")
        p = head.split()
        if len(p) == 4 and p[2] in "tTwW":
            syms.append((int(p[0], 16), int(p[1], 16), p[3], Path(where.split(":")[0]).name))
    return syms


def symbol_address(elf: Path, names: Sequence[str]) -> int | None:
    for addr, _, name, _ in symbols(elf):
        if name in names:
            return addr
    return None


def function_table(counts: Counts, elf: Path) -> dict[tuple[str, str], dict[str, int]]:
    """Per (function, source file) ('?' outside every symbol): the summed counters."""
    syms = symbols(elf)
    starts = [s[0] for s in syms]
    out: dict[tuple[str, str], list[int]] = {}
    for pc, n in counts.per_pc.items():
        k = bisect.bisect_right(starts, pc) - 1
        key = ("?", "")
        if k >= 0 and pc < syms[k][0] + max(syms[k][1], 4):
            key = (syms[k][2], syms[k][3])
        acc = out.setdefault(key, [0] * len(COUNTERS))
        for j, v in enumerate(n):
            acc[j] += v
    return {f: dict(zip(COUNTERS, v, strict=True)) for f, v in out.items()}


def kernel_of(source: str) -> str:
    """The kernel a function belongs to, by its source file (KERNELS; 'rest': the run-time,
    timer, MMU set-up, libgcc)."""
    for kernel, names in KERNELS:
        if any(n in source for n in names):
            return kernel
    return "rest"


def summarise(c: dict[str, float]) -> dict[str, float]:
    return {
        "insns": c["insns"],
        "l1i_misses": c["l1i_miss"],
        "l1d_misses": c["l1d_rd_miss"] + c["l1d_wr_miss"],
        "l2_misses": c["l2_miss_i"] + c["l2_miss_d"],
    }


def stream_clips(
    elf: Path, clips: np.ndarray, mode: str, budget: float, extra_args: tuple[str, ...] = ()
) -> tuple[list[float], int, int]:
    """The clips through the audio mode in ``mode`` (each twice, stop-and-wait) under QEMU with
    ``extra_args``; each clip's seconds of audio, and the stack high-water mark and the stack
    size INFO reports after them (stack painting: the deepest the main stack went)."""
    from elatta_host.device import Device
    from elatta_host.infer import max_chunk_samples, mode_index
    from elatta_host.qemu import Qemu
    from elatta_host.run import stream_audio

    q = Qemu(elf, icount=True, link_timeout=5.0, budget=budget, extra_args=extra_args,
             flags={"budget": "--budget"})  # fmt: skip
    link = q.start()
    link.max_in_flight = 1  # stop-and-wait: no byte arrives while the device computes
    seconds = []
    try:
        dev = Device(link)
        info = dev.hello(sync_timeout=budget)
        chunk = max_chunk_samples(info.max_payload)
        for j, pcm in enumerate(clips):
            for _ in range(2):
                stream_audio(link, j, mode_index(mode), np.asarray(pcm, np.int16), chunk)
            seconds.append(len(pcm) / 16000)
        info = dev.hello()
    finally:
        q.stop()
    return seconds, int(info.stack_used), int(info.stack_size)


def run_model(
    elf: Path,
    clips: np.ndarray,
    mode: str,
    work: Path,
    budget: float,
) -> tuple[Counts, list[float], int, int]:
    """`stream_clips` under the plugin; the counts, each clip's seconds of audio, the stack
    high-water mark and the stack size."""
    lib, why = plugin_status()
    if lib is None:
        raise MemoryModelError(why)
    mark = symbol_address(elf, MARK_SYMBOLS)
    if mark is None:
        raise MemoryModelError(f"{elf} has none of {MARK_SYMBOLS} (no audio mode?)")
    work.mkdir(parents=True, exist_ok=True)
    out = work / f"cache_{mode}.txt"
    out.unlink(missing_ok=True)
    arg = f"{lib},out={out},mark={mark:#x}"
    seconds, used, size = stream_clips(elf, clips, mode, budget, ("-plugin", arg))
    if not out.is_file():
        raise MemoryModelError(f"the plugin wrote no {out} (did QEMU exit cleanly?)")
    return parse_counts(out.read_text()), seconds, used, size


def utterance_windows(counts: Counts, n_clips: int) -> list[dict[str, int]]:
    """The counts between the two passes' first marks of each clip (module docstring; a mode
    that encodes a clip twice, cmvn_select, passes the mark twice per utterance)."""
    snaps = [s for _, s in counts.marks]
    per = len(snaps) // (2 * n_clips) if n_clips else 0
    if per == 0 or len(snaps) != 2 * n_clips * per:
        raise MemoryModelError(
            f"expected a multiple of {2 * n_clips} utterance marks, the plugin saw {len(snaps)} "
            "(a re-sent AUDIO_END would add one)"
        )
    out = []
    for j in range(n_clips):
        a, b = snaps[2 * j * per], snaps[(2 * j + 1) * per]
        out.append({k: b[i] - a[i] for i, k in enumerate(COUNTERS)})
    return out


def measure_build(
    name: str,
    elf: Path,
    clips: np.ndarray,
    work: Path,
    budget: float,
    pen: Penalties,
    mode: str = "strict",
) -> dict[str, Any]:
    """One firmware under the memory model: per clip (median over the clips) and per second of
    audio, the whole device and each kernel."""
    counts, seconds, stack_used, stack_size = run_model(elf, clips, mode, work / name, budget)
    wins = utterance_windows(counts, len(clips))
    per_s = [{k: v / s for k, v in w.items()} for w, s in zip(wins, seconds, strict=True)]

    def med(rows: list[dict[str, float]], key: str) -> float:
        return float(statistics.median(r[key] for r in rows))

    clip = {k: med(wins, k) for k in COUNTERS}  # type: ignore[arg-type]
    second = {k: med(per_s, k) for k in COUNTERS}
    n_utt = 2 * len(clips)
    funcs = function_table(counts, elf)
    kernels: dict[str, dict[str, float]] = {}
    for (_, src), c in funcs.items():
        acc = kernels.setdefault(kernel_of(src), dict.fromkeys(COUNTERS, 0.0))
        for k in COUNTERS:
            acc[k] += c[k] / n_utt
    top = sorted(funcs.items(), key=lambda kv: -(kv[1]["l1d_rd_miss"] + kv[1]["l1d_wr_miss"]))
    return {
        "mode": mode,
        "clips": len(clips),
        "per_clip": summarise(clip) | {"est_cycles": round(pen.cycles(clip))},
        "per_audio_second": summarise(second)
        | {
            "est_cycles": round(pen.cycles(second)),
            "est_ms_at_clock": round(1000 * pen.cycles(second) / pen.clock_hz, 3),
            "ticks_all": round(second["insns"] / INSNS_PER_TICK),
        },
        # whole run / utterances: boot and HELLO fall to 'rest' and 'link', a few hundred
        # instructions over every utterance
        "kernels_per_clip": {
            k: {m: round(v) for m, v in summarise(c).items()} | {"est_cycles": round(pen.cycles(c))}
            for k, c in sorted(kernels.items())
        },
        "top_functions_by_l1d_misses": [
            {"function": f, "kernel": kernel_of(src)}
            | {m: round(v / n_utt, 1) for m, v in summarise(dict(c)).items()}
            for (f, src), c in top[:8]
        ],
        "stack_used": stack_used,
        "stack_size": stack_size,
    }


def memory_bench(
    builds: dict[str, Path],
    clips: np.ndarray,
    work: Path,
    budget: float,
    modes: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Every build (name -> ELF) under the memory model on the same clips; ``modes``: the audio
    mode per build (default strict). Returns the report, or the reason the plugin is absent."""
    lib, why = plugin_status()
    pen = Penalties()
    doc: dict[str, Any] = {
        "plugin": str(lib) if lib else None,
        "absent": why or None,
        "geometry": "L1I, L1D 32 KiB 4-way 32 B lines; L2 (PL310) 512 KiB 8-way 32 B lines; "
        "pseudo-random replacement, write-back write-allocate",
        "penalties": pen.describe(),
        "builds": {},
    }
    if lib is None:
        return doc
    for name, elf in builds.items():
        mode = (modes or {}).get(name, "strict")
        doc["builds"][name] = measure_build(name, elf, clips, work, budget, pen, mode)
    return doc


def build_full_tables(out: Path, res0: Any) -> Path:
    """The default build's firmware with the LSTM kernels generated for the former exhaustive σ
    and tanh tables (`codegen.emit.c.render_model` act_tables="full"; the same integers): the
    before figure of the memory model, built in the same run. Returns the ELF."""
    import shutil

    from codegen.emit.c import render_model, write_sources
    from codegen.pipeline.build import firmware_sources
    from codegen.target.firmware import FirmwareConfig, build_firmware

    q = res0.qmodel
    bdir = out / "builds" / "full_tables"
    src = bdir / "src"
    if src.is_dir():
        shutil.rmtree(src)
    shutil.copytree(res0.out_dir / "src", src)
    model = {n: t for n, t in render_model(q, act_tables="full").items() if "model." in n}
    write_sources(model, src)
    from codegen.emit.flags import model_cflags

    t = q.source.target
    fw = build_firmware(
        FirmwareConfig(
            uart=t.uart, baud=t.baud, uart_ref_hz=t.uart_ref_hz, max_payload=t.max_payload
        ),
        bdir,
        extra_sources=firmware_sources(q, sorted(src.glob("*.c"))),
        extra_includes=[src],
        extra_cflags=model_cflags(q),
    )
    return Path(fw.elf)


# the keys memory_doc adds to bench.json, in order (None when the plugin is absent)
TOP_KEYS = (
    "rodata_bytes",
    "rodata_split",
    "l1d_misses_per_clip",
    "est_cycles_per_audio_second",
    "audio_second_ticks_all",
    "ram_high_water_bytes",
    "memory",
)

# .rodata by owner (symbol prefix after the build's prefix), for the bench's rodata_bytes
RODATA_OWNERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("link layer CRC-32 tables (firmware/fw_crc32_tables.h)", ("crc32_",)),
    ("MFCC front end tables", ("mfcc_",)),
    ("encoder weights and bias", ("layer_",)),
    ("σ tables", ("sigmoid_", "tanh_")),
    ("adaptation tables and head", ("adapt_",)),
    ("IMA ADPCM decoder table", ("adpcm_",)),
    ("integer math seeds", ("elt_",)),
)


def rodata_split(elf: Path, prefix: str) -> dict[str, int]:
    """.rodata bytes per owner (RODATA_OWNERS; 'other': strings, literal pools, small consts)."""
    nm = find_tool("arm-none-eabi-nm")
    out = subprocess.run([nm, "-S", str(elf)], check=True, capture_output=True, text=True)
    split: dict[str, int] = {}
    for line in out.stdout.splitlines():
        p = line.split()
        if len(p) != 4 or p[2] not in "rR":
            continue
        name = p[3][len(prefix) :] if p[3].startswith(prefix) else p[3]
        owner = next((o for o, pre in RODATA_OWNERS if name.startswith(pre)), "other symbols")
        split[owner] = split.get(owner, 0) + int(p[1], 16)
    return dict(sorted(split.items(), key=lambda kv: -kv[1]))


def memory_doc(
    out: Path, res0: Any, clips: np.ndarray, budget: float, ram_of: Any
) -> dict[str, Any]:
    """`codegen bench`'s memory section (its hook): the default build and its exhaustive-table
    twin under the memory model in mode strict, the default build again in cmvn_select (the
    deployed input adaptation) for the RAM high-water; ``ram_of(manifest, {stack_size,
    stack_used})`` is the bench's RAM sum. The top-level figures it returns beside the report:
    rodata_bytes, l1d_misses_per_clip, est_cycles_per_audio_second, audio_second_ticks_all,
    ram_high_water_bytes (each figure's "before": the exhaustive tables in the same run)."""
    assert res0.elf is not None
    fw = res0.manifest["firmware"]
    prefix = res0.qmodel.prefix
    doc: dict[str, Any] = {
        "rodata_bytes": int(fw["rodata"]),
        "rodata_split": rodata_split(Path(res0.elf), prefix),
    }
    lib, why = plugin_status()
    if lib is None:
        # no cache figures; the audio mode's RAM high-water all the same, without the plugin
        ram = {}
        for mode in ("strict", "cmvn_select"):
            _, used, size = stream_clips(Path(res0.elf), clips, mode, budget)
            ram[mode] = ram_of(res0.manifest, {"stack_size": size, "stack_used": used})
        return (
            doc
            | dict.fromkeys(TOP_KEYS[2:-2])
            | {
                "ram_high_water_bytes": {
                    "value": max(ram.values()),
                    "audio_strict": ram["strict"],
                    "audio_cmvn_select": ram["cmvn_select"],
                },
                "memory": {"absent": why},
            }
        )
    before_elf = build_full_tables(out, res0)
    builds = {"before": before_elf, "after": Path(res0.elf), "after_cmvn_select": Path(res0.elf)}
    modes = {"after_cmvn_select": "cmvn_select"}
    mem = memory_bench(builds, clips, out / "memory", budget, modes)
    mem["before_rodata_split"] = rodata_split(before_elf, prefix)
    b, a = mem["builds"]["before"], mem["builds"]["after"]
    ram = {
        name: ram_of(res0.manifest, {"stack_size": r["stack_size"], "stack_used": r["stack_used"]})
        for name, r in mem["builds"].items()
        if name != "before"
    }
    doc |= {
        "l1d_misses_per_clip": {
            "value": round(a["per_clip"]["l1d_misses"]),
            "before": round(b["per_clip"]["l1d_misses"]),
        },
        "est_cycles_per_audio_second": {
            "value": a["per_audio_second"]["est_cycles"],
            "before": b["per_audio_second"]["est_cycles"],
        },
        "audio_second_ticks_all": {
            "value": a["per_audio_second"]["ticks_all"],
            "before": b["per_audio_second"]["ticks_all"],
            "how": "every instruction the core executes between two utterances' marks, "
            "wait loop and interrupts included, / 10 (measure/bench_memory.py)",
        },
        "ram_high_water_bytes": {
            "value": max(ram.values()),
            "audio_strict": ram["after"],
            "audio_cmvn_select": ram["after_cmvn_select"],
        },
        "memory": mem,
    }
    return doc


def memory_md(d: dict[str, Any]) -> list[str]:
    """bench.md's section of the memory model."""
    mem = d.get("memory")
    rows = [
        "## Memory: what a board's caches will do",
        "",
        f".rodata {d['rodata_bytes']} bytes: "
        + ", ".join(f"{k} {v}" for k, v in d["rodata_split"].items())
        + ".",
        "",
    ]
    r = d.get("ram_high_water_bytes")
    ram = (
        []
        if r is None
        else [
            f"RAM high-water (data + bss + the other modes' stacks + the main stack's painted "
            f"high-water after the audio mode): strict {r['audio_strict']}, cmvn_select "
            f"{r['audio_cmvn_select']} bytes.",
            "",
        ]
    )
    if not mem or mem.get("absent"):
        why = (mem or {}).get("absent", "not run")
        return [*rows, f"Memory model unavailable: {why}.", "", *ram]
    pen = mem["penalties"]
    rows += [
        f"The audio mode under the cache model ({mem['geometry']}); estimated cycles = "
        f"{pen['formula']}, CPI {pen['cpi']}, {pen['l2_hit_cycles']} cycles per L1 miss served "
        f"by the L2, {pen['ddr_cycles']} per L2 miss (assumed penalties: {pen['sources']}), at "
        f"{pen['clock_hz'] / 1e6:g} MHz. Before: the same firmware with the former exhaustive "
        "σ and tanh tables (2 × 128 KiB), built in this run.",
        "",
        "| figure | before | after |",
        "|---|---:|---:|",
    ]
    for key in ("l1d_misses_per_clip", "est_cycles_per_audio_second", "audio_second_ticks_all"):
        rows.append(f"| {key} | {d[key]['before']} | {d[key]['value']} |")
    rows += [
        "",
        "| kernel (per clip) | instructions | L1I misses | L1D misses | L2 misses | est. cycles |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in ("before", "after"):
        for k, c in mem["builds"][name]["kernels_per_clip"].items():
            rows.append(
                f"| {name}: {k} | {c['insns']} | {c['l1i_misses']} | {c['l1d_misses']} | "
                f"{c['l2_misses']} | {c['est_cycles']} |"
            )
    return [*rows, "", *ram]
