"""Helpers for card fixture tests: run one card on a source, apply all its fixes, compile with nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.nvcc import compile_source
from warpwise.analyzers.build import analyze_text
from warpwise.skills.engine import Match, compute_fix, explain, match_file, merge_fixes
from warpwise.skills.library import BUILTIN_CARDS, CARD_FILE, SkillCard, builtin_library
from warpwise.skills.regions import VerdictStatus
from warpwise.skills.rewrite import apply_edits

# Every built-in card folder, skills/<card-id>/, holds its fixtures in skills/<card-id>/fixtures/.
CARD_FOLDERS = sorted(p.parent for p in BUILTIN_CARDS.glob(f"*/{CARD_FILE}"))


def fixture_files(pattern: str) -> list[Path]:
    """Return the fixture files of every built-in card that match a glob pattern (sorted)."""
    return sorted(p for folder in CARD_FOLDERS for p in (folder / "fixtures").glob(pattern))


def card_of(fixture: Path) -> str:
    """Return the id of the card a fixture file belongs to (skills/<card-id>/fixtures/<file>)."""
    return fixture.parent.parent.name


def copy_cards(dst: Path) -> Path:
    """Copy every built-in card folder (card, rules module, fixtures) to a folder; return it."""
    for folder in CARD_FOLDERS:
        shutil.copytree(folder, dst / folder.name, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def matches(card_id: str, source: bytes | str) -> list[Match]:
    """Return the matches of one card in a source text."""
    model = analyze_text(source)
    return match_file(model, builtin_library(), enabled={card_id})


def rewrite_all(card_id: str, source: bytes) -> bytes:
    """Apply every fix of one card (safe or unsafe) to a source, in one round."""
    model = analyze_text(source)
    fixes = [compute_fix(model, m) for m in match_file(model, builtin_library(), enabled={card_id})]
    edits = merge_fixes([f for f in fixes if f is not None])
    return apply_edits(source, edits) if edits else source


def verdicts(card_id: str, source: str, precondition: str) -> list[VerdictStatus]:
    """Return the verdicts of one precondition over every region the card's matcher finds."""
    card: SkillCard | None = builtin_library().get(card_id)
    assert card is not None, card_id
    model = analyze_text(source)
    out = []
    for _, vs in explain(model, card):
        out.extend(v.status for v in vs if v.id == precondition)
    return out


def nvcc_compiles(source: bytes, tmp: Path) -> tuple[bool, str]:
    """Compile a source for sm_90 with nvcc (cached by content); return (ok, log)."""
    return compile_source(source)
