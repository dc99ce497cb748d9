"""The quiet default: which findings are drawn as warnings, and the setting that restores every finding (issue 18)."""

from __future__ import annotations

import pytest

from warpwise.analyzers.findings import Severity
from warpwise.skills.presentation import MIN_P_VERIFIED, MIN_SPEEDUP, Outlook, rule_concern, shown_severity


def test_a_performance_finding_without_an_expected_gain_is_a_hint() -> None:
    assert shown_severity("shared-bank-conflict", Severity.WARNING) is Severity.HINT
    assert shown_severity("scalar-global-access", Severity.INFO, outlook=Outlook(1.05, 0.9)) is Severity.HINT
    assert shown_severity("scalar-global-access", Severity.INFO, outlook=Outlook(1.8, 0.3)) is Severity.HINT


@pytest.mark.parametrize(
    ("outlook", "expected"),
    [
        (Outlook(MIN_SPEEDUP, MIN_P_VERIFIED), Severity.WARNING),
        (Outlook(MIN_SPEEDUP - 0.01, 0.99), Severity.HINT),
        (Outlook(3.0, MIN_P_VERIFIED - 0.01), Severity.HINT),
        (Outlook(verified=True), Severity.WARNING),
        (None, Severity.HINT),
    ],
)
def test_an_expected_or_verified_gain_is_a_warning(outlook: Outlook | None, expected: Severity) -> None:
    assert shown_severity("scalar-global-access", Severity.HINT, outlook=outlook) is expected


def test_correctness_problems_and_notes_keep_their_declared_severity() -> None:
    assert rule_concern("divergent-syncthreads") == "correctness"
    assert rule_concern("uncoalesced-global-access") == "performance"
    assert shown_severity("divergent-syncthreads", Severity.ERROR, concern="correctness") is Severity.ERROR
    assert shown_severity("int32-index-overflow", Severity.WARNING, concern="correctness") is Severity.WARNING
    assert shown_severity("syntax-error", Severity.INFO) is Severity.INFO


def test_show_all_restores_every_declared_severity() -> None:
    for sev in Severity:
        assert shown_severity("shared-bank-conflict", sev, show_all=True) is sev
