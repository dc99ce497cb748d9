"""Sources of findings for the editor, behind one small interface, in plain data (no LSP types).

A `Provider` turns a `FileModel` into `Item`s: what to mark, where, why, and what a hover should say about it.
Two providers exist: `RuleProvider` (the model-level rules of `warpwise.analyzers.findings`) and `CardProvider`
(skill cards from `warpwise.skills`, when that package provides its matching engine). The server runs every
provider over every analysis; a provider that fails is logged and skipped, so one broken card or rule never
hides the others.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from warpwise.analyzers.checkpoint import checkpoint
from warpwise.analyzers.findings import RULES, Finding, RuleCache, Severity
from warpwise.analyzers.model import FileModel, Span
from warpwise.analyzers.suppressions import UNUSED_RULE, UNUSED_SUMMARY, apply_suppressions
from warpwise.server.settings import Settings
from warpwise.skills.engine import superseded
from warpwise.skills.model import Applicability, Axis
from warpwise.skills.regions import VerdictStatus
from warpwise.skills.rewrite import Edit, Fix
from warpwise.verify.rule_policy import RulePolicy, policy_for

log = logging.getLogger(__name__)

_README = Path(__file__).resolve().parent.parent / "README.md"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A precondition of a card checked against this code."""

    name: str
    axis: Axis
    verdict: VerdictStatus  # holds / violated / unknown (string enums: they format and compare as their values)
    reason: str
    kind: str = "soundness"  # soundness / benefit


@dataclass(frozen=True, slots=True)
class Evidence:
    """One measured effect behind a card."""

    kernel: str
    gpu: str
    speedup: float
    spread: float | None
    date: str
    source: str


@dataclass(frozen=True, slots=True)
class CardInfo:
    """What a hover shows about the card behind an item."""

    intent: str
    risk: str
    status: str
    evidence: tuple[Evidence, ...] = ()
    references: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Item:
    """One thing to show in the editor: a finding of a rule or a card match, at an absolute byte span."""

    id: str
    source: str  # "rule" or "card"
    severity: Severity
    message: str
    span: Span
    function: str | None
    related: tuple[tuple[str, Span], ...] = ()
    doc_url: str | None = None
    summary: str | None = None
    card: CardInfo | None = None
    verdicts: tuple[Verdict, ...] = ()
    applicability: Applicability | None = None  # for card items
    has_rewrite: bool = False
    concern: str = "performance"  # or "correctness" (`warpwise.skills.presentation`)
    configured: bool = False  # the severity is the project configuration's (`[tool.warpwise] severity`)
    payload: Any = field(default=None, compare=False, repr=False)

    @property
    def has_fix(self) -> bool:
        """Return whether a fix can be computed for this item."""
        return self.has_rewrite and self.applicability in (Applicability.SAFE, Applicability.UNSAFE)

    @property
    def fix_title(self) -> str | None:
        """Return the quick fix's title (rendered on demand: most items are never asked for it)."""
        if not self.has_rewrite or self.payload is None:
            return None
        return str(self.payload.fix_title)


class Provider(Protocol):
    """A source of items."""

    name: str

    def available(self) -> tuple[bool, str]:
        """Return whether the provider can run, and why not when it cannot."""
        ...

    def items(self, model: FileModel, settings: Settings) -> list[Item]:
        """Return the items of one file model (its syntax tree is `model.tree`, not to be edited)."""
        ...

    def compute_fix(self, model: FileModel, item: Item) -> Fix | None:
        """Return the fix of one item, computed on the given model."""
        ...


def rule_doc_url(rule_id: str) -> str | None:
    """Return a link to a rule's documentation, when the documentation is installed beside the code."""
    if _README.is_file():
        return _README.as_uri() + "#rules"
    return None


def _item_of_finding(f: Finding, source: str = "rule") -> Item:
    rule = RULES.get(f.rule)
    return Item(
        id=f.rule,
        source=source,
        severity=f.severity,
        message=f.message,
        span=f.span,
        function=f.function,
        related=tuple((r.message, r.span) for r in f.related),
        doc_url=rule_doc_url(f.rule),
        summary=rule.summary if rule is not None else (UNUSED_SUMMARY if f.rule == UNUSED_RULE else None),
        concern=rule.concern if rule is not None else "performance",
    )


class RuleProvider:
    """The model-level rules (`warpwise.analyzers.findings`), through one `RuleCache` per document.

    The cache reuses the findings of functions whose text and surroundings did not change, so a keystroke checks
    only the function it touched.
    """

    name = "rules"

    def __init__(self) -> None:
        self._caches: OrderedDict[str, RuleCache] = OrderedDict()

    def available(self) -> tuple[bool, str]:
        """Return that the rules are always available."""
        return True, ""

    def items(self, model: FileModel, settings: Settings) -> list[Item]:
        """Run every enabled rule, reusing the findings of unchanged functions."""
        select = {r for r in [*RULES, "syntax-error", "analysis-budget"] if settings.rule_enabled(r)}
        cache = self._caches.pop(model.path, None) or RuleCache()
        self._caches[model.path] = cache
        while len(self._caches) > 32:
            self._caches.popitem(last=False)
        return [_item_of_finding(f) for f in cache.check_model(model, select)]

    def forget(self, path: str) -> None:
        """Drop the rule cache of a closed document."""
        self._caches.pop(path, None)

    def compute_fix(self, model: FileModel, item: Item) -> Fix | None:
        """Return None: model-level rules carry no rewrites (skill cards do)."""
        return None


class CardProvider:
    """Skill cards (`warpwise.skills`): the library loaded once, matched through one `MatchCache` per document.

    The engine's `MatchCache` reuses the matches of functions whose text and context did not change, so a
    keystroke re-matches only the function it touched.
    """

    name = "cards"

    def __init__(self) -> None:
        self._loaded = False
        self._engine: Any = None
        self._library: Any = None
        self._reason = "not loaded yet"
        self._caches: OrderedDict[str, Any] = OrderedDict()
        self._infos: dict[str, tuple[Any, CardInfo, str | None]] = {}
        self._items: dict[str, dict[int, tuple[Any, Item]]] = {}
        """Per document, the item built for each match object of its last analysis (by the match's id)."""
        self._lock = threading.Lock()

    def _load(self) -> None:
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            library_mod = importlib.import_module("warpwise.skills.library")
            self._engine = importlib.import_module("warpwise.skills.engine")
            try:
                self._library = library_mod.load_library()
            except Exception as exc:  # A broken card library must not stop the server; rules still report.
                log.exception("could not load the skill-card library")
                self._reason = f"the skill-card library did not load: {exc}"
                self._engine = None
                return
            for p in getattr(self._library, "problems", ()):
                log.warning("skill card problem: %s", p)
            self._reason = ""

    def reload(self) -> None:
        """Forget the loaded library and memo; the next use loads the cards again."""
        with self._lock:
            self._loaded = False
            self._engine = None
            self._library = None
            self._caches = OrderedDict()
            self._infos = {}
            self._items = {}

    def available(self) -> tuple[bool, str]:
        """Return whether the card engine and library loaded."""
        self._load()
        return self._engine is not None, self._reason

    def card(self, card_id: str) -> Any:
        """Return one loaded card, or None."""
        self._load()
        if self._library is None:
            return None
        return self._library.get(card_id)

    def rule_ids(self) -> list[str]:
        """Return the id of every loaded card (so that suppressions of unknown ids can be reported)."""
        return [c.skill_id for c in self.cards()]

    def cards(self) -> list[Any]:
        """Return every loaded card."""
        self._load()
        return list(self._library) if self._library is not None else []

    def items(self, model: FileModel, settings: Settings) -> list[Item]:
        """Match every enabled card against the model, reusing the matches of unchanged functions."""
        self._load()
        if self._engine is None:
            return []
        cache = self._caches.pop(model.path, None) or self._engine.MatchCache()
        self._caches[model.path] = cache
        while len(self._caches) > 32:
            gone, _ = self._caches.popitem(last=False)
            self._items.pop(gone, None)
        enabled = {c.skill_id for c in self._library if settings.rule_enabled(c.skill_id)}
        matches = cache.match_file(model, self._library, enabled=enabled, target_sm=_target_sm(settings.compiler_arch))
        # The match cache hands back the same match object for a function it reused unchanged: its item is reused.
        built = self._items.get(model.path, {})
        kept: dict[int, tuple[Any, Item]] = {}
        out: list[Item] = []
        for m in matches:
            hit = built.get(id(m))
            if hit is not None and hit[0] is m:
                item = hit[1]
            else:
                try:
                    item = self._item(m)
                except Exception:  # One malformed match is skipped, never the whole file.
                    log.exception("could not present the match of card %s", getattr(m, "card_id", "?"))
                    continue
            kept[id(m)] = (m, item)
            out.append(item)
        self._items[model.path] = kept
        return out

    def forget(self, path: str) -> None:
        """Drop the match cache of a closed document."""
        self._caches.pop(path, None)
        self._items.pop(path, None)

    def _card_info(self, card: Any) -> tuple[CardInfo, str | None]:
        """Return what items show about a card (built once per card: a keystroke re-presents every match)."""
        hit = self._infos.get(card.skill_id)
        if hit is not None and hit[0] is card:
            return hit[1], hit[2]
        header = card.header
        info = CardInfo(
            intent=str(header.intent),
            risk=str(header.risk.summary),
            status=str(header.status.value),
            evidence=tuple(_evidence(header.evidence)),
            references=tuple((str(r.title), r.url) for r in header.references),
        )
        url = Path(card.path).resolve().as_uri() if card.path else None
        self._infos[card.skill_id] = (card, info, url)
        return info, url

    def _item(self, m: Any) -> Item:
        card = m.card
        header = card.header
        info, doc_url = self._card_info(card)
        applicability = m.applicability
        return Item(
            id=m.card_id,
            source="card",
            severity=m.severity,
            message=m.message,
            span=m.span,
            function=m.function,
            related=tuple((r.message, r.span) for r in m.related),
            doc_url=doc_url,
            summary=str(header.title),
            card=info,
            verdicts=tuple(Verdict(str(v.text), v.axis, v.status, str(v.reason), v.kind) for v in m.verdicts),
            applicability=applicability,
            has_rewrite=bool(m.has_rewrite),
            concern=str(header.concern),
            payload=m,
        )

    def compute_fix(self, model: FileModel, item: Item) -> Fix | None:
        """Compute the card's rewrite for the match behind an item (the engine's `Fix`: sorted edits)."""
        if self._engine is None or item.payload is None:
            return None
        fix: Fix | None = self._engine.compute_fix(model, item.payload)
        return fix

    def merge(self, fixes: list[Fix]) -> list[Edit]:
        """Return the edits of several fixes, skipping any fix that overlaps one already taken."""
        return self._engine.merge_fixes(fixes) if self._engine is not None else []


def _target_sm(arch: str) -> int:
    digits = "".join(ch for ch in arch if ch.isdigit())
    return int(digits) if digits else 90


def _evidence(records: Iterable[Any]) -> Iterable[Evidence]:
    for r in records:
        try:
            yield Evidence(
                kernel=str(r.kernel),
                gpu=str(r.gpu),
                speedup=float(r.speedup),
                spread=float(r.spread) if getattr(r, "spread", None) is not None else None,
                date=str(r.date),
                source=str(r.source),
            )
        except (AttributeError, TypeError, ValueError):
            continue


def collect_items(providers: list[Provider], model: FileModel, settings: Settings) -> tuple[list[Item], list[str]]:
    """Run every provider; a failing one is logged, reported in the returned problems, and skipped.

    A card supersedes a model-level rule it names where both bind to one region (`warpwise.skills.engine.superseded`,
    the rule the CLI applies too).
    """
    items: list[Item] = []
    problems: list[str] = []
    for p in providers:
        checkpoint()
        try:
            items.extend(p.items(model, settings))
        except Exception as exc:  # One failing provider never hides the others.
            log.exception("provider %s failed on %s", p.name, model.path)
            problems.append(f"{p.name}: {type(exc).__name__}: {exc}")
    gone = superseded(i.payload for i in items if i.source == "card" and i.payload is not None)
    if gone:
        items = [i for i in items if i.source == "card" or (i.id, i.span) not in gone]
    known: set[str] = {*RULES, "syntax-error", "analysis-budget", UNUSED_RULE}
    for p in providers:
        ids = getattr(p, "rule_ids", None)
        known.update(ids() if callable(ids) else ())
    policy = file_policy(model.path)
    if policy.config is not None:
        items = [i for i in items if policy.enabled(i.id)]

    def reported(rule: str) -> bool:
        return settings.rule_enabled(rule) and policy.enabled(rule)

    items, unused = apply_suppressions(
        model, items, key=lambda i: (i.id, i.span), tree=model.tree, reported=reported, known=known
    )
    items.extend(_item_of_finding(f) for f in unused if policy.enabled(f.rule))
    if policy.severity:
        # The project's severity overrides are the last word on a finding's level.
        items = [
            replace(i, severity=policy.severity[i.id], configured=True) if i.id in policy.severity else i for i in items
        ]
    items.sort(key=lambda i: (i.span[0], i.id))
    return items, problems


def file_policy(path: str) -> RulePolicy:
    """Return the project configuration's rule settings for a document (none for an unsaved or remote one)."""
    p = Path(path)
    if not p.is_absolute() or not p.parent.is_dir():
        return RulePolicy(path)
    try:
        return policy_for(p)
    except (OSError, ValueError) as exc:  # An unreadable folder or a bad pattern: every rule, and say why.
        log.warning("the project configuration of %s could not be applied: %s", path, exc)
        return RulePolicy(path)
