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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

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
    from codegen.emit import render_app_header, render_model, write_sources
    from codegen.firmware_build import FirmwareConfig, build_firmware
    from codegen.frontend import read_model
    from codegen.hostlib import model_cflags
    from codegen.manifest import manifest, write_manifest
    from codegen.program import write_program
    from codegen.quality import float_vs_fixed
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
