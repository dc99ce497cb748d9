"""Bring the files of a GPU batch run (`bench/gpu/lineage_batch.sh`) into the tree.

The batch writes, in one folder: `lineages.json` (every lineage it built, with its chart), `admission.json` (the
held-out roundtrips it measured) and `quality.json` (the quality report). `ingest` then, on any machine:

1. writes each lineage to `lineages/results/<operator>/` (JSON, Markdown, chart) and a summary table
   (`lineages/results/README.md`), and adds the evidence records of the GPU lineages to the cards;
2. writes the cards that unexplained steps propose (`lineages/proposed/<id>/SKILL.md`);
3. decides admission again from the cards' mined evidence (now including these lineages) and the measured
   roundtrips, writes `bench/results/admission-<date>.{json,md}`, adds the roundtrips as evidence and sets the
   status of admitted cards;
4. writes `bench/results/quality-<date>.{json,md,svg}`.

Nothing is measured here; every number comes from the batch's files. `dry_run` reports what would change.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warpwise.lineages.lineage import kernel_times
from warpwise.lineages.store import PROPOSED, RESULTS, read_lineages, write_lineage, write_proposed_cards

Log = Callable[[str], None]
BENCH_RESULTS = Path("bench") / "results"


class IngestError(ValueError):
    """The batch folder cannot be ingested (missing or unreadable files)."""


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise IngestError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise IngestError(f"{path} does not hold a JSON object")
    return doc


def summary_markdown(lineages: list[tuple[Path, dict[str, Any]]]) -> str:
    """Return the table of every lineage: steps, K0 and expert times, the cards its steps map to."""
    out = [
        "# Lineages of the expert corpus",
        "",
        "Each expert kernel of `lineages/corpus/` walked backwards by `warpwise lineage build` (see "
        "docs/lineages.md). K0 is the simplest kernel the deoptimizers reach; every step was verified by the gate.",
        "",
        "| operator | mode | steps | rejected | K0 ms | expert ms | K0 -> expert | cards of the steps | GPU-s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for path, lin in lineages:
        times = kernel_times(lin)
        first, last = (times[0], times[-1]) if times else (None, None)
        ratio = f"{first['median_ms'] / last['median_ms']:.2f}x" if first and last else ""
        cards = ", ".join(
            f"`{s['card']}`" if s.get("card") else f"({(s.get('proposed') or {}).get('skill_id', 'unexplained')})"
            for s in lin.get("steps", [])
        )
        t0 = f"{first['median_ms']:.4g}" if first else ""
        tn = f"{last['median_ms']:.4g}" if last else ""
        out.append(
            f"| [{lin['operator']}]({path.parent.name}/lineage.md) | {lin['mode']} | {len(lin['steps'])} | "
            f"{len(lin['rejected'])} | {t0} | {tn} | {ratio} | {cards} | {lin['gpu_seconds']:.1f} |"
        )
    out.append("")
    return "\n".join(out)


def ingest(
    folder: Path,
    dry_run: bool = False,
    date: str | None = None,
    log: Log | None = None,
    root: Path = Path(),
    cards: Path | None = None,
) -> list[str]:
    """Ingest a batch folder; return one line per change (made, or that would be made with `dry_run`).

    Results are written below `root` (the repository); evidence and statuses go to the built-in cards, or to the
    cards in `cards` when given (tests use a copy).
    """
    from warpwise.lineages.admission import (
        admission_markdown,
        apply_admission,
        decisions,
        documented_reasons,
        mined_evidence,
    )
    from warpwise.lineages.evidence import lineage_records
    from warpwise.lineages.quality import quality_chart, quality_markdown
    from warpwise.skills.evidence import add_records
    from warpwise.skills.library import load_library

    log = log or (lambda _m: None)

    def library() -> Any:
        return load_library([cards], include_builtin=False) if cards is not None else load_library()

    results, bench_results, proposed = root / RESULTS, root / BENCH_RESULTS, root / PROPOSED
    if not folder.is_dir():
        raise IngestError(f"{folder}: no such folder")
    pack = _read(folder / "lineages.json")
    admission = _read(folder / "admission.json")
    quality = _read(folder / "quality.json")
    if pack is None and admission is None and quality is None:
        raise IngestError(f"{folder} holds none of lineages.json, admission.json, quality.json")
    stamp = date or next(
        (str(d["meta"]["date"])[:10] for d in (admission, quality) if d and d.get("meta", {}).get("date")),
        _dt.date.today().isoformat(),
    )
    changes: list[str] = []

    for op, lin in sorted(((pack or {}).get("lineages") or {}).items()):
        out = results / op
        chart = ((pack or {}).get("charts") or {}).get(op)
        changes.append(f"{out}/lineage.json: {lin['mode']} lineage, {len(lin['steps'])} steps")
        if dry_run:
            continue
        write_lineage(lin, out, chart)
        lib = library()
        source = f"lineage {RESULTS / op / 'lineage.json'}"
        records = lineage_records(lin, source)
        for card_id in sorted(set(records) - {c.skill_id for c in lib}):
            log(f"warning: no card {card_id!r}; {len(records[card_id])} record(s) skipped")
        # A rebuilt lineage replaces the records of its earlier build (their step numbers may differ).
        prefix = f"{source} "
        for card in sorted(lib, key=lambda c: c.skill_id):
            recs = records.get(card.skill_id, [])
            if not recs and not any(str(e.source).startswith(prefix) for e in card.header.evidence):
                continue
            total = add_records(Path(card.path), recs, replace_prefix=prefix)
            changes.append(
                f"{card.skill_id}: +{len(recs)} lineage record(s) from {op}, {total} in all"
                if recs
                else f"{card.skill_id}: records of the earlier build of {op} dropped, {total} left"
            )
    if pack and not dry_run:
        lineages = read_lineages(results)
        (results / "README.md").write_text(summary_markdown(lineages), encoding="utf-8")
        changes += [f"{p}: proposed card" for p in write_proposed_cards(lineages, proposed)]

    if admission is not None:
        lib = library()
        if dry_run:
            lins = list(((pack or {}).get("lineages") or {}).values())
        else:
            lins = [lin for _, lin in read_lineages(results)]
        mined = mined_evidence(lib, lins)
        # The reasons the batch ran with, updated by the committed ones (lineages/admission_reasons.yaml): the
        # file in the tree is the reviewed text, and it may have been revised since the batch's package was built.
        batch_reasons = admission.get("batch_reasons", admission.get("reasons")) or {}
        reasons = {**batch_reasons, **documented_reasons()}
        decided = decisions(mined, admission.get("roundtrips", []), reasons)
        doc = {
            **admission,
            "mined": mined,
            "batch_reasons": batch_reasons,
            "reasons": reasons,
            "reasons_source": "lineages/admission_reasons.yaml as of ingestion (it replaces the batch's text "
            "for the cards it lists; the batch's own reasons are kept in batch_reasons)",
            "decisions": decided,
        }
        target = bench_results / f"admission-{stamp}.json"
        for d in doc["decisions"]:
            changes.append(f"admission: {d['card']}: {'admitted' if d['admitted'] else 'stays preview'}: {d['why']}")
        if not dry_run:
            bench_results.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
            target.with_suffix(".md").write_text(admission_markdown(doc), encoding="utf-8")
            changes += apply_admission(doc, f"admission {BENCH_RESULTS / target.name}", lib, log)

    if quality is not None:
        target = bench_results / f"quality-{stamp}.json"
        changes.append(f"{target}: {len(quality.get('rows', []))} kernels")
        if not dry_run:
            chart = quality.pop("chart_svg", None) or quality_chart(quality)
            bench_results.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(quality, indent=1) + "\n", encoding="utf-8")
            svg = target.with_suffix(".svg")
            if chart:
                svg.write_text(chart, encoding="utf-8")
            md = quality_markdown(quality, svg.name if chart else None)
            target.with_suffix(".md").write_text(md, encoding="utf-8")
    return changes
