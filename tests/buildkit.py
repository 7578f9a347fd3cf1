"""Randomly initialised checkpoints, bases and configs of any shape for the compiler tests
(test_frontend, test_quantize, test_lstm_int, test_build, test_shapes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from codegen.basis import Basis, compute_basis, save_basis
from codegen.features import MfccParams
from codegen.model import KwsLstm, ModelMeta, file_sha256, save_checkpoint


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


def make_meta(F: int, H: int, C: int, T: int, seed: int = 0,
              classes: tuple[str, ...] | None = None,
              norm: tuple[np.ndarray, np.ndarray] | None = None) -> ModelMeta:
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


def config_text(k: int = 2, n_iter: int = 2, mode: str = "strict", extra: str = "",
                prefix: str = "kws_", sigma0: float = 0.3) -> str:
    return (
        f"[elatta]\nk = {k}\nn_iter = {n_iter}\nmode = \"{mode}\"\nsigma0 = {sigma0}\n{extra}\n"
        f"[target]\nprefix = \"{prefix}\"\n"
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
    save_basis(out / "basis.npz",
               Basis(V, s, mean, z.shape[0], k, seed, file_sha256(out / "model.pt"), ev))
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


def lstm_only(tmp: Path, kit: Kit, x_calib: np.ndarray, *, sanitize: bool = True,
              trace: bool = False):  # type: ignore[no-untyped-def]
    """Quantize only the LSTM and build the host library of its generated C (no adaptation
    core): the encoder's tests do not depend on the adaptation files."""
    from codegen.emit import render_model, write_sources
    from codegen.frontend import read_model
    from codegen.hostlib import (
        LSTM_FIRMWARE_SOURCES,
        HostModel,
        build_host_library,
        render_host_api,
    )
    from codegen.ir import QModel
    from codegen.quantize import quantize_lstm

    model = read_model(kit.model, kit.basis, kit.config)
    q, stats, _ = quantize_lstm(model.lstm, x_calib, model.quant)
    qm = QModel(model, q, None, stats)
    src = tmp / "src"
    write_sources(render_model(qm, adapt_files={}), src)
    hb = build_host_library(src, render_host_api(qm), tmp / "host", sanitize=sanitize,
                            trace=trace, firmware_sources=LSTM_FIRMWARE_SOURCES)
    return qm, HostModel(hb, qm)


def full_build(tmp: Path, kit: Kit, x_calib: np.ndarray, *, sanitize: bool = True,
               trace: bool = False):  # type: ignore[no-untyped-def]
    """The whole model (LSTM + adaptation core) rendered and built for the host."""
    from codegen.emit import render_model, write_sources
    from codegen.frontend import read_model
    from codegen.hostlib import build_for
    from codegen.quantize import quantize_model

    q = quantize_model(read_model(kit.model, kit.basis, kit.config), x_calib)
    src = tmp / "src"
    write_sources(render_model(q), src)
    return q, build_for(q, src, tmp / "host", sanitize=sanitize, trace=trace)


def data_norm(pcm: np.ndarray, F: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Per-coefficient MFCC mean and std of some clips (what training stores in the meta)."""
    from codegen.features import mfcc

    feats = np.asarray(mfcc(pcm, MfccParams(n_mfcc=F)), dtype=np.float64)
    return feats.mean(axis=(0, 1)), feats.std(axis=(0, 1)) + 1e-6
