"""CPU time of the gate's preparation (`warpwise.verify.gate.prepare`) per candidate, and the parses it costs.

The candidates are the card rewrites of the shared anchor file (one per kernel and card, as the card evidence run
builds them: `skills.engine.card_rewrites`). Each is prepared compile-only (no GPU: the spec, the candidate's
launch geometry, both NVRTC translation units and the cache key), `--rounds` times; the figure per candidate is
its median, and the table gives the median and p90 over candidates. Two ways in:

- `original as text`: the gate gets the original file as text and analyses it itself (what `warpwise verify`
  and the batch callers do);
- `original parsed`: the gate also gets the model the caller already built of the same text (what the server
  and the CLI have at hand), where the checkout's `Candidate` takes one (`original_model`).

Parses are counted by handing every `tree_sitter.Parser` the analyzers create a counting wrapper, so the count
means the same on any commit.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import types
from dataclasses import fields
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import anchor_path, percentile, write_result


class _Counter:
    """Count `parse` calls on every tree-sitter parser the analyzers create."""

    def __init__(self) -> None:
        self.parses = 0

    def install(self) -> None:
        """Wrap `tree_sitter.Parser` as `warpwise.analyzers.parse` sees it."""
        import tree_sitter as ts

        from warpwise.analyzers import parse

        counter = self

        class CountingParser:
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                self._inner = ts.Parser(*args, **kwargs)

            def parse(self, *args: Any, **kwargs: Any) -> Any:
                counter.parses += 1
                return self._inner.parse(*args, **kwargs)

            def __getattr__(self, name: str) -> Any:
                return getattr(self._inner, name)

        proxy = types.SimpleNamespace(**{k: getattr(ts, k) for k in dir(ts) if not k.startswith("__")})
        proxy.Parser = CountingParser
        parse.ts = proxy  # type: ignore[attr-defined]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--limit", type=int, default=0, help="prepare only the first N candidates (0: all)")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--label", help="write bench/results/gate_prepare-LABEL-<date>.*")
    args = ap.parse_args()

    counter = _Counter()
    counter.install()
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills.engine import card_rewrites
    from warpwise.verify.gate import Candidate, PreparedJob, prepare
    from warpwise.verify.types import Options

    path = anchor_path()
    data = path.read_bytes()
    text = data.decode("utf-8", "replace")
    model = analyze_text(data, str(path))
    pairs = [(kernel, card, new) for (kernel, card), (_, new) in card_rewrites(model).items()]
    if args.limit:
        pairs = pairs[: args.limit]
    takes_model = "original_model" in {f.name for f in fields(Candidate)}
    options = Options(compile_only=True)

    def candidate(kernel: str, new: bytes, parsed: bool) -> Any:
        extra = {"original_model": model} if parsed else {}
        return Candidate(str(path), text, kernel, new.decode("utf-8", "replace"), str(path), **extra)

    modes = [("original as text", False)] + ([("original parsed", True)] if takes_model else [])
    prepare(candidate(*pairs[0][::2], False), options)  # Queries compiled, caches warm.
    result: dict[str, Any] = {"file": path.name, "candidates": len(pairs), "rounds": args.rounds, "modes": {}}
    for name, parsed in modes:
        per_candidate: list[float] = []
        parses: list[int] = []
        statuses: dict[str, int] = {}
        for kernel, _card, new in pairs:
            times = []
            for _ in range(args.rounds):
                c = candidate(kernel, new, parsed)
                before = counter.parses
                t = time.process_time()
                out = prepare(c, options)
                times.append(time.process_time() - t)
                parses.append(counter.parses - before)
            status = "prepared" if isinstance(out, PreparedJob) else str(out.status.value)
            statuses[status] = statuses.get(status, 0) + 1
            per_candidate.append(statistics.median(times))
        ms = [s * 1000 for s in per_candidate]
        result["modes"][name] = {
            "cpu_ms_per_candidate_median": round(statistics.median(ms), 3),
            "cpu_ms_per_candidate_p90": round(percentile(ms, 90), 3),
            "cpu_ms_total": round(sum(ms), 1),
            "parses_per_prepare": {"min": min(parses), "median": statistics.median(parses), "max": max(parses)},
            "outcomes": statuses,
        }
    rows = [
        f"| {name} | {m['cpu_ms_per_candidate_median']} | {m['cpu_ms_per_candidate_p90']} | "
        f"{m['parses_per_prepare']['median']:g} ({m['parses_per_prepare']['min']}..{m['parses_per_prepare']['max']}) | "
        + ", ".join(f"{k} {v}" for k, v in sorted(m["outcomes"].items()))
        + " |"
        for name, m in result["modes"].items()
    ]
    md = "\n".join(
        [
            f"File: `{path.name}`; {len(pairs)} candidates (card rewrites), each prepared compile-only "
            f"{args.rounds} times; CPU time of this process.\n",
            "| original | CPU ms per candidate (median) | p90 | parses per prepare (median, range) | outcomes |",
            "| --- | --- | --- | --- | --- |",
            *rows,
        ]
    )
    print(md)
    if not args.no_write:
        print(f"wrote {write_result(f'gate_prepare-{args.label}' if args.label else 'gate_prepare', result, md)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
