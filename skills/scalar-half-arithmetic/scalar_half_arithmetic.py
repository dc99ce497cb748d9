"""Rules of the `scalar-half-arithmetic` card (Process half-precision elements in pairs): what only this card uses.

Registered here: matcher `scalar_half_elementwise`, check `half_pointers_aligned`, check
`half_statement_elementwise`, check `half_no_contraction`, check `half_grid_covers_elements`. The card's rewrite and
the recognisers only it needs live here too; what several cards share stays in the engine modules
(`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.scalar_half_arithmetic`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from warpwise.analyzers.build import eval_numeric_text
from warpwise.analyzers.expr.values import parse_int_literal
from warpwise.analyzers.facts import identifier_uses, nodes
from warpwise.analyzers.facts_reduce import (
    Node,
    _rel,
    bare_type,
    clean,
    condition_value,
    expr_type,
    field,
    is_kernel,
    launches_of,
    launches_text,
    operator_of,
    single_definition,
    statements,
    text_of,
    unparen,
)
from warpwise.analyzers.facts_reduce import (
    is_global_index as computes_global_index,
)
from warpwise.analyzers.model import AccessKind, FileModel, Function, Span
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

HALF_PAIRS = {
    "__half": ("__half2", "__half2half2"),
    "half": ("__half2", "__half2half2"),
    "__nv_bfloat16": ("__nv_bfloat162", "__bfloat162bfloat162"),
    "nv_bfloat16": ("__nv_bfloat162", "__bfloat162bfloat162"),
}


# Scalar intrinsics whose packed form rounds each lane exactly like the scalar one.
HALF_PACKED = {
    "__hadd": "__hadd2",
    "__hsub": "__hsub2",
    "__hmul": "__hmul2",
    "__hadd_rn": "__hadd2_rn",
    "__hsub_rn": "__hsub2_rn",
    "__hmul_rn": "__hmul2_rn",
    "__hfma": "__hfma2",
    "__hfma_relu": "__hfma2_relu",
    "__hneg": "__hneg2",
    "__habs": "__habs2",
    "__hmax": "__hmax2",
    "__hmin": "__hmin2",
    "__hmax_nan": "__hmax2_nan",
    "__hmin_nan": "__hmin2_nan",
}


def is_global_index(model: FileModel, fn: Function, name: str) -> bool:
    """Return whether a local is defined once as `blockIdx.x * blockDim.x + threadIdx.x` (in any operand order)."""
    value = single_definition(model, fn, name)
    return value is not None and computes_global_index(model, value)


@dataclass(frozen=True, slots=True)
class HalfElementwise:
    """`if (i < n) out[i] = expr;` where every array is a `__half`/`__nv_bfloat16` pointer indexed `[i]`, scalars are
    parameters of the same type, and every operation has an exact packed form.

    `arrays` lists the pointer parameters read, `scalars` the broadcast parameters, `contracted` whether a
    multiply feeds an add or subtract (which nvcc may fuse into an FMA differently in the two versions)."""

    index: str
    bound: str
    out: str
    half: str
    pair: str
    broadcast: str
    arrays: tuple[str, ...]
    scalars: tuple[str, ...]
    contracted: bool
    if_span: Span
    statement_span: Span
    value_span: Span


def _half_of(fn: Function, name: str, pointer: bool) -> str | None:
    p = fn.param(name)
    if p is None or p.is_pointer != pointer or p.is_reference:
        return None
    t = bare_type(p.base_type or p.type)
    return t if t in HALF_PAIRS else None


_MUL = {"*", "__hmul"}


_ADD = {"+", "-", "__hadd", "__hsub"}


def _half_expr(
    model: FileModel, fn: Function, node: Node, index: str, half: str, arrays: set[str], scalars: set[str]
) -> tuple[bool, bool] | None:
    """Check that an expression is packable; return (is a multiply, a multiply feeds an add) or None."""
    node = unparen(node)
    if node is None:
        return None
    t = node.type
    if t == "subscript_expression":
        base = unparen(field(node, "argument"))
        indices = field(node, "indices")
        idx = [c for c in indices.named_children if c.type != "comment"] if indices is not None else []
        if base is None or base.type != "identifier" or len(idx) != 1 or clean(text_of(model, idx[0])) != index:
            return None
        name = text_of(model, base)
        if _half_of(fn, name, True) != half:
            return None
        arrays.add(name)
        return False, False
    if t == "identifier":
        name = text_of(model, node)
        if _half_of(fn, name, False) != half:
            return None
        scalars.add(name)
        return False, False
    if t == "call_expression":
        callee = clean(text_of(model, field(node, "function")))
        args_node = field(node, "arguments")
        args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
        if callee not in HALF_PACKED or not args:
            return None
        parts = [_half_expr(model, fn, a, index, half, arrays, scalars) for a in args]
        if any(p is None for p in parts):
            return None
        fused = any(p[1] for p in parts if p is not None)
        if callee in _ADD and any(p[0] for p in parts if p is not None):
            fused = True
        return callee in _MUL, fused
    if t == "binary_expression" and operator_of(node) in ("+", "-", "*"):
        parts = [_half_expr(model, fn, field(node, side), index, half, arrays, scalars) for side in ("left", "right")]
        if any(p is None for p in parts):
            return None
        op = operator_of(node) or ""
        fused = any(p[1] for p in parts if p is not None) or (op in _ADD and any(p[0] for p in parts if p is not None))
        return op in _MUL, fused
    if t == "unary_expression" and operator_of(node) == "-":
        inner = _half_expr(model, fn, field(node, "argument"), index, half, arrays, scalars)
        return (False, inner[1]) if inner is not None else None
    return None


def half_elementwise(model: FileModel, fn: Function, if_node: Node) -> HalfElementwise | None:
    """Return the packable elementwise statement an `if (i < n)` guards, or None for other shapes."""
    if field(if_node, "alternative") is not None:
        return None
    cond = condition_value(if_node)
    if cond is None or cond.type != "binary_expression" or operator_of(cond) != "<":
        return None
    left, right = unparen(field(cond, "left")), unparen(field(cond, "right"))
    if left is None or right is None or left.type != "identifier" or right.type != "identifier":
        return None
    index, bound = text_of(model, left), text_of(model, right)
    bound_type = expr_type(model, fn, right)
    if not is_global_index(model, fn, index) or bound_type is None or not bound_type.is_int:
        return None
    body = statements(field(if_node, "consequence"))
    if len(body) != 1 or body[0].type != "expression_statement":
        return None
    inner = [c for c in body[0].named_children if c.type != "comment"]
    if len(inner) != 1 or inner[0].type != "assignment_expression" or operator_of(inner[0]) != "=":
        return None
    target, value = field(inner[0], "left"), field(inner[0], "right")
    if target is None or value is None or target.type != "subscript_expression":
        return None
    out_node = unparen(field(target, "argument"))
    out_idx = field(target, "indices")
    if out_node is None or out_node.type != "identifier" or out_idx is None:
        return None
    out = text_of(model, out_node)
    half = _half_of(fn, out, True)
    if half is None or clean(text_of(model, out_idx)) != f"[{index}]":
        return None
    arrays: set[str] = set()
    scalars: set[str] = set()
    shape = _half_expr(model, fn, value, index, half, arrays, scalars)
    if shape is None or not arrays:
        return None
    pair, broadcast = HALF_PAIRS[half]
    return HalfElementwise(
        index,
        bound,
        out,
        half,
        pair,
        broadcast,
        tuple(sorted(arrays)),
        tuple(sorted(scalars)),
        shape[1],
        _rel(fn, if_node),
        _rel(fn, body[0]),
        _rel(fn, value),
    )


@matcher("scalar_half_elementwise")
def scalar_half_elementwise(ctx: MatchContext) -> Iterator[Region]:
    """Find `if (i < n) out[i] = expr;` over `__half`/`__nv_bfloat16` arrays, one element per thread."""
    fn = ctx.function
    if not is_kernel(fn) or not fn.branches:
        return
    if not any(p.is_pointer and bare_type(p.base_type or p.type) in HALF_PAIRS for p in fn.params):
        return
    for node in nodes(ctx.model, fn, "(if_statement) @if", "if"):
        he = half_elementwise(ctx.model, fn, node)
        if he is None:
            continue
        yield Region(
            AnchorKind.EXPRESSION,
            fn,
            he.statement_span,
            f"half2:{he.out}:{he.statement_span[0]}",
            {
                "half": he,
                "out": he.out,
                "index": he.index,
                "bound": he.bound,
                "type": he.half,
                "pair": he.pair,
            },
        )


_ALLOCATORS = ("cudaMalloc", "cudaMallocManaged", "cudaMallocAsync", "cudaMallocHost", "cudaHostAlloc")


@check("half_pointers_aligned")
def half_pointers_aligned(ctx: CheckContext) -> Verdict:
    """Hold when every launch passes buffers that come straight from a CUDA allocation (256-byte aligned), so
    they can be read and written as 4-byte `__half2`/`__nv_bfloat162` pairs."""
    he: HalfElementwise = ctx.fact("half")
    fn = ctx.function
    launches = launches_of(ctx.model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file: whether the buffers are 4-byte aligned is not known")
    doubts: list[str] = []
    for host, launch in launches:
        host_text = ctx.model.text[host.base : host.base + host.length].decode("utf-8", "replace")
        for name in (he.out, *he.arrays):
            p = fn.param(name)
            if p is None or p.index >= len(launch.args):
                doubts.append(f"the launch in `{host.name}` does not pass `{name}` in a way warpwise can read")
                continue
            arg = clean(launch.args[p.index])
            offset = re.fullmatch(r"([A-Za-z_]\w*)\s*\+\s*(\d+)", arg) or re.fullmatch(
                r"(\d+)\s*\+\s*([A-Za-z_]\w*)", arg
            )
            if offset is not None and int(offset.group(1) if offset.group(1).isdigit() else offset.group(2)) % 2 == 1:
                return violated(f"the launch in `{host.name}` passes `{arg}` for `{name}`: 2-byte aligned only")
            if not re.fullmatch(r"[A-Za-z_]\w*", arg):
                doubts.append(f"the launch in `{host.name}` passes `{arg}` for `{name}`; its alignment is not known")
                continue
            allocated = any(
                re.search(rf"\b{a}\s*\(\s*(\(\s*void\s*\*\*\s*\)\s*)?&\s*{re.escape(arg)}\b", host_text)
                for a in _ALLOCATORS
            )
            if not allocated:
                doubts.append(
                    f"`{arg}` (passed for `{name}`) is not allocated in `{host.name}`; its alignment is not known"
                )
    if doubts:
        return unknown(doubts[0])
    return holds(
        f"{launches_text(len(launches))} pass{'es' if len(launches) == 1 else ''} buffers allocated with the CUDA "
        "allocator (256-byte aligned)"
    )


@check("half_statement_elementwise")
def half_statement_elementwise(ctx: CheckContext) -> Verdict:
    """Hold when no other code in the kernel reads the output or writes the inputs (so which thread computes which
    element does not matter)."""
    he: HalfElementwise = ctx.fact("half")
    fn = ctx.function
    lo, hi = he.statement_span
    outside = [a for a in fn.accesses if a.base in (he.out, *he.arrays) and not (lo <= a.span[0] < hi)]
    for a in outside:
        if a.base == he.out or a.kind is not AccessKind.READ:
            return violated(
                f"`{a.array}[{a.index}]` is also accessed in `{fn.name}`; with two elements per thread it would "
                "meet an element another thread computes"
            )
    for name in (he.out, *he.arrays):
        uses = identifier_uses(ctx.model, fn, name)
        counted = 1 + len([a for a in fn.accesses if a.base == name])
        if uses > counted:
            return unknown(f"`{name}` is used {uses - counted} more time(s) in `{fn.name}` than warpwise can follow")
    return holds(f"`{fn.name}` writes `{he.out}[{he.index}]` from elements `[{he.index}]` only")


@check("half_no_contraction")
def half_no_contraction(ctx: CheckContext) -> Verdict:
    """Hold when no multiply feeds an add or subtract (nvcc may contract those into FMAs differently in the scalar
    and the packed version)."""
    he: HalfElementwise = ctx.fact("half")
    if he.contracted:
        return unknown(
            f"a multiply feeds an add in `{he.out}[{he.index}]`; with -fmad=true nvcc may fuse it into an FMA in one "
            "version and not the other, so the last bit can differ (use __hfma or the _rn forms to pin it)"
        )
    return holds(f"every operation on `{he.out}[{he.index}]` rounds once per lane, exactly as in the scalar code")


_CEIL_DIV = re.compile(r"\(\s*(?P<n>.+?)\s*\+\s*(?P<add>.+?)\s*\)\s*/\s*(?P<div>.+)")


def _covers(grid: str, block: str, block_x: int | None, n: str, consts: dict[str, int]) -> bool | None:
    """Return whether a launch `grid x block` covers `n` threads (None when it cannot be read)."""
    m = _CEIL_DIV.fullmatch(grid.strip())
    if m is None or clean(m.group("n")) != n:
        return None
    div, add = clean(m.group("div")).strip("()"), clean(m.group("add"))
    div_v = eval_numeric_text(div, consts)
    if div != clean(block) and (div_v is None or div_v != block_x):
        return None
    if add == f"{div} - 1":
        return True
    add_v = eval_numeric_text(add, consts)
    size = div_v if div_v is not None else block_x
    return add_v is not None and size is not None and add_v >= size - 1


@check("half_grid_covers_elements")
def half_grid_covers_elements(ctx: CheckContext) -> Verdict:
    """Hold when every launch starts at least one thread per element (`(n + B - 1) / B` blocks of `B`), so the
    original wrote every element below `n` and the pairs rewrite writes the same ones."""
    he: HalfElementwise = ctx.fact("half")
    fn = ctx.function
    launches = launches_of(ctx.model, fn.name)
    bound = fn.param(he.bound)
    if not launches or bound is None:
        why = f"no launch of `{fn.name}` in this file" if not launches else f"`{he.bound}` is not a parameter"
        return unknown(f"{why}: whether the grid covers all `{he.bound}` elements is not known")
    for host, launch in launches:
        if bound.index >= len(launch.args):
            return unknown(f"the launch in `{host.name}` does not pass `{he.bound}` in a way warpwise can read")
        arg = clean(launch.args[bound.index])
        block = launch.block_value
        if block is not None and block[1:] == (1, 1) and launch.grid_value is not None:
            count = parse_int_literal(arg)
            if count is not None:
                threads = launch.grid_value[0] * block[0]
                if threads < count:
                    return violated(
                        f"the launch in `{host.name}` starts {threads} threads for {count} elements: the original "
                        "leaves the rest unwritten, the pairs would write them"
                    )
                continue
        covered = _covers(launch.grid, launch.block, block[0] if block is not None else None, arg, ctx.model.constants)
        if not covered:
            return unknown(f"the launch in `{host.name}` (`<<<{launch.grid}, {launch.block}>>>`) may not cover `{arg}`")
    return holds(f"{launches_text(len(launches))} start one thread per element of `{he.bound}` or more")


def _substituted(ctx: RewriteContext, span: Span, subs: list[tuple[int, int, str]]) -> str:
    """Return the text of an absolute span with non-overlapping absolute sub-spans replaced."""
    out, pos = [], span[0]
    for a, b, text in sorted(subs):
        out += [ctx.text((pos, a)), text]
        pos = b
    out.append(ctx.text((pos, span[1])))
    return "".join(out)


def packed_half_pairs(ctx: RewriteContext) -> list[Edit] | None:
    """Let each thread compute two neighbouring elements with `__half2`/`__nv_bfloat162` math, and the thread at
    `n / 2` the last element when `n` is odd; every lane rounds exactly as the scalar operation did."""
    he: HalfElementwise = ctx.fact("half")
    if_start, if_end = ctx.abs(he.if_span)
    value = ctx.node(ctx.abs(he.value_span))
    stmt_span = ctx.abs(he.statement_span)
    if value is None:
        return None
    packed: list[tuple[int, int, str]] = []
    tail: list[tuple[int, int, str]] = []
    stack = [ctx.node(stmt_span)]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        t = node.type
        if t == "subscript_expression":
            base, indices = field(node, "argument"), field(node, "indices")
            idx = [c for c in indices.named_children if c.type != "comment"] if indices is not None else []
            if base is None or len(idx) != 1:
                return None
            tail.append((idx[0].start_byte, idx[0].end_byte, f"{he.bound} - 1"))
            if value.start_byte <= node.start_byte < value.end_byte:
                packed.append(
                    (
                        base.start_byte,
                        base.end_byte,
                        f"reinterpret_cast<const {he.pair}*>({ctx.text((base.start_byte, base.end_byte))})",
                    )
                )
            continue
        if t == "identifier" and ctx.text((node.start_byte, node.end_byte)) in he.scalars:
            name = ctx.text((node.start_byte, node.end_byte))
            packed.append((node.start_byte, node.end_byte, f"{he.broadcast}({name})"))
            continue
        if t == "call_expression":
            callee = field(node, "function")
            name = ctx.text((callee.start_byte, callee.end_byte)) if callee is not None else ""
            if callee is None or name not in HALF_PACKED:
                return None
            packed.append((callee.start_byte, callee.end_byte, HALF_PACKED[name]))
            stack.extend(field(node, "arguments").named_children)
            continue
        stack.extend(node.named_children)
    expr = _substituted(ctx, (value.start_byte, value.end_byte), packed)
    scalar = _substituted(ctx, stmt_span, tail)
    ind, u = ctx.indent_at(if_start), ctx.indent_unit()
    i, n = he.index, he.bound
    text = (
        f"if ({i} < {n} / 2) {{\n"
        f"{ind}{u}reinterpret_cast<{he.pair}*>({he.out})[{i}] = {expr};\n"
        f"{ind}}} else if ({i} == {n} / 2 && {n} % 2 == 1) {{\n"
        f"{ind}{u}{scalar}\n"
        f"{ind}}}"
    )
    return [Edit(if_start, if_end, text)]
