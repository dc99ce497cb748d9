"""Verify the row-cooperative-reduction candidates of `bench/row_coop/prep.py` through the verification gate.

For each manifest entry (optionally only some mappings), the gate builds the suite's naive kernel and the
candidate, runs both on three seeded inputs of the problem file (the candidate with the card's launch change),
compares the outputs within the problem's tolerance and times both with the L2 flushed. Writes one JSON line per
candidate: status (verified, incorrect, slower, ...), the speedup over the naive kernel and its spread, both
medians, the mismatch if any, and the mechanism. Stops starting new jobs after `--budget-s` seconds.

Usage (GPU machine, warpwise importable): python3 bench/row_coop/gate_check.py PREP_DIR OUT_JSONL [--mappings a,b]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> int:
    """Run the gate on every selected candidate and write the results."""
    ap = argparse.ArgumentParser()
    ap.add_argument("prep")
    ap.add_argument("out")
    ap.add_argument("--mappings", default="")
    ap.add_argument("--budget-s", type=float, default=150.0)
    args = ap.parse_args()
    from warpwise.skills.launches import changed_problem_spec
    from warpwise.verify import project
    from warpwise.verify.backends import make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.launch import LaunchChange
    from warpwise.verify.types import Options

    prep = Path(args.prep)
    manifest = json.loads((prep / "manifest.json").read_text())
    wanted = set(filter(None, args.mappings.split(",")))
    backend = make_backend("local", cache=None)
    gate = Gate(backend, None)
    t0 = time.time()
    with open(args.out, "w") as fh:
        for e in manifest["entries"]:
            if wanted and e["mapping"] not in wanted:
                continue
            if time.time() - t0 > args.budget_s:
                fh.write(json.dumps({**e, "status": "not_run", "why": "budget"}) + "\n")
                continue
            original = Path(e["original"]).read_text()
            cand = (prep / e["candidate"]).read_text()
            changes = tuple(LaunchChange.from_dict(c) for c in e["launch"])
            spec = changed_problem_spec(e["original"], original, e["kernel"], changes) if changes else None
            t1 = time.time()
            try:
                r = gate.verify(
                    Candidate(
                        e["original"],
                        original,
                        e["kernel"],
                        cand,
                        e["original"],
                        None,
                        spec=spec,
                        flags=project.flags_for(e["original"]),
                    ),
                    Options(seeds=(0, 1, 2), time_limit_s=60.0),
                )
                d = r.to_dict()
                row = {
                    **e,
                    "status": r.status.value,
                    "message": (r.message or "").splitlines()[0] if r.message else "",
                    "speedup": d.get("speedup"),
                    "original_ms": r.original_timing.median_ms if r.original_timing else None,
                    "candidate_ms": r.candidate_timing.median_ms if r.candidate_timing else None,
                    "mismatch": d.get("mismatch"),
                    "device": r.device.label if r.device else None,
                    "wall_s": round(time.time() - t1, 2),
                }
            except Exception as exc:  # A failing job is a result of this benchmark, never the end of it.
                row = {**e, "status": "error", "message": f"{type(exc).__name__}: {exc}"}
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            print(row["kernel"], row["mapping"], row["status"], row.get("speedup"), flush=True)
    backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
