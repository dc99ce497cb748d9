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

from warpwise.analyzers.facts_reduce import (
    Node,
    _rel,
    _same,
    bare_type,
    clean,
    ctype,
    definitions,
    field,
    float_literal_value,
    fresh_name,
    identifier_nodes,
    identifiers,
    node_at,
    operator_of,
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


def _single_assignment(model: FileModel, loop_node: Node) -> Node | None:
    body = statements(field(loop_node, "body"))
    if len(body) != 1 or body[0].type != "expression_statement":
        return None
    inner = [c for c in body[0].named_children if c.type != "comment"]
    return inner[0] if len(inner) == 1 and inner[0].type == "assignment_expression" else None


def _header_text(model: FileModel, loop_node: Node) -> str:
    body = field(loop_node, "body")
    end = body.start_byte if body is not None else loop_node.end_byte
    return model.text[loop_node.start_byte : end].decode("utf-8", "replace").rstrip()


def two_pass_softmax(model: FileModel, fn: Function, loop_id: int) -> TwoPassSoftmax | None:
    """Return the max and sum passes starting at a `for` loop, or None when the loops have another shape."""
    loop = fn.loops[loop_id]
    if loop.kind != "for":
        return None
    first = node_at(model, fn, loop.span, "for_statement")
    if first is None:
        return None
    assign = _single_assignment(model, first)
    if assign is None or operator_of(assign) != "=":
        return None
    m_node, call = field(assign, "left"), unparen(field(assign, "right"))
    if m_node is None or m_node.type != "identifier" or call is None or call.type != "call_expression":
        return None
    max_call = clean(text_of(model, field(call, "function")))
    args_node = field(call, "arguments")
    args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
    m = text_of(model, m_node)
    if max_call not in _MAX_CALLS or len(args) != 2:
        return None
    texts = [clean(text_of(model, a)) for a in args]
    if texts[0] == m:
        element_node = args[1]
    elif texts[1] == m:
        element_node = args[0]
    else:
        return None
    element = clean(text_of(model, element_node))
    between: list[Span] = []
    nxt = first.next_named_sibling
    while nxt is not None and nxt.type in ("declaration", "comment"):
        between.append((nxt.start_byte - fn.base, nxt.end_byte - fn.base))
        nxt = nxt.next_named_sibling
    if (
        nxt is None
        or nxt.type != "for_statement"
        or clean(_header_text(model, nxt)) != clean(_header_text(model, first))
    ):
        return None
    second = nxt
    acc = _single_assignment(model, second)
    if acc is None:
        return None
    s_node = field(acc, "left")
    if s_node is None or s_node.type != "identifier":
        return None
    s = text_of(model, s_node)
    right = unparen(field(acc, "right"))
    if (
        operator_of(acc) == "="
        and right is not None
        and right.type == "binary_expression"
        and operator_of(right) == "+"
    ):
        if clean(text_of(model, field(right, "left"))) != s:
            return None
        right = unparen(field(right, "right"))
    elif operator_of(acc) != "+=":
        return None
    if right is None or right.type != "call_expression":
        return None
    exp_call = clean(text_of(model, field(right, "function")))
    exp_args_node = field(right, "arguments")
    exp_args = [a for a in exp_args_node.named_children if a.type != "comment"] if exp_args_node is not None else []
    if exp_call not in _EXP_CALLS or len(exp_args) != 1:
        return None
    diff = unparen(exp_args[0])
    if diff is None or diff.type != "binary_expression" or operator_of(diff) != "-":
        return None
    if clean(text_of(model, field(diff, "left"))) != element or clean(text_of(model, field(diff, "right"))) != m:
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
        or (names & (fn.loops[loop_id].assigned - {loop.var}))
        or has_side_effects(element_node)
    ):
        return None
    second_id = next((lp.id for lp in fn.loops if fn.span(lp.span)[0] == second.start_byte), None)
    if second_id is None:
        return None
    return TwoPassSoftmax(
        m,
        s,
        element,
        _rel(fn, element_node),
        text_of(model, call),
        exp_call,
        _header_text(model, first),
        loop_id,
        second_id,
        tuple(between),
        (first.start_byte - fn.base, second.end_byte - fn.base),
    )


@matcher("two_pass_softmax")
def two_pass_softmax_loops(ctx: MatchContext) -> Iterator[Region]:
    """Find a max pass followed by a sum-of-exponentials pass over the same elements."""
    fn = ctx.function
    names = {c.name for c in fn.calls if c.category in ("math", "call")}
    if len(fn.loops) < 2 or not names & {"expf", "__expf", "exp"} or not names & {"fmaxf", "fmax", "max"}:
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
        f"{u}const {m_type} {nxt} = {sm.max_call};",
        f"{u}{s} = ({m} == -INFINITY ? {zero} : {s} * {exp}({m} - {nxt})) + {exp}({e} - {nxt});",
        f"{u}{m} = {nxt};",
        "}",
    ]
    return [Edit(start, end, decls + lines[0] + "".join(f"\n{ind}{line}" for line in lines[1:]))]
