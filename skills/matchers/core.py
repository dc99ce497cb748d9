"""Matchers of the core cards: math intrinsics, double literals, unrolling, bank conflicts, `__restrict__`,
loop-invariant loads and divergent barriers."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from warpwise.analyzers.findings import Related
from warpwise.analyzers.model import AccessKind, AccessPattern, FunctionKind, MemorySpace
from warpwise.skills.facts import (
    global_stores_in,
    loop_label,
    pointer_params,
    rel,
    text,
    tree_of,
)
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher

FAST_INTRINSICS = {
    "expf": "__expf",
    "exp10f": "__exp10f",
    "logf": "__logf",
    "log2f": "__log2f",
    "log10f": "__log10f",
    "sinf": "__sinf",
    "cosf": "__cosf",
    "tanf": "__tanf",
    "powf": "__powf",
}


@matcher("none")
def no_regions(ctx: MatchContext) -> Iterator[Region]:
    """Find nothing (documentation-only cards, such as KLineage skills)."""
    return iter(())


@matcher("math_calls_with_fast_intrinsic")
def math_calls_with_fast_intrinsic(ctx: MatchContext) -> Iterator[Region]:
    """Find calls of single-precision math functions that have a fast hardware intrinsic."""
    fn = ctx.function
    for call in fn.calls:
        fast = FAST_INTRINSICS.get(call.name)
        if call.category != "math" or fast is None:
            continue
        yield Region(
            AnchorKind.CALL,
            fn,
            call.span,
            f"call:{call.name}:{call.span[0]}",
            {"call": call, "name": call.name, "fast": fast, "args": ", ".join(call.args), "in_loop": bool(call.loops)},
        )


# Candidate positions of unsuffixed floating literals; each is confirmed against the syntax tree.
_FLOAT_TEXT = re.compile(rb"(?<![\w.])(?:\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w.])")
_FLOAT_LITERAL = re.compile(r"^(\d+\.\d*|\.\d+|\d+\.?\d*[eE][+-]?\d+|\d*\.\d+[eE][+-]?\d+)$")
_ARITH = {"+", "-", "*", "/", "<", ">", "<=", ">=", "==", "!="}


@matcher("double_literals_in_float_arithmetic")
def double_literals_in_float_arithmetic(ctx: MatchContext) -> Iterator[Region]:
    """Find unsuffixed floating literals (type `double`) that are an operand of arithmetic in device code."""
    fn = ctx.function
    if fn.kind is FunctionKind.HOST:
        return
    root = tree_of(ctx.model).root_node
    for m in _FLOAT_TEXT.finditer(ctx.model.text, fn.base, fn.base + fn.length):
        lit = root.descendant_for_byte_range(m.start(), m.end())
        if lit is None or lit.type != "number_literal" or lit.start_byte != m.start() or lit.end_byte != m.end():
            continue
        raw = text(ctx.model, lit)
        if not _FLOAT_LITERAL.match(raw):
            continue
        parent = lit.parent
        if parent is None:
            continue
        other = None
        if parent.type == "binary_expression":
            op = parent.child_by_field_name("operator")
            if op is None or op.type not in _ARITH:
                continue
            left, right = parent.child_by_field_name("left"), parent.child_by_field_name("right")
            other = right if left is not None and left.id == lit.id else left
        elif parent.type == "assignment_expression":
            op = parent.child_by_field_name("operator")
            if op is None or op.type not in ("+=", "-=", "*=", "/="):
                continue
            other = parent.child_by_field_name("left")
        else:
            continue
        if other is None or other.type == "number_literal":
            continue
        yield Region(
            AnchorKind.EXPRESSION,
            fn,
            rel(fn, lit),
            f"literal:{lit.start_byte - fn.base}",
            {
                "literal": raw,
                "float_literal": raw + "f",
                "operand": text(ctx.model, other),
                "operand_span": rel(fn, other),
                "expression": " ".join(text(ctx.model, parent).split()),
            },
        )


@matcher("constant_trip_loops_without_unroll")
def constant_trip_loops_without_unroll(ctx: MatchContext, min_trips: int = 2) -> Iterator[Region]:
    """Find `for` loops with a constant trip count and no `#pragma unroll`."""
    fn = ctx.function
    for loop in fn.loops:
        if loop.kind != "for" or loop.unroll is not None or loop.trip_count is None or loop.trip_count < min_trips:
            continue
        yield Region(
            AnchorKind.LOOP,
            fn,
            loop.header_span,
            f"loop:{loop.id}:{loop.var}",
            {"loop": loop, "var": loop.var or "?", "trips": loop.trip_count, "loop_label": loop_label(loop)},
        )


def bank_conflict_ways(words: int, width: int) -> int:
    """Return how many threads of a warp share a bank for a word stride (per 32-lane wavefront)."""
    ways = math.gcd(words, 32)
    if width == 8:
        ways = max(1, ways // 2)
    elif width >= 16:
        ways = max(1, ways // 4)
    return ways


@matcher("shared_bank_conflicts")
def shared_bank_conflicts(ctx: MatchContext) -> Iterator[Region]:
    """Find shared-memory accesses whose lanes are a bank-conflicting number of words apart."""
    fn = ctx.function
    for acc in fn.accesses:
        if acc.space is not MemorySpace.SHARED or acc.pattern is not AccessPattern.STRIDED:
            continue
        if acc.stride is None or acc.stride.denominator != 1 or not acc.width or acc.width < 4:
            continue
        words = abs(acc.stride.numerator) * acc.width // 4
        ways = bank_conflict_ways(words, acc.width)
        if ways < 2:
            continue
        arr = next((s for s in fn.shared if s.name == acc.base), None)
        last = arr.dim_values[-1] if arr is not None and arr.dim_values else None
        yield Region(
            AnchorKind.ACCESS,
            fn,
            acc.span,
            f"bank:{acc.base}:{acc.index}:{acc.span[0]}",
            {
                "access": acc,
                "shared": arr,
                "array": acc.base,
                "subscript": f"{acc.base}[{']['.join(acc.indices)}]",
                "ways": ways,
                "words": words,
                "banks": 32 // ways,
                "padded": (last + 1) if last else "?",
                "_related": (Related(f"`{acc.base}` is declared here", fn.span(arr.span)),) if arr else (),
            },
        )


@matcher("pointer_params_without_restrict")
def pointer_params_without_restrict(ctx: MatchContext) -> Iterator[Region]:
    """Find kernels with two or more pointer parameters, some without `__restrict__`, that store through one."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    pointers = pointer_params(fn)
    lacking = [p for p in pointers if not p.is_restrict]
    if len(pointers) < 2 or not lacking:
        return
    stores = [
        a for a in fn.accesses if a.kind in (AccessKind.WRITE, AccessKind.READ_WRITE) and a.space is MemorySpace.GLOBAL
    ]
    if not stores:
        return
    names = [p.name for p in lacking]
    related = tuple(
        Related(f"launched here with `{', '.join(launch.args)}`", host.span(launch.span))
        for host, launch in ctx.model.launches_of(fn.name)[:5]
    )
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"restrict:{fn.name}",
        {
            "params": names,
            "names": ", ".join(f"`{n}`" for n in names),
            "verb": "is a pointer parameter" if len(names) == 1 else "are pointer parameters",
            "stored": stores[0].base,
            "_related": related,
        },
    )


def _index_name(array: str, index: str) -> str:
    tail = re.sub(r"[^A-Za-z0-9_]+", "_", index).strip("_") or "0"
    return f"{array}_{tail}" if len(tail) <= 16 else f"{array}_value"


@matcher("loop_invariant_global_loads")
def loop_invariant_global_loads(ctx: MatchContext) -> Iterator[Region]:
    """Find global loads whose index does not change in a loop that the compiler cannot hoist them out of."""
    fn = ctx.function
    seen: set[tuple[str, str, int]] = set()
    for acc in fn.accesses:
        if acc.space is not MemorySpace.GLOBAL or acc.kind is not AccessKind.READ or not acc.loops:
            continue
        if acc.pattern in (AccessPattern.UNKNOWN, AccessPattern.INDIRECT) or acc.via_ldg or acc.vector_cast:
            continue
        target = None
        for loop_id in reversed(acc.loops):
            loop = fn.loops[loop_id]
            if acc.index_names & loop.assigned:
                break
            target = loop
        if target is None:
            continue
        key = (acc.base, acc.index, target.id)
        if key in seen:
            continue
        lo, hi = target.span
        stores = global_stores_in(fn, target.span)
        barriers = [c for c in fn.calls if lo <= c.span[0] < hi and c.category in ("sync", "atomic")]
        param = fn.param(acc.base)
        restrict_const = param is not None and param.is_restrict and param.is_const
        if barriers:
            reason = f"the `{barriers[0].name}` in the loop makes the compiler reload it"
        elif stores and not restrict_const:
            reason = (
                f"`{acc.base}` is not `const __restrict__` and the loop stores to `{stores[0].base}`, "
                "so the compiler must assume the value can change"
            )
        else:
            continue
        seen.add(key)
        used = set(fn.locals) | {p.name for p in fn.params}
        name = _index_name(acc.base, acc.index)
        while name in used:
            name += "_"
        same = [a for a in fn.accesses if a.base == acc.base and a.index == acc.index and lo <= a.span[0] < hi]
        yield Region(
            AnchorKind.ACCESS,
            fn,
            acc.span,
            f"hoist:{acc.base}:{acc.index}:{target.id}",
            {
                "access": acc,
                "loop": target,
                "array": acc.base,
                "index": acc.index,
                "load": f"{acc.base}[{acc.index}]",
                "loop_label": loop_label(target),
                "reason": reason,
                "name": name,
                "occurrences": tuple(same),
                "_related": (Related(f"{loop_label(target)} starts here", fn.span(target.header_span)),),
            },
        )


_BLOCK_SYNCS = ("__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or")


@matcher("divergent_block_barriers")
def divergent_block_barriers(ctx: MatchContext) -> Iterator[Region]:
    """Find block-wide barriers under thread-dependent conditions, and thread-dependent returns before barriers."""
    fn = ctx.function
    syncs = [
        c
        for c in fn.calls
        if c.category == "sync"
        and (c.name in _BLOCK_SYNCS or (c.name.endswith(".sync") and ("block" in c.name or "cta" in c.name)))
    ]
    for call in syncs:
        if call.thread_dependent_guard is not None:
            what = f"`{call.name}()` runs under `{call.thread_dependent_guard}`, which depends on the thread index"
            yield Region(
                AnchorKind.CALL,
                fn,
                call.span,
                f"sync:{call.span[0]}",
                {"barrier": call.name, "guard": call.thread_dependent_guard, "what": what},
            )
    for branch in fn.branches:
        if not (branch.thread_dependent and branch.has_return):
            continue
        later = [c for c in syncs if c.span[0] > branch.span[1] and c.thread_dependent_guard is None]
        if not later:
            continue
        target = later[0]
        what = f"threads that return under `if ({branch.condition})` skip the later `{target.name}()`"
        yield Region(
            AnchorKind.BRANCH,
            fn,
            branch.span,
            f"return:{branch.span[0]}",
            {
                "barrier": target.name,
                "guard": branch.condition,
                "what": what,
                "_related": (Related("the barrier they skip", fn.span(target.span)),),
            },
        )
