"""Rules of the `powf-with-small-integer-exponent` card (Multiply instead of calling pow with a small integer
exponent): what only this card uses.

Registered here: matcher `pow_small_integer_exponent`, check `pow_base_precision`. The card's rewrite and the
recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.powf_with_small_integer_exponent`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.build import MATH_CALLS
from warpwise.analyzers.facts_reduce import (
    Node,
    clean,
    expr_type,
    field,
    float_literal_value,
    node_at,
    text_of,
    unparen,
)
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
from warpwise.skills.rewrites.reduce import _needs_parens


def is_pure(node: Node) -> bool:
    """Return whether an expression can be evaluated twice without changing anything (no assignment, increment,
    or call other than a math library function)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("assignment_expression", "update_expression", "comma_expression"):
            return False
        if n.type == "call_expression":
            callee = field(n, "function")
            if (
                callee is None
                or callee.type != "identifier"
                or callee.text.decode("utf-8", "replace") not in MATH_CALLS
            ):
                return False
        stack.extend(n.named_children)
    return True


PRIMARY = {"identifier", "subscript_expression", "field_expression", "call_expression", "parenthesized_expression"}


@matcher("pow_small_integer_exponent")
def pow_small_integer_exponent(
    ctx: MatchContext, exponents: tuple[int, ...] | list[int] = (2, 3, 4)
) -> Iterator[Region]:
    """Find `powf(x, n)` / `pow(x, n)` with a small integer exponent `n` (a literal or a file-level constant)."""
    fn = ctx.function
    for call in fn.calls:
        if call.category != "math" or call.name not in ("powf", "pow") or len(call.args) != 2:
            continue
        node = node_at(ctx.model, fn, call.span, "call_expression")
        args_node = field(node, "arguments")
        args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
        if len(args) != 2:
            continue
        exponent = unparen(args[1])
        if exponent is not None and exponent.type == "identifier":
            # A file-level constant or macro (`#define EXP 2 // squared`) is its value.
            known = ctx.model.constants.get(text_of(ctx.model, exponent))
            value = float(known) if known is not None else None
        elif exponent is not None and exponent.type == "number_literal":
            value = float_literal_value(text_of(ctx.model, exponent))
        else:
            continue
        if value is None or value not in exponents or not is_pure(args[0]):
            continue
        base = unparen(args[0])
        x = (
            text_of(ctx.model, base)
            if base is not None and base.type in PRIMARY
            else f"({text_of(ctx.model, args[0])})"
        )
        n = int(value)
        product = f"{x} * {x}" if n == 2 else f"{x} * {x} * {x}" if n == 3 else f"({x} * {x}) * ({x} * {x})"
        yield Region(
            AnchorKind.CALL,
            fn,
            call.span,
            f"pow:{call.span[0]}",
            {
                "name": call.name,
                "call": clean(text_of(ctx.model, node)),
                "base": clean(text_of(ctx.model, args[0])),
                "base_span": (args[0].start_byte - fn.base, args[0].end_byte - fn.base),
                "exponent": n,
                "product": product,
            },
        )


@check("pow_base_precision")
def pow_base_precision(ctx: CheckContext) -> Verdict:
    """Hold when the base already has the call's precision (float for powf, double for pow), so the product is
    computed in the same type as the call."""
    name, base = ctx.fact("name"), ctx.fact("base")
    node = node_at(ctx.model, ctx.function, ctx.fact("base_span"))
    ty = expr_type(ctx.model, ctx.function, node)
    want = 32 if name == "powf" else 64
    if ty is None:
        return unknown(f"the type of `{base}` is not known here")
    if ty.kind == "float" and ty.bits == want:
        return holds(f"`{base}` is {'float' if want == 32 else 'double'}, like `{name}`'s result")
    shown = ("float" if ty.bits == 32 else "double") if ty.kind == "float" else f"a {ty.bits}-bit {ty.kind} integer"
    return violated(
        f"`{base}` is {shown}: `{name}` converts it first, while `{ctx.fact('product')}` would multiply in its own type"
    )


_LOWER_THAN_MUL = {"+", "-", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&", "^", "|", "&&", "||"}


def _product_needs_parens(node: Any) -> bool:
    """Return whether a product replacing `node` (a primary expression) must be parenthesized."""
    parent = node.parent
    if parent is not None and parent.type == "binary_expression":
        op = field(parent, "operator")
        left = field(parent, "left")
        if op is not None and op.type in _LOWER_THAN_MUL:
            return False
        return not (op is not None and op.type in ("*", "/") and left is not None and left.id == node.id)
    return _needs_parens(node)


def pow_to_products(ctx: RewriteContext) -> list[Edit] | None:
    """Replace `powf(x, 2)` by `x * x` (3: `x * x * x`; 4: `(x * x) * (x * x)`)."""
    start, end = ctx.region.abs_span
    node = ctx.node((start, end), "call_expression")
    if node is None or (node.start_byte, node.end_byte) != (start, end):
        return None
    product = ctx.fact("product")
    return [Edit(start, end, f"({product})" if _product_needs_parens(node) else product)]
