"""The continuous mode's design choice, measured (docs/stream.md, "Recomputed window or a
carried state"): the device scores every window from scratch (T encoder steps every `every`
hops); the alternative carries one encoder state through the stream (one step per hop) and
scores its h_t every `every` hops, either never reset or reset every T frames. Accuracy: the
float model on an evaluation stream, no-adapt, the same smoothing, threshold sweep and
suppression (elatta_measure.continuous), miss rate at equal false accepts per hour. Cost: the
encoder's steps per second of audio; the device's ticks per step from a STREAM_SUMMARY (codegen
listen's report.json, --summary) turn them into ticks.

    python bench/stream_stateful.py --build build/fsdd --stream out/stream/fsdd \
        --summary out/eval_cont/fsdd_device/device_-10_no_adapt/report.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from elatta_host.plan import load_build
from elatta_measure.continuous import (
    EQUAL_FA,
    decide,
    det_curve,
    float_frames,
    float_windows,
    miss_at_fa,
    smooth_scores,
)

from codegen.data.common import SAMPLE_RATE
from codegen.data.kwstream import load_labels, read_wav, stream_file
from codegen.elatta.float_ref import head_logits, layer_float
from codegen.intref.listen import DetectorConfig, keyword_mask


def carried(
    u: np.ndarray, q: object, every: int, reset: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Logits of one carried encoder state at every `every`-th frame from frame T - 1 on:
    h_t of the LSTM run over the whole stream (reset None) or over blocks of `reset` frames."""
    model = q.source  # type: ignore[attr-defined]
    T = q.num_frames  # type: ignore[attr-defined]
    n = len(u) if reset is None else len(u) // reset * reset
    x = u[:n][None] if reset is None else u[:n].reshape(-1, reset, u.shape[1])
    h = np.asarray(layer_float(x, model.encoder[0], sequence=True)).reshape(n, -1)
    ends = np.arange(T - 1, n, every)
    W, b = model.head.weight.values, model.head.bias.values
    return np.asarray(head_logits(h[ends], W, b)), ends


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", type=Path, required=True)
    ap.add_argument("--stream", type=Path, required=True)
    ap.add_argument("--snr", action="append", type=float)
    ap.add_argument("--summary", type=Path, help="a `codegen listen` report.json (no_adapt)")
    ap.add_argument("--out", type=Path, default=Path("out/stream_stateful.json"))
    a = ap.parse_args()
    _, q = load_build(a.build)
    labels = load_labels(a.stream)
    cfg = DetectorConfig(keywords=keyword_mask(tuple(q.source.classes)))
    T, every = q.num_frames, cfg.every
    out: dict[str, object] = {"equal_fa": EQUAL_FA, "by_snr": {}}
    for snr in a.snr or [None, -10.0, -20.0]:
        pcm = read_wav(stream_file(a.stream, snr))
        seconds = len(pcm) / SAMPLE_RATE
        u = float_frames(pcm, q.source.meta)
        rows = {}
        variants = {"recomputed": None, "carried, never reset": 0, f"carried, reset every {T}": T}
        for name, reset in variants.items():
            if reset is None:
                w = float_windows(pcm, q, "no_adapt", cfg)
            else:
                L, ends = carried(u, q, every, None if reset == 0 else reset)
                e = np.exp(L - L.max(axis=1, keepdims=True))
                w = smooth_scores(e / e.sum(axis=1, keepdims=True), ends, cfg.smooth)
            c = det_curve(w, cfg, labels, seconds, q)
            rows[name] = {f"{fa:g}": miss_at_fa(c, fa) for fa in EQUAL_FA}
            rows[name]["at_default"] = int(decide(w, cfg, cfg.threshold / 32768).sum())
            print(snr, name, rows[name])
        out["by_snr"][str(snr)] = rows  # type: ignore[index]
    steps = {"recomputed": T / every, "carried": 1.0}
    out["encoder_steps_per_hop"] = steps
    if a.summary:
        r = json.loads(a.summary.read_text())
        s = r["summary"]
        per_step = s["ticks_encoder"] / (s["windows"] * T)
        hops_s = SAMPLE_RATE / q.mfcc.params.hop_length
        out["ticks_per_step"] = round(per_step, 1)
        out["encoder_ticks_per_audio_second"] = {
            k: round(v * hops_s * per_step) for k, v in steps.items()
        }
        print(out["encoder_ticks_per_audio_second"])
    a.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
