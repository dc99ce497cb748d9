"""`warpwise optimize`: search for a faster verified version of a kernel and propose it as one edit."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from warpwise.cli import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, command

BACKENDS = ("auto", "local", "compile-only", "cluster")
STRATEGY_NAMES = ("mcts", "greedy", "random")


@command("optimize")
def _add_optimize(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "optimize",
        help="search for a faster verified version of a kernel (tree search over cards, parameters, lineages, LLM)",
        description="Search for a faster version of one kernel: each step applies a skill card's rewrite, sets a "
        "parameter (block size, unroll factor, elements per thread), follows an expert lineage, or (with --llm) "
        "asks an LLM; every version is verified by the gate against the starting kernel. The best verified "
        "version is shown as one edit (a diff) with the path that led to it and every rejected branch. Without "
        "a GPU (or with --dry-run) every candidate is only built and nothing is claimed. Results are cached: "
        "running again continues where the last run stopped.",
        epilog="Exit codes: 0 a verified faster version was found (or, dry run, the search ran), 1 none was, "
        "2 usage or input error.",
    )
    p.add_argument("file", metavar="FILE", help="the CUDA file holding the kernel")
    p.add_argument("--kernel", required=True, metavar="NAME", help="the kernel to optimize")
    p.add_argument("--strategy", choices=STRATEGY_NAMES, default="mcts", help="search strategy (default: mcts)")
    p.add_argument("--budget-s", type=float, default=300.0, metavar="S", help="GPU-seconds to spend (default 300)")
    p.add_argument("--candidates", type=int, default=40, metavar="N", help="gate jobs to run at most (default 40)")
    p.add_argument("--dry-run", action="store_true", help="compile-only: build every candidate, run nothing")
    p.add_argument("--backend", choices=BACKENDS, default="auto", help="where to run (default: local GPU if any)")
    p.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler address for --backend cluster")
    p.add_argument("--llm", action="store_true", help="also ask the configured LLM for edits (WARPWISE_LLM_*)")
    p.add_argument("--llm-endpoint", metavar="URL", help="OpenAI-compatible base URL (else WARPWISE_LLM_ENDPOINT)")
    p.add_argument("--llm-model", metavar="NAME", help="model name (else WARPWISE_LLM_MODEL)")
    p.add_argument("--llm-rounds", type=int, default=3, metavar="N", help="LLM edits to ask for at most (default 3)")
    p.add_argument("--no-lineage", action="store_true", help="do not follow expert lineages")
    p.add_argument("--no-params", action="store_true", help="do not try parameter choices")
    p.add_argument(
        "--no-screen",
        action="store_true",
        help="time every candidate at the problem's own size (no screening on a reduced problem)",
    )
    p.add_argument("--profile", action="store_true", help="profile candidates (shapes the reward; slower)")
    p.add_argument("--seed", type=int, default=0, help="random seed (ties and the random strategy)")
    p.add_argument("--exploration", type=float, metavar="C", help="UCT exploration constant (default 0.5)")
    p.add_argument("--max-depth", type=int, default=6, metavar="D", help="longest chain of edits (default 6)")
    p.add_argument("--write", action="store_true", help="apply the proposed edit to the file (and problem file)")
    p.add_argument("--report", metavar="FILE.md", help="also write the report as Markdown")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_run_optimize)


def _backend(args: argparse.Namespace) -> str:
    """Return the backend: compile-only for a dry run or without a GPU, else the one asked for."""
    if args.dry_run:
        return "compile-only"
    if args.backend != "auto":
        return str(args.backend)
    from warpwise.verify.backends import gpu_count

    return "local" if gpu_count() > 0 else "compile-only"


def _fmt_progress(t0: float, p: Any) -> str:
    best = f"{p.best_speedup:.3f}x" if p.best_speedup is not None else "-"
    return f"  [{time.perf_counter() - t0:6.1f} s] nodes {p.nodes} · best {best} · {p.gpu_seconds:.1f} GPU-s · {p.last}"


def _run_optimize(args: argparse.Namespace) -> int:
    from warpwise.search.llm import LLMConfig
    from warpwise.search.optimize import OptimizeError, OptimizeOptions, optimize

    try:
        text = Path(args.file).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        print(f"warpwise optimize: error: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return EXIT_ERROR
    llm = None
    if args.llm:
        llm = LLMConfig.resolve(args.llm_endpoint or "", args.llm_model or "")
        if llm is None:
            print(
                "warpwise optimize: error: --llm needs an endpoint and a model (--llm-endpoint/--llm-model or "
                "WARPWISE_LLM_ENDPOINT/WARPWISE_LLM_MODEL)",
                file=sys.stderr,
            )
            return EXIT_ERROR
    backend = _backend(args)
    compile_only = backend == "compile-only"
    opts = OptimizeOptions(
        strategy=args.strategy,
        budget_s=args.budget_s,
        candidates=args.candidates,
        compile_only=compile_only,
        seed=args.seed,
        exploration=args.exploration,
        max_depth=args.max_depth,
        lineage=not args.no_lineage,
        screen=not args.no_screen,
        params=not args.no_params,
        llm=llm,
        llm_rounds=args.llm_rounds,
        profile=args.profile,
    )
    t0 = time.perf_counter()
    if not args.json:
        mode = "compile-only dry run: nothing is run or timed" if compile_only else backend
        print(f"optimizing `{args.kernel}` of {args.file} ({args.strategy}, {mode})", file=sys.stderr)

    def progress(p: Any) -> None:
        if not args.json:
            print(_fmt_progress(t0, p), file=sys.stderr, flush=True)

    cancel = threading.Event()
    try:
        report = optimize(
            args.file,
            args.kernel,
            opts,
            text=text,
            backend=backend,
            scheduler=args.scheduler,
            progress=progress,
            cancel=cancel,
        )
    except KeyboardInterrupt:
        cancel.set()
        raise
    except (OptimizeError, ValueError, OSError) as exc:
        print(f"warpwise optimize: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if report.stop_reason.startswith("there is no kernel"):
        print(f"warpwise optimize: error: {report.stop_reason}", file=sys.stderr)
        return EXIT_ERROR
    diff = report.diff()
    if args.report:
        Path(args.report).write_text(report.markdown(), encoding="utf-8")
    if args.json:
        print(json.dumps({**report.to_dict(), "diff": diff}, indent=2))
    else:
        print(report.markdown())
    if args.write and report.best_text is not None:
        _write(report)
        if not args.json:
            print(f"wrote the edit to {', '.join(sorted({e.path for e in report.edits}))}", file=sys.stderr)
    if compile_only:
        return EXIT_CLEAN if report.nodes else EXIT_FINDINGS
    return EXIT_CLEAN if report.best is not None else EXIT_FINDINGS


def _write(report: Any) -> None:
    """Apply the report's edits to the files (edits of one file from the end, so offsets stay valid)."""
    by_file: dict[str, list[Any]] = {}
    for e in report.edits:
        by_file.setdefault(e.path, []).append(e)
    for path, edits in by_file.items():
        data = Path(path).read_bytes()
        for e in sorted(edits, key=lambda e: e.start, reverse=True):
            data = data[: e.start] + e.text.encode("utf-8", "surrogatepass") + data[e.end :]
        Path(path).write_bytes(data)
