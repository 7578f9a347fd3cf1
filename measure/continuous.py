"""`codegen eval --continuous`: keyword spotting on an evaluation stream (`codegen data
--stream`), per SNR, for the float model, the integer reference and the device, in no-adapt
and the deployed input adaptation (docs/stream.md, "Metrics").

- fixed: the integer reference of the continuous mode (`codegen.intref.listen.run_stream`);
- float: the same windows of the float front end (`codegen.base.features`), the float encoder
  and head of the build's program (`codegen.elatta.float_ref`) after the float twin of the
  mode's input stage (`codegen.elatta.methods`), float probabilities averaged, thresholded and
  suppressed by the same rule;
- device: the stream through the device's continuous mode (`elatta_host.listen.listen`), every
  record compared with the integer reference.

Reported per (SNR, mode, target): miss rate, false accepts per hour and detection delay at the
configured threshold (`codegen.data.kwstream.score_detections`); the DET curve (miss rate
against false accepts per hour as the threshold sweeps, from each window's class and smoothed
score, which do not depend on the threshold); the miss rate at equal false accepts per hour
(the lower envelope of the curve at fixed rates), adaptation against no-adapt. Files:
``report.json``, ``report.md``, ``det.png``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.errors import ConfigError
from codegen.data.common import SAMPLE_RATE
from codegen.intref.listen import PROB_ONE, DetectorConfig

MODES = ("no_adapt", "cmvn_select")
# thresholds of the DET curve (smoothed probability): a grid up to DET_FINE, then every Q0.15
# value. The operating points of a few hundred false accepts per hour or fewer lie above it (the
# FSDD model answers most words and noises with p > 0.99), and the integer targets' scores are
# Q0.15: no decision changes between two neighbouring values, so there the curve and the miss
# rate at equal false accepts are exact, not read off a grid that skips the points between 0.999
# and 1.0 (docs/stream.md §6).
DET_FINE = 0.98
_GRID = np.concatenate([np.arange(0.20, 0.90, 0.02), np.arange(0.90, DET_FINE, 0.005)])
DET_THRESHOLDS = tuple(float(t) for t in np.round(_GRID, 4)) + tuple(
    k / PROB_ONE for k in range(int(np.ceil(DET_FINE * PROB_ONE)), PROB_ONE + 1)
)
# false accepts per hour at which the miss rates of two modes are compared
EQUAL_FA = (30.0, 60.0, 120.0, 240.0, 480.0)
SEGMENT_FRAMES = 2000  # float front end: frames computed at once


@dataclass(frozen=True)
class Windows:
    """Every scored window of a stream: its last frame, the class and smoothed score (float
    fraction, or Q0.15 / 32768 for the integer targets)."""

    frames: npt.NDArray[np.int64]
    cls: npt.NDArray[np.int64]
    score: npt.NDArray[np.float64]


def decide(w: Windows, cfg: DetectorConfig, threshold: float) -> npt.NDArray[np.bool_]:
    """The detector's decisions at ``threshold`` (the rule of `codegen.intref.listen.Detector`:
    ``smooth`` windows seen, a keyword class, score >= threshold, none in the ``suppress`` frames
    before)."""
    kw = np.array([cfg.is_keyword(int(c)) for c in range(max(int(w.cls.max(initial=0)) + 1, 1))])
    cand = np.flatnonzero(
        (np.arange(len(w.cls)) >= cfg.smooth - 1) & kw[w.cls] & (w.score >= threshold)
    )
    out = np.zeros(len(w.cls), bool)
    last: int | None = None
    for i in cand:
        f = int(w.frames[i])
        if last is None or f - last >= cfg.suppress:
            out[i] = True
            last = f
    return out


def float_frames(pcm: npt.NDArray[np.int16], meta: Any) -> npt.NDArray[np.float32]:
    """The float front end's frames of a whole stream, normalised as training saw them:
    frame t covers samples [t hop, t hop + win), as the device's."""
    from codegen.base.features import MfccParams, mfcc
    from codegen.ir.meta import normalise

    p = MfccParams.from_dict(meta.features)
    hop, win = p.hop_length, p.win_length
    total = 0 if len(pcm) < win else 1 + (len(pcm) - win) // hop
    out = np.empty((total, p.n_mfcc), np.float32)
    for f0 in range(0, total, SEGMENT_FRAMES):
        n = min(SEGMENT_FRAMES, total - f0)
        span = (n - 1) * hop + win
        seg = replace(p, clip_samples=span)
        out[f0 : f0 + n] = mfcc(pcm[f0 * hop : f0 * hop + span][None, :], seg)[0]
    return normalise(out, meta)


def window_stack(frames: npt.NDArray[Any], T: int, every: int) -> tuple[npt.NDArray[Any], Any]:
    """Windows [W, T, F] of frames (a strided view) and their last frames."""
    n = 0 if len(frames) < T else 1 + (len(frames) - T) // every
    view = np.lib.stride_tricks.sliding_window_view(frames, T, axis=0)[::every][:n]
    return np.ascontiguousarray(np.moveaxis(view, -1, 1)), T - 1 + every * np.arange(n)


def float_logits(u: npt.NDArray[Any], model: Any, mode: str) -> npt.NDArray[np.float64]:
    """The float twin of the device's window logits in ``mode``: the input stage's float twin
    over the windows in order from a reset state (`codegen.stages.registry`), then the encoder
    and head; for a select stage (cmvn_select) the run its choice takes."""
    from codegen.elatta.float_ref import encode_float, head_logits
    from codegen.ir.modes import mode as device_mode
    from codegen.stages.registry import stage as input_stage

    W, b = model.head.weight.values, model.head.bias.values

    def logits(x: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
        return np.asarray(head_logits(encode_float(x, model), W, b))

    name = device_mode(mode).before_encoder
    if name is None:
        return logits(u)
    st = input_stage(name)
    run = st.float_twin(u, model.adapt.stage_settings(st.table.name))
    l1 = logits(run.u)
    if run.choose is None:
        return l1
    l0 = logits(u)
    use = np.asarray(run.choose(l0, l1), bool)
    return np.where(use[:, None], l1, l0)


def smooth_scores(
    probs: npt.NDArray[np.float64], frames: npt.NDArray[np.int64], smooth: int
) -> Windows:
    """The float detector's class and score per window: the mean of the last ``smooth``
    windows' probabilities (fewer at the start), its first maximum."""
    c = np.cumsum(np.vstack([np.zeros((1, probs.shape[1])), probs]), axis=0)
    i = np.arange(1, len(probs) + 1)
    lo = np.maximum(i - smooth, 0)
    mean = (c[i] - c[lo]) / (i - lo)[:, None]
    cls = np.argmax(mean, axis=1)
    return Windows(frames, cls, mean[np.arange(len(cls)), cls])


def float_windows(pcm: npt.NDArray[np.int16], q: Any, mode: str, cfg: DetectorConfig) -> Windows:
    model = q.source
    u = float_frames(pcm, model.meta)
    win, ends = window_stack(u, q.num_frames, cfg.every)
    L = float_logits(win, model, mode)
    e = np.exp(L - L.max(axis=1, keepdims=True))
    return smooth_scores(e / e.sum(axis=1, keepdims=True), ends.astype(np.int64), cfg.smooth)


def fixed_windows(pcm: npt.NDArray[np.int16], q: Any, mode: str, cfg: DetectorConfig) -> Windows:
    from codegen.intref.listen import run_stream

    recs = list(run_stream(pcm, q, mode, cfg))
    return Windows(
        np.array([r.frame for r in recs], np.int64),
        np.array([r.cls for r in recs], np.int64),
        np.array([r.score / PROB_ONE for r in recs], np.float64),
    )


def metrics_at(
    w: Windows, cfg: DetectorConfig, threshold: float, labels: list[Any], seconds: float, q: Any
) -> dict[str, Any]:
    from codegen.data.kwstream import score_detections

    hop, win = q.mfcc.params.hop_length, q.mfcc.params.win_length
    det = decide(w, cfg, threshold)
    times = [
        ((int(f) * hop + win) / SAMPLE_RATE, int(c))
        for f, c in zip(w.frames[det], w.cls[det], strict=True)
    ]
    return score_detections(labels, times, seconds).to_json()


def det_curve(
    w: Windows, cfg: DetectorConfig, labels: list[Any], seconds: float, q: Any
) -> list[tuple[float, float, float]]:
    """(threshold, miss rate %, false accepts per hour) over DET_THRESHOLDS."""
    out = []
    for t in DET_THRESHOLDS:
        m = metrics_at(w, cfg, t, labels, seconds, q)
        out.append((t, m["miss_rate"], m["fa_per_hour"]))
    return out


def miss_at_fa(curve: list[tuple[float, float, float]], fa: float) -> float | None:
    """The least miss rate of any threshold whose false accepts per hour are at most ``fa``
    (None: no threshold gets that low)."""
    ok = [m for _, m, f in curve if f <= fa]
    return min(ok) if ok else None


def evaluate_continuous(
    build_dir: Path,
    stream_dir: Path,
    report_dir: Path,
    *,
    snrs: tuple[float | None, ...],
    modes: tuple[str, ...],
    cfg: DetectorConfig,
    device_snrs: tuple[float | None, ...] = (),
    device: Any = None,
    line_baud: int | None = None,
    wire: str = "raw",
    out: Any = print,
) -> dict[str, Any]:
    from elatta_host.listen import listen
    from elatta_host.plan import load_build

    from codegen.data.kwstream import load_labels, read_wav, stream_file, stream_info

    manifest, q = load_build(build_dir)
    if q.mfcc is None:
        raise ConfigError(f"{build_dir}: the build has no audio front end (input = features)")
    info = stream_info(stream_dir)
    if list(info["classes"]) != list(q.source.classes):
        raise ConfigError(
            f"{stream_dir} labels classes {info['classes']}, the build's model predicts "
            f"{list(q.source.classes)}"
        )
    labels = load_labels(stream_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {}
    curves: dict[str, Any] = {}
    t0 = time.perf_counter()
    for snr in snrs:
        key = "clean" if snr is None else f"{snr:g}"
        path = stream_file(stream_dir, snr)
        pcm = read_wav(path)
        seconds = len(pcm) / SAMPLE_RATE
        res[key], curves[key] = {}, {}
        for mode in modes:
            row: dict[str, Any] = {}
            crow: dict[str, Any] = {}
            for target, fn in (("float", float_windows), ("fixed", fixed_windows)):
                w = fn(pcm, q, mode, cfg)
                row[target] = metrics_at(w, cfg, cfg.threshold / PROB_ONE, labels, seconds, q)
                crow[target] = det_curve(w, cfg, labels, seconds, q)
            if device is not None and snr in device_snrs:
                from codegen.data.kwstream import wav_blocks

                got = listen(
                    build_dir,
                    wav_blocks(path),
                    report_dir / f"device_{key}_{mode}",
                    mode=mode,
                    cfg=cfg,
                    device=device,
                    line_baud=line_baud,
                    wire_kind=wire,
                    labels=labels,
                    out=lambda _s: None,
                )
                row["device"] = got.report["metrics"] | {
                    "bit_exact": got.report["bit_exact"],
                    "realtime_factor": got.report["realtime_factor"],
                    "ticks_per_audio_second": got.report["ticks_per_audio_second"],
                }
            res[key][mode] = row
            curves[key][mode] = crow
            out(f"{key:>6} dB  {mode:12s} " + "  ".join(
                f"{t}: miss {r['miss_rate']:6.2f} % FA/h {r['fa_per_hour']:8.1f}"
                for t, r in row.items()
            ))  # fmt: skip
    equal: dict[str, dict[str, Any]] = {}
    if "no_adapt" in modes:
        for key, by_mode in curves.items():
            equal[key] = {}
            for mode in modes:
                if mode == "no_adapt":
                    continue
                for target in ("float", "fixed"):
                    a, b = by_mode[mode][target], by_mode["no_adapt"][target]
                    equal[key][f"{mode}/{target}"] = {
                        f"{fa:g}": {"adapt": miss_at_fa(a, fa), "no_adapt": miss_at_fa(b, fa)}
                        for fa in EQUAL_FA
                    }
    report = {
        "build": str(build_dir),
        "stream": {"path": str(stream_dir), **{k: info[k] for k in ("seconds", "keywords",
                   "unknown_words", "unknown_from", "snr_definition")}},
        "detector": {
            "every_hops": cfg.every,
            "smooth_windows": cfg.smooth,
            "threshold": cfg.threshold / PROB_ONE,
            "suppress_hops": cfg.suppress,
        },
        "results": res,
        "equal_false_accepts": equal,
        "det": curves,
        "seconds": round(time.perf_counter() - t0, 1),
    }  # fmt: skip
    (report_dir / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (report_dir / "report.md").write_text(format_report(report))
    plot_det(report, report_dir / "det.png")
    return report


def _cell(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def format_report(r: dict[str, Any]) -> str:
    d = r["detector"]
    lines = [
        "# Keyword spotting on a stream",
        "",
        f"Stream {r['stream']['path']}: {r['stream']['seconds']:.0f} s, "
        f"{r['stream']['keywords']} keywords, {r['stream']['unknown_words']} unknown words "
        f"({r['stream']['unknown_from']}). Detector: a window every {d['every_hops']} hops, "
        f"{d['smooth_windows']} windows averaged, threshold {d['threshold']:.3f}, suppression "
        f"{d['suppress_hops']} hops.",
        "",
        "| SNR | mode | target | miss rate % | false accepts | per hour | delay median s | "
        "delay p90 s | bit-exact |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for key, by_mode in r["results"].items():
        for mode, row in by_mode.items():
            for target, m in row.items():
                be = m.get("bit_exact")
                exact = (
                    ""
                    if be is None
                    else f"{be['windows_compared']} windows, {be['mismatches']} mismatches"
                )
                lines.append(
                    f"| {key} | {mode} | {target} | {m['miss_rate']:.2f} | {m['false_accepts']} "
                    f"| {m['fa_per_hour']:.1f} | {m['delay_median_s']} | {m['delay_p90_s']} | "
                    f"{exact} |"
                )
    if r["equal_false_accepts"]:
        fas = list(next(iter(next(iter(r["equal_false_accepts"].values())).values())))
        lines += [
            "",
            "Miss rate (%) at equal false accepts per hour (the DET curve's lower envelope), "
            "adaptation / no-adapt:",
            "",
            "| SNR | mode/target | " + " | ".join(f"≤ {fa}/h" for fa in fas) + " |",
            "|---|---|" + "---:|" * len(fas),
        ]
        for key, by in r["equal_false_accepts"].items():
            for name, cells in by.items():
                lines.append(
                    f"| {key} | {name} | "
                    + " | ".join(
                        f"{_cell(c['adapt'])} / {_cell(c['no_adapt'])}" for c in cells.values()
                    )
                    + " |"
                )
    return "\n".join(lines) + "\n"


def plot_det(r: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(r["det"])
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 4), squeeze=False)
    colors = {"no_adapt": "tab:blue", "cmvn_select": "tab:red"}
    for ax, key in zip(axes[0], keys, strict=True):
        for mode, by_target in r["det"][key].items():
            for target, style in (("float", ":"), ("fixed", "-")):
                c = by_target[target]
                fa = [max(p[2], 0.5) for p in c]
                ax.plot(fa, [p[1] for p in c], style, color=colors.get(mode, "k"),
                        label=f"{mode} {target}")  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("false accepts per hour")
        ax.set_ylabel("miss rate %")
        ax.set_title(f"{key} dB" if key != "clean" else "clean")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """`codegen eval --continuous`'s own options (measure/evaluate.py adds them)."""
    g = p.add_argument_group("--continuous (keyword spotting on a stream, docs/stream.md)")
    g.add_argument("--continuous", action="store_true", help="evaluate on an evaluation stream")
    g.add_argument("--build", type=Path, help="--continuous: the `codegen build` directory")
    g.add_argument(
        "--stream", type=Path, metavar="DIR", help="--continuous: `codegen data --stream` output"
    )
    g.add_argument(
        "--snr",
        action="append",
        help="--continuous: SNRs to evaluate (repeatable, 'clean' too; default: all)",
    )
    g.add_argument("--qemu", action="store_true", help="--continuous: also run the device")
    g.add_argument(
        "--device-snr",
        action="append",
        help="--continuous --qemu: the SNRs the device runs (default: every one evaluated)",
    )
    g.add_argument(
        "--line",
        choices=("direct", "usb-uart"),
        default="direct",
        help="--qemu: the line in front of QEMU (usb-uart: the 921,600-baud USB-UART model)",
    )
    g.add_argument("--timeout", type=float, default=2.0, help="--qemu: first re-send time-out (s)")
    g.add_argument("--budget", type=float, default=30.0, help="--qemu: silence that ends the link")
    d = DetectorConfig()
    g.add_argument("--every", type=int, default=d.every, help=f"hops between windows ({d.every})")
    g.add_argument("--smooth", type=int, default=d.smooth, help=f"windows averaged ({d.smooth})")
    g.add_argument(
        "--threshold", type=float, default=d.threshold / PROB_ONE, help="detection threshold"
    )
    g.add_argument("--suppress", type=float, default=d.suppress * 0.02, help="suppression time (s)")


def _snr(v: str) -> float | None:
    if v == "clean":
        return None
    try:
        return float(v)
    except ValueError:
        raise ConfigError(f"--snr {v!r}: a number of dB or 'clean'") from None


def run(args: argparse.Namespace) -> int:
    from elatta_host.plan import load_build
    from elatta_host.run import DeviceSpec

    from codegen.data.kwstream import stream_info
    from codegen.intref.listen import check_stream_mode, keyword_mask

    if args.build is None or args.stream is None:
        raise ConfigError("--continuous needs --build DIR and --stream DIR")
    _, q = load_build(args.build)
    info = stream_info(args.stream)
    snrs = tuple(_snr(s) for s in args.snr) if args.snr else tuple(
        _snr(k) for k in info["files"]
    )  # fmt: skip
    dev_snrs = tuple(_snr(s) for s in args.device_snr) if args.device_snr else snrs
    modes = tuple(args.mode or MODES)
    for m in modes:
        check_stream_mode(m)
    hop_s = q.mfcc.params.hop_length / SAMPLE_RATE if q.mfcc is not None else 0.02
    cfg = DetectorConfig(
        every=args.every,
        smooth=args.smooth,
        threshold=int(round(args.threshold * PROB_ONE)),
        suppress=int(round(args.suppress / hop_s)),
        keywords=keyword_mask(tuple(q.source.classes)),
    )
    spec = (
        DeviceSpec("qemu0", elf=args.build / "fw.elf", timeout=args.timeout, budget=args.budget)
        if args.qemu
        else None
    )
    report = evaluate_continuous(
        args.build,
        args.stream,
        Path(args.report),
        snrs=snrs,
        modes=modes,
        cfg=cfg,
        device_snrs=dev_snrs,
        device=spec,
        line_baud=921_600 if args.line == "usb-uart" else None,
        wire=args.wire,
    )
    print(format_report(report))
    print(f"wrote {Path(args.report) / 'report.json'}, report.md, det.png")
    return 0
