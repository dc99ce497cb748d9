"""The severity each item of an analysis is shown with in the editor (the quiet default, `skills.presentation`).

The rule is `warpwise.skills.presentation.shown_severity`; this module supplies what only the server knows: the
learned ranking's prediction for the item's (kernel, card) fix and whether the gate verified it on this exact
text. Diagnostics, hovers and code lenses read the same answer, so a hint in the editor is a hint everywhere.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from warpwise.analyzers.findings import Severity
from warpwise.analyzers.model import Function, Span
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
from warpwise.skills.traffic import Traffic, access_traffic, traffic_ids

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
    verification: VerificationService,
    analysis: Analysis,
    item: Item,
    preds: dict[tuple[str, str], Any],
    memo: _Memo | None = None,
) -> Outlook | None:
    """Return what is known of an item's pay-off: its prediction, whether its fix verified on this text, and the
    DRAM traffic of an uncoalesced access it reports."""
    look = _card_outlook(verification, analysis, item, preds)
    if item.id in traffic_ids():
        traffic = _traffic(analysis, item, memo)
        if traffic is not None:
            look = dataclasses.replace(look or Outlook(), traffic_factor=traffic.factor, traffic=traffic.describe())
    return look


def _traffic(analysis: Analysis, item: Item, memo: _Memo | None) -> Traffic | None:
    """Return the DRAM traffic of the access an item reports, reused from the document's previous analysis where
    its function is the same object (the answer reads only the function, its syntax and the file's constants,
    which the analysis keys a reused function object by)."""
    fn = analysis.model.function(item.function) if item.function else None
    if memo is None or fn is None:
        return access_traffic(analysis.model, item.function, item.span[0])
    key = (id(fn), item.span[0])
    hit = memo.previous.traffic.get(key) or memo.current.traffic.get(key)
    if hit is not None and hit[0] is fn:
        got = hit[1]
    else:
        got = access_traffic(analysis.model, item.function, item.span[0])
    memo.current.traffic[key] = (fn, got)
    return got


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
"""A card's largest measured speedup, per card (the library's cards live as long as the server)."""


def _measured_best(card: CardInfo) -> float | None:
    """Return the largest speedup a card's evidence records (kept per card: every finding of it asks)."""
    hit = _BEST.get(id(card))
    if hit is not None and hit[0] is card:
        return hit[1]
    best = measured_best(e.speedup for e in card.evidence)
    if len(_BEST) >= MAX_CARDS:
        _BEST.clear()
    _BEST[id(card)] = (card, best)
    return best


MAX_CARDS = 1024
MAX_DOCUMENTS = 32


@dataclass(slots=True)
class _Answers:
    """What the quiet default computed for one analysis of a document."""

    ranked: dict[int, tuple[Item, Outlook | None, Severity, Contender | None]] = field(default_factory=dict)
    """Per item (by id): the item, the outlook, and the severity and contender computed from them."""
    traffic: dict[tuple[int, int], tuple[Function, Traffic | None]] = field(default_factory=dict)
    """Per (function object, access start): the function and its access's traffic."""


@dataclass(slots=True)
class _Memo:
    """The answers of a document's previous analysis (read) and of the one being ranked (filled)."""

    previous: _Answers
    current: _Answers = field(default_factory=_Answers)


_MEMOS: OrderedDict[str, _Answers] = OrderedDict()
"""Per document, the answers of its last ranked analysis: only those, so nothing of older versions is kept."""


def _severity_and_contender(item: Item, look: Outlook | None, memo: _Memo) -> tuple[Severity, Contender | None]:
    """Return the severity an item is shown with and its contender for one region (reused from the previous
    analysis for the same item and outlook: an item of a function the keystroke did not touch is the same
    object in the next analysis)."""
    hit = memo.previous.ranked.get(id(item))
    if hit is not None and hit[0] is item and hit[1] == look:
        severity, got = hit[2], hit[3]
    else:
        severity = shown_severity(item.id, item.severity, concern=item.concern, outlook=look)
        got = contender(item.payload, severity, look) if item.source == "card" and item.payload is not None else None
    memo.current.ranked[id(item)] = (item, look, severity, got)
    return severity, got


def _ranked(
    verification: VerificationService, analysis: Analysis
) -> tuple[list[tuple[Item, Severity]], dict[int, int]]:
    """Return every item with its shown severity, and which items another one's region and problem absorb."""
    show_all = analysis.settings.diagnostics_show_all
    preds = _predictions(verification, analysis)
    memo = _Memo(_MEMOS.get(analysis.uri) or _Answers())
    out: list[tuple[Item, Severity]] = []
    contenders: list[Contender | None] = []
    for item in analysis.items:
        if item.configured:  # The project configuration's severity is the last word.
            out.append((item, item.severity))
            contenders.append(None)
            continue
        if show_all:
            out.append((item, shown_severity(item.id, item.severity, concern=item.concern, show_all=True)))
            contenders.append(None)
            continue
        look = outlook(verification, analysis, item, preds, memo)
        severity, got = _severity_and_contender(item, look, memo)
        out.append((item, severity))
        contenders.append(got)
    _MEMOS.pop(analysis.uri, None)
    _MEMOS[analysis.uri] = memo.current
    while len(_MEMOS) > MAX_DOCUMENTS:
        _MEMOS.popitem(last=False)
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
