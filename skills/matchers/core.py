"""The `none` matcher: documentation-only cards (KLineage skills) bind to no region."""

from __future__ import annotations

from collections.abc import Iterator

from warpwise.skills.regions import MatchContext, Region, matcher


@matcher("none")
def no_regions(ctx: MatchContext) -> Iterator[Region]:
    """Find nothing (documentation-only cards, such as KLineage skills)."""
    return iter(())
