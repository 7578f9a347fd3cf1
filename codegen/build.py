"""`codegen build`: checkpoint + V_k + config -> C sources, firmware ELF and manifest .

    frontend (codegen.frontend) -> float IR -> quantize (codegen.quantize, calibrated on clean
    SOURCE clips) -> fixed IR -> emit (codegen.emit, Jinja) -> arm-none-eabi-gcc

Output directory::

    DIR/src/<prefix>model.{c,h} + the adaptation core's files   generated C
    DIR/fw.elf, fw.map, firmware.json, include/fw_config.h       the runtime + model ELF
    DIR/manifest.json                                            everything `codegen inspect` shows

The ELF links the model runtime ``firmware/fw_app_kws.c`` (INFER/RESET, docs/protocol.md "Model
runtime"), bound to this model by the generated ``DIR/src/fw_app_model.h``.
"""

from __future__ import annotations

import argparse
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen import __version__
from codegen.errors import CodegenError
from codegen.ir import QModel

HELP = "compile model + V_k + ELaTTA config into quantized C, a firmware ELF and a manifest"


@dataclass(frozen=True)
class BuildResult:
    out_dir: Path
    qmodel: QModel
    sources: list[Path]
    manifest: dict[str, Any]
    elf: Path | None


def _err(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    d = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    return {
        "max_abs": float(np.max(np.abs(d))) if d.size else 0.0,
        "rms": float(np.sqrt(np.mean(d**2))) if d.size else 0.0,
    }


def float_vs_fixed(q: QModel, x_float: npt.ArrayLike) -> dict[str, Any]:
    """Activation errors of the integer pipeline against the float64 one on ``x_float``: the
    quantized input, z_t and the no-adapt logits, and the no-adapt class agreement."""
    from codegen.elatta.float_ref import head_logits
    from codegen.features import quantize_features
    from codegen.intref.lstm import lstm_float, lstm_int

    X = np.asarray(x_float, dtype=np.float64)
    L = q.lstm
    xi = quantize_features(X, L.x_fmt)
    z_f, _ = lstm_float(X, q.source.lstm)
    z_i = lstm_int(xi, L)
    out: dict[str, Any] = {
        "samples": int(X.shape[0]),
        "x": _err(L.x_fmt.to_float(xi), X),
        "x_saturated_fraction": float(np.mean(np.abs(X) > L.x_fmt.max_value)),
        "z": _err(L.h_fmt.to_float(z_i), z_f),
    }
    logits_f = head_logits(z_f, q.source.head.weight.values, q.source.head.bias.values)
    pred_f = np.argmax(logits_f, axis=1)
    if q.adapt is not None:
        from codegen.intref.model import infer_int

        res = infer_int(xi, q, np.arange(X.shape[0]), mode="no_adapt")
        out["same_class_noadapt"] = float(np.mean(res.pred_noadapt == pred_f))
        scale = logits_scale(q)
        if scale is not None:
            out["logits_noadapt"] = _err(np.asarray(res.logits_noadapt) * scale, logits_f)
    return out


def logits_scale(q: QModel) -> float | None:
    """Float value of one logit LSB, if the adaptation core exposes the logits format."""
    from codegen.manifest import adapt_formats

    fmts = adapt_formats(q)
    fmt = fmts.get("logits")
    return None if fmt is None else 1.0 / (1 << int(fmt["frac_bits"]))


def app_description(q: QModel) -> str:
    """INFO's application description (docs/protocol.md, "Model runtime"): ``key=value`` pairs
    separated by one space; `elatta_host.infer.parse_description` reads it back."""
    from codegen.manifest import adapt_formats

    src = q.source
    el = src.cmaes.elatta
    L = q.lstm
    fm = adapt_formats(q)
    pairs = [
        ("model", src.hashes.model[:16]),
        ("basis", src.hashes.basis[:16]),
        ("config", src.hashes.config[:16]),
        ("calib", q.calib.sha256[:16]),
        ("T", L.num_frames),
        ("F", L.input_size),
        ("H", L.hidden_size),
        ("C", len(src.classes)),
        ("k", src.cmaes.k),
        ("lam", int(el.popsize)),
        ("n", int(el.n_iter)),
        ("mode", el.mode),
        ("seed", int(el.seed)),
        ("x", L.x_fmt.name),
        ("z", L.h_fmt.name),
        ("logits", fm.get("logits", {}).get("name", "-")),
        ("entropy", fm.get("entropy", {}).get("name", "-")),
        ("p", fm.get("p", {}).get("name", "-")),
    ]
    return " ".join(f"{k}={v}" for k, v in pairs)


def render_app_header(q: QModel) -> str:
    """``fw_app_model.h``: the names and shapes of this model for ``firmware/fw_app_kws.c``."""
    from codegen.resources import jinja_env

    h = q.source.hashes
    return (
        jinja_env()
        .get_template("fw_app_model.h.j2")
        .render(
            version=__version__,
            input_hash=hashlib.sha256(
                f"{h.model}{h.basis}{h.config}{q.calib.sha256}".encode()
            ).hexdigest(),
            header=f"{q.prefix}model.h",
            p=q.prefix,
            M=q.prefix.upper(),
            x_fmt=q.lstm.x_fmt.name,
            description=app_description(q).replace("\\", "\\\\").replace('"', '\\"'),
        )
    )


def firmware_sources(q: QModel, src_files: list[Path]) -> list[Path]:
    from codegen import sources
    from codegen.resources import firmware_dir

    fw = firmware_dir()
    kernels = [fw / s for s in sources.kernels(True)]
    app = [fw / s for s in sources.APP] if q.adapt is not None else []
    return [p for p in src_files if p.suffix == ".c"] + kernels + app


def build(
    model_path: str | Path,
    basis_path: str | Path,
    config_path: str | Path,
    out_dir: str | Path,
    *,
    data_dir: str | Path | None = None,
    calib_features: npt.ArrayLike | None = None,
    compile_elf: bool = True,
) -> BuildResult:
    """The whole build. Calibration features come from ``data_dir`` (clean train split) or,
    for tests and the Python API, directly as normalised float features [N, T, F]."""
    from codegen.emit import render_model, write_sources
    from codegen.firmware_build import FirmwareConfig, build_firmware
    from codegen.frontend import read_model
    from codegen.hostlib import model_cflags
    from codegen.manifest import manifest, write_manifest
    from codegen.program import write_program
    from codegen.quantize import calibration_features, quantize_model

    model = read_model(model_path, basis_path, config_path)
    if calib_features is not None:
        feats = np.asarray(calib_features, dtype=np.float64)
        source = f"features given through the Python API ({feats.shape[0]} clips)"
    elif data_dir is not None:
        feats, source = calibration_features(model, str(data_dir))
    else:
        raise CodegenError(
            "calibration needs clean source data: pass --data DIR (a `codegen data` directory)"
        )
    q = quantize_model(model, feats, source)
    out = Path(out_dir)
    src_dir = out / "src"
    files = render_model(q)
    if q.adapt is not None:
        files["fw_app_model.h"] = render_app_header(q)
    sources = write_sources(files, src_dir)
    fw = None
    if compile_elf:
        t = model.target
        fw = build_firmware(
            FirmwareConfig(
                uart=t.uart, baud=t.baud, uart_ref_hz=t.uart_ref_hz, max_payload=t.max_payload
            ),
            out,
            extra_sources=firmware_sources(q, sources),
            extra_includes=[src_dir],
            extra_ldflags=[],
            extra_cflags=model_cflags(q),
        )
    quality = float_vs_fixed(q, feats)
    program = write_program(q, out)
    doc = manifest(q, sources, fw, quality, program)
    write_manifest(doc, out)
    return BuildResult(out, q, sources, doc, None if fw is None else fw.elf)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, type=Path, help="checkpoint (codegen train)")
    p.add_argument("--basis", required=True, type=Path, help="V_k .npz (codegen basis)")
    p.add_argument(
        "--config",
        type=Path,
        default=Path("configs/default.toml"),
        help="TOML config ([elatta], [quant], [target]); default configs/default.toml",
    )
    p.add_argument(
        "--data",
        type=Path,
        help="data directory (codegen data): clean train clips calibrate the formats",
    )
    p.add_argument("--out", required=True, type=Path, help="output directory")
    p.add_argument(
        "--no-elf",
        action="store_true",
        help="only generate C and the manifest (no arm-none-eabi-gcc)",
    )


def run(args: argparse.Namespace) -> int:
    from codegen.inspect_cmd import format_manifest

    if args.data is None:
        raise CodegenError(
            "--data DIR is required: calibration uses clean train clips of a `codegen data` "
            "directory"
        )
    res = build(
        args.model,
        args.basis,
        args.config,
        args.out,
        data_dir=args.data,
        compile_elf=not args.no_elf,
    )
    print(format_manifest(res.manifest, brief=True))
    print(f"wrote {res.out_dir / 'manifest.json'}")
    return 0
