"""`warpwise cards list|show ID|lint [PATH...]`: inspect and validate skill cards."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from warpwise.cli import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, command


@command("cards")
def _add_cards(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cards", help="list, show and lint skill cards", description="Inspect and validate skill cards.")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    ls = verbs.add_parser("list", help="list the cards (id, status, applicability, rewrite, intent)")
    ls.add_argument("--dir", action="append", default=[], metavar="DIR", help="also load cards from this folder")
    ls.add_argument("--markdown", action="store_true", help="print a Markdown table (used for the README)")
    ls.set_defaults(handler=_list)
    show = verbs.add_parser("show", help="print one card")
    show.add_argument("skill_id", metavar="ID")
    show.add_argument("--dir", action="append", default=[], metavar="DIR", help="also load cards from this folder")
    show.set_defaults(handler=_show)
    ev = verbs.add_parser("evidence", help="add measured evidence records to cards from a gate results file")
    ev.add_argument("action", choices=("add",))
    ev.add_argument("results", metavar="RESULTS.json", help="a card_evidence.json written by bench/card_evidence.py")
    ev.add_argument("--source", help="what to record as the source (default: the results file's path)")
    ev.set_defaults(handler=_evidence)
    adm = verbs.add_parser(
        "admit",
        help="admit cards after a measured roundtrip on held-out naive kernels",
        description="For every card with mined lineage evidence, rewrite each naive suite kernel where the card "
        "applies, verify the rewrite with the gate, and admit the card when the measured speedup has the same sign "
        "as, and lies inside the spread of, its mined evidence (or a reason is given). Needs a GPU.",
    )
    adm.add_argument("--suite", default="bench/suite", metavar="DIR", help="the naive suite (default: bench/suite)")
    adm.add_argument(
        "--backend", choices=("auto", "local", "cluster"), default="auto", help="where to verify (a GPU is needed)"
    )
    adm.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler address for --backend cluster")
    adm.add_argument(
        "--lineages",
        action="append",
        default=[],
        metavar="FILE",
        help="also count the mined steps of these lineage files",
    )
    adm.add_argument(
        "--reason",
        action="append",
        default=[],
        metavar="CARD=TEXT",
        help="documented reason to admit "
        "a card whose held-out speedup has the same sign but lies outside the mined spread",
    )
    adm.add_argument("--out", metavar="FILE.json", help="write the results here (and FILE.md beside it)")
    adm.add_argument("--budget-s", type=float, metavar="S", help="start no verification after this many seconds")
    adm.add_argument("--no-write", action="store_true", help="change no card (statuses and records stay as they are)")
    adm.set_defaults(handler=_admit)
    lint = verbs.add_parser("lint", help="validate cards; exit 1 when any card has a problem")
    lint.add_argument("paths", nargs="*", metavar="PATH", help="card files or folders (default: the built-in cards)")
    lint.set_defaults(handler=_lint)


def _library(dirs: list[str]):
    from warpwise.skills.library import load_library

    return load_library(dirs)


def _list(args: argparse.Namespace) -> int:
    lib = _library(args.dir)
    cards = sorted(lib, key=lambda c: c.skill_id)
    if args.markdown:
        from warpwise.skills.readme import table

        print(table(), end="")
        return EXIT_CLEAN
    for c in cards:
        fix = c.applicability.value if c.has_rewrite else "display-only"
        print(f"{c.skill_id:40} {c.header.status.value:9} {fix:12} {c.header.intent}")
    for prob in lib.problems:
        print(f"error: {prob}", file=sys.stderr)
    return EXIT_ERROR if lib.problems else EXIT_CLEAN


def _show(args: argparse.Namespace) -> int:
    lib = _library(args.dir)
    card = lib.get(args.skill_id)
    if card is None:
        print(f"warpwise cards: error: no card {args.skill_id!r} (see `warpwise cards list`)", file=sys.stderr)
        return EXIT_ERROR
    h = card.header
    print(f"{h.skill_id}: {h.title}")
    print(f"  intent: {h.intent}")
    print(
        f"  status: {h.status.value}   applicability: {h.applicability.value}   scope: {', '.join(h.scope.platforms)}"
    )
    print(f"  anchor: {h.anchor.kind.value} ({h.anchor.description})")
    print("  preconditions:")
    for axis, pre in h.preconditions.items():
        ref = pre.check_ref
        check = f"check {ref.name}" if ref else "not machine-checkable"
        print(f"    [{axis.value}] {pre.id} ({pre.kind}; {check}): {pre.text}")
    print(f"  risk: {h.risk.summary}")
    print(f"  evidence: {len(h.evidence)} record(s)")
    for e in h.evidence:
        print(
            f"    {e.date} {e.kernel} on {e.gpu}: {e.baseline_ms:.4g} ms -> {e.candidate_ms:.4g} ms ({e.speedup:.2f}x)"
        )
    print(f"  file: {card.path}")
    print()
    print(card.body.strip())
    return EXIT_CLEAN


def _lint(args: argparse.Namespace) -> int:
    from warpwise.skills.library import load_library

    paths = [Path(p) for p in args.paths]
    for p in paths:
        if not p.exists():
            print(f"warpwise cards lint: error: {p}: no such file or folder", file=sys.stderr)
            return EXIT_ERROR
    lib = load_library(paths, include_builtin=not paths)
    for prob in lib.problems:
        print(str(prob))
    print(f"{len(lib)} card(s) valid, {len({p.path for p in lib.problems})} with problems", file=sys.stderr)
    return EXIT_FINDINGS if lib.problems else EXIT_CLEAN


def _evidence(args: argparse.Namespace) -> int:
    import datetime as dt
    import json

    from warpwise.skills.evidence import add_records, from_results
    from warpwise.skills.library import builtin_library, load_card

    try:
        doc = json.loads(Path(args.results).read_text())
    except (OSError, ValueError) as exc:
        print(f"warpwise cards evidence: error: cannot read {args.results}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    date = dt.date.fromisoformat(str(doc.get("meta", {}).get("date", dt.date.today().isoformat()))[:10])
    records = from_results(doc.get("results", []), args.source or args.results, date)
    lib = builtin_library()
    for card_id, recs in sorted(records.items()):
        card = lib.get(card_id)
        if card is None:
            print(f"warning: no card {card_id!r}; {len(recs)} record(s) skipped", file=sys.stderr)
            continue
        total = add_records(Path(card.path), recs)
        _, problems = load_card(Path(card.path))
        if problems:
            print(f"error: {card.path} no longer loads: {problems[0]}", file=sys.stderr)
            return EXIT_ERROR
        print(f"{card_id}: +{len(recs)} record(s), {total} in all")
    return EXIT_CLEAN


def _admit(args: argparse.Namespace) -> int:
    import datetime as dt
    import json

    from warpwise.lineages.admission import (
        admission_markdown,
        apply_admission,
        decisions,
        documented_reasons,
        mined_evidence,
        run_roundtrips,
    )
    from warpwise.lineages.lineage import Budget
    from warpwise.skills.library import builtin_library
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.cache import ResultCache
    from warpwise.verify.gate import Gate
    from warpwise.verify.types import Options

    try:
        reasons = documented_reasons()  # The committed ones; --reason adds or replaces.
    except (OSError, ValueError) as exc:
        print(f"warpwise cards admit: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    for item in args.reason:
        card, sep, text = item.partition("=")
        if not sep or not text.strip():
            print(f"warpwise cards admit: error: --reason takes CARD=TEXT, not {item!r}", file=sys.stderr)
            return EXIT_ERROR
        reasons[card.strip()] = text.strip()
    lineages = []
    for f in args.lineages:
        try:
            doc = json.loads(Path(f).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"warpwise cards admit: error: cannot read {f}: {exc}", file=sys.stderr)
            return EXIT_ERROR
        lineages += list(doc["lineages"].values()) if "lineages" in doc else [doc]
    if not Path(args.suite).is_dir():
        print(f"warpwise cards admit: error: {args.suite}: no such folder", file=sys.stderr)
        return EXIT_ERROR
    backend_name = args.backend if args.backend != "auto" else "local"
    if backend_name == "local" and gpu_count() == 0:
        print("warpwise cards admit: error: admission needs measured results and no GPU is visible", file=sys.stderr)
        return EXIT_ERROR
    lib = builtin_library()
    mined = mined_evidence(lib, lineages)
    cache = ResultCache()
    try:
        backend = make_backend(backend_name, scheduler=args.scheduler, cache=cache)
    except (ValueError, OSError) as exc:
        print(f"warpwise cards admit: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    try:
        rows = run_roundtrips(
            Gate(backend, cache),
            Path(args.suite),
            mined,
            Options(),
            Budget(args.budget_s),
            lambda m: print(m, file=sys.stderr, flush=True),
            reasons,
        )
    finally:
        backend.close()
    device = next((r["device"] for r in rows if r.get("device")), None)
    doc = {
        "meta": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "command": " ".join(["warpwise", *sys.argv[1:]]),
            "device": f"{device['gpu']} ({device['arch']}, {device['toolkit']})" if device else None,
        },
        "mined": mined,
        "reasons": reasons,
        "roundtrips": rows,
        "decisions": decisions(mined, rows, reasons),
    }
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        out.with_suffix(".md").write_text(admission_markdown(doc), encoding="utf-8")
    for d in doc["decisions"]:
        print(f"{d['card']:40} {'admitted' if d['admitted'] else 'preview':9} {d['why']}")
    if not args.no_write:
        for change in apply_admission(doc, f"admission {args.out or '(no results file)'}", lib):
            print(change, file=sys.stderr)
    return EXIT_CLEAN
