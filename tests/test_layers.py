"""The import rules of docs/architecture.md, checked from the code's own imports.

Layers import only downward: analyzers, then verify (the gate knows kernels and specs, never cards), then skills,
then lineages, then ranking (which learns from lineage evidence; lineages never ask the ranking), then search,
then the server and the command line. Only `server/` imports pygls or lsprotocol. The worker-side modules import
only the standard library, numpy/torch, the CUDA bindings and each other. Every import counts, including the ones
inside functions, so a lazy import cannot hide an upward dependency.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Each layer with the layers it may import (its own included). The root package `warpwise` (its `__version__`)
# may be imported by anyone.
LAYERS: dict[str, frozenset[str]] = {}
_ORDER = ("analyzers", "verify", "skills", "lineages", "ranking", "search", "server")
for _i, _name in enumerate(_ORDER):
    LAYERS[_name] = frozenset(_ORDER[: _i + 1])
LAYERS["warpwise"] = frozenset((*_ORDER, "warpwise"))

# Where each layer's code lives (folder relative to the repository root).
FOLDERS = {name: name for name in LAYERS}

LSP_PACKAGES = frozenset({"pygls", "lsprotocol", "cattrs"})
# The worker side: everything in verify/worker/, plus the plain modules it shares with the parent (the result types
# and the provenance stamp the worker signs its results with).
WORKER_MODULES = (
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "verify" / "worker").glob("*.py")),
    "verify/types.py",
    "verify/provenance.py",
)
# numpy/torch, and NVIDIA's bindings: the CUDA Python bindings and NVML's (clock and temperature readings).
WORKER_THIRD_PARTY = frozenset({"numpy", "torch", "cuda", "pynvml"})


@dataclass(frozen=True)
class Violation:
    """One import that breaks a rule: where it is, what it imports, and which rule it breaks."""

    path: str
    line: int
    target: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: imports {self.target} ({self.rule})"


def _imports(path: Path, root: Path) -> list[tuple[int, str]]:
    """Return (line, module) for every absolute import in a file.

    `from a import b` yields `a.b` (b may be a module: `from warpwise import ranking`), and `a` alone when `a` is not
    the root package, so one statement is one entry per name it brings in.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return out


def _layer_of(module: str, layers: dict[str, frozenset[str]]) -> str | None:
    """Return the layer a `warpwise.*` module belongs to (None for the root package itself and non-project code)."""
    parts = module.split(".")
    if parts[0] != "warpwise" or len(parts) < 2 or parts[1].startswith("__"):
        return None
    return parts[1] if parts[1] in layers and parts[1] != "warpwise" else "warpwise"


def layer_violations(root: Path, layers: dict[str, frozenset[str]] = LAYERS) -> list[Violation]:
    """Return every import in the layers' folders under `root` that reaches a layer it may not."""
    found: list[Violation] = []
    for layer, allowed in layers.items():
        folder = root / FOLDERS.get(layer, layer)
        for path in sorted(folder.rglob("*.py")):
            rel = str(path.relative_to(root))
            seen: set[tuple[int, str]] = set()
            for line, module in _imports(path, root):
                top = module.split(".")[0]
                target = _layer_of(module, layers)
                if top in LSP_PACKAGES and layer != "server":
                    rule = "only server/ speaks LSP"
                elif target is not None and target not in allowed:
                    rule = f"{layer} may import only {', '.join(sorted(allowed))}"
                else:
                    continue
                if (line, rule) not in seen:
                    seen.add((line, rule))
                    found.append(Violation(rel, line, module, rule))
    return found


def worker_violations(root: Path, modules: tuple[str, ...] = WORKER_MODULES) -> list[Violation]:
    """Return imports of the worker-side modules beyond the standard library, numpy/torch, CUDA and each other."""
    own = {"warpwise." + m[: -len(".py")].replace("/", ".").removesuffix(".__init__") for m in modules}
    found: list[Violation] = []
    for rel in modules:
        for line, module in _imports(root / rel, root):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in WORKER_THIRD_PARTY or top == "__future__":
                continue
            if top == "warpwise" and (module in own or any(module.startswith(o + ".") for o in own)):
                continue
            found.append(Violation(rel, line, module, "worker-side modules import only plain dependencies"))
    return found


def test_layers_import_only_downward() -> None:
    bad = layer_violations(ROOT)
    assert not bad, "upward or LSP imports:\n" + "\n".join(map(str, bad))


def test_worker_side_modules_import_only_plain_dependencies() -> None:
    bad = worker_violations(ROOT)
    assert not bad, "\n".join(map(str, bad))


@pytest.mark.parametrize(
    ("layer", "code", "rule"),
    [
        ("analyzers", "from warpwise.verify.gate import Gate\n", "analyzers may import only analyzers"),
        ("verify", "def f():\n    from warpwise.skills import engine\n", "verify may import only"),
        ("lineages", "from warpwise import ranking\n", "lineages may import only"),
        ("skills", "import lsprotocol.types\n", "only server/ speaks LSP"),
        ("search", "from warpwise.server.app import Server\n", "search may import only"),
    ],
)
def test_the_layer_check_fails_on_an_upward_import(tmp_path: Path, layer: str, code: str, rule: str) -> None:
    """The checker itself: a copy of the layer folders with one upward import added must be reported."""
    for name in LAYERS:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text('"""Empty."""\n')
    assert layer_violations(tmp_path) == []
    (tmp_path / layer / "added.py").write_text(code)
    bad = layer_violations(tmp_path)
    assert len(bad) == 1 and bad[0].path == f"{layer}/added.py" and rule in bad[0].rule, bad


def test_the_worker_check_fails_on_a_project_import(tmp_path: Path) -> None:
    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "worker.py").write_text("import json\nimport torch\nfrom warpwise.verify import types\n")
    (tmp_path / "verify" / "types.py").write_text("import dataclasses\n")
    assert worker_violations(tmp_path, ("verify/worker.py", "verify/types.py")) == []
    (tmp_path / "verify" / "types.py").write_text("from warpwise.skills.engine import match_file\n")
    (bad,) = worker_violations(tmp_path, ("verify/worker.py", "verify/types.py"))
    assert bad.target.startswith("warpwise.skills")
