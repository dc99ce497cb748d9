"""Checks that many cards share: target architecture, element sizes, launch sites, loop trip counts."""

from __future__ import annotations

from warpwise.skills.facts import distinct_launch_args, pointer_params
from warpwise.skills.regions import CheckContext, Verdict, check, holds, unknown, violated


@check("target_sm_at_least")
def target_sm_at_least(ctx: CheckContext, sm: int) -> Verdict:
    """Hold when the target GPU's compute capability is at least `sm` (e.g. 80 for cp.async)."""
    if ctx.target_sm >= sm:
        return holds(f"the target is sm_{ctx.target_sm} (needs sm_{sm} or newer)")
    return violated(f"the target is sm_{ctx.target_sm}; this needs sm_{sm} or newer")


@check("element_bytes_in")
def element_bytes_in(ctx: CheckContext, sizes: list[int], fact: str = "access") -> Verdict:
    """Hold when the region's access moves elements of one of the given sizes."""
    acc = ctx.fact(fact)
    width = getattr(acc, "width", None)
    name = getattr(acc, "base", "the array")
    if width is None:
        return unknown(f"the element type of `{name}` is not known here")
    if width in sizes:
        return holds(f"`{name}` has {width}-byte elements")
    return violated(f"`{name}` has {width}-byte elements (this applies to {', '.join(map(str, sizes))}-byte ones)")


@check("launches_pass_distinct_buffers")
def launches_pass_distinct_buffers(ctx: CheckContext, fact: str = "params") -> Verdict:
    """Hold when every launch in the file passes distinct plain buffers for the region's pointer parameters."""
    names = ctx.fact(fact)
    params = [p for p in pointer_params(ctx.function) if names is None or p.name in names]
    if len(params) < 2:
        others = pointer_params(ctx.function)
        params = others
    ok, reason = distinct_launch_args(ctx.model, ctx.function, params)
    if ok is None:
        return unknown(reason)
    return holds(reason) if ok else violated(reason)


@check("loop_trip_count_at_most")
def loop_trip_count_at_most(ctx: CheckContext, limit: int, fact: str = "loop") -> Verdict:
    """Hold when the region's loop has a constant trip count no larger than `limit`."""
    loop = ctx.fact(fact)
    if loop is None or loop.trip_count is None:
        return unknown("the loop's trip count is not a constant")
    if loop.trip_count <= limit:
        return holds(f"the loop runs {loop.trip_count} times")
    return violated(f"the loop runs {loop.trip_count} times (more than {limit})")
