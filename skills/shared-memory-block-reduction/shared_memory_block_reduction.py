"""Rules of the `shared-memory-block-reduction` card (Reduce the block with warp shuffles): what only this card
uses.

Registered here: check `reduction_combine_exact`. The card's rewrite and the recognisers only it needs live here
too; what several cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`,
`.facts*`). The library imports this file by path as `warpwise.skills.cards.shared_memory_block_reduction`.
"""

from __future__ import annotations

from warpwise.analyzers.facts_reduce import TreeReduction, ctype, fresh_name
from warpwise.skills.checks.reduce import _ASSOCIATIVE, _NOT_ASSOCIATIVE
from warpwise.skills.regions import CheckContext, Verdict, check, holds, unknown, violated
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.skills.rewrites.reduce import FULL_MASK, _own_line, _step


@check("reduction_combine_exact")
def reduction_combine_exact(ctx: CheckContext) -> Verdict:
    """Hold when regrouping the reduction cannot change its result (integer or bitwise arithmetic, max, min)."""
    red: TreeReduction = ctx.fact("reduction")
    ty = ctype(red.element_type)
    if red.combine in _NOT_ASSOCIATIVE:
        return violated(f"`{red.combine}` is not associative, so regrouping changes the result")
    if (
        ty is not None
        and ty.is_int
        and (red.combine in _ASSOCIATIVE or red.combine.rsplit("::", 1)[-1] in ("max", "min"))
    ):
        return holds(
            f"`{red.array}` holds `{red.element_type}`: integer `{red.combine}` gives the same total in any order"
        )
    if ty is not None and ty.kind == "float":
        return unknown(
            f"`{red.array}` holds `{red.element_type}`: a different grouping of the sum changes the last bits "
            "(and signed zeros or NaNs for max/min); whether the consumer tolerates that is not known"
        )
    return unknown(f"whether regrouping `{red.combine}` on `{red.element_type}` keeps the result is not known")


def shared_block_reduction_to_shuffles(ctx: RewriteContext) -> list[Edit] | None:
    """Replace the shared-memory tree by a shuffle reduction per warp, one shared slot per warp, and a shuffle
    reduction of the warp results by the first warp; the total lands in `a[0]` as before."""
    red: TreeReduction = ctx.fact("reduction")
    loop = ctx.function.loops[red.loop_id]
    start, end = ctx.abs(loop.span)
    if not _own_line(ctx, start):
        return None
    ind, u = ctx.indent_at(start), ctx.indent_unit()
    a, t = red.array, red.tid
    acc = fresh_name(ctx.model, ctx.function, "warp_value")
    off = fresh_name(ctx.model, ctx.function, "offset", {acc})
    peer = fresh_name(ctx.model, ctx.function, "peer", {acc, off})
    shfl = f"__shfl_down_sync({FULL_MASK}, {acc}, {off})"
    lines = [
        "{",
        f"{u}{red.element_text} {acc} = {a}[{t}];",
        f"{u}__syncthreads();",
        f"{u}for (int {off} = 16; {off} > 0; {off} >>= 1) {_step(red, acc, shfl)}",
        f"{u}if ({t} % 32 == 0) {a}[{t} / 32] = {acc};",
        f"{u}__syncthreads();",
        f"{u}if ({t} < 32) {{",
        f"{u}{u}{acc} = {a}[{t}];",
        f"{u}{u}for (int {off} = 16; {off} > 0; {off} >>= 1) {{",
        f"{u}{u}{u}const {red.element_text} {peer} = {shfl};",
        f"{u}{u}{u}if ({t} + {off} < blockDim.x / 32) {_step(red, acc, peer)}",
        f"{u}{u}}}",
        f"{u}{u}if ({t} == 0) {a}[0] = {acc};",
        f"{u}}}",
        f"{u}__syncthreads();",
        "}",
    ]
    text = lines[0] + "".join(f"\n{ind}{line}" for line in lines[1:])
    return [Edit(start, end, text)]
