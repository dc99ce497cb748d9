"""Checks of the reductions, arithmetic and control cards.

Each check reads the region's facts (put there by the matchers in `skills/matchers/reduce.py`) and the model, and
answers one precondition with holds / violated / unknown and a one-line reason naming the user's identifiers.
"""

from __future__ import annotations

import re

from warpwise.analyzers.build import eval_numeric_text
from warpwise.analyzers.expr.values import parse_int_literal
from warpwise.analyzers.model import AccessKind
from warpwise.skills.facts import identifier_uses, loop_label
from warpwise.skills.facts_reduce import (
    CType,
    HalfElementwise,
    Node,
    TreeReduction,
    TwoPassSoftmax,
    bare_type,
    clean,
    ctype,
    declared_reference,
    declared_volatile,
    expr_type,
    field,
    geometry_limits,
    identifier_nodes,
    identifiers,
    int_range,
    is_kernel,
    launch_blocks,
    launch_bound,
    launches_of,
    launches_text,
    node_at,
    non_negative,
    operator_of,
    origin_value,
    text_of,
    variable_type,
)
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


@check("reduction_barrier_before_loop")
def reduction_barrier_before_loop(ctx: CheckContext) -> Verdict:
    """Hold when a `__syncthreads()` separates the last write of the shared array from the reduction loop."""
    red: TreeReduction = ctx.fact("reduction")
    fn = ctx.function
    loop = fn.loops[red.loop_id]
    writes = [
        a
        for a in fn.accesses
        if a.base == red.array
        and a.kind in (AccessKind.WRITE, AccessKind.READ_WRITE, AccessKind.ATOMIC)
        and a.span[0] < loop.span[0]
    ]
    if not writes:
        return unknown(f"`{red.array}` is not written before the loop in `{fn.name}`")
    last = max(writes, key=lambda a: a.span[0])
    for c in fn.calls:
        if c.name == "__syncthreads" and last.span[1] <= c.span[0] < loop.span[0] and c.thread_dependent_guard is None:
            return holds(f"`__syncthreads()` separates the write `{red.array}[{last.index}]` from the loop")
    return violated(
        f"no `__syncthreads()` separates the write `{red.array}[{last.index}]` from the loop: "
        "other threads' elements may not be visible yet"
    )


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


@check("reduction_combine_exact")
def reduction_combine_exact(ctx: CheckContext) -> Verdict:
    """Hold when regrouping the reduction cannot change its result (integer or bitwise arithmetic, max, min)."""
    red: TreeReduction = ctx.fact("reduction")
    ty = ctype(red.element_type)
    if red.combine in _NOT_ASSOCIATIVE:
        return violated(f"`{red.combine}` is not associative, so regrouping changes the result")
    if (
        ty is not None
        and ty.is_int
        and (red.combine in _ASSOCIATIVE or red.combine.rsplit("::", 1)[-1] in ("max", "min"))
    ):
        return holds(
            f"`{red.array}` holds `{red.element_type}`: integer `{red.combine}` gives the same total in any order"
        )
    if ty is not None and ty.kind == "float":
        return unknown(
            f"`{red.array}` holds `{red.element_type}`: a different grouping of the sum changes the last bits "
            "(and signed zeros or NaNs for max/min); whether the consumer tolerates that is not known"
        )
    return unknown(f"whether regrouping `{red.combine}` on `{red.element_type}` keeps the result is not known")


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


@check("divisor_fixed_during_loop")
def divisor_fixed_during_loop(ctx: CheckContext) -> Verdict:
    """Hold when every variable of the divisor is a by-value parameter or a local the loop does not assign."""
    fn = ctx.function
    node = node_at(ctx.model, fn, ctx.region.span, "binary_expression")
    right = field(node, "right")
    names = sorted(identifiers(ctx.model, right)) if right is not None else []
    for name in names:
        if declared_volatile(ctx.model, fn, name):
            return violated(
                f"`{name}` is `volatile`: it may change between iterations even though the loop does not assign it"
            )
    others = [n for n in names if variable_type(fn, n) is None]
    refs = [n for n in names if declared_reference(ctx.model, fn, n)]
    if refs:
        loop = ctx.fact("loop")
        stores = [a for a in fn.accesses if loop.span[0] <= a.span[0] < loop.span[1] and a.kind in _STORES]
        if stores:
            return violated(
                f"`{refs[0]}` is a reference and {loop_label(loop)} stores to `{stores[0].array}[{stores[0].index}]`, "
                "which may be what it refers to"
            )
        return unknown(f"`{refs[0]}` is a reference: whether what it refers to changes during the loop is not known")
    if others:
        return unknown(f"`{others[0]}` is not a local or by-value parameter; something the loop calls could change it")
    shown = ", ".join(f"`{n}`" for n in names)
    return holds(f"{shown} {'is' if len(names) == 1 else 'are'} not assigned in {loop_label(ctx.fact('loop'))}")


@check("loop_repeats")
def loop_repeats(ctx: CheckContext) -> Verdict:
    """Hold when the loop runs more than once (the reciprocal is computed once for many divisions)."""
    loop = ctx.fact("loop")
    if loop.trip_count is None:
        return unknown(f"the trip count of {loop_label(loop)} is not a constant")
    if loop.trip_count >= 2:
        return holds(f"{loop_label(loop)} runs {loop.trip_count} times")
    return violated(f"{loop_label(loop)} runs {loop.trip_count} time(s): nothing to amortize")


_STORES = (AccessKind.WRITE, AccessKind.READ_WRITE, AccessKind.ATOMIC)
_ALLOCATORS = ("cudaMalloc", "cudaMallocManaged", "cudaMallocAsync", "cudaMallocHost", "cudaHostAlloc")


@check("half_pointers_aligned")
def half_pointers_aligned(ctx: CheckContext) -> Verdict:
    """Hold when every launch passes buffers that come straight from a CUDA allocation (256-byte aligned), so
    they can be read and written as 4-byte `__half2`/`__nv_bfloat162` pairs."""
    he: HalfElementwise = ctx.fact("half")
    fn = ctx.function
    launches = launches_of(ctx.model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file: whether the buffers are 4-byte aligned is not known")
    doubts: list[str] = []
    for host, launch in launches:
        host_text = ctx.model.text[host.base : host.base + host.length].decode("utf-8", "replace")
        for name in (he.out, *he.arrays):
            p = fn.param(name)
            if p is None or p.index >= len(launch.args):
                doubts.append(f"the launch in `{host.name}` does not pass `{name}` in a way warpwise can read")
                continue
            arg = clean(launch.args[p.index])
            offset = re.fullmatch(r"([A-Za-z_]\w*)\s*\+\s*(\d+)", arg)
            if offset is not None and int(offset.group(2)) % 2 == 1:
                return violated(f"the launch in `{host.name}` passes `{arg}` for `{name}`: 2-byte aligned only")
            if not re.fullmatch(r"[A-Za-z_]\w*", arg):
                doubts.append(f"the launch in `{host.name}` passes `{arg}` for `{name}`; its alignment is not known")
                continue
            allocated = any(
                re.search(rf"\b{a}\s*\(\s*(\(\s*void\s*\*\*\s*\)\s*)?&\s*{re.escape(arg)}\b", host_text)
                for a in _ALLOCATORS
            )
            if not allocated:
                doubts.append(
                    f"`{arg}` (passed for `{name}`) is not allocated in `{host.name}`; its alignment is not known"
                )
    if doubts:
        return unknown(doubts[0])
    return holds(
        f"{launches_text(len(launches))} pass{'es' if len(launches) == 1 else ''} buffers allocated with the CUDA "
        "allocator (256-byte aligned)"
    )


@check("half_statement_elementwise")
def half_statement_elementwise(ctx: CheckContext) -> Verdict:
    """Hold when no other code in the kernel reads the output or writes the inputs (so which thread computes which
    element does not matter)."""
    he: HalfElementwise = ctx.fact("half")
    fn = ctx.function
    lo, hi = he.statement_span
    outside = [a for a in fn.accesses if a.base in (he.out, *he.arrays) and not (lo <= a.span[0] < hi)]
    for a in outside:
        if a.base == he.out or a.kind is not AccessKind.READ:
            return violated(
                f"`{a.array}[{a.index}]` is also accessed in `{fn.name}`; with two elements per thread it would "
                "meet an element another thread computes"
            )
    for name in (he.out, *he.arrays):
        uses = identifier_uses(ctx.model, fn, name)
        counted = 1 + len([a for a in fn.accesses if a.base == name])
        if uses > counted:
            return unknown(f"`{name}` is used {uses - counted} more time(s) in `{fn.name}` than warpwise can follow")
    return holds(f"`{fn.name}` writes `{he.out}[{he.index}]` from elements `[{he.index}]` only")


@check("half_no_contraction")
def half_no_contraction(ctx: CheckContext) -> Verdict:
    """Hold when no multiply feeds an add or subtract (nvcc may contract those into FMAs differently in the scalar
    and the packed version)."""
    he: HalfElementwise = ctx.fact("half")
    if he.contracted:
        return unknown(
            f"a multiply feeds an add in `{he.out}[{he.index}]`; with -fmad=true nvcc may fuse it into an FMA in one "
            "version and not the other, so the last bit can differ (use __hfma or the _rn forms to pin it)"
        )
    return holds(f"every operation on `{he.out}[{he.index}]` rounds once per lane, exactly as in the scalar code")


@check("pow_base_precision")
def pow_base_precision(ctx: CheckContext) -> Verdict:
    """Hold when the base already has the call's precision (float for powf, double for pow), so the product is
    computed in the same type as the call."""
    name, base = ctx.fact("name"), ctx.fact("base")
    node = node_at(ctx.model, ctx.function, ctx.fact("base_span"))
    ty = expr_type(ctx.model, ctx.function, node)
    want = 32 if name == "powf" else 64
    if ty is None:
        return unknown(f"the type of `{base}` is not known here")
    if ty.kind == "float" and ty.bits == want:
        return holds(f"`{base}` is {'float' if want == 32 else 'double'}, like `{name}`'s result")
    shown = ("float" if ty.bits == 32 else "double") if ty.kind == "float" else f"a {ty.bits}-bit {ty.kind} integer"
    return violated(
        f"`{base}` is {shown}: `{name}` converts it first, while `{ctx.fact('product')}` would multiply in its own type"
    )


def _dims_value(ctx: CheckContext) -> int | None:
    total = 1
    for d in ctx.fact("dims", ()):
        v = parse_int_literal(d.strip())
        if v is None:
            v = ctx.model.constants.get(d.strip())
        if v is None:
            return None
        total *= v
    return total


@check("local_array_small")
def local_array_small(ctx: CheckContext, limit: int = 64) -> Verdict:
    """Hold when the per-thread array has at most `limit` elements (few enough to live in registers)."""
    total = _dims_value(ctx)
    declared = ctx.fact("declared")
    if total is None:
        return unknown(f"the size of `{declared}` is not a known constant")
    if total <= limit:
        return holds(f"`{declared}` has {total} elements, few enough for registers")
    return violated(f"`{declared}` has {total} elements; in registers it would crowd out everything else")


@check("local_index_unrollable")
def local_index_unrollable(ctx: CheckContext) -> Verdict:
    """Hold when every index of the array becomes a constant once the loops around it are fully unrolled."""
    runtime = ctx.fact("runtime", ())
    arr = ctx.fact("array")
    if not runtime:
        return holds(f"`{arr}` is indexed only by variables of loops with constant trip counts")
    return unknown(
        f"`{ctx.fact('subscript')}` depends on `{', '.join(runtime)}`, known only at run time: unrolling cannot make "
        "it constant (restructure with a switch or selects, or keep the array in shared memory)"
    )


@check("local_unroll_trips_small")
def local_unroll_trips_small(ctx: CheckContext, limit: int = 64) -> Verdict:
    """Hold when every loop to unroll runs at most `limit` times (full unrolling stays small)."""
    loops = [ctx.function.loops[i] for i in ctx.fact("loops", ())]
    if not loops:
        return unknown("no loop with a constant trip count indexes the array; there is nothing to unroll")
    big = [lp for lp in loops if (lp.trip_count or 0) > limit]
    if big:
        return violated(f"{loop_label(big[0])} runs {big[0].trip_count} times; fully unrolled it would bloat the code")
    trips = ", ".join(f"{loop_label(lp)}: {lp.trip_count}" for lp in loops)
    return holds(f"full unrolling stays small ({trips} iterations)")


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
        return holds(f"`{var}` is compared with `{unsigned32[0][0]}`, an unsigned 32-bit size up to 2^32 - 1")
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


_CEIL_DIV = re.compile(r"\(\s*(?P<n>.+?)\s*\+\s*(?P<add>.+?)\s*\)\s*/\s*(?P<div>.+)")


def _covers(grid: str, block: str, block_x: int | None, n: str, consts: dict[str, int]) -> bool | None:
    """Return whether a launch `grid x block` covers `n` threads (None when it cannot be read)."""
    m = _CEIL_DIV.fullmatch(grid.strip())
    if m is None or clean(m.group("n")) != n:
        return None
    div, add = clean(m.group("div")).strip("()"), clean(m.group("add"))
    div_v = eval_numeric_text(div, consts)
    if div != clean(block) and (div_v is None or div_v != block_x):
        return None
    if add == f"{div} - 1":
        return True
    add_v = eval_numeric_text(add, consts)
    size = div_v if div_v is not None else block_x
    return add_v is not None and size is not None and add_v >= size - 1


@check("half_grid_covers_elements")
def half_grid_covers_elements(ctx: CheckContext) -> Verdict:
    """Hold when every launch starts at least one thread per element (`(n + B - 1) / B` blocks of `B`), so the
    original wrote every element below `n` and the pairs rewrite writes the same ones."""
    he: HalfElementwise = ctx.fact("half")
    fn = ctx.function
    launches = launches_of(ctx.model, fn.name)
    bound = fn.param(he.bound)
    if not launches or bound is None:
        why = f"no launch of `{fn.name}` in this file" if not launches else f"`{he.bound}` is not a parameter"
        return unknown(f"{why}: whether the grid covers all `{he.bound}` elements is not known")
    for host, launch in launches:
        if bound.index >= len(launch.args):
            return unknown(f"the launch in `{host.name}` does not pass `{he.bound}` in a way warpwise can read")
        arg = clean(launch.args[bound.index])
        block = launch.block_value
        if block is not None and block[1:] == (1, 1) and launch.grid_value is not None:
            count = parse_int_literal(arg)
            if count is not None:
                threads = launch.grid_value[0] * block[0]
                if threads < count:
                    return violated(
                        f"the launch in `{host.name}` starts {threads} threads for {count} elements: the original "
                        "leaves the rest unwritten, the pairs would write them"
                    )
                continue
        covered = _covers(launch.grid, launch.block, block[0] if block is not None else None, arg, ctx.model.constants)
        if not covered:
            return unknown(f"the launch in `{host.name}` (`<<<{launch.grid}, {launch.block}>>>`) may not cover `{arg}`")
    return holds(f"{launches_text(len(launches))} start one thread per element of `{he.bound}` or more")
