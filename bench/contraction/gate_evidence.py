"""Append the untiled-contraction card's evidence records from the gate batch's result file (never by hand).

Reads `bench/results/contraction_gate-DATE.json` (written from `bench/contraction/gate_h200.py`'s output), takes the
rows of its gate step that the gate measured (`verified` or `not_faster`, at each problem's own size, with the
card's default tiles) of the kernels in this repository (public kernels are never committed, and a record's file
must be readable for the ranking's features) and appends one record per kernel to
`skills/untiled-contraction/card.md` with `warpwise.skills.evidence.add_records`. Usage:

    .venv/bin/python bench/contraction/gate_evidence.py bench/results/contraction_gate-2026-12-01.json
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import sys
from pathlib import Path

from warpwise.skills.evidence import MEASURED, add_records
from warpwise.skills.model import EvidenceRecord

ROOT = Path(__file__).resolve().parents[2]
CARD = ROOT / "skills" / "untiled-contraction" / "card.md"


def main(path: str) -> None:
    doc = json.loads(Path(path).read_text())
    date = _dt.date.fromisoformat(doc["date"])
    records = []
    for row in doc["gate"]:
        if row.get("status") not in MEASURED or not row.get("speedup") or not row.get("device"):
            continue
        if str(row.get("origin", "")).startswith("public"):
            continue  # Public kernels are never committed, so the ranking could not read the record's file.
        m = re.match(r"(.+?) \(sm_\d+, driver \d+, (.+)\)$", row["device"])
        gpu, toolkit = (m.group(1), m.group(2)) if m else (row["device"], "unknown")
        sp = row["speedup"]
        records.append(
            EvidenceRecord(
                kernel=row["kernel"],
                operator="hgemm" if row.get("operands", "float") != "float" else "sgemm",
                gpu=gpu,
                toolkit=toolkit,
                baseline_ms=round(row["original_ms"]["median"], 5),
                candidate_ms=round(row["candidate_ms"]["median"], 5),
                speedup=round(sp["median"], 4),
                spread=round((sp["high"] - sp["low"]) / sp["median"], 4),
                date=_dt.date(date.year, date.month, date.day),  # one object per record: no YAML anchors
                source=f"verification {Path(path).as_posix()} (gate, tiles {row['tiles']})",
                context={
                    "file": row["file"].removeprefix("src/"),
                    "status": row["status"],
                    "origin": row["origin"],
                    "layout": row.get("layout"),
                    "speedup_low": round(sp["low"], 4),
                    "speedup_high": round(sp["high"], 4),
                    "noise": round(row.get("noise", 0.0), 4),
                },
            )
        )
    n = add_records(CARD, records)
    print(f"{len(records)} records from {path}; the card has {n}")


if __name__ == "__main__":
    main(sys.argv[1])
