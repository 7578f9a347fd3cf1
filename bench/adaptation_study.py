"""The adaptation study of `docs/adaptation.md`: select on source data, run the test once.

    PYTHONPATH=. python bench/adaptation_study.py run --name default --data out/data/demo \
        --model models/default/model.pt --basis models/default/basis.npz --out out/study
    PYTHONPATH=. python bench/adaptation_study.py run --name fsdd --data out/data/fsdd \
        --model models/fsdd/model.pt --basis models/fsdd/basis.npz --out out/study
    PYTHONPATH=. python bench/adaptation_study.py tables --out out/study > tables.md
    PYTHONPATH=. python bench/adaptation_study.py causal --name fsdd --data out/data/fsdd \
        --model models/fsdd/model.pt --basis models/fsdd/basis.npz --out out/study
    PYTHONPATH=. python bench/adaptation_study.py causal-tables --out out/study

`causal` is the study of the causal, gated input normalisation for the audio mode
(docs/adaptation.md, "Audio mode: causal cmvn"): selection on S, then the test once; `gated`,
`select`, `gated-select`, `select-floor`, `select-clip` and `select-heldout` are its rounds 2
to 7 (`gated-select-tables`, `select-floor-tables`, `select-clip-tables` and
`select-heldout-tables` render rounds 4 to 7).

A round reads the deployed configuration from ``--config``; to re-run a round as it ran, give
it the build config of the round's rule commit (e.g. ``git show e1e816c:configs/fsdd.toml`` for
round 8), since a later round may have changed what is deployed.

`run` writes ``<out>/<name>.json`` (selection rows, chosen configurations, per-condition
correct counts per method, protocol and seed); `tables` renders the Markdown tables. Every MFCC
is computed once per clip and every latent once per (clip, input normalisation); the CMA-ES
searches are the only per-clip Python loops. Selection rule and grids: `docs/adaptation.md`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SEEDS = (0, 1, 2)
SEGMENT = 50
SEARCH_SUBSET = 96  # validation clips per source condition for the CMA-ES methods
COLUMNS = ("clean", "0", "-5", "-10", "-15", "-20", "reverb", "channel")
SNR_COLS = ("0", "-5", "-10", "-15", "-20")
SRC_CODE = 100  # sample-id offset of the source selection conditions (test codes are < 100)


@dataclass(frozen=True)
class CondData:
    """One condition: raw MFCC [n, T, F], labels, ids, and its column."""

    column: str
    feats: np.ndarray
    labels: np.ndarray
    ids: np.ndarray


@dataclass(frozen=True)
class Ctx:
    model: Any
    w: np.ndarray
    b: np.ndarray
    mu_tr: np.ndarray
    sd_tr: np.ndarray
    v_pca: np.ndarray
    v_nuis: np.ndarray
    r_nuis: float
    mu_z: np.ndarray
    sd_z: np.ndarray


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def column_of(family: str, snr: float | None) -> str:
    if family == "additive":
        return f"{snr:g}"
    return family


def load_test(
    data_dir: str, features: Callable[[np.ndarray], np.ndarray] | None = None
) -> list[CondData]:
    """The test conditions; ``features`` (default `mfcc`) maps a condition's PCM to its feats."""
    from codegen.base.features import mfcc
    from codegen.data import conditions, load_condition

    feat = features or mfcc
    out = []
    for cond in conditions(data_dir):
        s = load_condition(data_dir, cond)
        out.append(CondData(column_of(cond.family, cond.snr_db), feat(s.pcm), s.labels, s.ids))
    return out


def load_source(
    data_dir: str, features: Callable[[np.ndarray], np.ndarray] | None = None
) -> list[CondData]:
    """S: clean validation + validation × each non-target kind × each SNR (mix_additive)."""
    from codegen.base.features import mfcc
    from codegen.data import background_noises, dataset_info, load_split
    from codegen.data.common import ID_STRIDE, SILENCE
    from codegen.data.shifts import mix_additive

    feat = features or mfcc
    info = dataset_info(data_dir)
    val = load_split(data_dir, "val")
    with np.load(Path(data_dir) / info["background"]["file"]) as z:
        kinds = [str(k) for k in z["kinds"]]
    noises = background_noises(data_dir)
    silence = val.labels == (val.classes.index(SILENCE) if SILENCE in val.classes else -1)
    out = [CondData("clean", feat(val.pcm), val.labels, val.ids)]
    code = SRC_CODE
    for kind in sorted(set(kinds)):
        bank = noises[[i for i, k in enumerate(kinds) if k == kind]]
        for snr in info["snrs"]:
            code += 1
            ids = val.ids + code * ID_STRIDE
            res = mix_additive(
                val.pcm, ids, silence, bank, category=f"src/{kind}", snr_db=float(snr),
                seed=int(info["seed"]),
            )  # fmt: skip
            out.append(CondData(f"{float(snr):g}", feat(res.pcm), val.labels, ids))
    return out


def subset(conds: list[CondData], n: int, seed: int = 0) -> list[CondData]:
    rng = np.random.default_rng([seed, 0x5B5E7])
    idx = np.sort(rng.permutation(len(conds[0].labels))[:n])
    return [CondData(c.column, c.feats[idx], c.labels[idx], c.ids[idx]) for c in conds]


def make_ctx(model_path: str, basis_path: str, data_dir: str) -> Ctx:
    from codegen.data import background_noises, load_split
    from codegen.elatta.methods import nuisance_basis
    from codegen.frontend.basis import load_basis
    from codegen.frontend.model import encode_numpy, head_numpy, load_checkpoint
    from codegen.ir.meta import features_for
    from codegen.train.fit import SILENCE, TrainConfig, augment

    model, meta = load_checkpoint(model_path)
    w, b = head_numpy(model)
    v = load_basis(basis_path).V
    train = load_split(data_dir, "train")
    z_clean = encode_numpy(model, features_for(train.pcm, meta))
    known = TrainConfig.__dataclass_fields__
    recipe = TrainConfig(**{k: x for k, x in meta.train.get("config", {}).items() if k in known})
    # no time shift: the pair must differ by the noise only
    recipe = TrainConfig(**{**recipe.__dict__, "shift_ms": 0.0, "aug_prob": 1.0})
    silence = train.labels == (train.classes.index(SILENCE) if SILENCE in train.classes else -1)
    rng = np.random.default_rng([0, 0x4E015E])
    noisy = augment(train.pcm, silence, background_noises(data_dir), recipe, rng)
    z_noisy = encode_numpy(model, features_for(noisy, meta))
    v_n, r_n = nuisance_basis(z_noisy, z_clean, v.shape[1])
    return Ctx(
        model, w, b, np.asarray(meta.norm_mean, np.float64), np.asarray(meta.norm_std, np.float64),
        v, v_n, r_n, z_clean.mean(axis=0), z_clean.std(axis=0) + 1e-6,
    )  # fmt: skip


# ------------------------------------------------------------------------------ methods


Method = Callable[[Ctx, np.ndarray, np.ndarray, int, bool], np.ndarray]
"""(ctx, raw feats [N,T,F] in play order, ids [N], seed, continual) -> predictions [N]."""


def encode(ctx: Ctx, x: np.ndarray) -> np.ndarray:
    from codegen.frontend.model import encode_numpy

    out: np.ndarray = encode_numpy(ctx.model, x.astype(np.float32))
    return out


def norm_train(ctx: Ctx, feats: np.ndarray) -> np.ndarray:
    return ((feats - ctx.mu_tr) / ctx.sd_tr).astype(np.float32)


def predict(ctx: Ctx, z: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.argmax(z @ ctx.w.T + ctx.b, axis=1)
    return out


def m_noadapt(ctx: Ctx, f: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
    return predict(ctx, encode(ctx, norm_train(ctx, f)))


def m_elatta(params: dict[str, float]) -> Method:
    def run(ctx: Ctx, f: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        from codegen.elatta.float_ref import ElattaConfig, adapt

        mode = "continual_bounded" if cont else "strict"
        cfg = ElattaConfig(
            k=ctx.v_pca.shape[1], sigma0=params["sigma0"], beta=params["beta"],
            radius=params["radius"], mode=mode, seed=seed,
        )  # fmt: skip
        z = encode(ctx, norm_train(ctx, f))
        out: np.ndarray = adapt(z, ctx.w, ctx.b, ctx.v_pca, ids, cfg).pred
        return out

    return run


def m_search(
    sigma_mult: float, objective: str = "entropy", gamma: float = 0.0, cmvn: Any = None
) -> Method:
    def run(ctx: Ctx, f: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        from codegen.elatta.float_ref import ElattaConfig
        from codegen.elatta.methods import SearchConfig, cmvn_stream, search_adapt

        x = norm_train(ctx, f) if cmvn is None else cmvn_stream(f, ctx.mu_tr, ctx.sd_tr, cmvn)
        z = encode(ctx, x)
        ec = ElattaConfig(k=ctx.v_nuis.shape[1], sigma0=sigma_mult * ctx.r_nuis, seed=seed)
        cfg = SearchConfig(ec, objective=objective, gamma=gamma, scale=ctx.r_nuis)
        return search_adapt(z, ctx.w, ctx.b, ctx.v_nuis, ids, cfg)

    return run


def m_cmvn(weight: float, alpha: float | None, variance: bool) -> Method:
    def run(ctx: Ctx, f: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        from codegen.elatta.methods import CmvnConfig, cmvn_stream

        cfg = CmvnConfig(weight, alpha if cont else None, variance)
        return predict(ctx, encode(ctx, cmvn_stream(f, ctx.mu_tr, ctx.sd_tr, cfg)))

    return run


def m_align(weight: float, alpha: float) -> Method:
    def run(ctx: Ctx, f: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        from codegen.elatta.methods import AlignConfig, latent_align_stream

        z = encode(ctx, norm_train(ctx, f))
        return predict(ctx, latent_align_stream(z, ctx.mu_z, ctx.sd_z, AlignConfig(weight, alpha)))

    return run


# ------------------------------------------------------------------------------ protocols


def run_protocol(
    ctx: Ctx,
    conds: list[CondData],
    method: Method,
    seed: int,
    continual: bool,
    segment: int = SEGMENT,
) -> list[np.ndarray]:
    """Per condition: bool correct per clip (condition's clip order)."""
    from codegen.data.streams import StreamSpec, build_stream

    if not continual:
        out = []
        feats = np.concatenate([c.feats for c in conds])
        ids = np.concatenate([c.ids for c in conds])
        pred = method(ctx, feats, ids, seed, False)
        pos = 0
        for c in conds:
            n = len(c.labels)
            out.append(pred[pos : pos + n] == c.labels)
            pos += n
        return out
    st = build_stream([len(c.labels) for c in conds], StreamSpec(segment, "random", seed))
    feats = np.empty((len(st), *conds[0].feats.shape[1:]), np.float32)
    ids = np.empty(len(st), np.int64)
    for ci, c in enumerate(conds):
        sel = st.condition == ci
        feats[sel] = c.feats[st.clip[sel]]
        ids[sel] = c.ids[st.clip[sel]]
    pred = method(ctx, feats, ids, seed, True)
    out = []
    for ci, c in enumerate(conds):
        sel = st.condition == ci
        ok = np.empty(len(c.labels), bool)
        ok[st.clip[sel]] = pred[sel] == c.labels[st.clip[sel]]
        out.append(ok)
    return out


def gains(
    base: list[np.ndarray], runs: list[list[np.ndarray]], conds: list[CondData]
) -> dict[str, dict[str, Any]]:
    """Per column: mean gain (points), seed std, paired SE (mean over seeds)."""
    out: dict[str, dict[str, Any]] = {}
    for col in dict.fromkeys(c.column for c in conds):
        idx = [i for i, c in enumerate(conds) if c.column == col]
        ok0 = np.concatenate([base[i] for i in idx]).astype(float)
        per_seed, ses, accs = [], [], []
        for run in runs:
            ok = np.concatenate([run[i] for i in idx]).astype(float)
            d = ok - ok0
            per_seed.append(100 * d.mean())
            ses.append(100 * math.sqrt(d.var() / d.size))
            accs.append(100 * ok.mean())
        out[col] = {
            "acc": float(np.mean(accs)),
            "acc_noadapt": float(100 * ok0.mean()),
            "gain": float(np.mean(per_seed)),
            "std": float(np.std(per_seed, ddof=1)) if len(runs) > 1 else 0.0,
            "se": float(np.mean(ses)),
            "per_seed": [float(v) for v in per_seed],
        }
    return out


def evaluate_method(
    ctx: Ctx,
    conds: list[CondData],
    method: Method,
    continual: bool,
    base: list[np.ndarray],
    segment: int = SEGMENT,
) -> dict[str, dict[str, Any]]:
    runs = [run_protocol(ctx, conds, method, s, continual, segment) for s in SEEDS]
    return gains(base, runs, conds)


def score(g: dict[str, dict[str, Any]]) -> tuple[float, bool]:
    snr = float(np.mean([g[c]["gain"] for c in SNR_COLS]))
    ok = g["clean"]["gain"] >= -0.5 and all(g[c]["gain"] >= -0.5 for c in SNR_COLS)
    return snr, ok


def select(
    ctx: Ctx,
    conds: list[CondData],
    grid: list[tuple[str, Method]],
    continual: bool,
    base: list[np.ndarray],
) -> tuple[int, list[dict[str, Any]]]:
    """Index of the chosen grid entry by the rule of docs/adaptation.md, and all rows."""
    rows: list[dict[str, Any]] = []
    for label, method in grid:
        g = evaluate_method(ctx, conds, method, continual, base)
        sc, ok = score(g)
        rows.append({"config": label, "score": sc, "admissible": ok, "gains": g})
        log(f"  select {label}: score {sc:+.2f} admissible {ok}")
    return choose_by_rule(rows), rows


TIE = 0.1  # points: a less aggressive configuration this near the best wins


def choose_by_rule(rows: list[dict[str, Any]]) -> int:
    """The selection rule of docs/adaptation.md on rows listed least → most aggressive, each
    with "score" and "admissible": the admissible row with the highest score, the first row
    within `TIE` of it winning the tie; the first (least aggressive) row if none is admissible."""
    adm = [i for i, r in enumerate(rows) if r["admissible"]]
    if not adm:
        return 0
    best = max(rows[i]["score"] for i in adm)
    return min(i for i in adm if rows[i]["score"] >= best - TIE)


# ------------------------------------------------------------------------------ run


def paper_hyperparameters(ctx: Ctx, model_path: str, data_dir: str) -> dict[str, float]:
    """σ₀, β, radius by the project's own rules (`codegen eval`), on source validation."""
    from elatta_measure.evaluate import select_hyperparameters, selection_set

    from codegen.elatta.float_ref import ElattaConfig
    from codegen.frontend.model import load_checkpoint

    model, meta = load_checkpoint(model_path)
    z_sel, y_sel, z_clean, desc = selection_set(model, meta, data_dir, 3, SEEDS[0])
    base = ElattaConfig(k=ctx.v_pca.shape[1], seed=SEEDS[0])
    sel = select_hyperparameters(
        z_sel, y_sel, z_clean, ctx.w, ctx.b, ctx.v_pca, base, SEEDS, None, None, None, desc
    )
    return {"sigma0": sel.sigma0, "beta": sel.beta, "radius": sel.radius}


def grids() -> dict[str, tuple[tuple[str, ...], list[tuple[str, Method]]]]:
    """Method -> (protocols, grid least → most aggressive), as in docs/adaptation.md."""
    g: dict[str, tuple[tuple[str, ...], list[tuple[str, Method]]]] = {}
    g["elatta_nuis"] = (
        ("strict",),
        [(f"sigma0={s}r", m_search(s)) for s in (0.05, 0.1, 0.2, 0.5)],
    )
    g["elatta_nuis_pen"] = (
        ("strict",),
        [
            (f"sigma0={s}r,gamma={gm}", m_search(s, "entropy_pen", gm))
            for s, gm in ((0.2, 1.0), (0.2, 0.1), (0.5, 1.0), (0.5, 0.1))
        ],
    )
    g["infomax"] = (
        ("continual",),
        [(f"sigma0={s}r", m_search(s, "infomax")) for s in (0.1, 0.2, 0.5)],
    )
    g["cmvn_strict"] = (
        ("strict",),
        [
            (f"w={w},{'mean+var' if v else 'mean'}", m_cmvn(w, None, v))
            for v in (False, True)
            for w in (0.125, 0.25, 0.5, 0.75, 1.0)
        ],
    )
    g["cmvn"] = (
        ("continual",),
        [
            (f"alpha=1/{int(1 / a)},w={w},{'mean+var' if v else 'mean'}", m_cmvn(w, a, v))
            for v in (False, True)
            for a in (1 / 64, 1 / 16, 1 / 4)
            for w in (0.25, 0.5, 0.75, 1.0)
        ],
    )
    g["latent_align"] = (
        ("continual",),
        [
            (f"alpha=1/{int(1 / a)},w={w}", m_align(w, a))
            for a in (1 / 64, 1 / 16)
            for w in (0.25, 0.5, 1.0)
        ],
    )
    return g


def cmvn_from_label(label: str) -> Any:
    from codegen.elatta.methods import CmvnConfig

    parts = dict(p.split("=") for p in label.split(",") if "=" in p)
    alpha = 1.0 / float(parts["alpha"].split("/")[1])
    return CmvnConfig(float(parts["w"]), alpha, label.endswith("mean+var"))


def run(args: argparse.Namespace) -> int:
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    log(f"{args.name}: features and context")
    ctx = make_ctx(args.model, args.basis, args.data)
    src = load_source(args.data)
    src_small = subset(src, SEARCH_SUBSET)
    test = load_test(args.data)
    log(f"  {len(src)} source conditions, {len(test)} test conditions, r_nuis {ctx.r_nuis:.3f}")
    result: dict[str, Any] = {"name": args.name, "data": args.data, "model": args.model}
    result["r_nuis"] = ctx.r_nuis

    def base_of(conds: list[CondData]) -> list[np.ndarray]:
        return run_protocol(ctx, conds, m_noadapt, 0, False)

    base_src, base_small, base_test = base_of(src), base_of(src_small), base_of(test)
    result["noadapt_test"] = gains(base_test, [base_test], test)
    result["noadapt_source"] = gains(base_src, [base_src], src)

    paper = paper_hyperparameters(ctx, args.model, args.data)
    log(f"  paper ELaTTA hyperparameters {paper}")
    result["paper"] = paper

    chosen: dict[str, dict[str, Any]] = {}
    methods: dict[str, tuple[tuple[str, ...], Method]] = {}
    methods["elatta"] = (("strict", "continual"), m_elatta(paper))
    chosen["elatta"] = {"config": f"sigma0={paper['sigma0']:.4g}, beta={paper['beta']:.3g}, "
                        f"radius={paper['radius']:.4g} (project rules)"}  # fmt: skip
    for name, (protocols, grid) in grids().items():
        log(f"select {name}")
        search = name in ("elatta_nuis", "elatta_nuis_pen", "infomax")
        conds, base = (src_small, base_small) if search else (src, base_src)
        i, rows = select(ctx, conds, grid, protocols[0] == "continual", base)
        chosen[name] = {"config": rows[i]["config"], "rows": rows}
        methods[name] = (protocols, grid[i][1])
        log(f"  chose {rows[i]['config']}")
    # combined: the chosen continual cmvn, then the nuisance search
    cm = cmvn_from_label(chosen["cmvn"]["config"])
    grid = [
        (f"{chosen['cmvn']['config']}; sigma0={s}r", m_search(s, cmvn=cm)) for s in (0.05, 0.1, 0.2)
    ]
    log("select cmvn+elatta_nuis")
    i, rows = select(ctx, src_small, grid, True, base_small)
    chosen["cmvn+elatta_nuis"] = {"config": rows[i]["config"], "rows": rows}
    methods["cmvn+elatta_nuis"] = (("continual",), grid[i][1])
    result["chosen"] = chosen
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"{args.name}.selection.json").write_text(json.dumps(result, indent=1))

    log("test (run once)")
    test_res: dict[str, dict[str, Any]] = {}
    for name, (protocols, method) in methods.items():
        for proto in protocols:
            t1 = time.perf_counter()
            test_res[f"{name}/{proto}"] = evaluate_method(
                ctx, test, method, proto == "continual", base_test
            )
            log(f"  {name}/{proto}: {time.perf_counter() - t1:.0f} s")
    result["test"] = test_res
    result["seconds"] = round(time.perf_counter() - t0, 1)
    (Path(args.out) / f"{args.name}.json").write_text(json.dumps(result, indent=1))
    log(f"done in {result['seconds']} s")
    return 0


# ------------------------------------------------------------------------------ tables


def flops_per_clip(method: str, T: int = 49, F: int = 10, D: int = 32, C: int = 12) -> int:
    """Float operations per clip beyond no-adapt (multiply-add = 2), see docs/adaptation.md."""
    k, lam, n = 2, 6, 2
    cand = 2 * k * D + 2 * C * D + 4 * C  # z + V p, head, entropy (exp/log counted once each)
    cma = 60 * k * k + 20 * k * lam  # CMA-ES tell (rank-μ, paths, step size) + ask, k = 2
    search = n * lam * cand + n * cma
    cmvn = 3 * T * F + 12 * F  # frame sums of x and x², EMA + blend + rsqrt per coefficient
    return {
        "elatta": search,
        "elatta_nuis": search,
        "elatta_nuis_pen": search + n * lam * 3 * k,
        "infomax": search + n * lam * 8 * 3 * C,
        "cmvn_strict": cmvn,
        "cmvn": cmvn,
        "cmvn+elatta_nuis": cmvn + search,
        "latent_align": 12 * D,
    }[method]


def noadapt_flops(T: int = 49, F: int = 10, D: int = 32, C: int = 12) -> int:
    return T * (2 * 4 * D * (F + D) + 4 * 4 * D + 2 * F) + 2 * C * D


def fmt_cell(g: dict[str, float], seeds: int) -> str:
    spread = f"±{g['std']:.2f}" if seeds > 1 else ""
    return f"{g['gain']:+.2f}{spread} [{g['se']:.2f}]"


def tables(args: argparse.Namespace) -> int:
    out: list[str] = []
    for name in ("default", "fsdd"):
        p = Path(args.out) / f"{name}.json"
        if not p.exists():
            continue
        r = json.loads(p.read_text())
        C = 12 if name == "default" else 10
        na = r["noadapt_test"]
        title = {"default": "Built-in set (models/default)", "fsdd": "FSDD (models/fsdd)"}[name]
        out += [f"### {title}: test split, gain over no-adapt (points)", ""]
        out.append("| method | protocol | config (chosen on S) | " + " | ".join(COLUMNS)
                   + " | extra flops/clip |")  # fmt: skip
        out.append("|---" * (len(COLUMNS) + 4) + "|")
        out.append("| no-adapt (accuracy %) | — | — | "
                   + " | ".join(f"{na[c]['acc']:.2f}" for c in COLUMNS) + " | 0 |")  # fmt: skip
        for key, g in r["test"].items():
            meth, proto = key.split("/")
            cfg = r["chosen"][meth]["config"]
            cells = " | ".join(fmt_cell(g[c], 3) for c in COLUMNS)
            flops = flops_per_clip(meth, C=C)
            out.append(f"| {meth} | {proto} | {cfg} | {cells} | {flops} |")
        out.append("")
        out.append(f"No-adapt inference: {noadapt_flops(C=C)} float operations per clip "
                   f"(LSTM + head, MFCC excluded). Study time {r['seconds']:.0f} s.")  # fmt: skip
        out.append("")
        out += [f"Source selection set S ({name}): chosen configuration and its S score "
                "(mean gain over the five SNRs) per method", ""]  # fmt: skip
        out.append("| method | chosen | S score | admissible | S clean | S −10 | S −20 |")
        out.append("|---|---|---|---|---|---|---|")
        for meth, ch in r["chosen"].items():
            rows = ch.get("rows")
            if not rows:
                continue
            row = next(x for x in rows if x["config"] == ch["config"])
            g = row["gains"]
            out.append(
                f"| {meth} | {ch['config']} | {row['score']:+.2f} | {row['admissible']} | "
                f"{g['clean']['gain']:+.2f} | {g['-10']['gain']:+.2f} | {g['-20']['gain']:+.2f} |"
            )
        out.append("")
    print("\n".join(out))
    return 0


def positions(args: argparse.Namespace) -> int:
    """Accuracy by position in segment (first 10 clips vs the rest) of the chosen continual
    `cmvn` against no-adapt on the test stream, seeds 0–2 (no choice depends on it)."""
    import torch

    from codegen.data.streams import StreamSpec, build_stream, position_accuracy

    torch.set_num_threads(1)
    sel = json.loads((Path(args.out) / f"{args.name}.json").read_text())
    ctx = make_ctx(args.model, args.basis, args.data)
    test = load_test(args.data)
    cmvn = cmvn_from_label(sel["chosen"]["cmvn"]["config"])
    method = m_cmvn(cmvn.weight, cmvn.alpha, cmvn.variance)
    rows: dict[str, list[dict[str, float]]] = {"no_adapt": [], "cmvn": []}
    for seed in SEEDS:
        st = build_stream([len(c.labels) for c in test], StreamSpec(SEGMENT, "random", seed))
        feats = np.stack([test[c].feats[i] for c, i in zip(st.condition, st.clip, strict=True)])
        y = np.array([test[c].labels[i] for c, i in zip(st.condition, st.clip, strict=True)])
        ids = np.zeros(len(st), np.int64)
        for name, m in (("no_adapt", m_noadapt), ("cmvn", method)):
            pa = position_accuracy(st, m(ctx, feats, ids, seed, True) == y)
            rows[name].append({"head": 100 * pa.acc_head, "rest": 100 * pa.acc_rest})
    out = {
        k: {p: float(np.mean([r[p] for r in v])) for p in ("head", "rest")} for k, v in rows.items()
    }
    (Path(args.out) / f"{args.name}.positions.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out))
    return 0


# ------------------------------------------------------------------ audio mode: causal cmvn

CAUSAL_SEGMENTS = (50, 10)
CAUSAL_CLEAN_FLOOR = -0.2  # clean S (mixed stream) and the clean-only stream, every seed


def m_cmvn_causal(weight: float, alpha: float, gate: float | None) -> Method:
    def run(ctx: Ctx, f: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        from codegen.elatta.methods import CmvnConfig, cmvn_causal_stream

        x = cmvn_causal_stream(f, ctx.mu_tr, ctx.sd_tr, CmvnConfig(weight, alpha, True), gate)
        return predict(ctx, encode(ctx, x))

    return run


def causal_grid() -> list[tuple[str, Method]]:
    """docs/adaptation.md "Audio mode: causal cmvn": least → most aggressive."""
    return [
        (f"alpha=1/{int(1 / a)},w=0.25,gate={g or 'none'}", m_cmvn_causal(0.25, a, g))
        for a in (1 / 16, 1 / 4, 1 / 2)
        for g in (1.0, 0.75, 0.5, None)
    ]


def clean_only(
    ctx: Ctx, clean: CondData, method: Method, segment: int, base: list[np.ndarray]
) -> dict[str, Any]:
    """The no-shift stream: the clean condition alone, in the stream's seeded order."""
    runs = [run_protocol(ctx, [clean], method, s, True, segment) for s in SEEDS]
    return gains(base, runs, [clean])["clean"]


def causal_eval(
    ctx: Ctx, conds: list[CondData], method: Method, base: list[np.ndarray]
) -> dict[str, Any]:
    """Per segment length: gains over the mixed stream and over the clean-only stream."""
    out: dict[str, Any] = {}
    for seg in CAUSAL_SEGMENTS:
        g = evaluate_method(ctx, conds, method, True, base, seg)
        g["clean_only"] = clean_only(ctx, conds[0], method, seg, base[:1])
        out[str(seg)] = g
    return out


def causal_score(ev: dict[str, Any]) -> tuple[float, bool]:
    """Mean over segment lengths of the mean SNR gain; admissible at both lengths: every SNR
    ≥ −0.5, clean and clean-only ≥ −0.2 in each seed."""
    scores, ok = [], True
    for g in ev.values():
        scores.append(float(np.mean([g[c]["gain"] for c in SNR_COLS])))
        ok &= all(g[c]["gain"] >= -0.5 for c in SNR_COLS)
        for col in ("clean", "clean_only"):
            ok &= min(g[col]["per_seed"]) >= CAUSAL_CLEAN_FLOOR
    return float(np.mean(scores)), bool(ok)


def causal_select(
    ctx: Ctx, src: list[CondData], grid: list[tuple[str, Method]], base_src: list[np.ndarray]
) -> tuple[int, list[dict[str, Any]]]:
    """Every configuration of ``grid`` (least → most aggressive) on S by `causal_eval` and
    `causal_score`; the index `choose_by_rule` picks, and the rows."""
    rows: list[dict[str, Any]] = []
    for label, method in grid:
        ev = causal_eval(ctx, src, method, base_src)
        sc, ok = causal_score(ev)
        rows.append({"config": label, "score": sc, "admissible": ok, "eval": ev})
        log(f"  select {label}: score {sc:+.2f} admissible {ok}")
    return choose_by_rule(rows), rows


def causal(args: argparse.Namespace) -> int:
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    ctx = make_ctx(args.model, args.basis, args.data)
    src = load_source(args.data)
    assert src[0].column == "clean"
    base_src = run_protocol(ctx, src, m_noadapt, 0, False)
    grid = causal_grid()
    chosen, rows = causal_select(ctx, src, grid, base_src)
    log(f"  chose {rows[chosen]['config']}")
    result: dict[str, Any] = {"name": args.name, "selection": rows}
    result["chosen"] = rows[chosen]["config"]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"{args.name}.causal-selection.json").write_text(json.dumps(result, indent=1))
    # the test, once: the chosen configuration, beside the feature-mode cmvn it replaces in the
    # audio mode and the same configuration without its gate (references, not choices)
    fcfg = meta_cmvn(args.config)
    parts = dict(p.split("=") for p in rows[chosen]["config"].split(","))
    alpha = 1.0 / float(parts["alpha"].split("/")[1])
    gate = None if parts["gate"] == "none" else float(parts["gate"])
    test = load_test(args.data)
    base_test = run_protocol(ctx, test, m_noadapt, 0, False)
    methods = {
        "cmvn_causal": m_cmvn_causal(0.25, alpha, gate),
        "cmvn_causal (no gate)": m_cmvn_causal(0.25, alpha, None),
        "cmvn (feature mode)": m_cmvn(fcfg.weight, fcfg.alpha, fcfg.variance),
    }
    result["test"] = {k: causal_eval(ctx, test, m, base_test) for k, m in methods.items()}
    result["noadapt_test"] = gains(base_test, [base_test], test)
    result["feature_cmvn"] = {"alpha": fcfg.alpha, "weight": fcfg.weight}
    result["seconds"] = round(time.perf_counter() - t0, 1)
    (Path(args.out) / f"{args.name}.causal.json").write_text(json.dumps(result, indent=1))
    log(f"done in {result['seconds']} s")
    return 0


def m_cmvn_gated(weight: float, alpha: float, gate: float | None) -> Method:
    def run(ctx: Ctx, f: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        from codegen.elatta.methods import CmvnConfig, cmvn_stream

        x = cmvn_stream(f, ctx.mu_tr, ctx.sd_tr, CmvnConfig(weight, alpha, True), gate)
        return predict(ctx, encode(ctx, x))

    return run


def gated(args: argparse.Namespace) -> int:
    """docs/adaptation.md "Audio mode, round 2": the shift gate on the look-ahead cmvn (the
    build config's α and w), selected on S by the causal section's rule, then the test once."""
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    ctx = make_ctx(args.model, args.basis, args.data)
    src = load_source(args.data)
    base_src = run_protocol(ctx, src, m_noadapt, 0, False)
    fcfg = meta_cmvn(args.config)
    grid = [
        (f"alpha=1/{round(1 / fcfg.alpha)},w={fcfg.weight},gate={g or 'none'}",
         m_cmvn_gated(fcfg.weight, fcfg.alpha, g))
        for g in (1.0, 0.75, 0.5, None)
    ]  # fmt: skip
    chosen, rows = causal_select(ctx, src, grid, base_src)
    log(f"  chose {rows[chosen]['config']}")
    result: dict[str, Any] = {"name": args.name, "selection": rows}
    result["chosen"] = rows[chosen]["config"]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"{args.name}.gated-selection.json").write_text(json.dumps(result, indent=1))
    test = load_test(args.data)
    base_test = run_protocol(ctx, test, m_noadapt, 0, False)
    result["test"] = {"cmvn (gated)": causal_eval(ctx, test, grid[chosen][1], base_test)}
    result["noadapt_test"] = gains(base_test, [base_test], test)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    (Path(args.out) / f"{args.name}.gated.json").write_text(json.dumps(result, indent=1))
    log(f"done in {result['seconds']} s")
    return 0


def _entropy(logits: np.ndarray) -> np.ndarray:
    e = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(e)
    p /= p.sum(axis=1, keepdims=True)
    out: np.ndarray = -(p * np.log(p + 1e-30)).sum(axis=1)
    return out


def m_cmvn_select(weight: float, alpha: float, margin: float) -> Method:
    """Round 3: the raw and the look-ahead-cmvn clip are both encoded; the cmvn class is taken
    only where its entropy is lower than the raw one's by more than ``margin`` nats."""

    def run(ctx: Ctx, f: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        from codegen.elatta.methods import CmvnConfig, cmvn_stream

        l0 = encode(ctx, norm_train(ctx, f)) @ ctx.w.T + ctx.b
        x = cmvn_stream(f, ctx.mu_tr, ctx.sd_tr, CmvnConfig(weight, alpha, True))
        l1 = encode(ctx, x) @ ctx.w.T + ctx.b
        use = _entropy(l1) < _entropy(l0) - margin
        out: np.ndarray = np.where(use, l1.argmax(axis=1), l0.argmax(axis=1))
        return out

    return run


def study_round(
    args: argparse.Namespace,
    key: str,
    grid: list[tuple[str, Method]],
    choice: list[dict[str, Any]],
    test_key: str,
    references: dict[str, tuple[str, Method]] | None = None,
) -> int:
    """One rule-first round of docs/adaptation.md (rounds 3 to 6): every configuration of
    ``grid`` (least → most aggressive) on S, the choice by the causal section's rule
    (`causal_select`, `choose_by_rule`) with ``choice[i]``, the chosen entry's parameters, and
    each reference (label: (config, method); not a grid entry) scored on S beside it, written to
    ``{name}.{key}-selection.json``; then, unless --selection-only, the chosen configuration and
    the references on the test split once, ``{name}.{key}.json`` (the test under
    ``test_key``)."""
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    ctx = make_ctx(args.model, args.basis, args.data)
    src = load_source(args.data)
    base_src = run_protocol(ctx, src, m_noadapt, 0, False)
    chosen, rows = causal_select(ctx, src, grid, base_src)
    log(f"  chose {rows[chosen]['config']}")
    result: dict[str, Any] = {"name": args.name, "selection": rows}
    result["chosen"] = rows[chosen]["config"]
    result.update(choice[chosen])
    refs = references or {}
    for ref, (config, method) in refs.items():
        ev = causal_eval(ctx, src, method, base_src)
        ref_score, ok = causal_score(ev)
        result[ref] = {"config": config, "score": ref_score, "admissible": ok, "eval": ev}
    tests = {test_key: grid[chosen][1], **{ref: method for ref, (_, method) in refs.items()}}
    return finish_round(args, ctx, key, result, tests, t0)


def finish_round(
    args: argparse.Namespace,
    ctx: Ctx,
    key: str,
    result: dict[str, Any],
    tests: dict[str, Method],
    t0: float,
) -> int:
    """A round's end: the selection ``result`` written to ``{name}.{key}-selection.json``; then,
    unless --selection-only, each of ``tests`` (label: method; the choice first) on the test
    split once, under result["test"], written to ``{name}.{key}.json``."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.{key}-selection.json").write_text(json.dumps(result, indent=1))
    log(f"selection written to {out / f'{args.name}.{key}-selection.json'}")
    if args.selection_only:
        return 0
    log("the test, once")
    _GS_CACHE.clear()
    test = load_test(args.data)
    base_test = run_protocol(ctx, test, m_noadapt, 0, False)
    result["test"] = {k: causal_eval(ctx, test, m, base_test) for k, m in tests.items()}
    result["seconds"] = round(time.perf_counter() - t0, 1)
    (out / f"{args.name}.{key}.json").write_text(json.dumps(result, indent=1))
    log(f"done in {result['seconds']} s")
    return 0


def select_round(args: argparse.Namespace) -> int:
    """docs/adaptation.md "Round 3": the margin of the confidence selection, by the causal
    section's rule on S, then the test once."""
    fcfg = meta_cmvn(args.config)
    a, w = float(fcfg.alpha), float(fcfg.weight)
    margins = (0.2, 0.1, 0.0)
    grid = [(f"alpha=1/{round(1 / a)},w={w},margin={m}", m_cmvn_select(w, a, m)) for m in margins]
    return study_round(args, "select", grid, [{} for _ in margins], "cmvn_select")


# ------------------------------------------------------------------ round 4: gated selection

GS_GATES: tuple[float | None, ...] = (None, 1.0, 0.75, 0.5)  # least → most aggressive
GS_MARGINS: tuple[float, ...] = (0.5, 0.3, 0.2, 0.1, 0.0)
_GS_CACHE: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _gs_runs(
    ctx: Ctx, f: np.ndarray, ids: np.ndarray, weight: float, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(raw logits, look-ahead-cmvn logits, shift distance d) of one stream; every grid entry
    of round 4 reads the same three, so they are computed once per stream (keyed by the
    stream's sample ids in play order and a checksum of its features)."""
    from codegen.elatta.methods import CmvnConfig, cmvn_shift, cmvn_stream

    key = (hash(ids.tobytes()), f.shape, float(f.sum(dtype=np.float64)), weight, alpha)
    hit = _GS_CACHE.get(key)
    if hit is not None:
        return hit
    cfg = CmvnConfig(weight, alpha, True)
    l0 = encode(ctx, norm_train(ctx, f)) @ ctx.w.T + ctx.b
    l1 = encode(ctx, cmvn_stream(f, ctx.mu_tr, ctx.sd_tr, cfg)) @ ctx.w.T + ctx.b
    d = cmvn_shift(f, ctx.mu_tr, ctx.sd_tr, cfg)
    if len(_GS_CACHE) >= 32:
        _GS_CACHE.clear()
    _GS_CACHE[key] = (l0, l1, d)
    return l0, l1, d


def m_gated_select(weight: float, alpha: float, gate: float | None, margin: float) -> Method:
    """Round 4: the cmvn class where the shift gate on the look-ahead statistics fires (d ≥ τ)
    or where its entropy is lower than the raw one's by more than ``margin`` nats; else raw.
    With ``gate=None`` it is round 3's `m_cmvn_select` (same logits, same entropies)."""

    def run(ctx: Ctx, f: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        l0, l1, d = _gs_runs(ctx, f, ids, weight, alpha)
        use = _entropy(l1) < _entropy(l0) - margin
        if gate is not None:
            use |= d >= gate
        out: np.ndarray = np.where(use, l1.argmax(axis=1), l0.argmax(axis=1))
        return out

    return run


def gs_label(alpha: float, weight: float, gate: float | None, margin: float) -> str:
    return f"alpha=1/{round(1 / alpha)},w={weight},gate={gate or 'none'},margin={margin}"


def gated_select(args: argparse.Namespace) -> int:
    """docs/adaptation.md "Round 4": the gated selection's (τ, m) on S by the causal section's
    rule, then the test once (references: feature-mode cmvn and round 3, from their JSONs)."""
    fcfg = meta_cmvn(args.config)
    a, w = float(fcfg.alpha), float(fcfg.weight)
    cfgs = [(g, m) for g in GS_GATES for m in GS_MARGINS]
    grid = [(gs_label(a, w, g, m), m_gated_select(w, a, g, m)) for g, m in cfgs]
    choice = [{"chosen_gate": g, "chosen_margin": m} for g, m in cfgs]
    return study_round(args, "gated-select", grid, choice, "gated_select")


@dataclass(frozen=True)
class RoundRef:
    """What a round's deployment rule compares with: its test row (label, evaluation), its S
    score, rows added to the S table, and the S table caption's tail."""

    label: str
    test: dict[str, Any] | None
    score: float
    rows: list[dict[str, Any]]
    caption: str


def round3_reference(out: Path, name: str, _: dict[str, Any]) -> RoundRef:
    """Round 3's chosen `cmvn_select`, from its JSONs (the reference of rounds 4 and 5)."""
    r3 = json.loads((out / f"{name}.select.json").read_text())
    r3s = json.loads((out / f"{name}.select-selection.json").read_text())
    score3 = float(next(x["score"] for x in r3s["selection"] if x["config"] == r3s["chosen"]))
    return RoundRef(f"round 3: cmvn_select ({r3['chosen']})", r3["test"]["cmvn_select"], score3,
                    [], f". Round 3's chosen configuration scored {score3:+.2f}.")  # fmt: skip


def round5_reference(_: Path, name: str, r6: dict[str, Any]) -> RoundRef:
    """Round 5's deployed configuration as round 6 measured it beside its grid."""
    r5 = r6["round5"]
    return RoundRef(f"round 5: selection with a floor ({r5['config']})",
                    r6.get("test", {}).get("round5"), float(r5["score"]),
                    [{**r5, "config": f"round 5: {r5['config']}"}],
                    "; the last row is round 5's deployed configuration (the deployment rule's "
                    "reference, not a grid entry).")  # fmt: skip


ROUND_TITLES = {"default": "Built-in set (models/default)", "fsdd": "FSDD (models/fsdd)"}


def round_json(out_dir: Path, name: str, key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A round's JSON for data set ``name`` (with its test, else its selection alone; None if
    it has not run) and the causal study's, which holds the no-adapt and feature-mode cmvn rows."""
    p = out_dir / f"{name}.{key}.json"
    if not p.exists():
        p = out_dir / f"{name}.{key}-selection.json"
    if not p.exists():
        return None
    causal_ref = json.loads((out_dir / f"{name}.causal.json").read_text())
    return json.loads(p.read_text()), causal_ref


def round_tables(
    out_dir: Path,
    number: int,
    key: str,
    test_key: str,
    label: str,
    reference: Callable[[Path, str, dict[str, Any]], RoundRef],
    against: int,
    digits: int,
) -> list[str]:
    """A round's tables (rounds 4 to 6): per data set and segment length the chosen
    configuration beside the feature-mode cmvn and the round it would replace, every
    configuration's S row (``digits`` decimals for the score), the deployment rule's verdict:
    deployed if admissible on both S and its mean S score over both sets is higher."""
    out: list[str] = []
    deploy: dict[str, tuple[float, bool, float]] = {}
    for name, title in ROUND_TITLES.items():
        loaded = round_json(out_dir, name, key)
        if loaded is None:
            continue
        rn, causal_ref = loaded
        ref = reference(out_dir, name, rn)
        if "test" in rn:
            rows = {
                "cmvn (feature mode)": causal_ref["test"]["cmvn (feature mode)"],
                ref.label: ref.test,
                f"round {number}: {label} ({rn['chosen']})": rn["test"][test_key],
            }
            for seg in CAUSAL_SEGMENTS:
                out += gain_table(f"{title}, round {number}, segments of {seg}",
                                  causal_ref["noadapt_test"], rows, seg)  # fmt: skip
        out += [f"Selection on S ({name}), round {number}, least → most aggressive: score (mean "
                "SNR gain, both segment lengths), admissible, worst clean / clean-only seed "
                f"(both lengths), S −10 and S −20 (segments of 50){ref.caption}", ""]  # fmt: skip
        out += selection_table([*rn["selection"], *ref.rows], rn["chosen"], digits)
        row = next(x for x in rn["selection"] if x["config"] == rn["chosen"])
        deploy[name] = (float(row["score"]), bool(row["admissible"]), ref.score)
    if len(deploy) == 2:
        s_new = float(np.mean([v[0] for v in deploy.values()]))
        s_old = float(np.mean([v[2] for v in deploy.values()]))
        ok = all(v[1] for v in deploy.values())
        verdict = "deployed" if ok and s_new > s_old else f"not deployed: round {against} stays"
        out.append(f"Deployment rule: round {number}'s choices admissible on both S: {ok}; mean S "
                   f"score over both sets {s_new:+.3f} against round {against}'s {s_old:+.3f}: "
                   f"{verdict}.")  # fmt: skip
        out.append("")
    return out


def gated_select_tables(args: argparse.Namespace) -> int:
    """Round 4's tables, beside round 3's `cmvn_select`."""
    print("\n".join(round_tables(Path(args.out), 4, "gated-select", "gated_select",
                                 "gated selection", round3_reference, 3, 2)))  # fmt: skip
    return 0


# ------------------------------------------------------------ round 5: selection with a floor

SF_FLOORS: tuple[float | None, ...] = (0.5, 0.3, 0.2, 0.1, None)  # least → most aggressive
SF_MARGINS: tuple[float, ...] = (0.2, 0.1, 0.0)


def m_select_floor(weight: float, alpha: float, floor: float | None, margin: float) -> Method:
    """Round 5: the cmvn class only where the look-ahead shift distance reaches the floor
    (d ≥ floor) and its entropy is lower than the raw one's by more than ``margin`` nats; else
    raw. With ``floor=None`` it is round 3's `m_cmvn_select` (same logits, same entropies)."""

    def run(ctx: Ctx, f: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        l0, l1, d = _gs_runs(ctx, f, ids, weight, alpha)
        use = _entropy(l1) < _entropy(l0) - margin
        if floor is not None:
            use &= d >= floor
        out: np.ndarray = np.where(use, l1.argmax(axis=1), l0.argmax(axis=1))
        return out

    return run


def sf_label(alpha: float, weight: float, floor: float | None, margin: float) -> str:
    return f"alpha=1/{round(1 / alpha)},w={weight},floor={floor or 'none'},margin={margin}"


def select_floor(args: argparse.Namespace) -> int:
    """docs/adaptation.md "Round 5": the selection's (floor, m) on S by the causal section's
    rule, then the test once (references: feature-mode cmvn and round 3, from their JSONs)."""
    fcfg = meta_cmvn(args.config)
    a, w = float(fcfg.alpha), float(fcfg.weight)
    cfgs = [(fl, m) for fl in SF_FLOORS for m in SF_MARGINS]
    grid = [(sf_label(a, w, fl, m), m_select_floor(w, a, fl, m)) for fl, m in cfgs]
    choice = [{"chosen_floor": fl, "chosen_margin": m} for fl, m in cfgs]
    return study_round(args, "select-floor", grid, choice, "select_floor")


def select_floor_tables(args: argparse.Namespace) -> int:
    """Round 5's tables, beside round 3's `cmvn_select`."""
    print("\n".join(round_tables(Path(args.out), 5, "select-floor", "select_floor",
                                 "selection with a floor", round3_reference, 3, 2)))  # fmt: skip
    return 0


# ---------------------------------------------------------- round 6: a per-clip shift statistic

SC_FORMS: tuple[str, ...] = ("clip floor", "clip gate")  # least → most aggressive
SC_TAUS: tuple[float, ...] = (2.0, 1.5, 1.0, 0.75)


def m_select_clip(
    weight: float, alpha: float, floor: float, margin: float, form: str, tau: float
) -> Method:
    """Round 6 (docs/adaptation.md): the cmvn class where the "clip floor" (d ≥ floor or
    d_clip ≥ τ) and the entropy test both pass, or where the floor d ≥ floor and the "clip gate"
    (d_clip ≥ τ or the entropy test) both pass; else raw: `m_select_device` with the clip floor
    or the clip gate at τ. τ = inf is round 5's `m_select_floor`."""
    if form not in SC_FORMS:
        raise ValueError(f"form {form!r}: use one of {SC_FORMS}")
    cf, cg = (tau, 0.0) if form == "clip floor" else (0.0, tau)
    return m_select_device(weight, alpha, margin, floor, cf, cg)


def sc_label(
    alpha: float, weight: float, floor: float, margin: float, form: str, tau: float
) -> str:
    return f"alpha=1/{round(1 / alpha)},w={weight},floor={floor},margin={margin},{form}={tau}"


def select_clip(args: argparse.Namespace) -> int:
    """docs/adaptation.md "Round 6": the per-clip statistic's (form, τ) on S by the causal
    section's rule, beside round 5's deployed configuration on S (the deployment rule's
    reference); then the test once, the choice beside round 5's configuration (a reference)."""
    cm = meta_select(args.config)
    a, w, fl, m = cm["alpha"], cm["weight"], cm["floor"], cm["margin"]
    cfgs = [(form, tau) for form in SC_FORMS for tau in SC_TAUS]
    grid = [(sc_label(a, w, fl, m, fo, t), m_select_clip(w, a, fl, m, fo, t)) for fo, t in cfgs]
    choice = [{"chosen_form": fo, "chosen_tau": t} for fo, t in cfgs]
    r5 = (sf_label(a, w, fl, m), m_select_floor(w, a, fl, m))
    return study_round(args, "select-clip", grid, choice, "select_clip", {"round5": r5})


def meta_select(config: str) -> dict[str, float]:
    """α, w of a build config's cmvn_select run ([cmvn]) and its deployed selection's floor,
    margin, clip floor and clip gate."""
    import tomllib

    cm = tomllib.loads(Path(config).read_text()).get("cmvn", {})
    # the normalised run's own shifts where the config gives them (round 8), else mode cmvn's
    a = int(cm.get("select_alpha_shift", cm["alpha_shift"]))
    b = int(cm.get("select_weight_shift", cm["weight_shift"]))
    out = {"alpha": 2.0**-a, "weight": 2.0**-b}
    out["floor"] = float(cm.get("select_floor", 0.0))
    out["margin"] = float(cm.get("select_margin", 0.0))
    out["clip_floor"] = float(cm.get("select_clip_floor", 0.0))
    out["clip_gate"] = float(cm.get("select_clip_gate", 0.0))
    return out


def gain_table(title: str, na: dict[str, Any], rows: dict[str, Any], seg: int) -> list[str]:
    """One segment length's test table: the no-adapt accuracies, then a row per method."""
    cols = (*COLUMNS, "clean_only")
    out = [f"#### {title}: gain over no-adapt (points)", ""]
    out.append("| method | " + " | ".join(cols) + " | clean-only per seed |")
    out.append("|---" * (len(cols) + 2) + "|")
    out.append("| no-adapt (accuracy %) | "
               + " | ".join(f"{na[c]['acc']:.2f}" for c in COLUMNS) + " | "
               + f"{na['clean']['acc']:.2f} | — |")  # fmt: skip
    for label, ev in rows.items():
        g = ev[str(seg)]
        seeds = " / ".join(f"{v:+.2f}" for v in g["clean_only"]["per_seed"])
        cells = " | ".join(fmt_cell(g[c], 3) for c in cols)
        out.append(f"| {label} | {cells} | {seeds} |")
    return [*out, ""]


def selection_table(rows: list[dict[str, Any]], chosen: str, digits: int = 3) -> list[str]:
    """The S rows of a round, least → most aggressive, the score with ``digits`` decimals."""
    out = ["| config | score | admissible | worst clean seed | worst clean-only seed "
           "| S −10 | S −20 |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in rows:
        ev = row["eval"].values()
        wc = min(min(g["clean"]["per_seed"]) for g in ev)
        wo = min(min(g["clean_only"]["per_seed"]) for g in ev)
        g50 = row["eval"]["50"]
        mark = " **chosen**" if row["config"] == chosen else ""
        out.append(f"| {row['config']}{mark} | {row['score']:+.{digits}f} | {row['admissible']} | "
                   f"{wc:+.2f} | {wo:+.2f} | {g50['-10']['gain']:+.2f} | "
                   f"{g50['-20']['gain']:+.2f} |")  # fmt: skip
    return [*out, ""]


def select_clip_tables(args: argparse.Namespace) -> int:
    """Round 6's tables, beside round 5's deployed configuration (also a row of the S table)."""
    print("\n".join(round_tables(Path(args.out), 6, "select-clip", "select_clip",
                                 "per-clip statistic", round5_reference, 5, 3)))  # fmt: skip
    return 0


def meta_cmvn(config: str) -> Any:
    """The feature-mode cmvn deployed by a build config's [cmvn] table."""
    import tomllib

    from codegen.elatta.methods import CmvnConfig

    cm = tomllib.loads(Path(config).read_text()).get("cmvn", {})
    return CmvnConfig(2.0 ** -int(cm["weight_shift"]), 2.0 ** -int(cm["alpha_shift"]), True)


def causal_tables(args: argparse.Namespace) -> int:
    out: list[str] = []
    cols = (*COLUMNS, "clean_only")
    for name in ("default", "fsdd"):
        p = Path(args.out) / f"{name}.causal.json"
        if not p.exists():
            continue
        r = json.loads(p.read_text())
        gp = Path(args.out) / f"{name}.gated.json"
        gated_r = json.loads(gp.read_text()) if gp.exists() else None
        if gated_r is not None:  # round 2: the gated look-ahead cmvn beside the causal rows
            r["test"][f"cmvn, gated ({gated_r['chosen']})"] = gated_r["test"]["cmvn (gated)"]
        sp3 = Path(args.out) / f"{name}.select.json"
        if sp3.exists():  # round 3: the confidence selection
            sel3 = json.loads(sp3.read_text())
            r["test"][f"cmvn_select ({sel3['chosen']})"] = sel3["test"]["cmvn_select"]
        title = {"default": "Built-in set (models/default)", "fsdd": "FSDD (models/fsdd)"}[name]
        for seg in CAUSAL_SEGMENTS:
            out += [f"#### {title}, segments of {seg}: gain over no-adapt (points)", ""]
            out.append("| method | " + " | ".join(cols) + " | clean-only per seed |")
            out.append("|---" * (len(cols) + 2) + "|")
            na = r["noadapt_test"]
            out.append("| no-adapt (accuracy %) | "
                       + " | ".join(f"{na[c]['acc']:.2f}" for c in COLUMNS) + " | "
                       + f"{na['clean']['acc']:.2f} | — |")  # fmt: skip
            for meth, ev in r["test"].items():
                g = ev[str(seg)]
                label = f"{meth} ({r['chosen']})" if meth == "cmvn_causal" else meth
                seeds = " / ".join(f"{v:+.2f}" for v in g["clean_only"]["per_seed"])
                cells = " | ".join(fmt_cell(g[c], 3) for c in cols)
                out.append(f"| {label} | {cells} | {seeds} |")
            out.append("")
        out += [f"Selection on S ({name}): score (mean SNR gain, both segment lengths), "
                "admissible, worst clean / clean-only seed", "",
                "| config | score | admissible | worst clean seed | worst clean-only seed |",
                "|---|---|---|---|---|"]  # fmt: skip
        kinds = (("causal", "cmvn_causal"), ("gated", "cmvn (look-ahead)"),
                 ("select", "cmvn_select"))  # fmt: skip
        for kind, label in kinds:
            sp = Path(args.out) / f"{name}.{kind}-selection.json"
            if not sp.exists():
                continue
            rows = json.loads(sp.read_text())
            for row in rows["selection"]:
                ev = row["eval"].values()
                wc = min(min(g["clean"]["per_seed"]) for g in ev)
                wo = min(min(g["clean_only"]["per_seed"]) for g in ev)
                mark = " **chosen**" if row["config"] == rows["chosen"] else ""
                out.append(f"| {label}: {row['config']}{mark} | {row['score']:+.2f} | "
                           f"{row['admissible']} | {wc:+.2f} | {wo:+.2f} |")  # fmt: skip
        out.append("")
    print("\n".join(out))
    return 0


# ------------------------------------------------- round 7: selection on held-out noise kinds

HELDOUT_CODE = 200  # sample-id offset of S_h's conditions (S's are 100 + k, test's < 100)
HELDOUT_BANK = (8, 4.0)  # clips per held-out kind, seconds per clip
SO_TAUS: tuple[float, ...] = (2.0, 1.5, 1.25, 1.0, 0.9, 0.75, 0.6, 0.5)  # least → most


def load_heldout(
    data_dir: str, features: Callable[[np.ndarray], np.ndarray] | None = None
) -> list[CondData]:
    """S_h: clean validation + validation × each held-out noise kind (`HELDOUT_GENERATORS`:
    neither a training nor a target noise) × each SNR, mixed as S is (`mix_additive`)."""
    from codegen.base.features import mfcc
    from codegen.data import dataset_info, load_split
    from codegen.data.common import ID_STRIDE, SILENCE, rng_for
    from codegen.data.noise import HELDOUT_GENERATORS, heldout_clip
    from codegen.data.shifts import mix_additive

    feat = features or mfcc
    info = dataset_info(data_dir)
    seed = int(info["seed"])
    val = load_split(data_dir, "val")
    silence = val.labels == (val.classes.index(SILENCE) if SILENCE in val.classes else -1)
    out = [CondData("clean", feat(val.pcm), val.labels, val.ids)]
    code = HELDOUT_CODE
    count, seconds = HELDOUT_BANK
    for kind in sorted(HELDOUT_GENERATORS):
        bank = np.stack([heldout_clip(kind, rng_for(seed, "heldout", kind, i), seconds)
                         for i in range(count)])  # fmt: skip
        for snr in info["snrs"]:
            code += 1
            ids = val.ids + code * ID_STRIDE
            res = mix_additive(
                val.pcm, ids, silence, bank, category=f"heldout/{kind}", snr_db=float(snr),
                seed=seed,
            )  # fmt: skip
            out.append(CondData(f"{float(snr):g}", feat(res.pcm), val.labels, ids))
    return out


def m_select_device(
    weight: float, alpha: float, margin: float, floor: float, clip_floor: float, clip_gate: float
) -> Method:
    """`cmvn_select` as the device decides it with no shift gate (`stage_classes`; each
    threshold 0 meaning none): floor_ok = d ≥ floor or d_clip ≥ clip floor; the normalised
    class where floor_ok and d_clip ≥ clip gate, or where floor_ok and the entropy test pass.
    With clip floor = clip gate = τ: d_clip ≥ τ, or round 5 (d ≥ floor and the entropy test)."""

    def run(ctx: Ctx, f: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        from codegen.elatta.methods import cmvn_clip_shift, select_masks

        l0, l1, d = _gs_runs(ctx, f, ids, weight, alpha)
        dc = cmvn_clip_shift(f, ctx.mu_tr, ctx.sd_tr)
        fired, floor_ok = select_masks(d, dc, 0.0, floor, clip_floor, clip_gate)
        use = fired | (floor_ok & (_entropy(l1) < _entropy(l0) - margin))
        out: np.ndarray = np.where(use, l1.argmax(axis=1), l0.argmax(axis=1))
        return out

    return run


def heldout_select(
    ctx: Ctx,
    sets: dict[str, tuple[list[CondData], list[np.ndarray]]],
    grid: list[tuple[str, Method]],
) -> tuple[int, list[dict[str, Any]]]:
    """Round 7's rule: each configuration evaluated on S and on S_h (`causal_eval`); the score
    is S_h's (`causal_score`), admissible where it is admissible on both; `choose_by_rule`."""
    rows: list[dict[str, Any]] = []
    for label, method in grid:
        ev = {k: causal_eval(ctx, conds, method, base) for k, (conds, base) in sets.items()}
        sc = {k: causal_score(e) for k, e in ev.items()}
        ok = all(v[1] for v in sc.values())
        rows.append({"config": label, "score": sc["S_h"][0], "score_S": sc["S"][0],
                     "admissible": ok, "admissible_S": sc["S"][1],
                     "admissible_S_h": sc["S_h"][1], "eval": ev["S_h"],
                     "eval_S": ev["S"]})  # fmt: skip
        log(f"  select {label}: S_h {sc['S_h'][0]:+.3f} ({sc['S_h'][1]}), "
            f"S {sc['S'][0]:+.3f} ({sc['S'][1]})")  # fmt: skip
    return choose_by_rule(rows), rows


def select_heldout(args: argparse.Namespace) -> int:
    """docs/adaptation.md "Round 7": the deployed `cmvn_select` and the "clip or" rule at each τ
    of `SO_TAUS`, scored on the held-out noise kinds S_h, admissible on S and S_h; then the
    test once, the choice beside the deployed configuration (a reference)."""
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    cm = meta_select(args.config)
    a, w, fl, m = cm["alpha"], cm["weight"], cm["floor"], cm["margin"]
    cf, cg = cm["clip_floor"], cm["clip_gate"]
    deployed = f"deployed: floor={fl},margin={m},clip floor={cf},clip gate={cg}"
    grid = [(deployed, m_select_device(w, a, m, fl, cf, cg))]
    grid += [(f"clip or={t}: floor={fl},margin={m}", m_select_device(w, a, m, fl, t, t))
             for t in SO_TAUS]  # fmt: skip
    choice = [{"clip_floor": cf, "clip_gate": cg}] + [
        {"clip_floor": t, "clip_gate": t} for t in SO_TAUS
    ]
    return heldout_round(args, "select-heldout", "select_heldout", grid, choice, 0, t0)


# --------------------------------------- round 8: the normalised run's own blend and EMA factor

SN_WEIGHTS: tuple[float, ...] = (0.25, 0.5, 1.0)  # w = 2^-b, least → most aggressive
SN_ALPHAS: tuple[float, ...] = (1 / 16, 1 / 4, 1 / 2)  # α = 2^-a, a ≥ 1
SN_TAUS: tuple[float, ...] = (2.0, 1.5, 1.0)  # "clip or" thresholds, least → most aggressive


def sn_rules(cm: dict[str, float]) -> list[tuple[str, float, float]]:
    """Round 8's selection rules, least → most aggressive: (label, clip floor, clip gate) — the
    deployed rule unless it is a "clip or" (clip floor = clip gate), then "clip or" at each τ."""
    rules = []
    if not (cm["clip_floor"] > 0 and cm["clip_floor"] == cm["clip_gate"]):
        rules.append((f"clip floor={cm['clip_floor']},clip gate={cm['clip_gate']}",
                      cm["clip_floor"], cm["clip_gate"]))  # fmt: skip
    return rules + [(f"clip or={t}", t, t) for t in SN_TAUS]


def select_norm(args: argparse.Namespace) -> int:
    """docs/adaptation.md "Round 8": the normalised run's (w, α) with the selection rules of
    `sn_rules`, scored on S_h and admissible on S and S_h (round 7's rule); then the test once,
    the choice beside the deployed configuration (a reference)."""
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    cm = meta_select(args.config)
    fl, m = cm["floor"], cm["margin"]
    grid: list[tuple[str, Method]] = []
    choice: list[dict[str, Any]] = []
    for w in SN_WEIGHTS:
        for a in SN_ALPHAS:
            for rule, cf, cg in sn_rules(cm):
                grid.append((f"w={w},alpha=1/{round(1 / a)},{rule}",
                             m_select_device(w, a, m, fl, cf, cg)))  # fmt: skip
                choice.append({"weight": w, "alpha": a, "clip_floor": cf, "clip_gate": cg})
    dep = {"weight": cm["weight"], "alpha": cm["alpha"], "clip_floor": cm["clip_floor"],
           "clip_gate": cm["clip_gate"]}  # fmt: skip
    return heldout_round(args, "select-norm", "select_norm", grid, choice, choice.index(dep), t0)


def heldout_round(
    args: argparse.Namespace,
    key: str,
    test_key: str,
    grid: list[tuple[str, Method]],
    choice: list[dict[str, Any]],
    deployed: int,
    t0: float,
) -> int:
    """One round scored on S_h (rounds 7 and 8): ``grid`` (least → most aggressive) on S and
    S_h by `heldout_select`, the deployed entry ``grid[deployed]`` staying if none is
    admissible; the choice, ``choice[chosen]``, written to ``{name}.{key}-selection.json``;
    then, unless --selection-only, the test once (the choice under ``test_key``, and the
    deployed entry as a reference if another was chosen), ``{name}.{key}.json``."""
    ctx = make_ctx(args.model, args.basis, args.data)
    sets: dict[str, tuple[list[CondData], list[np.ndarray]]] = {}
    for name, conds in (("S", load_source(args.data)), ("S_h", load_heldout(args.data))):
        sets[name] = (conds, run_protocol(ctx, conds, m_noadapt, 0, False))
    chosen, rows = heldout_select(ctx, sets, grid)
    if not any(r["admissible"] for r in rows):
        chosen = deployed  # the rule's fallback: the deployed configuration stays
    log(f"  chose {rows[chosen]['config']} (deployed: {rows[deployed]['config']})")
    result: dict[str, Any] = {"name": args.name, "selection": rows}
    result["chosen"] = rows[chosen]["config"]
    result["deployed"] = rows[deployed]["config"]
    result.update(choice[chosen])
    tests = {test_key: grid[chosen][1]}
    if chosen != deployed:
        tests["deployed"] = grid[deployed][1]
    return finish_round(args, ctx, key, result, tests, t0)


def heldout_round_tables(out_dir: Path, number: int, key: str, test_key: str) -> list[str]:
    """The tables of a round scored on S_h (rounds 7 and 8): per data set and segment length
    the choice beside the feature-mode cmvn and the deployed configuration before the round,
    then every entry's S_h and S rows."""
    lines: list[str] = []
    for name, title in ROUND_TITLES.items():
        loaded = round_json(out_dir, name, key)
        if loaded is None:
            continue
        rn, causal_ref = loaded
        if "test" in rn:
            rows = {"cmvn (feature mode)": causal_ref["test"]["cmvn (feature mode)"]}
            if "deployed" in rn["test"]:
                deployed = rn.get("deployed", rn["selection"][0]["config"])
                rows[f"round {number - 1} ({deployed})"] = rn["test"]["deployed"]
            rows[f"round {number}: {rn['chosen']}"] = rn["test"][test_key]
            for seg in CAUSAL_SEGMENTS:
                lines += gain_table(f"{title}, round {number}, segments of {seg}",
                                    causal_ref["noadapt_test"], rows, seg)  # fmt: skip
        lines += [f"Selection ({name}), round {number}, least → most aggressive: the S_h score "
                  "(mean SNR gain, both segment lengths) and S_h's row, then S's score, "
                  "admissibility and row (worst clean / clean-only seed over both lengths, −10 "
                  "and −20 at segments of 50)", ""]  # fmt: skip
        lines += ["| config | S_h score | S_h adm. | S_h clean / clean-only | S_h −10 / −20 "
                  "| S score | S adm. | S clean / clean-only | S −10 / −20 |",
                  "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for row in rn["selection"]:
            cells = []
            for ev, sc, ok in ((row["eval"], row["score"], row["admissible_S_h"]),
                               (row["eval_S"], row["score_S"], row["admissible_S"])):  # fmt: skip
                wc = min(min(g["clean"]["per_seed"]) for g in ev.values())
                wo = min(min(g["clean_only"]["per_seed"]) for g in ev.values())
                g50 = ev["50"]
                cells += [f"{sc:+.3f}", str(ok), f"{wc:+.2f} / {wo:+.2f}",
                          f"{g50['-10']['gain']:+.2f} / {g50['-20']['gain']:+.2f}"]  # fmt: skip
            mark = " **chosen**" if row["config"] == rn["chosen"] else ""
            lines.append(f"| {row['config']}{mark} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def select_heldout_tables(args: argparse.Namespace) -> int:
    """Round 7's tables, beside round 6's deployed configuration."""
    print("\n".join(heldout_round_tables(Path(args.out), 7, "select-heldout", "select_heldout")))
    return 0


def select_norm_tables(args: argparse.Namespace) -> int:
    """Round 8's tables, beside round 7's deployed configuration."""
    print("\n".join(heldout_round_tables(Path(args.out), 8, "select-norm", "select_norm")))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    study: dict[str, Callable[[argparse.Namespace], int]] = {
        "run": run, "positions": positions, "causal": causal, "gated": gated,
        "select": select_round, "gated-select": gated_select, "select-floor": select_floor,
        "select-clip": select_clip, "select-heldout": select_heldout, "select-norm": select_norm,
    }  # fmt: skip
    rounds = ("select", "gated-select", "select-floor", "select-clip", "select-heldout",
              "select-norm")  # fmt: skip
    tables_of: dict[str, Callable[[argparse.Namespace], int]] = {
        "tables": tables, "causal-tables": causal_tables,
        "gated-select-tables": gated_select_tables, "select-floor-tables": select_floor_tables,
        "select-clip-tables": select_clip_tables, "select-heldout-tables": select_heldout_tables,
        "select-norm-tables": select_norm_tables,
    }  # fmt: skip
    for cmd in study:
        sp = sub.add_parser(cmd)
        sp.add_argument("--name", required=True, choices=("default", "fsdd"))
        config = ("--config",) if cmd not in ("run", "positions") else ()
        for opt in ("--data", "--model", "--basis", *config):
            sp.add_argument(opt, required=True)
        sp.add_argument("--out", default="out/study")
        if cmd in rounds:
            sp.add_argument("--selection-only", action="store_true", help="stop before the test")
    for cmd in tables_of:
        sub.add_parser(cmd).add_argument("--out", default="out/study")
    args = ap.parse_args()
    return {**study, **tables_of}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
