"""The LSTM weight-format search (codegen.quantize.format_search): it moves weight fraction bits to
the
operands only where the calibration latent error falls, keeps the proof's A, is deterministic,
and is switched off by [quant] weight_format = "max"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from buildkit import calib, config_text, make_kit

from codegen.base.errors import ConfigError
from codegen.frontend.reader import read_model
from codegen.quantize.format_search import search_weight_formats
from codegen.quantize.model import quantize_model


def test_search_lowers_the_latent_error_within_the_operand_shifts(tmp_path: Path) -> None:
    kit = make_kit(tmp_path, F=10, H=32, T=49)
    model = read_model(kit.model, kit.basis, kit.config)
    x = calib(kit, n=64)
    s = search_weight_formats(model, x)
    assert s.chosen is not None and s.clips == 64
    base = s.tried[0]
    assert base.weight_shifts == ((0, 0),)
    # the chosen candidate is the best tried that keeps as many classes, never worse than
    # keeping the formats
    keep = [c for c in s.tried if c.same_class >= base.same_class]
    assert s.chosen.z_rms == min(c.z_rms for c in keep) <= base.z_rms
    assert s.chosen.same_class >= base.same_class
    (dx, dh) = s.chosen.weight_shifts[0]
    assert 0 <= dx <= base.opshifts[0][0] and 0 <= dh <= base.opshifts[0][1]
    q0 = quantize_model(model, x)
    q = quantize_model(model, x, weight_shifts=s.weight_shifts)
    assert q.encoder[0].shifts.acc_frac == q0.encoder[0].shifts.acc_frac
    assert q.encoder[0].w_hh.fmt.frac_bits == q0.encoder[0].w_hh.fmt.frac_bits - dh
    assert q.encoder[0].shifts.h_opshift == q0.encoder[0].shifts.h_opshift - dh
    assert q.encoder[0].shifts.x_opshift == q0.encoder[0].shifts.x_opshift - dx
    # deterministic: the same clips give the same choice and the same table
    assert search_weight_formats(model, x) == s
    assert s.to_dict()["chosen"]["weight_shifts"] == [list(s.chosen.weight_shifts[0])]


def test_max_keeps_the_weight_formats(tmp_path: Path) -> None:
    extra = '[quant]\nweight_format = "max"\n'
    kit = make_kit(tmp_path, config=config_text() + extra)
    model = read_model(kit.model, kit.basis, kit.config)
    s = search_weight_formats(model, calib(kit, n=16))
    assert s.chosen is None and s.tried == () and s.weight_shifts == ()


def test_unknown_weight_format_is_refused_with_the_allowed_values(tmp_path: Path) -> None:
    kit = make_kit(tmp_path, config=config_text() + '[quant]\nweight_format = "best"\n')
    with pytest.raises(ConfigError, match=r"weight_format = 'best'.*'search', 'max'"):
        read_model(kit.model, kit.basis, kit.config)


def test_shift_beyond_the_weight_fraction_is_refused(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    model = read_model(kit.model, kit.basis, kit.config)
    with pytest.raises(ConfigError, match="fraction-bit drop 16: allowed 0..1[0-9]"):
        quantize_model(model, calib(kit, n=8), weight_shifts=((0, 16),))


def test_search_runs_on_calibration_clips_only(tmp_path: Path) -> None:
    """The decision depends on the clips it is given and on nothing else (no test data)."""
    kit = make_kit(tmp_path)
    model = read_model(kit.model, kit.basis, kit.config)
    x = calib(kit, n=300)
    s = search_weight_formats(model, x)
    assert s.clips == 256  # SEARCH_CLIPS: the first 256 calibration clips
    assert search_weight_formats(model, np.asarray(x)[:256]) == s
