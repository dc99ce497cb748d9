"""Rules of the `scalar-global-access` card (Load and store 16-byte vectors): what only this card uses.

Registered here: matcher `scalar_elementwise_accesses`, check `vector_type_available`, check
`elementwise_index_only`, check `pointers_aligned`, check `no_alias_hazard`. The card's rewrite and the recognisers
only it needs live here too; what several cards share stays in the engine modules (`warpwise.skills.matchers`,
`.checks`, `.rewrites`, `.facts*`). The library imports this file by path as
`warpwise.skills.cards.scalar_global_access`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.expr.values import type_size
from warpwise.analyzers.facts import distinct_launch_args
from warpwise.analyzers.facts_memory import (
    Elementwise,
    KernelSyntax,
    kernel_syntax,
    launch_arg,
    launches_of,
    squash,
    unparen,
)
from warpwise.analyzers.model import Access, AccessKind, AccessPattern, FileModel, Function, FunctionKind, MemorySpace
from warpwise.skills.checks.memory import _ks, _line, _template_names
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
        reads = {b for b in arrays if any(a.base == b and a.kind is not AccessKind.WRITE for a in accesses)}
        writes = {b for b in arrays if any(a.base == b and a.kind is not AccessKind.READ for a in accesses)}
        parts = []
        for group, verb in (
            ([b for b in arrays if b in reads and b not in writes], "read"),
            ([b for b in arrays if b in writes and b not in reads], "written"),
            ([b for b in arrays if b in reads and b in writes], "read and written"),
        ):
            if group:
                parts.append(f"{_names(group)} {'is' if len(group) == 1 else 'are'} {verb}")
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
                "what": ", ".join(parts),
                "width": width,
                "lanes": vec[1],
                "vector": vec[0] or f"{16 // width}-wide vector",
                "index": shape.var,
                "bound": ks.text(shape.bound),
                "form": _form_text(ks, shape),
                "_related": _related_launches(ctx.model, fn),
            },
        )


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
