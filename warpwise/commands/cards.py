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
