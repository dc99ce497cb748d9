"""The `warpwise` command line.

Exit codes (the same for every subcommand):
  0  clean: the command ran and found nothing to report
  1  findings: the command ran and reported findings (or a verification did not pass)
  2  usage or input error: bad arguments, a missing or unreadable path, invalid settings
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from warpwise import __version__

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2

# Each subcommand lives in its own module under `warpwise.commands` and registers itself with `@command`.
COMMAND_MODULES = (
    "warpwise.commands.check",
    "warpwise.commands.cards",
    "warpwise.commands.serve",
    "warpwise.commands.verify",
    "warpwise.commands.cache",
    "warpwise.commands.worker",
    "warpwise.commands.lineage",
    "warpwise.commands.optimize",
    "warpwise.commands.generate",
    "warpwise.commands.ranking",
)

Handler = Callable[[argparse.Namespace], int]
_COMMANDS: list[tuple[str, Callable[[argparse._SubParsersAction], None]]] = []


def command(name: str) -> Callable[[Callable[[argparse._SubParsersAction], None]], Callable]:
    """Register a function that adds one subcommand to the parser."""

    def wrap(fn: Callable[[argparse._SubParsersAction], None]) -> Callable:
        _COMMANDS.append((name, fn))
        return fn

    return wrap


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors exit with code 2 and one clear line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_ERROR)


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level argument parser with every registered subcommand."""
    parser = _Parser(
        prog="warpwise",
        description="warpwise: a CUDA performance assistant. It finds optimisation opportunities in CUDA "
        "kernels, verifies rewrites on a GPU, and serves the results to editors.",
        epilog="Exit codes: 0 clean, 1 findings (or a failed verification), 2 usage or input error.",
    )
    parser.add_argument("--version", action="version", version=f"warpwise {__version__}")
    parser.add_argument(
        "--team-key-file",
        metavar="FILE",
        help="the team's key file (mode 600): results measured here are signed with it, results signed with it "
        "elsewhere keep their status (default: $WARPWISE_TEAM_KEY_FILE)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in COMMAND_MODULES:
        importlib.import_module(module)
    seen: set[str] = set()
    for name, add in _COMMANDS:
        if name in seen:
            continue
        seen.add(name)
        add(sub)
    return parser


def _use_team_key_file(path: str) -> bool:
    """Check a `--team-key-file` and make it this process's (and its workers') key file; say why not."""
    from warpwise.verify import provenance

    try:
        provenance.read_key_file(path)
    except provenance.KeyFileError as exc:
        print(f"warpwise: error: --team-key-file: {exc}", file=sys.stderr)
        return False
    # The path, never the key, goes into the environment, where the worker processes started from here read it.
    os.environ[provenance.KEY_FILE_ENV] = str(Path(path).expanduser().resolve())
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    if args.team_key_file is not None and not _use_team_key_file(args.team_key_file):
        return EXIT_ERROR
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        print("warpwise: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN


if __name__ == "__main__":
    raise SystemExit(main())
