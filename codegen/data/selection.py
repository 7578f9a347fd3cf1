"""Which test clips a limited run streams: every condition, as many distinct utterances as fit.

A GSC-C test condition holds the same test utterances mixed with one noise at one SNR. A run
limited to N samples over M conditions takes about N / M clips per condition; if every condition
took the same clips, the whole run would measure N / M utterances many times over. Instead one
seeded, class-stratified order of all utterances (round-robin over the classes, each class
shuffled) is dealt out across the conditions like cards: condition 1 takes the first n₁
utterances, condition 2 the next n₂, and so on, wrapping around once the order is used up. The
union covers min(N, number of utterances) distinct utterances and every class within one clip
of evenly.

The module is pure (numpy only) so the serial bench and the evaluators share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def stream_order(n: int, limit: int | None, seed: int) -> IntArray:
    """The evaluators' clip order for one condition (`codegen eval`): a seeded permutation of
    its n clips, cut to ``limit`` (the same permutation for every condition of a data set)."""
    perm = np.random.default_rng([seed, 0x5EED]).permutation(n)
    return perm if limit is None else perm[: min(limit, n)]


def per_condition_counts(sizes: Sequence[int], limit: int | None) -> list[int]:
    """Clips per condition: all of them, or ``limit`` spread evenly over the conditions (the
    first ``limit % M`` take one more), at least one each so every noise and SNR is present."""
    if limit is None:
        return [int(s) for s in sizes]
    if limit < 1:
        raise ValueError(f"limit={limit}: use a positive number of samples")
    base, rem = divmod(int(limit), len(sizes))
    return [min(int(s), max(1, base + (1 if i < rem else 0))) for i, s in enumerate(sizes)]


def stratified_order(ids: npt.ArrayLike, labels: npt.ArrayLike, seed: int) -> IntArray:
    """All utterance ids in one seeded order that interleaves the classes: position j holds
    class j mod (classes with utterances left), each class's utterances shuffled by ``seed``."""
    ids_a = np.asarray(ids, dtype=np.int64)
    lab = np.asarray(labels, dtype=np.int64)
    if ids_a.shape != lab.shape or ids_a.ndim != 1:
        raise ValueError(f"ids {ids_a.shape} and labels {lab.shape} must be equal 1-D shapes")
    rng = np.random.default_rng([int(seed), 0x5E1EC7])
    per_class = [rng.permutation(ids_a[lab == c]) for c in np.unique(lab)]
    rank = np.concatenate([np.arange(len(p)) for p in per_class])
    cls = np.concatenate([np.full(len(p), i) for i, p in enumerate(per_class)])
    flat = np.concatenate(per_class) if per_class else ids_a[:0]
    order = np.lexsort((cls, rank))  # rank-major, class-minor: a round-robin over classes
    return flat[order]


@dataclass(frozen=True)
class Dealt:
    """The rows each condition streams (indices into that condition's clip arrays, in stream
    order) and how many distinct utterances the union covers."""

    rows: tuple[IntArray, ...]
    distinct: int
    available: int


def deal(
    cond_ids: Sequence[npt.ArrayLike],
    cond_labels: Sequence[npt.ArrayLike],
    limit: int | None,
    seed: int,
) -> Dealt:
    """Choose each condition's clips (see the module doc). ``cond_ids[c]`` are the utterance
    keys of condition c's clips (the clean clip each was mixed from, the same key under every
    condition); an utterance a condition lacks is skipped for that condition."""
    if len(cond_ids) != len(cond_labels) or not cond_ids:
        raise ValueError("one ids and one labels array per condition, at least one condition")
    all_ids = np.concatenate([np.asarray(i, np.int64) for i in cond_ids])
    all_lab = np.concatenate([np.asarray(lb, np.int64) for lb in cond_labels])
    uniq, first = np.unique(all_ids, return_index=True)
    order = stratified_order(uniq, all_lab[first], seed)
    counts = per_condition_counts([len(np.asarray(i)) for i in cond_ids], limit)
    cursor = 0
    rows: list[IntArray] = []
    used: set[int] = set()
    for ids, n in zip(cond_ids, counts, strict=True):
        ids_a = np.asarray(ids, np.int64)
        where = {int(v): r for r, v in enumerate(ids_a)}
        take: list[int] = []
        tried = 0
        while len(take) < n and tried < len(order):
            u = int(order[cursor % len(order)])
            cursor += 1
            tried += 1
            r = where.get(u)
            if r is not None and r not in take:
                take.append(r)
        rows.append(np.asarray(take, dtype=np.int64))
        used.update(int(ids_a[r]) for r in take)
    return Dealt(tuple(rows), len(used), len(uniq))
