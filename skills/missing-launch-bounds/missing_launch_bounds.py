"""Rules of the `missing-launch-bounds` card (Declare __launch_bounds__ for the block size used): what only this
card uses.

Registered here: matcher `kernels_without_launch_bounds`, check `launches_share_block_size`. The card's rewrite and
the recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.missing_launch_bounds`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from warpwise.analyzers.facts_memory import launches_of
from warpwise.analyzers.findings import Related
from warpwise.analyzers.model import FunctionKind
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
from warpwise.skills.spec_launch import is_spec_launch


@matcher("kernels_without_launch_bounds")
def kernels_without_launch_bounds(ctx: MatchContext) -> Iterator[Region]:
    """Find kernels without `__launch_bounds__` that this file launches."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL or fn.launch_bounds is not None:
        return
    launches = launches_of(ctx.model, fn.name)
    if not launches:
        return
    sizes = sorted({math.prod(launch.block_value) for _, launch in launches if launch.block_value is not None})
    threads = sizes[0] if len(sizes) == 1 else None
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"bounds:{fn.name}",
        {
            "kernel": fn.name,
            "threads": threads if threads is not None else "?",
            "sizes": sizes,
            "count": len(launches),
            "launches": "the launch" if len(launches) == 1 else f"all {len(launches)} launches",
            "use": "uses" if len(launches) == 1 else "use",
            "_related": tuple(
                Related(f"launched with `{launch.block}` threads per block here", host.span(launch.span))
                for host, launch in launches[:5]
                if not is_spec_launch(launch)
            ),
        },
    )


@check("launches_share_block_size")
def launches_share_block_size(ctx: CheckContext) -> Verdict:
    """Hold when every launch in the file uses the same constant number of threads per block."""
    fn = ctx.function
    launches = launches_of(ctx.model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file")
    for host, launch in launches:
        if launch.block_value is None:
            return unknown(f"the block `{launch.block}` in `{host.name}` is not a constant")
    sizes = sorted({math.prod(lc.block_value) for _, lc in launches if lc.block_value is not None})
    if len(sizes) > 1:
        return violated(f"`{fn.name}` is launched with {', '.join(map(str, sizes))} threads per block")
    n = len(launches)
    return holds(f"{'the launch' if n == 1 else f'all {n} launches'} use{'s' if n == 1 else ''} {sizes[0]} threads")


def add_launch_bounds(ctx: RewriteContext) -> list[Edit] | None:
    """Insert `__launch_bounds__(N)` before the kernel's name, N the block size of every launch in the file."""
    sizes = ctx.fact("sizes", [])
    if len(sizes) != 1:
        return None
    fn = ctx.function
    texts = {launch.block.strip() for _, launch in launches_of(ctx.model, fn.name)}
    value = str(sizes[0])
    if len(texts) == 1:
        (text,) = texts
        if text in ctx.model.macros and ctx.model.constants.get(text) == sizes[0]:
            defined = re.search(rb"#\s*define\s+" + re.escape(text.encode()) + rb"\b", ctx.data[: fn.base])
            if defined is not None:
                value = text
    start = ctx.abs(fn.name_span)[0]
    return [Edit(start, start, f"__launch_bounds__({value}) ")]
