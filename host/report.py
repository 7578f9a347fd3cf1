"""Reports of `codegen run` : ``report.json``, ``report.md`` (the paper's tables:
float, fixed, device; no-adapt vs ELaTTA, like its "edge device" table) and ``report.png``
(accuracy vs SNR per method and target).

``report.json`` keys: ``data``, ``target``, ``samples``, ``bit_exact: {compared, mismatches,
fields}``, ``accuracy: {float, fixed, device}: {mode: {snr: {noise: acc, "average": acc}}}``
(fractions; ``no_adapt`` comes from every mode's no-adapt outputs), ``ticks: {encoder, adapt,
total}: {median, max}`` (and per mode), ``memory`` (build manifest + INFO's stack high-water),
and ``run`` (wall-clock and link facts that differ between runs: jobs, seconds, samples/s,
re-sends). Everything but ``run`` and ``ticks`` is the same for any --jobs, any link faults and
any resume; with -icount the ticks are too.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from elatta_host.plan import Plan, Record

TARGETS = ("float", "fixed", "device")
HEAD_CLIPS = 10  # accuracy of the first clips after a switch is reported apart (codegen.streams)
METHOD_NAMES = {
    "no_adapt": "no-adapt",
    "strict": "ELaTTA (strict)",
    "continual": "ELaTTA (continual, paper)",
    "continual_bounded": "ELaTTA (continual, bounded)",
    "cmvn": "cmvn (continual input normalisation)",
}


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


def _stats(values: list[int]) -> dict[str, int | float | None]:
    if not values:
        return {"median": None, "max": None}
    return {"median": float(np.median(values)), "max": int(max(values))}


def build_report(
    plan: Plan,
    records: list[Record],
    target: dict[str, Any],
    run_facts: dict[str, Any],
    stack_used: int | None,
    first_mismatch: str | None,
) -> dict[str, Any]:
    by_key = {s.key: s for s in plan.streams}
    # no-adapt rows: from the first mode whose RESULT carries the no-adapt class (in cmvn,
    # pred_noadapt is cmvn's own class; float and fixed take no-adapt from the references)
    first_mode = plan.selection.modes[0]
    device_noadapt = next((m for m in plan.selection.modes if m != "cmvn"), None)
    acc: dict[str, dict[tuple[str, float, str], list[bool]]] = {
        t: defaultdict(list) for t in TARGETS
    }
    pos: dict[str, dict[tuple[str, bool], list[bool]]] = {t: defaultdict(list) for t in TARGETS}
    for s in plan.streams:
        y = s.labels
        for tgt, pred, pred0 in (
            ("float", s.float_pred, s.float_pred0),
            ("fixed", s.ref["pred"], s.fixed_pred0),
        ):
            hit, hit0 = np.asarray(pred) == y, np.asarray(pred0) == y
            for i, (snr, noise) in enumerate(zip(s.snrs, s.noises, strict=True)):
                acc[tgt][(s.mode, float(snr), str(noise))].append(bool(hit[i]))
                pos[tgt][(s.mode, bool(s.positions[i] < HEAD_CLIPS))].append(bool(hit[i]))
                if s.mode == first_mode:
                    acc[tgt][("no_adapt", float(snr), str(noise))].append(bool(hit0[i]))
                    head = bool(s.positions[i] < HEAD_CLIPS)
                    pos[tgt][("no_adapt", head)].append(bool(hit0[i]))
    ticks: dict[str, list[int]] = defaultdict(list)
    field_counts: dict[str, int] = defaultdict(int)
    mismatches = 0
    for r in sorted(records, key=lambda r: (r.stream, r.index)):
        s = by_key[r.stream]
        snr, noise = float(s.snrs[r.index]), str(s.noises[r.index])
        head = bool(s.positions[r.index] < HEAD_CLIPS)
        acc["device"][(s.mode, snr, noise)].append(r.result.pred == r.label)
        pos["device"][(s.mode, head)].append(r.result.pred == r.label)
        if s.mode == device_noadapt:
            acc["device"][("no_adapt", snr, noise)].append(r.result.pred_noadapt == r.label)
            pos["device"][("no_adapt", head)].append(r.result.pred_noadapt == r.label)
        for f in r.mismatches:
            field_counts[f] += 1
        mismatches += bool(r.mismatches)
        for what in ("encoder", "adapt", "total"):
            v = getattr(r.result, f"ticks_{what}")
            ticks[what].append(v)
            ticks[f"{s.mode}.{what}"].append(v)
    fw = plan.manifest.get("firmware", {})
    memory = {
        k: fw.get(k)
        for k in ("text", "rodata", "data", "bss", "stack", "static_ram_bytes", "ram_budget_bytes")
    }
    memory["stack_high_water_bytes"] = stack_used
    order = list(dict.fromkeys(["no_adapt", *plan.selection.modes]))
    return {
        "format": "elatta-run-report",
        "data": plan.data_info,
        "target": target,
        "model": {k: v["sha256"] for k, v in plan.manifest["inputs"].items()},
        "samples": {
            "selected": plan.total,
            "answered": len(records),
            "modes": list(plan.selection.modes),
            "conditions": len(plan.selection.per_condition),
            "per_condition": dict(plan.selection.per_condition),
            "distinct_utterances": plan.selection.distinct_utterances,
            "available_utterances": plan.selection.available_utterances,
            "streams": (
                "one per (mode, condition), RESET first; continual state within it"
                if plan.selection.stream is None
                else "one per mode over every condition in segments (codegen.streams), RESET "
                "first; continual state carried across switches"
            ),
            "stream_definition": plan.selection.stream,
        },
        "bit_exact": {
            "compared": len(records),
            "mismatches": mismatches,
            "fields": dict(sorted(field_counts.items())),
            "first_mismatch": first_mismatch,
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
            **{w: _stats(ticks[w]) for w in ("encoder", "adapt", "total")},
            "per_mode": {
                m: {w: _stats(ticks[f"{m}.{w}"]) for w in ("encoder", "adapt", "total")}
                for m in plan.selection.modes
            },
            "unit": target.get("ticks"),
        },
        "memory": memory,
        "run": run_facts,
    }


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
        f"Data: {data.get('data')}"
        + (f" ({kind})" if (kind := data.get("preset") or data.get("tier")) else "")
        + " at "
        f"`{data.get('path')}`; {rep['samples']['answered']} of {rep['samples']['selected']} "
        f"samples per run over {rep['samples']['conditions']} noise × SNR conditions, "
        f"{rep['samples']['distinct_utterances']} distinct test utterances of "
        f"{rep['samples']['available_utterances']}.",
        f"Target: {rep['target'].get('kind')} ({rep['target'].get('machine', '')}), firmware "
        f"{rep['target'].get('build_id')}.",
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
            cells = [_pct(row.get(s, {}).get("average")) for s in snrs]
            lines.append(f"| {tgt} | {METHOD_NAMES.get(m, m)} | " + " | ".join(cells) + " |")
    bp = rep.get("by_position", {})
    lines += [
        "",
        f"## Accuracy (%) by position in a segment (first {HEAD_CLIPS} clips after a switch or "
        "RESET vs the rest), all conditions",
        "",
        f"| target | method | first {HEAD_CLIPS} | rest |",
        "|---|---|---:|---:|",
    ]
    for tgt in TARGETS:
        for m in modes:
            cell = bp.get(tgt, {}).get(m, {})
            lines.append(
                f"| {tgt} | {METHOD_NAMES.get(m, m)} | {_pct(cell.get(f'first_{HEAD_CLIPS}'))} | "
                f"{_pct(cell.get('rest'))} |"
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
        *(f"| {w} | {t[w]['median']} | {t[w]['max']} |" for w in ("encoder", "adapt", "total")),
        "",
        f"Memory: .text {mem.get('text')} B, .rodata {mem.get('rodata')} B, static RAM "
        f"{mem.get('static_ram_bytes')} of {mem.get('ram_budget_bytes')} B, stack high-water "
        f"{mem.get('stack_high_water_bytes')} B.",
        "",
        f"Run: {rep['run'].get('jobs')} device(s), {rep['run'].get('samples_per_s')} samples/s, "
        f"{rep['run'].get('retransmits')} re-sends.",
        "",
    ]
    return "\n".join(lines)


def plot(rep: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    acc = rep["accuracy"]
    modes = list(dict.fromkeys(["no_adapt", *rep["samples"]["modes"]]))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    # device and fixed coincide when bit-exact: distinct markers keep both visible
    styles = {"float": (":", "o", 5), "fixed": ("--", "s", 7), "device": ("-", "x", 7)}
    for tgt in TARGETS:
        for i, m in enumerate(modes):
            row = acc[tgt].get(m, {})
            snrs = sorted(row, key=float)
            if not snrs:
                continue
            ls, marker, size = styles[tgt]
            ax.plot(
                [float(s) for s in snrs],
                [100 * row[s]["average"] for s in snrs],
                linestyle=ls,
                marker=marker,
                markersize=size,
                fillstyle="none",
                color=f"C{i}",
                label=f"{METHOD_NAMES.get(m, m)} – {tgt}",
            )
    ax.set_xlabel("SNR (dB)")
    ax.set_ylabel("accuracy (%)")
    ax.set_title("GSC-C accuracy vs SNR (mean over noises)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_report(rep: dict[str, Any], out: Path) -> None:
    (out / "report.json").write_text(json.dumps(rep, indent=2) + "\n")
    (out / "report.md").write_text(format_markdown(rep))
    plot(rep, out / "report.png")


def format_summary(rep: dict[str, Any]) -> str:
    be = rep["bit_exact"]
    verdict = "BIT-EXACT" if be["mismatches"] == 0 and be["compared"] else "MISMATCH"
    return format_markdown(rep) + (
        f"\n{verdict}: {be['compared']} results compared, {be['mismatches']} mismatches\n"
    )
