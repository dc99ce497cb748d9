"""Precondition verdicts: every machine check has a case where it holds, one where it is violated, and one where
it is unknown (or a stated reason, in `EXEMPT`, why it cannot give that verdict).

Cases live in `tests/skills/cases_*.py` modules (one per family of cards), each defining `CASES` (a list of
(card id, precondition id, expected verdict, source)) and `EXEMPT` ({check name: {verdict: reason}}).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests.skills.cardtest import verdicts
from warpwise.skills.library import builtin_library
from warpwise.skills.regions import CHECKS, VerdictStatus

H, V, U = VerdictStatus.HOLDS, VerdictStatus.VIOLATED, VerdictStatus.UNKNOWN
CASES: list[tuple[str, str, VerdictStatus, str]] = []
EXEMPT: dict[str, dict[VerdictStatus, str]] = {}
for _path in sorted(Path(__file__).parent.glob("cases_*.py")):
    _mod = importlib.import_module(f"tests.skills.{_path.stem}")
    CASES.extend(_mod.CASES)
    for _name, _why in _mod.EXEMPT.items():
        EXEMPT.setdefault(_name, {}).update(_why)


@pytest.mark.parametrize(
    ("card", "pre", "status", "source"), CASES, ids=lambda v: str(v)[:40] if isinstance(v, str) else None
)
def test_verdict(card: str, pre: str, status: VerdictStatus, source: str) -> None:
    got = verdicts(card, source, pre)
    assert got, f"{card}'s matcher found no region"
    assert status in got, f"{card}/{pre}: expected {status.value}, got {[g.value for g in got]}"


def test_every_check_is_covered_three_ways() -> None:
    lib = builtin_library()
    used: dict[str, str] = {}
    for card in lib:
        for _, pre in card.header.preconditions.items():
            ref = pre.check_ref
            if ref is not None:
                used.setdefault(ref.name, f"{card.skill_id}/{pre.id}")
    covered: dict[str, set[VerdictStatus]] = {}
    for card_id, pre_id, status, _ in CASES:
        card = lib.get(card_id)
        assert card is not None, card_id
        pre = next(p for _, p in card.header.preconditions.items() if p.id == pre_id)
        assert pre.check_ref is not None, f"{card_id}/{pre_id} has no machine check"
        covered.setdefault(pre.check_ref.name, set()).add(status)
    for name, where in sorted(used.items()):
        assert name in CHECKS, name
        missing = {H, V, U} - covered.get(name, set()) - set(EXEMPT.get(name, {}))
        assert not missing, f"check {name} (used by {where}) lacks cases for {sorted(m.value for m in missing)}"
