"""Quantization decisions: formats from calibration, fxpmath integers, the σ table, and the
accumulator proofs (docs/numeric.md §3, §4). Pure Python."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from buildkit import calib, make_kit

from codegen.errors import CodegenError
from codegen.frontend import read_model
from codegen.intref.lstm import sigmoid_lut, tanh_from_sigmoid
from codegen.ir import QuantOptions
from codegen.qformat import QFormat
from codegen.quantize import (
    GATE_FMT,
    H_FMT,
    SIGMOID_LUT_SIZE,
    prove_accumulator,
    quantize_features,
    quantize_lstm,
    sigmoid_table,
)


def test_sigmoid_table_is_257_monotone_q15_and_interpolates_within_1e4() -> None:
    t = sigmoid_table()
    assert t.raw.shape == (SIGMOID_LUT_SIZE,) == (257,)
    assert t.fmt == H_FMT and np.all(np.diff(t.raw) >= 0)
    assert t.raw[0] == 16384 and t.raw[-1] == 32767  # σ(16) saturates to the largest Q0.15
    v = np.arange(-32768, 32768, dtype=np.int64)
    raw = sigmoid_lut(t.raw, 7, v)
    assert raw.min() >= 1 and raw.max() <= 32767
    np.testing.assert_array_equal(raw[1:][::-1], 32768 - raw[1:])  # σ(−x) = 1 − σ(x) exactly
    x = v / 2048.0
    assert np.max(np.abs(raw / 32768.0 - 1.0 / (1.0 + np.exp(-x)))) < 1e-4
    th = tanh_from_sigmoid(raw) / 32768.0
    assert np.max(np.abs(th - np.tanh(x / 2.0))) < 2e-4  # input is 2x in Q4.11
    assert th.min() > -1.0 and th.max() < 1.0


def test_formats_follow_calibrated_ranges_with_margin(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    m = read_model(kit.model, kit.basis, kit.config)
    x = calib(kit)
    x_max = float(np.max(np.abs(x)))
    q1, st1, _ = quantize_lstm(m.lstm, x, QuantOptions(range_margin=1.0))
    q2, st2, _ = quantize_lstm(m.lstm, x, QuantOptions(range_margin=2.0))
    assert st1.x_max_abs == pytest.approx(x_max)
    assert q1.x_fmt == QFormat.for_range(x_max) and q2.x_fmt == QFormat.for_range(2 * x_max)
    assert q2.x_fmt.int_bits == q1.x_fmt.int_bits + 1
    assert q1.c_fmt == QFormat(6, 25, 32)  # T = 49 < 2^6: |c_t| <= t is proven
    assert q1.gate_fmt == GATE_FMT and q1.h_fmt == H_FMT
    # weights: fxpmath integers, error at most half an LSB, per-tensor format from max |w|
    for qt, ref in ((q1.w_ih, m.lstm.w_ih), (q1.w_hh, m.lstm.w_hh)):
        assert qt.fmt == QFormat.for_range(ref.max_abs)
        np.testing.assert_array_equal(qt.raw, qt.fmt.quantize(ref.values))
        assert qt.max_abs_error <= 0.5 / (1 << qt.fmt.frac_bits) + 1e-12
    np.testing.assert_allclose(q1.bias.ref, m.lstm.b_ih.values + m.lstm.b_hh.values)
    assert q1.bias.fmt.word == 32
    sh = q1.shifts
    assert sh.acc_frac == max(q1.w_ih.fmt.frac_bits + q1.x_fmt.frac_bits,
                              q1.w_hh.fmt.frac_bits + 15)
    assert sh.sig_rshift == sh.acc_frac - 11 and sh.tanh_rshift == sh.acc_frac - 12
    assert sh.cell_ig_lshift == q1.c_fmt.frac_bits - 15
    assert sh.cell_tanh_rshift == q1.c_fmt.frac_bits - 12


def test_quantization_is_deterministic(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    m = read_model(kit.model, kit.basis, kit.config)
    x = calib(kit)
    a, _, _ = quantize_lstm(m.lstm, x, m.quant)
    b, _, _ = quantize_lstm(m.lstm, x, m.quant)
    for ta, tb in ((a.w_ih, b.w_ih), (a.w_hh, b.w_hh), (a.bias, b.bias), (a.lut.table,
                                                                        b.lut.table)):
        np.testing.assert_array_equal(ta.raw, tb.raw)
    assert a.shifts == b.shifts and a.x_fmt == b.x_fmt and a.c_fmt == b.c_fmt


def test_accumulator_bound_is_attained_and_width_chosen_by_proof() -> None:
    rng = np.random.default_rng(0)
    w = rng.integers(-3000, 3000, size=(8, 10))
    acc = prove_accumulator("t", w, 32768, "auto")
    # the bound is tight: x = -32768 where w >= 0 and 32767 where w < 0 comes within Σ|w<0|
    r = acc.worst_row
    x = np.where(w[r] >= 0, -32768, 32767)
    worst_case = abs(int(np.dot(w[r], x)))
    assert acc.bound == int(np.abs(w).sum(axis=1).max()) * 32768
    assert acc.bound - int(np.abs(w[r][w[r] < 0]).sum()) == worst_case
    assert acc.bits == 32 and acc.bound < 2**31 and acc.margin_bits > 0
    big = np.full((4, 40), 32767)
    assert prove_accumulator("big", big, 32768, "auto").bits == 64
    assert prove_accumulator("t", w, 32768, "int64").bits == 64
    with pytest.raises(CodegenError, match="tensor big: worst-case accumulator bound .* int32"):
        prove_accumulator("big", big, 32768, "int32")
    with pytest.raises(CodegenError, match="tensor huge: .* exceeds int64"):
        prove_accumulator("huge", np.full((1, 1 << 20), 32767), 1 << 30, "auto")


def test_forced_int32_refuses_naming_the_lstm_tensor(tmp_path: Path) -> None:
    kit = make_kit(tmp_path, H=64, scale=4.0)
    m = read_model(kit.model, kit.basis, kit.config)
    with pytest.raises(CodegenError, match=r"tensor lstm.weight_(ih|hh)_l0: worst-case"):
        quantize_lstm(m.lstm, calib(kit), QuantOptions(accumulator="int32"))


def test_calibration_input_is_checked(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    m = read_model(kit.model, kit.basis, kit.config)
    with pytest.raises(CodegenError, match=r"expected \[N, 49, 10\]"):
        quantize_lstm(m.lstm, np.zeros((4, 48, 10)), m.quant)
    bad = calib(kit)
    bad[0, 0, 0] = np.nan
    with pytest.raises(CodegenError, match="NaN"):
        quantize_lstm(m.lstm, bad, m.quant)


def test_cell_format_bound_holds_under_worst_case_gates() -> None:
    """|c_t| <= t with the extreme gate values (f = i = 32767, g = ±32768) every step."""
    from codegen.fixed import rshift_round, sat32
    from codegen.quantize import cell_format

    for T in (1, 3, 49, 1000):
        fmt = cell_format(T)
        assert T < (1 << fmt.int_bits) and fmt.word == 32
        for g in (32768, -32768):
            c = 0
            for t in range(1, T + 1):
                c = rshift_round(32767 * c + ((32767 * g) << (fmt.frac_bits - 15)), 15)
                assert abs(c) <= t << fmt.frac_bits and sat32(c) == c
    with pytest.raises(CodegenError, match="num_frames=70000"):
        cell_format(70000)


def test_feature_quantization_rounds_and_saturates() -> None:
    fmt = QFormat(3, 12)
    x = np.array([0.0, 1.0 / 8192, 1.0, -8.0, 7.9999, 100.0, -100.0])
    raw = quantize_features(x, fmt)
    assert raw.dtype == np.int16
    assert raw.tolist() == [0, 0, 4096, -32768, 32767, 32767, -32768]
