"""Rules of the `scalar-global-access` card (Load and store 16-byte vectors): what only this card uses.

Registered here: matcher `scalar_elementwise_accesses`, check `vector_type_available`, check
`elementwise_index_only`, check `pointers_aligned`, check `no_alias_hazard`, checks `vector_index_scope`,
`vector_body_per_element` and `vector_launches_shrink` (the shared element checks, or their answer for a loop over
a row). The card's rewrite and the recognisers
only it needs live here too; what several cards share stays in the engine modules (`warpwise.skills.matchers`,
`.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.scalar_global_access`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from warpwise.analyzers.expr.values import type_size
from warpwise.analyzers.facts import distinct_launch_args, nodes
from warpwise.analyzers.facts_memory import (
    Elementwise,
    KernelSyntax,
    builtin_axis,
    const_value,
    kernel_syntax,
    launch_arg,
    launches_of,
    linear,
    squash,
    unparen,
)
from warpwise.analyzers.model import Access, AccessKind, AccessPattern, FileModel, Function, FunctionKind, MemorySpace
from warpwise.skills.checks.memory import (
    _ks,
    _line,
    _template_names,
    body_is_per_element,
    index_used_only_in_guard,
    launches_shrink,
)
from warpwise.skills.matchers.memory import _related_launches, _within
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
from warpwise.skills.rewrites.memory import (
    _bound_text,
    _drop_const,
    _fresh,
    _indent_more,
    _shrink_launches,
    _substitute,
    _template_typed,
)

Node = Any

# The 16-byte vector type each element type travels as, and how many elements it holds.
VECTOR_TYPES = {
    "float": ("float4", 4),
    "int": ("int4", 4),
    "unsigned int": ("uint4", 4),
    "unsigned": ("uint4", 4),
    "uint32_t": ("uint4", 4),
    "int32_t": ("int4", 4),
    "double": ("double2", 2),
    "long long": ("longlong2", 2),
    "long long int": ("longlong2", 2),
    "unsigned long long": ("ulonglong2", 2),
    "int64_t": ("longlong2", 2),
    "uint64_t": ("ulonglong2", 2),
    # 2-byte types have no 16-byte vector type of their own: eight of them travel as one `uint4`, read back through
    # a pointer to the element type (the rewrite's packed form).
    "__half": ("uint4", 8),
    "half": ("uint4", 8),
    "__nv_bfloat16": ("uint4", 8),
    "nv_bfloat16": ("uint4", 8),
}


def _param_index(fn: Function, name: str) -> int:
    p = fn.param(name)
    return p.index if p is not None else len(fn.params)


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def vector_accesses(fn: Function, ks: KernelSyntax, shape: Any) -> list[Access]:
    """Return the global accesses `a[i]` of pointer parameters inside an elementwise body."""
    out = []
    for acc in fn.accesses:
        if not _within(acc.span, shape.body, fn) or acc.space is not MemorySpace.GLOBAL:
            continue
        if len(acc.indices) != 1 or squash(acc.index) != shape.var or acc.array != acc.base:
            continue
        param = fn.param(acc.base)
        if param is None or param.pointer_depth != 1:
            continue
        out.append(acc)
    return out


@matcher("scalar_elementwise_accesses")
def scalar_elementwise_accesses(ctx: MatchContext) -> Iterator[Region]:
    """Find elementwise kernels whose arrays are read or written one 2-, 4- or 8-byte element per thread."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    if not any(
        a.space is MemorySpace.GLOBAL
        and a.width in (2, 4, 8)
        and not a.vector_cast
        and a.pattern is AccessPattern.CONTIGUOUS
        for a in fn.accesses
    ):
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    for shape in ks.elementwise:
        accesses = vector_accesses(fn, ks, shape)
        scalar = [a for a in accesses if a.width in (2, 4, 8) and not a.vector_cast and not a.via_ldg]
        if not scalar:
            continue
        arrays = sorted({a.base for a in accesses}, key=lambda b: _param_index(fn, b))
        width = scalar[0].width or 4
        elem = fn.param(arrays[0])
        vec = VECTOR_TYPES.get(elem.base_type if elem is not None else "", (None, 16 // width))
        yield Region(
            AnchorKind.ACCESS,
            fn,
            scalar[0].span,
            f"vector:{shape.var}:{shape.stmt.start_byte - fn.base}",
            {
                "kernel": fn.name,
                "shape": shape,
                "accesses": tuple(accesses),
                "arrays": arrays,
                "names": _names(arrays),
                "what": _what(accesses, arrays, key=lambda a: a.base),
                "width": width,
                "lanes": vec[1],
                "vector": vec[0] or f"{16 // width}-wide vector",
                "index": shape.var,
                "bound": ks.text(shape.bound),
                "form": _form_text(ks, shape),
                "_related": _related_launches(ctx.model, fn),
            },
        )
    if ks.elementwise:
        return
    for row, accesses in row_loops(ks, fn):
        yield _row_region(ctx, fn, ks, row, accesses)


def _what(accesses: list[Access], arrays: list[str], key: Callable[[Access], str]) -> str:
    """Return which arrays are read, written, or both, in words."""
    reads = {b for b in arrays if any(key(a) == b and a.kind is not AccessKind.WRITE for a in accesses)}
    writes = {b for b in arrays if any(key(a) == b and a.kind is not AccessKind.READ for a in accesses)}
    parts = []
    for group, verb in (
        ([b for b in arrays if b in reads and b not in writes], "read"),
        ([b for b in arrays if b in writes and b not in reads], "written"),
        ([b for b in arrays if b in reads and b in writes], "read and written"),
    ):
        if group:
            parts.append(f"{_names(group)} {'is' if len(group) == 1 else 'are'} {verb}")
    return ", ".join(parts)


def _form_text(ks: KernelSyntax, shape: Any) -> str:
    bound = ks.text(unparen(shape.bound))
    if shape.form == "loop":
        return "grid-stride loop"
    if shape.form == "return":
        return f"code after `if ({shape.var} >= {bound}) return;`"
    return f"`if ({shape.var} < {bound})`"


_ALLOCATORS = ("cudaMalloc", "cudaMallocManaged", "cudaMallocAsync", "cudaMallocFromPoolAsync")


@check("vector_type_available")
def vector_type_available(ctx: CheckContext) -> Verdict:
    """Hold when every vectorized array has the same element type, one with a 16-byte vector type."""
    fn = ctx.function
    arrays: list[str] = ctx.fact("arrays", [])
    lanes: dict[str, int] = {}
    for name in arrays:
        p = fn.param(name)
        if p is None:
            return unknown(f"`{name}` is not a parameter of `{fn.name}`")
        words = set(re.findall(r"\w+", p.type))
        templ = sorted(words & _template_names(fn))
        if templ:
            return unknown(f"the element type of `{name}` is the template parameter `{templ[0]}`")
        vec = VECTOR_TYPES.get(p.base_type)
        if vec is None:
            return violated(f"`{name}` has `{p.base_type}` elements, which have no 16-byte vector type")
        lanes[name] = vec[1]
    if len(set(lanes.values())) > 1:
        a, b = sorted(lanes, key=lambda k: lanes[k])[:: len(lanes) - 1]
        return violated(f"`{a}` and `{b}` have elements of different sizes; one vector width cannot serve both")
    if not lanes:
        return unknown("no array to vectorize")
    first = fn.param(arrays[0])
    assert first is not None
    vec_name, count = VECTOR_TYPES[first.base_type]
    verb = "holds" if len(arrays) == 1 else "hold"
    return holds(f"{', '.join(f'`{a}`' for a in arrays)} {verb} `{first.base_type}`: {count} make one `{vec_name}`")


@check("elementwise_index_only")
def elementwise_index_only(ctx: CheckContext) -> Verdict:
    """Hold when the body touches the arrays only as `a[i]` and uses `i` for nothing else."""
    fn = ctx.function
    ks = _ks(ctx)
    shape = ctx.fact("shape")
    if isinstance(shape, RowLoop):
        return _row_index_only(ctx, shape)
    accesses = ctx.fact("accesses", ())
    var = shape.var
    body = shape.body
    lo, hi = body.start_byte - fn.base, body.end_byte - fn.base
    inside = [a for a in fn.accesses if lo <= a.span[0] < hi]
    spans = {a.span for a in accesses}
    arrays = set(ctx.fact("arrays", []))
    taken = next(
        (a for a in accesses if a.via_ldg or a.kind is AccessKind.ADDRESS or a.kind is AccessKind.ATOMIC), None
    )
    if taken is not None:
        return violated(f"`{taken.base}[{var}]` is used by address (`&`, `__ldg` or an atomic), not as a value")
    for a in inside:
        if a.span in spans:
            continue
        if var in a.index_names:
            return violated(f"`{a.array}[{a.index}]` reads another element than `{var}`; elements depend on each other")
        if a.base in arrays:
            return violated(f"`{a.base}[{a.index}]` mixes another index with `{a.base}[{var}]`")
    uses = len(ks.identifiers(body, var))
    if uses != len(accesses):
        other = next(
            (
                n
                for n in ks.identifiers(body, var)
                if (n.start_byte - fn.base) not in {a.index_span[0] for a in accesses}
            ),
            None,
        )
        where = f" at line {_line(ctx.model, other.start_byte)}" if other is not None else ""
        return violated(f"`{var}` is used as a value in the body{where}, not only as the index of the arrays")
    for name in sorted(arrays):
        subscripted = sum(1 for a in inside if a.base == name)
        if len(ks.identifiers(body, name)) != subscripted:
            return unknown(f"`{name}` is used as a pointer in the body, not only as `{name}[{var}]`")
    return holds(f"the body reads and writes {ctx.fact('names')} only at `[{var}]`")


def _allocated_in(model: FileModel, host: Function, name: str) -> bool:
    body = model.text[host.base : host.base + host.length].decode("utf-8", "replace")
    alloc = "|".join(_ALLOCATORS)
    pattern = rf"\b(?:{alloc})\s*\(\s*(?:\(\s*void\s*\*\s*\*\s*\)\s*)?&\s*{re.escape(name)}\s*[,)]"
    if re.search(pattern, body) is None:
        return False
    # A later assignment or increment could move the pointer off the allocation's start.
    moved = rf"(?<![\w.>])({re.escape(name)}\s*(=(?!=)|\+=|-=|\+\+|--)|(\+\+|--)\s*{re.escape(name)}\b)"
    return re.search(moved, body) is None


def _offset(model: FileModel, arg: str) -> tuple[str, int | None] | None:
    m = re.fullmatch(r"\s*(\w+)\s*\+\s*(.+?)\s*", arg) or re.fullmatch(r"\s*&\s*(\w+)\s*\[\s*(.+?)\s*\]\s*", arg)
    if m is None:
        return None
    base, raw = m.group(1), m.group(2)
    if (base.isdigit() or base in model.constants) and re.fullmatch(r"[A-Za-z_]\w*", raw):
        # `1 + x` is the same pointer as `x + 1`.
        base, raw = raw, base
    value = int(raw) if raw.isdigit() else model.constants.get(raw)
    return base, value


@check("pointers_aligned")
def pointers_aligned(ctx: CheckContext, bytes: int = 16) -> Verdict:
    """Hold when every launch in the file passes freshly allocated buffers (256-byte aligned) for the arrays."""
    fn = ctx.function
    model = ctx.model
    shape = ctx.fact("shape")
    if isinstance(shape, RowLoop):
        offset = _row_aligned(ctx, shape)
        if offset is not None:
            return offset
    launches = launches_of(model, fn.name)
    if not launches:
        return unknown(f"no launch of `{fn.name}` in this file shows where its arrays point")
    for name in ctx.fact("arrays", []):
        p = fn.param(name)
        elem = type_size(p.base_type) if p is not None else None
        for host, launch in launches:
            arg = launch_arg(launch, fn, name)
            if arg is None:
                return unknown(f"the launch in `{host.name}` passes {len(launch.args)} arguments")
            if re.fullmatch(r"\w+", arg):
                if _allocated_in(model, host, arg):
                    continue
                return unknown(
                    f"`{arg}`, passed for `{name}` in `{host.name}`, is not shown to be a `cudaMalloc` buffer passed "
                    "unchanged"
                )
            off = _offset(model, arg)
            if off is not None and off[1] is not None and elem is not None:
                if (off[1] * elem) % bytes == 0 and _allocated_in(model, host, off[0]):
                    continue
                if (off[1] * elem) % bytes:
                    return violated(
                        f"the launch in `{host.name}` passes `{arg}` for `{name}`, {off[1] * elem % bytes} bytes past "
                        f"a {bytes}-byte boundary"
                    )
            return unknown(f"the launch in `{host.name}` passes `{arg}` for `{name}`; its alignment is not known")
    n = len(launches)
    return holds(
        f"{'the launch' if n == 1 else f'all {n} launches'} in this file pass{'es' if n == 1 else ''} buffers from "
        "`cudaMalloc` (256-byte aligned)"
    )


@check("no_alias_hazard")
def no_alias_hazard(ctx: CheckContext) -> Verdict:
    """Hold when loading whole vectors before storing cannot read a value another array's store changed."""
    fn = ctx.function
    accesses = sorted(ctx.fact("accesses", ()), key=lambda a: a.span[0])
    first_store = next((a for a in accesses if a.kind is not AccessKind.READ), None)
    if first_store is None:
        return holds("the body stores to none of the arrays")
    late = [
        a
        for a in accesses
        if a.span[0] > first_store.span[1] and a.kind is not AccessKind.WRITE and a.base != first_store.base
    ]
    stmt_end = _statement_end(ctx, first_store)
    late = [a for a in late if a.span[0] > stmt_end]
    if not late:
        return holds(f"every load comes before the store to `{first_store.base}`, as in the vector form")
    arrays = [fn.param(n) for n in ctx.fact("arrays", [])]
    params = [p for p in arrays if p is not None]
    if params and all(p.is_restrict for p in params):
        return holds(f"{ctx.fact('names')} are `__restrict__`")
    ok, reason = distinct_launch_args(ctx.model, fn, params)
    if ok is None:
        return unknown(f"`{late[0].base}` is read after the store to `{first_store.base}`, and {reason}")
    if ok:
        return holds(reason)
    return violated(f"`{late[0].base}` is read after a store to `{first_store.base}` and {reason}")


def _statement_end(ctx: CheckContext, acc: Any) -> int:
    ks = _ks(ctx)
    node = ks.node.descendant_for_byte_range(*ctx.function.span(acc.span))
    while node is not None and node.type not in ("expression_statement", "declaration", "return_statement"):
        node = node.parent
    return (node.end_byte - ctx.function.base) if node is not None else acc.span[1]


def grid_factor(matches: list[Any]) -> int | None:
    """Return the lanes of the one vector type every array moves after the rewrite (the grid shrinks by as many);
    None when the arrays use several widths."""
    region = matches[0].region
    lanes = set()
    for name in region.facts.get("arrays", []):
        p = region.function.param(name)
        vec = VECTOR_TYPES.get(p.base_type) if p is not None else None
        if vec is None:
            return None
        lanes.add(vec[1])
    return lanes.pop() if len(lanes) == 1 else None


_COMPONENTS = ("x", "y", "z", "w")


def vectorize_elementwise(ctx: RewriteContext) -> list[Edit] | None:
    """Load and store whole 16-byte vectors per thread, with a scalar tail for the last `n % lanes` elements."""
    if isinstance(ctx.fact("shape"), RowLoop):
        return vectorize_row(ctx)
    shape: Elementwise = ctx.fact("shape")
    accesses = sorted(ctx.fact("accesses", ()), key=lambda a: a.span[0])
    arrays: list[str] = ctx.fact("arrays", [])
    fn = ctx.function
    if not accesses or _template_typed(ctx, arrays):
        return None
    if any(a.via_ldg or a.kind in (AccessKind.ADDRESS, AccessKind.ATOMIC) for a in accesses):
        return None
    vectors = {}
    for name in arrays:
        p = fn.param(name)
        pair = VECTOR_TYPES.get(p.base_type) if p is not None else None
        if pair is None:
            return None
        vectors[name] = pair
    lanes = {v[1] for v in vectors.values()}
    if len(lanes) != 1:
        return None
    (k,) = lanes
    unit = ctx.indent_unit()
    ind = ctx.indent_at(shape.stmt.start_byte)
    inner = ind + unit
    var = shape.var
    bound = _bound_text(ctx, shape)
    names = {a: _fresh(ctx, f"{a}_v") for a in arrays}
    body = shape.body
    if body.type in ("compound_statement", "statement_run"):
        kids = list(body.named_children)
        if not kids:
            return None
        span = (kids[0].start_byte, kids[-1].end_byte)
        declares = any(c.type == "declaration" for c in kids)
    else:
        span = (body.start_byte, body.end_byte)
        declares = body.type == "declaration"
    # More than four lanes (2-byte elements) is the packed form: the vector is a `uint4` held in `<a>_u`, and the
    # lanes are read and written through `<a>_v`, a pointer to the element type into it.
    packed = k > len(_COMPONENTS)
    units = {a: _fresh(ctx, f"{a}_u") for a in arrays} if packed else names
    lines = []
    for name in arrays:
        vec = vectors[name][0]
        p = fn.param(name)
        assert p is not None
        read = any(a.base == name and a.kind is not AccessKind.WRITE for a in accesses)
        written = any(a.base == name and a.kind is not AccessKind.READ for a in accesses)
        load = f"reinterpret_cast<const {vec}*>({name})[{var}]"
        if read and not written:
            lines.append(f"const {vec} {units[name]} = {load};")
        elif read:
            lines.append(f"{vec} {units[name]} = {load};")
        else:
            lines.append(f"{vec} {units[name]};")
        if packed:
            const = "const " if read and not written else ""
            elem = p.base_type
            lines.append(f"{const}{elem}* {names[name]} = reinterpret_cast<{const}{elem}*>(&{units[name]});")
    for lane in range(k):
        comp = f"[{lane}]" if packed else f".{_COMPONENTS[lane]}"
        repl = [(ctx.abs(a.span), f"{names[a.base]}{comp}") for a in accesses]
        text = _substitute(ctx, span, repl)
        if body.type != "compound_statement":
            text = _indent_more(text, unit)
        if declares:
            lines.append("{\n" + inner + unit + _indent_more(text, unit) + "\n" + inner + "}")
        else:
            lines.append(text)
    for name in arrays:
        if any(a.base == name and a.kind is not AccessKind.READ for a in accesses):
            lines.append(f"reinterpret_cast<{vectors[name][0]}*>({name})[{var}] = {units[name]};")
    block = "{\n" + "".join(f"{inner}{line}\n" for line in lines) + ind + "}"
    stmt = (shape.stmt.start_byte, shape.stmt.end_byte)
    if shape.form in ("if", "return"):
        text = f"if ({var} < {bound} / {k}) {block}\n{ind}{var} += {bound} / {k} * {k};\n{ind}{ctx.text(stmt)}"
        edits = [Edit(stmt[0], stmt[1], text)]
        if shape.var_const:
            edits += _drop_const(ctx, shape.decl)
        return edits + _shrink_launches(ctx, shape, k)
    header_end = body.start_byte
    cond = shape.bound
    first = _substitute(ctx, (stmt[0], header_end), [((cond.start_byte, cond.end_byte), f"{bound} / {k}")])
    if shape.decl is None:
        init = shape.stmt.child_by_field_name("initializer")
        init_decl = next((c for c in init.named_children if c.type == "init_declarator"), None) if init else None
        value = init_decl.child_by_field_name("value") if init_decl is not None else None
        if value is None:
            return None
        tail = _substitute(ctx, stmt, [((value.start_byte, value.start_byte), f"{bound} / {k} * {k} + ")])
    else:
        semi = next((c for c in shape.stmt.children if c.type == ";"), None)
        decl = shape.decl.named_children
        init_decl = next((c for c in decl if c.type == "init_declarator"), None)
        value = init_decl.child_by_field_name("value") if init_decl is not None else None
        if semi is None or value is None or shape.var_const:
            return None
        start = ctx.text((value.start_byte, value.end_byte))
        tail = _substitute(ctx, stmt, [((semi.start_byte, semi.start_byte), f"{var} = {bound} / {k} * {k} + {start}")])
    return [Edit(stmt[0], stmt[1], f"{first.rstrip()} {block}\n{ind}{tail}")]


# Loops over a row: the lanes of a row walk it with a fixed stride, each reading (or writing) one element of each
# array per iteration. Two spellings are recognised, by what the loop does, not by its names:
#
# - form `row`: `for (T c = L; c < N; c += S) body`, with `c` used in the body only as the last addend of an
#   element index `P[B + c]` (`P` a pointer parameter, or a local pointer into one; `B` loop-invariant). The rewrite
#   walks vectors `c < N / K` with the same L and S, then the scalar tail `c = N / K * K + L` in the original body.
# - form `counted`: `for (T w = 0; w < W; ++w) { T k = w * S + lane; body }`, with `k` used as above. The rewrite
#   runs `w < W / K` over vectors (`k` then counts vectors), then the original loop from `w = W / K * K`.
#
# Either way the lanes together cover the same elements as before (when L, or `lane`, takes every value below S
# once), but each lane now takes K adjacent elements per step: per-element stores are unchanged; a value carried
# from one iteration to the next (a running sum or maximum) sees the row's elements in another order.

_ROW_JUMPS = ("break_statement", "continue_statement", "return_statement", "goto_statement")
_ROW_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
_ROW_CALLS = ("__syncthreads", "__syncwarp", "__shfl", "atomic", "__threadfence", "__ldg", "cooperative_groups")
_SIMPLE = ("identifier", "number_literal", "field_expression", "call_expression", "subscript_expression")


@dataclass(frozen=True)
class RowLoop:
    """A loop in which each lane reads or writes one element per array per iteration of a row it strides."""

    form: str  # `row` or `counted`
    var: str  # the loop's own variable (`c`, or the counter `w`)
    index: str  # the element index (`c`, or `k` declared first in the body)
    stmt: Node  # the `for` statement
    body: Node  # the loop's compound (or single) statement
    lanes_from: Node | None  # the per-lane start (form `row`: L; form `counted`: the `lane` addend of `k`)
    stride: Node  # S
    bound: Node  # N (form `row`) or W (form `counted`)
    elements: tuple[int, int]  # absolute span of the statements run per element (for `counted`: after `k`'s)
    offsets: tuple[str, ...]  # per access (in `accesses` order): the row offset B as written ("" for none)
    carried: tuple[str, ...]  # variables declared before the loop that the body assigns

    @property
    def last(self) -> bool:
        """Row loops are never the kernel's early-return form."""
        return False


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def _unparen_all(node: Node) -> Node:
    while node is not None and node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def _for_parts(ks: KernelSyntax, stmt: Node) -> tuple[str, Node, Node, Node] | None:
    """Return (var, start, bound, step) of `for (T v = start; v < bound; v += step)` (`++v` is step 1: None)."""
    init = stmt.child_by_field_name("initializer")
    cond = stmt.child_by_field_name("condition")
    upd = stmt.child_by_field_name("update")
    if init is None or init.type != "declaration" or cond is None or upd is None:
        return None
    decls = [c for c in init.named_children if c.type == "init_declarator"]
    if len(decls) != 1:
        return None
    name, start = decls[0].child_by_field_name("declarator"), decls[0].child_by_field_name("value")
    if name is None or name.type != "identifier" or start is None:
        return None
    var = ks.text(name)
    cond = _unparen_all(cond)
    if cond.type != "binary_expression":
        return None
    op = ks.text(cond.child_by_field_name("operator"))
    left, right = _unparen_all(cond.child_by_field_name("left")), _unparen_all(cond.child_by_field_name("right"))
    if op == "<" and left.type == "identifier" and ks.text(left) == var:
        bound = right
    elif op == ">" and right.type == "identifier" and ks.text(right) == var:
        bound = left
    else:
        return None
    upd = _unparen_all(upd)
    if upd.type == "update_expression" and ks.text(upd).replace(" ", "") in (f"++{var}", f"{var}++"):
        return var, start, bound, upd
    if upd.type == "assignment_expression" and ks.text(upd.child_by_field_name("operator")) == "+=":
        target = _unparen_all(upd.child_by_field_name("left"))
        if target.type == "identifier" and ks.text(target) == var:
            return var, start, bound, upd.child_by_field_name("right")
    return None


def _names_in(ks: KernelSyntax, node: Node) -> set[str]:
    return {ks.text(n) for n in _walk(node) if n.type == "identifier"}


def _invariant(ks: KernelSyntax, node: Node, loop: Node, also: set[str]) -> bool:
    """Return whether an expression reads nothing the loop assigns (nor the names in `also`)."""
    names = _names_in(ks, node)
    return not (names & also) and not any(ks.is_assigned(n, within=loop) for n in names)


def _split_index(ks: KernelSyntax, node: Node, var: str) -> Node | bool | None:
    """Return B of an index `B + var` (or `var + B`); None for a bare `var`; False for any other use of `var`."""
    node = _unparen_all(node)
    if node.type == "identifier" and ks.text(node) == var:
        return None
    if node.type == "binary_expression" and ks.text(node.child_by_field_name("operator")) == "+":
        left, right = _unparen_all(node.child_by_field_name("left")), _unparen_all(node.child_by_field_name("right"))
        if right.type == "identifier" and ks.text(right) == var and var not in _names_in(ks, left):
            return left
        if left.type == "identifier" and ks.text(left) == var and var not in _names_in(ks, right):
            return right
    return False


def _carried(ks: KernelSyntax, body: Node) -> tuple[str, ...]:
    below = list(_walk(body))  # One walk of the body, read three times.
    declared = {
        ks.text(d.child_by_field_name("declarator"))
        for d in below
        if d.type == "init_declarator" and d.child_by_field_name("declarator") is not None
    }
    declared |= {ks.text(d) for d in below if d.type == "identifier" and d.parent.type == "declaration"}
    out: list[str] = []
    for n in below:
        target = None
        if n.type == "assignment_expression":
            target = _unparen_all(n.child_by_field_name("left"))
        elif n.type == "update_expression":
            target = _unparen_all(n.child_by_field_name("argument"))
        if target is not None and target.type == "identifier":
            name = ks.text(target)
            if name not in declared and name not in out:
                out.append(name)
    return tuple(out)


def _row_accesses(
    ks: KernelSyntax, fn: Function, elements: Node, index: str, after: int = 0
) -> tuple[list[Access], list[str]] | None:
    """Return the global accesses indexed `[B + index]` in a loop body (past the absolute offset `after`) and their
    B, or None when the index is used any other way or an access is not a plain 2-, 4- or 8-byte element of a
    pointer parameter."""
    accesses: list[Access] = []
    offsets: list[str] = []
    spans = set()
    for acc in fn.accesses:
        if not _within(acc.span, elements, fn) or acc.span[0] + fn.base < after or index not in acc.index_names:
            continue
        if acc.space is not MemorySpace.GLOBAL or len(acc.indices) != 1 or acc.vector_cast or acc.via_ldg:
            return None
        if acc.kind not in (AccessKind.READ, AccessKind.WRITE, AccessKind.READ_WRITE) or acc.width not in (2, 4, 8):
            return None
        param = fn.param(acc.base)
        if param is None or param.pointer_depth != 1:
            return None
        if acc.array != acc.base and fn.param(acc.array) is not None:
            return None
        node = ks.node.descendant_for_byte_range(*fn.span(acc.index_span))
        if node is None:
            return None
        base = _split_index(ks, node, index)
        if base is False:
            return None
        accesses.append(acc)
        offsets.append(ks.text(base) if base is not None else "")
        spans.add(acc.index_span)
    if not accesses:
        return None
    # Every use of the index is one of these element indices.
    uses = [n for n in ks.identifiers(elements, index) if n.start_byte >= after]
    inside = [n for n in uses if any(s[0] <= n.start_byte - fn.base < s[1] for s in spans)]
    if len(inside) != len(uses):
        return None
    return accesses, offsets


def _plain_body(ks: KernelSyntax, body: Node, var: str) -> bool:
    """Return whether a loop body runs straight through: no nested loop, jump, barrier, shuffle or atomic."""
    for n in _walk(body):
        if n.type in _ROW_LOOPS or n.type in _ROW_JUMPS:
            return False
        if n.type == "call_expression":
            callee = ks.text(n.child_by_field_name("function"))
            if any(callee.startswith(c) for c in _ROW_CALLS):
                return False
    return not ks.is_assigned(var, within=body)


def row_loops(ks: KernelSyntax, fn: Function) -> list[tuple[RowLoop, list[Access]]]:
    """Return the loops over a row whose element accesses could move whole vectors, with their accesses."""
    out = []
    # A loop whose body reads or writes no global memory has no element access to vectorize (`_row_accesses` would
    # find none): its body is not walked. One query finds the `for` statements (in source order, as a walk would).
    spans = [a.span for a in fn.accesses if a.space is MemorySpace.GLOBAL]
    for stmt in nodes(ks.model, fn, "(for_statement) @loop", "loop") if spans else ():
        body = stmt.child_by_field_name("body")
        if body is None:
            continue
        lo, hi = body.start_byte - fn.base, body.end_byte - fn.base
        if not any(lo <= s[0] and s[1] <= hi for s in spans):
            continue
        parts = _for_parts(ks, stmt)
        if parts is None:
            continue
        var, start, bound, step = parts
        if not _plain_body(ks, body, var) or not _invariant(ks, bound, stmt, {var}):
            continue
        shape = _row_shape(ks, fn, stmt, body, var, start, bound, step)
        if shape is not None:
            out.append(shape)
    return out


def _row_shape(
    ks: KernelSyntax, fn: Function, stmt: Node, body: Node, var: str, start: Node, bound: Node, step: Node
) -> tuple[RowLoop, list[Access]] | None:
    stride = step if step.type != "update_expression" else None
    if stride is not None and const_value(ks.model, stride) != 1:
        # Form `row`: the index walks the row itself; a start that depends on the bound is a tail already split off.
        if not _invariant(ks, stride, stmt, {var}) or _names_in(ks, start) & _names_in(ks, bound):
            return None
        found = _row_accesses(ks, fn, body, var)
        if found is None:
            return None
        accesses, offsets = found
        if any(not _offset_invariant(ks, stmt, o, accesses[i]) for i, o in enumerate(offsets)):
            return None
        carried = _carried(ks, body)
        return RowLoop(
            "row", var, var, stmt, body, start, stride, bound, _span_of(body), tuple(offsets), carried
        ), accesses
    # Form `counted`: `for (w = 0; w < W; ++w) { T k = w * S + lane; ... }`.
    if const_value(ks.model, start) != 0 or body.type != "compound_statement":
        return None
    kids = [c for c in body.named_children if c.type != "comment"]
    if len(kids) < 2 or kids[0].type != "declaration":
        return None
    decls = [c for c in kids[0].named_children if c.type == "init_declarator"]
    if len(decls) != 1:
        return None
    name, value = decls[0].child_by_field_name("declarator"), decls[0].child_by_field_name("value")
    if name is None or name.type != "identifier" or value is None:
        return None
    index = ks.text(name)
    lane_stride = _counter_term(ks, _unparen_all(value), var)
    if lane_stride is None:
        return None
    lane, s = lane_stride
    if not _invariant(ks, lane, stmt, {var, index}) or not _invariant(ks, s, stmt, {var, index}):
        return None
    if var in {ks.text(n) for k in kids[1:] for n in _walk(k) if n.type == "identifier"}:
        return None
    if ks.is_assigned(index, within=body):
        return None
    found = _row_accesses(ks, fn, body, index, after=kids[0].end_byte)
    if found is None:
        return None
    accesses, offsets = found
    if any(not _offset_invariant(ks, stmt, o, accesses[i]) for i, o in enumerate(offsets)):
        return None
    elements = (kids[1].start_byte, kids[-1].end_byte)
    return (
        RowLoop("counted", var, index, stmt, body, lane, s, bound, elements, tuple(offsets), _carried(ks, body)),
        accesses,
    )


def _span_of(body: Node) -> tuple[int, int]:
    kids = [c for c in body.named_children if c.type != "comment"] if body.type == "compound_statement" else []
    if body.type == "compound_statement":
        return (kids[0].start_byte, kids[-1].end_byte) if kids else (body.start_byte, body.start_byte)
    return body.start_byte, body.end_byte


def _counter_term(ks: KernelSyntax, value: Node, var: str) -> tuple[Node, Node] | None:
    """Return (lane, S) of `var * S + lane` (any order of the operands)."""
    if value.type != "binary_expression" or ks.text(value.child_by_field_name("operator")) != "+":
        return None
    a, b = value.child_by_field_name("left"), value.child_by_field_name("right")
    for prod, lane in ((_unparen_all(a), b), (_unparen_all(b), a)):
        if prod.type != "binary_expression" or ks.text(prod.child_by_field_name("operator")) != "*":
            continue
        x, y = _unparen_all(prod.child_by_field_name("left")), _unparen_all(prod.child_by_field_name("right"))
        if x.type == "identifier" and ks.text(x) == var and var not in _names_in(ks, y):
            return lane, y
        if y.type == "identifier" and ks.text(y) == var and var not in _names_in(ks, x):
            return lane, x
    return None


def _offset_invariant(ks: KernelSyntax, stmt: Node, offset: str, acc: Access) -> bool:
    """Return whether a row offset and the local pointer an access goes through do not change inside the loop."""
    names = set(re.findall(r"[A-Za-z_]\w*", offset))
    if acc.array != acc.base:
        names.add(acc.array)
    return not any(ks.is_assigned(n, within=stmt) for n in names)


def _lanes_cover(ks: KernelSyntax, lane: Node | None, stride: Node) -> bool:
    """Return whether the lanes' starts take every value below the stride once: `threadIdx.x` with `blockDim.x`,
    or `t % S` with the stride S (t the thread's x index)."""
    if lane is None:
        return False
    model = ks.model
    if builtin_axis(model, stride, "blockDim") == "x":
        return linear(ks, lane) == {"tid.x": Fraction(1)}
    lane = _unparen_all(lane)
    if lane.type == "identifier":
        defs = ks.definitions.get(ks.text(lane)) or []
        if len(defs) != 1 or defs[0] is None:
            return False
        lane = _unparen_all(defs[0])
    if lane.type != "binary_expression" or ks.text(lane.child_by_field_name("operator")) != "%":
        return False
    mod = _unparen_all(lane.child_by_field_name("right"))
    same = squash(ks.text(mod)) == squash(ks.text(_unparen_all(stride)))
    if not same:
        a, b = const_value(model, mod), const_value(model, stride)
        same = a is not None and a == b
    return same and linear(ks, lane.child_by_field_name("left")) == {"tid.x": Fraction(1)}


def _row_form_text(ks: KernelSyntax, shape: RowLoop) -> str:
    if shape.form == "row":
        start = ks.text(shape.lanes_from) if shape.lanes_from is not None else "?"
        return f"loop over a row (`{shape.var}` from `{start}` by `{ks.text(shape.stride)}`)"
    return f"loop over a row (`{shape.index}` = `{shape.var} * {ks.text(shape.stride)} + …`)"


def _row_region(ctx: MatchContext, fn: Function, ks: KernelSyntax, shape: RowLoop, accesses: list[Access]) -> Region:
    arrays = sorted({a.base for a in accesses}, key=lambda b: _param_index(fn, b))
    width = accesses[0].width or 4
    elem = fn.param(arrays[0])
    vec = VECTOR_TYPES.get(elem.base_type if elem is not None else "", (None, 16 // width))
    shown = sorted({a.array for a in accesses}, key=lambda b: min(x.span[0] for x in accesses if x.array == b))
    return Region(
        AnchorKind.ACCESS,
        fn,
        accesses[0].span,
        f"vector-row:{shape.var}:{shape.stmt.start_byte - fn.base}",
        {
            "kernel": fn.name,
            "shape": shape,
            "accesses": tuple(accesses),
            "arrays": arrays,
            "names": _names(shown),
            "what": _what(accesses, shown, key=lambda a: a.array),
            "width": width,
            "lanes": vec[1],
            "vector": vec[0] or f"{16 // width}-wide vector",
            "index": shape.index,
            "bound": ks.text(unparen(shape.bound)),
            "form": _row_form_text(ks, shape),
            "_related": _related_launches(ctx.model, fn),
        },
    )


def _row_index_only(ctx: CheckContext, shape: RowLoop) -> Verdict:
    return holds(
        f"the loop reads and writes {ctx.fact('names')} only at `[… + {shape.index}]` and uses `{shape.index}` for "
        "nothing else"
    )


def _row_per_element(ctx: CheckContext, shape: RowLoop) -> Verdict:
    ks = _ks(ctx)
    lanes = ctx.fact("lanes", 4)
    if shape.carried:
        names = _names(list(shape.carried))
        verb = "carries" if len(shape.carried) == 1 else "carry"
        return unknown(
            f"{names} {verb} a value from one element to the next: each lane now takes {lanes} adjacent elements per "
            "step, so the row is accumulated in another order (a floating-point sum rounds differently, and each "
            "lane's partial differs; their combination over all lanes does not)"
        )
    if not _lanes_cover(ks, shape.lanes_from, shape.stride):
        return unknown(
            f"the lanes' starts are not shown to take every value below `{ks.text(shape.stride)}` once; the vector "
            "loop would give lanes other elements than before"
        )
    body = ks.text(shape.body)
    if re.search(r"\b(threadIdx|laneid)\b", body):
        return unknown("the loop body reads the thread's index; a lane now computes other elements than before")
    return holds("each element is computed from that element alone, and the lanes still cover the row once")


def _row_aligned(ctx: CheckContext, shape: RowLoop) -> Verdict | None:
    """Return unknown when a row starts at an offset from its parameter (aligned only for some sizes)."""
    lanes = ctx.fact("lanes", 4)
    for acc, off in zip(ctx.fact("accesses", ()), shape.offsets, strict=True):
        value = int(off) if off.isdigit() else ctx.model.constants.get(off)
        if off and value is not None and value % lanes == 0 and acc.array == acc.base:
            continue
        if off:
            return unknown(
                f"`{acc.array}` is read from `{acc.array} + {off}`: 16-byte aligned only when `{off}` is a multiple "
                f"of {lanes} elements"
            )
        if acc.array != acc.base:
            return unknown(
                f"`{acc.array}` points into `{acc.base}`: 16-byte aligned only when its offset is a multiple of "
                f"{lanes} elements"
            )
    return None


@check("vector_index_scope")
def vector_index_scope(ctx: CheckContext) -> Verdict:
    """Hold when the element index is used only where the rewrite moves it (the guard, or the loop over a row)."""
    shape = ctx.fact("shape")
    if isinstance(shape, RowLoop):
        return holds(f"`{shape.index}` is declared by the loop and used only there")
    return index_used_only_in_guard(ctx)


@check("vector_body_per_element")
def vector_body_per_element(ctx: CheckContext) -> Verdict:
    """Hold when vectorizing computes every element as before (per element; over a row, in the same lanes)."""
    shape = ctx.fact("shape")
    if isinstance(shape, RowLoop):
        return _row_per_element(ctx, shape)
    return body_is_per_element(ctx, vector=True)


@check("vector_launches_shrink")
def vector_launches_shrink(ctx: CheckContext) -> Verdict:
    """Hold when the launches can start as many fewer threads as the rewrite needs (none, over a row)."""
    shape = ctx.fact("shape")
    if isinstance(shape, RowLoop):
        return holds("the loop walks the same row in vectors; the launches need no change")
    return launches_shrink(ctx)


def _group_names(ctx: RewriteContext, accesses: list[Access], offsets: list[str]) -> dict[tuple[str, str], str]:
    names: dict[tuple[str, str], str] = {}
    for acc, off in zip(accesses, offsets, strict=True):
        key = (acc.array, off)
        if key in names:
            continue
        name = _fresh(ctx, f"{acc.array}_v")
        while name in names.values():
            name += "_"
        names[key] = name
    return names


def _pointer_text(ctx: RewriteContext, array: str, offset: str) -> str:
    if not offset:
        return array
    # The offset is kept as written; anything but names, products, subscripts and calls is parenthesized.
    simple = re.fullmatch(r"[\w.\s*\[\]()]+", offset) is not None and not re.search(r"[-+?:<>&|]", offset)
    return f"{array} + {offset}" if simple else f"{array} + ({offset})"


def _paren(text: str) -> str:
    return text if re.fullmatch(r"[\w.]+", text) else f"({text})"


def vectorize_row(ctx: RewriteContext) -> list[Edit] | None:
    """Walk a row in 16-byte vectors, with the original loop as the tail for the last `n % lanes` elements."""
    shape: RowLoop = ctx.fact("shape")
    fn = ctx.function
    arrays: list[str] = ctx.fact("arrays", [])
    order = sorted(zip(ctx.fact("accesses", ()), shape.offsets, strict=True), key=lambda p: p[0].span[0])
    accesses = [a for a, _ in order]
    offsets = [o for _, o in order]
    if not accesses or _template_typed(ctx, arrays):
        return None
    pairs = {n: VECTOR_TYPES.get(p.base_type) for n in arrays if (p := fn.param(n)) is not None}
    if len(pairs) != len(arrays) or None in pairs.values() or len({v[1] for v in pairs.values() if v}) != 1:
        return None
    vec, k = next(v for v in pairs.values() if v is not None)
    unit = ctx.indent_unit()
    ind = ctx.indent_at(shape.stmt.start_byte)
    inner = ind + unit
    names = _group_names(ctx, accesses, offsets)
    packed = k > len(_COMPONENTS)
    units = dict(names)
    if packed:
        for g, n in names.items():
            u = _fresh(ctx, f"{n.removesuffix('_v')}_u")
            while u in units.values():
                u += "_"
            units[g] = u
    lines: list[str] = []
    if shape.form == "counted":
        kids = [c for c in shape.body.named_children if c.type != "comment"]
        lines.append(ctx.text((kids[0].start_byte, kids[0].end_byte)))
    for (array, off), name in names.items():
        base = next(a.base for a in accesses if a.array == array)
        elem = fn.param(base)
        assert elem is not None
        group = [a for a, o in zip(accesses, offsets, strict=True) if (a.array, o) == (array, off)]
        read = any(a.kind is not AccessKind.WRITE for a in group)
        written = any(a.kind is not AccessKind.READ for a in group)
        ptr = _pointer_text(ctx, array, off)
        load = f"reinterpret_cast<const {vec}*>({ptr})[{shape.index}]"
        if read and not written:
            lines.append(f"const {vec} {units[(array, off)]} = {load};")
        elif read:
            lines.append(f"{vec} {units[(array, off)]} = {load};")
        else:
            lines.append(f"{vec} {units[(array, off)]};")
        if packed:
            const = "const " if read and not written else ""
            t = elem.base_type
            lines.append(f"{const}{t}* {name} = reinterpret_cast<{const}{t}*>(&{units[(array, off)]});")
    span = shape.elements
    declares = any(
        c.type == "declaration" for c in shape.body.named_children if span[0] <= c.start_byte and c.end_byte <= span[1]
    ) or (shape.body.type == "declaration")
    for lane in range(k):
        comp = f"[{lane}]" if packed else f".{_COMPONENTS[lane]}"
        repl = [(ctx.abs(a.span), f"{names[(a.array, o)]}{comp}") for a, o in zip(accesses, offsets, strict=True)]
        text = _substitute(ctx, span, repl)
        if shape.body.type != "compound_statement":
            text = _indent_more(text, unit)
        if declares:
            lines.append("{\n" + inner + unit + _indent_more(text, unit) + "\n" + inner + "}")
        else:
            lines.append(text)
    for array, off in names:
        group = [a for a, o in zip(accesses, offsets, strict=True) if (a.array, o) == (array, off)]
        if any(a.kind is not AccessKind.READ for a in group):
            ptr = _pointer_text(ctx, array, off)
            lines.append(f"reinterpret_cast<{vec}*>({ptr})[{shape.index}] = {units[(array, off)]};")
    block = "{\n" + "".join(f"{inner}{line}\n" for line in lines) + ind + "}"
    stmt = (shape.stmt.start_byte, shape.stmt.end_byte)
    body = (shape.body.start_byte, shape.body.end_byte)
    bound = _paren(ctx.text((shape.bound.start_byte, shape.bound.end_byte)))
    head = _substitute(
        ctx, (stmt[0], body[0]), [((shape.bound.start_byte, shape.bound.end_byte), f"{bound} / {k}")]
    ).rstrip()
    init = shape.stmt.child_by_field_name("initializer")
    decl = next(c for c in init.named_children if c.type == "init_declarator")
    start = decl.child_by_field_name("value")
    if shape.form == "row":
        first = ctx.text((start.start_byte, start.end_byte))
        tail_start = f"{bound} / {k} * {k} + {_paren(first) if re.search(r'[?:<>&|=]', first) else first}"
    else:
        tail_start = f"{bound} / {k} * {k}"
    tail = _substitute(ctx, stmt, [((start.start_byte, start.end_byte), tail_start)])
    return [Edit(stmt[0], stmt[1], f"{head} {block}\n{ind}{tail}")]
