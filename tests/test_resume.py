"""--resume trusts nothing recorded: every line of results.jsonl is checked against the integer
reference and the file's own integrity (one line per sample, parseable, of this run), what
does not hold is reported and redone on the device, from the state the reference assumes.
Pure Python: the device is tests/fakedevice.py, whose RESULTs depend on its state as the
firmware's do, so a redo from the wrong state would show as a mismatch."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from elatta_host.plan import Plan, RunError, make_plan
from elatta_host.report import format_summary
from elatta_host.run import REJECTED, DeviceSpec, RunOutcome, execute, read_results
from fakedevice import FakeDevice
from qemukit import check_complete

from codegen.data.streams import StreamSpec

# one long stream per mode, so a hole can sit mid-stream with state before and after it
MODES = ("continual_bounded", "cmvn", "strict")
TARGET = {"kind": "serial"}


@pytest.fixture(scope="module")
def plan(kws_build: tuple[Path, Path]) -> Plan:
    build_dir, data = kws_build
    return make_plan(build_dir, data, MODES, 24, StreamSpec(segment_len=3, order="random", seed=1))


def stable(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in ("run", "ticks", "target")}


def run(plan: Plan, out: Path, *, resume: bool) -> tuple[RunOutcome, FakeDevice]:
    with FakeDevice(plan) as dev:
        got = execute(plan, [DeviceSpec("fake", url=dev.url)], out, resume=resume,
                      target=TARGET, progress=False)  # fmt: skip
    assert got.errors == (), got.errors
    assert not dev.wrong_state, (
        f"asked from a state the reference does not assume: {dev.wrong_state}"
    )
    return got, dev


@pytest.fixture(scope="module")
def baseline(plan: Plan, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("baseline")
    got, dev = run(plan, out, resume=False)
    check_complete(got.report, out, plan.total)
    assert set(dev.served.values()) == {1}  # every sample run once on the device
    return out, got.report


def _lines(out: Path) -> list[bytes]:
    return (out / "results.jsonl").read_bytes().splitlines(keepends=True)


def _copy(baseline: Path, out: Path, edit: Callable[[list[bytes]], list[bytes]]) -> None:
    out.mkdir()
    (out / "run.json").write_bytes((baseline / "run.json").read_bytes())
    (out / "results.jsonl").write_bytes(b"".join(edit(_lines(baseline))))


def _mid(lines: list[bytes], mode: str) -> int:
    """The line of a sample in the middle of ``mode``'s stream (state before and after it)."""
    rows = [n for n, ln in enumerate(lines) if json.loads(ln)["stream"].startswith(mode + "/")]
    return rows[len(rows) // 2]


def _forge(line: bytes) -> bytes:
    """The same sample, another class: pred moved on and its logit raised to match."""
    d = json.loads(line)
    r = d["result"]
    c = len(r["logits"])
    r["pred"] = (r["pred"] + 1) % c
    r["logits"][r["pred"]] = max(r["logits"]) + 1
    return json.dumps(d, separators=(",", ":")).encode() + b"\n"


def _sample(line: bytes) -> tuple[str, int]:
    d = json.loads(line)
    return d["stream"], d["index"]


CASES: dict[str, Callable[[list[bytes], int], list[bytes]]] = {
    "changed-pred-and-logit": lambda ls, j: [*ls[:j], _forge(ls[j]), *ls[j + 1 :]],
    "wrong-duplicate-first": lambda ls, j: [*ls[:j], _forge(ls[j]), *ls[j:]],
    "deleted-middle-line": lambda ls, j: [*ls[:j], *ls[j + 1 :]],
    "non-json-line": lambda ls, j: [*ls[:j], b'{"stream": "continual_bounded/str\n', *ls[j:]],
}
# what the resume must report about the edited line (None: a deleted line is simply redone)
REPORTED = {
    "changed-pred-and-logit": "pred, logits differ from the integer reference",
    "wrong-duplicate-first": "is named by 2 lines",
    "deleted-middle-line": None,
    "non-json-line": "not JSON",
}


@pytest.mark.parametrize("mode", ["continual_bounded", "cmvn"])
@pytest.mark.parametrize("case", list(CASES))
def test_resume_checks_every_recorded_line(
    plan: Plan,
    baseline: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    case: str,
    mode: str,
) -> None:
    base, report = baseline
    out = tmp_path / "r"
    j = _mid(_lines(base), mode)
    edited = _sample(_lines(base)[j])
    _copy(base, out, lambda ls: CASES[case](ls, j))
    got, dev = run(plan, out, resume=True)
    check_complete(got.report, out, plan.total)  # one line per sample, each equal to the reference
    assert stable(got.report) == stable(report)
    problems = got.report["run"]["resume"]["problems"]
    if REPORTED[case] is None:
        assert problems == []
    else:
        assert len(problems) == (2 if case == "wrong-duplicate-first" else 1), problems
        assert all(REPORTED[case] in p for p in problems), problems
        assert (out / REJECTED).is_file()
    redone = case != "non-json-line"  # a non-JSON line names no sample: nothing is missing
    assert dev.served[edited] == redone  # redone on the device, once
    summary = format_summary(got.report)
    assert summary.startswith(f"BIT-EXACT: {plan.total} results compared, 0 mismatches")
    if problems:
        assert f"({len(problems)} recorded lines did not hold on resume" in summary


def test_resume_of_a_clean_file_redoes_nothing(
    plan: Plan, baseline: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    base, report = baseline
    out = tmp_path / "r"
    _copy(base, out, lambda ls: ls)
    got, dev = run(plan, out, resume=True)
    assert not dev.served and got.report["run"]["resume"]["rejected"] == 0
    assert (out / "results.jsonl").read_bytes() == (base / "results.jsonl").read_bytes()
    assert stable(got.report) == stable(report)


def test_a_forged_line_is_never_reported_bit_exact_unchecked(
    plan: Plan, baseline: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """A forged line that even claims its own mismatches are none is checked, not believed."""
    base, _ = baseline
    out = tmp_path / "r"
    _copy(base, out, lambda ls: [_forge(ln) for ln in ls])
    got, dev = run(plan, out, resume=True)
    check_complete(got.report, out, plan.total)
    assert got.report["run"]["resume"]["rejected"] == plan.total
    assert sum(dev.served.values()) == plan.total
    kept = read_results(out / "results.jsonl")
    assert len(kept) == plan.total


@pytest.mark.parametrize("spelling", ["relative-then-absolute", "absolute-then-relative"])
def test_the_same_data_spelled_otherwise_is_the_same_run(
    plan: Plan,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    spelling: str,
) -> None:
    """--data as an absolute or a relative path (or through a symlink) is the same run."""
    monkeypatch.chdir(tmp_path)
    absolute = Path(plan.data_info["path"]).resolve()
    os.symlink(absolute, tmp_path / "data-link")
    relative = os.path.relpath(absolute, tmp_path)
    first, second = (relative, "data-link") if spelling.startswith("rel") else (absolute, relative)
    out = tmp_path / "r"
    a = dataclasses.replace(plan, data_info={**plan.data_info, "path": str(first)})
    b = dataclasses.replace(plan, data_info={**plan.data_info, "path": str(second)})
    lines = plan.total // 2
    run(a, out, resume=False)
    (out / "results.jsonl").write_bytes(b"".join(_lines(out)[:lines]))
    got, dev = run(b, out, resume=True)
    assert got.report["run"]["resumed_from"] == lines and got.report["complete"]
    # another data set is still another run
    other = dataclasses.replace(plan, data_info={**plan.data_info, "path": str(tmp_path)})
    with pytest.raises(RunError, match=r"holds another run \(data differ"):
        run(other, out, resume=True)
