"""The IMA ADPCM codec's costs (docs/numeric.md §8): QEMU icount ticks per sample of
firmware/elt_adpcm.c on the Cortex-A9 (-icount shift=0, about ten guest instructions a tick,
docs/targets.md §4), every decoded sample checked against codegen/base/adpcm.py; the host's
encode and decode time for 2,000 one-second clips; and the codec's SNR on the data set's clean
test clips.

    python bench/adpcm_ticks.py [--data out/data/fsdd] [--block 1000] [--work DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from elatta_measure.bench_adpcm import run_adpcm_probe

    from codegen.base import adpcm
    from codegen.data import load_split

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="out/data/fsdd", help="a `codegen data` directory")
    ap.add_argument("--block", type=int, default=1000, help="samples per block (1000)")
    ap.add_argument("--clips", type=int, default=4, help="test clips decoded on the A9 (4)")
    ap.add_argument("--work", help="probe build directory (default: a temporary one)")
    args = ap.parse_args()

    test = load_split(args.data, "test").pcm
    x = test[: args.clips]
    enc = adpcm.encode(x, args.block)
    blocks: list[bytes] = []
    sizes: list[int] = []
    for c in range(enc.n_clips):
        blocks += adpcm.clip_blocks(enc, c)
        sizes += [enc.block_len(b) for b in range(enc.n_blocks)]
    with tempfile.TemporaryDirectory() as tmp:
        run = run_adpcm_probe(blocks, sizes, Path(args.work or tmp))
    for j, (b, n) in enumerate(zip(blocks, sizes, strict=True)):
        if not np.array_equal(run.samples[j], adpcm.decode_block(b, n)):
            print(f"block {j}: the A9 decoded other samples than Python", file=sys.stderr)
            return 1
    ticks = np.array(run.ticks, np.float64)
    per = ticks / np.array(sizes)
    print(
        f"A9 under QEMU -icount: {len(blocks)} blocks of {args.block} samples, all bit-exact; "
        f"ticks per block median {np.median(ticks):.0f}, per sample median {np.median(per):.3f} "
        f"(min {per.min():.3f}, max {per.max():.3f}); {adpcm.block_bytes(args.block)} bytes a "
        f"block, {2 * args.block} as raw PCM"
    )

    rng = np.random.default_rng(0)
    big = test[rng.integers(0, len(test), 2000)]
    t0 = time.perf_counter()
    e = adpcm.encode(big, args.block)
    t1 = time.perf_counter()
    adpcm.decode(e)
    t2 = time.perf_counter()
    print(
        f"host: 2,000 clips of {big.shape[1]} samples encode {t1 - t0:.2f} s, "
        f"decode {t2 - t1:.2f} s"
    )

    xf = test.astype(np.float64)
    err = adpcm.roundtrip(test).astype(np.float64) - xf
    snr = 10 * np.log10((xf**2).sum(1) / np.maximum((err**2).sum(1), 1e-9))
    print(
        f"SNR over {len(test)} clean test clips: median {np.median(snr):.1f} dB, "
        f"10th percentile {np.percentile(snr, 10):.1f} dB, min {snr.min():.1f} dB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
