"""No `ImportError` guard around the project's own code: warpwise's packages are always installed together.

A guard belongs around an optional third-party dependency (the CUDA bindings, Dask, openai, scikit-learn,
matplotlib), where the message says which extra to install; around `warpwise.*` it only hides a broken import
behind an "unavailable" message. The test reads every module's syntax tree: a `try` whose handlers catch
`ImportError` (or `ModuleNotFoundError`) must not import a `warpwise` module in its body.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("analyzers", "skills", "verify", "lineages", "ranking", "search", "server", "warpwise")


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names)


def _own_imports(body: list[ast.stmt]) -> list[str]:
    out = []
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("warpwise"):
                out.append(str(node.module))
            elif isinstance(node, ast.Import):
                out.extend(a.name for a in node.names if a.name.startswith("warpwise"))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).startswith("warpwise")
            ):
                out.append(str(node.args[0].value))
    return out


def guarded_own_imports(source: str) -> list[tuple[int, str]]:
    """Return (line, module) for every import of a warpwise module inside a `try` that catches ImportError."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            found.extend((node.lineno, m) for m in _own_imports(node.body))
    return found


def test_the_check_sees_a_guard_around_own_code() -> None:
    guarded = "try:\n    from warpwise.search import ranking\nexcept ImportError:\n    ranking = None\n"
    assert guarded_own_imports(guarded) == [(1, "warpwise.search")]
    dynamic = (
        "try:\n    m = importlib.import_module('warpwise.skills.engine')\nexcept (ValueError, ImportError):\n    pass\n"
    )
    assert guarded_own_imports(dynamic) == [(1, "warpwise.skills.engine")]
    third_party = "try:\n    import sklearn\nexcept ImportError:\n    sklearn = None\n"
    assert guarded_own_imports(third_party) == []


def test_no_import_error_guard_around_own_code() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line} guards `{module}`"
        for folder in PACKAGES
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, module in guarded_own_imports(Path(path).read_text(encoding="utf-8"))
    ]
    assert offenders == []
