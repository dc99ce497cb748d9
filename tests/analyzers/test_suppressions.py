"""NOLINT suppression comments: each form, ids of other tools, unused and malformed suppressions, the fix loop."""

from __future__ import annotations

from warpwise.analyzers.suppressions import UNUSED_RULE, read_suppressions, suppression_edit
from warpwise.engine import analyze_model, fix_text, known_rule_ids, parsed_model

KERNEL = """__global__ void scale(float* x, float* y, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;{line1}
{above}  if (i < n) y[i] = x[i] * 2.0;{line2}
}}
"""


def _source(line1: str = "", above: str = "", line2: str = "", prefix: str = "", suffix: str = "") -> bytes:
    return (prefix + KERNEL.format(line1=line1, above=above, line2=line2) + suffix).encode()


def _rules(text: bytes, select: set[str] | None = None) -> list[str]:
    return [f.rule for f in analyze_model(parsed_model(text, "t.cu"), select).findings]


def test_the_kernel_reports_a_double_literal_without_comments() -> None:
    assert "double-literal-promotion" in _rules(_source())


def test_nolint_on_the_line_suppresses_only_the_named_id() -> None:
    rules = _rules(_source(line2="  // NOLINT(warpwise-double-literal-promotion)"))
    assert "double-literal-promotion" not in rules
    assert "scalar-global-access" in rules
    assert UNUSED_RULE not in rules


def test_nolintnextline_suppresses_the_next_line_only() -> None:
    text = _source(above="  // NOLINTNEXTLINE(warpwise-double-literal-promotion, warpwise-scalar-global-access)\n")
    rules = _rules(text)
    assert "double-literal-promotion" not in rules and "scalar-global-access" not in rules
    # The same comment two lines above the finding suppresses nothing and says so.
    far = _source(line1="\n  // NOLINTNEXTLINE(warpwise-double-literal-promotion)\n")
    report = analyze_model(parsed_model(far, "t.cu"))
    unused = [f for f in report.findings if f.rule == UNUSED_RULE]
    assert "double-literal-promotion" in [f.rule for f in report.findings]
    assert len(unused) == 1 and "suppresses nothing" in unused[0].message
    assert unused[0].function == "scale"


def test_begin_end_block_and_globs() -> None:
    text = _source(prefix="/* NOLINTBEGIN(warpwise-*) */\n", suffix="// NOLINTEND(warpwise-*)\n")
    assert _rules(text) == []


def test_file_level_form() -> None:
    text = _source(suffix="// NOLINTFILE(warpwise-double-literal-promotion)\n")
    rules = _rules(text)
    assert "double-literal-promotion" not in rules and "scalar-global-access" in rules


def test_bare_nolint_suppresses_every_warpwise_finding_on_its_line_and_is_never_unused() -> None:
    rules = _rules(_source(line2="  // NOLINT"))
    assert "double-literal-promotion" not in rules and "scalar-global-access" not in rules
    assert UNUSED_RULE not in _rules(_source(line1="  // NOLINT"))


def test_ids_of_other_tools_are_left_alone() -> None:
    rules = _rules(_source(line2="  // NOLINT(bugprone-narrowing-conversions)"))
    assert "double-literal-promotion" in rules and UNUSED_RULE not in rules


def test_unknown_ids_and_unmatched_blocks_are_reported() -> None:
    report = analyze_model(
        parsed_model(_source(line2="  // NOLINT(warpwise-no-such-rule)", suffix="// NOLINTBEGIN(warpwise-x)\n"), "t.cu")
    )
    messages = [f.message for f in report.findings if f.rule == UNUSED_RULE]
    assert any("`warpwise-no-such-rule`" in m and "not a warpwise rule or card id" in m for m in messages)
    assert any("has no matching `NOLINTEND`" in m for m in messages)
    assert "double-literal-promotion" in [f.rule for f in report.findings]


def test_a_suppression_of_a_rule_that_is_not_selected_is_not_unused() -> None:
    text = _source(line1="  // NOLINT(warpwise-double-literal-promotion)")
    assert UNUSED_RULE in _rules(text)
    assert _rules(text, {"scalar-global-access"}) == ["scalar-global-access"]


def test_markers_inside_strings_are_not_comments() -> None:
    text = _source(prefix='const char* s = "// NOLINTFILE(warpwise-double-literal-promotion)";\n')
    assert not read_suppressions(parsed_model(text, "t.cu")).entries
    assert "double-literal-promotion" in _rules(text)


def test_the_fix_loop_leaves_suppressed_findings_alone() -> None:
    text = _source(line2="  // NOLINT(warpwise-double-literal-promotion)")
    assert fix_text(text, "t.cu", include_unsafe=True, select={"double-literal-promotion"}).text == text
    fixed = fix_text(_source(), "t.cu", include_unsafe=True, select={"double-literal-promotion"}).text
    assert b"2.0f" in fixed


def test_suppression_edit_inserts_a_comment_or_extends_the_one_above() -> None:
    model = parsed_model(_source(), "t.cu")
    span, text = suppression_edit(model, "double-literal-promotion", 2)
    assert text == "  // NOLINTNEXTLINE(warpwise-double-literal-promotion)\n"
    new = model.text[: span[0]] + text.encode() + model.text[span[1] :]
    again = parsed_model(new, "t.cu")
    span2, text2 = suppression_edit(again, "scalar-global-access", 3)
    assert text2 == ", warpwise-scalar-global-access"
    final = again.text[: span2[0]] + text2.encode() + again.text[span2[1] :]
    assert b"// NOLINTNEXTLINE(warpwise-double-literal-promotion, warpwise-scalar-global-access)\n" in final
    rules = _rules(final)
    assert "double-literal-promotion" not in rules and "scalar-global-access" not in rules


def test_known_ids_cover_rules_and_cards() -> None:
    known = known_rule_ids()
    assert {"syntax-error", UNUSED_RULE, "scalar-global-access", "uncoalesced-global-access"} <= known
