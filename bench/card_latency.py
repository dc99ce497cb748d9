"""Where the first analysis of a file spends its time: the model build, the model rules, and each card.

For each file (by default the shared anchor file, `bench/suite/` and `examples/`), one fresh analysis as the
language server does it on didOpen: after the server's warm-up (`server.analysis.warm_up`), with
resource builds answered on a background thread and never waited for. It times the parse and model build,
`check_model`, then every card over every function in the library's order, each card's matcher and precondition
checks together, by this thread's CPU clock (`time.thread_time`, which the background builds and other processes
do not inflate). A column of its own times every card over the function that the latency benchmarks' standard
one-character edit changes (on a fresh model of the edited text): what the server matches again after that edit.
Cards share work through `model.memo`, so a card that computes a shared fact first is charged for it, as in the
server. `--runs N` repeats the measurement in N fresh processes (nothing answered or cached in memory from an
earlier run) and reports each cost's median.

    python bench/card_latency.py --label LABEL            # writes bench/results/card_latency-LABEL-<date>.*
    python bench/card_latency.py --profile /tmp/p.prof    # also a cProfile of one analysis of the anchor file
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, anchor_path, write_result


def _files(sets: list[str]) -> list[Path]:
    out: list[Path] = []
    for name in sets:
        if name == "anchor":
            if anchor_path().is_file():
                out.append(anchor_path())
            continue
        base = ROOT / name
        out.extend(sorted(p for p in base.rglob("*") if p.suffix in (".cu", ".cuh")))
    return out


def _measure(paths: list[Path]) -> dict[str, dict[str, float]]:
    """Return CPU seconds per cost ("build", "rules", "card:<id>") per file set, for one fresh analysis each."""
    from warpwise.analyzers.findings import check_model
    from warpwise.engine import parsed_model
    from warpwise.server.analysis import warm_up
    from warpwise.server.providers import CardProvider, RuleProvider
    from warpwise.server.settings import DEFAULTS
    from warpwise.skills.engine import match_function
    from warpwise.skills.library import builtin_library

    cards = [c for c in builtin_library() if c.header.status.value != "deprecated"]
    # The server's own warm-up at start (a small file analysed: queries compiled, caches filled, the modules the
    # first publication needs imported) comes before the first document.
    warm_up([RuleProvider(), CardProvider()], DEFAULTS)
    costs: dict[str, dict[str, float]] = {}
    for path in paths:
        data = path.read_bytes()
        row: dict[str, float] = defaultdict(float)
        t = time.thread_time()
        model = parsed_model(data, str(path))
        row["build"] = time.thread_time() - t
        t = time.thread_time()
        check_model(model)
        row["rules"] = time.thread_time() - t
        for fn in model.functions:
            for card in cards:
                t = time.thread_time()
                match_function(model, fn, [card])
                row["card:" + card.skill_id] += time.thread_time() - t
        costs[str(path)] = dict(row)
    anchor = anchor_path()
    positions = Path(str(anchor) + ".positions.json")
    if anchor in paths and positions.is_file():
        # The standard one-character edit of the latency benchmarks: the server matches the edited function again
        # with every card (the match cache keeps the others), so each card's cost on that function is its share.
        edit = json.loads(positions.read_text())["edit_char"]
        lines = anchor.read_bytes().split(b"\n")
        line = lines[edit["line"]]
        at = edit["character"]
        lines[edit["line"]] = line[:at] + edit["alt"].encode() + line[at + 1 :]
        offset = sum(len(x) + 1 for x in lines[: edit["line"]]) + at
        model = parsed_model(b"\n".join(lines), str(anchor))
        row = defaultdict(float)
        for fn in model.functions:
            if fn.base <= offset < fn.base + fn.length:
                for card in cards:
                    t = time.thread_time()
                    match_function(model, fn, [card])
                    row["card:" + card.skill_id] += time.thread_time() - t
                row["edited function: " + fn.name] = 0.0
        costs[EDIT] = dict(row)
    return costs


EDIT = "<the anchor file's standard edit>"


def _run_once(sets: list[str]) -> dict[str, dict[str, float]]:
    """Measure once in a fresh interpreter."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", "--sets", *sets]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    result: dict[str, dict[str, float]] = json.loads(done.stdout)
    return result


def _group(path: str, anchor: Path) -> str:
    if path == EDIT:
        return "anchor, edited function"
    if Path(path) == anchor:
        return "anchor"
    rel = Path(path).resolve().relative_to(ROOT)
    return rel.parts[0] if rel.parts[0] != "bench" else "/".join(rel.parts[:2])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="*", default=["anchor", "bench/suite", "examples"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--label", help="write bench/results/card_latency-LABEL-<date>.*")
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of one analysis of the anchor file")
    ap.add_argument("--top", type=int, default=25, help="cards listed in the Markdown table")
    ap.add_argument("--one", action="store_true", help="measure once in this process and print JSON (internal)")
    args = ap.parse_args()

    if importlib.util.find_spec("warpwise.verify.resources") is not None:  # commits before resource builds lack it
        from warpwise.verify import resources

        resources.set_background(True)
    paths = _files(args.sets)
    anchor = anchor_path()
    if args.one:
        json.dump(_measure(paths), sys.stdout)
        return 0
    runs = [_run_once(args.sets) for _ in range(args.runs)]
    # Median over runs of each cost, summed per file set.
    per_set: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for path in runs[0]:
        keys = set().union(*(r[path].keys() for r in runs))
        for key in keys:
            per_set[_group(path, anchor)][key] += statistics.median(r[path].get(key, 0.0) for r in runs)
    if args.profile and anchor.is_file():
        from warpwise.engine import analyze_model, parsed_model

        prof = cProfile.Profile()
        prof.enable()
        analyze_model(parsed_model(anchor.read_bytes(), str(anchor)))
        prof.disable()
        prof.dump_stats(args.profile)

    table: dict[str, Any] = {s: {k: round(v * 1000, 2) for k, v in sorted(c.items())} for s, c in per_set.items()}
    totals = {s: round(sum(c.values()) * 1000, 1) for s, c in per_set.items()}
    sets = list(per_set)
    lines = [
        f"CPU ms of one fresh analysis (this thread's clock, median of {args.runs} fresh processes), summed per set.",
        "",
        "| cost | " + " | ".join(sets) + " |",
        "| --- | " + " | ".join("---" for _ in sets) + " |",
        "| **total** | " + " | ".join(f"{totals[s]:.1f}" for s in sets) + " |",
    ]
    first = sets[0]
    order = sorted(per_set[first], key=lambda k: -per_set[first][k])
    rest = sorted(
        set().union(*per_set.values()) - set(order), key=lambda k: -sum(c.get(k, 0) for c in per_set.values())
    )
    for key in (order + rest)[: args.top]:
        lines.append(f"| {key} | " + " | ".join(f"{per_set[s].get(key, 0.0) * 1000:.1f}" for s in sets) + " |")
    print("\n".join(lines))
    if args.label:
        out = write_result(
            f"card_latency-{args.label}",
            {
                "files": {s: sum(1 for p in runs[0] if _group(p, anchor) == s) for s in sets},
                "totals_ms": totals,
                "cpu_ms": table,
            },
            "\n".join(lines),
        )
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
