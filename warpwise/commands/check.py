"""`warpwise check` and `warpwise rules`: analyse CUDA files and report findings."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from warpwise.cli import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, command

if TYPE_CHECKING:
    from warpwise.engine import FileReport, InputProblem
    from warpwise.verify.rule_policy import RulePolicy

MAX_FILE_SIZE_MIB = 1024


def _csv(value: str) -> set[str]:
    return {v.strip() for v in value.split(",") if v.strip()}


@command("check")
def _add_check(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="analyse CUDA files and report findings",
        description="Analyse CUDA files (or every *.cu / *.cuh under the folders given) and report, per kernel, "
        "what warpwise found: file:line:col, severity, a one-line message and the rule id.",
        epilog="Exit codes: 0 nothing found (hints do not count unless --all), 1 findings reported, 2 usage or input "
        "error.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="CUDA files or folders")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text", help="output format (default: text)")
    p.add_argument("--select", type=_csv, metavar="IDS", help="report only these rule ids (comma-separated)")
    p.add_argument("--ignore", type=_csv, metavar="IDS", default=set(), help="never report these rule ids")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour text output")
    p.add_argument(
        "--max-file-size",
        type=float,
        default=8.0,
        metavar="MIB",
        help="skip files larger than this many MiB (default: 8)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        dest="show_all",
        help="report every finding at its declared severity (by default only correctness problems and findings "
        "with an expected gain are warnings, the rest are hints and text output does not list them)",
    )
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff, change nothing")
    p.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix/--diff, also apply unsafe fixes (they can change results; verify them)",
    )
    p.set_defaults(handler=_run_check)


def _run_check(args: argparse.Namespace) -> int:
    from warpwise.analyzers.findings import Severity
    from warpwise.engine import FileReport, collect_sources
    from warpwise.report import JsonWriter, TextWriter, render_sarif, rule_catalog

    def reported(res: FileReport) -> bool:
        """Return whether a file has findings that count (hints do not, in the quiet default)."""
        return any(args.show_all or f.severity is not Severity.HINT for f in res.findings)

    known = set(rule_catalog())
    for flag in ("select", "ignore"):
        unknown = sorted((getattr(args, flag) or set()) - known)
        if unknown:
            print(
                f"warpwise check: error: unknown rule id(s) in --{flag}: {', '.join(unknown)} (see `warpwise rules`)",
                file=sys.stderr,
            )
            return EXIT_ERROR
    rules = _RuleSettings(known, args.select, args.ignore)
    if not (0 < args.max_file_size <= MAX_FILE_SIZE_MIB):
        print(
            f"warpwise check: error: --max-file-size {args.max_file_size:g} is not between 0 and "
            f"{MAX_FILE_SIZE_MIB} MiB",
            file=sys.stderr,
        )
        return EXIT_ERROR
    max_bytes = int(args.max_file_size * 2**20)
    files, problems = collect_sources(args.paths)
    if args.fix or args.diff:
        return _run_fixes(args, files, problems, rules, max_bytes)
    found = False
    if args.format == "sarif":
        # SARIF lists its results inside one run object, written once every file is analysed; each file is
        # reduced to its results as it comes, so only one file's model is in memory at a time.
        def analysed() -> Iterator[FileReport]:
            nonlocal found
            for path in files:
                res = rules.analyze(path, max_bytes, args.show_all)
                if isinstance(res, FileReport):
                    found = found or reported(res)
                    yield res
                else:
                    problems.append(res)

        render_sarif(analysed(), problems)
    else:
        # Text and JSON are streamed: each file is written as soon as it is analysed, and then forgotten.
        color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
        writer = JsonWriter() if args.format == "json" else TextWriter(color=color, hints=args.show_all)
        late: list[InputProblem] = []
        for path in files:
            res = rules.analyze(path, max_bytes, args.show_all)
            if isinstance(res, FileReport):
                writer.file(res)
                found = found or reported(res)
            else:
                late.append(res)
        for prob in [*problems, *late]:
            writer.problem(prob)
        writer.finish()
        problems = [*problems, *late]
    if problems:
        if args.format != "text":
            for prob in problems:
                print(f"{prob.path}: error: {prob.message}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_FINDINGS if found else EXIT_CLEAN


@command("rules")
def _add_rules(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rules", help="list the rule ids warpwise reports", description="List every rule id.")
    p.set_defaults(handler=_run_rules)


def _run_rules(args: argparse.Namespace) -> int:
    from warpwise.report import rule_catalog

    for info in sorted(rule_catalog().values(), key=lambda r: r.id):
        print(f"{info.id:32} {info.severity.value:8} {info.summary}")
    return EXIT_CLEAN


class _RuleSettings:
    """The rules of each file: the project configuration's (`warpwise.verify.rule_policy`) with the command line's.

    Configuration problems (a bad glob, an unknown rule id, a wrong type) are printed once per configuration
    file, as warnings: they never stop the check.
    """

    def __init__(self, known: set[str], select: set[str] | None, ignore: set[str]) -> None:
        self.known = known
        self.select = select
        self.ignore = ignore
        self.folders: dict[str, str | None] = {}
        self.reported: set[str] = set()

    def policy(self, path: str) -> RulePolicy:
        """Return the rule policy of one file, reporting its configuration's problems the first time."""
        from warpwise.verify.rule_policy import policy_for

        pol = policy_for(path, self.folders).with_cli(self.select, self.ignore)
        if pol.config is not None and pol.config not in self.reported:
            self.reported.add(pol.config)
            for prob in [*pol.problems, *pol.unknown(self.known)]:
                print(f"warpwise check: warning: {prob}", file=sys.stderr)
        return pol

    def selected(self, path: str) -> set[str]:
        """Return the rule ids that report on `path`."""
        pol = self.policy(path)
        return {r for r in self.known if pol.enabled(r)}

    def analyze(self, path: str, max_bytes: int, show_all: bool) -> FileReport | InputProblem:
        """Analyse one file under its rules and present it (the quiet default unless `show_all`); configured
        severities replace the presented ones, last."""
        from dataclasses import replace

        from warpwise.engine import FileReport, analyze_path
        from warpwise.presentation import present

        pol = self.policy(path)
        res = analyze_path(path, {r for r in self.known if pol.enabled(r)}, max_bytes)
        if isinstance(res, FileReport):
            res = present(res, show_all)
        if isinstance(res, FileReport) and pol.severity:
            res.findings = [replace(f, severity=pol.severity_of(f.rule, f.severity)) for f in res.findings]
        return res


def _run_fixes(args: argparse.Namespace, files: list[str], problems: list, rules: _RuleSettings, max_bytes: int) -> int:
    """Apply (or show) fixes file by file, then report what is left."""
    import difflib
    from pathlib import Path

    from warpwise.engine import fix_text, read_source

    changed = 0
    for prob in problems:
        print(f"{prob.path}: error: {prob.message}", file=sys.stderr)
    for path in files:
        data = read_source(path, max_bytes)
        if not isinstance(data, bytes):
            print(f"{path}: error: {data.message}", file=sys.stderr)
            problems.append(data)
            continue
        outcome = fix_text(data, path, include_unsafe=args.unsafe_fixes, select=rules.selected(path))
        for fix, why in {f.title: (f, w) for f, w in outcome.held_back}.values():
            print(f"{path}: not applied: {fix.title} [{fix.card_id}]: {why}", file=sys.stderr)
        if outcome.text == data:
            continue
        changed += 1
        if args.diff:
            before = data.decode("utf-8", "replace").splitlines(keepends=True)
            after = outcome.text.decode("utf-8", "replace").splitlines(keepends=True)
            sys.stdout.writelines(difflib.unified_diff(before, after, f"a/{path.lstrip('/')}", f"b/{path.lstrip('/')}"))
        else:
            Path(path).write_bytes(outcome.text)
        titles = ", ".join(sorted({f"{f.title} [{f.card_id}]" for f in outcome.applied}))
        verb = "would apply" if args.diff else "applied"
        print(f"{path}: {verb} {len(outcome.applied)} fix(es): {titles}", file=sys.stderr)
    if not changed:
        hint = "" if args.unsafe_fixes else " (unsafe fixes are not applied without --unsafe-fixes)"
        print(f"no fixes to apply{hint}", file=sys.stderr)
    if problems:
        return EXIT_ERROR
    return EXIT_FINDINGS if (changed and args.diff) else EXIT_CLEAN
