"""Evidence from lineages: each measured forward step becomes a record on the card it maps to.

Only a lineage built on a GPU (`mode: gpu`) gives evidence. A forward step the gate verified is a record with
`context.role: forward step`; a rejected deoptimization whose simpler kernel was correct but not slower (it did
not matter there) is a record with `context.status: not_faster` and `context.role: rejected deoptimization`,
so the card shows where its optimization did not pay. Incorrect or failed attempts have no timings: they stay
in the lineage's risk evidence. Steps that no card explains are not card evidence; they feed the proposed cards
(`warpwise.lineages.store.write_proposed_cards`).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from warpwise.skills.model import EvidenceRecord

LINEAGE_SOURCE = "lineage"


def _record(lineage: dict[str, Any], item: dict[str, Any], source: str, role: str) -> EvidenceRecord | None:
    """Return the evidence record of one measured step or attempt, or None when it has no timings."""
    before, after, sp, dev = (
        item.get("before_timing"),
        item.get("after_timing"),
        item.get("speedup"),
        item.get("device"),
    )
    if not (before and after and sp and dev) or before["median_ms"] <= 0 or after["median_ms"] <= 0:
        return None
    date = _dt.date.fromisoformat(str(lineage["date"])[:10])
    at = int(item["to"] if "to" in item else item["at_kernel"])
    return EvidenceRecord(
        kernel=lineage["kernel"],
        operator=lineage["operator"],
        gpu=dev.get("gpu") or "unknown GPU",
        toolkit=str(dev.get("toolkit") or "unknown"),
        baseline_ms=round(before["median_ms"], 5),
        candidate_ms=round(after["median_ms"], 5),
        speedup=round(sp["median"], 4),
        spread=round((sp["high"] - sp["low"]) / sp["median"], 4) if sp.get("median") else None,
        date=date,
        source=f"{source} K{at} {item['key']}",
        context={
            "file": lineage["expert"],
            "status": item["status"],
            "role": role,
            "pass": item["key"],
            "step": f"K{at - 1} -> K{at}" if role == "forward step" else f"removing it from K{at}",
            "speedup_low": round(sp["low"], 4),
            "speedup_high": round(sp["high"], 4),
            "noise": round(sp.get("noise", 0.0), 4),
        },
    )


def lineage_records(lineage: dict[str, Any], source: str) -> dict[str, list[EvidenceRecord]]:
    """Return the evidence records of a GPU lineage, per card (`source` names the lineage file)."""
    if lineage.get("mode") != "gpu":
        return {}
    out: dict[str, list[EvidenceRecord]] = {}
    for step in lineage.get("steps", []):
        if step.get("card") and step.get("status") == "verified":
            rec = _record(lineage, step, source, "forward step")
            if rec is not None:
                out.setdefault(step["card"], []).append(rec)
    for att in lineage.get("rejected", []):
        if att.get("card") and att.get("status") == "not_faster":
            rec = _record(lineage, att, source, "rejected deoptimization")
            if rec is not None:
                out.setdefault(att["card"], []).append(rec)
    return out


def is_mined(record: EvidenceRecord | dict[str, Any]) -> bool:
    """Return whether a card's record is a verified forward step of a lineage (what admission compares with)."""
    d = record if isinstance(record, dict) else record.model_dump(mode="python")
    ctx = d.get("context") or {}
    return str(d.get("source", "")).startswith(LINEAGE_SOURCE) and ctx.get("role") == "forward step"
