"""A card is a folder, and the engine names no card: the library finds the folders, no engine module lists them.

The engine is every module of `skills/` outside the card folders (library, registry, matching, fixes, evidence,
presentation, the family modules `matchers/`, `checks/`, `rewrites/`). Naming a card there, as a string or an
import of its rules module, would make adding or removing a card an edit of the engine. Docstrings may mention a
card as an example; code may not.
"""

from __future__ import annotations

import ast
from pathlib import Path

from warpwise.skills.library import BUILTIN_CARDS, CARD_MODULES, builtin_library

CARD_IDS = frozenset(p.parent.name for p in BUILTIN_CARDS.glob("*/card.md"))


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def names_of_cards(source: str, ids: frozenset[str] = CARD_IDS) -> list[str]:
    """Return where a module's code names a card: a string that is a card id, or an import of a card's module
    (`warpwise.skills.cards.<card_id>`, where the library loads a card's rules module)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if node.value in ids:
                out.append(f"line {node.lineno}: {node.value!r}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(CARD_MODULES):
            out.append(f"line {node.lineno}: imports from {node.module}")
        elif isinstance(node, ast.Import):
            out += [f"line {node.lineno}: imports {a.name}" for a in node.names if a.name.startswith(CARD_MODULES)]
    return out


def engine_modules() -> list[Path]:
    return [p for p in sorted(BUILTIN_CARDS.rglob("*.py")) if p.relative_to(BUILTIN_CARDS).parts[0] not in CARD_IDS]


def test_every_card_is_a_folder_the_library_finds() -> None:
    loaded = {c.skill_id for c in builtin_library() if (BUILTIN_CARDS / c.skill_id / "card.md").is_file()}
    assert CARD_IDS and loaded == CARD_IDS
    assert not list(BUILTIN_CARDS.glob("*.md")) or all(p.name == "README.md" for p in BUILTIN_CARDS.glob("*.md"))


def test_the_engine_names_no_card() -> None:
    found = {str(p.relative_to(BUILTIN_CARDS)): names_of_cards(p.read_text()) for p in engine_modules()}
    assert engine_modules() and not {k: v for k, v in found.items() if v}


def test_the_check_sees_a_card_named_in_code() -> None:
    some = sorted(CARD_IDS)[0]
    assert names_of_cards(f'"""Mentions {some} in prose."""\nX = 1\n') == []
    assert names_of_cards(f'SPECIAL = {{"{some}": 2}}\n')
    assert names_of_cards(f"from warpwise.skills.cards import {some.replace('-', '_')}\n")
    assert names_of_cards(f"import warpwise.skills.cards.{some.replace('-', '_')}\n")
