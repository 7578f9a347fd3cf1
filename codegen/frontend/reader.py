"""Frontend: checkpoint + basis + TOML config -> float IR (`codegen.ir.nodes.Model`),
docs/architecture.md §2.

Everything the compiler cannot lower is refused here, before any quantization, with a message
that names the offending value and what is supported: more than one LSTM layer, a
bidirectional LSTM, an LSTM projection (proj_size), a batch_first mismatch, NaN/Inf anywhere,
and shape mismatches between the model, the basis and the config (D vs hidden size, k vs the
columns of V). The checkpoint is read with ``torch.load(weights_only=True)`` only.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
import typing
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from codegen.base.errors import CodegenError, ConfigError
from codegen.frontend.cliargs import Declared, declared_from_config, merge
from codegen.ir.layers import KINDS
from codegen.ir.nodes import (
    WEIGHT_FORMATS,
    AdaptConfig,
    Dense,
    EncoderLayer,
    InputHashes,
    LatentBasis,
    Model,
    QuantOptions,
    TargetOptions,
    Tensor,
)
from codegen.stages import registry as stage_registry

SUPPORTED_BITS = (16,)
# The LSTM gate accumulator is always the proven int32 one (docs/numeric.md §4): both mean that.
ACCUMULATOR_POLICIES = ("auto", "int32")
PREFIX_RE = re.compile(r"^[a-z][a-z0-9_]{0,15}$")
V2_RE = re.compile(r"^(\d+)b(\d+)$")
_LAYER_KEY = re.compile(r"^lstm\.(weight|bias)_(ih|hh|hr)_l(\d+)(_reverse)?$")


@dataclass(frozen=True)
class BuildConfig:
    """The parsed TOML config: [elatta] -> ``adapt``, [quant] -> ``quant``, [target];
    [model] and [features] -> ``declared`` (what the model file may not show,
    `codegen.frontend.cliargs.Declared`); [elatta] model_sha256 -> ``tuned_for``: the model
    `codegen eval` chose σ₀ (and β, radius) for ("" when the config does not say)."""

    adapt: AdaptConfig
    quant: QuantOptions
    target: TargetOptions
    sha256: str
    source: str
    declared: Declared = Declared()
    tuned_for: str = ""


# ------------------------------------------------------------------------------------- config


# [target] input: feature INFER only, the streaming audio mode only, or both.
TARGET_INPUTS: tuple[str, ...] = ("features", "pcm", "both")


def _check_keys(table: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}"
        )


def _typed(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = table[key]
    ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        raise ConfigError(
            f"{where}.{key} = {value!r} has type {type(value).__name__}; expected {kind.__name__}"
        )
    return value


def parse_qelatta_v2(
    text: str | None, where: str = "[elatta].qelatta_v2"
) -> tuple[int, int] | None:
    """ "8b4" -> (8, 4): x-bit words with y integer bits; "" / "off" / None -> None."""
    if text is None or text in ("", "off", "none"):
        return None
    m = V2_RE.match(text)
    if not m:
        raise ConfigError(
            f"{where} = {text!r}: expected '<x>b<y>' (x-bit words with y integer bits, e.g. "
            "'8b4' or '4b2'), or '' to disable"
        )
    x, y = int(m.group(1)), int(m.group(2))
    if not 2 <= x <= 32 or not 1 <= y < x:
        raise ConfigError(f"{where} = {text!r}: need 2 <= x <= 32 and 1 <= y < x")
    return x, y


def _toml_kind(hint: Any, where: str) -> type:
    """The TOML value type of a settings field: int, float, bool or str, optionally None (the
    key left out)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    kind = args[0] if len(args) == 1 else hint
    if kind not in (int, float, bool, str):
        raise ConfigError(f"{where}: a settings field of type {hint!r} has no TOML form")
    return kind


def parse_stage_table(doc: dict[str, Any], name: str, source: str = "config") -> Any:
    """An input stage's table (`codegen.stages.registry`): its keys are its settings' fields,
    each of the field's type; the settings validate the values (a bad one named with what is
    allowed); a table the config does not have takes the settings' defaults."""
    t = stage_registry.table(name)
    tb = doc.get(name, {})
    if not isinstance(tb, dict):
        raise ConfigError(f"{source}: [{name}] must be a table")
    hints = typing.get_type_hints(t.settings)
    keys = tuple(f.name for f in fields(t.settings))
    _check_keys(tb, keys, f"{source} [{name}]")
    kw = {k: _typed(tb, k, _toml_kind(hints[k], f"[{name}].{k}"), f"[{name}]") for k in tb}
    try:
        return t.settings(**kw)
    except ConfigError as exc:
        raise ConfigError(f"{source} [{name}]: {exc}") from exc


def parse_config(doc: dict[str, Any], source: str = "config", sha256: str = "") -> BuildConfig:
    """Validate a TOML document; every error names the table, key, value and what is allowed."""
    from codegen.elatta.cmaes import default_popsize

    stage_tables = tuple(t.name for t in stage_registry.tables())
    _check_keys(doc, ("elatta", *stage_tables, "quant", "target", "model", "features"), source)
    declared = declared_from_config(doc, source)
    el = dict(doc.get("elatta", {})) if isinstance(doc.get("elatta", {}), dict) else None
    if el is None:
        raise ConfigError(f"{source}: [elatta] must be a table")
    tuned_for = _typed(el, "model_sha256", str, "[elatta]") if "model_sha256" in el else ""
    if tuned_for and not re.fullmatch(r"[0-9a-f]{64}", tuned_for):
        raise ConfigError(
            f"[elatta].model_sha256 = {tuned_for!r}: expected the 64 hex digits `codegen eval` "
            "writes (sha256 of the model file σ₀ was chosen for)"
        )
    el.pop("model_sha256", None)
    qt = doc.get("quant", {})
    tg = doc.get("target", {})
    for name, table in (("elatta", el), ("quant", qt), ("target", tg)):
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: [{name}] must be a table")

    el_int = ("k", "n_iter", "lam", "seed")
    el_float = ("sigma0", "beta", "radius")
    el_bool = ("qelatta_v1", "active")
    _check_keys(el, (*el_int, *el_float, *el_bool, "mode", "qelatta_v2"), f"{source} [elatta]")
    kw: dict[str, Any] = {}
    for key in el_int:
        if key in el:
            kw[key] = _typed(el, key, int, "[elatta]")
    for key in el_float:
        if key in el:
            kw[key] = _typed(el, key, float, "[elatta]")
    for key in el_bool:
        if key in el:
            kw[key] = _typed(el, key, bool, "[elatta]")
    if "mode" in el:
        kw["mode"] = _typed(el, "mode", str, "[elatta]")
    v2 = parse_qelatta_v2(_typed(el, "qelatta_v2", str, "[elatta]") if "qelatta_v2" in el else None)
    if "lam" not in kw:  # the paper's λ = 4 + ⌊3 ln k⌋ (a bad k is reported by AdaptConfig)
        k = kw.get("k", 2)
        kw["lam"] = default_popsize(k) if k >= 1 else 2
    kw["stages"] = {name: parse_stage_table(doc, name, source) for name in stage_tables}
    try:
        adapt = AdaptConfig(**kw, qelatta_v2=v2)
    except ConfigError as exc:
        raise ConfigError(f"{source} [elatta]: {exc}") from exc

    q_names = tuple(f.name for f in fields(QuantOptions))
    _check_keys(qt, q_names, f"{source} [quant]")
    qkw: dict[str, Any] = {}
    for f in fields(QuantOptions):
        if f.name in qt:
            kind = {"int": int, "float": float, "str": str}[str(f.type)]
            qkw[f.name] = _typed(qt, f.name, kind, "[quant]")
    quant = QuantOptions(**qkw)
    for key in ("act_bits", "weight_bits"):
        if getattr(quant, key) not in SUPPORTED_BITS:
            raise ConfigError(
                f"[quant].{key} = {getattr(quant, key)}: only 16-bit (int16) is supported now"
            )
    if quant.weight_format not in WEIGHT_FORMATS:
        raise ConfigError(
            f"[quant].weight_format = {quant.weight_format!r}: allowed {list(WEIGHT_FORMATS)}"
        )
    if quant.calib_samples < 8:
        raise ConfigError(f"[quant].calib_samples = {quant.calib_samples}: need at least 8")
    if quant.calib_seed < 0:
        raise ConfigError(f"[quant].calib_seed = {quant.calib_seed}: need >= 0")
    if not (math.isfinite(quant.range_margin) and 1.0 <= quant.range_margin <= 16.0):
        raise ConfigError(f"[quant].range_margin = {quant.range_margin}: allowed 1.0..16.0")
    if quant.accumulator not in ACCUMULATOR_POLICIES:
        raise ConfigError(
            f"[quant].accumulator = {quant.accumulator!r}: allowed values are "
            f"{', '.join(repr(v) for v in ACCUMULATOR_POLICIES)} (the gate accumulator is a proven "
            f"int32; int64 accumulators were removed)"
        )

    t_names = tuple(f.name for f in fields(TargetOptions))
    _check_keys(tg, t_names, f"{source} [target]")
    tkw: dict[str, Any] = {}
    for f in fields(TargetOptions):
        if f.name in tg:
            tkw[f.name] = _typed(tg, f.name, {"int": int, "str": str}[str(f.type)], "[target]")
    target = TargetOptions(**tkw)
    if not PREFIX_RE.match(target.prefix):
        raise ConfigError(
            f"[target].prefix = {target.prefix!r}: use 1-16 characters [a-z0-9_] starting with a "
            "letter (e.g. 'kws_'); it prefixes every generated C symbol"
        )
    if target.input not in TARGET_INPUTS:
        raise ConfigError(
            f"[target].input = {target.input!r}: allowed values are "
            f"{', '.join(repr(v) for v in TARGET_INPUTS)} (feature INFER, the streaming audio "
            "mode, or both)"
        )
    from codegen.target.boards import target_board
    from codegen.target.firmware import FirmwareConfig

    try:
        if target.board or target.core:
            # The board's UART settings (the core's default board's when only a core is named),
            # with the ones this table gives on top.
            fw = FirmwareConfig.from_board(
                target_board(target.board or None, target.core or None),
                max_payload=target.max_payload,
                **{k: tg[k] for k in ("uart", "baud", "uart_ref_hz") if k in tg},
            )
            target = replace(target, uart=fw.uart, baud=fw.baud, uart_ref_hz=fw.uart_ref_hz)
        else:
            fw = FirmwareConfig(
                uart=target.uart,
                baud=target.baud,
                uart_ref_hz=target.uart_ref_hz,
                max_payload=target.max_payload,
            )
        fw.validate()
    except ConfigError as exc:
        raise ConfigError(f"{source} [target]: {exc}") from None
    return BuildConfig(adapt, quant, target, sha256, source, declared, tuned_for)


def load_config(path: str | Path) -> BuildConfig:
    p = Path(path)
    if not p.is_file():
        what = "a directory" if p.is_dir() else "not found"
        raise ConfigError(
            f"config file {p}: {what}; pass a TOML build config such as configs/default.toml"
        )
    data = p.read_bytes()
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{p}: not valid TOML ({exc}); pass a TOML build config such as configs/default.toml"
        ) from None
    return parse_config(doc, str(p), hashlib.sha256(data).hexdigest())


# --------------------------------------------------------------------------------- checkpoint


def _check_topology(path: str) -> None:
    """Refuse LSTM variants by name before the generic state-dict validation runs."""
    import torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:
        return  # load_checkpoint reports unreadable files with its own message
    if not isinstance(obj, dict):
        return
    state = obj.get("state_dict")
    layers: set[int] = set()
    reverse = False
    proj: int | None = None
    if isinstance(state, dict):
        for key, tensor in state.items():
            m = _LAYER_KEY.match(str(key))
            if not m:
                continue
            layers.add(int(m.group(3)))
            reverse = reverse or m.group(4) is not None
            if m.group(2) == "hr" and hasattr(tensor, "shape"):
                proj = int(tensor.shape[0])
    meta: dict[str, Any] = {}
    if isinstance(obj.get("meta"), str):
        try:
            loaded = json.loads(obj["meta"])
            meta = loaded if isinstance(loaded, dict) else {}
        except json.JSONDecodeError:
            meta = {}
    num_layers = max(layers) + 1 if layers else int(meta.get("num_layers", 1))
    num_layers = max(num_layers, int(meta.get("num_layers", 1)))
    if num_layers > 1:
        raise CodegenError(
            f"{path}: num_layers={num_layers}: only a 1-layer LSTM is supported (ELaTTA's latent "
            "is the final hidden state of one layer)"
        )
    if reverse or bool(meta.get("bidirectional", False)):
        raise CodegenError(f"{path}: bidirectional=True: only a unidirectional LSTM is supported")
    proj = proj if proj is not None else int(meta.get("proj_size", 0) or 0)
    if proj:
        raise CodegenError(f"{path}: proj_size={proj}: LSTM projections are not supported (use 0)")


def _finite(name: str, a: np.ndarray, src: str) -> None:
    bad = int(np.sum(~np.isfinite(a)))
    if bad:
        raise CodegenError(f"{src}: {name} contains {bad} NaN/Inf values")


def read_model(
    model: str | Path | Any,
    basis_path: str | Path,
    config: BuildConfig | str | Path,
    *,
    data_dir: str | Path | None = None,
    trust_pickle: bool = False,
    declared: Declared | None = None,
) -> Model:
    """Read, validate and hash the three inputs; return the float IR. ``model``: a path in any
    form `codegen.frontend.importer.load_model` accepts, or an already imported model."""
    from codegen.base.files import file_sha256
    from codegen.frontend.basis import load_basis
    from codegen.frontend.importer import ImportedModel, load_model

    cfg = config if isinstance(config, BuildConfig) else load_config(config)
    if isinstance(model, ImportedModel):
        imported = model
    else:
        mpath = str(model)
        if not Path(mpath).is_file():
            raise CodegenError(f"model checkpoint not found: {mpath}")
        _check_topology(mpath)
        said = merge(declared or Declared(), cfg.declared)
        imported = load_model(mpath, data_dir=data_dir, trust_pickle=trust_pickle, declared=said)
    torch_model, meta, mpath = imported.twin, imported.meta, imported.path
    check_limits(imported, cfg)
    model_sha = imported.sha256
    bpath = str(basis_path)
    basis = load_basis(bpath, model_sha256=model_sha)
    sd = {k: v.detach().double().numpy() for k, v in torch_model.state_dict().items()}
    for name, arr in sd.items():
        _finite(name, arr, mpath)
    F, H, C = meta.input_size, meta.hidden_size, meta.num_classes
    k_cfg = cfg.adapt.k
    mlp = _mlp_layers(sd)
    D = mlp[-1].out_features if mlp else H  # the latent: the head's input
    if basis.dim != D:
        raise CodegenError(
            f"{bpath}: basis V has D={basis.dim} rows but the model's latent (the head's input) "
            f"has {D}; the basis must come from this model's latents (codegen basis)"
        )
    if basis.k != k_cfg:
        raise CodegenError(
            f"{cfg.source}: [elatta].k = {k_cfg} but the basis V has k={basis.k} columns; set "
            f"k = {basis.k} or recompute the basis with --k {k_cfg}"
        )
    for name, arr in (
        ("V", basis.V),
        ("mean", basis.mean),
        ("singular_values", basis.singular_values),
    ):
        _finite(name, np.asarray(arr), bpath)
    # layer n + 1 reads layer n's outputs; only the top layer pools
    n_layers = 1
    while f"lstm.weight_ih_l{n_layers}" in sd:
        n_layers += 1
    encoder = tuple(
        _layer_ir(sd, n, F if n == 0 else H, H, meta, meta.pool if n == n_layers - 1 else "last")
        for n in range(n_layers)
    )
    head = Dense(
        D, C, Tensor("head.weight", sd["head.weight"]), Tensor("head.bias", sd["head.bias"])
    )
    ir_basis = LatentBasis(
        V=Tensor("basis.V", basis.V),
        mean=Tensor("basis.mean", basis.mean),
        singular_values=Tensor("basis.singular_values", basis.singular_values),
        n=basis.n,
        model_sha256=basis.model_sha256,
    )
    return Model(
        encoder=encoder,
        head=head,
        basis=ir_basis,
        adapt=cfg.adapt,
        quant=cfg.quant,
        target=cfg.target,
        classes=tuple(meta.classes),
        meta=meta,
        hashes=InputHashes(model=model_sha, basis=file_sha256(bpath), config=cfg.sha256),
        paths={"model": mpath, "basis": bpath, "config": cfg.source},
        provenance=imported.provenance,
        mlp=mlp,
    )


def _layer_ir(
    sd: dict[str, np.ndarray], layer: int, F: int, H: int, meta: Any, pool: str
) -> EncoderLayer:
    """One recurrent layer of the float IR from the twin's state_dict (lstm.*_l<layer>), of the
    kind the import found (``meta.cell``: `codegen.ir.layers.KINDS`)."""
    make = KINDS[meta.cell].float_type
    layer_ir: EncoderLayer = make(
        input_size=F,
        hidden_size=H,
        num_frames=meta.num_frames,
        **{
            f: Tensor(f"lstm.{k}_l{layer}", sd[f"lstm.{k}_l{layer}"])
            for f, k in (
                ("w_ih", "weight_ih"),
                ("w_hh", "weight_hh"),
                ("b_ih", "bias_ih"),
                ("b_hh", "bias_hh"),
            )
        },
        pool=pool,
    )
    return layer_ir


def _mlp_layers(sd: dict[str, np.ndarray]) -> tuple[Dense, ...]:
    """The hidden Linear layers of the twin's ``mlp`` Sequential (mlp.0, mlp.2, ...: a ReLU
    after each)."""
    out = []
    i = 0
    while f"mlp.{i}.weight" in sd:
        w, b = sd[f"mlp.{i}.weight"], sd[f"mlp.{i}.bias"]
        out.append(
            Dense(
                int(w.shape[1]),
                int(w.shape[0]),
                Tensor(f"mlp.{i}.weight", w),
                Tensor(f"mlp.{i}.bias", b),
            )
        )
        i += 2
    return tuple(out)


def check_limits(m: Any, cfg: BuildConfig) -> None:
    """Every size limit of the device, checked before calibration with the number and the way
    out (the C static assertions and the linker's RAM check would say it later and less well)."""
    from codegen.base.contract import K_MAX, MAX_CLASSES
    from codegen.target.firmware import MAX_PAYLOAD_RANGE

    meta, where = m.meta, m.path
    H, C, F, T = meta.hidden_size, meta.num_classes, meta.input_size, meta.num_frames
    k = cfg.adapt.k
    D = m.twin.head.in_features  # the latent: H, or the last hidden Linear's width
    if max(H, D) > 255:
        raise CodegenError(
            f"{where}: hidden_size {H}, latent {D}: the RESULT frame carries the latent size in "
            "one byte and the kernels' state sizes assume it; supported sizes are 1..255"
        )
    if C > min(255, MAX_CLASSES) or C < 2:
        raise CodegenError(
            f"{where}: {C} classes: supported are 2..{min(255, MAX_CLASSES)} (RESULT carries C "
            "in one byte)"
        )
    if k > D:
        raise CodegenError(
            f"{cfg.source}: [elatta].k = {k} exceeds the model's hidden size {D}: the basis V_k "
            f"has at most D = {D} directions; use k <= {min(D, K_MAX)}"
        )
    infer = 9 + 2 * T * F
    if cfg.target.input != "pcm" and infer > cfg.target.max_payload:
        lo, hi = MAX_PAYLOAD_RANGE
        way = (
            f"raise [target] max_payload to >= {infer}"
            if infer <= hi
            else f"the largest payload is {hi}: use fewer frames or features"
        )
        raise CodegenError(
            f"{where}: one INFER carries T x F = {T} x {F} int16 features = {infer} bytes, above "
            f"[target] max_payload = {cfg.target.max_payload}; {way}, or stream audio "
            '(input = "pcm": no feature INFER)'
        )


def torch_module(model: Model) -> Any:
    """A float ``KwsLstm`` rebuilt from the IR's weights (for calibration and float reports)."""
    import torch

    from codegen.frontend.model import KwsLstm

    layers = model.encoder
    kind = layers[0].kind
    if any(L.kind != kind or L.hidden_size != layers[0].hidden_size for L in layers):
        raise CodegenError(
            "the float twin is one torch recurrent module: every encoder layer must be of one "
            "kind and one hidden size, got "
            + ", ".join(f"{L.kind} H={L.hidden_size}" for L in layers)
        )
    m = KwsLstm(
        model.input_size,
        layers[0].hidden_size,
        model.head.out_features,
        layers[-1].pool,
        num_layers=len(layers),
        cell=kind,
        mlp=tuple(d.out_features for d in model.mlp),
    )
    state = {"head.weight": model.head.weight.values, "head.bias": model.head.bias.values}
    for i, d in enumerate(model.mlp):
        state |= {f"mlp.{2 * i}.weight": d.weight.values, f"mlp.{2 * i}.bias": d.bias.values}
    for i, L in enumerate(layers):
        state |= {
            f"lstm.weight_ih_l{i}": L.w_ih.values,
            f"lstm.weight_hh_l{i}": L.w_hh.values,
            f"lstm.bias_ih_l{i}": L.b_ih.values,
            f"lstm.bias_hh_l{i}": L.b_hh.values,
        }
    m.load_state_dict(
        {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in state.items()}
    )
    m.eval()
    return m
