"""Handlers get the snapshot and the services they use, never the server (read from the features' own code)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from warpwise.server.services import SERVICE_NAMES

FEATURES = Path(__file__).resolve().parents[2] / "server" / "features"
SERVER_NAMES = frozenset({"ls", "server", "self_server"})


def reaches_for_the_server(source: str) -> list[str]:
    """Return every place where feature code takes or reaches the server object."""
    tree = ast.parse(source)
    out: list[str] = []
    for node in ast.walk(tree):
        imported = (
            [node.module]
            if isinstance(node, ast.ImportFrom)
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        if "warpwise.server.app" in imported:
            out.append(f"line {node.lineno}: imports warpwise.server.app")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            args = node.args
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                if a.arg in SERVER_NAMES:
                    out.append(f"line {node.lineno}: parameter `{a.arg}`")
                if a.annotation is not None and "WarpwiseServer" in ast.unparse(a.annotation):
                    out.append(f"line {node.lineno}: parameter `{a.arg}` typed as the server")
            if not isinstance(node, ast.Lambda):
                for a in args.kwonlyargs:
                    if a.arg not in SERVICE_NAMES:
                        out.append(f"line {node.lineno}: `{node.name}` asks for `{a.arg}`, which is no service")
        elif isinstance(node, ast.Name) and node.id == "WarpwiseServer":
            out.append(f"line {node.lineno}: names WarpwiseServer")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_server"):
            out.append(f"line {node.lineno}: reaches behind a service (`.{node.attr}`)")
    return out


def test_no_handler_reaches_for_the_server() -> None:
    problems = {}
    for path in sorted(FEATURES.glob("*.py")):
        found = reaches_for_the_server(path.read_text(encoding="utf-8"))
        if found:
            problems[path.name] = found
    assert not problems, problems
    assert len(list(FEATURES.glob("*.py"))) > 5  # The features are there to be read.


def test_the_check_fails_on_a_handler_that_takes_the_server() -> None:
    bad = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from warpwise.server.app import WarpwiseServer

        async def hover(ls: WarpwiseServer, analysis, params):
            return ls.verification.gpu

        def status(params, *, editor, server_state):
            return editor._server.status_payload()
        """
    )
    found = "\n".join(reaches_for_the_server(bad))
    assert "imports warpwise.server.app" in found
    assert "parameter `ls`" in found and "typed as the server" in found
    assert "`server_state`, which is no service" in found
    assert "reaches behind a service" in found
    good = "async def hover(analysis, params, *, verification, client):\n    return verification.gpu\n"
    assert reaches_for_the_server(good) == []
