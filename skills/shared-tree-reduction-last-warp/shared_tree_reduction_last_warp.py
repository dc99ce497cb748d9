"""Rules of the `shared-tree-reduction-last-warp` card (Finish the tree reduction with warp shuffles): what only
this card uses.

Registered here: check `reduction_barrier_before_loop`. The card's rewrite and the recognisers only it needs live
here too; what several cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`,
`.facts*`). The library imports this file by path as `warpwise.skills.cards.shared_tree_reduction_last_warp`.
"""

from __future__ import annotations

from warpwise.analyzers.facts_reduce import TreeReduction, fresh_name
from warpwise.analyzers.model import AccessKind
from warpwise.skills.regions import CheckContext, Verdict, check, holds, unknown, violated
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.skills.rewrites.reduce import FULL_MASK, _in_block, _own_line, _step


@check("reduction_barrier_before_loop")
def reduction_barrier_before_loop(ctx: CheckContext) -> Verdict:
    """Hold when a `__syncthreads()` separates the last write of the shared array from the reduction loop."""
    red: TreeReduction = ctx.fact("reduction")
    fn = ctx.function
    loop = fn.loops[red.loop_id]
    writes = [
        a
        for a in fn.accesses
        if a.base == red.array
        and a.kind in (AccessKind.WRITE, AccessKind.READ_WRITE, AccessKind.ATOMIC)
        and a.span[0] < loop.span[0]
    ]
    if not writes:
        return unknown(f"`{red.array}` is not written before the loop in `{fn.name}`")
    last = max(writes, key=lambda a: a.span[0])
    for c in fn.calls:
        if c.name == "__syncthreads" and last.span[1] <= c.span[0] < loop.span[0] and c.thread_dependent_guard is None:
            return holds(f"`__syncthreads()` separates the write `{red.array}[{last.index}]` from the loop")
    return violated(
        f"no `__syncthreads()` separates the write `{red.array}[{last.index}]` from the loop: "
        "other threads' elements may not be visible yet"
    )


def _first(red: TreeReduction, a: str, b: str) -> str:
    """Return the expression that combines two elements the way the user's loop does."""
    if red.form == "call":
        return f"{red.combine}({a}, {b})"
    return f"{a} {red.combine} {b}"


def tree_reduction_last_warp(ctx: RewriteContext) -> list[Edit] | None:
    """Stop the shared-memory tree at stride 64 and finish the last 32 -> 1 steps with `__shfl_down_sync`.

    The warp computes the same pairs in the same order as the loop did (lane `t` combines its value with lane
    `t + offset`), so the total is bitwise identical; only `a[0]` is written back, followed by a barrier.
    """
    red: TreeReduction = ctx.fact("reduction")
    if red.shape != "sequential":
        return None
    loop = ctx.function.loops[red.loop_id]
    start, end = ctx.abs(loop.span)
    b0, b1 = ctx.abs(red.bound_span)
    if not _own_line(ctx, start) or not _in_block(ctx, (start, end)) or ctx.text((b0, b1)).strip() != "0":
        return None
    ind, unit = ctx.indent_at(start), ctx.indent_unit()
    a, t = red.array, red.tid
    acc = fresh_name(ctx.model, ctx.function, "warp_value")
    off = fresh_name(ctx.model, ctx.function, "offset", {acc})
    shfl = f"__shfl_down_sync({FULL_MASK}, {acc}, {off})"
    lines = [
        f"if ({t} < 32) {{",
        f"{unit}{red.element_text} {acc} = {_first(red, f'{a}[{t}]', f'{a}[{t} + 32]')};",
        f"{unit}for (int {off} = 16; {off} > 0; {off} >>= 1) {_step(red, acc, shfl)}",
        f"{unit}if ({t} == 0) {a}[0] = {acc};",
        "}",
        "__syncthreads();",
    ]
    tail = "".join(f"\n{ind}{line}" for line in lines)
    return [Edit(b0, b1, "32"), Edit(end, end, tail)]
