"""Data-driven card fixtures: every card has positive cases that fire (with the expected rewrite), near-misses that
must not fire; rewritten files re-parse, compile with nvcc, and the card no longer fires (fix convergence)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.nvcc import compile_many
from tests.skills.cardtest import CARD_FIXTURES, matches, nvcc_compiles, rewrite_all
from warpwise.analyzers.build import analyze_text
from warpwise.skills.library import CARD_FOLDERS, builtin_library, card_folders

LIB = builtin_library()
# Interim (issue 20): a card in its own folder `skills/<card-id>/` keeps its fixtures in `skills/<card-id>/fixtures/`.
FOLDER_FIXTURES = sorted(f / "fixtures" for f in card_folders())
POSITIVE = sorted(
    p
    for pattern in ("*/pos_*.cu", *(f"{f.parent.name}/fixtures/pos_*.cu" for f in FOLDER_FIXTURES))
    for p in (CARD_FIXTURES.glob(pattern) if "/fixtures/" not in pattern else CARD_FOLDERS.glob(pattern))
    if not p.name.endswith(".expected.cu")
)
NEGATIVE = sorted([*CARD_FIXTURES.glob("*/neg_*.cu"), *(p for f in FOLDER_FIXTURES for p in f.glob("neg_*.cu"))])


def _card_of(p: Path) -> str:
    return p.parent.parent.name if p.parent.name == "fixtures" else p.parent.name


def _id(p: Path) -> str:
    return f"{_card_of(p)}/{p.name}"


def test_library_loads_clean() -> None:
    assert LIB.problems == []
    assert len(LIB) >= 7


@pytest.mark.parametrize("card_id", sorted(LIB.cards))
def test_every_card_has_fixtures(card_id: str) -> None:
    folder = CARD_FIXTURES / card_id
    if not folder.is_dir() and (CARD_FOLDERS / card_id / "fixtures").is_dir():
        folder = CARD_FOLDERS / card_id / "fixtures"
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
    card_id = _card_of(path)
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
    found = matches(_card_of(path), path.read_bytes())
    assert found == [], [m.message for m in found]


@pytest.fixture(scope="module")
def compiled_fixtures() -> dict[Path, tuple[bool, str]]:
    """Compile every fixture and every expected rewrite at once, on all cores."""
    paths = POSITIVE + NEGATIVE + sorted(p.with_name(p.stem + ".expected.cu") for p in POSITIVE)
    paths = [p for p in dict.fromkeys(paths) if p.exists()]
    return dict(zip(paths, compile_many([p.read_bytes() for p in paths]), strict=True))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")
@pytest.mark.parametrize("path", POSITIVE + NEGATIVE, ids=_id)
def test_fixture_sources_compile(path: Path, compiled_fixtures: dict[Path, tuple[bool, str]]) -> None:
    ok, log = compiled_fixtures[path]
    assert ok, log
