"""Randomly initialised checkpoints, bases and configs of any shape for the compiler tests
(test_frontend, test_quantize, test_lstm_int, test_build, test_shapes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from codegen.base.features import MfccParams
from codegen.base.files import file_sha256
from codegen.frontend.basis import Basis, compute_basis, save_basis
from codegen.frontend.model import KwsLstm, save_checkpoint
from codegen.ir.meta import ModelMeta


@dataclass(frozen=True)
class Kit:
    model: Path
    basis: Path
    config: Path
    F: int
    H: int
    C: int
    T: int
    k: int


def make_meta(
    F: int,
    H: int,
    C: int,
    T: int,
    seed: int = 0,
    classes: tuple[str, ...] | None = None,
    norm: tuple[np.ndarray, np.ndarray] | None = None,
) -> ModelMeta:
    mp = MfccParams(n_mfcc=F)
    mean, std = norm if norm is not None else (np.zeros(F), np.ones(F))
    return ModelMeta(
        input_size=F,
        hidden_size=H,
        num_classes=C,
        num_frames=T,
        classes=classes if classes is not None else tuple(f"w{i}" for i in range(C)),
        features=mp.to_dict(),
        norm_mean=tuple(float(v) for v in mean),
        norm_std=tuple(float(v) for v in std),
        seed=seed,
    )


def config_text(
    k: int = 2,
    n_iter: int = 2,
    mode: str = "strict",
    extra: str = "",
    prefix: str = "kws_",
    sigma0: float = 0.3,
) -> str:
    return (
        f'[elatta]\nk = {k}\nn_iter = {n_iter}\nmode = "{mode}"\nsigma0 = {sigma0}\n{extra}\n'
        f'[target]\nprefix = "{prefix}"\n'
    )


def make_kit(
    out: Path,
    F: int = 10,
    H: int = 32,
    C: int = 12,
    T: int = 49,
    k: int = 2,
    seed: int = 0,
    scale: float = 3.0,
    config: str | None = None,
    classes: tuple[str, ...] | None = None,
    norm: tuple[np.ndarray, np.ndarray] | None = None,
) -> Kit:
    """A KwsLstm with torch's default init scaled by ``scale`` (trained LSTMs have weights
    of order 1, the default init has them below 1/sqrt(H)), a basis from random latents with the
    checkpoint's sha256, and a TOML config."""
    torch.manual_seed(seed)
    m = KwsLstm(F, H, C)
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(scale)
    out.mkdir(parents=True, exist_ok=True)
    save_checkpoint(out / "model.pt", m, make_meta(F, H, C, T, seed, classes, norm))
    rng = np.random.default_rng(seed)
    z = np.tanh(rng.standard_normal((max(20, k + 2), H)))
    V, s, mean, ev = compute_basis(z, k)
    save_basis(
        out / "basis.npz", Basis(V, s, mean, z.shape[0], k, seed, file_sha256(out / "model.pt"), ev)
    )
    (out / "config.toml").write_text(config if config is not None else config_text(k=k))
    return Kit(out / "model.pt", out / "basis.npz", out / "config.toml", F, H, C, T, k)


def calib(kit: Kit, n: int = 64, seed: int = 1, scale: float = 1.0) -> np.ndarray:
    """Normalised-feature stand-ins: unit Gaussian frames with a slow drift, [n, T, F]."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((n, 1, kit.F))
    return scale * (0.7 * rng.standard_normal((n, kit.T, kit.F)) + 0.7 * base)


def int16_inputs(rng: np.random.Generator, n: int, T: int, F: int, x_frac: int) -> np.ndarray:
    """A mix of realistic and adversarial int16 features: 1/2 Gaussian in range, 1/4 uniform
    over the whole int16 range (saturating everything), 1/4 at ±32767/−32768 extremes."""
    a = n // 2
    b = n // 4
    x = np.empty((n, T, F), dtype=np.int16)
    g = rng.standard_normal((a, T, F)) * 1.5 * (1 << x_frac)
    x[:a] = np.clip(np.rint(g), -32768, 32767).astype(np.int16)
    x[a : a + b] = rng.integers(-32768, 32768, size=(b, T, F), dtype=np.int16)
    x[a + b :] = rng.choice(np.array([-32768, 32767, 0], dtype=np.int16), size=(n - a - b, T, F))
    return x


def lstm_only(
    tmp: Path,
    kit: Kit,
    x_calib: np.ndarray,
    *,
    sanitize: bool = True,
    trace: bool = False,
    weight_shift: tuple[int, int] = (0, 0),
):  # type: ignore[no-untyped-def]
    """Quantize only the LSTM and build the host library of its generated C (no adaptation
    core): the encoder's tests do not depend on the adaptation files."""
    from elatta_measure.hostlib import HostModel, build_host_library, render_host_api

    from codegen.emit.c import render_model, write_sources
    from codegen.frontend.reader import read_model
    from codegen.ir.nodes import QModel
    from codegen.quantize.lstm import quantize_lstm
    from codegen.target import sources

    model = read_model(kit.model, kit.basis, kit.config)
    q, stats, _ = quantize_lstm(model.encoder[0], x_calib, model.quant, weight_shift=weight_shift)
    qm = QModel(model, (q,), None, stats)
    src = tmp / "src"
    write_sources(render_model(qm, adapt_files={}), src)
    hb = build_host_library(
        src,
        render_host_api(qm),
        tmp / "host",
        sanitize=sanitize,
        trace=trace,
        firmware_sources=sources.LSTM,
    )
    return qm, HostModel(hb, qm)


def full_build(
    tmp: Path, kit: Kit, x_calib: np.ndarray, *, sanitize: bool = True, trace: bool = False
):  # type: ignore[no-untyped-def]
    """The whole model (LSTM + adaptation core) rendered and built for the host."""
    from elatta_measure.hostlib import build_for

    from codegen.emit.c import render_model, write_sources
    from codegen.frontend.reader import read_model
    from codegen.quantize.model import quantize_model

    q = quantize_model(read_model(kit.model, kit.basis, kit.config), x_calib)
    src = tmp / "src"
    write_sources(render_model(q), src)
    return q, build_for(q, src, tmp / "host", sanitize=sanitize, trace=trace)


def data_norm(pcm: np.ndarray, F: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Per-coefficient MFCC mean and std of some clips (what training stores in the meta)."""
    from codegen.base.features import mfcc

    feats = np.asarray(mfcc(pcm, MfccParams(n_mfcc=F)), dtype=np.float64)
    return feats.mean(axis=(0, 1)), feats.std(axis=(0, 1)) + 1e-6


def scalar_reference(x: np.ndarray, q: Any) -> tuple[np.ndarray, int]:
    """The contract of docs/numeric.md §4 written out with Python ints, one row at a time, and
    the number of gate pre-activations that saturated (an independent check of `lstm_int`)."""
    from codegen.base.fixed import rshift_round, sat16, sat32
    from codegen.intref.lstm import sigmoid_lut

    sh, H, F = q.shifts, q.hidden_size, q.input_size
    lut, ls = q.lut.table.raw, q.lut.index_shift

    def sig(v: int) -> int:
        return int(sigmoid_lut(lut, ls, np.array([v]))[0])

    out, saturated = [], 0
    for xn in np.asarray(x, dtype=np.int64):
        h, c = [0] * H, [0] * H
        for t in range(q.num_frames):
            xs = [rshift_round(int(v), sh.x_opshift) for v in xn[t]]
            hs = [rshift_round(v, sh.h_opshift) for v in h]
            act = []
            for r in range(4 * H):
                acc = int(q.bias.raw[r])
                acc += sum(int(q.w_ih.raw[r, j]) * xs[j] for j in range(F))
                acc += sum(int(q.w_hh.raw[r, j]) * hs[j] for j in range(H))
                assert abs(acc) <= q.proof.bound  # the proof holds on this input
                s = sh.tanh_rshift if r // H == 2 else sh.sig_rshift
                pre = rshift_round(acc, s)
                saturated += pre != sat16(pre)
                act.append(sig(sat16(pre)))
            for j in range(H):
                i, f, g, o = act[j], act[H + j], 2 * act[2 * H + j] - 32768, act[3 * H + j]
                c[j] = sat32(rshift_round(f * c[j] + ((i * g) << sh.cell_ig_lshift), 15))
                tc = 2 * sig(sat16(rshift_round(c[j], sh.cell_tanh_rshift))) - 32768
                h[j] = sat16(rshift_round(o * tc, 15))
        out.append(h)
    return np.array(out, dtype=np.int64), saturated


def extreme_inputs(T: int, F: int) -> np.ndarray:
    """All −32768, all 32767, alternating extremes per frame and per feature."""
    alt_t = np.where(np.arange(T)[:, None] % 2 == 0, -32768, 32767) * np.ones((T, F), np.int64)
    alt_f = np.where(np.arange(F)[None, :] % 2 == 0, -32768, 32767) * np.ones((T, F), np.int64)
    return np.stack([np.full((T, F), -32768), np.full((T, F), 32767), alt_t, alt_f, -alt_f]).astype(
        np.int16
    )


def run_arm_probe(
    tmp: Path,
    sources: list[Path],
    includes: list[Path],
    cflags: tuple[str, ...] = (),
    variant: str = "neon_a32",
) -> list[str]:
    """Link a probe main with the firmware runtime (startup, UART) for the Cortex-A9 as fw.elf
    is built (the core's flags, codegen/target/cores.py), with the kernels' operations of
    ``variant`` (codegen/target/sources.py: "neon_a32" as fw.elf, or "ref"), boot it in
    qemu-system-arm -M xilinx-zynq-a9 and return the lines its UART prints up to "END"."""
    from codegen.target import sources as firmware_sources
    from codegen.target.firmware import FirmwareConfig, render_config
    from codegen.target.qemu_probe import link_probe, qemu_probe_lines

    inc = tmp / "include"
    inc.mkdir(parents=True, exist_ok=True)
    (inc / "fw_config.h").write_text(render_config(FirmwareConfig(), "fw-probe", "0" * 64))
    elf = link_probe(
        tmp / "probe.elf",
        list(sources),
        cflags=cflags,
        includes=[inc, *includes],
        variant=firmware_sources.variant(variant),
    )
    return qemu_probe_lines(elf)
