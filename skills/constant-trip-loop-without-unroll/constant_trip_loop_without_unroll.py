"""Rules of the `constant-trip-loop-without-unroll` card (Unroll the constant-trip loop): what only this card uses.

Registered here: matcher `constant_trip_loops_without_unroll`, checks `loop_trip_count_at_most` and
`pragma_changes_machine_code`. The card's rewrite
and the recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.constant_trip_loop_without_unroll`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.facts import loop_label, tree_of
from warpwise.analyzers.facts_reduce import single_definition, text_of
from warpwise.analyzers.model import Loop
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


@matcher("constant_trip_loops_without_unroll")
def constant_trip_loops_without_unroll(ctx: MatchContext, min_trips: int = 2) -> Iterator[Region]:
    """Find `for` loops with a constant trip count and no `#pragma unroll`."""
    fn = ctx.function
    for loop in fn.loops:
        if loop.kind != "for" or loop.unroll is not None or loop.trip_count is None or loop.trip_count < min_trips:
            continue
        if _header_reads_warp_size(ctx, loop):
            # `warpSize` is 32 on every GPU but not a constant expression for nvcc: with or without the pragma the
            # loop stays rolled (nvcc 13.0, sm_90: the same SASS), so the fix would change nothing.
            continue
        yield Region(
            AnchorKind.LOOP,
            fn,
            loop.header_span,
            f"loop:{loop.id}:{loop.var}",
            {"loop": loop, "var": loop.var or "?", "trips": loop.trip_count, "loop_label": loop_label(loop)},
        )


def _header_reads_warp_size(ctx: MatchContext, loop: Loop) -> bool:
    """Return whether a loop's header reads `warpSize`, directly or through locals defined once from it."""
    tree = tree_of(ctx.model)
    start, end = ctx.function.span(loop.header_span)
    node = tree.root_node.descendant_for_byte_range(start, end)
    return node is not None and _reads_warp_size(ctx, node, set())


def _reads_warp_size(ctx: MatchContext, node: Any, seen: set[str]) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            name = text_of(ctx.model, n)
            if name == "warpSize":
                return True
            if name not in seen and len(seen) < 16:
                seen.add(name)
                value = single_definition(ctx.model, ctx.function, name)
                if value is not None and _reads_warp_size(ctx, value, seen):
                    return True
            continue
        stack.extend(n.named_children)
    return False


@check("loop_trip_count_at_most")
def loop_trip_count_at_most(ctx: CheckContext, limit: int, fact: str = "loop") -> Verdict:
    """Hold when the region's loop has a constant trip count no larger than `limit`."""
    loop = ctx.fact(fact)
    if loop is None or loop.trip_count is None:
        return unknown("the loop's trip count is not a constant")
    if loop.trip_count <= limit:
        return holds(f"the loop runs {loop.trip_count} times")
    return violated(f"the loop runs {loop.trip_count} times (more than {limit})")


@check("pragma_changes_machine_code")
def pragma_changes_machine_code(ctx: CheckContext) -> Verdict:
    """Hold when the kernel compiles to different machine code with `#pragma unroll` on the loop.

    nvcc fully unrolls most small constant-trip loops without being told: then the pragma changes no instruction.
    The compile-only build of the kernel as written and with the pragma (NVRTC, `verify.resources`) says which.
    """
    from warpwise.verify.resources import Unconfirmed, same_machine_code

    fn = ctx.function
    if not fn.is_kernel:
        return unknown(f"`{fn.name}` is not a kernel: it is compiled into each kernel that calls it")
    text = ctx.model.text
    start = ctx.region.abs_span[0]
    line = text.rfind(b"\n", 0, start) + 1
    if text[line:start].strip():
        after = text[:start] + b"\n#pragma unroll\n" + text[start:]
    else:
        after = text[:line] + b"#pragma unroll\n" + text[line:]
    same = same_machine_code(ctx.model, lambda: analyze_text(after, ctx.model.path), fn.name)
    if isinstance(same, Unconfirmed):
        return unknown(f"no build compares the machine code ({same.reason})")
    if same:
        return violated(
            f"NVRTC builds `{fn.name}` to the same machine code with and without `#pragma unroll`: the compiler "
            f"already unrolls {loop_label(ctx.fact('loop'))}"
        )
    return holds(f"`#pragma unroll` changes the machine code of `{fn.name}`: the compiler does not unroll it fully")


def pragma_unroll(ctx: RewriteContext) -> list[Edit] | None:
    """Insert `#pragma unroll` on its own line before a loop."""
    start = ctx.region.abs_span[0]
    line = ctx.line_start(start)
    if ctx.data[line:start].strip():
        return None
    return [Edit(line, line, f"{ctx.indent_at(start)}#pragma unroll\n")]
