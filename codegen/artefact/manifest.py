"""``manifest.json`` of a build: what `codegen build` decided, for people and for tools.

The manifest is descriptive: formats, LUTs, accumulator proofs, float-vs-fixed errors, sizes,
the compile command and the sha256 of every input, generated source and program file.
`codegen inspect` prints it; `codegen run` checks the device's INFO and the program files
(`codegen.artefact.program`) against it. Nothing computes from it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from codegen.artefact.program import MANIFEST_FORMAT, MANIFEST_VERSION
from codegen.base.version import __version__
from codegen.ir.nodes import Accumulator, QLstm, QModel, QTensor, adapt_formats
from codegen.stages.registry import tables as stage_tables

RAM_BUDGET_BYTES = 65536  # firmware/board/zynq7000/link.ld: data + bss + stacks


def tensor_report(t: QTensor) -> dict[str, Any]:
    lo, hi = t.float_range
    return {
        "name": t.name,
        "shape": list(t.shape),
        "format": t.fmt.name,
        "word": t.fmt.word,
        "float_min": lo,
        "float_max": hi,
        "max_abs_error": t.max_abs_error,
        "rms_error": t.rms_error,
        "lsb": 1.0 / (1 << t.fmt.frac_bits),
        "saturated": t.saturated,
    }


def accumulator_report(a: Accumulator) -> dict[str, Any]:
    return {
        "name": a.name,
        "bits": a.bits,
        "bound": a.bound,
        "capacity": a.capacity,
        "worst_row": a.worst_row,
        "margin_bits": round(a.margin_bits, 3),
    }


def _fmt_text(t: QTensor) -> str:
    return f"{t.fmt.name} (int32)" if t.fmt.word == 32 else t.fmt.name


def layer_formats(L: Any) -> dict[str, str]:
    """The activation formats of one encoder layer: its input, the σ input, the LSTM's cell
    state (a GRU has none), h."""
    out = {"x": L.x_fmt.name, "gate_preactivation": L.gate_fmt.name}
    if isinstance(L, QLstm):
        out["c"] = L.c_fmt.name
    out["h"] = L.h_fmt.name
    return out


def gate_proof_report(L: Any) -> dict[str, Any]:
    """An encoder layer's int32 gate accumulator: A, the operand shifts and the proof
    (docs/numeric.md §4)."""
    pr, sh = L.proof, L.shifts
    return {
        "bits": 32,
        "acc_frac": pr.acc_frac,
        "acc_frac_formats": pr.acc_frac_formats,
        "limited_by": pr.limited_by,
        "x_opshift": sh.x_opshift,
        "h_opshift": sh.h_opshift,
        "bound": pr.bound,
        "capacity": (1 << 31) - 1,
        "worst_row": pr.worst_row,
        "worst_row_terms": dict(zip(("w_ih", "w_hh", "bias", "rounding"), pr.terms, strict=True)),
        "margin_bits": round(L.acc_gate.margin_bits, 3),
        "bound_at_acc_frac_plus_1": pr.bound_above,
    }


def manifest(
    q: QModel,
    sources: list[Path],
    fw: Any | None,
    quality: dict[str, Any],
    program: dict[str, str] | None = None,
) -> dict[str, Any]:
    src = q.source
    L = q.encoder[0]  # the top-level formats, shifts and proof are the input layer's
    el = src.adapt
    doc: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "codegen_version": __version__,
        "prefix": src.prefix,
        "inputs": {
            **{
                name: {"path": src.paths.get(name, ""), "sha256": sha}
                for name, sha in src.hashes.as_dict().items()
            },
            "calib": {"path": q.calib.source, "sha256": q.calib.sha256},
        },
        "shapes": {
            "num_frames": q.num_frames,
            "input_size": q.input_size,
            "hidden_size": q.encoder_size,
            "num_classes": len(src.classes),
            "k": el.k,
            "lam": el.lam,
            "n_iter": int(el.n_iter),
        },
        "encoder": encoder_entry(q),
        "classes": list(src.classes),
        "elatta": {
            **{k: v for k, v in asdict(el).items() if k != "stages"},
            # every input stage's table, its defaults where the config had none
            "stages": {t.name: t.report(el.stage_settings(t.name)) for t in stage_tables()},
            "popsize": el.lam,
            "qelatta_v2": list(el.qelatta_v2) if el.qelatta_v2 else None,
        },
        "quant": asdict(src.quant),
        "target": asdict(src.target),
        "formats": {
            **layer_formats(L),
            "z": q.encoder[-1].h_fmt.name,
            **{t.name: _fmt_text(t) for t in L.tensors()},
            "adapt": {k: v for k, v in adapt_formats(q).items()},
        },
        "x_frac_bits": q.x_fmt.frac_bits,
        "luts": {
            "sigmoid": {
                "entries": L.lut.size,
                "input": L.lut.in_fmt.name,
                "output": L.lut.table.fmt.name,
                "step": 16.0 / (L.lut.size - 1),
                "interpolation": "linear",
                "tanh": "2*sigmoid(2x) - 1",
            },
            **adapt_luts(q),
        },
        "shifts": asdict(L.shifts),
        "lstm_gate_accumulator": gate_proof_report(L),
        "accumulators": [accumulator_report(layer.acc_gate) for layer in q.encoder]
        + adapt_accumulators(q),
        "calibration": asdict(q.calib),
        "tensors": [tensor_report(t) for layer in q.encoder for t in layer.tensors()]
        + [tensor_report(L.lut.table)]
        + adapt_tensors(q),
        "float_vs_fixed": quality,
        "sources": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(sources)},
        "program": dict(program or {}),
    }
    if fw is not None:
        secs = fw.sections
        doc["firmware"] = {
            "elf": fw.elf.name,
            "build_id": fw.build_id,
            **fw.console(),
            "sections": {
                k: {"size": v[0], "addr": v[1]}
                for k, v in secs.items()
                if not k.startswith((".debug", ".ARM.attributes"))
            },
            "text": secs.get(".text", (0, 0))[0],
            "rodata": secs.get(".rodata", (0, 0))[0],
            "data": secs.get(".data", (0, 0))[0],
            "bss": secs.get(".bss", (0, 0))[0],
            "stack": secs.get(".stack", (0, 0))[0],
            "static_ram_bytes": fw.static_ram,
            "ram_budget_bytes": RAM_BUDGET_BYTES,
            "compile_command": fw.compile_command,
        }
    return doc


def encoder_entry(q: QModel) -> dict[str, Any]:
    """The encoder's layers and what the ELaTTA latent is (the input of the final Linear)."""
    last = q.encoder[-1]
    pooled = {
        "last": "the last layer's h_T",
        "mean": "the mean over time of the last layer's h_t",
        "max": "the maximum over time of the last layer's h_t",
    }[last.pool]
    latent = pooled
    if q.mlp:
        latent = f"the output of {len(q.mlp)} hidden Linear + ReLU layer(s) on {pooled}"
    return {
        "family": "+".join(dict.fromkeys(layer.kind.upper() for layer in q.encoder)),
        "layers": len(q.encoder),
        # bottom to top: each layer's kind, shape, input format and int32 proof
        "stack": [
            {
                "kind": layer.kind,
                "input_size": layer.input_size,
                "hidden_size": layer.hidden_size,
                "formats": layer_formats(layer),
                "shifts": asdict(layer.shifts),
                "gate_accumulator": gate_proof_report(layer),
            }
            for layer in q.encoder
        ],
        "pool": last.pool,
        "mlp": [d.out_features for d in q.mlp],
        "latent_size": q.latent_size,
        "latent_format": q.z_fmt.name,
        "latent": "the input of the final Linear: " + latent,
    }


def adapt_luts(q: QModel) -> dict[str, Any]:
    return dict(adapt_manifest(q).get("luts", {}))


def adapt_accumulators(q: QModel) -> list[dict[str, Any]]:
    head = adapt_manifest(q).get("head_accumulator")
    if not head:
        return []
    bits = int(head["bits"])
    return [
        {
            "name": "head (W z + b)",
            "bits": bits,
            "bound": int(head["bound"]),
            "capacity": (1 << (bits - 1)) - 1,
            "worst_row": int(head.get("worst_row", -1)),
            "margin_bits": round(float(head["margin_bits"]), 3),
        }
    ]


def adapt_tensors(q: QModel) -> list[dict[str, Any]]:
    return list(adapt_manifest(q).get("tensors", []))


def adapt_manifest(q: QModel) -> dict[str, Any]:
    """LUTs and quantized tensors of the adaptation core with their float-vs-fixed errors."""
    p = q.adapt
    if p is None:
        return {}
    src = q.source
    tensors = []
    for name, raw, fmt, ref in (
        ("head.weight", p.W, p.w_fmt, src.head.weight.values),
        ("head.bias", p.b, p.b_fmt, src.head.bias.values),
        ("basis.V", p.V, p.v_fmt, src.basis.V.values),
    ):
        deq = np.asarray(raw, np.float64) / (1 << fmt.frac_bits)
        err = np.abs(deq - ref)
        lim = fmt.max_raw / (1 << fmt.frac_bits)
        tensors.append(
            {
                "name": name,
                "shape": list(np.shape(raw)),
                "format": fmt.name,
                "word": fmt.word,
                "float_min": float(np.min(ref)),
                "float_max": float(np.max(ref)),
                "max_abs_error": float(err.max()) if err.size else 0.0,
                "rms_error": float(np.sqrt(np.mean(err**2))) if err.size else 0.0,
                "lsb": 1.0 / (1 << fmt.frac_bits),
                "saturated": int(np.sum(np.abs(ref) > lim)),
            }
        )
    luts = {
        "exp2": {"entries": int(np.size(p.exp2_lut)), "output": "Q1.30", "use": "entropy, sigma"},
        "log2": {"entries": int(np.size(p.log2_lut)), "output": "Q1.30", "use": "entropy"},
        "gauss": {
            "entries": int(np.size(p.gauss_lut)),
            "shape": list(np.shape(p.gauss_lut)),
            "output": "Q3.28",
            "use": "inverse-CDF normals",
        },
    }
    return {
        "tensors": tensors,
        "luts": luts,
        "head_accumulator": {
            "bits": 32,
            "bound": int(p.head_bound),
            "margin_bits": float(np.log2((2**31 - 1) / max(int(p.head_bound), 1))),
        },
    }


def _json_default(o: object) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def write_manifest(doc: dict[str, Any], out_dir: Path) -> Path:
    path = out_dir / "manifest.json"
    path.write_text(json.dumps(doc, indent=2, default=_json_default) + "\n")
    return path
