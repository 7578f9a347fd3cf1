"""`codegen bench` (issue 6) on a reduced sweep (k = 2, n in {2, 3}, 2 clips x 2 repetitions):
bench.json has exactly the documented keys, every tick figure is positive, and a second boot of
the same firmware gives the same medians (QEMU -icount shift=0; the global timer's phase against
the instruction count allows +-1 tick, docs/protocol.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen.bench import JSON_KEYS, measure, run_bench, samples
from codegen.data import build as build_data
from codegen.quantize import quantize_features

pytestmark = pytest.mark.qemu
TICKS = ("encoder_ticks", "head_entropy_ticks", "cmaes_iter_ticks", "adapt_ticks",
         "no_adapt_ticks", "elatta_ticks")
POINT_KEYS = {"k", "n", "lam", "synthetic_basis", "encoder_ticks", "adapt_ticks",
              "no_adapt_ticks", "elatta_ticks", "head_entropy_ticks", "ram_bytes",
              "elatta_state_bytes", "rep_spread", "sample_spread"}


def test_bench_reduced(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build_data(data, preset="tiny", tier="numpy", progress=False, jobs=1)
    out = tmp_path / "bench"
    doc = run_bench(out, data, ks=(2,), ns=(2, 3), n_samples=2, reps=2)

    on_disk = json.loads((out / "bench.json").read_text())
    assert on_disk == doc
    assert tuple(on_disk) == JSON_KEYS
    for key in TICKS:
        assert isinstance(doc[key], int) and doc[key] > 0, key
    assert doc["elatta_ticks"] > doc["no_adapt_ticks"] > doc["encoder_ticks"]
    assert doc["adapt_ticks"] > doc["cmaes_iter_ticks"] > doc["head_entropy_ticks"]
    assert 0 < doc["elatta_state_bytes"] < doc["ram_bytes"] <= 65536
    assert [(s["k"], s["n"]) for s in doc["sweep"]] == [(2, 2), (2, 3)]
    for s in doc["sweep"]:
        assert set(s) == POINT_KEYS
        assert s["rep_spread"] <= 1, s
    md = (out / "bench.md").read_text()
    assert "F_Enc + λ·n·F_Cls" in md and "QEMU icount ticks" in md

    # a second boot of the default build: the same medians
    from codegen.build import build

    res = build(Path(__file__).resolve().parents[1] / "models/default/model.pt",
                Path(__file__).resolve().parents[1] / "models/default/basis.npz",
                Path(__file__).resolve().parents[1] / "configs/default.toml",
                out / "builds" / "k2_n2", data_dir=data)
    assert res.elf is not None
    ids, xf = samples(data, res.qmodel.source.meta, 2)
    again = measure(res.elf, quantize_features(xf, res.qmodel.lstm.x_fmt), ids, 2)
    base = doc["sweep"][0]
    for key, field in (("encoder_ticks", "strict.encoder"), ("adapt_ticks", "strict.adapt"),
                       ("no_adapt_ticks", "no_adapt.total"), ("elatta_ticks", "strict.total"),
                       ("head_entropy_ticks", "no_adapt.adapt")):
        assert abs(again[field] - base[key]) <= 1, (key, again[field], base[key])
