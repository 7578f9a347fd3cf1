"""Continual stream protocol (`codegen.data.streams`) and `codegen eval --stream-segment`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from codegen.cli import main
from codegen.data import build
from codegen.data.streams import StreamSpec, build_stream, position_accuracy


def test_stream_covers_every_pair_once_in_segments() -> None:
    counts = [23, 0, 7, 50]
    for order in ("random", "grouped"):
        st = build_stream(counts, StreamSpec(segment_len=10, order=order, seed=3))
        assert len(st) == sum(counts)
        pairs = set(zip(st.condition.tolist(), st.clip.tolist(), strict=True))
        assert pairs == {(c, i) for c, n in enumerate(counts) for i in range(n)}
        for k in np.unique(st.segment):
            sel = st.segment == k
            assert len(set(st.condition[sel].tolist())) == 1  # one condition per segment
            assert st.position[sel].tolist() == list(range(int(sel.sum())))
            assert sel.sum() <= 10
        # segments are contiguous in play order
        assert np.all(np.diff(st.segment) >= 0) and np.all(np.diff(st.segment) <= 1)
    grouped = build_stream(counts, StreamSpec(10, "grouped", 3))
    assert np.all(np.diff(grouped.condition) >= 0)


def test_stream_is_seeded() -> None:
    a = build_stream([40, 40, 40], StreamSpec(10, "random", 1))
    b = build_stream([40, 40, 40], StreamSpec(10, "random", 1))
    c = build_stream([40, 40, 40], StreamSpec(10, "random", 2))
    assert np.array_equal(a.condition, b.condition) and np.array_equal(a.clip, b.clip)
    assert not (np.array_equal(a.condition, c.condition) and np.array_equal(a.clip, c.clip))


def test_position_accuracy_splits_head_and_rest() -> None:
    st = build_stream([30], StreamSpec(15, "grouped", 0))
    correct = st.position >= 10  # wrong in the first 10 clips of each segment, right after
    pa = position_accuracy(st, correct)
    assert (pa.n_head, pa.correct_head, pa.n_rest, pa.correct_rest) == (20, 0, 10, 10)
    assert pa.acc == pytest.approx(10 / 30)


@pytest.mark.parametrize("bad", [{"segment_len": 0}, {"order": "sorted"}, {"seed": -1}])
def test_spec_rejects_bad_values(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        StreamSpec(**bad)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    work = tmp_path_factory.mktemp("stream_eval")
    data, model, basis = work / "data", work / "model.pt", work / "basis.npz"
    build(data, preset="tiny", tier="numpy", progress=False)
    train = ["--epochs", "1", "--copies", "2", "--no-progress", "--threads", "1"]
    assert main(["train", "--data", str(data), "--out", str(model), *train]) == 0
    argv = ["basis", "--model", str(model), "--data", str(data), "--n", "20"]
    assert main([*argv, "--out", str(basis)]) == 0
    return data, model, basis


def test_strict_does_not_depend_on_the_stream(
    tiny_model: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    data, model, basis = tiny_model
    reports = []
    for extra in ([], ["--stream-segment", "3", "--stream-seed", "0"], ["--stream-segment", "5"]):
        out = tmp_path / f"r{len(reports)}"
        argv = ["eval", "--model", str(model), "--basis", str(basis), "--data", str(data)]
        argv += ["--report", str(out), "--limit", "8", "--seeds", "2", "--no-progress"]
        argv += ["--elatta", "--sigma0", "0.05", "--beta", "0.5", "--radius", "1.0"]
        assert main(argv + extra) == 0
        reports.append(json.loads((out / "report.json").read_text()))
    for r in reports[1:]:
        assert r["float"]["strict"] == reports[0]["float"]["strict"]
        assert r["float"]["no_adapt"] == reports[0]["float"]["no_adapt"]
        st = r["stream"]
        assert st["clips"] == 8 * 58 and set(st["continual_bounded"]) >= {"head", "rest", "all"}
        assert set(st["cmvn_select"]) >= {"head", "rest", "all"}  # an input stage on the stream
        assert "continual" not in st  # the unbounded mode only runs when asked for
    # the continual modes do see the stream: their state crosses condition boundaries
    assert reports[1]["stream"]["spec"]["segment_len"] == 3
    assert reports[0]["stream"] == {}
