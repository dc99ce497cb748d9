"""Facts about block-wide barriers that the `divergent-syncthreads` rule and card share.

A thread-dependent return before a barrier (`if (row >= M || col >= N) return;`, row and column from `blockIdx`
and `threadIdx`) makes threads of one block disagree only in a partial tile at the edge of the data. A kernel whose
tile loop reads global memory with no bounds check already requires sizes that are multiples of its tiles (a
partial tile would read past the end of its data), so in every size it supports the return is taken by whole
blocks or by none of their threads, and a finding about it would change nothing.
"""

from __future__ import annotations

from warpwise.analyzers.model import AccessKind, Function, MemorySpace


def unguarded_tile_loop(fn: Function, after: int) -> str | None:
    """Return the condition of a tile loop after byte `after` that reads whole tiles with no bounds check, or None.

    Such a loop has a trip count set at run time and uniform across the block (`t < (K + 15) / 16`), holds a
    block-wide barrier, and reads global memory only outside thread-dependent branches.
    """
    syncs = [c for c in fn.calls if c.category == "sync" and c.span[0] > after]
    for i, loop in enumerate(fn.loops):
        if loop.span[0] < after or loop.trip_count is not None or not loop.bound_uniform:
            continue
        if not any(i in c.loops for c in syncs):
            continue
        reads = [
            a
            for a in fn.accesses
            if a.space is MemorySpace.GLOBAL and i in a.loops and a.kind in (AccessKind.READ, AccessKind.READ_WRITE)
        ]
        if reads and not any(a.in_thread_branch for a in reads):
            return loop.condition or loop.var or "the tile loop"
    return None
