"""Rewrites of the core cards. Each returns edits that keep the user's names and formatting, or None when the
code is outside what the rewrite handles exactly."""

from __future__ import annotations

from warpwise.skills.rewrite import Edit, RewriteContext


def fast_math_intrinsic(ctx: RewriteContext) -> list[Edit] | None:
    """Replace a math call's name by its fast intrinsic (`expf(x)` -> `__expf(x)`)."""
    call = ctx.node(ctx.region.abs_span, "call_expression")
    fn = call.child_by_field_name("function") if call is not None else None
    if fn is None or fn.type != "identifier" or ctx.text((fn.start_byte, fn.end_byte)) != ctx.fact("name"):
        return None
    return [Edit(fn.start_byte, fn.end_byte, ctx.fact("fast"))]


def float_literal(ctx: RewriteContext) -> list[Edit] | None:
    """Give a double literal the `f` suffix (`0.5` -> `0.5f`)."""
    start, end = ctx.region.abs_span
    if ctx.text((start, end)) != ctx.fact("literal"):
        return None
    return [Edit(end, end, "f")]


def pragma_unroll(ctx: RewriteContext) -> list[Edit] | None:
    """Insert `#pragma unroll` on its own line before a loop."""
    start = ctx.region.abs_span[0]
    line = ctx.line_start(start)
    if ctx.data[line:start].strip():
        return None
    return [Edit(line, line, f"{ctx.indent_at(start)}#pragma unroll\n")]


def pad_shared_array(ctx: RewriteContext) -> list[Edit] | None:
    """Add one element to the last dimension of a shared array (`[32][32]` -> `[32][33]`)."""
    arr = ctx.fact("shared")
    if arr is None:
        return None
    decl = ctx.node(ctx.abs(arr.name_span), "array_declarator")
    if decl is None:
        return None
    # The outermost array_declarator holds the last dimension.
    while decl.parent is not None and decl.parent.type == "array_declarator":
        decl = decl.parent
    size = decl.child_by_field_name("size")
    if size is None:
        return None
    if size.type == "number_literal" and ctx.text((size.start_byte, size.end_byte)).isdigit():
        value = int(ctx.text((size.start_byte, size.end_byte)))
        return [Edit(size.start_byte, size.end_byte, str(value + 1))]
    wrapped = size.type in ("identifier", "parenthesized_expression", "call_expression")
    text = ctx.text((size.start_byte, size.end_byte))
    return [Edit(size.start_byte, size.end_byte, f"{text} + 1" if wrapped else f"({text}) + 1")]


def add_restrict(ctx: RewriteContext) -> list[Edit] | None:
    """Qualify each listed pointer parameter `__restrict__` (`const float* x` -> `const float* __restrict__ x`)."""
    edits: list[Edit] = []
    for name in ctx.fact("params", []):
        param = ctx.function.param(name)
        if param is None:
            return None
        start, end = ctx.abs(param.span)
        text = ctx.data[start:end]
        star = text.rfind(b"*")
        if star < 0:
            return None
        at = start + star + 1
        if ctx.data[at : at + 1] in (b" ", b"\t"):
            edits.append(Edit(at + 1, at + 1, "__restrict__ "))
        else:
            edits.append(Edit(at, at, "__restrict__ "))
    return edits or None


def hoist_loop_invariant_load(ctx: RewriteContext) -> list[Edit] | None:
    """Load a loop-invariant global value once before the loop and use the register inside it."""
    loop = ctx.fact("loop")
    acc = ctx.fact("access")
    name = ctx.fact("name")
    start = ctx.abs(loop.span)[0]
    line = ctx.line_start(start)
    if ctx.data[line:start].strip():
        return None
    elem = acc.element_type or "auto"
    indent = ctx.indent_at(start)
    edits = [Edit(line, line, f"{indent}const {elem} {name} = {ctx.fact('load')};\n")]
    for occ in ctx.fact("occurrences", ()):
        if occ.kind.value != "read":
            return None
        edits.append(Edit(*ctx.abs(occ.span), name))
    return edits
