"""Grid-stride atomic total: a block reduction whose only output is one atomically accumulated total reads many
elements per thread (first add during load), with 16-byte loads where the pointer is aligned, on a smaller grid.

A first attempt at a sum gives each thread one element: `a[tid] = (i < n) ? x[i] : 0;`, a shared-memory tree,
then `if (tid == 0) atomicAdd(out, a[0]);`. With one element per thread a 2^28-element sum launches a million
blocks, each with a tree and an atomic on the same address: the atomics serialise and the loads are too few to keep
memory busy. When the kernel's only output is that single total (the address of the atomic is the same for every
block, no other global memory is written), the number of blocks is not part of the result: any grid gives the same
total up to the order of the additions. The rewrite lets each thread add up every `gridDim.x * C`-th element from
its first one (C the block's stride in the index, the block size), with `float4` loads when the element type is
`float` and the pointer is 16-byte aligned (checked at run time: otherwise scalar loads), stores that partial sum
in `a[tid]` where the single load was, and leaves the rest of the kernel as it was; the tree becomes warp shuffles
(the `barrier-per-step-tree-reduction` rewrite) and the grid shrinks by a factor the search chooses (a launch
change `grid.x / F`). Launches in the file keep their grid: still correct, one element per thread as before.

What the recogniser reads (semantics, not spelling): a 1-D kernel with one shared-memory tree that the tree card
proves to be a full sum of `a[0..B)`; one store `a[T] = E` before it with T the thread index and E the element
`x[i]` when `i < n` and zero otherwise (`(i < n) ? x[i] : 0`, or `v = 0; if (i < n) v = x[i]; a[T] = v;`), where i
is `blockIdx.x * C + threadIdx.x` in any spelling (C the block size or a constant); exactly one atomic, an
`atomicAdd` of `a[0]` under `threadIdx.x == 0`, at an address that reads no block or thread index; no other store
to global memory; `x` never written.

Never where the per-block partials are the output (`out[blockIdx.x] = a[0]`): their number is then part of the
result, and the kernel is refused.

Exactness: the total is re-associated (each thread's partial sum, then the tree, then far fewer atomics in a
different order), so it changes within the rounding of a float sum of n terms; the original's order of a million
atomics is itself unspecified. Hence `unsafe`, compared within the problem's tolerance. The block must have C
threads (as the original assumes for its index to cover every element once).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
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
GRID_FACTORS = (32, 128, 512)
"""The grid shrinks by one of these (each thread then adds about this many elements): the search's parameter."""


@dataclass(frozen=True)
class AtomicTotal:
    """A block reduction to one atomic total, and the spans the rewrite edits."""

    kernel: str
    array: str  # the shared array the tree reduces
    elem_type: str
    source: str  # the loaded array expression as written (`x`)
    source_is_float_param: bool  # whether 16-byte `float4` loads may be tried (a `float` pointer parameter)
    bound: str  # n as written
    stride: str  # C as written (`blockDim.x`, `BLOCK`)
    store: tuple[int, int]  # the statement `a[T] = E;`
    slot: str  # `a[T]` as written
    total: str  # the atomic's address as written
    tree: Any  # the tree card's TreeLoop


def _text(model: FileModel, node: Node) -> str:
    return node_text(model, node)


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


_THREAD = Form.atom("threadIdx.x")


def _index_of(node: Node) -> Node | None:
    idx = node.child_by_field_name("index") or next(
        (c for c in node.named_children if c.type == "subscript_argument_list"), None
    )
    if idx is not None and idx.type == "subscript_argument_list":
        items = [c for c in idx.named_children if c.type != "comment"]
        idx = items[0] if len(items) == 1 else None
    return idx


def _slot(model: FileModel, canon: Any, node: Node | None, array: str, index: Form) -> bool:
    """Whether `node` is `array[e]` with e of the given canonical form."""
    node = unparen(node) if node is not None else None
    if node is None or node.type != "subscript_expression":
        return False
    arr = unparen(node.child_by_field_name("argument"))
    if arr is None or arr.type != "identifier" or _text(model, arr) != array:
        return False
    idx = _index_of(node)
    return idx is not None and canon.of(idx) == index


def _tree_rules() -> Any:
    from warpwise.skills.library import builtin_library

    card = builtin_library().get("barrier-per-step-tree-reduction")
    return card.rules if card is not None else None


def _is_zero(model: FileModel, node: Node | None) -> bool:
    node = unparen(node) if node is not None else None
    if node is None:
        return False
    if node.type == "cast_expression":
        return _is_zero(model, node.child_by_field_name("value"))
    return node.type == "number_literal" and _text(model, node).rstrip("fFlLuU").strip("0.") == ""


def _guarded_load(model: FileModel, fn: Function, cond: Node | None, load: Node | None) -> tuple[Node, Node] | None:
    """Return (the load `x[i]`, n) when `cond` is `i < n` (or `n > i`) and `load` reads `x[i]`."""
    cond = unparen(cond) if cond is not None else None
    load = unparen(load) if load is not None else None
    if cond is None or load is None or cond.type != "binary_expression" or load.type != "subscript_expression":
        return None
    canon = reduce_canon(model, fn)
    op = _text(model, cond.child_by_field_name("operator"))
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if op == "<":
        index, bound = left, right
    elif op == ">":
        index, bound = right, left
    else:
        return None
    idx = _index_of(load)
    if idx is None or canon.of(idx) != canon.of(index):
        return None
    return load, bound


def _global_index_stride(model: FileModel, fn: Function, node: Node) -> str | None:
    """Return C (as canonical text) when the index reads `blockIdx.x * C + threadIdx.x`, else None."""
    form = reduce_canon(model, fn).of(node)
    terms = dict(form.terms)
    if terms.pop(("threadIdx.x",), None) != 1:
        return None
    if len(terms) != 1:
        return None
    ((mono, coef),) = terms.items()
    if "blockIdx.x" not in mono:
        return None
    rest = [m for m in mono if m != "blockIdx.x"]
    if coef != 1 and rest:
        return None
    if not rest:
        return str(int(coef)) if coef == int(coef) and coef > 0 else None
    if len(rest) == 1 and rest[0] == "blockDim.x":
        return "blockDim.x"
    return None


def recognise(model: FileModel, fn: Function) -> tuple[AtomicTotal | None, str]:
    """Return the atomic total of a block-reduction kernel (or None, and why not in one line)."""
    if fn.kind is not FunctionKind.KERNEL or not fn.shared:
        return None, "not a kernel with a shared array"
    fnode = function_node(model, fn)
    body = fnode.child_by_field_name("body") if fnode is not None else None
    if body is None:
        return None, "the kernel has no body"
    text = _text(model, body)
    for axis in ("threadIdx.y", "threadIdx.z", "blockIdx.y", "blockIdx.z"):
        if axis in text.replace(" ", ""):
            return None, f"the kernel reads `{axis}`: not a 1-D reduction"
    if "ww_acc" in text:
        return None, "the kernel accumulates during its load already"
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
    atomics, stores = [], []
    for n in _walk(body):
        if n.type == "call_expression":
            name = _text(model, n.child_by_field_name("function"))
            if name.startswith("atomic"):
                atomics.append(n)
        if n.type == "assignment_expression":
            left = unparen(n.child_by_field_name("left"))
            base = left
            while base is not None and base.type in ("subscript_expression", "pointer_expression", "field_expression"):
                base = unparen(base.child_by_field_name("argument"))
            if base is not None and base.type == "identifier" and _text(model, base) in params:
                stores.append(n)
    if stores:
        return None, f"the kernel stores to global memory (`{_text(model, stores[0])}`): partials are an output"
    if len(atomics) != 1:
        return None, "the kernel has no single atomic total"
    at = atomics[0]
    if _text(model, at.child_by_field_name("function")) != "atomicAdd":
        return None, "the atomic is not an `atomicAdd`"
    args = [c for c in at.child_by_field_name("arguments").named_children if c.type != "comment"]
    if len(args) != 2:
        return None, "the atomic takes other arguments"
    addr = canon.of(args[0]).text()
    if any(b in addr for b in ("blockIdx", "threadIdx", "blockDim", "gridDim")):
        return None, f"the atomic's address `{_text(model, args[0])}` depends on the block: partials are an output"
    val = unparen(args[1])
    if not _slot(model, canon, val, tree.array, Form.const(0)):
        return None, f"the atomic does not add `{tree.array}[0]`"
    guard = at.parent
    while guard is not None and guard.type != "if_statement":
        guard = guard.parent
    cond = None
    if guard is not None:
        cond = guard.child_by_field_name("condition")
        if cond is not None and cond.type == "condition_clause":
            items = [c for c in cond.named_children if c.type != "comment"]
            cond = items[0] if len(items) == 1 else None
        cond = unparen(cond) if cond is not None else None
    if (
        cond is None
        or cond.type != "binary_expression"
        or _text(model, cond.child_by_field_name("operator")) != "=="
        or {canon.of(cond.child_by_field_name("left")), canon.of(cond.child_by_field_name("right"))}
        != {Form.const(0), _THREAD}
    ):
        return None, "the atomic does not run once per block (under `threadIdx.x == 0`)"
    # The store of one element per thread into the tree's array, before the tree.
    found = None
    stmts = [c for c in body.named_children if c.type != "comment"]
    for k, st in enumerate(stmts):
        if st.start_byte >= tree.span[0]:
            break
        if st.type != "expression_statement" or st.named_child_count != 1:
            continue
        e = unparen(st.named_children[0])
        if e.type != "assignment_expression" or _text(model, e.child_by_field_name("operator")) != "=":
            continue
        left = unparen(e.child_by_field_name("left"))
        if not _slot(model, canon, left, tree.array, _THREAD):
            continue
        value = unparen(e.child_by_field_name("right"))
        got = None
        if value.type == "conditional_expression" and _is_zero(model, value.child_by_field_name("alternative")):
            got = _guarded_load(
                model, fn, value.child_by_field_name("condition"), value.child_by_field_name("consequence")
            )
        elif value.type == "identifier" and k >= 1:
            # `v = 0; if (i < n) v = x[i]; a[T] = v;`
            v = _text(model, value)
            prev = stmts[k - 1]
            if prev.type == "if_statement" and prev.child_by_field_name("alternative") is None:
                then = prev.child_by_field_name("consequence")
                inner = (
                    [c for c in then.named_children if c.type != "comment"]
                    if then.type == "compound_statement"
                    else [then]
                )
                if len(inner) == 1 and inner[0].type == "expression_statement" and inner[0].named_child_count == 1:
                    a = unparen(inner[0].named_children[0])
                    if (
                        a.type == "assignment_expression"
                        and _text(model, a.child_by_field_name("operator")) == "="
                        and _text(model, unparen(a.child_by_field_name("left"))) == v
                    ):
                        c = prev.child_by_field_name("condition")
                        if c is not None and c.type == "condition_clause":
                            items = [x for x in c.named_children if x.type != "comment"]
                            c = items[0] if len(items) == 1 else None
                        got = _guarded_load(model, fn, c, a.child_by_field_name("right"))
                        init = _zero_init(model, stmts[: k - 1], v)
                        got = got if init else None
        if got is None:
            continue
        load, bound = got
        idx_node = _index_of(load)
        stride = _global_index_stride(model, fn, idx_node) if idx_node is not None else None
        if stride is None:
            continue
        found = (st, left, load, bound, stride)
        break
    if found is None:
        return None, f"no store of one guarded element per thread into `{tree.array}[threadIdx.x]` before the tree"
    st, left, load, bound, stride = found
    src = unparen(load.child_by_field_name("argument"))
    src_name = _text(model, src)
    p = fn.param(src_name) if src.type == "identifier" else None
    is_float = p is not None and p.pointer_depth == 1 and p.base_type == "float"
    if p is not None:
        for n in _walk(body):
            if (
                n.type == "subscript_expression"
                and _text(model, unparen(n.child_by_field_name("argument"))) == src_name
            ):
                parent = n.parent
                if parent is not None and parent.type in ("assignment_expression", "update_expression"):
                    lhs = parent.child_by_field_name("left") or parent.child_by_field_name("argument")
                    if lhs is not None and lhs.start_byte == n.start_byte:
                        return None, f"the kernel writes `{src_name}`, the array it sums"
    stride_text = "blockDim.x" if stride == "blockDim.x" else stride
    return (
        AtomicTotal(
            fn.name,
            tree.array,
            tree.elem_type,
            src_name,
            is_float,
            _text(model, bound),
            stride_text,
            (st.start_byte, st.end_byte),
            _text(model, left),
            _text(model, args[0]),
            tree,
        ),
        "",
    )


def _zero_init(model: FileModel, stmts: list[Node], var: str) -> bool:
    """Whether the statements declare `var` with a zero value (the last assignment before the guarded load)."""
    for st in reversed(stmts):
        if st.type == "declaration":
            for d in st.children_by_field_name("declarator"):
                if d.type == "init_declarator" and _text(model, d.child_by_field_name("declarator")) == var:
                    return _is_zero(model, d.child_by_field_name("value"))
        if var in _text(model, st):
            return False
    return False


def generate(at: AtomicTotal, indent: str) -> str:
    """Return the statement that replaces the single load: the thread's grid-stride partial sum into the slot."""
    t = at.elem_type
    i = indent + "  "
    lines = [
        "{",
        f"{i}// warpwise grid-stride-atomic-total: each thread adds every (gridDim.x * {at.stride})-th element",
        f"{i}// from its first one; the single total `{at.total}` is unchanged up to rounding.",
        f"{i}{t} ww_acc = ({t})0;",
        f"{i}const long long ww_n = (long long)({at.bound});",
        f"{i}const long long ww_first = (long long)blockIdx.x * (long long)({at.stride}) + (long long)threadIdx.x;",
        f"{i}const long long ww_step = (long long)gridDim.x * (long long)({at.stride});",
    ]
    scalar = [
        "#pragma unroll 4",
        f"{i}  for (long long ww_j = ww_first; ww_j < ww_n; ww_j += ww_step) ww_acc += {at.source}[ww_j];",
    ]
    if at.source_is_float_param:
        lines += [
            f"{i}if (((unsigned long long)({at.source}) & 15ull) == 0ull) {{",
            f"{i}  // 16-byte aligned: float4 loads, then the last n % 4 elements one by one.",
            f"{i}  const float4 *ww_x4 = reinterpret_cast<const float4 *>({at.source});",
            f"{i}  const long long ww_n4 = ww_n / 4;",
            "#pragma unroll 4",
            f"{i}  for (long long ww_j = ww_first; ww_j < ww_n4; ww_j += ww_step) {{",
            f"{i}    const float4 ww_v = ww_x4[ww_j];",
            f"{i}    ww_acc += (ww_v.x + ww_v.y) + (ww_v.z + ww_v.w);",
            f"{i}  }}",
            f"{i}  for (long long ww_j = 4 * ww_n4 + ww_first; ww_j < ww_n; ww_j += ww_step)",
            f"{i}    ww_acc += {at.source}[ww_j];",
            f"{i}}} else {{",
            *scalar,
            f"{i}}}",
        ]
    else:
        lines += [f"{i}{{", *scalar, f"{i}}}"]
    lines += [f"{i}{at.slot} = ww_acc;", f"{indent}}}"]
    return "\n".join(lines)


def launch_changes(factor: int) -> tuple[LaunchChange, ...]:
    """Return the launch change for a problem file: the grid divided by `factor` (rounded up)."""
    return (LaunchChange("grid", 0, f"max(1, -(-value // {factor}))", f"grid.x / {factor} (rounded up)"),)


def _indent_at(data: bytes, offset: int) -> str:
    start = data.rfind(b"\n", 0, offset) + 1
    end = start
    while end < offset and data[end : end + 1] in (b" ", b"\t"):
        end += 1
    return data[start:end].decode()


def generate_edits(at: AtomicTotal, data: bytes, shuffles: bool = True) -> list[Edit] | None:
    """Return the edits: the load becomes the grid-stride partial sum; the tree becomes warp shuffles."""
    edits = [Edit(at.store[0], at.store[1], generate(at, _indent_at(data, at.store[0])))]
    if shuffles:
        tree_rules = _tree_rules()
        if tree_rules is None or (at.tree.fixed is not None and at.tree.fixed % 32):
            return None
        edits.append(
            Edit(at.tree.span[0], at.tree.span[1], tree_rules.generate(at.tree, _indent_at(data, at.tree.span[0])))
        )
    return sorted(edits)


# ---------------------------------------------------------------------------------------------------------------
# Registered matcher, check and rewrite.


@matcher("grid_stride_atomic_total")
def grid_stride_atomic_total(ctx: MatchContext, **_args: Any) -> Iterator[Region]:
    """Find block reductions whose only output is one atomically accumulated total, one element per thread."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    at, _ = recognise(ctx.model, fn)
    if at is None:
        return
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"grid-stride-atomic-total:{fn.name}",
        {"kernel": fn.name, "atomic_total": at, "total": at.total, "array": at.array, "source": at.source},
    )


@check("single_total_output")
def single_total_output(ctx: CheckContext) -> Verdict:
    """Hold when the kernel's only global output is one atomic total at a block-independent address."""
    at: AtomicTotal | None = ctx.fact("atomic_total")
    if at is None:
        return unknown("no atomic total was recognised here")
    return holds(f"`{at.kernel}` writes only `atomicAdd({at.total}, {at.array}[0])`, once per block")


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Accumulate many elements per thread during the load, and turn the tree into warp shuffles."""
    at: AtomicTotal | None = ctx.fact("atomic_total")
    if at is None:
        at, _ = recognise(ctx.model, ctx.function)
        if at is None:
            return None
    return generate_edits(at, ctx.data, shuffles=bool(ctx.args.get("shuffles", True)))


def rewrite_source(model: FileModel, kernel: str, shuffles: bool = True) -> bytes | None:
    """Return the file's text with one kernel rewritten (None when it is not recognised)."""
    from warpwise.skills.rewrite import apply_edits

    fn = next((f for f in model.functions if f.name == kernel and f.kind is FunctionKind.KERNEL), None)
    if fn is None:
        return None
    at, _ = recognise(model, fn)
    if at is None:
        return None
    edits = generate_edits(at, model.text, shuffles)
    return None if edits is None else apply_edits(model.text, edits)


def search_variants(matches: list[Any]) -> list[tuple[str, dict[str, Any], list[Any]]]:
    """Return the search's parameter choices: the grid divided by F (each thread adds about F elements)."""
    return [(f"grid / {f}", {"shuffles": True}, [("grid_div", f)]) for f in GRID_FACTORS]


__all__ = [
    "GRID_FACTORS",
    "AtomicTotal",
    "generate",
    "generate_edits",
    "grid_stride_atomic_total",
    "launch_changes",
    "recognise",
    "rewrite",
    "rewrite_source",
    "search_variants",
    "single_total_output",
]
