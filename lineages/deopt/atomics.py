"""Atomics per thread instead of aggregated.

Two shapes, each exact for integer counts and for sums (float sums only change their order):
- `privatized`: a pointer into a `__shared__` array of 4-byte integers through which a kernel counts with
  `atomicAdd` (directly or through device functions) before the block adds the array into a global one with
  one atomic per entry, is pointed at the global array instead. Every count then goes straight to global
  memory; the block's copy stays zero, so its final flush adds nothing. The forward rewrite is the card
  `per-thread-global-atomics`.
- `aggregated`: a kernel that reduces each thread's value over the warp (`X = F(X)` with a device function F
  that adds with shuffles), combines the warps in shared memory and lets one thread `atomicAdd` the block's
  total to a single address, instead lets every thread `atomicAdd` its own value: the statements from
  `X = F(X)` to the end of the kernel become `atomicAdd(P, X);`. The forward rewrite is the card
  `atomic-accumulate-single-address`.
"""

from __future__ import annotations

import re

from warpwise.analyzers.model import AccessKind, Function, MemorySpace
from warpwise.lineages.deopt.base import Deopt, KernelSource, Node, enclosing, unparen
from warpwise.skills.rewrite import Edit

INT_TYPES = ("unsigned int", "unsigned", "int", "uint32_t", "int32_t")
SHUFFLE_CALL = re.compile(r"\b(__shfl_\w+_sync|__shfl_sync|ww_shfl\w*)\s*\(")


def _root_identifier(src: KernelSource, node: Node) -> str | None:
    """Return the array or pointer an address expression starts from (`hist[w]`, `&hist[w][0]`, `p + i`)."""
    node = unparen(node)
    while node is not None:
        if node.type == "identifier":
            return src.text_of(node)
        if node.type == "subscript_expression" or node.type == "pointer_expression":
            node = unparen(node.child_by_field_name("argument"))
        elif node.type == "binary_expression":
            node = unparen(node.child_by_field_name("left"))
        else:
            return None
    return None


def _atomic_targets(src: KernelSource, node: Node) -> list[tuple[Node, str | None]]:
    """Return every `atomicAdd` call below a node with the identifier its address starts from."""
    out = []
    for call in src.calls(node, ("atomicAdd",)):
        args = call.child_by_field_name("arguments")
        first = args.named_children[0] if args is not None and args.named_child_count == 2 else None
        out.append((call, _root_identifier(src, first) if first is not None else None))
    return out


def _only_atomic_base(src: KernelSource, fn: Function, name: str, depth: int = 0) -> bool:
    """Return whether a pointer is used only as the address of `atomicAdd`, here or in the functions it is passed to."""
    node = src.function_node(fn)
    if node is None or depth > 3:
        return False
    uses = [
        n
        for n in src.nodes(node, ("identifier",))
        if src.text_of(n) == name and enclosing(n, "parameter_declaration", "init_declarator") is None
    ]
    for use in uses:
        call = enclosing(use, "call_expression")
        if call is None:
            return False
        callee = src.text_of(call.child_by_field_name("function"))
        args = call.child_by_field_name("arguments")
        position = next(
            (i for i, a in enumerate(args.named_children) if a.start_byte <= use.start_byte < a.end_byte), -1
        )
        if callee == "atomicAdd":
            if position != 0:
                return False
            continue
        target = next((f for f in src.device_functions() if f.name == callee), None)
        if target is None or position < 0 or position >= len(target.params):
            return False
        if unparen(args.named_children[position]).id != use.id:
            return False
        if not _only_atomic_base(src, target, target.params[position].name, depth + 1):
            return False
    return True


def _privatized(src: KernelSource, fn: Function) -> list[Deopt]:
    """Return the candidate that points a privatized shared histogram at its global destination."""
    node = src.function_node(fn)
    shared = {s.name: s for s in fn.shared}
    for decl in src.nodes(node, ("init_declarator",)):
        ptr = decl.child_by_field_name("declarator")
        value = decl.child_by_field_name("value")
        if ptr is None or value is None or ptr.type != "pointer_declarator":
            continue
        name_node = ptr.child_by_field_name("declarator")
        name = src.text_of(name_node) if name_node is not None else ""
        array = shared.get(_root_identifier(src, value) or "")
        pointee = fn.locals.get(name, "").rstrip("*").strip()
        if array is None or pointee not in INT_TYPES or array.element_type not in INT_TYPES:
            continue
        if not _only_atomic_base(src, fn, name):
            continue
        width = array.dims[-1]
        targets = [
            (call, base)
            for call, base in _atomic_targets(src, node)
            if base in {p.name for p in fn.params if p.is_pointer}
        ]
        if len({b for _, b in targets}) != 1:
            continue
        call, dest = targets[0]
        loop = enclosing(call, "for_statement")
        cond = loop.child_by_field_name("condition") if loop is not None else None
        if cond is None or not re.search(rf"<\s*{re.escape(width)}\b", src.text_of(cond)):
            continue
        param = fn.param(dest or "")
        if param is None or param.base_type.replace("const", "").strip() not in INT_TYPES:
            continue
        edit = Edit(value.start_byte, value.end_byte, f"reinterpret_cast<{pointee}*>({dest})")
        return [
            Deopt(
                "atomics",
                "privatized",
                f"count straight into `{dest}` with global atomics instead of the block's shared copy `{array.name}`",
                (edit,),
                "per-thread-global-atomics",
            )
        ]
    return []


def _is_warp_sum(src: KernelSource, name: str) -> bool:
    """Return whether a device function adds a value over the warp with shuffles."""
    fn = next((f for f in src.device_functions() if f.name == name), None)
    if fn is None:
        return False
    body = src.span_text(fn.base, fn.base + fn.length)
    return SHUFFLE_CALL.search(body) is not None and "+=" in body and "max" not in body


def _aggregated(src: KernelSource, fn: Function) -> list[Deopt]:
    """Return the candidate that lets every thread add its own value to a block-aggregated atomic address."""
    node = src.function_node(fn)
    body = node.child_by_field_name("body") if node is not None else None
    if body is None:
        return []
    atomics = _atomic_targets(src, body)
    pointers = {p.name for p in fn.params if p.is_pointer}
    if len(atomics) != 1 or atomics[0][1] not in pointers:
        return []
    call, dest = atomics[0]
    address = call.child_by_field_name("arguments").named_children[0]
    if unparen(address).type != "identifier":
        return []
    stmts = body.named_children
    for stmt in stmts:
        if stmt.type != "expression_statement" or stmt.named_child_count != 1:
            continue
        assign = stmt.named_children[0]
        if assign.type != "assignment_expression" or src.text_of(assign.child_by_field_name("operator")) != "=":
            continue
        var = src.text_of(assign.child_by_field_name("left"))
        right = unparen(assign.child_by_field_name("right"))
        if right.type != "call_expression":
            continue
        args = right.child_by_field_name("arguments")
        if args is None or args.named_child_count != 1 or src.text_of(args.named_children[0]) != var:
            continue
        if not _is_warp_sum(src, src.text_of(right.child_by_field_name("function"))):
            continue
        if call.start_byte < stmt.end_byte:
            return []
        tail = (stmt.start_byte, stmts[-1].end_byte)
        writes = [
            a
            for a in fn.accesses
            if a.space is MemorySpace.GLOBAL
            and a.kind in (AccessKind.WRITE, AccessKind.READ_WRITE)
            and tail[0] <= fn.base + a.span[0] < tail[1]
        ]
        if writes:
            return []
        edit = Edit(tail[0], tail[1], f"atomicAdd({src.text_of(address)}, {var});")
        return [
            Deopt(
                "atomics",
                "aggregated",
                f"every thread adds its own `{var}` to `{dest}` with an atomic, instead of one atomic per block",
                (edit,),
                "atomic-accumulate-single-address",
            )
        ]
    return []


def per_thread_atomics(src: KernelSource) -> list[Deopt]:
    """Return the candidates that undo atomic aggregation in the walked kernel."""
    fn = src.kernel_fn
    if fn is None:
        return []
    return _privatized(src, fn) + _aggregated(src, fn)
