"""Why the ranking misses the public lineages' big wins: where the measured steps go, per repository (issue 21).

Reads the step analysis (`bench/results/public_steps-DATE.json`) and the leave-one-repository-out evaluation
(`bench/results/public_ranking-DATE.json` and its held-out models, `bench/public_ranking.py --models`), and the
training set (`warpwise.ranking.dataset.build(include_public=True)`). Writes
`bench/results/public_ranking_analysis-DATE.{json,md}` with, on the CPU:

* **where the measured expert steps go**: every timed step k -> k+1 by what the ranking can learn from it — a
  training example (a named built-in card binds on version k), `unbound` (the mapping names a built-in card that
  does not match version k: no region, so no features and no quick fix to rank), or `no card` (only proposed
  cards); with the measured speedups of each group, so the share of the big wins the model can ever see is
  explicit;
* **the training set's make-up**: our own rows against the public ones, and the share of large measured effects
  in each (the target is log speedup, Huber loss);
* **per repository, held out**: each public example's measured and predicted speedup and P(faster), from the
  model trained without its repository, and the range of the predictions.

    .venv/bin/python bench/public_ranking_analysis.py --date 2026-12-02 --models /tmp/wt21_loro
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

BIG = 2.0


def _geo(xs: list[float]) -> float | None:
    return round(math.exp(sum(math.log(x) for x in xs) / len(xs)), 3) if xs else None


def step_groups(steps_doc: dict[str, Any], bound: set[tuple[str, str]]) -> dict[str, Any]:
    """Return the timed expert steps grouped by what the ranking can learn from them."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in steps_doc["expert_steps"]:
        if "speedup" not in s:
            continue
        sp = s["speedup"]["median"]
        key = (s["lineage"], s["step"])
        if not s["named_builtin"]:
            g = "no card (proposed cards only)"
        elif key in bound:
            g = "training example (a named card binds on k)"
        else:
            g = "unbound (a named card does not match k)"
        groups[g].append(
            {
                "repo": s["repo"],
                "lineage": s["lineage"],
                "step": s["step"],
                "speedup": round(sp, 3),
                "cards": s["named_builtin"] or s["named_proposed"],
            }
        )
    out = {}
    for g, rows in sorted(groups.items()):
        sps = [r["speedup"] for r in rows]
        out[g] = {
            "steps": len(rows),
            "geomean": _geo(sps),
            "big": sum(x >= BIG for x in sps),
            "big_rows": sorted((r for r in rows if r["speedup"] >= BIG), key=lambda r: -r["speedup"]),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """Write the analysis."""
    import public_ranking as pr

    from warpwise.ranking import dataset

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--date", required=True)
    ap.add_argument("--models", type=Path, required=True, help="the held-out models of bench/public_ranking.py")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args(argv)
    steps_doc = json.loads((ROOT / "bench" / "results" / f"public_steps-{args.date}.json").read_text())
    ts = dataset.build(ROOT, include_public=True)
    held = pr.leave_one_repository_out(ts.examples, ts.gpus, args.models)
    bound = set()
    for e, _ in held:
        parts = e.source.split()
        if parts[:2] == ["public", "lineage"]:
            bound.add((parts[3], " ".join(parts[4:])))
    groups = step_groups(steps_doc, bound)
    own = [e for e in ts.labelled if pr.repo_of(e.source) == pr.OWN]
    pub = [e for e in ts.labelled if pr.repo_of(e.source) != pr.OWN]

    def share(es: list[Any], t: float) -> float | None:
        m = [e.outcome.speedup for e in es if e.outcome.measured]
        return round(sum(x >= t for x in m) / len(m), 3) if m else None

    make_up = {
        "own": {"labelled": len(own), "measured": sum(e.outcome.measured for e in own), ">=1.5x": share(own, 1.5)},
        "public": {
            "labelled": len(pub),
            "measured": sum(e.outcome.measured for e in pub),
            ">=1.5x": share(pub, 1.5),
            "expert steps": sum(e.source.startswith("public lineage") for e in pub),
            "our rewrites": sum(e.source.startswith("public rewrite") for e in pub),
        },
    }
    per_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e, p in held:
        per_repo[pr.repo_of(e.source)].append(
            {
                "source": e.source,
                "card": e.card,
                "measured": round(e.outcome.speedup or 0.0, 3),
                "status": e.outcome.status,
                "predicted": round(p.speedup, 3),
                "p_faster": round(p.p_verified, 3),
            }
        )
    preds = [p.speedup for _, p in held]
    doc = {
        "date": args.date,
        "command": "python bench/public_ranking_analysis.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "step_groups": groups,
        "training_set": make_up,
        "prediction_range": [round(min(preds), 3), round(max(preds), 3)] if preds else None,
        "held_out": dict(sorted(per_repo.items())),
    }
    (args.out / f"public_ranking_analysis-{args.date}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (args.out / f"public_ranking_analysis-{args.date}.md").write_text(markdown(doc))
    print({g: (v["steps"], v["big"]) for g, v in groups.items()})
    return 0


def markdown(doc: dict[str, Any]) -> str:
    """Return the analysis as Markdown."""
    out = [
        f"# Why the ranking misses the public lineages' big wins ({doc['date']})",
        "",
        f"Command: `{doc['command']}` (CPU only). Steps from `bench/results/public_steps-{doc['date']}.json`; "
        f"held-out predictions as in `bench/results/public_ranking-{doc['date']}.json` (each public repository "
        "predicted by a model trained without it).",
        "",
        "## Where the measured expert steps go",
        "",
        "| what the ranking can learn from the step | timed steps | geomean speedup | steps >= 2x |",
        "| --- | --- | --- | --- |",
    ]
    for g, v in doc["step_groups"].items():
        out.append(f"| {g} | {v['steps']} | {v['geomean']}x | {v['big']} |")
    out += ["", "Steps >= 2x, by group:", "", "| group | step | speedup | cards named |", "| --- | --- | --- | --- |"]
    for g, v in doc["step_groups"].items():
        for r in v["big_rows"]:
            out.append(
                f"| {g.split(' (')[0]} | {r['lineage']} {r['step']} | {r['speedup']}x | {', '.join(r['cards'])} |"
            )
    t = doc["training_set"]
    out += [
        "",
        "## The training set (target: log speedup, Huber loss; P(faster): logistic)",
        "",
        "| rows | labelled | measured | measured >= 1.5x |",
        "| --- | --- | --- | --- |",
        f"| our suite and lineages | {t['own']['labelled']} | {t['own']['measured']} | {t['own']['>=1.5x']} |",
        f"| public lineages ({t['public']['expert steps']} expert steps, {t['public']['our rewrites']} our rewrites) "
        f"| {t['public']['labelled']} | {t['public']['measured']} | {t['public']['>=1.5x']} |",
        "",
        f"Held-out predictions range over {doc['prediction_range'][0]}x .. {doc['prediction_range'][1]}x.",
        "",
        "## Held out, per repository",
    ]
    for repo, rows in doc["held_out"].items():
        out += [
            "",
            f"### {repo}",
            "",
            "| example | card | measured | predicted | P(faster) |",
            "| --- | --- | --- | --- | --- |",
        ]
        for r in sorted(rows, key=lambda r: -r["measured"]):
            out.append(
                f"| {r['source'].split(' ', 3)[-1]} ({r['source'].split()[1]}) | `{r['card']}` | {r['measured']}x "
                f"({r['status']}) | {r['predicted']}x | {r['p_faster']} |"
            )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
