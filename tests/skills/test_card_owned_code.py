"""Shared facts and engine modules hold nothing only one card uses (`scripts/card_owned_code.py`, run as a test)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("card_owned_code", ROOT / "scripts" / "card_owned_code.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_shared_definition_serves_one_card_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert _script().main() == 0, capsys.readouterr().out


CARD = """---
skill_id: {cid}
anchor:
  matcher: {matcher}
---
"""


def _card(root: Path, cid: str, rules: str) -> None:
    folder = root / "skills" / cid
    folder.mkdir(parents=True)
    (folder / "card.md").write_text(CARD.format(cid=cid, matcher=cid.replace("-", "_")))
    (folder / f"{cid.replace('-', '_')}.py").write_text(rules)


def test_the_check_sees_a_definition_one_card_uses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "analyzers").mkdir()
    (tmp_path / "analyzers" / "facts.py").write_text("def both():\n    return 1\n")
    for pkg in ("matchers", "checks", "rewrites"):
        (tmp_path / "skills" / pkg).mkdir(parents=True)
    (tmp_path / "skills" / "rewrites" / "shared.py").write_text("def mine():\n    return 2\n")
    _card(
        tmp_path,
        "card-a",
        "from warpwise.analyzers.facts import both\nfrom warpwise.skills.rewrites.shared import mine\n",
    )
    _card(tmp_path, "card-b", "from warpwise.analyzers.facts import both\n")
    script = _script()
    script.ROOT, script.SKILLS = tmp_path, tmp_path / "skills"
    assert script.main() == 1
    assert capsys.readouterr().out.split() == ["rewrites.shared.mine", "<-", "card-a"]
    # A card that runs another card's rules module shares what that card uses.
    _card(tmp_path, "card-c", 'mod = rules_module_name("card-a")\n')
    assert script.main() == 0
