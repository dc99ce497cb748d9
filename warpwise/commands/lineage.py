"""`warpwise lineage build|render|ingest`: walk expert kernels backwards into lineages (issue 7).

`build` runs the deoptimizers on an expert kernel, verifies each simpler kernel with the gate, and writes the
lineage (JSON, Markdown, chart) and, when it was measured on a GPU, the evidence records of its steps on the
cards. `render` re-renders a lineage file. `ingest` takes the files a GPU batch run wrote
(`bench/gpu/lineage_batch.sh`) and brings them into the tree: lineage results, card evidence, proposed cards,
admission statuses and the quality report. See docs/lineages.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from warpwise.cli import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, command

BACKENDS = ("auto", "local", "compile-only", "cluster")


@command("lineage")
def _add_lineage(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lineage",
        help="walk expert kernels backwards into verified lineages",
        description="Walk an expert kernel backwards: remove one optimization at a time with the deoptimizers, "
        "verify each simpler kernel with the gate (correct, and slower), and record the lineage K0 ... Kn with the "
        "card each step maps to.",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    b = verbs.add_parser("build", help="build the lineage of one or more expert kernels")
    b.add_argument("experts", nargs="+", metavar="EXPERT.cu", help="expert kernel files (walked in this order)")
    b.add_argument("--problem", metavar="P.problem.py", help="the problem file (default: beside the expert)")
    b.add_argument("--kernel", metavar="NAME", help="the kernel (default: the problem file's `kernel`)")
    b.add_argument("--operator", metavar="NAME", help="the operator's name (default: the expert's folder)")
    b.add_argument("--out", metavar="DIR", help="where to write (default: lineages/results/<operator>)")
    b.add_argument("--pack", metavar="FILE", help="also collect every lineage (with its chart) into one JSON file")
    b.add_argument("--backend", choices=BACKENDS, default="auto", help="where to verify (default: local GPU if any)")
    b.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler address for --backend cluster")
    b.add_argument("--budget-s", type=float, metavar="S", help="start no verification after this many seconds")
    b.add_argument("--profile", action="store_true", help="also profile both kernels of each attempt (ncu)")
    b.add_argument("--no-evidence", action="store_true", help="do not add evidence records to the cards")
    b.add_argument("--no-write", action="store_true", help="write no lineage folder (with --pack, only the pack)")
    b.add_argument("--no-cache", action="store_true", help="ignore and do not update the result cache")
    b.add_argument("--time-limit", type=float, default=120.0, metavar="S", help="per-job limit in seconds")
    b.set_defaults(handler=_build)
    f = verbs.add_parser(
        "profile",
        help="add Nsight Compute profiles to the steps of built lineages (timings and verdicts are kept)",
    )
    f.add_argument("lineages", nargs="*", metavar="LINEAGE.json", help="default: every built lineage")
    f.add_argument("--pack", metavar="FILE", required=True, help="write the profiled lineages into one JSON file")
    f.add_argument("--backend", choices=BACKENDS, default="auto", help="where to run (default: local GPU if any)")
    f.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler address for --backend cluster")
    f.add_argument("--budget-s", type=float, metavar="S", help="start no profile run after this many seconds")
    f.add_argument("--time-limit", type=float, default=120.0, metavar="S", help="per-job limit in seconds")
    f.set_defaults(handler=_profile_steps)
    r = verbs.add_parser("render", help="render a lineage.json as Markdown (and its chart, with matplotlib)")
    r.add_argument("lineage", metavar="LINEAGE.json")
    r.set_defaults(handler=_render)
    i = verbs.add_parser("ingest", help="bring the files of a GPU batch run into the tree")
    i.add_argument("folder", metavar="DIR", help="the batch's output folder (lineages.json, admission.json, ...)")
    i.add_argument("--dry-run", action="store_true", help="say what would change and change nothing")
    i.add_argument("--date", metavar="YYYY-MM-DD", help="the date in result file names (default: the run's date)")
    i.set_defaults(handler=_ingest)


def _backend_name(name: str) -> str:
    if name != "auto":
        return name
    from warpwise.verify.backends import gpu_count

    return "local" if gpu_count() > 0 else "compile-only"


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _build(args: argparse.Namespace) -> int:
    from warpwise.lineages.lineage import Budget, LineageBuilder, LineageError, load_expert
    from warpwise.lineages.report import lineage_chart
    from warpwise.lineages.store import default_out, write_lineage
    from warpwise.verify.backends import make_backend
    from warpwise.verify.cache import ResultCache
    from warpwise.verify.gate import Gate
    from warpwise.verify.types import Options

    if len(args.experts) > 1 and (args.problem or args.kernel or args.operator or args.out):
        print("warpwise lineage: error: --problem, --kernel, --operator and --out take one expert", file=sys.stderr)
        return EXIT_ERROR
    try:
        experts = [load_expert(p, args.problem, args.kernel, args.operator) for p in args.experts]
    except LineageError as exc:
        print(f"warpwise lineage: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    backend_name = _backend_name(args.backend)
    compile_only = backend_name == "compile-only"
    options = Options(time_limit_s=args.time_limit, profile=args.profile, compile_only=compile_only)
    cache = None if args.no_cache else ResultCache()
    try:
        backend = make_backend(backend_name, scheduler=args.scheduler, cache=cache)
    except (ValueError, OSError) as exc:
        print(f"warpwise lineage: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    builder = LineageBuilder(Gate(backend, cache), options, Budget(args.budget_s), _log)
    pack: dict[str, Any] = {"lineages": {}, "charts": {}}
    try:
        for expert in experts:
            _log(f"{expert.operator}: walking `{expert.kernel}` of {expert.path} ({backend_name})")
            lineage = builder.build(expert)
            _log(
                f"{expert.operator}: {len(lineage['steps'])} steps, {len(lineage['rejected'])} rejected, "
                f"{lineage['gpu_seconds']:.1f} GPU-s{'' if lineage['complete'] else ' (incomplete: budget spent)'}"
            )
            chart = lineage_chart(lineage)
            if not args.no_write:
                out = Path(args.out) if args.out else default_out(expert.operator)
                files = write_lineage(lineage, out, chart)
                _log(f"{expert.operator}: wrote {', '.join(map(str, files))}")
                if not args.no_evidence and not compile_only:
                    _add_evidence(lineage, files[0])
            if args.pack:
                _pack(args.pack, pack, expert.operator, lineage, chart)
            if builder.budget.spent:
                _log("the time budget is spent; the remaining experts are not walked")
                break
    finally:
        backend.close()
    if compile_only:
        _log("compile-only: the lineages are previews (status no_gpu); no evidence was written")
    return EXIT_CLEAN


def _pack(path: str, pack: dict[str, Any], operator: str, lineage: dict[str, Any], chart: str | None) -> None:
    """Add one lineage (and its chart) to a pack and rewrite the pack file, so a stopped run keeps what it did."""
    pack["lineages"][operator] = lineage
    if chart:
        pack["charts"][operator] = chart
    Path(path).write_text(json.dumps(pack) + "\n", encoding="utf-8")


def _profile_steps(args: argparse.Namespace) -> int:
    from warpwise.lineages.lineage import Budget, LineageBuilder, LineageError, load_expert, profile_steps
    from warpwise.lineages.report import lineage_chart
    from warpwise.lineages.store import read_lineages
    from warpwise.verify.backends import make_backend
    from warpwise.verify.cache import ResultCache
    from warpwise.verify.gate import Gate
    from warpwise.verify.types import Options

    backend_name = _backend_name(args.backend)
    if backend_name == "compile-only":
        print("warpwise lineage profile: error: profiling needs a GPU and none is visible", file=sys.stderr)
        return EXIT_ERROR
    try:
        if args.lineages:
            found = [(Path(p), json.loads(Path(p).read_text(encoding="utf-8"))) for p in args.lineages]
        else:
            found = read_lineages()
    except (OSError, ValueError) as exc:
        print(f"warpwise lineage profile: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    cache = ResultCache()
    try:
        backend = make_backend(backend_name, scheduler=args.scheduler, cache=cache)
    except (ValueError, OSError) as exc:
        print(f"warpwise lineage profile: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    options = Options(time_limit_s=args.time_limit, profile=True)
    builder = LineageBuilder(Gate(backend, cache), options, Budget(args.budget_s), _log)
    pack: dict[str, Any] = {"lineages": {}, "charts": {}}
    try:
        for path, lineage in found:
            if lineage.get("mode") != "gpu":
                _log(f"{path}: a {lineage.get('mode')} lineage; only GPU lineages are profiled")
                continue
            try:
                expert = load_expert(lineage["expert"], lineage.get("problem"), lineage["kernel"], lineage["operator"])
            except (LineageError, KeyError) as exc:
                _log(f"{path}: skipped: {exc}")
                continue
            n = profile_steps(builder, expert, lineage)
            _log(f"{expert.operator}: {n} of {len(lineage.get('steps', []))} steps profiled")
            _pack(args.pack, pack, expert.operator, lineage, lineage_chart(lineage))
            if builder.budget.spent:
                _log("the time budget is spent; the remaining lineages are not profiled")
                break
    finally:
        backend.close()
    return EXIT_CLEAN


def _add_evidence(lineage: dict[str, Any], path: Path) -> None:
    """Append the lineage's evidence records to the built-in cards."""
    from warpwise.lineages.evidence import lineage_records
    from warpwise.skills.evidence import add_records
    from warpwise.skills.library import builtin_library

    lib = builtin_library()
    for card_id, recs in sorted(lineage_records(lineage, f"lineage {path}").items()):
        card = lib.get(card_id)
        if card is None:
            _log(f"warning: no card {card_id!r}; {len(recs)} record(s) skipped")
            continue
        total = add_records(Path(card.path), recs)
        _log(f"{card_id}: +{len(recs)} record(s), {total} in all")


def _render(args: argparse.Namespace) -> int:
    from warpwise.lineages.report import lineage_chart
    from warpwise.lineages.store import write_lineage

    path = Path(args.lineage)
    try:
        lineage = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"warpwise lineage render: error: cannot read {path}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    chart = lineage_chart(lineage)
    if chart is None and (path.parent / "time_per_kernel.svg").exists():
        chart = (path.parent / "time_per_kernel.svg").read_text(encoding="utf-8")
    for f in write_lineage(lineage, path.parent, chart):
        print(f)
    return EXIT_CLEAN


def _ingest(args: argparse.Namespace) -> int:
    from warpwise.lineages.ingest import IngestError, ingest

    try:
        changes = ingest(Path(args.folder), dry_run=args.dry_run, date=args.date, log=_log)
    except IngestError as exc:
        print(f"warpwise lineage ingest: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    for c in changes:
        print(c)
    return EXIT_CLEAN if changes else EXIT_FINDINGS
