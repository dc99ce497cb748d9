"""Macro bodies fold as C folds them: truncating division and a remainder with the dividend's sign."""

from __future__ import annotations

import pytest

from warpwise.analyzers.build import eval_numeric_text


@pytest.mark.parametrize(
    ("text", "consts", "value"),
    [
        ("((1 - KS) / 2)", {"KS": 4}, -1),
        ("(-7 % 3)", {}, -1),
        ("(7 % -3)", {}, 1),
        ("(TM * TY)", {"TM": 8, "TY": 16}, 128),
        ("(BM + 4)", {"BM": 128}, 132),
        ("(1 << 4) | 1", {}, 17),
        ("7 / 2", {}, 3),
        ("0x10u", {}, 16),
    ],
)
def test_macro_bodies_fold_as_c(text: str, consts: dict[str, int], value: int) -> None:
    assert eval_numeric_text(text, consts) == value


@pytest.mark.parametrize("text", ["3.5", "N / 0", "UNKNOWN + 1", "(1 ? 2 : 3)"])
def test_what_is_not_an_integer_constant_folds_to_none(text: str) -> None:
    assert eval_numeric_text(text, {"N": 4}) is None
