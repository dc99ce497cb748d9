"""The quiet default on the command line: each finding at the severity the editor shows it with.

The rule is `warpwise.skills.presentation.shown_severity` (shared with the server); here the learned ranking
predicts each card fix of the file. `warpwise check` lists hints only with `--all`, which also restores every
finding's declared severity; JSON and SARIF carry every finding, at its shown severity, with the declared one in
`data.declared_severity` when they differ.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from warpwise.analyzers.findings import Finding, Related
from warpwise.engine import FileReport
from warpwise.skills.presentation import (
    Contender,
    Outlook,
    alternative_note,
    contender,
    measured_best,
    one_per_region,
    rule_concern,
    shown_severity,
    unproven_benefit,
)
from warpwise.skills.traffic import access_traffic, traffic_ids

log = logging.getLogger(__name__)


def _predictions(report: FileReport) -> dict[tuple[str, str], Any]:
    """Return the ranking's prediction per (kernel, card) of a file's card fixes (none without a model)."""
    matches = [m for m in report.matches if m.has_rewrite]
    if not matches:
        return {}
    try:
        from warpwise.ranking import predict_matches

        return predict_matches(report.model, matches)
    except Exception:  # The ranking only raises a finding's severity; without it findings are hints.
        log.exception("no ranking predictions for %s", report.path)
        return {}


def present(report: FileReport, show_all: bool = False) -> FileReport:
    """Return the report with each finding at the severity it is shown with (unchanged with `show_all`)."""
    if show_all:
        return report
    preds = _predictions(report)
    out: list[Finding] = []
    contenders: list[Contender | None] = []
    for f in report.findings:
        match = report.match_for(f)
        concern = rule_concern(f.rule, str(match.card.header.concern) if match is not None else None)
        look = None
        if match is not None and match.has_rewrite:
            pred = preds.get((match.function, match.card_id))
            if pred is not None:
                look = Outlook(
                    speedup=float(pred.speedup),
                    p_verified=float(pred.p_verified),
                    unproven_benefit=unproven_benefit(match.verdicts),
                    measured_best=measured_best(e.speedup for e in match.card.header.evidence),
                )
        if look is None and match is not None and concern == "correctness":
            look = Outlook(unproven_benefit=unproven_benefit(match.verdicts))
        if f.rule in traffic_ids():
            traffic = access_traffic(report.model, f.function, f.span[0])
            if traffic is not None:
                base = look or Outlook()
                look = dataclasses.replace(base, traffic_factor=traffic.factor, traffic=traffic.describe())
        severity = shown_severity(f.rule, f.severity, concern=concern, outlook=look)
        if severity is not f.severity:
            f = dataclasses.replace(f, severity=severity, data={**f.data, "declared_severity": f.severity.value})
        out.append(f)
        contenders.append(contender(match, severity, look) if match is not None else None)
    report.findings = collapse(out, contenders, report)
    return report


def collapse(findings: list[Finding], contenders: list[Contender | None], report: FileReport) -> list[Finding]:
    """Return the findings with one per region and problem (`skills.presentation.one_per_region`): each kept card
    finding names the ones it absorbed in its related information and in `data.alternatives`."""
    absorbed = one_per_region(contenders)
    if not absorbed:
        return findings
    extra: dict[int, list[Finding]] = {}
    for i, into in absorbed.items():
        extra.setdefault(into, []).append(findings[i])
    out: list[Finding] = []
    for i, f in enumerate(findings):
        if i in absorbed:
            continue
        alts = extra.get(i)
        if alts:
            notes = []
            for a in alts:
                m = report.match_for(a)
                notes.append(
                    Related(alternative_note(a.rule, m.fix_title if m is not None and m.has_rewrite else None), a.span)
                )
            f = dataclasses.replace(
                f,
                related=(*f.related, *notes),
                data={**f.data, "alternatives": [a.rule for a in alts]},
            )
        out.append(f)
    return out
