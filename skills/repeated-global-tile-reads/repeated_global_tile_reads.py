"""Rules of the `repeated-global-tile-reads` card (Stage the re-read tile in shared memory): what only this card
uses.

Registered here: matcher `reused_global_reads_in_loop` and check `square_launch_block`. The card's rewrite and the
recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.repeated_global_tile_reads`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.facts import loop_label
from warpwise.analyzers.facts_memory import binary_parts, kernel_syntax, launches_of, squash, unparen
from warpwise.analyzers.findings import Related
from warpwise.analyzers.model import AccessKind, AccessPattern, FunctionKind, MemorySpace
from warpwise.skills.matchers.memory import index_form
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import CheckContext, MatchContext, Region, Verdict, check, holds, matcher, unknown
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.skills.rewrites.memory import _fresh, _ks, _substitute, _template_typed


@matcher("reused_global_reads_in_loop")
def reused_global_reads_in_loop(ctx: MatchContext) -> Iterator[Region]:
    """Find global loads in a loop that neighbouring threads repeat: a tile that shared memory could hold."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    cands = []
    for a in fn.accesses:
        if a.space is not MemorySpace.GLOBAL or a.kind is not AccessKind.READ or not a.loops or a.vector_cast:
            continue
        loop = fn.loops[a.loops[-1]]
        if (
            loop.var is None
            or loop.var not in a.index_names
            or a.pattern in (AccessPattern.INDIRECT, AccessPattern.UNKNOWN)
        ):
            continue
        cands.append((a, loop))
    if not cands:
        return
    two_d = b"threadIdx.y" in ctx.model.text[fn.base : fn.base + fn.length]
    if not two_d:
        # In a 1-D kernel only a stencil re-reads: a unit-step loop over a thread-contiguous index.
        cands = [(a, lp) for a, lp in cands if lp.step_value in (1, -1) and a.pattern is AccessPattern.CONTIGUOUS]
        if not cands:
            return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    axes = {v.index.axis for v in ks.index_vars.values()} if two_d else set()
    for acc, loop in cands:
        form = index_form(ks, fn, acc)
        if form is None or loop.var not in form:
            continue
        tids = [k for k in ("tid.x", "tid.y") if k in form]
        reason = None
        if len(tids) == 1 and {"x", "y"} <= axes:
            missing = "threadIdx.y" if tids[0] == "tid.x" else "threadIdx.x"
            reason = (
                f"every thread of the block with the same `{tids[0].replace('tid', 'threadIdx')}` reads the same "
                f"elements (the index does not depend on `{missing}`)"
            )
        elif loop.step_value in (1, -1) and any(form[t] == form[loop.var] for t in tids):
            reason = f"the thread next to each one reads the same element one iteration of `{loop.var}` later"
        if reason is None:
            continue
        yield Region(
            AnchorKind.ACCESS,
            fn,
            acc.span,
            f"tile:{acc.base}:{acc.span[0]}",
            {
                "kernel": fn.name,
                "access": acc,
                "load": f"{acc.base}[{acc.index}]",
                "array": acc.base,
                "loop": loop,
                "loop_label": loop_label(loop),
                "reason": reason,
                "_related": (Related(f"{loop_label(loop)} starts here", fn.span(loop.header_span)),),
            },
        )


def _terms(node: Any) -> list[Any]:
    """Return the operands of a chain of `+`."""
    node = unparen(node)
    parts = binary_parts(node)
    if parts is not None and parts[1] == "+":
        return _terms(parts[0]) + _terms(parts[2])
    return [node]


def _is_product(ctx: RewriteContext, node: Any, a: str, b: str) -> bool:
    parts = binary_parts(unparen(node))
    if parts is None or parts[1] != "*":
        return False
    x, y = (squash(ctx.text((n.start_byte, n.end_byte))) for n in (unparen(parts[0]), unparen(parts[2])))
    return {x, y} == {a, b} and a != b


def _is_name(ctx: RewriteContext, node: Any, name: str) -> bool:
    node = unparen(node)
    return node.type == "identifier" and ctx.text((node.start_byte, node.end_byte)) == name


def _sum_of(ctx: RewriteContext, node: Any, product: tuple[str, str], single: str) -> bool:
    terms = _terms(node)
    if len(terms) != 2:
        return False
    return any(
        _is_product(ctx, p, *product) and _is_name(ctx, s, single)
        for p, s in ((terms[0], terms[1]), (terms[1], terms[0]))
    )


def _zero(type_text: str) -> str:
    if type_text == "float":
        return "0.0f"
    if type_text == "double":
        return "0.0"
    if type_text in ("int", "long", "long long", "unsigned", "unsigned int", "short"):
        return "0"
    return f"{type_text}(0)"


def _less(ctx: RewriteContext, node: Any) -> tuple[str, str] | None:
    parts = binary_parts(unparen(node))
    if parts is None or parts[1] != "<":
        return None
    left, right = unparen(parts[0]), unparen(parts[2])
    if left.type != "identifier":
        return None
    return ctx.text((left.start_byte, left.end_byte)), ctx.text((right.start_byte, right.end_byte))


def tile_matmul(ctx: RewriteContext) -> list[Edit] | None:
    """Rewrite the naive one-output-per-thread matmul into a shared-memory tiled loop over T x T tiles."""
    ks = _ks(ctx)
    fn = ctx.function
    if ks is None or len(ks.statements) != 3:
        return None
    d1, d2, stmt = ks.statements
    rows = [v for v in ks.index_vars.values() if v.decl in (d1, d2) and v.index.axis == "y"]
    cols = [v for v in ks.index_vars.values() if v.decl in (d1, d2) and v.index.axis == "x"]
    if len(rows) != 1 or len(cols) != 1 or stmt.type != "if_statement":
        return None
    row, col = rows[0], cols[0]
    if stmt.child_by_field_name("alternative") is not None:
        return None
    tile = _tile_size(ctx, col.index.scale, col.index.scale_value)
    if tile is None or row.index.scale_value != col.index.scale_value or tile[1] * tile[1] > 1024:
        return None
    t_text, t_value = tile
    guard = stmt.child_by_field_name("condition").child_by_field_name("value")
    parts = binary_parts(unparen(guard))
    if parts is None or parts[1] != "&&":
        return None
    bounds = dict(b for b in (_less(ctx, parts[0]), _less(ctx, parts[2])) if b is not None)
    if set(bounds) != {row.name, col.name}:
        return None
    body = stmt.child_by_field_name("consequence")
    if body.type != "compound_statement":
        return None
    kids = [c for c in body.named_children if c.type != "comment"]
    if len(kids) != 3:
        return None
    acc_decl, loop, store = kids
    if acc_decl.type != "declaration" or loop.type != "for_statement" or store.type != "expression_statement":
        return None
    inits = [c for c in acc_decl.named_children if c.type == "init_declarator"]
    if len(inits) != 1:
        return None
    acc_name = ctx.text(_span(inits[0].child_by_field_name("declarator")))
    acc_value = inits[0].child_by_field_name("value")
    if acc_value is None or acc_value.type != "number_literal":
        return None
    if not re.fullmatch(r"0(\.0*)?[fF]?|0?\.0+[fF]?|0\.?[fF]", ctx.text(_span(acc_value))):
        return None
    # The k loop: `for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];`
    linit = loop.child_by_field_name("initializer")
    lcond = loop.child_by_field_name("condition")
    lupd = loop.child_by_field_name("update")
    lbody = loop.child_by_field_name("body")
    if linit is None or lcond is None or lupd is None or lbody is None or linit.type != "declaration":
        return None
    kdecl = [c for c in linit.named_children if c.type == "init_declarator"]
    if len(kdecl) != 1 or kdecl[0].child_by_field_name("value") is None:
        return None
    kname = ctx.text(_span(kdecl[0].child_by_field_name("declarator")))
    if ctx.text(_span(kdecl[0].child_by_field_name("value"))) != "0":
        return None
    kb = _less(ctx, lcond)
    if kb is None or kb[0] != kname:
        return None
    big_k = kb[1]
    if squash(ctx.text(_span(lupd))) not in (f"++{kname}", f"{kname}++", f"{kname}+=1"):
        return None
    inner = _only_statement(lbody)
    if inner is None or inner.type != "expression_statement" or inner.named_child_count != 1:
        return None
    upd = inner.named_children[0]
    if upd.type != "assignment_expression" or upd.child_by_field_name("operator").type != "+=":
        return None
    if not _is_name(ctx, upd.child_by_field_name("left"), acc_name):
        return None
    prod = binary_parts(unparen(upd.child_by_field_name("right")))
    if prod is None or prod[1] != "*":
        return None
    operands = [unparen(prod[0]), unparen(prod[2])]
    if any(o.type != "subscript_expression" for o in operands):
        return None
    a_node = b_node = None
    big_n = bounds[col.name]
    for o in operands:
        arr = ctx.text(_span(o.child_by_field_name("argument")))
        idx = [c for c in o.child_by_field_name("indices").named_children]
        if len(idx) != 1 or fn.param(arr) is None:
            return None
        if _sum_of(ctx, idx[0], (row.name, big_k), kname):
            a_node = (o, arr, idx[0])
        elif _sum_of(ctx, idx[0], (kname, big_n), col.name):
            b_node = (o, arr, idx[0])
    if a_node is None or b_node is None:
        return None
    sexpr = store.named_children[0]
    if sexpr.type != "assignment_expression" or not _is_name(ctx, sexpr.child_by_field_name("right"), acc_name):
        return None
    c_left = sexpr.child_by_field_name("left")
    c_idx = c_left.child_by_field_name("indices") if c_left.type == "subscript_expression" else None
    if (
        c_idx is None
        or c_idx.named_child_count != 1
        or not _sum_of(ctx, c_idx.named_children[0], (row.name, big_n), col.name)
    ):
        return None
    a_param, b_param = fn.param(a_node[1]), fn.param(b_node[1])
    if a_param is None or b_param is None or a_param.base_type != b_param.base_type:
        return None
    if _template_typed(ctx, [a_node[1], b_node[1]]) or a_node[1] == b_node[1]:
        return None
    # The shape is exact: build the tiled kernel.
    elem = a_param.base_type
    zero = _zero(elem)
    a_tile, b_tile, k_tile = (
        _fresh(ctx, f"{a_node[1]}_tile"),
        _fresh(ctx, f"{b_node[1]}_tile"),
        _fresh(ctx, f"{kname}_tile"),
    )
    unit = ctx.indent_unit()
    ind = ctx.indent_at(stmt.start_byte)
    inner_ind = ind + unit
    dim = t_text if not t_text.isdigit() else str(t_value)
    decls = f"{ind}__shared__ {elem} {a_tile}[{dim}][{dim}];\n{ind}__shared__ {elem} {b_tile}[{dim}][{dim}];\n"
    first = min(d1.start_byte, d2.start_byte)
    edits = [Edit(ctx.line_start(first), ctx.line_start(first), decls)]

    def with_k(node: Any, repl: str) -> str:
        ids = [n for n in ks.identifiers(node, kname)]
        return _substitute(ctx, _span(node), [(_span(n), repl) for n in ids])

    a_idx = with_k(a_node[2], f"({k_tile} + threadIdx.x)")
    b_idx = with_k(b_node[2], f"({k_tile} + threadIdx.y)")
    row_guard = f"{row.name} < {bounds[row.name]}"
    col_guard = f"{col.name} < {bounds[col.name]}"
    a_load = (
        f"{a_tile}[threadIdx.y][threadIdx.x] = {row_guard} && {k_tile} + threadIdx.x < {big_k} ? "
        f"{a_node[1]}[{a_idx}] : {zero};"
    )
    b_load = (
        f"{b_tile}[threadIdx.y][threadIdx.x] = {k_tile} + threadIdx.y < {big_k} && {col_guard} ? "
        f"{b_node[1]}[{b_idx}] : {zero};"
    )
    loop_text = _substitute(
        ctx,
        _span(loop),
        [
            (_span(lcond.child_by_field_name("right")), dim),
            (_span(a_node[0]), f"{a_tile}[threadIdx.y][{kname}]"),
            (_span(b_node[0]), f"{b_tile}[{kname}][threadIdx.x]"),
        ],
    )
    acc_text = ctx.text(_span(acc_decl))
    tiled = (
        f"{acc_text}\n"
        f"{ind}for (int {k_tile} = 0; {k_tile} < {big_k}; {k_tile} += {dim}) {{\n"
        f"{inner_ind}{a_load}\n"
        f"{inner_ind}{b_load}\n"
        f"{inner_ind}__syncthreads();\n"
        f"{inner_ind}{loop_text}\n"
        f"{inner_ind}__syncthreads();\n"
        f"{ind}}}\n"
        f"{ind}if ({ctx.text(_span(guard))}) {{\n"
        f"{inner_ind}{ctx.text(_span(store))}\n"
        f"{ind}}}"
    )
    edits.append(Edit(stmt.start_byte, stmt.end_byte, tiled))
    return edits


def _span(node: Any) -> tuple[int, int]:
    return (node.start_byte, node.end_byte)


# The launch block that a tile is sized for.


@check("square_launch_block")
def square_launch_block(ctx: CheckContext) -> Verdict:
    """Hold when every launch in the file uses the same square T x T block, so a T x T tile matches it."""
    fn = ctx.function
    launches = launches_of(ctx.model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file shows the block shape the tile must match")
    shapes = {launch.block_value for _, launch in launches}
    if None in shapes:
        host, launch = next((h, lc) for h, lc in launches if lc.block_value is None)
        return unknown(f"the block `{launch.block}` in `{host.name}` is not a constant")
    if len(shapes) > 1:
        return unknown(f"`{fn.name}` is launched with several block shapes ({', '.join(map(str, sorted(shapes)))})")
    (dims,) = shapes
    assert dims is not None
    if len(dims) < 2 or dims[0] != dims[1] or any(d != 1 for d in dims[2:]):
        return unknown(f"the block is {'x'.join(map(str, dims))}, not square; a square tile would not match it")
    return holds(f"every launch uses {dims[0]}x{dims[1]} blocks")


def _only_statement(node: Any) -> Any:
    if node.type == "compound_statement":
        kids = [c for c in node.named_children if c.type != "comment"]
        return kids[0] if len(kids) == 1 else None
    return node


def _tile_size(ctx: RewriteContext, scale: str, scale_value: int | None) -> tuple[str, int] | None:
    """Return the tile size (text, value): the constant of the index, or the square block of every launch."""
    shapes = {launch.block_value for _, launch in launches_of(ctx.model, ctx.function.name)}
    if len(shapes) != 1:
        return None
    (dims,) = shapes
    if dims is None or len(dims) < 2 or dims[0] != dims[1] or any(d != 1 for d in dims[2:]):
        return None
    if scale_value is not None:
        return (scale, scale_value) if scale_value == dims[0] else None
    return str(dims[0]), dims[0]
