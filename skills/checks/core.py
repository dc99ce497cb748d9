"""Checks of the core cards (math intrinsics, literals, unrolling, bank conflicts, `__restrict__`, hoisting)."""

from __future__ import annotations

import re

from warpwise.analyzers.model import AccessKind, MemorySpace
from warpwise.skills.facts import global_stores_in, identifier_uses, is_written, launch_args_for
from warpwise.skills.regions import CheckContext, Verdict, check, holds, unknown, violated

_FLOAT_TYPES = {"float", "half", "__half", "__nv_bfloat16", "nv_bfloat16", "float2", "float4"}
_DOUBLE_TYPES = {"double", "long double", "double2", "double4"}


def _base_type(type_text: str) -> str:
    t = type_text.replace("const", " ").replace("__restrict__", " ").replace("&", " ")
    t = re.sub(r"\[.*?\]", " ", t)
    return " ".join(t.replace("*", " ").split())


@check("operand_is_single_precision")
def operand_is_single_precision(ctx: CheckContext) -> Verdict:
    """Hold when every variable in the literal's other operand is single (or half) precision."""
    operand = ctx.fact("operand", "")
    names = set(re.findall(r"(?<![\w.])[A-Za-z_]\w*", operand))
    types: dict[str, str] = {}
    for name in names:
        p = ctx.function.param(name)
        if p is not None:
            types[name] = _base_type(p.type)
        elif name in ctx.function.locals:
            types[name] = _base_type(ctx.function.locals[name])
    doubles = sorted(n for n, t in types.items() if t in _DOUBLE_TYPES)
    if doubles:
        return violated(f"`{doubles[0]}` is `double`, so double arithmetic is intended")
    floats = sorted(n for n, t in types.items() if t in _FLOAT_TYPES)
    if floats:
        return holds(
            f"`{floats[0]}` is `{types[floats[0]]}`, so the double literal promotes float arithmetic to double"
        )
    if not names:
        return unknown("the other operand has no variable whose type is known")
    return unknown(f"the type of `{operand}` is not known here")


@check("shared_last_dim_constant")
def shared_last_dim_constant(ctx: CheckContext) -> Verdict:
    """Hold when the shared array has two or more dimensions and a constant last dimension."""
    arr = ctx.fact("shared")
    if arr is None:
        return unknown(f"the declaration of `{ctx.fact('array')}` was not found")
    if len(arr.dims) < 2:
        return violated(f"`{arr.name}` is one-dimensional; padding a row does not change its bank mapping")
    if arr.dim_values[-1] is None:
        return unknown(f"the last dimension of `{arr.name}` (`{arr.dims[-1]}`) is not a known constant")
    return holds(f"`{arr.name}` is declared `[{']['.join(arr.dims)}]` with a constant row length {arr.dim_values[-1]}")


@check("shared_only_subscripted")
def shared_only_subscripted(ctx: CheckContext) -> Verdict:
    """Hold when every use of the shared array is a full subscript (no pointer arithmetic or reinterpretation)."""
    arr = ctx.fact("shared")
    if arr is None:
        return unknown("the declaration was not found")
    accesses = [a for a in ctx.function.accesses if a.base == arr.name]
    uses = identifier_uses(ctx.model, ctx.function, arr.name)
    escaped = [a for a in accesses if a.kind is AccessKind.ADDRESS]
    if escaped:
        return violated(
            f"`&{escaped[0].array}[{']['.join(escaped[0].indices)}]` takes an address into `{arr.name}`; "
            "code that walks that pointer would see the padding"
        )
    partial = [a for a in accesses if len(a.indices) != len(arr.dims) or a.array != arr.name]
    if partial:
        return violated(f"`{partial[0].array}[{partial[0].index}]` does not index every dimension of `{arr.name}`")
    if uses == len(accesses) + 1:
        return holds(f"all {len(accesses)} uses of `{arr.name}` index it as `{arr.name}[..][..]`")
    return violated(
        f"`{arr.name}` is used {uses - 1 - len(accesses)} time(s) other than by subscript (e.g. as a "
        "pointer); padding would change what those uses see"
    )


@check("shared_padding_fits")
def shared_padding_fits(ctx: CheckContext, limit_bytes: int = 48 * 1024) -> Verdict:
    """Hold when the kernel's static shared memory still fits the static limit after padding."""
    arr = ctx.fact("shared")
    if arr is None or arr.element_bytes is None or any(v is None for v in arr.dim_values):
        return unknown("the array's size is not known")
    rows = 1
    for v in arr.dim_values[:-1]:
        rows *= v or 0
    extra = rows * arr.element_bytes
    sizes = [s.size_bytes for s in ctx.function.shared if not s.is_extern]
    if any(s is None for s in sizes):
        return unknown("the size of another shared array is not known")
    total = sum(s or 0 for s in sizes) + extra
    if total <= limit_bytes:
        return holds(f"static shared memory grows by {extra} bytes to {total} bytes (limit {limit_bytes})")
    return violated(f"padding needs {total} bytes of static shared memory, over the {limit_bytes}-byte limit")


@check("loaded_value_is_stable")
def loaded_value_is_stable(ctx: CheckContext) -> Verdict:
    """Hold when nothing can change the loaded value while the loop runs."""
    acc = ctx.fact("access")
    loop = ctx.fact("loop")
    fn = ctx.function
    if is_written(fn, acc.base):
        return violated(f"the kernel writes through `{acc.base}`, so the value can change between iterations")
    param = fn.param(acc.base)
    stores = [
        a
        for a in fn.accesses
        if a.kind in (AccessKind.WRITE, AccessKind.READ_WRITE, AccessKind.ATOMIC)
        and a.space in (MemorySpace.GLOBAL, MemorySpace.UNKNOWN)
    ]
    if param is not None and param.is_restrict:
        return holds(f"`{acc.base}` is `__restrict__` and never written by the kernel")
    if not stores:
        return holds("the kernel stores to no global memory")
    written = sorted({a.base for a in stores if fn.param(a.base) is not None})
    mine = launch_args_for(ctx.model, fn, acc.base)
    if mine is not None and written and len(written) == len({a.base for a in stores}):
        theirs = {w: launch_args_for(ctx.model, fn, w) for w in written}
        if all(v is not None for v in theirs.values()):
            plain = all(all(part.isidentifier() for part in t.replace("->", ".").split(".")) for t in mine)
            clash = [
                w
                for w, args in theirs.items()
                if args is not None and any(a == b for a, b in zip(mine, args, strict=True))
            ]
            if plain and not clash:
                n = len(mine)
                return holds(
                    f"`{acc.base}` is never written, and {'the launch' if n == 1 else f'all {n} launches'} "
                    f"in this file pass{'es' if n == 1 else ''} a buffer distinct from "
                    f"{', '.join(f'`{w}`' for w in written)}"
                )
            if clash:
                return violated(
                    f"a launch passes the same buffer for `{acc.base}` and `{clash[0]}`, which the kernel writes"
                )
    in_loop = global_stores_in(fn, loop.span)
    target = (in_loop or stores)[0].base
    return unknown(f"`{target}` could alias `{acc.base}` (no launch in this file shows the buffers are distinct)")


@check("load_runs_every_iteration")
def load_runs_every_iteration(ctx: CheckContext) -> Verdict:
    """Hold when the load runs unconditionally in a loop that runs at least once (hoisting adds no new read)."""
    acc = ctx.fact("access")
    loop = ctx.fact("loop")
    fn = ctx.function
    lo = loop.body_span[0]
    guarded = [b for b in fn.branches if lo <= b.span[0] and b.span[0] <= acc.span[0] < b.span[1]]
    if guarded:
        return violated(
            f"`{acc.base}[{acc.index}]` is read only when `{guarded[0].condition}`; hoisting it would "
            "read it unconditionally"
        )
    if loop.trip_count is not None and loop.trip_count >= 1:
        return holds(f"the load runs on every one of the loop's {loop.trip_count} iterations")
    return unknown(
        f"if the loop over `{loop.var}` runs zero times, the hoisted load reads `{acc.base}[{acc.index}]` "
        "where the original did not"
    )


@check("is_float_math_call")
def is_float_math_call(ctx: CheckContext) -> Verdict:
    """Hold when the call is the single-precision variant of a math function."""
    name = ctx.fact("name", "")
    if name.endswith("f") and not name.startswith("__"):
        return holds(f"`{name}` is the float variant")
    return violated(f"`{name}` is not a single-precision math function")


@check("barrier_condition_is_thread_dependent")
def barrier_condition_is_thread_dependent(ctx: CheckContext) -> Verdict:
    """Hold when the condition guarding (or skipping) the barrier depends on the thread index."""
    guard = ctx.fact("guard")
    if guard is None:
        return violated("the barrier is not under a condition")
    return holds(f"`{guard}` depends on `threadIdx` (directly or through the values it computes)")
