"""Quality of warpwise on the naive suite (issue 7), on a GPU: speedup over naive, against torch eager and the roofline.

For every kernel of `bench/suite/<name>/naive.cu` a strategy (by default `greedy-cards`: apply the verified
rewrites warpwise proposes, in the order it proposes them, re-matching after each accepted step) finds the best
verified version; the gate then measures naive against final directly, torch eager is timed on the same
inputs, and the roofline time comes from the problem's bytes and FLOPs at the measured peaks (the newest
`bench/results/corpus_check-*.json`, or `--peaks FILE`). The search (`warpwise.search`) adds its strategies
through `warpwise.lineages.quality.register_strategy`, or `--strategy module:function`.

    python3 bench/quality.py --out "$OUT"                         # every suite kernel, greedy-cards
    python3 bench/quality.py --only sum,softmax --budget-s 60     # a few
    python3 bench/quality.py --list                               # the suite and the first proposals (no GPU)
    python3 bench/quality.py --suite bench/suite_ood --only softmax   # the second suite (issue 19), one operator

Writes `quality.json` (every attempt, the chain, timings; the chart as SVG when matplotlib is there) and
`quality.md` in `--out`. `warpwise lineage ingest` files them under bench/results with the date.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=str(ROOT / "bench" / "suite"))
    ap.add_argument("--only", help="comma-separated suite kernels (default: all)")
    ap.add_argument("--strategy", default="greedy-cards", help="a registered strategy, or module:function")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--budget-s", type=float, default=120.0, help="start no verification after this long in all")
    ap.add_argument("--per-kernel-s", type=float, default=20.0, help="start no verification after this long per kernel")
    ap.add_argument("--peaks", help="a corpus_check JSON whose measured peaks to use")
    ap.add_argument("--no-eager", action="store_true", help="do not time torch eager")
    ap.add_argument("--backend", default="local", choices=("local", "cluster"))
    ap.add_argument("--scheduler", help="Dask scheduler address for --backend cluster")
    ap.add_argument("--list", action="store_true", help="list the suite kernels and their first proposals, then exit")
    args = ap.parse_args(argv)

    from warpwise.lineages.lineage import Budget
    from warpwise.lineages.quality import (
        QualityContext,
        load_peaks,
        quality_chart,
        quality_markdown,
        run_kernel,
        strategy,
    )
    from warpwise.lineages.suite import card_candidates, suite_kernels
    from warpwise.ranking import rank_candidates

    only = set(args.only.split(",")) if args.only else None
    kernels = suite_kernels(Path(args.suite), only)
    if args.list:
        for k in kernels:
            print(f"{k.name:16} {k.kernel:24} {', '.join(c.card for c in card_candidates(k))}")
        return 0
    try:
        strat = strategy(args.strategy)
    except ValueError as exc:
        print(f"quality: error: {exc}", file=sys.stderr)
        return 2
    peaks = load_peaks(Path(args.peaks) if args.peaks else None)

    from warpwise.verify.backends import make_backend
    from warpwise.verify.cache import ResultCache
    from warpwise.verify.gate import Gate
    from warpwise.verify.types import Options

    cache = ResultCache()
    backend = make_backend(args.backend, scheduler=args.scheduler, cache=cache)
    gate = Gate(backend, cache)
    overall = Budget(args.budget_s)
    rows = []
    t0 = time.monotonic()
    try:
        for k in kernels:
            left = overall.left
            if left is not None and left <= 0:
                rows.append(
                    {
                        "operator": k.name,
                        "kernel": k.kernel,
                        "file": str(k.path),
                        "strategy": strat.name,
                        "chain": [],
                        "notes": ["not run: the time budget was spent"],
                        "gpu_s": 0.0,
                    }
                )
                continue
            budget = Budget(min(args.per_kernel_s, left) if left is not None else args.per_kernel_s)
            ctx = QualityContext(
                gate, Options(), budget, lambda m: print(m, file=sys.stderr, flush=True), order=rank_candidates
            )
            row = run_kernel(k, strat, ctx, peaks, not args.no_eager)
            rows.append(row)
            print(
                f"{k.name}: {' -> '.join(row['chain']) or '(none)'}: {row.get('speedup')}", file=sys.stderr, flush=True
            )
    finally:
        backend.close()
    device = next((a["device"] for r in rows for a in r.get("attempts", []) if a.get("device")), None)
    doc = {
        "meta": {
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "command": " ".join(["python3", "bench/quality.py", *(argv if argv is not None else sys.argv[1:])]),
            "strategy": strat.name,
            "device": f"{device['gpu']} ({device['arch']}, driver {device['driver']}, {device['toolkit']})"
            if device
            else None,
            "peaks": peaks,
            "seconds": round(time.monotonic() - t0, 1),
        },
        "rows": rows,
    }
    chart = quality_chart(doc)
    if chart:
        doc["chart_svg"] = chart
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "quality.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    (out / "quality.md").write_text(quality_markdown(doc), encoding="utf-8")
    print(f"wrote {out / 'quality.json'} and {out / 'quality.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
