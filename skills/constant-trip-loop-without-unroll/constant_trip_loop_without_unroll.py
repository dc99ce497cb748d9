"""Rules of the `constant-trip-loop-without-unroll` card (Unroll the constant-trip loop): what only this card uses.

Registered here: matcher `constant_trip_loops_without_unroll`, check `loop_trip_count_at_most`. The card's rewrite
and the recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.constant_trip_loop_without_unroll`.
"""

from __future__ import annotations

from collections.abc import Iterator

from warpwise.analyzers.facts import loop_label
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import (
    CheckContext,
    MatchContext,
    Region,
    Verdict,
    check,
    holds,
    matcher,
    unknown,
    violated,
)
from warpwise.skills.rewrite import Edit, RewriteContext


@matcher("constant_trip_loops_without_unroll")
def constant_trip_loops_without_unroll(ctx: MatchContext, min_trips: int = 2) -> Iterator[Region]:
    """Find `for` loops with a constant trip count and no `#pragma unroll`."""
    fn = ctx.function
    for loop in fn.loops:
        if loop.kind != "for" or loop.unroll is not None or loop.trip_count is None or loop.trip_count < min_trips:
            continue
        yield Region(
            AnchorKind.LOOP,
            fn,
            loop.header_span,
            f"loop:{loop.id}:{loop.var}",
            {"loop": loop, "var": loop.var or "?", "trips": loop.trip_count, "loop_label": loop_label(loop)},
        )


@check("loop_trip_count_at_most")
def loop_trip_count_at_most(ctx: CheckContext, limit: int, fact: str = "loop") -> Verdict:
    """Hold when the region's loop has a constant trip count no larger than `limit`."""
    loop = ctx.fact(fact)
    if loop is None or loop.trip_count is None:
        return unknown("the loop's trip count is not a constant")
    if loop.trip_count <= limit:
        return holds(f"the loop runs {loop.trip_count} times")
    return violated(f"the loop runs {loop.trip_count} times (more than {limit})")


def pragma_unroll(ctx: RewriteContext) -> list[Edit] | None:
    """Insert `#pragma unroll` on its own line before a loop."""
    start = ctx.region.abs_span[0]
    line = ctx.line_start(start)
    if ctx.data[line:start].strip():
        return None
    return [Edit(line, line, f"{ctx.indent_at(start)}#pragma unroll\n")]
