"""README.md lists every card (the table is generated; this fails when it drifts)."""

from __future__ import annotations

from tests.conftest import ROOT
from warpwise.skills.readme import updated


def test_readme_card_table_is_current() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert updated(text) == text, "run `make readme` and commit README.md"
