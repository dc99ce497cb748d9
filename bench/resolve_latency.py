"""CPU time of resolving a fix (`skills.engine.compute_fix`, what `codeAction/resolve` runs) on the anchor file.

The model is built once, as the editor has it; then every card match with a rewrite has its fix computed, `--rounds`
times. The figure per fix is its median; the table gives the median and p90 over fixes and the sum over the file.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import anchor_path, percentile, write_result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--label", help="write bench/results/resolve_latency-LABEL-<date>.*")
    args = ap.parse_args()

    from warpwise.engine import analyze_model, parsed_model
    from warpwise.skills.engine import compute_fix

    path = anchor_path()
    model = parsed_model(path.read_bytes(), str(path))
    matches = [m for m in analyze_model(model).matches if m.has_rewrite]
    for m in matches:
        compute_fix(model, m)  # Queries compiled.
    per_fix: list[float] = []
    for m in matches:
        times = []
        for _ in range(args.rounds):
            t = time.process_time()
            compute_fix(model, m)
            times.append(time.process_time() - t)
        per_fix.append(statistics.median(times))
    ms = [s * 1000 for s in per_fix]
    result: dict[str, Any] = {
        "file": path.name,
        "fixes": len(matches),
        "rounds": args.rounds,
        "cpu_ms_per_fix_median": round(statistics.median(ms), 3),
        "cpu_ms_per_fix_p90": round(percentile(ms, 90), 3),
        "cpu_ms_all_fixes": round(sum(ms), 1),
    }
    md = "\n".join(
        [
            f"File: `{path.name}`; {len(matches)} card matches with a rewrite, each resolved {args.rounds} times; "
            "CPU time of this process.\n",
            "| CPU ms per fix (median) | p90 | all fixes of the file |",
            "| --- | --- | --- |",
            f"| {result['cpu_ms_per_fix_median']} | {result['cpu_ms_per_fix_p90']} | {result['cpu_ms_all_fixes']} |",
        ]
    )
    print(md)
    if not args.no_write:
        name = f"resolve_latency-{args.label}" if args.label else "resolve_latency"
        print(f"wrote {write_result(name, result, md)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
