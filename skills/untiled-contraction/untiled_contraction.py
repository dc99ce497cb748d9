"""Untiled contraction: recognise a naive matrix multiply and rewrite it into a tiled, register-tiled kernel.

The recogniser reads one kernel's syntax tree for the shape of a contraction, whatever its spelling:

- two output coordinates `i` and `j`, local variables computed from the thread and block indices (any axes, any
  order of the terms, `int`, `unsigned`, `uint`);
- a guard that bounds them, `if (i < M && j < N) {...}`, `if (i >= M || j >= N) return;`, nested `if`s, or a
  guard around the store only;
- an accumulator initialised to zero and a loop over `k` (`for` with `k < K` and a unit step, or `while` with
  the increment last) whose body is the one statement `acc += A[f(i, k)] * B[g(k, j)]` (or `acc = acc + ...`),
  where `f` and `g` are affine in `i`, `k` and `j` with leading dimensions that are parameters, macros or
  constants (so NN, NT, TN and TT layouts all match);
- one store `C[h(i, j)] = <expression of acc>;` after the loop (an `alpha * acc + beta * C[...]` epilogue is kept
  exactly as written).

Index expressions are read as polynomials over their identifiers (locals are expanded through their single
definition, calls of the file's index macros such as `IDX2C(i, j, ld)` through their bodies), so
`blockDim.x*blockIdx.x+threadIdx.x`, macros for sizes and for indices and typedefs of `float` all read alike; a
loop bound read from memory, an accumulation through atomics or a non-affine index is not a contraction.

The rewrite (`rewrite`) replaces the kernel's body, keeping its name and signature: a grid of BM x BN output
tiles, BM*BN/(TM*TN) threads per block, BK-deep shared-memory tiles of A and B (stored k-major, padded by 4 so
that the transposing stores do not conflict on banks), double-buffered through registers (one barrier per
tile), TM x TN outputs per thread held in registers (split in 4-wide chunks so that the shared-memory reads are
conflict-free 16-byte loads), 16-byte global loads of the operand whose index is contiguous along the tile,
taken only when a runtime test shows the pointer and the leading dimension allow it (the scalar path reads the
same values). Each output still sums its products for k = 0, 1, ..., K-1 in that order with one fused multiply-
add each, as the naive loop does, and out-of-range tile entries are zero (adding `0 * 0` leaves an accumulator
that started at +0 unchanged bit for bit), so results are bit-identical to the naive kernel for any M, N, K.
Host launches in the file become `<<<dim3(ceil(N / BN), ceil(M / BM)), BM*BN/(TM*TN)>>>`; a problem file's
launch is changed with `launch_changes` (the one `LaunchChange` representation).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.expr.poly import Poly
from warpwise.analyzers.facts import function_node, tree_of
from warpwise.analyzers.facts_memory import launch_syntax, node_text, squash, unparen
from warpwise.analyzers.function_nodes import of_type
from warpwise.analyzers.macros import expansion_poly, file_expression_macros
from warpwise.analyzers.model import FileModel, Function, FunctionKind
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import CheckContext, MatchContext, Region, Verdict, check, holds, matcher, unknown
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.skills.rewrites.contraction_mma import (
    MMA_CHOICES,
    MMA_TOLERANCE,
    TF32_CHOICES,
    TF32_TOLERANCE,
    MmaTiles,
    generate_mma_body,
)
from warpwise.verify.launch import LaunchChange

Node = Any

FLOAT_NAMES = frozenset({"float"})
HALF_TYPES = {"__half": "half", "half": "half", "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16"}
"""Half-precision element types (their typedefs resolved) and what they are."""
TO_FLOAT = {"__half2float": "half", "__bfloat162float": "bfloat16"}
"""Conversions to float the accumulation may apply to each factor, and the type each takes."""
_BUILTIN = re.compile(r"^(threadIdx|blockIdx|blockDim|gridDim)\.[xyz]$")
_DEPTH = 24


# ---------------------------------------------------------------------------------------------------------------
# Polynomials over identifiers: enough algebra to tell `i * lda + k` from `k * k` whatever the spelling.


def poly_text(p: Poly) -> str:
    """Return C text of a polynomial (symbols are identifiers or builtins of the original kernel)."""
    if not p:
        return "0"
    terms = []
    for m, c in sorted(p.terms.items()):
        factors = list(m)
        if c != 1 or not factors:
            factors = [str(c), *factors] if c >= 0 else [f"({c})", *factors]
        terms.append(" * ".join(factors))
    return " + ".join(terms)


def poly_is_one(p: Poly) -> bool:
    """Return whether a polynomial is the constant 1."""
    return p == Poly.const(1)


# ---------------------------------------------------------------------------------------------------------------
# The kernel's syntax: statements, single definitions of locals, identifiers.


class _Kernel:
    """The syntax of one kernel as the recogniser needs it."""

    def __init__(self, model: FileModel, fn: Function, node: Node) -> None:
        self.model = model
        self.fn = fn
        self.node = node
        self.params = {p.name for p in fn.params}
        self.defs: dict[str, list[Node | None]] = {}
        self.decl_type: dict[str, str] = {}
        self.conversion = ""
        self._collect(node.child_by_field_name("body"))

    def _statements(self, body: Node) -> list[Node]:
        """Return the body's declarations, assignments and increments, in the order the definitions are read.

        From the function's one shared query (`function_nodes.of_type`), ordered as a walk that visits a node before
        its children and a later sibling before an earlier one: by end descending, then start ascending. The order
        fixes which type a name declared twice keeps and the order of `defs`, which the recogniser iterates.
        """
        found = [
            n
            for t in ("declaration", "assignment_expression", "update_expression")
            for n in of_type(self.model, self.fn, t)
            if body.start_byte <= n.start_byte and n.end_byte <= body.end_byte
        ]
        return sorted(found, key=lambda n: (-n.end_byte, n.start_byte))

    def text(self, node: Node) -> str:
        return node_text(self.model, node)

    def _collect(self, node: Node | None) -> None:
        if node is None:
            return
        for n in self._statements(node):
            if n.type == "declaration":
                tnode = n.child_by_field_name("type")
                ty = self.text(tnode) if tnode is not None else ""
                quals = " ".join(self.text(c) for c in n.children if c.type == "type_qualifier")
                for d in n.children_by_field_name("declarator"):
                    if d.type == "init_declarator":
                        name_node = d.child_by_field_name("declarator")
                        if name_node is not None and name_node.type == "identifier":
                            name = self.text(name_node)
                            self.defs.setdefault(name, []).append(d.child_by_field_name("value"))
                            self.decl_type[name] = (quals + " " + ty).strip()
                        else:
                            self.defs.setdefault(self.text(d), []).append(None)
                    elif d.type == "identifier":
                        self.defs.setdefault(self.text(d), []).append(None)
                        self.decl_type[self.text(d)] = (quals + " " + ty).strip()
                    else:
                        self.defs.setdefault(self.text(d), []).append(None)
            elif n.type == "assignment_expression" or n.type == "update_expression":
                target = n.child_by_field_name("left") or n.child_by_field_name("argument")
                if target is not None and target.type == "identifier":
                    self.defs.setdefault(self.text(target), []).append(None)

    def single_def(self, name: str) -> Node | None:
        d = self.defs.get(name)
        if d is None or len(d) != 1:
            return None
        return d[0]

    def poly(self, node: Node | None, keep: frozenset[str], depth: int = 0) -> Poly | None:
        """Read an integer expression as a polynomial; locals other than `keep` are expanded."""
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
            if name in keep or name in self.params:
                if name in self.params and name in self.defs:
                    return None  # A parameter assigned in the kernel is not a value we can name.
                return Poly.atom(name)
            if name in self.defs:
                init = self.single_def(name)
                if init is None:
                    return None
                return self.poly(init, keep, depth + 1)
            return Poly.atom(name)  # A macro or a global constant: a uniform symbol.
        if t == "field_expression":
            txt = squash(self.text(node))
            return Poly.atom(txt) if _BUILTIN.match(txt) else None
        if t == "cast_expression":
            return self.poly(node.child_by_field_name("value"), keep, depth + 1)
        if t == "call_expression":
            return self.macro_poly(node, keep, depth)
        if t == "unary_expression":
            op = node.child_by_field_name("operator")
            arg = self.poly(node.child_by_field_name("argument"), keep, depth + 1)
            if op is None or arg is None:
                return None
            if self.text(op) == "-":
                return arg.scale(-1)
            if self.text(op) == "+":
                return arg
            return None
        if t == "binary_expression":
            op = node.child_by_field_name("operator")
            a = self.poly(node.child_by_field_name("left"), keep, depth + 1)
            b = self.poly(node.child_by_field_name("right"), keep, depth + 1)
            if op is None or a is None or b is None:
                return None
            o = self.text(op)
            if o == "+":
                return a + b
            if o == "-":
                return a - b
            if o == "*":
                return a * b
            return None
        return None

    def macro_poly(self, node: Node, keep: frozenset[str], depth: int) -> Poly | None:
        """Read a call of an expression macro of the file (`IDX(r, c, ld)`) as its expansion, arguments read here."""
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        macro = file_expression_macros(self.model).get(self.text(fn)) if fn is not None else None
        items = [c for c in args.named_children if c.type != "comment"] if args is not None else []
        if macro is None or len(items) != len(macro.params):
            return None
        env: dict[str, Poly] = {}
        for name, arg in zip(macro.params, items, strict=True):
            p = self.poly(arg, keep, depth + 1)
            if p is None:
                return None
            env[name] = p
        return expansion_poly(file_expression_macros(self.model), macro, macro.expr, env, depth + 1, _DEPTH)

    def uniform(self, p: Poly) -> bool:
        """Whether a polynomial is the same in every thread and through the loop (parameters, macros, constants)."""
        return all(not _BUILTIN.match(s) or s.startswith(("blockDim", "gridDim")) for s in p.atoms())

    def uses_thread_index(self, node: Node) -> bool:
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "field_expression" and squash(self.text(n)).startswith(("threadIdx.", "blockIdx.")):
                return True
            stack.extend(n.named_children)
        return False

    def identifiers(self, node: Node) -> set[str]:
        out = set()
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "identifier":
                out.add(self.text(n))
            elif n.type == "field_expression":
                arg = n.child_by_field_name("argument")
                if arg is not None:
                    stack.append(arg)
                continue
            stack.extend(n.named_children)
        return out


def _condition(node: Node | None) -> Node | None:
    """Return the expression of an `if`/`while` condition (tree-sitter-cpp wraps it in a `condition_clause`)."""
    if node is not None and node.type == "condition_clause":
        value = node.child_by_field_name("value")
        if value is None:
            items = [c for c in node.named_children if c.type != "comment"]
            value = items[0] if len(items) == 1 else None
        node = value
    return unparen(node) if node is not None else None


def _statements(node: Node | None) -> list[Node]:
    """Return the statements of a compound statement (or the one statement)."""
    if node is None:
        return []
    if node.type == "compound_statement":
        return [c for c in node.named_children if c.type != "comment" and not _is_unroll_pragma(c)]
    return [node]


def _is_unroll_pragma(node: Node) -> bool:
    """Return whether a node is a `#pragma unroll` line: a hint to the compiler, which the rewrite's loops carry
    themselves, not a statement of the kernel."""
    if node.type != "preproc_call":
        return False
    directive = node.child_by_field_name("directive")
    arg = node.child_by_field_name("argument")
    return (
        directive is not None
        and directive.text == b"#pragma"
        and arg is not None
        and (arg.text or b"").split(maxsplit=1)[:1] == [b"unroll"]
    )


# ---------------------------------------------------------------------------------------------------------------
# The recognised contraction.


@dataclass(frozen=True)
class Operand:
    """One operand of the contraction: a pointer parameter and its two strides."""

    name: str
    outer: Poly  # stride along the output coordinate (i for A, j for B)
    inner: Poly  # stride along k

    @property
    def layout(self) -> str:
        """`k` when the index is contiguous along k, `o` when along the output coordinate, `-` when neither."""
        if poly_is_one(self.inner):
            return "k"
        if poly_is_one(self.outer):
            return "o"
        return "-"


@dataclass(frozen=True)
class Contraction:
    """What the recogniser found in a naive matmul kernel (texts are the user's)."""

    kernel: str
    i: str
    j: str
    i_type: str
    j_type: str
    acc: str
    acc_type: str
    k: str
    m_bound: Poly
    n_bound: Poly
    k_bound: Poly
    a: Operand
    b: Operand
    elem_type: str
    guard: str  # a C condition under which the store happens, in terms of i and j ("" for none)
    store: str  # the store statement as written
    body_span: tuple[int, int]  # absolute span of the kernel's body (the braces included)
    convert: str = ""  # the conversion of half or bfloat16 operands to float (`__half2float`), "" for float ones
    linear: tuple[str, str, str] = ("", "", "")  # (type, name, C text in i and j) of a 1-D index i = L / D, j = L % D

    @property
    def tile_type(self) -> str:
        """Return the type the shared and register tiles hold: float (half operands are converted on load)."""
        return "float" if self.convert else self.elem_type

    @property
    def layout(self) -> str:
        """NN/NT/TN/TT in BLAS terms (A M x K row-major is N; B K x N row-major is N)."""
        a = {"k": "N", "o": "T"}.get(self.a.layout, "?")
        b = {"o": "N", "k": "T"}.get(self.b.layout, "?")
        return a + b


def _typedefs(model: FileModel) -> dict[str, str]:
    """Return `typedef X Y;` and `using Y = X;` of the file, as Y -> X."""
    out: dict[str, str] = {}
    text = model.text.decode("utf-8", "replace")
    for m in re.finditer(r"\btypedef\s+([A-Za-z_][\w ]*?)\s+([A-Za-z_]\w*)\s*;", text):
        out[m.group(2)] = m.group(1).strip()
    for m in re.finditer(r"\busing\s+([A-Za-z_]\w*)\s*=\s*([A-Za-z_][\w ]*?)\s*;", text):
        out[m.group(1)] = m.group(2).strip()
    return out


def _resolve_type(model: FileModel, ty: str) -> str:
    defs = _typedefs(model)
    seen = set()
    ty = re.sub(r"\b(const|volatile|__restrict__|restrict)\b", " ", ty).strip()
    while ty in defs and ty not in seen:
        seen.add(ty)
        ty = defs[ty]
    return " ".join(ty.split())


def _conjuncts(k: _Kernel, cond: Node) -> list[Node]:
    cond = unparen(cond)
    if cond.type == "binary_expression":
        op = cond.child_by_field_name("operator")
        if op is not None and k.text(op) == "&&":
            return _conjuncts(k, cond.child_by_field_name("left")) + _conjuncts(k, cond.child_by_field_name("right"))
    return [cond]


def _disjuncts(k: _Kernel, cond: Node) -> list[Node]:
    cond = unparen(cond)
    if cond.type == "binary_expression":
        op = cond.child_by_field_name("operator")
        if op is not None and k.text(op) == "||":
            return _disjuncts(k, cond.child_by_field_name("left")) + _disjuncts(k, cond.child_by_field_name("right"))
    return [cond]


def _bound(k: _Kernel, cmp: Node, var: str, negated: bool) -> Poly | None:
    """Return X of `var < X` (or `X > var`; with `negated`, `var >= X` / `X <= var`)."""
    cmp = unparen(cmp)
    if cmp.type == "unary_expression":
        op = cmp.child_by_field_name("operator")
        if op is not None and k.text(op) == "!":
            return _bound(k, cmp.child_by_field_name("argument"), var, not negated)
    if cmp.type != "binary_expression":
        return None
    op = cmp.child_by_field_name("operator")
    left, right = unparen(cmp.child_by_field_name("left")), unparen(cmp.child_by_field_name("right"))
    if op is None or left is None or right is None:
        return None
    o = k.text(op)
    less, greater = ("<", ">") if not negated else (">=", "<=")
    if o == less and left.type == "identifier" and k.text(left) == var:
        other = right
    elif o == greater and right.type == "identifier" and k.text(right) == var:
        other = left
    else:
        return None
    p = k.poly(other, frozenset())
    if p is None or not k.uniform(p):
        return None
    return p


@dataclass
class _Scan:
    guards: list[str]
    bounds: dict[str, Poly]


def _guard_bounds(k: _Kernel, conds: list[Node], negated: bool, i: str, j: str, scan: _Scan, lin: Any = None) -> bool:
    """Read bounds of i and j from conjuncts (or, negated, disjuncts); every part must bound one of them.

    With a 1-D mapping (`i = L / D`, `j = L % D`), a bound `L < Q * D` bounds i by Q and j by D.
    """
    for c in conds:
        found = False
        for var in (i, j):
            b = _bound(k, c, var, negated)
            if b is not None and var not in scan.bounds:
                scan.bounds[var] = b
                found = True
                break
        if not found and lin is not None:
            b = _bound(k, c, lin.name, negated)
            q = _quotient(b, lin.d) if b is not None else None
            if q is not None and lin.i not in scan.bounds and lin.j not in scan.bounds:
                scan.bounds[lin.i], scan.bounds[lin.j] = q, lin.d
                found = True
        if not found:
            return False
    return True


def _quotient(p: Poly, d: Poly) -> Poly | None:
    """Return q with p == q * d exactly when d is one monomial that divides every term of p, else None."""
    if len(d.terms) != 1:
        return None
    ((dm, dc),) = d.terms.items()
    out: dict[tuple[str, ...], int] = {}
    for m, c in p.terms.items():
        rest = list(m)
        for s in dm:
            if s not in rest:
                return None
            rest.remove(s)
        if c % dc:
            return None
        out[tuple(rest)] = c // dc
    q = Poly(out)
    return q if q * d == p else None


def _acc_update(k: _Kernel, stmt: Node, acc: str) -> tuple[Node, Node] | None:
    """Return the two factors of `acc += x * y;` or `acc = acc + x * y;` (x and y subscripts), else None."""
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    e = unparen(stmt.named_children[0])
    if e.type != "assignment_expression":
        return None
    left, right = e.child_by_field_name("left"), unparen(e.child_by_field_name("right"))
    op = e.child_by_field_name("operator")
    if left is None or right is None or op is None or k.text(left) != acc:
        return None
    if k.text(op) == "=":
        if right.type != "binary_expression" or k.text(right.child_by_field_name("operator")) != "+":
            return None
        a, b = unparen(right.child_by_field_name("left")), unparen(right.child_by_field_name("right"))
        if a.type == "identifier" and k.text(a) == acc:
            right = b
        elif b.type == "identifier" and k.text(b) == acc:
            right = a
        else:
            return None
    elif k.text(op) != "+=":
        return None
    if right.type != "binary_expression" or k.text(right.child_by_field_name("operator")) != "*":
        return None
    x, y = unparen(right.child_by_field_name("left")), unparen(right.child_by_field_name("right"))
    x, cx = _converted(k, x)
    y, cy = _converted(k, y)
    if x.type != "subscript_expression" or y.type != "subscript_expression" or cx != cy:
        return None
    k.conversion = cx
    return x, y


def _converted(k: _Kernel, node: Node) -> tuple[Node, str]:
    """Return the operand inside a conversion to float (`__half2float(x)`, `(float)x`) and how it was converted.

    The conversion is `""` for none, the function's name for a call, and `(float)` for a cast.
    """
    node = unparen(node)
    if node.type == "call_expression":
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        items = [c for c in args.named_children if c.type != "comment"] if args is not None else []
        if fn is not None and k.text(fn) in TO_FLOAT and len(items) == 1:
            return unparen(items[0]), k.text(fn)
    if node.type == "cast_expression":
        ty = node.child_by_field_name("type")
        if ty is not None and _resolve_type(k.model, k.text(ty)) == "float":
            value = node.child_by_field_name("value")
            if value is not None:
                return unparen(value), "(float)"
    return node, ""


def _subscript(k: _Kernel, node: Node) -> tuple[str, Node] | None:
    arr = node.child_by_field_name("argument")
    idx = node.child_by_field_name("index") or next(
        (c for c in node.named_children if c.type == "subscript_argument_list"), None
    )
    if arr is None or idx is None or arr.type != "identifier":
        return None
    if idx.type == "subscript_argument_list":
        items = [c for c in idx.named_children if c.type != "comment"]
        if len(items) != 1:
            return None
        idx = items[0]
    return k.text(arr), idx


def _is_zero_init(k: _Kernel, node: Node | None) -> bool:
    if node is None:
        return False
    node = unparen(node)
    if node.type == "cast_expression":
        return _is_zero_init(k, node.child_by_field_name("value"))
    return node.type == "number_literal" and re.fullmatch(r"0*\.?0*(e[+-]?0+)?[fF]?|0[xX]0+", k.text(node)) is not None


def _loop(k: _Kernel, stmt: Node, acc: str, prev: Node | None) -> tuple[str, Poly, Node, Node] | None:
    """Return (k, K, x, y) of the loop `for (k = 0; k < K; ++k) acc += x * y;` (or its `while` form)."""
    if stmt.type == "for_statement":
        init = stmt.child_by_field_name("initializer")
        cond = stmt.child_by_field_name("condition")
        upd = stmt.child_by_field_name("update")
        body = _statements(stmt.child_by_field_name("body"))
        if init is None or cond is None or upd is None or len(body) != 1:
            return None
        if init.type == "declaration":
            ds = init.children_by_field_name("declarator")
            if len(ds) != 1 or ds[0].type != "init_declarator":
                return None
            var = k.text(ds[0].child_by_field_name("declarator"))
            start = ds[0].child_by_field_name("value")
        elif init.type == "assignment_expression" and k.text(init.child_by_field_name("operator")) == "=":
            var = k.text(init.child_by_field_name("left"))
            start = init.child_by_field_name("right")
        else:
            return None
        if not _is_zero_init(k, start) or not _unit_step(k, upd, var):
            return None
        update = body[0]
    elif stmt.type == "while_statement":
        cond = _condition(stmt.child_by_field_name("condition"))
        body = _statements(stmt.child_by_field_name("body"))
        if cond is None or len(body) != 2 or prev is None:
            return None
        last = body[1]
        if last.type != "expression_statement" or last.named_child_count != 1:
            return None
        step_var = _unit_step_var(k, last.named_children[0])
        if step_var is None or not _declares_zero(k, prev, step_var):
            return None
        var = step_var
        update = body[0]
    else:
        return None
    kb = _bound(k, cond, var, False)
    if kb is None:
        return None
    factors = _acc_update(k, update, acc)
    if factors is None:
        return None
    return var, kb, factors[0], factors[1]


def _unit_step_var(k: _Kernel, e: Node) -> str | None:
    e = unparen(e)
    if e.type == "update_expression":
        arg = e.child_by_field_name("argument")
        if arg is not None and arg.type == "identifier" and "++" in k.text(e):
            return k.text(arg)
    if e.type == "assignment_expression":
        left, right = e.child_by_field_name("left"), unparen(e.child_by_field_name("right"))
        op = k.text(e.child_by_field_name("operator"))
        if left is None or left.type != "identifier" or right is None:
            return None
        var = k.text(left)
        if op == "+=" and squash(k.text(right)) == "1":
            return var
        if op == "=" and squash(k.text(right)) in (f"{var}+1", f"1+{var}"):
            return var
    return None


def _unit_step(k: _Kernel, upd: Node, var: str) -> bool:
    return _unit_step_var(k, upd) == var


def _declares_zero(k: _Kernel, stmt: Node, var: str) -> bool:
    if stmt.type != "declaration":
        return False
    ds = stmt.children_by_field_name("declarator")
    return (
        len(ds) == 1
        and ds[0].type == "init_declarator"
        and k.text(ds[0].child_by_field_name("declarator")) == var
        and _is_zero_init(k, ds[0].child_by_field_name("value"))
    )


def _operand(k: _Kernel, node: Node, outer: str, kv: str) -> Operand | None:
    """Read `P[outer * s_o + k * s_k]` with uniform strides; None for anything else."""
    sub = _subscript(k, node)
    if sub is None:
        return None
    name, idx = sub
    p = k.fn.param(name)
    if p is None or not p.is_pointer or name in k.defs:
        return None
    poly = k.poly(idx, frozenset({outer, kv}))
    if poly is None:
        return None
    split = poly.linear_in(kv)
    if split is None:
        return None
    s_k, rest = split
    split = rest.linear_in(outer)
    if split is None:
        return None
    s_o, tail = split
    if tail or not s_k or not s_o:
        return None
    if not (k.uniform(s_k) and k.uniform(s_o)) or {outer, kv} & (s_k.atoms() | s_o.atoms()):
        return None
    return Operand(name, s_o, s_k)


def _store(
    k: _Kernel, stmt: Node, acc: str, i: str, j: str, lin: _Linear | None = None
) -> tuple[str, Poly, Poly] | None:
    """Return (output array, stride along i, stride along j) of `C[h(i, j)] = expr(acc);` (h affine in both)."""
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    e = unparen(stmt.named_children[0])
    if e.type != "assignment_expression" or k.text(e.child_by_field_name("operator")) != "=":
        return None
    left = e.child_by_field_name("left")
    if left is None or left.type != "subscript_expression":
        return None
    sub = _subscript(k, left)
    if sub is None or k.fn.param(sub[0]) is None:
        return None
    poly = k.poly(sub[1], frozenset({i, j} | ({lin.name} if lin else set())))
    if poly is None:
        return None
    if lin is not None:  # C[L] with L = i * D + j
        poly = _substitute(poly, lin.name, Poly.atom(lin.i) * lin.d + Poly.atom(lin.j))
    si = poly.linear_in(i)
    if si is None:
        return None
    sj = si[1].linear_in(j)
    if sj is None or sj[1] or not si[0] or not sj[0]:
        return None
    if not k.uniform(si[0]) or not k.uniform(sj[0]) or {i, j} & (si[0].atoms() | sj[0].atoms()):
        return None
    if acc not in k.identifiers(e.child_by_field_name("right")):
        return None
    return sub[0], si[0], sj[0]


@dataclass(frozen=True)
class _Linear:
    """A 1-D thread mapping: `i = L / D` and `j = L % D` for a local L of the thread indices and a uniform D."""

    name: str
    i: str
    j: str
    d: Poly


def _div_mod(k: _Kernel, node: Node | None) -> tuple[str, str, Poly] | None:
    """Return (`/` or `%`, L, D) of `L / D` or `L % D` with L a local identifier and D uniform, else None."""
    if node is None:
        return None
    node = unparen(node)
    if node.type == "cast_expression":
        return _div_mod(k, node.child_by_field_name("value"))
    if node.type != "binary_expression":
        return None
    op = k.text(node.child_by_field_name("operator"))
    left, right = unparen(node.child_by_field_name("left")), node.child_by_field_name("right")
    if op not in ("/", "%") or left is None or left.type != "identifier":
        return None
    d = k.poly(right, frozenset())
    if d is None or not d or not k.uniform(d):
        return None
    return op, k.text(left), d


def _linear_maps(k: _Kernel, coords: list[str]) -> list[_Linear]:
    """Return the 1-D mappings among the locals: `i = L / D; j = L % D;` with L a thread coordinate, L >= 0.

    L must be a sum of products of thread and block indices and sizes with positive coefficients, so that
    it is never negative and `L / D`, `L % D` are the row and column of L in rows of D.
    """
    quot: dict[tuple[str, tuple[tuple[tuple[str, ...], int], ...]], str] = {}
    rem: dict[tuple[str, tuple[tuple[tuple[str, ...], int], ...]], str] = {}
    for name, defs in k.defs.items():
        if len(defs) != 1 or name in k.params:
            continue
        dm = _div_mod(k, defs[0])
        if dm is None or dm[1] not in coords:
            continue
        key = (dm[1], dm[2].key())
        (quot if dm[0] == "/" else rem)[key] = name
    out = []
    for key, i in quot.items():
        j = rem.get(key)
        if j is None:
            continue
        lin = k.poly(k.single_def(key[0]), frozenset())
        if lin is None or any(c < 0 for c in lin.terms.values()) or any(not _BUILTIN.match(s) for s in lin.atoms()):
            continue
        out.append(_Linear(key[0], i, j, Poly(dict(key[1]))))
    return out


def _substitute(p: Poly, name: str, value: Poly) -> Poly:
    """Return p with the symbol `name` replaced by the polynomial `value`."""
    out = Poly()
    for m, c in p.terms.items():
        term = Poly({tuple(s for s in m if s != name): c})
        for _ in range(m.count(name)):
            term = term * value
        out = out + term
    return out


def recognise(model: FileModel, fn: Function) -> tuple[Contraction | None, str]:
    """Return the contraction in a kernel, or None and why not (one line naming the user's identifiers).

    Four cards ask (this one, contraction-lanes-walk-rows, contraction-without-shared-tiles and
    contraction-without-tensor-cores), so the answer is kept on the model, per function object.
    """
    memo: dict[int, tuple[Function, tuple[Contraction | None, str]]]
    memo = model.memo.setdefault(f"{__name__}.recognise", {})
    hit = memo.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    got = _recognise(model, fn)
    memo[id(fn)] = (fn, got)
    return got


def _recognise(model: FileModel, fn: Function) -> tuple[Contraction | None, str]:
    if fn.kind is not FunctionKind.KERNEL or fn.template_params:
        return None, f"`{fn.name}` is not a non-template kernel"
    node = function_node(model, fn)
    body = node.child_by_field_name("body") if node is not None else None
    if body is None:
        return None, f"`{fn.name}` has no body"
    k = _Kernel(model, fn, node)
    if any(name.startswith("ww_") for name in k.defs) or "ww_" in "".join(k.params):
        return None, f"`{fn.name}` uses names starting with `ww_`, which the rewrite reserves"
    # Thread coordinates: locals defined once from the thread and block indices.
    coords = [
        n
        for n, d in k.defs.items()
        if len(d) == 1 and d[0] is not None and n not in k.params and k.uses_thread_index(d[0])
    ]
    linears = _linear_maps(k, coords)
    coords += [n for lin in linears for n in (lin.i, lin.j)]
    stmts = _statements(body)
    scan = _Scan([], {})
    # Walk down guards: early returns and `if`s whose body is the rest.
    rest: list[Node] = []
    pending_returns: list[Node] = []
    guard_ifs: list[Node] = []
    idx = 0
    while idx < len(stmts):
        s = stmts[idx]
        if (
            s.type == "declaration"
            and all(
                (
                    d.child_by_field_name("declarator") is not None
                    and k.text(d.child_by_field_name("declarator")) in coords
                )
                for d in s.children_by_field_name("declarator")
                if d.type == "init_declarator"
            )
            and all(d.type == "init_declarator" for d in s.children_by_field_name("declarator"))
        ):
            idx += 1
            continue
        if s.type == "if_statement" and s.child_by_field_name("alternative") is None:
            cons = _statements(s.child_by_field_name("consequence"))
            if len(cons) == 1 and cons[0].type == "return_statement" and cons[0].named_child_count == 0:
                pending_returns.append(s)
                idx += 1
                continue
            if idx == len(stmts) - 1:
                guard_ifs.append(s)
                stmts = cons
                idx = 0
                continue
        rest = stmts[idx:]
        break
    # The accumulator, the loop and the store.
    acc_decl_idx = next(
        (
            n
            for n, s in enumerate(rest)
            if s.type == "declaration"
            and len(s.children_by_field_name("declarator")) == 1
            and s.children_by_field_name("declarator")[0].type == "init_declarator"
            and _is_zero_init(k, s.children_by_field_name("declarator")[0].child_by_field_name("value"))
        ),
        None,
    )
    if acc_decl_idx is None:
        return None, f"`{fn.name}` has no accumulator initialised to zero before a loop"
    acc_decl = rest[acc_decl_idx].children_by_field_name("declarator")[0]
    acc = k.text(acc_decl.child_by_field_name("declarator"))
    after = rest[acc_decl_idx + 1 :]
    before = rest[:acc_decl_idx]
    prev = None
    if after and after[0].type == "declaration" and len(after) >= 2 and after[1].type == "while_statement":
        prev, after = after[0], after[1:]
    if len(after) != 2 or before:
        return None, f"`{fn.name}` has statements around the accumulation into `{acc}` that the rewrite does not keep"
    lp = _loop(k, after[0], acc, prev)
    if lp is None:
        return None, (
            f"the loop after `{acc}` in `{fn.name}` is not `{acc} += A[..] * B[..]` over a counter from 0 to a "
            "bound that every thread shares"
        )
    kv, kbound, x, y = lp
    store_stmt = after[1]
    # The guard around the store only.
    if store_stmt.type == "if_statement" and store_stmt.child_by_field_name("alternative") is None:
        cons = _statements(store_stmt.child_by_field_name("consequence"))
        if len(cons) != 1:
            return None, f"the store after the loop of `{fn.name}` is not one statement"
        guard_ifs.append(store_stmt)
        store_stmt = cons[0]
    # Roles: which coordinate indexes which operand; prefer the reading in which C is contiguous along j.
    readings = []
    for i in coords:
        for j in coords:
            if i == j:
                continue
            for xa, xb in ((x, y), (y, x)):
                a = _operand(k, xa, i, kv)
                b = _operand(k, xb, j, kv)
                if a is None or b is None:
                    continue
                lin = next((m for m in linears if {m.i, m.j} == {i, j}), None)
                c_out = _store(k, store_stmt, acc, i, j, lin)
                if c_out is not None:
                    readings.append((not poly_is_one(c_out[2]), i, j, a, b, c_out[0]))
    if not readings:
        return None, (
            f"the product in `{fn.name}` and the store after it are not A[f(i, {kv})] * B[g({kv}, j)] and "
            f"C[h(i, j)] = ...{acc}... with affine indices and strides that every thread shares"
        )
    readings.sort(key=lambda r: r[0])
    _, i, j, a, b, _ = readings[0]
    lin = next((m for m in linears if {m.i, m.j} == {i, j}), None)
    for g in guard_ifs:
        conds = _conjuncts(k, _condition(g.child_by_field_name("condition")))
        if not _guard_bounds(k, conds, False, i, j, scan, lin):
            return None, f"the guard `{k.text(g.child_by_field_name('condition'))}` is not a bound of `{i}` and `{j}`"
        scan.guards.append(k.text(unparen(_condition(g.child_by_field_name("condition")))))
    for r in pending_returns:
        cond = _condition(r.child_by_field_name("condition"))
        if cond is None or not _guard_bounds(k, _disjuncts(k, cond), True, i, j, scan, lin):
            return None, f"the early return `{k.text(cond)}` is not a bound of `{i}` and `{j}`"
        scan.guards.append(f"!({k.text(unparen(cond))})")
    if i not in scan.bounds or j not in scan.bounds:
        return None, f"`{fn.name}` has no guard that bounds both `{i}` and `{j}`"
    # Names the epilogue may read: parameters, macros, i, j, acc; no other local.
    allowed_locals = {i, j, acc} | ({lin.name} if lin else set())
    used = k.identifiers(store_stmt)
    for g in guard_ifs + pending_returns:
        cond_node = _condition(g.child_by_field_name("condition"))
        if cond_node is not None:
            used |= k.identifiers(cond_node)
    for name in used:
        if name in k.defs and name not in allowed_locals:
            return None, f"the store of `{fn.name}` reads the local `{name}`, which the rewrite does not keep"
    types = {
        _resolve_type(model, (fn.param(a.name).base_type if fn.param(a.name) else "")),
        _resolve_type(model, (fn.param(b.name).base_type if fn.param(b.name) else "")),
        _resolve_type(model, k.decl_type.get(acc, "")),
    }
    in_types = list(types - {"float"})
    conv = k.conversion
    half = HALF_TYPES.get(in_types[0]) if len(in_types) == 1 else None
    if types == {"float"} and conv in ("", "(float)"):
        conv = ""
    elif half is None or _resolve_type(model, k.decl_type.get(acc, "")) != "float" or conv == "":
        return None, (
            f"`{fn.name}` multiplies neither float by float nor half or bfloat16 converted to float (with "
            f"`__half2float`, `__bfloat162float` or a cast) into a float accumulator `{acc}`"
        )
    elif conv != "(float)" and TO_FLOAT[conv] != half:
        return None, f"`{fn.name}` converts its {half} operands with `{conv}`"
    pa = fn.param(a.name)
    assert pa is not None
    # Generated code spells the element type as the source does (`real`, not the `float` the model resolved).
    elem = re.sub(r"\b(const|volatile|__restrict__|restrict)\b|[*&]", " ", pa.type).strip()
    if conv:
        conv = {"half": "__half2float", "bfloat16": "__bfloat162float"}[half or "half"]
    return (
        Contraction(
            kernel=fn.name,
            i=i,
            j=j,
            i_type=k.decl_type.get(i, "int"),
            j_type=k.decl_type.get(j, "int"),
            acc=acc,
            acc_type=k.decl_type.get(acc, "float"),
            k=kv,
            m_bound=scan.bounds[i],
            n_bound=scan.bounds[j],
            k_bound=kbound,
            a=a,
            b=b,
            elem_type=" ".join(elem.split()),
            guard=" && ".join(f"({g})" for g in scan.guards),
            store=k.text(store_stmt),
            body_span=(body.start_byte, body.end_byte),
            convert=conv,
            linear=(
                (k.decl_type.get(lin.name, "int"), lin.name, f"{lin.i} * ({poly_text(lin.d)}) + {lin.j}")
                if lin
                else ("", "", "")
            ),
        ),
        "",
    )


# ---------------------------------------------------------------------------------------------------------------
# The generated kernel.


@dataclass(frozen=True)
class Tiles:
    """Tile sizes: BM x BN outputs per block, BK-deep shared tiles, TM x TN outputs per thread."""

    bm: int = 128
    bn: int = 128
    bk: int = 8
    tm: int = 8
    tn: int = 8
    min_blocks: int = 2  # > 0: add `__launch_bounds__(threads, min_blocks)` (caps registers for occupancy)

    @property
    def key(self) -> str:
        """Return the tile sizes as `BMxBNxBKxTMxTN` (with `xB` for a launch-bounds minimum of B blocks)."""
        base = f"{self.bm}x{self.bn}x{self.bk}x{self.tm}x{self.tn}"
        return base + (f"x{self.min_blocks}" if self.min_blocks else "")

    @property
    def threads(self) -> int:
        """Threads per block."""
        return (self.bm // self.tm) * (self.bn // self.tn)

    def problems(self) -> list[str]:
        """Return why these tile sizes cannot be generated (empty when they can)."""
        out = []
        if self.tm % 4 or self.tn % 4 or self.bk % 4:
            out.append("TM, TN and BK must be multiples of 4")
        if self.bm % self.tm or self.bn % self.tn:
            out.append("BM must be a multiple of TM and BN of TN")
        t = self.threads
        if t < 32 or t > 1024 or t % 32:
            out.append(f"{t} threads per block is not a multiple of 32 in 32..1024")
        for rows in (self.bm, self.bn):
            if (rows * self.bk) % (4 * t) or (rows * self.bk) < 4 * t:
                out.append("each thread must load whole 16-byte vectors of each tile")
        return out


@dataclass(frozen=True)
class SimtStep:
    """One of the exact SIMT steps before register tiles, one output per thread on BS x BS blocks of threads.

    `coalesced`: the naive loop with adjacent lanes on adjacent outputs along j (the contiguous side of C);
    `shared`: the same mapping with BS x BS tiles of A and B staged in shared memory (BS-deep along k).
    """

    kind: str = "shared"
    bs: int = 16
    min_blocks: int = 0

    @property
    def key(self) -> str:
        """Return the step as `coalesced16` or `shared16`."""
        return f"{self.kind}{self.bs}"

    @property
    def threads(self) -> int:
        """Threads per block."""
        return self.bs * self.bs

    @property
    def bm(self) -> int:
        """Outputs per block along i."""
        return self.bs

    @property
    def bn(self) -> int:
        """Outputs per block along j."""
        return self.bs

    def problems(self) -> list[str]:
        """Return why this step cannot be generated (empty when it can)."""
        out = []
        if self.kind not in ("coalesced", "shared"):
            out.append(f"unknown step {self.kind!r} (coalesced or shared)")
        if self.bs not in (8, 16, 32):
            out.append("BS must be 8, 16 or 32")
        return out


def lanes_walk_rows(model: FileModel, fn: Function, c: Contraction) -> bool:
    """Return whether adjacent lanes of the kernel take adjacent rows `i` (unit stride along `threadIdx.x`) and
    not adjacent columns `j`: the mapping under which the naive loop's loads of A and stores to C are strided."""
    node = function_node(model, fn)
    if node is None:
        return False
    k = _Kernel(model, fn, node)

    def lane_step(name: str) -> Poly | None:
        init = k.single_def(name)
        p = k.poly(init, frozenset()) if init is not None else None
        split = p.linear_in("threadIdx.x") if p is not None else None
        return split[0] if split is not None else None

    di, dj = lane_step(c.i), lane_step(c.j)
    return di is not None and dj is not None and poly_is_one(di) and not dj


SIMT_STEPS = (SimtStep("coalesced", 16), SimtStep("shared", 16), SimtStep("shared", 32))
"""The SIMT steps before register tiles, in lineage order (each exact: the same sums in the same order)."""


def generate_step_body(c: Contraction, t: SimtStep) -> str:
    """Return the kernel body (with braces) of a coalesced or shared-tile SIMT step: same sums, same order."""
    bs, conv = t.bs, c.convert

    def a_at(o: str, k: str) -> str:
        return _conv(conv, f"{c.a.name}[{o} * ww_a_o + {k} * ww_a_k]")

    def b_at(k: str, o: str) -> str:
        return _conv(conv, f"{c.b.name}[{k} * ww_b_k + {o} * ww_b_o]")

    tiles = f", {bs}-deep shared tiles of A and B" if t.kind == "shared" else ""
    head = f"""{{
  // warpwise untiled-contraction ({t.kind} step): one output per thread on {bs}x{bs} blocks, adjacent lanes on
  // adjacent {c.j}{tiles}; launched as <<<dim3(ceil(N / {bs}), ceil(M / {bs})), {t.threads}>>>.
  // Each output sums its products for {c.k} = 0, 1, ... in order, as the loop it replaces did.
  const long long ww_M = {poly_text(c.m_bound)};
  const long long ww_N = {poly_text(c.n_bound)};
  const long long ww_K = {poly_text(c.k_bound)};
  const long long ww_a_o = {poly_text(c.a.outer)}, ww_a_k = {poly_text(c.a.inner)};
  const long long ww_b_o = {poly_text(c.b.outer)}, ww_b_k = {poly_text(c.b.inner)};
  const int ww_tx = threadIdx.x % {bs}, ww_ty = threadIdx.x / {bs};
  const long long ww_m0 = (long long)blockIdx.y * {bs}, ww_n0 = (long long)blockIdx.x * {bs};
  const long long ww_mi = ww_m0 + ww_ty, ww_nj = ww_n0 + ww_tx;
  float ww_acc = 0.0f;
"""
    if t.kind == "coalesced":
        loop = (
            "  if (ww_mi < ww_M && ww_nj < ww_N) {\n"
            "    for (long long ww_k = 0; ww_k < ww_K; ++ww_k) {\n"
            f"      ww_acc += {a_at('ww_mi', 'ww_k')} * {b_at('ww_k', 'ww_nj')};\n"
            "    }\n  }\n"
        )
    else:
        # Each tile is loaded with adjacent lanes on the operand's contiguous side (transposed into the tile
        # when that side is the output coordinate of A or k of B); the padding keeps those stores conflict-free.
        if c.a.layout == "o":
            o, k, cell = "(ww_m0 + ww_tx)", "(ww_k0 + ww_ty)", "ww_As[ww_tx][ww_ty]"
        else:
            o, k, cell = "(ww_m0 + ww_ty)", "(ww_k0 + ww_tx)", "ww_As[ww_ty][ww_tx]"
        a_load = f"{cell} = ({o} < ww_M && {k} < ww_K) ? {a_at(o, k)} : 0.0f;"
        if c.b.layout == "k":
            o, k, cell = "(ww_n0 + ww_ty)", "(ww_k0 + ww_tx)", "ww_Bs[ww_tx][ww_ty]"
        else:
            o, k, cell = "(ww_n0 + ww_tx)", "(ww_k0 + ww_ty)", "ww_Bs[ww_ty][ww_tx]"
        b_load = f"{cell} = ({k} < ww_K && {o} < ww_N) ? {b_at(k, o)} : 0.0f;"
        loop = f"""  __shared__ {c.tile_type} ww_As[{bs}][{bs + 1}];
  __shared__ {c.tile_type} ww_Bs[{bs}][{bs + 1}];
  for (long long ww_k0 = 0; ww_k0 < ww_K; ww_k0 += {bs}) {{
    {a_load}
    {b_load}
    __syncthreads();
#pragma unroll
    for (int ww_kk = 0; ww_kk < {bs}; ++ww_kk) ww_acc += ww_As[ww_ty][ww_kk] * ww_Bs[ww_kk][ww_tx];
    __syncthreads();
  }}
"""
    tail = f"""  if (ww_mi >= ww_M || ww_nj >= ww_N) return;
  {c.i_type} {c.i} = ({c.i_type})ww_mi;
  {c.j_type} {c.j} = ({c.j_type})ww_nj;{linear_decl(c, "  ")}
  {c.acc_type} {c.acc} = ww_acc;
  if ({c.guard or "true"}) {{
    {c.store}
  }}
}}"""
    return head + loop + tail


_TILE_ARGS = ("bm", "bn", "bk", "tm", "tn", "min_blocks")
_MMA_ARGS = ("bm", "bn", "bk", "wm", "wn", "stages", "min_blocks", "tf32", "group", "wgmma", "regs")
# Tile sizes a search may choose from (each generated, compiled and measured on the H200: see card.md).
TILE_CHOICES = (
    Tiles(128, 128, 8, 8, 8, 2),
    Tiles(128, 128, 16, 8, 8, 0),
    Tiles(128, 64, 16, 8, 4, 0),
    Tiles(128, 128, 8, 8, 8, 0),
    Tiles(64, 128, 16, 4, 8, 0),
    Tiles(64, 64, 16, 4, 4, 0),
)


def _conv(conv: str, value: str) -> str:
    """Return a value converted to float by `conv` (unchanged when there is no conversion)."""
    return f"{conv}({value})" if conv else value


def _operand_loads(c: Contraction, op: Operand, which: str, t: Tiles) -> tuple[str, str, str]:
    """Return (declarations, the prefetch of the next tile into registers, the store of them into shared memory)."""
    outer = t.bm if which == "A" else t.bn
    loads = outer * t.bk // (4 * t.threads)
    o0 = "ww_m0" if which == "A" else "ww_n0"
    ob = "ww_M" if which == "A" else "ww_N"
    so, sk = f"ww_{which.lower()}_o", f"ww_{which.lower()}_k"
    reg = f"ww_{which.lower()}_reg"
    sm = f"ww_{which}s"
    lay = op.layout
    decl = f"  {c.tile_type} {reg}[{4 * loads}];\n"
    conv = c.convert
    fetch = []
    store = []
    for v in range(loads):
        vid = f"(ww_tid + {v * t.threads})"
        if lay == "o":  # contiguous along the output coordinate: 4 consecutive rows of one k
            oo = f"({vid} % {outer // 4}) * 4"
            kk = f"({vid} / {outer // 4})"
            step = so
        else:  # contiguous along k (or neither: the same mapping, scalar loads)
            oo = f"({vid} / {t.bk // 4})"
            kk = f"({vid} % {t.bk // 4}) * 4"
            step = sk
        fetch.append(
            f"    {{\n"
            f"      const long long ww_o = {o0} + {oo};\n"
            f"      const long long ww_kk = ww_kt + {kk};\n"
            f"      const long long ww_base = ww_o * {so} + ww_kk * {sk};\n"
        )
        if lay == "o":
            cond_all = f"ww_o + 3 < {ob} && ww_kk < ww_K"
            cond_e = [f"ww_o + {e} < {ob} && ww_kk < ww_K" for e in range(4)]
        else:
            cond_all = f"ww_o < {ob} && ww_kk + 3 < ww_K"
            cond_e = [f"ww_o < {ob} && ww_kk + {e} < ww_K" for e in range(4)]
        scalar = "".join(
            f"        {reg}[{4 * v + e}] = {cond_e[e]} ? {_conv(conv, f'{op.name}[ww_base + {e} * {step}]')} : 0.0f;\n"
            for e in range(4)
        )
        if lay in ("o", "k") and conv:
            # Four half-precision values in one 8-byte load, each converted to float exactly.
            fetch.append(
                f"      if (ww_vec_{which} && {cond_all}) {{\n"
                f"        const uint2 ww_v = *reinterpret_cast<const uint2 *>({op.name} + ww_base);\n"
                f"        const {c.elem_type} *ww_h = reinterpret_cast<const {c.elem_type} *>(&ww_v);\n"
                f"        {reg}[{4 * v}] = {conv}(ww_h[0]); {reg}[{4 * v + 1}] = {conv}(ww_h[1]);"
                f" {reg}[{4 * v + 2}] = {conv}(ww_h[2]); {reg}[{4 * v + 3}] = {conv}(ww_h[3]);\n"
                f"      }} else {{\n{scalar}      }}\n"
            )
        elif lay in ("o", "k"):
            fetch.append(
                f"      if (ww_vec_{which} && {cond_all}) {{\n"
                f"        const float4 ww_v = *reinterpret_cast<const float4 *>({op.name} + ww_base);\n"
                f"        {reg}[{4 * v}] = ww_v.x; {reg}[{4 * v + 1}] = ww_v.y;"
                f" {reg}[{4 * v + 2}] = ww_v.z; {reg}[{4 * v + 3}] = ww_v.w;\n"
                f"      }} else {{\n{scalar}      }}\n"
            )
        else:
            fetch.append(scalar)
        fetch.append("    }\n")
        if lay == "o":
            store.append(
                f"    *reinterpret_cast<float4 *>(&{sm}[ww_dst][{kk}][{oo}]) = "
                f"make_float4({reg}[{4 * v}], {reg}[{4 * v + 1}], {reg}[{4 * v + 2}], {reg}[{4 * v + 3}]);\n"
            )
        else:
            for e in range(4):
                store.append(f"    {sm}[ww_dst][{kk} + {e}][{oo}] = {reg}[{4 * v + e}];\n")
    return decl, "".join(fetch), "".join(store)


def generate_body(c: Contraction, t: Tiles, indent: str = "  ") -> str:
    """Return the new body of the kernel (with its braces) for the given tile sizes."""
    cm, cn = t.tm // 4, t.tn // 4
    rows_per = t.bm // cm  # distance between a thread's 4-row chunks
    cols_per = t.bn // cn
    tx_count = t.bn // t.tn
    a_decl, a_fetch, a_store = _operand_loads(c, c.a, "A", t)
    b_decl, b_fetch, b_store = _operand_loads(c, c.b, "B", t)

    def vec_test(op: Operand, which: str) -> str:
        lead = {"k": f"ww_{which.lower()}_o", "o": f"ww_{which.lower()}_k"}.get(op.layout)
        if lead is None:
            return "false"
        width = 8 if c.convert else 16
        return f"(reinterpret_cast<unsigned long long>({op.name}) % {width} == 0) && ({lead} % 4 == 0)"

    epi_guard = c.guard or "true"
    lines = f"""{{
  // warpwise untiled-contraction: {t.bm}x{t.bn} output tiles, {t.bk}-deep shared tiles, {t.tm}x{t.tn} outputs per
  // thread, launched as <<<dim3(ceil(N / {t.bn}), ceil(M / {t.bm})), {t.threads}>>>. Each output sums its
  // products for {c.k} = 0, 1, ... in order, as the loop it replaces did.
  const long long ww_M = {poly_text(c.m_bound)};
  const long long ww_N = {poly_text(c.n_bound)};
  const long long ww_K = {poly_text(c.k_bound)};
  const long long ww_a_o = {poly_text(c.a.outer)}, ww_a_k = {poly_text(c.a.inner)};
  const long long ww_b_o = {poly_text(c.b.outer)}, ww_b_k = {poly_text(c.b.inner)};
  const bool ww_vec_A = {vec_test(c.a, "A")};
  const bool ww_vec_B = {vec_test(c.b, "B")};
  __shared__ alignas(16) {c.tile_type} ww_As[2][{t.bk}][{t.bm} + 4];
  __shared__ alignas(16) {c.tile_type} ww_Bs[2][{t.bk}][{t.bn} + 4];
  const int ww_tid = threadIdx.x;
  const int ww_ty = ww_tid / {tx_count};
  const int ww_tx = ww_tid % {tx_count};
  const long long ww_m0 = (long long)blockIdx.y * {t.bm};
  const long long ww_n0 = (long long)blockIdx.x * {t.bn};
  float ww_acc[{t.tm}][{t.tn}];
#pragma unroll
  for (int ww_r = 0; ww_r < {t.tm}; ++ww_r) {{
#pragma unroll
    for (int ww_c = 0; ww_c < {t.tn}; ++ww_c) ww_acc[ww_r][ww_c] = 0.0f;
  }}
{a_decl}{b_decl}  int ww_buf = 0;
  if (ww_K > 0) {{
    const long long ww_kt = 0;
    const int ww_dst = 0;
{a_fetch}{b_fetch}{a_store}{b_store}  }}
  __syncthreads();
  for (long long ww_k0 = 0; ww_k0 < ww_K; ww_k0 += {t.bk}) {{
    const long long ww_kt = ww_k0 + {t.bk};
    const int ww_dst = ww_buf ^ 1;
    if (ww_kt < ww_K) {{
{_indent(a_fetch + b_fetch, "  ")}    }}
#pragma unroll
    for (int ww_kk = 0; ww_kk < {t.bk}; ++ww_kk) {{
      float ww_ra[{t.tm}], ww_rb[{t.tn}];
#pragma unroll
      for (int ww_q = 0; ww_q < {cm}; ++ww_q) {{
        const float4 ww_v = *reinterpret_cast<const float4 *>(&ww_As[ww_buf][ww_kk][ww_q * {rows_per} + ww_ty * 4]);
        ww_ra[ww_q * 4] = ww_v.x; ww_ra[ww_q * 4 + 1] = ww_v.y;
        ww_ra[ww_q * 4 + 2] = ww_v.z; ww_ra[ww_q * 4 + 3] = ww_v.w;
      }}
#pragma unroll
      for (int ww_q = 0; ww_q < {cn}; ++ww_q) {{
        const float4 ww_v = *reinterpret_cast<const float4 *>(&ww_Bs[ww_buf][ww_kk][ww_q * {cols_per} + ww_tx * 4]);
        ww_rb[ww_q * 4] = ww_v.x; ww_rb[ww_q * 4 + 1] = ww_v.y;
        ww_rb[ww_q * 4 + 2] = ww_v.z; ww_rb[ww_q * 4 + 3] = ww_v.w;
      }}
#pragma unroll
      for (int ww_r = 0; ww_r < {t.tm}; ++ww_r) {{
#pragma unroll
        for (int ww_c = 0; ww_c < {t.tn}; ++ww_c) ww_acc[ww_r][ww_c] += ww_ra[ww_r] * ww_rb[ww_c];
      }}
    }}
    if (ww_kt < ww_K) {{
{_indent(a_store + b_store, "  ")}    }}
    ww_buf = ww_dst;
    __syncthreads();
  }}
#pragma unroll
  for (int ww_r = 0; ww_r < {t.tm}; ++ww_r) {{
#pragma unroll
    for (int ww_c = 0; ww_c < {t.tn}; ++ww_c) {{
      const long long ww_mi = ww_m0 + (ww_r / 4) * {rows_per} + ww_ty * 4 + ww_r % 4;
      const long long ww_nj = ww_n0 + (ww_c / 4) * {cols_per} + ww_tx * 4 + ww_c % 4;
      if (ww_mi >= ww_M || ww_nj >= ww_N) continue;
      {c.i_type} {c.i} = ({c.i_type})ww_mi;
      {c.j_type} {c.j} = ({c.j_type})ww_nj;{linear_decl(c, "      ")}
      {c.acc_type} {c.acc} = ww_acc[ww_r][ww_c];
      if ({epi_guard}) {{
        {c.store}
      }}
    }}
  }}
}}"""
    if indent != "  ":
        lines = lines.replace("\n  ", "\n" + indent)
    return lines


def linear_decl(c: Contraction, indent: str) -> str:
    """Return the declaration of a 1-D index the epilogue reads (`idx = i * N + j`), on a new line ("" for none)."""
    ty, name, value = c.linear
    return f"\n{indent}{ty} {name} = ({ty})({value});" if name else ""


def _indent(text: str, extra: str) -> str:
    return "".join(extra + ln if ln.strip() else ln for ln in text.splitlines(keepends=True))


# ---------------------------------------------------------------------------------------------------------------
# Launches.


def _launch_text(
    c: Contraction, fn: Function, args: tuple[str, ...], t: Tiles | MmaTiles | SimtStep
) -> tuple[str, str] | None:
    """Return the grid and block texts of a launch with these arguments, or None when a bound is not expressible."""
    names = [p.name for p in fn.params]
    if len(args) != len(names):
        return None
    subst = dict(zip(names, args, strict=True))

    def bound(p: Poly) -> str:
        txt = poly_text(p)
        return re.sub(
            r"\b[A-Za-z_]\w*\b", lambda m: f"({subst[m.group(0)]})" if m.group(0) in subst else m.group(0), txt
        )

    n, m = bound(c.n_bound), bound(c.m_bound)
    return f"dim3(({n} + {t.bn - 1}) / {t.bn}, ({m} + {t.bm - 1}) / {t.bm})", f"dim3({t.threads})"


def launch_changes(c: Contraction, fn: Function, t: Tiles | MmaTiles | SimtStep) -> tuple[LaunchChange, ...] | None:
    """Return the launch change for a problem file that launches the kernel: a grid of tiles, one block of threads.

    None when a bound is not a polynomial of parameters and integer constants (a macro is not known to Python).
    """
    params = {p.name for p in fn.params}

    def py(p: Poly) -> str | None:
        terms = []
        for mono, coef in p.terms.items():
            fs = [str(coef)]
            for s in mono:
                if s not in params:
                    return None
                fs.append(f'int(inputs["{s}"])')
            terms.append(" * ".join(fs))
        return " + ".join(terms) if terms else "0"

    n, m = py(c.n_bound), py(c.m_bound)
    if n is None or m is None:
        return None
    smem = dynamic_smem(c, t)
    return (
        LaunchChange("grid", 0, f"max(1, -(-({n}) // {t.bn}))", f"grid.x = ceil(N / {t.bn})"),
        LaunchChange("grid", 1, f"max(1, -(-({m}) // {t.bm}))", f"grid.y = ceil(M / {t.bm})"),
        LaunchChange("grid", 2, "1", "grid.z = 1"),
        LaunchChange("block", 0, str(t.threads), f"block.x = {t.threads}"),
        LaunchChange("block", 1, "1", "block.y = 1"),
        LaunchChange("block", 2, "1", "block.z = 1"),
        LaunchChange("smem", 0, str(smem), f"{smem} bytes of dynamic shared memory" if smem else "no dynamic smem"),
    )


def dynamic_smem(c: Contraction, t: Tiles | MmaTiles | SimtStep) -> int:
    """Return the dynamic shared memory (bytes) a launch of the rewritten kernel passes: 0 unless a tensor-core
    pipeline needs more than the 48 KiB a block may declare statically."""
    if isinstance(t, MmaTiles) and t.dynamic(c.a.layout, c.b.layout):
        return t.smem_bytes(c.a.layout, c.b.layout)
    return 0


def _smem_launch_edits(model: FileModel, ls: Any, kernel: str, smem: int) -> list[Edit] | None:
    """Return the edits that give one in-file launch `smem` bytes of dynamic shared memory, or None when they
    cannot be made exactly.

    The launch gets `smem` as its third configuration argument (one written as a literal 0 is replaced; any
    other value, which the naive kernel does not use, is refused), and the statement before it raises the
    kernel's limit: `cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);`. That
    statement is inserted only where the launch is a statement of a brace-enclosed block (anything else, such
    as the body of a brace-less `if`, would change what runs).
    """
    config = ls.block.parent
    if config is None:
        return None
    args = [ch for ch in config.named_children if ch.type != "comment"]
    edits: list[Edit] = []
    if len(args) >= 3:
        if node_text(model, args[2]).strip() != "0":
            return None
        edits.append(Edit(args[2].start_byte, args[2].end_byte, str(smem)))
    else:
        edits.append(Edit(ls.block.end_byte, ls.block.end_byte, f", {smem}"))
    call = config.parent
    stmt = call.parent if call is not None else None
    if stmt is None or stmt.type != "expression_statement" or stmt.parent is None:
        return None
    if stmt.parent.type != "compound_statement":
        return None
    callee = call.child_by_field_name("function")
    name = node_text(model, callee).strip() if callee is not None else kernel
    line_start = model.text.rfind(b"\n", 0, stmt.start_byte) + 1
    indent = model.text[line_start : stmt.start_byte]
    if indent.strip():
        indent = b""
    text = f"cudaFuncSetAttribute({name}, cudaFuncAttributeMaxDynamicSharedMemorySize, {smem});\n"
    edits.append(Edit(stmt.start_byte, stmt.start_byte, text + indent.decode("utf-8", "surrogateescape")))
    return edits


def problem_launch_changes(matches: list[Any]) -> tuple[LaunchChange, ...] | None:
    """Return the launch change of the card's rewrite for a problem file's launch of the first match's kernel."""
    if not matches:
        return None
    region = matches[0].region
    c: Contraction | None = region.facts.get("contraction")
    if c is None:
        return None
    tiles = tiles_of(dict(matches[0].card.header.anchor.args))
    return launch_changes(c, region.function, tiles)


# ---------------------------------------------------------------------------------------------------------------
# Registered matcher, check and rewrite.


@matcher("untiled_contraction")
def untiled_contraction(ctx: MatchContext) -> Iterator[Region]:
    """Find kernels that compute a contraction one output per thread, with no tiling."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL or fn.shared:
        return
    c, _ = recognise(ctx.model, fn)
    if c is None:
        return
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"contraction:{fn.name}",
        {
            "kernel": fn.name,
            "contraction": c,
            "layout": c.layout,
            "i": c.i,
            "j": c.j,
            "k": c.k,
            "a": c.a.name,
            "b": c.b.name,
            "acc": c.acc,
        },
    )


@check("contraction_launches_rewritable")
def contraction_launches_rewritable(ctx: CheckContext) -> Verdict:
    """Hold when every launch of the kernel in the file can be rewritten to the tiled grid (or there is none)."""
    c: Contraction | None = ctx.fact("contraction")
    if c is None:
        return unknown("no contraction was recognised here")
    for host, launch in ctx.model.launches_of(c.kernel):  # in-file launches only: spec launches change apart
        if (
            _launch_text(c, ctx.function, launch.args, Tiles()) is None
            or launch_syntax(ctx.model, host, launch) is None
        ):
            return unknown(f"the launch of `{c.kernel}` in `{host.name}` cannot be rewritten to a grid of tiles")
    return holds(f"every launch of `{c.kernel}` in this file can be rewritten to a grid of {c.i} x {c.j} tiles")


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Replace the kernel's body with the tiled kernel and rewrite its launches in the file."""
    c: Contraction | None = ctx.fact("contraction")
    if c is None:
        c, _ = recognise(ctx.model, ctx.function)
        if c is None:
            return None
    t = tiles_of(ctx.args)
    if ctx.function.launch_bounds is not None:
        return None  # A kernel with its own launch bounds may not take the tiled block size.
    if isinstance(t, MmaTiles):
        body = generate_mma_body(c, t, poly_text)
        if body is None:
            return None
    elif isinstance(t, SimtStep):
        if t.problems():
            return None
        body = generate_step_body(c, t)
    elif t.problems():
        return None
    else:
        body = generate_body(c, t)
    edits = [Edit(c.body_span[0], c.body_span[1], body)]
    if t.min_blocks:
        at = ctx.function.span(ctx.function.name_span)[0]
        edits.append(Edit(at, at, f"__launch_bounds__({t.threads}, {t.min_blocks}) "))
    for host, launch in ctx.model.launches_of(c.kernel):  # in-file launches only: spec launches change apart
        ls = launch_syntax(ctx.model, host, launch)
        texts = _launch_text(c, ctx.function, launch.args, t)
        if ls is None or texts is None:
            return None
        edits.append(Edit(ls.grid.start_byte, ls.grid.end_byte, texts[0]))
        edits.append(Edit(ls.block.start_byte, ls.block.end_byte, texts[1]))
        smem = dynamic_smem(c, t)
        if smem:
            more = _smem_launch_edits(ctx.model, ls, c.kernel, smem)
            if more is None:
                return None
            edits += more
    return sorted(edits)


def tiles_of(args: dict[str, Any]) -> Tiles | MmaTiles | SimtStep:
    """Return the tile sizes a rewrite's arguments name: `MmaTiles` when they give warps (`wm`), `SimtStep` when
    they name a step (`step`), else `Tiles`."""
    if "step" in args:
        return SimtStep(str(args["step"]), int(args.get("bs", 16)))
    if "wm" in args:
        flags = ("tf32", "wgmma", "regs")
        kw: dict[str, Any] = {k: int(v) for k, v in args.items() if k in _MMA_ARGS and k not in flags}
        return MmaTiles(**kw, **{f: bool(args.get(f, False)) for f in flags})
    return Tiles(**{k: int(v) for k, v in args.items() if k in _TILE_ARGS})


def tile_args(t: Tiles | MmaTiles | SimtStep) -> dict[str, Any]:
    """Return the rewrite's arguments for tile sizes (the inverse of `tiles_of`)."""
    if isinstance(t, SimtStep):
        return {"step": t.kind, "bs": t.bs}
    names = _MMA_ARGS if isinstance(t, MmaTiles) else _TILE_ARGS
    # `group`, `wgmma` and `regs` are named only when set: the arguments of the shapes that predate them are unchanged.
    return {k: getattr(t, k) for k in names if k not in ("group", "wgmma", "regs") or getattr(t, k)}


def choices_for(c: Contraction, tolerance: tuple[float, float] | None = None) -> tuple[Tiles | MmaTiles, ...]:
    """Return the tile shapes a search may try for a contraction, best first.

    Half and bfloat16 operands: the tensor-core shapes first, then the exact SIMT ones. float operands: the exact
    SIMT shapes, then TF32 shapes only when the problem's `tolerance` (rtol, atol) is at least `TF32_TOLERANCE`.
    """
    out: list[Tiles | MmaTiles] = []
    if c.convert:
        out += [t for t in MMA_CHOICES if not t.problems(c.a.layout, c.b.layout)]
    out += list(TILE_CHOICES)
    if not c.convert and tolerance is not None and all(x >= y for x, y in zip(tolerance, TF32_TOLERANCE, strict=False)):
        out += [t for t in TF32_CHOICES if not t.problems(c.a.layout, c.b.layout)]
    return tuple(out)


def rewrite_source(model: FileModel, kernel: str, tiles: Tiles | MmaTiles | SimtStep | None = None) -> bytes | None:
    """Return the file's text with one kernel rewritten (None when it is not a recognised contraction)."""
    from warpwise.skills.rewrite import apply_edits

    fn = next((f for f in model.functions if f.name == kernel and f.kind is FunctionKind.KERNEL), None)
    if fn is None:
        return None
    c, _ = recognise(model, fn)
    if c is None:
        return None
    t = tiles or Tiles()
    region = Region(AnchorKind.KERNEL, fn, fn.name_span, f"contraction:{kernel}", {"contraction": c})
    edits = rewrite(RewriteContext(model, fn, region, tile_args(t)))
    if edits is None:
        return None
    tree_of(model)
    return apply_edits(model.text, edits)


__all__ = [
    "MMA_CHOICES",
    "MMA_TOLERANCE",
    "SIMT_STEPS",
    "TF32_CHOICES",
    "TF32_TOLERANCE",
    "TILE_CHOICES",
    "Contraction",
    "MmaTiles",
    "Operand",
    "SimtStep",
    "Tiles",
    "choices_for",
    "contraction_launches_rewritable",
    "dynamic_smem",
    "generate_body",
    "generate_step_body",
    "lanes_walk_rows",
    "launch_changes",
    "problem_launch_changes",
    "recognise",
    "rewrite",
    "rewrite_source",
    "tile_args",
    "tiles_of",
    "untiled_contraction",
]
