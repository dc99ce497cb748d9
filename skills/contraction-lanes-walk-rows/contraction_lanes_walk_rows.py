"""Contraction whose lanes walk rows: the coalesced thread mapping step of a naive matrix multiply, on its own.

The matcher is the untiled-contraction card's recogniser (the kernel model's reading of a contraction in any
layout and spelling) plus the mapping read from the same model: adjacent lanes take adjacent rows `i` (unit
stride along `threadIdx.x`) and not adjacent columns, while A is not contiguous along `i` and B is contiguous along
`j`. Then every k step of the loop loads A with a stride across the warp (and C is stored with one), where lanes on
`j` would load B contiguously and read the same A element (a broadcast). The rewrite is that card's `coalesced`
SIMT step (`SimtStep("coalesced", 16)`): the same loop, one output per thread on 16 x 16 blocks with adjacent lanes
on adjacent `j`, each output summing its products for k = 0, 1, ... in order (bit-identical); the launches in the
file and a problem file's launch are changed to the grid of 16 x 16 output tiles. It is the first step of the
contraction lineage, before shared tiles (contraction-without-shared-tiles).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.model import FunctionKind
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import CheckContext, MatchContext, Region, Verdict, check, matcher
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.verify.launch import LaunchChange


def _rules() -> Any:
    """Return the untiled-contraction card's rules module (its recogniser, launches and generators)."""
    from warpwise.skills.library import card_rules

    return card_rules("untiled-contraction")


def _step(args: dict[str, Any]) -> Any:
    """Return the SIMT step the card's arguments name (16 x 16 blocks by default)."""
    return _rules().SimtStep("coalesced", int(args.get("bs", 16)))


@matcher("contraction_lanes_walk_rows")
def contraction_lanes_walk_rows(ctx: MatchContext) -> Iterator[Region]:
    """Find naive contractions whose adjacent lanes take adjacent rows while the loop's loads want columns."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL or fn.shared:
        return
    rules = _rules()
    c, _ = rules.recognise(ctx.model, fn)
    if c is None or c.a.layout == "o" or c.b.layout != "o":
        return  # A already contiguous along the rows, or B not along the columns: lanes on j would not help.
    if not rules.lanes_walk_rows(ctx.model, fn, c):
        return
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"lanes-walk-rows:{fn.name}",
        {"kernel": fn.name, "contraction": c, "i": c.i, "j": c.j, "k": c.k, "a": c.a.name, "b": c.b.name},
    )


@check("coalesced_launches_rewritable")
def coalesced_launches_rewritable(ctx: CheckContext) -> Verdict:
    """Hold when every launch of the kernel in the file can be rewritten to the grid of output tiles."""
    result: Verdict = _rules().contraction_launches_rewritable(ctx)
    return result


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Replace the kernel's body with the coalesced mapping and rewrite its launches in the file."""
    rules = _rules()
    return rules.rewrite(RewriteContext(ctx.model, ctx.function, ctx.region, rules.tile_args(_step(ctx.args))))


def problem_launch_changes(matches: list[Any]) -> tuple[LaunchChange, ...] | None:
    """Return the launch change of the rewrite for a problem file's launch of the first match's kernel."""
    if not matches:
        return None
    region = matches[0].region
    c = region.facts.get("contraction")
    if c is None:
        return None
    return _rules().launch_changes(c, region.function, _step(dict(matches[0].card.header.anchor.args)))


__all__ = ["coalesced_launches_rewritable", "contraction_lanes_walk_rows", "problem_launch_changes", "rewrite"]
