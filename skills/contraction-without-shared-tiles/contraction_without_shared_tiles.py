"""Contraction without shared tiles: the first exact tiling step of a naive matrix multiply, on its own.

The matcher is the untiled-contraction card's recogniser (the kernel model's reading of a contraction in any
layout and spelling); the rewrite is that card's `shared` SIMT step (`SimtStep("shared", 16)`): one output per
thread on 16 x 16 blocks with adjacent lanes on adjacent outputs along j, 16-deep tiles of A and B staged in
padded shared memory, each output summing its products for k = 0, 1, ... in order (bit-identical to the naive
loop). It is the step of a lineage before register tiles (untiled-contraction's own fix) and tensor cores
(contraction-without-tensor-cores), offered in the editor as a quick fix of its own; the launches in the file
and a problem file's launch are changed to the grid of 16 x 16 output tiles exactly as the untiled-contraction
card changes them.
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
    """Return the SIMT step the card's arguments name (16 x 16 shared tiles by default)."""
    return _rules().SimtStep("shared", int(args.get("bs", 16)))


@matcher("contraction_without_shared_tiles")
def contraction_without_shared_tiles(ctx: MatchContext) -> Iterator[Region]:
    """Find naive contractions (one output per thread) that read both operands from global memory for every k."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL or fn.shared:
        return
    c, _ = _rules().recognise(ctx.model, fn)
    if c is None:
        return
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"shared-tiles:{fn.name}",
        {"kernel": fn.name, "contraction": c, "layout": c.layout, "k": c.k, "a": c.a.name, "b": c.b.name},
    )


@check("shared_tile_launches_rewritable")
def shared_tile_launches_rewritable(ctx: CheckContext) -> Verdict:
    """Hold when every launch of the kernel in the file can be rewritten to the grid of output tiles."""
    result: Verdict = _rules().contraction_launches_rewritable(ctx)
    return result


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Replace the kernel's body with the shared-tile step and rewrite its launches in the file."""
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


__all__ = ["contraction_without_shared_tiles", "problem_launch_changes", "rewrite", "shared_tile_launches_rewritable"]
