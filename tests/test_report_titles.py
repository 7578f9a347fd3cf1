"""Reports say what ran: the data set they measured (an FSDD run is not titled GSC-C) and the
segments as streamed."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest
from elatta_host import report

matplotlib.use("Agg")


@pytest.mark.parametrize(
    ("kind", "name"),
    [("fsdd", "FSDD"), ("builtin", "GSC-C (built-in)"), ("gsc", "GSC-C (GSC v2 + ESC-50)")],
)
def test_dataset_name(kind: str, name: str) -> None:
    assert report.dataset_name({"data": kind}) == name


def test_unknown_data_set_is_named_as_it_names_itself() -> None:
    assert report.dataset_name({"data": "my-words"}) == "my-words"
    assert report.dataset_name({}) == "data set"


def test_plot_title_names_the_data_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.axes

    titles: list[str] = []
    real = matplotlib.axes.Axes.set_title

    def spy(self: matplotlib.axes.Axes, label: str, *a: object, **k: object) -> object:
        titles.append(label)
        return real(self, label, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(matplotlib.axes.Axes, "set_title", spy)
    rep = {
        "data": {"data": "fsdd"},
        "accuracy": {"device": {"strict": {"0": {"average": 0.5}}}, "fixed": {}, "float": {}},
        "samples": {"modes": ["strict"]},
    }
    report.plot(rep, tmp_path / "p.png")
    assert titles and titles[0].startswith("FSDD ") and "GSC-C" not in titles[0]


def test_segments_are_counted_as_streamed() -> None:
    """Segments of 12 requested over conditions of 4 clips are 4 clips long as streamed: the
    report counts what the streams hold, not what was asked."""
    from types import SimpleNamespace

    import numpy as np

    streams = [
        SimpleNamespace(positions=np.array([0, 1, 2, 3, 0, 1, 2, 3, 0, 1])),
        SimpleNamespace(positions=np.arange(14)),
    ]
    assert report.segment_lengths(streams) == {"segments": 4, "min": 2, "max": 14}
    assert report.segment_lengths([]) == {"segments": 0, "min": 0, "max": 0}
