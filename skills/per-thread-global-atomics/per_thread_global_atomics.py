"""Rules of the `per-thread-global-atomics` card (Aggregate contended atomics before they reach global memory): what
only this card uses.

Registered here: matcher `contended_global_atomics`, check `atomic_addresses_few`. The card's rewrite and the
recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.per_thread_global_atomics`.
"""

from __future__ import annotations

from collections.abc import Iterator

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
from warpwise.analyzers.model import Span
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
        if not loads and not (folded and bins is not None):
            # Without a data-dependent index or a modulo/mask that folds threads together, each thread has its own
            # counter and nothing contends.
            continue
        how = f"one of {bins} counters" if bins is not None else "a data-dependent counter"
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
    Both are exact for integer counters.
    """
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
