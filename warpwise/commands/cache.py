"""`warpwise cache`: inspect, clear, export and import the verification result cache."""

from __future__ import annotations

import argparse
import sys

from warpwise.cli import EXIT_CLEAN, EXIT_ERROR, command


@command("cache")
def _add_cache(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cache",
        help="inspect or share the verification result cache",
        description="The cache holds every verification result, keyed by the content hashes of original and "
        "candidate, the problem spec, the GPU, driver and compiler. Export it to share results with a team.",
    )
    p.add_argument("action", choices=("stats", "clear", "export", "import"), help="what to do")
    p.add_argument("path", nargs="?", default="-", help="file for export/import (default: stdout/stdin)")
    p.add_argument("--db", metavar="FILE", help="cache database (default: the user's cache folder)")
    p.set_defaults(handler=_run_cache)


def _run_cache(args: argparse.Namespace) -> int:
    from warpwise.verify.cache import ResultCache

    cache = ResultCache(args.db)
    if args.action == "stats":
        st = cache.stats()
        print(f"cache: {st.path} ({st.bytes / 1024:.0f} KiB)")
        print(f"results: {st.results}")
        for status, n in sorted(st.by_status.items()):
            print(f"  {status:16} {n}")
        for gpu, n in sorted(st.gpus.items()):
            print(f"  on {gpu}: {n}")
        return EXIT_CLEAN
    if args.action == "clear":
        print(f"removed {cache.clear()} results from {cache.path}")
        return EXIT_CLEAN
    if args.action == "export":
        if args.path == "-":
            n = cache.export(sys.stdout)
        else:
            with open(args.path, "w", encoding="utf-8") as fh:
                n = cache.export(fh)
        print(f"exported {n} results", file=sys.stderr)
        return EXIT_CLEAN
    try:
        if args.path == "-":
            stored, problems = cache.import_(sys.stdin)
        else:
            with open(args.path, encoding="utf-8") as fh:
                stored, problems = cache.import_(fh)
    except OSError as exc:
        print(f"warpwise cache: error: cannot read {args.path}: {exc.strerror}", file=sys.stderr)
        return EXIT_ERROR
    for prob in problems:
        print(f"warpwise cache: skipped {prob}", file=sys.stderr)
    print(f"imported {stored} results")
    return EXIT_ERROR if problems and not stored else EXIT_CLEAN
