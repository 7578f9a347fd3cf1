"""The memory model (tools/qemu_plugin/elt_cache.c, measure/bench_memory.py): its cache geometry
on a probe whose misses are known in advance, and the reading of its output."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from elatta_measure.bench_memory import (
    COUNTERS,
    Counts,
    MemoryModelError,
    Penalties,
    function_table,
    parse_counts,
    plugin_status,
    symbol_address,
    utterance_windows,
)
from repopaths import TESTS

from codegen.target.toolchain import find_tool

PROBE = TESTS / "memprobe" / "cache_walk.c"


def test_parse_and_windows() -> None:
    text = "\n".join(
        [
            "elt_cache 1",
            "geometry l1i 256 4 32 l1d 256 4 32 l2 2048 8 32",
            "counters " + " ".join(COUNTERS),
            "total " + " ".join(["9"] * len(COUNTERS)),
            "pc 0x00100000 " + " ".join(["1"] * len(COUNTERS)),
            *(f"mark 0x00100000 {' '.join([str(v)] * len(COUNTERS))}" for v in (0, 10, 30, 60)),
        ]
    )
    c = parse_counts(text)
    assert c.total["insns"] == 9 and c.per_pc[0x100000][0] == 1
    # two clips, each streamed twice: windows from each clip's first pass to its second
    w = utterance_windows(c, 2)
    assert [x["insns"] for x in w] == [10, 30]
    with pytest.raises(MemoryModelError):
        utterance_windows(c, 3)
    # cmvn_select passes the mark twice per utterance: 2 clips x 2 passes x 2
    c8 = Counts(c.geometry, c.total, c.per_pc, [c.marks[0]] * 8)
    assert len(utterance_windows(c8, 2)) == 2
    with pytest.raises(MemoryModelError):
        parse_counts("something else")


def test_cycle_estimate_adds_the_penalties() -> None:
    pen = Penalties()
    c = dict.fromkeys(COUNTERS, 0)
    c |= {"insns": 1000, "l1d_rd_miss": 10, "l1i_miss": 2, "l2_miss_d": 3}
    # 12 L1 misses, 3 of them L2 misses: 9 served by the L2, 3 by the DDR
    assert pen.cycles(c) == 1000 + 9 * pen.l2_hit_cycles + 3 * pen.ddr_cycles


def run_plugin(elf: Path, out: Path, marks: list[int]) -> Counts:
    lib, why = plugin_status()
    assert lib is not None, why
    arg = f"{lib},out={out}" + "".join(f",mark={m:#x}" for m in marks)
    cmd = [find_tool("qemu-system-arm"), "-M", "xilinx-zynq-a9", "-nographic", "-monitor"]
    cmd += ["none", "-kernel", str(elf), "-serial", "stdio", "-serial", "null", "-plugin", arg]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("END"):
                break
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # QEMU exits cleanly: the plugin writes its counts
        proc.wait(timeout=30)
    return parse_counts(out.read_text())


@pytest.mark.qemu
def test_cache_geometry_on_known_walks(tmp_path: Path) -> None:
    if plugin_status()[0] is None:
        pytest.skip(f"memory-model plugin absent: {plugin_status()[1]}")
    from codegen.target.firmware import FirmwareConfig, render_config
    from codegen.target.qemu_probe import link_probe

    inc = tmp_path / "include"
    inc.mkdir()
    (inc / "fw_config.h").write_text(render_config(FirmwareConfig(), "fw-probe", "0" * 64))
    elf = link_probe(tmp_path / "probe.elf", [PROBE], includes=[inc])
    mark = symbol_address(elf, ("probe_mark",))
    assert mark is not None
    c = run_plugin(elf, tmp_path / "counts.txt", [mark])
    snaps = [s for _, s in c.marks]
    assert len(snaps) == 5
    pairs = zip(snaps[:-1], snaps[1:], strict=True)
    win = [{k: b[i] - a[i] for i, k in enumerate(COUNTERS)} for a, b in pairs]
    l1d = [w["l1d_rd_miss"] for w in win]
    l2d = [w["l2_miss_d"] for w in win]
    # 16 KiB cold: one miss per 32-byte line, 512; the loop's stack and code add at most a few
    assert 512 <= l1d[0] <= 520, win[0]
    # again: 16 KiB fits the 32 KiB 4-way L1D, two lines per set; but the sets were full of the
    # start-up code's lines, and random replacement evicts the set's first walk line when its
    # second comes with probability 1/4: about 256 / 4 misses, never more than 256
    assert 16 <= l1d[1] <= 128, win[1]
    # 64 KiB cold: 2,048 lines missing in L1 and in L2
    assert 2048 <= l1d[2] <= 2056 and 2048 <= l2d[2] <= 2056, win[2]
    # again: twice the L1D, so most lines miss L1 again (random replacement keeps a few), but
    # the 512 KiB L2 holds all of them
    assert 1024 <= l1d[3] <= 2056 and l2d[3] <= 4, win[3]
    # one load and a few loop instructions per line
    assert 2 * 512 <= win[0]["insns"] <= 8 * 512 + 64
    funcs = function_table(c, elf)
    walk = [v for (name, _), v in funcs.items() if name == "walk"]
    assert walk and walk[0]["l1d_rd_miss"] >= 512 + 2048 + 1024
