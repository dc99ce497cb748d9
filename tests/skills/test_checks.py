"""Precondition verdicts: every machine check has a case where it holds, one where it is violated, and one where
it is unknown (or a stated reason, in `exempt`, why it cannot give that verdict).

Each card folder holds its cases in `skills/<card-id>/fixtures/verdicts.yaml`: `cases`, a list of
{precondition, verdict, source}, and `exempt`, {check name: {verdict: reason}}. The test reads every card's file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.skills.cardtest import CARD_FOLDERS, verdicts
from warpwise.skills.library import builtin_library
from warpwise.skills.regions import CHECKS, VerdictStatus

H, V, U = VerdictStatus.HOLDS, VerdictStatus.VIOLATED, VerdictStatus.UNKNOWN
VERDICTS = "verdicts.yaml"


def _read(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    assert isinstance(data, dict) and set(data) <= {"cases", "exempt"}, f"{path}: keys are `cases` and `exempt`"
    return data


CASES: list[tuple[str, str, VerdictStatus, str]] = []
EXEMPT: dict[str, dict[VerdictStatus, str]] = {}
for _folder in CARD_FOLDERS:
    _path = _folder / "fixtures" / VERDICTS
    if not _path.is_file():
        continue
    _data = _read(_path)
    for _case in _data.get("cases") or []:
        CASES.append((_folder.name, _case["precondition"], VerdictStatus(_case["verdict"]), _case["source"]))
    for _name, _why in (_data.get("exempt") or {}).items():
        EXEMPT.setdefault(_name, {}).update({VerdictStatus(s): r for s, r in _why.items()})


def test_cases_were_read() -> None:
    assert len(CASES) >= 100 and EXEMPT


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
        pre = next((p for _, p in card.header.preconditions.items() if p.id == pre_id), None)
        assert pre is not None, f"{card_id} has no precondition {pre_id!r} (skills/{card_id}/fixtures/{VERDICTS})"
        assert pre.check_ref is not None, f"{card_id}/{pre_id} has no machine check"
        covered.setdefault(pre.check_ref.name, set()).add(status)
    for name, where in sorted(used.items()):
        assert name in CHECKS, name
        missing = {H, V, U} - covered.get(name, set()) - set(EXEMPT.get(name, {}))
        assert not missing, f"check {name} (used by {where}) lacks cases for {sorted(m.value for m in missing)}"
