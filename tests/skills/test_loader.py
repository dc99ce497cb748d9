"""The card loader: every problem names the file and the field; KLineage SKILL.md cards load as display-only;
the committed JSON Schema matches the model."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from warpwise.skills.library import (
    BUILTIN_CARDS,
    CARD_FILE,
    builtin_library,
    iter_card_files,
    load_card,
    load_library,
    rules_module_path,
)
from warpwise.skills.model import Applicability
from warpwise.skills.schema import SCHEMA_PATH, render

BUILTIN = BUILTIN_CARDS / "precise-math-call"
GOOD = (BUILTIN / CARD_FILE).read_text()


def write(tmp: Path, name: str, text: str) -> Path:
    """Write a card folder `name/` with this card.md and, for the built-in card's id, a copy of its rules module."""
    folder = tmp / name
    folder.mkdir(parents=True, exist_ok=True)
    rules = rules_module_path(BUILTIN)
    if name == BUILTIN.name and rules.is_file():
        shutil.copy(rules, rules_module_path(folder))
    p = folder / CARD_FILE
    p.write_text(text)
    return p


def problems_of(tmp: Path, text: str, name: str = "precise-math-call") -> list[str]:
    card, problems = load_card(write(tmp, name, text))
    assert card is None
    return [str(p) for p in problems]


def test_good_card_loads(tmp_path: Path) -> None:
    card, problems = load_card(write(tmp_path, "precise-math-call", GOOD))
    assert problems == [] and card is not None
    assert card.has_rewrite and card.applicability is Applicability.UNSAFE
    assert "special function unit" in card.section("Overview")


def test_unknown_key(tmp_path: Path) -> None:
    probs = problems_of(tmp_path, GOOD.replace("status: preview", "status: preview\nstatuss: admitted"))
    assert any("statuss: unknown key" in p and "precise-math-call/card.md" in p for p in probs), probs


def test_missing_field(tmp_path: Path) -> None:
    text = "\n".join(line for line in GOOD.splitlines() if not line.startswith("intent:"))
    probs = problems_of(tmp_path, text)
    assert any(": intent: required field is missing" in p for p in probs), probs


def test_bad_enum_lists_allowed_values(tmp_path: Path) -> None:
    probs = problems_of(tmp_path, GOOD.replace("applicability: unsafe", "applicability: maybe"))
    assert any("applicability" in p and "'safe'" in p and "'display-only'" in p for p in probs), probs


def test_rewrite_that_does_not_import(tmp_path: Path) -> None:
    text = GOOD.replace("rewrite: fast_math_intrinsic", "rewrite: nope")
    probs = problems_of(tmp_path, text)
    assert any(": rewrite: " in p and "does not import" in p for p in probs), probs
    text = GOOD.replace("rewrite: fast_math_intrinsic", "rewrite: warpwise.skills.rewrites.core:nope")
    probs = problems_of(tmp_path, text)
    assert any(": rewrite: " in p and "does not import" in p for p in probs), probs


def test_other_rules_under_a_loaded_card_id(tmp_path: Path) -> None:
    assert "precise-math-call" in builtin_library().cards
    folder = write(tmp_path, "precise-math-call", GOOD)
    rules_module_path(folder.parent).write_text("X = 1\n")
    probs = [str(p) for p in load_card(folder)[1]]
    assert any("other rules for card 'precise-math-call' are loaded from" in p for p in probs), "\n".join(probs)


def test_unknown_matcher_and_check(tmp_path: Path) -> None:
    text = GOOD.replace("matcher: math_calls_with_fast_intrinsic", "matcher: no_such_matcher")
    text = text.replace("check: is_float_math_call", "check: no_such_check")
    probs = problems_of(tmp_path, text)
    assert any("anchor.matcher" in p for p in probs) and any("no_such_check" in p for p in probs), probs


def test_folder_name_must_match_id(tmp_path: Path) -> None:
    probs = problems_of(tmp_path, GOOD, name="other-name")
    assert any("other-name/card.md: skill_id: the card folder should be named precise-math-call" in p for p in probs), (
        probs
    )


def test_flat_file_name_must_match_id(tmp_path: Path) -> None:
    text = GOOD.replace("rewrite: fast_math_intrinsic", "rewrite: null").replace(
        "applicability: unsafe", "applicability: display-only"
    )
    (tmp_path / "other-name.md").write_text(text)
    card, problems = load_card(tmp_path / "other-name.md")
    assert card is None and any("should be named precise-math-call.md" in str(p) for p in problems), problems


def test_yaml_error_points_at_a_line(tmp_path: Path) -> None:
    probs = problems_of(tmp_path, GOOD.replace("severity: hint", "severity: [hint"))
    assert any("line" in p and "does not parse" in p for p in probs), probs


def test_missing_body_section(tmp_path: Path) -> None:
    probs = problems_of(tmp_path, GOOD.replace("## When it does not help", "## Caveats"))
    assert any("When it does not help" in p for p in probs), probs


def test_duplicate_ids(tmp_path: Path) -> None:
    write(tmp_path, "precise-math-call", GOOD)
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


@pytest.mark.parametrize("card", sorted(BUILTIN_CARDS.glob(f"*/{CARD_FILE}")), ids=lambda p: p.parent.name)
def test_builtin_cards_lint_clean(card: Path) -> None:
    loaded, problems = load_card(card)
    assert problems == [] and loaded is not None


def test_committed_schema_matches_model() -> None:
    assert SCHEMA_PATH.read_text() == render(), "run `python -m warpwise.skills.schema` and commit the file"


TINY_RULES = """
from warpwise.skills.regions import MATCHERS, check, holds, matcher
from warpwise.skills.rewrite import Edit


@matcher("tiny_card_calls")
def tiny_card_calls(ctx):
    yield from MATCHERS["math_calls_with_fast_intrinsic"](ctx)


@check("tiny_card_always")
def tiny_card_always(ctx):
    return holds("always")


def tiny_rewrite(ctx):
    return []
"""


def tiny_card(
    tmp: Path, rules: str = TINY_RULES, rewrite: str = "rules:tiny_rewrite", card_id: str = "tiny-card"
) -> Path:
    """Write a user card folder `<card_id>/` with its own rules module (rules modules load once per process, so
    each test that writes other rules uses its own card id)."""
    text = (
        GOOD.replace("skill_id: precise-math-call", f"skill_id: {card_id}")
        .replace("matcher: math_calls_with_fast_intrinsic", "matcher: tiny_card_calls")
        .replace("check: is_float_math_call", "check: tiny_card_always")
    )
    text = re.sub(r"^rewrite: .*$", f"rewrite: {rewrite}", text, count=1, flags=re.M)
    folder = tmp / card_id
    folder.mkdir()
    (folder / CARD_FILE).write_text(text)
    rules_module_path(folder).write_text(rules)
    return folder


def test_user_card_folder_registers_its_own_rules(tmp_path: Path) -> None:
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills.engine import match_file

    tiny_card(tmp_path)
    lib = load_library([tmp_path])
    assert lib.problems == [] and "tiny-card" in lib.cards
    card = lib.cards["tiny-card"]
    assert card.has_rewrite and card.rewrite_fn is not None and card.rewrite_fn.__name__ == "tiny_rewrite"
    src = "__global__ void k(float* x) { x[threadIdx.x] = expf(x[threadIdx.x]); }\n"
    found = match_file(analyze_text(src), lib, enabled={"tiny-card"})
    assert found and all(v.status.value == "holds" for m in found for v in m.verdicts if v.id == "single-precision")
    again = load_library([tmp_path])
    assert again.problems == [], "a second load of the same folder reuses its rules module"


def test_rules_module_that_does_not_import(tmp_path: Path) -> None:
    folder = tiny_card(tmp_path, rules="import no_such_module_anywhere\n", card_id="broken-card")
    card, problems = load_card(folder / CARD_FILE)
    assert card is None
    assert any("broken_card.py: (rules): the rules module does not import" in str(p) for p in problems), problems


def test_rules_module_must_be_named_after_the_folder(tmp_path: Path) -> None:
    folder = tiny_card(tmp_path, card_id="misnamed-card")
    (folder / "misnamed_card.py").rename(folder / "rules.py")
    card, problems = load_card(folder / CARD_FILE)
    assert card is None
    assert any("rules.py: (rules): a card's rules module must be named misnamed_card.py" in str(p) for p in problems)


def test_rewrite_of_own_module_needs_a_rules_module(tmp_path: Path) -> None:
    text = re.sub(r"^rewrite: .*$", "rewrite: fast_math_intrinsic", GOOD, count=1, flags=re.M)
    (tmp_path / "precise-math-call.md").write_text(text)
    card, problems = load_card(tmp_path / "precise-math-call.md")
    assert card is None
    assert any(": rewrite: " in str(p) and "no rules module" in str(p) for p in problems), problems


def test_card_folders_and_flat_cards_are_found_together(tmp_path: Path) -> None:
    tiny_card(tmp_path)
    (tmp_path / "tiny-card" / "fixtures").mkdir()
    (tmp_path / "tiny-card" / "fixtures" / "notes.md").write_text("# not a card\n")
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "x.md").write_text("---\nskill_id: X\nintent: a flat KLineage-style card\n---\n")
    files = [p.relative_to(tmp_path).as_posix() for p in iter_card_files([tmp_path])]
    assert files == ["flat/x.md", "tiny-card/card.md"]
