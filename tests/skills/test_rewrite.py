"""Edits as data: the one `apply_edits` refuses overlaps, and merging fixes skips a fix that overlaps another."""

from __future__ import annotations

import pytest

from warpwise.skills.engine import merge_fixes
from warpwise.skills.model import Applicability
from warpwise.skills.rewrite import Edit, EditConflict, Fix, apply_edits

TEXT = b"float x = a + b;"


def test_edits_apply_in_offset_order_whatever_order_they_come_in() -> None:
    edits = [Edit(14, 15, "c"), Edit(0, 5, "double")]
    assert apply_edits(TEXT, edits) == b"double x = a + c;"


@pytest.mark.parametrize(
    "edits",
    [
        [Edit(0, 5, "double"), Edit(3, 7, "y")],  # overlapping ranges
        [Edit(6, 6, "/*a*/"), Edit(6, 6, "/*b*/")],  # two insertions at one place: their order would be a guess
        [Edit(10, 99, "")],  # past the end of the text
        [Edit(5, 3, "")],  # end before start
    ],
)
def test_overlapping_or_out_of_range_edits_are_refused(edits: list[Edit]) -> None:
    with pytest.raises(EditConflict):
        apply_edits(TEXT, edits)


def test_touching_edits_are_not_an_overlap() -> None:
    assert apply_edits(TEXT, [Edit(0, 5, "int"), Edit(5, 5, "*")]) == b"int* x = a + b;"


def test_merging_fixes_skips_a_fix_that_overlaps_one_taken() -> None:
    first = Fix("a", "first", (Edit(0, 5, "double"),), Applicability.SAFE)
    clash = Fix("b", "clash", (Edit(4, 6, "?"),), Applicability.SAFE)
    other = Fix("c", "other", (Edit(14, 15, "c"),), Applicability.SAFE)
    merged = merge_fixes([first, clash, other])
    assert merged == [Edit(0, 5, "double"), Edit(14, 15, "c")]
    assert apply_edits(TEXT, merged) == b"double x = a + c;"


PACKAGES = ("warpwise", "analyzers", "skills", "verify", "lineages", "ranking", "search", "server")


def edit_appliers(source: str) -> list[str]:
    """Return the functions of a module named like the one edit applier (`apply_edits`, `_apply_edits`)."""
    import ast

    return [
        f"line {n.lineno}: {n.name}"
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.FunctionDef) and n.name.lstrip("_") == "apply_edits"
    ]


def test_apply_edits_is_defined_once() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = {
        str(p.relative_to(root)): hits
        for pkg in PACKAGES
        for p in sorted((root / pkg).rglob("*.py"))
        if (hits := edit_appliers(p.read_text(encoding="utf-8")))
    }
    assert found == {"skills/rewrite.py": [found["skills/rewrite.py"][0]]}
    assert edit_appliers("def _apply_edits(d, e):\n    return d\n")  # the check sees a second one


def test_nested_fixes_of_one_card_each_keep_their_parenthesis() -> None:
    text = b"y = t / 8 % 2 * 8;"
    inner = Fix("pow2", "inner", (Edit(4, 4, "("), Edit(6, 9, ">> 3"), Edit(9, 9, ")")), Applicability.SAFE)
    outer = Fix("pow2", "outer", (Edit(4, 4, "("), Edit(10, 13, "& 1"), Edit(13, 13, ")")), Applicability.SAFE)
    assert apply_edits(text, merge_fixes([inner, outer])) == b"y = ((t >> 3) & 1) * 8;"


def test_a_line_two_fixes_add_at_one_place_is_added_once_and_a_repeated_fix_is_skipped() -> None:
    include = Edit(0, 0, "#include <cuda_fp16.h>\n")
    a = Fix("half", "a", (include, Edit(0, 5, "__half")), Applicability.SAFE)
    b = Fix("half", "b", (include, Edit(14, 15, "c")), Applicability.SAFE)
    assert apply_edits(TEXT, merge_fixes([a, b, b])) == b"#include <cuda_fp16.h>\n__half x = a + c;"
