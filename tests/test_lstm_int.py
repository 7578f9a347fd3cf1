"""Integer LSTM: Python reference vs float64 (tolerance) and vs the host-compiled C (bit-exact,
UBSan), including saturating int16 inputs, every activation input, and trace points."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from buildkit import Kit, calib, int16_inputs, lstm_only, make_kit

from codegen.hostlib import HostModel, first_trace_mismatch
from codegen.intref.lstm import (
    TRACE_C,
    TRACE_H,
    TRACE_Z,
    lstm_float,
    lstm_int,
    sigmoid_all,
    sigmoid_lut,
    tanh_from_sigmoid,
)
from codegen.ir import QModel
from codegen.quantize import quantize_features


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Kit, QModel, HostModel]:
    tmp = tmp_path_factory.mktemp("lstm")
    kit = make_kit(tmp / "kit")
    qm, host = lstm_only(tmp, kit, calib(kit), sanitize=True, trace=True)
    return kit, qm, host


def test_activation_tables_equal_for_every_int16_input(built) -> None:  # type: ignore[no-untyped-def]
    _, qm, host = built
    v = np.arange(-32768, 32768, dtype=np.int64)
    py_sig = sigmoid_lut(qm.lstm.lut.table.raw, qm.lstm.lut.index_shift, v)
    np.testing.assert_array_equal(host.activation_table("sigmoid"), py_sig)
    np.testing.assert_array_equal(host.activation_table("tanh2"), tanh_from_sigmoid(py_sig))
    np.testing.assert_array_equal(sigmoid_all(qm.lstm), py_sig)


def test_c_equals_python_on_random_and_saturating_inputs(built) -> None:  # type: ignore[no-untyped-def]
    kit, qm, host = built
    rng = np.random.default_rng(123)
    x = int16_inputs(rng, 400, kit.T, kit.F, qm.lstm.x_fmt.frac_bits)
    np.testing.assert_array_equal(host.encode(x), lstm_int(x, qm.lstm))


def test_fused_and_two_product_reference_paths_agree(built, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import codegen.intref.lstm as L

    kit, qm, _ = built
    x = int16_inputs(np.random.default_rng(6), 64, kit.T, kit.F, qm.lstm.x_fmt.frac_bits)
    fused = lstm_int(x, qm.lstm)
    monkeypatch.setattr(L, "FLOAT64_EXACT", 1)  # forces the int64-shift path
    np.testing.assert_array_equal(lstm_int(x, qm.lstm), fused)


def test_integer_lstm_tracks_float(built) -> None:  # type: ignore[no-untyped-def]
    kit, qm, _ = built
    xf = calib(kit, n=200, seed=9)
    z_f, _ = lstm_float(xf, qm.source.lstm)
    z_i = lstm_int(quantize_features(xf, qm.lstm.x_fmt), qm.lstm) / 32768.0
    err = np.abs(z_i - z_f)
    assert err.max() < 5e-3 and np.sqrt(np.mean(err**2)) < 1e-3


def test_float_twin_matches_torch(built) -> None:  # type: ignore[no-untyped-def]
    import torch

    from codegen.frontend import torch_module

    kit, qm, _ = built
    xf = calib(kit, n=16, seed=3)
    z_f, _ = lstm_float(xf, qm.source.lstm)
    with torch.no_grad():
        z_t = torch_module(qm.source).encode(torch.from_numpy(xf.astype(np.float32))).numpy()
    np.testing.assert_allclose(z_f, z_t, atol=2e-5)


def test_trace_points_equal_and_a_mismatch_names_stage_index_and_values(built) -> None:  # type: ignore[no-untyped-def]
    kit, qm, host = built
    x = int16_inputs(np.random.default_rng(4), 4, kit.T, kit.F, qm.lstm.x_fmt.frac_bits)[:1]
    _, c_events = host.traced(lambda: host.encode(x))
    py_events: list[tuple[str, int, np.ndarray]] = []
    lstm_int(x, qm.lstm, trace=lambda s, i, v: py_events.append((s, i, np.asarray(v)[0].copy())))
    names = [e[0] for e in c_events]
    assert names.count(TRACE_H) == kit.T and names.count(TRACE_C) == kit.T
    assert names[-1] == TRACE_Z
    assert first_trace_mismatch(c_events, py_events) is None
    # a corrupted Python value is reported at its stage, step and element with both values
    stage, t, v = py_events[7]
    bad = v.copy()
    bad[3] += 1
    py_events[7] = (stage, t, bad)
    mm = first_trace_mismatch(c_events, py_events, sample=0, sample_id=42)
    assert mm is not None and (mm.stage, mm.index) == (stage, (t, 3))
    assert mm.py_value == mm.c_value + 1
    assert f"{stage}[{t}, 3]" in str(mm) and "id 42" in str(mm)


def test_shapes_and_dtypes_are_checked(built) -> None:  # type: ignore[no-untyped-def]
    kit, qm, host = built
    with pytest.raises(ValueError, match="shape"):
        lstm_int(np.zeros((1, kit.T + 1, kit.F), dtype=np.int16), qm.lstm)
    with pytest.raises(TypeError):
        lstm_int(np.zeros((1, kit.T, kit.F)), qm.lstm)
    with pytest.raises(ValueError, match="int16"):
        host.encode(np.full((1, kit.T, kit.F), 40000))


@pytest.mark.slow
def test_c_equals_python_10000_inputs_without_sanitizer(tmp_path: Path) -> None:
    kit = make_kit(tmp_path / "kit", seed=5)
    qm, host = lstm_only(tmp_path, kit, calib(kit), sanitize=False)
    x = int16_inputs(np.random.default_rng(77), 10_000, kit.T, kit.F, qm.lstm.x_fmt.frac_bits)
    np.testing.assert_array_equal(host.encode(x), lstm_int(x, qm.lstm))
