"""Row register cache: a row that the threads of a row walk several times is read from device memory once.

A row operator written as passes over its row (the maximum, then the sum of exponentials, then the write; the
mean, then the variance, then the write) reads every element of the row from device memory once per pass. When the
lanes of a row stride it (`for (c = lane; c < cols; c += lanes)`: a block per row, or the output of the
row-cooperative-reduction card), each lane visits the same elements in every pass, in the same order: the k-th
iteration of every pass touches element `lane + k * lanes`. The rewrite gives each lane a small array of K
registers per re-read array, fills it in the first pass that reads the element unconditionally, and reads it in
the later passes; every pass becomes a fully unrolled loop of K iterations guarded by the original condition, so
the K loads of a pass are independent and in flight together.

What the recogniser reads (semantics, not spelling; expressions are compared by their canonical forms, locals
defined once resolved, macros folded):

- a sequence of sibling `for` loops of one kernel, each `for (T c = L; c < N; c += S)` (or `c = c + S`,
  `N > c`) with the same index name and the same L, N and S, which read nothing the loops write (their
  identifiers are parameters, macros, built-ins, or locals defined once; none is written in the kernel);
- loop bodies without nested loops, `break`, `continue`, `return`, `goto`, barriers, shuffles or atomics, that do
  not assign the index;
- loads `A[e]` (any spelling of the address, through row pointers, also through `reinterpret_cast` to a vector
  type such as `const float4 *`, whose element the register then holds) of an array the kernel never writes, whose
  canonical form reads the index and which a later pass reads again; and stores `A[e] = v;` (an expression
  statement of the loop body) whose element a later pass reads back: the value stored is kept in the register
  (store-to-load forwarding), the store still happens.

The rewrite, for a cache of K elements per lane (the search parameter `per_lane`):

    const bool ww_fit = (long long)(L) + (long long)K * (long long)(S) >= (long long)(N);
    T ww_row0[K];
    if (ww_fit) {
    #pragma unroll
      for (int ww_k = 0; ww_k < K; ++ww_k) { T c = (L) + ww_k * (S); if (c < N) BODY' }
    } else ORIGINAL-LOOP

for every pass, where BODY' fills (`(ww_row0[ww_k] = A[e])`) or reads (`ww_row0[ww_k]`) the registers. When the
row does not fit (`ww_fit` false, for this thread) every pass runs the original loop, so every size stays correct.

With `per_lane = "auto"` (the quick fix's default, the search's first choice) the row's length need not be known:
`ww_fit` is the smallest K of `AUTO_TIERS` (8, 16, 32) with `L + K * S >= N` for this thread, or 0, and every pass
is `if (ww_fit == 8) {8 unrolled} else if (ww_fit == 16) {16 unrolled} ... else ORIGINAL-LOOP`, over one array of
the largest K. A thread takes one branch in every pass (L, N and S are invariant), so the k-th register still holds
the element of iteration k.

Exactness (fixed K and automatic alike): every thread executes the same statements on the same elements in the
same order as before: no sum is re-associated, no value is rounded differently. A loaded element is read from a
register instead of memory, which returns the same value when nothing writes that element in between: the kernel
never writes a cached array (checked), and distinct pointer parameters must not overlap at elements the kernel
writes (as `__restrict__` would say; not checkable here, hence `unsafe`). A forwarded store returns what the thread
stored, which is what memory holds unless another thread writes the same element in between (a race in the
original).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.facts import distinct_launch_args, function_node
from warpwise.analyzers.facts_memory import node_text, unparen
from warpwise.analyzers.facts_reduce import definitions, reduce_canon
from warpwise.analyzers.function_nodes import of_type
from warpwise.analyzers.model import FileModel, Function, FunctionKind
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import CheckContext, MatchContext, Region, Verdict, check, holds, matcher, unknown
from warpwise.skills.rewrite import Edit, RewriteContext

Node = Any

PER_LANE_CHOICES = (8, 16, 32, 64)
"""Elements of a row each lane keeps per cached array: the search's parameter."""
MAX_REGISTERS = 64
"""At most this many 32-bit registers per lane go to the cache (K times the arrays' elements: an 8-byte type counts
twice, a vector type its bytes over 4, so K = 16 of float4 is the most)."""
MARK = "ww_fit"
_FORBIDDEN_CALLS = ("__syncthreads", "__syncwarp", "__shfl", "atomic", "__threadfence", "cooperative_groups")
_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
_JUMPS = ("break_statement", "continue_statement", "return_statement", "goto_statement")
_NO_PASS = "no pass over a row (`for (c = L; c < N; c += S)` or its `while` form)"
_WIDE = ("double", "long long", "unsigned long long", "int64_t", "uint64_t", "size_t", "long")


@dataclass(frozen=True)
class Pass:
    """One loop over the row: where it is and how its index is read."""

    stmt: tuple[int, int]
    var: str
    var_type: str
    start: str  # L as written
    bound: str  # the condition as written (`c < cols`)
    step: str  # S as written
    body: tuple[int, int]
    braces: bool = False  # a `while` pass: the body is its statements without the final step, braced anew
    head: int = -1  # where the statement holding the pass starts (a block around a `while` and its index)

    @property
    def declared(self) -> bool:
        """Whether the pass declares its index (`for (int c = ...)`) rather than assigning one declared before."""
        return bool(self.var_type)


@dataclass(frozen=True)
class Slot:
    """One cached array element per iteration: where it is filled and where it is read back."""

    name: str  # `ww_row0`
    elem_type: str
    what: str  # the load as written in the pass that fills it
    fill: tuple[int, int]  # span of the load (or store statement) that fills the register
    fill_is_store: bool
    store_value: tuple[int, int] = (0, 0)  # for a store: the span of the whole assignment expression
    reads: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class RowCache:
    """A kernel whose row passes re-read elements, and the registers that keep them."""

    kernel: str
    passes: tuple[Pass, ...]
    slots: tuple[Slot, ...]
    registers_per_element: int  # 32-bit registers one iteration's elements take

    @property
    def summary(self) -> str:
        """Return what is re-read, in words."""
        return ", ".join(f"`{s.what}`" for s in self.slots) or "nothing (one pass, unrolled)"


class _Reject(Exception):
    pass


def _text(model: FileModel, node: Node) -> str:
    return node_text(model, node)


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def _idents(model: FileModel, node: Node) -> set[str]:
    return {_text(model, n) for n in _walk(node) if n.type == "identifier"}


@dataclass(frozen=True)
class _Body:
    """The statements of one pass that run per element (a `while` pass without its final step)."""

    nodes: tuple[Node, ...]
    anchor: Node  # the loop's body statement: `_unconditional` walks up to it
    span: tuple[int, int]
    braces: bool  # whether the emitted body needs braces around `span`


def _bound_and_step(model: FileModel, var: str, cond: Node, upd: Node) -> tuple[Node, Node] | None:
    """Return (N, S) of the condition `var < N` (or `N > var`) and the step `var += S` (or `var = var + S`)."""
    if cond.type != "binary_expression":
        return None
    op = _text(model, cond.child_by_field_name("operator"))
    left, right = unparen(cond.child_by_field_name("left")), unparen(cond.child_by_field_name("right"))
    if op == "<" and left.type == "identifier" and _text(model, left) == var:
        bound = right
    elif op == ">" and right.type == "identifier" and _text(model, right) == var:
        bound = left
    else:
        return None
    if upd.type != "assignment_expression":
        return None
    target = unparen(upd.child_by_field_name("left"))
    uop = _text(model, upd.child_by_field_name("operator"))
    value = unparen(upd.child_by_field_name("right"))
    if target is None or target.type != "identifier" or _text(model, target) != var or value is None:
        return None
    if uop == "+=":
        return bound, value
    if uop == "=" and value.type == "binary_expression" and _text(model, value.child_by_field_name("operator")) == "+":
        a, b = unparen(value.child_by_field_name("left")), unparen(value.child_by_field_name("right"))
        if a.type == "identifier" and _text(model, a) == var:
            return bound, b
        if b.type == "identifier" and _text(model, b) == var:
            return bound, a
    return None


_Parts = tuple[str, str, Node, Node, Node, Node, _Body]


def _while_parts(model: FileModel, stmt: Node, prev: Node | None) -> _Parts | None:
    """Return the parts of `j = L; while (j < N) { ...; j += S; }` (the index declared or assigned just before)."""
    if prev is None:
        return None
    cond_clause = stmt.child_by_field_name("condition")
    cond = cond_clause
    if cond is not None and cond.type == "condition_clause":
        items = [c for c in cond.named_children if c.type != "comment"]
        cond = items[0] if len(items) == 1 else None
    cond = unparen(cond) if cond is not None else None
    body = stmt.child_by_field_name("body")
    if cond is None or body is None or body.type != "compound_statement":
        return None
    items = [c for c in body.named_children if c.type != "comment"]
    if len(items) < 2 or items[-1].type != "expression_statement" or items[-1].named_child_count != 1:
        return None
    upd = unparen(items[-1].named_children[0])
    target = unparen(upd.child_by_field_name("left")) if upd.type == "assignment_expression" else None
    if target is None or target.type != "identifier":
        return None
    var = _text(model, target)
    start = None
    if prev.type == "declaration":
        for d in prev.children_by_field_name("declarator"):
            if d.type == "init_declarator" and _text(model, d.child_by_field_name("declarator")) == var:
                start = d.child_by_field_name("value")
    elif prev.type == "expression_statement" and prev.named_child_count == 1:
        e = unparen(prev.named_children[0])
        if (
            e.type == "assignment_expression"
            and _text(model, e.child_by_field_name("operator")) == "="
            and _text(model, unparen(e.child_by_field_name("left"))) == var
        ):
            start = e.child_by_field_name("right")
    if start is None:
        return None
    bs = _bound_and_step(model, var, cond, upd)
    if bs is None or var in _idents(model, bs[0]) | _idents(model, bs[1]) | _idents(model, start):
        return None
    per = tuple(items[:-1])
    return var, "", start, bs[0], bs[1], cond, _Body(per, body, (per[0].start_byte, per[-1].end_byte), True)


def _loop_parts(model: FileModel, stmt: Node) -> tuple[str, str, Node, Node, Node, Node, _Body] | None:
    """Return (index, its type, L, N, S, condition, body) of `for (T c = L; c < N; c += S)`; None if not one."""
    init = stmt.child_by_field_name("initializer")
    cond = unparen(stmt.child_by_field_name("condition"))
    upd = unparen(stmt.child_by_field_name("update"))
    body = stmt.child_by_field_name("body")
    if init is None or cond is None or upd is None or body is None or init.type != "declaration":
        return None
    ds = init.children_by_field_name("declarator")
    if len(ds) != 1 or ds[0].type != "init_declarator":
        return None
    name_node = ds[0].child_by_field_name("declarator")
    start = ds[0].child_by_field_name("value")
    if name_node is None or name_node.type != "identifier" or start is None:
        return None
    var = _text(model, name_node)
    ty = init.child_by_field_name("type")
    quals = [_text(model, c) for c in init.children if c.type == "type_qualifier"]
    if ty is None or "const" in quals:
        return None
    var_type = " ".join(_text(model, ty).split())
    bs = _bound_and_step(model, var, cond, upd)
    if bs is None or var in _idents(model, bs[0]) | _idents(model, bs[1]) | _idents(model, start):
        return None
    return var, var_type, start, bs[0], bs[1], cond, _Body((body,), body, (body.start_byte, body.end_byte), False)


def _positive_step(model: FileModel, fn: Function, step: Node) -> bool:
    """Whether the step is a positive constant, `blockDim.x` or a product of them (the lanes of a row)."""
    form = reduce_canon(model, fn).of(step)
    value = form.int_value()
    if value is not None:
        return value > 0
    txt = form.text().replace(" ", "")
    parts = txt.split("*")
    return all(p in ("blockDim.x", "blockDim.y", "blockDim.z") or (p.isdigit() and int(p) > 0) for p in parts)


def _invariant(model: FileModel, fn: Function, node: Node) -> bool:
    """Whether every identifier of an expression is a parameter never written, or a local defined once."""
    for name in _idents(model, node):
        values, others = definitions(model, fn, name)
        if fn.param(name) is not None:
            if values or others:
                return False
        elif (values or others) and (len(values) != 1 or others):
            return False
    return True


def _check_body(model: FileModel, body: Node, var: str) -> None:
    for n in _walk(body):
        if n.type in _LOOPS:
            raise _Reject("a pass over the row holds a nested loop")
        if n.type in _JUMPS:
            raise _Reject("a pass over the row leaves early (`break`, `continue`, `return` or `goto`)")
        if n.type == "call_expression":
            name = _text(model, n.child_by_field_name("function"))
            if name.startswith(_FORBIDDEN_CALLS):
                raise _Reject(f"a pass over the row calls `{name}`")
        if n.type in ("assignment_expression", "update_expression"):
            t = unparen(n.child_by_field_name("left") or n.child_by_field_name("argument"))
            if t is not None and t.type == "identifier" and _text(model, t) == var:
                raise _Reject(f"a pass over the row assigns its index `{var}`")
        if n.type == "declaration" and any(
            c.type == "storage_class_specifier" and _text(model, c) == "static" for c in n.children
        ):
            raise _Reject("a pass over the row declares a static")


def _base_param(model: FileModel, fn: Function, node: Node, depth: int = 0) -> str | None:
    """Return the pointer parameter an array expression reaches (through locals defined once), or None."""
    node = unparen(node)
    if node is None or depth > 8:
        return None
    if node.type == "cast_expression":
        return _base_param(model, fn, node.child_by_field_name("value"), depth + 1)
    if _cpp_cast(model, node) is not None:
        args = node.child_by_field_name("arguments")
        items = [a for a in args.named_children if a.type != "comment"] if args is not None else []
        return _base_param(model, fn, items[0], depth + 1) if len(items) == 1 else None
    if node.type == "identifier":
        name = _text(model, node)
        p = fn.param(name)
        if p is not None:
            return name if p.pointer_depth >= 1 else None
        value = _pointer_local(model, fn, name)
        return None if value is None else _base_param(model, fn, value, depth + 1)
    if node.type == "binary_expression" and _text(model, node.child_by_field_name("operator")) in ("+", "-"):
        left = _base_param(model, fn, node.child_by_field_name("left"), depth + 1)
        if left is not None:
            return left
        if _text(model, node.child_by_field_name("operator")) == "+":
            return _base_param(model, fn, node.child_by_field_name("right"), depth + 1)
    return None


def _pointer_local(model: FileModel, fn: Function, name: str) -> Node | None:
    """Return the initializer of a local (a pointer such as `const float *xr = x + off`) defined once."""
    values, others = definitions(model, fn, name)
    if others or len(values) > 1:
        return None
    if values:
        return values[0]
    found = []
    for n in of_type(model, fn, "init_declarator"):
        d = n.child_by_field_name("declarator")
        while d is not None and d.type in ("pointer_declarator", "type_qualifier"):
            d = d.child_by_field_name("declarator")
        if d is not None and d.type == "identifier" and _text(model, d) == name:
            found.append(n.child_by_field_name("value"))
    return found[0] if len(found) == 1 else None


def _lvalue(node: Node) -> bool:
    """Whether a subscript is written (left of an assignment, `++`, or its address taken)."""
    parent = node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        node, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type == "assignment_expression":
        left = parent.child_by_field_name("left")
        return left is not None and left.start_byte == node.start_byte and left.end_byte == node.end_byte
    if parent.type == "update_expression":
        return True
    return parent.type == "pointer_expression"  # `&a[i]`: the address may be written through


def _unconditional(node: Node, body: Node) -> bool:
    """Whether an expression is evaluated on every iteration of the loop whose body is `body`."""
    child, n = node, node.parent
    while n is not None and not (n.start_byte == body.start_byte and n.end_byte == body.end_byte):
        if n.type in ("if_statement", "conditional_expression", "switch_statement"):
            return False
        if n.type == "binary_expression" and n.child_by_field_name("operator") is not None:
            op = n.child_by_field_name("operator").type
            right = n.child_by_field_name("right")
            if op in ("&&", "||") and right is not None and right.start_byte <= child.start_byte:
                return False
        child, n = n, n.parent
    return n is not None


def _elem_type(model: FileModel, fn: Function, param: str) -> str | None:
    p = fn.param(param)
    if p is None or p.pointer_depth != 1:
        return None
    words = [w for w in p.base_type.replace("*", " ").split() if w not in ("const", "volatile", "__restrict__")]
    words = [w for w in words if w not in ("restrict", "__restrict")]
    return " ".join(words) or None


_CASTS = ("reinterpret_cast", "static_cast", "const_cast")


def _cpp_cast(model: FileModel, node: Node) -> Node | None:
    """Return the target type of `reinterpret_cast<T>(e)` (or `static_cast`, `const_cast`), else None."""
    if node is None or node.type != "call_expression":
        return None
    f = node.child_by_field_name("function")
    if f is None or f.type != "template_function" or _text(model, f.child_by_field_name("name")) not in _CASTS:
        return None
    targs = f.child_by_field_name("arguments")
    items = [a for a in targs.named_children if a.type != "comment"] if targs is not None else []
    return items[0] if len(items) == 1 else None


def _pointee(model: FileModel, type_node: Node) -> str | None:
    """Return the element type of a pointer type `const float4 *` (`float4`), or None for another type."""
    txt = " ".join(_text(model, type_node).split())
    if not txt.endswith("*") or txt.count("*") != 1:
        return None
    words = [w for w in txt[:-1].split() if w not in ("const", "volatile", "__restrict__", "restrict", "__restrict")]
    return " ".join(words) or None


def _access_type(model: FileModel, fn: Function, array: Node, param: str, depth: int = 0) -> str | None:
    """Return the element type an array expression is read as: the outermost pointer cast's (a row passed as
    `reinterpret_cast<const float4 *>(x + off)`, directly or through a local defined once), else the parameter's."""
    node = unparen(array)
    if node is None or depth > 8:
        return _elem_type(model, fn, param)
    if node.type == "cast_expression":
        ty = node.child_by_field_name("type")
        return _pointee(model, ty) if ty is not None else None
    target = _cpp_cast(model, node)
    if target is not None:
        return _pointee(model, target)
    if node.type == "identifier" and fn.param(_text(model, node)) is None:
        value = _pointer_local(model, fn, _text(model, node))
        return _elem_type(model, fn, param) if value is None else _access_type(model, fn, value, param, depth + 1)
    if node.type == "binary_expression":
        # The operand the pointer comes from, as `_base_param` follows it (`off + x` as well as `x + off`).
        left = node.child_by_field_name("left")
        side = left if _base_param(model, fn, left) is not None else node.child_by_field_name("right")
        return _access_type(model, fn, side, param, depth + 1)
    return _elem_type(model, fn, param)


_VECTOR = re.compile(r"(?:__)?(u?char|u?short|u?int|u?long|u?longlong|float|double|half|nv_bfloat16)([1-4])")
_LANE_BYTES = {"char": 1, "short": 2, "int": 4, "long": 8, "longlong": 8, "float": 4, "double": 8}
_LANE_BYTES |= {"half": 2, "nv_bfloat16": 2}


def _registers(ty: str) -> int:
    """Return the 32-bit registers one element of a type takes (a vector type's lanes together, at least one)."""
    m = _VECTOR.fullmatch(ty.replace(" ", ""))
    if m is not None:
        lane = _LANE_BYTES[m.group(1).removeprefix("u")]
        return max(1, (lane * int(m.group(2)) + 3) // 4)
    return 2 if any(w in ty for w in _WIDE) else 1


def _written(model: FileModel, fn: Function, fnode: Node) -> dict[str, list[Node]]:
    """Return, per pointer parameter, the subscripts (or dereferences) that write through it."""
    out: dict[str, list[Node]] = {}
    shared = {a.name for a in fn.shared}
    # Every write is recorded, in whatever order: the answer is only asked which bases are written, and whether
    # every write through one base is to one element.
    nodes = (*of_type(model, fn, "subscript_expression"), *of_type(model, fn, "pointer_expression"))
    for n in (*nodes, *of_type(model, fn, "call_expression")):
        if n.type == "subscript_expression" and _lvalue(n):
            arr = unparen(n.child_by_field_name("argument"))
            if arr is not None and arr.type == "identifier" and _text(model, arr) in shared:
                continue  # a `__shared__` array of this kernel: never a parameter's memory
            base = _base_param(model, fn, arr)
            out.setdefault(base or "?", []).append(n)
        elif n.type == "pointer_expression" and _lvalue(n):
            base = _base_param(model, fn, n.child_by_field_name("argument"))
            out.setdefault(base or "?", []).append(n)
        elif n.type == "call_expression" and _cpp_cast(model, n) is None:
            # A pointer passed to a call (atomicAdd(&y[i], v), memcpy) may be written; a cast writes nothing.
            args = n.child_by_field_name("arguments")
            for a in args.named_children if args is not None else ():
                base = _base_param(model, fn, a)
                if base is not None:
                    out.setdefault(base, []).append(a)
    return out


def _may_hold_a_pass(model: FileModel, fn: Function, fnode: Node) -> bool:
    """Whether some loop of the kernel (the model's loops) could be a pass: a `while`, or a `for` whose header has
    the shape `_loop_parts` needs (a declared index with a value, a comparison, an assignment as its step).

    A necessary condition only, read from each loop's own node: a kernel without such a loop is rejected before
    its body is walked, for the same reason the walk would give."""
    for lp in fn.loops:
        if lp.kind == "while":
            return True
        if lp.kind != "for":
            continue
        start, end = fn.base + lp.span[0], fn.base + lp.span[1]
        node = fnode.descendant_for_byte_range(start, end)
        while node is not None and not (node.type == "for_statement" and node.start_byte == start):
            node = node.parent
        if node is None:
            return True  # not found where the model says: let the walk decide
        init = node.child_by_field_name("initializer")
        cond = unparen(node.child_by_field_name("condition"))
        upd = unparen(node.child_by_field_name("update"))
        if init is None or init.type != "declaration" or cond is None or cond.type != "binary_expression":
            continue
        if upd is None or upd.type != "assignment_expression" or node.child_by_field_name("body") is None:
            continue
        if _text(model, upd.child_by_field_name("operator")) in ("+=", "="):
            return True
    return False


def recognise(model: FileModel, fn: Function) -> tuple[RowCache | None, str]:
    """Return the passes and registers of a kernel whose row passes re-read elements (or None, and why not)."""
    if fn.kind is not FunctionKind.KERNEL:
        return None, "not a kernel"
    fnode = function_node(model, fn)
    body = fnode.child_by_field_name("body") if fnode is not None else None
    if body is None:
        return None, "the kernel has no body"
    if MARK.encode() in model.text[fn.base : fn.base + fn.length]:
        return None, "the kernel keeps its row in registers already"
    if not _may_hold_a_pass(model, fn, fnode):
        return None, _NO_PASS
    canon = reduce_canon(model, fn)
    best: list[tuple[Node, tuple[str, str, Node, Node, Node, Node, _Body]]] = []
    parsed: set[int] = set()  # the passes found (a block around a `while` is visited at both levels)
    heads: dict[int, int] = {}  # loop start -> start of the statement that holds it at the sequence's level
    lo, hi = body.start_byte, body.end_byte
    for block in of_type(model, fn, "compound_statement"):
        if block.start_byte < lo or block.end_byte > hi:
            continue  # outside the kernel's body (its signature)
        groups: dict[tuple[Any, ...], list[tuple[Node, tuple[str, str, Node, Node, Node, Node, _Body]]]] = {}
        prev = None
        for st in block.named_children:
            if st.type == "comment":
                continue
            before, prev = prev, st
            outer = st
            inner = [c for c in st.named_children if c.type != "comment"] if st.type == "compound_statement" else []
            if len(inner) == 2 and inner[0].type == "declaration" and inner[1].type == "while_statement":
                # `{ int c = L; while (c < N) { ...; c += S; } }`: a pass whose index lives in its own block.
                before, st = inner[0], inner[1]
            if st.type == "for_statement":
                parts = _loop_parts(model, st)
            elif st.type == "while_statement":
                parts = _while_parts(model, st, before)
            else:
                continue
            if parts is None:
                continue
            var, _, start, bound, step, _, _ = parts
            key = (var, canon.of(start).key(), canon.of(bound).key(), canon.of(step).key())
            groups.setdefault(key, []).append((st, parts))
            heads.setdefault(st.start_byte, outer.start_byte)  # the outermost block that holds it
            parsed.add(st.start_byte)
        for g in groups.values():
            if len(g) > len(best):
                best = g
    if not best:
        return None, _NO_PASS
    p0 = best[0][1]
    var = p0[0]
    for _, (_, _, start, bound, step, _, _) in best:
        for e in (start, bound, step):
            if not _invariant(model, fn, e):
                return None, f"`{_text(model, e)}` of a pass over the row is written in the kernel"
    if not _positive_step(model, fn, p0[4]):
        return None, f"the step `{_text(model, p0[4])}` is not a positive constant or the block size"
    try:
        for _, parts in best:
            for n in parts[6].nodes:
                _check_body(model, n, var)
    except _Reject as exc:
        return None, str(exc)
    written = _written(model, fn, fnode)
    if "?" in written:
        return None, "the kernel writes through a pointer whose parameter is not known"
    # Every element access of every pass, by canonical form.
    accesses: list[list[tuple[Node, Any, str, bool, bool]]] = []  # per pass: (node, key, base, store, uncond)
    for _, parts in best:
        found = []
        pbody = parts[6]
        for n in (m for top in pbody.nodes for m in _walk(top)):
            if n.type != "subscript_expression":
                continue
            base = _base_param(model, fn, n.child_by_field_name("argument"))
            if base is None:
                continue
            form = canon.of(n)
            if not re.search(rf"(?<![\w.]){re.escape(var)}(?!\w)", form.text()):
                continue
            store = _lvalue(n)
            found.append((n, form.key(), base, store, _unconditional(n, pbody.anchor)))
        accesses.append(found)
    slots: list[Slot] = []
    claimed: set[Any] = set()
    regs = 0
    for i, found in enumerate(accesses):
        for n, key, base, store, uncond in found:
            if key in claimed or not uncond:
                continue
            later = [m for f in accesses[i + 1 :] for m in f if m[1] == key]
            if not later or any(m[3] for m in later):
                continue
            ty = _access_type(model, fn, n.child_by_field_name("argument"), base)
            if ty is None:
                continue
            if store:
                assign = n.parent
                while assign is not None and assign.type == "parenthesized_expression":
                    assign = assign.parent
                stmt = assign.parent if assign is not None else None
                if (
                    assign is None
                    or assign.type != "assignment_expression"
                    or _text(model, assign.child_by_field_name("operator")) != "="
                    or stmt is None
                    or stmt.type != "expression_statement"
                ):
                    continue
                # Every write through this array is this store or another one to the same element of this pass.
                if any(canon.of(w).key() != key for w in written.get(base, [])):
                    continue
                span = (assign.start_byte, assign.end_byte)
            else:
                if base in written:
                    continue
                span = (n.start_byte, n.end_byte)
            claimed.add(key)
            regs += _registers(ty)
            slots.append(
                Slot(
                    f"ww_row{len(slots)}",
                    ty,
                    " ".join(_text(model, n).split()),
                    (n.start_byte, n.end_byte),
                    store,
                    span,
                    tuple((m[0].start_byte, m[0].end_byte) for m in later),
                )
            )
    if not slots and len(best) > 1:
        return None, "no element of the row is read again by a later pass (or every re-read array is written)"
    if not slots and len(parsed) > 1:
        return None, "the passes over the row differ in start, bound or step: a lane does not revisit its elements"
    if not slots:
        # A single pass: nothing to keep, but unrolled its loads are in flight together. Only where the lanes of a
        # row stride it (the block size, or a constant of a warp or more) and it reads an element of the row.
        form = canon.of(p0[4])
        lanes = form.int_value()
        if (lanes is not None and lanes < 32) or (lanes is None and "blockDim" not in form.text()):
            return None, f"one pass over the row whose step `{_text(model, p0[4])}` is not the lanes of a row"
        if not accesses[0]:
            return None, "one pass over the row that reads no element of it"
    passes = tuple(
        Pass(
            (st.start_byte, st.end_byte),
            parts[0],
            parts[1],
            _text(model, parts[2]),
            _text(model, parts[5]),
            _text(model, parts[4]),
            parts[6].span,
            parts[6].braces,
            heads.get(st.start_byte, st.start_byte),
        )
        for st, parts in best
    )
    return RowCache(fn.name, passes, tuple(slots), regs), ""


def fits(rc: RowCache, per_lane: int) -> bool:
    """Whether K elements per lane of every slot stay within the register budget."""
    return per_lane > 0 and rc.registers_per_element * per_lane <= MAX_REGISTERS


REGISTER_FILE = 65536
"""32-bit registers of one SM (sm_70 to sm_90): a block's threads times their registers must fit."""
OTHER_REGISTERS = 32
"""Registers a row kernel needs besides the cache (indices, accumulators, addresses), a round estimate."""


def fits_block(rc: RowCache, per_lane: int, threads: int) -> bool:
    """Whether K elements per lane fit the budget and a block of `threads` threads still fits the register file.

    A block of 1024 threads leaves 64 registers a thread in all: a cache of 64 would not launch
    (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES), so a search that knows the block skips it.
    """
    return fits(rc, per_lane) and threads * (rc.registers_per_element * per_lane + OTHER_REGISTERS) <= REGISTER_FILE


AUTO = "auto"
"""The `per_lane` value that lets each thread take the smallest of `AUTO_TIERS` that holds its part of the row."""
AUTO_TIERS = (8, 16, 32)
"""Cache sizes of the automatic choice. 64 is left to the search: a block of 256 threads with 64 registers of cache
a lane runs half as many warps, which a row of 32 elements per lane or fewer does not need."""
AUTO_MAX_REGISTERS = 32
"""The automatic choice takes at most this many registers of cache a lane, so that a block of 1024 threads (64
registers a thread in all) still launches whatever block the kernel is given: two cached float arrays stop at 16,
a float4 array at 8."""


def tiers(rc: RowCache, per_lane: int | str) -> tuple[int, ...]:
    """Return the cache sizes a rewrite with this `per_lane` emits (one, or the automatic choices that fit)."""
    if per_lane == AUTO:
        return tuple(k for k in AUTO_TIERS if rc.registers_per_element * k <= AUTO_MAX_REGISTERS)
    try:
        k = int(per_lane)
    except (TypeError, ValueError):
        return ()
    return (k,) if fits(rc, k) else ()


def generate_edits(rc: RowCache, per_lane: int | str, data: bytes) -> list[Edit]:
    """Return the edits that keep the re-read elements of each lane in registers.

    With one cache size K the passes run unrolled K times where the lane's part of the row fits (`ww_fit`), the
    original loops otherwise. With `per_lane="auto"` each thread picks the smallest size of `AUTO_TIERS` that holds
    its part of the row (`ww_fit` is that size, or 0 when none does) and every pass has one unrolled form per
    size; the cache array has the largest size, of which a smaller form uses the first elements. Either way a thread
    runs the same statements on the same elements in the same order as the original passes.
    """
    sizes = tiers(rc, per_lane)
    if not sizes:
        return []
    auto = per_lane == AUTO
    k = sizes[-1]
    first = rc.passes[0]
    edits: list[Edit] = []
    at = first.head if first.head >= 0 else first.stmt[0]
    indent = _indent_at(data, at)
    held = f"up to {k}" if auto else f"{k}"
    if rc.slots:
        head = f"// warpwise row-register-cache: each lane keeps {held} elements of {rc.summary} in registers"
        head += f" ({', '.join(map(str, sizes))}: the fewest that hold its part of the row).\n" if auto else ".\n"
    else:
        head = f"// warpwise row-register-cache: the pass over the row unrolled {held} times, its loads in flight"
        head += f" ({', '.join(map(str, sizes))}: the fewest that cover its part of the row).\n" if auto else ".\n"
    start, step, bound = (
        f"(long long)({first.start})",
        f"(long long)({first.step})",
        f"(long long)({_bound_value(first)})",
    )
    if auto:
        choice = " : ".join(f"{start} + (long long){t} * {step} >= {bound} ? {t}" for t in sizes)
        head += f"{indent}const int {MARK} = {choice} : 0;\n"
    else:
        head += f"{indent}const bool {MARK} = {start} + (long long){k} * {step} >= {bound};\n"
    for s in rc.slots:
        head += f"{indent}{s.elem_type} {s.name}[{k}];\n"
    edits.append(Edit(at, at, head + indent))
    for p in rc.passes:
        inner: list[tuple[int, int, str]] = []
        for s in rc.slots:
            if p.body[0] <= s.fill[0] < p.body[1]:
                if s.fill_is_store:
                    a, b = s.store_value
                    txt = data[a:b].decode("utf-8", "replace")
                    inner.append((a, b, f"{s.name}[ww_k] = ({txt})"))
                else:
                    a, b = s.fill
                    txt = data[a:b].decode("utf-8", "replace")
                    inner.append((a, b, f"({s.name}[ww_k] = {txt})"))
            for a, b in s.reads:
                if p.body[0] <= a < p.body[1]:
                    inner.append((a, b, f"{s.name}[ww_k]"))
        body = bytearray(data[p.body[0] : p.body[1]])
        for a, b, txt in sorted(inner, reverse=True):
            body[a - p.body[0] : b - p.body[0]] = txt.encode()
        original = data[p.stmt[0] : p.stmt[1]].decode("utf-8", "replace")
        text = body.decode("utf-8", "replace")
        if p.braces:
            text = f"{{\n{indent}    {text}\n{indent}    }}"
        index = f"{p.var_type} {p.var}" if p.declared else p.var
        # A `while` pass leaves its index at the first value past the row, as the original loop did.
        after = ""
        if not p.declared:
            after = f"\n{indent}  {p.var} = ({p.start});\n{indent}  while ({p.bound}) {p.var} += ({p.step});"
        fast = ""
        for t in sizes:
            fast += (
                f"if ({MARK}{f' == {t}' if auto else ''}) {{\n"
                f"#pragma unroll\n"
                f"{indent}  for (int ww_k = 0; ww_k < {t}; ++ww_k) {{\n"
                f"{indent}    {index} = ({p.start}) + ww_k * ({p.step});\n"
                f"{indent}    if ({p.bound}) {text}\n"
                f"{indent}  }}{after}\n"
                f"{indent}}} else "
            )
        edits.append(Edit(p.stmt[0], p.stmt[1], fast + original))
    return sorted(edits)


def _bound_value(p: Pass) -> str:
    """Return N of the condition `c < N` (or `N > c`)."""
    cond = p.bound.strip()
    if cond.startswith(p.var):
        rest = cond[len(p.var) :].lstrip()
        return rest[1:].strip() if rest.startswith("<") else rest
    head = cond[: cond.rfind(">")]
    return head.strip()


def _indent_at(data: bytes, offset: int) -> str:
    start = data.rfind(b"\n", 0, offset) + 1
    end = start
    while end < offset and data[end : end + 1] in (b" ", b"\t"):
        end += 1
    return data[start:end].decode()


# ---------------------------------------------------------------------------------------------------------------
# Registered matcher, check and rewrite.


@matcher("row_register_cache")
def row_register_cache(ctx: MatchContext, **_args: Any) -> Iterator[Region]:
    """Find kernels whose passes over a row read the same elements again from device memory."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    rc, _ = recognise(ctx.model, fn)
    if rc is None:
        return
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"row-register-cache:{fn.name}",
        {
            "kernel": fn.name,
            "row_cache": rc,
            "what": rc.summary,
            "passes": str(len(rc.passes)),
            "claim": _claim(rc),
            # One pass reads nothing twice: what is left is unrolling it (its loads issued together), a gain the
            # card's "when it helps" does not promise, so it is a hint (the search still tries it).
            **({"_severity": "hint"} if len(rc.passes) < 2 or not rc.slots else {}),
        },
    )


def _claim(rc: RowCache) -> str:
    """Return what the finding says: the elements read again by the later passes, or, for a single pass, that
    nothing is read again and only the unrolling is offered."""
    if len(rc.passes) >= 2 and rc.slots:
        return (
            f"reads {rc.summary} again in each of its {len(rc.passes)} passes over the row: every pass goes back to "
            "device memory (or L2) for elements the lane has just read."
        )
    if len(rc.passes) < 2:
        passes, verb, them = "one pass", "reads", "it"
    else:
        passes, verb, them = f"{len(rc.passes)} passes", "read", "them"
    return (
        f"walks its row in {passes} that {verb} nothing twice; the rewrite only unrolls {them} into guarded loads per "
        "lane that are issued together."
    )


def _per_lane(value: Any) -> int | str:
    """Return an anchor or search argument `per_lane` as a size or `auto` (anything else: `auto`)."""
    if value == AUTO:
        return AUTO
    try:
        return int(value)
    except (TypeError, ValueError):
        return AUTO


@check("row_cache_fits_registers")
def row_cache_fits_registers(ctx: CheckContext) -> Verdict:
    """Hold when the cache of the anchor's size fits the register budget."""
    rc: RowCache | None = ctx.fact("row_cache")
    if rc is None:
        return unknown("no row passes were recognised here")
    k = _per_lane(ctx.region.facts.get("per_lane", AUTO))
    sizes = tiers(rc, k)
    if not sizes:
        return unknown(f"{k} elements per lane of {rc.summary} take more than {MAX_REGISTERS} registers")
    return holds(f"{sizes[-1]} elements per lane of {rc.summary} take {rc.registers_per_element * sizes[-1]} registers")


@check("row_cache_no_overlap")
def row_cache_no_overlap(ctx: CheckContext) -> Verdict:
    """Hold when distinct pointer parameters cannot overlap: all `__restrict__`, or every launch passes distinct
    buffers (a problem file's tensors are distinct by construction)."""
    rc: RowCache | None = ctx.fact("row_cache")
    if rc is None:
        return unknown("no row passes were recognised here")
    fn = ctx.function
    params = [p for p in fn.params if p.pointer_depth >= 1]
    if len(params) < 2:
        return holds("the kernel has one pointer parameter: nothing else can overlap it")
    if all(p.is_restrict for p in params):
        return holds(f"{', '.join(f'`{p.name}`' for p in params)} are `__restrict__`")
    ok, reason = distinct_launch_args(ctx.model, fn, params)
    if ok:
        return holds(reason)
    return unknown(f"{reason}: another pointer may overlap the cached {rc.summary}")


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Keep the re-read elements of each lane's row in registers across the passes."""
    rc: RowCache | None = ctx.fact("row_cache")
    if rc is None:
        rc, _ = recognise(ctx.model, ctx.function)
        if rc is None:
            return None
    return generate_edits(rc, _per_lane(ctx.args.get("per_lane", AUTO)), ctx.data) or None


def rewrite_source(model: FileModel, kernel: str, per_lane: int | str = AUTO) -> bytes | None:
    """Return the file's text with one kernel rewritten (None when it is not recognised or the cache does not fit)."""
    from warpwise.skills.rewrite import apply_edits

    fn = next((f for f in model.functions if f.name == kernel and f.kind is FunctionKind.KERNEL), None)
    if fn is None:
        return None
    rc, _ = recognise(model, fn)
    if rc is None:
        return None
    edits = generate_edits(rc, per_lane, model.text)
    return apply_edits(model.text, edits) if edits else None


AUTO_LABEL = "the row in registers, 8 to 32 elements per lane as it needs"
"""The search's label of the automatic choice."""
FIXED_WEIGHT = 0.9
"""Prior weight of a fixed cache size against the automatic choice, which the search tries first."""


def search_variants(matches: list[Any]) -> list[tuple[str, dict[str, Any], list[Any], float]]:
    """Return the search's parameter choices: the automatic cache size first, then each fixed K elements per lane;
    the launch is unchanged."""
    rc = matches[0].region.facts.get("row_cache") if matches else None
    out: list[tuple[str, dict[str, Any], list[Any], float]] = []
    if rc is None or tiers(rc, AUTO):
        out.append((AUTO_LABEL, {"per_lane": AUTO}, [], 1.0))
    for k in PER_LANE_CHOICES:
        if rc is not None and not fits(rc, k):
            continue
        out.append((f"{k} elements per lane in registers", {"per_lane": k}, [], FIXED_WEIGHT))
    return out


__all__ = [
    "AUTO",
    "AUTO_LABEL",
    "AUTO_MAX_REGISTERS",
    "AUTO_TIERS",
    "MAX_REGISTERS",
    "PER_LANE_CHOICES",
    "Pass",
    "RowCache",
    "Slot",
    "fits",
    "fits_block",
    "generate_edits",
    "recognise",
    "rewrite",
    "rewrite_source",
    "row_cache_fits_registers",
    "row_cache_no_overlap",
    "row_register_cache",
    "search_variants",
    "tiers",
]
