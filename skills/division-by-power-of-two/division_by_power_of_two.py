"""Rules of the `division-by-power-of-two` card (Shift and mask instead of signed division by a power of two): what
only this card uses.

Registered here: matcher `integer_division_by_power_of_two`, checks `dividend_is_signed`,
`compiler_emits_sign_fixup`, `division_repeats` and `dividend_non_negative`. The card's rewrite and the
recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.division_by_power_of_two`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from warpwise.analyzers.expr.values import parse_int_literal
from warpwise.analyzers.facts_reduce import (
    DIVIDE,
    Node,
    _same,
    binary_nodes,
    clean,
    enclosing_loops,
    expr_type,
    field,
    geometry_limits,
    identifier_nodes,
    identifiers,
    int_range,
    node_at,
    number_value,
    operator_of,
    single_definition,
    text_of,
    unparen,
    variable_type,
)
from warpwise.analyzers.model import FileModel, Function, Loop, Span
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


def origin_value(model: FileModel, fn: Function, node: Node | None, depth: int = 0) -> int | None:
    """Return the value an integer expression takes in thread 0 of block 0, when it depends on nothing else."""
    node = unparen(node)
    if node is None or depth > 10:
        return None
    t = node.type
    if t == "number_literal":
        return parse_int_literal(text_of(model, node))
    if t == "field_expression":
        text = clean(text_of(model, node)).replace(" ", "")
        return 0 if text.startswith(("threadIdx.", "blockIdx.")) else None
    if t == "identifier":
        name = text_of(model, node)
        if name in model.constants and variable_type(fn, name) is None:
            return model.constants[name]
        value = single_definition(model, fn, name)
        return origin_value(model, fn, value, depth + 1) if value is not None else None
    if t == "cast_expression":
        return origin_value(model, fn, field(node, "value"), depth + 1)
    if t == "unary_expression" and operator_of(node) == "-":
        v = origin_value(model, fn, field(node, "argument"), depth + 1)
        return -v if v is not None else None
    if t == "binary_expression":
        op = operator_of(node)
        a = origin_value(model, fn, field(node, "left"), depth + 1)
        b = origin_value(model, fn, field(node, "right"), depth + 1)
        if a is None or b is None:
            return None
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
    return None


REMAINDER = re.compile(rb"%(?!=)")


def counting_loop(fn: Function, name: str, rel: Span) -> Loop | None:
    """Return the `for` loop around a span that counts `name` upward (`for (int j = lo; j < hi; ++j)` or `j += c`
    with a positive constant `c`), when `name` is that loop's variable."""
    for loop_id in enclosing_loops(fn, rel):
        loop = fn.loops[loop_id]
        if loop.var != name:
            continue
        if loop.kind == "for" and loop.compare in ("<", "<=") and loop.step_value is not None and loop.step_value > 0:
            return loop
        return None
    return None


def non_negative(
    model: FileModel, fn: Function, node: Node | None, limits: dict[str, tuple[int, int]], depth: int = 0
) -> bool:
    """Return whether a signed integer expression is never negative in a program without signed overflow.

    Ranges decide first (`int_range`); beyond them, variables counting up from a non-negative start in their loop
    are non-negative inside it, and `+ * / % >> &` of non-negative signed operands stay non-negative because
    signed overflow is undefined (the compiler assumes it away too). Conversions from unsigned values are only
    trusted through ranges, since they wrap without undefined behaviour.
    """
    node = unparen(node)
    if node is None or depth > 8:
        return False
    r = int_range(model, fn, node, limits)
    if r is not None:
        return r[0] >= 0
    t = node.type
    ty = expr_type(model, fn, node)
    if ty is None or ty.kind != "signed":
        return False
    if t == "identifier":
        name = text_of(model, node)
        loop = counting_loop(fn, name, (node.start_byte - fn.base, node.end_byte - fn.base))
        if loop is not None:
            start = _loop_start(model, fn, loop)
            return _signed(model, fn, start) and non_negative(model, fn, start, limits, depth + 1)
        value = single_definition(model, fn, name)
        return _signed(model, fn, value) and non_negative(model, fn, value, limits, depth + 1)
    if t == "binary_expression" and operator_of(node) in ("+", "*", "/", "%", ">>", "&"):
        return all(non_negative(model, fn, field(node, side), limits, depth + 1) for side in ("left", "right"))
    if t == "cast_expression":
        value = field(node, "value")
        return _signed(model, fn, value) and non_negative(model, fn, value, limits, depth + 1)
    return False


def _signed(model: FileModel, fn: Function, node: Node | None) -> bool:
    """Return whether an expression has a signed type (so storing it in a signed variable cannot wrap)."""
    ty = expr_type(model, fn, node) if node is not None else None
    return ty is not None and ty.kind == "signed"


def _loop_start(model: FileModel, fn: Function, loop: Loop) -> Node | None:
    """Return the start value of a counting loop's variable, when the loop body never assigns the variable."""
    node = node_at(model, fn, loop.span, "for_statement")
    init = field(node, "initializer")
    if init is None or loop.var is None:
        return None
    if init.type == "declaration":
        decls = [d for d in init.children_by_field_name("declarator") if d.type == "init_declarator"]
        start = field(decls[0], "value") if len(decls) == 1 else None
    elif init.type == "assignment_expression" and operator_of(init) == "=":
        start = field(init, "right")
    else:
        return None
    lo, hi = fn.span(loop.body_span)
    for ident in identifier_nodes(model, fn, loop.var):
        parent = ident.parent
        if not (lo <= ident.start_byte < hi) or parent is None:
            continue
        if parent.type == "update_expression" or (
            parent.type == "assignment_expression" and _same(field(parent, "left"), ident)
        ):
            return None
    return start


def compiler_proves_non_negative(model: FileModel, fn: Function, node: Node | None, depth: int = 0) -> bool:
    """Return whether nvcc itself sees that a signed dividend is never negative, and so already emits the shift.

    Its induction-variable analysis knows that a `for` counter starting at a non-negative constant and stepping up
    by a positive constant stays non-negative (signed overflow is undefined), and arithmetic without wrap-around
    (`+ * / % >> &`) of such counters and non-negative constants keeps that. Ranges of `threadIdx` and friends do
    not reach it through a conversion to `int`: `int t = threadIdx.x; t / 32` still compiles to the sign
    correction (bench/results/division_sign_fixup-2026-12-01.md).
    """
    node = unparen(node)
    if node is None or depth > 8:
        return False
    t = node.type
    if t == "number_literal":
        v = parse_int_literal(text_of(model, node))
        return v is not None and v >= 0
    if t == "identifier":
        name = text_of(model, node)
        if name in model.constants and variable_type(fn, name) is None:
            return model.constants[name] >= 0
        loop = counting_loop(fn, name, (node.start_byte - fn.base, node.end_byte - fn.base))
        if loop is None or loop.step_value is None or loop.step_value <= 0:
            return False
        start = _loop_start(model, fn, loop)
        start = unparen(start)
        if start is None or start.type != "number_literal":
            return False
        v = parse_int_literal(text_of(model, start))
        return v is not None and v >= 0
    if t == "binary_expression" and operator_of(node) in ("+", "*", "/", "%", ">>", "&"):
        return all(compiler_proves_non_negative(model, fn, field(node, side), depth + 1) for side in ("left", "right"))
    return False


def unroll_constant(fn: Function, names: set[str], rel: Span) -> bool:
    """Return whether every name is the variable of a fully unrolled constant-trip loop around a span (so the
    expression is a constant in each unrolled copy)."""
    loops = {fn.loops[i].var: fn.loops[i] for i in enclosing_loops(fn, rel)}
    for name in names:
        loop = loops.get(name)
        if loop is None or loop.trip_count is None or loop.unroll is None:
            return False
        parts = loop.unroll.split()
        if parts[0] != "unroll":
            return False
        if len(parts) > 1:
            count = parse_int_literal(parts[1])
            if count is None or count < loop.trip_count:
                return False
    return bool(names)


def _constant(ctx: MatchContext, node: Node) -> bool:
    """Return whether an integer expression has one value known at compile time."""
    r = int_range(ctx.model, ctx.function, node, {})
    return r is not None and r[0] == r[1]


@matcher("integer_division_by_power_of_two")
def integer_division_by_power_of_two(ctx: MatchContext) -> Iterator[Region]:
    """Find integer `x / 2^k` and `x % 2^k` with a constant power-of-two divisor."""
    fn = ctx.function
    found = binary_nodes(ctx.model, fn, DIVIDE) + binary_nodes(ctx.model, fn, REMAINDER)
    for node in sorted(found, key=lambda n: n.start_byte):
        right = field(node, "right")
        divisor = number_value(ctx.model, right)
        if divisor is None or divisor < 2 or divisor & (divisor - 1) or right is None:
            continue
        op = operator_of(node) or "/"
        named = right.type != "number_literal"
        if named and op == "/":
            # A shift would hard-code the logarithm of a named constant; leave such divisions alone.
            continue
        left = field(node, "left")
        ty = expr_type(ctx.model, fn, left)
        if ty is None or not ty.is_int or left is None:
            continue
        rel = (node.start_byte - fn.base, node.end_byte - fn.base)
        if _constant(ctx, left) or unroll_constant(fn, identifiers(ctx.model, left), rel):
            # Constant operands (also loop counters of fully unrolled loops) are folded at compile time.
            continue
        shift = divisor.bit_length() - 1
        dividend = text_of(ctx.model, left)
        mask = f"({text_of(ctx.model, right)} - 1)" if named else str(divisor - 1)
        replacement = f"{dividend} >> {shift}" if op == "/" else f"{dividend} & {mask}"
        yield Region(
            AnchorKind.EXPRESSION,
            fn,
            (node.start_byte - fn.base, node.end_byte - fn.base),
            f"pow2:{op}:{node.start_byte - fn.base}",
            {
                "op": op,
                "divisor": divisor,
                "divisor_text": text_of(ctx.model, right),
                "shift": shift,
                "dividend": dividend,
                "dividend_span": (left.start_byte - fn.base, left.end_byte - fn.base),
                "dividend_type": ty,
                "expression": clean(text_of(ctx.model, node)),
                "replacement": replacement,
                "mask": mask,
                "operation": "division" if op == "/" else "remainder",
            },
        )


def _bound_text(v: int) -> str:
    return f"2^{v.bit_length()}" if v > 4096 and (v + 1) & v == 0 else str(v)


@check("dividend_is_signed")
def dividend_is_signed(ctx: CheckContext) -> Verdict:
    """Hold when the dividend is a signed integer (for unsigned ones the compiler already shifts and masks)."""
    ty = ctx.fact("dividend_type")
    x = ctx.fact("dividend")
    if ty.kind == "signed":
        return holds(
            f"`{x}` is a signed {ty.bits}-bit integer: `{ctx.fact('op')}` by {ctx.fact('divisor')} compiles to a "
            "shift or mask plus a sign correction"
        )
    return violated(f"`{x}` is unsigned: the compiler already turns `{ctx.fact('expression')}` into a shift or mask")


@check("compiler_emits_sign_fixup")
def compiler_emits_sign_fixup(ctx: CheckContext) -> Verdict:
    """Hold when nvcc cannot prove the dividend non-negative itself, so it emits the sign correction."""
    x = ctx.fact("dividend")
    node = node_at(ctx.model, ctx.function, ctx.fact("dividend_span"))
    if compiler_proves_non_negative(ctx.model, ctx.function, node):
        return violated(
            f"`{x}` counts up from a non-negative constant: nvcc proves it non-negative and already emits "
            f"`{ctx.fact('replacement')}` for `{ctx.fact('expression')}`"
        )
    return holds(f"nvcc cannot prove `{x}` non-negative, so `{ctx.fact('expression')}` carries a sign correction")


@check("division_repeats")
def division_repeats(ctx: CheckContext) -> Verdict:
    """Hold when the division runs many times per thread: in a loop, on a dividend that changes in that loop.

    Outside loops (or on a dividend the loop does not change, which the compiler hoists) a kernel evaluates it once
    per thread, and the sign correction costs two instructions once: removing it changes nothing measurable. In a
    function that is not a kernel the callers decide how often it runs, so the check holds there.
    """
    fn = ctx.function
    if not fn.is_kernel:
        return holds(f"`{fn.name}` is a device function: its callers decide how often the division runs")
    span = ctx.fact("dividend_span")
    node = node_at(ctx.model, fn, span)
    names = set(identifiers(ctx.model, node)) if node is not None else set()
    for loop_id in enclosing_loops(fn, span):
        loop = fn.loops[loop_id]
        changed = names & set(loop.assigned)
        if changed:
            return holds(
                f"`{ctx.fact('expression')}` runs in every iteration of a loop that changes `{sorted(changed)[0]}`"
            )
    return violated(
        f"`{ctx.fact('expression')}` runs once per thread (no loop around it changes `{ctx.fact('dividend')}`): its "
        "two-instruction sign correction is negligible"
    )


@check("dividend_non_negative")
def dividend_non_negative(ctx: CheckContext) -> Verdict:
    """Hold when the dividend is provably non-negative in every thread (from thread/block indices and launches)."""
    fn = ctx.function
    x = ctx.fact("dividend")
    node = node_at(ctx.model, fn, ctx.fact("dividend_span"))
    limits = geometry_limits(ctx.model, fn)
    r = int_range(ctx.model, fn, node, limits)
    if r is not None and r[0] >= 0:
        return holds(f"`{x}` lies in [{r[0]}, {_bound_text(r[1])}] in every thread")
    if non_negative(ctx.model, fn, node, limits):
        return holds(
            f"`{x}` is built from values that are never negative (loop counters from non-negative starts, "
            "non-negative constants and indices) without signed overflow"
        )
    at_origin = origin_value(ctx.model, fn, node)
    if at_origin is not None and at_origin < 0:
        return violated(
            f"`{x}` is {at_origin} in thread 0 of block 0; for negative values `/` rounds toward zero and `%` "
            "keeps the sign, unlike `>>` and `&`"
        )
    return unknown(f"`{x}` is not provably non-negative here (it depends on values whose sign is not known)")


def shift_or_mask(ctx: RewriteContext) -> list[Edit] | None:
    """Rewrite `x / 2^k` as `x >> k` and `x % 2^k` as `x & (2^k - 1)`, parenthesized where precedence needs it."""
    start, end = ctx.region.abs_span
    node = ctx.node((start, end), "binary_expression")
    if node is None or (node.start_byte, node.end_byte) != (start, end):
        return None
    right = field(node, "right")
    op_node = field(node, "operator")
    if right is None or op_node is None or (right.type != "number_literal" and ctx.fact("op") == "/"):
        return None
    new = f">> {ctx.fact('shift')}" if ctx.fact("op") == "/" else f"& {ctx.fact('mask')}"
    edits = [Edit(op_node.start_byte, right.end_byte, new)]
    if _needs_parens(node):
        edits += [Edit(start, start, "("), Edit(end, end, ")")]
    return edits
