"""Regions and the registries that cards refer to by name: matchers, precondition checks and verdicts.

A card's `anchor.matcher` names a function registered here with `@matcher`; it walks one function of the kernel
model and yields the `Region`s the card binds to (an access, a loop, a call, a shared array, the kernel itself),
each with the facts its message and checks read. Each precondition's `check` names a function registered with
`@check`; it returns a `Verdict` (holds / violated / unknown) with a one-line reason that names the user's
identifiers. Registries are plain dicts filled at import time; the loader reports a card that names an
unregistered matcher or check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from warpwise.analyzers.model import FileModel, Function, Span
from warpwise.skills.model import AnchorKind, Axis


class VerdictStatus(StrEnum):
    """The outcome of checking one precondition against one region."""

    HOLDS = "holds"
    VIOLATED = "violated"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A check's outcome and its reason, in the user's terms."""

    status: VerdictStatus
    reason: str


def holds(reason: str) -> Verdict:
    """Return a verdict that the precondition holds."""
    return Verdict(VerdictStatus.HOLDS, reason)


def violated(reason: str) -> Verdict:
    """Return a verdict that the precondition is violated."""
    return Verdict(VerdictStatus.VIOLATED, reason)


def unknown(reason: str) -> Verdict:
    """Return a verdict that the precondition could not be decided."""
    return Verdict(VerdictStatus.UNKNOWN, reason)


@dataclass(frozen=True, slots=True)
class Region:
    """A code region a card binds to: a span inside one function, and the facts found there.

    Facts whose names start with `_` are read by the engine, not shown: `_related` (related spans), `_severity`
    (a lower severity the region earned) and `_display_only` (the card's rewrite does not cover this region: the
    finding is shown without a quick fix)."""

    kind: AnchorKind
    function: Function
    span: Span
    key: str
    facts: Mapping[str, Any] = field(default_factory=dict)

    @property
    def abs_span(self) -> Span:
        """Return the absolute byte span of the region."""
        return self.function.span(self.span)


@dataclass(frozen=True, slots=True)
class MatchContext:
    """What a matcher sees: the file model, the function, and the target GPU architecture."""

    model: FileModel
    function: Function
    target_sm: int = 90


@dataclass(frozen=True, slots=True)
class CheckContext:
    """What a precondition check sees."""

    model: FileModel
    function: Function
    region: Region
    target_sm: int = 90

    def fact(self, name: str, default: Any = None) -> Any:
        """Return one fact of the region."""
        return self.region.facts.get(name, default)


Matcher = Callable[..., Iterable[Region]]
Check = Callable[..., Verdict]

MATCHERS: dict[str, Matcher] = {}
CHECKS: dict[str, Check] = {}


def matcher(name: str) -> Callable[[Matcher], Matcher]:
    """Register a matcher under a name cards can refer to."""

    def wrap(fn: Matcher) -> Matcher:
        if name in MATCHERS:
            raise ValueError(f"matcher {name!r} is registered twice")
        MATCHERS[name] = fn
        return fn

    return wrap


def check(name: str) -> Callable[[Check], Check]:
    """Register a precondition check under a name cards can refer to."""

    def wrap(fn: Check) -> Check:
        if name in CHECKS:
            raise ValueError(f"check {name!r} is registered twice")
        CHECKS[name] = fn
        return fn

    return wrap


@dataclass(frozen=True, slots=True)
class PreconditionVerdict:
    """A precondition of a card, checked against one region."""

    id: str
    axis: Axis
    text: str
    kind: str
    status: VerdictStatus
    reason: str
    checked: bool
