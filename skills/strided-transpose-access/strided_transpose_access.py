"""Rules of the `strided-transpose-access` card (Stage the transpose through a padded shared tile): what only this
card uses.

Registered here: matcher `transposed_global_copies`. The card's rewrite and the recognisers only it needs live here
too; what several cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`,
`.facts*`). The library imports this file by path as `warpwise.skills.cards.strided_transpose_access`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.facts_memory import KernelSyntax, builtin_axis, kernel_syntax, lane_class, squash
from warpwise.analyzers.model import Access, AccessKind, AccessPattern, FileModel, Function, FunctionKind, MemorySpace
from warpwise.skills.matchers.memory import _within, index_form
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.skills.rewrites.memory import _fresh, _ks, _only_statement, _substitute, _template_typed, _tile_size


@dataclass(frozen=True)
class TransposePair:
    """A global store whose value is a global load of the transposed element."""

    write: Access
    read: Access
    strided: Access
    assignment: Any


def transpose_pairs(ctx_model: FileModel, fn: Function, ks: KernelSyntax) -> list[TransposePair]:
    """Return `dst[...] = src[...]` pairs where one side is contiguous along x and the other along y."""
    out = []
    for w in fn.accesses:
        if w.space is not MemorySpace.GLOBAL or w.kind is not AccessKind.WRITE:
            continue
        node = ks.node.descendant_for_byte_range(*fn.span(w.span))
        parent = node.parent if node is not None else None
        while parent is not None and parent.type in ("parenthesized_expression",):
            parent = parent.parent
        if parent is None or parent.type != "assignment_expression":
            continue
        right = parent.child_by_field_name("right")
        if right is None:
            continue
        wf = index_form(ks, fn, w)
        for r in fn.accesses:
            if r.space is not MemorySpace.GLOBAL or r.kind is not AccessKind.READ or not _within(r.span, right, fn):
                continue
            rf = index_form(ks, fn, r)
            wx, wy, rx, ry = (
                lane_class(wf, "tid.x"),
                lane_class(wf, "tid.y"),
                lane_class(rf, "tid.x"),
                lane_class(rf, "tid.y"),
            )
            if (wx, wy, rx, ry) == ("strided", "contiguous", "contiguous", "strided"):
                out.append(TransposePair(w, r, w, parent))
            elif (wx, wy, rx, ry) == ("contiguous", "strided", "strided", "contiguous"):
                out.append(TransposePair(w, r, r, parent))
    return out


@matcher("transposed_global_copies")
def transposed_global_copies(ctx: MatchContext) -> Iterator[Region]:
    """Find transpose-like stores: one side walks rows along `threadIdx.x`, the other walks columns."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    if not any(a.space is MemorySpace.GLOBAL and a.pattern is AccessPattern.STRIDED for a in fn.accesses):
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    for pair in transpose_pairs(ctx.model, fn, ks):
        s = pair.strided
        other = pair.read if s is pair.write else pair.write
        yield Region(
            AnchorKind.ACCESS,
            fn,
            s.span,
            f"transpose:{s.base}:{s.span[0]}",
            {
                "kernel": fn.name,
                "pair": pair,
                "strided": f"{s.base}[{s.index}]",
                "contiguous": f"{other.base}[{other.index}]",
                "side": "written" if s is pair.write else "read",
                "other_side": "read" if s is pair.write else "written",
                "array": s.base,
            },
        )


def _swap_tid(ctx: RewriteContext, init: Any) -> str:
    """Return an index initializer with `threadIdx.x` and `threadIdx.y` exchanged."""
    repl = []
    stack = [init]
    while stack:
        n = stack.pop()
        if n.type == "field_expression" and builtin_axis(ctx.model, n, "threadIdx") in ("x", "y"):
            fld = n.child_by_field_name("field")
            axis = ctx.text((fld.start_byte, fld.end_byte))
            repl.append(((fld.start_byte, fld.end_byte), "y" if axis == "x" else "x"))
            continue
        stack.extend(n.named_children)
    return _substitute(ctx, (init.start_byte, init.end_byte), repl)


def tile_transpose(ctx: RewriteContext) -> list[Edit] | None:
    """Stage a naive transpose through a padded shared tile so that both the load and the store are contiguous."""
    ks = _ks(ctx)
    pair = ctx.fact("pair")
    fn = ctx.function
    if ks is None or len(ks.statements) != 3:
        return None
    d1, d2, stmt = ks.statements
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return None
    vars_ = [v for v in ks.index_vars.values() if v.decl in (d1, d2)]
    xs = [v for v in vars_ if v.index.axis == "x"]
    ys = [v for v in vars_ if v.index.axis == "y"]
    if len(xs) != 1 or len(ys) != 1:
        return None
    xv, yv = xs[0], ys[0]
    if (
        xv.is_const
        or yv.is_const
        or squash(xv.index.scale.replace("x", "_")) != squash(yv.index.scale.replace("y", "_"))
    ):
        return None
    tile = _tile_size(ctx, xv.index.scale, xv.index.scale_value)
    if tile is None or tile[1] * tile[1] > 1024:
        return None
    only = _only_statement(stmt.child_by_field_name("consequence"))
    if only is None or only.type != "expression_statement" or only.named_child_count != 1:
        return None
    assign = only.named_children[0]
    if assign != pair.assignment:
        return None
    left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    if (right.start_byte - fn.base, right.end_byte - fn.base) != pair.read.span:
        return None
    clause = stmt.child_by_field_name("condition")
    guard = clause.child_by_field_name("value") if clause is not None else None
    if guard is None:
        return None
    allowed = {xv.name, yv.name} | {p.name for p in fn.params} | set(ctx.model.constants)
    stack = [guard]
    while stack:
        n = stack.pop()
        if n.type in ("call_expression", "assignment_expression", "update_expression", "field_expression"):
            return None
        if n.type == "identifier" and ctx.text((n.start_byte, n.end_byte)) not in allowed:
            return None
        stack.extend(n.named_children)
    src = fn.param(pair.read.base)
    if src is None or _template_typed(ctx, [pair.read.base]):
        return None
    elem = src.base_type
    name = _fresh(ctx, "tile")
    t_text, t_value = tile
    dims = f"[{t_value}][{t_value + 1}]" if t_text.isdigit() else f"[{t_text}][{t_text} + 1]"
    ind = ctx.indent_at(stmt.start_byte)
    edits = [
        Edit(ctx.line_start(d1.start_byte), ctx.line_start(d1.start_byte), f"{ind}__shared__ {elem} {name}{dims};\n")
    ]
    span = (stmt.start_byte, stmt.end_byte)
    lspan = (left.start_byte, left.end_byte)
    rspan = (right.start_byte, right.end_byte)
    load = _substitute(ctx, span, [(lspan, f"{name}[threadIdx.y][threadIdx.x]")])
    store = _substitute(ctx, span, [(rspan, f"{name}[threadIdx.x][threadIdx.y]")])
    swapped = [f"{ind}{v.name} = {_swap_tid(ctx, v.init)};\n" for v in (xv, yv)]
    original = [f"{ind}{v.name} = {ctx.text((v.init.start_byte, v.init.end_byte))};\n" for v in (xv, yv)]
    if pair.strided is pair.write:
        middle = "".join(swapped)
    else:
        for v in (xv, yv):
            edits.append(Edit(v.init.start_byte, v.init.end_byte, _swap_tid(ctx, v.init)))
        middle = "".join(original)
    edits.append(Edit(span[0], span[1], f"{load}\n{ind}__syncthreads();\n{middle}{ind}{store}"))
    return edits
