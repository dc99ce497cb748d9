"""Merge the parts of bench/gpu/s6_19b.sh into one JSON, or write its Markdown report (issue 19).

`--merge RESULT_DIR` reads RESULT_DIR/parts/*/search_compare-*.json and writes RESULT_DIR/s6_19b.json.
`FILE.json` prints the Markdown report: per kernel naive/eager, best/eager, mechanism, versions, GPU-s, candidates
the gate found incorrect; geomeans; the issue's targets. Only the gate's statuses say "verified".
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

INCORRECT = ("incorrect", "wrong", "mismatch")


def merge(folder: Path) -> dict[str, Any]:
    parts = {}
    for f in sorted(folder.glob("parts/*/search_compare-*.json")):
        parts[f.parent.name] = json.loads(f.read_text())
    rows = [dict(r, part=name) for name, d in parts.items() for r in d.get("rows", [])]
    doc = {
        "meta": {name: d.get("meta") for name, d in parts.items()},
        "rows": rows,
        "not_run": [n for d in parts.values() for n in d.get("not_run", [])],
        "parts_missing": [p for p in ("sgemm", "suite", "ood") if p not in parts],
    }
    (folder / "s6_19b.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def incorrect(row: dict[str, Any]) -> int:
    return sum(v for k, v in (row.get("statuses") or {}).items() if any(w in k.lower() for w in INCORRECT))


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def report(doc: dict[str, Any]) -> str:
    lines = [
        "| kernel | status | naive/eager | best/eager | speedup | mechanism | versions | GPU-s | incorrect |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["rows"]:
        eager = r.get("eager_ms")
        ne = r["start_ms"] / eager if eager and r.get("start_ms") else None
        be = r["best_ms"] / eager if eager and r.get("best_ms") else None
        lines.append(
            f"| {r['suite']} | {r['status']} | {fmt(ne)} | {fmt(be)} | {r['speedup']:.3f}x"
            f" | {r.get('mechanism') or '-'}"
            f" | {r.get('versions')} | {fmt(r.get('gpu_seconds'), '.2f')} | {incorrect(r)} |"
        )
    rows = [r for r in doc["rows"] if r.get("part") != "sgemm"]
    sg = [r for r in doc["rows"] if r.get("part") == "sgemm"]
    gm = geomean([r["speedup"] for r in rows])
    lines += [
        "",
        f"Geomean speedup over naive (60 non-contraction kernels run: {len(rows)}): {fmt(gm)}",
        f"Candidates the gate found incorrect (target 0): {sum(incorrect(r) for r in doc['rows'])}",
        f"Not run (wall limit): {', '.join(doc.get('not_run') or []) or 'none'}; parts missing: "
        f"{', '.join(doc.get('parts_missing') or []) or 'none'}",
    ]
    for r in sg:
        ok = (r.get("versions") or 0) >= 12 and (r.get("gpu_seconds") or 1e9) <= 40
        lines.append(
            f"SGEMM: {r.get('versions')} versions in {fmt(r.get('gpu_seconds'), '.2f')} GPU-s "
            f"(target >= 12 within 40: {'met' if ok else 'not met'})"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1] == "--merge":
        merge(Path(sys.argv[2]))
    else:
        sys.stdout.write(report(json.loads(Path(sys.argv[1]).read_text())))
