"""Agreement with experts: does the editor's order of quick fixes put the expert's next change first, or in the top 3?

For every step k -> k+1 of the public lineages (`lineages/public/INDEX.yaml`) whose expert change is mapped to
card ids (`lineages/public/expert_changes.yaml`, written from reading the code before this script ran), version
k's text is read from its mirror at the pinned commit (quoted includes of the repository inlined), analysed, and
every card is matched against it. The quick fixes of version k's kernel are put in the editor's order, the order
`server/features/code_actions.py` lists them in when nothing is verified yet: by the learned ranking's editor
priority (`warpwise.ranking.editor_priority` of `predict_matches` over the fixable matches: the queue priority,
likely winners by expected gain first, unranked ones next, predicted losers last, and between fixes of one queue
priority the larger predicted speedup), ties in the order of the items (by position, then card id). Cards appear
once, at their first quick fix. A step is a hit at k when one of its mapped card ids is among the first k cards.

The ranking is the package's shipped model (`ranking/default_model.json`) unless `--model` names another. Once
the shipped model is trained on these lineages' evidence too, use `--loro`: each repository's steps are ordered by
a model retrained on the committed evidence without that repository (leave-one-repository-out).

Recall is reported over the optimisation steps (steps marked `refactor` or `correctness` are left out; `slower`
steps stay in), per repository and per kernel family; beside it, recall over the steps that some built-in card
names at all (the others cannot be hit by any order) and how often the mapped card matched the code of version k
without a quick fix. No public code is written anywhere: the mirrors are read at analysis time.

    .venv/bin/python bench/agreement.py --mirrors /work/.mirror --out bench/results --date 2026-12-01
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import subprocess
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LEFT_OUT_KINDS = frozenset({"refactor", "correctness"})


@dataclass
class StepResult:
    """One expert step scored against the editor's order of version k's quick fixes."""

    lineage: str
    repo: str
    family: str
    step: str
    kind: str
    expected: list[str]
    expected_builtin: list[str]
    order: list[str]
    matched_without_fix: list[str] = field(default_factory=list)
    rank: int | None = None
    error: str | None = None

    @property
    def top1(self) -> bool:
        """Return whether the expert's change is the first quick fix."""
        return self.rank is not None and self.rank <= 1

    @property
    def top3(self) -> bool:
        """Return whether the expert's change is among the first three quick fixes."""
        return self.rank is not None and self.rank <= 3

    @property
    def cause(self) -> str:
        """Return why the step is a hit or a miss: whether the expected card was found on version k at all."""
        if not self.expected_builtin:
            return "no built-in card"
        if self.top3:
            return "in the top 3"
        if self.rank is not None:
            return "offered below the top 3"
        if set(self.expected_builtin) & set(self.matched_without_fix):
            return "matched without a quick fix"
        return "not detected on version k"


def editor_order(text: bytes, path: str, kernel: str, model: Any) -> tuple[list[str], list[str]]:
    """Return the cards of a kernel's quick fixes in the editor's order, and the cards that match without a fix."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.ranking import editor_priority, predict_matches
    from warpwise.skills.engine import match_file
    from warpwise.skills.model import Applicability

    fm = analyze_text(text, path)
    matches = match_file(fm)
    fixable = [m for m in matches if m.has_rewrite and m.applicability in (Applicability.SAFE, Applicability.UNSAFE)]
    preds = predict_matches(fm, fixable, model=model) if model is not None and fixable else {}
    mine = [m for m in fixable if m.function == kernel]
    mine.sort(key=lambda m: (m.span[0], m.card_id))
    ranked = sorted(mine, key=lambda m: tuple(-x for x in editor_priority(preds.get((m.function, m.card_id)))))
    order: list[str] = []
    for m in ranked:
        if m.card_id not in order:
            order.append(m.card_id)
    without_fix = sorted({m.card_id for m in matches if m.function == kernel and m.card_id not in order})
    return order, without_fix


def loro_models(models: Path | None) -> dict[str, Any]:
    """Return, per public repository, the ranking trained on every committed example except that repository's.

    The committed evidence includes the public lineages' records (`bench/public_steps.py --write`); a step of a
    repository is then ordered by a model that never saw that repository (leave-one-repository-out). `models` is
    the folder `bench/public_ranking.py --models` kept them in (read when trained on the same examples).
    """
    from warpwise.ranking import dataset

    sys.path.insert(0, str(ROOT / "bench"))
    from public_ranking import CALIBRATION
    from public_ranking import loro_models as train_loro

    ts = dataset.build(ROOT, include_public=True)
    return train_loro(ts.examples, ts.gpus, models, calibration=CALIBRATION)


def score(
    mirrors: Path, index: Path, changes: Path, model_path: Path | None, loro: bool = False, models: Path | None = None
) -> tuple[list[StepResult], dict[str, Any]]:
    """Return every mapped step's result and what was used (commits, model)."""
    from warpwise.lineages.public_index import PublicIndexError, load_changes, load_index, version_text
    from warpwise.ranking import DEFAULT_MODEL, load_model
    from warpwise.skills.library import builtin_library

    lineages = load_index(index)
    cmap = load_changes(changes)
    builtin = {c.skill_id for c in builtin_library()}
    model = load_model(model_path or DEFAULT_MODEL)
    per_repo = loro_models(models) if loro else {}
    results: list[StepResult] = []
    unmapped: list[str] = []
    for li in lineages:
        for a, b in li.steps():
            change = cmap.for_step(li.id, a.id, b.id)
            label = f"{a.id} -> {b.id}"
            if change is None:
                unmapped.append(f"{li.id} {label}")
                continue
            r = StepResult(li.id, li.repo, li.family, label, change.kind, list(change.cards), [], [])
            r.expected_builtin = [c for c in change.cards if c in builtin]
            try:
                text = version_text(mirrors, li, a)
                r.order, r.matched_without_fix = editor_order(text, a.file, a.kernel, per_repo.get(li.repo, model))
            except PublicIndexError as exc:
                r.error = str(exc)
            ranks = [r.order.index(c) + 1 for c in r.expected_builtin if c in r.order]
            r.rank = min(ranks) if ranks else None
            results.append(r)
    meta = {
        "repositories": {li.repo: li.commit for li in lineages},
        "model": (
            "leave-one-repository-out: per repository, retrained on the committed evidence without it"
            if loro
            else str(model_path or DEFAULT_MODEL.relative_to(ROOT))
        ),
        "model_version": ({k: v.version for k, v in per_repo.items()} if loro else getattr(model, "version", None)),
        "unmapped_steps": unmapped,
    }
    return results, meta


def summarise(results: list[StepResult], key: str | None) -> dict[str, dict[str, Any]]:
    """Return recall@1 and recall@3 per group (`repo`, `family`, or everything when key is None)."""
    groups: dict[str, list[StepResult]] = defaultdict(list)
    for r in results:
        if r.kind in LEFT_OUT_KINDS or r.error:
            continue
        groups[getattr(r, key) if key else "all"].append(r)
    out = {}
    for name, rs in sorted(groups.items()):
        nameable = [r for r in rs if r.expected_builtin]
        faster = [r for r in rs if r.kind != "slower"]
        out[name] = {
            "steps": len(rs),
            "top1": sum(r.top1 for r in rs),
            "top3": sum(r.top3 for r in rs),
            "recall_at_1": round(sum(r.top1 for r in rs) / len(rs), 3),
            "recall_at_3": round(sum(r.top3 for r in rs) / len(rs), 3),
            "steps_a_card_names": len(nameable),
            "recall_at_3_of_those": round(sum(r.top3 for r in nameable) / len(nameable), 3) if nameable else None,
            "matched_without_fix": sum(1 for r in rs if set(r.expected_builtin) & set(r.matched_without_fix)),
            "steps_not_slower": len(faster),
            "recall_at_3_not_slower": round(sum(r.top3 for r in faster) / len(faster), 3) if faster else None,
        }
    return out


def per_card(steps: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Return, per built-in card expected by some step, how often it was offered, in the top 3, or matched only."""
    out: dict[str, dict[str, int]] = {}
    for r in steps:
        if r["kind"] in LEFT_OUT_KINDS or r["error"]:
            continue
        for card in r["expected_builtin"]:
            g = out.setdefault(card, {"steps": 0, "offered": 0, "top3": 0, "matched_without_fix": 0})
            g["steps"] += 1
            g["offered"] += card in r["order"]
            g["top3"] += card in r["order"][:3]
            g["matched_without_fix"] += card in r["matched_without_fix"]
    return dict(sorted(out.items(), key=lambda kv: (-kv[1]["steps"], kv[0])))


def _git_head() -> str | None:
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None


def markdown(doc: dict[str, Any]) -> str:
    """Return the agreement report as Markdown."""
    s = doc["summary"]["all"] if doc["summary"].get("all") else {}
    out = [
        f"# Agreement with expert lineages ({doc['date']})",
        "",
        f"Command: `{doc['command']}` (warpwise commit `{doc['warpwise_commit']}`; ranking model "
        f"`{doc['model']}` version `{doc['model_version']}`; CPU only, no GPU: nothing here is verified).",
        "",
        "For each step k -> k+1 of `lineages/public/INDEX.yaml`, the card ids of the expert's change "
        "(`lineages/public/expert_changes.yaml`, committed before this ran) are looked up in the order the editor "
        "lists version k's quick fixes (ranking's editor priority: queue priority, then predicted speedup, then "
        "position). Steps marked refactor or correctness are left out.",
        "",
        f"**All repositories: recall@1 {s.get('recall_at_1')} ({s.get('top1')}/{s.get('steps')}), recall@3 "
        f"{s.get('recall_at_3')} ({s.get('top3')}/{s.get('steps')}); target recall@3 >= 0.6.** Of these steps, "
        f"{s.get('steps_a_card_names')} are named by a built-in card (the others only by a proposed card or by none, "
        f"so no order of today's cards can hit them); recall@3 on those: {s.get('recall_at_3_of_those')}. "
        f"Without the {s.get('steps', 0) - s.get('steps_not_slower', 0)} steps the authors report slower: recall@3 "
        f"{s.get('recall_at_3_not_slower')} of {s.get('steps_not_slower')}.",
        "",
    ]
    for key, title in (("repo", "repository"), ("family", "kernel family")):
        out += [
            f"## Per {title}",
            "",
            f"| {title} | steps | recall@1 | recall@3 | named by a card | recall@3 of those | matched, no fix |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name, g in doc["summary"][key].items():
            out.append(
                f"| {name} | {g['steps']} | {g['recall_at_1']} | {g['recall_at_3']} | {g['steps_a_card_names']} | "
                f"{g['recall_at_3_of_those']} | {g['matched_without_fix']} |"
            )
        out.append("")
    causes: dict[str, int] = {}
    undetected: dict[str, int] = {}
    for r in doc["steps"]:
        if r["kind"] in LEFT_OUT_KINDS or r["error"]:
            continue
        causes[r["cause"]] = causes.get(r["cause"], 0) + 1
        if r["cause"] == "not detected on version k":
            for c in r["expected_builtin"]:
                undetected[c] = undetected.get(c, 0) + 1
    out += [
        "## Why steps are missed",
        "",
        "Each step, by where the expert's card stands in version k's analysis: in the first three quick fixes, "
        "offered lower (a ranking problem), matched with no quick fix, not matched at all (a matcher or scope gap), "
        "or named by no built-in card.",
        "",
        "| cause | steps |",
        "| --- | --- |",
        *(f"| {c} | {n} |" for c, n in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))),
        "",
        "Built-in cards expected but not matched on version k, by steps: "
        + (", ".join(f"`{c}` {n}" for c, n in sorted(undetected.items(), key=lambda kv: (-kv[1], kv[0]))) or "none")
        + ".",
        "",
    ]
    out += [
        "## Per expected card",
        "",
        "How often each built-in card that names an expert step was offered as a quick fix on version k at all, in "
        "the first three, or matched without a quick fix (display-only cards, or a rewrite that does not apply).",
        "",
        "| card | steps | offered | in top 3 | matched, no fix |",
        "| --- | --- | --- | --- | --- |",
    ]
    for card, g in per_card(doc["steps"]).items():
        out.append(f"| `{card}` | {g['steps']} | {g['offered']} | {g['top3']} | {g['matched_without_fix']} |")
    counts: dict[str, int] = {}
    for r in doc["steps"]:
        if r["kind"] in LEFT_OUT_KINDS:
            continue
        for c in r["expected"]:
            if c not in r["expected_builtin"]:
                counts[c] = counts.get(c, 0) + 1
    out += [
        "",
        "## Proposed cards, by how many steps they name",
        "",
        "The expert changes no built-in card names (`proposed_cards` of the mapping), most frequent first.",
        "",
        "| proposed card | steps |",
        "| --- | --- |",
        *(f"| {c} | {n} |" for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        "",
        "## Steps",
        "",
        "| lineage | step | kind | expert's cards | editor's order (first 5) | rank |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in doc["steps"]:
        order = ", ".join(r["order"][:5]) or "(no quick fix)"
        exp = ", ".join(f"`{c}`" if c in r["expected_builtin"] else f"{c} (proposed)" for c in r["expected"]) or "none"
        rank = r["error"] or (r["rank"] if r["rank"] is not None else "-")
        out.append(f"| {r['lineage']} | {r['step']} | {r['kind']} | {exp} | {order} | {rank} |")
    if doc["unmapped_steps"]:
        out += ["", "Steps not mapped (their change was not read): " + "; ".join(doc["unmapped_steps"]) + "."]
    out += ["", "Public code at: " + ", ".join(f"{k} `{v}`" for k, v in doc["repositories"].items()) + "."]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Score every mapped step and write agreement-DATE.json and .md."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirrors", type=Path, required=True, help="folder of <owner>+<name>/repo bare git mirrors")
    ap.add_argument("--index", type=Path, default=ROOT / "lineages" / "public" / "INDEX.yaml")
    ap.add_argument("--changes", type=Path, default=ROOT / "lineages" / "public" / "expert_changes.yaml")
    ap.add_argument("--model", type=Path, default=None, help="ranking model file (default: the shipped model)")
    ap.add_argument("--loro", action="store_true", help="per repository, a model retrained without it")
    ap.add_argument("--loro-models", type=Path, help="folder of those models (bench/public_ranking.py --models)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--date", default=_dt.date.today().isoformat())
    args = ap.parse_args(argv)
    results, meta = score(args.mirrors, args.index, args.changes, args.model, args.loro, args.loro_models)
    rows = [{**asdict(r), "top1": r.top1, "top3": r.top3, "cause": r.cause} for r in results]
    doc = {
        "date": args.date,
        "command": "python bench/agreement.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "warpwise_commit": _git_head(),
        **meta,
        "summary": {
            "all": summarise(results, None).get("all", {}),
            "repo": summarise(results, "repo"),
            "family": summarise(results, "family"),
        },
        "steps": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"agreement-{args.date}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    (args.out / f"agreement-{args.date}.md").write_text(markdown(doc), encoding="utf-8")
    s = doc["summary"]["all"]
    print(f"{s.get('steps', 0)} steps: recall@1 {s.get('recall_at_1')}, recall@3 {s.get('recall_at_3')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
