"""Rewrite helpers that several reduction, atomic and arithmetic cards share: warp-shuffle steps, statement
placement, cooperative-groups includes, value casts and parentheses.

Each rewrite returns text edits that keep the user's names and formatting, or None when the code, as written,
is outside what the rewrite handles exactly. Generated helper variables get names that nothing in the function
uses yet.
"""

from __future__ import annotations

import re

from warpwise.analyzers.facts_reduce import (
    TreeReduction,
    ctype,
    expr_type,
    field,
)
from warpwise.analyzers.model import Span
from warpwise.skills.rewrite import Edit, RewriteContext

FULL_MASK = "0xffffffffu"


def _step(red: TreeReduction, acc: str, other: str) -> str:
    """Return the statement that combines `other` into `acc` the way the user's loop combines two elements."""
    if red.form == "call":
        return f"{acc} = {red.combine}({acc}, {other});"
    return f"{acc} {red.combine}= {other};"


def _own_line(ctx: RewriteContext, start: int) -> bool:
    """Return whether only white space precedes `start` on its line."""
    return not ctx.data[ctx.line_start(start) : start].strip()


def _in_block(ctx: RewriteContext, span: Span) -> bool:
    """Return whether the statement at an absolute span sits directly in a `{ ... }` block, so statements can be
    added next to it (as the body of an unbraced `if` or loop, they would escape it)."""
    node = ctx.node(span)
    while node is not None and (node.start_byte, node.end_byte) != span:
        node = node.parent
    return node is not None and node.parent is not None and node.parent.type == "compound_statement"


_CG_HEADERS = ("#include <cooperative_groups.h>", "#include <cooperative_groups/reduce.h>")
_INCLUDE = re.compile(rb"^[ \t]*#[ \t]*include[^\n]*\n", re.M)


def _cg_includes(ctx: RewriteContext) -> list[Edit]:
    """Return the edit that includes the cooperative groups headers (after the includes above the function)."""
    data = ctx.data
    need = [h for h in _CG_HEADERS if h.split()[-1].encode() not in data]
    if not need:
        return []
    at = 0
    for m in _INCLUDE.finditer(data, 0, ctx.function.base):
        at = m.end()
    return [Edit(at, at, "".join(f"{h}\n" for h in need) + ("" if at else "\n"))]


def _statement_block(ctx: RewriteContext, stmt: Span, lines: list[str]) -> Edit:
    """Return the edit that replaces a statement by a braced block of lines, indented like the statement's line."""
    ind, u = ctx.indent_at(stmt[0]), ctx.indent_unit()
    body = "".join(f"\n{ind}{u}{line}" for line in lines)
    return Edit(stmt[0], stmt[1], "{" + body + f"\n{ind}}}")


def _value_as(ctx: RewriteContext, value: str, value_span: Span, elem: str) -> str:
    """Return the atomic's value converted to the counter type the way `atomicAdd` converts it."""
    node = ctx.node(ctx.abs(value_span))
    ty = expr_type(ctx.model, ctx.function, node)
    if ty is not None and ty == ctype(elem):
        return value
    return f"static_cast<{elem}>({value})"


_LOOSE_PARENTS = {
    "init_declarator",
    "argument_list",
    "subscript_argument_list",
    "parenthesized_expression",
    "expression_statement",
    "return_statement",
    "condition_clause",
    "initializer_list",
    "comma_expression",
}


def _needs_parens(node: object, tighter: bool = True) -> bool:
    """Return whether a rewritten expression binding looser than its original must be parenthesized."""
    parent = getattr(node, "parent", None)
    if parent is None:
        return True
    if parent.type in _LOOSE_PARENTS:
        return False
    if parent.type == "assignment_expression":
        return field(parent, "right") is None or field(parent, "right").id != getattr(node, "id", None)
    if parent.type == "conditional_expression":
        return False
    return tighter
