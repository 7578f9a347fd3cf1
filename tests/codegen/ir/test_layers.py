"""The encoder as a list of layers (codegen.ir.layers): every layer kind has its entry in every
stage's table, the IR refuses a stack whose layers do not chain, and a 3-layer stacked encoder
(three LSTMs, three GRUs, and LSTM-GRU-LSTM of three hidden sizes) quantizes, runs in the
integer reference, emits C that compiles for the host (UBSan, -Werror) and equals the reference
bit for bit: the encoder, the whole sample with the adaptation core, and, where every layer
streams, frame by frame; and under QEMU the NEON kernels and the plain C of the same arrays."""

from __future__ import annotations

import ctypes
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from buildkit import calib, extreme_inputs, int16_inputs, make_kit, run_arm_probe
from numpy.testing import assert_array_equal
from repopaths import TESTS

from codegen.base.errors import ConfigError
from codegen.ir.layers import KINDS, kind_of
from codegen.ir.nodes import Gru, Lstm, Tensor

# (kinds bottom to top, hidden sizes, the top layer's pooling): sizes not a multiple of 8 pad
# the kernels' units, F = 7 leaves a partial operand group, the middle layer is the widest
STACKS = {
    "lstm3": (("lstm", "lstm", "lstm"), (12, 20, 8), "mean"),
    "gru3": (("gru", "gru", "gru"), (10, 16, 8), "max"),
    "lstm-gru-lstm": (("lstm", "gru", "lstm"), (16, 9, 8), "last"),
}
F, T, C = 7, 9, 4


def test_every_kind_has_an_entry_in_every_stage() -> None:
    """Adding a layer kind is one entry per stage: the float twin, the integer reference, the
    quantizer, the C emitter (and its templates), the streaming form where the kind streams."""
    from codegen.base.resources import templates_dir
    from codegen.elatta.float_ref import FLOAT_LAYERS
    from codegen.emit.layers import EMITTERS
    from codegen.intref.layers import INT_LAYERS
    from codegen.quantize.layers import QUANTIZERS

    for table in (FLOAT_LAYERS, INT_LAYERS, QUANTIZERS, EMITTERS):
        assert set(table) == set(KINDS)
    for name, kind in KINDS.items():
        assert kind.float_type.kind == kind.fixed_type.kind == name
        assert (EMITTERS[name].stream is not None) == (kind.streaming == "step")
        assert (templates_dir() / f"model_{name}_layer.c.j2").is_file()
        assert (templates_dir() / f"model_{name}_scratch.c.j2").is_file()
        if kind.streaming is not None:
            assert (templates_dir() / f"model_{name}_stream.c.j2").is_file()


def _layer(kind: str, f: int, h: int, pool: str, rng: np.random.Generator) -> Lstm | Gru:
    """A layer with torch's default init U(±1/sqrt(H)), scaled up to trained weights' size."""
    cls = KINDS[kind].float_type
    rows = len(cls.gates) * h
    k = 2.0 / np.sqrt(h)

    def u(name: str, *shape: int) -> Tensor:
        return Tensor(name, rng.uniform(-k, k, shape))

    layer: Lstm | Gru = cls(
        f, h, T, u("w_ih", rows, f), u("w_hh", rows, h), u("b_ih", rows), u("b_hh", rows),
        pool=pool,
    )  # fmt: skip
    return layer


def stacked(tmp: Path, name: str) -> tuple[Any, np.ndarray]:
    """The float IR of a read model with its encoder replaced by the stack ``name``, and
    calibration features for it."""
    from codegen.frontend.reader import read_model

    kinds, sizes, pool = STACKS[name]
    kit = make_kit(tmp / "kit", F=F, H=sizes[-1], C=C, T=T, k=2, seed=len(name))
    model = read_model(kit.model, kit.basis, kit.config)
    rng = np.random.default_rng(sum(sizes))
    ins = (F, *sizes[:-1])
    enc = tuple(
        _layer(k, f, h, pool if n == len(kinds) - 1 else "last", rng)
        for n, (k, f, h) in enumerate(zip(kinds, ins, sizes, strict=True))
    )
    return dataclasses.replace(model, encoder=enc), calib(kit, n=32)


def test_the_ir_refuses_layers_that_do_not_chain(tmp_path: Path) -> None:
    model, _ = stacked(tmp_path, "lstm3")
    a, b, c = model.encoder
    wide = dataclasses.replace(a, hidden_size=13, w_hh=Tensor("w", np.zeros((52, 13))),
                               w_ih=Tensor("w", np.zeros((52, F))), b_ih=Tensor("b", np.zeros(52)),
                               b_hh=Tensor("b", np.zeros(52)))  # fmt: skip
    with pytest.raises(ConfigError, match="layer 1 reads 9 frames of 12 values but layer 0 hands "
                       "on 9 frames of 13"):  # fmt: skip
        dataclasses.replace(model, encoder=(wide, b, c))
    with pytest.raises(ConfigError, match="layer 1 has pool='mean': only the last layer pools"):
        dataclasses.replace(model, encoder=(a, dataclasses.replace(b, pool="mean"), c))
    with pytest.raises(ConfigError, match="non-empty tuple"):
        dataclasses.replace(model, encoder=())
    with pytest.raises(ConfigError, match=r"gru layer w_ih: shape \[48, 7\], expected \[36, 7\]"):
        Gru(F, 12, T, a.w_ih, a.w_hh, a.b_ih, a.b_hh)


@pytest.mark.parametrize("name", list(STACKS))
def test_three_stacked_layers_on_the_host_equal_the_reference(name: str, tmp_path: Path) -> None:
    from elatta_measure.hostlib import build_for

    from codegen.emit.c import render_model, write_sources
    from codegen.intref.layers import layer_int
    from codegen.intref.model import encode_int, infer_int
    from codegen.pipeline.build import with_streaming
    from codegen.quantize.model import quantize_model

    model, xc = stacked(tmp_path, name)
    q = quantize_model(model, xc)
    kinds = STACKS[name][0]
    assert tuple(kind_of(layer).name for layer in q.encoder) == kinds
    # layer n + 1 reads layer n's h (Q0.15); the features' format is calibrated
    assert all(layer.x_fmt.name == "Q0.15" for layer in q.encoder[1:])
    assert [layer.acc_gate.name for layer in q.encoder] == [
        f"{k}.gates" if n == 0 else f"{k}.gates_l{n}" for n, k in enumerate(kinds)
    ]
    x = np.concatenate(
        [int16_inputs(np.random.default_rng(7), 24, T, F, q.x_fmt.frac_bits), extreme_inputs(T, F)]
    )
    # the reference: each layer's whole output sequence is the next one's input
    seq = x
    for layer in q.encoder[:-1]:
        seq = layer_int(seq, layer, sequence=True).astype(np.int16)
    assert_array_equal(encode_int(x, q), layer_int(seq, q.encoder[-1]))

    streams = why_stream = None
    if all(KINDS[k].streaming for k in kinds):
        q, why_stream = with_streaming(q)
        assert why_stream is None and q.stream
        streams = True
    else:
        assert with_streaming(q)[0].mfcc is None
    src = tmp_path / "src"
    files = render_model(q)
    text = files["kws_model.c"]
    for n in range(3):  # per-layer arrays, each documented with its shape and Q format
        assert f"kws_layer_{n}_w[" in text and f"kws_layer_{n}_params = {{" in text
    assert text.count("\n * Layer ") == 3 and text == render_model(q)["kws_model.c"]
    write_sources(files, src)
    if streams:
        (src / "stream_probe.c").write_text(STREAM_PROBE)
    host = build_for(q, src, tmp_path / "host", sanitize=True)
    assert_array_equal(host.encode(x), encode_int(x, q))
    ids = np.arange(len(x))
    for mode in ("no_adapt", "strict"):
        want = infer_int(x, q, ids, mode=mode).fields()
        got = host.run(x, ids, mode=mode)
        for field in want:
            assert_array_equal(got[field], want[field], err_msg=f"{mode}: {field}")
    if streams:
        z = np.zeros((len(x), q.latent_size), np.int16)
        X = np.ascontiguousarray(x, np.int16)
        fn = host.lib.probe_stream
        fn(X.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint32(len(x)),
           z.ctypes.data_as(ctypes.c_void_p))  # fmt: skip
        assert_array_equal(z, encode_int(x, q))


# The streaming encoder one frame per call, as the device's audio mode runs it.
STREAM_PROBE = """\
#include <stdint.h>

#include "kws_model.h"

__attribute__((visibility("default"))) void probe_stream(const int16_t *x, uint32_t n, int16_t *z);

void probe_stream(const int16_t *x, uint32_t n, int16_t *z)
{
    for (uint32_t i = 0; i < n; ++i) {
        kws_model_stream_begin();
        for (uint32_t t = 0; t < KWS_NUM_FRAMES; ++t) {
            kws_model_stream_step(x + (i * KWS_NUM_FRAMES + t) * KWS_INPUT_SIZE);
        }
        kws_model_stream_end(z + i * KWS_LATENT_SIZE);
    }
}
"""


@pytest.mark.qemu
@pytest.mark.parametrize("name", list(STACKS))
def test_three_stacked_layers_on_the_cortex_a9(name: str, tmp_path: Path) -> None:
    """The generated kernels chained through the sequence buffers on the target: the NEON
    build and the plain C (the ref kernels' operations, firmware/kernels/ref) of the same
    arrays equal the reference."""
    from codegen.base.resources import firmware_dir
    from codegen.emit.c import carray, render_model, write_sources
    from codegen.emit.flags import model_cflags
    from codegen.intref.model import encode_int
    from codegen.ir.nodes import QModel
    from codegen.quantize.model import quantize_encoder
    from codegen.target import sources

    model, xc = stacked(tmp_path, name)
    enc, stats, _ = quantize_encoder(model, xc)
    q = QModel(model, enc, None, stats)  # the encoder only: the probe calls kws_model_encode
    src = tmp_path / "src"
    write_sources(render_model(q, adapt_files={}), src)
    x = np.concatenate(
        [int16_inputs(np.random.default_rng(3), 12, T, F, q.x_fmt.frac_bits), extreme_inputs(T, F)]
    )
    (src / "probe_data.h").write_text(
        f"#define PROBE_N {len(x)}u\nstatic const int16_t probe_x[{x.size}] = {{\n"
        f"{carray(x.reshape(-1))}\n}};\n"
    )
    probe = TESTS / "neonprobe" / "lstm_encode.c"
    fw = firmware_dir()
    srcs = [probe, *sorted(src.glob("*.c")), *(fw / s for s in sources.LSTM)]
    want = encode_int(x, q)
    for what, variant in (("neon", "neon_a32"), ("scalar", "ref")):
        out = tmp_path / what
        out.mkdir()
        lines = [
            ln
            for ln in run_arm_probe(out, srcs, [src], model_cflags(q), variant)
            if ln.startswith("R ")
        ]
        got = np.array([ln.split()[1:] for ln in lines], dtype=np.int64)
        assert_array_equal(got, want, err_msg=what)
