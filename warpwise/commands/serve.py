"""`warpwise serve`: run the language server over stdio (default) or TCP."""

from __future__ import annotations

import argparse
import logging
import sys

from warpwise.cli import EXIT_CLEAN, EXIT_ERROR, command


@command("serve")
def _add_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="run the language server (for editors)",
        description="Run the warpwise language server. Editors start it over stdio; `--tcp` listens on a port "
        "instead (one client at a time). Logs go to stderr.",
    )
    p.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    p.add_argument("--tcp", action="store_true", help="listen for one LSP client on TCP")
    p.add_argument("--host", default="127.0.0.1", help="TCP address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=2087, help="TCP port to listen on (default: 2087)")
    p.add_argument(
        "--log-level",
        choices=("error", "warning", "info", "debug"),
        default="warning",
        help="what the server writes to stderr (default: warning)",
    )
    p.add_argument(
        "--settings-schema",
        action="store_true",
        help="print the JSON Schema of the server's settings (server/settings.schema.json) and exit",
    )
    p.set_defaults(handler=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    if args.settings_schema:
        from warpwise.server.settings import schema_json

        sys.stdout.write(schema_json())
        return EXIT_CLEAN
    if args.tcp and args.stdio:
        print("warpwise serve: error: choose one of --stdio and --tcp", file=sys.stderr)
        return EXIT_ERROR
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # pygls logs every message it sends at INFO; keep it quiet unless debugging.
    logging.getLogger("pygls").setLevel(logging.DEBUG if args.log_level == "debug" else logging.WARNING)
    from warpwise.server.app import serve

    serve("tcp" if args.tcp else "stdio", args.host, args.port)
    return EXIT_CLEAN
