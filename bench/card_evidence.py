"""Measure skill-card rewrites with the verification gate, to give cards evidence records.

For every CUDA file given (by default the bundled examples and the naive suite), every card match with a
rewrite becomes one candidate: the file with all of that card's fixes in that kernel applied (what
`warpwise verify --skill` does). Each candidate goes through the gate on this machine's GPU; the results, with
timings, spread, device and toolkit, are written to `card_evidence.json` (and a Markdown table) in `--out`.
`warpwise cards evidence add FILE` then appends the measured ones (verified or not faster) to the cards.

Run on a GPU machine: `python3 bench/card_evidence.py --out $OUT [--budget-s 150]`.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _targets(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(path.rglob("*.cu")))
        elif path.is_file():
            out.append(path)
    return out


def candidates(files: list[Path]) -> list[dict[str, Any]]:
    """Return one candidate per (file, kernel, card with a rewrite)."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills.engine import card_rewrites
    from warpwise.skills.launches import grid_factor

    out = []
    for path in files:
        data = path.read_bytes()
        model = analyze_text(data, str(path))
        for (kernel, card), (ms, new) in sorted(card_rewrites(model).items(), key=lambda kv: kv[0]):
            out.append(
                {
                    "file": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path),
                    "kernel": kernel,
                    "card": card,
                    "applicability": ms[0].applicability.value,
                    "candidate": new.decode("utf-8", "surrogateescape"),
                    "original": data.decode("utf-8", "surrogateescape"),
                    "grid_factor": grid_factor(card, ms),
                }
            )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", default=[str(ROOT / "examples"), str(ROOT / "bench" / "suite")])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--budget-s", type=float, default=150.0, help="stop starting new candidates after this long")
    ap.add_argument("--list", action="store_true", help="list the candidates and exit (no GPU needed)")
    args = ap.parse_args()

    cands = candidates(_targets(args.paths))
    if args.list:
        for c in cands:
            print(f"{c['file']}  {c['kernel']}  {c['card']} ({c['applicability']})")
        print(f"{len(cands)} candidates")
        return 0

    from warpwise.skills.launches import shrunk_problem_spec
    from warpwise.verify.backends import make_backend
    from warpwise.verify.cache import ResultCache
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options

    cache = ResultCache()
    backend = make_backend("local", cache=cache)
    gate = Gate(backend, cache)
    rows = []
    t0 = time.perf_counter()
    try:
        for c in cands:
            if time.perf_counter() - t0 > args.budget_s:
                rows.append({**_head(c), "status": "not_run", "message": "time budget spent"})
                continue
            path = str(ROOT / c["file"])
            # A rewrite that shrinks launches runs with the grid it would give a problem file's launch too.
            factor = c["grid_factor"]
            spec = shrunk_problem_spec(path, c["original"], c["kernel"], factor) if factor and factor > 1 else None
            cand = Candidate(path, c["original"], c["kernel"], c["candidate"], path, spec=spec)
            result = gate.verify(cand, Options())
            launch = f"problem file's grid / {factor}" if spec is not None else "as the file or problem file says"
            rows.append({**_head(c), "launch": launch, **_summary(result)})
            print(f"{c['file']} {c['kernel']} {c['card']}: {result.status.value} {result.message}", flush=True)
    finally:
        backend.close()
    stamp = _dt.datetime.now(_dt.UTC)
    doc = {
        "meta": {"date": stamp.isoformat(timespec="seconds"), "command": " ".join(["python3", *sys.argv])},
        "results": rows,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "card_evidence.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = [
        f"# card_evidence ({stamp.date()})\n",
        f"Command: `{doc['meta']['command']}`\n",
        "| file | kernel | card | status | speedup (low..high) | original ms | candidate ms |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        sp = r.get("speedup")
        spt = f"{sp['median']:.2f}x ({sp['low']:.2f}..{sp['high']:.2f})" if sp else ""
        lines.append(
            f"| {r['file']} | `{r['kernel']}` | `{r['card']}` | {r['status']} | {spt} | "
            f"{r.get('original_ms') or ''} | {r.get('candidate_ms') or ''} |"
        )
    (out / "card_evidence.md").write_text("\n".join(lines) + "\n")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(f"{len(rows)} candidates: {counts}")
    return 0


def _head(c: dict[str, Any]) -> dict[str, Any]:
    return {k: c[k] for k in ("file", "kernel", "card", "applicability")}


def _summary(result: Any) -> dict[str, Any]:
    d = result.to_dict()
    out: dict[str, Any] = {"status": result.status.value, "message": result.message}
    if result.device is not None:
        out["device"] = d.get("device")
    if result.speedup is not None:
        out["speedup"] = d.get("speedup")
    if result.original_timing is not None and result.candidate_timing is not None:
        out["original_ms"] = round(result.original_timing.median_ms, 5)
        out["candidate_ms"] = round(result.candidate_timing.median_ms, 5)
    if result.mismatch is not None:
        out["mismatch"] = d.get("mismatch")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
