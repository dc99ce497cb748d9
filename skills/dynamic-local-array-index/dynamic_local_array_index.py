"""Rules of the `dynamic-local-array-index` card (Make per-thread array indices compile-time constants): what only
this card uses.

Registered here: matcher `dynamic_local_array_indexing`, check `local_memory_confirmed`, check `local_array_small`,
check `local_index_unrollable`, check `local_unroll_trips_small`. The card's rewrite and the recognisers only it
needs live here too; what several cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`,
`.rewrites`, `.facts*`). The library imports this file by path as `warpwise.skills.cards.dynamic_local_array_index`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from warpwise.analyzers.compile_time import compile_time, compile_time_name
from warpwise.analyzers.expr.values import parse_int_literal
from warpwise.analyzers.facts import loop_label
from warpwise.analyzers.facts_reduce import (
    Node,
    definitions,
    field,
    geometry_limits,
    int_range,
    node_at,
    single_definition,
    text_of,
    unparen,
)
from warpwise.analyzers.model import FileModel, Function, Loop, MemorySpace
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
from warpwise.skills.rewrites.reduce import _in_block, _own_line
from warpwise.verify.resources import KernelResources, Unconfirmed, kernel_resources


def full_unroll(loop: Loop) -> bool:
    """Return whether a loop is fully unrolled by its pragma (`#pragma unroll`, or a count covering its trips)."""
    if loop.unroll is None:
        return False
    parts = loop.unroll.split()
    if parts[0] != "unroll":
        return False
    if len(parts) == 1:
        return True
    count = parse_int_literal(parts[1])
    return count is not None and loop.trip_count is not None and count >= loop.trip_count


def compile_time_trips(model: FileModel, fn: Function, loop: Loop) -> bool:
    """Return whether a counting `for` loop's start, bound and step are compile-time constants per instance (its
    trip count is known to the compiler, though not to the model: `i < kNItems` with a template `kNItems`)."""
    if loop.kind != "for" or loop.var is None or loop.step_value is None:
        return False
    node = node_at(model, fn, loop.span, "for_statement")
    cond = unparen(field(node, "condition"))
    if cond is None or cond.type != "binary_expression":
        return False
    left, right = unparen(field(cond, "left")), unparen(field(cond, "right"))
    if left is not None and left.type == "identifier" and text_of(model, left) == loop.var:
        bound = right
    elif right is not None and right.type == "identifier" and text_of(model, right) == loop.var:
        bound = left
    else:
        return False
    if not compile_time(model, fn, bound):
        return False
    if loop.init_value is not None:
        return True
    init = field(node, "initializer")
    if init is not None and init.type == "declaration":
        decl = field(init, "declarator")
        return decl is not None and compile_time(model, fn, field(decl, "value"))
    if init is not None and init.type == "assignment_expression":
        return compile_time(model, fn, field(init, "right"))
    return False


_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_BUILTIN_WORDS = re.compile(r"\b(?:threadIdx|blockIdx|blockDim|gridDim)\b")


@matcher("dynamic_local_array_indexing")
def dynamic_local_array_indexing(ctx: MatchContext) -> Iterator[Region]:
    """Find per-thread arrays indexed by values that are not compile-time constants after unrolling."""
    fn = ctx.function
    arrays = {name: t for name, t in fn.locals.items() if "[" in t}
    if not arrays:
        return
    limits = geometry_limits(ctx.model, fn)
    for name, type_text in arrays.items():
        to_unroll: set[int] = set()
        runtime: list[str] = []
        first = first_runtime = None
        seen_runtime = 0
        for acc in fn.accesses:
            if acc.base != name or acc.space is not MemorySpace.LOCAL:
                continue
            loop_vars = {fn.loops[lid].var: lid for lid in acc.loops}
            builtins = sorted(set(_BUILTIN_WORDS.findall(acc.index)))
            runtime.extend(f"{b}" for b in builtins)
            dynamic = bool(builtins)
            idents = set(acc.index_names)
            written = set(_IDENT.findall(" ".join(acc.indices)))
            if written and all(n in loop_vars or compile_time_name(ctx.model, fn, n) for n in written):
                # `r[i]` inside `for (int i ...)`: the counter, not another local named `i` elsewhere in the function
                # whose definitions the flow-insensitive model merges into the name's dependencies.
                idents = written & set(loop_vars)
            for ident in sorted(idents):
                if ident in loop_vars:
                    loop = fn.loops[loop_vars[ident]]
                    if loop.trip_count is None and not compile_time_trips(ctx.model, fn, loop):
                        runtime.append(ident)
                        dynamic = True
                    elif not full_unroll(loop):
                        to_unroll.add(loop.id)
                        dynamic = True
                    continue
                if compile_time_name(ctx.model, fn, ident):
                    continue
                if name_constant_after_unrolling(ctx.model, fn, ident, _unrolled_vars(ctx, acc.loops)):
                    continue
                value = node_for_name(ctx, ident)
                r = int_range(ctx.model, fn, value, limits) if value is not None else None
                if r is None or r[0] != r[1]:
                    runtime.append(ident)
                    dynamic = True
            if dynamic and first is None:
                first = acc
            if len(runtime) > seen_runtime and first_runtime is None:
                first_runtime = acc
            seen_runtime = len(runtime)
        if first is None:
            continue
        built = build_report(ctx)
        if isinstance(built, Unconfirmed) and not runtime:
            # Without a build, whether nvcc unrolls a loop with a compile-time trip count is its own decision (it
            # unrolls 4-trip loops, and 32-trip accumulator loops in the public GEMMs whose ptxas frames were read,
            # but not every heavy body): a claim of local memory there is left to the compiler's report.
            continue
        first = first_runtime or first
        dims = re.findall(r"\[(.*?)\]", type_text)
        yield Region(
            AnchorKind.ACCESS,
            fn,
            first.span,
            f"local:{name}",
            {
                "array": name,
                "declared": f"{type_text.split('[', 1)[0].strip()} {name}[{']['.join(dims)}]",
                "dims": tuple(dims),
                "subscript": f"{first.array}[{']['.join(first.indices)}]",
                "loops": tuple(sorted(to_unroll)),
                "runtime": tuple(dict.fromkeys(runtime)),
                "why": (
                    f"`{', '.join(dict.fromkeys(runtime))}` is only known at run time"
                    if runtime
                    else "the loop that indexes it is not unrolled"
                ),
                "claim": _claim(name, fn.name, built),
                "build": built,
                **({} if isinstance(built, KernelResources) else {"_severity": "hint"}),
            },
        )


_UNROLLED_COMPOUND = frozenset(
    {"binary_expression", "unary_expression", "conditional_expression", "parenthesized_expression", "cast_expression"}
)


def _unrolled_vars(ctx: MatchContext, loop_ids: tuple[int, ...]) -> frozenset[str]:
    """Return the counters of the enclosing loops that are fully unrolled over compile-time trip counts."""
    fn = ctx.function
    out = set()
    for lid in loop_ids:
        loop = fn.loops[lid]
        if loop.var and full_unroll(loop) and (loop.trip_count is not None or compile_time_trips(ctx.model, fn, loop)):
            out.add(loop.var)
    return frozenset(out)


def name_constant_after_unrolling(
    model: FileModel, fn: Function, name: str, unrolled: frozenset[str], depth: int = 0
) -> bool:
    """Return whether a name is a constant in every unrolled copy of the loops around it (see below)."""
    if name in unrolled or compile_time_name(model, fn, name):
        return True
    if fn.param(name) is not None or depth > 4:
        return False
    # Every definition (a local declared in several unrolled loops is defined once in each) must be constant.
    values, others = definitions(model, fn, name)
    return (
        bool(values)
        and others == 0
        and all(constant_after_unrolling(model, fn, v, unrolled, depth + 1) for v in values)
    )


def constant_after_unrolling(
    model: FileModel, fn: Function, node: Node | None, unrolled: frozenset[str], depth: int = 0
) -> bool:
    """Return whether a value is built only from compile-time constants and counters of fully unrolled loops
    (`int j_s = (i % 2) ? (N - j - 1) : j;`, `int w = tile * 2;` inside `#pragma unroll` loops): every unrolled copy
    of the body sees a constant."""
    node = unparen(node)
    if node is None:
        return False
    if node.type == "identifier":
        return name_constant_after_unrolling(model, fn, text_of(model, node), unrolled, depth)
    if node.type in ("number_literal", "true", "false", "sizeof_expression"):
        return True
    if node.type in _UNROLLED_COMPOUND:
        parts = [c for c in node.named_children if c.type not in ("comment", "type_descriptor")]
        return bool(parts) and all(constant_after_unrolling(model, fn, c, unrolled, depth) for c in parts)
    return compile_time(model, fn, node)


def build_report(ctx: MatchContext) -> KernelResources | Unconfirmed:
    """Return the compiler's resource report of the kernel (or why there is none; device functions have none)."""
    fn = ctx.function
    if not fn.is_kernel:
        return Unconfirmed(f"`{fn.name}` is not a kernel; its frame is part of each kernel that calls it")
    return kernel_resources(ctx.model, fn.name, f"sm_{ctx.target_sm}")


def _claim(array: str, kernel: str, built: KernelResources | Unconfirmed) -> str:
    """Return what the finding says about local memory: ptxas' figures, or that the claim is unconfirmed."""
    if isinstance(built, KernelResources):
        return (
            f"ptxas reports {built.stack_bytes} bytes of stack frame for `{kernel}` ({built.compiler}, {built.arch}), "
            f"so `{array}` lives in local memory"
        )
    return (
        f"registers cannot be indexed, so the compiler may keep `{array}` in local memory (unconfirmed: {built.reason})"
    )


def node_for_name(ctx: MatchContext, name: str) -> Node | None:
    """Return the initializer of a local defined once (to read its value), or None."""
    return single_definition(ctx.model, ctx.function, name)


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


@check("local_memory_confirmed")
def local_memory_confirmed(ctx: CheckContext) -> Verdict:
    """Hold when ptxas reports a stack frame (or spills) for the kernel: the array really lives in local memory."""
    built = ctx.fact("build")
    kernel = ctx.function.name
    if isinstance(built, KernelResources):
        if built.uses_local_memory:
            return holds(f"ptxas reports {built.describe()} for `{kernel}`")
        return violated(
            f"ptxas reports no stack frame and no spills for `{kernel}` ({built.describe()}): the compiler keeps "
            f"`{ctx.fact('array')}` in registers already"
        )
    reason = built.reason if isinstance(built, Unconfirmed) else "no build"
    return unknown(f"no build confirms local memory ({reason})")


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
    unread = [lp for lp in loops if lp.trip_count is None]
    if unread:
        return unknown(f"the trip count of {loop_label(unread[0])} is a compile-time constant this file does not give")
    trips = ", ".join(f"{loop_label(lp)}: {lp.trip_count}" for lp in loops)
    return holds(f"full unrolling stays small ({trips} iterations)")


def unroll_indexing_loops(ctx: RewriteContext) -> list[Edit] | None:
    """Put `#pragma unroll` before each constant-trip loop whose variable indexes the per-thread array, so every
    index becomes a constant and the array can live in registers."""
    if ctx.fact("runtime"):
        return None
    edits: list[Edit] = []
    for loop_id in ctx.fact("loops", ()):
        loop = ctx.function.loops[loop_id]
        span = ctx.abs(loop.span)
        if loop.unroll is not None or not _own_line(ctx, span[0]) or not _in_block(ctx, span):
            return None
        line = ctx.line_start(span[0])
        edits.append(Edit(line, line, f"{ctx.indent_at(span[0])}#pragma unroll\n"))
    return edits or None
