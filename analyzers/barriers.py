"""Facts about block-wide barriers that the `divergent-syncthreads` rule and card share.

A thread-dependent return before a barrier (`if (row >= M || col >= N) return;`, row and column from `blockIdx`
and `threadIdx`) makes threads of one block disagree only in a partial tile at the edge of the data. A kernel whose
tile loop reads global memory with no bounds check already requires sizes that are multiples of its tiles (a
partial tile would read past the end of its data), so in every size it supports the return is taken by whole
blocks or by none of their threads, and a finding about it would change nothing.

The model's loop conditions are classified flow-insensitively: a counter declared by two loops of one kernel
(`for (int i = threadIdx.x; ...)` here, `for (int i = 0; i < n; ++i)` there) has the definitions of both.
`barrier_guard` reads the loops around a barrier again with the counter's own scope (C++ [stmt.for]: a counter
declared in the initializer is visible only in that loop), so a uniform loop is not reported as thread-dependent
because another loop reused its counter's name.
"""

from __future__ import annotations

import re
from typing import Any

from warpwise.analyzers.facts import tree_of
from warpwise.analyzers.facts_reduce import is_uniform, text_of
from warpwise.analyzers.model import Access, AccessKind, Call, FileModel, Function, Loop, MemorySpace


def unguarded_tile_loop(fn: Function, after: int) -> str | None:
    """Return the condition of a tile loop after byte `after` that reads whole tiles with no bounds check, or None.

    Such a loop has a trip count set at run time and uniform across the block (`t < (K + 15) / 16`), holds a
    block-wide barrier (or follows one that its tiles' copies wait for), and copies a tile of global memory that
    depends on its counter outside any thread-dependent branch: an element read (`A[r * K + t * 16 + c]`, also
    through a view macro such as `LDST128BITS(A[i])`) or the address of one handed to an asynchronous copy
    (`cp.async` behind a macro: `CP_ASYNC_CG(dst, &A[i], 16)`), every such copy outside a bounds check: a
    thread-dependent branch whose condition reads a size the kernel is given (a by-value parameter such as `K`);
    a branch that only picks lanes (`lane_id < MMA_K`, a constant) is not one.
    """
    syncs = [c for c in fn.calls if c.category == "sync" and c.span[0] > after]
    for i, loop in enumerate(fn.loops):
        if loop.span[0] < after or loop.trip_count is not None or not loop.bound_uniform:
            continue
        if not any(i in c.loops for c in syncs):
            continue
        copies = [
            a
            for a in fn.accesses
            if a.space is MemorySpace.GLOBAL
            and i in a.loops
            and a.kind in (AccessKind.READ, AccessKind.READ_WRITE, AccessKind.ADDRESS)
        ]
        if copies and not any(_bounds_checked(fn, a) for a in copies):
            return loop.condition or loop.var or "the tile loop"
    return None


_IDENT = re.compile(r"[A-Za-z_]\w*")


def _bounds_checked(fn: Function, access: Access) -> bool:
    """Return whether an access sits under a thread-dependent branch that compares with a size the kernel takes."""
    if not access.in_thread_branch:
        return False
    sizes = {p.name for p in fn.params if not p.is_pointer}
    return any(
        b.thread_dependent and b.span[0] <= access.span[0] < b.span[1] and sizes & set(_IDENT.findall(b.condition))
        for b in fn.branches
    )


def barrier_guard(model: FileModel, fn: Function, call: Call) -> str | None:
    """Return the innermost thread-dependent condition a barrier runs under, or None: the model's guard, except a
    loop whose own counter is uniform (declared in its initializer from uniform values, compared with a uniform
    bound, stepped by a uniform amount, and never assigned in its body)."""
    if call.thread_dependent_guard is None:
        return None
    at = call.span[0]
    guard: str | None = None
    for b in fn.branches:
        if b.thread_dependent and b.span[0] <= at < b.span[1]:
            guard = b.condition
    for lp in fn.loops:
        if lp.thread_dependent and lp.span[0] <= at < lp.span[1] and not scoped_uniform_loop(model, fn, lp):
            guard = lp.condition or lp.var or "loop condition"
    return guard


def scoped_uniform_loop(model: FileModel, fn: Function, loop: Loop) -> bool:
    """Return whether a loop runs its counter the same way in every thread of the block, reading the counter in its
    own scope: a `for` loop that declares it in its initializer, or a `while` loop whose counter is declared just
    before it in the same block (`int s = 0; while (s < n) { ...; ++s; }`), with a uniform start, a uniform bound
    and uniform steps that no branch of the body skips."""
    start, end = fn.span(loop.span)
    node = tree_of(model).root_node.descendant_for_byte_range(start, end)
    while node is not None and node.type not in ("for_statement", "while_statement"):
        node = node.parent
    if node is None or (node.start_byte, node.end_byte) != (start, end):
        return False
    cond = _unparen(node.child_by_field_name("condition"))
    if cond is None or cond.type != "binary_expression":
        return False
    sides = [cond.child_by_field_name("left"), cond.child_by_field_name("right")]
    body = node.child_by_field_name("body")
    for i, side in enumerate(sides):
        if side is None or side.type != "identifier" or not is_uniform(model, fn, sides[1 - i]):
            continue
        var = text_of(model, side)
        if node.type == "for_statement":
            init = node.child_by_field_name("initializer")
            value = _declared_value(model, init, var) if init is not None else None
            upd = node.child_by_field_name("update")
            if value is None or upd is None or not _uniform_step(model, fn, upd, var):
                continue
            if body is None or not _assigns(model, body, var):
                return is_uniform(model, fn, value)
            continue
        value = _declared_before(model, node, var)
        if value is None or not is_uniform(model, fn, value) or body is None:
            continue
        steps = _assignments(model, body, var)
        if steps and all(_uniform_step(model, fn, a, var) and _unbranched(a, body) for a in steps):
            return True
    return False


def _unparen(node: Any) -> Any:
    while node is not None and node.type in ("parenthesized_expression", "condition_clause"):
        kids = [c for c in node.named_children if c.type != "comment"]
        if len(kids) != 1:
            break
        node = kids[0]
    return node


def _declared_value(model: FileModel, decl: Any, var: str) -> Any:
    """Return the initializer of `var` in a declaration that declares it, or None."""
    if decl.type != "declaration":
        return None
    for d in decl.children_by_field_name("declarator"):
        if d.type == "init_declarator" and text_of(model, d.child_by_field_name("declarator")) == var:
            return d.child_by_field_name("value")
    return None


def _declared_before(model: FileModel, node: Any, var: str) -> Any:
    """Return the initializer of `var` declared in the statements of the same block before `node` (None when it
    is not declared there or is assigned in between)."""
    prev = node.prev_named_sibling
    while prev is not None:
        value = _declared_value(model, prev, var)
        if value is not None:
            return value
        if prev.type != "comment" and _assigns(model, prev, var):
            return None
        prev = prev.prev_named_sibling
    return None


def _uniform_step(model: FileModel, fn: Function, node: Any, var: str) -> bool:
    """Return whether an update (`++v`, `v += s`, `v = v + s`, as an expression or a statement) steps `var` by a
    uniform amount."""
    if node.type == "expression_statement" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type == "update_expression":
        return text_of(model, node.child_by_field_name("argument")) == var
    if node.type != "assignment_expression" or text_of(model, node.child_by_field_name("left")) != var:
        return False
    right = node.child_by_field_name("right")
    op = node.child_by_field_name("operator")
    if op is not None and op.type != "=":
        return is_uniform(model, fn, right)
    parts = _unparen(right)
    if parts is None or parts.type != "binary_expression":
        return False
    a, b = parts.child_by_field_name("left"), parts.child_by_field_name("right")
    return (text_of(model, a) == var and is_uniform(model, fn, b)) or (
        text_of(model, b) == var and is_uniform(model, fn, a)
    )


def _assignments(model: FileModel, node: Any, var: str) -> list[Any]:
    """Return the assignments and updates of `var` under a statement."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        field = {"assignment_expression": "left", "update_expression": "argument"}.get(n.type)
        if field is not None:
            target = n.child_by_field_name(field)
            if target is not None and text_of(model, target) == var:
                out.append(n)
        stack.extend(n.named_children)
    return out


def _unbranched(node: Any, body: Any) -> bool:
    """Return whether no branch or loop of the body lies between a statement and the body."""
    n = node.parent
    while n is not None and n != body:
        if n.type in ("if_statement", "conditional_expression", "for_statement", "while_statement", "do_statement"):
            return False
        n = n.parent
    return n is not None


def _assigns(model: FileModel, node: Any, var: str) -> bool:
    """Return whether a statement assigns (or increments) a name."""
    stack = [node]
    while stack:
        n = stack.pop()
        t = n.type
        if t == "assignment_expression":
            target = n.child_by_field_name("left")
            if target is not None and text_of(model, target) == var:
                return True
        elif t == "update_expression":
            target = n.child_by_field_name("argument")
            if target is not None and text_of(model, target) == var:
                return True
        stack.extend(n.named_children)
    return False
