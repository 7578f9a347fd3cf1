"""`codegen eval`: float accuracy of no-adapt and the device's adaptation modes on every GSC-C
condition: by default the deployed input adaptation ``cmvn_select`` (docs/adaptation.md), with
``--elatta`` the paper's ELaTTA (strict and bounded continual), with ``--mode`` any mode
(cmvn, cmvn_causal, the paper's unbounded continual ...), and with ``--fixed`` also through the
integer reference.

Per condition the test clips are featurised and encoded once (one batched LSTM pass); ELaTTA
only re-runs the head, so every mode and seed reuses the same latents. The input stages
(`codegen.stages.registry`) change the features, so their clips are encoded again after
the stage, in stream order. The paper's unbounded ``continual`` is not run unless asked for
(the reason in `UNSAFE_BY_DEFAULT`). ELaTTA's hyperparameters (σ₀; β and radius for
``continual_bounded``) are chosen only when a mode that uses them runs, on SOURCE validation
data (the clean validation split plus copies of it with non-target noise, `selection_set`) with
the selection rules of `codegen.elatta.float_ref`, never on a test condition; otherwise they
are the ``--config``'s. The input stages' settings are the config's [cmvn] table (chosen on
source data by `bench/adaptation_study.py`).

Seeds (``--seeds``) are the CMA-ES sampler's: they change what ELaTTA's modes answer. No-adapt
and the input stages (whose latent search is ``no_adapt``) are deterministic: they run once and
the report says so (`seeded`).

Outputs: the paper's GSC-C table layout on stdout (rows SNR × method, columns the ten noises and
their average), separate tables for the extra SNRs (0/−5 dB) and the reverb, channel and clean
families, a gain/verdict section, and in ``--report``: ``report.json``, ``report.txt`` and
``elatta.toml``, a complete build config (`write_build_config`: every table `codegen build`
reads, each key marked chosen by this evaluation, inherited from ``--config`` or the build's
default), so ``codegen build --config REPORT/elatta.toml`` builds what was measured.

Streams: by default each condition is one stream for the continual modes (state starts at
p = 0), in a fixed seeded order of the test clips that is the same for every condition, so the
stream is not grouped by speaker or word the way the data files are. With ``--stream-segment N``
the continual modes instead run over ONE stream of all conditions (`codegen.data.streams`: segments
of N clips of one condition, then a switch, seeded order), and the report adds accuracy by
position in the segment (first 10 clips vs the rest). Strict and no-adapt are per clip and
do not depend on the stream.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codegen.base.adpcm import WIRES, on_wire_each
from codegen.base.errors import ConfigError
from codegen.base.files import writable_dir
from codegen.data.selection import stream_order
from codegen.data.streams import (
    StreamSpec,
    add_stream_arguments,
    build_stream,
    position_accuracy,
    stream_from_args,
)
from codegen.frontend.cliargs import Declared, add_model_arguments, declared_from_args, merge
from codegen.ir.modes import DEVICE_MODES
from codegen.ir.modes import mode as device_mode
from codegen.stages.registry import tables as stage_tables

HELP = (
    "evaluate no-adapt, ELaTTA and the input normalisations (float, --fixed integer) on GSC-C; "
    "print the paper's table, write a report"
)

# every mode of the table (a view: a mode registered later is in it)
MODES = DEVICE_MODES
# The deployed mode (docs/adaptation.md: cmvn_select measured a gain and never lost on clean
# speech); what `codegen eval` measures unless told otherwise.
DEPLOYED_MODE = "cmvn_select"
DEFAULT_MODES: tuple[str, ...] = ("no_adapt", DEPLOYED_MODE)
# `--elatta`: the paper's method in the form the device runs safely (docs/elatta.md §8).
ELATTA_MODES: tuple[str, ...] = ("strict", "continual_bounded")


def seeded(mode: str) -> bool:
    """Whether a mode's answer depends on the seed: a latent search by CMA-ES (the paper's
    ELaTTA). The others (no-adapt and the input stages, whose search is no_adapt) are
    deterministic."""
    return device_mode(mode).search != "no_adapt"


# The paper's unbounded continual mode carries p from clip to clip without a bound and drifts to
# one class on long streams (docs/elatta.md; on FSDD it fell 28.7 ... 89.3 points below
# no-adapt): it runs only when asked for.
UNSAFE_BY_DEFAULT: dict[str, str] = {
    "continual": "the paper's unbounded continual p drifts on long streams and can collapse to "
    "one class (docs/elatta.md); use continual_bounded, or --mode continual to measure it",
}
# How to run a mode that did not run, for the report's "Not run" lines.
HOW_TO_RUN: dict[str, str] = {
    **{m: "--elatta" for m in ELATTA_MODES},
    "cmvn": "--mode cmvn (the input normalisation alone; loses on clean speech in some streams)",
    "cmvn_causal": "--mode cmvn_causal (the causal form, weaker)",
    **UNSAFE_BY_DEFAULT,
}
MAIN_SNRS: tuple[float, ...] = (-10.0, -15.0, -20.0)
# The paper's column groups (ESC-50 major categories) over the ten noises, in table order.
NOISE_GROUPS: tuple[tuple[str, tuple[str, str]], ...] = (
    ("Animals", ("dog", "cat")),
    ("Natural", ("pouring_water", "thunderstorm")),
    ("Human", ("crying_baby", "laughing")),
    ("Domestic", ("washing_machine", "vacuum_cleaner")),
    ("Urban", ("car_horn", "fireworks")),
)


def mode_label(mode: str) -> str:
    """A mode's row name in the tables (`codegen.ir.modes.Mode.table_label`)."""
    return device_mode(mode).table_label


def snr_key(snr: float) -> str:
    return f"{snr:g}"


@dataclass(frozen=True)
class SeedOutcome:
    """One ELaTTA run on one condition: correct predictions and paired changes vs no-adapt."""

    correct: int
    gained: int  # wrong without adaptation, right with it
    lost: int  # right without adaptation, wrong with it


@dataclass(frozen=True)
class CondResult:
    """Outcomes on one test condition: no-adapt and every (adapt mode, seed)."""

    family: str
    name: str
    snr_db: float | None
    n: int
    correct_noadapt: int
    runs: dict[str, tuple[SeedOutcome, ...]]  # adapt mode -> one outcome per seed

    def acc(self, mode: str) -> float:
        """Accuracy fraction, mean over seeds for the adapt modes."""
        if mode == "no_adapt":
            return self.correct_noadapt / self.n
        return float(np.mean([o.correct for o in self.runs[mode]])) / self.n


@dataclass(frozen=True)
class Gain:
    """Gain of one mode over no-adapt on a group of conditions, in accuracy points."""

    per_seed: tuple[float, ...]
    mean: float
    seed_std: float
    paired_se: float
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "mean_points": round(self.mean, 4),
            "seed_std_points": round(self.seed_std, 4),
            "per_seed_points": [round(v, 4) for v in self.per_seed],
            "paired_se_points": round(self.paired_se, 4),
            "verdict": self.verdict,
        }


def group_gain(results: list[CondResult], mode: str) -> Gain:
    """Pooled paired gain over the conditions in ``results``.

    Per seed the gain is mean(d) over all (condition, clip) pairs with d = correct_adapted −
    correct_noadapt ∈ {−1, 0, 1}; its standard error over clips is √(var(d)/n). The verdict
    needs the mean gain to clear twice the larger of that SE and the seed std: seed spread alone
    ignores that the test set itself is a sample.
    """
    n_seeds = len(results[0].runs[mode])
    per_seed, ses = [], []
    for s in range(n_seeds):
        gained = sum(r.runs[mode][s].gained for r in results)
        lost = sum(r.runs[mode][s].lost for r in results)
        n = sum(r.n for r in results)
        mean_d = (gained - lost) / n
        var_d = max((gained + lost) / n - mean_d**2, 0.0)
        per_seed.append(100.0 * mean_d)
        ses.append(100.0 * math.sqrt(var_d / n))
    mean = float(np.mean(per_seed))
    std = float(np.std(per_seed, ddof=1)) if n_seeds > 1 else 0.0
    se = float(np.mean(ses))
    margin = 2.0 * max(std, se)
    if mean > margin:
        verdict = "helped"
    elif mean < -margin:
        verdict = "hurt"
    else:
        verdict = "no measurable effect"
    return Gain(tuple(per_seed), mean, std, se, verdict)


@dataclass(frozen=True)
class HyperSelection:
    """Hyperparameters and how they were chosen (source validation only)."""

    sigma0: float
    beta: float
    radius: float
    source: dict[str, str]
    sigma0_table: str = ""
    bounded_table: str = ""
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _rows_as_dicts(rows: tuple[Any, ...]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]


def select_hyperparameters(
    z_sel: np.ndarray,
    y_sel: np.ndarray,
    z_clean: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    v: np.ndarray,
    base: Any,
    seeds: tuple[int, ...],
    sigma0: float | None,
    beta: float | None,
    radius: float | None,
    desc: str,
    given_by: dict[str, str] | None = None,
) -> HyperSelection:
    """σ₀ by `select_sigma0`, then (β, radius) by `select_bounded` at that σ₀; a value given
    (not None) is kept, its source in ``given_by`` (default: its command-line flag).

    Both rules run on the selection set (``z_sel``, ``y_sel``, see `selection_set`) once per
    ELaTTA seed, and the least aggressive choice wins (smallest σ₀, then smallest β and
    radius): with no real gain to find, each rule's "largest value that does no harm" is
    decided by one or two clips, and the single-seed choice jumped by 5x between seeds on the
    demo set. A value must look harmless for every seed the report averages over. The σ₀ grid
    is scaled by the spread of the clean validation latents ``z_clean``, so σ₀ keeps its
    meaning (a fraction of the source spread along v₁) whatever the selection set holds.
    """
    from codegen.elatta.float_ref import (
        default_sigma0_grid,
        format_rows,
        select_bounded,
        select_sigma0,
    )

    given = {"sigma0": "--sigma0", "beta": "--beta", "radius": "--radius", **(given_by or {})}
    source: dict[str, str] = {}
    rows: dict[str, list[dict[str, Any]]] = {}
    tables: dict[str, list[str]] = {"sigma0": [], "bounded": []}
    rule = f"on {desc}; least aggressive over seeds {list(seeds)}"
    if sigma0 is None:
        grid = default_sigma0_grid(z_clean, v)
        picks = []
        for seed in seeds:
            pick, sig_rows = select_sigma0(z_sel, y_sel, w, b, v, grid, base.replace(seed=seed))
            picks.append(pick)
            tables["sigma0"] += [f"seed {seed}: chose {pick:.4g}", format_rows(sig_rows)]
            rows[f"sigma0/seed{seed}"] = _rows_as_dicts(sig_rows)
        sigma0 = min(picks)
        source["sigma0"] = f"select_sigma0 {rule}"
    else:
        source["sigma0"] = given["sigma0"]
    if beta is None or radius is None:
        betas, radii = [], []
        for seed in seeds:
            cfg = base.replace(seed=seed, sigma0=sigma0)
            sel_beta, sel_radius, bnd_rows = select_bounded(z_sel, y_sel, w, b, v, cfg)
            betas.append(sel_beta)
            radii.append(sel_radius)
            tables["bounded"] += [
                f"seed {seed}: chose beta {sel_beta:.3g}, radius {sel_radius:.4g}",
                format_rows(bnd_rows),
            ]
            rows[f"bounded/seed{seed}"] = _rows_as_dicts(bnd_rows)
        source["beta"] = f"select_bounded {rule}" if beta is None else given["beta"]
        source["radius"] = f"select_bounded {rule}" if radius is None else given["radius"]
        beta = min(betas) if beta is None else beta
        radius = min(radii) if radius is None else radius
    else:
        source["beta"], source["radius"] = given["beta"], given["radius"]
    return HyperSelection(
        float(sigma0),
        float(beta),
        float(radius),
        source,
        "\n".join(tables["sigma0"]),
        "\n".join(tables["bounded"]),
        rows,
    )


def selection_set(
    model: Any, meta: Any, data_dir: str, copies: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Source-only latents for choosing hyperparameters: ``(z_sel, y_sel, z_clean, desc)``.

    The clean validation split plus ``copies`` copies of it mixed with the data set's
    *non-target* background noises by the training recipe recorded in the checkpoint. Two
    reasons: on clean data alone the head is nearly always right, so the rules only see whether
    adaptation breaks confident predictions, not how it behaves on noisy inputs where it
    actually moves predictions; and one clip of a few hundred is already 0.35 points, coarser
    than the rules' 0.25-point tolerance. No test clip or target noise is involved. The set is
    shuffled (seeded) so the bounded rule's stream interleaves clean and noisy clips.
    """
    from codegen.data import background_noises, load_split
    from codegen.frontend.model import encode_numpy
    from codegen.ir.meta import features_for
    from codegen.train.fit import SILENCE, TrainConfig, augment

    val = load_split(data_dir, "val")
    z_clean = encode_numpy(model, features_for(val.pcm, meta))
    if copies == 0:
        return z_clean, val.labels, z_clean, f"clean source validation ({len(val)} clips)"
    known = TrainConfig.__dataclass_fields__
    recipe = TrainConfig(**{k: v for k, v in meta.train.get("config", {}).items() if k in known})
    noises = background_noises(data_dir)
    silence = val.labels == (val.classes.index(SILENCE) if SILENCE in val.classes else -1)
    rng = np.random.default_rng([seed, 0x5E1EC7])
    zs = [z_clean]
    for _ in range(copies):
        pcm = augment(val.pcm, silence, noises, recipe, rng)
        zs.append(encode_numpy(model, features_for(pcm, meta)))
    z = np.concatenate(zs)
    y = np.concatenate([val.labels] * (copies + 1))
    order = rng.permutation(len(y))
    desc = (
        f"source validation: {len(val)} clean clips + {copies}x{len(val)} mixed with "
        f"non-target background noise (training recipe)"
    )
    return z[order], y[order], z_clean, desc


@dataclass(frozen=True)
class EvalOptions:
    modes: tuple[str, ...]
    seeds: tuple[int, ...]
    limit: int | None
    n_iter: int
    lam: int | None
    sigma0: float | None
    beta: float | None
    radius: float | None
    threads: int
    progress: bool
    select_copies: int = 3
    stream: StreamSpec | None = None  # continual modes run over one stream of all conditions
    trust_pickle: bool = False  # load an nn.Module saved whole (codegen.frontend.importer)
    declared: Declared = Declared()  # what the model file cannot show (--pooling, --features)
    adapt: Any = None  # the build's AdaptConfig: the input stages' [cmvn] settings
    wire: str = "raw"  # test audio as the device gets it: raw PCM or ADPCM-decoded (base/adpcm)
    config_source: str = ""  # the --config file ``adapt`` came from (for "inherited from")


def evaluate(
    model_path: str, basis_path: str, data_dir: str, opts: EvalOptions
) -> tuple[dict[str, Any], str]:
    """Run the evaluation; returns ``(report dict, printed text)``."""
    import torch

    from codegen.base.progress import each
    from codegen.data import condition_ids, conditions, dataset_info, load_condition, load_split
    from codegen.elatta.float_ref import ElattaConfig, adapt
    from codegen.frontend.basis import load_basis
    from codegen.frontend.importer import load_model, resolve_pooling, verify_against_user
    from codegen.frontend.model import encode_numpy, head_numpy
    from codegen.ir.meta import features_for

    t0 = time.perf_counter()
    torch.set_num_threads(opts.threads)
    imported = load_model(
        model_path, data_dir=data_dir, trust_pickle=opts.trust_pickle, declared=opts.declared
    )
    probe = features_for(load_split(str(data_dir), "train").pcm[:64], imported.meta)
    imported = resolve_pooling(imported, probe)
    verify_against_user(imported, probe)
    model, meta = imported.twin, imported.meta
    model_sha = imported.sha256
    basis = load_basis(basis_path, model_sha256=model_sha)
    if basis.dim != meta.hidden_size:
        raise ConfigError(
            f"basis V has D={basis.dim} rows but the model's hidden_size is {meta.hidden_size}"
        )
    info = dataset_info(data_dir)
    if list(info["classes"]) != list(meta.classes):
        raise ConfigError(
            f"data classes {info['classes']} differ from the model's {list(meta.classes)}"
        )
    w, b = head_numpy(model)
    v = basis.V
    base = ElattaConfig(k=basis.k, n_iter=opts.n_iter, lam=opts.lam, seed=opts.seeds[0])

    # σ₀ (every ELaTTA mode) and β, radius (continual_bounded) are chosen only where a mode that
    # uses them runs: the selection encodes the validation split four times and runs CMA-ES on
    # it per seed (minutes). Otherwise they are the config's, said so.
    searched = [m for m in opts.modes if seeded(m)]
    inherited = opts.adapt if opts.adapt is not None else ElattaConfig()
    where = opts.config_source or "the build's defaults"
    why = {
        "sigma0": "no ELaTTA mode ran (--elatta runs them and chooses it)",
        "beta": "continual_bounded did not run (--elatta runs it and chooses it)",
    }
    why["radius"] = why["beta"]
    uses = {"sigma0": bool(searched), "beta": "continual_bounded" in opts.modes}
    uses["radius"] = uses["beta"]
    given = {"sigma0": opts.sigma0, "beta": opts.beta, "radius": opts.radius}
    given_by: dict[str, str] = {}
    for key, value in given.items():
        if value is None and not uses[key]:
            given[key] = float(getattr(inherited, key))
            given_by[key] = f"inherited from {where}: {why[key]}"
    t_sel = time.perf_counter()
    if any(value is None for value in given.values()):
        z_sel, y_sel, z_clean, desc = selection_set(
            model, meta, data_dir, opts.select_copies, opts.seeds[0]
        )
        sel = select_hyperparameters(
            z_sel,
            y_sel,
            z_clean,
            w,
            b,
            v,
            base,
            opts.seeds,
            given["sigma0"],
            given["beta"],
            given["radius"],
            desc,
            given_by,
        )
        n_selection = len(y_sel)
        t_select = time.perf_counter() - t_sel
    else:
        desc = "nothing: no hyperparameter was chosen"
        sel = HyperSelection(
            float(given["sigma0"] or 0.0),
            float(given["beta"] or 0.0),
            float(given["radius"] or 0.0),
            {k: given_by.get(k, f"--{k}") for k in given},
        )
        n_selection = 0
        t_select = 0.0
    cfg = base.replace(sigma0=sel.sigma0, beta=sel.beta, radius=sel.radius)

    conds = conditions(data_dir)
    adapt_modes = tuple(m for m in opts.modes if m != "no_adapt")
    stages = {m: device_mode(m).before_encoder for m in adapt_modes}
    stage_modes = [m for m in adapt_modes if stages[m] is not None]
    if stage_modes and opts.adapt is None:
        tables = sorted({device_mode(m).config_section for m in stage_modes})
        raise ConfigError(f"modes {stage_modes} need the build's settings of {tables} (--config)")
    on_stream = set() if opts.stream is None else {m for m in adapt_modes if m != "strict"}

    def seeds_of(mode: str) -> tuple[int, ...]:
        """A deterministic mode runs once: every seed would give it the same classes."""
        return opts.seeds if seeded(mode) else opts.seeds[:1]

    n_test = len(condition_ids(data_dir, conds[0])[0]) if conds else 0
    order = stream_order(n_test, opts.limit, opts.seeds[0])
    encoded: list[tuple[Any, np.ndarray, np.ndarray, np.ndarray]] = []
    feats: list[np.ndarray] = []  # normalised features per condition, for the input stages
    labels: list[tuple[Any, np.ndarray, np.ndarray]] = []

    def test_pcm() -> Iterator[np.ndarray]:
        for cond in each(conds, "encode", "cond", enabled=opts.progress):
            split = load_condition(data_dir, cond, rows=order)
            labels.append((cond, split.labels, split.ids))
            yield split.pcm

    # the test audio as the device gets it over the wire (raw, or ADPCM-decoded)
    for j, pcm in enumerate(on_wire_each(test_pcm(), opts.wire)):
        cond, y, ids = labels[j]
        x = features_for(pcm, meta)
        if stage_modes:
            feats.append(x)
        z = encode_numpy(model, x)
        encoded.append((cond, z, y, ids))

    def stage_pred(mode: str, x: np.ndarray) -> np.ndarray:
        """Classes after the mode's input stage over clips x in stream order (from a reset)."""
        from codegen.stages.registry import stage_classes

        stage = stages[mode]
        assert stage is not None and opts.adapt is not None
        return stage_classes(
            x, stage, opts.adapt.stages, lambda u: encode_numpy(model, u) @ w.T + b
        )

    # Input stages without a stream: each condition is its own stream from a reset state; they
    # are deterministic, so every seed gives the same classes.
    stage_runs = {m: [stage_pred(m, x) for x in feats] for m in stage_modes if m not in on_stream}
    stream_runs: dict[str, list[list[np.ndarray]]] = {}
    stream_report: dict[str, Any] = {}
    if on_stream:
        assert opts.stream is not None
        stream = build_stream([len(e[2]) for e in encoded], opts.stream)
        pairs = list(zip(stream.condition.tolist(), stream.clip.tolist(), strict=True))
        z_s = np.stack([encoded[c][1][i] for c, i in pairs])
        y_s = np.array([encoded[c][2][i] for c, i in pairs])
        id_s = np.array([encoded[c][3][i] for c, i in pairs])
        x_s = np.stack([feats[c][i] for c, i in pairs]) if stage_modes else None
        pred0_s = adapt(z_s, w, b, v, id_s, cfg.replace(mode="no_adapt")).pred_noadapt
        for mode in sorted(on_stream):
            stream_runs[mode] = []
            per_seed = []
            staged = stage_pred(mode, x_s) if stages[mode] is not None and x_s is not None else None
            for seed in seeds_of(mode):
                if staged is not None:
                    pred_s = staged
                else:
                    pred_s = adapt(z_s, w, b, v, id_s, cfg.replace(mode=mode, seed=seed)).pred
                pos = position_accuracy(stream, pred_s == y_s)
                pos0 = position_accuracy(stream, pred0_s == y_s)
                per_seed.append(
                    {
                        "head": pos.acc_head,
                        "rest": pos.acc_rest,
                        "all": pos.acc,
                        "head_noadapt": pos0.acc_head,
                        "rest_noadapt": pos0.acc_rest,
                    }
                )
                preds = [np.empty(len(e[2]), dtype=np.int64) for e in encoded]
                for j, (c, i) in enumerate(pairs):
                    preds[c][i] = pred_s[j]
                stream_runs[mode].append(preds)
            stream_report[mode] = {
                k: round(float(np.mean([d[k] for d in per_seed])), 6) for k in per_seed[0]
            }
        stream_report["spec"] = asdict(opts.stream)
        stream_report["clips"] = len(stream)
        stream_report["segments"] = int(stream.segment.max()) + 1 if len(stream) else 0
    results: list[CondResult] = []
    for c_idx, (cond, z, y, ids) in enumerate(encoded):
        runs: dict[str, tuple[SeedOutcome, ...]] = {}
        pred0 = adapt(z, w, b, v, ids, cfg.replace(mode="no_adapt")).pred_noadapt
        ok0 = pred0 == y
        for mode in adapt_modes:
            outs = []
            for s_idx, seed in enumerate(seeds_of(mode)):
                if mode in on_stream:
                    pred = stream_runs[mode][s_idx][c_idx]
                elif mode in stage_runs:
                    pred = stage_runs[mode][c_idx]
                else:
                    pred = adapt(z, w, b, v, ids, cfg.replace(mode=mode, seed=seed)).pred
                ok = pred == y
                outs.append(
                    SeedOutcome(int(ok.sum()), int((ok & ~ok0).sum()), int((ok0 & ~ok).sum()))
                )
            runs[mode] = tuple(outs)
        results.append(
            CondResult(cond.family, cond.name, cond.snr_db, len(y), int(ok0.sum()), runs)
        )
    elapsed = time.perf_counter() - t0

    report = build_report(
        info=info,
        results=results,
        modes=("no_adapt", *adapt_modes),
        sel=sel,
        cfg=cfg,
        opts=opts,
        provenance={
            "model": {
                "path": str(model_path),
                "sha256": model_sha,
                "hidden_size": meta.hidden_size,
            },
            "basis": {
                "path": str(basis_path),
                "k": basis.k,
                "n": basis.n,
                "seed": basis.seed,
                "explained_variance": basis.explained_variance,
            },
            "validation_clips": n_selection,
            "selection_set": desc,
            "test_clips_per_condition": results[0].n if results else 0,
            "seconds": {"selection": round(t_select, 2), "total": round(elapsed, 2)},
            "stream": stream_report,
        },
    )
    return report, format_report(report, results, sel)


def build_report(
    *,
    info: dict[str, Any],
    results: list[CondResult],
    modes: tuple[str, ...],
    sel: HyperSelection,
    cfg: Any,
    opts: EvalOptions,
    provenance: dict[str, Any],
) -> dict[str, Any]:
    additive = [r for r in results if r.family == "additive"]
    snrs = sorted({float(r.snr_db) for r in additive if r.snr_db is not None}, reverse=True)
    noises = [n for n in info["noises"] if any(r.name == n for r in additive)]

    table: dict[str, Any] = {}
    for mode in modes:
        per_snr: dict[str, Any] = {}
        for snr in snrs:
            row = {r.name: r.acc(mode) for r in additive if r.snr_db == snr}
            cells = {n: round(row[n], 6) for n in noises if n in row}
            cells["average"] = round(float(np.mean(list(row.values()))), 6)
            per_snr[snr_key(snr)] = cells
        table[mode] = per_snr

    families = [f for f in ("reverb", "channel", "clean") if any(r.family == f for r in results)]
    shifts: dict[str, Any] = {}
    for mode in modes:
        shifts[mode] = {}
        for fam in families:
            rows = [r for r in results if r.family == fam]
            cells = {r.name: round(r.acc(mode), 6) for r in rows}
            cells["average"] = round(float(np.mean([r.acc(mode) for r in rows])), 6)
            shifts[mode][fam] = cells

    gains: dict[str, Any] = {}
    safety: dict[str, Any] = {}
    for mode in modes[1:]:
        groups: dict[str, Any] = {}
        for snr in snrs:
            rows = [r for r in additive if r.snr_db == snr]
            groups[f"additive/{snr_key(snr)}"] = group_gain(rows, mode).as_dict()
        for fam in families:
            groups[fam] = group_gain([r for r in results if r.family == fam], mode).as_dict()
        gains[mode] = groups
        # docs/targets.md §1 "adaptation safety": the loss against no-adapt, in points, the mode
        # allows at every SNR and on every shift family, clean included (`Mode.safety_limit`)
        limit = device_mode(mode).safety_limit
        if limit is not None:
            keys = [(snr_key(snr), f"additive/{snr_key(snr)}") for snr in snrs]
            keys += [(fam, fam) for fam in families]
            safety[mode] = {
                label: {
                    "gain_points": groups[group]["mean_points"],
                    "limit_points": limit,
                    "pass": groups[group]["mean_points"] >= limit,
                }
                for label, group in keys
            }

    return {
        "data": info.get("data", "unknown"),
        "dataset": {
            "preset": info.get("preset"),
            "tier": info.get("tier"),
            "seed": info.get("seed"),
            "snrs": [snr_key(s) for s in snrs],
            "noises": noises,
        },
        "float": table,
        "float_shifts": shifts,
        "gains": gains,
        "safety": safety,
        "config": {
            "k": cfg.k,
            "n_iter": cfg.n_iter,
            "lam": cfg.popsize,
            "sigma0": sel.sigma0,
            "beta": sel.beta,
            "radius": sel.radius,
            "active": cfg.active,
            "seeds": list(opts.seeds),
            "limit": opts.limit,
            "wire": opts.wire,
            "modes": list(modes),
            "seeded_modes": [m for m in modes if seeded(m)],
            "not_run": {m: how for m, how in HOW_TO_RUN.items() if m not in modes},
            # each input-stage table's settings (`codegen.stages.registry`; None without --config)
            **{
                t.name: None if opts.adapt is None else t.report(opts.adapt.stage_settings(t.name))
                for t in stage_tables()
            },
            "chosen_by": sel.source,
            "selection_rows": sel.rows,
        },
        **provenance,
    }


def _pct(x: float) -> str:
    return f"{100.0 * x:.2f}"


def _display(name: str) -> str:
    return name.replace("_", " ")


def _format_table(
    title: str,
    row_keys: list[tuple[str, str]],
    columns: list[str],
    cell: Any,
    gain: Any,
    groups: tuple[tuple[str, tuple[str, str]], ...] | None = None,
) -> list[str]:
    """Rows are (first-column label, mode); ``cell(mode, label, column)`` gives a fraction."""
    widths = [max(len(_display(c)), 6) for c in columns]
    head1 = f"{'':8}{'Method':17}"
    head1 += "".join(f"  {_display(c):>{w}}" for c, w in zip(columns, widths, strict=True))
    head1 += f"  {'Average':>7}  {'gain (pts)':>12}"
    # The paper's two-row header: ESC-50 major categories above their two noises.
    head0 = f"{'':25}"
    for gname, members in groups or ():
        span = sum(widths[columns.index(m)] for m in members) + 2 * len(members) - 2
        head0 += "  " + gname.center(span)
    lines = [title, *([head0] if groups else []), head1, "-" * len(head1)]
    last_label = None
    for label, mode in row_keys:
        first = label if label != last_label else ""
        if last_label is not None and label != last_label:
            lines.append("")
        last_label = label
        vals = [cell(mode, label, c) for c in columns]
        text = f"{first:8}{mode_label(mode):17}"
        text += "".join(
            f"  {'n/a' if v is None else _pct(v):>{w}}" for v, w in zip(vals, widths, strict=True)
        )
        avg = cell(mode, label, "average")
        g = gain(mode, label)
        text += f"  {_pct(avg):>7}  {g if g else '':>12}"
        lines.append(text)
    return lines


def format_report(report: dict[str, Any], results: list[CondResult], sel: HyperSelection) -> str:
    modes: list[str] = report["config"]["modes"]
    table, shifts, gains = report["float"], report["float_shifts"], report["gains"]
    data_desc = report["data"]
    if report["dataset"].get("preset"):
        data_desc += f" ({report['dataset']['preset']} preset, tier {report['dataset']['tier']})"
    cfg = report["config"]
    seeds = cfg["seeds"]
    seeded_modes = [m for m in modes if seeded(m)]
    out: list[str] = [
        f"GSC-C float evaluation on {data_desc} data; "
        f"{report['test_clips_per_condition']} test clips per condition"
        + (f" (--limit {cfg['limit']})" if cfg["limit"] else "")
        + (
            f"; test audio as the device decodes it from {cfg['wire']} (docs/numeric.md §8)"
            if cfg.get("wire", "raw") != "raw"
            else ""
        ),
        (
            f"ELaTTA: k={cfg['k']}, n={cfg['n_iter']}, lambda={cfg['lam']}, "
            f"sigma0={cfg['sigma0']:.4g}, "
            f"beta={cfg['beta']:.3g}, radius={cfg['radius']:.4g}; seeds {seeds} (the CMA-ES "
            "samples)"
            if seeded_modes
            else "ELaTTA: not run (--elatta runs strict and continual_bounded and chooses sigma0 "
            "for this model)"
        ),
        *(
            [
                f"Deterministic (one run, no seed spread): "
                f"{', '.join(mode_label(m) for m in modes if m not in seeded_modes)}"
            ]
            if len(seeds) > 1
            else []
        ),
        *(
            [
                f"cmvn: alpha=2^-{cm['alpha_shift']}, w=2^-{cm['weight_shift']}, gate "
                f"{cm['gate'] or 'none'}; cmvn causal: "
                f"alpha=2^-{cm['causal_alpha_shift']}, gate "
                f"{cm['causal_gate'] or 'none'}; cmvn select: margin {cm['select_margin']} nats, "
                f"gate {cm.get('select_gate') or 'none'}, floor "
                f"{cm.get('select_floor') or 'none'}, clip floor "
                f"{cm.get('select_clip_floor') or 'none'}, clip gate "
                f"{cm.get('select_clip_gate') or 'none'}"
                + (
                    f", its own alpha=2^-{cm['select_alpha_shift']}, "
                    f"w=2^-{cm['select_weight_shift']}"
                    if (cm.get("select_alpha_shift"), cm.get("select_weight_shift"))
                    not in ((None, None), (cm["alpha_shift"], cm["weight_shift"]))
                    else ""
                )
                + " (docs/adaptation.md)"
            ]
            if (cm := cfg.get("cmvn")) and any(m.startswith("cmvn") for m in cfg["modes"])
            else []
        ),
        *([f"Chosen on {report['selection_set']}; no test data."] if seeded_modes else []),
        "Accuracy %; gain = adapted - no-adapt average"
        + ("; ELaTTA rows: mean over seeds, gain mean±std over seeds." if seeded_modes else "."),
        "",
    ]
    noises = report["dataset"]["noises"]
    groups = NOISE_GROUPS if tuple(noises) == tuple(m for _, g in NOISE_GROUPS for m in g) else None

    def snr_cell(mode: str, label: str, col: str) -> float | None:
        value: float | None = table[mode][label.removesuffix(" dB")].get(col)
        return value

    def snr_gain(mode: str, label: str) -> str:
        snr = label.removesuffix(" dB")
        return "" if mode == "no_adapt" else _gain_short(gains[mode][f"additive/{snr}"])

    snr_labels = report["dataset"]["snrs"]
    main = [s for s in snr_labels if float(s) in MAIN_SNRS]
    extra = [s for s in snr_labels if float(s) not in MAIN_SNRS]
    for title, labels in (
        ("Table: GSC-C (paper layout), additive noise at -10/-15/-20 dB", main),
        ("Table: additive noise at the extra SNRs", extra),
    ):
        if not labels:
            continue
        rows = [(f"{lab} dB", m) for lab in labels for m in modes]
        out += _format_table(title, rows, noises, snr_cell, snr_gain, groups)
        out.append("")

    for fam in ("reverb", "channel", "clean"):
        if fam not in shifts[modes[0]]:
            continue
        cols = [c for c in shifts[modes[0]][fam] if c != "average"]

        def fam_cell(mode: str, label: str, col: str, fam: str = fam) -> float | None:
            value: float | None = shifts[mode][fam].get(col)
            return value

        def fam_gain(mode: str, label: str, fam: str = fam) -> str:
            return "" if mode == "no_adapt" else _gain_short(gains[mode][fam])

        rows = [(fam, m) for m in modes]
        out += _format_table(f"Table: {fam} family", rows, cols, fam_cell, fam_gain)
        out.append("")

    out.append(
        "Did adaptation help? gain in points"
        + (
            ": mean ± std over seeds [paired SE over test clips]; 'helped'/'hurt' need "
            "|mean| > 2·max(std, SE)"
            if len(seeds) > 1 and seeded_modes
            else " [paired SE over test clips]; 'helped'/'hurt' need |gain| > 2·SE"
        )
    )
    for mode in modes[1:]:
        out.append(f"  {mode_label(mode)}:")
        for group, g in gains[mode].items():
            if len(g["per_seed_points"]) > 1:
                per_seed = ", ".join(f"{v:+.2f}" for v in g["per_seed_points"])
                spread = f" ± {g['seed_std_points']:.2f}"
                tail = f" per seed ({per_seed})"
            else:
                spread = tail = ""
            out.append(
                f"    {group:16} {g['mean_points']:+6.2f}{spread} "
                f"[SE {g['paired_se_points']:.2f}]{tail} -> {g['verdict']}"
            )
    out.append("")
    if report["safety"]:
        out.append(
            "Safety (docs/targets.md §1): gain over no-adapt >= the mode's limit at every SNR and "
            "on every shift family, clean included (mean over seeds); a mode that fails anywhere "
            "is UNSAFE on this data"
        )
        for mode, per in report["safety"].items():
            cells = ", ".join(
                f"{k}{' dB' if k[0] in '-0123456789' else ''} {v['gain_points']:+.2f} "
                f"{'PASS' if v['pass'] else 'FAIL'}"
                for k, v in per.items()
            )
            verdict = "safe" if all(v["pass"] for v in per.values()) else "UNSAFE"
            limit = next(iter(per.values()))["limit_points"] if per else 0.0
            out.append(f"  {mode_label(mode):17} limit {limit:+.1f}: {verdict}; {cells}")
        out.append("")
    for mode, how in cfg.get("not_run", {}).items():
        out.append(f"Not run: {mode_label(mode)} ({mode}): {how}.")
    if cfg.get("not_run"):
        out.append("")
    if sel.sigma0_table:
        out += ["sigma0 selection (strict, source validation set):", sel.sigma0_table, ""]
    if sel.bounded_table:
        out += ["beta/radius selection (continual_bounded, source validation set):"]
        out += [sel.bounded_table, ""]
    if report.get("stream"):
        st = report["stream"]
        spec = st["spec"]
        out.append(
            f"Continual stream: {st['clips']} clips in {st['segments']} segments of "
            f"{spec['segment_len']} ({spec['order']} order, seed {spec['seed']}); accuracy % "
            "by position in segment (mean over seeds)"
        )
        for mode, row in st.items():
            if mode in ("spec", "clips", "segments"):
                continue
            out.append(
                f"  {mode_label(mode):17} first 10 {100 * row['head']:6.2f} "
                f"(no-adapt {100 * row['head_noadapt']:6.2f})  rest {100 * row['rest']:6.2f} "
                f"(no-adapt {100 * row['rest_noadapt']:6.2f})  all {100 * row['all']:6.2f}"
            )
        out.append("")
    secs = report["seconds"]
    out.append(
        f"time: {secs['total']:.1f} s total"
        + (f" ({secs['selection']:.1f} s choosing hyperparameters)" if secs["selection"] else "")
    )
    return "\n".join(out)


def _gain_short(g: dict[str, Any]) -> str:
    """mean±std over seeds; a deterministic mode (one run) has no spread to show."""
    if len(g["per_seed_points"]) < 2:
        return f"{g['mean_points']:+.2f}"
    return f"{g['mean_points']:+.2f}±{g['seed_std_points']:.2f}"


def write_build_config(
    report: dict[str, Any],
    build_cfg: Any,
    raw: dict[str, Any],
    declared: Declared,
    flags: dict[str, bool],
) -> tuple[str, dict[str, dict[str, Any]]]:
    """``elatta.toml``: a complete build config (`elatta_measure.eval_config`) with the values
    this evaluation chose and measured with; returns its text and its tables."""
    from elatta_measure.eval_config import as_dict, build_config_tables, check_round_trip, render

    cfg = report["config"]
    chosen_by = cfg["chosen_by"]
    chosen: dict[str, tuple[Any, str]] = {
        "k": (cfg["k"], f"chosen: the basis's k ({report['basis']['path']})"),
    }
    for key in ("sigma0", "beta", "radius"):
        if not chosen_by[key].startswith("inherited"):
            chosen[key] = (cfg[key], f"chosen: {chosen_by[key]}")
    if "sigma0" in chosen:
        chosen["model_sha256"] = (
            report["model"]["sha256"],
            f"chosen: the model sigma0 was chosen for ({report['model']['path']})",
        )
    for key, flag in (("n_iter", "--n-iter"), ("lam", "--lam"), ("seed", "--seed")):
        if flags.get(key):
            value = cfg["seeds"][0] if key == "seed" else cfg[key]
            chosen[key] = (value, f"chosen: {flag}")
    el = raw.get("elatta")
    if "lam" not in chosen and not (isinstance(el, dict) and "lam" in el):
        chosen["lam"] = (cfg["lam"], f"default: 4 + floor(3 ln k) (not set in {build_cfg.source})")
    tables = build_config_tables(build_cfg, raw, chosen, declared)
    header = [
        "Build configuration written by `codegen eval`: complete, every table `codegen build`",
        "reads, with the values this evaluation measured with. Build what was measured:",
        f"  codegen build --model {report['model']['path']} --basis {report['basis']['path']} \\",
        "                --config THIS_FILE --data DATA --out OUT",
        "Each key says where its value came from: chosen by this evaluation (on SOURCE",
        f"validation data only, or a flag), inherited from --config {build_cfg.source}, or the",
        "build's default (that config leaves it out).",
        f"model {report['model']['path']} (sha256 {report['model']['sha256'][:16]}), basis "
        f"{report['basis']['path']} (k={report['basis']['k']}, N={report['basis']['n']}),",
        f"data {report['data']} (preset {report['dataset'].get('preset')}); modes measured: "
        f"{', '.join(cfg['modes'])}.",
    ]
    text = render(tables, header)
    check_round_trip(text, tables, "elatta.toml")
    return text, as_dict(tables)


def format_fixed_vs_float(report: dict[str, Any]) -> str:
    """Average over the ten noises, float vs integer reference, per mode and SNR (points)."""
    lines = [
        "Fixed point (integer reference) vs float, accuracy % averaged over the noises",
        f"{'mode':<18} {'SNR':>5} {'float':>7} {'fixed':>7} {'diff':>6}",
    ]
    for mode, per_snr in report["fixed"].items():
        for snr, row in per_snr.items():
            fl = report["float"].get(mode, {}).get(snr, {}).get("average")
            fx = row.get("average")
            if fl is None or fx is None:
                continue
            lines.append(
                f"{mode:<18} {snr:>5} {100 * fl:7.2f} {100 * fx:7.2f} {100 * (fx - fl):+6.2f}"
            )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from elatta_measure import continuous

    # --model, --basis and --data are required but for --continuous, which reads a build
    add_model_arguments(parser, required=False)
    parser.add_argument("--basis", help="V_k from `codegen basis` (required)")
    parser.add_argument("--data", help="data directory from `codegen data` (required)")
    parser.add_argument("--report", required=True, help="directory for report.json, elatta.toml")
    parser.add_argument(
        "--mode",
        action="append",
        choices=MODES,
        help=f"mode to run beside no_adapt (repeatable; default: {DEPLOYED_MODE}, the deployed "
        "input adaptation; continual only when asked for: its unbounded p can collapse to one "
        "class)",
    )
    parser.add_argument(
        "--elatta",
        action="store_true",
        help=f"also run the paper's ELaTTA ({' and '.join(ELATTA_MODES)}) and choose its sigma0, "
        "beta and radius for this model on source validation data (a few minutes more)",
    )
    parser.add_argument("--limit", type=int, help="evaluate only N test clips per condition")
    parser.add_argument(
        "--wire",
        choices=WIRES,
        default="raw",
        help="how the test audio reaches the device: raw int16 PCM, or IMA ADPCM (4 bits a "
        "sample) whose decoded samples the features, float and fixed, are computed from; the "
        "hyperparameters are still chosen on the stored source data (default raw)",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=3,
        help="CMA-ES seeds to average for ELaTTA's modes (3); no-adapt and the cmvn modes are "
        "deterministic and run once",
    )
    parser.add_argument("--seed", type=int, help="first ELaTTA seed (default: the config's seed)")
    parser.add_argument(
        "--n-iter", type=int, help="CMA-ES iterations (default: the config's n_iter; KWS: 2)"
    )
    parser.add_argument(
        "--lam",
        type=int,
        help="population size (default: the config's lam, else 4 + floor(3 ln k))",
    )
    parser.add_argument(
        "--select-copies",
        type=int,
        default=3,
        help="noisy copies of the validation split (non-target noise, training recipe) added "
        "to the clean split for choosing hyperparameters; 0 = clean only (default 3)",
    )
    parser.add_argument("--sigma0", type=float, help="override the selected sigma0")
    parser.add_argument("--beta", type=float, help="override the selected beta (bounded)")
    parser.add_argument("--radius", type=float, help="override the selected radius (bounded)")
    add_stream_arguments(parser)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--fixed",
        action="store_true",
        help="also run the integer reference (the device's computation) with the selected "
        'hyperparameters; report.json gains "fixed" beside "float"',
    )
    parser.add_argument(
        "--config",
        default=None,
        help="build config the evaluation starts from: the [cmvn] settings of the input "
        "normalisations, ELaTTA's [elatta] and, for --fixed, [quant]; REPORT/elatta.toml is it "
        "with what this evaluation chose (default: the configs/*.toml whose "
        "[elatta].model_sha256 is the model's, else configs/default.toml)",
    )
    continuous.add_arguments(parser)


def config_for_model(model: Path, configs: Path | None = None) -> str:
    """The build config made for ``model``: the configs/*.toml whose [elatta].model_sha256 is
    the model file's sha256 (its [cmvn] settings were chosen for that model), else
    configs/default.toml. ``configs``: that folder; by default ./configs, else the checkout's
    (beside the codegen package), so `codegen eval` finds it from any working directory."""
    import hashlib
    import tomllib

    if configs is None:
        import codegen

        here = Path("configs")
        checkout = Path(codegen.__file__).resolve().parents[1] / "configs"
        configs = here if (here / "default.toml").is_file() else checkout
    fallback = configs / "default.toml"
    if not fallback.is_file():
        raise ConfigError(
            f"no --config given and no configs/default.toml here or at {fallback}; pass "
            "--config FILE (a build config such as the checkout's configs/default.toml)"
        )
    if not model.is_file() or not configs.is_dir():
        return str(fallback)
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    for path in sorted(configs.glob("*.toml")):
        try:
            doc = tomllib.loads(path.read_text())
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        el = doc.get("elatta")
        if isinstance(el, dict) and el.get("model_sha256") == digest:
            return str(path)
    return str(fallback)


def plot(report: dict[str, Any], path: Path) -> None:
    """``report.png``: accuracy against SNR per mode, float and (with --fixed) integer reference
    as markers, the clean family as its own point, and, with a stream, accuracy by position in
    a segment (`elatta_host.report.figure`)."""
    import matplotlib.pyplot as plt
    from elatta_host.report import HEAD_CLIPS, dataset_name, figure

    modes = report["config"]["modes"]
    acc = {"float": report["float"], "fixed": report.get("fixed", {})}
    shifts = report["float_shifts"]
    clean = {"float": {m: shifts[m]["clean"]["average"] for m in modes if "clean" in shifts[m]}}
    stream = report.get("stream") or {}
    by_position = {
        "float": {
            m: {f"first_{HEAD_CLIPS}": stream[m]["head"], "rest": stream[m]["rest"]}
            for m in modes
            if m in stream
        }
    }
    if stream:  # no-adapt over the same stream, from the first mode that ran on it
        first = next(m for m in modes if m in stream)
        by_position["float"]["no_adapt"] = {
            f"first_{HEAD_CLIPS}": stream[first]["head_noadapt"],
            "rest": stream[first]["rest_noadapt"],
        }
    fig = figure(
        acc, modes, dataset_name({"data": report["data"]}), clean=clean, by_position=by_position
    )
    fig.savefig(path, format="png", dpi=110)
    plt.close(fig)


def _at_least(flag: str, value: int | None, low: int, example: str) -> None:
    if value is not None and value < low:
        raise ConfigError(f"{flag} {value}: must be >= {low}; e.g. {flag} {example}")


def run(args: argparse.Namespace) -> int:
    import tomllib

    from codegen.frontend.reader import load_config

    if args.continuous:
        from elatta_measure.continuous import run as run_continuous

        return run_continuous(args)
    missing = [f"--{k}" for k in ("model", "basis", "data") if getattr(args, k) is None]
    if missing:
        raise ConfigError(f"codegen eval needs {', '.join(missing)} (or --continuous)")
    _at_least("--seeds", args.seeds, 1, "3 (the CMA-ES seeds ELaTTA's modes average over)")
    _at_least("--seed", args.seed, 0, "0")
    _at_least("--limit", args.limit, 1, "100 (test clips per condition)")
    _at_least("--threads", args.threads, 1, "1")
    _at_least("--select-copies", args.select_copies, 0, "3 (0: clean validation data only)")
    _at_least("--n-iter", args.n_iter, 1, "2 (the paper's KWS setting)")
    _at_least("--lam", args.lam, 2, "6 (4 + floor(3 ln k) for k = 2)")
    picked = set(args.mode or ()) or set(DEFAULT_MODES)
    if args.elatta:
        picked |= set(ELATTA_MODES)
    modes = tuple(m for m in MODES if m in picked | {"no_adapt"})
    stream = stream_from_args(args)
    # --report created (or found) before any work: a run of minutes must not end on it
    out = writable_dir(Path(args.report), "--report", "out/eval")
    if args.config is None:
        args.config = config_for_model(Path(args.model))
        print(f"config: {args.config}")
    build_cfg = load_config(args.config)
    raw = tomllib.loads(Path(args.config).read_text(encoding="utf-8"))
    raw_el = raw.get("elatta", {})
    # ELaTTA's settings not given as flags are the config's (a config's lam, else the paper's
    # rule on the basis's k, which `evaluate` applies)
    lam = args.lam if args.lam is not None else raw_el.get("lam")
    first = args.seed if args.seed is not None else build_cfg.adapt.seed
    declared = merge(declared_from_args(args), build_cfg.declared)
    opts = EvalOptions(
        modes=modes,
        seeds=tuple(range(first, first + args.seeds)),
        limit=args.limit,
        n_iter=args.n_iter if args.n_iter is not None else build_cfg.adapt.n_iter,
        lam=lam,
        sigma0=args.sigma0,
        beta=args.beta,
        radius=args.radius,
        threads=args.threads,
        progress=not args.no_progress,
        select_copies=args.select_copies,
        stream=stream,
        trust_pickle=args.trust_pickle,
        declared=declared,
        adapt=build_cfg.adapt,
        wire=args.wire,
        config_source=str(args.config),
    )
    report, text = evaluate(args.model, args.basis, args.data, opts)
    flags = {"n_iter": args.n_iter is not None, "lam": args.lam is not None}
    flags["seed"] = args.seed is not None
    toml_text, tables = write_build_config(report, build_cfg, raw, declared, flags)
    report["build_config"] = tables
    if report["config"]["chosen_by"]["sigma0"].startswith("inherited") and (
        build_cfg.tuned_for and build_cfg.tuned_for != report["model"]["sha256"]
    ):
        text += (
            f"\n\nNote: sigma0, beta and radius are {args.config}'s, chosen for another model "
            f"(sha256 {build_cfg.tuned_for[:12]}…); --elatta chooses them for this one."
        )
    if args.fixed:
        from elatta_measure.fixed_eval import evaluate_fixed

        from codegen.frontend.reader import parse_config

        # the integer reference runs the config written beside the report: what a build of
        # REPORT/elatta.toml runs on the device
        written = parse_config(tomllib.loads(toml_text), str(out / "elatta.toml"))
        report["fixed"] = evaluate_fixed(
            args.model,
            args.basis,
            written,
            args.data,
            # the baseline beside every mode, as in the float table
            modes=("no_adapt", *(m for m in modes if m != "no_adapt")),
            limit=args.limit,
            seeds=opts.seeds,
            progress=not args.no_progress,
            trust_pickle=args.trust_pickle,
            declared=declared,
            stream=stream,
            wire=args.wire,
        )
        text += "\n\n" + format_fixed_vs_float(report)
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "elatta.toml").write_text(toml_text)
    (out / "report.txt").write_text(text + "\n")
    plot(report, out / "report.png")
    print(text)
    print(
        f"wrote {out / 'report.json'}, {out / 'elatta.toml'} (the build config), "
        f"{out / 'report.txt'}, {out / 'report.png'}"
    )
    return 0
