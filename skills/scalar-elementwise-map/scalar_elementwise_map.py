"""Elementwise map with scalar accesses: each thread moves 16-byte vectors of several consecutive elements.

A map computes each output element from inputs at the same element (and from operands broadcast along a row or a
column, such as a bias indexed by the column). Written as people write it first, each thread handles one element
with 2-, 4- or 8-byte loads and stores, in any of these forms:

- guarded: `T v = blockIdx.x * blockDim.x + threadIdx.x;` (any spelling whose polynomial is that), then
  declarations, then `if (C) BODY` as the last statement or `if (C') return;` followed by the rest of the kernel;
  a 2-D launch reads the row from `blockIdx.y`/`threadIdx.y` and the lane variable is the column;
- grid-stride: `for (T v = bx * bd + tx; v < B; v += gridDim.x * blockDim.x)`, or the same as a `while` loop whose
  last statement steps the index;
- block-stride over a row: `for (T v = threadIdx.x; v < B; v += blockDim.x)` (a block per row).

What the recogniser reads (semantics, not spelling): indices and pointers are read as integer polynomials with
locals defined once expanded, typedefs resolved and casts looked through. An array is vectorized when every one
of its accesses in the per-element code has the index `v + R`, the same R (free of the lane variable, and of the
thread's x position in the guarded form), and when its accesses are unconditional (so that the original thread
touches that element whenever its guard passes). Accesses with other indices (`bias[i % cols]`,
`in[t * 2 * H + f]`) stay scalar, executed per element as before.

The rewrite gives each thread L = K * V consecutive elements (K elements make one 16-byte vector: four floats,
eight halves in a `uint4`, two doubles; V vectors per array, the search's parameter):

    T ww_v0 = (start) * L;
    bool ww_vec = every lane's guard holds && every vectorized address is 16-byte aligned (checked at run time);
    if (ww_vec) { V vector loads per read array; L unrolled copies of the per-element code reading and writing
                  registers; V vector stores per written array }
    else        { for each lane l: the original per-element code with v = ww_v0 + l (`return` -> `continue`) }

The guarded form shrinks the launch's grid.x by L (the search's launch change; host launches written
`(n + B - 1) / B` in the file are edited); the stride forms keep any launch.

Exactness: every element is computed by the same statements on the same values in the same order as in the
original (the same arithmetic per element; nothing is re-associated), so results are the same (the compiler may
contract a multiply and an add of an unrolled copy into an FMA where it did not before, as it may in any build with
the default `-fmad=true`; the gate compares within the problem's tolerance). The thread
that computes an element changes, and a thread now computes L elements in sequence: the only difference a
program could observe is through overlapping pointers, which the `no-overlap` check decides (the original's
elements are independent: a kernel whose threads read what other threads write would race in the original).
Alignment is never assumed: a thread whose vector addresses are not 16-byte aligned (an offset pointer, a row
length that is not a multiple of K) takes the scalar path, as does a thread whose last lanes fail the guard (the
tail).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from warpwise.analyzers.expr.poly import Poly
from warpwise.analyzers.facts import distinct_launch_args, function_node
from warpwise.analyzers.facts_memory import node_text, squash, unparen
from warpwise.analyzers.model import FileModel, Function, FunctionKind
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
)
from warpwise.skills.rewrite import Edit, RewriteContext

Node = Any

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
    "__half": ("uint4", 8),
    "half": ("uint4", 8),
    "__nv_bfloat16": ("uint4", 8),
    "nv_bfloat16": ("uint4", 8),
    "__half2": ("uint4", 4),
    "__nv_bfloat162": ("uint4", 4),
}
"""The 16-byte type each element type travels as, and how many elements it holds."""

VECTOR_CHOICES = (1, 2, 4)
"""Vectors per array per thread: the search's parameter."""

NEIGHBOURS = 64
"""Two accesses of one array fewer than this many elements apart are a stencil's neighbours, not two streams."""
_DEPTH = 24
_BUILTIN = re.compile(r"^(threadIdx|blockIdx|blockDim|gridDim)\.([xyz])$")
_GLOBAL_INDEX = Poly({("blockDim.x", "blockIdx.x"): 1, ("threadIdx.x",): 1})
_GRID_STRIDE = Poly({("blockDim.x", "gridDim.x"): 1})
_BLOCK_INDEX = Poly({("threadIdx.x",): 1})
_BLOCK_STRIDE = Poly({("blockDim.x",): 1})
_FORBIDDEN_CALLS = re.compile(
    r"^(__syncthreads\w*|__syncwarp|__shfl\w*|atomic\w*|__threadfence\w*|__ballot\w*|__any\w*|__all\w*|"
    r"__activemask|printf|asm|__nanosleep|malloc|free|__ldg|__ldcg|__ldcs|__ldlu|__ldcv|__stcg|__stcs|__stwb|"
    r"__stwt|__reduce\w*|__match\w*)$"
)
_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
_JUMPS = ("break_statement", "continue_statement", "return_statement", "goto_statement")
_BRANCHING = (
    "if_statement",
    "conditional_expression",
    "for_statement",
    "while_statement",
    "do_statement",
    "switch_statement",
    "case_statement",
)
MARK = "ww_vec"


class _Reject(Exception):
    """The kernel is not an elementwise map this card rewrites; the message says why."""


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


@dataclass(frozen=True)
class Access:
    """One access `A[e]` (or `*(A + e)`) of a pointer parameter in the per-element code."""

    array: str
    node: Node
    offset: Poly | None  # R of an index `v + R`; None when the index is not of that form
    written: bool
    read: bool
    unconditional: bool


@dataclass(frozen=True)
class MapShape:
    """What the recogniser found in one kernel."""

    form: str  # "if", "return" (the guarded forms) or "loop" (a grid- or block-stride loop)
    var: str
    var_type: str
    start: Node  # the expression the lane variable starts at
    stride: Node | None  # the loop's step (stride forms)
    replace: tuple[int, int]  # the absolute span the rewrite replaces
    pre: tuple[Node, ...]  # guarded form: declarations between the index and the guard
    cond: Node  # the guard (if), the early-return condition (return) or the loop condition (loop)
    body: tuple[Node, ...]  # the per-element statements after the guard (or the loop body less its step)
    loop_bound: str  # the stride forms' loop condition, with the lane variable written `{v}`
    accesses: tuple[Access, ...]
    vectorized: tuple[str, ...]  # the stream ids (an array, or an array and its offset's number)
    streams: tuple[tuple[str, str, Poly], ...]  # (stream id, array, offset R)
    access_streams: tuple[str, ...]  # the stream of each access ("" for one that stays scalar)
    quotients: tuple[tuple[str, str], ...]  # (atom, divisor) of each `v / D` an offset reads: checked per thread
    elem_type: str
    vector: str
    lanes: int
    hazard: str  # "" or the first read of a vectorized array after a store to another array
    stride_kind: str = ""  # "grid" or "block" for the stride forms
    between: tuple[str, ...] = field(default_factory=tuple)  # statements kept between the index and its loop


class _Reader:
    """One kernel's syntax: texts, local definitions, index polynomials."""

    def __init__(self, model: FileModel, fn: Function, node: Node) -> None:
        self.model = model
        self.fn = fn
        self.node = node
        self.body = node.child_by_field_name("body")
        self.params = {p.name for p in fn.params}
        self.defs: dict[str, list[Node | None]] = {}
        self.decl_stmt: dict[str, Node] = {}
        self.quotients: dict[str, str] = {}  # `~q<v>/<D>` atoms: the divisor's text
        for n in _walk(self.body):
            if n.type == "init_declarator":
                name = self._declared(n.child_by_field_name("declarator"))
                if name:
                    self.defs.setdefault(name, []).append(n.child_by_field_name("value"))
                    self.decl_stmt.setdefault(name, n.parent)
            elif n.type == "declaration":
                for d in n.children_by_field_name("declarator"):
                    if d.type != "init_declarator":
                        name = self._declared(d)
                        if name:
                            self.defs.setdefault(name, []).append(None)
            elif n.type in ("assignment_expression", "update_expression"):
                target = n.child_by_field_name("left") or n.child_by_field_name("argument")
                if target is not None and unparen(target).type == "identifier":
                    self.defs.setdefault(self.text(unparen(target)), []).append(None)
            elif n.type == "pointer_expression" and self.text(n.child_by_field_name("operator")) == "&":
                arg = unparen(n.child_by_field_name("argument"))
                if arg is not None and arg.type == "identifier":
                    self.defs.setdefault(self.text(arg), []).append(None)

    def _declared(self, d: Node | None) -> str | None:
        while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
            d = d.child_by_field_name("declarator")
        return self.text(d) if d is not None and d.type == "identifier" else None

    def text(self, node: Node) -> str:
        return node_text(self.model, node)

    def single_def(self, name: str) -> Node | None:
        d = self.defs.get(name)
        return d[0] if d is not None and len(d) == 1 else None

    def poly(self, node: Node | None, keep: frozenset[str] = frozenset(), depth: int = 0) -> Poly | None:
        """Read an integer expression as a polynomial; locals defined once (other than `keep`) are expanded."""
        if node is None or depth > _DEPTH:
            return None
        node = unparen(node)
        t = node.type
        if t == "number_literal":
            raw = self.text(node).rstrip("uUlL")
            try:
                return Poly.const(int(raw, 0))
            except ValueError:
                return None
        if t == "identifier":
            name = self.text(node)
            if name in keep:
                return Poly.atom(name)
            if name in self.params:
                return None if name in self.defs else Poly.atom(name)
            if name in self.defs:
                init = self.single_def(name)
                return None if init is None else self.poly(init, keep, depth + 1)
            value = self.model.constants.get(name)
            if isinstance(value, int):
                return Poly.const(value)
            return Poly.atom(name)  # A macro or a global constant: the same for every thread.
        if t == "field_expression":
            txt = squash(self.text(node))
            return Poly.atom(txt) if _BUILTIN.match(txt) else None
        if t == "cast_expression":
            type_text = squash(self.text(node.child_by_field_name("type")))
            if not re.fullmatch(r"(unsigned|signed|const|long|int|short|size_t|ptrdiff_t|u?int(32|64)_t)+", type_text):
                return None
            return self.poly(node.child_by_field_name("value"), keep, depth + 1)
        if t == "unary_expression":
            op = self.text(node.child_by_field_name("operator"))
            arg = self.poly(node.child_by_field_name("argument"), keep, depth + 1)
            if arg is None:
                return None
            return arg.scale(-1) if op == "-" else arg if op == "+" else None
        if t == "binary_expression":
            o = self.text(node.child_by_field_name("operator"))
            a = self.poly(node.child_by_field_name("left"), keep, depth + 1)
            b = self.poly(node.child_by_field_name("right"), keep, depth + 1)
            if a is None or b is None:
                return None
            if o == "+":
                return a + b
            if o == "-":
                return a - b
            if o == "*":
                return a * b
            if o in ("/", "%"):
                return self._quotient(node, o, a, b, keep)
            return None
        return None

    def _quotient(self, node: Node, op: str, a: Poly, b: Poly, keep: frozenset[str]) -> Poly | None:
        """Read `v / D` as a symbol q (constant over a thread's lanes when checked) and `v % D` as `v - D q`."""
        right = unparen(node.child_by_field_name("right"))
        var = next((k for k in keep if a.key() == Poly.atom(k).key()), None)
        if var is None or right is None or b.atoms() & keep or b.constant() == 0:
            return None
        if right.type == "identifier":
            name = self.text(right)
            if name in self.defs or (name not in self.params and name not in self.model.constants):
                return None  # Only a parameter or a macro is in scope where the rewrite checks the quotient.
        elif right.type != "number_literal":
            return None
        divisor = self.text(right)
        atom = f"~q{var}/{divisor}"
        self.quotients[atom] = divisor
        q = Poly.atom(atom)
        # C defines `v % D` as `v - (v / D) * D` for every D other than zero.
        return q if op == "/" else a - b * q

    def pointer(self, node: Node | None, keep: frozenset[str], depth: int = 0) -> tuple[str, Poly | None] | None:
        """Return (pointer parameter, offset) of a pointer expression such as `x + row * n` or a local for one."""
        if node is None or depth > _DEPTH:
            return None
        node = unparen(node)
        if node.type == "cast_expression":
            return self.pointer(node.child_by_field_name("value"), keep, depth + 1)
        if node.type == "identifier":
            name = self.text(node)
            if name in self.params:
                p = self.fn.param(name)
                return (name, Poly()) if p is not None and p.pointer_depth == 1 and name not in self.defs else None
            init = self.single_def(name)
            return None if init is None else self.pointer(init, keep, depth + 1)
        if node.type == "binary_expression" and self.text(node.child_by_field_name("operator")) in ("+", "-"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            sign = 1 if self.text(node.child_by_field_name("operator")) == "+" else -1
            base = self.pointer(left, keep, depth + 1)
            if base is not None:
                off = self.poly(right, keep)
                return base[0], (None if off is None or base[1] is None else base[1] + off.scale(sign))
            base = self.pointer(right, keep, depth + 1) if sign == 1 else None
            if base is not None:
                off = self.poly(left, keep)
                return base[0], (None if off is None or base[1] is None else base[1] + off)
        return None

    def element(self, node: Node, keep: frozenset[str]) -> tuple[str, Poly | None] | None:
        """Return (pointer parameter, index polynomial) of `p[i]` or `*(p + i)`; None when it is not memory."""
        node = unparen(node)
        if node.type == "subscript_expression":
            idx = node.child_by_field_name("index") or next(
                (c for c in node.named_children if c.type == "subscript_argument_list"), None
            )
            if idx is not None and idx.type == "subscript_argument_list":
                items = [c for c in idx.named_children if c.type != "comment"]
                idx = items[0] if len(items) == 1 else None
            base = self.pointer(node.child_by_field_name("argument"), keep)
            if base is None:
                return None
            p = self.poly(idx, keep) if idx is not None else None
            return base[0], (None if p is None or base[1] is None else base[1] + p)
        if node.type == "pointer_expression" and self.text(node.child_by_field_name("operator")) == "*":
            return self.pointer(node.child_by_field_name("argument"), keep)
        return None

    def names(self, node: Node) -> set[str]:
        return {self.text(n) for n in _walk(node) if n.type == "identifier"}


def _stmts(node: Node | None) -> list[Node]:
    if node is None:
        return []
    if node.type == "compound_statement":
        return [c for c in node.named_children if c.type != "comment"]
    return [node]


def _cond_value(stmt: Node) -> Node | None:
    clause = stmt.child_by_field_name("condition")
    if clause is None:
        return None
    if clause.type == "condition_clause":
        return clause.child_by_field_name("value")
    return clause


def _bare_return(node: Node) -> bool:
    kids = _stmts(node)
    return len(kids) == 1 and kids[0].type == "return_statement" and kids[0].named_child_count == 0


def _declared_type(r: _Reader, decl: Node) -> str:
    """Return a declaration's type without `const` (the lane variable is redeclared per lane)."""
    type_node = decl.child_by_field_name("type")
    if type_node is None:
        return "int"
    words = [r.text(c) for c in decl.children if c.type == "type_qualifier" and r.text(c) != "const"]
    base = r.text(type_node)
    if type_node.type == "sized_type_specifier":
        base = " ".join(r.text(c) for c in type_node.children if c.type != "type_qualifier")
    return " ".join([*words, base])


def _single_var_decl(r: _Reader, stmt: Node) -> tuple[str, Node] | None:
    if stmt.type != "declaration":
        return None
    decls = [c for c in stmt.named_children if c.type == "init_declarator"]
    if len(decls) != 1 or len(stmt.children_by_field_name("declarator")) != 1:
        return None
    name = decls[0].child_by_field_name("declarator")
    value = decls[0].child_by_field_name("value")
    if name is None or name.type != "identifier" or value is None:
        return None
    return r.text(name), value


def _less_bound(r: _Reader, cond: Node, var: str) -> str | None:
    """Return the condition with the lane variable written `{v}` when it reads `v < B` or `v <= B`, B free of v."""
    c = unparen(cond)
    if c.type != "binary_expression":
        return None
    op = r.text(c.child_by_field_name("operator"))
    left, right = unparen(c.child_by_field_name("left")), unparen(c.child_by_field_name("right"))
    if op in ("<", "<=") and left.type == "identifier" and r.text(left) == var and var not in r.names(right):
        return "{v} " + op + " (" + r.text(right) + ")"
    if op in (">", ">=") and right.type == "identifier" and r.text(right) == var and var not in r.names(left):
        return "(" + r.text(left) + ") " + op + " {v}"
    return None


def _step(r: _Reader, update: Node | None, var: str) -> Node | None:
    """Return S of an update `v += S` or `v = v + S` (S free of v)."""
    if update is None:
        return None
    if update.type == "expression_statement":
        kids = [c for c in update.named_children if c.type != "comment"]
        update = kids[0] if len(kids) == 1 else None
        if update is None:
            return None
    update = unparen(update)
    if update.type != "assignment_expression":
        return None
    left = unparen(update.child_by_field_name("left"))
    right = update.child_by_field_name("right")
    op = r.text(update.child_by_field_name("operator"))
    if left.type != "identifier" or r.text(left) != var or right is None:
        return None
    if op == "+=":
        return right if var not in r.names(right) else None
    if op == "=":
        rr = unparen(right)
        if rr.type == "binary_expression" and r.text(rr.child_by_field_name("operator")) == "+":
            a, b = unparen(rr.child_by_field_name("left")), unparen(rr.child_by_field_name("right"))
            if a.type == "identifier" and r.text(a) == var and var not in r.names(b):
                return b
            if b.type == "identifier" and r.text(b) == var and var not in r.names(a):
                return a
    return None


def _find_shape(r: _Reader) -> dict[str, Any]:
    """Return the form, lane variable and per-element code of the kernel (raises _Reject)."""
    stmts = _stmts(r.body)
    # A block as the last statement (`{ int i = ...; while (i < n) ... }`) scopes its locals to the end of the
    # kernel: its statements are read as the kernel's own.
    while stmts and stmts[-1].type == "compound_statement":
        stmts = stmts[:-1] + _stmts(stmts[-1])
    if not stmts:
        raise _Reject("the kernel has no statements")
    # The stride forms: a top-level loop whose index starts at the thread's position and steps by the threads.
    for pos, stmt in enumerate(stmts):
        if stmt.type not in ("for_statement", "while_statement"):
            continue
        var = None
        start = None
        decl_stmt = None
        body_stmts: list[Node]
        if stmt.type == "for_statement":
            init = stmt.child_by_field_name("initializer")
            cond = stmt.child_by_field_name("condition")
            if init is not None and init.type == "declaration":
                got = _single_var_decl(r, init)
                if got is None:
                    continue
                var, start = got
                decl_stmt = init
            elif init is None:
                continue
            else:
                continue
            if cond is None:
                continue
            step = _step(r, stmt.child_by_field_name("update"), var)
            body_stmts = _stmts(stmt.child_by_field_name("body"))
        else:
            cond = _cond_value(stmt)
            body_stmts = _stmts(stmt.child_by_field_name("body"))
            if cond is None or not body_stmts:
                continue
            cu = unparen(cond)
            left = unparen(cu.child_by_field_name("left")) if cu.type == "binary_expression" else None
            if left is None or left.type != "identifier":
                continue
            var = r.text(left)
            step = _step(r, body_stmts[-1], var)
            body_stmts = body_stmts[:-1]
            decl = r.decl_stmt.get(var)
            if decl is None or decl not in stmts[:pos] or len(r.defs.get(var, [])) != 2:
                continue
            got = _single_var_decl(r, decl)
            if got is None:
                continue
            start = got[1]
            decl_stmt = decl
        if var is None or start is None or step is None or decl_stmt is None:
            continue
        bound = _less_bound(r, cond, var)
        if bound is None:
            continue
        sp = r.poly(start)
        st = r.poly(step)
        kind = ""
        if sp is not None and st is not None:
            if sp.key() == _GLOBAL_INDEX.key() and st.key() == _GRID_STRIDE.key():
                kind = "grid"
            elif sp.key() == _BLOCK_INDEX.key() and st.key() == _BLOCK_STRIDE.key():
                kind = "block"
        if not kind:
            continue
        if stmts[pos + 1 :]:
            raise _Reject(f"statements follow the loop over `{var}`")
        if stmt.type == "while_statement":
            uses = [n for s in stmts[:pos] if s != decl_stmt for n in _walk(s) if n.type == "identifier"]
            if any(r.text(n) == var for n in uses):
                raise _Reject(f"`{var}` is used before its loop")
            replace = (decl_stmt.start_byte, stmt.end_byte)
        else:
            replace = (stmt.start_byte, stmt.end_byte)
        for s in stmts[:pos]:
            _check_prefix(r, s)
        return {
            "form": "loop",
            "var": var,
            "var_type": _declared_type(r, decl_stmt),
            "start": start,
            "stride": step,
            "replace": replace,
            "pre": (),
            "cond": cond,
            "body": tuple(body_stmts),
            "loop_bound": bound,
            "stride_kind": kind,
            "decl_stmt": decl_stmt,
            "between": tuple(s for s in stmts[:pos] if s != decl_stmt and s.start_byte > decl_stmt.start_byte),
        }
    # The guarded forms: the index declared at the top level, then the guard.
    for pos, stmt in enumerate(stmts):
        got = _single_var_decl(r, stmt)
        if got is None:
            continue
        var, start = got
        sp = r.poly(start)
        if sp is None or sp.key() != _GLOBAL_INDEX.key() or len(r.defs.get(var, [])) != 1:
            continue
        pre: list[Node] = []
        for k in range(pos + 1, len(stmts)):
            s = stmts[k]
            if s.type == "if_statement" and s.child_by_field_name("alternative") is None:
                cond = _cond_value(s)
                cons = s.child_by_field_name("consequence")
                if cond is None or cons is None:
                    raise _Reject("the guard has no condition")
                if _bare_return(cons):
                    rest = stmts[k + 1 :]
                    if not rest:
                        raise _Reject("nothing follows the early return")
                    form, body = "return", tuple(rest)
                elif k == len(stmts) - 1:
                    form, body = "if", (cons,)
                else:
                    raise _Reject(f"statements follow the guarded statement of `{var}`")
                for s0 in stmts[:pos]:
                    _check_prefix(r, s0)
                return {
                    "form": form,
                    "var": var,
                    "var_type": _declared_type(r, stmt),
                    "start": start,
                    "stride": None,
                    "replace": (stmt.start_byte, stmts[-1].end_byte),
                    "pre": tuple(pre),
                    "cond": cond,
                    "body": body,
                    "loop_bound": "",
                    "stride_kind": "",
                    "decl_stmt": stmt,
                    "between": (),
                }
            if s.type != "declaration":
                raise _Reject(f"`{r.text(s)[:40]}` comes between the index `{var}` and its guard")
            pre.append(s)
        raise _Reject(f"no guard on `{var}`")
    raise _Reject("no thread index `blockIdx.x * blockDim.x + threadIdx.x` and no grid- or block-stride loop")


def _check_prefix(r: _Reader, stmt: Node) -> None:
    """Refuse statements before the per-element code that write memory or synchronise."""
    if stmt.type == "declaration":
        if "__shared__" in r.text(stmt):
            raise _Reject("the kernel declares shared memory")
        _check_calls(r, stmt)
        return
    early_return = stmt.type == "if_statement" and _bare_return(stmt.child_by_field_name("consequence"))
    if early_return and stmt.child_by_field_name("alternative") is None:
        _check_calls(r, stmt)
        return
    raise _Reject(f"`{r.text(stmt)[:40]}` comes before the per-element code")


def _check_calls(r: _Reader, node: Node) -> None:
    for n in _walk(node):
        if n.type == "call_expression":
            f = n.child_by_field_name("function")
            name = r.text(f) if f is not None else ""
            if _FORBIDDEN_CALLS.match(name.split("<")[0].strip()):
                raise _Reject(f"the per-element code calls `{name}`")
        elif n.type in ("gnu_asm_expression", "asm_statement"):
            raise _Reject("the per-element code holds inline assembly")


def _under_condition(node: Node, roots: tuple[Node, ...]) -> bool:
    """Return whether a node runs only on some paths of the per-element code (below a branch or a loop)."""
    root_ids = {(x.start_byte, x.end_byte, x.type) for x in roots}
    n = node.parent
    child = node
    while n is not None and (child.start_byte, child.end_byte, child.type) not in root_ids:
        in_condition = n.type in ("if_statement", "conditional_expression") and child == n.child_by_field_name(
            "condition"
        )
        if n.type in _BRANCHING and not in_condition:
            return True
        if n.type == "binary_expression" and r_op(n) in ("&&", "||") and child == n.child_by_field_name("right"):
            return True
        child = n
        n = n.parent
    return False


def r_op(n: Node) -> str:
    op = n.child_by_field_name("operator")
    return op.type if op is not None else ""


def _write_of(node: Node) -> tuple[bool, bool]:
    """Return (written, read) for an access node: an assignment's left side is written (and read if compound)."""
    p = node.parent
    while p is not None and p.type == "parenthesized_expression":
        node, p = p, p.parent
    if p is not None and p.type == "assignment_expression" and p.child_by_field_name("left") == node:
        op = r_op(p)
        return True, op != "="
    if p is not None and p.type == "update_expression":
        return True, True
    return False, True


def _analyse(model: FileModel, fn: Function) -> MapShape:
    node = function_node(model, fn)
    if node is None or node.child_by_field_name("body") is None:
        raise _Reject("no function body")
    if fn.template_params:
        raise _Reject("a template kernel (its element types are not known here)")
    r = _Reader(model, fn, node)
    s = _find_shape(r)
    var = s["var"]
    keep = frozenset({var})
    region = (*tuple(s["pre"]), s["cond"], *tuple(s["body"]))
    body_roots = tuple(s["pre"]) + tuple(s["body"])
    for n in body_roots:
        _check_calls(r, n)
        for m in _walk(n):
            if m.type in _JUMPS:
                raise _Reject(f"`{r.text(m)}` in the per-element code")
            if m.type in _LOOPS:
                raise _Reject("the per-element code holds a loop (a reduction or a contraction, not a map)")
            if m.type == "declaration" and "__shared__" in r.text(m):
                raise _Reject("the per-element code declares shared memory")
    _check_calls(r, s["cond"])
    # Names the per-element code reads: the lane variable's siblings must be the same for every element of a thread.
    local_here = set()
    for n in region:
        for m in _walk(n):
            if m.type == "init_declarator":
                nm = r._declared(m.child_by_field_name("declarator"))
                if nm:
                    local_here.add(nm)
            elif m.type == "declaration":
                for d in m.children_by_field_name("declarator"):
                    nm = r._declared(d)
                    if nm:
                        local_here.add(nm)
    thread_x = {"threadIdx.x", "blockIdx.x"} if s["form"] != "loop" or s["stride_kind"] == "grid" else {"threadIdx.x"}
    if s["form"] != "loop":
        thread_x.add("gridDim.x")
    for n in region:
        for m in _walk(n):
            if m.type == "field_expression" and squash(r.text(m)) in thread_x:
                raise _Reject(f"the per-element code reads `{squash(r.text(m))}` directly")
            if m.type == "identifier":
                nm = r.text(m)
                if nm == var or nm in local_here or nm in r.params:
                    if nm in r.params and nm in r.defs:
                        raise _Reject(f"the parameter `{nm}` is assigned")
                    continue
                if nm in r.defs:
                    init = r.single_def(nm)
                    if init is None:
                        raise _Reject(f"`{nm}`, read per element, is assigned more than once")
                    for a in _walk(init):
                        if a.type == "field_expression" and squash(r.text(a)) in thread_x:
                            raise _Reject(f"`{nm}` reads `{squash(r.text(a))}` outside the lane variable")
    # Writes to locals of the kernel declared outside the per-element code (an accumulator) are refused.
    for n in body_roots:
        for m in _walk(n):
            if m.type in ("assignment_expression", "update_expression"):
                target = m.child_by_field_name("left") or m.child_by_field_name("argument")
                t = unparen(target) if target is not None else None
                if t is not None and t.type == "identifier":
                    nm = r.text(t)
                    if nm == var:
                        raise _Reject(f"the per-element code assigns `{var}`")
                    if nm not in local_here:
                        raise _Reject(f"the per-element code assigns `{nm}`, declared outside it")
    # The accesses of pointer parameters.
    accesses: list[Access] = []
    for n in body_roots:
        for m in _walk(n):
            if m.type not in ("subscript_expression", "pointer_expression"):
                continue
            if m.type == "pointer_expression" and r.text(m.child_by_field_name("operator")) != "*":
                if r.text(m.child_by_field_name("operator")) == "&":
                    el = r.element(m.child_by_field_name("argument"), keep)
                    if el is not None:
                        raise _Reject(f"the address of an element of `{el[0]}` is taken")
                continue
            el = r.element(m, keep)
            if el is None:
                continue
            name, idx = el
            off = None
            if idx is not None:
                split = idx.linear_in(var)
                own = split is not None and split[0].key() == Poly.const(1).key()
                if own and split is not None and not (split[1].atoms() & thread_x):
                    off = split[1]
            written, read = _write_of(m)
            accesses.append(Access(name, m, off, written, read, not _under_condition(m, body_roots)))
    accesses = [a for a in accesses if not any(_inside(a.node, b.node) for b in accesses if b is not a)]
    by_array: dict[str, list[Access]] = {}
    for a in accesses:
        by_array.setdefault(a.array, []).append(a)
    # A stream is one array at one offset R: its elements v + R move as vectors.
    candidates: dict[str, list[Access]] = {}
    stream_array: dict[str, str] = {}
    stream_offset: dict[str, Poly] = {}
    for name, accs in by_array.items():
        p = fn.param(name)
        if p is None or "volatile" in p.type or p.base_type not in VECTOR_TYPES:
            continue
        groups: dict[Any, list[Access]] = {}
        for a in accs:
            groups.setdefault(a.offset.key() if a.offset is not None else None, []).append(a)
        offs = [a.offset for a in accs if a.offset is not None]
        near = [(b - a).constant() for a in offs for b in offs]
        if any(d is not None and 0 < abs(d) < NEIGHBOURS for d in near):
            raise _Reject(f"`{name}` is read at neighbouring elements (a stencil, not a map)")
        if any(a.written for a in accs) and len(groups) != 1:
            continue  # A written array is vectorized only when every access is at the lane's own element.
        for n, (key, group) in enumerate(sorted(groups.items(), key=lambda kv: kv[1][0].node.start_byte)):
            if key is None or any(a.written and not a.unconditional for a in group):
                continue
            if not any(a.unconditional for a in group):
                continue
            sid = name if len(groups) == 1 else f"{name}{n}"
            candidates[sid] = group
            stream_array[sid] = name
            offset = group[0].offset
            assert offset is not None
            stream_offset[sid] = offset
    if not candidates:
        raise _Reject("no array is accessed at the lane's own element on every path")
    sizes: dict[int, list[str]] = {}
    for sid in candidates:
        p = fn.param(stream_array[sid])
        assert p is not None
        sizes.setdefault(VECTOR_TYPES[p.base_type][1], []).append(sid)
    lanes = max(sizes, key=lambda k: (sum(len(candidates[n]) for n in sizes[k]), k))
    vectorized = tuple(sorted(sizes[lanes], key=lambda n: candidates[n][0].node.start_byte))
    elem = fn.param(stream_array[vectorized[0]])
    assert elem is not None
    stream_of = {id(a): sid for sid in vectorized for a in candidates[sid]}
    # Overlap: a vectorized load moved before a store to another array (or another part of the same one).
    hazard = ""
    first_store = None
    for a in sorted(accesses, key=lambda a: a.node.start_byte):
        if a.written and first_store is None:
            first_store = a
            continue
        if first_store is not None and a.read and id(a) in stream_of:
            same = stream_of.get(id(first_store)) == stream_of[id(a)]
            if not same and a.node.start_byte > _statement_end(first_store.node):
                hazard = f"`{a.array}` is read after the store to `{first_store.array}`"
                break
    streams = tuple((sid, stream_array[sid], stream_offset[sid]) for sid in vectorized)
    access_streams = tuple(stream_of.get(id(a), "") for a in accesses)
    return MapShape(
        form=s["form"],
        var=var,
        var_type=s["var_type"],
        start=s["start"],
        stride=s["stride"],
        replace=s["replace"],
        pre=s["pre"],
        cond=s["cond"],
        body=s["body"],
        loop_bound=s["loop_bound"],
        accesses=tuple(accesses),
        vectorized=vectorized,
        streams=streams,
        access_streams=access_streams,
        quotients=tuple(sorted((q, r.quotients[q]) for _, _, off in streams for q in off.atoms() if q in r.quotients)),
        elem_type=elem.base_type,
        vector=VECTOR_TYPES[elem.base_type][0],
        lanes=lanes,
        hazard=hazard,
        stride_kind=s["stride_kind"],
        between=tuple(r.text(x) for x in s["between"]),
    )


def _inside(a: Node, b: Node) -> bool:
    return (
        b.start_byte <= a.start_byte
        and a.end_byte <= b.end_byte
        and (a.start_byte, a.end_byte)
        != (
            b.start_byte,
            b.end_byte,
        )
    )


def _statement_end(node: Node) -> int:
    n = node
    while n is not None and n.type not in ("expression_statement", "declaration", "return_statement"):
        n = n.parent
    return int(n.end_byte if n is not None else node.end_byte)


def recognise(model: FileModel, fn: Function) -> tuple[MapShape | None, str]:
    """Return the kernel's elementwise-map shape, or None and why it is not one."""
    if fn.kind is not FunctionKind.KERNEL:
        return None, "not a kernel"
    try:
        return _analyse(model, fn), ""
    except _Reject as e:
        return None, str(e)


# ---------------------------------------------------------------------------------------------------------------
# The rewrite.


def _poly_text(p: Poly, quotients: dict[str, str] | None = None, first: str = "") -> str:
    """Return a polynomial as C text in `long long` arithmetic (a quotient `v / D` as the first lane's)."""
    if not p.terms:
        return "0LL"
    parts = []
    for mono, c in sorted(p.terms.items()):
        factors = [
            f"(long long)({first} / ({quotients[a]}))" if quotients and a in quotients else f"(long long)({a})"
            for a in mono
        ]
        if c != 1 or not factors:
            factors.insert(0, f"{c}LL" if c >= 0 else f"({c}LL)")
        parts.append(" * ".join(factors))
    return " + ".join(parts)


def _substituted(data: bytes, node_span: tuple[int, int], repl: list[tuple[tuple[int, int], str]]) -> str:
    out = []
    pos = node_span[0]
    for (s, e), text in sorted(repl):
        if s < pos or e > node_span[1]:
            continue
        out.append(data[pos:s].decode("utf-8", "replace"))
        out.append(text)
        pos = e
    out.append(data[pos : node_span[1]].decode("utf-8", "replace"))
    return "".join(out)


def _indent(text: str, ind: str) -> str:
    return "\n".join((ind + line) if line.strip() else "" for line in text.splitlines())


def _dedent_block(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= 1:
        return text.strip()
    rest = [ln for ln in lines[1:] if ln.strip()]
    common = min((len(ln) - len(ln.lstrip()) for ln in rest), default=0)
    return "\n".join([lines[0].strip()] + [ln[common:] if ln.strip() else "" for ln in lines[1:]])


def _fresh(body: str, base: str) -> str:
    name = base
    while re.search(rf"\b{re.escape(name)}\b", body):
        name += "_"
    return name


def generate_edits(model: FileModel, fn: Function, shape: MapShape, vectors: int = 1) -> list[Edit]:
    """Return the edits that give each thread `lanes * vectors` consecutive elements in 16-byte vectors."""
    data = model.text
    body_text = data[fn.base : fn.base + fn.length].decode("utf-8", "replace")
    k = shape.lanes
    total = k * vectors
    v0 = _fresh(body_text, "ww_v0")
    lane = _fresh(body_text, "ww_l")
    vec = _fresh(body_text, MARK)
    var, vt = shape.var, shape.var_type
    start_stmt = shape.replace[0]
    line_start = data.rfind(b"\n", 0, start_stmt) + 1
    ind = data[line_start:start_stmt].decode("utf-8", "replace")
    if ind.strip():
        ind = ""
    unit = "  " if not ind else ("\t" if ind.startswith("\t") else " " * min(len(ind), 4))
    elem = shape.elem_type
    vtype = shape.vector
    names = {sid: _fresh(body_text, f"ww_{sid}") for sid in shape.vectorized}
    units = {sid: _fresh(body_text, f"ww_{sid}_v") for sid in shape.vectorized}
    arrays = {sid: arr for sid, arr, _ in shape.streams}
    offsets = {sid: off for sid, _, off in shape.streams}
    pairs = list(zip(shape.accesses, shape.access_streams, strict=True))
    reads = {sid for sid in shape.vectorized if any(st == sid and a.read for a, st in pairs)}
    writes = {sid for sid in shape.vectorized if any(st == sid and a.written for a, st in pairs)}

    quotients = dict(shape.quotients)
    offset_names: dict[str, str] = {}
    offset_decls: list[str] = []
    # A quotient `v / D` an offset reads must be the same for every lane of the thread (checked first, after the
    # lanes' guards, so that no division runs where the original ran none), and the offsets are computed only then.
    for divisor in sorted(set(quotients.values())):
        offset_decls.append(
            f"{vec} = {vec} && ({divisor}) != 0 && {v0} / ({divisor}) == ({v0} + ({vt})({total - 1})) / ({divisor});"
        )
    for sid in shape.vectorized:
        key = _poly_text(offsets[sid], quotients, v0)
        if key == "0LL":
            continue
        if key not in offset_names:
            offset_names[key] = _fresh(body_text, f"ww_o{len(offset_names)}")
            value = f"{vec} ? {key} : 0LL" if offsets[sid].atoms() & set(quotients) else key
            offset_decls.append(f"const long long {offset_names[key]} = {value};")

    def addr(sid: str) -> str:
        key = _poly_text(offsets[sid], quotients, v0)
        if key == "0LL":
            return f"{arrays[sid]} + {v0}"
        return f"{arrays[sid]} + ({v0} + {offset_names[key]})"

    repl = [((a.node.start_byte, a.node.end_byte), f"{names[st]}[{lane}]") for a, st in pairs if st]

    def code(nodes: tuple[Node, ...], vector: bool) -> str:
        out = []
        for n in nodes:
            text = _substituted(data, (n.start_byte, n.end_byte), repl if vector else [])
            out.append(_dedent_block(text))
        return "\n".join(out)

    lane_decl = f"const {vt} {var} = {v0} + ({vt}){lane};"
    cond_text = node_text(model, shape.cond)
    lines: list[str] = []
    # The guard of every lane, then the alignment of every vector.
    check = [f"bool {vec} = true;", "#pragma unroll", f"for (int {lane} = 0; {lane} < {total}; ++{lane}) {{"]
    check.append(unit + lane_decl)
    if shape.form == "loop":
        check.append(unit + f"{vec} = {vec} && ({shape.loop_bound.format(v=var)});")
    else:
        for p in shape.pre:
            check.append(_indent(_dedent_block(node_text(model, p)), unit))
        guard = cond_text if shape.form == "if" else f"!({cond_text})"
        check.append(unit + f"{vec} = {vec} && ({guard});")
    check.append("}")
    check += offset_decls
    aligned = " && ".join(
        f"(reinterpret_cast<unsigned long long>({addr(n)}) % 16ULL == 0ULL)" for n in shape.vectorized
    )
    check.append(f"{vec} = {vec} && {aligned};")
    vector_path: list[str] = []
    for n in shape.vectorized:
        const = "const " if n not in writes else ""
        vector_path.append(f"{vtype} {units[n]}[{vectors}];")
        if n in reads:
            vector_path.append("#pragma unroll")
            vector_path.append(
                f"for (int ww_g = 0; ww_g < {vectors}; ++ww_g) {units[n]}[ww_g] = "
                f"reinterpret_cast<const {vtype}*>({addr(n)})[ww_g];"
            )
        vector_path.append(f"{const}{elem}* {names[n]} = reinterpret_cast<{const}{elem}*>({units[n]});")
    per_lane = code(tuple(shape.pre) + tuple(shape.body), True)
    vector_path += ["#pragma unroll", f"for (int {lane} = 0; {lane} < {total}; ++{lane}) {{"]
    if re.search(rf"\b{re.escape(var)}\b", per_lane):
        vector_path.append(unit + lane_decl)
    vector_path.append(_indent(per_lane, unit))
    vector_path.append("}")
    for n in shape.vectorized:
        if n in writes:
            vector_path.append("#pragma unroll")
            vector_path.append(
                f"for (int ww_g = 0; ww_g < {vectors}; ++ww_g) reinterpret_cast<{vtype}*>({addr(n)})[ww_g] = "
                f"{units[n]}[ww_g];"
            )
    scalar_path = [f"for (int {lane} = 0; {lane} < {total}; ++{lane}) {{", unit + lane_decl]
    if shape.form == "loop":
        scalar_path.append(unit + f"if (!({shape.loop_bound.format(v=var)})) break;")
        scalar_path.append(_indent(code(tuple(shape.body), False), unit))
    else:
        for p in shape.pre:
            scalar_path.append(_indent(_dedent_block(node_text(model, p)), unit))
        if shape.form == "if":
            scalar_path.append(unit + f"if ({cond_text}) {{")
            inner = shape.body[0]
            kids = _stmts(inner)
            scalar_path.append(_indent(code(tuple(kids), False), unit + unit))
            scalar_path.append(unit + "}")
        else:
            scalar_path.append(unit + f"if ({cond_text}) continue;")
            scalar_path.append(_indent(code(tuple(shape.body), False), unit))
    scalar_path.append("}")
    per_thread = check + [f"if ({vec}) {{"] + [_indent(x, unit) for x in vector_path] + ["} else {"]
    per_thread += [_indent(x, unit) for x in scalar_path] + ["}"]
    start_text = node_text(model, shape.start)
    if shape.form == "loop":
        stride_text = node_text(model, shape.stride)
        head = (
            f"for ({vt} {v0} = ({vt})({start_text}) * {total}; {shape.loop_bound.format(v=v0)}; "
            f"{v0} += ({vt})({stride_text}) * {total}) {{"
        )
        lines = [head] + [_indent(x, unit) for x in per_thread] + ["}"]
        lines = list(shape.between) + lines
    else:
        lines = [f"{vt} {v0} = ({vt})({start_text}) * {total};", *per_thread]
    # The first line takes the replaced statement's place (its indentation is already in the file).
    text = "\n".join(
        (ln if i == 0 else (ind + ln if ln.strip() else "")) for i, ln in enumerate("\n".join(lines).splitlines())
    )
    edits = [Edit(shape.replace[0], shape.replace[1], text)]
    if shape.form in ("if", "return"):
        edits += _launch_edits(model, fn, shape, total)
    return edits


def _launch_edits(model: FileModel, fn: Function, shape: MapShape, factor: int) -> list[Edit]:
    """Divide grid.x of the file's launches written `(N + B - 1) / B` by the elements per thread.

    ceil(ceil(N / B) / L) = ceil(N / (B L)), so the new grid is the search's `grid_div` launch change written in
    the host code; any N (the guard's bound or another count) keeps its meaning."""
    from warpwise.analyzers.facts_memory import ceil_div, launch_syntax, launches_of, scaled_ceil_div

    edits = []
    for host, launch in launches_of(model, fn.name):
        ls = launch_syntax(model, host, launch)
        cd = ceil_div(model, ls) if ls is not None else None
        if cd is None:
            continue
        edits.append(Edit(cd.node.start_byte, cd.node.end_byte, scaled_ceil_div(cd, factor)))
    return edits


# ---------------------------------------------------------------------------------------------------------------
# Registered matcher, checks and rewrite.


def _what(fn: Function, shape: MapShape) -> str:
    width = 16 // shape.lanes
    names = ", ".join(f"`{n}`" for n in _array_names(shape))
    return f"{names} {'is' if len(_array_names(shape)) == 1 else 'are'} moved {width} bytes at a time"


def _array_names(shape: MapShape) -> list[str]:
    out: list[str] = []
    for _, arr, _ in shape.streams:
        if arr not in out:
            out.append(arr)
    return out


_FORMS = {"if": "one element per thread", "return": "one element per thread", "loop": "a stride loop"}


@matcher("scalar_elementwise_map")
def scalar_elementwise_map(ctx: MatchContext, **_args: Any) -> Iterator[Region]:
    """Find elementwise maps whose arrays are moved one element per load or store."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    shape, _ = recognise(ctx.model, fn)
    if shape is None:
        return
    form = _FORMS[shape.form] if shape.form != "loop" else f"a {shape.stride_kind}-stride loop"
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"scalar-elementwise-map:{fn.name}",
        {
            "kernel": fn.name,
            "map_shape": shape,
            "shape": shape,
            "what": _what(fn, shape),
            "form": form,
            "vector": shape.vector,
            "lanes": str(shape.lanes),
            "names": ", ".join(f"`{n}`" for n in _array_names(shape)),
            "arrays": _array_names(shape),
        },
    )


@check("map_overlap_safe")
def map_overlap_safe(ctx: CheckContext) -> Verdict:
    """Hold when moving the vector loads before the stores cannot read a value another array's store changed."""
    shape: MapShape | None = ctx.fact("map_shape")
    if shape is None:
        return unknown("no elementwise map was recognised here")
    if not shape.hazard:
        return holds("every load of a vectorized array comes before the first store, as in the vector form")
    fn = ctx.function
    params = [fn.param(a.array) for a in shape.accesses]
    ps = [p for p in params if p is not None]
    if ps and all(p.is_restrict for p in ps):
        return holds("the arrays are `__restrict__`")
    ok, reason = distinct_launch_args(ctx.model, fn, ps)
    if ok:
        return holds(reason)
    return unknown(f"{shape.hazard}, and {reason}")


@check("map_alignment_checked")
def map_alignment_checked(ctx: CheckContext) -> Verdict:
    """Hold always: the rewrite checks each thread's vector addresses at run time and falls back to scalar code."""
    shape: MapShape | None = ctx.fact("map_shape")
    if shape is None:
        return unknown("no elementwise map was recognised here")
    return holds(
        f"each thread checks that its {shape.vector} addresses of {', '.join(f'`{n}`' for n in _array_names(shape))} "
        "are 16-byte aligned and takes the scalar path when they are not"
    )


@check("map_per_element")
def map_per_element(ctx: CheckContext) -> Verdict:
    """Hold when the recogniser read the kernel as per-element code over its lane variable."""
    shape: MapShape | None = ctx.fact("map_shape")
    if shape is None:
        return unknown("no elementwise map was recognised here")
    return holds(
        f"the code run for each `{shape.var}` reads the thread's position only through `{shape.var}`, writes only "
        "its own locals and the arrays, and does not synchronise"
    )


@check("map_launch_shrinks")
def map_launch_shrinks(ctx: CheckContext) -> Verdict:
    """Hold when the rewritten kernel gets the grid it gains from: any grid (stride loops), or a shrunk one."""
    shape: MapShape | None = ctx.fact("map_shape")
    if shape is None:
        return unknown("no elementwise map was recognised here")
    if shape.form == "loop":
        return holds(f"the {shape.stride_kind}-stride loop covers its elements with any grid")
    from warpwise.analyzers.facts_memory import launch_syntax, launches_of

    launches = [hl for hl in launches_of(ctx.model, ctx.function.name) if launch_syntax(ctx.model, *hl) is not None]
    if not launches:
        return unknown(f"no launch of `{ctx.function.name}` in this file; the search divides a problem file's grid.x")
    edits = _launch_edits(ctx.model, ctx.function, shape, shape.lanes)
    if len(edits) == len(launches):
        return holds(
            f"every launch's grid in this file is written as a ceiling division the rewrite divides by {shape.lanes}"
        )
    return unknown("a launch's grid is not written `(n + B - 1) / B`; it keeps its size (correct, with idle threads)")


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Give each thread several consecutive elements moved as 16-byte vectors, with a scalar path for the rest."""
    shape: MapShape | None = ctx.fact("map_shape")
    if shape is None:
        shape, _ = recognise(ctx.model, ctx.function)
        if shape is None:
            return None
    vectors = int(ctx.args.get("vectors", 1) or 1)
    return generate_edits(ctx.model, ctx.function, shape, vectors)


def grid_factor(matches: list[Any]) -> int | None:
    """Return how many elements each thread covers after the rewrite with one vector per array (guarded forms)."""
    shape = matches[0].region.facts.get("map_shape") if matches else None
    if shape is None or shape.form == "loop":
        return None
    return int(shape.lanes)


def search_variants(matches: list[Any]) -> list[tuple[str, dict[str, Any], list[Any]]]:
    """Return the search's parameter choices: vectors per array per thread, with the grid divided to match."""
    shape = matches[0].region.facts.get("map_shape") if matches else None
    if shape is None:
        return []
    out: list[tuple[str, dict[str, Any], list[Any]]] = []
    for v in VECTOR_CHOICES:
        total = shape.lanes * v
        if shape.form == "loop":
            out.append((f"{total} elements per thread", {"vectors": v}, []))
        else:
            out.append((f"{total} elements per thread, grid.x / {total}", {"vectors": v}, [("grid_div", total)]))
    return out


def rewrite_source(model: FileModel, kernel: str, vectors: int = 1) -> bytes | None:
    """Return the file's text with one kernel rewritten (None when it is not recognised)."""
    from warpwise.skills.rewrite import apply_edits

    fn = next((f for f in model.functions if f.name == kernel and f.kind is FunctionKind.KERNEL), None)
    if fn is None:
        return None
    shape, _ = recognise(model, fn)
    if shape is None:
        return None
    return apply_edits(model.text, sorted(generate_edits(model, fn, shape, vectors)))


__all__ = [
    "VECTOR_CHOICES",
    "MapShape",
    "generate_edits",
    "grid_factor",
    "map_alignment_checked",
    "map_launch_shrinks",
    "map_overlap_safe",
    "map_per_element",
    "recognise",
    "rewrite",
    "rewrite_source",
    "scalar_elementwise_map",
    "search_variants",
]
