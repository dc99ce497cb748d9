"""How loudly a finding is shown: the quiet default, and the one setting that restores every finding.

People turn a tool off when most tokens of a kernel carry a squiggle. In the quiet default a finding is drawn as
a warning only when it is worth acting on:

* a correctness problem (the rule or card declares `concern: correctness`) keeps its declared severity (an
  `error` only where the rule proved the problem), except that a declared warning whose card's benefit
  precondition (for a correctness card: the condition for the problem to happen at all, such as an index that
  can pass 2^31) is not proven is a hint,
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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.findings import RULES, Severity
from warpwise.analyzers.model import Span
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
    def unproven_risk(self) -> bool:
        """Return whether a correctness card's risk condition (its benefit precondition: the problem can happen on
        this code) is not proven, and nothing was verified: such a finding is a hint, not a warning."""
        return self.unproven_benefit is not None and not self.verified

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
        if declared is Severity.WARNING and outlook is not None and outlook.unproven_risk:
            return Severity.HINT
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
        if severity is Severity.HINT and declared is Severity.WARNING and outlook is not None and outlook.unproven_risk:
            return (
                f"Shown as a hint (declared {declared.value}): the card's condition `{outlook.unproven_benefit}` for "
                "the problem to happen is not established on this code."
            )
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


@dataclass(frozen=True, slots=True)
class Contender:
    """A card finding that may share its region and problem with another card's (`one_per_region`)."""

    card_id: str
    function: str
    span: Span
    """The finding's own span (where the squiggle is)."""
    extent: Span
    """The code the card binds to: the whole kernel for a kernel-anchored card, else the finding's span."""
    conflicts: frozenset[str]
    provides: frozenset[str]
    rank: tuple[float, ...]
    """Larger is better: the finding kept for a region is the best-ranked (`contender_rank`)."""

    def same_problem(self, other: Contender) -> bool:
        """Return whether two card findings address one region and one problem: in one kernel, either card names
        the other in `conflicts` (the card says both rewrite the same code for the same problem), or their code
        overlaps and both provide one feature (both fixes do the same thing there)."""
        if self.card_id == other.card_id or self.function != other.function:
            return False
        if other.card_id in self.conflicts or self.card_id in other.conflicts:
            return True
        (a0, a1), (b0, b1) = self.extent, other.extent
        return a0 < b1 and b0 < a1 and not self.provides.isdisjoint(other.provides)


def contender(match: Any, severity: Severity, outlook: Outlook | None) -> Contender:
    """Return a card match (`skills.engine.Match`) as a contender, ranked by the severity it is shown with."""
    header = match.card.header
    region = match.region
    extent = region.function.extent if str(header.anchor.kind) == "kernel" else match.span
    return Contender(
        card_id=match.card_id,
        function=match.function,
        span=match.span,
        extent=extent,
        conflicts=frozenset(header.conflicts),
        provides=frozenset(header.provides),
        rank=contender_rank(match, severity, outlook),
    )


_APPLICABILITY_RANK = {"safe": 2.0, "unsafe": 1.0}


def contender_rank(match: Any, severity: Severity, outlook: Outlook | None) -> tuple[float, ...]:
    """Return how a card finding ranks among those of its region: the loudest shown severity first, then a
    verified fix, then the ranking's expected pay-off (predicted speedup times the chance to verify), then a safe
    fix over an unsafe one over advice, then the card that addresses more of the problem (more provided features),
    then the narrower region (the more specific card)."""
    pay = 0.0
    if outlook is not None and outlook.speedup is not None and outlook.p_verified is not None:
        pay = outlook.speedup * outlook.p_verified
    applicability = _APPLICABILITY_RANK.get(str(match.applicability), 0.0) if match.has_rewrite else 0.0
    lo, hi = match.span
    return (
        float(-_SEVERITY_ORDER.index(severity)),
        1.0 if outlook is not None and outlook.verified else 0.0,
        pay,
        applicability,
        float(len(match.card.header.provides)),
        float(lo - hi),
    )


_SEVERITY_ORDER = (Severity.ERROR, Severity.WARNING, Severity.INFO, Severity.HINT)


def one_per_region(contenders: Sequence[Contender | None]) -> dict[int, int]:
    """Return, for each contender that another one's region and problem absorb, the index of the one shown.

    Contenders are taken best-ranked first; each is absorbed by the first kept contender that addresses its
    region and problem (`Contender.same_problem`), else it is kept. An absorbed finding is not drawn: the kept
    one lists it as an alternative, and its fix stays a quick fix. `None` entries (findings that are not card
    matches) never take part. This is the one place the choice is made: the command line and the server ask it.
    """
    order = sorted(
        (i for i, c in enumerate(contenders) if c is not None),
        key=lambda i: (tuple(-x for x in contenders[i].rank), contenders[i].card_id, contenders[i].span),  # type: ignore[union-attr]
    )
    # Only contenders of one function can share a problem (`same_problem`), so each is compared with the kept ones
    # of its own function, in the order they were kept.
    kept: dict[str, list[int]] = {}
    absorbed: dict[int, int] = {}
    for i in order:
        c = contenders[i]
        assert c is not None
        mine = kept.setdefault(c.function, [])
        into = next((k for k in mine if contenders[k].same_problem(c)), None)  # type: ignore[union-attr]
        if into is None:
            mine.append(i)
        else:
            absorbed[i] = into
    return absorbed


def alternative_note(card_id: str, fix_title: str | None) -> str:
    """Return the related-information line that names an absorbed card finding as an alternative."""
    tail = f": {fix_title}" if fix_title else ""
    return f"alternative for this region: `{card_id}`{tail} (also offered as a quick fix)"
