"""The GRU encoder's NEON kernel (firmware/elt_gru_s16.c) against its Python twin
(codegen/intref/gru.py) under QEMU, over shapes that exercise the kernel layout (hidden padding,
half n-row blocks, F mod 4 tails, many blocks), 1 and 2 layers, every pooling, on random and
extreme int16 inputs; and the reference variant's plain C (firmware/kernels/ref) of the same arrays
on the same target."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from buildkit import calib, extreme_inputs, int16_inputs, make_kit, run_arm_probe
from repopaths import TESTS

from codegen.ir.nodes import Gru, QModel, Tensor


def _gru(F: int, H: int, T: int, pool: str, scale: float, rng: np.random.Generator) -> Gru:
    """A GRU layer with torch's default init U(±1/sqrt(H)) scaled by ``scale``."""
    k = scale / np.sqrt(H)

    def u(name: str, *shape: int) -> Tensor:
        return Tensor(name, rng.uniform(-k, k, shape))

    return Gru(
        F, H, T, u("w_ih", 3 * H, F), u("w_hh", 3 * H, H), u("b_ih", 3 * H), u("b_hh", 3 * H),
        pool=pool,
    )  # fmt: skip


def _probe(
    tmp_path: Path, F: int, H: int, T: int, layers: int, pool: str, scale: float
) -> tuple[list[str], list[str], np.ndarray]:
    from codegen.base.resources import firmware_dir
    from codegen.elatta.float_ref import gru_float
    from codegen.emit.c import carray, render_model, write_sources
    from codegen.frontend.reader import read_model
    from codegen.intref.gru import gru_int
    from codegen.quantize.common import H_FMT
    from codegen.quantize.gru import quantize_gru

    kit = make_kit(tmp_path / "kit", F=F, H=H, T=T, C=3, seed=F * H)
    model = read_model(kit.model, kit.basis, kit.config)
    rng = np.random.default_rng(F * H + layers)
    g1 = _gru(F, H, T, "last" if layers == 2 else pool, scale, rng)
    g2 = _gru(H, H, T, pool, scale, rng) if layers == 2 else None
    xc = calib(kit, n=16)
    q, stats, _ = quantize_gru(g1, xc, model.quant)
    q2 = None
    if g2 is not None:
        seq_f, _ = gru_float(np.asarray(xc, np.float64), g1, sequence=True)
        q2, _, _ = quantize_gru(g2, seq_f, model.quant, x_fmt=H_FMT, index=1)
    m = dataclasses.replace(model, encoder=(g1,) if g2 is None else (g1, g2))
    src = tmp_path / "src"
    qs = (q,) if q2 is None else (q, q2)
    write_sources(render_model(QModel(m, qs, None, stats), adapt_files={}), src)
    x = np.concatenate(
        [int16_inputs(np.random.default_rng(H), 12, T, F, q.x_fmt.frac_bits), extreme_inputs(T, F)]
    )
    want = gru_int(gru_int(x, q, sequence=True), q2) if q2 is not None else gru_int(x, q)
    (src / "probe_data.h").write_text(
        f"#define PROBE_N {len(x)}u\nstatic const int16_t probe_x[{x.size}] = {{\n"
        f"{carray(x.reshape(-1))}\n}};\n"
    )
    probe = TESTS / "neonprobe" / "lstm_encode.c"
    fw = firmware_dir()
    srcs = [probe, *sorted(src.glob("*.c")), fw / "elt_gru_s16.c", fw / "elt_lstm_s16.c"]
    runs = []
    for variant in ("neon_a32", "ref"):
        out = tmp_path / variant
        out.mkdir()
        runs.append(
            [ln for ln in run_arm_probe(out, srcs, [src], (), variant) if ln.startswith("R ")]
        )
    return runs[0], runs[1], want


def _check(lines: list[str], want: np.ndarray, what: str) -> None:
    got = np.array([ln.split()[1:] for ln in lines], dtype=np.int64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    bad = np.argwhere(got != want)
    assert bad.size == 0, (
        f"{what}: {len(bad)} mismatches, first at sample {bad[0][0]} unit {bad[0][1]}: "
        f"C {got[tuple(bad[0])]} != Python {want[tuple(bad[0])]}"
    )


@pytest.mark.qemu
@pytest.mark.parametrize(
    "F, H, T, layers, pool, scale",
    [
        (10, 32, 12, 1, "last", 3.0),  # the default shape: two r/z blocks each, two n blocks
        (13, 48, 9, 1, "mean", 3.0),  # Hp = 48: a half n block; tail of 1 column
        (7, 3, 9, 1, "max", 3.0),  # Hp = 8 > H: half n block, tail of 3 columns
        (1, 3, 3, 1, "last", 1.0),  # one feature
        (40, 100, 5, 1, "last", 3.0),  # Hp = 104: half n block, F = 40
        (6, 24, 4, 2, "max", 3.0),  # two layers, Hp = 24, tail of 2 columns
        (10, 17, 6, 2, "mean", 10.0),  # two layers, odd H, saturating weights
        (40, 255, 3, 1, "mean", 3.0),  # the largest H: Hp = Rn = 256, 16 n blocks
    ],
)
def test_gru_neon_kernel_shapes_under_qemu(
    tmp_path: Path, F: int, H: int, T: int, layers: int, pool: str, scale: float
) -> None:
    neon, scalar, want = _probe(tmp_path, F, H, T, layers, pool, scale)
    _check(neon, want, "NEON")
    _check(scalar, want, "reference variant (firmware/kernels/ref)")
