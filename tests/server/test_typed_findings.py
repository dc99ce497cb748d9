"""A finding keeps its types up to the LSP edge: enums stay enums in the editor's items (`server/providers.py`).

`server/convert.py` is where LSP types are made; before it, a card finding's applicability, severity and its
verdicts' axis and status are the engine's enums, not strings made from them half-way.
"""

from __future__ import annotations

import typing

from tests.conftest import EXAMPLES
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.findings import Severity
from warpwise.server.providers import CardProvider, Item, RuleProvider, Verdict, collect_items
from warpwise.server.settings import DEFAULTS
from warpwise.skills.model import Applicability, Axis
from warpwise.skills.regions import VerdictStatus


def test_the_item_types_name_the_enums() -> None:
    item, verdict = typing.get_type_hints(Item), typing.get_type_hints(Verdict)
    assert item["applicability"] == Applicability | None and item["severity"] is Severity
    assert verdict["axis"] is Axis and verdict["verdict"] is VerdictStatus


def test_card_items_of_an_example_hold_enums() -> None:
    path = EXAMPLES / "matmul.cu"
    model = analyze_text(path.read_text(), str(path))
    provider = CardProvider()
    provider.available()
    items, problems = collect_items([RuleProvider(), provider], model, DEFAULTS)
    cards = [i for i in items if i.source == "card"]
    assert not problems and cards and any(i.verdicts for i in cards)
    for i in cards:
        assert isinstance(i.applicability, Applicability) and isinstance(i.severity, Severity)
        assert all(isinstance(v.axis, Axis) and isinstance(v.verdict, VerdictStatus) for v in i.verdicts)
