"""Checks that several reduction and atomic cards share: associative operators, shuffled element types, block sizes,
active threads, what is read after the reduction, and exact, unused, unaliased atomics.

Each check reads the region's facts (put there by the cards' matchers) and the model, and
answers one precondition with holds / violated / unknown and a one-line reason naming the user's identifiers.
"""

from __future__ import annotations

from warpwise.analyzers.facts import identifier_uses
from warpwise.analyzers.facts_reduce import (
    TreeReduction,
    bare_type,
    ctype,
    is_kernel,
    launch_blocks,
    launch_bound,
    launches_text,
)
from warpwise.analyzers.model import AccessKind
from warpwise.skills.regions import CheckContext, Verdict, check, holds, unknown, violated

_ASSOCIATIVE = {"+", "*", "&", "|", "^", "max", "min", "fmaxf", "fminf", "fmax", "fmin", "::max", "::min"}
_NOT_ASSOCIATIVE = {"-", "/", "%", "<<", ">>"}
_SHUFFLE_TYPES = {
    "int": 32,
    "unsigned": 32,
    "unsigned int": 32,
    "float": 32,
    "long long": 64,
    "long long int": 64,
    "unsigned long long": 64,
    "unsigned long long int": 64,
    "double": 64,
}


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@check("reduction_operator_associative")
def reduction_operator_associative(ctx: CheckContext) -> Verdict:
    """Hold when the reduction combines elements with an associative operator (+, *, bitwise, max, min)."""
    red: TreeReduction = ctx.fact("reduction")
    op = red.combine
    shown = f"`{op}`" if red.form != "call" else f"`{op}(...)`"
    if op in _ASSOCIATIVE or op.rsplit("::", 1)[-1] in ("max", "min"):
        return holds(f"`{red.array}` is combined with {shown}, an associative operator")
    if op in _NOT_ASSOCIATIVE:
        return violated(f"`{red.array}` is combined with {shown}, which is not associative: this is not a reduction")
    return unknown(f"`{red.array}` is combined by calling `{op}`; whether it is associative is not known")


@check("reduction_element_shuffles")
def reduction_element_shuffles(ctx: CheckContext) -> Verdict:
    """Hold when the reduced element type has a `__shfl_down_sync` overload (32- or 64-bit integer or float)."""
    red: TreeReduction = ctx.fact("reduction")
    elem = bare_type(red.element_type)
    bits = _SHUFFLE_TYPES.get(elem)
    if bits is not None:
        return holds(f"`{red.array}` holds `{elem}`, a {bits}-bit type that `__shfl_down_sync` moves directly")
    known = ctype(elem)
    if known is not None or elem == "bool":
        return violated(f"`{red.array}` holds `{elem}`, which has no `__shfl_down_sync` overload")
    return unknown(f"`{red.array}` holds `{elem or '?'}`; whether `__shfl_down_sync` can move it is not known here")


@check("reduction_block_size")
def reduction_block_size(ctx: CheckContext, whole_block: bool = False, min_threads: int = 64) -> Verdict:
    """Hold when every launch uses 1-D blocks whose size is a power of two, at least `min_threads`, that the
    reduction's strides match (the first stride halves the block; with `whole_block`, the loop covers it)."""
    red: TreeReduction = ctx.fact("reduction")
    fn = ctx.function
    blocks, why = launch_blocks(ctx.model, fn)
    if blocks is None:
        bound = launch_bound(ctx.model, fn)
        if bound is not None and bound < min_threads:
            return violated(f"`__launch_bounds__({bound})` limits blocks to fewer than {min_threads} threads")
        if red.first is not None and (not _pow2(red.first) or red.first < min_threads // 2) and not whole_block:
            return violated(f"the first stride of `{red.var}` is {red.first}; it must be a power of two >= 32")
        extra = f"; `__launch_bounds__({bound})` bounds it from above only" if bound is not None else ""
        return unknown(f"the block size is not known ({why}){extra}")
    for bx, by, bz in blocks:
        shape = f"{bx}x{by}x{bz}" if (by, bz) != (1, 1) else str(bx)
        if (by, bz) != (1, 1):
            return violated(f"a launch uses {shape} blocks; the reduction indexes threads by `{red.tid}` only")
        if not _pow2(bx) or bx < min_threads or bx > 1024:
            return violated(f"a launch uses {bx}-thread blocks; this needs a power of two from {min_threads} to 1024")
        first = red.first if red.first is not None else bx // 2
        if red.shape == "sequential" and (not _pow2(first) or first < 32):
            return violated(f"with {bx}-thread blocks the first stride of `{red.var}` is {first}, below 32")
        covered = red.covered if red.covered is not None else bx
        if whole_block and covered != bx:
            return violated(f"the loop reduces {covered} elements of `{red.array}` but blocks have {bx} threads")
    sizes = sorted({b[0] for b in blocks})
    return holds(
        f"{launches_text(len(blocks))} in this file use{'s' if len(blocks) == 1 else ''} "
        f"{'/'.join(map(str, sizes))}-thread 1-D blocks"
    )


@check("reduction_threads_all_active")
def reduction_threads_all_active(ctx: CheckContext) -> Verdict:
    """Hold when every thread of the block reaches the reduction loop (no thread-dependent guard or early return)."""
    red: TreeReduction = ctx.fact("reduction")
    fn = ctx.function
    loop = fn.loops[red.loop_id]
    if not is_kernel(fn):
        return unknown(f"`{fn.name}` is a device function: its callers decide which threads reach the loop")
    for b in fn.branches:
        if b.thread_dependent and b.span[0] <= loop.span[0] and loop.span[1] <= b.span[1]:
            return violated(f"the loop runs under `if ({b.condition})`, so some lanes of the first warp may not")
        if b.thread_dependent and b.has_return and b.span[1] <= loop.span[0]:
            return violated(f"threads return under `if ({b.condition})` before the loop; full-warp shuffles need them")
    for outer in fn.loops:
        if outer.thread_dependent and outer.span[0] < loop.span[0] and loop.span[1] <= outer.span[1]:
            return violated(f"the loop sits inside a loop whose condition `{outer.condition}` depends on the thread")
    return holds(f"every thread of `{fn.name}` reaches the loop (no thread-dependent guard or return before it)")


@check("reduction_only_total_read_after")
def reduction_only_total_read_after(ctx: CheckContext) -> Verdict:
    """Hold when, after the loop, the shared array is read only at index 0 (the total)."""
    red: TreeReduction = ctx.fact("reduction")
    fn = ctx.function
    loop = fn.loops[red.loop_id]
    arr = red.array
    later = sorted((a for a in fn.accesses if a.base == arr and a.span[0] >= loop.span[1]), key=lambda a: a.span[0])
    for a in later:
        if a.kind in (AccessKind.WRITE, AccessKind.ATOMIC) or a.kind is AccessKind.ADDRESS:
            return unknown(
                f"`{arr}[{a.index}]` is written or addressed after the loop; the partial sums the rewrite leaves "
                "in other elements differ, which matters if later code reads them"
            )
        if a.index.strip() != "0":
            return violated(f"`{arr}[{a.index}]` is read after the loop; only `{arr}[0]` keeps its value")
    if loop.parent is not None:
        outer = fn.loops[loop.parent]
        before = [
            a
            for a in fn.accesses
            if a.base == arr and outer.span[0] <= a.span[0] < loop.span[0] and a.index.strip() != "0"
        ]
        if before and before[0].kind is AccessKind.READ:
            return unknown(f"`{arr}[{before[0].index}]` is read in the enclosing loop before this loop runs again")
    return holds(f"after the loop only `{arr}[0]` is read")


@check("atomic_add_exact")
def atomic_add_exact(ctx: CheckContext) -> Verdict:
    """Hold when the atomically added type is an integer, so adding partial sums first gives the same totals."""
    elem = ctx.fact("element") or ""
    arr = ctx.fact("array")
    ty = ctype(elem)
    if ty is not None and ty.is_int:
        return holds(f"`{arr}` holds `{elem}`: integer additions give the same totals in any grouping")
    if ty is not None:
        return unknown(
            f"`{arr}` holds `{elem}`: summing per group first rounds differently than one addition per thread; "
            "whether the consumer tolerates the last-bit changes is not known"
        )
    return unknown(f"the element type of `{arr}` (`{elem or '?'}`) is not known here")


@check("atomic_result_unused")
def atomic_result_unused(ctx: CheckContext) -> Verdict:
    """Hold when the value returned by the atomic (the old contents) is not used."""
    tgt = ctx.fact("target")
    if tgt.statement_span is not None:
        return holds(f"the old value `atomicAdd` returns for `{tgt.base}` is discarded")
    return violated(
        f"the old value of `{tgt.base}` that `atomicAdd` returns is used; aggregated updates return other values"
    )


@check("atomic_target_only_access")
def atomic_target_only_access(ctx: CheckContext) -> Verdict:
    """Hold when the kernel touches the atomically updated array only through this one call."""
    tgt = ctx.fact("target")
    fn = ctx.function
    base = tgt.base
    lo, hi = tgt.call_span
    others = [a for a in fn.accesses if a.base == base and not (lo <= a.span[0] < hi)]
    reads = [a for a in others if a.kind in (AccessKind.READ, AccessKind.READ_WRITE, AccessKind.WRITE)]
    if reads:
        return violated(
            f"`{reads[0].array}[{reads[0].index}]` is also accessed in `{fn.name}`; with aggregated updates it "
            "would see the counts arrive later and in larger steps"
        )
    atomics = [c for c in fn.calls if c.category == "atomic" and c.span != tgt.call_span and base in " ".join(c.args)]
    if atomics:
        return unknown(
            f"`{atomics[0].name}({', '.join(atomics[0].args)})` also updates `{base}`; aggregate both together"
        )
    uses = identifier_uses(ctx.model, fn, base)
    if uses > 2:
        return unknown(f"`{base}` is used {uses - 2} more time(s) in `{fn.name}` (passed on or offset), not only here")
    return holds(f"`{fn.name}` touches `{base}` only through this `atomicAdd`")
