"""How loudly a finding is shown: the quiet default, and the one setting that restores every finding.

People turn a tool off when most tokens of a kernel carry a squiggle. In the quiet default a finding is drawn as
a warning only when it is worth acting on:

* a correctness problem (the rule or card declares `concern: correctness`) keeps its declared severity (an
  `error` only where the rule proved the problem),
* a performance finding is a warning when a gain is expected (the learned ranking predicts at least
  `MIN_SPEEDUP` with a chance to verify of at least `MIN_P_VERIFIED`) or measured (a verified gate result),
* a prediction never raises a finding its card declares a hint while one of the card's benefit preconditions is
  not proven on this code (`Outlook.unproven_benefit`): the card says its gain depends on that condition, and a
  ranking trained on other kernels does not decide it (a verified result still does),
* an uncoalesced global access that multiplies the DRAM sectors a warp moves by at least `MIN_TRAFFIC_FACTOR`
  (`skills.traffic`, from the model's strides) is a warning too, prediction or not: its gain follows from the
  memory traffic alone (a finding declared below warning is not raised),
* everything else is a hint: no squiggle, still in the hover, the code lens and the quick fixes,
* notes about warpwise itself (its parser could not read a region, an analysis budget, an unused suppression)
  keep their declared severity, one per file.

`show_all` (the server's `warpwise.diagnostics.showAll` setting, the CLI's `--all`) shows every finding with its
declared severity. The caller supplies the prediction and the verification state as plain numbers, so the server
and the command line share this one rule without this layer knowing the ranking or the gate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.findings import RULES, Severity
from warpwise.skills.regions import VerdictStatus

MIN_SPEEDUP = 1.1
"""The predicted speedup a performance finding needs to be drawn as a warning."""
MIN_P_VERIFIED = 0.5
"""The predicted chance to verify it needs as well."""
MIN_TRAFFIC_FACTOR = 4.0
"""The factor by which an uncoalesced access multiplies a warp's DRAM sectors to be drawn as a warning."""
NOTES = frozenset({"syntax-error", "analysis-budget", "unused-suppression"})
"""Findings about warpwise's own analysis rather than the code; they keep their declared severity."""


@dataclass(frozen=True, slots=True)
class Outlook:
    """What is known of a finding's pay-off: the ranking's prediction and the gate's verdict, when there are any."""

    speedup: float | None = None
    p_verified: float | None = None
    verified: bool = False
    traffic_factor: float | None = None
    """How many times the DRAM sectors of a coalesced access this one moves (`skills.traffic`)."""
    traffic: str = ""
    """That figure in one phrase, for the hover."""
    unproven_benefit: str | None = None
    """A benefit precondition of the card that does not hold on this code (unknown), by its id or text."""
    measured_best: float | None = None
    """The largest speedup the card's own evidence records (None: the card was never measured)."""

    @property
    def prediction_backed(self) -> bool:
        """Return whether the card was ever measured to pay off (a prediction alone does not promote a hint)."""
        return self.measured_best is not None and self.measured_best >= MIN_SPEEDUP

    @property
    def large_traffic_win(self) -> bool:
        """Return whether the finding's access multiplies the sectors moved by at least `MIN_TRAFFIC_FACTOR`."""
        return self.traffic_factor is not None and self.traffic_factor >= MIN_TRAFFIC_FACTOR

    @property
    def expected_gain(self) -> bool:
        """Return whether the finding is expected (or measured) to pay off."""
        if self.verified:
            return True
        if self.speedup is None or self.p_verified is None:
            return False
        return self.speedup >= MIN_SPEEDUP and self.p_verified >= MIN_P_VERIFIED


def rule_concern(rule_id: str, card_concern: str | None = None) -> str:
    """Return `correctness` or `performance` for a rule or card id (a card's header says; rules declare theirs)."""
    if card_concern is not None:
        return card_concern
    rule = RULES.get(rule_id)
    return rule.concern if rule is not None else "performance"


def shown_severity(
    rule_id: str,
    declared: Severity,
    *,
    concern: str = "performance",
    outlook: Outlook | None = None,
    show_all: bool = False,
) -> Severity:
    """Return the severity a finding is shown with."""
    if show_all or rule_id in NOTES:
        return declared
    if concern == "correctness":
        return declared
    if (
        outlook is not None
        and outlook.expected_gain
        and (
            outlook.verified
            or declared is not Severity.HINT
            or (outlook.unproven_benefit is None and outlook.prediction_backed)
        )
    ):
        return Severity.WARNING
    if outlook is not None and outlook.large_traffic_win and declared in (Severity.WARNING, Severity.ERROR):
        return Severity.WARNING
    return Severity.HINT


def why_shown(severity: Severity, declared: Severity, outlook: Outlook | None, concern: str) -> str:
    """Return one line saying why a finding is shown at its severity (for the hover)."""
    if concern == "correctness":
        return ""
    if outlook is not None and outlook.verified:
        return "Shown as a warning: the fix was verified faster on the GPU."
    if severity is Severity.WARNING and outlook is not None and outlook.expected_gain:
        assert outlook.speedup is not None and outlook.p_verified is not None
        return (
            f"Shown as a warning: the ranking predicts {outlook.speedup:.2f}x with a "
            f"{100 * outlook.p_verified:.0f}% chance to verify."
        )
    if severity is Severity.WARNING and outlook is not None and outlook.large_traffic_win:
        return f"Shown as a warning: {outlook.traffic}."
    if severity is Severity.HINT and outlook is not None and outlook.expected_gain and outlook.unproven_benefit:
        return (
            f"Shown as a hint: the ranking predicts {outlook.speedup:.2f}x, but the card's benefit condition "
            f"`{outlook.unproven_benefit}` is not established on this code; only a verified result raises it."
        )
    if severity is Severity.HINT and outlook is not None and outlook.expected_gain and not outlook.prediction_backed:
        assert outlook.speedup is not None
        return (
            f"Shown as a hint: the ranking predicts {outlook.speedup:.2f}x, but this card was never measured "
            f"{MIN_SPEEDUP:g}x faster anywhere; only a verified result raises it."
        )
    if severity is Severity.HINT and declared is not Severity.HINT:
        return (
            f"Shown as a hint (declared {declared.value}): no gain of at least {MIN_SPEEDUP:g}x is predicted or "
            "verified; `warpwise.diagnostics.showAll` shows every finding at its declared severity."
        )
    return ""


def unproven_benefit(verdicts: Iterable[Any]) -> str | None:
    """Return the first benefit precondition among a match's verdicts that does not hold (its id, else its text),
    or None when every benefit precondition holds. Takes the engine's `PreconditionVerdict`s (`id`, `status`) or
    the server's `Verdict`s (`name`, `verdict`)."""
    for v in verdicts:
        if getattr(v, "kind", "soundness") != "benefit":
            continue
        status = getattr(v, "status", None) or getattr(v, "verdict", None)
        if status is not VerdictStatus.HOLDS:
            return str(getattr(v, "id", None) or getattr(v, "name", ""))
    return None


def measured_best(speedups: Iterable[float]) -> float | None:
    """Return the largest of a card's measured speedups (None when it has none)."""
    return max(speedups, default=None)
