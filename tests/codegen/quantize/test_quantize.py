"""Quantization decisions: formats from calibration, fxpmath integers, the σ table, and the
accumulator proofs (docs/numeric.md §3, §4). Pure Python."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from buildkit import calib, make_kit

from codegen.base.errors import CodegenError
from codegen.base.features import quantize_features
from codegen.base.qformat import QFormat
from codegen.frontend.reader import read_model
from codegen.intref.lstm import sigmoid_lut, tanh_from_sigmoid
from codegen.ir.nodes import QuantOptions
from codegen.quantize.common import (
    GATE_FMT,
    H_FMT,
    INT32_MAX,
    MIN_ACC_FRAC,
    SIGMOID_LUT_SIZE,
    operand_max,
    sigmoid_table,
)
from codegen.quantize.lstm import gate_bound_rows, prove_gate_accumulator, quantize_lstm


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
    q1, st1, _ = quantize_lstm(m.encoder[0], x, QuantOptions(range_margin=1.0))
    q2, st2, _ = quantize_lstm(m.encoder[0], x, QuantOptions(range_margin=2.0))
    assert st1.x_max_abs == pytest.approx(x_max)
    assert q1.x_fmt == QFormat.for_range(x_max) and q2.x_fmt == QFormat.for_range(2 * x_max)
    assert q2.x_fmt.int_bits == q1.x_fmt.int_bits + 1
    assert q1.c_fmt == QFormat(6, 25, 32)  # T = 49 < 2^6: |c_t| <= t is proven
    assert q1.gate_fmt == GATE_FMT and q1.h_fmt == H_FMT
    # weights: fxpmath integers, error at most half an LSB, per-tensor format from max |w|
    for qt, ref in ((q1.w_ih, m.encoder[0].w_ih), (q1.w_hh, m.encoder[0].w_hh)):
        assert qt.fmt == QFormat.for_range(ref.max_abs)
        np.testing.assert_array_equal(qt.raw, qt.fmt.quantize(ref.values))
        assert qt.max_abs_error <= 0.5 / (1 << qt.fmt.frac_bits) + 1e-12
    np.testing.assert_allclose(q1.bias.ref, m.encoder[0].b_ih.values + m.encoder[0].b_hh.values)
    assert q1.bias.fmt.word == 32
    sh = q1.shifts
    assert (
        MIN_ACC_FRAC
        <= sh.acc_frac
        <= min(q1.w_ih.fmt.frac_bits + q1.x_fmt.frac_bits, q1.w_hh.fmt.frac_bits + 15)
    )
    assert sh.x_opshift == q1.w_ih.fmt.frac_bits + q1.x_fmt.frac_bits - sh.acc_frac
    assert sh.h_opshift == q1.w_hh.fmt.frac_bits + 15 - sh.acc_frac
    assert q1.bias.fmt == QFormat(31 - sh.acc_frac, sh.acc_frac, 32)
    assert sh.sig_rshift == sh.acc_frac - 11 and sh.tanh_rshift == sh.acc_frac - 12
    assert sh.cell_ig_lshift == q1.c_fmt.frac_bits - 15
    assert sh.cell_tanh_rshift == q1.c_fmt.frac_bits - 12


def test_quantization_is_deterministic(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    m = read_model(kit.model, kit.basis, kit.config)
    x = calib(kit)
    a, _, _ = quantize_lstm(m.encoder[0], x, m.quant)
    b, _, _ = quantize_lstm(m.encoder[0], x, m.quant)
    for ta, tb in (
        (a.w_ih, b.w_ih),
        (a.w_hh, b.w_hh),
        (a.bias, b.bias),
        (a.lut.table, b.lut.table),
    ):
        np.testing.assert_array_equal(ta.raw, tb.raw)
    assert a.shifts == b.shifts and a.x_fmt == b.x_fmt and a.c_fmt == b.c_fmt


def test_operand_max_is_the_rounded_minus_32768() -> None:
    from codegen.base.fixed import rshift_round

    for s in range(0, 20):
        v = np.arange(-32768, 32768, dtype=np.int64)
        assert operand_max(s) == int(np.abs(rshift_round(v, s)).max())
        if s <= 15:
            assert rshift_round(-32768, s) == -(1 << (15 - s)) and operand_max(s) == 1 << (15 - s)


def _bound(w_ih, w_hh, b, fw_ih, fx, fw_hh, a):  # type: ignore[no-untyped-def]
    rows, _ = gate_bound_rows(w_ih, w_hh, b, fw_ih, fx, fw_hh, a)
    return max(sum(t) for t in rows)


@pytest.mark.parametrize(
    "seed, hi, bias", [(0, 3000, 0.5), (1, 30000, 4.0), (2, 32767, 60.0), (3, 200, 0.01)]
)
def test_gate_proof_chooses_the_largest_int32_scaling(seed: int, hi: int, bias: float) -> None:
    """bound(A) ≤ 2^31 − 1 at the chosen A, violated at A + 1 unless the formats cap A; the
    bound is the exact worst case over every int16 x and h (attained by −32768 operands)."""
    rng = np.random.default_rng(seed)
    H, F = 8, 5
    w_ih = rng.integers(-hi, hi + 1, size=(4 * H, F))
    w_hh = rng.integers(-hi, hi + 1, size=(4 * H, H))
    b = rng.uniform(-bias, bias, size=4 * H)
    fw_ih, fx, fw_hh = 13, 11, 14
    pr = prove_gate_accumulator(w_ih, w_hh, b, fw_ih, fx, fw_hh)
    a = pr.acc_frac
    assert pr.acc_frac_formats == min(fw_ih + fx, fw_hh + 15) == 24
    assert MIN_ACC_FRAC <= a <= 24
    assert pr.bound == _bound(w_ih, w_hh, b, fw_ih, fx, fw_hh, a) <= INT32_MAX
    assert sum(pr.terms) == pr.bound
    if a < pr.acc_frac_formats:
        assert pr.bound_above == _bound(w_ih, w_hh, b, fw_ih, fx, fw_hh, a + 1) > INT32_MAX
        assert pr.limited_by == "int32 proof"
    else:
        assert pr.bound_above is None and pr.limited_by == "formats"
    # attained: operands −32768 → −2^(15 − s), signs against the weights
    r = pr.worst_row
    xs, hs = operand_max(fw_ih + fx - a), operand_max(fw_hh + 15 - a)
    assert pr.terms[0] == int(np.abs(w_ih[r]).sum()) * xs
    assert pr.terms[1] == int(np.abs(w_hh[r]).sum()) * hs


def test_gate_proof_refuses_naming_tensor_row_and_bound() -> None:
    H, F = 16, 3
    w_ih = np.zeros((4 * H, F), dtype=np.int64)
    w_hh = np.zeros((4 * H, H), dtype=np.int64)
    w_hh[6] = 32767  # W_hh in Q15.0: at A = 13, hs ≤ 2^13 and 16·32767·2^13 > 2^31 − 1
    b = np.zeros(4 * H)
    with pytest.raises(
        CodegenError,
        match=r"tensor lstm.weight_hh_l0 \(gate row 6\): .*"
        r"A = 13 .*worst-case bound 4294836226 .* exceeds 2\^31 − 1",
    ):
        prove_gate_accumulator(w_ih, w_hh, b, 15, 15, 0)
    with pytest.raises(CodegenError, match=r"tensor lstm.weight_ih_l0: .* leaves 12 fraction"):
        prove_gate_accumulator(w_ih, w_hh, b, 4, 8, 10)
    big_b = np.zeros(4 * H)
    big_b[9] = 1e6  # 1e6·2^13 > 2^31
    with pytest.raises(CodegenError, match=r"tensor lstm.bias \(gate row 9\)"):
        prove_gate_accumulator(w_ih, w_hh * 0, big_b, 15, 15, 15)


def test_quantize_refuses_a_model_no_scaling_proves(tmp_path: Path) -> None:
    kit = make_kit(tmp_path, H=64, scale=2e5)
    m = read_model(kit.model, kit.basis, kit.config)
    with pytest.raises(CodegenError, match=r"tensor lstm\.(weight_ih_l0|weight_hh_l0|bias)"):
        quantize_lstm(m.encoder[0], calib(kit), QuantOptions(accumulator="int32"))


def test_calibration_input_is_checked(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    m = read_model(kit.model, kit.basis, kit.config)
    with pytest.raises(CodegenError, match=r"expected \[N, 49, 10\]"):
        quantize_lstm(m.encoder[0], np.zeros((4, 48, 10)), m.quant)
    bad = calib(kit)
    bad[0, 0, 0] = np.nan
    with pytest.raises(CodegenError, match="NaN"):
        quantize_lstm(m.encoder[0], bad, m.quant)


def test_cell_format_bound_holds_under_worst_case_gates() -> None:
    """|c_t| <= t with the extreme gate values (f = i = 32767, g = ±32768) every step."""
    from codegen.base.fixed import rshift_round, sat32
    from codegen.quantize.lstm import cell_format

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


@pytest.mark.parametrize("word", [8, 16, 32])
def test_qformat_quantize_is_fxpmath_round_then_saturate(word: int) -> None:
    """QFormat.quantize saturates on the floats before fxpmath rounds: the same integers as
    fxpmath's own round-then-saturate, at every split of the word, ties and bounds included."""
    from fxpmath import Fxp

    rng = np.random.default_rng(word)
    for n in range(word):
        fmt = QFormat(word - 1 - n, n, word)
        hi, lo = fmt.max_raw, fmt.min_raw
        edges = [hi, hi + 0.5, hi + 0.49, hi + 1, lo, lo - 0.5, lo - 0.51, lo - 1, 0.5, -0.5]
        edges += [1.5, -1.5, 2.5, 1e12, -1e12]
        x = np.concatenate([np.array(edges) / (1 << n), rng.standard_normal(400) * 2.0**n])
        want = Fxp(x, signed=True, n_word=word, n_frac=n, rounding="around", overflow="saturate")
        np.testing.assert_array_equal(fmt.quantize(x), np.asarray(want.val, dtype=np.int64))
