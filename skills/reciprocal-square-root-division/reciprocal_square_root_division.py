"""Rules of the `reciprocal-square-root-division` card (Use rsqrtf instead of dividing by sqrtf): what only this
card uses.

Registered here: matcher `division_by_square_root`. The card's rewrite and the recognisers only it needs live here
too; what several cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`,
`.facts*`). The library imports this file by path as `warpwise.skills.cards.reciprocal_square_root_division`.
"""

from __future__ import annotations

from collections.abc import Iterator

from warpwise.analyzers.facts_reduce import (
    DIVIDE,
    CType,
    binary_nodes,
    clean,
    division_type,
    expr_type,
    field,
    float_literal_value,
    text_of,
    unparen,
)
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher
from warpwise.skills.rewrite import Edit, RewriteContext


@matcher("division_by_square_root")
def division_by_square_root(ctx: MatchContext) -> Iterator[Region]:
    """Find `a / sqrtf(x)` (and `a / sqrt(x)` in double) whose division has the precision of the square root."""
    fn = ctx.function
    if not any(c.name in ("sqrtf", "sqrt") for c in fn.calls):
        return
    for node in binary_nodes(ctx.model, fn, DIVIDE):
        right = unparen(field(node, "right"))
        left = field(node, "left")
        if right is None or left is None or right.type != "call_expression":
            continue
        callee = clean(text_of(ctx.model, field(right, "function")))
        args_node = field(right, "arguments")
        args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
        if callee not in ("sqrtf", "sqrt") or len(args) != 1:
            continue
        want = CType("float", 32 if callee == "sqrtf" else 64)
        if callee == "sqrt" and expr_type(ctx.model, fn, args[0]) != want:
            continue
        if division_type(ctx.model, fn, node) != want:
            continue
        one = left.type == "number_literal" and float_literal_value(text_of(ctx.model, left)) == 1.0
        fast = "rsqrtf" if callee == "sqrtf" else "rsqrt"
        x = clean(text_of(ctx.model, args[0]))
        yield Region(
            AnchorKind.EXPRESSION,
            fn,
            (node.start_byte - fn.base, node.end_byte - fn.base),
            f"rsqrt:{node.start_byte - fn.base}",
            {
                "expression": clean(text_of(ctx.model, node)),
                "sqrt": callee,
                "rsqrt": fast,
                "operand": x,
                "reciprocal": one,
                "replacement": f"{fast}({x})" if one else f"{clean(text_of(ctx.model, left))} * {fast}({x})",
            },
        )


def rsqrt_instead_of_division(ctx: RewriteContext) -> list[Edit] | None:
    """Replace `1.0f / sqrtf(x)` by `rsqrtf(x)` and `a / sqrtf(x)` by `a * rsqrtf(x)`."""
    start, end = ctx.region.abs_span
    node = ctx.node((start, end), "binary_expression")
    if node is None or (node.start_byte, node.end_byte) != (start, end):
        return None
    left, op, right = field(node, "left"), field(node, "operator"), field(node, "right")
    call = right
    while call is not None and call.type == "parenthesized_expression":
        call = call.named_children[0] if call.named_children else None
    callee = field(call, "function")
    if left is None or op is None or right is None or callee is None:
        return None
    rename = Edit(callee.start_byte, callee.end_byte, ctx.fact("rsqrt"))
    if ctx.fact("reciprocal"):
        return [Edit(left.start_byte, right.start_byte, ""), rename]
    return [Edit(op.start_byte, op.end_byte, "*"), rename]
