"""The compiler is not tied to the default shape: randomly initialised checkpoints with other
feature counts, hidden sizes, frame counts, class counts, k and n go through the whole build
(frontend, quantization, C for the host and for the Cortex-A9 ELF) and stay bit-exact."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from buildkit import calib, config_text, int16_inputs, make_kit
from elatta_measure.hostlib import build_for, compare_host_python

from codegen.pipeline.build import build

# (F, H, T, C, k, n_iter, prefix)
SHAPES = [
    (4, 8, 5, 2, 1, 1, "tiny_"),
    (13, 48, 30, 20, 3, 5, "kws_"),
    (10, 64, 49, 5, 8, 2, "m64_"),
    (1, 3, 3, 3, 2, 3, "x"),
]


@pytest.mark.parametrize("F, H, T, C, k, n, prefix", SHAPES)
def test_other_shapes_build_and_stay_bit_exact(
    tmp_path: Path, F: int, H: int, T: int, C: int, k: int, n: int, prefix: str
) -> None:
    cfg = config_text(k=k, n_iter=n, prefix=prefix)
    kit = make_kit(tmp_path / "kit", F=F, H=H, T=T, C=C, k=k, seed=F + H, config=cfg)
    res = build(kit.model, kit.basis, kit.config, tmp_path / "out", calib_features=calib(kit, n=24))
    assert res.elf is not None and res.elf.is_file()
    doc = res.manifest
    assert doc["shapes"]["hidden_size"] == H and doc["shapes"]["num_classes"] == C
    assert doc["firmware"]["static_ram_bytes"] <= 65536
    names = sorted(p.name for p in res.sources)
    assert f"{prefix}model.c" in names and f"{prefix}adapt_params.c" in names
    src = (tmp_path / "out" / "src" / f"{prefix}model.h").read_text()
    assert f"#define {prefix.upper()}HIDDEN_SIZE {H}u" in src
    q = res.qmodel
    host = build_for(q, tmp_path / "out" / "src", tmp_path / "host", sanitize=True, trace=True)
    rng = np.random.default_rng(H)
    for mode in ("no_adapt", "strict", "continual", "continual_bounded"):
        x = int16_inputs(rng, 40, T, F, q.x_fmt.frac_bits)
        ids = rng.choice(2**32 - 1, size=40, replace=False)
        mm = compare_host_python(host, x, ids, mode)
        assert mm is None, f"{mode}: {mm}"
