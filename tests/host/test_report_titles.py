"""Reports say what ran: the data set they measured (an FSDD run is not titled GSC-C) and the
segments as streamed."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.axes
import matplotlib.figure
import matplotlib.pyplot
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


def _run_report(target: dict[str, object]) -> dict[str, object]:
    """A run report as `codegen run` writes it for a cmvn_select-only run: the device answers
    no no-adapt class of its own (its RESULT carries cmvn_select's), the references do."""
    snrs = ("0", "-5", "-10", "-15", "-20")

    def table(base: float) -> dict[str, dict[str, float]]:
        return {s: {"dog": base - 0.05 * i, "average": base - 0.05 * i} for i, s in enumerate(snrs)}

    per_mode = {"cmvn_select": {w: {"median": 9000.0, "max": 9100} for w in report.STAGES[:3]}}
    return {
        "complete": True,
        "data": {"data": "builtin", "preset": "demo", "path": "out/data/demo"},
        "target": target,
        "model": {"model": "ab" * 32, "config": "cd" * 32},
        "samples": {
            "selected": 10,
            "answered": 10,
            "modes": ["cmvn_select"],
            "conditions": 5,
            "distinct_utterances": 10,
            "available_utterances": 10,
            "streams": "one per mode",
            "stream_definition": None,
            "segments_as_streamed": {"segments": 1, "min": 12, "max": 12},
        },
        "bit_exact": {"compared": 10, "mismatches": 0, "fields": {}, "first_mismatch": None},
        "accuracy": {
            "float": {"no_adapt": table(0.6), "cmvn_select": table(0.7)},
            "fixed": {"no_adapt": table(0.6), "cmvn_select": table(0.7)},
            "device": {"no_adapt": {}, "cmvn_select": table(0.7)},
        },
        "by_position": {
            t: {
                "no_adapt": {} if t == "device" else {"first_10": 0.5, "rest": 0.55},
                "cmvn_select": {"first_10": 0.6, "rest": 0.65},
            }
            for t in report.TARGETS
        },
        "ticks": {
            **{w: {"median": 9000.0, "max": 9100} for w in report.STAGES[:3]},
            "per_mode": per_mode,
            "unit": "QEMU icount ticks",
        },
        "memory": {},
        "run": {"jobs": 1, "samples_per_s": 3.0, "retransmits": 0, "replayed": 0},
    }


def _data_axes(fig: matplotlib.figure.Figure) -> list[matplotlib.axes.Axes]:
    return [ax for ax in fig.axes if ax.lines or ax.patches or ax.collections]


def _assert_no_legend_over_data(fig: matplotlib.figure.Figure) -> None:
    """Every legend's box, as drawn, lies outside every axes that holds data."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    legends = [*fig.legends, *(lg for ax in fig.axes if (lg := ax.get_legend()) is not None)]
    assert legends, "the figure has no legend"
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in _data_axes(fig):
            assert not box.overlaps(ax.get_window_extent(renderer)), ax.get_title()


def test_run_figure_panels_ticks_only_at_measured_snrs_and_legend_apart() -> None:
    rep = _run_report({"kind": "qemu", "machine": "xilinx-zynq-a9", "uart": 0, "icount": True})
    fig = report.figure(
        rep["accuracy"],  # type: ignore[arg-type]
        ["no_adapt", "cmvn_select"],
        "GSC-C (built-in)",
        ticks=rep["ticks"],  # type: ignore[arg-type]
        by_position=rep["by_position"],  # type: ignore[arg-type]
    )
    titles = [ax.get_title() for ax in _data_axes(fig)]
    assert titles[0].startswith("GSC-C (built-in) accuracy vs SNR")
    assert any(t.startswith("cost per stage") for t in titles)
    assert any(t.startswith("accuracy by position in a segment") for t in titles)
    acc_ax = _data_axes(fig)[0]
    labels = [t.get_text() for t in acc_ax.get_xticklabels()]
    assert labels == ["-20", "-15", "-10", "-5", "0"]  # no -17.5, no clean point measured
    # float, fixed and device as three marker shapes
    assert {ln.get_marker() for ln in acc_ax.lines} == {"o", "s", "x"}
    _assert_no_legend_over_data(fig)
    matplotlib.pyplot.close(fig)


def test_eval_figure_has_a_clean_point(tmp_path: Path) -> None:
    acc = {"float": {"no_adapt": {"-10": {"average": 0.4}, "-20": {"average": 0.3}}}}
    fig = report.figure(acc, ["no_adapt"], "FSDD", clean={"float": {"no_adapt": 0.9}})
    ax = _data_axes(fig)[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["-20", "-10", "clean"]
    _assert_no_legend_over_data(fig)
    matplotlib.pyplot.close(fig)


def test_tables_show_only_what_ran_and_name_the_target() -> None:
    socket = _run_report({"kind": "socket", "port": ["socket://127.0.0.1:5555"], "baud": "auto"})
    md = report.format_markdown(socket)
    assert "Target: socket `socket://127.0.0.1:5555`" in md and "serial" not in md
    assert "–" not in md  # no row of dashes for what the device did not answer
    assert "| device | no-adapt |" not in md and "| fixed | no-adapt |" in md
    serial = _run_report({"kind": "serial", "port": ["/dev/ttyUSB1"], "baud": 921600})
    md = report.format_markdown(serial)
    assert (
        "Target: serial port `/dev/ttyUSB1` (opened at the build's baud rate, then switched to "
        "921600)" in md
    )
