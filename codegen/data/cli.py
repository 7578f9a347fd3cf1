"""`codegen data`: build (or reuse) the GSC-C data set — real GSC v2 + ESC-50, or built-in."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from codegen.base.files import writable_dir
from codegen.data.builder import build
from codegen.data.builtin import PRESETS, TIERS
from codegen.data.common import DataError
from codegen.data.fsdd import build_fsdd

HELP = "build the GSC-C data set (real GSC v2 + ESC-50, or the built-in synthetic set)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="output directory")
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="demo",
        help="size of the built-in set (default: demo; tiny is for tests)",
    )
    parser.add_argument("--gsc", type=Path, metavar="PATH", help="GSC v2 tree (real data)")
    parser.add_argument("--esc50", type=Path, metavar="PATH", help="ESC-50 tree (real data)")
    parser.add_argument(
        "--fsdd",
        type=Path,
        metavar="PATH",
        help="Free Spoken Digit Dataset recordings (real speech, 10 digit classes; "
        "codegen.data.fsdd)",
    )
    parser.add_argument(
        "--gsc-test",
        type=Path,
        metavar="PATH",
        help="canonical speech_commands_test_set_v0.02 folder (found next to --gsc by default)",
    )
    parser.add_argument(
        "--stream",
        action="store_true",
        help="build an evaluation stream for the continuous mode instead of a data set: "
        "keywords at known times, unknown words and silence between, noise at each SNR "
        "(codegen.data.kwstream, docs/stream.md); needs --from",
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        metavar="DIR",
        help="--stream: the data set (`codegen data`) whose clips it is made of",
    )
    parser.add_argument(
        "--minutes", type=float, default=10.0, help="--stream: its length (default: 10)"
    )
    parser.add_argument(
        "--snr",
        type=float,
        action="append",
        metavar="DB",
        help="--stream: an SNR to mix (repeatable; default: the data set's SNRs)",
    )
    parser.add_argument(
        "--split",
        choices=("train", "val", "test"),
        default="test",
        help="--stream: the split its words come from (default: test)",
    )
    parser.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    parser.add_argument(
        "--tier",
        choices=("auto", *TIERS),
        default="auto",
        help="built-in speech source: tts (espeak-ng/flite/festival) or numpy; auto prefers tts",
    )
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default: 2)")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())


def _run_stream(args: argparse.Namespace, out: Path, t0: float) -> int:
    from codegen.data.kwstream import StreamSettings, build_stream
    from codegen.data.store import dataset_info

    if args.source is None:
        raise DataError("--stream needs --from DIR: the data set its words come from")
    snrs = tuple(args.snr) if args.snr else tuple(dataset_info(str(args.source))["snrs"])
    settings = StreamSettings(minutes=args.minutes, seed=args.seed, split=args.split, snrs=snrs)
    info = build_stream(args.source, out, settings)
    print(
        f"built {out}: {info['seconds']:.0f} s, {info['keywords']} keywords, "
        f"{info['unknown_words']} unknown words ({info['unknown_from']}); SNRs "
        f"{', '.join(f'{s:g}' for s in snrs)} dB; {time.perf_counter() - t0:.1f} s"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    writable_dir(out, "--out", "out/data/NAME", DataError)
    before = (out / "manifest.json").stat().st_mtime_ns if (out / "manifest.json").exists() else 0
    t0 = time.perf_counter()
    if args.stream:
        return _run_stream(args, out, t0)
    if args.fsdd is not None:
        if args.gsc is not None or args.esc50 is not None:
            raise DataError("--fsdd builds its own data set: drop --gsc/--esc50")
        info = build_fsdd(args.fsdd, out, seed=args.seed, force=args.force, progress=not args.quiet)
    else:
        info = build(
            out,
            preset=args.preset,
            gsc=args.gsc,
            esc50=args.esc50,
            gsc_test=args.gsc_test,
            seed=args.seed,
            tier=args.tier,
            jobs=args.jobs,
            force=args.force,
            progress=not args.quiet,
        )
    elapsed = time.perf_counter() - t0
    reused = before and (out / "manifest.json").stat().st_mtime_ns == before
    if info["data"] == "fsdd":
        what = "FSDD real speech (split by recording index)"
    elif info["data"] == "builtin":
        what = f"builtin {info['preset']} ({info['tier']} tier)"
    else:
        what = "GSC v2 + ESC-50"
    engines = ", ".join(f"{e['name']} {e['version']}" for e in info.get("engines", []))
    print(
        f"{'reused' if reused else 'built'} {out}: {what}"
        + (f"; engines: {engines}" if engines else "")
    )
    counts = ", ".join(f"{s} {v['count']}" for s, v in info["splits"].items())
    n_cond = len(info["conditions"])
    print(f"  clips: {counts}; {n_cond} test conditions (clean, additive x SNRs {info['snrs']} dB,")
    print("  reverb, channel), mixed on the fly by codegen.data.load_condition")
    print(f"  size {_size(out) / 1e6:.1f} MB, {elapsed:.1f} s")
    return 0
