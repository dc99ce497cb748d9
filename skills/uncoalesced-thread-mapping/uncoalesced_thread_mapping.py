"""Rules of the `uncoalesced-thread-mapping` card (Map threadIdx.x to the contiguous index): what only this card
uses.

Registered here: matcher `swappable_thread_mapping`, check `no_warp_level_code`, check `mirrored_grid_fits`, check
`swap_keeps_accesses_coalesced`. The card's rewrite and the recognisers only it needs live here too; what several
cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library
imports this file by path as `warpwise.skills.cards.uncoalesced_thread_mapping`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.facts import tree_of
from warpwise.analyzers.facts_memory import (
    binary_parts,
    builtin_axis,
    const_value,
    kernel_syntax,
    lane_class,
    launch_syntax,
    launches_of,
    linear,
    squash,
    unparen,
)
from warpwise.analyzers.model import AccessKind, AccessPattern, FunctionKind, MemorySpace
from warpwise.skills.checks.memory import _WARP_CALLS, _ks
from warpwise.skills.matchers.memory import _index_node, _related_launches, index_form
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
from warpwise.skills.rewrites.memory import _ks as _rewrites_ks


def _is_strided_copy(model: Any, fn: Any) -> bool:
    """Whether the kernel is a strided copy (a transpose) in any index form, as `strided-transpose-access` reads it.

    Swapping x and y on a transpose only moves the stride from one side to the other; that card's tile is the fix.
    The recogniser is the other card's, looked up through the library (cards never import each other).
    """
    from warpwise.skills.library import builtin_library

    card = builtin_library().get("strided-transpose-access")
    recognise = getattr(getattr(card, "rules", None), "recognise_transpose", None)
    if recognise is None:
        return False
    return recognise(model, fn)[0] is not None


@matcher("swappable_thread_mapping")
def swappable_thread_mapping(ctx: MatchContext) -> Iterator[Region]:
    """Find strided global accesses of 2-D kernels that become contiguous or uniform when x and y are swapped."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    strided = [a for a in fn.accesses if a.space is MemorySpace.GLOBAL and a.pattern is AccessPattern.STRIDED]
    if not strided or b"threadIdx.y" not in ctx.model.text[fn.base : fn.base + fn.length]:
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None or _is_strided_copy(ctx.model, fn):
        return
    xvars = [v.name for v in ks.index_vars.values() if v.index.axis == "x"]
    yvars = [v.name for v in ks.index_vars.values() if v.index.axis == "y"]
    for acc in strided:
        form = index_form(ks, fn, acc)
        before, after = lane_class(form, "tid.x"), lane_class(form, "tid.y")
        if before != "strided" or after not in ("contiguous", "uniform") or form is None:
            continue
        verb = {AccessKind.READ: "read", AccessKind.WRITE: "written"}.get(acc.kind, "accessed")
        xname = next((v for v in xvars if v in acc.index_names), xvars[0] if xvars else "threadIdx.x")
        yname = next((v for v in yvars if v in acc.index_names), yvars[0] if yvars else "threadIdx.y")
        yield Region(
            AnchorKind.ACCESS,
            fn,
            acc.span,
            f"mapping:{acc.base}:{acc.span[0]}",
            {
                "kernel": fn.name,
                "access": acc,
                "subscript": f"{acc.base}[{acc.index}]",
                "array": acc.base,
                "verb": verb,
                "stride": str(form["tid.x"]),
                "xvar": xname,
                "yvar": yname,
                "after": "contiguous" if after == "contiguous" else "the same element for the whole warp (a broadcast)",
                "_related": _related_launches(ctx.model, fn),
            },
        )


@check("no_warp_level_code")
def no_warp_level_code(ctx: CheckContext) -> Verdict:
    """Hold when nothing in the kernel depends on which threads share a warp."""
    fn = ctx.function
    for c in fn.calls:
        if c.category == "warp" or _WARP_CALLS.match(c.name):
            return violated(f"`{c.name}` works on warps; swapping x and y changes which threads share a warp")
    text = ctx.model.text[fn.base : fn.base + fn.length].decode("utf-8", "replace")
    m = re.search(r"threadIdx\.x\s*(%\s*(32|warpSize)|&\s*31)|\bwarpSize\b|\blaneid\b", text)
    if m is not None:
        return violated(f"`{m.group(0)}` computes a lane number, which changes when x and y are swapped")
    user = [c for c in fn.calls if c.category == "call"]
    if user:
        return unknown(f"`{fn.name}` calls `{user[0].name}`, which may use warp-level operations")
    return holds(f"`{fn.name}` uses no warp-level operations or lane numbers")


@check("mirrored_grid_fits")
def mirrored_grid_fits(ctx: CheckContext) -> Verdict:
    """Hold when, after swapping, every grid's y dimension (the old x) stays within 65535 blocks."""
    fn = ctx.function
    launches = launches_of(ctx.model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file")
    for host, launch in launches:
        if launch.grid_value is None:
            return unknown(
                f"the grid `{launch.grid}` in `{host.name}` is not a constant; its x dimension becomes y, which is "
                "limited to 65535"
            )
        if launch.grid_value[0] > 65535:
            return violated(
                f"the grid in `{host.name}` has {launch.grid_value[0]} blocks along x; y is limited to 65535"
            )
    return holds("every grid's x dimension is at most 65535, the limit it has as y")


def _class_along(ks: Any, node: Any, lane: str, depth: int = 0) -> str:
    """Classify how an index varies along one thread axis when it is not one linear form: sums of terms, and a term
    divided by a positive constant (`row * cols / 4 + col`, the float4 index of a row-major matrix). A quotient
    whose dividend does not depend on the axis is uniform along it; one whose stride along it is symbolic
    (`row * cols / 4`: `cols / 4` elements per step) is strided, as a symbolic stride is for a linear form."""
    node = unparen(node)
    if node is None or depth > 12:
        return "unknown"
    form = linear(ks, node)
    if form is not None:
        return lane_class(form, lane)
    parts = binary_parts(node)
    if parts is None:
        return "unknown"
    left, op, right = parts
    if op in ("+", "-"):
        classes = {_class_along(ks, left, lane, depth + 1), _class_along(ks, right, lane, depth + 1)}
        for c in ("unknown", "strided"):
            if c in classes:
                return c
        return "contiguous" if "contiguous" in classes else "uniform"
    divisor = const_value(ks.model, right) if op in ("/", ">>") else None
    if divisor is None or divisor <= 0:
        return "unknown"
    dividend = linear(ks, left)
    if dividend is None:
        return "unknown"
    step = dividend.get(lane)
    if step is None:
        return "uniform"
    return "strided" if isinstance(step, str) else "unknown"


@check("swap_keeps_accesses_coalesced")
def swap_keeps_accesses_coalesced(ctx: CheckContext) -> Verdict:
    """Hold when, after swapping x and y, no global access of the kernel is strided along `threadIdx.x`."""
    fn = ctx.function
    ks = _ks(ctx)
    for a in fn.accesses:
        if a.space is not MemorySpace.GLOBAL:
            continue
        form = index_form(ks, fn, a)
        if form is None:
            if a.pattern.value in ("uniform",):
                continue
            node = _index_node(ks, fn, a) if len(a.indices) == 1 else None
            if node is not None and _class_along(ks, node, "tid.y") == "strided":
                return violated(
                    f"`{a.base}[{a.index}]` would become strided along `threadIdx.x` after the swap: a transpose, "
                    "which needs a shared-memory tile instead"
                )
            return unknown(f"how `{a.base}[{a.index}]` varies along `threadIdx.y` is not known")
        after = lane_class(form, "tid.y")
        if after == "strided":
            return violated(
                f"`{a.base}[{a.index}]` is contiguous now and would become strided: a transpose, which needs a "
                "shared-memory tile instead"
            )
    return holds("after the swap every global access is contiguous or the same for the whole warp")


def _dim3_args(ctx: RewriteContext, host: Any, node: Any, kernel: str) -> tuple[Any, Any] | None:
    """Return (node to edit, its argument list or None for a scalar) for a launch's grid or block expression."""
    node = unparen(node)
    if node.type == "call_expression":
        fn = node.child_by_field_name("function")
        if fn is not None and ctx.text((fn.start_byte, fn.end_byte)) == "dim3":
            return node, node.child_by_field_name("arguments")
        return None
    if node.type in ("compound_literal_expression", "initializer_list"):
        return None
    if node.type != "identifier":
        return node, None
    name = ctx.text((node.start_byte, node.end_byte))
    htext = ctx.text(host.extent)
    if re.search(rf"\b{re.escape(name)}\s*(\.\s*[xyz]\s*)?(=[^=]|\+=|-=|\*=|/=)", htext):
        return None
    for other_host, launch in ctx.model.launches:
        if (
            other_host.name == host.name
            and launch.kernel != kernel
            and name in (launch.grid.strip(), launch.block.strip())
        ):
            return None
    hnode = tree_of(ctx.model).root_node.descendant_for_byte_range(*host.extent)
    while hnode is not None and hnode.type != "function_definition":
        hnode = hnode.parent
    if hnode is None:
        return None
    stack = [hnode]
    while stack:
        n = stack.pop()
        if n.type == "init_declarator":
            d = n.child_by_field_name("declarator")
            if d is not None and ctx.text((d.start_byte, d.end_byte)) == name:
                decl = n.parent
                tnode = decl.child_by_field_name("type") if decl is not None else None
                if tnode is None or ctx.text((tnode.start_byte, tnode.end_byte)) != "dim3":
                    return None
                value = n.child_by_field_name("value")
                if value is None:
                    return None
                if value.type == "argument_list":
                    return value, value
                if value.type == "initializer_list":
                    return value, value
                if value.type == "call_expression":
                    return _dim3_args(ctx, host, value, kernel)
                return None
        stack.extend(n.named_children)
    return None


def _mirror_args(ctx: RewriteContext, target: Any, args: Any) -> Edit | None:
    if args is None:
        text = ctx.text((target.start_byte, target.end_byte))
        return Edit(target.start_byte, target.end_byte, f"dim3(1, {text})")
    items = [c for c in args.named_children if c.type != "comment"]
    if len(items) == 1:
        a = items[0]
        return Edit(a.start_byte, a.start_byte, "1, ")
    if len(items) in (2, 3):
        a, b = items[0], items[1]
        ta, tb = ctx.text((a.start_byte, a.end_byte)), ctx.text((b.start_byte, b.end_byte))
        if squash(ta) == squash(tb):
            return Edit(a.start_byte, a.start_byte, "")
        return Edit(a.start_byte, b.end_byte, tb + ctx.text((a.end_byte, b.start_byte)) + ta)
    return None


def swap_thread_mapping(ctx: RewriteContext) -> list[Edit] | None:
    """Swap the x and y roles in the kernel (every builtin) and mirror the grid and block of every launch."""
    ks = _rewrites_ks(ctx)
    fn = ctx.function
    if ks is None:
        return None
    edits: list[Edit] = []
    stack = [ks.node]
    while stack:
        n = stack.pop()
        if n.type == "field_expression":
            axis = builtin_axis(ctx.model, n)
            if axis in ("x", "y"):
                fld = n.child_by_field_name("field")
                edits.append(Edit(fld.start_byte, fld.end_byte, "y" if axis == "x" else "x"))
            continue
        stack.extend(n.named_children)
    launches = launches_of(ctx.model, fn.name)
    if not launches:
        return None
    seen: set[tuple[int, int]] = set()
    for host, launch in launches:
        ls = launch_syntax(ctx.model, host, launch)
        if ls is None:
            return None
        for node in (ls.grid, ls.block):
            got = _dim3_args(ctx, host, node, fn.name)
            if got is None:
                return None
            target, args = got
            key = (target.start_byte, target.end_byte)
            if key in seen:
                continue
            seen.add(key)
            edit = _mirror_args(ctx, target, args)
            if edit is None:
                return None
            if edit.start != edit.end or edit.text:
                edits.append(edit)
    return edits
