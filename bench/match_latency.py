"""Latency of matching every skill card on the shared anchor file (2,972 lines, 60 kernels).

Measures, over many runs: matching all cards on a fresh model (the tree already parsed, as in the editor), and
matching after the standard one-character edit through a `MatchCache` (what the language server does per keystroke).
Target: matching adds <= 10 ms median to analysis. Each is also given as CPU time of this process, which tells
how much of the wall time went to other load on a shared machine.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import anchor_path, summary_ms, write_result

from warpwise.analyzers.build import analyze_document
from warpwise.analyzers.model import FileModel, Position
from warpwise.analyzers.parse import CudaDocument, TextEdit
from warpwise.skills.engine import MatchCache, match_file
from warpwise.skills.library import builtin_library

# Commits before the model held its `SourceFile` handed the tree to the card engine this way (for baselines).
_set_tree = getattr(importlib.import_module("warpwise.analyzers.facts"), "set_tree", None)


def _analyze(doc: CudaDocument) -> FileModel:
    """Return the document's model, its tree reaching the card engine as the checkout does it."""
    model = analyze_document(doc)
    if _set_tree is not None:
        _set_tree(model, doc.tree.copy())
    return model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--label", help="write bench/results/match_latency-LABEL-<date>.*")
    args = ap.parse_args()
    path = anchor_path()
    data = path.read_bytes()
    edit = json.loads(Path(str(path) + ".positions.json").read_text())["edit_char"]
    lib = builtin_library()

    doc = CudaDocument(str(path), data)
    model = _analyze(doc)
    for _ in range(5):
        match_file(model, lib)
    full = []
    full_cpu = []
    n_matches = 0
    for _ in range(args.runs):
        cpu = time.process_time()
        t = time.perf_counter()
        n_matches = len(match_file(model, lib))
        full.append(time.perf_counter() - t)
        full_cpu.append(time.process_time() - cpu)

    cache = MatchCache()
    doc = CudaDocument(str(path), data)
    model = _analyze(doc)
    cache.match_file(model, lib)
    start = Position(edit["line"], edit["character"])
    inc = []
    inc_cpu = []
    for i in range(args.runs + 5):
        doc.apply(
            [TextEdit(start, Position(start.line, start.character + 1), edit["alt"] if i % 2 == 0 else edit["orig"])]
        )
        model = _analyze(doc)
        cpu = time.process_time()
        t = time.perf_counter()
        cache.match_file(model, lib)
        if i >= 5:
            inc.append(time.perf_counter() - t)
            inc_cpu.append(time.process_time() - cpu)

    result = {
        "file": path.name,
        "cards": len(lib),
        "matches": n_matches,
        "match_all_cards_fresh": summary_ms(full),
        "match_after_one_char_edit_cached": summary_ms(inc),
        "match_all_cards_fresh_cpu": summary_ms(full_cpu),
        "match_after_one_char_edit_cached_cpu": summary_ms(inc_cpu),
        "cache": {"hits": cache.hits, "misses": cache.misses},
        "targets": {"match_added_median_ms": 10},
    }
    md = "\n".join(
        [
            f"File: `{path.name}`; {len(lib)} cards; {n_matches} matches\n",
            "| measurement | median ms | p99 ms | target |",
            "| --- | --- | --- | --- |",
            f"| match all cards, fresh model | {result['match_all_cards_fresh']['median_ms']} | "
            f"{result['match_all_cards_fresh']['p99_ms']} | <= 10 |",
            f"| match after a one-character edit (cache) | {result['match_after_one_char_edit_cached']['median_ms']} | "
            f"{result['match_after_one_char_edit_cached']['p99_ms']} | <= 10 |",
            f"| match all cards, fresh model, CPU time | {result['match_all_cards_fresh_cpu']['median_ms']} | "
            f"{result['match_all_cards_fresh_cpu']['p99_ms']} | |",
            f"| match after a one-character edit (cache), CPU time | "
            f"{result['match_after_one_char_edit_cached_cpu']['median_ms']} | "
            f"{result['match_after_one_char_edit_cached_cpu']['p99_ms']} | |",
        ]
    )
    print(md)
    if not args.no_write:
        name = f"match_latency-{args.label}" if args.label else "match_latency"
        print(f"wrote {write_result(name, result, md)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
