"""`codegen bench`: QEMU icount-tick costs of the default build and of a k x n sweep (issue 6,
DESIGN §5, §7). Measurement only: the firmware is the ordinary `codegen build` ELF.

Every figure is a median of the global-timer ticks the device already returns in RESULT
(docs/protocol.md, "Model runtime"): ``encoder`` (FW_APP_ENCODE), ``adapt`` (elt_adapt_run) and
``total`` (the whole INFER: checks and copy, encoder, adaptation, packing). QEMU runs with
``-icount shift=0``, so they are "QEMU icount ticks" (not cycles), repeatable to +-1 tick.

Measured directly (default model, configs/default.toml: k = 2, n = 2, lambda = 6):

- ``encoder_ticks``: encoder ticks (mode strict; the encoder does not depend on the mode).
- ``adapt_ticks``: adapt ticks in mode strict (the whole ELaTTA adaptation).
- ``no_adapt_ticks``: total ticks of a mode-0 (no_adapt) INFER.
- ``elatta_ticks``: total ticks of a mode-1 (strict) INFER.

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
sizeof(elt_adapt_state_t) (continual p_prev, CMA-ES state and work, candidates) + V_k
(D x k int16), sizeof taken by compiling a probe with this build's flags (arm-none-eabi-gcc,
``nm -S``), because the manifest does not record it.
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

from codegen.errors import CodegenError

HELP = "QEMU icount-tick benchmark of the default build and a k x n sweep (bench.json, bench.md)"
JSON_KEYS = ("encoder_ticks", "head_entropy_ticks", "cmaes_iter_ticks", "adapt_ticks",
             "no_adapt_ticks", "elatta_ticks", "ram_bytes", "elatta_state_bytes", "sweep")
SWEEP_K = (2, 8, 16)
SWEEP_N = (2, 8)
ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "default" / "model.pt"
BASIS = ROOT / "models" / "default" / "basis.npz"
CONFIG = ROOT / "configs" / "default.toml"


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
    from codegen.basis import Basis, load_basis, save_basis
    from codegen.model import file_sha256

    b0 = load_basis(base)
    rng = np.random.default_rng(1000 + seed + k)
    q, r = np.linalg.qr(rng.standard_normal((b0.dim, k)))
    V = q * np.sign(np.diag(r))
    save_basis(path, Basis(V, np.ones(k), np.asarray(b0.mean), 0, k, seed, file_sha256(model),
                           0.0))


def samples(data_dir: Path, meta: Any, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``count`` clips of the first additive condition: ids and float features."""
    from codegen.data import conditions, load_condition
    from codegen.model import features_for

    conds = [c for c in conditions(str(data_dir), "additive") if c.snr_db is not None]
    if not conds:
        raise BenchError(f"{data_dir} has no additive noise conditions")
    split = load_condition(str(data_dir), conds[0])
    n = min(count, len(split))
    return split.ids[:n].astype(np.int64), features_for(split.pcm[:n], meta)


def measure(elf: Path, x: np.ndarray, ids: np.ndarray, reps: int) -> dict[str, Any]:
    """Boot ``elf`` under QEMU -icount shift=0, send every sample ``reps`` times in modes
    no_adapt and strict; medians of each tick field, and the stack high-water mark."""
    from host.device import Device
    from host.infer import decode_result, encode_infer, mode_index
    from host.protocol import Msg
    from host.qemu import Qemu
    from host.transport import LINK_ERRORS

    ticks: dict[str, list[int]] = {}
    per_sample: dict[tuple[str, int], list[int]] = {}
    q = Qemu(elf, icount=True, link_timeout=5.0, retries=3)
    link = q.start()
    try:
        dev = Device(link)
        dev.hello(sync_timeout=10.0)
        for mode in ("no_adapt", "strict"):
            m = mode_index(mode)
            for _ in range(reps):
                for j, (sid, xi) in enumerate(zip(ids, x, strict=True)):
                    reply = link.request(Msg.INFER, encode_infer(int(sid), m, xi),
                                         expect=Msg.RESULT, retry_errors=LINK_ERRORS)
                    r = decode_result(reply.payload)
                    for f in ("encoder", "adapt", "total"):
                        v = int(getattr(r, f"ticks_{f}"))
                        ticks.setdefault(f"{mode}.{f}", []).append(v)
                        per_sample.setdefault((f"{mode}.{f}", j), []).append(v)
        info = dev.hello()
    finally:
        q.stop()
    med = {key: int(statistics.median_low(v)) for key, v in ticks.items()}
    # same clip, same mode, repeated: QEMU icount determinism (+-1 tick of timer phase)
    med["rep_spread"] = max(max(v) - min(v) for v in per_sample.values())
    # different clips: data-dependent paths (entropy, Cholesky pivots, saturation)
    med["sample_spread"] = max(max(v) - min(v) for v in ticks.values())
    med["stack_used"] = int(info.stack_used)
    med["stack_size"] = int(info.stack_size)
    return med


def state_bytes(build_dir: Path, q: Any) -> int:
    """sizeof(elt_adapt_state_t) + D k int16 (V_k), by compiling a probe with the build's -D
    flags and reading the probe symbol's size (the manifest does not record it)."""
    from codegen.hostlib import model_cflags
    from codegen.resources import firmware_dir
    from codegen.toolchain import find_tool

    probe = build_dir / "bench_sizeof.c"
    probe.write_text('#include "elt_adapt.h"\n'
                     "char bench_state_size[sizeof(elt_adapt_state_t)];\n")
    obj = probe.with_suffix(".o")
    gcc = find_tool("arm-none-eabi-gcc")
    subprocess.run([gcc, "-mcpu=cortex-a9", "-mfloat-abi=hard", "-mfpu=neon", "-c",
                    *model_cflags(q), f"-I{firmware_dir()}", f"-I{build_dir / 'src'}",
                    str(probe), "-o", str(obj)], check=True)
    nm = find_tool("arm-none-eabi-nm")
    out = subprocess.run([nm, "-S", str(obj)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[-1] == "bench_state_size":
            size = int(parts[1], 16) if len(parts) == 4 else int(parts[0], 16)
            return size + 2 * q.adapt.dim * q.adapt.k
    raise BenchError(f"bench_state_size not found in `nm -S {obj}`")


def ram(manifest: dict[str, Any], m: dict[str, Any]) -> int:
    fw = manifest["firmware"]
    other_stacks = int(fw["stack"]) - int(m["stack_size"])
    return int(fw["data"]) + int(fw["bss"]) + max(0, other_stacks) + int(m["stack_used"])


def build_point(out: Path, data_dir: Path, p: Point, default: Point) -> tuple[Any, bool]:
    from codegen.build import build

    bdir = out / "builds" / p.name
    bdir.mkdir(parents=True, exist_ok=True)
    basis = BASIS
    synthetic = False
    from codegen.basis import load_basis

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
        "k": int(q.adapt.k), "n": int(q.adapt.cfg.n_iter), "lam": int(q.adapt.cfg.lam),
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


def run_bench(out: Path, data_dir: Path | None = None, *, ks: tuple[int, ...] = SWEEP_K,
              ns: tuple[int, ...] = SWEEP_N, n_samples: int = 5, reps: int = 3) -> dict[str, Any]:
    from codegen.data import build as build_data

    out.mkdir(parents=True, exist_ok=True)
    if data_dir is None:
        data_dir = out / "data"
        if not (data_dir / "manifest.json").is_file():
            build_data(data_dir, preset="tiny", tier="numpy", progress=False, jobs=2)
    if 2 not in ks or len(set(ns)) < 2:
        raise BenchError("the sweep needs k = 2 and at least two values of n (cmaes_iter_ticks "
                         "is the slope over n at k = 2)")
    default = Point(2, 2, None)
    res0, syn0 = build_point(out, data_dir, default, default)
    q0 = res0.qmodel
    if (q0.adapt.k, q0.adapt.cfg.n_iter) != (2, 2):
        raise BenchError("configs/default.toml is expected to have k = 2, n = 2")
    lam0 = int(q0.adapt.cfg.lam)
    ids, xf = samples(data_dir, q0.source.meta, n_samples)

    from codegen.quantize import quantize_features

    def point(res: Any, synthetic: bool) -> dict[str, Any]:
        x = quantize_features(xf, res.qmodel.lstm.x_fmt)
        assert res.elf is not None
        return point_record(res, measure(res.elf, x, ids, reps), synthetic)

    base = point(res0, syn0)
    sweep = []
    for k in ks:
        for n in ns:
            if (k, n) == (2, 2):
                sweep.append(base)
                continue
            sweep.append(point(*build_point(out, data_dir, Point(k, n, None), default)))
    lam_pt = point(*build_point(out, data_dir, Point(2, 2, 2 * lam0), default))

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
        "sweep": sweep,
    }
    extra = {
        "lam_variant": lam_pt, "per_candidate_ticks": round(per_cand, 1),
        "samples": int(len(ids)), "reps": reps, "data": str(data_dir),
        "static_ram_bytes": int(res0.manifest["firmware"]["static_ram_bytes"]),
        "firmware": {s: int(res0.manifest["firmware"][s])
                     for s in ("text", "rodata", "data", "bss", "stack")},
        "build_id": res0.manifest["firmware"]["build_id"],
    }
    (out / "bench.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "bench.md").write_text(render_md(doc, extra))
    return doc


def render_md(d: dict[str, Any], x: dict[str, Any]) -> str:
    enc, fcls = d["encoder_ticks"], d["head_entropy_ticks"]
    na = d["no_adapt_ticks"]
    lines = [
        "# ELaTTA firmware benchmark (QEMU icount ticks)",
        "",
        "`qemu-system-arm -M xilinx-zynq-a9 -icount shift=0`; Cortex-A9 global-timer ticks as "
        "returned in RESULT (\"QEMU icount ticks\", not cycles; DESIGN §5). Medians over "
        f"{x['samples']} samples x {x['reps']} repetitions per mode. The sweep table gives the "
        "largest spread of any tick field between repetitions of the same clip (rep spread: "
        "the run-to-run determinism) and between clips (clip spread: data-dependent paths). "
        "Default model and configs/default.toml; "
        f"calibration and samples from `{x['data']}`. Build id {x['build_id']}.",
        "",
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
        f"ELaTTA overhead: elatta − no_adapt = {d['elatta_ticks'] - na} ticks = "
        f"{100 * (d['elatta_ticks'] - na) / na:.1f} % of the no-adapt inference (target ≤ 10 %).",
        "",
        "## Memory",
        "",
        f"- ram_bytes = {d['ram_bytes']}: .data {x['firmware']['data']} + .bss "
        f"{x['firmware']['bss']} + other modes' stacks + main stack high-water (INFO, stack "
        f"painting). Manifest static_ram_bytes (whole reserved stacks) = {x['static_ram_bytes']}; "
        "budget 65,536.",
        f"- elatta_state_bytes = {d['elatta_state_bytes']}: sizeof(elt_adapt_state_t) (arm-none-"
        "eabi-gcc probe with the build's -DELT_*_MAX flags, `nm -S`) + V_k as D·k int16 "
        "(target ≤ 1,024 for k = 2).",
        f"- .text {x['firmware']['text']}, .rodata {x['firmware']['rodata']} bytes.",
        "",
        "## Sweep and the paper's cost model",
        "",
        "Prediction = F_Enc + λ·n·F_Cls with F_Enc = encoder ticks and F_Cls = head + entropy "
        f"ticks of the default build ({enc} and {fcls}); measured = strict total. The residual "
        "is what the model's O(λnDk) + O(λnk²) terms (latent V p, sampling, Cholesky, update), "
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
            f"{s['ram_bytes']} | {s['rep_spread']} | {s['sample_spread']} |")
    lines += ["", *growth_table(d["sweep"], fcls), ""]
    return "\n".join(lines)


def growth_table(sweep: list[dict[str, Any]], fcls: int) -> list[str]:
    """Per k: the adapt ticks one candidate adds per iteration, from the n slope."""
    rows = ["## Growth with k (per candidate and iteration)", "",
            "c(k) = (adapt(n_max) − adapt(n_min)) / ((n_max − n_min)·λ): everything one "
            "candidate costs in one iteration (latent z_t + V p: O(Dk); head + entropy: F_Cls; "
            "its share of sampling O(k²) and of Cholesky/update O(k³)/λ). The paper's model "
            f"charges F_Cls = {fcls} for it; the excess is its O(Dk) + O(k²) terms (plus the "
            "per-iteration Cholesky/update, O(k³), spread over λ).", "",
            "| k | λ | c(k) ticks | c(k) − F_Cls | c(k) / F_Cls |", "|---:|---:|---:|---:|---:|"]
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


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, type=Path, help="output directory (bench.json/md)")
    p.add_argument("--data", type=Path, help="`codegen data` directory for calibration and "
                   "samples (default: build the tiny numpy-tier set in OUT/data)")
    p.add_argument("--sweep-k", type=parse_ints, default=SWEEP_K, help="k values (2,8,16)")
    p.add_argument("--sweep-n", type=parse_ints, default=SWEEP_N, help="n values (2,8)")
    p.add_argument("--samples", type=int, default=5, help="clips streamed per point (5)")
    p.add_argument("--reps", type=int, default=3, help="repetitions per clip and mode (3)")


def run(args: argparse.Namespace) -> int:
    doc = run_bench(args.out, args.data, ks=args.sweep_k, ns=args.sweep_n,
                    n_samples=args.samples, reps=args.reps)
    for key in JSON_KEYS[:-1]:
        print(f"{key:<20} {doc[key]}")
    print(f"wrote {args.out / 'bench.json'} and bench.md ({len(doc['sweep'])} sweep points)")
    return 0
