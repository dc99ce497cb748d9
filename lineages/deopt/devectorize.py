"""Devectorize: 16-byte accesses (`float4`, `uint4`, `int4`) become four 4-byte accesses.

Every dereference of a 16-byte vector pointer - `p[i]`, `*(p + i)`, `*reinterpret_cast<const float4*>(q)`,
`__ldg(p + i)`, `__ldcs(p + i)` - is routed through a small helper that reads or writes the four 4-byte
components one by one (`ww_ld16`, `ww_st16`, `ww_ldg16`, `ww_ldcs16`), so the value, the addresses and the rest
of the kernel stay exactly as they were; only the width of each memory instruction changes. Shared-memory
accesses go through `volatile` 4-byte accesses (`ww_lds16`, `ww_sts16`): the compiler knows the alignment of
shared arrays and would otherwise merge the four loads back into one. Candidates are
grouped by memory space: `global` (the forward rewrite is the card `scalar-global-access`) and `shared` (16-byte
shared-memory loads; no card, the step proposes one).

Exact, or nothing: a vector dereference in a context the helpers cannot express (a member assignment such as
`p[i].x = v`, or an assignment whose value is used) leaves that space without a candidate.
"""

from __future__ import annotations

import re

from warpwise.analyzers.model import Function
from warpwise.lineages.deopt.base import (
    Deopt,
    KernelSource,
    Node,
    ProposedCard,
    enclosing,
    is_assignment_target,
    unparen,
)
from warpwise.skills.rewrite import Edit

VECTOR_TYPES = {
    "float4": ("float", "make_float4"),
    "uint4": ("unsigned int", "make_uint4"),
    "int4": ("int", "make_int4"),
}
LOAD_INTRINSICS = {"__ldg": "ww_ldg16", "__ldcs": "ww_ldcs16", "__ldcg": "ww_ldcg16"}

SHARED_VECTOR_CARD = ProposedCard(
    "scalar-shared-access",
    "Read shared memory with 16-byte loads",
    "Read four consecutive 4-byte values of a 16-byte aligned shared-memory array with one 16-byte load (`float4`), "
    "so that each thread issues a quarter of the shared-memory instructions.",
)


HELPER_COMMENT = "// warpwise lineage (devectorize): a 16-byte vector access done as four 4-byte accesses."


def _helpers(kinds: set[tuple[str, str]]) -> list[str]:
    """Return the helper functions for the given (access kind, vector type) pairs, kinds `ld`, `st`, `ldg`..."""
    lines: list[str] = []
    for vec, (scalar, make) in VECTOR_TYPES.items():
        used = {k for k, v in kinds if v == vec}
        if "ld" in used:
            lines.append(
                f"__device__ __forceinline__ {vec} ww_ld16(const {vec}* p) {{\n"
                f"  const {scalar}* q = reinterpret_cast<const {scalar}*>(p);\n"
                f"  return {make}(q[0], q[1], q[2], q[3]);\n}}"
            )
        if "st" in used:
            lines.append(
                f"__device__ __forceinline__ void ww_st16({vec}* p, {vec} v) {{\n"
                f"  {scalar}* q = reinterpret_cast<{scalar}*>(p);\n"
                f"  q[0] = v.x;\n  q[1] = v.y;\n  q[2] = v.z;\n  q[3] = v.w;\n}}"
            )
        if "lds" in used:
            lines.append(
                f"__device__ __forceinline__ {vec} ww_lds16(const {vec}* p) {{\n"
                f"  const volatile {scalar}* q = reinterpret_cast<const volatile {scalar}*>(p);\n"
                f"  return {make}(q[0], q[1], q[2], q[3]);\n}}"
            )
        if "sts" in used:
            lines.append(
                f"__device__ __forceinline__ void ww_sts16({vec}* p, {vec} v) {{\n"
                f"  volatile {scalar}* q = reinterpret_cast<volatile {scalar}*>(p);\n"
                f"  q[0] = v.x;\n  q[1] = v.y;\n  q[2] = v.z;\n  q[3] = v.w;\n}}"
            )
        for intrinsic, helper in LOAD_INTRINSICS.items():
            if helper[3:-2] in used:
                lines.append(
                    f"__device__ __forceinline__ {vec} {helper}(const {vec}* p) {{\n"
                    f"  const {scalar}* q = reinterpret_cast<const {scalar}*>(p);\n"
                    f"  return {make}({intrinsic}(q), {intrinsic}(q + 1), {intrinsic}(q + 2), {intrinsic}(q + 3));\n}}"
                )
    return lines


def _vector_pointer_type(type_text: str) -> str | None:
    """Return the vector type of a pointer type text (`const float4*` -> `float4`), else None."""
    m = re.fullmatch(r"\s*(?:const\s+)?(\w+)\s*(?:const\s*)?\*\s*(?:__restrict__\s*)?", type_text)
    if m is None or m.group(1) not in VECTOR_TYPES:
        return None
    return m.group(1)


class _Space:
    """Where the pointers of one function point: global (parameters) or shared memory, through local aliases."""

    def __init__(self, src: KernelSource, fn: Function) -> None:
        self.src = src
        self.fn = fn
        self.shared = {s.name for s in fn.shared}
        self.params = {p.name for p in fn.params if p.is_pointer}

    def of_name(self, name: str, depth: int = 0) -> str | None:
        """Return the memory space a pointer variable points into, or None when unknown."""
        if depth > 8:
            return None
        if name in self.shared:
            return "shared"
        if name in self.params:
            return "global"
        alias = self.fn.pointer_aliases.get(name)
        return self.of_name(alias, depth + 1) if alias is not None else None

    def of_expression(self, node: Node) -> str | None:
        """Return the memory space of a pointer expression (its leftmost identifier decides)."""
        node = unparen(node)
        while node is not None:
            if node.type == "identifier":
                return self.of_name(self.src.text_of(node))
            if node.type == "binary_expression":
                node = unparen(node.child_by_field_name("left"))
            elif node.type == "call_expression":
                args = node.child_by_field_name("arguments")
                node = unparen(args.named_children[0]) if args is not None and args.named_child_count == 1 else None
            elif node.type in ("cast_expression",):
                node = unparen(node.child_by_field_name("value"))
            elif node.type == "pointer_expression" or node.type == "subscript_expression":
                node = unparen(node.child_by_field_name("argument"))
            else:
                return None
        return None


class _Devectorizer:
    """Collect the edits of one function, per memory space."""

    def __init__(self, src: KernelSource, fn: Function) -> None:
        self.src = src
        self.fn = fn
        self.space = _Space(src, fn)
        self.vec_names = {name: vt for name, t in fn.locals.items() if (vt := _vector_pointer_type(t)) is not None} | {
            p.name: vt for p in fn.params if p.is_pointer and (vt := _vector_pointer_type(p.type)) is not None
        }
        self.edits: dict[str, list[Edit]] = {"global": [], "shared": []}
        self.kinds: dict[str, set[tuple[str, str]]] = {"global": set(), "shared": set()}
        self.failed: set[str] = set()
        self.taken: list[tuple[int, int]] = []

    def vector_pointer(self, node: Node) -> str | None:
        """Return the vector type an expression points to (`float4`), or None when it is not a vector pointer."""
        node = unparen(node)
        if node.type == "identifier":
            return self.vec_names.get(self.src.text_of(node))
        if node.type == "binary_expression":
            op = node.child_by_field_name("operator")
            if op is None or op.type not in ("+", "-"):
                return None
            return self.vector_pointer(node.child_by_field_name("left"))
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            if callee is not None and callee.type == "template_function":
                name = callee.child_by_field_name("name")
                targs = callee.child_by_field_name("arguments")
                if name is not None and self.src.text_of(name) == "reinterpret_cast" and targs is not None:
                    return _vector_pointer_type(self.src.text_of(targs)[1:-1])
        return None

    def add(self, space: str | None, edits: list[Edit], kind: tuple[str, str]) -> None:
        """Record the edits of one rewritten dereference (a store's value keeps the loads inside it)."""
        where = space or "global"
        for e in edits:
            if any(a < e.end and e.start < b for a, b in self.taken if a != b or e.start != e.end):
                self.failed.add(where)
                return
        self.taken.extend((e.start, e.end) for e in edits if e.start != e.end)
        self.edits[where].extend(edits)
        self.kinds[where].add(kind)

    def visit(self, node: Node) -> None:
        """Rewrite every vector dereference below a node."""
        for n in self.src.nodes(node, ("subscript_expression", "pointer_expression", "call_expression")):
            if n.type == "subscript_expression":
                base = n.child_by_field_name("argument")
                index = n.child_by_field_name("indices") or n.child_by_field_name("index")
                vec = self.vector_pointer(base) if base is not None else None
                if vec is None:
                    continue
                inner = index.named_children[0] if index is not None and index.named_child_count == 1 else None
                if inner is None:
                    self.failed.add(self.space.of_expression(base) or "global")
                    continue
                pointer = f"({self.src.text_of(base)}) + ({self.src.text_of(inner)})"
                self.dereference(n, pointer, self.space.of_expression(base), vec)
            elif n.type == "pointer_expression":
                op = n.child_by_field_name("operator")
                arg = n.child_by_field_name("argument")
                vec = self.vector_pointer(arg) if op is not None and op.type == "*" and arg is not None else None
                if vec is None:
                    continue
                self.dereference(n, self.src.text_of(arg), self.space.of_expression(arg), vec)
            else:
                callee = n.child_by_field_name("function")
                args = n.child_by_field_name("arguments")
                if callee is None or callee.type != "identifier" or args is None or args.named_child_count != 1:
                    continue
                helper = LOAD_INTRINSICS.get(self.src.text_of(callee))
                arg = args.named_children[0]
                vec = self.vector_pointer(arg) if helper is not None else None
                if helper is None or vec is None:
                    continue
                edit = Edit(n.start_byte, n.end_byte, f"{helper}({self.src.text_of(arg)})")
                self.add(self.space.of_expression(arg), [edit], (helper[3:-2], vec))

    def dereference(self, node: Node, pointer: str, space: str | None, vec: str) -> None:
        """Rewrite a load or a store through a vector pointer."""
        parent = node.parent
        where = space or "global"
        if is_assignment_target(node):
            if parent.parent is None or parent.parent.type != "expression_statement":
                self.failed.add(where)
                return
            right = parent.child_by_field_name("right")
            helper = "sts" if space == "shared" else "st"
            edits = [
                Edit(node.start_byte, right.start_byte, f"ww_{helper}16({pointer}, "),
                Edit(right.end_byte, right.end_byte, ")"),
            ]
            self.add(space, edits, (helper, vec))
            return
        if parent is not None and parent.type == "pointer_expression":
            op = parent.child_by_field_name("operator")
            if op is not None and op.type == "&":
                return  # `&p[i]` takes an address: nothing is accessed here
        if parent is not None and parent.type == "update_expression":
            self.failed.add(where)
            return
        if parent is not None and parent.type == "assignment_expression":
            left = parent.child_by_field_name("left")
            if left is not None and left.id == node.id:
                self.failed.add(where)  # a compound assignment such as `p[i] += v`
                return
        if parent is not None and parent.type == "field_expression":
            assign = enclosing(node, "assignment_expression")
            left = assign.child_by_field_name("left") if assign is not None else None
            if left is not None and left.start_byte <= node.start_byte < left.end_byte:
                self.failed.add(where)  # a member store such as `p[i].x = v`
                return
        helper = "lds" if space == "shared" else "ld"
        self.add(space, [Edit(node.start_byte, node.end_byte, f"ww_{helper}16({pointer})")], (helper, vec))


def devectorize(src: KernelSource) -> list[Deopt]:
    """Return one candidate per memory space whose 16-byte accesses can all be split exactly."""
    per_space: dict[str, list[Edit]] = {"global": [], "shared": []}
    kinds: dict[str, set[tuple[str, str]]] = {"global": set(), "shared": set()}
    failed: set[str] = set()
    for fn in src.device_functions():
        node = src.function_node(fn)
        if node is None or fn.name.startswith("ww_"):
            continue
        d = _Devectorizer(src, fn)
        d.visit(node)
        failed |= d.failed
        for space in per_space:
            per_space[space] += d.edits[space]
            kinds[space] |= d.kinds[space]
    out = []
    for space, edits in per_space.items():
        if not edits or space in failed:
            continue
        helpers = src.insert_helpers(HELPER_COMMENT, _helpers(kinds[space]))
        out.append(
            Deopt(
                "devectorize",
                space,
                f"split the 16-byte {space}-memory accesses into 4-byte ones",
                tuple(helpers + edits),
                "scalar-global-access" if space == "global" else None,
                None if space == "global" else SHARED_VECTOR_CARD,
            )
        )
    return out
