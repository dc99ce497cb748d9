"""Rewrites of the reductions, arithmetic and control cards.

Each function returns text edits that keep the user's names and formatting, or None when the code, as written,
is outside what the rewrite handles exactly. Generated helper variables get names that nothing in the function
uses yet.
"""

from __future__ import annotations

import re
from typing import Any

from warpwise.analyzers.expr.values import parse_int_literal
from warpwise.analyzers.model import Span
from warpwise.skills.facts import identifier_uses, nodes
from warpwise.skills.facts_reduce import (
    HALF_PACKED,
    AtomicTarget,
    HalfElementwise,
    TreeReduction,
    TwoPassSoftmax,
    bare_type,
    ctype,
    expr_type,
    field,
    fresh_name,
    launch_blocks,
    variable_type,
)
from warpwise.skills.rewrite import Edit, RewriteContext

FULL_MASK = "0xffffffffu"


def _step(red: TreeReduction, acc: str, other: str) -> str:
    """Return the statement that combines `other` into `acc` the way the user's loop combines two elements."""
    if red.form == "call":
        return f"{acc} = {red.combine}({acc}, {other});"
    return f"{acc} {red.combine}= {other};"


def _first(red: TreeReduction, a: str, b: str) -> str:
    """Return the expression that combines two elements the way the user's loop does."""
    if red.form == "call":
        return f"{red.combine}({a}, {b})"
    return f"{a} {red.combine} {b}"


def _own_line(ctx: RewriteContext, start: int) -> bool:
    """Return whether only white space precedes `start` on its line."""
    return not ctx.data[ctx.line_start(start) : start].strip()


def _in_block(ctx: RewriteContext, span: Span) -> bool:
    """Return whether the statement at an absolute span sits directly in a `{ ... }` block, so statements can be
    added next to it (as the body of an unbraced `if` or loop, they would escape it)."""
    node = ctx.node(span)
    while node is not None and (node.start_byte, node.end_byte) != span:
        node = node.parent
    return node is not None and node.parent is not None and node.parent.type == "compound_statement"


def tree_reduction_last_warp(ctx: RewriteContext) -> list[Edit] | None:
    """Stop the shared-memory tree at stride 64 and finish the last 32 -> 1 steps with `__shfl_down_sync`.

    The warp computes the same pairs in the same order as the loop did (lane `t` combines its value with lane
    `t + offset`), so the total is bitwise identical; only `a[0]` is written back, followed by a barrier.
    """
    red: TreeReduction = ctx.fact("reduction")
    if red.shape != "sequential":
        return None
    loop = ctx.function.loops[red.loop_id]
    start, end = ctx.abs(loop.span)
    b0, b1 = ctx.abs(red.bound_span)
    if not _own_line(ctx, start) or not _in_block(ctx, (start, end)) or ctx.text((b0, b1)).strip() != "0":
        return None
    ind, unit = ctx.indent_at(start), ctx.indent_unit()
    a, t = red.array, red.tid
    acc = fresh_name(ctx.model, ctx.function, "warp_value")
    off = fresh_name(ctx.model, ctx.function, "offset", {acc})
    shfl = f"__shfl_down_sync({FULL_MASK}, {acc}, {off})"
    lines = [
        f"if ({t} < 32) {{",
        f"{unit}{red.element_text} {acc} = {_first(red, f'{a}[{t}]', f'{a}[{t} + 32]')};",
        f"{unit}for (int {off} = 16; {off} > 0; {off} >>= 1) {_step(red, acc, shfl)}",
        f"{unit}if ({t} == 0) {a}[0] = {acc};",
        "}",
        "__syncthreads();",
    ]
    tail = "".join(f"\n{ind}{line}" for line in lines)
    return [Edit(b0, b1, "32"), Edit(end, end, tail)]


def shared_block_reduction_to_shuffles(ctx: RewriteContext) -> list[Edit] | None:
    """Replace the shared-memory tree by a shuffle reduction per warp, one shared slot per warp, and a shuffle
    reduction of the warp results by the first warp; the total lands in `a[0]` as before."""
    red: TreeReduction = ctx.fact("reduction")
    loop = ctx.function.loops[red.loop_id]
    start, end = ctx.abs(loop.span)
    if not _own_line(ctx, start):
        return None
    ind, u = ctx.indent_at(start), ctx.indent_unit()
    a, t = red.array, red.tid
    acc = fresh_name(ctx.model, ctx.function, "warp_value")
    off = fresh_name(ctx.model, ctx.function, "offset", {acc})
    peer = fresh_name(ctx.model, ctx.function, "peer", {acc, off})
    shfl = f"__shfl_down_sync({FULL_MASK}, {acc}, {off})"
    lines = [
        "{",
        f"{u}{red.element_text} {acc} = {a}[{t}];",
        f"{u}__syncthreads();",
        f"{u}for (int {off} = 16; {off} > 0; {off} >>= 1) {_step(red, acc, shfl)}",
        f"{u}if ({t} % 32 == 0) {a}[{t} / 32] = {acc};",
        f"{u}__syncthreads();",
        f"{u}if ({t} < 32) {{",
        f"{u}{u}{acc} = {a}[{t}];",
        f"{u}{u}for (int {off} = 16; {off} > 0; {off} >>= 1) {{",
        f"{u}{u}{u}const {red.element_text} {peer} = {shfl};",
        f"{u}{u}{u}if ({t} + {off} < blockDim.x / 32) {_step(red, acc, peer)}",
        f"{u}{u}}}",
        f"{u}{u}if ({t} == 0) {a}[0] = {acc};",
        f"{u}}}",
        f"{u}__syncthreads();",
        "}",
    ]
    text = lines[0] + "".join(f"\n{ind}{line}" for line in lines[1:])
    return [Edit(start, end, text)]


_CG_HEADERS = ("#include <cooperative_groups.h>", "#include <cooperative_groups/reduce.h>")
_INCLUDE = re.compile(rb"^[ \t]*#[ \t]*include[^\n]*\n", re.M)


def _cg_includes(ctx: RewriteContext) -> list[Edit]:
    """Return the edit that includes the cooperative groups headers (after the includes above the function)."""
    data = ctx.data
    need = [h for h in _CG_HEADERS if h.split()[-1].encode() not in data]
    if not need:
        return []
    at = 0
    for m in _INCLUDE.finditer(data, 0, ctx.function.base):
        at = m.end()
    return [Edit(at, at, "".join(f"{h}\n" for h in need) + ("" if at else "\n"))]


_ATOMIC_TYPES = {"int", "unsigned int", "unsigned", "unsigned long long", "unsigned long long int"}
_INT_KEY = {("signed", 32): "int", ("unsigned", 32): "unsigned int", ("signed", 64): "long long"}


def _replace_in(ctx: RewriteContext, span: Span, inner: Span, text: str) -> str:
    """Return the text of `span` with the sub-span `inner` replaced by `text` (absolute spans)."""
    return ctx.text((span[0], inner[0])) + text + ctx.text((inner[1], span[1]))


def _statement_block(ctx: RewriteContext, stmt: Span, lines: list[str]) -> Edit:
    """Return the edit that replaces a statement by a braced block of lines, indented like the statement's line."""
    ind, u = ctx.indent_at(stmt[0]), ctx.indent_unit()
    body = "".join(f"\n{ind}{u}{line}" for line in lines)
    return Edit(stmt[0], stmt[1], "{" + body + f"\n{ind}}}")


def _value_as(ctx: RewriteContext, value: str, value_span: Span, elem: str) -> str:
    """Return the atomic's value converted to the counter type the way `atomicAdd` converts it."""
    node = ctx.node(ctx.abs(value_span))
    ty = expr_type(ctx.model, ctx.function, node)
    if ty is not None and ty == ctype(elem):
        return value
    return f"static_cast<{elem}>({value})"


def privatize_or_aggregate_atomic(ctx: RewriteContext) -> list[Edit] | None:
    """Count in a block-private shared copy (few known bins) or aggregate equal addresses per warp (otherwise).

    Privatization: zero a `__shared__` copy, count into it, and add each non-zero count to the global array once
    per block. It needs every thread to reach the two barriers, so kernels with a `return` get warp aggregation
    instead: threads with the same index form a group (`labeled_partition`) whose leader adds the group's sum.
    Both are exact for integer counters.
    """
    tgt: AtomicTarget = ctx.fact("target")
    elem = bare_type(ctx.fact("element") or "")
    ty = ctype(elem)
    if tgt.statement_span is None or tgt.index_span is None or ty is None or not ty.is_int or elem not in _ATOMIC_TYPES:
        return None
    fn = ctx.function
    bins = ctx.fact("bins")
    static = [s.size_bytes for s in fn.shared]
    fits = (
        bins is not None
        and all(b is not None for b in static)
        and sum(b or 0 for b in static) + bins * (ty.bits // 8) <= 32 * 1024
    )
    returns = nodes(ctx.model, fn, "(return_statement) @r", "r")
    if fits and not returns and fn.is_kernel and identifier_uses(ctx.model, fn, tgt.base) == 2:
        return _privatize(ctx, tgt, elem, bins)
    return _aggregate_by_index(ctx, tgt, elem)


def _privatize(ctx: RewriteContext, tgt: AtomicTarget, elem: str, bins: int) -> list[Edit] | None:
    fn = ctx.function
    if fn.body_span is None:
        return None
    open_at, close_at = ctx.abs(fn.body_span)
    first_nl = ctx.data.find(b"\n", open_at, close_at)
    close = close_at - 1
    if first_nl < 0 or ctx.data[ctx.line_start(close) : close].strip():
        return None
    ind, u = ctx.indent_at(first_nl + 1), ctx.indent_unit()
    if not ind:
        ind = ctx.indent_at(fn.base) + u
    local = fresh_name(ctx.model, fn, f"{tgt.base}_block")
    k = fresh_name(ctx.model, fn, "bin", {local})
    blocks, _ = launch_blocks(ctx.model, fn)
    head = [f"__shared__ {elem} {local}[{bins}];"]
    if blocks is not None and all(b[1:] == (1, 1) for b in blocks):
        first, step = "threadIdx.x", "blockDim.x"
    else:
        # Without 1-D launches in view, count the block's threads in all three dimensions.
        first = fresh_name(ctx.model, fn, "block_thread", {local, k})
        step = fresh_name(ctx.model, fn, "block_threads", {local, k, first})
        head += [
            f"const int {first} = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
            f"const int {step} = blockDim.x * blockDim.y * blockDim.z;",
        ]
    loop = f"for (int {k} = {first}; {k} < {bins}; {k} += {step})"
    head += [f"{loop} {local}[{k}] = 0;", "__syncthreads();"]
    tail = [
        "__syncthreads();",
        f"{loop} {{",
        f"{u}if ({local}[{k}] != 0) atomicAdd(&{tgt.base}[{k}], {local}[{k}]);",
        "}",
    ]
    b0, b1 = ctx.abs(tgt.base_span)
    line = ctx.line_start(close)
    return [
        Edit(first_nl + 1, first_nl + 1, "".join(f"{ind}{t}\n" for t in head)),
        Edit(b0, b1, local),
        Edit(line, line, "".join(f"{ind}{t}\n" for t in tail)),
    ]


def _aggregate_by_index(ctx: RewriteContext, tgt: AtomicTarget, elem: str) -> list[Edit] | None:
    fn = ctx.function
    assert tgt.index_span is not None and tgt.statement_span is not None
    key_ty = expr_type(ctx.model, fn, ctx.node(ctx.abs(tgt.index_span)))
    if key_ty is None or not key_ty.is_int:
        return None
    key_type = _INT_KEY.get((key_ty.kind, max(key_ty.bits, 32)), "unsigned long long")
    active = fresh_name(ctx.model, fn, "active")
    key = fresh_name(ctx.model, fn, "key", {active})
    same = fresh_name(ctx.model, fn, "same", {active, key})
    total = fresh_name(ctx.model, fn, "total", {active, key, same})
    address = _replace_in(ctx, ctx.abs(tgt.address_span), ctx.abs(tgt.index_span), key)
    literal = parse_int_literal(tgt.value)
    if literal == 1:
        amount = f"static_cast<{elem}>({same}.size())"
    elif literal is not None:
        amount = f"static_cast<{elem}>({same}.size() * {tgt.value})"
    else:
        value = _value_as(ctx, tgt.value, tgt.value_span, elem)
        amount = f"cooperative_groups::reduce({same}, {value}, cooperative_groups::plus<{elem}>())"
    lines = [
        f"cooperative_groups::coalesced_group {active} = cooperative_groups::coalesced_threads();",
        f"const {key_type} {key} = {tgt.index};",
        f"cooperative_groups::coalesced_group {same} = cooperative_groups::labeled_partition({active}, {key});",
        f"const {elem} {total} = {amount};",
        f"if ({same}.thread_rank() == 0) atomicAdd({address}, {total});",
    ]
    return [_statement_block(ctx, ctx.abs(tgt.statement_span), lines), *_cg_includes(ctx)]


def aggregate_uniform_atomic(ctx: RewriteContext) -> list[Edit] | None:
    """Sum the values of the threads that reach the atomic together (a coalesced group, at most a warp) and let
    one of them add the group's sum."""
    tgt: AtomicTarget = ctx.fact("target")
    elem = bare_type(ctx.fact("element") or "")
    if tgt.statement_span is None or ctype(elem) is None:
        return None
    fn = ctx.function
    active = fresh_name(ctx.model, fn, "active")
    total = fresh_name(ctx.model, fn, "total", {active})
    value = _value_as(ctx, tgt.value, tgt.value_span, elem)
    address = ctx.text(ctx.abs(tgt.address_span))
    lines = [
        f"cooperative_groups::coalesced_group {active} = cooperative_groups::coalesced_threads();",
        f"const {elem} {total} = cooperative_groups::reduce({active}, {value}, cooperative_groups::plus<{elem}>());",
        f"if ({active}.thread_rank() == 0) atomicAdd({address}, {total});",
    ]
    return [_statement_block(ctx, ctx.abs(tgt.statement_span), lines), *_cg_includes(ctx)]


def online_softmax(ctx: RewriteContext) -> list[Edit] | None:
    """Fuse the max pass and the sum pass into one loop that rescales the sum whenever the maximum grows.

    `s = (m == -INFINITY ? 0 : s * exp(m - m_next)) + exp(e - m_next)`: the guard drops the sum of elements seen
    while the running maximum was still `-INFINITY` (masked elements), whose true contribution is 0 once a
    finite maximum appears; `exp(-inf - (-inf))` would otherwise turn the whole sum into NaN.
    """
    sm: TwoPassSoftmax = ctx.fact("softmax")
    fn = ctx.function
    start, end = ctx.abs(sm.span)
    if not _own_line(ctx, start):
        return None
    m_type = bare_type(variable_type(fn, sm.max_var) or "")
    s_type = ctype(variable_type(fn, sm.sum_var))
    if ctype(m_type) is None or s_type is None or s_type.kind != "float":
        return None
    zero = "0.0f" if s_type.bits == 32 else "0.0"
    ind, u = ctx.indent_at(start), ctx.indent_unit()
    m, s, e, exp = sm.max_var, sm.sum_var, sm.element, sm.exp_call
    nxt = fresh_name(ctx.model, fn, f"{m}_next")
    decls = "".join(f"{ctx.text(ctx.abs(span))}\n{ind}" for span in sm.between)
    lines = [
        f"{sm.header} {{",
        f"{u}const {m_type} {nxt} = {sm.max_call};",
        f"{u}{s} = ({m} == -INFINITY ? {zero} : {s} * {exp}({m} - {nxt})) + {exp}({e} - {nxt});",
        f"{u}{m} = {nxt};",
        "}",
    ]
    return [Edit(start, end, decls + lines[0] + "".join(f"\n{ind}{line}" for line in lines[1:]))]


_LOOSE_PARENTS = {
    "init_declarator",
    "argument_list",
    "subscript_argument_list",
    "parenthesized_expression",
    "expression_statement",
    "return_statement",
    "condition_clause",
    "initializer_list",
    "comma_expression",
}


def _needs_parens(node: object, tighter: bool = True) -> bool:
    """Return whether a rewritten expression binding looser than its original must be parenthesized."""
    parent = getattr(node, "parent", None)
    if parent is None:
        return True
    if parent.type in _LOOSE_PARENTS:
        return False
    if parent.type == "assignment_expression":
        return field(parent, "right") is None or field(parent, "right").id != getattr(node, "id", None)
    if parent.type == "conditional_expression":
        return False
    return tighter


def shift_or_mask(ctx: RewriteContext) -> list[Edit] | None:
    """Rewrite `x / 2^k` as `x >> k` and `x % 2^k` as `x & (2^k - 1)`, parenthesized where precedence needs it."""
    start, end = ctx.region.abs_span
    node = ctx.node((start, end), "binary_expression")
    if node is None or (node.start_byte, node.end_byte) != (start, end):
        return None
    right = field(node, "right")
    op_node = field(node, "operator")
    if right is None or op_node is None or (right.type != "number_literal" and ctx.fact("op") == "/"):
        return None
    new = f">> {ctx.fact('shift')}" if ctx.fact("op") == "/" else f"& {ctx.fact('mask')}"
    edits = [Edit(op_node.start_byte, right.end_byte, new)]
    if _needs_parens(node):
        edits += [Edit(start, start, "("), Edit(end, end, ")")]
    return edits


def _loop_insertion_point(ctx: RewriteContext, loop_start: int) -> int | None:
    """Return the start of the line before which a statement can go ahead of a loop (above its pragmas)."""
    if not _own_line(ctx, loop_start):
        return None
    line = ctx.line_start(loop_start)
    while line > 0:
        prev = ctx.line_start(line - 1)
        if not ctx.data[prev:line].lstrip().startswith(b"#pragma"):
            break
        line = prev
    return line


def reciprocal_before_loop(ctx: RewriteContext) -> list[Edit] | None:
    """Compute `1 / d` once before the loop and multiply by it inside (`x / d` -> `x * inv_d`)."""
    loop = ctx.fact("loop")
    start = ctx.abs(loop.span)[0]
    at = _loop_insertion_point(ctx, start)
    if at is None or not _in_block(ctx, ctx.abs(loop.span)):
        return None
    divisor = ctx.fact("divisor_code")
    name = fresh_name(ctx.model, ctx.function, ctx.fact("reciprocal_name"))
    ty = ctx.fact("float_type")
    one = "1.0f" if ty == "float" else "1.0"
    edits = [Edit(at, at, f"{ctx.indent_at(start)}const {ty} {name} = {one} / {divisor};\n")]
    for span in ctx.fact("divisions"):
        node = ctx.node(ctx.abs(span), "binary_expression")
        op, right = field(node, "operator"), field(node, "right")
        if op is None or right is None or op.type != "/":
            return None
        edits.append(Edit(op.start_byte, right.end_byte, f"* {name}"))
    return edits


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


_LOWER_THAN_MUL = {"+", "-", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&", "^", "|", "&&", "||"}


def _product_needs_parens(node: Any) -> bool:
    """Return whether a product replacing `node` (a primary expression) must be parenthesized."""
    parent = node.parent
    if parent is not None and parent.type == "binary_expression":
        op = field(parent, "operator")
        left = field(parent, "left")
        if op is not None and op.type in _LOWER_THAN_MUL:
            return False
        return not (op is not None and op.type in ("*", "/") and left is not None and left.id == node.id)
    return _needs_parens(node)


def pow_to_products(ctx: RewriteContext) -> list[Edit] | None:
    """Replace `powf(x, 2)` by `x * x` (3: `x * x * x`; 4: `(x * x) * (x * x)`)."""
    start, end = ctx.region.abs_span
    node = ctx.node((start, end), "call_expression")
    if node is None or (node.start_byte, node.end_byte) != (start, end):
        return None
    product = ctx.fact("product")
    return [Edit(start, end, f"({product})" if _product_needs_parens(node) else product)]


def rsqrt_instead_of_division(ctx: RewriteContext) -> list[Edit] | None:
    """Replace `1.0f / sqrtf(x)` by `rsqrtf(x)` and `a / sqrtf(x)` by `a * rsqrtf(x)`."""
    start, end = ctx.region.abs_span
    node = ctx.node((start, end), "binary_expression")
    if node is None or (node.start_byte, node.end_byte) != (start, end):
        return None
    left, op, right = field(node, "left"), field(node, "operator"), field(node, "right")
    call = right
    while call is not None and call.type == "parenthesized_expression":
        call = call.named_children[0] if call.named_children else None
    callee = field(call, "function")
    if left is None or op is None or right is None or callee is None:
        return None
    rename = Edit(callee.start_byte, callee.end_byte, ctx.fact("rsqrt"))
    if ctx.fact("reciprocal"):
        return [Edit(left.start_byte, right.start_byte, ""), rename]
    return [Edit(op.start_byte, op.end_byte, "*"), rename]


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


def widen_global_index(ctx: RewriteContext) -> list[Edit] | None:
    """Declare the index 64-bit and compute its product in 64 bits (`(long long)blockIdx.x * blockDim.x + ...`)."""
    t0, t1 = ctx.abs(ctx.fact("type_span"))
    f0, _ = ctx.abs(ctx.fact("factor_span"))
    wide = ctx.fact("wide")
    if ctype(ctx.text((t0, t1))) is None:
        return None
    return [Edit(t0, t1, wide), Edit(f0, f0, f"({wide})")]
