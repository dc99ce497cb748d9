"""Rewrite helpers that several cards share: fresh names, re-indented and substituted statements, template
types, launch shrinking and the guard's bound. Each card's rewrite lives in its folder."""

from __future__ import annotations

import math
import re
from typing import Any

from warpwise.analyzers.facts_memory import (
    Elementwise,
    KernelSyntax,
    ceil_div,
    kernel_syntax,
    launch_arg,
    launch_syntax,
    launches_of,
    node_text,
    scaled_ceil_div,
    squash,
    unparen,
)
from warpwise.skills.rewrite import Edit, RewriteContext


def _ks(ctx: RewriteContext) -> KernelSyntax | None:
    return kernel_syntax(ctx.model, ctx.function)


def _fresh(ctx: RewriteContext, base: str) -> str:
    """Return `base`, or `base_`, `base__`..., whichever is not a name used in the function."""
    body = ctx.text(ctx.function.extent)
    name = base
    while re.search(rf"\b{re.escape(name)}\b", body):
        name += "_"
    return name


def _indent_more(text: str, extra: str) -> str:
    """Indent every line after the first of a text by `extra` (the first line is placed by the caller)."""
    return re.sub(r"\n(?=[^\n])", "\n" + extra, text)


def _substitute(ctx: RewriteContext, span: tuple[int, int], repl: list[tuple[tuple[int, int], str]]) -> str:
    """Return the text of an absolute span with some absolute sub-spans replaced."""
    out = []
    pos = span[0]
    for (s, e), text in sorted(repl):
        if s < pos or e > span[1]:
            raise ValueError("replacement outside the span")
        out.append(ctx.text((pos, s)))
        out.append(text)
        pos = e
    out.append(ctx.text((pos, span[1])))
    return "".join(out)


def _template_typed(ctx: RewriteContext, names: list[str]) -> bool:
    templ = {t.name for t in ctx.function.template_params}
    for n in names:
        p = ctx.function.param(n)
        if p is None or set(re.findall(r"\w+", p.type)) & templ or "volatile" in p.type:
            return True
    return False


def _drop_const(ctx: RewriteContext, decl: Any) -> list[Edit]:
    """Remove `const` from a declaration (the index gets a second assignment)."""
    type_node = decl.child_by_field_name("type")
    inner = list(type_node.children) if type_node is not None and type_node.type == "sized_type_specifier" else []
    for c in [*decl.children, *inner]:
        if c.type == "type_qualifier" and ctx.text((c.start_byte, c.end_byte)) == "const":
            end = c.end_byte
            while ctx.data[end : end + 1] in (b" ", b"\t"):
                end += 1
            return [Edit(c.start_byte, end, "")]
    return []


def _shrink_launches(ctx: RewriteContext, shape: Elementwise, factor: int) -> list[Edit]:
    """Divide the grid of every launch written `(n + B - 1) / B` by `factor` (others are left as they are)."""
    fn = ctx.function
    bound = node_text(ctx.model, shape.bound)
    if fn.param(bound) is None:
        return []
    edits = []
    for host, launch in launches_of(ctx.model, fn.name):
        if launch.block_value is not None and math.prod(launch.block_value) < 4:
            continue
        ls = launch_syntax(ctx.model, host, launch)
        cd = ceil_div(ctx.model, ls) if ls is not None else None
        arg = launch_arg(launch, fn, bound)
        if cd is None or arg is None or squash(cd.count) != squash(arg):
            continue
        edits.append(Edit(cd.node.start_byte, cd.node.end_byte, scaled_ceil_div(cd, factor)))
    return edits


def _bound_text(ctx: RewriteContext, shape: Elementwise) -> str:
    node = unparen(shape.bound)
    text = node_text(ctx.model, node)
    return text if node.type in ("identifier", "number_literal", "field_expression") else f"({text})"


# 10. synchronous-global-to-shared-copy
