"""Matchers of the reductions, arithmetic and control cards: shared-memory tree reductions, contended atomics,
two-pass softmax, integer and floating division, packed half math, `pow`/`sqrt` shapes, dynamically indexed
local arrays and 32-bit global indices.

Each matcher first asks the kernel model whether the function can hold the pattern at all (a shared array and a
barrier in a loop, an atomic call, a math call, a local array), and only then reads syntax nodes for the exact
shape, so that functions without the pattern cost a few attribute reads.
"""

from __future__ import annotations

from collections.abc import Iterator

from warpwise.skills.facts_reduce import (
    atomic_target,
    element_type,
    geometry_limits,
    identifiers,
    int_range,
    is_uniform,
    node_at,
    reads_memory,
    single_definition,
    tree_reduction,
    two_pass_softmax,
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


def _index_loads(ctx: MatchContext, node: object, depth: int = 0) -> bool:
    """Return whether an index expression depends on a load (directly or through locals defined once)."""
    if node is None or depth > 4:
        return False
    if reads_memory(node):
        return True
    for name in identifiers(ctx.model, node):
        value = single_definition(ctx.model, ctx.function, name)
        if value is not None and _index_loads(ctx, value, depth + 1):
            return True
    return False


@matcher("contended_global_atomics")
def contended_global_atomics(ctx: MatchContext) -> Iterator[Region]:
    """Find `atomicAdd` on global memory whose address is data-dependent or one of a few known bins."""
    fn = ctx.function
    calls = [c for c in fn.calls if c.name == "atomicAdd"]
    if not calls:
        return
    limits = geometry_limits(ctx.model, fn)
    for call in calls:
        tgt = atomic_target(ctx.model, fn, call.span)
        if tgt is None or tgt.leader_guarded or tgt.index_span is None:
            continue
        index = node_at(ctx.model, fn, tgt.index_span)
        if is_uniform(ctx.model, fn, index):
            continue
        r = int_range(ctx.model, fn, index, limits)
        bins = r[1] + 1 if r is not None and r[0] >= 0 else None
        loads = _index_loads(ctx, index)
        if bins is None and not loads:
            continue
        how = f"one of {bins} counters" if bins is not None else "a data-dependent counter"
        yield Region(
            AnchorKind.CALL,
            fn,
            call.span,
            f"contended:{tgt.base}:{call.span[0]}",
            {
                "target": tgt,
                "array": tgt.base,
                "index": tgt.index,
                "value": tgt.value,
                "bins": bins,
                "element": element_type(fn, tgt.base) or "",
                "how": how,
            },
        )


@matcher("uniform_address_atomics")
def uniform_address_atomics(ctx: MatchContext) -> Iterator[Region]:
    """Find `atomicAdd` calls that every thread makes on the same global address."""
    fn = ctx.function
    for call in fn.calls:
        if call.name != "atomicAdd":
            continue
        tgt = atomic_target(ctx.model, fn, call.span)
        if tgt is None or tgt.leader_guarded:
            continue
        if tgt.index_span is not None and not is_uniform(ctx.model, fn, node_at(ctx.model, fn, tgt.index_span)):
            continue
        address = tgt.base if tgt.form == "pointer" else f"{tgt.base}[{tgt.index}]"
        yield Region(
            AnchorKind.CALL,
            fn,
            call.span,
            f"uniform-atomic:{tgt.base}:{call.span[0]}",
            {
                "target": tgt,
                "array": tgt.base,
                "address": address,
                "value": tgt.value,
                "element": element_type(fn, tgt.base) or "",
            },
        )


@matcher("two_pass_softmax")
def two_pass_softmax_loops(ctx: MatchContext) -> Iterator[Region]:
    """Find a max pass followed by a sum-of-exponentials pass over the same elements."""
    fn = ctx.function
    names = {c.name for c in fn.calls if c.category in ("math", "call")}
    if len(fn.loops) < 2 or not names & {"expf", "__expf", "exp"} or not names & {"fmaxf", "fmax", "max"}:
        return
    for loop in fn.loops:
        found = two_pass_softmax(ctx.model, fn, loop.id)
        if found is None:
            continue
        yield Region(
            AnchorKind.LOOP,
            fn,
            loop.header_span,
            f"softmax:{found.max_var}:{found.sum_var}:{loop.id}",
            {
                "softmax": found,
                "max": found.max_var,
                "sum": found.sum_var,
                "element": found.element,
                "exp": found.exp_call,
            },
        )
