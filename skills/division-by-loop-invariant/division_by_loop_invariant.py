"""Rules of the `division-by-loop-invariant` card (Multiply by a reciprocal computed before the loop): what only
this card uses.

Registered here: matcher `float_division_by_loop_invariant`, check `divisor_fixed_during_loop`, check
`loop_repeats`. The card's rewrite and the recognisers only it needs live here too; what several cards share stays
in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file
by path as `warpwise.skills.cards.division_by_loop_invariant`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from warpwise.analyzers.facts import loop_label
from warpwise.analyzers.facts_reduce import (
    DIVIDE,
    Node,
    binary_nodes,
    clean,
    division_type,
    enclosing_loops,
    field,
    fresh_name,
    identifier_nodes,
    identifiers,
    node_at,
    operator_of,
    reads_memory,
    text_of,
    unparen,
    variable_type,
)
from warpwise.analyzers.model import AccessKind, FileModel, Function
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
from warpwise.skills.rewrites.reduce import _in_block, _own_line


def is_simple_operand(node: Node | None) -> bool:
    """Return whether an expression reads only variables and constants (no loads, calls or side effects)."""
    node = unparen(node)
    if node is None:
        return False
    if node.type in ("identifier", "number_literal"):
        return True
    if node.type == "field_expression":
        return is_simple_operand(field(node, "argument"))
    if node.type in ("binary_expression", "unary_expression", "cast_expression"):
        return all(
            is_simple_operand(c) for c in node.named_children if c.type not in ("comment", "type_descriptor")
        ) and operator_of(node) not in ("&&", "||")
    return False


def declared_volatile(model: FileModel, fn: Function, name: str) -> bool:
    """Return whether the function declares `name` (as a local or parameter) `volatile`."""
    text = model.text[fn.base : fn.base + fn.length].decode("utf-8", "replace")
    return re.search(rf"\bvolatile\b[^;=(){{}}]*?\b{re.escape(name)}\b", text) is not None


def declared_reference(model: FileModel, fn: Function, name: str) -> bool:
    """Return whether the function declares `name` as a reference (`float& d = ...`), whose referent can change."""
    p = fn.param(name)
    if p is not None:
        return p.is_reference
    return any(
        n.parent is not None and n.parent.type == "reference_declarator" for n in identifier_nodes(model, fn, name)
    )


@matcher("float_division_by_loop_invariant")
def float_division_by_loop_invariant(ctx: MatchContext) -> Iterator[Region]:
    """Find floating-point divisions in a loop whose divisor does not change in that loop."""
    fn = ctx.function
    if not fn.loops:
        return
    groups: dict[tuple[int, str], list[Node]] = {}
    outer = [lp.body_span for lp in fn.loops if lp.parent is None]
    for node in [n for span in outer for n in binary_nodes(ctx.model, fn, DIVIDE, span)]:
        rel = (node.start_byte - fn.base, node.end_byte - fn.base)
        loops = enclosing_loops(fn, rel)
        right, left = unparen(field(node, "right")), field(node, "left")
        if not loops or right is None or left is None or not is_simple_operand(right):
            continue
        ty = division_type(ctx.model, fn, node)
        if ty is None or ty.kind != "float" or right.type == "number_literal":
            continue
        names = identifiers(ctx.model, right)
        if not names or any(n in ctx.model.constants and fn.param(n) is None for n in names):
            continue
        target = None
        for loop_id in loops:
            if names & fn.loops[loop_id].assigned:
                break
            target = loop_id
        if target is None:
            continue
        if not (identifiers(ctx.model, left) & fn.loops[target].assigned) and not reads_memory(left):
            # The whole quotient is loop-invariant: the compiler hoists it already.
            continue
        groups.setdefault((target, clean(text_of(ctx.model, right))), []).append(node)
    for (loop_id, divisor), found in groups.items():
        loop = fn.loops[loop_id]
        first = found[0]
        ty = division_type(ctx.model, fn, first)
        right = unparen(field(first, "right"))
        plain = right is not None and right.type in ("identifier", "field_expression")
        code = divisor if plain else f"({divisor})"
        stem = re.sub(r"\W+", "_", divisor).strip("_") if plain else "divisor"
        yield Region(
            AnchorKind.EXPRESSION,
            fn,
            (first.start_byte - fn.base, first.end_byte - fn.base),
            f"recip:{divisor}:{loop_id}",
            {
                "loop": loop,
                "divisor": divisor,
                "divisor_code": code,
                "reciprocal_name": f"inv_{stem}",
                "divisions": tuple((n.start_byte - fn.base, n.end_byte - fn.base) for n in found),
                "count": len(found),
                "float_type": "float" if ty is not None and ty.bits == 32 else "double",
                "loop_label": loop_label(loop),
                "expression": clean(text_of(ctx.model, first)),
            },
        )


@check("divisor_fixed_during_loop")
def divisor_fixed_during_loop(ctx: CheckContext) -> Verdict:
    """Hold when every variable of the divisor is a by-value parameter or a local the loop does not assign."""
    fn = ctx.function
    node = node_at(ctx.model, fn, ctx.region.span, "binary_expression")
    right = field(node, "right")
    names = sorted(identifiers(ctx.model, right)) if right is not None else []
    for name in names:
        if declared_volatile(ctx.model, fn, name):
            return violated(
                f"`{name}` is `volatile`: it may change between iterations even though the loop does not assign it"
            )
    others = [n for n in names if variable_type(fn, n) is None]
    refs = [n for n in names if declared_reference(ctx.model, fn, n)]
    if refs:
        loop = ctx.fact("loop")
        stores = [a for a in fn.accesses if loop.span[0] <= a.span[0] < loop.span[1] and a.kind in _STORES]
        if stores:
            return violated(
                f"`{refs[0]}` is a reference and {loop_label(loop)} stores to `{stores[0].array}[{stores[0].index}]`, "
                "which may be what it refers to"
            )
        return unknown(f"`{refs[0]}` is a reference: whether what it refers to changes during the loop is not known")
    if others:
        return unknown(f"`{others[0]}` is not a local or by-value parameter; something the loop calls could change it")
    shown = ", ".join(f"`{n}`" for n in names)
    return holds(f"{shown} {'is' if len(names) == 1 else 'are'} not assigned in {loop_label(ctx.fact('loop'))}")


@check("loop_repeats")
def loop_repeats(ctx: CheckContext) -> Verdict:
    """Hold when the loop runs more than once (the reciprocal is computed once for many divisions)."""
    loop = ctx.fact("loop")
    if loop.trip_count is None:
        return unknown(f"the trip count of {loop_label(loop)} is not a constant")
    if loop.trip_count >= 2:
        return holds(f"{loop_label(loop)} runs {loop.trip_count} times")
    return violated(f"{loop_label(loop)} runs {loop.trip_count} time(s): nothing to amortize")


_STORES = (AccessKind.WRITE, AccessKind.READ_WRITE, AccessKind.ATOMIC)


def _loop_insertion_point(ctx: RewriteContext, loop_start: int) -> int | None:
    """Return the start of the line before which a statement can go ahead of a loop (above its pragmas)."""
    if not _own_line(ctx, loop_start):
        return None
    line = ctx.line_start(loop_start)
    while line > 0:
        prev = ctx.line_start(line - 1)
        if not ctx.data[prev:line].lstrip().startswith(b"#pragma"):
            break
        line = prev
    return line


def reciprocal_before_loop(ctx: RewriteContext) -> list[Edit] | None:
    """Compute `1 / d` once before the loop and multiply by it inside (`x / d` -> `x * inv_d`)."""
    loop = ctx.fact("loop")
    start = ctx.abs(loop.span)[0]
    at = _loop_insertion_point(ctx, start)
    if at is None or not _in_block(ctx, ctx.abs(loop.span)):
        return None
    divisor = ctx.fact("divisor_code")
    name = fresh_name(ctx.model, ctx.function, ctx.fact("reciprocal_name"))
    ty = ctx.fact("float_type")
    one = "1.0f" if ty == "float" else "1.0"
    edits = [Edit(at, at, f"{ctx.indent_at(start)}const {ty} {name} = {one} / {divisor};\n")]
    for span in ctx.fact("divisions"):
        node = ctx.node(ctx.abs(span), "binary_expression")
        op, right = field(node, "operator"), field(node, "right")
        if op is None or right is None or op.type != "/":
            return None
        edits.append(Edit(op.start_byte, right.end_byte, f"* {name}"))
    return edits
