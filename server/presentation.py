"""The severity each item of an analysis is shown with in the editor (the quiet default, `skills.presentation`).

The rule is `warpwise.skills.presentation.shown_severity`; this module supplies what only the server knows: the
learned ranking's prediction for the item's (kernel, card) fix and whether the gate verified it on this exact
text. Diagnostics, hovers and code lenses read the same answer, so a hint in the editor is a hint everywhere.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from warpwise.analyzers.findings import Severity
from warpwise.analyzers.model import Span
from warpwise.server.analysis import Analysis
from warpwise.server.providers import CardInfo, Item
from warpwise.skills.presentation import (
    Contender,
    Outlook,
    alternative_note,
    contender,
    measured_best,
    one_per_region,
    shown_severity,
    unproven_benefit,
    why_shown,
)
from warpwise.skills.traffic import access_traffic, traffic_ids

if TYPE_CHECKING:
    from warpwise.server.verification import VerificationService

log = logging.getLogger(__name__)


def _predictions(verification: VerificationService, analysis: Analysis) -> dict[tuple[str, str], Any]:
    """Return the ranking's predictions for this version, or none when the ranking cannot give them."""
    if analysis.settings.diagnostics_show_all or not any(i.source == "card" and i.has_fix for i in analysis.items):
        return {}
    try:
        from warpwise.server.features.ranking import predictions

        return predictions(verification, analysis)
    except Exception:  # The ranking only raises a finding's severity; without it findings are hints.
        log.exception("no ranking predictions for %s", analysis.uri)
        return {}


def outlook(
    verification: VerificationService, analysis: Analysis, item: Item, preds: dict[tuple[str, str], Any]
) -> Outlook | None:
    """Return what is known of an item's pay-off: its prediction, whether its fix verified on this text, and the
    DRAM traffic of an uncoalesced access it reports."""
    look = _card_outlook(verification, analysis, item, preds)
    if item.id in traffic_ids():
        traffic = access_traffic(analysis.model, item.function, item.span[0])
        if traffic is not None:
            look = dataclasses.replace(look or Outlook(), traffic_factor=traffic.factor, traffic=traffic.describe())
    return look


def _card_outlook(
    verification: VerificationService, analysis: Analysis, item: Item, preds: dict[tuple[str, str], Any]
) -> Outlook | None:
    if item.source != "card":
        return None
    verified = False
    if item.has_fix:
        verified = verification.verified(analysis.uri, analysis.content_hash, item.id, item.span)
    pred = preds.get((item.function or "", item.id)) if item.has_fix else None
    if pred is None and not verified:
        # A correctness card's risk condition decides its severity even with no prediction.
        return Outlook(unproven_benefit=unproven_benefit(item.verdicts)) if item.concern == "correctness" else None
    return Outlook(
        speedup=float(pred.speedup) if pred is not None else None,
        p_verified=float(pred.p_verified) if pred is not None else None,
        verified=verified,
        unproven_benefit=unproven_benefit(item.verdicts),
        measured_best=_measured_best(item.card) if item.card is not None else None,
    )


_BEST: dict[int, tuple[CardInfo, float | None]] = {}


def _measured_best(card: CardInfo) -> float | None:
    """Return the largest speedup a card's evidence records (kept per card: every finding of it asks)."""
    hit = _BEST.get(id(card))
    if hit is not None and hit[0] is card:
        return hit[1]
    best = measured_best(e.speedup for e in card.evidence)
    if len(_BEST) >= MAX_MEMO:
        _BEST.clear()
    _BEST[id(card)] = (card, best)
    return best


MAX_MEMO = 8192
"""Entries kept by each of this module's memos (one per card, or per item of the open documents)."""

_RANKED: dict[int, tuple[Item, Outlook | None, Severity, Contender | None]] = {}
"""Per item, the severity and contender last computed for it, with the outlook they were computed from."""


def _severity_and_contender(item: Item, look: Outlook | None, show_all: bool) -> tuple[Severity, Contender | None]:
    """Return the severity an item is shown with and its contender for one region (kept per item and outlook:
    an item of a function the keystroke did not touch is the same object in the next analysis)."""
    hit = _RANKED.get(id(item))
    if hit is not None and hit[0] is item and hit[1] == look and not show_all:
        return hit[2], hit[3]
    severity = shown_severity(item.id, item.severity, concern=item.concern, outlook=look, show_all=show_all)
    card = item.source == "card" and item.payload is not None and not show_all
    got = contender(item.payload, severity, look) if card else None
    if not show_all:
        if len(_RANKED) >= MAX_MEMO:
            _RANKED.clear()
        _RANKED[id(item)] = (item, look, severity, got)
    return severity, got


def _ranked(
    verification: VerificationService, analysis: Analysis
) -> tuple[list[tuple[Item, Severity]], dict[int, int]]:
    """Return every item with its shown severity, and which items another one's region and problem absorb."""
    show_all = analysis.settings.diagnostics_show_all
    preds = _predictions(verification, analysis)
    out: list[tuple[Item, Severity]] = []
    contenders: list[Contender | None] = []
    for item in analysis.items:
        if item.configured:  # The project configuration's severity is the last word.
            out.append((item, item.severity))
            contenders.append(None)
            continue
        look = None if show_all else outlook(verification, analysis, item, preds)
        severity, got = _severity_and_contender(item, look, show_all)
        out.append((item, severity))
        contenders.append(got)
    return out, one_per_region(contenders)


def alternatives(verification: VerificationService, analysis: Analysis, items: list[Item]) -> list[Item]:
    """Return the items absorbed into any of `items` (their fixes are quick fixes wherever the kept one is)."""
    out, absorbed = _ranked(verification, analysis)
    wanted = {(i.id, i.span) for i in items}
    return [out[i][0] for i, into in absorbed.items() if (out[into][0].id, out[into][0].span) in wanted]


def shown(verification: VerificationService, analysis: Analysis) -> list[tuple[Item, Severity]]:
    """Return every item of an analysis with the severity it is shown with, one per region and problem.

    Card items that address one region and problem collapse into the best-ranked one
    (`warpwise.skills.presentation.one_per_region`, the rule the command line applies too): the others are not
    drawn, are named in its related information, and stay quick fixes (`Analysis.items_at`). `showAll` shows all.
    """
    out, absorbed = _ranked(verification, analysis)
    if not absorbed:
        return out
    notes: dict[int, list[tuple[str, Span]]] = {}
    for i, into in absorbed.items():
        alt = out[i][0]
        notes.setdefault(into, []).append((alternative_note(alt.id, alt.fix_title), alt.span))
    return [
        (dataclasses.replace(item, related=(*item.related, *notes[i])) if i in notes else item, severity)
        for i, (item, severity) in enumerate(out)
        if i not in absorbed
    ]


def explain(verification: VerificationService, analysis: Analysis, item: Item) -> tuple[Severity, str]:
    """Return the severity an item is shown with and one line saying why (empty when it is as declared)."""
    if analysis.settings.diagnostics_show_all or item.configured:
        return item.severity, ""
    look = outlook(verification, analysis, item, _predictions(verification, analysis))
    severity = shown_severity(item.id, item.severity, concern=item.concern, outlook=look)
    return severity, why_shown(severity, item.severity, look, item.concern)
