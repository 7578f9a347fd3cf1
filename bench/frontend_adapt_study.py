"""Front-end adaptation at low SNR (docs/adaptation.md, "Front-end adaptation at low SNR").

    PYTHONPATH=. python bench/frontend_adapt_study.py select --name fsdd --data out/data/fsdd \
        --model models/fsdd/model.pt --basis models/fsdd/basis.npz --out out/fes
    PYTHONPATH=. python bench/frontend_adapt_study.py test --name fsdd ...   # after `select`
    PYTHONPATH=. python bench/frontend_adapt_study.py tables --out out/fes

Both `select` and `test` take ``--only m1,m2`` to split the methods over processes (each with
its own ``--out``); `merge --out out/fes DIR...` joins their files.

Per-channel noise-floor tracking and gain normalisation applied to the 40 mel energies of the
MFCC front end (`codegen.base.features.mel_energies`), before the log and the DCT, then the
model unchanged (no retraining). The noise/gain state is a first-order IIR smoother per channel,
causal over frames; ``carry``: one state over the whole stream (the device hears one stream),
``reset``: restarted at every clip from the clip's first frame. Every front end is followed by
the training statistics of its own MFCCs (the training split through the same front end; for
``carry`` as one stream in file order), alone or with the causal cmvn
(`codegen.elatta.methods.cmvn_causal_stream`). `select` scores each grid on S by the rule of
`adaptation_study.causal_score` (segments of 50 and 10); `test` runs the chosen ones once.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import signal

# bench/ is sys.path[0] when run as a script; its profile.py would shadow the standard library's
# (torch imports cProfile), so load the study module from bench/ and drop bench/ from the path
_BENCH = str(Path(__file__).resolve().parent)
sys.path.insert(0, _BENCH)
import adaptation_study as A  # noqa: E402

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(_BENCH)]

EPS = 1e-9
# TFLM noise_reduction defaults (even / odd channels) are per 10 ms hop; our hop is 20 ms:
# one 20 ms step of the smoother = two 10 ms steps, s20 = 1 − (1 − s10)².
NR_EVEN = 1 - (1 - 0.025) ** 2
NR_ODD = 1 - (1 - 0.06) ** 2
PCEN_ALPHA, PCEN_DELTA, PCEN_R, PCEN_EPS = 0.98, 2.0, 0.5, 1e-6
SELECT_SUBSET = A.SEARCH_SUBSET  # validation clips per S condition (seeded subset, as the searches)
AUG_COPIES = 3  # noisy training copies in the sample of the front end's MFCC statistics
CMVN_CAUSAL = {"fsdd": (1 / 4, 0.25), "default": (1 / 16, 0.25)}  # (alpha, w), mean+var, no gate


# --------------------------------------------------------------------- float front-end helpers


def smooth(x: np.ndarray, s: np.ndarray, init: np.ndarray | None, carry: bool) -> np.ndarray:
    """Per channel c: M_t = (1 − s_c) M_{t−1} + s_c x_t over frames, x [N, T, C] in play order.

    ``carry``: one recursion over all N·T frames, M_{−1} = ``init`` [C]. Otherwise every clip
    restarts from its first frame (M_0 = x_0). Computed as the zero-state response within each
    clip (a loop over the T frames, vectorised over clips) plus the decayed state at the clip's
    start, (1 − s)^(t+1)·P_i; for ``carry`` P_{i+1} = z_{T−1}(i) + (1 − s)^T·P_i."""
    n, t, c = x.shape
    keep = 1.0 - np.asarray(s, np.float64)
    z = np.empty_like(x, dtype=np.float64)
    acc = np.zeros((n, c))
    for k in range(t):
        acc = keep * acc + (1.0 - keep) * x[:, k]
        z[:, k] = acc
    decay = keep[None, :] ** np.arange(1, t + 1)[:, None]  # [T, C]
    if not carry:
        start = np.asarray(x[:, 0], np.float64)
    else:
        assert init is not None
        start = np.empty((n, c))
        p = np.asarray(init, np.float64).copy()
        kt = keep**t
        for kv in np.unique(kt):  # P_i by a first-order filter over clips, per decay value
            cols = np.flatnonzero(kt == kv)
            zi = (kv * p[cols])[None, :]
            y, _ = signal.lfilter([1.0], [1.0, -kv], z[:-1, t - 1][:, cols], axis=0, zi=zi)
            start[0, cols] = p[cols]
            start[1:, cols] = y
    out: np.ndarray = z + decay[None, :, :] * start[:, None, :]
    return out


@dataclass(frozen=True)
class FrontEnd:
    """One front-end configuration. kinds:

    ``nr``  TFLM noise_reduction on the filterbank amplitudes a = √E: estimate N (even/odd
            smoothing), a′ = max(a − N, m·a), E′ = a′²;
    ``nrr`` noise-floor replacement: only the estimate's excess over the clean training floor
            N_ref is subtracted, a′ = max(a − max(N − N_ref, 0), m·a);
    ``pgr`` relative per-channel gain (PCAN's E/N^α, referenced to the training floor):
            a′ = a·((ε + N_ref)/(ε + N))^α;
    ``pcen`` PCEN (Wang et al. 2017) on E: E′ = (E/(ε + M)^α + δ)^r − δ^r, M smoothed with s.
    """

    kind: str
    param: float
    carry: bool
    speed: float = 1.0  # the TFLM smoothing rates × speed (nr, nrr, pgr)

    @property
    def label(self) -> str:
        name = {"nr": "m", "nrr": "m", "pgr": "alpha", "pcen": "s"}[self.kind]
        sp = "" if self.kind == "pcen" else f"speed={self.speed:g},"
        return f"{self.kind}/{'carry' if self.carry else 'reset'}/{sp}{name}={self.param:g}"


@dataclass
class Stats:
    """Source (training-split) quantities of the front end."""

    init_a: np.ndarray  # mean filterbank amplitude per channel (carry state at power-up)
    init_e: np.ndarray  # mean filterbank energy per channel
    n_ref: np.ndarray  # mean noise estimate per channel over the training stream


def nr_rates(c: int) -> np.ndarray:
    return np.where(np.arange(c) % 2 == 0, NR_EVEN, NR_ODD)


def apply_front(fe: FrontEnd, e: np.ndarray, st: Stats) -> np.ndarray:
    """Modified mel energies [N, T, C] (float64) of energies ``e`` in play order."""
    e = np.asarray(e, np.float64)
    c = e.shape[-1]
    if fe.kind == "pcen":
        m = smooth(e, np.full(c, fe.param), st.init_e, fe.carry)
        out: np.ndarray = (e / (PCEN_EPS + m) ** PCEN_ALPHA + PCEN_DELTA) ** PCEN_R
        return out - PCEN_DELTA**PCEN_R
    a = np.sqrt(e)
    n = smooth(a, fe.speed * nr_rates(c), st.init_a, fe.carry)
    if fe.kind == "nr":
        a2 = np.maximum(a - n, fe.param * a)
    elif fe.kind == "nrr":
        a2 = np.maximum(a - np.maximum(n - st.n_ref, 0.0), fe.param * a)
    elif fe.kind == "pgr":
        a2 = a * ((EPS + st.n_ref) / (EPS + n)) ** fe.param
    else:
        raise ValueError(fe.kind)
    out2: np.ndarray = a2 * a2
    return out2


def flops_per_frame(kind: str, c: int = 40) -> int:
    """Extra float operations per frame (multiply-add = 2, sqrt/pow/div = 1 each)."""
    return c * {"nr": 8, "nrr": 10, "pgr": 9, "pcen": 9}[kind]


# --------------------------------------------------------------------------------- methods


@dataclass
class FeCtx:
    ctx: A.Ctx
    name: str
    stats: Stats
    train_e: np.ndarray  # training-split mel energies (for the front end's MFCC statistics)
    norm: dict[str, tuple[np.ndarray, np.ndarray]]


def mfcc_of(e: np.ndarray) -> np.ndarray:
    from codegen.base.features import mfcc_from_mel

    out: np.ndarray = mfcc_from_mel(e.astype(np.float32)).astype(np.float64)
    return out


def fe_norm(fc: FeCtx, fe: FrontEnd | None) -> tuple[np.ndarray, np.ndarray]:
    """The stored training statistics moved by the front end: μ_tr + (m_fe − m_id),
    σ_tr·s_fe/s_id, with m, s the MFCC mean/std of the training sample through the front end
    (fe) and without it (id). No front end: the stored statistics exactly."""
    if fe is None:
        return fc.ctx.mu_tr, fc.ctx.sd_tr
    if fe.label not in fc.norm:
        x = mfcc_of(apply_front(fe, fc.train_e, fc.stats))
        x = x.reshape(-1, x.shape[-1])
        m_id, s_id = fc.norm["id"]
        mu = fc.ctx.mu_tr + (x.mean(axis=0) - m_id)
        fc.norm[fe.label] = (mu, fc.ctx.sd_tr * (x.std(axis=0) + 1e-6) / (s_id + 1e-6))
    return fc.norm[fe.label]


def m_front(
    fc: FeCtx, fe: FrontEnd | None, cmvn: bool, shared: dict[bytes, np.ndarray] | None = None
) -> A.Method:
    """Front end (or none), its MFCCs, then the training normalisation or the causal cmvn.
    ``shared``: the front end's MFCCs per stream (keyed by its id sequence), shared by the
    methods that use the same front end on the same streams."""
    from codegen.elatta.methods import CmvnConfig, cmvn_causal_stream

    alpha, w = CMVN_CAUSAL[fc.name]
    cache: dict[int, int] = {}
    per_clip = not cmvn and (fe is None or not fe.carry)  # order-independent: cache by id

    def feats(e: np.ndarray, ids: np.ndarray | None = None) -> np.ndarray:
        key = ids.tobytes() if ids is not None and shared is not None else None
        if key is not None and shared is not None and key in shared:
            return shared[key]
        out = mfcc_of(e if fe is None else apply_front(fe, e, fc.stats))
        if key is not None and shared is not None:
            shared[key] = out.astype(np.float32)
        return out

    def run(ctx: A.Ctx, e: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        mu, sd = fe_norm(fc, fe)
        if per_clip:
            todo = np.array([i for i, k in enumerate(ids) if int(k) not in cache], np.int64)
            if todo.size:
                x = ((feats(e[todo]) - mu) / sd).astype(np.float32)
                for k, p in zip(ids[todo], A.predict(ctx, A.encode(ctx, x)), strict=True):
                    cache[int(k)] = int(p)
            return np.array([cache[int(k)] for k in ids])
        f = feats(e, ids)
        if cmvn:
            x = cmvn_causal_stream(f, mu, sd, CmvnConfig(w, alpha, True), None)
        else:
            x = ((f - mu) / sd).astype(np.float32)
        return A.predict(ctx, A.encode(ctx, x))

    return run


def grids() -> dict[str, list[FrontEnd]]:
    """Method -> grid, least → most aggressive (docs/adaptation.md). ``speed`` 1/4 is a noise
    tracker four times slower than TFLM's (time constants ≈ 0.8 / 1.6 s instead of 0.2 / 0.4 s);
    the front ends with state carried over the stream are also combined with the causal cmvn."""
    g: dict[str, list[FrontEnd]] = {}
    for carry in (True, False):
        tag = "carry" if carry else "reset"
        q = 0.25
        g[f"nr/{tag}"] = [FrontEnd("nr", m, carry, sp) for sp, m in ((q, 0.5), (1, 0.5), (1, 0.05))]
        g[f"nrr/{tag}"] = [
            FrontEnd("nrr", m, carry, sp) for sp, m in ((q, 0.5), (q, 0.25), (1, 0.5))
        ]
        g[f"pgr/{tag}"] = [FrontEnd("pgr", a, carry, q) for a in (0.25, 0.5, 0.95)]
        g[f"pcen/{tag}"] = [FrontEnd("pcen", s, carry) for s in (0.025, 0.1)]
    return g


# ------------------------------------------------------------------------------------ run


def make_fectx(args: argparse.Namespace) -> FeCtx:
    """Context, front-end source statistics and the training sample for the MFCC statistics:
    the clean training split plus `AUG_COPIES` copies mixed by the model's training recipe
    (the stored statistics are over the clean + noisy copies the model was trained on)."""
    from codegen.base.features import mel_energies
    from codegen.data import background_noises, load_split
    from codegen.frontend.model import load_checkpoint
    from codegen.train.fit import SILENCE, TrainConfig, augment

    ctx = A.make_ctx(args.model, args.basis, args.data)
    train = load_split(args.data, "train")
    clean_e = mel_energies(train.pcm).astype(np.float64)
    _, meta = load_checkpoint(args.model)
    known = TrainConfig.__dataclass_fields__
    recipe = TrainConfig(**{k: x for k, x in meta.train.get("config", {}).items() if k in known})
    silence = train.labels == (train.classes.index(SILENCE) if SILENCE in train.classes else -1)
    rng = np.random.default_rng([0, 0xFE5])
    noises = background_noises(args.data)
    copies = [clean_e]
    for _ in range(AUG_COPIES):
        copies.append(mel_energies(augment(train.pcm, silence, noises, recipe, rng)))
    train_e = np.concatenate(copies).astype(np.float64)
    c = clean_e.shape[-1]
    a = np.sqrt(clean_e)
    init_a = a.reshape(-1, c).mean(axis=0)
    n = smooth(a, nr_rates(c), init_a, True)
    stats = Stats(init_a, clean_e.reshape(-1, c).mean(axis=0), n.reshape(-1, c).mean(axis=0))
    x = mfcc_of(train_e).reshape(-1, ctx.mu_tr.size)
    return FeCtx(ctx, args.name, stats, train_e, {"id": (x.mean(axis=0), x.std(axis=0))})


def methods_of(fc: FeCtx) -> dict[str, list[tuple[str, A.Method, dict[bytes, np.ndarray]]]]:
    """Method -> [(config, method, shared front-end cache)]; a carry front end and its
    +cmvn_causal combination share one cache (the same streams through the same front end)."""
    out: dict[str, list[tuple[str, A.Method, dict[bytes, np.ndarray]]]] = {}
    for name, grid in grids().items():
        caches = [dict[bytes, np.ndarray]() for _ in grid]
        out[name] = [
            (fe.label, m_front(fc, fe, False, c), c) for fe, c in zip(grid, caches, strict=True)
        ]
        if name.endswith("/carry"):
            out[f"{name}+cmvn_causal"] = [
                (fe.label, m_front(fc, fe, True, c), c) for fe, c in zip(grid, caches, strict=True)
            ]
    return out


def select(args: argparse.Namespace) -> int:
    import torch

    from codegen.base.features import mel_energies

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    fc = make_fectx(args)
    src = A.subset(A.load_source(args.data, mel_energies), SELECT_SUBSET)
    A.log(f"{args.name}: {len(src)} source conditions ({time.perf_counter() - t0:.0f} s)")
    base = A.run_protocol(fc.ctx, src, m_front(fc, None, False), 0, False)
    result: dict[str, Any] = {"name": args.name, "methods": {}}
    ref = A.causal_eval(fc.ctx, src, m_front(fc, None, True), base)
    result["cmvn_causal"] = {"score": A.causal_score(ref), "eval": ref}
    A.log(f"  cmvn_causal alone: {A.causal_score(ref)}")
    only = set(args.only.split(",")) if args.only else None
    meths = methods_of(fc)
    order = [(m, i) for m in meths for i in range(len(meths[m]))]
    # a carry front end's two methods run back to back, then its cache is dropped
    order.sort(key=lambda mi: (mi[0].split("+")[0], mi[1], mi[0]))
    rows: dict[str, list[dict[str, Any]]] = {m: [] for m in meths}
    for meth, i in order:
        if only is not None and meth not in only:
            continue
        label, method, cache = meths[meth][i]
        t1 = time.perf_counter()
        ev = A.causal_eval(fc.ctx, src, method, base)
        sc, ok = A.causal_score(ev)
        rows[meth].append({"config": label, "score": sc, "admissible": ok, "eval": ev})
        A.log(f"  {meth} {label}: {sc:+.2f} {ok} ({time.perf_counter() - t1:.0f} s)")
        if meth.endswith("+cmvn_causal") or not meth.endswith("/carry"):
            cache.clear()
        if len(rows[meth]) == len(meths[meth]):
            chosen = A.choose_by_rule(rows[meth])
            result["methods"][meth] = {"chosen": rows[meth][chosen]["config"], "rows": rows[meth]}
            Path(args.out).mkdir(parents=True, exist_ok=True)
            out = Path(args.out) / f"{args.name}.selection.json"
            out.write_text(json.dumps(result, indent=1))
    result["seconds"] = round(time.perf_counter() - t0, 1)
    (Path(args.out) / f"{args.name}.selection.json").write_text(json.dumps(result, indent=1))
    A.log(f"done in {result['seconds']} s")
    return 0


def from_label(label: str) -> FrontEnd:
    kind, state, kvs = label.split("/")
    kv = {k: float(v) for k, v in (p.split("=") for p in kvs.split(","))}
    name = {"nr": "m", "nrr": "m", "pgr": "alpha", "pcen": "s"}[kind]
    return FrontEnd(kind, kv[name], state == "carry", kv.get("speed", 1.0))


def test(args: argparse.Namespace) -> int:
    """The test split, once, for the configuration each method chose on S."""
    import torch

    from codegen.base.features import mel_energies

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    sel = json.loads((Path(args.out) / f"{args.name}.selection.json").read_text())
    fc = make_fectx(args)
    test_c = A.load_test(args.data, mel_energies)
    base = A.run_protocol(fc.ctx, test_c, m_front(fc, None, False), 0, False)
    res: dict[str, Any] = {"name": args.name, "noadapt": A.gains(base, [base], test_c)}
    only = set(args.only.split(",")) if args.only else None
    runs: dict[str, Any] = {}
    if only is None or "cmvn_causal" in only:
        runs["cmvn_causal"] = ("—", m_front(fc, None, True))
    caches: dict[str, dict[bytes, np.ndarray]] = {}
    for meth, ch in sorted(sel["methods"].items(), key=lambda kv: kv[1]["chosen"]):
        if only is not None and meth not in only:
            continue
        fe = from_label(ch["chosen"])
        cache = caches.setdefault(ch["chosen"], {})
        runs[meth] = (ch["chosen"], m_front(fc, fe, meth.endswith("+cmvn_causal"), cache))
    res["test"] = {}
    for meth, (label, method) in runs.items():
        res["test"][meth] = {"config": label, "eval": A.causal_eval(fc.ctx, test_c, method, base)}
        A.log(f"  test {meth}: {time.perf_counter() - t0:.0f} s")
        (Path(args.out) / f"{args.name}.test.json").write_text(json.dumps(res, indent=1))
        if sum(1 for lb, _ in runs.values() if lb == label) == sum(
            1 for m in res["test"] if res["test"][m]["config"] == label
        ):
            caches.get(label, {}).clear()
    res["seconds"] = round(time.perf_counter() - t0, 1)
    (Path(args.out) / f"{args.name}.test.json").write_text(json.dumps(res, indent=1))
    return 0


# --------------------------------------------------------------------------------- tables


def tables(args: argparse.Namespace) -> int:
    out: list[str] = []
    cols = (*A.COLUMNS, "clean_only")
    for name in ("default", "fsdd"):
        p = Path(args.out) / f"{name}.test.json"
        if not p.exists():
            continue
        r = json.loads(p.read_text())
        sel = json.loads((Path(args.out) / f"{name}.selection.json").read_text())
        title = {"default": "Built-in set (models/default)", "fsdd": "FSDD (models/fsdd)"}[name]
        for seg in A.CAUSAL_SEGMENTS:
            out += [f"#### {title}, continual, segments of {seg}: test, gain over no-adapt", ""]
            out.append("| method | config (chosen on S) | " + " | ".join(cols) + " | flops/frame |")
            out.append("|---" * (len(cols) + 3) + "|")
            na = r["noadapt"]
            out.append("| no-adapt (accuracy %) | — | "
                       + " | ".join(f"{na[c]['acc']:.2f}" for c in A.COLUMNS)
                       + f" | {na['clean']['acc']:.2f} | 0 |")  # fmt: skip
            for meth, t in r["test"].items():
                g = t["eval"][str(seg)]
                cells = " | ".join(A.fmt_cell(g[c], 3) for c in cols)
                kind = meth.split("/")[0]
                fl = 0 if kind == "cmvn_causal" else flops_per_frame(kind)
                fl_s = f"{fl}" + (" + cmvn" if "cmvn" in meth else "") if fl else "cmvn only"
                out.append(f"| {meth} | {t['config']} | {cells} | {fl_s} |")
            out.append("")
        out += [f"Selection on S ({name}): per method, every configuration: score (mean SNR "
                "gain, segments 50 and 10), admissible, worst clean seed, worst clean-only "
                "seed, S −10 and S −20 (segments 50)", "",
                "| method | config | score | admissible | worst clean | worst clean-only "
                "| S −10 | S −20 |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        sc, ok = sel["cmvn_causal"]["score"]
        ev = sel["cmvn_causal"]["eval"]
        rows = [("cmvn_causal", "—", sc, ok, ev, False)]
        for meth, m in sel["methods"].items():
            for row in m["rows"]:
                chosen = row["config"] == m["chosen"]
                rows.append((meth, row["config"], row["score"], row["admissible"], row["eval"],
                             chosen))  # fmt: skip
        for meth, cfg, s, a, ev, chosen in rows:
            wc = min(min(g["clean"]["per_seed"]) for g in ev.values())
            wo = min(min(g["clean_only"]["per_seed"]) for g in ev.values())
            g50 = ev["50"]
            mark = " **chosen**" if chosen else ""
            out.append(f"| {meth} | {cfg}{mark} | {s:+.2f} | {a} | {wc:+.2f} | {wo:+.2f} | "
                       f"{g50['-10']['gain']:+.2f} | {g50['-20']['gain']:+.2f} |")  # fmt: skip
        out.append("")
    print("\n".join(out))
    return 0


def plain_ctx(model_path: str) -> A.Ctx:
    """A `Ctx` with the model, head and normalisation only (no basis: front-end methods only)."""
    from codegen.frontend.model import head_numpy, load_checkpoint

    model, meta = load_checkpoint(model_path)
    w, b = head_numpy(model)
    z = np.zeros((1, 1))
    return A.Ctx(
        model, w, b, np.asarray(meta.norm_mean, np.float64), np.asarray(meta.norm_std, np.float64),
        z, z, 0.0, z[0], z[0],
    )  # fmt: skip


def retrain(args: argparse.Namespace) -> int:
    """Exploratory: retrain the model with a per-clip (reset) front end (`codegen train`
    defaults; models/<name>/README.md used 300 epochs, 32 copies, seed 0), then measure it, once,
    on S (segments irrelevant: no state crosses a clip) and on the test split, as the gain over
    the original model without adaptation."""
    import torch

    import codegen.base.features as feat
    from codegen.frontend.model import save_checkpoint
    from codegen.train.fit import TrainConfig, train_model

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    fe = from_label(args.front)
    assert not fe.carry, "retraining needs a per-clip (reset) front end"
    mel_energies, stats = feat.mel_energies, Stats(np.ones(40), np.ones(40), np.ones(40))
    if fe.kind in ("nrr", "pgr"):
        raise SystemExit("nrr/pgr need the training floor N_ref; retrain nr or pcen")

    def front_mfcc(pcm: np.ndarray, params: Any = None) -> np.ndarray:
        return mfcc_of(apply_front(fe, mel_energies(pcm), stats)).astype(np.float32)

    out_model = Path(args.out) / f"{args.name}.{fe.label.replace('/', '_')}.pt"
    if not out_model.exists():
        orig = feat.mfcc
        feat.mfcc = front_mfcc  # train_model imports mfcc from codegen.base.features
        try:
            cfg = TrainConfig(epochs=args.epochs, copies=args.copies, threads=1, seed=0)
            model, meta = train_model(args.data, cfg, progress=False)
        finally:
            feat.mfcc = orig
        save_checkpoint(str(out_model), model, meta)
        A.log(f"trained {out_model}: {meta.train['best']} ({time.perf_counter() - t0:.0f} s)")
    new = plain_ctx(str(out_model))
    old = plain_ctx(args.model)

    def m_new(ctx: A.Ctx, e: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        x = ((mfcc_of(apply_front(fe, e, stats)) - new.mu_tr) / new.sd_tr).astype(np.float32)
        return A.predict(new, A.encode(new, x))

    def m_old(ctx: A.Ctx, e: np.ndarray, ids: np.ndarray, seed: int, cont: bool) -> np.ndarray:
        x = ((mfcc_of(e) - old.mu_tr) / old.sd_tr).astype(np.float32)
        return A.predict(old, A.encode(old, x))

    res: dict[str, Any] = {"name": args.name, "front": fe.label, "model": str(out_model)}
    for split, conds in (
        ("S", A.subset(A.load_source(args.data, mel_energies), SELECT_SUBSET)),
        ("test", A.load_test(args.data, mel_energies)),
    ):
        base = A.run_protocol(old, conds, m_old, 0, False)
        run = A.run_protocol(new, conds, m_new, 0, False)
        res[split] = {"gains": A.gains(base, [run], conds), "noadapt": A.gains(base, [base], conds)}
        A.log(f"  {split}: {time.perf_counter() - t0:.0f} s")
    (Path(args.out) / f"{args.name}.retrain.json").write_text(json.dumps(res, indent=1))
    return 0


def merge(args: argparse.Namespace) -> int:
    """Merge the selection (or test) files of runs split with --only into ``--out``."""
    for name in ("default", "fsdd"):
        for kind, key in (("selection", "methods"), ("test", "test")):
            parts = [Path(d) / f"{name}.{kind}.json" for d in args.parts]
            parts = [p for p in parts if p.exists()]
            if not parts:
                continue
            merged = json.loads(parts[0].read_text())
            for p in parts[1:]:
                merged[key].update(json.loads(p.read_text())[key])
            merged["parts"] = [str(p) for p in parts]
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / f"{name}.{kind}.json").write_text(json.dumps(merged, indent=1))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for cmd in ("select", "test"):
        r = sub.add_parser(cmd)
        r.add_argument("--name", required=True, choices=("default", "fsdd"))
        for opt in ("--data", "--model", "--basis"):
            r.add_argument(opt, required=True)
        r.add_argument("--out", default="out/fes")
        r.add_argument("--only", default="", help="comma-separated method names (a subset)")
    t = sub.add_parser("tables")
    t.add_argument("--out", default="out/fes")
    rt = sub.add_parser("retrain")
    rt.add_argument("--name", required=True, choices=("default", "fsdd"))
    for opt in ("--data", "--model", "--front"):
        rt.add_argument(opt, required=True)
    rt.add_argument("--out", default="out/fes/retrain")
    rt.add_argument("--epochs", type=int, default=300)
    rt.add_argument("--copies", type=int, default=32)
    mg = sub.add_parser("merge")
    mg.add_argument("--out", default="out/fes")
    mg.add_argument("parts", nargs="+", help="--out directories of runs split with --only")
    args = ap.parse_args()
    cmds: dict[str, Callable[[argparse.Namespace], int]] = {
        "select": select,
        "test": test,
        "tables": tables,
        "merge": merge,
        "retrain": retrain,
    }
    return cmds[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
