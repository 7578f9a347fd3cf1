"""INFER / RESULT / RESET codec (host/infer.py, docs/protocol.md "Model runtime"): layouts,
round trips, size checks, and the comparison against the reference."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from host.infer import (
    COMPARED_FIELDS,
    InferResult,
    decode_result,
    encode_infer,
    encode_reset,
    mode_index,
    parse_description,
)
from host.run import compare, per_condition_counts, shard


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
    assert len(payload) == 40 + 4 * 2 + 4 * 12 + 2 * 32
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


def test_selection_and_shards() -> None:
    assert per_condition_counts(50, [60] * 50, 100) == [2] * 50
    assert per_condition_counts(4, [60] * 4, 10) == [3, 3, 2, 2]
    assert per_condition_counts(4, [60] * 4, 2) == [1, 1, 1, 1]  # every condition present
    assert per_condition_counts(2, [3, 60], 100) == [3, 50]
    assert per_condition_counts(2, [3, 5], None) == [3, 5]

    class S:
        def __init__(self, n: int) -> None:
            self.n = n

        def __len__(self) -> int:
            return self.n

    streams = tuple(S(n) for n in (5, 5, 5, 5, 10))
    blocks = shard(streams, 2)  # type: ignore[arg-type]
    assert [len(b) for b in blocks] == [3, 2]  # contiguous, whole streams
    assert [s for b in blocks for s in b] == list(streams)
