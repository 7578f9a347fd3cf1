"""`codegen run` end to end through QEMU: the default model on the tiny data set,
every RESULT field equal to the integer reference in strict, continual (paper) and
continual-bounded modes; --jobs 2 gives the same report; a fault-injecting proxy and a QEMU
killed mid-run change nothing but the run facts. One firmware build per test session.

Runs with QEMU's -icount off (faster link; timer ticks then vary), so reports are compared
without ``run`` (wall clock, re-sends), ``ticks`` and ``target``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from elatta_host.plan import Plan, make_plan
from elatta_host.run import DeviceSpec, execute, read_results
from faultproxy import FaultProxy
from qemukit import check_complete, start_qemu
from repopaths import ROOT
from torchblock import codegen_without_torch

from codegen.ir.modes import DEVICE_MODES
from codegen.pipeline.build import build

pytestmark = pytest.mark.qemu
LIMIT = 100  # per mode: 2 clips of each of the 50 noise x SNR conditions
MODES = ("strict", "continual", "continual_bounded", "cmvn")
TARGET = {"kind": "qemu", "machine": "xilinx-zynq-a9", "icount": False}


@pytest.fixture(scope="module")
def plan(kws_build: tuple[Path, Path]) -> Plan:
    out, data = kws_build
    return make_plan(out, data, MODES, LIMIT)


def qemu_specs(build_dir: Path, jobs: int) -> list[DeviceSpec]:
    return [
        DeviceSpec(f"qemu{j}", elf=build_dir / "fw.elf", icount=False, timeout=2.0)
        for j in range(jobs)
    ]


def stable(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in ("run", "ticks", "target")}


def test_run_all_modes_and_jobs(kws_build: tuple[Path, Path], plan: Plan, tmp_path: Path) -> None:
    build_dir, _ = kws_build
    assert plan.total == LIMIT * len(MODES)
    one = execute(
        plan, qemu_specs(build_dir, 1), tmp_path / "j1", resume=False, target=TARGET, progress=False
    )
    assert one.errors == ()
    check_complete(one.report, tmp_path / "j1", plan.total)
    assert set(one.report["accuracy"]["device"]) == {"no_adapt", *MODES}
    assert one.report["ticks"]["encoder"]["median"] > 0
    for name in ("report.json", "report.md", "report.png"):
        assert (tmp_path / "j1" / name).is_file()
    two = execute(
        plan, qemu_specs(build_dir, 2), tmp_path / "j2", resume=False, target=TARGET, progress=False
    )
    assert two.errors == () and two.report["run"]["jobs"] == 2
    assert stable(two.report) == stable(one.report)


def test_fault_proxy_then_kill_and_resume(kws_build: tuple[Path, Path], tmp_path: Path) -> None:
    build_dir, data = kws_build
    bounded = make_plan(build_dir, data, ("continual_bounded",), LIMIT)
    # 1. Through the proxy: frames dropped, cut, flipped, duplicated, delayed in both directions.
    proc, qport = start_qemu(build_dir / "fw.elf")
    proxy = FaultProxy(qport, seed=5, rate=0.04, delay=0.8)
    try:
        spec = DeviceSpec("proxy", url=f"socket://127.0.0.1:{proxy.port}", timeout=0.5)
        faulty = execute(
            bounded,
            [spec],
            tmp_path / "faults",
            resume=False,
            target={"kind": "qemu"},
            progress=False,
        )
    finally:
        proxy.close()
        proc.kill()
        proc.wait()
    assert faulty.errors == ()
    check_complete(faulty.report, tmp_path / "faults", LIMIT)
    frames = sum(proxy.frames.values())
    assert sum(proxy.faults.values()) >= 0.01 * frames, (proxy.faults, proxy.frames)
    assert len(proxy.faults) >= 4, proxy.faults
    assert faulty.report["run"]["retransmits"] > 0

    # 2. `codegen run` killed mid-run (its QEMU is SIGKILLed), then --resume.
    out = tmp_path / "killed"
    args = [
        "--build",
        str(build_dir),
        "--data",
        str(data),
        "--qemu",
        "--no-icount",
        "--mode",
        "continual_bounded",
        "--limit",
        str(LIMIT),
        "--report",
        str(out),
        "--no-progress",
        "--timeout",
        "0.5",
        "--budget",
        "2",
    ]
    cli = subprocess.Popen(
        [sys.executable, "-m", "codegen", "run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "CODEGEN_NO_PROGRESS": "1"},
    )
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if results.is_file() and len(results.read_bytes().splitlines()) >= 30:
            break
        time.sleep(0.05)
    # QEMU is started by a worker thread: look at the children of every thread.
    children = [
        pid
        for task in Path(f"/proc/{cli.pid}/task").iterdir()
        for pid in (task / "children").read_text().split()
    ]
    assert children, "codegen run has no QEMU child"
    for pid in children:
        os.kill(int(pid), signal.SIGKILL)
    stdout, err = cli.communicate(timeout=60)
    assert cli.returncode == 1, err.decode()
    assert b"stopped answering" in err and b"last good sample: sample id" in err, err.decode()
    # the exact command that continues the run: the same selection and link, --resume
    said = err.decode().rsplit("continue with: ", 1)[-1].strip()
    assert said.startswith("codegen run ") and said.endswith(f"--report {out} --resume"), said
    for part in ("--qemu", "--no-icount", "--mode continual_bounded", f"--limit {LIMIT}"):
        assert f" {part} " in said, said
    done = len(read_results(results))
    assert 30 <= done < LIMIT
    # the incomplete run's report: INCOMPLETE first, never BIT-EXACT; every target over the
    # same answered samples (device == fixed when bit-exact); the dead worker's stats kept
    assert stdout.decode().startswith(f"INCOMPLETE: {done} of {LIMIT} selected samples"), stdout
    assert b"BIT-EXACT" not in stdout
    part = json.loads((out / "report.json").read_text())
    assert not part["complete"] and part["samples"]["answered"] == done
    assert part["accuracy"]["device"] == part["accuracy"]["fixed"]
    assert part["accuracy"]["fixed"] != faulty.report["accuracy"]["fixed"]  # a subset
    (worker,) = part["run"]["workers"]
    assert worker["samples"] == done and "stopped answering" in worker["error"]
    assert worker["stack_used"] > 0 and worker["replayed"] is None
    resumed = execute(
        bounded, qemu_specs(build_dir, 1), out, resume=True, target={"kind": "qemu"}, progress=False
    )
    assert resumed.errors == ()
    assert resumed.report["run"]["resumed_from"] == done
    check_complete(resumed.report, out, LIMIT)
    assert stable(resumed.report) == stable(faulty.report)
    assert json.loads((out / "report.json").read_text())["samples"]["answered"] == LIMIT


def test_cmvn_resume_replays_the_recorded_prefix(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """RESET cannot carry cmvn's running statistics: a resumed cmvn stream first replays its
    recorded clips (checked, not recorded again) and then continues bit-exactly."""
    import shutil

    build_dir, data = kws_build
    plan = make_plan(build_dir, data, ("cmvn",), 150)  # 3 clips per condition
    full = execute(
        plan,
        qemu_specs(build_dir, 1),
        tmp_path / "full",
        resume=False,
        target=TARGET,
        progress=False,
    )
    check_complete(full.report, tmp_path / "full", plan.total)
    cut = tmp_path / "cut"
    cut.mkdir()
    shutil.copy(tmp_path / "full" / "run.json", cut / "run.json")
    lines = (tmp_path / "full" / "results.jsonl").read_bytes().splitlines(keepends=True)
    longest = max(plan.streams, key=len)
    keep = [ln for ln in lines if json.loads(ln)["stream"] != longest.key]
    keep += [ln for ln in lines if json.loads(ln)["stream"] == longest.key][: len(longest) // 2]
    (cut / "results.jsonl").write_bytes(b"".join(keep))
    assert len(longest) >= 2
    resumed = execute(
        plan, qemu_specs(build_dir, 1), cut, resume=True, target=TARGET, progress=False
    )
    assert resumed.errors == ()
    assert resumed.report["run"]["resumed_from"] == len(keep)
    check_complete(resumed.report, cut, plan.total)
    assert stable(resumed.report) == stable(full.report)


def test_continual_stream_protocol(
    kws_build: tuple[Path, Path], plan: Plan, tmp_path: Path
) -> None:
    """--stream-segment: each mode is one stream of segments over every condition, state carried
    across switches, bit-exact on the device; strict results do not depend on the stream."""
    from codegen.data.streams import StreamSpec

    build_dir, data = kws_build
    spec = StreamSpec(segment_len=1, order="random", seed=3)
    streamed = make_plan(build_dir, data, ("strict", "cmvn"), LIMIT, spec)
    assert [s.key for s in streamed.streams] == ["strict/stream", "cmvn/stream"]
    assert len({str(n) for n in streamed.streams[1].noises[:10]}) > 1  # conditions interleave
    out = execute(
        streamed,
        qemu_specs(build_dir, 2),
        tmp_path / "s",
        resume=False,
        target=TARGET,
        progress=False,
    )
    assert out.errors == ()
    check_complete(out.report, tmp_path / "s", streamed.total)
    assert out.report["samples"]["stream_definition"] == {
        "segment_len": 1,
        "order": "random",
        "seed": 3,
    }
    assert set(out.report["by_position"]["device"]["cmvn"]) == {"first_10"}  # segments of 1
    per_cond = {s.key: s for s in plan.streams if s.mode == "strict"}
    strict_by_id = {
        int(i): int(p) for s in per_cond.values() for i, p in zip(s.ids, s.ref["pred"], strict=True)
    }
    s0 = streamed.streams[0]
    assert {int(i): int(p) for i, p in zip(s0.ids, s0.ref["pred"], strict=True)} == strict_by_id
    # cmvn's state crosses switches: the same clips in another order give other integers
    cm_cond = [s for s in plan.streams if s.mode == "cmvn"]
    by_id = {int(i): row for s in cm_cond for i, row in zip(s.ids, s.ref["z"], strict=True)}
    s1 = streamed.streams[1]
    assert any(
        not np.array_equal(by_id[int(i)], z) for i, z in zip(s1.ids, s1.ref["z"], strict=True)
    )


def test_runtime_checks_payloads_and_replays(kws_build: tuple[Path, Path], plan: Plan) -> None:
    """INFO describes the model; bad INFER/RESET payloads get ERROR(PAYLOAD); a repeated seq is
    answered from the replay record without advancing the continual state."""
    from elatta_host.device import Device
    from elatta_host.errors import DeviceError
    from elatta_host.infer import decode_result, encode_infer, parse_description
    from elatta_host.protocol import Err, Frame, Msg
    from elatta_host.qemu import Qemu

    build_dir, _ = kws_build
    s = next(st for st in plan.streams if st.mode == "continual")
    with Qemu(build_dir / "fw.elf", icount=False, link_timeout=5.0) as link:
        dev = Device(link)
        dev.hello(sync_timeout=10)
        app = parse_description(dev.hello().app)
        assert app.shape() == (49, 10) and app.get("k") == "2" and app.get("lam") == "6"
        manifest = json.loads((build_dir / "manifest.json").read_text())
        assert app.get("model") == manifest["inputs"]["model"]["sha256"][:16]
        good = encode_infer(int(s.ids[0]), 2, s.x[0])
        bad_payloads = [
            (Msg.INFER, good[:-2]),  # short
            (Msg.INFER, good + b"\0\0"),  # long
            (Msg.INFER, good[:4] + bytes([len(DEVICE_MODES)]) + good[5:]),  # no such mode
            (Msg.INFER, good[:5] + (48).to_bytes(2, "little") + good[7:]),  # T
            (Msg.RESET, b"\1\2\3"),  # neither 0 nor 4k bytes
        ]
        for type_, payload in bad_payloads:
            with pytest.raises(DeviceError) as err:
                link.request(type_, payload, expect=Msg.RESULT)
            assert err.value.code == Err.PAYLOAD
        link.request(Msg.RESET, b"", expect=Msg.RESET_ACK)
        first = link.request(Msg.INFER, good, expect=Msg.RESULT)
        replayed0 = dev.hello().frames_replayed
        # The same frame again (a host retry): the stored RESULT, continual state untouched.
        link.send(Frame(Msg.INFER, first.seq, good))
        again = link.recv(5.0)
        assert again is not None and again.payload == first.payload
        assert dev.hello().frames_replayed == replayed0 + 1
        second = decode_result(
            link.request(
                Msg.INFER, encode_infer(int(s.ids[1]), 2, s.x[1]), expect=Msg.RESULT
            ).payload
        )
        want = s.expected(1)
        assert {k: v for k, v in second.compared().items()} == want
        # the link's work since the request before: this request's bytes at least
        assert second.link_bytes is not None and second.link_bytes >= len(good)
        assert second.ticks_link is not None and second.ticks_link > 0


def test_copied_build_runs_without_its_inputs(kws_build: tuple[Path, Path], tmp_path: Path) -> None:
    """The build directory is self-contained: built from inputs that are then deleted, moved to
    another place, it still streams bit-exactly through QEMU and `codegen inspect` reads it,
    both with torch unimportable."""
    import shutil

    _, data = kws_build
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for src in ("models/default/model.pt", "models/default/basis.npz", "configs/default.toml"):
        shutil.copy(ROOT / src, inputs / Path(src).name)
    first = tmp_path / "first"
    build(
        inputs / "model.pt",
        inputs / "basis.npz",
        inputs / "default.toml",
        first,
        data_dir=data,
    )
    moved = tmp_path / "elsewhere" / "kws"
    shutil.copytree(first, moved)
    shutil.rmtree(first)
    shutil.rmtree(inputs)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = codegen_without_torch()
    report = tmp_path / "report"
    run = subprocess.run(
        [*cmd, "run", "--build", str(moved), "--data", str(data), "--qemu", "--mode", "strict"]
        + ["--limit", "50", "--report", str(report), "--no-progress"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    rep = json.loads((report / "report.json").read_text())
    assert rep["bit_exact"]["compared"] == 50 and rep["bit_exact"]["mismatches"] == 0
    assert rep["samples"]["distinct_utterances"] == min(50, rep["samples"]["available_utterances"])
    ins = subprocess.run(
        [*cmd, "inspect", str(moved)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert ins.returncode == 0, ins.stderr[-2000:]
    assert "program" in ins.stdout and "loads" in ins.stdout


def test_device_running_another_build_gets_the_right_advice(
    kws_build: tuple[Path, Path], tmp_path: Path
) -> None:
    """The device's INFO hashes differ from the build directory's: refused, and the advice is
    to boot that build's firmware (not --resume, which would meet the same device)."""
    build_dir, data = kws_build
    other_cfg = tmp_path / "other.toml"
    other_cfg.write_text(
        (ROOT / "configs/default.toml").read_text().replace("seed = 0", "seed = 7")
    )
    other = tmp_path / "other"
    build(ROOT / "models/default/model.pt", ROOT / "models/default/basis.npz", other_cfg, other,
          data_dir=data, compile_elf=False)  # fmt: skip
    proc, port = start_qemu(build_dir / "fw.elf")
    try:
        run = subprocess.run(
            [sys.executable, "-m", "codegen", "run", "--build", str(other), "--data", str(data)]
            + ["--port", f"socket://127.0.0.1:{port}", "--limit", "10", "--no-progress"]
            + ["--report", str(tmp_path / "r")],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
        )
    finally:
        proc.kill()
        proc.wait()
    assert run.returncode == 1, run.stderr[-2000:]
    assert "runs another build: its config hash is" in run.stderr
    assert "boot or flash" in run.stderr and "--resume" not in run.stderr
