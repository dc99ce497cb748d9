"""Checks that many cards share: target architecture, element sizes, launch sites, loop trip counts."""

from __future__ import annotations

from warpwise.skills.regions import CheckContext, Verdict, check, holds, unknown, violated


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
