"""Rules of the `int32-index-overflow` card (Compute the global index in 64 bits): what only this card uses.

Registered here: matcher `int32_global_index`, check `index_may_exceed_int32`, check `index_used_only_as_index`. The
card's rewrite and the recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.int32_index_overflow`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from warpwise.analyzers.facts_reduce import (
    CType,
    Node,
    clean,
    ctype,
    expr_type,
    field,
    identifier_nodes,
    is_global_index,
    is_kernel,
    launches_of,
    node_at,
    operator_of,
    text_of,
    unparen,
    variable_type,
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

_GLOBAL_INDEX_INIT = re.compile(rb"\b([A-Za-z_]\w*)\s*=\s*\(?\s*(?:blockIdx|blockDim|threadIdx)\.x\b")


@matcher("int32_global_index")
def int32_global_index(ctx: MatchContext) -> Iterator[Region]:
    """Find a 32-bit integer declared as `blockIdx.x * blockDim.x + threadIdx.x` and used to index arrays."""
    fn = ctx.function
    if not is_kernel(fn) or not fn.accesses:
        return
    indexed = {n for a in fn.accesses for n in a.index_names}
    for m in _GLOBAL_INDEX_INIT.finditer(ctx.model.text, fn.base, fn.base + fn.length):
        name = m.group(1).decode("utf-8", "replace")
        declared = ctype(fn.locals.get(name))
        if name not in indexed or declared is None or not declared.is_int or declared.bits != 32:
            continue
        ident = node_at(ctx.model, fn, (m.start(1) - fn.base, m.end(1) - fn.base))
        init = ident.parent if ident is not None and ident.type == "identifier" else None
        if init is None or init.type != "init_declarator":
            continue
        value = field(init, "value")
        decl = init.parent if init is not None else None
        if init is None or value is None or decl is None or decl.type != "declaration":
            continue
        if not is_global_index(ctx.model, value):
            continue
        type_node = field(decl, "type")
        ty = ctype(text_of(ctx.model, type_node)) if type_node is not None else None
        if type_node is None or ty is None or not ty.is_int or ty.bits != 32:
            continue
        if len(decl.children_by_field_name("declarator")) != 1:
            continue
        product = next(
            (
                c
                for c in (unparen(field(value, "left")), unparen(field(value, "right")))
                if c is not None and operator_of(c) == "*"
            ),
            None,
        )
        factor = field(product, "left")
        if factor is None:
            continue
        wide = "long long" if ty.kind == "signed" else "size_t"
        loop = decl.parent is not None and decl.parent.type == "for_statement"
        yield Region(
            AnchorKind.EXPRESSION,
            fn,
            (init.start_byte - fn.base, init.end_byte - fn.base),
            f"int32-index:{name}:{init.start_byte - fn.base}",
            {
                "var": name,
                "type": clean(text_of(ctx.model, type_node)),
                "type_span": (type_node.start_byte - fn.base, type_node.end_byte - fn.base),
                "factor_span": (factor.start_byte - fn.base, factor.end_byte - fn.base),
                "declaration_span": (decl.start_byte - fn.base, decl.end_byte - fn.base),
                "wide": wide,
                "value": clean(text_of(ctx.model, value)),
                "grid_stride": loop,
                "signed": ty.kind == "signed",
            },
        )


_COMPARE = {"<", "<=", ">", ">=", "==", "!="}


_ARITH_OPS = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"}


def _bound_types(ctx: CheckContext, var: str) -> list[tuple[str, CType | None]]:
    """Return (text, type) of every value `var` is compared with."""
    out = []
    for ident in identifier_nodes(ctx.model, ctx.function, var):
        mine = ident
        while mine.parent is not None and mine.parent.type == "parenthesized_expression":
            mine = mine.parent
        node = mine.parent
        if node is None or node.type != "binary_expression" or operator_of(node) not in _COMPARE:
            continue
        left, right = field(node, "left"), field(node, "right")
        other = right if left is not None and left.id == mine.id else left
        if other is not None:
            out.append((clean(text_of(ctx.model, other)), expr_type(ctx.model, ctx.function, other)))
    return out


@check("index_may_exceed_int32")
def index_may_exceed_int32(ctx: CheckContext) -> Verdict:
    """Hold when the index can pass the 32-bit range: a 64-bit size bound, or launches with more threads."""
    var, signed = ctx.fact("var"), ctx.fact("signed")
    limit = 2**31 - 1 if signed else 2**32 - 1
    limit_text = "2^31 - 1" if signed else "2^32 - 1"
    fn = ctx.function
    launches = launches_of(ctx.model, fn.name)
    geometry = [(lc.grid_value, lc.block_value) for _, lc in launches]
    if geometry and all(g is not None and b is not None for g, b in geometry) and not ctx.fact("grid_stride"):
        total = max(g[0] * b[0] for g, b in geometry if g is not None and b is not None)
        if total - 1 > limit:
            return holds(f"a launch starts {total} threads along x, so `{var}` passes {limit_text}")
        return violated(f"the launches start at most {total} threads along x, so `{var}` stays below {limit_text}")
    bounds = _bound_types(ctx, var)
    wide = [(t, ty) for t, ty in bounds if ty is not None and ty.is_int and ty.bits == 64]
    if wide:
        return holds(f"`{var}` is compared with `{wide[0][0]}`, a 64-bit size: arrays may pass {limit_text} elements")
    unsigned32 = [(t, ty) for t, ty in bounds if ty is not None and ty.kind == "unsigned" and ty.bits == 32]
    if signed and unsigned32:
        # The size's type allows 2^32 - 1 elements, but a 32-bit size is no sign that the arrays pass 2^31: only a
        # 64-bit size or a launch of that many threads shows it.
        return unknown(
            f"`{var}` is compared with `{unsigned32[0][0]}`, an unsigned 32-bit size: it passes 2^31 - 1 only for "
            "arrays of more than 2^31 elements, which nothing here shows"
        )
    narrow = [(t, ty) for t, ty in bounds if ty is not None and ty.is_int and ty.bits <= 32]
    if narrow:
        return violated(f"`{var}` is bounded by `{narrow[0][0]}`, a 32-bit size, so the arrays it indexes fit its type")
    int_params = [ctype(p.type) for p in fn.params if not p.is_pointer]
    int_params = [t for t in int_params if t is not None and t.is_int]
    if int_params and all(t.kind == "signed" and t.bits <= 32 for t in int_params):
        return violated(
            f"every integer parameter of `{fn.name}` is a signed 32-bit (or narrower) size, so the arrays it "
            f"indexes with `{var}` have fewer than 2^31 elements"
        )
    return unknown(f"neither a size bound on `{var}` nor a constant launch geometry shows how large it gets")


def _narrow_target(ctx: CheckContext, type_text: str | None) -> bool:
    """Return whether a value stored into this type stays 32-bit (or the type is not known)."""
    target = ctype(type_text)
    return target is None or (target.is_int and target.bits < 64)


def _use_of(ctx: CheckContext, var: str, use: Node) -> tuple[str, str]:
    """Classify one use of the index: `ok`, `doubt` (with a reason) or `bad` (with a reason)."""
    cur = use
    while True:
        parent = cur.parent
        t = parent.type if parent is not None else ""
        if t == "parenthesized_expression" or (t == "binary_expression" and operator_of(parent) in _ARITH_OPS):
            cur = parent
            continue
        if t == "conditional_expression":
            cond = field(parent, "condition")
            if cond is not None and cond.id == cur.id:
                return "ok", ""
            cur = parent
            continue
        if t in ("binary_expression", "subscript_argument_list", "update_expression", "condition_clause"):
            return "ok", ""
        if t == "pointer_expression":
            return "bad", f"`&{var}` takes the address of `{var}` as a pointer to its 32-bit type"
        if t == "assignment_expression":
            left = field(parent, "left")
            if left is not None and left.id == cur.id:
                return "ok", ""
            name = text_of(ctx.model, left) if left is not None else "?"
            if _narrow_target(ctx, variable_type(ctx.function, name)):
                return "doubt", f"`{var}` is stored in `{name}`, which stays 32-bit"
            return "ok", ""
        if t == "init_declarator":
            declared = parent.parent
            type_node = field(declared, "type")
            name = text_of(ctx.model, field(parent, "declarator"))
            if _narrow_target(ctx, text_of(ctx.model, type_node) if type_node is not None else None):
                return "doubt", f"`{var}` initializes `{name}`, which stays 32-bit"
            return "ok", ""
        if t == "argument_list":
            callee = clean(text_of(ctx.model, field(parent.parent, "function")))
            if callee == "printf":
                return "bad", f"`{var}` is printed with `printf`, whose format expects its 32-bit type"
            return "doubt", f"`{var}` is passed to `{callee}`; the parameter's type decides whether it still fits"
        shown = clean(text_of(ctx.model, parent))[:40] if parent is not None else "?"
        return "doubt", f"`{var}` is used in `{shown}`, which warpwise cannot follow"


@check("index_used_only_as_index")
def index_used_only_as_index(ctx: CheckContext) -> Verdict:
    """Hold when every use of the index variable is an array index, a comparison, its own update, or arithmetic
    feeding those (so widening its type changes no result)."""
    var = ctx.fact("var")
    fn = ctx.function
    d0, d1 = ctx.fact("declaration_span")
    doubts: list[str] = []
    for use in identifier_nodes(ctx.model, fn, var):
        if d0 <= use.start_byte - fn.base < d1 and use.parent is not None and use.parent.type == "init_declarator":
            continue
        kind, reason = _use_of(ctx, var, use)
        if kind == "bad":
            return violated(reason)
        if kind == "doubt":
            doubts.append(reason)
    if doubts:
        return unknown(doubts[0])
    return holds(f"`{var}` is only used to index arrays, in comparisons and in its own updates")


def widen_global_index(ctx: RewriteContext) -> list[Edit] | None:
    """Declare the index 64-bit and compute its product in 64 bits (`(long long)blockIdx.x * blockDim.x + ...`)."""
    t0, t1 = ctx.abs(ctx.fact("type_span"))
    f0, _ = ctx.abs(ctx.fact("factor_span"))
    wide = ctx.fact("wide")
    if ctype(ctx.text((t0, t1))) is None:
        return None
    return [Edit(t0, t1, wide), Edit(f0, f0, f"({wide})")]
