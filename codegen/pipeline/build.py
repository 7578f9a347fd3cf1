"""`codegen build`: checkpoint + V_k + config -> C sources, firmware ELF and manifest .

    frontend (codegen.frontend.reader) -> float IR -> quantize (codegen.quantize.model, calibrated
    on clean
    SOURCE clips) -> fixed IR -> emit (codegen.emit.c, Jinja) -> arm-none-eabi-gcc

Output directory::

    DIR/src/<prefix>model.{c,h} + the adaptation core's files   generated C
    DIR/fw.elf, fw.map, firmware.json, include/fw_config.h       the runtime + model ELF
    DIR/manifest.json                                            everything `codegen inspect` shows

The ELF links the model runtime ``firmware/fw_app_kws.c`` (INFER/RESET, docs/protocol.md "Model
runtime"), bound to this model by the generated ``DIR/src/fw_app_model.h``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from codegen.base.errors import BuildError, CodegenError
from codegen.frontend.cliargs import Declared, add_model_arguments, declared_from_args
from codegen.ir.nodes import QModel, TargetOptions
from codegen.target.boards import target_board
from codegen.target.firmware import add_board_arguments, board_overrides

if TYPE_CHECKING:
    from codegen.target.firmware import FirmwareConfig

HELP = "compile model + V_k + ELaTTA config into quantized C, a firmware ELF and a manifest"


@dataclass(frozen=True)
class BuildResult:
    out_dir: Path
    qmodel: QModel
    sources: list[Path]
    manifest: dict[str, Any]
    elf: Path | None
    text: str = ""  # the summary `codegen build` prints (`summary`)


def user_agreement(imported: Any, feats: np.ndarray) -> tuple[dict[str, Any], Any]:
    """The float twin against the user's own model (refuses a structural mismatch); the report
    and the user's logits on ``feats`` (None without a forward pass)."""
    from codegen.frontend.importer import verify_against_user

    check = verify_against_user(imported, feats)
    return {
        "file": imported.path,
        "kind": imported.kind,
        "provenance": list(imported.provenance),
        "checked": check.checked,
        "samples": check.samples,
        "float_twin_max_abs_logit_error": None if not check.checked else check.max_abs_logit_error,
        "float_twin_same_class": None if not check.checked else check.same_class,
    }, check.logits


def tuned_for(cfg: Any, imported: Any) -> dict[str, Any]:
    """Which model the config's σ₀, β and radius were chosen for (``[elatta] model_sha256``,
    written by `codegen eval`; docs/elatta.md §8) against the model built: a warning names both
    when they differ, since a σ₀ chosen for another model's latents searches at the wrong
    scale."""
    doc: dict[str, Any] = {"config_model_sha256": cfg.tuned_for or None, "model": imported.sha256}
    if cfg.tuned_for and cfg.tuned_for != imported.sha256:
        doc["warning"] = (
            f"{cfg.source}: [elatta] sigma0/beta/radius were chosen for model sha256 "
            f"{cfg.tuned_for[:12]}…, not for {imported.path} ({imported.sha256[:12]}…): run "
            f"`codegen eval --model {imported.path} ...` and build with its elatta.toml"
        )
    return doc


def integer_agreement(q: QModel, logits: Any, feats: np.ndarray) -> dict[str, Any]:
    """How often the integer model's no-adapt class on ``feats`` equals the user's model's
    (``logits``: the user's, on the same clips; None without a forward pass)."""
    from codegen.base.features import quantize_features
    from codegen.intref.model import infer_int

    if logits is None or q.adapt is None:
        return {"integer_same_class": None}
    xi = quantize_features(feats, q.x_fmt)
    pred = infer_int(xi, q, np.arange(len(xi)), mode="no_adapt").pred_noadapt
    return {"integer_same_class": float(np.mean(np.asarray(pred) == np.argmax(logits, axis=1)))}


def clean_test_agreement(q: QModel, imported: Any, data_dir: str | Path) -> dict[str, Any]:
    """The integer model's no-adapt class against the user's model on the data set's clean
    test clips (up to 512, in order): the clips the device is meant for, none of them seen
    by calibration."""
    from codegen.data import load_split
    from codegen.frontend.importer import run_user
    from codegen.ir.meta import features_for

    test = load_split(str(data_dir), "test")
    n = min(512, len(test))
    feats = features_for(test.pcm[:n], q.source.meta)
    agree = integer_agreement(q, run_user(imported, feats), feats)
    return {
        "clean_test_clips": n,
        "integer_same_class_clean_test": agree["integer_same_class"],
    }


def user_model_line(doc: dict[str, Any]) -> str:
    """One line on how far the compiled model agrees with the user's own."""
    u = doc.get("float_vs_fixed", {}).get("user_model", {})
    if not u:
        return ""
    lines = [f"your model ({u['kind']}, {u['file']}):"]
    if u["checked"]:
        lines[0] += (
            f" float twin max |logit error| {u['float_twin_max_abs_logit_error']:.2g}, same class "
            f"{100 * u['float_twin_same_class']:.2f} %; integer model same class "
            f"{100 * (u.get('integer_same_class') or 0.0):.2f} % on {u['samples']} calibration "
            "clips"
        )
        if u.get("integer_same_class_clean_test") is not None:
            lines[0] += (
                f", {100 * u['integer_same_class_clean_test']:.2f} % on "
                f"{u['clean_test_clips']} clean test clips"
            )
    else:
        lines[0] += (
            " not run (the file holds weights only: the float twin computes the declared "
            "pooling and head)"
        )
    lines += [f"  {a}" for a in u.get("provenance", ())]
    return "\n".join(lines)


def weight_format_line(doc: dict[str, Any]) -> str:
    """One line on the weight-format search (codegen.quantize.format_search)."""
    s = doc.get("float_vs_fixed", {}).get("weight_format_search") or {}
    if not s or s.get("chosen") is None:
        return ""
    b, c = s["baseline"], s["chosen"]
    moved = ", ".join(
        f"layer {i + 1}: W_ih -{a}, W_hh -{h} fraction bits"
        for i, (a, h) in enumerate(c["weight_shifts"])
    )
    return (
        f"weight formats ({len(s['tried'])} candidates, {s['clips']} calibration clips): "
        f"{moved}; "
        f"latent rms error {b['z_rms']:.2g} -> {c['z_rms']:.2g}, max {b['z_max']:.2g} -> "
        f"{c['z_max']:.2g}"
    )


def firmware_sources(q: QModel, src_files: list[Path]) -> list[Path]:
    """What the firmware of ``q`` compiles besides the runtime: the generated C, the kernels,
    and with an adaptation core the model runtime and its input stages' C (each table of
    `codegen.stages.registry` whose params the build has: names under firmware/, or paths)."""
    from codegen.base.resources import firmware_dir
    from codegen.stages.registry import tables
    from codegen.target import sources

    fw = firmware_dir()
    kernels = [fw / s for s in sources.kernels(True)]
    app: list[Path] = []
    if q.adapt is not None:
        stage_c = [fw / s for t in tables() if t.name in q.stages for s in t.sources]
        app = list(dict.fromkeys(stage_c)) + [fw / s for s in sources.APP]
    if q.stream:
        app = [fw / s for s in sources.MFCC] + app
    return [p for p in src_files if p.suffix == ".c"] + kernels + app


def mfcc_frontend(q: QModel, files: dict[str, str]) -> dict[str, Any]:
    """The model's integer MFCC front end (docs/numeric.md §7): its tables join ``files``
    (``<prefix>mfcc_params.{c,h}``; the linker keeps them only where a firmware calls the
    kernel) and its formats, shifts and bounds go to the manifest. A model whose feature
    settings the integer front end cannot take keeps the feature-input path; the manifest
    says why."""
    from codegen.base.errors import ConfigError
    from codegen.emit.mfcc import emit_mfcc_c, mfcc_hash
    from codegen.quantize.mfcc import quantize_mfcc_for

    try:
        qm = q.mfcc if q.mfcc is not None else quantize_mfcc_for(q)
    except (ConfigError, CodegenError) as exc:
        return {"unavailable": str(exc)}
    emitted = emit_mfcc_c(qm, q.prefix)
    files.update(emitted)
    return qm.summary() | {"files": sorted(emitted), "sha256": mfcc_hash(qm)}


def with_streaming(q: QModel) -> tuple[QModel, str | None]:
    """Attach the integer front end when the firmware serves the streaming audio mode
    (docs/protocol.md, "Audio mode"): [target] input "pcm" or "both", an encoder whose every
    layer streams (`codegen.ir.layers.LayerKind.streaming`: the LSTM's per-step kernel,
    elt_lstm_s16_step) and an adaptation core. Returns the model and, when
    streaming is off, why. input = "pcm" without streaming is refused, naming the reason."""
    from codegen.base.errors import ConfigError
    from codegen.ir.layers import why_not_streaming
    from codegen.quantize.mfcc import quantize_mfcc_for

    want = q.source.target.input
    if want == "features":
        return q, '[target] input = "features"'
    why = why_not_streaming(q.encoder)
    if why is not None:
        why = f"the encoder cannot be stepped one frame at a time ({why})"
    elif q.adapt is None:
        why = "an encoder-only build has no model runtime"
    else:
        try:
            return dataclasses.replace(q, mfcc=quantize_mfcc_for(q)), None
        except (ConfigError, CodegenError) as exc:
            why = f"the integer MFCC front end cannot take this model's features ({exc})"
    if want == "pcm":
        raise CodegenError(
            f'[target] input = "pcm" (streaming audio only) cannot be built: {why}; use '
            'input = "features"'
        )
    return q, why


def ram_split(elf: Path, prefix: str, stack_bytes: int, total: int) -> dict[str, int]:
    """Static RAM of a firmware by role, bytes, from the ELF's symbol sizes
    (``arm-none-eabi-nm -S``): the protocol server's frame buffers, the encoder's state (every
    ``<prefix>lstm*``, ``<prefix>gru*``, ``<prefix>layer_*``, ``<prefix>encoder_*`` and
    ``<prefix>step*`` buffer, z_t), the front end's stream and work area, the model runtime
    (adaptation parameters, state and scratch, the feature buffer of INFER), the stacks, and
    the rest (other variables, alignment padding) up to ``total``."""
    from codegen.target.toolchain import find_tool, run_tool

    out = run_tool([find_tool("arm-none-eabi-nm"), "-S", str(elf)], what="nm")
    split = {"frame buffers": 0, "encoder state": 0, "front end": 0, "model runtime": 0}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 4 or parts[2] not in "bBdD":
            continue
        size, role = int(parts[1], 16), _role(parts[3], prefix)
        if role is not None:
            split[role] += size
    return split | {"stacks": stack_bytes, "other": total - stack_bytes - sum(split.values())}


def link_firmware(
    q: QModel,
    cfg: Any,
    src_files: list[Path],
    src_dir: Path,
    out: Path,
    ldflags: tuple[str, ...] = (),
) -> Any:
    """fw.elf of this model: the runtime, the generated sources and the kernels they need."""
    from codegen.emit.flags import model_cflags
    from codegen.target.firmware import build_firmware

    return build_firmware(
        cfg,
        out,
        extra_sources=firmware_sources(q, src_files),
        extra_includes=[src_dir],
        extra_ldflags=list(ldflags),
        extra_cflags=model_cflags(q),
    )


def _role(name: str, prefix: str) -> str | None:
    """The `ram_split` role of a RAM variable, by its symbol name."""
    if name == "server":
        return "frame buffers"
    if name.startswith(
        tuple(f"{prefix}{s}" for s in ("lstm", "gru", "layer_", "encoder_", "step", "z_t"))
    ):
        return "encoder state"
    if name == "app_stream":
        return "front end"
    if name == "app" or name.startswith("stage_"):  # an input stage's state (elt_stage.h)
        return "model runtime"
    return None


def map_ram_split(map_file: Path, prefix: str) -> tuple[int, dict[str, int]] | None:
    """Static RAM and its `ram_split` from a link map (``-Wl,-Map``), which ld writes even when
    the RAM budget ASSERT of link.ld refuses the link: the sizes of the output sections .data,
    .bss and .stack, and of each variable's own input section (``.bss.NAME``/``.data.NAME``:
    the firmware compiles with -fdata-sections). None when the map does not have them."""
    try:
        text = map_file.read_text(errors="replace")
    except OSError:
        return None
    # what --gc-sections dropped is listed first ("Discarded input sections"): not in RAM
    lines = text.partition("Linker script and memory map")[2].splitlines()
    out: dict[str, int] = {}
    split = {"frame buffers": 0, "encoder state": 0, "front end": 0, "model runtime": 0}
    for i, line in enumerate(lines):
        parts = line.split()
        if len(parts) == 1 and i + 1 < len(lines):  # a long name: address and size wrap
            parts += lines[i + 1].split()
        if len(parts) < 3 or not parts[1].startswith("0x") or not parts[2].startswith("0x"):
            continue
        name, size = parts[0], int(parts[2], 16)
        if not line.startswith(" ") and name in (".data", ".bss", ".stack"):
            out[name] = size
        elif line.startswith(" .") and name.startswith((".bss.", ".data.")):
            role = _role(name.split(".", 2)[2], prefix)
            if role is not None:
                split[role] += size
    if set(out) != {".data", ".bss", ".stack"}:
        return None
    total = sum(out.values())
    stacks = out[".stack"]
    return total, split | {"stacks": stacks, "other": total - stacks - sum(split.values())}


def over_budget_message(
    q: QModel, cfg: Any, src_files: list[Path], src_dir: Path, probe_dir: Path, map_file: Path
) -> str:
    """The linker refused the firmware (data + bss + stacks > 64 KiB): say by how much and where
    (`ram_split`), from the refused link's map, or, without one, from a second link without the
    budget; and name the ways out."""
    import shutil

    found = map_ram_split(map_file, q.prefix)
    if found is not None:
        total, split = found
    else:
        try:
            fw = link_firmware(
                q, cfg, src_files, src_dir, probe_dir,
                ldflags=("-Wl,--defsym=RAM_BUDGET=0x1000000",),
            )  # fmt: skip
            stacks = fw.sections.get(".stack", (0, 0))[0]
            split = ram_split(fw.elf, q.prefix, stacks, fw.static_ram)
            total = fw.static_ram
        finally:
            shutil.rmtree(probe_dir, ignore_errors=True)
    parts = ", ".join(f"{k} {v} B" for k, v in split.items())
    t = q.source.target
    ways = []
    if t.input != "pcm":
        ways.append('stream audio instead of feature INFER ([target] input = "pcm")')
    ways.append(f"lower [target] max_payload (now {t.max_payload})")
    ways.append("use fewer frames, features or hidden units")
    return (
        f"static RAM {total} B exceeds the 65536 B budget by {total - 65536} B "
        f"(docs/targets.md §1): {parts}; {'; or '.join(ways)}"
    )


def streaming_summary(q: QModel, why_not: str | None, fw: Any) -> dict[str, Any]:
    """The manifest's ``streaming`` entry: whether the firmware serves the audio mode, why not,
    and the RAM split of the firmware (docs/protocol.md, "Audio mode")."""
    doc: dict[str, Any] = {
        "audio_mode": q.stream,
        "feature_infer": q.feature_infer,
        "input": q.source.target.input,
    }
    if why_not is not None:
        doc["unavailable"] = why_not
    if q.stream:
        mp = q.source.target.max_payload
        doc["max_chunk_samples"] = (mp - 4) // 2
        m = q.mfcc
        # elt_mfcc_work_t at its -DELT_MFCC_*_MAX sizes: scratch of one AUDIO request, on the
        # main stack (part of "stacks" below; INFO's stack high-water mark measures it); the
        # power array has 3 entries more for the NEON mel's last block (firmware/elt_mfcc_s16.h)
        work = 8 * m.n_cfft + 8 * (m.n_bins + 3) + 4 * m.params.n_mels + 4
        doc["front_end_work_on_stack_bytes"] = work
    if fw is not None:
        stacks = fw.sections.get(".stack", (0, 0))[0]
        doc["ram_bytes"] = fw.static_ram
        doc["ram_split_bytes"] = ram_split(fw.elf, q.prefix, stacks, fw.static_ram)
    return doc


def streaming_line(doc: dict[str, Any]) -> str:
    """One line for the build's screen: the input paths and the RAM split."""
    paths = [
        n for n, on in (("feature INFER", doc["feature_infer"]), ("audio", doc["audio_mode"])) if on
    ]
    text = f"input: {' + '.join(paths) or 'none'}"
    if "unavailable" in doc:
        text += f" (no audio mode: {doc['unavailable']})"
    if "max_chunk_samples" in doc:
        text += f"; audio chunks <= {doc['max_chunk_samples']} samples"
    if "ram_split_bytes" in doc:
        parts = ", ".join(f"{k} {v}" for k, v in doc["ram_split_bytes"].items())
        text += f"\nstatic RAM {doc['ram_bytes']} B of 65536: {parts}"
        if "front_end_work_on_stack_bytes" in doc:
            work = doc["front_end_work_on_stack_bytes"]
            text += f" (the front end's {work} B work area is on the stack)"
    return text


def prepare_out_dir(out: Path) -> None:
    """Create the output directory up front, or refuse it before any work, naming the reason."""
    for parent in (out, *out.parents):
        if parent.exists() and not parent.is_dir():
            raise CodegenError(
                f"--out {out}: {parent} is a file, not a directory; choose another --out"
            )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CodegenError(f"--out {out}: cannot create it ({exc.strerror})") from exc


def remove_stale_sources(src_dir: Path, written: list[Path]) -> list[str]:
    """Generated C of an earlier build that this build did not write (another prefix, an
    encoder-only build): removed, so the firmware never compiles a stale file. Only files the
    build owns (*.c, *.h directly in ``src/``) are touched."""
    keep = {p.name for p in written}
    gone = []
    for p in sorted(src_dir.glob("*.[ch]")):
        if p.name not in keep:
            p.unlink()
            gone.append(p.name)
    return gone


def build(
    model_path: str | Path | Any,
    basis_path: str | Path,
    config_path: str | Path,
    out_dir: str | Path,
    *,
    data_dir: str | Path | None = None,
    calib_features: npt.ArrayLike | None = None,
    compile_elf: bool = True,
    trust_pickle: bool = False,
    board: str | None = None,
    uart_overrides: Mapping[str, int] | None = None,
    notes: list[str] | None = None,
    declared: Declared | None = None,
    progress: bool = False,
    core: str | None = None,
) -> BuildResult:
    """The whole build (``progress``: a line on stderr as each stage starts, with the time so
    far). ``model_path``: any model file `codegen.frontend.importer.load_model`
    reads, or
    an imported model. Calibration features come from ``data_dir`` (clean train split) or, for
    tests and the Python API, directly as normalised float features [N, T, F]. The float twin
    is checked against the user's own forward pass on them (`codegen.frontend.importer`).
    ``board`` (a preset name) or ``core`` (a core's name: its default board, or ``board`` when
    both are given) replaces the config's [target] board and UART settings;
    ``uart_overrides`` (uart, baud, uart_ref_hz) override either; ``notes`` gets a line for each
    value that replaced another.

    ``declared``: what the user states about the model (command line), together with the
    config's [model] and [features] (`codegen.frontend.cliargs.Declared`)."""
    from codegen.artefact.manifest import manifest, write_manifest
    from codegen.artefact.program import write_program
    from codegen.emit.c import render_app_header, render_model, write_sources
    from codegen.frontend.cliargs import merge
    from codegen.frontend.importer import ImportedModel, check_data, load_model, resolve_pooling
    from codegen.frontend.reader import load_config, read_model
    from codegen.intref.quality import float_vs_fixed
    from codegen.quantize.format_search import search_weight_formats
    from codegen.quantize.model import calibration_features, quantize_model

    t0 = time.monotonic()

    def stage(what: str) -> None:
        if progress:
            print(f"build: {what} ({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)

    out = Path(out_dir)
    prepare_out_dir(out)
    stage("reading the model, basis and config")
    cfg = load_config(config_path)
    said = merge(declared or Declared(), cfg.declared)
    if isinstance(model_path, ImportedModel):
        imported = model_path
        if data_dir is not None:
            check_data(imported.meta, data_dir, imported.path)
    else:
        imported = load_model(
            model_path, data_dir=data_dir, trust_pickle=trust_pickle, declared=said
        )
    model = read_model(imported, basis_path, cfg)
    stage("calibration features")
    if calib_features is not None:
        feats = np.asarray(calib_features, dtype=np.float64)
        source = f"features given through the Python API ({feats.shape[0]} clips)"
    elif data_dir is not None:
        feats, source = calibration_features(model, str(data_dir))
    else:
        raise CodegenError(
            "calibration needs clean source data: pass --data DIR (a `codegen data` directory)"
        )
    pooled = resolve_pooling(imported, feats)
    if pooled is not imported:  # the user's model pools over time: lower that
        imported = pooled
        model = read_model(imported, basis_path, cfg)
    stage("your model's forward pass against the float twin")
    user, user_logits = user_agreement(imported, feats)
    stage("weight formats (searched on the calibration clips)")
    search = search_weight_formats(model, feats, source)
    stage("quantizing")
    q = quantize_model(model, feats, source, weight_shifts=search.weight_shifts)
    q, no_stream = with_streaming(q)
    stage("emitting C")
    src_dir = out / "src"
    files = render_model(q)
    if q.adapt is not None:
        files["fw_app_model.h"] = render_app_header(q)
    frontend = mfcc_frontend(q, files)
    sources = write_sources(files, src_dir)
    remove_stale_sources(src_dir, sources)
    fw = None
    if compile_elf:
        stage("compiling and linking the firmware")
        fw_cfg = firmware_config(model.target, board, uart_overrides or {}, notes, core)
        (out / "fw.map").unlink(missing_ok=True)  # only this link's map tells its RAM
        try:
            fw = link_firmware(q, fw_cfg, sources, src_dir, out)
        except BuildError as exc:
            if "exceed the RAM budget" not in str(exc):
                raise
            raise CodegenError(
                over_budget_message(q, fw_cfg, sources, src_dir, out / "ram-probe", out / "fw.map")
            ) from None
    stage("checking the integer model against the float one")
    quality = float_vs_fixed(q, feats)
    quality["weight_format_search"] = search.to_dict()
    tuned = tuned_for(cfg, imported)
    quality["elatta_tuned_for"] = tuned
    if tuned.get("warning"):
        quality.setdefault("warnings", []).append(tuned["warning"])
    quality["user_model"] = user | integer_agreement(q, user_logits, feats)
    if data_dir is not None:  # also on clips the model was not calibrated on
        quality["user_model"] |= clean_test_agreement(q, imported, data_dir)
    stage("writing the program and the manifest")
    program = write_program(q, out)
    doc = manifest(q, sources, fw, quality, program)
    doc["mfcc_frontend"] = frontend
    doc["streaming"] = streaming_summary(q, no_stream, fw)
    write_manifest(doc, out)
    res = BuildResult(out, q, sources, doc, None if fw is None else fw.elf)
    return dataclasses.replace(res, text=summary(res))


def firmware_config(
    t: TargetOptions,
    board: str | None,
    overrides: Mapping[str, int],
    notes: list[str] | None,
    core: str | None = None,
) -> FirmwareConfig:
    """The firmware a build links: the config's [target] (its board, or its core's default
    board, or "qemu", and UART), or the board or core named on the command line in its place
    (`codegen.target.boards.target_board`); then the command line's UART options."""
    from codegen.target.boards import get_board, target_board
    from codegen.target.firmware import FirmwareConfig

    if board is None and core is None:
        return FirmwareConfig.from_board(
            target_board(t.board or None, t.core or None),
            uart=overrides.get("uart", t.uart),
            baud=overrides.get("baud", t.baud),
            uart_ref_hz=overrides.get("uart_ref_hz", t.uart_ref_hz),
            max_payload=t.max_payload,
            notes=notes if overrides else None,
        )
    name = target_board(board, core)
    preset = get_board(name)
    replaced = [
        f"{k}={getattr(t, k)}"
        for k in ("uart", "baud", "uart_ref_hz")
        if getattr(t, k) != getattr(preset, k) and k not in overrides
    ]
    if replaced and notes is not None:
        given = f"--board {board}" if board is not None else f"--target {core} (board {name})"
        notes.append(f"{given} replaces the config's [target] {', '.join(replaced)}")
    return FirmwareConfig.from_board(
        name, max_payload=t.max_payload, notes=notes, **dict(overrides)
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_arguments(p, type=Path)
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
    add_board_arguments(
        p, where="; default: the config's [target] board, else its core's, else qemu"
    )


def run(args: argparse.Namespace) -> int:
    if args.data is None:
        raise CodegenError(
            "--data DIR is required: calibration uses clean train clips of a `codegen data` "
            "directory"
        )
    notes: list[str] = []
    if args.board is not None or args.target is not None:
        target_board(args.board, args.target)  # a bad name fails before the model is read
    res = build(
        args.model,
        args.basis,
        args.config,
        args.out,
        data_dir=args.data,
        compile_elf=not args.no_elf,
        trust_pickle=args.trust_pickle,
        board=args.board,
        uart_overrides=board_overrides(args),
        notes=notes,
        declared=declared_from_args(args),
        progress=True,
        core=args.target,
    )
    for note in notes:
        print(f"codegen build: note: {note}", file=sys.stderr)
    print(res.text)
    return 0


def summary(res: BuildResult) -> str:
    """What `codegen build` prints (and `codegen.compile` prints and returns): the decisions,
    the agreement with the user's model and where each undeclared setting came from, the input
    paths, the weight formats, the warnings."""
    from codegen.artefact.inspect import format_manifest

    doc = res.manifest
    lines = [format_manifest(doc, brief=True), user_model_line(doc)]
    lines.append(streaming_line(doc["streaming"]))
    lines.append(weight_format_line(doc))
    lines += [f"warning: {w}" for w in doc["float_vs_fixed"].get("warnings", [])]
    lines.append(f"wrote {res.out_dir / 'manifest.json'}")
    return "\n".join(line for line in lines if line)
