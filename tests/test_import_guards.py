"""No `ImportError` guard around the project's own code: warpwise's packages are always installed together.

A guard belongs around an optional third-party dependency (the CUDA bindings, Dask, openai, scikit-learn,
matplotlib), where the message says which extra to install; around `warpwise.*` it only hides a broken import
behind an "unavailable" message. The test reads the syntax tree of every Python file of the repository (the
packages, the tests, the benchmarks and the scripts): a `try` whose handlers catch `ImportError` (or
`ModuleNotFoundError`) must not import a `warpwise` module in its body, and must import something: a guard around a
call into the project's code (which may import a dependency inside) is a guard around the project's code.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

FOLDERS = (
    "analyzers",
    "skills",
    "verify",
    "lineages",
    "ranking",
    "search",
    "server",
    "warpwise",
    "tests",
    "bench",
    "scripts",
)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names)


def _imports(body: list[ast.stmt]) -> list[str]:
    """Return the modules the statements import (`?` for an `import_module` of a name not written out)."""
    out = []
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.ImportFrom):
                out.append("." * node.level + (node.module or ""))
            elif isinstance(node, ast.Import):
                out.extend(a.name for a in node.names)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "import_module"
            ):
                arg = node.args[0] if node.args else None
                out.append(str(arg.value) if isinstance(arg, ast.Constant) else "?")
    return out


def guarded_own_imports(source: str) -> list[tuple[int, str]]:
    """Return (line, what) for every `try` that catches ImportError around the project's code.

    `what` is the warpwise module imported under the guard, or `(no import)` for a guard whose body imports
    nothing (it catches an ImportError from a call into the project's code).
    """
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            imported = _imports(node.body)
            if not imported:
                found.append((node.lineno, "(no import)"))
            own = [m for m in imported if m.startswith(("warpwise", "."))]
            found.extend((node.lineno, m) for m in own)
    return found


def test_the_check_sees_a_guard_around_own_code() -> None:
    guarded = "try:\n    from warpwise.search import ranking\nexcept ImportError:\n    ranking = None\n"
    assert guarded_own_imports(guarded) == [(1, "warpwise.search")]
    dynamic = (
        "try:\n    m = importlib.import_module('warpwise.skills.engine')\nexcept (ValueError, ImportError):\n    pass\n"
    )
    assert guarded_own_imports(dynamic) == [(1, "warpwise.skills.engine")]
    relative = "try:\n    from . import ranking\nexcept ModuleNotFoundError:\n    ranking = None\n"
    assert guarded_own_imports(relative) == [(1, ".")]
    call = "try:\n    model = train(examples)\nexcept (ImportError, ValueError):\n    model = None\n"
    assert guarded_own_imports(call) == [(1, "(no import)")]
    third_party = "try:\n    import sklearn\nexcept ImportError:\n    sklearn = None\n"
    assert guarded_own_imports(third_party) == []
    card_reference = "try:\n    mod = importlib.import_module(name)\nexcept ImportError as exc:\n    raise X from exc\n"
    assert guarded_own_imports(card_reference) == []


def test_no_import_error_guard_around_own_code() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line} guards `{module}`"
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "fixtures" not in path.parts  # CUDA projects' Python that tests read as data
        for line, module in guarded_own_imports(Path(path).read_text(encoding="utf-8"))
    ]
    assert offenders == []
