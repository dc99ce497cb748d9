"""Rewrites of the memory and parallelism cards. Each returns edits that keep the user's names and formatting, or
None when the code is outside the shape the rewrite handles exactly."""

from __future__ import annotations

import math
import re
from typing import Any

from warpwise.analyzers.model import AccessKind
from warpwise.skills.facts import tree_of
from warpwise.skills.facts_memory import (
    Elementwise,
    KernelSyntax,
    binary_parts,
    builtin_axis,
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
from warpwise.skills.matchers.memory import VECTOR_TYPES
from warpwise.skills.rewrite import Edit, RewriteContext

_COMPONENTS = ("x", "y", "z", "w")


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
    for c in decl.children:
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


# 1. scalar-global-access


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
        vec = VECTOR_TYPES.get(p.base_type) if p is not None else None
        if vec is None:
            return None
        vectors[name] = vec
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


# 2. uncoalesced-thread-mapping


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
    ks = _ks(ctx)
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


# 3. strided-transpose-access


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


# 4. readonly-data-without-restrict


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


# 5. repeated-global-tile-reads


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


# 6. fixed-size-grid-without-stride-loop


def grid_stride_loop(ctx: RewriteContext) -> list[Edit] | None:
    """Turn `if (i < n) body` into `for (; i < n; i += blockDim.x * gridDim.x) body`."""
    shape: Elementwise = ctx.fact("shape")
    if shape.form == "return":
        return _early_return_loop(ctx, shape)
    if shape.form != "if":
        return None
    keyword = shape.stmt.children[0]
    clause = shape.cond
    opening = next((c for c in clause.children if c.type == "("), None)
    closing = next((c for c in reversed(clause.children) if c.type == ")"), None)
    if keyword.type != "if" or opening is None or closing is None:
        return None
    edits = [
        Edit(keyword.start_byte, keyword.end_byte, "for"),
        Edit(opening.end_byte, opening.end_byte, "; "),
        Edit(closing.start_byte, closing.start_byte, f"; {shape.var} += blockDim.x * gridDim.x"),
    ]
    if shape.var_const:
        edits += _drop_const(ctx, shape.decl)
    return edits


def _early_return_loop(ctx: RewriteContext, shape: Elementwise) -> list[Edit] | None:
    """Turn `if (i >= n) return; rest` into `for (; i < n; i += blockDim.x * gridDim.x) { rest }`."""
    unit = ctx.indent_unit()
    ind = ctx.indent_at(shape.stmt.start_byte)
    rest = ctx.text((shape.body.start_byte, shape.body.end_byte))
    header = f"for (; {shape.var} < {_bound_text(ctx, shape)}; {shape.var} += blockDim.x * gridDim.x)"
    edits = [
        Edit(shape.stmt.start_byte, shape.body.end_byte, f"{header} {{\n{ind}{unit}{_indent_more(rest, unit)}\n{ind}}}")
    ]
    if shape.var_const:
        edits += _drop_const(ctx, shape.decl)
    return edits


# 7. one-element-per-thread


def coarsen_elements(ctx: RewriteContext, factor: int = 4) -> list[Edit] | None:
    """Give each thread `factor` elements, `blockDim.x` apart (coalesced), in an unrolled loop; shrink the grid."""
    shape: Elementwise = ctx.fact("shape")
    if shape.form not in ("if", "return") or shape.decl is None:
        return None
    factor = int(ctx.args.get("factor", factor))
    decl = shape.decl
    init_decl = next((c for c in decl.named_children if c.type == "init_declarator"), None)
    name = init_decl.child_by_field_name("declarator") if init_decl is not None else None
    if name is None:
        return None
    var = shape.var
    first = _fresh(ctx, f"{var}_first")
    counter = _fresh(ctx, f"{var}_k")
    product = shape.index.product
    unit = ctx.indent_unit()
    ind = ctx.indent_at(shape.stmt.start_byte)
    type_text = ctx.text((decl.start_byte, name.start_byte)).rstrip()
    stmt = (shape.stmt.start_byte, shape.body.end_byte if shape.form == "return" else shape.stmt.end_byte)
    body = _indent_more(ctx.text(stmt), unit)
    wrapped = (
        f"#pragma unroll\n"
        f"{ind}for (int {counter} = 0; {counter} < {factor}; ++{counter}) {{\n"
        f"{ind}{unit}{type_text} {var} = {first} + {counter} * blockDim.x;\n"
        f"{ind}{unit}{body}\n"
        f"{ind}}}"
    )
    edits = [
        Edit(name.start_byte, name.end_byte, first),
        Edit(product.end_byte, product.end_byte, f" * {factor}"),
        Edit(stmt[0], stmt[1], wrapped),
    ]
    return edits + _shrink_launches(ctx, shape, factor)


# 9. missing-launch-bounds


def add_launch_bounds(ctx: RewriteContext) -> list[Edit] | None:
    """Insert `__launch_bounds__(N)` before the kernel's name, N the block size of every launch in the file."""
    sizes = ctx.fact("sizes", [])
    if len(sizes) != 1:
        return None
    fn = ctx.function
    texts = {launch.block.strip() for _, launch in launches_of(ctx.model, fn.name)}
    value = str(sizes[0])
    if len(texts) == 1:
        (text,) = texts
        if text in ctx.model.macros and ctx.model.constants.get(text) == sizes[0]:
            defined = re.search(rb"#\s*define\s+" + re.escape(text.encode()) + rb"\b", ctx.data[: fn.base])
            if defined is not None:
                value = text
    start = ctx.abs(fn.name_span)[0]
    return [Edit(start, start, f"__launch_bounds__({value}) ")]


# 10. synchronous-global-to-shared-copy


def _include_edit(ctx: RewriteContext) -> list[Edit]:
    if re.search(rb"#\s*include\s*[<\"]cuda_pipeline(_primitives)?\.h[>\"]", ctx.data):
        return []
    root = tree_of(ctx.model).root_node
    last = None
    for c in root.named_children:
        if c.type == "preproc_include" and c.start_byte < ctx.function.base:
            last = c
    if last is None:
        return [Edit(0, 0, "#include <cuda_pipeline.h>\n")]
    end = ctx.data.find(b"\n", last.start_byte)
    at = len(ctx.data) if end < 0 else end + 1
    return [Edit(at, at, "#include <cuda_pipeline.h>\n")]


def async_shared_copies(ctx: RewriteContext) -> list[Edit] | None:
    """Issue each global-to-shared copy with `__pipeline_memcpy_async`, then commit and wait before the barrier."""
    fn = ctx.function
    edits: list[Edit] = []
    for run, _barrier in ctx.fact("runs", ()):
        for copy in run:
            arr = next((s for s in fn.shared if s.name == copy.shared.base), None)
            if arr is None or _template_typed(ctx, [copy.source.base]):
                return None
            dst = ctx.text(ctx.abs(copy.shared.span))
            src = ctx.text(ctx.abs(copy.source.span))
            stmt = copy.statement
            edits.append(
                Edit(
                    stmt.start_byte,
                    stmt.end_byte,
                    f"__pipeline_memcpy_async(&{dst}, &{src}, sizeof({arr.element_type}));",
                )
            )
        last = run[-1].statement
        ind = ctx.indent_at(last.start_byte)
        edits.append(Edit(last.end_byte, last.end_byte, f"\n{ind}__pipeline_commit();\n{ind}__pipeline_wait_prior(0);"))
    if not edits:
        return None
    return edits + _include_edit(ctx)
