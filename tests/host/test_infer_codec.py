"""INFER / RESULT / RESET codec (host/infer.py, docs/protocol.md "Model runtime"): layouts,
round trips, size checks, and the comparison against the reference."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from elatta_host.infer import (
    COMPARED_FIELDS,
    InferResult,
    decode_result,
    encode_infer,
    encode_reset,
    mode_index,
    parse_description,
)
from elatta_host.run import compare, shard

from codegen.data.selection import deal, per_condition_counts


def sample_result(C: int = 12, k: int = 2, H: int = 32) -> InferResult:
    return InferResult(
        0xDEADBEEF,
        3,
        4,
        5,
        -7,
        123456,
        1,
        10,
        20,
        35,
        tuple(range(-k, 0)),
        tuple(range(C)),
        tuple(range(-C, 0)),
        tuple(range(100, 100 + H)),
        ticks_link=4321,
        link_bytes=1002,
    )


def pack(r: InferResult, C: int, k: int, H: int) -> bytes:
    return (
        struct.pack(
            "<IBBBBiiiiiIII",
            r.sample_id,
            r.mode,
            C,
            k,
            H,
            r.pred_noadapt,
            r.pred,
            r.H_noadapt,
            r.H_best,
            r.n_pivot_fix,
            r.ticks_encoder,
            r.ticks_adapt,
            r.ticks_total,
        )
        + struct.pack(f"<{k}i", *r.p_best)
        + struct.pack(f"<{C}h", *r.logits_noadapt)
        + struct.pack(f"<{C}h", *r.logits)
        + struct.pack(f"<{H}h", *r.z)
        + struct.pack("<II", r.ticks_link, r.link_bytes)
    )


def test_infer_layout() -> None:
    x = np.arange(49 * 10, dtype=np.int16).reshape(49, 10) - 245
    p = encode_infer(0x01020304, mode_index("continual_bounded"), x)
    assert len(p) == 9 + 2 * 490
    assert p[:9] == bytes([4, 3, 2, 1, 3, 49, 0, 10, 0])
    assert np.array_equal(np.frombuffer(p[9:], "<i2").reshape(49, 10), x)
    with pytest.raises(ValueError):
        encode_infer(1, 1, x.astype(np.int32))
    with pytest.raises(ValueError):
        mode_index("sometimes")


def test_result_round_trip_and_sizes() -> None:
    r = sample_result()
    payload = pack(r, 12, 2, 32)
    assert len(payload) == 40 + 4 * 2 + 4 * 12 + 2 * 32 + 8
    got = decode_result(payload)
    assert got == r
    assert InferResult.from_json(got.to_json()) == r
    for bad in (payload[:-1], payload + b"\0", payload[:20]):
        with pytest.raises(ValueError):
            decode_result(bad)


def test_reset_and_description() -> None:
    assert encode_reset() == b""
    assert encode_reset((1, -1)) == struct.pack("<ii", 1, -1)
    app = parse_description(b"model=abc T=49 F=10 mode=strict")
    assert app.shape() == (49, 10) and app.get("model") == "abc" and app.get("x") is None
    with pytest.raises(ValueError):
        parse_description(b"").shape()


def test_compare_names_every_differing_field() -> None:
    r = sample_result()
    want = r.compared()
    assert compare(r, want) == []
    want = {**want, "z": (0,) * 32, "H_best": 1}
    assert [f for f, _, _ in compare(r, want)] == ["H_best", "z"]
    assert "ticks_total" not in COMPARED_FIELDS
    assert "ticks_link" not in COMPARED_FIELDS and "link_bytes" not in COMPARED_FIELDS


def test_selection_and_shards() -> None:
    assert per_condition_counts([60] * 50, 100) == [2] * 50
    assert per_condition_counts([60] * 4, 10) == [3, 3, 2, 2]
    assert per_condition_counts([60] * 4, 2) == [1, 1, 1, 1]  # every condition present
    assert per_condition_counts([3, 60], 100) == [3, 50]
    assert per_condition_counts([3, 5], None) == [3, 5]

    class S:
        def __init__(self, n: int) -> None:
            self.n = n

        def __len__(self) -> int:
            return self.n

    streams = tuple(S(n) for n in (5, 5, 5, 5, 10))
    blocks = shard(streams, 2)  # type: ignore[arg-type]
    assert [len(b) for b in blocks] == [3, 2]  # contiguous, whole streams
    assert [s for b in blocks for s in b] == list(streams)


def test_deal_covers_distinct_utterances_stratified() -> None:
    """50 conditions holding the same 504 utterances of 12 classes: 600 samples cover all 504
    utterances; 100 samples cover 100 distinct ones, every class 8 or 9 times."""
    rng = np.random.default_rng(0)
    ids = rng.permutation(10_000)[:504]
    labels = np.arange(504) % 12
    conds_ids = [rng.permutation(ids) for _ in range(50)]
    lab_of = dict(zip(ids.tolist(), labels.tolist(), strict=True))
    conds_lab = [np.array([lab_of[int(i)] for i in c]) for c in conds_ids]
    d = deal(conds_ids, conds_lab, 600, seed=3)
    assert (d.distinct, d.available) == (504, 504)
    assert sum(len(r) for r in d.rows) == 600
    d = deal(conds_ids, conds_lab, 100, seed=3)
    assert d.distinct == 100
    chosen = np.concatenate([c[r] for c, r in zip(conds_ids, d.rows, strict=True)])
    per_class = np.bincount([lab_of[int(i)] for i in chosen], minlength=12)
    assert per_class.min() >= 8 and per_class.max() <= 9
    other = deal(conds_ids, conds_lab, 100, seed=4).rows
    assert not np.array_equal(np.concatenate(other), np.concatenate(d.rows))  # seed matters
    # a condition that lacks an utterance skips it; no row repeats inside a condition
    short = [c[:5] for c in conds_ids[:3]]
    d = deal(short, [lab[:5] for lab in conds_lab[:3]], 30, seed=0)
    assert all(len(set(r.tolist())) == len(r) == 5 for r in d.rows)
