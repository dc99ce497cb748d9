"""Rules of the `missing-restrict` card (Mark the pointers __restrict__): what only this card uses.

Registered here: matcher `pointer_params_without_restrict`, check `launches_pass_distinct_buffers`. The card's
rewrite and the recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.missing_restrict`.
"""

from __future__ import annotations

from collections.abc import Iterator

from warpwise.analyzers.facts import distinct_launch_args, pointer_params
from warpwise.analyzers.findings import Related
from warpwise.analyzers.model import AccessKind, FunctionKind, MemorySpace
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import (
    CheckContext,
    MatchContext,
    Region,
    Verdict,
    check,
    holds,
    matcher,
    unknown,
    violated,
)
from warpwise.skills.rewrite import Edit, RewriteContext


@matcher("pointer_params_without_restrict")
def pointer_params_without_restrict(ctx: MatchContext) -> Iterator[Region]:
    """Find kernels with two or more pointer parameters, some without `__restrict__`, that store through one."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    pointers = pointer_params(fn)
    lacking = [p for p in pointers if not p.is_restrict]
    if len(pointers) < 2 or not lacking:
        return
    stores = [
        a for a in fn.accesses if a.kind in (AccessKind.WRITE, AccessKind.READ_WRITE) and a.space is MemorySpace.GLOBAL
    ]
    if not stores:
        return
    names = [p.name for p in lacking]
    related = tuple(
        Related(f"launched here with `{', '.join(launch.args)}`", host.span(launch.span))
        for host, launch in ctx.model.launches_of(fn.name)[:5]
    )
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"restrict:{fn.name}",
        {
            "params": names,
            "names": ", ".join(f"`{n}`" for n in names),
            "verb": "is a pointer parameter" if len(names) == 1 else "are pointer parameters",
            "stored": stores[0].base,
            "_related": related,
        },
    )


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


def add_restrict(ctx: RewriteContext) -> list[Edit] | None:
    """Qualify each listed pointer parameter `__restrict__` (`const float* x` -> `const float* __restrict__ x`)."""
    edits: list[Edit] = []
    for name in ctx.fact("params", []):
        param = ctx.function.param(name)
        if param is None:
            return None
        start, end = ctx.abs(param.span)
        text = ctx.data[start:end]
        star = text.rfind(b"*")
        if star < 0:
            return None
        at = start + star + 1
        if ctx.data[at : at + 1] in (b" ", b"\t"):
            edits.append(Edit(at + 1, at + 1, "__restrict__ "))
        else:
            edits.append(Edit(at, at, "__restrict__ "))
    return edits or None
