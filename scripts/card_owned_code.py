"""List the definitions of the shared engine modules that only one card uses, which belong in that card's folder.

A card folder's rules module (`skills/<card-id>/<card_id>.py`) holds what only that card uses; the engine modules
(`skills/matchers/`, `skills/checks/`, `skills/rewrites/`) and the shared facts (`analyzers/facts*.py`) hold what
several cards share. This reads the code's own imports and names (AST, nothing is imported): each card's roots are
the shared names its rules module imports and the registered matcher and checks its `card.md` names; a shared
definition reached from exactly one card and from nothing else in the repository (other modules, tests,
module-level code) is reported.

    python scripts/card_owned_code.py          # prints `module.name  <- card` lines; exit 1 when any is found
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SKILLS = ROOT / "skills"
PACKAGE = "warpwise.skills"


def _engine_modules() -> dict[str, Path]:
    mods = {f"warpwise.analyzers.{p.stem}": p for p in (ROOT / "analyzers").glob("facts*.py")}
    for pkg in ("matchers", "checks", "rewrites"):
        mods.update({f"{PACKAGE}.{pkg}.{p.stem}": p for p in (SKILLS / pkg).glob("*.py") if p.stem != "__init__"})
    return mods


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def main() -> int:
    """Print the shared definitions that one card alone uses."""
    mods = _engine_modules()
    defs: dict[tuple[str, str], ast.stmt] = {}
    imports: dict[str, dict[str, tuple[str, str]]] = {}
    roots: set[tuple[str, str]] = set()  # Reached from module-level code of the engine itself.
    registered: dict[tuple[str, str], tuple[str, str]] = {}
    for mod, path in mods.items():
        imports[mod] = {}
        for st in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(st, ast.ImportFrom) and st.module in mods:
                for a in st.names:
                    imports[mod][a.asname or a.name] = (st.module, a.name)
            elif isinstance(st, ast.FunctionDef | ast.ClassDef):
                defs[(mod, st.name)] = st
                for dec in getattr(st, "decorator_list", []):
                    call = isinstance(dec, ast.Call) and isinstance(dec.func, ast.Name) and dec.args
                    if call and isinstance(dec.args[0], ast.Constant):
                        registered[(dec.func.id, str(dec.args[0].value))] = (mod, st.name)
            elif isinstance(st, ast.Assign | ast.AnnAssign):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        defs[(mod, t.id)] = st
            elif not isinstance(st, ast.Import | ast.ImportFrom | ast.Expr):
                roots.update((mod, n) for n in _names(st))

    def resolve(mod: str, name: str) -> tuple[str, str] | None:
        if (mod, name) in defs:
            return (mod, name)
        target = imports[mod].get(name)
        return target if target in defs else None

    def reach(start: set[tuple[str, str]]) -> set[tuple[str, str]]:
        seen: set[tuple[str, str]] = set()
        todo = [k for k in start if k in defs]
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            todo.extend(r for n in _names(defs[key]) if (r := resolve(key[0], n)) and r != key)
        return seen

    users: dict[tuple[str, str], set[str]] = {k: set() for k in defs}
    starts: dict[str, set[tuple[str, str]]] = {}
    borrows: dict[str, set[str]] = {}
    for card in sorted(SKILLS.glob("*/card.md")):
        cid = card.parent.name
        start: set[tuple[str, str]] = set()
        header = yaml.safe_load(card.read_text(encoding="utf-8").split("---")[1])
        if (hit := registered.get(("matcher", str(header["anchor"]["matcher"])))) is not None:
            start.add(hit)
        for pres in (header.get("preconditions") or {}).values():
            for pre in pres or []:
                ref = pre.get("check")
                name = ref.get("name") if isinstance(ref, dict) else ref
                if name and (hit := registered.get(("check", str(name)))) is not None:
                    start.add(hit)
        rules = card.parent / f"{cid.replace('-', '_')}.py"
        if rules.is_file():
            for node in ast.walk(ast.parse(rules.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module in mods:
                    start.update((node.module, a.name) for a in node.names)
                # A card that runs another card's rules module (`card_rules("other-card")`) uses its code.
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id in ("card_rules", "rules_module_name")
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    borrows.setdefault(cid, set()).add(str(node.args[0].value))
        starts[cid] = start
    for cid, start in starts.items():
        for other in borrows.get(cid, set()):
            start = start | starts.get(other, set())
        for key in reach(start):
            users[key].add(cid)
    outside = set(roots)
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        # Build outputs hold copies of the engine (the VS Code extension bundles it), which would count as users.
        skipped = (".venv/", "build/", "dist/", "vscode-extension/", ".e2e/")
        if rel.startswith(skipped) or path in mods.values() or path.parent.parent == SKILLS:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in mods:
                outside.update((node.module, a.name) for a in node.names)
    shared = reach(outside) | {k for k, u in users.items() if not u}
    found = sorted((k, next(iter(u))) for k, u in users.items() if len(u) == 1 and k not in reach(shared))
    for (mod, name), cid in found:
        print(f"{mod.removeprefix(PACKAGE + '.')}.{name}  <- {cid}")
    print(f"{len(found)} shared definitions are used by one card only", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
