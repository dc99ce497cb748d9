"""Evidence records on cards: appended from the gate's measurements, never typed by hand.

`add_records` rewrites only the `evidence:` block of a card's YAML header (the rest of the file stays
byte-for-byte), replacing an earlier record of the same kernel, GPU and toolkit from the same source. `from_results`
turns the rows of `bench/card_evidence.py` (or any list of gate results with the same fields) into records:
only measured outcomes (`verified`, `not_faster`) carry timings and become evidence.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any

import yaml

from warpwise.skills.library import split_front_matter
from warpwise.skills.model import EvidenceRecord

MEASURED = ("verified", "not_faster")


def from_results(rows: list[dict[str, Any]], source: str, date: _dt.date) -> dict[str, list[EvidenceRecord]]:
    """Return evidence records per card from gate result rows (rows without timings are skipped)."""
    out: dict[str, list[EvidenceRecord]] = {}
    for row in rows:
        if row.get("status") not in MEASURED or not row.get("speedup") or not row.get("device"):
            continue
        sp = row["speedup"]
        dev = row["device"]
        parts = Path(row["file"]).parts
        operator = parts[parts.index("suite") + 1] if "suite" in parts else None
        spread = (sp["high"] - sp["low"]) / sp["median"] if sp.get("median") else None
        out.setdefault(row["card"], []).append(
            EvidenceRecord(
                kernel=row["kernel"],
                operator=operator,
                gpu=dev.get("name") or dev.get("gpu") or "unknown GPU",
                toolkit=str(dev.get("toolkit") or dev.get("nvrtc") or "unknown"),
                baseline_ms=row["original_ms"],
                candidate_ms=row["candidate_ms"],
                speedup=round(sp["median"], 4),
                spread=round(spread, 4) if spread is not None else None,
                date=date,
                source=source,
                context={
                    "file": row["file"],
                    "status": row["status"],
                    "speedup_low": round(sp["low"], 4),
                    "speedup_high": round(sp["high"], 4),
                    "noise": round(sp.get("noise", 0.0), 4),
                    "applicability": row.get("applicability"),
                },
            )
        )
    return out


def _record_dict(rec: EvidenceRecord) -> dict[str, Any]:
    d = rec.model_dump(mode="python", exclude_none=True)
    if not d.get("context"):
        d.pop("context", None)
    return d


def add_records(card_path: Path, records: list[EvidenceRecord], replace_prefix: str | None = None) -> int:
    """Append records to a card file's `evidence:` list; return how many records the card now has.

    `replace_prefix` first drops the records whose `source` starts with it (the records of an earlier build of the
    same lineage, whose step numbers may differ), so a rebuilt lineage replaces its records instead of adding to
    them.
    """
    text = card_path.read_text(encoding="utf-8")
    parts = split_front_matter(text)
    if parts is None:
        raise ValueError(f"{card_path}: no YAML front matter")
    header, body = parts
    existing = (yaml.safe_load(header) or {}).get("evidence") or []
    if replace_prefix is not None:
        existing = [d for d in existing if not str(d.get("source", "")).startswith(replace_prefix)]
    key = lambda d: (d.get("kernel"), d.get("gpu"), d.get("toolkit"), d.get("source"))  # noqa: E731
    merged = {key(d): d for d in existing}
    for rec in records:
        d = _record_dict(rec)
        merged[key(d)] = d
    block = "evidence:\n" + yaml.safe_dump(list(merged.values()), default_flow_style=False, sort_keys=False)
    block = "\n".join(("  " + line) if line and i > 0 else line for i, line in enumerate(block.splitlines()))
    lines = header.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"^evidence\s*:", line)), None)
    if start is None:
        new_header = header.rstrip("\n") + "\n" + block
    else:
        end = start + 1
        while end < len(lines) and (not lines[end] or lines[end][0] in " \t-#"):
            end += 1
        new_header = "\n".join([*lines[:start], block, *lines[end:]])
    card_path.write_text(f"---\n{new_header}\n---\n{body}", encoding="utf-8")
    return len(merged)
