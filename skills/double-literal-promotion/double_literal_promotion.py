"""Rules of the `double-literal-promotion` card (Make the literal single precision): what only this card uses.

Registered here: matcher `double_literals_in_float_arithmetic`, check `operand_is_single_precision`. The card's
rewrite and the recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.double_literal_promotion`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.facts import tree_of
from warpwise.analyzers.model import FileModel, Function, FunctionKind, Span
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


def rel(fn: Function, node: Any) -> Span:
    """Return a node's span relative to a function."""
    return (node.start_byte - fn.base, node.end_byte - fn.base)


def text(model: FileModel, node: Any) -> str:
    """Return a node's text."""
    return model.text[node.start_byte : node.end_byte].decode("utf-8", "replace")


# Candidate positions of unsuffixed floating literals; each is confirmed against the syntax tree.
_FLOAT_TEXT = re.compile(rb"(?<![\w.])(?:\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w.])")


_FLOAT_LITERAL = re.compile(r"^(\d+\.\d*|\.\d+|\d+\.?\d*[eE][+-]?\d+|\d*\.\d+[eE][+-]?\d+)$")


_ARITH = {"+", "-", "*", "/", "<", ">", "<=", ">=", "==", "!="}


@matcher("double_literals_in_float_arithmetic")
def double_literals_in_float_arithmetic(ctx: MatchContext) -> Iterator[Region]:
    """Find unsuffixed floating literals (type `double`) that are an operand of arithmetic in device code."""
    fn = ctx.function
    if fn.kind is FunctionKind.HOST:
        return
    root = tree_of(ctx.model).root_node
    for m in _FLOAT_TEXT.finditer(ctx.model.text, fn.base, fn.base + fn.length):
        lit = root.descendant_for_byte_range(m.start(), m.end())
        if lit is None or lit.type != "number_literal" or lit.start_byte != m.start() or lit.end_byte != m.end():
            continue
        raw = text(ctx.model, lit)
        if not _FLOAT_LITERAL.match(raw):
            continue
        parent = lit.parent
        if parent is None:
            continue
        other = None
        if parent.type == "binary_expression":
            op = parent.child_by_field_name("operator")
            if op is None or op.type not in _ARITH:
                continue
            left, right = parent.child_by_field_name("left"), parent.child_by_field_name("right")
            other = right if left is not None and left.id == lit.id else left
        elif parent.type == "assignment_expression":
            op = parent.child_by_field_name("operator")
            if op is None or op.type not in ("+=", "-=", "*=", "/="):
                continue
            other = parent.child_by_field_name("left")
        else:
            continue
        if other is None or other.type == "number_literal":
            continue
        if evaluated_at_compile_time(ctx.model, lit):
            continue
        yield Region(
            AnchorKind.EXPRESSION,
            fn,
            rel(fn, lit),
            f"literal:{lit.start_byte - fn.base}",
            {
                "literal": raw,
                "float_literal": raw + "f",
                "operand": text(ctx.model, other),
                "operand_span": rel(fn, other),
                "expression": " ".join(text(ctx.model, parent).split()),
            },
        )


_CONSTANT_CONTEXTS = frozenset({"template_argument_list", "static_assert_declaration", "enumerator"})


def evaluated_at_compile_time(model: FileModel, node: Any) -> bool:
    """Return whether an expression is part of a constant expression the compiler evaluates (the initializer of a
    `constexpr` variable, a template argument, a `static_assert`, an enumerator): no arithmetic of it runs on the
    GPU, in `double` or otherwise."""
    child, parent = node, node.parent
    while parent is not None and parent.type not in ("compound_statement", "function_definition"):
        if parent.type in _CONSTANT_CONTEXTS:
            return True
        if parent.type == "declaration" and child.type == "init_declarator":
            return any(
                c.type in ("type_qualifier", "storage_class_specifier") and text(model, c) in ("constexpr", "consteval")
                for c in parent.children
            )
        child, parent = parent, parent.parent
    return False


_FLOAT_TYPES = {"float", "half", "__half", "__nv_bfloat16", "nv_bfloat16", "float2", "float4"}


_DOUBLE_TYPES = {"double", "long double", "double2", "double4"}


def _base_type(type_text: str) -> str:
    t = type_text.replace("const", " ").replace("__restrict__", " ").replace("&", " ")
    t = re.sub(r"\[.*?\]", " ", t)
    return " ".join(t.replace("*", " ").split())


@check("operand_is_single_precision")
def operand_is_single_precision(ctx: CheckContext) -> Verdict:
    """Hold when every variable in the literal's other operand is single (or half) precision."""
    operand = ctx.fact("operand", "")
    names = set(re.findall(r"(?<![\w.])[A-Za-z_]\w*", operand))
    types: dict[str, str] = {}
    for name in names:
        p = ctx.function.param(name)
        if p is not None:
            types[name] = _base_type(p.type)
        elif name in ctx.function.locals:
            types[name] = _base_type(ctx.function.locals[name])
    doubles = sorted(n for n, t in types.items() if t in _DOUBLE_TYPES)
    if doubles:
        return violated(f"`{doubles[0]}` is `double`, so double arithmetic is intended")
    floats = sorted(n for n, t in types.items() if t in _FLOAT_TYPES)
    if floats:
        return holds(
            f"`{floats[0]}` is `{types[floats[0]]}`, so the double literal promotes float arithmetic to double"
        )
    if not names:
        return unknown("the other operand has no variable whose type is known")
    return unknown(f"the type of `{operand}` is not known here")


def float_literal(ctx: RewriteContext) -> list[Edit] | None:
    """Give a double literal the `f` suffix (`0.5` -> `0.5f`)."""
    start, end = ctx.region.abs_span
    if ctx.text((start, end)) != ctx.fact("literal"):
        return None
    return [Edit(end, end, "f")]
