"""Checks of the memory and parallelism cards: vector types and alignment, per-element bodies, launch geometry,
aliasing of read-only inputs, warp-level code, and the operands of asynchronous copies."""

from __future__ import annotations

import importlib
import math
import re
from typing import Any

from warpwise.analyzers.expr.values import type_size
from warpwise.analyzers.model import AccessKind, FileModel, Function, MemorySpace
from warpwise.analyzers.parse import captures, query
from warpwise.skills.facts import distinct_launch_args, function_node, identifier_uses, pointer_params
from warpwise.skills.facts_memory import (
    KernelSyntax,
    ceil_div,
    is_wide_type,
    kernel_syntax,
    lane_class,
    launch_arg,
    launch_syntax,
    launches_of,
    linear,
    node_text,
)
from warpwise.skills.matchers.memory import VECTOR_TYPES, index_form
from warpwise.skills.regions import CheckContext, Verdict, check, holds, unknown, violated
from warpwise.skills.rewrite import RewriteContext

_ALLOCATORS = ("cudaMalloc", "cudaMallocManaged", "cudaMallocAsync", "cudaMallocFromPoolAsync")
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


# Card 1: vector types, index use, alignment, aliasing.


@check("vector_type_available")
def vector_type_available(ctx: CheckContext) -> Verdict:
    """Hold when every vectorized array has the same element type, one with a 16-byte vector type."""
    fn = ctx.function
    arrays: list[str] = ctx.fact("arrays", [])
    lanes: dict[str, int] = {}
    for name in arrays:
        p = fn.param(name)
        if p is None:
            return unknown(f"`{name}` is not a parameter of `{fn.name}`")
        words = set(re.findall(r"\w+", p.type))
        templ = sorted(words & _template_names(fn))
        if templ:
            return unknown(f"the element type of `{name}` is the template parameter `{templ[0]}`")
        vec = VECTOR_TYPES.get(p.base_type)
        if vec is None:
            return violated(f"`{name}` has `{p.base_type}` elements, which have no 16-byte vector type")
        lanes[name] = vec[1]
    if len(set(lanes.values())) > 1:
        a, b = sorted(lanes, key=lambda k: lanes[k])[:: len(lanes) - 1]
        return violated(f"`{a}` and `{b}` have elements of different sizes; one vector width cannot serve both")
    if not lanes:
        return unknown("no array to vectorize")
    first = fn.param(arrays[0])
    assert first is not None
    vec_name, count = VECTOR_TYPES[first.base_type]
    verb = "holds" if len(arrays) == 1 else "hold"
    return holds(f"{', '.join(f'`{a}`' for a in arrays)} {verb} `{first.base_type}`: {count} make one `{vec_name}`")


@check("elementwise_index_only")
def elementwise_index_only(ctx: CheckContext) -> Verdict:
    """Hold when the body touches the arrays only as `a[i]` and uses `i` for nothing else."""
    fn = ctx.function
    ks = _ks(ctx)
    shape = ctx.fact("shape")
    accesses = ctx.fact("accesses", ())
    var = shape.var
    body = shape.body
    lo, hi = body.start_byte - fn.base, body.end_byte - fn.base
    inside = [a for a in fn.accesses if lo <= a.span[0] < hi]
    spans = {a.span for a in accesses}
    arrays = set(ctx.fact("arrays", []))
    taken = next(
        (a for a in accesses if a.via_ldg or a.kind is AccessKind.ADDRESS or a.kind is AccessKind.ATOMIC), None
    )
    if taken is not None:
        return violated(f"`{taken.base}[{var}]` is used by address (`&`, `__ldg` or an atomic), not as a value")
    for a in inside:
        if a.span in spans:
            continue
        if var in a.index_names:
            return violated(f"`{a.array}[{a.index}]` reads another element than `{var}`; elements depend on each other")
        if a.base in arrays:
            return violated(f"`{a.base}[{a.index}]` mixes another index with `{a.base}[{var}]`")
    uses = len(ks.identifiers(body, var))
    if uses != len(accesses):
        other = next(
            (
                n
                for n in ks.identifiers(body, var)
                if (n.start_byte - fn.base) not in {a.index_span[0] for a in accesses}
            ),
            None,
        )
        where = f" at line {_line(ctx.model, other.start_byte)}" if other is not None else ""
        return violated(f"`{var}` is used as a value in the body{where}, not only as the index of the arrays")
    for name in sorted(arrays):
        subscripted = sum(1 for a in inside if a.base == name)
        if len(ks.identifiers(body, name)) != subscripted:
            return unknown(f"`{name}` is used as a pointer in the body, not only as `{name}[{var}]`")
    return holds(f"the body reads and writes {ctx.fact('names')} only at `[{var}]`")


def _allocated_in(model: FileModel, host: Function, name: str) -> bool:
    body = model.text[host.base : host.base + host.length].decode("utf-8", "replace")
    alloc = "|".join(_ALLOCATORS)
    pattern = rf"\b(?:{alloc})\s*\(\s*(?:\(\s*void\s*\*\s*\*\s*\)\s*)?&\s*{re.escape(name)}\s*[,)]"
    if re.search(pattern, body) is None:
        return False
    # A later assignment or increment could move the pointer off the allocation's start.
    moved = rf"(?<![\w.>])({re.escape(name)}\s*(=(?!=)|\+=|-=|\+\+|--)|(\+\+|--)\s*{re.escape(name)}\b)"
    return re.search(moved, body) is None


def _offset(model: FileModel, arg: str) -> tuple[str, int | None] | None:
    m = re.fullmatch(r"\s*(\w+)\s*\+\s*(.+?)\s*", arg) or re.fullmatch(r"\s*&\s*(\w+)\s*\[\s*(.+?)\s*\]\s*", arg)
    if m is None:
        return None
    raw = m.group(2)
    value = int(raw) if raw.isdigit() else model.constants.get(raw)
    return m.group(1), value


@check("pointers_aligned")
def pointers_aligned(ctx: CheckContext, bytes: int = 16) -> Verdict:
    """Hold when every launch in the file passes freshly allocated buffers (256-byte aligned) for the arrays."""
    fn = ctx.function
    model = ctx.model
    launches = launches_of(model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file shows where its arrays point")
    for name in ctx.fact("arrays", []):
        p = fn.param(name)
        elem = type_size(p.base_type) if p is not None else None
        for host, launch in launches:
            arg = launch_arg(launch, fn, name)
            if arg is None:
                return unknown(f"the launch in `{host.name}` passes {len(launch.args)} arguments")
            if re.fullmatch(r"\w+", arg):
                if _allocated_in(model, host, arg):
                    continue
                return unknown(
                    f"`{arg}`, passed for `{name}` in `{host.name}`, is not shown to be a `cudaMalloc` buffer passed "
                    "unchanged"
                )
            off = _offset(model, arg)
            if off is not None and off[1] is not None and elem is not None:
                if (off[1] * elem) % bytes == 0 and _allocated_in(model, host, off[0]):
                    continue
                if (off[1] * elem) % bytes:
                    return violated(
                        f"the launch in `{host.name}` passes `{arg}` for `{name}`, {off[1] * elem % bytes} bytes past "
                        f"a {bytes}-byte boundary"
                    )
            return unknown(f"the launch in `{host.name}` passes `{arg}` for `{name}`; its alignment is not known")
    n = len(launches)
    return holds(
        f"{'the launch' if n == 1 else f'all {n} launches'} in this file pass{'es' if n == 1 else ''} buffers from "
        "`cudaMalloc` (256-byte aligned)"
    )


@check("no_alias_hazard")
def no_alias_hazard(ctx: CheckContext) -> Verdict:
    """Hold when loading whole vectors before storing cannot read a value another array's store changed."""
    fn = ctx.function
    accesses = sorted(ctx.fact("accesses", ()), key=lambda a: a.span[0])
    first_store = next((a for a in accesses if a.kind is not AccessKind.READ), None)
    if first_store is None:
        return holds("the body stores to none of the arrays")
    late = [
        a
        for a in accesses
        if a.span[0] > first_store.span[1] and a.kind is not AccessKind.WRITE and a.base != first_store.base
    ]
    stmt_end = _statement_end(ctx, first_store)
    late = [a for a in late if a.span[0] > stmt_end]
    if not late:
        return holds(f"every load comes before the store to `{first_store.base}`, as in the vector form")
    arrays = [fn.param(n) for n in ctx.fact("arrays", [])]
    params = [p for p in arrays if p is not None]
    if params and all(p.is_restrict for p in params):
        return holds(f"{ctx.fact('names')} are `__restrict__`")
    ok, reason = distinct_launch_args(ctx.model, fn, params)
    if ok is None:
        return unknown(f"`{late[0].base}` is read after the store to `{first_store.base}`, and {reason}")
    if ok:
        return holds(reason)
    return violated(f"`{late[0].base}` is read after a store to `{first_store.base}` and {reason}")


def _statement_end(ctx: CheckContext, acc: Any) -> int:
    ks = _ks(ctx)
    node = ks.node.descendant_for_byte_range(*ctx.function.span(acc.span))
    while node is not None and node.type not in ("expression_statement", "declaration", "return_statement"):
        node = node.parent
    return (node.end_byte - ctx.function.base) if node is not None else acc.span[1]


# Cards 1, 6, 7: the body handles one element on its own.


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


# The most loop iterations per thread that still count as "one element's worth of work".
_LIGHT_TRIP = 16


def _heavy_loop(fn: Any, inside: Any) -> tuple[Any, str] | None:
    """Return the first selected loop whose iterations, times those of the loops around it, exceed the light limit."""
    by_id = {lp.id: lp for lp in fn.loops}
    for lp in fn.loops:
        if not inside(lp):
            continue
        total: int | None = 1
        cur = lp
        while cur is not None and total is not None and inside(cur):
            total = None if cur.trip_count is None else total * cur.trip_count
            cur = by_id.get(cur.parent) if cur.parent is not None else None
        if total is None:
            return lp, f"up to `{lp.bound or 'a runtime bound'}` times"
        if total > _LIGHT_TRIP:
            return lp, f"{total} times with the loops around it"
    return None


@check("body_is_light")
def body_is_light(ctx: CheckContext) -> Verdict:
    """Hold when each thread's element takes a bounded, small amount of work (no loop over a runtime bound).

    A thread that already loops over a row (a GEMV, a row-wise loss, a per-row selection) is launched with one thread
    per row, not per element: the grid is small, and dividing it leaves most of the GPU idle. Measured on the H200
    (bench/results/admission-2026-11-29-a.md): coarsening such kernels made them 1.6x to 8x slower.
    """
    fn = ctx.function
    body = ctx.fact("shape").body
    lo, hi = body.start_byte - fn.base, body.end_byte - fn.base
    heavy = _heavy_loop(fn, lambda lp: lo <= lp.span[0] < hi)
    if heavy is not None:
        lp, trips = heavy
        what = f"over `{lp.var}`" if lp.var else f"`{lp.condition or lp.kind}`"
        line = _line(ctx.model, fn.base + lp.span[0])
        return violated(
            f"each thread of `{fn.name}` already loops {what} ({trips}, line {line}): "
            "it does a whole row's work, so its grid is small, and a quarter of it would leave most of the GPU idle"
        )
    for call in fn.calls:
        if not (lo <= call.span[0] < hi) or call.category != "call" or _PURE_CALLS.match(call.name):
            continue
        callee = ctx.model.function(call.name)
        if callee is None:
            return unknown(f"the body calls `{call.name}`, whose work per call is not known here")
        inner = _heavy_loop(callee, lambda lp: True)
        if inner is not None:
            return violated(
                f"the body calls `{call.name}`, which loops {f'over `{inner[0].var}`' if inner[0].var else ''} "
                f"({inner[1]}): each thread already does a row's work"
            )
    return holds(f"each thread of `{fn.name}` does a small, bounded amount of work for its element")


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


# Card 2: warp-level code, the mirrored grid, coalescing after the swap.


@check("no_warp_level_code")
def no_warp_level_code(ctx: CheckContext) -> Verdict:
    """Hold when nothing in the kernel depends on which threads share a warp."""
    fn = ctx.function
    for c in fn.calls:
        if c.category == "warp" or _WARP_CALLS.match(c.name):
            return violated(f"`{c.name}` works on warps; swapping x and y changes which threads share a warp")
    text = ctx.model.text[fn.base : fn.base + fn.length].decode("utf-8", "replace")
    m = re.search(r"threadIdx\.x\s*(%\s*(32|warpSize)|&\s*31)|\bwarpSize\b|\blaneid\b", text)
    if m is not None:
        return violated(f"`{m.group(0)}` computes a lane number, which changes when x and y are swapped")
    user = [c for c in fn.calls if c.category == "call"]
    if user:
        return unknown(f"`{fn.name}` calls `{user[0].name}`, which may use warp-level operations")
    return holds(f"`{fn.name}` uses no warp-level operations or lane numbers")


@check("mirrored_grid_fits")
def mirrored_grid_fits(ctx: CheckContext) -> Verdict:
    """Hold when, after swapping, every grid's y dimension (the old x) stays within 65535 blocks."""
    fn = ctx.function
    launches = launches_of(ctx.model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file")
    for host, launch in launches:
        if launch.grid_value is None:
            return unknown(
                f"the grid `{launch.grid}` in `{host.name}` is not a constant; its x dimension becomes y, which is "
                "limited to 65535"
            )
        if launch.grid_value[0] > 65535:
            return violated(
                f"the grid in `{host.name}` has {launch.grid_value[0]} blocks along x; y is limited to 65535"
            )
    return holds("every grid's x dimension is at most 65535, the limit it has as y")


@check("swap_keeps_accesses_coalesced")
def swap_keeps_accesses_coalesced(ctx: CheckContext) -> Verdict:
    """Hold when, after swapping x and y, no global access of the kernel is strided along `threadIdx.x`."""
    fn = ctx.function
    ks = _ks(ctx)
    for a in fn.accesses:
        if a.space is not MemorySpace.GLOBAL:
            continue
        form = index_form(ks, fn, a)
        if form is None:
            if a.pattern.value in ("uniform",):
                continue
            return unknown(f"how `{a.base}[{a.index}]` varies along `threadIdx.y` is not known")
        after = lane_class(form, "tid.y")
        if after == "strided":
            return violated(
                f"`{a.base}[{a.index}]` is contiguous now and would become strided: a transpose, which needs a "
                "shared-memory tile instead"
            )
    return holds("after the swap every global access is contiguous or the same for the whole warp")


# Cards 3 and 5: the launch block that a tile is sized for.


@check("square_launch_block")
def square_launch_block(ctx: CheckContext) -> Verdict:
    """Hold when every launch in the file uses the same square T x T block, so a T x T tile matches it."""
    fn = ctx.function
    launches = launches_of(ctx.model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file shows the block shape the tile must match")
    shapes = {launch.block_value for _, launch in launches}
    if None in shapes:
        host, launch = next((h, lc) for h, lc in launches if lc.block_value is None)
        return unknown(f"the block `{launch.block}` in `{host.name}` is not a constant")
    if len(shapes) > 1:
        return unknown(f"`{fn.name}` is launched with several block shapes ({', '.join(map(str, sorted(shapes)))})")
    (dims,) = shapes
    assert dims is not None
    if len(dims) < 2 or dims[0] != dims[1] or any(d != 1 for d in dims[2:]):
        return unknown(f"the block is {'x'.join(map(str, dims))}, not square; a square tile would not match it")
    return holds(f"every launch uses {dims[0]}x{dims[1]} blocks")


# Card 4: read-only inputs.


@check("readonly_buffer_distinct")
def readonly_buffer_distinct(ctx: CheckContext) -> Verdict:
    """Hold when no buffer the kernel writes can be the one this read-only pointer points to."""
    fn = ctx.function
    name = ctx.fact("name")
    written = sorted({a.base for a in fn.accesses if a.kind is not AccessKind.READ and a.space is MemorySpace.GLOBAL})
    written_params = [fn.param(w) for w in written if fn.param(w) is not None]
    if not written:
        return holds(f"`{fn.name}` writes no global memory, so nothing can change what `{name}` points to")
    if len(written_params) != len(written):
        other = next(w for w in written if fn.param(w) is None)
        return unknown(f"`{fn.name}` writes `{other}`, which is not a parameter; it could overlap `{name}`")
    mine = fn.param(name)
    assert mine is not None
    ok, reason = distinct_launch_args(ctx.model, fn, [mine, *[p for p in written_params if p is not None]])
    if ok is None:
        return unknown(f"`{name}` could overlap {', '.join(f'`{w}`' for w in written)}: {reason}")
    if ok:
        return holds(f"`{name}` is never written, and {reason}")
    return violated(f"a launch passes one buffer for `{name}` and a pointer the kernel writes: {reason}")


@check("pointer_not_escaping")
def pointer_not_escaping(ctx: CheckContext) -> Verdict:
    """Hold when the pointer is only subscripted or dereferenced, so adding `const` keeps the kernel compiling."""
    fn = ctx.function
    p = ctx.fact("param")
    accesses = [a for a in fn.accesses if a.base == p.name]
    direct = [a for a in accesses if a.array == p.name or a.array.startswith(f"{p.name}[")]
    uses = identifier_uses(ctx.model, fn, p.name) - 1
    if uses == len(direct):
        return holds(f"`{p.name}` is only read through `{p.name}[...]`")
    if p.is_const:
        return holds(f"`{p.name}` is already `const`; only `__restrict__` is added")
    node = function_node(ctx.model, fn)
    body = node.child_by_field_name("body") if node is not None else None
    ks = _ks(ctx)
    for ident in ks.identifiers(body, p.name) if body is not None else []:
        parent = ident.parent
        if parent is not None and parent.type == "argument_list":
            call = parent.parent
            callee = node_text(ctx.model, call.child_by_field_name("function")) if call is not None else "a function"
            return violated(f"`{p.name}` is passed to `{callee}`; a `const` pointer may not convert to its parameter")
        if parent is not None and parent.type == "init_declarator":
            return violated(f"`{p.name}` initializes `{node_text(ctx.model, parent)}`, which would drop `const`")
    return unknown(f"`{p.name}` is used {uses - len(direct)} time(s) other than by subscript")


# Card 9: one block size.


@check("launches_share_block_size")
def launches_share_block_size(ctx: CheckContext) -> Verdict:
    """Hold when every launch in the file uses the same constant number of threads per block."""
    fn = ctx.function
    launches = launches_of(ctx.model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file")
    for host, launch in launches:
        if launch.block_value is None:
            return unknown(f"the block `{launch.block}` in `{host.name}` is not a constant")
    sizes = sorted({math.prod(lc.block_value) for _, lc in launches if lc.block_value is not None})
    if len(sizes) > 1:
        return violated(f"`{fn.name}` is launched with {', '.join(map(str, sizes))} threads per block")
    n = len(launches)
    return holds(f"{'the launch' if n == 1 else f'all {n} launches'} use{'s' if n == 1 else ''} {sizes[0]} threads")


# Card 10: asynchronous copies.


@check("copy_element_size")
def copy_element_size(ctx: CheckContext, sizes: tuple[int, ...] = (4, 8, 16)) -> Verdict:
    """Hold when every copy moves one element of 4, 8 or 16 bytes without a type conversion."""
    fn = ctx.function
    for c in ctx.fact("copies", ()):
        arr = next((s for s in fn.shared if s.name == c.shared.base), None)
        dst = arr.element_type if arr is not None else None
        src = c.source.element_type
        templ = _template_names(fn)
        param = fn.param(c.source.base)
        if param is not None and set(re.findall(r"\w+", param.type)) & templ:
            return unknown(f"the element type of `{c.source.base}` is a template parameter")
        if dst is not None and set(re.findall(r"\w+", dst)) & templ:
            return unknown(f"the element type of `{c.shared.base}` is a template parameter")
        if dst is None or src is None:
            return unknown(f"the element type of `{c.shared.base}` or `{c.source.base}` is not known")
        if dst.replace("const", "").strip() != src.replace("const", "").strip():
            return violated(f"`{c.source.base}` holds `{src}` and `{c.shared.base}` holds `{dst}`: the copy converts")
        width = type_size(src)
        if width is None:
            return unknown(f"the size of `{src}` is not known")
        if width not in sizes:
            return violated(f"`{src}` is {width} bytes; asynchronous copies move 4, 8 or 16 bytes")
    n = ctx.fact("count", 1)
    return holds(f"{'the copy moves' if n == 1 else f'all {n} copies move'} one 4-, 8- or 16-byte element")


@check("copy_source_not_written")
def copy_source_not_written(ctx: CheckContext) -> Verdict:
    """Hold when no store that runs before the copies (earlier, or in an earlier iteration) can hit their source."""
    fn = ctx.function
    copies = ctx.fact("copies", ())
    sources = sorted({c.source.base for c in copies})
    first = min(c.source.span[0] for c in copies)
    loops = [lp for lp in fn.loops if any(lp.span[0] <= c.source.span[0] < lp.span[1] for c in copies)]

    def before(a: Any) -> bool:
        return a.span[0] < first or any(lp.span[0] <= a.span[0] < lp.span[1] for lp in loops)

    stores = [a for a in fn.accesses if a.kind is not AccessKind.READ and a.space is not MemorySpace.SHARED]
    earlier = [a for a in stores if a.space is not MemorySpace.LOCAL and before(a)]
    own = [a for a in earlier if a.base in sources]
    if own:
        when = "in an earlier iteration" if own[0].span[0] > first else "earlier"
        return violated(
            f"`{fn.name}` stores to `{own[0].base}` {when} (line {_line(ctx.model, fn.base + own[0].span[0])}); an "
            "asynchronous copy is not ordered after that store"
        )
    if not earlier:
        return holds(f"no store to global memory runs before the copies in `{fn.name}`")
    params = [fn.param(s) for s in sources]
    if all(p is not None and p.is_const and p.is_restrict for p in params):
        return holds(
            f"{', '.join(f'`{s}`' for s in sources)} {'is' if len(sources) == 1 else 'are'} `const __restrict__`"
        )
    names = sorted({a.base for a in earlier})
    mine = [p for p in pointer_params(fn) if p.name in set(sources) | set(names)]
    ok, reason = distinct_launch_args(ctx.model, fn, mine)
    if ok:
        return holds(reason)
    if ok is None:
        return unknown(
            f"`{names[0]}`, stored before the copies, could overlap {', '.join(f'`{s}`' for s in sources)}: {reason}"
        )
    return violated(f"a launch passes one buffer as a copy source and as `{names[0]}`: {reason}")


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
