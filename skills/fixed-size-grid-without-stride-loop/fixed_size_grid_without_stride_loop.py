"""Rules of the `fixed-size-grid-without-stride-loop` card (Use a grid-stride loop): what only this card uses.

Registered here: no matcher or check of its own. The card's rewrite and the recognisers only it needs live here too;
what several cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`,
`.facts*`). The library imports this file by path as `warpwise.skills.cards.fixed_size_grid_without_stride_loop`.
"""

from __future__ import annotations

from warpwise.analyzers.facts_memory import Elementwise
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.skills.rewrites.memory import _bound_text, _drop_const, _indent_more


def grid_stride_loop(ctx: RewriteContext) -> list[Edit] | None:
    """Turn `if (i < n) body` into `for (; i < n; i += blockDim.x * gridDim.x) body`."""
    shape: Elementwise = ctx.fact("shape")
    if shape.form == "return":
        return _early_return_loop(ctx, shape)
    if shape.form != "if":
        return None
    keyword = shape.stmt.children[0]
    clause = shape.cond
    opening = next((c for c in clause.children if c.type == "("), None)
    closing = next((c for c in reversed(clause.children) if c.type == ")"), None)
    if keyword.type != "if" or opening is None or closing is None:
        return None
    edits = [
        Edit(keyword.start_byte, keyword.end_byte, "for"),
        Edit(opening.end_byte, opening.end_byte, "; "),
        Edit(closing.start_byte, closing.start_byte, f"; {shape.var} += blockDim.x * gridDim.x"),
    ]
    if shape.var_const:
        edits += _drop_const(ctx, shape.decl)
    return edits


def _early_return_loop(ctx: RewriteContext, shape: Elementwise) -> list[Edit] | None:
    """Turn `if (i >= n) return; rest` into `for (; i < n; i += blockDim.x * gridDim.x) { rest }`."""
    unit = ctx.indent_unit()
    ind = ctx.indent_at(shape.stmt.start_byte)
    rest = ctx.text((shape.body.start_byte, shape.body.end_byte))
    header = f"for (; {shape.var} < {_bound_text(ctx, shape)}; {shape.var} += blockDim.x * gridDim.x)"
    edits = [
        Edit(shape.stmt.start_byte, shape.body.end_byte, f"{header} {{\n{ind}{unit}{_indent_more(rest, unit)}\n{ind}}}")
    ]
    if shape.var_const:
        edits += _drop_const(ctx, shape.decl)
    return edits
