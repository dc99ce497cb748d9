"""Rules of the `per-thread-global-atomics` card (Aggregate contended atomics before they reach global memory): what
only this card uses.

Registered here: matcher `contended_global_atomics`, check `atomic_addresses_few`. The card's rewrite and the
recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.per_thread_global_atomics`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.expr.values import parse_int_literal
from warpwise.analyzers.facts import identifier_uses, nodes
from warpwise.analyzers.facts_reduce import (
    AtomicTarget,
    Node,
    atomic_target,
    bare_type,
    ctype,
    element_type,
    expr_type,
    fresh_name,
    geometry_limits,
    identifiers,
    int_range,
    is_uniform,
    launch_blocks,
    node_at,
    operator_of,
    reads_memory,
    single_definition,
    unparen,
)
from warpwise.analyzers.model import AccessKind, Span
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
from warpwise.skills.rewrites.reduce import _cg_includes, _statement_block, _value_as


def _index_loads(ctx: MatchContext, node: Node, depth: int = 0) -> bool:
    """Return whether an index expression depends on a load (directly or through locals defined once)."""
    if node is None or depth > 4:
        return False
    if reads_memory(node):
        return True
    for name in identifiers(ctx.model, node):
        value = single_definition(ctx.model, ctx.function, name)
        if value is not None and _index_loads(ctx, value, depth + 1):
            return True
    return False


@matcher("contended_global_atomics")
def contended_global_atomics(ctx: MatchContext) -> Iterator[Region]:
    """Find `atomicAdd` on global memory whose address is data-dependent or one of a few known bins."""
    fn = ctx.function
    calls = [c for c in fn.calls if c.name == "atomicAdd"]
    if not calls:
        return
    limits = geometry_limits(ctx.model, fn)
    for call in calls:
        tgt = atomic_target(ctx.model, fn, call.span)
        if tgt is None or tgt.leader_guarded or tgt.index_span is None:
            continue
        index = node_at(ctx.model, fn, tgt.index_span)
        if is_uniform(ctx.model, fn, index):
            continue
        r = int_range(ctx.model, fn, index, limits)
        bins = r[1] + 1 if r is not None and r[0] >= 0 else None
        loads = _index_loads(ctx, index)
        folded = operator_of(unparen(index)) in ("%", "&")
        clamped = None
        if not loads and not (folded and bins is not None):
            # Without a data-dependent index or a modulo/mask that folds threads together, each thread has its own
            # counter and nothing contends; a histogram whose bin is clamped to a run-time count still contends.
            clamped, _ = recognise_histogram(ctx.model, fn)
            if clamped is None or clamped.static_count is not None:
                continue
        how = f"one of {bins} counters" if bins is not None else "a data-dependent counter"
        hist = clamped if clamped is not None else recognise_histogram(ctx.model, fn)[0]
        if clamped is not None:
            how = f"clamped to [{clamped.low}, {clamped.high}]"
        yield Region(
            AnchorKind.CALL,
            fn,
            call.span,
            f"contended:{tgt.base}:{call.span[0]}",
            {
                "target": tgt,
                "array": tgt.base,
                "index": tgt.index,
                "value": tgt.value,
                "bins": bins,
                "element": element_type(fn, tgt.base) or "",
                "how": how,
                "histogram": hist,
            },
        )


@check("atomic_addresses_few")
def atomic_addresses_few(ctx: CheckContext, few: int = 8192, many: int = 65536) -> Verdict:
    """Hold when the atomic targets at most `few` distinct counters; violated above `many` (little contention)."""
    bins = ctx.fact("bins")
    arr = ctx.fact("array")
    if bins is None:
        return unknown(
            f"the number of distinct counters of `{arr}` is not known; data-dependent indices that repeat within "
            "a warp (histograms) still gain from warp aggregation"
        )
    if bins <= few:
        return holds(f"`{ctx.fact('index')}` selects one of {bins} counters of `{arr}`, so many threads collide")
    if bins > many:
        return violated(f"`{ctx.fact('index')}` spreads over {bins} counters of `{arr}`; collisions are rare")
    return unknown(f"`{ctx.fact('index')}` selects one of {bins} counters; whether threads collide often is not known")


_ATOMIC_TYPES = {"int", "unsigned int", "unsigned", "unsigned long long", "unsigned long long int"}


_INT_KEY = {("signed", 32): "int", ("unsigned", 32): "unsigned int", ("signed", 64): "long long"}


def _replace_in(ctx: RewriteContext, span: Span, inner: Span, text: str) -> str:
    """Return the text of `span` with the sub-span `inner` replaced by `text` (absolute spans)."""
    return ctx.text((span[0], inner[0])) + text + ctx.text((inner[1], span[1]))


def privatize_or_aggregate_atomic(ctx: RewriteContext) -> list[Edit] | None:
    """Count in a block-private shared copy (few known bins) or aggregate equal addresses per warp (otherwise).

    Privatization: zero a `__shared__` copy, count into it, and add each non-zero count to the global array once
    per block. It needs every thread to reach the two barriers, so kernels with a `return` get warp aggregation
    instead: threads with the same index form a group (`labeled_partition`) whose leader adds the group's sum.
    Both are exact for integer counters. With the argument `mode: private` (the search's variants) it is
    `private_histogram` instead.
    """
    if ctx.args.get("mode") == "private":
        return private_histogram(ctx)
    tgt: AtomicTarget = ctx.fact("target")
    elem = bare_type(ctx.fact("element") or "")
    ty = ctype(elem)
    if tgt.statement_span is None or tgt.index_span is None or ty is None or not ty.is_int or elem not in _ATOMIC_TYPES:
        return None
    fn = ctx.function
    bins = ctx.fact("bins")
    static = [s.size_bytes for s in fn.shared]
    fits = (
        bins is not None
        and all(b is not None for b in static)
        and sum(b or 0 for b in static) + bins * (ty.bits // 8) <= 32 * 1024
    )
    returns = nodes(ctx.model, fn, "(return_statement) @r", "r")
    if fits and not returns and fn.is_kernel and identifier_uses(ctx.model, fn, tgt.base) == 2:
        return _privatize(ctx, tgt, elem, bins)
    return _aggregate_by_index(ctx, tgt, elem)


def _privatize(ctx: RewriteContext, tgt: AtomicTarget, elem: str, bins: int) -> list[Edit] | None:
    fn = ctx.function
    if fn.body_span is None:
        return None
    open_at, close_at = ctx.abs(fn.body_span)
    first_nl = ctx.data.find(b"\n", open_at, close_at)
    close = close_at - 1
    if first_nl < 0 or ctx.data[ctx.line_start(close) : close].strip():
        return None
    ind, u = ctx.indent_at(first_nl + 1), ctx.indent_unit()
    if not ind:
        ind = ctx.indent_at(fn.base) + u
    local = fresh_name(ctx.model, fn, f"{tgt.base}_block")
    k = fresh_name(ctx.model, fn, "bin", {local})
    blocks, _ = launch_blocks(ctx.model, fn)
    head = [f"__shared__ {elem} {local}[{bins}];"]
    if blocks is not None and all(b[1:] == (1, 1) for b in blocks):
        first, step = "threadIdx.x", "blockDim.x"
    else:
        # Without 1-D launches in view, count the block's threads in all three dimensions.
        first = fresh_name(ctx.model, fn, "block_thread", {local, k})
        step = fresh_name(ctx.model, fn, "block_threads", {local, k, first})
        head += [
            f"const int {first} = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
            f"const int {step} = blockDim.x * blockDim.y * blockDim.z;",
        ]
    loop = f"for (int {k} = {first}; {k} < {bins}; {k} += {step})"
    head += [f"{loop} {local}[{k}] = 0;", "__syncthreads();"]
    tail = [
        "__syncthreads();",
        f"{loop} {{",
        f"{u}if ({local}[{k}] != 0) atomicAdd(&{tgt.base}[{k}], {local}[{k}]);",
        "}",
    ]
    b0, b1 = ctx.abs(tgt.base_span)
    line = ctx.line_start(close)
    return [
        Edit(first_nl + 1, first_nl + 1, "".join(f"{ind}{t}\n" for t in head)),
        Edit(b0, b1, local),
        Edit(line, line, "".join(f"{ind}{t}\n" for t in tail)),
    ]


def _aggregate_by_index(ctx: RewriteContext, tgt: AtomicTarget, elem: str) -> list[Edit] | None:
    fn = ctx.function
    assert tgt.index_span is not None and tgt.statement_span is not None
    key_ty = expr_type(ctx.model, fn, ctx.node(ctx.abs(tgt.index_span)))
    if key_ty is None or not key_ty.is_int:
        return None
    key_type = _INT_KEY.get((key_ty.kind, max(key_ty.bits, 32)), "unsigned long long")
    active = fresh_name(ctx.model, fn, "active")
    key = fresh_name(ctx.model, fn, "key", {active})
    same = fresh_name(ctx.model, fn, "same", {active, key})
    total = fresh_name(ctx.model, fn, "total", {active, key, same})
    address = _replace_in(ctx, ctx.abs(tgt.address_span), ctx.abs(tgt.index_span), key)
    literal = parse_int_literal(tgt.value)
    if literal == 1:
        amount = f"static_cast<{elem}>({same}.size())"
    elif literal is not None:
        amount = f"static_cast<{elem}>({same}.size() * {tgt.value})"
    else:
        value = _value_as(ctx, tgt.value, tgt.value_span, elem)
        amount = f"cooperative_groups::reduce({same}, {value}, cooperative_groups::plus<{elem}>())"
    lines = [
        f"cooperative_groups::coalesced_group {active} = cooperative_groups::coalesced_threads();",
        f"const {key_type} {key} = {tgt.index};",
        f"cooperative_groups::coalesced_group {same} = cooperative_groups::labeled_partition({active}, {key});",
        f"const {elem} {total} = {amount};",
        f"if ({same}.thread_rank() == 0) atomicAdd({address}, {total});",
    ]
    return [_statement_block(ctx, ctx.abs(tgt.statement_span), lines), *_cg_includes(ctx)]


# ---------------------------------------------------------------------------------------------------------------
# The histogram transformation: a block-private shared copy for any bin range (negative bins, a run-time bin count
# under a cap), kernels that return early, and coarsening (each block runs several of the original blocks, so
# the shared copy is filled by many elements before it is added to global memory once). Used by the search
# (`search_variants`) and by `bench/histogram/`; the editor's fix stays `privatize_or_aggregate_atomic`.

# Shared-memory budget of the private copy (bytes); a run-time bin count above it takes the global atomics.
PRIVATE_BYTES = 32 * 1024


@dataclass(frozen=True)
class Histogram:
    """A kernel whose one global update is `atomicAdd(&bins[k], v)` on integer counters, k in [low, low + count)."""

    kernel: str
    base: str
    elem: str
    low: str
    count: str
    static_count: int | None
    high: str
    cap: int
    body: tuple[int, int]
    statement: tuple[int, int]
    index: str
    value: str
    blocks: str | None  # C text of how many of the original blocks do any work (None: coarsening not proved)
    why_not_coarsened: str
    bid_spans: tuple[tuple[int, int], ...]


_CLAMPS = {"max", "min", "fmax", "fmin"}


def _text(model: Any, node: Any) -> str:
    return model.text[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _invariant_text(model: Any, fn: Any, node: Any, depth: int = 0) -> str | None:
    """Return a C text of a thread-invariant integer expression (locals replaced by their one initializer)."""
    node = unparen(node)
    if node is None or depth > 8:
        return None
    t = node.type
    if t == "number_literal":
        return _text(model, node)
    if t == "identifier":
        name = _text(model, node)
        p = fn.param(name)
        if p is not None:
            return None if p.is_pointer else name
        if name in model.constants:
            return name
        value = single_definition(model, fn, name)
        inner = _invariant_text(model, fn, value, depth + 1) if value is not None else None
        return f"({inner})" if inner is not None else None
    if t == "cast_expression":
        ty = ctype(_text(model, node.child_by_field_name("type")))
        inner = _invariant_text(model, fn, node.child_by_field_name("value"), depth + 1)
        return f"({_text(model, node.child_by_field_name('type'))})({inner})" if ty and ty.is_int and inner else None
    if t == "binary_expression" and operator_of(node) in ("+", "-", "*", "/"):
        a = _invariant_text(model, fn, node.child_by_field_name("left"), depth + 1)
        b = _invariant_text(model, fn, node.child_by_field_name("right"), depth + 1)
        return f"({a} {operator_of(node)} {b})" if a is not None and b is not None else None
    return None


def _reaching_value(model: Any, fn: Any, ident: Any, stmt: Any) -> Any:
    """Return the value a local holds at `stmt`: the closest earlier assignment or initializer in the same block."""
    name = _text(model, ident)
    block = stmt.parent
    while block is not None and block.type != "compound_statement":
        stmt, block = block, block.parent
    if block is None:
        return None
    prev = None
    for st in block.named_children:
        if st.start_byte >= stmt.start_byte:
            break
        if st.type == "expression_statement" and st.named_child_count == 1:
            e = st.named_children[0]
            if e.type == "assignment_expression" and _text(model, e.child_by_field_name("left")).strip() == name:
                prev = (
                    e.child_by_field_name("right") if _text(model, e.child_by_field_name("operator")) == "=" else None
                )
        elif st.type == "declaration":
            for d in st.children_by_field_name("declarator"):
                if d.type == "init_declarator" and _text(model, d.child_by_field_name("declarator")) == name:
                    prev = d.child_by_field_name("value")
        elif name in identifiers(model, st):
            return None  # written or read in a way this walk does not follow
    return prev


def _call_args(model: Any, node: Any) -> tuple[str, list[Any]] | None:
    node = unparen(node)
    if node is None or node.type != "call_expression":
        return None
    args = node.child_by_field_name("arguments")
    return _text(model, node.child_by_field_name("function")), [a for a in args.named_children if a.type != "comment"]


def _clamp_bounds(model: Any, fn: Any, node: Any, limits: Any) -> tuple[int, str] | None:
    """Return (low, high C text) of `max(lo, min(x, hi))` or `min(max(x, lo), hi)` (any argument order), where lo
    is a constant and hi the same for every thread."""
    outer = _call_args(model, node)
    if outer is None or outer[0] not in _CLAMPS or len(outer[1]) != 2:
        return None
    for inner_node, other in ((outer[1][0], outer[1][1]), (outer[1][1], outer[1][0])):
        inner = _call_args(model, inner_node)
        if inner is None or inner[0] not in _CLAMPS or inner[0][-3:] == outer[0][-3:] or len(inner[1]) != 2:
            continue
        if outer[0].endswith("max"):  # max(lo, min(x, hi))
            lo_node, hi_nodes = other, inner[1]
        else:  # min(max(x, lo), hi)
            lo_nodes, hi_node = inner[1], other
            hi = _invariant_text(model, fn, hi_node)
            for lo_node in lo_nodes:
                r = int_range(model, fn, lo_node, limits)
                if hi is not None and r is not None and r[0] == r[1]:
                    return r[0], hi
            continue
        r = int_range(model, fn, lo_node, limits)
        for hi_node in hi_nodes:
            hi = _invariant_text(model, fn, hi_node)
            if hi is not None and r is not None and r[0] == r[1]:
                return r[0], hi
    return None


def _element_guard(model: Any, fn: Any, body: Any, stmt: Any) -> tuple[str | None, str]:
    """Return the C text of N when a guard `i < N` (i = blockIdx.x * S + threadIdx.x) dominates `stmt`, else why."""
    from warpwise.analyzers.facts_memory import thread_index

    def is_index(node: Any) -> str | None:
        node = unparen(node)
        while node is not None and node.type == "cast_expression":
            node = unparen(node.child_by_field_name("value"))
        if node is not None and node.type == "identifier":
            value = single_definition(model, fn, _text(model, node))
            return is_index(value) if value is not None else None
        ti = thread_index(model, node) if node is not None else None
        return ti.scale if ti is not None and ti.axis == "x" else None

    def bound(cond: Any, negated: bool) -> tuple[str, str] | None:
        cond = unparen(cond)
        if cond.type == "binary_expression":
            op = operator_of(cond)
            left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
            if (op == "&&" and not negated) or (op == "||" and negated):
                return bound(left, negated) or bound(right, negated)
            if negated:
                want = {">=": (left, right), "<=": (right, left)}
            else:
                want = {"<": (left, right), ">": (right, left)}
            if op in want:
                i, n = want[op]
                scale, limit = is_index(i), _invariant_text(model, fn, n)
                if scale is not None and limit is not None:
                    return scale, limit
        return None

    node = stmt
    while node is not None and node != body:
        parent = node.parent
        if parent is not None and parent.type == "if_statement" and node == parent.child_by_field_name("consequence"):
            cond = parent.child_by_field_name("condition")
            got = bound(cond.child_by_field_name("value") if cond is not None else None, False) if cond else None
            if got:
                return _blocks_text(*got), ""
        if parent is not None and parent.type == "compound_statement":
            for st in parent.named_children:
                if st.start_byte >= node.start_byte:
                    break
                if st.type == "if_statement" and st.child_by_field_name("alternative") is None:
                    cons = st.child_by_field_name("consequence")
                    items = [c for c in (cons.named_children if cons.type == "compound_statement" else [cons])]
                    if len(items) == 1 and items[0].type == "return_statement":
                        cond = st.child_by_field_name("condition")
                        got = bound(cond.child_by_field_name("value"), True) if cond is not None else None
                        if got:
                            return _blocks_text(*got), ""
        node = parent
    return None, "no guard `i < n` on the global index `i = blockIdx.x * blockDim.x + threadIdx.x` covers the update"


def _blocks_text(scale: str, limit: str) -> str:
    s = f"(long long)({scale})"
    return f"(((long long)({limit}) + {s} - 1) / {s})"


def recognise_histogram(model: Any, fn: Any) -> tuple[Histogram | None, str]:
    """Return the histogram a kernel computes, or None and why not (one line naming identifiers)."""
    from warpwise.analyzers.facts import function_node

    if not fn.is_kernel:
        return None, f"`{fn.name}` is not a kernel"
    calls = [c for c in fn.calls if c.name.startswith("atomic")]
    if len(calls) != 1 or calls[0].name != "atomicAdd":
        return None, f"`{fn.name}` makes {len(calls)} atomic calls, not one `atomicAdd`"
    tgt = atomic_target(model, fn, calls[0].span)
    if tgt is None or tgt.index_span is None or tgt.statement_span is None or tgt.form not in ("address", "offset"):
        return None, f"the `atomicAdd` of `{fn.name}` is not a discarded `atomicAdd(&bins[k], v)`"
    elem = bare_type(element_type(fn, tgt.base) or "")
    ty = ctype(elem)
    if ty is None or not ty.is_int or elem not in _ATOMIC_TYPES:
        return None, f"`{tgt.base}` holds `{elem}`, not integer counters (other additions would round differently)"
    if identifier_uses(model, fn, tgt.base) != 2:  # the parameter and the update
        return None, f"`{fn.name}` touches `{tgt.base}` outside the `atomicAdd`"
    if fn.shared or b"__syncthreads" in model.text[fn.base : fn.base + fn.length]:
        return None, f"`{fn.name}` already uses shared memory or barriers"
    node = function_node(model, fn)
    body = node.child_by_field_name("body") if node is not None else None
    if body is None:
        return None, f"`{fn.name}` has no body"
    index = node_at(model, fn, tgt.index_span)
    stmt = node_at(model, fn, tgt.statement_span)
    limits = geometry_limits(model, fn)
    elem_bytes = ty.bits // 8
    cap = PRIVATE_BYTES // elem_bytes
    r = int_range(model, fn, index, limits)
    u = unparen(index)
    if r is None and u.type == "binary_expression" and operator_of(u) == "%":
        c = int_range(model, fn, u.child_by_field_name("right"), limits)
        if c is not None and c[0] == c[1] and c[0] > 0:
            r = (-(c[0] - 1), c[0] - 1)  # C's remainder keeps the dividend's sign
    if r is not None:
        count = r[1] - r[0] + 1
        if count > cap:
            return None, f"`{tgt.index}` spans {count} counters, more than a {PRIVATE_BYTES // 1024} KiB shared copy"
        low, count_text, static, high = str(r[0]), str(count), count, str(r[1])
    else:
        value = index
        if unparen(index).type == "identifier":
            value = _reaching_value(model, fn, unparen(index), stmt)
        cb = _clamp_bounds(model, fn, value, limits) if value is not None else None
        if cb is None:
            return None, f"the range of `{tgt.index}` is not known (neither bounded by its type nor clamped)"
        low, count_text, static, high = str(cb[0]), f"(long long)({cb[1]}) - ({cb[0]}) + 1", None, cb[1]
    blocks, why = _element_guard(model, fn, body, stmt)
    text = model.text[fn.base : fn.base + fn.length]
    if blocks is not None and b"gridDim.x" in text:
        blocks, why = None, f"`{fn.name}` reads `gridDim.x`, which coarsening would change"
    writes = sorted({a.base for a in fn.accesses if a.kind is AccessKind.WRITE and a.base != tgt.base})
    others = sorted({c.name for c in fn.calls if c.name in ("printf", "assert", "__trap", "__brkpt")})
    if blocks is not None and (writes or others):
        # Coarsening runs only the blocks the guard lets work; other effects of the blocks beyond would be lost.
        blocks, why = None, f"`{fn.name}` also writes {', '.join(f'`{w}`' for w in writes + others)}"
    spans = []
    for n in _walk_nodes(body):
        if n.type == "field_expression" and squash_text(_text(model, n)) == "blockIdx.x":
            spans.append((n.start_byte, n.end_byte))
    return (
        Histogram(
            fn.name,
            tgt.base,
            elem,
            low,
            count_text,
            static,
            high,
            cap,
            (body.start_byte, body.end_byte),
            (stmt.start_byte, stmt.end_byte),
            tgt.index,
            tgt.value,
            blocks,
            why,
            tuple(spans),
        ),
        "",
    )


def _walk_nodes(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.named_children)


def squash_text(s: str) -> str:
    return "".join(s.split())


def private_histogram_body(model: Any, h: Histogram, coarsen: bool) -> str | None:
    """Return the kernel body that counts in a block-private shared copy (and, coarsened, over several blocks).

    Exactness: integer addition is associative and commutative (modulo 2^bits, as the hardware's atomics wrap),
    so adding each block's counts once gives the totals one atomic per element gave. The original body runs
    unchanged inside a lambda (a `return` leaves only the lambda, so every thread reaches both barriers); its one
    update adds to the private copy at `k - low`, which the proved range of `k` keeps in bounds, or, when a
    run-time bin count exceeds the copy, to global memory as before. Coarsened, block b runs the original blocks
    b, b + gridDim.x, ... below the number of blocks that do any work (from the guard `i < n`), with `blockIdx.x`
    read as that block; the blocks beyond it did nothing in the original kernel either. Coarsening assumes the
    original launch reached every `i < n` (a launch that covered fewer elements counted fewer); the search's
    candidates go through the gate, which compares the counts.
    """
    if coarsen and h.blocks is None:
        return None
    data = model.text
    a, b = h.body
    edits: list[tuple[tuple[int, int], str | None]] = [(h.statement, None)]
    if coarsen:
        edits += [(s, "ww_vb") for s in h.bid_spans]
    edits.sort()
    out, pos = [], a + 1
    for (s0, s1), rep in edits:
        if s0 < pos:
            return None
        out.append(data[pos:s0].decode("utf-8", "replace"))
        if rep is None:
            out.append(
                f"{{ const long long ww_k = ({h.index}); if (ww_priv) atomicAdd(&ww_hist[ww_k - ww_lo], {h.value}); "
                f"else atomicAdd(&{h.base}[ww_k], {h.value}); }}"
            )
        else:
            out.append(rep)
        pos = s1
    out.append(data[pos : b - 1].decode("utf-8", "replace"))
    inner = "".join(out)
    size = h.static_count if h.static_count is not None else h.cap
    run = (
        "  for (long long ww_vb = blockIdx.x; ww_vb < ww_blocks; ww_vb += gridDim.x) ww_body((unsigned)ww_vb);\n"
        if coarsen
        else "  ww_body(blockIdx.x);\n"
    )
    blocks = f"  const long long ww_blocks = {h.blocks};\n" if coarsen else ""
    how = "over several of the original blocks, " if coarsen else ""
    return (
        "{\n"
        f"  // warpwise per-thread-global-atomics: count `{h.base}[{h.index}]` in a block-private shared copy "
        f"{how}then add\n"
        "  // each non-zero count to global memory once per block (integer counts: exact in any grouping).\n"
        f"  __shared__ {h.elem} ww_hist[{size}];\n"
        f"  const long long ww_lo = {h.low};\n"
        f"  const long long ww_bins = {h.count};\n"
        f"  const bool ww_priv = ww_bins > 0 && ww_bins <= {size};\n"
        "  const int ww_t = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));\n"
        "  const int ww_nt = (int)(blockDim.x * blockDim.y * blockDim.z);\n"
        f"{blocks}"
        "  if (ww_priv)\n"
        "    for (long long ww_j = ww_t; ww_j < ww_bins; ww_j += ww_nt) ww_hist[ww_j] = 0;\n"
        "  __syncthreads();\n"
        f"  auto ww_body = [&](unsigned ww_vb) {{{inner}}};\n"
        f"{run}"
        "  __syncthreads();\n"
        "  if (ww_priv)\n"
        "    for (long long ww_j = ww_t; ww_j < ww_bins; ww_j += ww_nt) {\n"
        f"      const {h.elem} ww_c = ww_hist[ww_j];\n"
        f"      if (ww_c != 0) atomicAdd(&{h.base}[ww_j + ww_lo], ww_c);\n"
        "    }\n"
        "}"
    )


def private_histogram(ctx: RewriteContext) -> list[Edit] | None:
    """The search's rewrite: the block-private copy for any proved bin range, coarsened when `coarsen` is set."""
    h, _ = recognise_histogram(ctx.model, ctx.function)
    if h is None:
        return None
    body = private_histogram_body(ctx.model, h, bool(ctx.args.get("coarsen", False)))
    return None if body is None else [Edit(h.body[0], h.body[1], body)]


def rewrite_source(model: Any, kernel: str, coarsen: bool) -> bytes | None:
    """Return the file with one kernel's histogram privatized (None when it is not recognised)."""
    from warpwise.skills.rewrite import apply_edits

    fn = next((f for f in model.functions if f.name == kernel and f.is_kernel), None)
    if fn is None:
        return None
    h, _ = recognise_histogram(model, fn)
    if h is None:
        return None
    body = private_histogram_body(model, h, coarsen)
    return None if body is None else apply_edits(model.text, [Edit(h.body[0], h.body[1], body)])


# Grid divisions the search may pair with the coarsened copy (the kernel is correct for any grid).
GRID_DIVISIONS = (64, 256, 1024)


def search_variants(matches: list[Any]) -> list[tuple[str, dict[str, Any], list[Any]]]:
    """Return the search's parameter choices: (label, rewrite arguments, launch steps for a problem file).

    The block-private copy with the launch kept, and, where the guard proves which blocks do any work, coarsened
    with the grid divided by each of `GRID_DIVISIONS` (the coarsened kernel is correct for any grid).
    """
    if not matches:
        return []
    h = next((m.region.facts.get("histogram") for m in matches if m.region.facts.get("histogram")), None)
    if h is None:
        return []
    out: list[tuple[str, dict[str, Any], list[Any]]] = [("private copy, launch kept", {"mode": "private"}, [])]
    if h.blocks is not None:
        for f in GRID_DIVISIONS:
            args = {"mode": "private", "coarsen": True}
            out.append((f"private copy, coarsened, grid / {f}", args, [("grid_div", f)]))
    return out
