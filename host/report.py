"""Reports of `codegen run` : ``report.json``, ``report.md`` (the paper's tables:
float, fixed, device; no-adapt vs ELaTTA, like its "edge device" table) and ``report.png``
(accuracy vs SNR per method and target).

``report.json`` keys: ``complete`` (every selected sample answered, no device error),
``data``, ``target``, ``samples``, ``bit_exact: {compared, mismatches, fields}``,
``accuracy: {float, fixed, device}: {mode: {snr: {noise: acc, "average": acc}}}`` (fractions,
all three over the same answered samples; ``no_adapt`` comes from every mode's no-adapt
outputs), ``ticks: {encoder, adapt, total}: {median, max}`` (and per mode), ``memory`` (build
manifest + the largest stack high-water any device session reported), and ``run`` (wall-clock
and link facts of this session that differ between runs: jobs, seconds, samples/s, re-sends per
worker, this session's replays). Everything but ``run`` and ``ticks`` is the same for any
--jobs, any link faults and any resume; with -icount the ticks are too.
"""

from __future__ import annotations

import io
import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from elatta_host.reportdir import write_file

from codegen.ir.modes import LABELS
from codegen.ir.modes import mode as device_mode

if TYPE_CHECKING:
    from elatta_host.plan import Plan

TARGETS = ("float", "fixed", "device")
HEAD_CLIPS = (
    10  # accuracy of the first clips after a switch is reported apart (codegen.data.streams)
)
METHOD_NAMES = LABELS  # a view of the mode table: a registered mode has its label


# Timed stages of a RESULT; "frontend" (the integer MFCC) only in the audio mode.
STAGES: tuple[str, ...] = ("encoder", "adapt", "total", "frontend")


@dataclass(frozen=True, eq=False)
class Answered:
    """What the report needs of the answered samples, per stream key (not the records)."""

    mask: dict[str, np.ndarray]  # bool [n]: answered
    pred: dict[str, np.ndarray]  # int64 [n]: the device's class
    pred_noadapt: dict[str, np.ndarray]  # int64 [n]
    ticks: dict[str, np.ndarray]  # int64 [n, 4]: encoder, adapt, total, frontend (audio mode)
    mismatches: int
    fields: dict[str, int]  # field -> samples where it differs
    first_mismatch: str | None

    @property
    def count(self) -> int:
        return sum(int(m.sum()) for m in self.mask.values())


def _table(hits: dict[tuple[str, float, str], list[bool]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for (mode, snr, noise), v in sorted(
        hits.items(), key=lambda kv: (kv[0][0], -kv[0][1], kv[0][2])
    ):
        out.setdefault(mode, {}).setdefault(f"{snr:g}", {})[noise] = round(float(np.mean(v)), 6)
    for per_snr in out.values():
        for cells in per_snr.values():
            cells["average"] = round(float(np.mean(list(cells.values()))), 6)
    return out


def _stats(parts: list[np.ndarray]) -> dict[str, int | float | None]:
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if not values.size:
        return {"median": None, "max": None}
    return {"median": float(np.median(values)), "max": int(values.max())}


def build_report(
    plan: Plan,
    answered: Answered,
    target: dict[str, Any],
    run_facts: dict[str, Any],
    sessions: list[dict[str, Any]],
) -> dict[str, Any]:
    """``sessions``: every device session of the run so far (`elatta_host.run.SESSIONS`)."""
    # no-adapt rows: from the first mode whose RESULT carries the no-adapt class (in cmvn,
    # pred_noadapt is cmvn's own class; float and fixed take no-adapt from the references)
    first_mode = plan.selection.modes[0]
    device_noadapt = next(
        (m for m in plan.selection.modes if device_mode(m).before_encoder is None), None
    )
    acc: dict[str, dict[tuple[str, float, str], list[bool]]] = {
        t: defaultdict(list) for t in TARGETS
    }
    pos: dict[str, dict[tuple[str, bool], list[bool]]] = {t: defaultdict(list) for t in TARGETS}
    ticks: dict[str, list[np.ndarray]] = defaultdict(list)
    for s in plan.streams:
        # every target over the same samples: the answered ones (all of them when complete)
        rows = np.flatnonzero(answered.mask[s.key])
        y = s.labels
        for tgt, pred, pred0, pred0_mode in (
            ("float", s.float_pred, s.float_pred0, first_mode),
            ("fixed", s.ref["pred"], s.fixed_pred0, first_mode),
            ("device", answered.pred[s.key], answered.pred_noadapt[s.key], device_noadapt),
        ):
            hit, hit0 = np.asarray(pred) == y, np.asarray(pred0) == y
            for i in rows:
                cond = (float(s.snrs[i]), str(s.noises[i]))
                head = bool(s.positions[i] < HEAD_CLIPS)
                acc[tgt][(s.mode, *cond)].append(bool(hit[i]))
                pos[tgt][(s.mode, head)].append(bool(hit[i]))
                if s.mode == pred0_mode:
                    acc[tgt][("no_adapt", *cond)].append(bool(hit0[i]))
                    pos[tgt][("no_adapt", head)].append(bool(hit0[i]))
        t = answered.ticks[s.key][rows]
        for j, what in enumerate(STAGES):
            if what == "frontend" and s.pcm is None:
                continue  # feature input: the host computed the features
            ticks[what].append(t[:, j])
            ticks[f"{s.mode}.{what}"].append(t[:, j])
    stages = [w for w in STAGES if ticks.get(w)]
    fw = plan.manifest.get("firmware", {})
    memory = {
        k: fw.get(k)
        for k in ("text", "rodata", "data", "bss", "stack", "static_ram_bytes", "ram_budget_bytes")
    }
    # the largest high-water mark any session saw: independent of the order of the sessions
    stacks = [x["stack_used"] for x in sessions if x.get("stack_used") is not None]
    memory["stack_high_water_bytes"] = max(stacks, default=None)
    order = list(dict.fromkeys(["no_adapt", *plan.selection.modes]))
    n_answered = answered.count
    complete = n_answered == plan.total and not run_facts.get("errors")
    return {
        "format": "elatta-run-report",
        "complete": complete,
        "data": plan.data_info,
        "target": target,
        "model": {k: v["sha256"] for k, v in plan.manifest["inputs"].items()},
        "samples": {
            "selected": plan.total,
            "answered": n_answered,
            "modes": list(plan.selection.modes),
            "conditions": len(plan.selection.per_condition),
            "per_condition": dict(plan.selection.per_condition),
            "distinct_utterances": plan.selection.distinct_utterances,
            "available_utterances": plan.selection.available_utterances,
            "streams": (
                "one per (mode, condition), RESET first; continual state within it"
                if plan.selection.stream is None
                else "one per mode over every condition in segments (codegen.data.streams), RESET "
                "first; continual state carried across switches"
            ),
            "stream_definition": plan.selection.stream,
            "segments_as_streamed": segment_lengths(plan.streams),
        },
        "bit_exact": {
            "compared": n_answered,
            "mismatches": answered.mismatches,
            "fields": dict(answered.fields),
            "first_mismatch": answered.first_mismatch,
        },
        "accuracy": {t: {m: _table(acc[t]).get(m, {}) for m in order} for t in TARGETS},
        # first HEAD_CLIPS clips of a segment (after a switch or RESET) vs the rest, all conditions
        "by_position": {
            t: {
                m: {
                    f"first_{HEAD_CLIPS}" if head else "rest": round(float(np.mean(v)), 6)
                    for head in (True, False)
                    if (v := pos[t].get((m, head)))
                }
                for m in order
            }
            for t in TARGETS
        },
        "ticks": {
            **{w: _stats(ticks[w]) for w in stages},
            "per_mode": {
                m: {w: _stats(ticks[f"{m}.{w}"]) for w in stages} for m in plan.selection.modes
            },
            "unit": target.get("ticks"),
        },
        "memory": memory,
        "run": run_facts,
    }


def verdict(rep: dict[str, Any]) -> str:
    """One line that leads every summary: INCOMPLETE before anything else when samples are
    missing, so a partial run never reads as a bit-exact one."""
    be, smp = rep["bit_exact"], rep["samples"]
    if not rep.get("complete", smp["answered"] == smp["selected"]):
        errs = len(rep.get("run", {}).get("errors") or ())
        return (
            f"INCOMPLETE: {smp['answered']} of {smp['selected']} selected samples answered"
            + (f", {errs} device error(s)" if errs else "")
            + f"; those {be['compared']} compared, {be['mismatches']} mismatches; accuracy "
            "rows cover the answered samples only"
        )
    # recorded lines a resume did not keep (checked against the reference) were redone: said
    redone = (rep.get("run", {}).get("resume") or {}).get("rejected") or 0
    note = f" ({redone} recorded lines did not hold on resume and were redone)" if redone else ""
    if be["mismatches"]:
        return f"MISMATCH: {be['compared']} results compared, {be['mismatches']} mismatches{note}"
    return f"BIT-EXACT: {be['compared']} results compared, 0 mismatches{note}"


def describe_target(target: dict[str, Any]) -> str:
    """What the run talked to, for the report's Target line: QEMU's machine, a board's serial
    port(s) and baud rate, or socket URLs (a TCP bridge, or QEMU started by hand)."""
    kind = target.get("kind")
    ports = target.get("port") or []
    ports = [ports] if isinstance(ports, str) else list(ports)
    where = ", ".join(f"`{p}`" for p in ports) or "no port recorded"
    if kind == "qemu":
        return (
            f"QEMU {target.get('machine', '')} (UART{target.get('uart', 0)}, "
            + ("-icount" if target.get("icount") else "no -icount")
            + ")"
        )
    if kind == "socket":
        return f"socket {where}"
    if kind == "serial":
        baud = target.get("baud")
        rate = (
            "opened at the build's baud rate, then switched to the fastest the device offers "
            "up to 921,600"
            if baud in (None, "auto")
            else f"opened at the build's baud rate, then switched to {baud}"
        )
        return f"serial port {where} ({rate})"
    return f"{kind or 'unknown target'}" + (f" at {where}" if ports else "")


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.2f}"


def format_markdown(rep: dict[str, Any]) -> str:
    acc = rep["accuracy"]
    modes = list(dict.fromkeys(["no_adapt", *rep["samples"]["modes"]]))
    snrs = sorted(
        {snr for t in acc.values() for m in t.values() for snr in m}, key=lambda s: -float(s)
    )
    data = rep["data"]
    be = rep["bit_exact"]
    lines = [
        "# On-device ELaTTA: accuracy and cost",
        "",
        f"**{verdict(rep)}**",
        "",
        f"Data: {data.get('data')}"
        + (f" ({kind})" if (kind := data.get("preset") or data.get("tier")) else "")
        + " at "
        f"`{data.get('path')}`; {rep['samples']['answered']} of {rep['samples']['selected']} "
        f"samples per run over {rep['samples']['conditions']} noise × SNR conditions, "
        f"{rep['samples']['distinct_utterances']} distinct test utterances of "
        f"{rep['samples']['available_utterances']}.",
        f"Target: {describe_target(rep['target'])}, firmware {rep['target'].get('build_id')}.",
        f"Bit-exact: **{be['compared'] - be['mismatches']} of {be['compared']}** results equal "
        f"the integer reference in every field ({be['mismatches']} mismatches).",
        f"Model: sha256 {rep['model'].get('model', '')[:16]} (config "
        f"{rep['model'].get('config', '')[:16]}); split: test; protocol: "
        f"{rep['samples']['streams']}"
        + (
            f" ({rep['samples']['stream_definition']})"
            if rep["samples"].get("stream_definition")
            else ""
        )
        + "; one ELaTTA seed (the build's).",
        "",
        "## Accuracy (%) by SNR, mean over noises",
        "",
        "| target | method | " + " | ".join(f"{s} dB" for s in snrs) + " |",
        "|---|---|" + "---:|" * len(snrs),
    ]
    for tgt in TARGETS:
        for m in modes:
            row = acc[tgt].get(m, {})
            if not row:  # a method this target did not answer (a cmvn-only device run)
                continue
            cells = [_pct(row.get(s, {}).get("average")) for s in snrs]
            lines.append(f"| {tgt} | {METHOD_NAMES.get(m, m)} | " + " | ".join(cells) + " |")
    bp = rep.get("by_position", {})
    seg = rep["samples"].get("segments_as_streamed") or {}
    has_rest = any(c.get("rest") is not None for row in bp.values() for c in row.values())
    lines += [
        "",
        f"## Accuracy (%) by position in a segment (first {HEAD_CLIPS} clips after a switch or "
        "RESET vs the rest), all conditions",
        "",
        f"As streamed: {seg.get('segments', 0)} segments of {seg.get('min', 0)} to "
        f"{seg.get('max', 0)} clips."
        + (
            ""
            if has_rest
            else f" No segment is longer than {HEAD_CLIPS} clips, so there is no 'rest' column."
        ),
        "",
        f"| target | method | first {HEAD_CLIPS} |" + (" rest |" if has_rest else ""),
        "|---|---|---:|" + ("---:|" if has_rest else ""),
    ]
    for tgt in TARGETS:
        for m in modes:
            cell = bp.get(tgt, {}).get(m, {})
            if not cell:  # nothing of this method on this target (a cmvn-only device run)
                continue
            lines.append(
                f"| {tgt} | {METHOD_NAMES.get(m, m)} | {_pct(cell.get(f'first_{HEAD_CLIPS}'))} |"
                + (f" {_pct(cell.get('rest'))} |" if has_rest else "")
            )
    lines += ["", "## Device accuracy (%) per noise", ""]
    noises = sorted(
        {n for m in acc["device"].values() for c in m.values() for n in c if n != "average"}
    )
    lines.append("| method | SNR | " + " | ".join(noises) + " |")
    lines.append("|---|---|" + "---:|" * len(noises))
    for m in modes:
        for s in snrs:
            cells = acc["device"].get(m, {}).get(s, {})
            if not cells:
                continue
            lines.append(
                f"| {METHOD_NAMES.get(m, m)} | {s} dB | "
                + " | ".join(_pct(cells.get(n)) for n in noises)
                + " |"
            )
    t = rep["ticks"]
    mem = rep["memory"]
    lines += [
        "",
        f"## Cost ({t.get('unit')})",
        "",
        "| stage | median | max |",
        "|---|---:|---:|",
        *(f"| {w} | {t[w]['median']} | {t[w]['max']} |" for w in STAGES if w in t),
        "",
        f"Memory: .text {mem.get('text')} B, .rodata {mem.get('rodata')} B, static RAM "
        f"{mem.get('static_ram_bytes')} of {mem.get('ram_budget_bytes')} B, stack high-water "
        f"{mem.get('stack_high_water_bytes')} B.",
        "",
        f"Run: {rep['run'].get('jobs')} device(s), {rep['run'].get('samples_per_s')} samples/s, "
        f"{rep['run'].get('retransmits')} re-sends, {rep['run'].get('replayed')} replays"
        + (
            f" (unknown for {', '.join(u)}: no final INFO)"
            if (u := rep["run"].get("replayed_unknown"))
            else ""
        )
        + ".",
        "",
    ]
    workers = rep["run"].get("workers") or []
    if workers:
        lines += [
            "| device | session | samples | re-sends (time-out / damage) | damaged requests | "
            "bad frames | replays | INFER time-out (s) | ended |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        for w in workers:
            lines.append(
                f"| {w['device']} | {w.get('session')} | {w['samples']} | {w['retransmits']} "
                f"({w['resent_on_timeout']} / {w['resent_on_damage']}) | {w['damaged']} | "
                f"{w['bad_frames']} | {'–' if w['replayed'] is None else w['replayed']} | "
                f"{w.get('rto_infer')} | {w.get('error') or w.get('note') or 'ok'} |"
            )
        lines.append("")
    return "\n".join(lines)


def segment_lengths(streams: Any) -> dict[str, int]:
    """The segments the streams really hold (a segment starts where a clip's position in its
    segment is 0: after a switch of condition or a RESET), however the request was spelt: a
    condition with fewer clips than the requested segment length gives a shorter segment."""
    lengths: list[int] = []
    for s in streams:
        starts = np.flatnonzero(np.asarray(s.positions) == 0)
        lengths += np.diff(np.append(starts, len(s.positions))).astype(int).tolist()
    if not lengths:
        return {"segments": 0, "min": 0, "max": 0}
    return {"segments": len(lengths), "min": int(min(lengths)), "max": int(max(lengths))}


# What each data set's info file calls itself (codegen/data/builder.py, codegen/data/fsdd.py)
DATASET_NAMES = {
    "builtin": "GSC-C (built-in)",
    "gsc": "GSC-C (GSC v2 + ESC-50)",
    "fsdd": "FSDD",
}


def dataset_name(info: dict[str, Any]) -> str:
    """The data set a report is about, for titles: never another data set's name."""
    kind = str(info.get("data", ""))
    return DATASET_NAMES.get(kind, kind or "data set")


# Markers per target: device and fixed coincide when bit-exact, so each keeps its own shape.
TARGET_MARKERS = {"float": ("o", 7), "fixed": ("s", 9), "device": ("x", 8)}
CLEAN = "clean"
TARGET_NAMES = {"float": "float model", "fixed": "integer reference", "device": "the device"}


def _wrap(text: str, width: int = 30) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def figure(
    acc: dict[str, dict[str, dict[str, Any]]],
    modes: list[str],
    title: str,
    *,
    clean: dict[str, dict[str, float]] | None = None,
    ticks: dict[str, Any] | None = None,
    by_position: dict[str, dict[str, dict[str, float]]] | None = None,
) -> Any:
    """The report's figure, in panels: accuracy against SNR per method (colour) and target
    (marker), x ticks only at the SNRs measured and a "clean" point where ``clean`` has one;
    QEMU icount ticks per stage and mode (median, whisker to the maximum) where ``ticks`` has
    them; accuracy by position in a segment where ``by_position`` has it; and the legend in a
    panel of its own, so it never covers data.

    ``acc``: {target: {mode: {snr: {"average": fraction, ...}}}}; ``clean``: {target: {mode:
    fraction}}; ``ticks``: report.json's ``ticks``; ``by_position``: {target: {mode:
    {"first_10": fraction, "rest": fraction}}}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.gridspec import GridSpec
    from matplotlib.lines import Line2D

    colour = {m: f"C{i}" for i, m in enumerate(modes)}
    targets = [t for t in TARGETS if any(acc.get(t, {}).get(m) for m in modes)]
    stages = [w for w in STAGES if ticks and isinstance(ticks.get(w), dict)]
    tick_modes = [m for m in modes if ticks and (ticks.get("per_mode") or {}).get(m)]
    # by position: the target holding the most methods (a cmvn_select-only device run has no
    # no-adapt class of its own; the references do), the device's where it holds as many
    held = {t: sum(1 for m in modes if (by_position or {}).get(t, {}).get(m)) for t in TARGETS}
    pos_target = (
        max(("device", "fixed", "float"), key=lambda t: held[t]) if any(held.values()) else None
    )
    lower = [name for name, on in (("ticks", stages), ("position", pos_target)) if on]
    fig = plt.figure(figsize=(12, 8.5 if lower else 4.8))
    grid = GridSpec(2 if lower else 1, 3, figure=fig, width_ratios=[3, 3, 2])
    ax = fig.add_subplot(grid[0, 0:2])
    legend_ax = fig.add_subplot(grid[0, 2])

    snrs = sorted({float(s) for t in targets for m in modes for s in acc[t].get(m, {})})
    xs = list(snrs)
    clean_x = None
    if clean and any(clean.get(t, {}).get(m) is not None for t in clean for m in modes):
        step = min((b - a for a, b in zip(snrs, snrs[1:], strict=False)), default=5.0)
        clean_x = (snrs[-1] if snrs else 0.0) + 1.5 * step
    for t in targets:
        marker, size = TARGET_MARKERS[t]
        for m in modes:
            row = acc[t].get(m, {})
            pts = sorted((float(s), 100 * c["average"]) for s, c in row.items())
            if not pts:
                continue
            # one line per method (the first target that has it); every target as markers
            line = "-" if t == targets[0] else "none"
            ax.plot(
                [x for x, _ in pts],
                [y for _, y in pts],
                linestyle=line,
                marker=marker,
                markersize=size,
                fillstyle="none",
                color=colour[m],
            )
            if clean_x is not None and (c := (clean or {}).get(t, {}).get(m)) is not None:
                # methods side by side at the clean point: equal accuracies stay visible
                spread = 0.15 * (clean_x - (snrs[-1] if snrs else clean_x - 1.0))
                ax.plot(
                    [clean_x + spread * (modes.index(m) - (len(modes) - 1) / 2)],
                    [100 * c],
                    marker=marker,
                    markersize=size,
                    fillstyle="none",
                    color=colour[m],
                    linestyle="none",
                )
    ticks_at = xs + ([clean_x] if clean_x is not None else [])
    ax.set_xticks(ticks_at, [f"{x:g}" for x in xs] + ([CLEAN] if clean_x is not None else []))
    ax.set_xlabel("SNR (dB)")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(f"{title} accuracy vs SNR (mean over noises)")
    ax.grid(alpha=0.3)

    handles = [Line2D([], [], color=colour[m], linestyle="-") for m in modes]
    labels = [_wrap(METHOD_NAMES.get(m, m)) for m in modes]
    handles += [
        Line2D(
            [],
            [],
            color="0.2",
            marker=TARGET_MARKERS[t][0],
            linestyle="none",
            fillstyle="none",
            markersize=TARGET_MARKERS[t][1],
        )
        for t in targets
    ]
    labels += [f"{t} ({TARGET_NAMES[t]})" for t in targets]
    legend_ax.axis("off")
    if targets:  # nothing answered yet: no lines, no legend
        legend_ax.legend(
            handles,
            labels,
            loc="center left",
            frameon=False,
            fontsize=8,
            title="method (colour), target (marker)",
            title_fontsize=8,
        )

    if stages and ticks is not None:
        tax = fig.add_subplot(grid[1, 0] if pos_target else grid[1, 0:2])
        width = 0.8 / max(len(tick_modes), 1)
        for j, m in enumerate(tick_modes):
            per = ticks["per_mode"][m]
            med = [per.get(w, {}).get("median") or 0 for w in stages]
            top = [per.get(w, {}).get("max") or 0 for w in stages]
            xpos = [i + (j - (len(tick_modes) - 1) / 2) * width for i in range(len(stages))]
            tax.bar(
                xpos,
                med,
                width=width,
                color=colour[m],
                yerr=[[0] * len(med), [max(b - a, 0) for a, b in zip(med, top, strict=True)]],
                capsize=2,
            )
        tax.set_xticks(range(len(stages)), stages)
        tax.set_ylabel(str(ticks.get("unit") or "ticks"))
        tax.set_title("cost per stage (median, whisker to the maximum)")
        tax.grid(alpha=0.3, axis="y")
    if pos_target and by_position is not None:
        pax = fig.add_subplot(grid[1, 1:3] if stages else grid[1, 0:3])
        rows = by_position[pos_target]
        pmodes = [m for m in modes if rows.get(m)]
        # a position with no clip (segments no longer than HEAD_CLIPS have no "rest")
        keys = [
            k
            for k in (f"first_{HEAD_CLIPS}", "rest")
            if any(math.isfinite(rows[m].get(k, math.nan)) for m in pmodes)
        ]
        width = 0.8 / max(len(pmodes), 1)
        for j, m in enumerate(pmodes):
            vals = [100 * rows[m].get(k, float("nan")) for k in keys]
            xpos = [i + (j - (len(pmodes) - 1) / 2) * width for i in range(len(keys))]
            bars = pax.bar(xpos, vals, width=width, color=colour[m])
            pax.bar_label(bars, fmt="%.1f", fontsize=7)
        pax.set_xticks(
            range(len(keys)),
            [k.replace("_", " ") + " clips" if k != "rest" else "the rest" for k in keys],
        )
        pax.set_ylabel("accuracy (%)")
        pax.set_title(
            f"accuracy by position in a segment, {TARGET_NAMES[pos_target]} (all conditions)"
        )
        pax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def plot(rep: dict[str, Any], path: Path) -> bool:
    """``report.png`` of a run report (`figure`); False where matplotlib is missing."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    modes = list(dict.fromkeys(["no_adapt", *rep["samples"]["modes"]]))
    fig = figure(
        rep["accuracy"],
        modes,
        dataset_name(rep.get("data", {})),
        ticks=rep.get("ticks"),
        by_position=rep.get("by_position"),
    )
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    plt.close(fig)
    write_file(path, png.getvalue())
    return True


def write_report(rep: dict[str, Any], out: Path) -> None:
    write_file(out / "report.json", json.dumps(rep, indent=2) + "\n")
    write_file(out / "report.md", format_markdown(rep))
    plot(rep, out / "report.png")


def format_summary(rep: dict[str, Any]) -> str:
    """The report for the terminal; its verdict first and last (after the long tables)."""
    line = verdict(rep)
    return f"{line}\n\n{format_markdown(rep)}\n{line}\n"
