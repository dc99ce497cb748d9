"""Where lineage results live, and the cards that unexplained steps propose.

A lineage is written to `lineages/results/<operator>/`: `lineage.json` (everything), `lineage.md` (the
report) and `time_per_kernel.svg` (the chart, when matplotlib drew one). Verified forward steps that no card
explains propose a card: `lineages/proposed/<skill_id>/SKILL.md`, in the KLineage layout, which the card
loader reads as a display-only `preview` card (`warpwise cards list --dir lineages/proposed`). A proposed
card gathers every lineage step that proposed it, with the measured speedups and the first step's diff as
its example.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from warpwise.lineages.report import lineage_markdown

RESULTS = Path("lineages") / "results"
PROPOSED = Path("lineages") / "proposed"
CHART = "time_per_kernel.svg"


def default_out(operator: str) -> Path:
    """Return the folder a lineage is written to when none is given."""
    base = RESULTS if Path("lineages", "corpus").is_dir() else Path("lineages")
    return base / operator


def write_lineage(lineage: dict[str, Any], out: Path, chart_svg: str | None = None) -> list[Path]:
    """Write a lineage's JSON, Markdown and chart into a folder; return the files written."""
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "lineage.json", out / "lineage.md"]
    files[0].write_text(json.dumps(lineage, indent=1) + "\n", encoding="utf-8")
    chart = out / CHART
    if chart_svg:
        chart.write_text(chart_svg, encoding="utf-8")
        files.append(chart)
    elif chart.exists():
        chart.unlink()
    files[1].write_text(lineage_markdown(lineage, CHART if chart_svg else None), encoding="utf-8")
    return files


def read_lineages(root: Path = RESULTS) -> list[tuple[Path, dict[str, Any]]]:
    """Return every `lineage.json` under a results folder with its path."""
    out = []
    for path in sorted(root.glob("*/lineage.json")):
        try:
            out.append((path, json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError):
            continue
    return out


def write_proposed_cards(lineages: list[tuple[Path, dict[str, Any]]], root: Path = PROPOSED) -> list[Path]:
    """Write one proposed card per unexplained, verified forward step kind; return the files written."""
    found: dict[str, list[tuple[Path, dict[str, Any], dict[str, Any]]]] = {}
    for path, lin in lineages:
        if lin.get("mode") != "gpu":
            continue
        for step in lin.get("steps", []):
            if step.get("card") is None and step.get("proposed") and step.get("status") == "verified":
                found.setdefault(step["proposed"]["skill_id"], []).append((path, lin, step))
    files = []
    for skill_id, items in sorted(found.items()):
        _, first_lin, first = items[0]
        prop = first["proposed"]
        header = {
            "skill_id": skill_id,
            "intent": prop["intent"],
            "status": "preview",
            "scope": {"operators": sorted({lin["operator"] for _, lin, _ in items}), "platforms": ["sm_90"]},
            "preconditions": [
                "The rewritten kernel computes the same outputs as before (the gate checked it on the lineage's "
                "problem; check it for yours).",
                "The kernel has the shape of the example below.",
            ],
        }
        rows = [
            _row(lin, s) for _, lin, s in items if s.get("before_timing") and s.get("after_timing") and s.get("speedup")
        ]
        body = "\n".join(
            [
                f"# {prop['title']} (proposed by KLineage)",
                "",
                "A forward step of an expert-kernel lineage that no warpwise card explains. This card is a "
                "`preview`: it documents the step (hover text, LLM context) and has no rewrite.",
                "",
                "## Measured steps",
                "",
                "| lineage | kernel | step | ms before -> after | speedup (low..high) |",
                "| --- | --- | --- | --- | --- |",
                *rows,
                "",
                f"## Example ({first_lin['operator']}, K{first['from']} -> K{first['to']}: {first['description']})",
                "",
                "```diff",
                first["diff"].rstrip("\n"),
                "```",
                "",
            ]
        )
        out = root / skill_id / "SKILL.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("---\n" + yaml.safe_dump(header, sort_keys=False) + "---\n" + body, encoding="utf-8")
        files.append(out)
    return files


def _row(lin: dict[str, Any], s: dict[str, Any]) -> str:
    """Return one measured step as a table row of a proposed card."""
    b, a, sp = s["before_timing"]["median_ms"], s["after_timing"]["median_ms"], s["speedup"]
    return (
        f"| [{lin['operator']}](../../results/{lin['operator']}/lineage.md) | `{lin['kernel']}` | "
        f"K{s['from']} -> K{s['to']} | {b:.4g} -> {a:.4g} | {sp['median']:.2f}x ({sp['low']:.2f}..{sp['high']:.2f}) |"
    )
