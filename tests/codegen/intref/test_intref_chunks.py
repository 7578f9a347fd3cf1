"""`infer_int` splits independent samples (no_adapt, strict) into chunks of
`codegen.intref.model.CHUNK` for speed (bench/host_reference.py); the chunked outputs must equal
one whole-batch `adapt_int` call field by field, including a ragged last chunk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from buildkit import calib, int16_inputs, make_kit

from codegen.frontend.reader import read_model
from codegen.intref import model as intmodel
from codegen.intref.adapt import adapt_int
from codegen.intref.lstm import lstm_int
from codegen.quantize.model import quantize_model


@pytest.mark.parametrize("mode", ["no_adapt", "strict"])
def test_chunked_infer_equals_one_batch(tmp_path: Path, mode: str) -> None:
    kit = make_kit(tmp_path, T=12)
    q = quantize_model(read_model(kit.model, kit.basis, kit.config), calib(kit))
    n = 2 * intmodel.CHUNK + 37
    x = int16_inputs(np.random.default_rng(3), n, kit.T, kit.F, q.x_fmt.frac_bits)
    ids = np.arange(1000, 1000 + n)
    got = intmodel.infer_int(x, q, ids, mode).fields()
    z = lstm_int(x, q.encoder[0]).astype(np.int16)
    want = adapt_int(z, intmodel.params_for_mode(q, mode), ids)
    np.testing.assert_array_equal(got["z"], z)
    for f in want.FIELDS:
        np.testing.assert_array_equal(got[f], getattr(want, f), err_msg=f"{mode} field {f}")
