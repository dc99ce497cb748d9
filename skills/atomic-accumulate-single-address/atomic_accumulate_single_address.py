"""Rules of the `atomic-accumulate-single-address` card (Reduce per warp before the atomic): what only this card
uses.

Registered here: matcher `uniform_address_atomics`. The card's rewrite and the recognisers only it needs live here
too; what several cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`,
`.facts*`). The library imports this file by path as `warpwise.skills.cards.atomic_accumulate_single_address`.
"""

from __future__ import annotations

from collections.abc import Iterator

from warpwise.analyzers.facts_reduce import (
    AtomicTarget,
    atomic_target,
    bare_type,
    ctype,
    element_type,
    fresh_name,
    is_uniform,
    node_at,
)
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.skills.rewrites.reduce import _cg_includes, _statement_block, _value_as


@matcher("uniform_address_atomics")
def uniform_address_atomics(ctx: MatchContext) -> Iterator[Region]:
    """Find `atomicAdd` calls that every thread makes on the same global address."""
    fn = ctx.function
    for call in fn.calls:
        if call.name != "atomicAdd":
            continue
        tgt = atomic_target(ctx.model, fn, call.span)
        if tgt is None or tgt.leader_guarded:
            continue
        if tgt.index_span is not None and not is_uniform(ctx.model, fn, node_at(ctx.model, fn, tgt.index_span)):
            continue
        address = tgt.base if tgt.form == "pointer" else f"{tgt.base}[{tgt.index}]"
        yield Region(
            AnchorKind.CALL,
            fn,
            call.span,
            f"uniform-atomic:{tgt.base}:{call.span[0]}",
            {
                "target": tgt,
                "array": tgt.base,
                "address": address,
                "value": tgt.value,
                "element": element_type(fn, tgt.base) or "",
            },
        )


def aggregate_uniform_atomic(ctx: RewriteContext) -> list[Edit] | None:
    """Sum the values of the threads that reach the atomic together (a coalesced group, at most a warp) and let
    one of them add the group's sum."""
    tgt: AtomicTarget = ctx.fact("target")
    elem = bare_type(ctx.fact("element") or "")
    if tgt.statement_span is None or ctype(elem) is None:
        return None
    fn = ctx.function
    active = fresh_name(ctx.model, fn, "active")
    total = fresh_name(ctx.model, fn, "total", {active})
    value = _value_as(ctx, tgt.value, tgt.value_span, elem)
    address = ctx.text(ctx.abs(tgt.address_span))
    lines = [
        f"cooperative_groups::coalesced_group {active} = cooperative_groups::coalesced_threads();",
        f"const {elem} {total} = cooperative_groups::reduce({active}, {value}, cooperative_groups::plus<{elem}>());",
        f"if ({active}.thread_rank() == 0) atomicAdd({address}, {total});",
    ]
    return [_statement_block(ctx, ctx.abs(tgt.statement_span), lines), *_cg_includes(ctx)]
