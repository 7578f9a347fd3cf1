"""Choose the continuous mode's detector settings on a VALIDATION stream (docs/stream.md,
"Choosing the settings"): `codegen data --stream --split val` of the data set, never the test
stream. For every (windows averaged, suppression) of the grid, the integer reference's DET curve
per SNR (no-adapt, the decision without adaptation); the score of a setting is the mean over the
stream's SNRs of the least miss rate at or below FA_TARGET false accepts per hour. The
threshold of a setting is the least one whose false accepts per hour on the validation stream
at -10 dB are at most FA_TARGET; a setting is admissible when, at that threshold, 95 % of the
detected keywords are detected within DELAY_MAX seconds of their end at every SNR (a spotter
must answer soon after the word). The admissible setting with the best score wins, ties to the
smaller smoothing and suppression. The window hop (every 5 hops = 100 ms) is the mode's
default and is not searched.

    python bench/stream_settings.py --build build/fsdd --stream out/stream/fsdd_val
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from elatta_host.plan import load_build
from elatta_measure.continuous import DET_THRESHOLDS, Windows, det_curve, metrics_at, miss_at_fa

from codegen.data.common import SAMPLE_RATE
from codegen.data.kwstream import load_labels, read_wav, stream_file, stream_info
from codegen.intref.listen import Detector, DetectorConfig, keyword_mask, probs_q15, run_stream

SMOOTH = (1, 2, 3, 5, 8)
SUPPRESS_S = (0.5, 1.0, 1.5)
FA_TARGET = 240.0
DELAY_MAX = 0.5  # s after the keyword's end: the 95th percentile of the hits' delays


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", type=Path, required=True)
    ap.add_argument("--stream", type=Path, required=True)
    ap.add_argument("--mode", default="no_adapt")
    ap.add_argument("--out", type=Path, default=Path("out/stream_settings.json"))
    a = ap.parse_args()
    _, q = load_build(a.build)
    info = stream_info(a.stream)
    labels = load_labels(a.stream)
    kw = keyword_mask(tuple(q.source.classes))
    frac = q.adapt.logit_fmt.frac_bits
    hop_s = q.mfcc.params.hop_length / SAMPLE_RATE
    snrs = [float(k) for k in info["files"] if k != "clean"]
    per_snr = {}
    for snr in snrs:
        pcm = read_wav(stream_file(a.stream, snr))
        base = DetectorConfig(smooth=1, keywords=kw)
        recs = list(run_stream(pcm, q, a.mode, base))
        frames = np.array([r.frame for r in recs])
        probs = probs_q15(np.array([r.logits for r in recs]), frac)
        per_snr[snr] = (frames, probs, len(pcm) / SAMPLE_RATE)
    table = []
    for smooth in SMOOTH:
        for sup in SUPPRESS_S:
            cfg = DetectorConfig(smooth=smooth, suppress=int(round(sup / hop_s)), keywords=kw)
            misses, curves, wins = [], {}, {}
            for snr, (frames, probs, seconds) in per_snr.items():
                d = Detector(cfg, probs.shape[1])
                steps = [d.step(int(f), p) for f, p in zip(frames, probs, strict=True)]
                w = Windows(frames, np.array([s[0] for s in steps]),
                            np.array([s[1] / 32768 for s in steps]))  # fmt: skip
                c = det_curve(w, cfg, labels, seconds, q)
                curves[snr], wins[snr] = c, w
                m = miss_at_fa(c, FA_TARGET)
                misses.append(100.0 if m is None else m)
            score = float(np.mean(misses))
            at10 = curves.get(-10.0, next(iter(curves.values())))
            thr = min((t for t, _, fa in at10 if fa <= FA_TARGET), default=DET_THRESHOLDS[-1])
            p95 = []
            for snr, w in wins.items():
                got = metrics_at(w, cfg, thr, labels, per_snr[snr][2], q)
                p95.append(got["delay_p95_s"] if got["delay_p95_s"] is not None else 0.0)
            table.append({"smooth": smooth, "suppress_s": sup, "score": round(score, 3),
                          "threshold": thr, "miss_by_snr": [round(m, 2) for m in misses],
                          "delay_p95_by_snr": p95,
                          "admissible": max(p95) <= DELAY_MAX})  # fmt: skip
            print(table[-1])
    ok = [r for r in table if r["admissible"]] or table
    best = min(ok, key=lambda r: (r["score"], r["smooth"], r["suppress_s"]))
    print("chosen:", best)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"fa_target": FA_TARGET, "grid": table, "chosen": best}, indent=1))


if __name__ == "__main__":
    main()
