"""Checks that several cards share: per-element bodies and index use, launch geometry (the launch covers the
bound, index ranges, shrinking and square blocks), and whether a card's exact rewrite applies.

A card's own checks live in its folder, `skills/<card-id>/<card_id>.py`."""

from __future__ import annotations

import importlib
import math
import re
from typing import Any

from warpwise.analyzers.facts_memory import (
    KernelSyntax,
    ceil_div,
    is_wide_type,
    kernel_syntax,
    launch_arg,
    launch_syntax,
    launches_of,
    linear,
    node_text,
)
from warpwise.analyzers.model import AccessKind, FileModel, Function, MemorySpace
from warpwise.analyzers.parse import captures, query
from warpwise.skills.regions import CheckContext, Verdict, check, holds, unknown, violated
from warpwise.skills.rewrite import RewriteContext
from warpwise.skills.spec_launch import is_spec_launch

_PURE_CALLS = re.compile(
    r"^(__ld(g|cg|ca|cs|lu|cv)|make_\w+|min|max|abs|__(float|half|bfloat16|int|uint|double|ll|ull)2\w+"
    r"|__h(add|sub|mul|div|fma|neg|abs|max|min)\w*|__(saturate|fdividef|frcp|fsqrt|fmul|fadd)\w*)$"
)
_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
_WARP_CALLS = re.compile(
    r"^(__shfl\w*|__ballot\w*|__any\w*|__all\w*|__activemask|__match\w*|__reduce\w*_sync|__syncwarp)$"
)


def _line(model: FileModel, offset: int) -> int:
    return model.lines.position(offset).line + 1


def _ks(ctx: CheckContext) -> KernelSyntax:
    ks = kernel_syntax(ctx.model, ctx.function)
    if ks is None:
        raise LookupError(f"no syntax tree for `{ctx.function.name}`")
    return ks


def _template_names(fn: Function) -> set[str]:
    return {t.name for t in fn.template_params}


# The body handles one element on its own.


def _below(node: Any, types: tuple[str, ...]) -> list[Any]:
    """Return the nodes of some types below a node (or a statement run), in source order, found by a query."""
    pattern = "[" + " ".join(f"({t})" for t in types) + "] @n"
    roots = node.named_children if node.type == "statement_run" else [node]
    found = [n for root in roots for n in captures(query(pattern), root).get("n", [])]
    return sorted(found, key=lambda n: n.start_byte)


def _escapes(node: Any, kinds: tuple[str, ...]) -> Any:
    """Return a `break`/`continue` in a body that is not inside a nested loop or switch."""
    for n in _below(node, kinds):
        p = n.parent
        while p is not None and p.start_byte >= node.start_byte and p.type not in (*_LOOPS, "switch_statement"):
            p = p.parent
        if p is None or p.start_byte < node.start_byte:
            return n
    return None


def _first(node: Any, types: tuple[str, ...]) -> Any:
    found = _below(node, types)
    return found[0] if found else None


@check("body_is_per_element")
def body_is_per_element(ctx: CheckContext, vector: bool = False) -> Verdict:
    """Hold when the body computes one element from that element alone, whichever thread runs it."""
    fn = ctx.function
    ks = _ks(ctx)
    shape = ctx.fact("shape")
    body = shape.body
    model = ctx.model
    lo, hi = body.start_byte - fn.base, body.end_byte - fn.base
    ret = _first(body, ("return_statement", "goto_statement"))
    if ret is not None:
        return violated(
            f"the body leaves early (`{node_text(model, ret).strip()}` at line {_line(model, ret.start_byte)})"
        )
    esc = _escapes(body, ("break_statement", "continue_statement"))
    if esc is not None and shape.form == "loop":
        return violated(f"`{node_text(model, esc)}` at line {_line(model, esc.start_byte)} leaves the element loop")
    calls = [c for c in fn.calls if lo <= c.span[0] < hi]
    for c in calls:
        if c.category in ("sync", "warp", "async") or _WARP_CALLS.match(c.name):
            return violated(f"the body calls `{c.name}`, which needs every thread of the block or warp to take part")
    for name in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
        uses = ks.identifiers(body, name)
        if uses:
            return violated(
                f"the body reads `{node_text(model, uses[0].parent)}`, so its result depends on which thread "
                "handles an element"
            )
    shared = [a for a in fn.accesses if lo <= a.span[0] < hi and a.space is MemorySpace.SHARED]
    if shared:
        return violated(
            f"the body uses shared memory (`{shared[0].array}[{shared[0].index}]`), shared with other threads"
        )
    declared_inside = {
        node_text(model, d.child_by_field_name("declarator"))
        for d in _all(body, "init_declarator")
        if d.child_by_field_name("declarator") is not None
    } | {node_text(model, d) for d in _declared_plain(body)}
    outer = sorted(set(ks.definitions) - declared_inside - {shape.var})
    for name in outer:
        if ks.identifiers(body, name) and ks.is_assigned(name, body):
            return violated(
                f"the body assigns `{name}`, declared outside it; a thread that handles several elements would keep "
                "only the last value"
            )
    for name in outer:
        if not ks.identifiers(body, name):
            continue
        defs = ks.definitions[name]
        forms = [linear(ks, d) if d is not None else None for d in defs]
        if any(f is not None and any(k.startswith("tid.") for k in f) for f in forms):
            return violated(f"the body reads `{name}`, which depends on the thread index, not on `{shape.var}`")
        if any(f is None for f in forms):
            return unknown(f"the body reads `{name}`; whether it depends on the thread index is not known")
    if vector:
        written = [a for a in ctx.fact("accesses", ()) if a.kind is not AccessKind.READ]
        nested = [b for b in fn.branches if lo < b.span[0] and b.span[1] <= hi]
        nested_loops = [lp for lp in fn.loops if lo < lp.span[0] and lp.span[1] <= hi]
        for a in written:
            holder = next((b for b in nested if b.span[0] <= a.span[0] < b.span[1]), None)
            if holder is not None:
                return violated(f"`{a.base}[{a.index}]` is written only when `{holder.condition}`")
            if any(lp.span[0] <= a.span[0] < lp.span[1] for lp in nested_loops):
                return violated(f"`{a.base}[{a.index}]` is written inside a loop of the body")
    user = [c for c in calls if c.category == "call" and not _PURE_CALLS.match(c.name)]
    if user:
        return unknown(f"the body calls `{user[0].name}`; its effects on other elements are not known")
    return holds(f"the body computes element `{shape.var}` from element `{shape.var}` alone")


def _all(node: Any, type_: str) -> list[Any]:
    return _below(node, (type_,))


def _declared_plain(node: Any) -> list[Any]:
    """Return identifiers declared without an initializer (`float t;`) below a node."""
    out = []
    for d in _all(node, "declaration"):
        for c in d.children_by_field_name("declarator"):
            if c.type == "identifier":
                out.append(c)
    return out


@check("index_used_only_in_guard")
def index_used_only_in_guard(ctx: CheckContext) -> Verdict:
    """Hold when the element index is used only inside the guarded statement (and in its declaration)."""
    ks = _ks(ctx)
    shape = ctx.fact("shape")
    if shape.decl is None:
        return holds(f"`{shape.var}` is declared by the loop and used only there")
    decl_name = shape.decl.child_by_field_name("declarator")
    outside = [
        n
        for n in ks.identifiers(ks.node, shape.var)
        if not (shape.stmt.start_byte <= n.start_byte < shape.stmt.end_byte)
        and not (shape.body.start_byte <= n.start_byte < shape.body.end_byte)
        and not (decl_name is not None and decl_name.start_byte <= n.start_byte < decl_name.end_byte)
    ]
    if outside:
        at = _line(ctx.model, outside[0].start_byte)
        return violated(f"`{shape.var}` is also used outside `{ctx.fact('guard', 'the guard')}` (line {at})")
    if any(ks.identifiers(s, shape.var) for s in ks.statements if s.start_byte >= shape.body.end_byte):
        return violated(f"code after the guard uses `{shape.var}`")
    if shape.form == "return":
        return holds(f"`{shape.var}` is used only in the guard and the code after it")
    return holds(f"`{shape.var}` is used only in `{ks.text(shape.cond)}` and its body")


# Launch geometry: coverage, index range, grid shrinking.


def _bound_param(ctx: CheckContext) -> str | None:
    shape = ctx.fact("shape")
    bound = ctx.model.text[shape.bound.start_byte : shape.bound.end_byte].decode()
    return bound if ctx.function.param(bound) is not None else None


@check("launch_covers_bound")
def launch_covers_bound(ctx: CheckContext) -> Verdict:
    """Hold when every launch in the file starts at least one thread per element (`(n + B - 1) / B` blocks)."""
    fn = ctx.function
    model = ctx.model
    shape = ctx.fact("shape")
    bound = _bound_param(ctx)
    launches = launches_of(model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file shows how many threads run")
    if bound is None:
        return unknown(f"the bound `{node_text(model, shape.bound)}` is not a parameter the launches pass")
    for host, launch in launches:
        arg = launch_arg(launch, fn, bound)
        n_value = None if arg is None else (int(arg) if arg.isdigit() else model.constants.get(arg))
        if n_value is not None and launch.grid_value is not None and launch.block_value is not None:
            threads = math.prod(launch.grid_value) * math.prod(launch.block_value)
            if threads < n_value:
                return violated(
                    f"the launch in `{host.name}` runs {threads} threads for `{bound}` = {n_value}; a loop would also "
                    f"handle the other {n_value - threads} elements"
                )
            continue
        ls = launch_syntax(model, host, launch)
        cd = ceil_div(model, ls) if ls is not None else None
        if cd is None or arg is None or re.sub(r"\s+", "", cd.count) != re.sub(r"\s+", "", arg):
            return unknown(
                f"the launch in `{host.name}` computes its grid as `{launch.grid}`; whether it covers `{bound}` is "
                "not known"
            )
    n = len(launches)
    return holds(f"{'the launch' if n == 1 else f'all {n} launches'} start{'s' if n == 1 else ''} a thread per element")


@check("index_range_fits")
def index_range_fits(ctx: CheckContext, factor: int = 1) -> Verdict:
    """Hold when stepping the index past the bound cannot overflow its type."""
    fn = ctx.function
    model = ctx.model
    shape = ctx.fact("shape")
    if is_wide_type(shape.var_type):
        return holds(f"`{shape.var}` is a 64-bit `{shape.var_type}`")
    limit = 2**32 if shape.var_type.startswith("unsigned") or shape.var_type == "uint32_t" else 2**31
    bound = _bound_param(ctx)
    launches = launches_of(model, fn.name)
    values: list[int] = []
    for host, launch in launches:
        arg = launch_arg(launch, fn, bound) if bound is not None else None
        value = None if arg is None else (int(arg) if arg.isdigit() else model.constants.get(arg))
        block = math.prod(launch.block_value) if launch.block_value is not None else None
        ls = launch_syntax(model, host, launch)
        shrinks = ls is not None and ceil_div(model, ls) is not None
        if value is None or block is None or (launch.grid_value is None and not shrinks):
            values.clear()
            break
        grid = math.prod(launch.grid_value) if launch.grid_value is not None else math.ceil(value / block)
        if factor == 1:
            reach = value + grid * block
        else:
            reach = value + factor * block if shrinks else factor * grid * block
        if reach >= limit:
            return violated(
                f"with `{bound}` = {value} (launch in `{host.name}`), `{shape.var}` reaches {reach}, past the range "
                f"of `{shape.var_type}`"
            )
        values.append(value)
    if values:
        return holds(f"`{bound}` is at most {max(values)}, far inside the range of `{shape.var_type}`")
    top = "2^31" if limit == 2**31 else "2^32"
    bound_text = node_text(model, shape.bound)
    if factor > 1:
        return unknown(
            f"`{shape.var}` is a 32-bit `{shape.var_type}`; the coarsened index reaches `{bound_text}` plus "
            f"{factor} blocks of threads (and {factor} times `{bound_text}` with an unchanged grid), which must stay "
            f"below {top}"
        )
    return unknown(
        f"`{shape.var}` is a 32-bit `{shape.var_type}`; if `{bound_text}` comes within a grid's worth of threads "
        f"of {top}, stepping past it overflows"
    )


@check("launches_shrink")
def launches_shrink(ctx: CheckContext, factor: int | None = None) -> Verdict:
    """Hold when the rewrite can make every launch in the file start `factor` times fewer threads."""
    fn = ctx.function
    model = ctx.model
    shape = ctx.fact("shape")
    if shape.form == "loop":
        return holds("a grid-stride loop adapts to any grid; the launches need no change")
    k = factor or ctx.fact("lanes", 4)
    bound = _bound_param(ctx)
    launches = launches_of(model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file; launches elsewhere keep {k} times too many threads")
    for host, launch in launches:
        if is_spec_launch(launch) and launch.grid_value is None:
            return holds(f"the grid `{launch.grid}` in `{host.name}` is divided by {k} when the rewrite is verified")
        ls = launch_syntax(model, host, launch)
        cd = ceil_div(model, ls) if ls is not None else None
        arg = launch_arg(launch, fn, bound) if bound is not None else None
        if cd is None or arg is None or re.sub(r"\s+", "", cd.count) != re.sub(r"\s+", "", arg):
            return unknown(
                f"the grid `{launch.grid}` in `{host.name}` is left as it is: still correct, with {k} times more "
                "threads than needed"
            )
        if launch.block_value is not None and math.prod(launch.block_value) < 4:
            return unknown(f"the launch in `{host.name}` has blocks of fewer than 4 threads; it is left as it is")
    return holds(f"the rewrite divides the grid of every launch in this file by {k}")


# Cards whose exact rewrite covers one canonical shape and shows the others without a fix.


@check("exact_rewrite_applies")
def exact_rewrite_applies(ctx: CheckContext, rewrite: str, shape: str) -> Verdict:
    """Hold when the card's exact rewrite recognizes the code; otherwise say that no fix is offered, and why."""
    module, _, name = rewrite.partition(":")
    fn = getattr(importlib.import_module(module), name)
    edits = fn(RewriteContext(ctx.model, ctx.function, ctx.region, {}))
    if edits:
        return holds(f"the code has the shape the exact rewrite handles ({shape})")
    return unknown(f"the exact rewrite handles only {shape}; this code is shown without a fix")
