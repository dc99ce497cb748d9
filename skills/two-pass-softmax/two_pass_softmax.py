"""Rules of the `two-pass-softmax` card (Compute the maximum and the sum in one pass (online softmax)): what only
this card uses.

Registered here: matcher `two_pass_softmax`, check `softmax_accumulators_floating`, check
`softmax_pass_reads_global`. The card's rewrite and the recognisers only it needs live here too; what several cards
share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library
imports this file by path as `warpwise.skills.cards.two_pass_softmax`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from warpwise.analyzers.expr.canon import Canonicalizer
from warpwise.analyzers.facts_reduce import (
    Node,
    _compare,
    _new_value,
    _rel,
    _same,
    bare_type,
    clean,
    condition_value,
    ctype,
    definitions,
    field,
    float_literal_value,
    fresh_name,
    identifier_nodes,
    identifiers,
    node_at,
    operator_of,
    reduce_canon,
    statements,
    text_of,
    unparen,
    variable_type,
)
from warpwise.analyzers.model import FileModel, Function, Span
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
from warpwise.skills.rewrites.reduce import _own_line


def has_side_effects(node: Node) -> bool:
    """Return whether an expression assigns, increments or calls a function (so it must not be duplicated)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("assignment_expression", "update_expression", "call_expression", "comma_expression"):
            return True
        stack.extend(n.named_children)
    return False


_MAX_CALLS = {"fmaxf", "fmax", "max", "::max", "std::max"}


_EXP_CALLS = {"expf", "__expf", "exp"}


@dataclass(frozen=True, slots=True)
class TwoPassSoftmax:
    """A max pass `for (H) m = fmaxf(m, e);` followed by a sum pass `for (H) s += expf(e - m);` over the same
    elements `e` with the same loop header `H`; only declarations of the sum (and comments) may sit between them, which
    `between` lists in order."""

    max_var: str
    sum_var: str
    element: str
    element_span: Span
    max_call: str
    exp_call: str
    header: str
    first_loop: int
    second_loop: int
    between: tuple[Span, ...]
    span: Span
    prelude: tuple[str, ...] = ()
    """Declarations both loop bodies start with (`int i = row * N + col;`), repeated in the fused body."""


def _single_statement(loop_node: Node) -> Node | None:
    """Return the statement a loop body computes, after the local declarations it may start with."""
    body = _body(loop_node)
    return body[-1] if body else None


def _body(loop_node: Node) -> list[Node]:
    """Return a loop body's statements when all but the last are declarations with initial values."""
    body = statements(field(loop_node, "body"))
    if not body or any(
        stmt.type != "declaration"
        or any(d.type != "init_declarator" for d in stmt.children_by_field_name("declarator"))
        for stmt in body[:-1]
    ):
        return []
    return body


def _prelude(model: FileModel, canon: Canonicalizer, a: Node, b: Node) -> tuple[tuple[str, ...], set[str]] | None:
    """Return the declarations two loop bodies both start with (the same names with the same canonical values),
    and the names they declare; None when the bodies start differently."""
    first, second = _body(a)[:-1], _body(b)[:-1]
    if len(first) != len(second):
        return None
    names: set[str] = set()
    for x, y in zip(first, second, strict=True):
        dx = list(x.children_by_field_name("declarator"))
        dy = list(y.children_by_field_name("declarator"))
        if (
            len(dx) != 1
            or len(dy) != 1
            or clean(text_of(model, field(x, "type"))) != clean(text_of(model, field(y, "type")))
        ):
            return None
        name = _ident(model, field(dx[0], "declarator"))
        if name is None or name != _ident(model, field(dy[0], "declarator")):
            return None
        if not canon.same(field(dx[0], "value"), field(dy[0], "value")):
            return None
        names.add(name)
    return tuple(clean(text_of(model, x)) for x in first), names


def _assignment(stmt: Node | None) -> Node | None:
    """Return the assignment an expression statement consists of."""
    if stmt is None or stmt.type != "expression_statement":
        return None
    inner = [c for c in stmt.named_children if c.type != "comment"]
    return inner[0] if len(inner) == 1 and inner[0].type == "assignment_expression" else None


def _header_text(model: FileModel, loop_node: Node) -> str:
    body = field(loop_node, "body")
    end = body.start_byte if body is not None else loop_node.end_byte
    return model.text[loop_node.start_byte : end].decode("utf-8", "replace").rstrip()


def _ident(model: FileModel, node: Node | None) -> str | None:
    node = unparen(node)
    return text_of(model, node) if node is not None and node.type == "identifier" else None


def _larger(model: FileModel, canon: Canonicalizer, cond: Node | None, m: str) -> Node | None:
    """Return `e` when a condition says `e` is larger than `m` (`e > m`, `m < e`, `e >= m`, `m <= e`)."""
    cmp = _compare(canon, cond)
    if cmp is None or cmp[0] not in ("<", "<="):
        return None
    small, large = cmp[1], cmp[2]
    return large if _ident(model, small) == m and _ident(model, large) != m else None


def _max_pass(model: FileModel, fn: Function, canon: Canonicalizer, loop_node: Node) -> tuple[str, Node, str] | None:
    """Return (running maximum, element, max expression) of a loop body that raises `m` to each element `e`:
    `m = fmaxf(m, e)` (either order, `fmax`, `max`), `m = e > m ? e : m` or `if (e > m) m = e;`."""
    stmt = _single_statement(loop_node)
    assign = _assignment(stmt)
    if assign is not None and operator_of(assign) == "=":
        m = _ident(model, field(assign, "left"))
        right = unparen(field(assign, "right"))
        if m is None or right is None:
            return None
        if right.type == "call_expression":
            callee = clean(text_of(model, field(right, "function")))
            args_node = field(right, "arguments")
            args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
            if callee not in _MAX_CALLS or len(args) != 2:
                return None
            names = [_ident(model, a) for a in args]
            if names[0] == m and names[1] != m:
                return m, args[1], text_of(model, right)
            if names[1] == m and names[0] != m:
                return m, args[0], text_of(model, right)
            return None
        if right.type == "conditional_expression":
            e = _larger(model, canon, field(right, "condition"), m)
            picked, other = field(right, "consequence"), field(right, "alternative")
            if e is None:
                # `m > e ? m : e` names the larger the other way round.
                cmp = _compare(canon, field(right, "condition"))
                if cmp is None or _ident(model, cmp[2]) != m:
                    return None
                e, picked, other = cmp[1], other, picked
            if canon.same(picked, e) and _ident(model, other) == m:
                return m, e, f"{_fmax(fn, m)}({m}, {text_of(model, e)})"
        return None
    if stmt is None or stmt.type != "if_statement" or field(stmt, "alternative") is not None:
        return None
    inner = statements(field(stmt, "consequence"))
    assign = _assignment(inner[0]) if len(inner) == 1 else None
    if assign is None or operator_of(assign) != "=":
        return None
    m = _ident(model, field(assign, "left"))
    if m is None:
        return None
    e = _larger(model, canon, condition_value(stmt), m)
    if e is None or not canon.same(e, field(assign, "right")):
        return None
    return m, e, f"{_fmax(fn, m)}({m}, {text_of(model, e)})"


def _fmax(fn: Function, m: str) -> str:
    """Return the max function for the running maximum's type."""
    ty = ctype(variable_type(fn, m))
    return "fmax" if ty is not None and ty.bits == 64 else "fmaxf"


def _sum_pass(model: FileModel, canon: Canonicalizer, loop_node: Node) -> tuple[str, Node, str] | None:
    """Return (sum, exponential's argument, exponential's name) of `s += exp(d)`, `s = s + exp(d)` or
    `s = exp(d) + s`."""
    assign = _assignment(_single_statement(loop_node))
    if assign is None:
        return None
    s = _ident(model, field(assign, "left"))
    right = unparen(field(assign, "right"))
    if s is None or right is None:
        return None
    if operator_of(assign) == "=" and right.type == "binary_expression" and operator_of(right) == "+":
        left_term, right_term = unparen(field(right, "left")), unparen(field(right, "right"))
        if _ident(model, left_term) == s:
            right = right_term
        elif _ident(model, right_term) == s:
            right = left_term
        else:
            return None
    elif operator_of(assign) != "+=":
        return None
    if right is None or right.type != "call_expression":
        return None
    exp_call = clean(text_of(model, field(right, "function")))
    args_node = field(right, "arguments")
    args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
    if exp_call not in _EXP_CALLS or len(args) != 1:
        return None
    return s, args[0], exp_call


def _same_header(model: FileModel, canon: Canonicalizer, a: Node, b: Node) -> bool:
    """Return whether two `for` loops run the same variable over the same range with the same step."""
    parts = []
    for loop in (a, b):
        init = field(loop, "initializer")
        if init is None:
            return False
        if init.type == "declaration":
            decls = [d for d in init.children_by_field_name("declarator") if d.type == "init_declarator"]
            if len(decls) != 1:
                return False
            var, value = _ident(model, field(decls[0], "declarator")), field(decls[0], "value")
        elif init.type == "assignment_expression" and operator_of(init) == "=":
            var, value = _ident(model, field(init, "left")), field(init, "right")
        else:
            return False
        if var is None or value is None:
            return False
        step = _new_value(model, canon, field(loop, "update"), var)
        cond = field(loop, "condition")
        if step is None or cond is None:
            return False
        parts.append((var, canon.of(value), canon.of(cond), step))
    return parts[0] == parts[1]


def _normalises(model: FileModel, fn: Function, s: str, after: int) -> bool:
    """Return whether code after the sum pass divides by the sum or takes its logarithm (softmax, log-sum-exp)."""
    for n in identifier_nodes(model, fn, s):
        if n.start_byte < after:
            continue
        parent = n.parent
        while parent is not None and parent.type == "parenthesized_expression":
            n, parent = parent, parent.parent
        if parent is None:
            continue
        if parent.type == "binary_expression" and operator_of(parent) == "/" and _same(field(parent, "right"), n):
            return True
        if parent.type == "argument_list" and parent.parent is not None:
            callee = clean(text_of(model, field(parent.parent, "function")))
            args = [a for a in parent.named_children if a.type != "comment"]
            if callee in _LOG_CALLS or (callee in _DIVIDE_CALLS and len(args) == 2 and _same(args[1], n)):
                return True
    return False


_LOG_CALLS = {"logf", "log", "__logf", "__frcp_rn", "__frcp_rz", "__drcp_rn"}
_DIVIDE_CALLS = {"__fdividef", "__fdiv_rn", "__fdiv_rz", "__ddiv_rn"}


def two_pass_softmax(model: FileModel, fn: Function, loop_id: int) -> TwoPassSoftmax | None:
    """Return the max and sum passes starting at a `for` loop, or None when the loops are not a softmax.

    Read semantically: the max pass in any form that raises the running maximum to each element, the sum pass
    `s += exp(e - m)` in any operand order, both over the same elements (compared as canonical forms) and loop
    range, and the sum then used as a softmax or log-sum-exp uses it: a division by it or its logarithm. Two
    passes whose sum is never normalised by are not a softmax, and the card stays quiet on them.
    """
    loop = fn.loops[loop_id]
    if loop.kind != "for":
        return None
    first = node_at(model, fn, loop.span, "for_statement")
    if first is None:
        return None
    canon = reduce_canon(model, fn)
    found = _max_pass(model, fn, canon, first)
    if found is None:
        return None
    m, element_node, max_call = found
    element = clean(text_of(model, element_node))
    between: list[Span] = []
    nxt = first.next_named_sibling
    while nxt is not None and nxt.type in ("declaration", "comment"):
        between.append((nxt.start_byte - fn.base, nxt.end_byte - fn.base))
        nxt = nxt.next_named_sibling
    if nxt is None or nxt.type != "for_statement" or not _same_header(model, canon, first, nxt):
        return None
    second = nxt
    shared = _prelude(model, canon, first, second)
    if shared is None:
        return None
    prelude, local_names = shared
    summed = _sum_pass(model, canon, second)
    if summed is None:
        return None
    s, diff, exp_call = summed
    diff = unparen(diff)
    if diff is None or diff.type != "binary_expression" or operator_of(diff) != "-":
        return None
    if not canon.same(field(diff, "left"), element_node) or _ident(model, field(diff, "right")) != m:
        return None
    for span in between:
        decl = node_at(model, fn, span)
        if decl is None or decl.type == "comment":
            continue
        declared = [d for d in decl.children_by_field_name("declarator")] if decl.type == "declaration" else []
        if len(declared) != 1 or declared[0].type != "init_declarator":
            return None
        if text_of(model, field(declared[0], "declarator")) != s:
            return None
    values, _ = definitions(model, fn, s)
    if len(values) != 1 or float_literal_value(text_of(model, values[0])) != 0.0:
        return None
    written = [
        n
        for n in identifier_nodes(model, fn, s)
        if n.parent is not None
        and (
            n.parent.type == "update_expression"
            or (n.parent.type == "assignment_expression" and _same(field(n.parent, "left"), n))
        )
    ]
    if any(n.start_byte < second.start_byte for n in written):
        return None
    names = identifiers(model, element_node)
    if (
        m in names
        or s in names
        or (names & (fn.loops[loop_id].assigned - {loop.var} - local_names))
        or has_side_effects(element_node)
    ):
        return None
    if not _normalises(model, fn, s, second.end_byte):
        return None
    second_id = next((lp.id for lp in fn.loops if fn.span(lp.span)[0] == second.start_byte), None)
    if second_id is None:
        return None
    return TwoPassSoftmax(
        m,
        s,
        element,
        _rel(fn, element_node),
        max_call,
        exp_call,
        _header_text(model, first),
        loop_id,
        second_id,
        tuple(between),
        (first.start_byte - fn.base, second.end_byte - fn.base),
        prelude,
    )


@matcher("two_pass_softmax")
def two_pass_softmax_loops(ctx: MatchContext) -> Iterator[Region]:
    """Find a max pass followed by a sum-of-exponentials pass over the same elements."""
    fn = ctx.function
    names = {c.name for c in fn.calls if c.category in ("math", "call")}
    if len(fn.loops) < 2 or not names & {"expf", "__expf", "exp"}:
        return
    for loop in fn.loops:
        found = two_pass_softmax(ctx.model, fn, loop.id)
        if found is None:
            continue
        yield Region(
            AnchorKind.LOOP,
            fn,
            loop.header_span,
            f"softmax:{found.max_var}:{found.sum_var}:{loop.id}",
            {
                "softmax": found,
                "max": found.max_var,
                "sum": found.sum_var,
                "element": found.element,
                "exp": found.exp_call,
            },
        )


@check("softmax_accumulators_floating")
def softmax_accumulators_floating(ctx: CheckContext) -> Verdict:
    """Hold when the running maximum and the sum are `float` or `double`."""
    sm: TwoPassSoftmax = ctx.fact("softmax")
    fn = ctx.function
    types = {v: bare_type(variable_type(fn, v) or "") for v in (sm.max_var, sm.sum_var)}
    kinds = {v: ctype(t) for v, t in types.items()}
    if any(k is not None and k.kind != "float" for k in kinds.values()):
        bad = next(v for v, k in kinds.items() if k is not None and k.kind != "float")
        return violated(f"`{bad}` is `{types[bad]}`; the online rescaling needs floating-point accumulators")
    if all(k is not None for k in kinds.values()):
        return holds(f"`{sm.max_var}` and `{sm.sum_var}` are `{types[sm.max_var]}`/`{types[sm.sum_var]}`")
    missing = next(v for v, k in kinds.items() if k is None)
    return unknown(f"the type of `{missing}` is not known here")


@check("softmax_pass_reads_global")
def softmax_pass_reads_global(ctx: CheckContext) -> Verdict:
    """Hold when each pass reads its elements from global memory (so fusing the passes saves a full read)."""
    sm: TwoPassSoftmax = ctx.fact("softmax")
    fn = ctx.function
    lo, hi = sm.element_span
    reads = [a for a in fn.accesses if lo <= a.span[0] < hi]
    if not reads:
        return violated(f"`{sm.element}` reads no memory; both passes work on registers")
    spaces = {a.space.value for a in reads}
    if "global" in spaces:
        return holds(f"`{sm.element}` is read from global memory in both passes")
    if spaces <= {"shared", "local", "constant"}:
        return violated(
            f"`{sm.element}` is read from {'/'.join(sorted(spaces))} memory; a second pass over it costs little"
        )
    return unknown(f"where `{sm.element}` lives is not known here")


def online_softmax(ctx: RewriteContext) -> list[Edit] | None:
    """Fuse the max pass and the sum pass into one loop that rescales the sum whenever the maximum grows.

    `s = (m == -INFINITY ? 0 : s * exp(m - m_next)) + exp(e - m_next)`: the guard drops the sum of elements seen
    while the running maximum was still `-INFINITY` (masked elements), whose true contribution is 0 once a
    finite maximum appears; `exp(-inf - (-inf))` would otherwise turn the whole sum into NaN.
    """
    sm: TwoPassSoftmax = ctx.fact("softmax")
    fn = ctx.function
    start, end = ctx.abs(sm.span)
    if not _own_line(ctx, start):
        return None
    m_type = bare_type(variable_type(fn, sm.max_var) or "")
    s_type = ctype(variable_type(fn, sm.sum_var))
    if ctype(m_type) is None or s_type is None or s_type.kind != "float":
        return None
    zero = "0.0f" if s_type.bits == 32 else "0.0"
    ind, u = ctx.indent_at(start), ctx.indent_unit()
    m, s, e, exp = sm.max_var, sm.sum_var, sm.element, sm.exp_call
    nxt = fresh_name(ctx.model, fn, f"{m}_next")
    decls = "".join(f"{ctx.text(ctx.abs(span))}\n{ind}" for span in sm.between)
    lines = [
        f"{sm.header} {{",
        *(f"{u}{decl}" for decl in sm.prelude),
        f"{u}const {m_type} {nxt} = {sm.max_call};",
        f"{u}{s} = ({m} == -INFINITY ? {zero} : {s} * {exp}({m} - {nxt})) + {exp}({e} - {nxt});",
        f"{u}{m} = {nxt};",
        "}",
    ]
    return [Edit(start, end, decls + lines[0] + "".join(f"\n{ind}{line}" for line in lines[1:]))]
