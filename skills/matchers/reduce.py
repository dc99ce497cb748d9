"""The matcher of shared-memory tree reductions, which two reduction cards share (shuffles for the whole block, or for
the last warp). The other cards' matchers live in their folders.

Each matcher first asks the kernel model whether the function can hold the pattern at all (a shared array and a
barrier in a loop, an atomic call, a math call, a local array), and only then reads syntax nodes for the exact
shape, so that functions without the pattern cost a few attribute reads.
"""

from __future__ import annotations

from collections.abc import Iterator

from warpwise.analyzers.facts_reduce import (
    tree_reduction,
)
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher


def _combine_text(op: str, form: str) -> str:
    return f"`{op}`" if form != "call" else f"`{op}(...)`"


@matcher("shared_tree_reductions")
def shared_tree_reductions(
    ctx: MatchContext, shapes: tuple[str, ...] | list[str] = ("sequential",)
) -> Iterator[Region]:
    """Find loops that reduce a shared array pairwise with one `__syncthreads()` per step."""
    fn = ctx.function
    if not fn.shared or not fn.loops:
        return
    barrier_loops = {lid for c in fn.calls if c.name == "__syncthreads" for lid in c.loops[-1:]}
    for loop_id in sorted(barrier_loops):
        red = tree_reduction(ctx.model, fn, loop_id)
        if red is None or red.shape not in shapes:
            continue
        loop = fn.loops[loop_id]
        yield Region(
            AnchorKind.LOOP,
            fn,
            loop.header_span,
            f"tree:{red.array}:{loop_id}",
            {
                "reduction": red,
                "loop": loop,
                "array": red.array,
                "tid": red.tid,
                "var": red.var,
                "combine": _combine_text(red.combine, red.form),
                "element": red.element_type,
            },
        )
