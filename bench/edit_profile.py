"""Where one keystroke's CPU goes in the language server, in one process, through the server's own code.

The standard one-character edit of the latency benchmarks (`edit_char` in `anchor_kernels.cu.positions.json`,
alternating between its two characters) is applied the way `textDocument/didChange` does it: the open document's
text and line index on the event loop (`OpenDocument.apply_range`, the snapshot with its edits), then what the
analysis lane does with the snapshot (`AnalysisLane._process`: incremental re-parse, `analyze_document`, every
provider through `collect_items`), then what publishing does on the event loop (`static_diagnostics_json`: the
quiet default's severities, LSP ranges) and pygls' `json.dumps` of the notification. The lane runs on this
thread rather than its own, so the profile and the clock see all of it; nothing here waits for another thread.

    python bench/edit_profile.py --edits 100                    # CPU per edit, by stage
    python bench/edit_profile.py --edits 100 --profile /tmp/e.prof --top 40
    python bench/edit_profile.py --settings '{"cards": {"disabled": ["row-register-cache"]}}'

Each stage is timed by this thread's CPU clock (`time.thread_time`), which other processes on a shared machine do
not inflate. The settings are the server's, given as the editor would (`initializationOptions`).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import anchor_path, write_result
from lsprotocol import types

from warpwise.analyzers.model import Position
from warpwise.server.analysis import Analysis, AnalysisLane, warm_up
from warpwise.server.app import create_server
from warpwise.server.features.diagnostics import static_diagnostics_json
from warpwise.server.settings import parse_settings

STAGES = ("document", "analysis", "publish", "serialise")


def _capabilities() -> types.ClientCapabilities:
    from pytest_lsp import client_capabilities

    caps: types.ClientCapabilities = client_capabilities("visual-studio-code")
    return caps


class EditLoop:
    """One open document and the server objects a keystroke goes through."""

    def __init__(self, path: Path, settings: Any) -> None:
        self.server = create_server()
        self.server.client.read(_capabilities())
        parsed, problems = parse_settings(settings)
        if problems:
            raise SystemExit("bad --settings: " + "; ".join(f"{p.key}: {p.message}" for p in problems))
        self.settings = parsed
        warm_up(self.server.providers, self.settings)
        self.lane = AnalysisLane(self.server.providers, lambda r: None, lambda e: None)
        text = path.read_text()
        self.uri = path.resolve().as_uri()
        self.doc = self.server.documents.open(self.uri, str(path), "cuda-cpp", 1, text)
        self.last: Analysis | None = None
        self.diagnostics = 0

    def step(self, change: tuple[int, int, str] | None, times: dict[str, list[float]]) -> None:
        """Apply one change (None: open) and analyse and publish the new version, timing each stage."""
        t = time.thread_time()
        if change is not None:
            line, character, text = change
            self.doc.apply_range(Position(line, character), Position(line, character + 1), text)
            self.doc.version += 1
        snap = self.doc.snapshot(self.settings, 0)
        t1 = time.thread_time()
        result = self.lane._process(snap)
        assert isinstance(result, Analysis), "the lane did not analyse the snapshot"
        t2 = time.thread_time()
        diags = static_diagnostics_json(self.server.client, result, self.uri, self.server.verification)
        t3 = time.thread_time()
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "method": types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
                "params": {"uri": self.uri, "diagnostics": diags, "version": result.version},
            }
        )
        t4 = time.thread_time()
        assert body
        self.last = result
        self.diagnostics = len(diags)
        for name, a, b in zip(STAGES, (t, t1, t2, t3), (t1, t2, t3, t4), strict=True):
            times[name].append(b - a)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edits", type=int, default=100, help="one-character edits measured (after 5 not measured)")
    ap.add_argument("--settings", default="null", help="the server's settings as JSON (initializationOptions)")
    ap.add_argument("--profile", metavar="PROF", help="write a cProfile of the measured edits here")
    ap.add_argument("--top", type=int, default=0, help="print the N costliest functions (cumulative) of --profile")
    ap.add_argument("--label", help="write bench/results/edit_profile-LABEL-<date>.*")
    args = ap.parse_args()
    path = anchor_path()
    edit = json.loads(Path(str(path) + ".positions.json").read_text())["edit_char"]
    loop = EditLoop(path, json.loads(args.settings))
    opened: dict[str, list[float]] = {s: [] for s in STAGES}
    loop.step(None, opened)
    times: dict[str, list[float]] = {s: [] for s in STAGES}
    for i in range(5 + args.edits):
        if i == 5:
            times = {s: [] for s in STAGES}
            prof = cProfile.Profile() if args.profile else None
            if prof is not None:
                prof.enable()
        loop.step((edit["line"], edit["character"], edit["alt"] if i % 2 == 0 else edit["orig"]), times)
    if args.profile and prof is not None:
        prof.disable()
        prof.dump_stats(args.profile)
    assert loop.last is not None
    results: dict[str, Any] = {
        "file": path.name,
        "edits": args.edits,
        "settings": json.loads(args.settings),
        "items": len(loop.last.items),
        "diagnostics": loop.diagnostics,
        "open_cpu_ms": {s: round(v[0] * 1000, 2) for s, v in opened.items()},
        "edit_cpu_ms_median": {s: round(statistics.median(v) * 1000, 2) for s, v in times.items()},
        "edit_cpu_ms_total_median": round(statistics.median(map(sum, zip(*times.values(), strict=True))) * 1000, 2),
    }
    lines = [
        f"File `{path.name}`: {results['items']} items, {results['diagnostics']} diagnostics published. "
        f"CPU of this thread per one-character edit, median of {args.edits}:",
        "",
        "| stage | open ms | edit median ms |",
        "| --- | --- | --- |",
    ]
    for s in STAGES:
        lines.append(f"| {s} | {results['open_cpu_ms'][s]} | {results['edit_cpu_ms_median'][s]} |")
    lines.append(
        f"| total | {round(sum(results['open_cpu_ms'].values()), 2)} | {results['edit_cpu_ms_total_median']} |"
    )
    md = "\n".join(lines)
    print(md)
    if args.top and args.profile:
        pstats.Stats(args.profile).sort_stats("cumulative").print_stats(args.top)
    if args.label:
        print(f"wrote {write_result('edit_profile-' + args.label, results, md)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
