"""Readable reports: a lineage as Markdown with a chart of time per step, and the charts of the other results.

Charts are SVG drawn with matplotlib when it is installed (the GPU image has it; `svg_bar_chart` returns None
elsewhere), and a text bar chart inside the Markdown always, so a report reads the same in a terminal.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from warpwise.lineages.lineage import kernel_times

BAR = "█"


def _fmt_ms(ms: float | None) -> str:
    if ms is None:
        return ""
    return f"{ms:.4g}"


def text_bar_chart(labels: Sequence[str], values: Sequence[float | None], unit: str, width: int = 40) -> str:
    """Return a bar chart in plain text (one line per value, bars scaled to the largest)."""
    top = max((v for v in values if v), default=0.0)
    pad = max((len(label) for label in labels), default=0)
    lines = []
    for label, v in zip(labels, values, strict=True):
        if v is None:
            lines.append(f"{label.ljust(pad)} | (not measured)")
            continue
        n = max(1, round(width * v / top)) if top > 0 else 0
        lines.append(f"{label.ljust(pad)} | {BAR * n} {v:.4g} {unit}")
    return "\n".join(lines)


def svg_bar_chart(
    title: str,
    labels: Sequence[str],
    values: Sequence[float | None],
    ylabel: str,
    low: Sequence[float | None] | None = None,
    high: Sequence[float | None] | None = None,
    log: bool = False,
    reference: tuple[float, str] | None = None,
) -> str | None:
    """Return an SVG bar chart drawn with matplotlib (with error bars from low/high), or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    xs = list(range(len(labels)))
    ys = [v if v is not None else 0.0 for v in values]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * len(labels) + 2.5), 3.6))
    yerr = None
    if low is not None and high is not None:
        yerr = [
            [max(0.0, y - (lo if lo is not None else y)) for y, lo in zip(ys, low, strict=True)],
            [max(0.0, (hi if hi is not None else y) - y) for y, hi in zip(ys, high, strict=True)],
        ]
    ax.bar(xs, ys, color="#4c72b0", yerr=yerr, capsize=3)
    if reference is not None:
        ax.axhline(reference[0], color="#c44e52", linestyle="--", linewidth=1)
        ax.text(len(labels) - 0.5, reference[0], reference[1], color="#c44e52", ha="right", va="bottom", fontsize=8)
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=30 if len(labels) > 8 else 0, ha="right" if len(labels) > 8 else "center")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if log:
        ax.set_yscale("log")
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    return buf.getvalue()


def lineage_chart(lineage: dict[str, Any]) -> str | None:
    """Return the SVG chart of time per kernel of a lineage (None without matplotlib or without timings)."""
    times = kernel_times(lineage)
    if not any(times):
        return None
    labels = [k["name"] + (" (expert)" if k.get("is_expert") else "") for k in lineage["kernels"]]
    measured = [t["median_ms"] for t in times if t]
    return svg_bar_chart(
        f"{lineage['operator']} (`{lineage['kernel']}`): time per kernel of the lineage",
        labels,
        [t["median_ms"] if t else None for t in times],
        "ms (median, IQR)",
        [t["q1_ms"] if t else None for t in times],
        [t["q3_ms"] if t else None for t in times],
        log=max(measured) > 30 * min(measured),
    )


def _speedup(s: dict[str, Any] | None) -> str:
    if not s:
        return ""
    return f"{s['median']:.2f}x ({s['low']:.2f}..{s['high']:.2f})"


def _profile_text(step: dict[str, Any]) -> str:
    """Return a step's two profiles in words: DRAM and SM throughput, occupancy, registers, bottleneck."""
    b, a = step["before_profile"], step["after_profile"]
    parts = []
    for key, name, unit in (
        ("dram_gbps", "DRAM", " GB/s"),
        ("dram_pct", "DRAM throughput", "% of peak"),
        ("sm_pct", "SM throughput", "% of peak"),
        ("occupancy_pct", "achieved occupancy", "%"),
        ("registers", "registers", ""),
    ):
        x, y = b.get(key), a.get(key)
        if isinstance(x, int | float) and isinstance(y, int | float):
            parts.append(f"{name} {x:.0f} -> {y:.0f}{unit}")
    if b.get("bottleneck") or a.get("bottleneck"):
        parts.append(f"bottleneck {b.get('bottleneck') or '?'} -> {a.get('bottleneck') or '?'}")
    note = (step.get("profile_run") or {}).get("note")
    return "; ".join(parts) + (f" ({note})" if note else "")


def _card(step: dict[str, Any]) -> str:
    if step.get("card"):
        return f"[`{step['card']}`](../../../skills/{step['card']}/card.md)"
    prop = step.get("proposed")
    return f"unexplained: proposes `{prop['skill_id']}`" if prop else "unexplained"


def _resources(d: dict[str, Any] | None) -> str:
    if not d:
        return ""
    parts = []
    if d.get("registers") is not None:
        parts.append(f"{d['registers']} regs")
    if d.get("shared_bytes"):
        parts.append(f"{d['shared_bytes']} B smem")
    if d.get("spill_stores"):
        parts.append(f"{d['spill_stores']} B spilled")
    return ", ".join(parts)


def lineage_markdown(lineage: dict[str, Any], chart_file: str | None = None) -> str:
    """Return the lineage report in Markdown."""
    op, kernel = lineage["operator"], lineage["kernel"]
    dev = lineage.get("device") or {}
    measured = lineage["mode"] == "gpu"
    times = kernel_times(lineage)
    out = [f"# Lineage of `{kernel}` ({op})", ""]
    where = f"{dev.get('gpu')} ({dev.get('arch')}, driver {dev.get('driver')}, {dev.get('toolkit')})" if dev else ""
    if measured:
        expert = lineage["expert"]
        out.append(f"Walked backwards from [`{expert}`](../../../../{expert}) on {where}, {lineage['date'][:10]}.")
    else:
        out.append(
            f"**Compile-only preview** of the walk from `{lineage['expert']}` ({lineage['date'][:10]}): every "
            "candidate that builds is accepted; nothing here is measured and nothing is evidence."
        )
    out.append(
        f"{len(lineage['steps'])} steps, {len(lineage['rejected'])} rejected attempts, "
        f"{lineage['gpu_seconds']:.1f} GPU-seconds ({lineage['wall_seconds']:.1f} s wall)"
        + ("" if lineage.get("complete", True) else "; **incomplete**: the time budget ran out")
        + "."
    )
    first, last = times[0] if times else None, times[-1] if times else None
    if first and last:
        out.append(
            f"K0 takes {first['median_ms']:.4g} ms, the expert K{len(times) - 1} {last['median_ms']:.4g} ms "
            f"({first['median_ms'] / last['median_ms']:.2f}x)."
        )
    out += ["", "## Time per kernel", ""]
    if chart_file:
        out += [f"![time per kernel]({chart_file})", ""]
    labels = [k["name"] for k in lineage["kernels"]]
    out += ["```", text_bar_chart(labels, [t["median_ms"] if t else None for t in times], "ms"), "```", ""]
    out += [
        "| kernel | step into it | card | ms (q1..q3) | speedup of the step (low..high) | resources | launch |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    steps = {s["to"]: s for s in lineage["steps"]}
    for k, t in zip(lineage["kernels"], times, strict=True):
        s = steps.get(k["index"])
        build = s.get("after_build") if s else (lineage["steps"][0].get("before_build") if lineage["steps"] else None)
        tt = f"{_fmt_ms(t['median_ms'])} ({_fmt_ms(t['q1_ms'])}..{_fmt_ms(t['q3_ms'])})" if t else ""
        out.append(
            f"| {k['name']}{' (expert)' if k.get('is_expert') else ''} | {s['description'] if s else '(start)'} | "
            f"{_card(s) if s else ''} | {tt} | {_speedup(s.get('speedup')) if s else ''} | {_resources(build)} | "
            f"{k.get('launch_text') or 'as the problem file'} |"
        )
    out += ["", "## Steps (forward: from the simpler kernel to the optimized one)", ""]
    for s in lineage["steps"]:
        out.append(f"### K{s['from']} -> K{s['to']}: {s['description']}")
        out.append("")
        out.append(f"- card: {_card(s)}; pass `{s['key']}`; status `{s['status']}`")
        if s.get("before_timing") and s.get("after_timing"):
            b, a = s["before_timing"], s["after_timing"]
            out.append(
                f"- time: {b['median_ms']:.4g} ms [{b['q1_ms']:.4g}..{b['q3_ms']:.4g}] -> {a['median_ms']:.4g} ms "
                f"[{a['q1_ms']:.4g}..{a['q3_ms']:.4g}], speedup {_speedup(s.get('speedup'))}, A/A noise "
                f"{100 * (s.get('speedup') or {}).get('noise', 0.0):.1f}%"
            )
        if s.get("resource_delta"):
            out.append(f"- resources (after - before): {s['resource_delta']}")
        if s.get("before_profile") and s.get("after_profile"):
            out.append(f"- profile (Nsight Compute, before -> after): {_profile_text(s)}")
        if s.get("launch_text"):
            out.append(f"- the simpler kernel is launched with {s['launch_text']}")
        out += ["", "```diff", s["diff"].rstrip("\n") or "(no change to the source: the launch differs)", "```", ""]
    out += ["## Risk evidence: optimizations that could not be removed, or did not matter", ""]
    if lineage["rejected"]:
        out += ["| at kernel | pass | card | outcome | detail |", "| --- | --- | --- | --- | --- |"]
        for r in lineage["rejected"]:
            detail = r["reason"].replace("|", "\\|").replace("\n", " ")
            if len(detail) > 300:
                detail = detail[:297] + "..."
            out.append(f"| K{r['at_kernel']} | `{r['key']}` | {_card(r)} | {r['outcome']} | {detail} |")
    else:
        out.append("None.")
    out.append("")
    return "\n".join(out)
