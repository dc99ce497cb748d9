"""Rules of the `divergent-syncthreads` card (Barrier reached by only some threads): what only this card uses.

Registered here: matcher `divergent_block_barriers`, checks `barrier_condition_is_thread_dependent` and
`tiles_may_be_partial`. The card's
rewrite and the recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.divergent_syncthreads`.
"""

from __future__ import annotations

from collections.abc import Iterator

from warpwise.analyzers.barriers import barrier_guard, unguarded_tile_loop
from warpwise.analyzers.findings import Related
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import CheckContext, MatchContext, Region, Verdict, check, holds, matcher, violated

_BLOCK_SYNCS = ("__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or")


@matcher("divergent_block_barriers")
def divergent_block_barriers(ctx: MatchContext) -> Iterator[Region]:
    """Find block-wide barriers under thread-dependent conditions, and thread-dependent returns before barriers."""
    fn = ctx.function
    syncs = [
        c
        for c in fn.calls
        if c.category == "sync"
        and (c.name in _BLOCK_SYNCS or (c.name.endswith(".sync") and ("block" in c.name or "cta" in c.name)))
    ]
    guards = {id(c): barrier_guard(ctx.model, fn, c) for c in syncs}
    for call in syncs:
        guard = guards[id(call)]
        if guard is not None:
            what = f"`{call.name}()` runs under `{guard}`, which depends on the thread index"
            yield Region(
                AnchorKind.CALL,
                fn,
                call.span,
                f"sync:{call.span[0]}",
                {"barrier": call.name, "guard": guard, "what": what},
            )
    for branch in fn.branches:
        if not (branch.thread_dependent and branch.has_return):
            continue
        later = [c for c in syncs if c.span[0] > branch.span[1] and guards[id(c)] is None]
        if not later:
            continue
        target = later[0]
        what = f"threads that return under `if ({branch.condition})` skip the later `{target.name}()`"
        yield Region(
            AnchorKind.BRANCH,
            fn,
            branch.span,
            f"return:{branch.span[0]}",
            {
                "barrier": target.name,
                "guard": branch.condition,
                "what": what,
                "return_span": branch.span,
                "_related": (Related("the barrier they skip", fn.span(target.span)),),
                # The Programming Guide leaves a barrier after some threads returned undefined, but current GPUs do
                # not wait for exited threads: a hazard (shared data they should have written), not a proven hang.
                "_severity": "warning",
            },
        )


@check("barrier_condition_is_thread_dependent")
def barrier_condition_is_thread_dependent(ctx: CheckContext) -> Verdict:
    """Hold when the condition guarding (or skipping) the barrier depends on the thread index."""
    guard = ctx.fact("guard")
    if guard is None:
        return violated("the barrier is not under a condition")
    return holds(f"`{guard}` depends on `threadIdx` (directly or through the values it computes)")


@check("tiles_may_be_partial")
def tiles_may_be_partial(ctx: CheckContext) -> Verdict:
    """Hold unless the threads return at a tile edge in a kernel that reads whole tiles without bounds checks.

    A thread-dependent return (`if (row >= M || col >= N) return;`, the row and column from `blockIdx` and
    `threadIdx`) makes threads of one block disagree only in a partial tile at the edge of the data. A kernel whose
    tile loop reads global memory with no bounds check requires sizes that are multiples of its tiles; there the
    return is never taken by part of a block, and the finding would change nothing.
    """
    span = ctx.fact("return_span")
    if span is None:
        return holds("the barrier itself is under the thread-dependent condition")
    loop = unguarded_tile_loop(ctx.function, span[1])
    if loop is not None:
        return violated(
            f"the tile loop `{loop}` reads global memory with no bounds check, so the kernel requires sizes that are "
            f"multiples of its tiles, and `if ({ctx.fact('guard')})` returns whole blocks or none of their threads"
        )
    return holds("nothing in the kernel requires full tiles, so a partial tile has threads on both sides of the return")
