"""Actions: the ways a kernel version can become another, each with an expansion priority.

An action is one of
- `card`: every fix of one skill card in the kernel (what `warpwise verify --skill` measures);
- `param`: a parameter set exactly by a rewrite (block size, unroll factor, elements per thread);
- `lineage`: the next step of an expert lineage for the operator the kernel computes;
- `llm`: an edit proposed by the configured LLM (mixture of thoughts, then aggregation).

`prior` orders expansions (higher first): for cards it comes from the card's measured evidence and the
precondition verdicts on this code (and from the ranking model when one is installed); the others carry fixed
priors documented in their sources. The child version is produced lazily (`produce`), because an LLM edit costs
a request; card and parameter actions are computed when listed, so an action that does not apply is never listed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from warpwise.search.context import SearchContext
from warpwise.search.version import Version


class ActionKind(StrEnum):
    """Where an action comes from."""

    CARD = "card"
    PARAM = "param"
    LINEAGE = "lineage"
    LLM = "llm"


@dataclass(frozen=True)
class Action:
    """One way to derive a new version from a version."""

    kind: ActionKind
    name: str
    title: str
    prior: float
    why: str
    produce: Callable[[], Version | None] = field(compare=False, repr=False)
    card: str | None = None


class ActionSource(Protocol):
    """Lists the actions that apply to a version."""

    def actions(self, version: Version, ctx: SearchContext) -> list[Action]:
        """Return the actions that apply to `version` (an empty list when none does)."""
        ...


def ready(version: Version) -> Callable[[], Version | None]:
    """Return a producer of an already computed version."""
    return lambda: version
