"""Matchers of the reductions, arithmetic and control cards: shared-memory tree reductions, contended atomics,
two-pass softmax, integer and floating division, packed half math, `pow`/`sqrt` shapes, dynamically indexed
local arrays and 32-bit global indices.

Each matcher first asks the kernel model whether the function can hold the pattern at all (a shared array and a
barrier in a loop, an atomic call, a math call, a local array), and only then reads syntax nodes for the exact
shape, so that functions without the pattern cost a few attribute reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from warpwise.analyzers.expr.values import parse_int_literal
from warpwise.analyzers.model import Loop, MemorySpace
from warpwise.skills.facts import loop_label, nodes
from warpwise.skills.facts_reduce import (
    DIVIDE,
    GLOBAL_INDEX_FORMS,
    HALF_PAIRS,
    PRIMARY,
    REMAINDER,
    CType,
    Node,
    atomic_target,
    bare_type,
    binary_nodes,
    clean,
    ctype,
    division_type,
    element_type,
    enclosing_loops,
    expr_type,
    field,
    float_literal_value,
    geometry_limits,
    half_elementwise,
    identifiers,
    int_range,
    is_kernel,
    is_pure,
    is_simple_operand,
    is_uniform,
    node_at,
    number_value,
    operator_of,
    reads_memory,
    single_definition,
    text_of,
    tree_reduction,
    two_pass_softmax,
    unparen,
    unroll_constant,
)
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher


def _combine_text(op: str, form: str) -> str:
    return f"`{op}`" if form != "call" else f"`{op}(...)`"


@matcher("shared_tree_reductions")
def shared_tree_reductions(
    ctx: MatchContext, shapes: tuple[str, ...] | list[str] = ("sequential",)
) -> Iterator[Region]:
    """Find loops that reduce a shared array pairwise with one `__syncthreads()` per step."""
    fn = ctx.function
    if not fn.shared or not fn.loops:
        return
    barrier_loops = {lid for c in fn.calls if c.name == "__syncthreads" for lid in c.loops[-1:]}
    for loop_id in sorted(barrier_loops):
        red = tree_reduction(ctx.model, fn, loop_id)
        if red is None or red.shape not in shapes:
            continue
        loop = fn.loops[loop_id]
        yield Region(
            AnchorKind.LOOP,
            fn,
            loop.header_span,
            f"tree:{red.array}:{loop_id}",
            {
                "reduction": red,
                "loop": loop,
                "array": red.array,
                "tid": red.tid,
                "var": red.var,
                "combine": _combine_text(red.combine, red.form),
                "element": red.element_type,
            },
        )


def _index_loads(ctx: MatchContext, node: Node, depth: int = 0) -> bool:
    """Return whether an index expression depends on a load (directly or through locals defined once)."""
    if node is None or depth > 4:
        return False
    if reads_memory(node):
        return True
    for name in identifiers(ctx.model, node):
        value = single_definition(ctx.model, ctx.function, name)
        if value is not None and _index_loads(ctx, value, depth + 1):
            return True
    return False


@matcher("contended_global_atomics")
def contended_global_atomics(ctx: MatchContext) -> Iterator[Region]:
    """Find `atomicAdd` on global memory whose address is data-dependent or one of a few known bins."""
    fn = ctx.function
    calls = [c for c in fn.calls if c.name == "atomicAdd"]
    if not calls:
        return
    limits = geometry_limits(ctx.model, fn)
    for call in calls:
        tgt = atomic_target(ctx.model, fn, call.span)
        if tgt is None or tgt.leader_guarded or tgt.index_span is None:
            continue
        index = node_at(ctx.model, fn, tgt.index_span)
        if is_uniform(ctx.model, fn, index):
            continue
        r = int_range(ctx.model, fn, index, limits)
        bins = r[1] + 1 if r is not None and r[0] >= 0 else None
        loads = _index_loads(ctx, index)
        folded = operator_of(unparen(index)) in ("%", "&")
        if not loads and not (folded and bins is not None):
            # Without a data-dependent index or a modulo/mask that folds threads together, each thread has its own
            # counter and nothing contends.
            continue
        how = f"one of {bins} counters" if bins is not None else "a data-dependent counter"
        yield Region(
            AnchorKind.CALL,
            fn,
            call.span,
            f"contended:{tgt.base}:{call.span[0]}",
            {
                "target": tgt,
                "array": tgt.base,
                "index": tgt.index,
                "value": tgt.value,
                "bins": bins,
                "element": element_type(fn, tgt.base) or "",
                "how": how,
            },
        )


@matcher("uniform_address_atomics")
def uniform_address_atomics(ctx: MatchContext) -> Iterator[Region]:
    """Find `atomicAdd` calls that every thread makes on the same global address."""
    fn = ctx.function
    for call in fn.calls:
        if call.name != "atomicAdd":
            continue
        tgt = atomic_target(ctx.model, fn, call.span)
        if tgt is None or tgt.leader_guarded:
            continue
        if tgt.index_span is not None and not is_uniform(ctx.model, fn, node_at(ctx.model, fn, tgt.index_span)):
            continue
        address = tgt.base if tgt.form == "pointer" else f"{tgt.base}[{tgt.index}]"
        yield Region(
            AnchorKind.CALL,
            fn,
            call.span,
            f"uniform-atomic:{tgt.base}:{call.span[0]}",
            {
                "target": tgt,
                "array": tgt.base,
                "address": address,
                "value": tgt.value,
                "element": element_type(fn, tgt.base) or "",
            },
        )


@matcher("two_pass_softmax")
def two_pass_softmax_loops(ctx: MatchContext) -> Iterator[Region]:
    """Find a max pass followed by a sum-of-exponentials pass over the same elements."""
    fn = ctx.function
    names = {c.name for c in fn.calls if c.category in ("math", "call")}
    if len(fn.loops) < 2 or not names & {"expf", "__expf", "exp"} or not names & {"fmaxf", "fmax", "max"}:
        return
    for loop in fn.loops:
        found = two_pass_softmax(ctx.model, fn, loop.id)
        if found is None:
            continue
        yield Region(
            AnchorKind.LOOP,
            fn,
            loop.header_span,
            f"softmax:{found.max_var}:{found.sum_var}:{loop.id}",
            {
                "softmax": found,
                "max": found.max_var,
                "sum": found.sum_var,
                "element": found.element,
                "exp": found.exp_call,
            },
        )


def _constant(ctx: MatchContext, node: Node) -> bool:
    """Return whether an integer expression has one value known at compile time."""
    r = int_range(ctx.model, ctx.function, node, {})
    return r is not None and r[0] == r[1]


@matcher("integer_division_by_power_of_two")
def integer_division_by_power_of_two(ctx: MatchContext) -> Iterator[Region]:
    """Find integer `x / 2^k` and `x % 2^k` with a constant power-of-two divisor."""
    fn = ctx.function
    found = binary_nodes(ctx.model, fn, DIVIDE) + binary_nodes(ctx.model, fn, REMAINDER)
    for node in sorted(found, key=lambda n: n.start_byte):
        right = field(node, "right")
        divisor = number_value(ctx.model, right)
        if divisor is None or divisor < 2 or divisor & (divisor - 1) or right is None:
            continue
        op = operator_of(node) or "/"
        named = right.type != "number_literal"
        if named and op == "/":
            # A shift would hard-code the logarithm of a named constant; leave such divisions alone.
            continue
        left = field(node, "left")
        ty = expr_type(ctx.model, fn, left)
        if ty is None or not ty.is_int or left is None:
            continue
        rel = (node.start_byte - fn.base, node.end_byte - fn.base)
        if _constant(ctx, left) or unroll_constant(fn, identifiers(ctx.model, left), rel):
            # Constant operands (also loop counters of fully unrolled loops) are folded at compile time.
            continue
        shift = divisor.bit_length() - 1
        dividend = text_of(ctx.model, left)
        mask = f"({text_of(ctx.model, right)} - 1)" if named else str(divisor - 1)
        replacement = f"{dividend} >> {shift}" if op == "/" else f"{dividend} & {mask}"
        yield Region(
            AnchorKind.EXPRESSION,
            fn,
            (node.start_byte - fn.base, node.end_byte - fn.base),
            f"pow2:{op}:{node.start_byte - fn.base}",
            {
                "op": op,
                "divisor": divisor,
                "divisor_text": text_of(ctx.model, right),
                "shift": shift,
                "dividend": dividend,
                "dividend_span": (left.start_byte - fn.base, left.end_byte - fn.base),
                "dividend_type": ty,
                "expression": clean(text_of(ctx.model, node)),
                "replacement": replacement,
                "mask": mask,
                "operation": "division" if op == "/" else "remainder",
            },
        )


@matcher("float_division_by_loop_invariant")
def float_division_by_loop_invariant(ctx: MatchContext) -> Iterator[Region]:
    """Find floating-point divisions in a loop whose divisor does not change in that loop."""
    fn = ctx.function
    if not fn.loops:
        return
    groups: dict[tuple[int, str], list[Node]] = {}
    outer = [lp.body_span for lp in fn.loops if lp.parent is None]
    for node in [n for span in outer for n in binary_nodes(ctx.model, fn, DIVIDE, span)]:
        rel = (node.start_byte - fn.base, node.end_byte - fn.base)
        loops = enclosing_loops(fn, rel)
        right, left = unparen(field(node, "right")), field(node, "left")
        if not loops or right is None or left is None or not is_simple_operand(right):
            continue
        ty = division_type(ctx.model, fn, node)
        if ty is None or ty.kind != "float" or right.type == "number_literal":
            continue
        names = identifiers(ctx.model, right)
        if not names or any(n in ctx.model.constants and fn.param(n) is None for n in names):
            continue
        target = None
        for loop_id in loops:
            if names & fn.loops[loop_id].assigned:
                break
            target = loop_id
        if target is None:
            continue
        if not (identifiers(ctx.model, left) & fn.loops[target].assigned) and not reads_memory(left):
            # The whole quotient is loop-invariant: the compiler hoists it already.
            continue
        groups.setdefault((target, clean(text_of(ctx.model, right))), []).append(node)
    for (loop_id, divisor), found in groups.items():
        loop = fn.loops[loop_id]
        first = found[0]
        ty = division_type(ctx.model, fn, first)
        right = unparen(field(first, "right"))
        plain = right is not None and right.type in ("identifier", "field_expression")
        code = divisor if plain else f"({divisor})"
        stem = re.sub(r"\W+", "_", divisor).strip("_") if plain else "divisor"
        yield Region(
            AnchorKind.EXPRESSION,
            fn,
            (first.start_byte - fn.base, first.end_byte - fn.base),
            f"recip:{divisor}:{loop_id}",
            {
                "loop": loop,
                "divisor": divisor,
                "divisor_code": code,
                "reciprocal_name": f"inv_{stem}",
                "divisions": tuple((n.start_byte - fn.base, n.end_byte - fn.base) for n in found),
                "count": len(found),
                "float_type": "float" if ty is not None and ty.bits == 32 else "double",
                "loop_label": loop_label(loop),
                "expression": clean(text_of(ctx.model, first)),
            },
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


@matcher("pow_small_integer_exponent")
def pow_small_integer_exponent(
    ctx: MatchContext, exponents: tuple[int, ...] | list[int] = (2, 3, 4)
) -> Iterator[Region]:
    """Find `powf(x, n)` / `pow(x, n)` with a literal small integer exponent `n`."""
    fn = ctx.function
    for call in fn.calls:
        if call.category != "math" or call.name not in ("powf", "pow") or len(call.args) != 2:
            continue
        node = node_at(ctx.model, fn, call.span, "call_expression")
        args_node = field(node, "arguments")
        args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
        if len(args) != 2 or args[1].type != "number_literal":
            continue
        value = float_literal_value(text_of(ctx.model, args[1]))
        if value is None or value not in exponents or not is_pure(args[0]):
            continue
        base = unparen(args[0])
        x = (
            text_of(ctx.model, base)
            if base is not None and base.type in PRIMARY
            else f"({text_of(ctx.model, args[0])})"
        )
        n = int(value)
        product = f"{x} * {x}" if n == 2 else f"{x} * {x} * {x}" if n == 3 else f"({x} * {x}) * ({x} * {x})"
        yield Region(
            AnchorKind.CALL,
            fn,
            call.span,
            f"pow:{call.span[0]}",
            {
                "name": call.name,
                "call": clean(text_of(ctx.model, node)),
                "base": clean(text_of(ctx.model, args[0])),
                "base_span": (args[0].start_byte - fn.base, args[0].end_byte - fn.base),
                "exponent": n,
                "product": product,
            },
        )


@matcher("division_by_square_root")
def division_by_square_root(ctx: MatchContext) -> Iterator[Region]:
    """Find `a / sqrtf(x)` (and `a / sqrt(x)` in double) whose division has the precision of the square root."""
    fn = ctx.function
    if not any(c.name in ("sqrtf", "sqrt") for c in fn.calls):
        return
    for node in binary_nodes(ctx.model, fn, DIVIDE):
        right = unparen(field(node, "right"))
        left = field(node, "left")
        if right is None or left is None or right.type != "call_expression":
            continue
        callee = clean(text_of(ctx.model, field(right, "function")))
        args_node = field(right, "arguments")
        args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
        if callee not in ("sqrtf", "sqrt") or len(args) != 1:
            continue
        want = CType("float", 32 if callee == "sqrtf" else 64)
        if callee == "sqrt" and expr_type(ctx.model, fn, args[0]) != want:
            continue
        if division_type(ctx.model, fn, node) != want:
            continue
        one = left.type == "number_literal" and float_literal_value(text_of(ctx.model, left)) == 1.0
        fast = "rsqrtf" if callee == "sqrtf" else "rsqrt"
        x = clean(text_of(ctx.model, args[0]))
        yield Region(
            AnchorKind.EXPRESSION,
            fn,
            (node.start_byte - fn.base, node.end_byte - fn.base),
            f"rsqrt:{node.start_byte - fn.base}",
            {
                "expression": clean(text_of(ctx.model, node)),
                "sqrt": callee,
                "rsqrt": fast,
                "operand": x,
                "reciprocal": one,
                "replacement": f"{fast}({x})" if one else f"{clean(text_of(ctx.model, left))} * {fast}({x})",
            },
        )


def full_unroll(loop: Loop) -> bool:
    """Return whether a loop is fully unrolled by its pragma (`#pragma unroll`, or a count covering its trips)."""
    if loop.unroll is None:
        return False
    parts = loop.unroll.split()
    if parts[0] != "unroll":
        return False
    if len(parts) == 1:
        return True
    count = parse_int_literal(parts[1])
    return count is not None and loop.trip_count is not None and count >= loop.trip_count


_BUILTIN_WORDS = re.compile(r"\b(?:threadIdx|blockIdx|blockDim|gridDim)\b")


@matcher("dynamic_local_array_indexing")
def dynamic_local_array_indexing(ctx: MatchContext) -> Iterator[Region]:
    """Find per-thread arrays indexed by values that are not compile-time constants after unrolling."""
    fn = ctx.function
    arrays = {name: t for name, t in fn.locals.items() if "[" in t}
    if not arrays:
        return
    limits = geometry_limits(ctx.model, fn)
    for name, type_text in arrays.items():
        to_unroll: set[int] = set()
        runtime: list[str] = []
        first = first_runtime = None
        seen_runtime = 0
        for acc in fn.accesses:
            if acc.base != name or acc.space is not MemorySpace.LOCAL:
                continue
            loop_vars = {fn.loops[lid].var: lid for lid in acc.loops}
            builtins = sorted(set(_BUILTIN_WORDS.findall(acc.index)))
            runtime.extend(f"{b}" for b in builtins)
            dynamic = bool(builtins)
            for ident in sorted(acc.index_names):
                if ident in loop_vars:
                    loop = fn.loops[loop_vars[ident]]
                    if loop.trip_count is None:
                        runtime.append(ident)
                        dynamic = True
                    elif not full_unroll(loop):
                        to_unroll.add(loop.id)
                        dynamic = True
                    continue
                if ident in ctx.model.constants:
                    continue
                value = node_for_name(ctx, ident)
                r = int_range(ctx.model, fn, value, limits) if value is not None else None
                if r is None or r[0] != r[1]:
                    runtime.append(ident)
                    dynamic = True
            if dynamic and first is None:
                first = acc
            if len(runtime) > seen_runtime and first_runtime is None:
                first_runtime = acc
            seen_runtime = len(runtime)
        if first is None:
            continue
        first = first_runtime or first
        dims = re.findall(r"\[(.*?)\]", type_text)
        yield Region(
            AnchorKind.ACCESS,
            fn,
            first.span,
            f"local:{name}",
            {
                "array": name,
                "declared": f"{type_text.split('[', 1)[0].strip()} {name}[{']['.join(dims)}]",
                "dims": tuple(dims),
                "subscript": f"{first.array}[{']['.join(first.indices)}]",
                "loops": tuple(sorted(to_unroll)),
                "runtime": tuple(dict.fromkeys(runtime)),
                "why": (
                    f"`{', '.join(dict.fromkeys(runtime))}` is only known at run time"
                    if runtime
                    else "the loop that indexes it is not unrolled"
                ),
            },
        )


def node_for_name(ctx: MatchContext, name: str) -> Node | None:
    """Return the initializer of a local defined once (to read its value), or None."""
    return single_definition(ctx.model, ctx.function, name)


_GLOBAL_INDEX_INIT = re.compile(rb"\b([A-Za-z_]\w*)\s*=\s*\(?\s*(?:blockIdx|blockDim|threadIdx)\.x\b")


@matcher("int32_global_index")
def int32_global_index(ctx: MatchContext) -> Iterator[Region]:
    """Find a 32-bit integer declared as `blockIdx.x * blockDim.x + threadIdx.x` and used to index arrays."""
    fn = ctx.function
    if not is_kernel(fn) or not fn.accesses:
        return
    indexed = {n for a in fn.accesses for n in a.index_names}
    for m in _GLOBAL_INDEX_INIT.finditer(ctx.model.text, fn.base, fn.base + fn.length):
        name = m.group(1).decode("utf-8", "replace")
        declared = ctype(fn.locals.get(name))
        if name not in indexed or declared is None or not declared.is_int or declared.bits != 32:
            continue
        ident = node_at(ctx.model, fn, (m.start(1) - fn.base, m.end(1) - fn.base))
        init = ident.parent if ident is not None and ident.type == "identifier" else None
        if init is None or init.type != "init_declarator":
            continue
        value = field(init, "value")
        decl = init.parent if init is not None else None
        if init is None or value is None or decl is None or decl.type != "declaration":
            continue
        if clean(text_of(ctx.model, value)) not in GLOBAL_INDEX_FORMS:
            continue
        type_node = field(decl, "type")
        ty = ctype(text_of(ctx.model, type_node)) if type_node is not None else None
        if type_node is None or ty is None or not ty.is_int or ty.bits != 32:
            continue
        if len(decl.children_by_field_name("declarator")) != 1:
            continue
        product = next(
            (c for c in (field(value, "left"), field(value, "right")) if c is not None and operator_of(c) == "*"),
            None,
        )
        factor = field(product, "left")
        if factor is None:
            continue
        wide = "long long" if ty.kind == "signed" else "size_t"
        loop = decl.parent is not None and decl.parent.type == "for_statement"
        yield Region(
            AnchorKind.EXPRESSION,
            fn,
            (init.start_byte - fn.base, init.end_byte - fn.base),
            f"int32-index:{name}:{init.start_byte - fn.base}",
            {
                "var": name,
                "type": clean(text_of(ctx.model, type_node)),
                "type_span": (type_node.start_byte - fn.base, type_node.end_byte - fn.base),
                "factor_span": (factor.start_byte - fn.base, factor.end_byte - fn.base),
                "declaration_span": (decl.start_byte - fn.base, decl.end_byte - fn.base),
                "wide": wide,
                "value": clean(text_of(ctx.model, value)),
                "grid_stride": loop,
                "signed": ty.kind == "signed",
            },
        )
