"""The card loader: every problem names the file and the field; KLineage SKILL.md cards load as display-only;
the committed JSON Schema matches the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from warpwise.skills.library import BUILTIN_CARDS, load_card, load_library
from warpwise.skills.model import Applicability
from warpwise.skills.schema import SCHEMA_PATH, render

GOOD = (BUILTIN_CARDS / "precise-math-call.md").read_text()


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def problems_of(tmp: Path, text: str, name: str = "precise-math-call.md") -> list[str]:
    card, problems = load_card(write(tmp, name, text))
    assert card is None
    return [str(p) for p in problems]


def test_good_card_loads(tmp_path: Path) -> None:
    card, problems = load_card(write(tmp_path, "precise-math-call.md", GOOD))
    assert problems == [] and card is not None
    assert card.has_rewrite and card.applicability is Applicability.UNSAFE
    assert "special function unit" in card.section("Overview")


def test_unknown_key(tmp_path: Path) -> None:
    probs = problems_of(tmp_path, GOOD.replace("status: preview", "status: preview\nstatuss: admitted"))
    assert any("statuss: unknown key" in p and "precise-math-call.md" in p for p in probs), probs


def test_missing_field(tmp_path: Path) -> None:
    text = "\n".join(line for line in GOOD.splitlines() if not line.startswith("intent:"))
    probs = problems_of(tmp_path, text)
    assert any(": intent: required field is missing" in p for p in probs), probs


def test_bad_enum_lists_allowed_values(tmp_path: Path) -> None:
    probs = problems_of(tmp_path, GOOD.replace("applicability: unsafe", "applicability: maybe"))
    assert any("applicability" in p and "'safe'" in p and "'display-only'" in p for p in probs), probs


def test_rewrite_that_does_not_import(tmp_path: Path) -> None:
    text = GOOD.replace("warpwise.skills.rewrites.core:fast_math_intrinsic", "warpwise.skills.rewrites.core:nope")
    probs = problems_of(tmp_path, text)
    assert any(": rewrite: " in p and "does not import" in p for p in probs), probs


def test_unknown_matcher_and_check(tmp_path: Path) -> None:
    text = GOOD.replace("matcher: math_calls_with_fast_intrinsic", "matcher: no_such_matcher")
    text = text.replace("check: is_float_math_call", "check: no_such_check")
    probs = problems_of(tmp_path, text)
    assert any("anchor.matcher" in p for p in probs) and any("no_such_check" in p for p in probs), probs


def test_file_name_must_match_id(tmp_path: Path) -> None:
    probs = problems_of(tmp_path, GOOD, name="other-name.md")
    assert any("should be named precise-math-call.md" in p for p in probs), probs


def test_yaml_error_points_at_a_line(tmp_path: Path) -> None:
    probs = problems_of(tmp_path, GOOD.replace("severity: hint", "severity: [hint"))
    assert any("line" in p and "does not parse" in p for p in probs), probs


def test_missing_body_section(tmp_path: Path) -> None:
    probs = problems_of(tmp_path, GOOD.replace("## When it does not help", "## Caveats"))
    assert any("When it does not help" in p for p in probs), probs


def test_duplicate_ids(tmp_path: Path) -> None:
    write(tmp_path, "precise-math-call.md", GOOD)
    lib = load_library([tmp_path])
    assert any("duplicate id 'precise-math-call'" in str(p) for p in lib.problems)
    assert "precise-math-call" in lib.cards


def test_klineage_skill_loads_as_display_only() -> None:
    lib = load_library([FIXTURES / "klineage"], include_builtin=False)
    assert lib.problems == []
    card = lib.get("warp-shuffle-reduction")
    assert card is not None and card.layout == "klineage"
    assert card.applicability is Applicability.DISPLAY_ONLY and not card.has_rewrite
    texts = [p.text for _, p in card.header.preconditions.items()]
    assert any("associative" in t for t in texts)
    assert card.header.scope.platforms == ["sm_70+"]
    assert "__shfl_down_sync" in card.body


@pytest.mark.parametrize("card", sorted(BUILTIN_CARDS.glob("*.md")), ids=lambda p: p.stem)
def test_builtin_cards_lint_clean(card: Path) -> None:
    loaded, problems = load_card(card)
    assert problems == [] and loaded is not None


def test_committed_schema_matches_model() -> None:
    assert SCHEMA_PATH.read_text() == render(), "run `python -m warpwise.skills.schema` and commit the file"
