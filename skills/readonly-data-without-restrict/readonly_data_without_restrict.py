"""Rules of the `readonly-data-without-restrict` card (Declare the read-only input const __restrict__): what only
this card uses.

Registered here: matcher `readonly_pointer_params`, check `readonly_buffer_distinct`, check `pointer_not_escaping`.
The card's rewrite and the recognisers only it needs live here too; what several cards share stays in the engine
modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.readonly_data_without_restrict`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.facts import distinct_launch_args, function_node, identifier_uses, is_written
from warpwise.analyzers.facts_memory import launches_of, node_text
from warpwise.analyzers.findings import Related
from warpwise.analyzers.model import AccessKind, FunctionKind, MemorySpace
from warpwise.skills.checks.memory import _ks
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
from warpwise.skills.spec_launch import is_spec_launch


@matcher("readonly_pointer_params")
def readonly_pointer_params(ctx: MatchContext) -> Iterator[Region]:
    """Find pointer parameters a kernel only reads that are not `const __restrict__` (and not read with `__ldg`)."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    for p in fn.params:
        if not p.is_pointer or p.is_reference or p.pointer_depth != 1 or (p.is_const and p.is_restrict):
            continue
        reads = [
            a for a in fn.accesses if a.base == p.name and a.space is MemorySpace.GLOBAL and a.kind is AccessKind.READ
        ]
        if not reads or is_written(fn, p.name) or all(a.via_ldg for a in reads):
            continue
        if written_through_call(ctx.model, fn, p.name) is not None:
            continue  # `VIEW(p[i]) = v`: written through a macro or function the model cannot see into
        missing = [q for q, ok in (("const", p.is_const), ("__restrict__", p.is_restrict)) if not ok]
        yield Region(
            AnchorKind.PARAM,
            fn,
            p.span,
            f"readonly:{p.name}",
            {
                "kernel": fn.name,
                "param": p,
                "name": p.name,
                "missing": " and ".join(f"`{m}`" for m in missing),
                "reads": len(reads),
                "_related": tuple(
                    Related(f"launched here with `{', '.join(launch.args)}`", host.span(launch.span))
                    for host, launch in launches_of(ctx.model, fn.name)[:5]
                    if not is_spec_launch(launch)
                ),
            },
        )


@check("readonly_buffer_distinct")
def readonly_buffer_distinct(ctx: CheckContext) -> Verdict:
    """Hold when no buffer the kernel writes can be the one this read-only pointer points to."""
    fn = ctx.function
    name = ctx.fact("name")
    written = sorted({a.base for a in fn.accesses if a.kind is not AccessKind.READ and a.space is MemorySpace.GLOBAL})
    written_params = [fn.param(w) for w in written if fn.param(w) is not None]
    if not written:
        return holds(f"`{fn.name}` writes no global memory, so nothing can change what `{name}` points to")
    if len(written_params) != len(written):
        other = next(w for w in written if fn.param(w) is None)
        return unknown(f"`{fn.name}` writes `{other}`, which is not a parameter; it could overlap `{name}`")
    mine = fn.param(name)
    assert mine is not None
    ok, reason = distinct_launch_args(ctx.model, fn, [mine, *[p for p in written_params if p is not None]])
    if ok is None:
        return unknown(f"`{name}` could overlap {', '.join(f'`{w}`' for w in written)}: {reason}")
    if ok:
        return holds(f"`{name}` is never written, and {reason}")
    return violated(f"a launch passes one buffer for `{name}` and a pointer the kernel writes: {reason}")


@check("pointer_not_escaping")
def pointer_not_escaping(ctx: CheckContext) -> Verdict:
    """Hold when the pointer is only subscripted or dereferenced, so adding `const` keeps the kernel compiling."""
    fn = ctx.function
    p = ctx.fact("param")
    accesses = [a for a in fn.accesses if a.base == p.name]
    direct = [a for a in accesses if a.array == p.name or a.array.startswith(f"{p.name}[")]
    mutable_view = next((a for a in accesses if a.view_macro and not (a.view_type or "").startswith("const ")), None)
    if mutable_view is not None and not p.is_const:
        return violated(
            f"`{p.name}` is read through `{mutable_view.view_macro}`, which casts its address to a non-const "
            f"`{mutable_view.view_type} *`: with `{p.name}` `const` the cast would not compile"
        )
    uses = identifier_uses(ctx.model, fn, p.name) - 1
    written = _element_passed_by_reference(ctx, p.name)
    if written is not None:
        return violated(written)
    if uses == len(direct):
        return holds(f"`{p.name}` is only read through `{p.name}[...]`")
    if p.is_const:
        return holds(f"`{p.name}` is already `const`; only `__restrict__` is added")
    node = function_node(ctx.model, fn)
    body = node.child_by_field_name("body") if node is not None else None
    ks = _ks(ctx)
    for ident in ks.identifiers(body, p.name) if body is not None else []:
        parent, child = ident.parent, ident
        # Pointer arithmetic keeps the pointer's type: `float* q = p + offset;` drops `const` as `float* q = p;`.
        while parent is not None and (
            parent.type == "parenthesized_expression"
            or (
                parent.type == "binary_expression"
                and node_text(ctx.model, parent.child_by_field_name("operator")) in ("+", "-")
            )
            or (parent.type == "conditional_expression" and parent.child_by_field_name("condition") != child)
        ):
            parent, child = parent.parent, parent
        if parent is not None and parent.type == "assignment_expression":
            left = parent.child_by_field_name("left")
            if left is not None and not (left.start_byte <= ident.start_byte < left.end_byte):
                return violated(f"`{p.name}` is assigned to `{node_text(ctx.model, left)}`, which would drop `const`")
        if parent is not None and parent.type == "return_statement":
            return violated(f"`{p.name}` is returned, which would drop `const`")
        if parent is not None and parent.type == "argument_list":
            call = parent.parent
            callee = node_text(ctx.model, call.child_by_field_name("function")) if call is not None else "a function"
            return violated(f"`{p.name}` is passed to `{callee}`; a `const` pointer may not convert to its parameter")
        if parent is not None and parent.type == "init_declarator":
            return violated(f"`{p.name}` initializes `{node_text(ctx.model, parent)}`, which would drop `const`")
    return unknown(f"`{p.name}` is used {uses - len(direct)} time(s) other than by subscript")


_CHAIN = frozenset(
    {
        "subscript_expression",
        "parenthesized_expression",
        "pointer_expression",
        "argument_list",
        "call_expression",
        "field_expression",
        "cast_expression",
    }
)
"""The syntax between a pointer and the value it is part of, when that value is `MACRO(p[i])` or `f(&p[i])[0]`."""


def written_through_call(model: Any, fn: Any, name: str) -> str | None:
    """Return the callee through whose result `name` is assigned (`LDST128BITS(p[i]) = v`, `VIEW(&p[i])[0] += v`),
    or None.

    A function-like macro from a header the model does not read (`#define LDST128BITS(x) (reinterpret_cast<float4
    *>(&(x))[0])`) looks like a call that reads `p[i]`; when the call's value is what an assignment or increment
    changes, `p` is written and may not become `const`.
    """
    node = function_node(model, fn)
    body = node.child_by_field_name("body") if node is not None else None
    stack = [body] if body is not None else []
    while stack:
        n = stack.pop()
        stack.extend(n.children)
        if n.type != "identifier" or node_text(model, n) != name:
            continue
        top, call = n, None
        while top.parent is not None and top.parent.type in _CHAIN:
            top = top.parent
            if top.type == "call_expression":
                call = top
        parent = top.parent
        if call is None or parent is None:
            continue
        left = parent.child_by_field_name("left") if parent.type == "assignment_expression" else None
        changed = (left is not None and (left.start_byte, left.end_byte) == (top.start_byte, top.end_byte)) or (
            parent.type == "update_expression"
        )
        if changed:
            return node_text(model, call.child_by_field_name("function"))
    return None


def _element_passed_by_reference(ctx: CheckContext, name: str) -> str | None:
    """Return why an element `name[...]` may be written by a function of this file it is passed to, or None.

    `convert(x, p[j])` with `convert(float, T& out)` writes `p[j]` although the kernel never assigns it; declaring
    `p` const would break the build.
    """
    fn = ctx.function
    node = function_node(ctx.model, fn)
    body = node.child_by_field_name("body") if node is not None else None
    if body is None:
        return None
    by_name: dict[str, list[Any]] = {}
    for other in ctx.model.functions:
        by_name.setdefault(other.name, []).append(other)
    for ident in _ks(ctx).identifiers(body, name):
        sub = ident.parent
        if sub is None or sub.type != "subscript_expression" or sub.child_by_field_name("argument") != ident:
            continue
        arg = sub
        while arg.parent is not None and arg.parent.type == "parenthesized_expression":
            arg = arg.parent
        args = arg.parent
        if args is None or args.type != "argument_list" or args.parent is None:
            continue
        callee = node_text(ctx.model, args.parent.child_by_field_name("function")).rsplit("::", 1)[-1].split("<")[0]
        index = [c for c in args.named_children if c.type != "comment"].index(arg)
        for target in by_name.get(callee.strip(), []):
            params = target.params
            if index < len(params) and params[index].is_reference and not params[index].is_const:
                return f"`{name}[...]` is passed to `{callee}`, which takes it by reference and may write it"
    return None


def const_restrict_param(ctx: RewriteContext) -> list[Edit] | None:
    """Declare a read-only pointer parameter `const T* __restrict__`."""
    p = ctx.fact("param")
    start, end = ctx.abs(p.span)
    text = ctx.data[start:end]
    star = text.rfind(b"*")
    if star < 0 or text.count(b"*") != 1:
        return None
    edits = []
    if not p.is_const:
        edits.append(Edit(start, start, "const "))
    if not p.is_restrict:
        at = start + star + 1
        if ctx.data[at : at + 1] in (b" ", b"\t"):
            edits.append(Edit(at + 1, at + 1, "__restrict__ "))
        else:
            edits.append(Edit(at, at, " __restrict__ " if star == 0 else "__restrict__ "))
    return edits or None
