"""Rules of the `one-element-per-thread` card (Coarsen threads to several elements each): what only this card uses.

Registered here: check `body_is_light`. The card's rewrite and the recognisers only it needs live here too; what
several cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The
library imports this file by path as `warpwise.skills.cards.one_element_per_thread`.
"""

from __future__ import annotations

from typing import Any

from warpwise.analyzers.facts_memory import Elementwise
from warpwise.skills.checks.memory import _PURE_CALLS, _line
from warpwise.skills.regions import CheckContext, Verdict, check, holds, unknown, violated
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.skills.rewrites.memory import _fresh, _indent_more, _shrink_launches

# The most loop iterations per thread that still count as "one element's worth of work".
_LIGHT_TRIP = 16


def _heavy_loop(fn: Any, inside: Any) -> tuple[Any, str] | None:
    """Return the first selected loop whose iterations, times those of the loops around it, exceed the light limit."""
    by_id = {lp.id: lp for lp in fn.loops}
    for lp in fn.loops:
        if not inside(lp):
            continue
        total: int | None = 1
        cur = lp
        while cur is not None and total is not None and inside(cur):
            total = None if cur.trip_count is None else total * cur.trip_count
            cur = by_id.get(cur.parent) if cur.parent is not None else None
        if total is None:
            return lp, f"up to `{lp.bound or 'a runtime bound'}` times"
        if total > _LIGHT_TRIP:
            return lp, f"{total} times with the loops around it"
    return None


@check("body_is_light")
def body_is_light(ctx: CheckContext) -> Verdict:
    """Hold when each thread's element takes a bounded, small amount of work (no loop over a runtime bound).

    A thread that already loops over a row (a GEMV, a row-wise loss, a per-row selection) is launched with one thread
    per row, not per element: the grid is small, and dividing it leaves most of the GPU idle. Measured on the H200
    (bench/results/admission-2026-11-29-a.md): coarsening such kernels made them 1.6x to 8x slower.
    """
    fn = ctx.function
    body = ctx.fact("shape").body
    lo, hi = body.start_byte - fn.base, body.end_byte - fn.base
    heavy = _heavy_loop(fn, lambda lp: lo <= lp.span[0] < hi)
    if heavy is not None:
        lp, trips = heavy
        what = f"over `{lp.var}`" if lp.var else f"`{lp.condition or lp.kind}`"
        line = _line(ctx.model, fn.base + lp.span[0])
        return violated(
            f"each thread of `{fn.name}` already loops {what} ({trips}, line {line}): "
            "it does a whole row's work, so its grid is small, and a quarter of it would leave most of the GPU idle"
        )
    for call in fn.calls:
        if not (lo <= call.span[0] < hi) or call.category != "call" or _PURE_CALLS.match(call.name):
            continue
        callee = ctx.model.function(call.name)
        if callee is None:
            return unknown(f"the body calls `{call.name}`, whose work per call is not known here")
        inner = _heavy_loop(callee, lambda lp: True)
        if inner is not None:
            return violated(
                f"the body calls `{call.name}`, which loops {f'over `{inner[0].var}`' if inner[0].var else ''} "
                f"({inner[1]}): each thread already does a row's work"
            )
    return holds(f"each thread of `{fn.name}` does a small, bounded amount of work for its element")


def grid_factor(matches: list[Any]) -> int | None:
    """Return how many elements each thread covers after coarsening (the anchor's `factor`; the grid shrinks by it)."""
    return int(matches[0].card.header.anchor.args.get("factor", 4))


def coarsen_elements(ctx: RewriteContext, factor: int = 4) -> list[Edit] | None:
    """Give each thread `factor` elements, `blockDim.x` apart (coalesced), in an unrolled loop; shrink the grid."""
    shape: Elementwise = ctx.fact("shape")
    if shape.form not in ("if", "return") or shape.decl is None:
        return None
    factor = int(ctx.args.get("factor", factor))
    decl = shape.decl
    init_decl = next((c for c in decl.named_children if c.type == "init_declarator"), None)
    name = init_decl.child_by_field_name("declarator") if init_decl is not None else None
    if name is None:
        return None
    var = shape.var
    first = _fresh(ctx, f"{var}_first")
    counter = _fresh(ctx, f"{var}_k")
    product = shape.index.product
    unit = ctx.indent_unit()
    ind = ctx.indent_at(shape.stmt.start_byte)
    type_text = ctx.text((decl.start_byte, name.start_byte)).rstrip()
    stmt = (shape.stmt.start_byte, shape.body.end_byte if shape.form == "return" else shape.stmt.end_byte)
    body = _indent_more(ctx.text(stmt), unit)
    wrapped = (
        f"#pragma unroll\n"
        f"{ind}for (int {counter} = 0; {counter} < {factor}; ++{counter}) {{\n"
        f"{ind}{unit}{type_text} {var} = {first} + {counter} * blockDim.x;\n"
        f"{ind}{unit}{body}\n"
        f"{ind}}}"
    )
    edits = [
        Edit(name.start_byte, name.end_byte, first),
        Edit(product.end_byte, product.end_byte, f" * {factor}"),
        Edit(stmt[0], stmt[1], wrapped),
    ]
    return edits + _shrink_launches(ctx, shape, factor)
