"""`codegen bench`: QEMU icount-tick costs of the default build and of a k x n sweep
(docs/targets.md §1, §4). Measurement only: the firmware is the ordinary `codegen build` ELF.

Every figure is a median of the global-timer ticks the device already returns in RESULT
(docs/protocol.md, "Model runtime"): ``encoder`` (FW_APP_ENCODE), ``adapt`` (elt_adapt_run) and
``total`` (the whole INFER: checks and copy, encoder, adaptation, packing). QEMU runs with
``-icount shift=0``, so they are "QEMU icount ticks" (not cycles), repeatable to +-1 tick.

Measured directly (default model, configs/default.toml: k = 2, n = 2, lambda = 6):

- ``encoder_ticks``: encoder ticks (mode strict; the encoder does not depend on the mode).
- ``adapt_ticks``: adapt ticks in mode strict (the whole ELaTTA adaptation).
- ``no_adapt_ticks``: total ticks of a mode-0 (no_adapt) INFER.
- ``elatta_ticks``: total ticks of a mode-1 (strict) INFER.
- ``cmvn_ticks``: adapt ticks of a mode-4 (cmvn) INFER: the continual input normalisation
  (firmware/elt_cmvn_s16.c) plus one head + entropy; ``cmvn_total_ticks`` its whole INFER.

Derived (stated in bench.md):

- ``head_entropy_ticks``: the adapt ticks of a no_adapt INFER. In that mode elt_adapt_run does
  exactly one head (W z + b) + entropy evaluation, plus z_t's requantisation (D shifts), argmax
  and copying C logits; so this is one head + entropy evaluation with that small overhead.
  Cross-check: the marginal cost of one more candidate, (adapt(lambda2) - adapt(lambda1)) /
  ((lambda2 - lambda1) n), from a second build with lambda = 2 x default at k = 2, n = 2.
- ``cmaes_iter_ticks``: the slope of strict adapt ticks over n at k = 2 (builds with n = 2 and
  n = 8): one whole CMA-ES iteration, i.e. its lambda candidate evaluations plus Cholesky,
  sampling, ranking and the update (``tell``).

Sweep: one build per (k, n), k in {2, 8, 16}, n in {2, 8}, lambda by the default rule
4 + floor(3 ln k). The shipped basis has k = 2; every other k gets a *synthetic* basis: random
orthonormal V (QR of a seeded Gaussian D x k matrix), so its costs are real but its accuracy is
meaningless. (k = 2, n = 2) is the default build itself (shipped basis).

RAM: ``ram_bytes`` = .data + .bss + the other modes' reserved stacks (manifest) + the main stack
high-water mark from INFO (stack painting) after the measurement; the manifest's
``static_ram_bytes`` counts the whole reserved main stack instead. ``elatta_state_bytes`` =
sizeof(elt_adapt_state_t) (continual p_prev, CMA-ES state and work, candidates) + G = W V_k
(C x k int32, the device's only form of V_k), sizeof taken by compiling a probe with this
build's flags (arm-none-eabi-gcc, ``nm -S``), because the manifest does not record it.

Baselines (``baselines``, ``ratios``): the default build (``neon``) against builds of this
repo's own code, measured in the same run on the same QEMU with the same clips:

- ``scalar``: the same integer firmware with the reference kernel variant (firmware/kernels/ref,
  the integer kernels' plain scalar C; -DELT_SCALAR for the rest), at the same -O2.
- ``float32``: the float32 C model (codegen/emit/f32.py: the trained float weights as
  ``static const float``; firmware/elt_lstm_f32.c: plain float32 loops, expf/tanhf from
  newlib's libm, hard-float VFP/NEON flags as every build), wired in with ``-DELT_ENCODER_F32``:
  the app dequantizes the int16 features, runs the float encoder, rounds z to Q0.15 and continues
  with the integer adaptation, so RESULT's encoder ticks time the float encoder.
- ``float32_fastmath``: the same with ``-O3 -ffast-math`` on every source (the
  docs/targets.md §1 anchor setting; at -O2, GCC 12 vectorizes no loop of run-time length, with
  or without fast-math).

Each records encoder and no-adapt ticks, .text/.rodata bytes, the fraction of the clips whose
device no-adapt class equals the Python float model's (``float_class_agreement``), and a
static instruction mix (``arm-none-eabi-objdump -d``) of the encoder's call tree.

Goals (``goals``): the performance targets of docs/targets.md §1, each with the figure of this run
it is judged on, the target and whether it is met — the encoder against 1.25x its MAC floor
(T·4H·(F+H) multiply-accumulates at four per VMLAL.S16, ten instructions per tick), c(k) − F_Cls at
k = 8 and 16, the k = 16 / n = 8 / λ = 12 adaptation against the no-adapt inference of the same
build, the host reference (strict, all processes) and the front end against CMSIS-DSP.

Audio mode (``audio``, ``audio_second_ticks``, ``link_instructions_per_byte``): one second
of audio per clip through AUDIO_BEGIN, AUDIO chunks and AUDIO_END (mode strict), RESULT's
``ticks_total`` (every request's application time) plus ``ticks_link`` (the link layer:
UART reads, COBS, CRC-32, checks, replies), with the front end, the link, the PCM unpacking,
the encoder and the adaptation as parts; the link's instructions per received byte are
``ticks_link / link_bytes`` times the core's instructions per tick (10 on the Cortex-A9,
codegen/target/cores.py).

Targets (``targets``): the default model's INFER costs on every registered core
(codegen/target/cores.py), each on its default board under QEMU -icount shift=0 — the default
build's own figures for its core, a build of the same generated sources for every other —
in that core's timer ticks and in guest instructions.

Front end (``frontend``, measure/bench_frontend.py): ticks per hop and per second of audio
of the integer MFCC front end (firmware/elt_mfcc_s16.c, NEON and reference variants) on every frame
of a few mixed test clips, and in the same run CMSIS-DSP 1.10.3's ``arm_mfcc_q15`` (Neon and
portable C) as the anchor; its sources are fetched from PyPI into ``out/cache/cmsisdsp`` by this
setup step (``--no-cmsis`` skips it; without network the anchor is reported unavailable, by name).
``frontend_ticks_per_hop`` is the NEON front end's median ticks per hop, on its own at the top
level. In the same run, ``frontend.fft_anchors`` (measure/bench_anchors.py): ticks per
n_fft-point real FFT of ours, of Ne10's int16 and int32 NEON FFTs (built at bench time from the
sources in ``--anchors DIR``/ne10, never vendored; absent: unavailable, by name) and of CMSIS-DSP
``arm_rfft_q15``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from elatta_host.transport import DEFAULT_BUDGET

from codegen.base.errors import CodegenError

HELP = "QEMU icount-tick benchmark of the default build and a k x n sweep (bench.json, bench.md)"
JSON_KEYS = (
    "encoder_ticks",
    "head_entropy_ticks",
    "cmaes_iter_ticks",
    "adapt_ticks",
    "no_adapt_ticks",
    "elatta_ticks",
    "ram_bytes",
    "elatta_state_bytes",
    "cmvn_ticks",
    "cmvn_total_ticks",
    "families",
    "sweep",
    "baselines",
    "ratios",
    "targets",
    "host_reference",
    "cost_model",
    "frontend",
    "frontend_ticks_per_hop",
    "link_instructions_per_byte",
    "audio_second_ticks",
    "audio",
    "audio_realtime_factor",
    "features_per_s_115200",
    "stop_seconds",
    "wire",
    "features",
    "k16_adapt_ratio",
    # measure/bench_memory.py (TOP_KEYS)
    "rodata_bytes",
    "rodata_split",
    "l1d_misses_per_clip",
    "est_cycles_per_audio_second",
    "audio_second_ticks_all",
    "ram_high_water_bytes",
    "memory",
    "goals",
)
SCALAR_KEYS = JSON_KEYS[:10]
BASELINES = ("scalar", "float32", "float32_fastmath")
SWEEP_K = (2, 8, 16)
SWEEP_N = (2, 8)
ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "default" / "model.pt"
BASIS = ROOT / "models" / "default" / "basis.npz"
CONFIG = ROOT / "configs" / "default.toml"
# the bench's setup fetches the CMSIS-DSP anchor's sources here (elatta_measure.bench_frontend)
CMSIS_CACHE = ROOT / "out" / "cache" / "cmsisdsp"
# third-party FFT sources the bench builds as anchors (Ne10), never copied into the repository
ANCHORS = ROOT.parent / "shared" / "anchors"


class BenchError(CodegenError):
    """The benchmark could not build or measure a point."""


@dataclass(frozen=True)
class Point:
    """One build of the sweep."""

    k: int
    n: int
    lam: int | None  # None: the default rule 4 + floor(3 ln k)

    @property
    def name(self) -> str:
        return f"k{self.k}_n{self.n}" + ("" if self.lam is None else f"_lam{self.lam}")


def default_lam(k: int) -> int:
    return 4 + int(np.floor(3 * np.log(k)))


def config_for(text: str, p: Point) -> str:
    """configs/default.toml with k, n_iter (and lam) replaced."""
    out, nk = re.subn(r"(?m)^k\s*=.*$", f"k = {p.k}", text)
    out, nn = re.subn(r"(?m)^n_iter\s*=.*$", f"n_iter = {p.n}", out)
    if nk != 1 or nn != 1:
        raise BenchError("config: expected one `k =` and one `n_iter =` line in [elatta]")
    if p.lam is not None:
        out = re.sub(r"(?m)^n_iter\s*=.*$", lambda m: f"{m.group(0)}\nlam = {p.lam}", out)
    return out


def synthetic_basis(path: Path, model: Path, base: Path, k: int, seed: int = 0) -> None:
    """A random orthonormal V [D, k] (QR of a seeded Gaussian), tagged with the model's sha256:
    real costs, meaningless accuracy."""
    from codegen.base.files import file_sha256
    from codegen.frontend.basis import Basis, load_basis, save_basis

    b0 = load_basis(base)
    rng = np.random.default_rng(1000 + seed + k)
    q, r = np.linalg.qr(rng.standard_normal((b0.dim, k)))
    V = q * np.sign(np.diag(r))
    save_basis(path, Basis(V, np.ones(k), np.asarray(b0.mean), 0, k, seed, file_sha256(model), 0.0))


def samples(data_dir: Path, meta: Any, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``count`` clips of the first additive condition: ids and float features."""
    from codegen.data import condition_ids, conditions, load_condition
    from codegen.ir.meta import features_for

    conds = [c for c in conditions(str(data_dir), "additive") if c.snr_db is not None]
    if not conds:
        raise BenchError(f"{data_dir} has no additive noise conditions")
    n = min(count, len(condition_ids(str(data_dir), conds[0])[0]))
    split = load_condition(str(data_dir), conds[0], rows=np.arange(n))
    return split.ids.astype(np.int64), features_for(split.pcm, meta)


def measure(
    elf: Path,
    x: np.ndarray,
    ids: np.ndarray,
    reps: int,
    modes: tuple[str, ...] = ("no_adapt", "strict"),
    budget: float = DEFAULT_BUDGET,
) -> dict[str, Any]:
    """Boot ``elf`` under QEMU -icount shift=0, send every sample ``reps`` times in each of
    ``modes`` (``budget``: seconds QEMU may take to boot and answer HELLO, and each request,
    `--budget`); medians of each tick field, the stack high-water mark, and the no-adapt class
    of every sample (``pred_noadapt``, from the first repetition of the first mode)."""
    from elatta_host.device import Device
    from elatta_host.infer import decode_result, encode_infer, mode_index
    from elatta_host.protocol import Msg
    from elatta_host.qemu import Qemu

    ticks: dict[str, list[int]] = {}
    link_ticks: dict[str, list[int]] = {}
    per_sample: dict[tuple[str, int], list[int]] = {}
    pred: list[int] = []
    # time budgets only, never a try count: a loaded machine boots QEMU slowly (docs/protocol.md,
    # "Host rules")
    q = Qemu(elf, icount=True, link_timeout=5.0, budget=budget, flags={"budget": "--budget"})
    link = q.start()
    link.max_in_flight = 1  # stop-and-wait: no byte arrives while the device computes
    try:
        dev = Device(link)
        dev.hello(sync_timeout=budget)
        for mode in modes:
            m = mode_index(mode)
            for _ in range(reps):
                # every repetition from the reset state: a stateful mode (cmvn) then sees the
                # same state sequence, so a repeated clip repeats its ticks
                link.request(Msg.RESET, b"", expect=Msg.RESET_ACK)
                for j, (sid, xi) in enumerate(zip(ids, x, strict=True)):
                    reply = link.request(
                        Msg.INFER,
                        encode_infer(int(sid), m, xi),
                        expect=Msg.RESULT,
                    )
                    r = decode_result(reply.payload)
                    if len(pred) < len(ids):
                        pred.append(int(r.pred_noadapt))
                    for f in ("encoder", "adapt", "total"):
                        v = int(getattr(r, f"ticks_{f}"))
                        ticks.setdefault(f"{mode}.{f}", []).append(v)
                        per_sample.setdefault((f"{mode}.{f}", j), []).append(v)
                    # the link's work since the request before (RESULT's ticks_link): it follows
                    # how QEMU hands the bytes over, so it stays out of the spreads below
                    link_ticks.setdefault(f"{mode}.link", []).append(int(r.ticks_link or 0))
                    link_ticks.setdefault(f"{mode}.link_bytes", []).append(int(r.link_bytes or 0))
        info = dev.hello()
    finally:
        q.stop()
    med: dict[str, Any] = {key: int(statistics.median_low(v)) for key, v in ticks.items()}
    # same clip, same mode, repeated: QEMU icount determinism (+-1 tick of timer phase); cmvn's
    # adapt ticks add two timed intervals (the normalisation and the head), so +-2 there
    med["rep_spread"] = max(max(v) - min(v) for k, v in per_sample.items() if k[0] != "cmvn.adapt")
    # different clips: data-dependent paths (entropy, Cholesky pivots, saturation)
    med["sample_spread"] = max(max(v) - min(v) for v in ticks.values())
    med |= {key: int(statistics.median_low(v)) for key, v in link_ticks.items()}
    med["stack_used"] = int(info.stack_used)
    med["stack_size"] = int(info.stack_size)
    med["pred_noadapt"] = pred
    return med


# the audio-mode total RESULT reported before the link and the PCM unpacking were counted
# (default model, strict, one second of audio): the figure audio_second_ticks replaces
AUDIO_SECOND_TICKS_BEFORE = 503_000


def measure_audio(elf: Path, clips: np.ndarray, budget: float = DEFAULT_BUDGET) -> dict[str, Any]:
    """Every clip (16 kHz int16) through the audio mode in mode strict, twice in a row, under
    QEMU -icount shift=0; the second utterance's RESULT is kept, so that its link span (from the
    previous request's handling to AUDIO_END, docs/protocol.md "Audio mode") holds a RESULT
    reply like its own, as in a stream of utterances. Medians per second of audio: the device's
    whole work from AUDIO_BEGIN's first byte to RESULT's last (``ticks_total``, every request's
    application time, plus ``ticks_link``) and its parts."""
    from elatta_host.device import Device
    from elatta_host.infer import max_chunk_samples, mode_index
    from elatta_host.qemu import Qemu
    from elatta_host.run import stream_audio

    from codegen.target.boards import get_board

    rows: dict[str, list[float]] = {}
    q = Qemu(elf, icount=True, link_timeout=5.0, budget=budget, flags={"budget": "--budget"})
    ipt = get_board(q.board).core.instructions_per_tick  # 10 on the Cortex-A9
    link = q.start()
    link.max_in_flight = 1  # stop-and-wait: no byte arrives while the device computes
    try:
        info = Device(link).hello(sync_timeout=budget)
        chunk = max_chunk_samples(info.max_payload)
        for j, pcm in enumerate(clips):
            for _ in range(2):
                r = stream_audio(link, j, mode_index("strict"), np.asarray(pcm, np.int16), chunk)
            per_s = 16000 / len(pcm)
            app, lk = int(r.ticks_total), int(r.ticks_link or 0)
            parts = {
                "total": app + lk,
                "result_total": app,
                "frontend": int(r.ticks_frontend or 0),
                "link": lk,
                "unpack": int(r.ticks_unpack or 0),
                "encoder": int(r.ticks_encoder),
                "adapt": int(r.ticks_adapt),
            }
            parts["other"] = app - sum(parts[k] for k in ("frontend", "unpack", "encoder", "adapt"))
            for key, v in parts.items():
                rows.setdefault(key, []).append(v * per_s)
            rows.setdefault("link_bytes", []).append(int(r.link_bytes or 0) * per_s)
            rows.setdefault("link_ipb", []).append(ipt * lk / max(1, int(r.link_bytes or 0)))
    finally:
        q.stop()
    med = {k: statistics.median(v) for k, v in rows.items()}
    return {
        "clips": int(len(clips)),
        "chunk_samples": int(chunk),
        "ticks_per_second": {
            k: int(round(med[k]))
            for k in ("total", "result_total", "frontend", "link", "unpack", "encoder", "adapt")
        }
        | {"other": int(round(med["other"]))},
        "link_bytes_per_second": int(round(med["link_bytes"])),
        "link_instructions_per_byte": round(float(med["link_ipb"]), 2),
        "before_ticks_per_second": AUDIO_SECOND_TICKS_BEFORE,
    }


def features_md(f: dict[str, Any] | None) -> list[str]:
    """The feature path's whole device work per sample: RESULT's total plus its link ticks."""
    if not f:
        return []
    return [
        "## Feature INFER: one sample, the whole device",
        "",
        f"Mode strict, median over the clips: {f['total']} ticks per sample = RESULT's total "
        f"{f['result_total']} + the link's {f['link']} (RESULT's ticks_link: {f['link_bytes']} "
        f"bytes received since the request before, {f['link_instructions_per_byte']} device "
        'instructions per byte; docs/protocol.md, "Link cost").',
        "",
    ]


def wire_md(w: dict[str, Any] | None) -> list[str]:
    """The wire on a board (elatta_measure.bench_wire): wall-clock figures through the project's
    USB-UART model, not QEMU icount ticks."""
    if not w:
        return []
    rows = [
        "## The wire on a board (wall clock, through the USB-UART model)",
        "",
        f"{w['line']}; steady state (first to last RESULT), default link settings. Goals: "
        "921,600 raw <= 1.0, 921,600 ADPCM <= 0.5, 115,200 ADPCM <= 1.0 real time; features "
        ">= 9.0/s at 115,200.",
        "",
        "| line | wall s per s of audio |",
        "|---|---:|",
    ]
    rtf = w["audio_realtime_factor"]
    rows += [f"| {k.replace('_', ' baud, ')} | {v} |" for k, v in rtf.items()]
    rows += [
        "",
        f"Feature INFERs at 115,200 baud: {w['features_per_s_115200']} per s. A run through a "
        f"noisy line (10 % of chunks damaged by each fault) stops {w['stop_seconds']} s after "
        "its stop flag (Ctrl-C) is set.",
        "",
    ]
    return rows


def audio_md(a: dict[str, Any] | None) -> list[str]:
    if not a:
        return []
    t = a["ticks_per_second"]
    total = t["total"]

    def row(name: str, key: str, how: str) -> str:
        return f"| {name} | {t[key]} | {100 * t[key] / total:.1f} % | {how} |"

    return [
        "## Audio mode: one second of audio, the whole device",
        "",
        f"Default model, mode strict, {a['clips']} clip(s) of the data set streamed as AUDIO "
        f"chunks of {a['chunk_samples']} samples (RESULT of AUDIO_END, docs/protocol.md). "
        f"audio_second_ticks = {total} ticks per second of audio, from AUDIO_BEGIN's first byte "
        f"to RESULT's last (goal ≤ 120,000), next to ≈{a['before_ticks_per_second']:,}, the "
        f"figure stated before the link and the unpacking were counted (RESULT's total alone; "
        f"this run: {t['result_total']}). The link layer: {a['link_bytes_per_second']} bytes "
        f"received, {a['link_instructions_per_byte']} device instructions per byte (10 per "
        "tick; under QEMU the UART driver wakes once per 16-byte burst, its model's whole RX "
        "FIFO, and the CRC-32 takes about 1.4 a byte: docs/targets.md §4).",
        "",
        "| part | ticks / s of audio | share | what |",
        "|---|---:|---:|---|",
        row("front end", "frontend", "integer MFCC, one frame per 20 ms hop"),
        row("link", "link", "UART reads, COBS, CRC-32, checks, ACK and RESULT replies"),
        row(
            "unpacking",
            "unpack",
            "PCM copied out of the AUDIO payloads (0: the front end takes the samples from them)",
        ),
        row("encoder", "encoder", "one LSTM step per frame, pooling"),
        row("adaptation", "adapt", "head + entropy, CMA-ES"),
        row("rest", "other", "payload checks, ACK packing, timing"),
        f"| whole device | {total} | 100 % | ticks_total + ticks_link |",
        "",
    ]


def state_bytes(build_dir: Path, q: Any) -> int:
    """sizeof(elt_adapt_state_t) + C k int32 (G = W V_k), by compiling a probe with the build's -D
    flags and reading the probe symbol's size (the manifest does not record it)."""
    from codegen.base.resources import firmware_dir
    from codegen.emit.flags import model_cflags
    from codegen.target.boards import get_board
    from codegen.target.toolchain import find_tool

    board = json.loads((build_dir / "firmware.json").read_text())["config"]["board"]
    probe = build_dir / "bench_sizeof.c"
    probe.write_text('#include "elt_adapt.h"\nchar bench_state_size[sizeof(elt_adapt_state_t)];\n')
    obj = probe.with_suffix(".o")
    gcc = find_tool("arm-none-eabi-gcc")
    subprocess.run(
        [
            gcc,
            *get_board(board).core.cpu_flags,
            "-c",
            *model_cflags(q),
            f"-I{firmware_dir()}",
            f"-I{build_dir / 'src'}",
            str(probe),
            "-o",
            str(obj),
        ],
        check=True,
    )
    nm = find_tool("arm-none-eabi-nm")
    out = subprocess.run([nm, "-S", str(obj)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[-1] == "bench_state_size":
            size = int(parts[1], 16) if len(parts) == 4 else int(parts[0], 16)
            return size + 4 * q.adapt.n_classes * q.adapt.k
    raise BenchError(f"bench_state_size not found in `nm -S {obj}`")


def ram(manifest: dict[str, Any], m: dict[str, Any]) -> int:
    fw = manifest["firmware"]
    other_stacks = int(fw["stack"]) - int(m["stack_size"])
    return int(fw["data"]) + int(fw["bss"]) + max(0, other_stacks) + int(m["stack_used"])


def build_point(out: Path, data_dir: Path, p: Point, default: Point) -> tuple[Any, bool]:
    from codegen.pipeline.build import build

    bdir = out / "builds" / p.name
    bdir.mkdir(parents=True, exist_ok=True)
    basis = BASIS
    synthetic = False
    from codegen.frontend.basis import load_basis

    if load_basis(BASIS).k != p.k:
        basis = bdir / "basis_synthetic.npz"
        synthetic_basis(basis, MODEL, BASIS, p.k)
        synthetic = True
    cfg = CONFIG if p == default else bdir / "config.toml"
    if p != default:
        cfg.write_text(config_for(CONFIG.read_text(), p))
    print(f"bench: building {p.name}{' (synthetic basis)' if synthetic else ''}", file=sys.stderr)
    return build(MODEL, basis, cfg, bdir, data_dir=data_dir), synthetic


def point_record(res: Any, m: dict[str, Any], synthetic: bool) -> dict[str, Any]:
    q = res.qmodel
    return {
        "k": int(q.adapt.k),
        "n": int(q.adapt.cfg.n_iter),
        "lam": int(q.adapt.cfg.lam),
        "synthetic_basis": synthetic,
        "encoder_ticks": m["strict.encoder"],
        "adapt_ticks": m["strict.adapt"],
        "no_adapt_ticks": m["no_adapt.total"],
        "elatta_ticks": m["strict.total"],
        "head_entropy_ticks": m["no_adapt.adapt"],
        "ram_bytes": ram(res.manifest, m),
        "elatta_state_bytes": state_bytes(res.out_dir, q),
        "rep_spread": m["rep_spread"],
        "sample_spread": m["sample_spread"],
    }


@dataclass(frozen=True)
class Variant:
    """One baseline firmware: the default build's sources with extra flags and the kernels'
    operations of one variant (codegen/target/sources.py; and, for the float variants, the
    float32 model and kernel, linked with libm)."""

    name: str
    cflags: tuple[str, ...]
    float32: bool
    what: str
    kernels: str = "neon_a32"

    @property
    def all_cflags(self) -> tuple[str, ...]:
        """The -D flags of the build: its kernel variant's, then its own."""
        from codegen.target import sources

        return (*sources.variant(self.kernels).cflags, *self.cflags)


def variants() -> dict[str, Variant]:
    from codegen.emit.f32 import F32_CFLAGS

    return {
        "scalar": Variant(
            "scalar",
            (),
            False,
            "integer firmware with the reference kernel variant (firmware/kernels/ref, "
            "-DELT_SCALAR): the kernels' plain scalar C",
            "ref",
        ),
        "float32": Variant(
            "float32", F32_CFLAGS, True, "float32 C encoder (plain loops, libm expf/tanhf), -O2"
        ),
        # -O3: GCC 12's -O2 vectorizer (very-cheap cost model) leaves loops of run-time length
        # scalar, so -O2 -ffast-math alone changes next to nothing; the docs/targets.md §1
        # anchor is -O3.
        "float32_fastmath": Variant(
            "float32_fastmath",
            (*F32_CFLAGS, "-O3", "-ffast-math"),
            True,
            "float32 C encoder, -O3 -ffast-math (every source)",
        ),
    }


def build_variant(out: Path, res0: Any, v: Variant) -> Any:
    """The default build's firmware sources (res0, `codegen build`) compiled again with the
    variant's flags into OUT/builds/<name>; returns the FirmwareBuild."""
    from codegen.base.resources import firmware_dir
    from codegen.emit.f32 import F32_LIBS, write_f32_sources
    from codegen.emit.flags import model_cflags
    from codegen.pipeline.build import firmware_sources
    from codegen.target import sources
    from codegen.target.firmware import FirmwareConfig, build_firmware

    q = res0.qmodel
    bdir = out / "builds" / v.name
    srcs = firmware_sources(q, list(res0.sources))
    includes = [res0.out_dir / "src"]
    libs: tuple[str, ...] = ()
    if v.float32:
        f32_dir = bdir / "src"
        srcs += write_f32_sources(q, f32_dir)
        srcs += [firmware_dir() / f for f in sources.F32]
        includes.insert(0, f32_dir)
        libs = F32_LIBS
    print(f"bench: building baseline {v.name}", file=sys.stderr)
    t = q.source.target
    return build_firmware(
        FirmwareConfig(
            uart=t.uart, baud=t.baud, uart_ref_hz=t.uart_ref_hz, max_payload=t.max_payload
        ),
        bdir,
        extra_sources=srcs,
        extra_includes=includes,
        extra_cflags=(*model_cflags(q), *v.cflags),
        extra_libs=libs,
        variant=sources.variant(v.kernels),
    )


_FUNC = re.compile(r"^[0-9a-f]{8} <([^>]+)>:$")
_INSN = re.compile(r"^\s*[0-9a-f]+:\t[0-9a-f ]+\t(\S+)(?:\t(.*))?$")
_CALL = re.compile(r"<([^>+]+)>")
_QREG = re.compile(r"\bq\d+\b")
_SREG = re.compile(r"\bs\d+\b")
_DREG = re.compile(r"\bd\d+\b")
_INT_TYPE = re.compile(r"^(?:[isup]?(?:8|16|32|64))$")


def classify(mnemonic: str, operands: str) -> str:
    """``arm``, ``neon`` or ``vfp`` for one disassembled instruction (static, by syntax):
    NEON = Advanced SIMD (q registers, vld1-4/vst1-4, integer element types, .f32 on d
    registers); VFP = scalar floating point (s registers, .f64) and the VFP/NEON register
    file's plain loads, stores and moves (vldr, vstr, vpush, vpop, vmov, vmrs); ARM = the rest."""
    m = mnemonic.lower()
    if not m.startswith("v"):
        return "arm"
    ops = operands.split(";")[0]
    if re.match(r"v(?:ld|st)[1-4]", m) or _QREG.search(ops):
        return "neon"
    types = m.split(".")[1:]
    if _SREG.search(ops) or "f64" in types:
        return "vfp"
    if _DREG.search(ops) and types and ("f32" in types or any(_INT_TYPE.match(t) for t in types)):
        return "neon"
    return "vfp"


def disassemble(elf: Path) -> dict[str, list[tuple[str, str]]]:
    """{function: [(mnemonic, operands)]} from ``arm-none-eabi-objdump -d`` (literal-pool
    ``.word`` entries skipped)."""
    from codegen.target.toolchain import find_tool

    objdump = find_tool("arm-none-eabi-gcc").replace("gcc", "objdump")
    text = subprocess.run(
        [objdump, "-d", str(elf)], check=True, capture_output=True, text=True
    ).stdout
    funcs: dict[str, list[tuple[str, str]]] = {}
    cur: list[tuple[str, str]] | None = None
    for line in text.splitlines():
        fm = _FUNC.match(line)
        if fm:
            cur = funcs.setdefault(fm.group(1), [])
            continue
        im = _INSN.match(line)
        if im and cur is not None and not im.group(1).startswith("."):
            cur.append((im.group(1), im.group(2) or ""))
    return funcs


def instruction_mix(elf: Path, entry: str) -> dict[str, Any]:
    """Static instruction counts of ``entry``'s call tree (direct ``b``/``bl`` targets, libm
    included), classified by :func:`classify`. Static: each instruction counted once, however
    often it runs."""
    funcs = disassemble(elf)
    if entry not in funcs:
        raise BenchError(f"{entry} not found in `objdump -d {elf}`")
    seen: list[str] = []
    todo = [entry]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.append(f)
        for mn, ops in funcs[f]:
            if mn.lower().startswith("b") and not mn.lower().startswith("bic"):
                todo += [c for c in _CALL.findall(ops) if c in funcs and c != f]
    counts = {"arm": 0, "neon": 0, "vfp": 0}
    for f in seen:
        for mn, ops in funcs[f]:
            counts[classify(mn, ops)] += 1
    return {**counts, "total": sum(counts.values()), "functions": sorted(seen)}


def encoder_symbol(res: Any) -> str:
    """The integer encoder's entry point: FW_APP_ENCODE of the build's fw_app_model.h."""
    text = (res.out_dir / "src" / "fw_app_model.h").read_text()
    m = re.search(r"(?m)^#define FW_APP_ENCODE (\w+)", text)
    if m is None:
        raise BenchError(f"no FW_APP_ENCODE in {res.out_dir / 'src' / 'fw_app_model.h'}")
    return m.group(1)


def float_classes(q: Any, xf: np.ndarray) -> np.ndarray:
    """The Python float model's (float64) predicted classes of the float features."""
    from codegen.elatta.float_ref import encode_float, head_logits

    z = encode_float(xf, q.source)
    return np.argmax(head_logits(z, q.source.head.weight.values, q.source.head.bias.values), axis=1)


def baseline_record(
    elf: Path,
    sections: dict[str, int],
    m: dict[str, Any],
    entry: str,
    cflags: tuple[str, ...],
    what: str,
    build_id: str,
    pred_float: np.ndarray,
) -> dict[str, Any]:
    pred = np.asarray(m["pred_noadapt"])
    return {
        "what": what,
        "cflags": list(cflags),
        "build_id": build_id,
        "encoder_ticks": m["strict.encoder"],
        "no_adapt_ticks": m["no_adapt.total"],
        "elatta_ticks": m["strict.total"],
        "text_bytes": int(sections["text"]),
        "rodata_bytes": int(sections["rodata"]),
        "float_class_agreement": round(float(np.mean(pred == pred_float[: len(pred)])), 4),
        "rep_spread": m["rep_spread"],
        "instruction_mix": instruction_mix(elf, entry),
    }


def ratios(b: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """<variant>_over_neon: encoder and whole no-adapt inference ticks relative to the default."""
    n = b["neon"]
    return {
        f"{name}_over_neon": {
            "encoder": round(v["encoder_ticks"] / n["encoder_ticks"], 3),
            "no_adapt": round(v["no_adapt_ticks"] / n["no_adapt_ticks"], 3),
        }
        for name, v in b.items()
        if name != "neon"
    }


def target_build(out: Path, res0: Any, core: Any) -> Any:
    """The default build's sources (res0, `codegen build`) compiled for ``core`` on its default
    board (codegen/target/cores.py: its flags, kernels, board folder) into
    OUT/builds/target-<core>; returns the FirmwareBuild."""
    from codegen.emit.flags import model_cflags
    from codegen.pipeline.build import firmware_sources
    from codegen.target.firmware import FirmwareConfig, build_firmware

    q = res0.qmodel
    print(f"bench: building the default model for {core.name}", file=sys.stderr)
    return build_firmware(
        FirmwareConfig.from_board(core.default_board, max_payload=q.source.target.max_payload),
        out / "builds" / f"target-{core.name}",
        extra_sources=firmware_sources(q, list(res0.sources)),
        extra_includes=[res0.out_dir / "src"],
        extra_cflags=model_cflags(q),
    )


def target_record(core: Any, board: str, m: dict[str, Any], pred0: list[int]) -> dict[str, Any]:
    """One target's INFER costs: its own timer's ticks (RESULT's fields, medians) and the same
    in guest instructions (ticks x instructions per tick under -icount shift=0), so cores with
    timers of other clocks compare."""
    ipt = core.instructions_per_tick
    ticks = {
        "encoder_ticks": m["strict.encoder"],
        "adapt_ticks": m["strict.adapt"],
        "no_adapt_ticks": m["no_adapt.total"],
        "elatta_ticks": m["strict.total"],
    }
    return {
        "core": core.name,
        "board": board,
        "qemu_machine": core.qemu_machine,
        "timer": core.timer,
        "timer_hz": core.qemu_timer_hz,
        "instructions_per_tick": round(ipt, 3),
        "kernels": core.kernels.name,
        **ticks,
        "instructions": {k.removesuffix("_ticks"): round(v * ipt) for k, v in ticks.items()},
        "rep_spread": m["rep_spread"],
        # the no-adapt class of every clip equals the default build's (the same integers)
        "same_classes": list(m["pred_noadapt"]) == list(pred0),
    }


def target_costs(
    out: Path,
    res0: Any,
    m0: dict[str, Any],
    x: np.ndarray,
    ids: np.ndarray,
    reps: int,
    budget: float,
    names: tuple[str, ...],
) -> dict[str, dict[str, Any]]:
    """INFER costs of the default model on each core of ``names`` (codegen/target/cores.py), on
    its default board under QEMU: the default build's own figures (``m0``) for its core, a build
    of the same sources for every other core."""
    from codegen.target.boards import get_board
    from codegen.target.cores import get_core

    board0 = res0.manifest["firmware"]["board"]
    core0 = get_board(board0).core
    rows: dict[str, dict[str, Any]] = {}
    for name in names:
        core = get_core(name)
        if core == core0:
            rows[name] = target_record(core, board0, m0, m0["pred_noadapt"])
            continue
        fw = target_build(out, res0, core)
        m = measure(fw.elf, x, ids, reps, budget=budget)
        rows[name] = target_record(core, fw.config.board, m, m0["pred_noadapt"])
    return rows


def targets_md(t: dict[str, dict[str, Any]] | None) -> list[str]:
    if not t:
        return []
    lines = [
        "## Targets: the default model on each core (same run, same clips)",
        "",
        "Each core's own timer as RESULT returns it (QEMU icount ticks of that timer), and the "
        "same in guest instructions: under `-icount shift=0` one instruction takes one virtual "
        "nanosecond, so ticks x (10^9 / timer Hz) counts instructions (docs/targets.md §4). "
        "Medians; encoder and adaptation of mode strict, totals per INFER.",
        "",
        "| core | board (QEMU -M) | kernels | timer Hz | encoder | adaptation | no-adapt total "
        "| ELaTTA total | ELaTTA total, instructions | same classes | rep spread |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in t.values():
        lines.append(
            f"| {r['core']} | {r['board']} ({r['qemu_machine']}) | {r['kernels']} | "
            f"{r['timer_hz']:,} | {r['encoder_ticks']} | {r['adapt_ticks']} | "
            f"{r['no_adapt_ticks']} | {r['elatta_ticks']} | {r['instructions']['elatta']:,} | "
            f"{'yes' if r['same_classes'] else 'NO'} | {r['rep_spread']} |"
        )
    return [*lines, ""]


def run_bench(
    out: Path,
    data_dir: Path | None = None,
    *,
    ks: tuple[int, ...] = SWEEP_K,
    ns: tuple[int, ...] = SWEEP_N,
    n_samples: int = 5,
    reps: int = 3,
    baselines: tuple[str, ...] = BASELINES,
    host_n: int = 20000,
    frontend_clips: int = 2,
    cmsis_cache: Path | None = CMSIS_CACHE,
    budget: float = DEFAULT_BUDGET,
    anchors: Path | None = ANCHORS,
    families: tuple[tuple[str, int, str], ...] | None = None,
    wire_clips: int = 6,
    targets: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """``families``: the encoder families timed beside the default (None: every one of
    `FAMILIES`; a reduced bench may time a few). ``wire_clips``: clips streamed per line
    setting for the wire's figures (`elatta_measure.bench_wire`; 0: skip). ``targets``: the
    cores the default model is timed on (None: every registered core, codegen/target/cores.py;
    (): none)."""
    from elatta_measure.bench_frontend import frontend_bench

    from codegen.data import build as build_data

    out.mkdir(parents=True, exist_ok=True)
    if data_dir is None:
        data_dir = out / "data"
        if not (data_dir / "manifest.json").is_file():
            build_data(data_dir, preset="tiny", tier="numpy", progress=False, jobs=2)
    unknown = sorted(set(baselines) - set(variants()))
    if unknown:
        raise BenchError(f"unknown baseline(s) {unknown}; choose from {sorted(variants())}")
    if 2 not in ks or len(set(ns)) < 2:
        raise BenchError(
            "the sweep needs k = 2 and at least two values of n (cmaes_iter_ticks "
            "is the slope over n at k = 2)"
        )
    default = Point(2, 2, None)
    from codegen.artefact.program import load_program

    res0, syn0 = build_point(out, data_dir, default, default)
    # the reference side reads what the build wrote, as `codegen run` does
    q0 = load_program(res0.out_dir, res0.manifest["program"])
    if (q0.adapt.k, q0.adapt.cfg.n_iter) != (2, 2):
        raise BenchError("configs/default.toml is expected to have k = 2, n = 2")
    lam0 = int(q0.adapt.cfg.lam)
    ids, xf = samples(data_dir, q0.source.meta, n_samples)

    from codegen.base.features import quantize_features

    def point(res: Any, synthetic: bool) -> dict[str, Any]:
        x = quantize_features(xf, res.qmodel.x_fmt)
        assert res.elf is not None
        return point_record(res, measure(res.elf, x, ids, reps, budget=budget), synthetic)

    x0 = quantize_features(xf, q0.x_fmt)
    from codegen.target.boards import get_board

    core0 = get_board(res0.manifest["firmware"]["board"]).core
    assert res0.elf is not None
    m0 = measure(res0.elf, x0, ids, reps, modes=("no_adapt", "strict", "cmvn"), budget=budget)
    base = point_record(res0, m0, syn0)
    pred_float = float_classes(q0, xf)
    fw0 = res0.manifest["firmware"]
    bl = {
        "neon": baseline_record(
            res0.elf,
            fw0,
            m0,
            encoder_symbol(res0),
            (),
            "the default build (integer kernels, NEON)",
            fw0["build_id"],
            pred_float,
        )
    }
    for name in baselines:
        v = variants()[name]
        fw = build_variant(out, res0, v)
        sec = {k: fw.sections.get(f".{k}", (0, 0))[0] for k in ("text", "rodata")}
        entry = f"{q0.prefix}model_encode_f32" if v.float32 else encoder_symbol(res0)
        bl[name] = baseline_record(
            fw.elf,
            sec,
            measure(fw.elf, x0, ids, reps, budget=budget),
            entry,
            v.all_cflags,
            v.what,
            fw.build_id,
            pred_float,
        )
    from codegen.target.cores import CORES

    tgt = target_costs(
        out, res0, m0, x0, ids, reps, budget, tuple(CORES) if targets is None else targets
    )
    sweep = []
    for k in ks:
        for n in ns:
            if (k, n) == (2, 2):
                sweep.append(base)
                continue
            sweep.append(point(*build_point(out, data_dir, Point(k, n, None), default)))
    lam_pt = point(*build_point(out, data_dir, Point(2, 2, 2 * lam0), default))

    family_rows = family_costs(out, data_dir, n_samples, reps, budget, families)

    from elatta_measure.bench_frontend import frontend_clips as audio_clips

    clips = audio_clips(data_dir, max(1, min(n_samples, 3)))
    audio = measure_audio(res0.elf, clips, budget)
    from elatta_measure.bench_memory import memory_doc

    # the caches' model (measure/bench_memory.py): before/after tables, the whole audio second
    mem_doc = memory_doc(out, res0, clips, budget, ram)

    wire: dict[str, Any] | None = None
    if wire_clips > 0:
        from elatta_measure.bench_wire import measure_wire

        wire = measure_wire(res0.out_dir, data_dir, clips=wire_clips, features=10 * wire_clips)

    host: dict[str, Any] | None = None
    if host_n > 0:
        from elatta_measure.host_throughput import host_throughput

        _, xh = samples(data_dir, q0.source.meta, 256)
        host = host_throughput(q0, quantize_features(xh, q0.x_fmt), host_n)

    fe_doc = (
        frontend_bench(q0, data_dir, out / "frontend", frontend_clips, cmsis_cache)
        if frontend_clips > 0
        else None
    )
    if fe_doc is not None:
        from elatta_measure.bench_anchors import fft_anchors

        fe_doc["fft_anchors"] = fft_anchors(
            q0, data_dir, out / "frontend" / "fft_anchors", frontend_clips, anchors, cmsis_cache
        )
    k2 = sorted((s for s in sweep if s["k"] == 2), key=lambda s: s["n"])
    lo, hi = k2[0], k2[-1]
    cmaes_iter = round((hi["adapt_ticks"] - lo["adapt_ticks"]) / (hi["n"] - lo["n"]))
    per_cand = (lam_pt["adapt_ticks"] - base["adapt_ticks"]) / ((lam_pt["lam"] - lam0) * 2)
    doc: dict[str, Any] = {
        "encoder_ticks": base["encoder_ticks"],
        "head_entropy_ticks": base["head_entropy_ticks"],
        "cmaes_iter_ticks": cmaes_iter,
        "adapt_ticks": base["adapt_ticks"],
        "no_adapt_ticks": base["no_adapt_ticks"],
        "elatta_ticks": base["elatta_ticks"],
        "ram_bytes": base["ram_bytes"],
        "elatta_state_bytes": base["elatta_state_bytes"],
        "cmvn_ticks": m0["cmvn.adapt"],
        "cmvn_total_ticks": m0["cmvn.total"],
        "families": family_rows,
        "sweep": sweep,
        "baselines": bl,
        "ratios": ratios(bl),
        "targets": tgt,
        "host_reference": host,
        "cost_model": cost_model_fit(
            [*sweep, lam_pt], base["head_entropy_ticks"], q0.adapt.dim, q0.adapt.n_classes
        ),
        "frontend": fe_doc,
        # median ticks per hop of the NEON front end, default model (None: --frontend-clips 0)
        "frontend_ticks_per_hop": fe_doc["ours_neon"]["ticks_per_hop"] if fe_doc else None,
        "link_instructions_per_byte": audio["link_instructions_per_byte"],
        "audio_second_ticks": audio["ticks_per_second"]["total"],
        "audio": audio,
        # the wire on a board (elatta_measure.bench_wire): wall seconds of streaming per second
        # of audio through the USB-UART model, feature INFERs per second at 115,200 baud, the
        # time a stopped run takes to stop
        "audio_realtime_factor": None if wire is None else wire["audio_realtime_factor"],
        "features_per_s_115200": None if wire is None else wire["features_per_s_115200"],
        "stop_seconds": None if wire is None else wire["stop_seconds"],
        "wire": wire,
        # feature INFER, mode strict: RESULT's total plus its link ticks (docs/protocol.md,
        # "Link cost"), the whole device work per sample
        "features": {
            "result_total": m0["strict.total"],
            "link": m0["strict.link"],
            "link_bytes": m0["strict.link_bytes"],
            "total": m0["strict.total"] + m0["strict.link"],
            "link_instructions_per_byte": round(
                core0.instructions_per_tick * m0["strict.link"] / max(1, m0["strict.link_bytes"]),
                2,
            ),
        },
        # docs/targets.md §1: the k = 16, n = 8, λ = 12 adaptation over the no-adapt inference
        "k16_adapt_ratio": next(
            (
                round(s["adapt_ticks"] / s["no_adapt_ticks"], 3)
                for s in sweep
                if (s["k"], s["n"], s["lam"]) == (16, 8, 12)
            ),
            None,
        ),
        **mem_doc,
    }
    extra = {
        "lam_variant": lam_pt,
        "per_candidate_ticks": round(per_cand, 1),
        "samples": int(len(ids)),
        "reps": reps,
        "data": str(data_dir),
        "static_ram_bytes": int(res0.manifest["firmware"]["static_ram_bytes"]),
        "firmware": {
            s: int(res0.manifest["firmware"][s]) for s in ("text", "rodata", "data", "bss", "stack")
        },
        "build_id": res0.manifest["firmware"]["build_id"],
        "encoder_floor": encoder_floor(q0.encoder[0]),
        "qemu_machine": core0.qemu_machine,
        "timer": core0.timer,
    }
    doc["goals"] = goals(doc, q0.encoder[0])
    (out / "bench.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "bench.md").write_text(render_md(doc, extra))
    return doc


def c_of_k(sweep: list[dict[str, Any]], k: int) -> tuple[float, int] | None:
    """c(k) from the n slope at k (growth_table's definition) and that build's λ."""
    pts = sorted((s for s in sweep if s["k"] == k), key=lambda s: s["n"])
    if len(pts) < 2 or pts[-1]["n"] == pts[0]["n"]:
        return None
    lo, hi = pts[0], pts[-1]
    return (hi["adapt_ticks"] - lo["adapt_ticks"]) / ((hi["n"] - lo["n"]) * lo["lam"]), lo["lam"]


def goals(d: dict[str, Any], lstm: Any) -> list[dict[str, Any]]:
    """The performance targets of docs/targets.md §1 judged on this run's figures."""
    out: list[dict[str, Any]] = []

    def goal(name: str, measured: float, target: float, how: str, sense: str = "<=") -> None:
        out.append(
            {
                "goal": name,
                "measured": round(float(measured), 3),
                "sense": sense,
                "target": float(target),
                "met": bool(measured <= target if sense == "<=" else measured >= target),
                "how": how,
            }
        )

    # the multiply-accumulates alone (four per VMLAL.S16), and the whole contract's bound
    bound = encoder_floor(lstm)
    floor = bound["mac"] / 10
    contract = sum(bound.values()) / 10
    goal(
        "encoder ticks",
        d["encoder_ticks"],
        8000,
        f"default model; MAC floor {floor:.0f} ticks (measured / it "
        f"{d['encoder_ticks'] / floor:.2f}); the numeric contract's floor {contract:.0f} ticks "
        f"(docs/numeric.md §4, lower bound; measured / it {d['encoder_ticks'] / contract:.2f})",
    )
    fcls = d["head_entropy_ticks"]
    for k, target in ((8, 100), (16, 300)):
        ck = c_of_k(d["sweep"], k)
        if ck is not None:
            goal(
                f"c({k}) − F_Cls ticks",
                ck[0] - fcls,
                target,
                f"λ = {ck[1]}, c({k}) = {ck[0]:.0f}, F_Cls = {fcls}",
            )
    big = [s for s in d["sweep"] if (s["k"], s["n"], s["lam"]) == (16, 8, 12)]
    if big:
        s = big[0]
        goal(
            "k 16 / n 8 / λ 12 adaptation ÷ no-adapt inference",
            s["adapt_ticks"] / s["no_adapt_ticks"],
            1.0,
            f"adapt {s['adapt_ticks']} / no-adapt {s['no_adapt_ticks']} ticks",
        )
    h = d.get("host_reference")
    if h is not None:
        goal(
            f"host reference, strict, samples/s on {h['workers']} processes",
            h["strict"]["samples_per_s"],
            50000,
            f"median of {h.get('repeats', 1)} passes; {h['strict']['samples_per_s_1']:.0f} "
            "on 1 process",
            sense=">=",
        )
    a = d.get("audio")
    if a is not None:
        goal(
            "whole device ticks per second of audio (audio mode, strict)",
            a["ticks_per_second"]["total"],
            120000,
            f"front end {a['ticks_per_second']['frontend']}, link "
            f"{a['ticks_per_second']['link']} ({a['link_instructions_per_byte']} instructions "
            f"per byte), unpacking {a['ticks_per_second']['unpack']}; RESULT's total alone was "
            f"≈{a['before_ticks_per_second']:,}",
        )
    fe = d.get("frontend")
    if fe is not None and fe.get("ours_over_cmsis_neon") is not None:
        goal(
            "front end ÷ CMSIS-DSP arm_mfcc_q15 (Neon) per hop",
            fe["ours_over_cmsis_neon"],
            1.0,
            "ticks per 20 ms hop, same run",
        )
    return out


def goals_md(g: list[dict[str, Any]] | None) -> list[str]:
    if not g:
        return []
    return [
        "## Performance goals (this run)",
        "",
        "Each target judged on a figure of this run (docs/targets.md §1); ticks are QEMU icount "
        "ticks, ratios are taken within the run.",
        "",
        "| goal | measured | target | met | from |",
        "|---|---:|---:|---|---|",
        *(
            f"| {r['goal']} | {r['measured']:g} | {'≤' if r['sense'] == '<=' else '≥'} "
            f"{r['target']:g} | "
            f"{'yes' if r['met'] else 'NO'} | {r['how']} |"
            for r in g
        ),
        "",
    ]


# The forms fitted to the sweep: name -> (formula, the two terms' coefficients of λ, n, D, C, k).
COST_FORMS = {
    "paper": (
        "adapt = c0 + λn·F_Cls + a·λnDk + b·λnk²",
        lambda lam, n, D, C, k: (lam * n * D * k, lam * n * k * k),
    ),
    # the firmware folds the linear head onto the basis (a candidate's latent term is G p, C·k
    # multiply-adds, not D·k), skips the first Cholesky (C = I) and the last tell (nothing reads
    # it), so the O(k²) update work runs in n − 1 iterations
    "as_built": (
        "adapt = c0 + λn·F_Cls + a·λnCk + b·λ(n−1)k²",
        lambda lam, n, D, C, k: (lam * n * C * k, lam * (n - 1) * k * k),
    ),
}


# Encoder families beside the default (1 layer, last step): (layers, pooling). Random weights
# at the default model's shape (F = 10, H = 32, 12 classes): costs do not depend on the values.
FAMILIES: tuple[tuple[str, int, str], ...] = (
    ("lstm", 1, "mean"),
    ("lstm", 1, "max"),
    ("lstm", 2, "last"),
    ("lstm", 2, "mean"),
    ("gru", 1, "last"),
    ("gru", 2, "last"),
)


def family_costs(
    out: Path,
    data_dir: Path,
    n_samples: int,
    reps: int,
    budget: float = DEFAULT_BUDGET,
    which: tuple[tuple[str, int, str], ...] | None = None,
) -> list[dict[str, Any]]:
    """Encoder and no-adapt ticks of the other supported encoder families
    (codegen.frontend.importer),
    each built through the Python API from a random nn.Module and timed like the default."""
    import torch
    from torch import nn

    from codegen.base.features import quantize_features
    from codegen.pipeline.api import compile as compile_module

    class Family(nn.Module):
        def __init__(self, cell: str, layers: int, pool: str) -> None:
            super().__init__()
            rnn = nn.GRU if cell == "gru" else nn.LSTM
            self.rnn = rnn(10, 32, num_layers=layers, batch_first=True)
            self.head = nn.Linear(32, 12)
            self.pool = pool

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seq, state = self.rnn(x)
            h = state[0] if isinstance(state, tuple) else state
            z = {"last": h[-1], "mean": seq.mean(1), "max": seq.amax(1)}[self.pool]
            return self.head(z)

    rows = []
    for cell, layers, pool in FAMILIES if which is None else which:
        torch.manual_seed(layers * 10 + len(pool))
        name = f"family_{cell}_{layers}layer_{pool}"
        print(f"bench: building {name}", file=sys.stderr)
        res = compile_module(
            Family(cell, layers, pool).eval(),
            torch.zeros(2, 49, 10),
            2,
            CONFIG,
            out / name,
            data=data_dir,
            # the built-in front end the families are timed with (40 ms / 20 ms, 10 MFCC, 49 frames)
            features={"n_mfcc": 10, "frames": 49},
        )
        q = res.qmodel
        ids, xf = samples(data_dir, q.source.meta, n_samples)
        m = measure(res.elf, quantize_features(xf, q.x_fmt), ids, reps, ("no_adapt",), budget)
        rows.append(
            {
                "cell": cell,
                "layers": layers,
                "pool": pool,
                "encoder_ticks": m["no_adapt.encoder"],
                "no_adapt_ticks": m["no_adapt.total"],
            }
        )
    return rows


def cost_model_fit(
    points: list[dict[str, Any]], fcls: int, dim: int, n_classes: int
) -> dict[str, Any] | None:
    """Constants of the paper's cost model fitted to the sweep's adapt ticks, F_Cls measured
    (not fitted): non-negative least squares on relative errors (so the small points weigh as
    much as the large ones), for the paper's form and for the form the firmware runs
    (`COST_FORMS`). None when the points have one k only (the terms are then proportional)."""
    from scipy.optimize import nnls

    if len({p["k"] for p in points}) < 2:
        return None
    y = np.array([p["adapt_ticks"] for p in points], dtype=np.float64)
    base = np.array([p["lam"] * p["n"] * fcls for p in points], dtype=np.float64)
    fits = {}
    for name, (form, terms) in COST_FORMS.items():
        A = np.array([(1.0, *terms(p["lam"], p["n"], dim, n_classes, p["k"])) for p in points])
        coef = nnls(A / y[:, None], (y - base) / y)[0]
        fit = A @ coef + base
        fits[name] = {
            "form": form,
            "c0": round(float(coef[0]), 1),
            "a": round(float(coef[1]), 4),
            "b": round(float(coef[2]), 4),
            "max_rel_err": round(float(np.max(np.abs(y / fit - 1.0))), 4),
            "fitted_ticks": [round(float(f)) for f in fit],
        }
    return {
        "F_Cls": fcls,
        "D": dim,
        "C": n_classes,
        "points": [{k: p[k] for k in ("k", "n", "lam", "adapt_ticks")} for p in points],
        "fits": fits,
    }


def fit_md(f: dict[str, Any] | None) -> list[str]:
    if f is None:
        return []
    names = list(f["fits"])
    rows = []
    for i, p in enumerate(f["points"]):
        fitted = [f["fits"][n]["fitted_ticks"][i] for n in names]
        cells = [f"{t} | {p['adapt_ticks'] / t:.3f}" for t in fitted]
        rows.append(
            f"| {p['k']} | {p['n']} | {p['lam']} | {p['adapt_ticks']} | " + " | ".join(cells) + " |"
        )
    forms = [
        f"- `{n}`: {v['form']}; c0 = {v['c0']}, a = {v['a']}, b = {v['b']}; largest "
        f"|measured / fit − 1| = {100 * v['max_rel_err']:.1f} %"
        for n, v in f["fits"].items()
    ]
    return [
        "## The cost model's constants, fitted",
        "",
        f"Non-negative least squares on relative error over every sweep point, F_Cls = "
        f"{f['F_Cls']} measured, D = {f['D']}, C = {f['C']}; c0 is the per-inference set-up, "
        "a the latent term per candidate and dimension (the paper's z_t + V p, D·k; as built "
        "the head folded onto the basis, G p, C·k), b the sampling and update per k². "
        "`as_built` counts the update terms over n − 1 iterations: the firmware skips the "
        "first Cholesky (C = I) and the last tell (nothing reads it).",
        "",
        *forms,
        "",
        "| k | n | λ | adapt ticks | "
        + " | ".join(f"{n} fit | measured / fit" for n in names)
        + " |",
        "|---:|---:|---:|---:|" + "---:|---:|" * len(names),
        *rows,
        "",
    ]


def family_md(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    out = [
        "## Encoder families (F = 10, H = 32, random weights)",
        "",
        "| cell | layers | pooling | encoder ticks | no-adapt ticks |",
        "|---|---:|---|---:|---:|",
    ]
    out += [
        f"| {r['cell']} | {r['layers']} | {r['pool']} | {r['encoder_ticks']} | "
        f"{r['no_adapt_ticks']} |"
        for r in rows
    ]
    return [*out, ""]


def host_md(h: dict[str, Any] | None) -> list[str]:
    if h is None:
        return []
    rows = [
        f"| {m} | {h[m]['samples_per_s_1']:.0f} | {h[m]['samples_per_s']:.0f} | "
        + " / ".join(f"{v:.0f}" for v in h[m].get("runs", []))
        + " |"
        for m in ("no_adapt", "strict")
    ]
    return [
        "## Host integer reference (Python, numpy)",
        "",
        f"`codegen.intref.model.infer_int` over {h['n']} int16 feature matrices (features "
        f"precomputed), 1 process and {h['workers']} processes on {h['cores']} cores; the "
        "multi-process outputs equal the 1-process ones field by field. Target ≥ 20,000 "
        "samples/s for strict. Wall-clock, so it depends on what else the machine runs: "
        f"medians of {h.get('repeats', 1)} timed passes, every pass listed.",
        "",
        f"| mode | samples/s, 1 process | samples/s, {h['workers']} processes | passes, "
        f"{h['workers']} processes |",
        "|---|---:|---:|---|",
        *rows,
        "",
    ]


def encoder_floor(L: Any) -> dict[str, int]:
    """The LSTM encoder's instruction floor under the numeric contract (codegen.emit.lstm_neon)."""
    from codegen.emit.lstm_neon import instruction_floor

    return instruction_floor(L.num_frames, L.input_size, L.hidden_size, L.shifts.h_opshift)


def encoder_floor_line(enc: int, floor: dict[str, int]) -> str:
    n = sum(floor.values())
    terms = ", ".join(f"{k} {v}" for k, v in floor.items())
    below = " Goal 1's 8,000 ticks lie below it." if n > 80_000 else ""
    return (
        f"Encoder floor: {n} instructions = {n / 10:.0f} ticks under the numeric contract on "
        f"ARMv7-A NEON (docs/numeric.md §4, lower bound: {terms}); the encoder measures "
        f"{enc / (n / 10):.2f} × it.{below}"
    )


def render_md(d: dict[str, Any], x: dict[str, Any]) -> str:
    from elatta_measure.bench_anchors import anchors_md
    from elatta_measure.bench_frontend import frontend_md
    from elatta_measure.bench_memory import memory_md

    enc, fcls = d["encoder_ticks"], d["head_entropy_ticks"]
    na = d["no_adapt_ticks"]
    lines = [
        "# ELaTTA firmware benchmark (QEMU icount ticks)",
        "",
        f"`qemu-system-arm -M {x['qemu_machine']} -icount shift=0`; {x['timer']} ticks as "
        'returned in RESULT ("QEMU icount ticks", not cycles; docs/targets.md §4). Medians over '
        f"{x['samples']} samples x {x['reps']} repetitions per mode. The sweep table gives the "
        "largest spread of any tick field between repetitions of the same clip (rep spread: "
        "the run-to-run determinism) and between clips (clip spread: data-dependent paths). "
        "Default model and configs/default.toml; "
        f"calibration and samples from `{x['data']}`. Build id {x['build_id']}.",
        "",
        *goals_md(d.get("goals")),
        "## Default build (k = 2, n = 2, λ = 6)",
        "",
        "| figure | ticks | how |",
        "|---|---:|---|",
        f"| encoder (T=49, F=10, H=32) | {enc} | RESULT encoder ticks (target ≤ 20,000) |",
        f"| head + entropy | {fcls} | adapt ticks of a no_adapt INFER (one head + entropy, "
        "plus z_t requant, argmax) |",
        f"| marginal candidate | {x['per_candidate_ticks']} | (adapt(λ={x['lam_variant']['lam']})"
        " − adapt(λ=6)) / (Δλ·n), k=2, n=2 |",
        f"| CMA-ES iteration | {d['cmaes_iter_ticks']} | slope of strict adapt ticks over n "
        "(n = 2 → 8, k = 2): λ evaluations + Cholesky, sampling, ranking, update |",
        f"| ELaTTA adaptation | {d['adapt_ticks']} | RESULT adapt ticks, strict |",
        f"| no-adapt inference | {na} | RESULT total ticks, no_adapt |",
        f"| ELaTTA inference | {d['elatta_ticks']} | RESULT total ticks, strict |",
        "",
        encoder_floor_line(enc, x["encoder_floor"]),
        "",
        f"ELaTTA overhead: elatta − no_adapt = {d['elatta_ticks'] - na} ticks = "
        f"{100 * (d['elatta_ticks'] - na) / na:.1f} % of the no-adapt inference (target ≤ 10 %).",
        "",
        f"cmvn (continual input normalisation, docs/adaptation.md): adapt ticks "
        f"{d['cmvn_ticks']} (normalisation + head + entropy), whole INFER "
        f"{d['cmvn_total_ticks']}; overhead cmvn − no_adapt = {d['cmvn_total_ticks'] - na} ticks "
        f"= {100 * (d['cmvn_total_ticks'] - na) / na:.1f} % of the no-adapt inference "
        "(target ≤ 25 %).",
        "",
        *family_md(d.get("families") or []),
        *host_md(d.get("host_reference")),
        *frontend_md(d.get("frontend"), anchors_md((d.get("frontend") or {}).get("fft_anchors"))),
        *audio_md(d.get("audio")),
        *features_md(d.get("features")),
        *wire_md(d.get("wire")),
        *memory_md(d),
        "## Memory",
        "",
        f"- ram_bytes = {d['ram_bytes']}: .data {x['firmware']['data']} + .bss "
        f"{x['firmware']['bss']} + other modes' stacks + main stack high-water (INFO, stack "
        f"painting). Manifest static_ram_bytes (whole reserved stacks) = {x['static_ram_bytes']}; "
        "budget 65,536.",
        f"- elatta_state_bytes = {d['elatta_state_bytes']}: sizeof(elt_adapt_state_t) (arm-none-"
        "eabi-gcc probe with the build's -DELT_*_MAX flags, `nm -S`) + G = W V_k as C·k int32 "
        "(the device's only form of V_k; target ≤ 1,024 for k = 2).",
        f"- .text {x['firmware']['text']}, .rodata {x['firmware']['rodata']} bytes.",
        "",
        "## Sweep and the paper's cost model",
        "",
        "Prediction = F_Enc + λ·n·F_Cls with F_Enc = encoder ticks and F_Cls = head + entropy "
        f"ticks of the default build ({enc} and {fcls}); measured = strict total. The residual "
        "is what the model's O(λnDk) + O(λnk²) terms (latent V p — as built the folded head G p, "
        "O(λnCk) —, sampling, Cholesky, update), "
        "the no-adapt evaluation and the request's I/O add. k ≠ 2 uses a synthetic random "
        "orthonormal basis (costs only).",
        "",
        "| k | n | λ | basis | encoder | adapt | no_adapt total | ELaTTA total | F_Enc + λnF_Cls "
        "| measured / model | overhead % | state B | RAM B | rep spread | clip spread |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in [*d["sweep"], x["lam_variant"]]:
        pred = enc + s["lam"] * s["n"] * fcls
        ov = 100 * (s["elatta_ticks"] - s["no_adapt_ticks"]) / s["no_adapt_ticks"]
        lines.append(
            f"| {s['k']} | {s['n']} | {s['lam']} | "
            f"{'synthetic' if s['synthetic_basis'] else 'shipped'} | {s['encoder_ticks']} | "
            f"{s['adapt_ticks']} | {s['no_adapt_ticks']} | {s['elatta_ticks']} | {pred} | "
            f"{s['elatta_ticks'] / pred:.2f} | {ov:.1f} | {s['elatta_state_bytes']} | "
            f"{s['ram_bytes']} | {s['rep_spread']} | {s['sample_spread']} |"
        )
    lines += ["", *growth_table(d["sweep"], fcls), "", *fit_md(d.get("cost_model"))]
    if len(d["baselines"]) > 1:
        lines += [*baseline_tables(d["baselines"], d["ratios"]), ""]
    lines += targets_md(d.get("targets"))
    return "\n".join(lines)


def baseline_tables(b: dict[str, dict[str, Any]], r: dict[str, dict[str, float]]) -> list[str]:
    rows = [
        "## Baselines (same run, same QEMU, same clips)",
        "",
        "Built from this repo's own code and measured in the same run, on the same QEMU, with the"
        " same clips and repetitions (medians). `scalar`: the integer firmware with the reference"
        " kernel variant (firmware/kernels/ref, the kernels' plain scalar C, and `-DELT_SCALAR` "
        "for the rest; same -O2). `float32`: the trained float weights as `static const float` "
        "(codegen/emit/f32.py) and a plain float32 C LSTM (firmware/elt_lstm_f32.c: torch "
        "equations, σ via expf, tanhf, newlib libm, hard-float VFP/NEON flags); built with "
        "`-DELT_ENCODER_F32`, the app dequantizes the int16 features, runs it, rounds z to Q0.15 "
        "and continues with the integer adaptation, so its encoder ticks time the float encoder "
        "and its no-adapt total adds the integer head + entropy. `float32_fastmath`: the same "
        "with `-O3 -ffast-math` on every source (GCC 12's -O2 vectorizer leaves loops of run-time"
        " length scalar, so -O2 -ffast-math alone changes next to nothing); lets GCC use NEON for"
        " the float dot products. docs/targets.md §1 anchors for a similar LSTM on this core: "
        'naive float32 C -O3 168,009 ticks, -ffast-math 82,024. "= float model": fraction of the '
        "clips whose device no-adapt class equals the Python float64 model's.",
        "",
        "| build | flags | encoder ticks | × neon | no-adapt ticks | × neon | ELaTTA ticks "
        "| .text B | .rodata B | = float model | rep spread |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, v in b.items():
        ratio = r.get(f"{name}_over_neon", {"encoder": 1.0, "no_adapt": 1.0})
        flags = " ".join(f"`{f}`" for f in v["cflags"]) or "(default)"
        rows.append(
            f"| {name} | {flags} | {v['encoder_ticks']} | {ratio['encoder']:.2f} | "
            f"{v['no_adapt_ticks']} | {ratio['no_adapt']:.2f} | {v['elatta_ticks']} | "
            f"{v['text_bytes']} | {v['rodata_bytes']} | {v['float_class_agreement']:.2f} | "
            f"{v['rep_spread']} |"
        )
    rows += [
        "",
        "## Instruction mix of the encoder (static counts)",
        "",
        "`arm-none-eabi-objdump -d` of each ELF: every instruction of the encoder entry point's "
        "call tree (direct branch targets, libm included) counted once, not weighted by how "
        "often it runs. NEON = Advanced SIMD (q registers, vld1-4/vst1-4, integer or 2-lane "
        ".f32 element types on d registers); VFP = scalar floating point (s registers, .f64) "
        "and plain VFP register-file loads, stores and moves (vldr, vstr, vpush, vpop, vmov, "
        "vmrs); ARM = everything else.",
        "",
        "| build | ARM | NEON | VFP | total | functions |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, v in b.items():
        mix = v["instruction_mix"]
        rows.append(
            f"| {name} | {mix['arm']} | {mix['neon']} | {mix['vfp']} | {mix['total']} | "
            f"{', '.join(mix['functions'])} |"
        )
    sc = b.get("scalar")
    if sc is not None and sc["instruction_mix"]["neon"]:
        rows += [
            "",
            f"Note: the scalar build's encoder still has {sc['instruction_mix']['neon']} "
            "NEON instructions (GCC's -O2 auto-vectorization of the plain loops).",
        ]
    return rows


def growth_table(sweep: list[dict[str, Any]], fcls: int) -> list[str]:
    """Per k: the adapt ticks one candidate adds per iteration, from the n slope."""
    rows = [
        "## Growth with k (per candidate and iteration)",
        "",
        "c(k) = (adapt(n_max) − adapt(n_min)) / ((n_max − n_min)·λ): everything one "
        "candidate costs in one iteration (its logits by the head folded onto the basis, "
        "W z_t + b + G p: O(Ck), and the entropy; "
        "its share of sampling O(k²) and of Cholesky/update O(k³)/λ). The paper's model "
        f"charges F_Cls = {fcls} for it; the excess is the CMA-ES work (sampling, O(k²) per "
        "candidate, and the per-iteration Cholesky/update, O(k³), spread over λ).",
        "",
        "| k | λ | c(k) ticks | c(k) − F_Cls | c(k) / F_Cls |",
        "|---:|---:|---:|---:|---:|",
    ]
    for k in sorted({s["k"] for s in sweep}):
        pts = sorted((s for s in sweep if s["k"] == k), key=lambda s: s["n"])
        if len(pts) < 2 or pts[-1]["n"] == pts[0]["n"]:
            continue
        lo, hi = pts[0], pts[-1]
        c = (hi["adapt_ticks"] - lo["adapt_ticks"]) / ((hi["n"] - lo["n"]) * lo["lam"])
        rows.append(f"| {k} | {lo['lam']} | {c:.0f} | {c - fcls:.0f} | {c / fcls:.2f} |")
    return rows


def parse_ints(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers: {text}") from exc
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers: {text}")
    return vals


def parse_names(text: str) -> tuple[str, ...]:
    names = tuple(v.strip() for v in text.split(",") if v.strip() and v.strip() != "none")
    bad = [n for n in names if n not in BASELINES]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown baseline(s) {bad}; choose from {BASELINES}")
    return names


def parse_cores(text: str) -> tuple[str, ...]:
    from codegen.target.cores import CORES

    names = tuple(v.strip() for v in text.split(",") if v.strip() and v.strip() != "none")
    bad = [n for n in names if n not in CORES]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown core(s) {bad}; choose from {tuple(CORES)}")
    return names


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, type=Path, help="output directory (bench.json/md)")
    p.add_argument(
        "--data",
        type=Path,
        help="`codegen data` directory for calibration and "
        "samples (default: build the tiny numpy-tier set in OUT/data)",
    )
    p.add_argument("--sweep-k", type=parse_ints, default=SWEEP_K, help="k values (2,8,16)")
    p.add_argument("--sweep-n", type=parse_ints, default=SWEEP_N, help="n values (2,8)")
    p.add_argument("--samples", type=int, default=5, help="clips streamed per point (5)")
    p.add_argument("--reps", type=int, default=3, help="repetitions per clip and mode (3)")
    p.add_argument(
        "--host-n",
        type=int,
        default=20000,
        help="samples for the host integer reference throughput (0: skip)",
    )
    p.add_argument(
        "--frontend-clips",
        type=int,
        default=2,
        help="clips for the MFCC front-end ticks and the CMSIS-DSP arm_mfcc_q15 anchor (0: skip)",
    )
    p.add_argument(
        "--no-cmsis",
        action="store_true",
        help="skip the CMSIS-DSP anchor (its setup fetches cmsisdsp==1.10.3 from PyPI into "
        "out/cache/cmsisdsp)",
    )
    p.add_argument(
        "--anchors",
        type=Path,
        default=ANCHORS,
        metavar="DIR",
        help="folder with the Ne10 FFT sources (DIR/ne10) built as the per-transform anchor "
        f"(default {ANCHORS}; absent: the anchor is reported unavailable)",
    )
    p.add_argument(
        "--baselines",
        type=parse_names,
        default=BASELINES,
        help="baseline builds measured against the default (neon) one: "
        f"{','.join(BASELINES)} (default all; 'none' for none)",
    )
    p.add_argument(
        "--targets",
        type=parse_cores,
        default=None,
        help="cores the default model is timed on (codegen/target/cores.py; default: every "
        "registered core; 'none' for none)",
    )
    p.add_argument(
        "--wire-clips",
        type=int,
        default=6,
        help="clips streamed per line setting through the USB-UART model for the wire's figures "
        "(audio_realtime_factor, features_per_s_115200; 0: skip)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        metavar="S",
        help="seconds QEMU may take to boot and answer HELLO, and each request to be answered, "
        f"re-sends included ({DEFAULT_BUDGET:g})",
    )


def run(args: argparse.Namespace) -> int:
    doc = run_bench(
        args.out,
        args.data,
        ks=args.sweep_k,
        ns=args.sweep_n,
        n_samples=args.samples,
        reps=args.reps,
        baselines=args.baselines,
        host_n=args.host_n,
        frontend_clips=args.frontend_clips,
        cmsis_cache=None if args.no_cmsis else CMSIS_CACHE,
        budget=args.budget,
        anchors=args.anchors,
        wire_clips=args.wire_clips,
        targets=args.targets,
    )
    for key in SCALAR_KEYS:
        print(f"{key:<20} {doc[key]}")
    for name, r in doc["ratios"].items():
        print(f"{name:<28} encoder {r['encoder']}x, no-adapt {r['no_adapt']}x")
    for name, t in doc["targets"].items():
        print(
            f"target {name:<13} encoder {t['encoder_ticks']}, adaptation {t['adapt_ticks']}, "
            f"ELaTTA total {t['elatta_ticks']} ticks at {t['timer_hz'] / 1e6:g} MHz "
            f"({t['instructions']['elatta']} instructions)"
        )
    if doc["host_reference"] is not None:
        h = doc["host_reference"]
        for mode in ("no_adapt", "strict"):
            print(
                f"host reference {mode:<13} {h[mode]['samples_per_s']:.0f} samples/s on "
                f"{h['workers']} processes, median of {h.get('repeats', 1)} passes "
                f"({h[mode]['samples_per_s_1']:.0f} on 1)"
            )
    a = doc["audio"]
    print(
        f"audio mode: {doc['audio_second_ticks']} ticks per second of audio (whole device; "
        f"link {a['ticks_per_second']['link']}, {doc['link_instructions_per_byte']} instructions "
        f"per received byte)"
    )
    w = doc["wire"]
    if w is not None:
        rtf = ", ".join(f"{k} {v}" for k, v in w["audio_realtime_factor"].items())
        print(
            f"wire (USB-UART model): audio real-time factor {rtf}; features at 115200 baud "
            f"{w['features_per_s_115200']}/s; a stopped run stops in {w['stop_seconds']} s"
        )
    fe = doc["frontend"]
    if fe is not None:
        print(
            f"front end {fe['ours_neon']['ticks_per_hop']} ticks per {fe['hop_ms']:g} ms hop "
            f"({fe['ours_neon']['ticks_per_second_audio']} per s of audio)"
        )
        for name, r in fe["cmsis"].items():
            print(f"  CMSIS-DSP {name}: {r if isinstance(r, str) else r['ticks_per_hop']}")
        fa = fe["fft_anchors"]
        for name, r in fa.items():
            if isinstance(r, dict) and "ticks_per_transform" in r:
                print(f"  {fa['n_fft']}-point real FFT, {name}: {r['ticks_per_transform']} ticks")
        for why in fa.get("unavailable", {}).values():
            print(f"  anchor unavailable: {why}")
        lb = fe["link_budget"]
        print(
            f"link at {lb['baud']} baud: features {lb['features_bytes_per_s_audio']:.0f} B/s, "
            f"PCM {lb['pcm_bytes_per_s_audio']} B/s per second of audio "
            f"(line {lb['line_bytes_per_s']:.0f} B/s; PCM needs >= {lb['pcm_min_baud']} baud)"
        )
    print(f"wrote {args.out / 'bench.json'} and bench.md ({len(doc['sweep'])} sweep points)")
    return 0
