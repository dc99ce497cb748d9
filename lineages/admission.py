"""Admission: a card is `admitted` only after a measured roundtrip on a kernel it was not mined from.

For every card with mined evidence (verified forward steps of lineages), `run_roundtrips` rewrites each naive
suite kernel where the card's matcher finds a region and its rewrite applies, and the gate verifies the
rewrite against the naive kernel. `decide` then admits the card when a held-out roundtrip was verified (correct,
faster by more than the spread) with a speedup inside the spread of the mined evidence - from the lowest mined
`speedup_low` to the highest `speedup_high` - or, outside it with the same sign, when a documented reason is
given. Anything else leaves the card `preview` and says why. A card is never admitted without a measured result.

The roundtrip results are plain dictionaries, so the GPU batch can record them and `warpwise lineage ingest`
can decide and write statuses later from the same files with the same function.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warpwise.lineages.evidence import is_mined, lineage_records
from warpwise.lineages.lineage import Budget, display_path, summarize
from warpwise.lineages.suite import CardCandidate, card_candidates, suite_kernels
from warpwise.verify.gate import Candidate, Gate
from warpwise.verify.launch import problem_source
from warpwise.verify.types import Options, VerificationResult

Log = Callable[[str], None]


def mined_evidence(cards: Any, lineages: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Return the mined records per card: those on the cards plus those of the given lineages (deduplicated)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for card in cards:
        for rec in card.header.evidence:
            d = rec.model_dump(mode="json")
            if is_mined(d):
                out.setdefault(card.skill_id, {})[d["source"]] = d
    for lin in lineages:
        source = f"lineage lineages/results/{lin['operator']}/lineage.json"
        for card_id, recs in lineage_records(lin, source).items():
            for rec in recs:
                d = rec.model_dump(mode="json")
                if is_mined(d):
                    out.setdefault(card_id, {})[d["source"]] = d
    return {k: list(v.values()) for k, v in out.items()}


def mined_kernels(records: list[dict[str, Any]]) -> set[str]:
    """Return the files the mined records came from."""
    return {str((r.get("context") or {}).get("file")) for r in records}


def verify_candidate(gate: Gate, cand: CardCandidate, options: Options) -> VerificationResult:
    """Verify a card candidate against its naive kernel (the problem's launch adapted when the card needs it)."""
    expert = cand.kernel.expert
    spec = expert.spec
    if cand.launch:
        import dataclasses

        run = dataclasses.replace(spec.run, problem_source=problem_source(expert.problem_text, (), cand.launch))
        spec = dataclasses.replace(spec, run=run)
    path = str(expert.path)
    return gate.verify(Candidate(path, cand.original, expert.kernel, cand.candidate, path, spec=spec), options)


def run_roundtrips(
    gate: Gate,
    suite: Path,
    mined: dict[str, list[dict[str, Any]]],
    options: Options,
    budget: Budget | None = None,
    log: Log | None = None,
    reasons: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Return the measured roundtrips of the cards with mined evidence on the held-out suite kernels.

    The roundtrips run in rounds - each card's first held-out kernel, then each card's second, ... - and a card
    stops being tried once it is admitted, so the GPU time goes to the cards still undecided.
    """
    budget = budget or Budget()
    log = log or (lambda _m: None)
    per_card: dict[str, list[CardCandidate]] = {}
    for kernel in suite_kernels(suite):
        for cand in card_candidates(kernel, cards=set(mined)):
            if display_path(kernel.path) not in mined_kernels(mined[cand.card]):
                per_card.setdefault(cand.card, []).append(cand)
    rows: list[dict[str, Any]] = []
    admitted: set[str] = set()
    for r in range(max((len(v) for v in per_card.values()), default=0)):
        for card, cands in sorted(per_card.items()):
            if r >= len(cands) or card in admitted:
                continue
            cand = cands[r]
            kernel = cand.kernel
            row: dict[str, Any] = {
                "card": card,
                "operator": kernel.name,
                "file": display_path(kernel.path),
                "kernel": kernel.kernel,
                "applicability": cand.applicability,
                "launch_text": "; ".join(c.text for c in cand.launch),
                "held_out": True,
            }
            if budget.spent:
                rows.append({**row, "status": "not_run", "message": "the time budget was spent"})
                continue
            t0 = time.monotonic()
            result = verify_candidate(gate, cand, options)
            rows.append({**row, **summarize(result), "wall_s": round(time.monotonic() - t0, 3)})
            log(f"admission: {card} on {kernel.name}: {result.status.value} {result.message}")
            if decide(card, mined[card], rows, (reasons or {}).get(card))["admitted"]:
                admitted.add(card)
    return rows


def mined_interval(records: list[dict[str, Any]]) -> tuple[float, float] | None:
    """Return (lowest speedup_low, highest speedup_high) over mined records."""
    lows, highs = [], []
    for r in records:
        ctx = r.get("context") or {}
        lows.append(float(ctx.get("speedup_low", r["speedup"])))
        highs.append(float(ctx.get("speedup_high", r["speedup"])))
    return (min(lows), max(highs)) if lows else None


REASONS_FILE = Path(__file__).parent / "admission_reasons.yaml"


def documented_reasons(path: Path | None = None) -> dict[str, str]:
    """Return the committed reasons for admitting cards whose held-out effect lies outside the mined spread.

    The file maps a card id to one paragraph: why the effect's size differs between the kernel it was mined from
    and the held-out kernels. A reason never admits a card by itself: a verified held-out roundtrip with the same
    sign is still required.
    """
    import yaml

    path = REASONS_FILE if path is None else path
    if not path.is_file():
        return {}
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(doc, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
        raise ValueError(f"{path}: expected a mapping of card id to reason text")
    return {k: " ".join(v.split()) for k, v in doc.items()}


def decide(
    card: str, mined: list[dict[str, Any]], roundtrips: list[dict[str, Any]], reason: str | None = None
) -> dict[str, Any]:
    """Return the admission decision for one card from its mined records and its roundtrips."""
    interval = mined_interval(mined)
    mine = [r for r in roundtrips if r["card"] == card and r.get("held_out", True)]
    base: dict[str, Any] = {
        "card": card,
        "mined": len(mined),
        "mined_interval": list(interval) if interval else None,
        "roundtrips": len(mine),
        "admitted": False,
    }
    if not mined or interval is None:
        return {**base, "why": "no mined evidence (no verified lineage step maps to this card)"}
    if not mine:
        return {
            **base,
            "why": "no held-out naive kernel where the card's matcher finds a region and its rewrite applies",
        }
    # A roundtrip slower beyond its spread is a measured loss where the card fires: no admission while it stands.
    losses = [r for r in mine if r.get("speedup") and _slower(r["speedup"])]
    if losses:
        s = ", ".join(f"{r['operator']} {r['speedup']['median']:.2f}x" for r in losses)
        return {**base, "why": f"slower beyond the measured spread on held-out kernels where the card fires ({s})"}
    verified = [r for r in mine if r.get("status") == "verified" and r.get("speedup")]
    sign = 1.0 if interval[0] > 1.0 else -1.0 if interval[1] < 1.0 else 0.0
    verified = [r for r in verified if sign == 0.0 or (r["speedup"]["median"] - 1.0) * sign > 0]
    inside = [r for r in verified if interval[0] <= r["speedup"]["median"] <= interval[1]]
    if inside:
        best = inside[0]
        return {
            **base,
            "admitted": True,
            "by": f"{best['operator']} ({best['kernel']})",
            "why": f"verified {best['speedup']['median']:.2f}x on held-out `{best['kernel']}`, inside the mined "
            f"spread {interval[0]:.2f}x..{interval[1]:.2f}x",
        }
    if verified and reason:
        best = verified[0]
        return {
            **base,
            "admitted": True,
            "by": f"{best['operator']} ({best['kernel']})",
            "why": f"verified {best['speedup']['median']:.2f}x on held-out `{best['kernel']}` (same sign), outside the "
            f"mined spread {interval[0]:.2f}x..{interval[1]:.2f}x; documented reason: {reason}",
        }
    if verified:
        s = ", ".join(f"{r['operator']} {r['speedup']['median']:.2f}x" for r in verified)
        return {
            **base,
            "why": f"same sign but outside the mined spread {interval[0]:.2f}x..{interval[1]:.2f}x ({s}); "
            "admit it with a documented reason (--reason CARD=TEXT) if that is expected",
        }
    outcomes = ", ".join(f"{r['operator']}: {r.get('status')}" for r in mine)
    return {**base, "why": f"no held-out roundtrip was verified ({outcomes})"}


def _slower(sp: dict[str, Any]) -> bool:
    """Return whether a measured speedup is a loss beyond its spread and the A/A noise."""
    high = float(sp["high"] if sp.get("high") is not None else sp["median"])
    return high * (1.0 + float(sp.get("noise") or 0.0)) < 1.0


def decisions(
    mined: dict[str, list[dict[str, Any]]], roundtrips: list[dict[str, Any]], reasons: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Return the decision for every card with mined evidence."""
    reasons = reasons or {}
    return [decide(card, recs, roundtrips, reasons.get(card)) for card, recs in sorted(mined.items())]


def admission_records(roundtrips: list[dict[str, Any]], source: str, date: Any) -> dict[str, list[Any]]:
    """Return the measured roundtrips as evidence records per card (role `held-out roundtrip`)."""
    from warpwise.skills.model import EvidenceRecord

    out: dict[str, list[Any]] = {}
    for r in roundtrips:
        if r.get("status") not in ("verified", "not_faster"):
            continue
        before, after, sp, dev = r.get("before_timing"), r.get("after_timing"), r.get("speedup"), r.get("device")
        if not (before and after and sp and dev):
            continue
        out.setdefault(r["card"], []).append(
            EvidenceRecord(
                kernel=r["kernel"],
                operator=r["operator"],
                gpu=dev.get("gpu") or "unknown GPU",
                toolkit=str(dev.get("toolkit") or "unknown"),
                baseline_ms=round(before["median_ms"], 5),
                candidate_ms=round(after["median_ms"], 5),
                speedup=round(sp["median"], 4),
                spread=round((sp["high"] - sp["low"]) / sp["median"], 4),
                date=date,
                source=source,
                context={
                    "file": r["file"],
                    "status": r["status"],
                    "role": "held-out roundtrip",
                    "speedup_low": round(sp["low"], 4),
                    "speedup_high": round(sp["high"], 4),
                    "noise": round(sp.get("noise", 0.0), 4),
                    "applicability": r.get("applicability"),
                    "launch": r.get("launch_text") or None,
                },
            )
        )
    return out


def admission_markdown(doc: dict[str, Any]) -> str:
    """Return the admission results as Markdown."""
    meta = doc.get("meta", {})
    out = [
        f"# Card admission ({str(meta.get('date', ''))[:10]})",
        "",
        f"Command: `{meta.get('command', '')}`. Device: {meta.get('device') or 'none (not measured)'}.",
        "",
        "A card is admitted after a held-out roundtrip: the card's matcher finds a region in a naive suite kernel it "
        "was not mined from, the rewrite applies, the gate verifies it, and the speedup lies inside the spread of the "
        "card's mined lineage evidence (or a documented reason is given).",
        "",
        "## Decisions",
        "",
        "| card | mined records | mined spread | roundtrips | admitted | why |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for d in doc.get("decisions", []):
        iv = d.get("mined_interval")
        ivt = f"{iv[0]:.2f}x..{iv[1]:.2f}x" if iv else ""
        out.append(
            f"| `{d['card']}` | {d.get('mined', 0)} | {ivt} | {d.get('roundtrips', 0)} | "
            f"{'yes' if d['admitted'] else 'no'} | "
            f"{d['why']} |"
        )
    out += [
        "",
        "## Roundtrips",
        "",
        "| card | kernel | status | speedup (low..high) | naive ms | rewritten ms | launch |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in doc.get("roundtrips", []):
        sp = r.get("speedup")
        spt = f"{sp['median']:.2f}x ({sp['low']:.2f}..{sp['high']:.2f})" if sp else ""
        b, a = r.get("before_timing"), r.get("after_timing")
        bt = f"{b['median_ms']:.4g}" if b else ""
        at = f"{a['median_ms']:.4g}" if a else ""
        out.append(
            f"| `{r['card']}` | {r['operator']} (`{r['kernel']}`) | {r.get('status')} | {spt} | {bt} | {at} | "
            f"{r.get('launch_text') or ''} |"
        )
    out.append("")
    return "\n".join(out)


def apply_admission(doc: dict[str, Any], source: str, library: Any, log: Log | None = None) -> list[str]:
    """Write the admission's evidence records and the statuses of admitted cards; return what changed."""
    import datetime as _dt

    from warpwise.lineages.suite import set_card_status
    from warpwise.skills.evidence import add_records

    log = log or (lambda _m: None)
    changes = []
    date = _dt.date.fromisoformat(str(doc.get("meta", {}).get("date", _dt.date.today().isoformat()))[:10])
    for card_id, recs in sorted(admission_records(doc.get("roundtrips", []), source, date).items()):
        card = library.get(card_id)
        if card is None:
            log(f"warning: no card {card_id!r}; {len(recs)} admission record(s) skipped")
            continue
        total = add_records(Path(card.path), recs)
        changes.append(f"{card_id}: +{len(recs)} held-out roundtrip record(s), {total} in all")
    for d in doc.get("decisions", []):
        card = library.get(d["card"])
        if card is None or not d.get("admitted"):
            continue
        if set_card_status(Path(card.path), "admitted"):
            changes.append(f"{d['card']}: status admitted ({d['why']})")
    return changes
