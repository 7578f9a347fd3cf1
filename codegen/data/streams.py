"""Continual single-instance streams: runs of clips from one condition, then a switch.

The continual test-time-adaptation protocol (the ELaTTA paper's continual single-instance
setting, after CoTTA, Wang et al., CVPR 2022) feeds the model one clip at a time from a
target domain that stays fixed for a while and then changes. Here a *stream* covers every
(condition, clip) pair of a test set exactly once: each condition's clips are cut into
*segments* of `segment_len` consecutive clips (the last segment of a condition may be
shorter), and the segments of all conditions are played in the order `StreamSpec.order`:

- ``"random"``: a seeded uniform shuffle of all segments (conditions interleave, each switch
  jumps to an unrelated condition);
- ``"grouped"``: conditions in the given order, each condition's segments back to back (one
  long run per condition, then a switch).

Within a condition, which clips form which segment is a seeded permutation, so segments are
not grouped by speaker or word. Because every pair appears once, per-condition accuracy over
a stream uses the same clips as the strict protocol and the two are directly comparable.

Pure numpy and standard library: the host bench imports this module too.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from codegen.base.errors import ConfigError

ORDERS: tuple[str, ...] = ("random", "grouped")
HEAD_CLIPS = 10  # "first clips of a segment" reported separately (adaptation warm-up)

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class StreamSpec:
    """A stream definition: segment length, segment order and the seed of both shuffles."""

    segment_len: int = 50
    order: str = "random"
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.segment_len, bool) or not isinstance(self.segment_len, int):
            raise ValueError(f"segment_len={self.segment_len!r}: use an integer >= 1")
        if self.segment_len < 1:
            raise ValueError(f"segment_len={self.segment_len}: use an integer >= 1")
        if self.order not in ORDERS:
            raise ValueError(f"order={self.order!r}: use one of {', '.join(ORDERS)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed={self.seed!r}: use an integer >= 0")


@dataclass(frozen=True, eq=False)
class Stream:
    """The clips of a stream in play order (all arrays have one row per clip).

    ``condition``: index into the condition list given to `build_stream`; ``clip``: index of the
    clip within that condition; ``segment``: running segment number; ``position``: position of
    the clip within its segment (0 = first clip after a switch).
    """

    condition: IntArray
    clip: IntArray
    segment: IntArray
    position: IntArray

    def __len__(self) -> int:
        return int(self.condition.shape[0])


def build_stream(clips_per_condition: Sequence[int], spec: StreamSpec) -> Stream:
    """The stream over conditions with ``clips_per_condition[c]`` clips each."""
    counts = [int(n) for n in clips_per_condition]
    if any(n < 0 for n in counts):
        raise ValueError(f"clips_per_condition must be >= 0, got {counts}")
    rng = np.random.default_rng([spec.seed, 0x57BEA7])
    segments: list[tuple[int, np.ndarray]] = []
    for c, n in enumerate(counts):
        perm = rng.permutation(n)
        for s in range(0, n, spec.segment_len):
            segments.append((c, perm[s : s + spec.segment_len]))
    if spec.order == "random":
        order = rng.permutation(len(segments))
        segments = [segments[i] for i in order]
    cond, clip, seg, pos = [], [], [], []
    for k, (c, idx) in enumerate(segments):
        cond.append(np.full(idx.size, c, dtype=np.int64))
        clip.append(idx.astype(np.int64))
        seg.append(np.full(idx.size, k, dtype=np.int64))
        pos.append(np.arange(idx.size, dtype=np.int64))
    if not cond:
        empty = np.zeros(0, dtype=np.int64)
        return Stream(empty, empty.copy(), empty.copy(), empty.copy())
    return Stream(
        np.concatenate(cond), np.concatenate(clip), np.concatenate(seg), np.concatenate(pos)
    )


@dataclass(frozen=True)
class PositionAccuracy:
    """Accuracy of a stream split by position in segment: the first `head` clips vs the rest."""

    head: int
    n_head: int
    correct_head: int
    n_rest: int
    correct_rest: int

    @property
    def acc_head(self) -> float:
        return self.correct_head / self.n_head if self.n_head else float("nan")

    @property
    def acc_rest(self) -> float:
        return self.correct_rest / self.n_rest if self.n_rest else float("nan")

    @property
    def acc(self) -> float:
        n = self.n_head + self.n_rest
        return (self.correct_head + self.correct_rest) / n if n else float("nan")


def position_accuracy(
    stream: Stream,
    correct: npt.ArrayLike,
    head: int = HEAD_CLIPS,
    mask: npt.ArrayLike | None = None,
) -> PositionAccuracy:
    """Split ``correct`` (bool per stream clip, play order) into segment head and rest.

    ``mask`` (bool per stream clip) restricts the count, e.g. to one condition family.
    """
    ok = np.asarray(correct, dtype=bool)
    if ok.shape != (len(stream),):
        raise ValueError(f"correct has shape {ok.shape}; the stream has {len(stream)} clips")
    keep = np.ones(len(stream), bool) if mask is None else np.asarray(mask, dtype=bool)
    is_head = stream.position < head
    h, r = keep & is_head, keep & ~is_head
    return PositionAccuracy(
        head, int(h.sum()), int((ok & h).sum()), int(r.sum()), int((ok & r).sum())
    )


def add_stream_arguments(p: argparse.ArgumentParser) -> None:
    """--stream-segment/--stream-order/--stream-seed: the continual protocol
    (codegen.data.streams)."""
    p.add_argument(
        "--stream-segment",
        type=int,
        default=None,
        metavar="N",
        help="the continual protocol: one stream of segments of N clips of one condition, then "
        "a switch, state carried across switches (default: each condition on its own)",
    )
    p.add_argument(
        "--stream-order",
        choices=ORDERS,
        default="random",
        help="segment order with --stream-segment (random: seeded shuffle; grouped: condition "
        "by condition)",
    )
    p.add_argument("--stream-seed", type=int, default=0, help="seed of the segment shuffles")


def stream_from_args(args: argparse.Namespace) -> StreamSpec | None:
    """The stream definition the flags give, None without --stream-segment."""
    if args.stream_segment is None:
        return None
    try:
        return StreamSpec(args.stream_segment, args.stream_order, args.stream_seed)
    except ValueError as exc:
        raise ConfigError(f"--stream-segment/--stream-order/--stream-seed: {exc}") from exc
