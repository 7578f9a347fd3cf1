"""`codegen inspect DIR`: print a build's manifest.json readably (formats, LUTs, overflow
margins, float-vs-fixed error per tensor and per activation, sizes, compile command)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from codegen.artefact.program import load_manifest

HELP = "show what `codegen build` decided: Q formats, errors per tensor, margins, sizes"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return out


def _e(x: Any) -> str:
    return f"{float(x):.3g}" if isinstance(x, int | float) else str(x)


def format_manifest(doc: dict[str, Any], brief: bool = False) -> str:
    s = doc["shapes"]
    lines = [
        f"build {doc['prefix']}  (codegen {doc['codegen_version']})",
        f"shapes: T={s['num_frames']} F={s['input_size']} H={s['hidden_size']} "
        f"C={s['num_classes']} k={s['k']} lambda={s['lam']} n={s['n_iter']}",
        *(
            [f"encoder: {e['layers']}-layer {e['family']}, latent = {e['latent']}"]
            if (e := doc.get("encoder"))
            else []
        ),
        *(
            f"  layer {n}: {layer['kind'].upper()} {layer['input_size']} -> "
            f"{layer['hidden_size']}, input {layer['formats']['x']}, gates int32 at A = "
            f"{layer['gate_accumulator']['acc_frac']} (margin "
            f"{layer['gate_accumulator']['margin_bits']:.2f} bits)"
            for n, layer in enumerate(doc.get("encoder", {}).get("stack", []))
        ),
        f"elatta: mode={doc['elatta']['mode']} sigma0={doc['elatta']['sigma0']} "
        f"seed={doc['elatta']['seed']} qelatta_v1={doc['elatta']['qelatta_v1']} "
        f"qelatta_v2={doc['elatta']['qelatta_v2']}",
    ]
    for name, inp in doc["inputs"].items():
        lines.append(f"input {name:<6} {inp['sha256'][:16]}  {inp['path']}")
    f = doc["formats"]
    lines += [
        "",
        "formats: "
        + ", ".join(f"{k}={v}" for k, v in f.items() if k != "adapt" and isinstance(v, str)),
    ]
    if f.get("adapt"):
        lines.append(
            "adapt formats: "
            + ", ".join(
                f"{k}={v.get('name', v) if isinstance(v, dict) else v}"
                for k, v in f["adapt"].items()
            )
        )
    fw = doc.get("firmware")
    if fw:
        lines += [
            "",
            f"firmware {fw['elf']} ({fw['build_id']}): .text {fw['text']} B, "
            f".rodata {fw['rodata']} B, .data {fw['data']} B, .bss {fw['bss']} B, "
            f"stacks {fw['stack']} B; static RAM {fw['static_ram_bytes']} / "
            f"{fw['ram_budget_bytes']} B",
        ]
        if "board" in fw:
            lines.append(
                f"board {fw['board']}: UART{fw['uart']} at {fw['baud']} baud from "
                f"{fw['uart_ref_hz'] / 1e6:g} MHz (CD {fw['uart_cd']}, BDIV {fw['uart_bdiv']})"
            )
    q = doc.get("float_vs_fixed", {})
    if q:
        parts = [f"z max|err| {_e(q['z']['max_abs'])} rms {_e(q['z']['rms'])}"]
        if "logits_noadapt" in q:
            parts.append(f"logits max|err| {_e(q['logits_noadapt']['max_abs'])}")
        if "same_class_noadapt" in q:
            parts.append(f"same class (no-adapt) {100 * q['same_class_noadapt']:.2f} %")
        lines.append(f"float vs fixed on {q['samples']} calibration clips: " + ", ".join(parts))
    if brief:
        return "\n".join(lines)

    lines += ["", "tensors (float vs fixed, quantization only):"]
    lines += _table(
        ["tensor", "shape", "format", "float range", "max|err|", "rms err", "LSB", "saturated"],
        [
            [
                t["name"],
                "x".join(str(d) for d in t["shape"]),
                t["format"],
                f"[{_e(t['float_min'])}, {_e(t['float_max'])}]",
                _e(t["max_abs_error"]),
                _e(t["rms_error"]),
                _e(t["lsb"]),
                str(t["saturated"]),
            ]
            for t in doc["tensors"]
        ],
    )
    if q:
        lines += ["", f"activations (integer pipeline vs float64, {q['samples']} clips):"]
        rows = [
            [
                "x (input)",
                _e(q["x"]["max_abs"]),
                _e(q["x"]["rms"]),
                f"{100 * q['x_saturated_fraction']:.3f} % saturated",
            ],
            ["z = h_T", _e(q["z"]["max_abs"]), _e(q["z"]["rms"]), ""],
        ]
        if "logits_noadapt" in q:
            rows.append(
                [
                    "logits (no-adapt)",
                    _e(q["logits_noadapt"]["max_abs"]),
                    _e(q["logits_noadapt"]["rms"]),
                    "",
                ]
            )
        lines += _table(["activation", "max|err|", "rms err", ""], rows)
    g = doc.get("lstm_gate_accumulator")
    if g:
        lines += [
            "",
            f"LSTM gate accumulator: int32 at A = {g['acc_frac']} fraction bits "
            f"(formats allow {g['acc_frac_formats']}, limited by the {g['limited_by']}); "
            f"operands xs = x >> {g['x_opshift']}, hs = h >> {g['h_opshift']} (rounding); "
            f"bound {g['bound']} (row {g['worst_row']}) <= 2^31 - 1, margin "
            f"{g['margin_bits']:.2f} bits",
        ]
    lines += ["", "accumulators (worst case over all int16 inputs):"]
    lines += _table(
        ["accumulator", "bits", "bound", "capacity", "margin (bits)", "worst row"],
        [
            [
                a["name"],
                str(a["bits"]),
                str(a["bound"]),
                str(a["capacity"]),
                f"{a['margin_bits']:.2f}",
                str(a["worst_row"]),
            ]
            for a in doc["accumulators"]
        ],
    )
    lines += ["", "LUTs:"]
    for name, lut in doc["luts"].items():
        lines.append(f"  {name}: " + ", ".join(f"{k}={v}" for k, v in lut.items()))
    cal = doc["calibration"]
    lines += [
        "",
        f"calibration: {cal['samples']} clips from {cal['source']}",
        f"  max|x| {_e(cal['x_max_abs'])}, max|c| {_e(cal['c_max_abs'])}, "
        f"max|h| {_e(cal['h_max_abs'])}",
        "  max|gate pre-activation| "
        + ", ".join(f"{g}={_e(v)}" for g, v in cal["gate_max_abs"].items()),
        "  beyond LUT range "
        + ", ".join(f"{g}={100 * v:.3f} %" for g, v in cal["gate_saturation"].items()),
    ]
    lines += ["", "shifts: " + ", ".join(f"{k}={v}" for k, v in doc["shifts"].items())]
    if fw:
        lines += ["", "sections:"]
        lines += [f"  {k:<12} {v['size']:>8}  0x{v['addr']:08x}" for k, v in fw["sections"].items()]
        lines += ["", "compile command:", f"  {fw['compile_command']}"]
    lines += ["", "generated sources:"]
    lines += [f"  {name}  {sha[:16]}" for name, sha in doc["sources"].items()]
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("build_dir", type=Path, help="output directory of `codegen build`")
    p.add_argument("--json", action="store_true", help="print the raw manifest.json")


def program_line(build_dir: str | Path, doc: dict[str, Any]) -> str:
    """Load the build's program (`codegen.artefact.program`) and say what it holds: proof that the
    directory runs without the inputs it was built from."""
    from codegen.artefact.program import PROGRAM_VERSION, load_program

    q = load_program(build_dir, doc.get("program"))
    a = q.adapt
    core = "encoder only" if a is None else f"{a.cfg.mode} k={a.k} lambda={a.cfg.lam}"
    kinds = "+".join(layer.kind.upper() for layer in q.encoder)
    return (
        f"program v{PROGRAM_VERSION}: program.json + program.npz loads: {kinds} "
        f"T={q.num_frames} F={q.input_size} H={q.encoder_size}, {len(q.source.classes)} "
        f"classes, {core}"
    )


def run(args: argparse.Namespace) -> int:
    doc = load_manifest(args.build_dir)
    build_dir = Path(args.build_dir)
    if build_dir.is_file():
        build_dir = build_dir.parent
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(format_manifest(doc))
        print(program_line(build_dir, doc))
    return 0
