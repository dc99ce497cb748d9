"""Block partials, few elements per thread: a block reduction whose output is one partial sum per block (each
block's contiguous segment of the input) is remapped so that a warp computes each partial with many elements per
lane (16-byte loads where the pointer is aligned), over a grid the search shrinks; the partials stay the same.

A textbook first reduction gives each thread one element (or two, with the "first add during load"), sums the
block in shared memory and writes `out[blockIdx.x] = a[0]`. The problem's output is then the array of partials:
partial b is the sum of the inputs `[b * S, b * S + S)` (S = K * C, C threads and K loads per thread), the last
one cut at n. Here the number of partials and the elements each covers are the result, so the grid-stride
accumulation of `grid-stride-atomic-total` (any grid, one total) is wrong: it would merge segments. What is free
is how many threads compute one partial: eight elements per lane of one warp instead of one element per thread of
a 256-thread block, so a block of C threads computes C / 32 partials at once and the grid shrinks by a factor the
search chooses (each warp then loops over `gridDim.x * C / 32`-strided partials, so any grid is correct).

What the recogniser reads (semantics, not spelling): a 1-D kernel with one shared-memory tree that the tree card
proves to be a full sum of `a[0..B)`; before it, the store `a[T] = E` with T the thread index and E either the
guarded element (`(i < n) ? x[i] : 0`, or `v = 0; if (i < n) v = x[i]; a[T] = v;`) or a local that starts as the
guarded element and adds `x[i + k * D]` under `i + k * D < n` for k = 1..K-1 (`v = i < n ? x[i] : 0; if (i + D <
n) v += x[i + D]; a[T] = v;`), where i is `blockIdx.x * C + threadIdx.x` in any spelling and C = K * D; exactly
one store to global memory, `P[blockIdx.x] = a[0]` under `threadIdx.x == 0`; no atomics; `x` never written; no
other write to `a` outside the tree.

Exactness: each partial covers exactly the elements it covered before (the segment `[p * S, min(p * S + S, n))`),
so the output's shape and meaning are preserved exactly; the additions within a segment are re-associated (each
lane's run, then five shuffles instead of the shared tree), so a float partial changes within the rounding of a
float sum of S terms: `unsafe`, compared within the problem's tolerance (integer sums would be exact). The number
of partials written is ceil(n / S): the original writes one per block of its grid, which is the same only when it
is launched with ceil(n / S) blocks (every launch that covers n once without idle blocks; a problem file's launch
is checked by the gate's comparison of every output element). The block must have a multiple of 32 threads (the
rewritten kernel traps otherwise) and the C the index was written for.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from warpwise.analyzers.expr.canon import Form
from warpwise.analyzers.facts import function_node
from warpwise.analyzers.facts_memory import node_text, unparen
from warpwise.analyzers.facts_reduce import reduce_canon
from warpwise.analyzers.model import FileModel, Function, FunctionKind
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import CheckContext, MatchContext, Region, Verdict, check, holds, matcher, unknown
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.verify.launch import LaunchChange

Node = Any
GRID_FACTORS = (8, 32, 128)
"""The grid shrinks by one of these: a block of C threads then computes this many partials (C / 32 at a time)."""

_THREAD = Form.atom("threadIdx.x")
_BLOCK = Form.atom("blockIdx.x")


@dataclass(frozen=True)
class BlockPartials:
    """A block reduction to one partial per block, and the spans the rewrite edits."""

    kernel: str
    array: str  # the shared array the tree reduces
    elem_type: str
    source: str  # the loaded array expression as written (`x`)
    source_is_float: bool  # whether 16-byte `float4` loads may be tried (a `float` pointer and a `float` tree)
    bound: str  # n as written
    stride: str  # C as written or canonical (`blockDim.x`, `512`, `blockDim.x * 2`)
    loads: int  # K, the elements each thread of the original loads
    output: str  # P, the array of partials as written
    body: tuple[int, int]  # the kernel's body (its braces included)


def _text(model: FileModel, node: Node) -> str:
    return node_text(model, node)


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def _items(node: Node | None) -> list[Node]:
    return [c for c in node.named_children if c.type != "comment"] if node is not None else []


def _index_of(node: Node) -> Node | None:
    idx = node.child_by_field_name("index") or next(
        (c for c in node.named_children if c.type == "subscript_argument_list"), None
    )
    if idx is not None and idx.type == "subscript_argument_list":
        items = _items(idx)
        idx = items[0] if len(items) == 1 else None
    return idx


def _subscript(model: FileModel, node: Node | None) -> tuple[str, Node] | None:
    """Return (array name, index) of `name[index]`, else None."""
    node = unparen(node) if node is not None else None
    if node is None or node.type != "subscript_expression":
        return None
    arr = unparen(node.child_by_field_name("argument"))
    idx = _index_of(node)
    if arr is None or arr.type != "identifier" or idx is None:
        return None
    return _text(model, arr), idx


def _condition(node: Node | None) -> Node | None:
    if node is not None and node.type == "condition_clause":
        items = _items(node)
        node = items[0] if len(items) == 1 else None
    return unparen(node) if node is not None else None


def _is_zero(model: FileModel, node: Node | None) -> bool:
    node = unparen(node) if node is not None else None
    if node is None:
        return False
    if node.type == "cast_expression":
        return _is_zero(model, node.child_by_field_name("value"))
    return node.type == "number_literal" and _text(model, node).rstrip("fFlLuU").strip("0.") == ""


def _tree_rules() -> Any:
    from warpwise.skills.library import builtin_library

    card = builtin_library().get("barrier-per-step-tree-reduction")
    return card.rules if card is not None else None


class _Reader:
    """Reads the load statements of one kernel: guarded elements `x[i]` under `i < n` in canonical forms."""

    def __init__(self, model: FileModel, fn: Function) -> None:
        self.model, self.fn = model, fn
        self.canon = reduce_canon(model, fn)
        self.source: str | None = None
        self.bound: Form | None = None
        self.bound_text = ""

    def guarded(self, cond: Node | None, load: Node | None) -> Form | None:
        """Return the index form of `x[e]` when `cond` is `e < n` (or `n > e`), n the same for every load."""
        cond = unparen(cond) if cond is not None else None
        sub = _subscript(self.model, load)
        if cond is None or sub is None or cond.type != "binary_expression":
            return None
        op = _text(self.model, cond.child_by_field_name("operator"))
        left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
        if op == "<":
            index, bound = left, right
        elif op == ">":
            index, bound = right, left
        else:
            return None
        name, idx = sub
        form = self.canon.of(idx)
        if form != self.canon.of(index):
            return None
        bform = self.canon.of(bound)
        if self.source is None:
            self.source, self.bound, self.bound_text = name, bform, _text(self.model, bound)
        elif name != self.source or bform != self.bound:
            return None
        return form

    def element(self, value: Node | None) -> Form | None:
        """Return the index form of `(i < n) ? x[i] : 0`, else None."""
        value = unparen(value) if value is not None else None
        if value is None or value.type != "conditional_expression":
            return None
        if not _is_zero(self.model, value.child_by_field_name("alternative")):
            return None
        return self.guarded(value.child_by_field_name("condition"), value.child_by_field_name("consequence"))

    def guarded_update(self, st: Node, var: str, op: str) -> Form | None:
        """Return the index form of `if (i < n) var OP x[i];` (OP `=` or `+=`), else None."""
        if st.type != "if_statement" or st.child_by_field_name("alternative") is not None:
            return None
        then = st.child_by_field_name("consequence")
        inner = _items(then) if then is not None and then.type == "compound_statement" else [then]
        if len(inner) != 1 or inner[0] is None or inner[0].type != "expression_statement":
            return None
        e = _items(inner[0])
        a = unparen(e[0]) if len(e) == 1 else None
        if a is None or a.type != "assignment_expression" or _text(self.model, a.child_by_field_name("operator")) != op:
            return None
        if _text(self.model, unparen(a.child_by_field_name("left"))) != var:
            return None
        return self.guarded(_condition(st.child_by_field_name("condition")), a.child_by_field_name("right"))


def _local_value(model: FileModel, st: Node, var: str) -> tuple[str, Node | None] | None:
    """Return ("decl" or "assign", value) when `st` declares `var` with a value or assigns it with `=`."""
    if st.type == "declaration":
        for d in st.children_by_field_name("declarator"):
            if d.type == "init_declarator" and _text(model, d.child_by_field_name("declarator")) == var:
                return "decl", d.child_by_field_name("value")
        return None
    if st.type == "expression_statement":
        e = _items(st)
        a = unparen(e[0]) if len(e) == 1 else None
        if (
            a is not None
            and a.type == "assignment_expression"
            and _text(model, a.child_by_field_name("operator")) == "="
            and _text(model, unparen(a.child_by_field_name("left"))) == var
        ):
            return "assign", a.child_by_field_name("right")
    return None


def _loaded(reader: _Reader, stmts: list[Node], k: int, value: Node) -> list[Form] | None:
    """Return the index forms of the elements the value stored by statement k adds up, else None.

    The value is the guarded element itself, or a local `v` that the statements before k set to the guarded
    element (or to zero, then `if (i < n) v = x[i];`) and then increase by guarded elements only."""
    model = reader.model
    value = unparen(value)
    single = reader.element(value)
    if single is not None:
        return [single]
    if value.type != "identifier":
        return None
    var = _text(model, value)
    forms: list[Form] = []
    j = k - 1
    while j >= 0:
        st = stmts[j]
        add = reader.guarded_update(st, var, "+=")
        if add is None:
            break
        forms.append(add)
        j -= 1
    if j < 0:
        return None
    first = reader.guarded_update(stmts[j], var, "=")
    if first is not None:
        j -= 1
        while j >= 0 and var not in _text(model, stmts[j]):
            j -= 1
        init = _local_value(model, stmts[j], var) if j >= 0 else None
        if init is None or not _is_zero(model, init[1]):
            return None
        return [first, *reversed(forms)]
    init = _local_value(model, stmts[j], var)
    start = reader.element(init[1]) if init is not None else None
    if start is None:
        return None
    return [start, *reversed(forms)]


def _stride(forms: list[Form]) -> tuple[Form, Form] | None:
    """Return (C, D) when the forms are `blockIdx.x * C + threadIdx.x + k * D` for k = 0..K-1 and C = K * D."""
    base = forms[0]
    terms = dict(base.terms)
    if terms.pop(("threadIdx.x",), None) != 1:
        return None
    coef: dict[tuple[str, ...], Fraction] = {}
    for mono, c in terms.items():
        if "blockIdx.x" not in mono:
            return None
        rest = list(mono)
        rest.remove("blockIdx.x")
        if "blockIdx.x" in rest or any(m.startswith(("threadIdx", "blockIdx")) for m in rest):
            return None
        coef[tuple(rest)] = c
    if not coef:
        return None
    c_form = Form(coef)
    if c_form.constant is not None and c_form.constant <= 0:
        return None
    k = len(forms)
    d_form = c_form.scale(Fraction(1, k))
    for j, f in enumerate(forms):
        if f != base + d_form.scale(Fraction(j)):
            return None
    return c_form, d_form


def _c_text(form: Form) -> str:
    """Return C as C source text (`blockDim.x`, `512`, `2 * blockDim.x`)."""
    value = form.int_value()
    if value is not None:
        return str(value)
    parts = []
    for mono, c in sorted(form.terms.items()):
        if c.denominator != 1:
            return ""
        factor = "*".join(mono)
        parts.append(factor if c == 1 else f"{int(c)} * {factor}" if factor else str(int(c)))
    return " + ".join(parts)


def _resolved_type(fn: Function, array: str) -> str:
    """Return the element type of a shared array with typedefs resolved (empty when it is not declared here)."""
    return next((a.element_type for a in fn.shared if a.name == array), "")


def recognise(model: FileModel, fn: Function) -> tuple[BlockPartials | None, str]:
    """Return the per-block partials of a block-reduction kernel (or None, and why not in one line)."""
    if fn.kind is not FunctionKind.KERNEL or not fn.shared:
        return None, "not a kernel with a shared array"
    fnode = function_node(model, fn)
    body = fnode.child_by_field_name("body") if fnode is not None else None
    if body is None:
        return None, "the kernel has no body"
    text = "".join(_text(model, body).split())
    for axis in ("threadIdx.y", "threadIdx.z", "blockIdx.y", "blockIdx.z"):
        if axis in text:
            return None, f"the kernel reads `{axis}`: not a 1-D reduction"
    tree_rules = _tree_rules()
    if tree_rules is None:
        return None, "the tree-reduction card is not loaded"
    trees, why = tree_rules.recognise_all(model, fn)
    if len(trees) != 1:
        return None, why or "more than one shared-memory tree"
    tree = trees[0]
    if tree.op != "sum":
        return None, f"the tree takes the {tree.op}, not a sum"
    canon = reduce_canon(model, fn)
    params = {p.name for p in fn.params}
    stores, array_writes = [], []
    for n in _walk(body):
        if n.type == "call_expression" and _text(model, n.child_by_field_name("function")).startswith("atomic"):
            return None, f"the kernel has an atomic (`{_text(model, n)}`): not a kernel of per-block partials"
        if n.type in ("assignment_expression", "update_expression"):
            left = unparen(n.child_by_field_name("left") or n.child_by_field_name("argument"))
            base = left
            while base is not None and base.type in ("subscript_expression", "pointer_expression", "field_expression"):
                base = unparen(base.child_by_field_name("argument"))
            name = _text(model, base) if base is not None and base.type == "identifier" else ""
            if name in params:
                stores.append((n, left))
            elif name == tree.array and not tree.span[0] <= n.start_byte < tree.span[1]:
                array_writes.append(n)
    if len(stores) != 1:
        why = "no store to global memory" if not stores else "more than one store to global memory"
        return None, f"{why}: not one partial per block"
    store, left = stores[0]
    sub = _subscript(model, left)
    if sub is None or canon.of(sub[1]) != _BLOCK:
        return (
            None,
            f"the global store `{_text(model, store)}` is not indexed by `blockIdx.x`: not one partial per block",
        )
    out_name = sub[0]
    p_out = fn.param(out_name)
    if p_out is None or p_out.pointer_depth != 1:
        return None, f"`{out_name}` is not a pointer parameter"
    val = _subscript(model, store.child_by_field_name("right"))
    if val is None or val[0] != tree.array or canon.of(val[1]) != Form.const(0):
        return None, f"the partial stored is not `{tree.array}[0]`"
    guard = store.parent
    while guard is not None and guard.type != "if_statement":
        guard = guard.parent
    cond = _condition(guard.child_by_field_name("condition")) if guard is not None else None
    if (
        cond is None
        or cond.type != "binary_expression"
        or _text(model, cond.child_by_field_name("operator")) != "=="
        or {canon.of(cond.child_by_field_name("left")), canon.of(cond.child_by_field_name("right"))}
        != {Form.const(0), _THREAD}
    ):
        return None, "the partial is not stored once per block (under `threadIdx.x == 0`)"
    if guard.start_byte < tree.span[1]:
        return None, "the partial is stored before the tree ends"
    stmts = _items(body)
    found = None
    for k, st in enumerate(stmts):
        if st.start_byte >= tree.span[0]:
            break
        if st.type != "expression_statement" or st.named_child_count != 1:
            continue
        e = unparen(st.named_children[0])
        if e.type != "assignment_expression" or _text(model, e.child_by_field_name("operator")) != "=":
            continue
        slot = _subscript(model, e.child_by_field_name("left"))
        if slot is None or slot[0] != tree.array or canon.of(slot[1]) != _THREAD:
            continue
        reader = _Reader(model, fn)
        forms = _loaded(reader, stmts, k, e.child_by_field_name("right"))
        strides = _stride(forms) if forms else None
        if forms and strides is not None and reader.source is not None:
            found = (e, reader, forms, strides)
            break
    if found is None:
        return None, (
            f"no store into `{tree.array}[threadIdx.x]` before the tree of guarded elements "
            "`x[blockIdx.x * C + threadIdx.x + k * C / K]`, k < K"
        )
    slot_store, reader, forms, (c_form, _d) = found
    if any(w is not slot_store for w in array_writes):
        return None, f"`{tree.array}` is written outside its tree and its one load"
    src = reader.source
    assert src is not None
    p_src = fn.param(src)
    if p_src is None or p_src.pointer_depth != 1:
        return None, f"`{src}` is not a pointer parameter"
    if out_name == src:
        return None, f"the kernel writes `{src}`, the array it sums"
    c_text = _c_text(c_form)
    if not c_text:
        return None, "the block's stride in the index is not an integer expression"
    return (
        BlockPartials(
            fn.name,
            tree.array,
            tree.elem_type,
            src,
            p_src.base_type == "float" and _resolved_type(fn, tree.array) == "float",
            reader.bound_text,
            c_text,
            len(forms),
            out_name,
            (body.start_byte, body.end_byte),
        ),
        "",
    )


def generate(bp: BlockPartials) -> str:
    """Return the kernel's new body: a warp per partial, lanes striding its segment, shuffles, one store."""
    t = bp.elem_type
    lines = [
        "{",
        f"  // warpwise block-partials-few-per-thread: a warp computes each partial `{bp.output}[p]`, the sum of the",
        f"  // segment [p * ({bp.stride}), p * ({bp.stride}) + {bp.stride}) of `{bp.source}` cut at n, as the block",
        "  // of the original did; warps loop over the partials, so any grid is correct.",
        "  if ((blockDim.x & 31u) != 0u) __trap();",
        f"  const long long ww_n = (long long)({bp.bound});",
        f"  const long long ww_seg = (long long)({bp.stride});",
        "  const long long ww_parts = (ww_n + ww_seg - 1) / ww_seg;",
        "  const long long ww_warps = (long long)(blockDim.x / 32u);",
        "  const long long ww_lane = (long long)(threadIdx.x & 31u);",
        "  for (long long ww_p = (long long)blockIdx.x * ww_warps + (long long)(threadIdx.x / 32u); ww_p < ww_parts;",
        "       ww_p += (long long)gridDim.x * ww_warps) {",
        "    const long long ww_lo = ww_p * ww_seg;",
        "    const long long ww_hi = ww_lo + ww_seg < ww_n ? ww_lo + ww_seg : ww_n;",
        f"    {t} ww_acc = ({t})0;",
    ]
    scalar = [
        "#pragma unroll 4",
        f"      for (long long ww_j = ww_lo + ww_lane; ww_j < ww_hi; ww_j += 32) ww_acc += {bp.source}[ww_j];",
    ]
    if bp.source_is_float:
        lines += [
            f"    if ((((unsigned long long)({bp.source}) & 15ull) == 0ull) && (ww_seg % 4 == 0)) {{",
            "      // 16-byte aligned segments: float4 loads, then the segment's last (n % 4) elements one by one.",
            f"      const float4 *ww_x4 = reinterpret_cast<const float4 *>({bp.source});",
            "      const long long ww_hi4 = ww_hi / 4;",
            "#pragma unroll 4",
            "      for (long long ww_j = ww_lo / 4 + ww_lane; ww_j < ww_hi4; ww_j += 32) {",
            "        const float4 ww_v = ww_x4[ww_j];",
            "        ww_acc += (ww_v.x + ww_v.y) + (ww_v.z + ww_v.w);",
            "      }",
            f"      for (long long ww_j = 4 * ww_hi4 + ww_lane; ww_j < ww_hi; ww_j += 32) ww_acc += {bp.source}[ww_j];",
            "    } else {",
            *scalar,
            "    }",
        ]
    else:
        lines += ["    {", *scalar, "    }"]
    lines += [
        "#pragma unroll",
        "    for (int ww_d = 16; ww_d > 0; ww_d >>= 1) ww_acc += __shfl_down_sync(0xffffffffu, ww_acc, ww_d);",
        f"    if (ww_lane == 0) {bp.output}[ww_p] = ww_acc;",
        "  }",
        "}",
    ]
    return "\n".join(lines)


def launch_changes(factor: int) -> tuple[LaunchChange, ...]:
    """Return the launch change for a problem file: the grid divided by `factor` (rounded up)."""
    return (LaunchChange("grid", 0, f"max(1, -(-value // {factor}))", f"grid.x / {factor} (rounded up)"),)


def generate_edits(bp: BlockPartials) -> list[Edit]:
    """Return the edit: the kernel's body replaced by the warp-per-partial body (the signature is kept)."""
    return [Edit(bp.body[0], bp.body[1], generate(bp))]


# ---------------------------------------------------------------------------------------------------------------
# Registered matcher, check and rewrite.


@matcher("block_partials_few_per_thread")
def block_partials_few_per_thread(ctx: MatchContext, **_args: Any) -> Iterator[Region]:
    """Find block reductions that write one partial per block from one or two elements per thread."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    bp, _ = recognise(ctx.model, fn)
    if bp is None:
        return
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"block-partials-few-per-thread:{fn.name}",
        {
            "kernel": fn.name,
            "block_partials": bp,
            "output": bp.output,
            "array": bp.array,
            "source": bp.source,
            "per_thread": str(bp.loads),
            "segment": bp.stride,
        },
    )


@check("one_partial_per_block")
def one_partial_per_block(ctx: CheckContext) -> Verdict:
    """Hold when the kernel's only global output is the block's partial `P[blockIdx.x] = a[0]`."""
    bp: BlockPartials | None = ctx.fact("block_partials")
    if bp is None:
        return unknown("no per-block partial was recognised here")
    return holds(
        f"`{bp.kernel}` writes only `{bp.output}[blockIdx.x] = {bp.array}[0]`, the sum of the block's "
        f"{bp.stride} elements of `{bp.source}`"
    )


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Replace the kernel's body by a warp per partial with many elements per lane."""
    bp: BlockPartials | None = ctx.fact("block_partials")
    if bp is None:
        bp, _ = recognise(ctx.model, ctx.function)
        if bp is None:
            return None
    return generate_edits(bp)


def rewrite_source(model: FileModel, kernel: str) -> bytes | None:
    """Return the file's text with one kernel rewritten (None when it is not recognised)."""
    from warpwise.skills.rewrite import apply_edits

    fn = next((f for f in model.functions if f.name == kernel and f.kind is FunctionKind.KERNEL), None)
    if fn is None:
        return None
    bp, _ = recognise(model, fn)
    return None if bp is None else apply_edits(model.text, generate_edits(bp))


def search_variants(matches: list[Any]) -> list[tuple[str, dict[str, Any], list[Any]]]:
    """Return the search's parameter choices: the grid divided by F (a block computes about F partials)."""
    return [(f"grid / {f}", {}, [("grid_div", f)]) for f in GRID_FACTORS]


__all__ = [
    "GRID_FACTORS",
    "BlockPartials",
    "block_partials_few_per_thread",
    "generate",
    "generate_edits",
    "launch_changes",
    "one_partial_per_block",
    "recognise",
    "rewrite",
    "rewrite_source",
    "search_variants",
]
