"""KLineage: expert kernels walked backwards into lineages, evidence for the cards, admission and quality.

`deopt` holds the inverse passes ("deoptimizers") that each remove one optimization from a kernel; `lineage`
walks an expert kernel backwards with them, verifying every step with the gate; `evidence` turns the measured
forward steps into card evidence; `admission` decides which cards are admitted from held-out roundtrips on the
naive suite; `quality` runs warpwise on the naive suite; `report` renders lineages and results as Markdown and
charts; `ingest` brings the files of a GPU batch run into the tree. See docs/lineages.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ForwardStep:
    """One kernel of a measured lineage, for planners: the step into it, its source, kernel name and card."""

    title: str
    text: str
    kernel: str
    card: str | None
    index: int


def forward_steps(corpus_folder: Path) -> list[ForwardStep]:
    """Return the kernels K0 ... K(n-1) of the GPU lineage of a corpus operator, in forward order.

    Only kernels launched like the expert (no launch change) are returned, so that a planner can run each with the
    expert problem's own `launch(inputs)`; the expert itself is not included. Without a measured lineage
    (`lineages/results/<operator>/lineage.json` built on a GPU) the list is empty.
    """
    path = Path(corpus_folder).resolve().parent.parent / "results" / Path(corpus_folder).name / "lineage.json"
    try:
        lineage = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if lineage.get("mode") != "gpu":
        return []
    steps = {s["to"]: s for s in lineage.get("steps", [])}
    out = []
    for k in lineage.get("kernels", []):
        if k.get("is_expert") or k.get("launch_changes"):
            continue
        step = steps.get(k["index"])
        what = step["description"] if step else "the simplest kernel the deoptimizers reach"
        out.append(
            ForwardStep(
                f"lineage K{k['index']} of {lineage['operator']}: {what}",
                k["source"],
                lineage["kernel"],
                step.get("card") if step else None,
                k["index"],
            )
        )
    return out
