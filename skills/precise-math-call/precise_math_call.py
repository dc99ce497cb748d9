"""Rules of the `precise-math-call` card (Use the fast math intrinsic): what only this card uses.

Registered here: matcher `math_calls_with_fast_intrinsic`, check `is_float_math_call`, check
`build_keeps_precise_math`. The card's rewrite and the
recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.precise_math_call`.
"""

from __future__ import annotations

from collections.abc import Iterator

from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import CheckContext, MatchContext, Region, Verdict, check, holds, matcher, violated
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.verify.project import fast_math_origin

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


@check("is_float_math_call")
def is_float_math_call(ctx: CheckContext) -> Verdict:
    """Hold when the call is the single-precision variant of a math function."""
    name = ctx.fact("name", "")
    if name.endswith("f") and not name.startswith("__"):
        return holds(f"`{name}` is the float variant")
    return violated(f"`{name}` is not a single-precision math function")


@check("build_keeps_precise_math")
def build_keeps_precise_math(ctx: CheckContext) -> Verdict:
    """Hold unless the file's build (project configuration, compile_commands.json) uses fast math, which already
    compiles every such call to its intrinsic: the rewrite then changes nothing."""
    name, fast = ctx.fact("name", ""), ctx.fact("fast", "")
    origin = fast_math_origin(ctx.model.path) if ctx.model.path else None
    if origin is not None:
        return violated(f"the build uses fast math ({origin}), which already compiles `{name}` to `{fast}`")
    if not ctx.model.path:
        return holds(f"no build flags for this text: nvcc's default keeps `{name}` precise")
    return holds(f"the project's flags for this file do not ask for fast math, so `{name}` stays precise")


def fast_math_intrinsic(ctx: RewriteContext) -> list[Edit] | None:
    """Replace a math call's name by its fast intrinsic (`expf(x)` -> `__expf(x)`)."""
    call = ctx.node(ctx.region.abs_span, "call_expression")
    fn = call.child_by_field_name("function") if call is not None else None
    if fn is None or fn.type != "identifier" or ctx.text((fn.start_byte, fn.end_byte)) != ctx.fact("name"):
        return None
    return [Edit(fn.start_byte, fn.end_byte, ctx.fact("fast"))]
