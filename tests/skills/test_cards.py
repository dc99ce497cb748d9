"""Data-driven card fixtures: every card has positive cases that fire (with the expected rewrite), near-misses that
must not fire; rewritten files re-parse, compile with nvcc, and the card no longer fires (fix convergence)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from tests.nvcc import compile_many
from tests.skills.cardtest import card_of, fixture_files, matches, nvcc_compiles, rewrite_all
from warpwise.analyzers.build import analyze_text
from warpwise.skills.launches import grid_factor_cards
from warpwise.skills.library import BUILTIN_CARDS, CARD_FILE, builtin_library

LIB = builtin_library()
POSITIVE = [p for p in fixture_files("pos_*.cu") if not p.name.endswith(".expected.cu")]
NEGATIVE = fixture_files("neg_*.cu")


def _id(p: Path) -> str:
    return f"{card_of(p)}/{p.name}"


def test_library_loads_clean() -> None:
    assert LIB.problems == []
    assert len(LIB) >= 7


@pytest.mark.parametrize("card_id", sorted(LIB.cards))
def test_every_card_has_fixtures(card_id: str) -> None:
    folder = Path(LIB.cards[card_id].path).parent / "fixtures"
    assert folder.is_dir(), f"add fixtures under {folder}"
    pos = [p for p in folder.glob("pos_*.cu") if not p.name.endswith(".expected.cu")]
    assert pos, "at least one positive case"
    assert list(folder.glob("neg_*.cu")), "at least one near-miss"
    if LIB.cards[card_id].has_rewrite:
        for p in pos:
            assert p.with_name(p.stem + ".expected.cu").exists(), f"expected rewrite for {p.name}"


@pytest.mark.parametrize("path", POSITIVE, ids=_id)
def test_positive_fires_and_rewrites_exactly(
    path: Path, tmp_path: Path, compiled_fixtures: dict[Path, tuple[bool, str]]
) -> None:
    card_id = card_of(path)
    source = path.read_bytes()
    found = matches(card_id, source)
    assert found, f"{card_id} should fire on {path.name}"
    card = LIB.cards[card_id]
    if not card.has_rewrite:
        return
    expected = path.with_name(path.stem + ".expected.cu").read_bytes()
    rewritten = rewrite_all(card_id, source)
    assert rewritten.decode() == expected.decode()
    before = analyze_text(source)
    after = analyze_text(rewritten)
    assert len(after.syntax_problems) <= len(before.syntax_problems), after.syntax_problems
    ok, log = nvcc_compiles(rewritten, tmp_path)
    assert ok, log
    assert matches(card_id, rewritten) == [], "the card still fires after its own fix"


@pytest.mark.parametrize("path", NEGATIVE, ids=_id)
def test_near_miss_does_not_fire(path: Path) -> None:
    found = matches(card_of(path), path.read_bytes())
    assert found == [], [m.message for m in found]


@pytest.fixture(scope="module")
def compiled_fixtures() -> dict[Path, tuple[bool, str]]:
    """Compile every fixture and every expected rewrite at once, on all cores."""
    paths = POSITIVE + NEGATIVE + fixture_files("*.expected.cu")
    return dict(zip(paths, compile_many([p.read_bytes() for p in paths]), strict=True))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")
@pytest.mark.parametrize("path", POSITIVE + NEGATIVE, ids=_id)
def test_fixture_sources_compile(path: Path, compiled_fixtures: dict[Path, tuple[bool, str]]) -> None:
    ok, log = compiled_fixtures[path]
    assert ok, log


def _literals(tree: ast.AST) -> list[str]:
    """Return the string constants of a module, docstrings left out."""
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def test_the_engine_names_no_card() -> None:
    engine = [p for p in sorted(BUILTIN_CARDS.rglob("*.py")) if not (p.parent / CARD_FILE).exists()]
    assert any(p.name == "library.py" for p in engine) and all("fixtures" not in p.parts for p in engine)
    named = [
        (p.relative_to(BUILTIN_CARDS).as_posix(), s)
        for p in engine
        for s in _literals(ast.parse(p.read_text(encoding="utf-8")))
        if s in LIB.cards
    ]
    assert named == [], "the engine must not name cards; give the card's rules module a hook instead"


def test_launch_shrinking_cards_say_so_in_their_rules() -> None:
    assert grid_factor_cards(LIB) == {"one-element-per-thread", "scalar-global-access", "scalar-elementwise-map"}
