"""Editor-latency benchmark of the analyzers on the shared anchor file (2,972 lines, 60 kernels).

Measures, over many runs: bare tree-sitter parsing; full analysis (parse + kernel model + findings) of a fresh
document, with each of those three phases, and its CPU time (which tells how much of the wall time went to other
load on the machine); incremental re-analysis after the standard one-character edit (and after a one-character
insertion, which moves every later function); and memory growth while the same file is re-analysed 10,000 times.
Targets on a 2-core machine: full <= 30 ms median, incremental <= 5 ms median, bounded memory.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
import tracemalloc
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import anchor_path, summary_ms, write_result


def _use_analyzers(directory: str) -> None:
    """Make `warpwise.analyzers` the package in `directory` (a copy of `analyzers/` from another commit)."""
    import warpwise

    package = types.ModuleType("warpwise.analyzers")
    package.__path__ = [str(Path(directory).resolve())]
    sys.modules["warpwise.analyzers"] = package
    warpwise.analyzers = package  # type: ignore[attr-defined]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--memory-runs", type=int, default=10_000)
    ap.add_argument("--no-write", action="store_true", help="print results without writing bench/results/")
    ap.add_argument(
        "--analyzers",
        metavar="DIR",
        help="measure the analyzers in DIR instead of this checkout's, e.g. a baseline extracted with "
        "`git archive COMMIT analyzers | tar -x -C /tmp/base` (then DIR is /tmp/base/analyzers)",
    )
    ap.add_argument("--label", help="write bench/results/analyze_latency-LABEL-<date>.* (e.g. baseline-COMMIT)")
    args = ap.parse_args()
    if args.analyzers:
        _use_analyzers(args.analyzers)

    from warpwise.analyzers.build import analyze_document
    from warpwise.analyzers.findings import check_model
    from warpwise.analyzers.model import Position
    from warpwise.analyzers.parse import CudaDocument, TextEdit, new_parser

    path = anchor_path()
    data = path.read_bytes()
    positions = json.loads(Path(str(path) + ".positions.json").read_text())
    edit = positions["edit_char"]

    parser = new_parser()
    for _ in range(5):
        parser.parse(data)
    parse_times = []
    for _ in range(args.runs):
        t = time.perf_counter()
        parser.parse(data)
        parse_times.append(time.perf_counter() - t)

    full_times = []
    full_cpu_times = []
    phase_times: dict[str, list[float]] = {"document": [], "model": [], "findings": []}
    n_findings = n_kernels = 0
    for i in range(args.runs + 5):
        gc.collect()
        cpu = time.process_time()
        t = time.perf_counter()
        doc = CudaDocument(str(path), data)
        t_doc = time.perf_counter()
        model = analyze_document(doc)
        t_model = time.perf_counter()
        findings = check_model(model)
        t_end = time.perf_counter()
        cpu_end = time.process_time()
        if i >= 5:
            full_times.append(t_end - t)
            full_cpu_times.append(cpu_end - cpu)
            phase_times["document"].append(t_doc - t)
            phase_times["model"].append(t_model - t_doc)
            phase_times["findings"].append(t_end - t_model)
        n_findings, n_kernels = len(findings), len(model.kernels)

    cpu_times: dict[str, list[float]] = {}

    def incremental(kind: str) -> list[float]:
        doc = CudaDocument(str(path), data)
        check_model(analyze_document(doc))
        start = Position(edit["line"], edit["character"])
        times = []
        cpus = cpu_times.setdefault(kind, [])
        for i in range(args.runs + 5):
            if kind == "replace":
                text = edit["alt"] if i % 2 == 0 else edit["orig"]
                change = TextEdit(start, Position(start.line, start.character + 1), text)
            elif i % 2 == 0:
                change = TextEdit(start, start, " ")
            else:
                change = TextEdit(start, Position(start.line, start.character + 1), "")
            cpu = time.process_time()
            t = time.perf_counter()
            doc.apply([change])
            check_model(analyze_document(doc))
            dt = time.perf_counter() - t
            if i >= 5:
                times.append(dt)
                cpus.append(time.process_time() - cpu)
        return times

    inc_replace = incremental("replace")
    inc_insert = incremental("insert")

    gc.collect()
    doc = CudaDocument(str(path), data)
    check_model(analyze_document(doc))
    start = Position(edit["line"], edit["character"])
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    snap_first = None
    for i in range(args.memory_runs):
        text = edit["alt"] if i % 2 == 0 else edit["orig"]
        doc.apply([TextEdit(start, Position(start.line, start.character + 1), text)])
        check_model(analyze_document(doc))
        if i == 99:
            gc.collect()
            snap_first = tracemalloc.get_traced_memory()[0]
    gc.collect()
    traced_end = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    result: dict[str, Any] = {
        "analyzers": args.analyzers or "this checkout",
        "file": path.name,
        "kernels": n_kernels,
        "findings": n_findings,
        "parse_only": summary_ms(parse_times),
        "full_analysis": summary_ms(full_times),
        "full_analysis_phases": {name: summary_ms(times) for name, times in phase_times.items()},
        "full_analysis_cpu": summary_ms(full_cpu_times),
        "incremental_replace_one_char": summary_ms(inc_replace),
        "incremental_insert_one_char": summary_ms(inc_insert),
        "incremental_replace_one_char_cpu": summary_ms(cpu_times["replace"]),
        "incremental_insert_one_char_cpu": summary_ms(cpu_times["insert"]),
        "memory": {
            "reanalyses": args.memory_runs,
            "traced_bytes_after_100": snap_first,
            "traced_bytes_after_all": traced_end,
            "growth_bytes": (traced_end - snap_first) if snap_first is not None else None,
            "max_rss_kib_before": rss_before,
            "max_rss_kib_after": rss_after,
        },
        "targets": {"full_median_ms": 30, "incremental_median_ms": 5},
    }
    r = result
    md = "\n".join(
        [
            f"Analyzers: {'`' + args.analyzers + '`' if args.analyzers else 'this checkout'}  ",
            f"File: `{path.name}` ({r['kernels']} kernels, {r['findings']} findings)\n",
            "| measurement | median ms | p99 ms | target |",
            "| --- | --- | --- | --- |",
            f"| tree-sitter parse only | {r['parse_only']['median_ms']} | {r['parse_only']['p99_ms']} | |",
            f"| full analysis (parse + model + findings) | {r['full_analysis']['median_ms']} | "
            f"{r['full_analysis']['p99_ms']} | <= 30 |",
            f"| full analysis, CPU time of this process | {r['full_analysis_cpu']['median_ms']} | "
            f"{r['full_analysis_cpu']['p99_ms']} | |",
            f"| of which: document (parse + line index) | {r['full_analysis_phases']['document']['median_ms']} | "
            f"{r['full_analysis_phases']['document']['p99_ms']} | |",
            f"| of which: kernel model | {r['full_analysis_phases']['model']['median_ms']} | "
            f"{r['full_analysis_phases']['model']['p99_ms']} | |",
            f"| of which: findings | {r['full_analysis_phases']['findings']['median_ms']} | "
            f"{r['full_analysis_phases']['findings']['p99_ms']} | |",
            f"| incremental, one-character replace | {r['incremental_replace_one_char']['median_ms']} | "
            f"{r['incremental_replace_one_char']['p99_ms']} | <= 5 |",
            f"| incremental, one-character insert | {r['incremental_insert_one_char']['median_ms']} | "
            f"{r['incremental_insert_one_char']['p99_ms']} | <= 5 |",
            f"| incremental, one-character replace, CPU time | {r['incremental_replace_one_char_cpu']['median_ms']} | "
            f"{r['incremental_replace_one_char_cpu']['p99_ms']} | |",
            f"| incremental, one-character insert, CPU time | {r['incremental_insert_one_char_cpu']['median_ms']} | "
            f"{r['incremental_insert_one_char_cpu']['p99_ms']} | |",
            "",
            f"Memory: {args.memory_runs} re-analyses; traced Python memory grew by "
            f"{r['memory']['growth_bytes']} bytes between re-analysis 100 and the last; max RSS "
            f"{rss_before} KiB before, {rss_after} KiB after.",
        ]
    )
    print(md)
    if not args.no_write:
        out = write_result(f"analyze_latency-{args.label}" if args.label else "analyze_latency", result, md)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
