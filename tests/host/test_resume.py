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


# ----------------------------------------------------------------------------- the directory


def _clone(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".lock"))
    return dst


def test_forged_measurements_are_reported_and_redone(
    plan: Plan, baseline: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """Every line's ticks halved (a forged cost report): each line's digest fails, each sample
    is reported and redone on the device, and the report shows the device's ticks again."""
    src, report0 = baseline
    out = _clone(src, tmp_path / "r")
    lines = (out / "results.jsonl").read_text().splitlines()
    forged = []
    for line in lines:
        d = json.loads(line)
        for k in list(d["result"]):
            if k.startswith("ticks_") and d["result"][k]:
                d["result"][k] //= 2
        forged.append(json.dumps(d, separators=(",", ":")))
    (out / "results.jsonl").write_text("\n".join(forged) + "\n")
    got, dev = run(plan, out, resume=True)
    problems = got.report["run"]["resume"]["problems"]
    assert len(problems) == min(len(lines), 20)
    assert all("digest does not hold" in p for p in problems)
    assert sum(dev.served.values()) == plan.total  # every sample measured again
    assert got.report["ticks"] == report0["ticks"]


@pytest.mark.parametrize("target", ["/dev/zero", "outside"])
def test_results_file_must_be_a_regular_file_inside(
    plan: Plan, baseline: tuple[Path, dict[str, Any]], tmp_path: Path, target: str
) -> None:
    """results.jsonl a symlink (to /dev/zero, to a file elsewhere): refused, naming the link,
    nothing written through it."""
    from elatta_host.reportdir import ReportDirError

    out = _clone(baseline[0], tmp_path / "r")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    dest = Path("/dev/zero") if target == "/dev/zero" else victim
    (out / "results.jsonl").unlink()
    (out / "results.jsonl").symlink_to(dest)
    with pytest.raises(ReportDirError, match=r"results.jsonl is a symbolic link .*remove the link"):
        run(plan, out, resume=True)
    assert victim.read_text() == "keep me\n"


def test_an_overlong_line_is_rejected_without_being_held(
    plan: Plan, baseline: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """A 3 MiB line: reported by its length and rejected; results.rejected.jsonl keeps its start
    only; the rest of the file holds."""
    from elatta_host.reportdir import MAX_LINE

    out = _clone(baseline[0], tmp_path / "r")
    with open(out / "results.jsonl", "a") as f:
        f.write('{"stream":"' + "x" * (3 * MAX_LINE) + '"}\n')
    got, _ = run(plan, out, resume=True)
    problems = got.report["run"]["resume"]["problems"]
    assert len(problems) == 1 and "bytes (a record is about a kilobyte" in problems[0]
    assert (out / REJECTED).stat().st_size < 10_000
    check_complete(got.report, out, plan.total)


def test_one_run_per_report_directory(plan: Plan, tmp_path: Path) -> None:
    """A run holding the directory (another process): a second one is refused, naming it; once
    that process is gone its lock file is stale and taken over."""
    import subprocess
    import sys

    from elatta_host.reportdir import ReportDirError

    out = tmp_path / "r"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from elatta_host.reportdir import Lock\n"
         "with Lock(Path(sys.argv[1]), 'codegen run --report first'):\n"
         "    print('held', flush=True); time.sleep(60)", str(out)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        held = rf"in use by pid {holder.pid} on .*--report first"
        with pytest.raises(ReportDirError, match=held):
            run(plan, out, resume=False)
    finally:
        holder.kill()
        holder.wait()
    # the holder died: its lock file is left, its flock gone
    assert json.loads((out / ".lock").read_text())["pid"] == holder.pid
    got, _ = run(plan, out, resume=False)
    check_complete(got.report, out, plan.total)
