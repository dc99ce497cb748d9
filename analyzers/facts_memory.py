"""Syntax facts of the memory and parallelism cards: thread-index variables, elementwise shapes, linear indices.

The kernel model says how an index varies along `threadIdx.x`; the memory cards also need to know how it varies
along `threadIdx.y` and along loop counters (to tell a row-major walk from a transposed one, or a re-read tile
from a streamed one), and the exact statements of the common one-element-per-thread shapes (to rewrite them
without guessing). These facts come from the syntax tree of one kernel, computed once per (model, function) and
cached, so matchers stay cheap on every keystroke.

`linear(ks, node)` reads an integer expression as a linear form over *basis symbols* (`tid.x`, `tid.y`, `tid.z`
and the counters of `for` loops): a mapping from symbol to coefficient, where a coefficient is a `Fraction` or,
when it is a runtime value such as a row length `N`, its source text. Everything that does not vary with a basis
symbol (parameters, `blockIdx`, `blockDim`, constants) is dropped; expressions that are not linear in the basis
(products of two thread-dependent values, divisions, loads through thread-dependent indices) give None.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import tree_sitter as ts

from warpwise.analyzers.expr.values import parse_int_literal, type_size
from warpwise.analyzers.facts import function_node, tree_of
from warpwise.analyzers.model import Access, FileModel, Function, Launch, Span
from warpwise.analyzers.parse import captures, query

Node = Any
Coef = Fraction | str
Linear = dict[str, Coef]

BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_ASSIGN_OPS = ("=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=")
_WIDE_INDEX_TYPES = ("size_t", "long", "long long", "int64_t", "uint64_t", "long int", "unsigned long", "ptrdiff_t")


def node_text(model: FileModel, node: Node) -> str:
    """Return a node's source text."""
    return model.text[node.start_byte : node.end_byte].decode("utf-8", "replace")


def squash(text: str) -> str:
    """Return a text with all white space removed (to compare expressions regardless of formatting)."""
    return re.sub(r"\s+", "", text)


def unparen(node: Node) -> Node:
    """Return the expression inside any number of parentheses."""
    while node is not None and node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def builtin_axis(model: FileModel, node: Node, name: str | None = None) -> str | None:
    """Return the axis of a `threadIdx.x`-style member (optionally of one builtin, possibly cast), else None."""
    node = unparen(node)
    while node is not None and node.type == "cast_expression":
        node = unparen(node.child_by_field_name("value"))
    if node is None or node.type != "field_expression":
        return None
    arg = node.child_by_field_name("argument")
    fld = node.child_by_field_name("field")
    if arg is None or fld is None or arg.type != "identifier":
        return None
    base = node_text(model, arg)
    axis = node_text(model, fld)
    if base not in BUILTINS or axis not in ("x", "y", "z"):
        return None
    if name is not None and base != name:
        return None
    return axis


def const_value(model: FileModel, node: Node) -> int | None:
    """Return the integer value of a literal or a file-level constant, else None."""
    node = unparen(node)
    if node is None:
        return None
    if node.type == "number_literal":
        return parse_int_literal(node_text(model, node))
    if node.type == "identifier":
        return model.constants.get(node_text(model, node))
    return None


def binary_parts(node: Node) -> tuple[Node, str, Node] | None:
    """Return (left, operator, right) of a binary expression."""
    if node is None or node.type != "binary_expression":
        return None
    left = node.child_by_field_name("left")
    op = node.child_by_field_name("operator")
    right = node.child_by_field_name("right")
    if left is None or op is None or right is None:
        return None
    return left, op.type, right


@dataclass(frozen=True)
class ThreadIndex:
    """`blockIdx.a * S + threadIdx.a` (any operand order): the global index of a thread along axis `a`."""

    axis: str
    scale: str
    scale_value: int | None
    product: Node
    tid: Node


def thread_index(model: FileModel, node: Node) -> ThreadIndex | None:
    """Recognize a global thread index along one axis, with `S` either `blockDim.a` or a constant."""
    parts = binary_parts(unparen(node))
    if parts is None or parts[1] != "+":
        return None
    left, _, right = parts
    for prod, tid in ((left, right), (right, left)):
        axis = builtin_axis(model, tid, "threadIdx")
        mul = binary_parts(unparen(prod))
        if axis is None or mul is None or mul[1] != "*":
            continue
        a, _, b = mul
        for bid, scale in ((a, b), (b, a)):
            if builtin_axis(model, bid, "blockIdx") != axis:
                continue
            if builtin_axis(model, scale, "blockDim") == axis:
                return ThreadIndex(axis, f"blockDim.{axis}", None, unparen(prod), unparen(tid))
            value = const_value(model, scale)
            if value is not None:
                return ThreadIndex(axis, node_text(model, scale), value, unparen(prod), unparen(tid))
    return None


@dataclass(frozen=True)
class IndexVar:
    """A top-level local initialized with a global thread index (`int i = blockIdx.x * blockDim.x + threadIdx.x;`)."""

    name: str
    type: str
    is_const: bool
    index: ThreadIndex
    decl: Node
    init: Node


@dataclass(frozen=True)
class StatementRun:
    """The statements after `if (i >= n) return;`: the body of an early-return elementwise kernel."""

    statements: tuple[Node, ...]
    type: str = "statement_run"

    @property
    def start_byte(self) -> int:
        """Return the offset of the first statement."""
        return int(self.statements[0].start_byte)

    @property
    def end_byte(self) -> int:
        """Return the end offset of the last statement."""
        return int(self.statements[-1].end_byte)

    @property
    def named_children(self) -> list[Node]:
        """Return the statements."""
        return list(self.statements)

    @property
    def children(self) -> list[Node]:
        """Return the statements."""
        return list(self.statements)


@dataclass(frozen=True)
class Elementwise:
    """One element per thread: `if (i < n) body` after the index declaration (form `if`), `if (i >= n) return;`
    followed by the rest of the kernel (form `return`, whose body is a `StatementRun`), or a grid-stride `for` loop
    (form `loop`)."""

    form: str
    var: str
    var_type: str
    var_const: bool
    index: ThreadIndex
    decl: Node | None
    stmt: Node
    cond: Node
    bound: Node
    body: Node
    last: bool


_DEFINITIONS = """
(init_declarator declarator: (identifier) @name value: (_) @value)
(assignment_expression left: (identifier) @assigned) @assignment
(update_expression argument: (identifier) @updated)
(pointer_expression operator: "&" argument: (identifier) @addressed)
(for_statement
  initializer: (declaration declarator: (init_declarator declarator: (identifier) @loop value: (_) @start)))
"""


class KernelSyntax:
    """The syntax facts of one function, each computed on first use and kept."""

    def __init__(self, model: FileModel, function: Function, node: Node) -> None:
        self.model = model
        self.function = function
        self.node = node
        self.body: Node | None = node.child_by_field_name("body")
        self._linear: dict[int, Linear | None] = {}
        self._idents: dict[tuple[int, int, str], dict[str, list[Node]]] = {}

    def text(self, node: Node) -> str:
        """Return a node's text."""
        return node_text(self.model, node)

    def rel_span(self, node: Node) -> Span:
        """Return a node's span relative to the function."""
        return (node.start_byte - self.function.base, node.end_byte - self.function.base)

    @functools.cached_property
    def statements(self) -> list[Node]:
        """Return the top-level statements of the body."""
        if self.body is None:
            return []
        return [c for c in self.body.named_children if c.type != "comment"]

    @functools.cached_property
    def _defs(self) -> tuple[dict[str, list[Node | None]], dict[str, Node | None]]:
        definitions: dict[str, list[Node | None]] = {}
        loops: dict[str, Node | None] = {}
        if self.body is None:
            return definitions, loops
        for _, caps in ts.QueryCursor(query(_DEFINITIONS)).matches(self.body):
            if "loop" in caps:
                loops[self.text(caps["loop"][0])] = caps["start"][0]
            elif "name" in caps:
                definitions.setdefault(self.text(caps["name"][0]), []).append(caps["value"][0])
            elif "assigned" in caps:
                assignment = caps["assignment"][0]
                op = assignment.child_by_field_name("operator")
                value = assignment.child_by_field_name("right") if op is not None and op.type == "=" else None
                definitions.setdefault(self.text(caps["assigned"][0]), []).append(value)
            else:
                for ident in caps.get("updated", []) + caps.get("addressed", []):
                    definitions.setdefault(self.text(ident), []).append(None)
        return definitions, loops

    @property
    def definitions(self) -> dict[str, list[Node | None]]:
        """Return every name's definitions: initializers, assigned values, or None for updates and `&name`."""
        return self._defs[0]

    @property
    def loop_vars(self) -> dict[str, Node | None]:
        """Return the counters declared by `for` loops, with their start values."""
        return self._defs[1]

    @functools.cached_property
    def index_vars(self) -> dict[str, IndexVar]:
        """Return the top-level locals initialized with a global thread index."""
        out: dict[str, IndexVar] = {}
        for stmt in self.statements:
            if stmt.type != "declaration":
                continue
            decls = [c for c in stmt.named_children if c.type == "init_declarator"]
            if len(decls) != 1:
                continue
            name = decls[0].child_by_field_name("declarator")
            value = decls[0].child_by_field_name("value")
            if name is None or name.type != "identifier" or value is None:
                continue
            ti = thread_index(self.model, value)
            if ti is None:
                continue
            vname = self.text(name)
            vtype, vconst = _declared_type(self.model, stmt)
            out[vname] = IndexVar(vname, vtype, vconst, ti, stmt, value)
        return out

    @functools.cached_property
    def elementwise(self) -> list[Elementwise]:
        """Return the one-element-per-thread shapes of the body."""
        return _elementwise(self) if may_be_elementwise(self.model, self.function) else []

    def identifiers(self, node: Node, name: str) -> list[Node]:
        """Return the identifier nodes called `name` below a node (field names excluded), in source order."""
        return self._identifier_index(node).get(name, [])

    def _identifier_index(self, node: Node) -> dict[str, list[Node]]:
        key = (node.start_byte, node.end_byte, node.type)
        hit = self._idents.get(key)
        if hit is not None:
            return hit
        index: dict[str, list[Node]] = {}
        roots = node.named_children if node.type == "statement_run" else [node]
        data = self.model.text
        for root in roots:
            if root.end_byte - root.start_byte < 256:
                found = _walk_identifiers(root)
            else:
                found = captures(query("(identifier) @id"), root).get("id", [])
            for n in found:
                index.setdefault(data[n.start_byte : n.end_byte].decode("utf-8", "replace"), []).append(n)
        for nodes in index.values():
            nodes.sort(key=lambda n: n.start_byte)
        self._idents[key] = index
        return index

    def is_assigned(self, name: str, within: Node | None = None) -> bool:
        """Return whether a name is defined more than once (in `within`: assigned, updated or addressed there)."""
        if within is None:
            return len(self.definitions.get(name, [])) > 1
        for ident in self.identifiers(within, name):
            parent = ident.parent
            if parent is None:
                continue
            if parent.type == "assignment_expression" and parent.child_by_field_name("left") == ident:
                return True
            if parent.type == "update_expression":
                return True
            if parent.type == "pointer_expression" and parent.child_by_field_name("operator").type == "&":
                return True
        return False


def _walk_identifiers(node: Node) -> list[Node]:
    """Return the identifiers below a small node (a walk is cheaper than a query there)."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            out.append(n)
        else:
            stack.extend(n.named_children)
    return out


def kernel_syntax(model: FileModel, fn: Function) -> KernelSyntax | None:
    """Return the syntax facts of a function (computed once per model and function, kept on the model)."""
    memo: dict[tuple[int, int], KernelSyntax] = model.memo.setdefault(f"{__name__}.kernel_syntax", {})
    key = (fn.base, fn.length)
    ks = memo.get(key)
    if ks is not None:
        return ks
    node = function_node(model, fn)
    if node is None:
        return None
    return memo.setdefault(key, KernelSyntax(model, fn, node))


def _declared_type(model: FileModel, decl: Node) -> tuple[str, bool]:
    type_node = decl.child_by_field_name("type")
    # `long const j` puts the qualifier inside the type (`sized_type_specifier`), `int const k` beside it.
    inner = list(type_node.children) if type_node is not None and type_node.type == "sized_type_specifier" else []
    qualifiers = [node_text(model, c) for c in [*decl.children, *inner] if c.type == "type_qualifier"]
    base = node_text(model, type_node) if type_node is not None else "int"
    if inner:
        base = " ".join(node_text(model, c) for c in inner if c.type != "type_qualifier")
    return " ".join([*(q for q in qualifiers if q != "const"), base]), "const" in qualifiers


_LESS = re.compile(r"^\s*\(?\s*\w+\s*\)?\s*(<(?![<=])|>=)|(?<![<>])(>(?![>=])|<=)\s*\(?\s*\w+\s*\)?\s*$")


def may_be_elementwise(model: FileModel, fn: Function) -> bool:
    """Return whether the model shows a guard `i < n` or a loop stepping by `gridDim` (a cheap test first)."""
    if any(_LESS.search(b.condition) for b in fn.branches):
        return True
    for loop in fn.loops:
        if (
            loop.kind == "for"
            and b"gridDim" in model.text[fn.base + loop.header_span[0] : fn.base + loop.header_span[1]]
        ):
            return True
    return False


def launches_of(model: FileModel, kernel: str) -> list[tuple[Function, Launch]]:
    """Return a kernel's launches in its file, else the one its annotation or problem file gives (`spec_launch`)."""
    from warpwise.analyzers import facts

    return facts.launches_of(model, kernel)


def _less_than(ks: KernelSyntax, cond: Node, var: str) -> Node | None:
    """Return `n` when a condition reads `var < n` (or `n > var`) and `n` does not mention `var`."""
    parts = binary_parts(unparen(cond))
    if parts is None:
        return None
    left, op, right = parts
    left, right = unparen(left), unparen(right)
    bound = None
    if op == "<" and left.type == "identifier" and ks.text(left) == var:
        bound = right
    elif op == ">" and right.type == "identifier" and ks.text(right) == var:
        bound = left
    if bound is None or ks.identifiers(bound, var):
        return None
    return bound


def _grid_stride_update(ks: KernelSyntax, update: Node | None, var: str) -> bool:
    if update is None or update.type != "assignment_expression":
        return False
    left = update.child_by_field_name("left")
    op = update.child_by_field_name("operator")
    right = update.child_by_field_name("right")
    if left is None or op is None or right is None or ks.text(left) != var or op.type != "+=":
        return False
    mul = binary_parts(unparen(right))
    if mul is None or mul[1] != "*":
        return False
    dims = [builtin_axis(ks.model, m, n) for m in (mul[0], mul[2]) for n in ("blockDim", "gridDim")]
    return dims.count("x") == 2


def _elementwise(ks: KernelSyntax) -> list[Elementwise]:
    out: list[Elementwise] = []
    stmts = ks.statements
    last = stmts[-1] if stmts else None
    for pos, stmt in enumerate(stmts):
        if stmt.type == "if_statement" and stmt.child_by_field_name("alternative") is None:
            clause = stmt.child_by_field_name("condition")
            cond = clause.child_by_field_name("value") if clause is not None else None
            body = stmt.child_by_field_name("consequence")
            if cond is None or body is None:
                continue
            if _is_bare_return(body):
                shape = _early_return(ks, stmt, clause, cond, stmts[pos + 1 :])
                if shape is not None:
                    out.append(shape)
                continue
            for var in ks.index_vars.values():
                if var.index.axis != "x" or var.index.scale != "blockDim.x" or var.decl.start_byte > stmt.start_byte:
                    continue
                bound = _less_than(ks, cond, var.name)
                if bound is None or ks.is_assigned(var.name):
                    continue
                out.append(
                    Elementwise(
                        "if",
                        var.name,
                        var.type,
                        var.is_const,
                        var.index,
                        var.decl,
                        stmt,
                        clause,
                        bound,
                        body,
                        stmt == last,
                    )
                )
        elif stmt.type == "for_statement":
            init = stmt.child_by_field_name("initializer")
            cond = stmt.child_by_field_name("condition")
            body = stmt.child_by_field_name("body")
            if cond is None or body is None:
                continue
            if init is None:
                shape = _declared_grid_stride(ks, stmt, cond, body, last)
                if shape is not None:
                    out.append(shape)
                continue
            if init.type != "declaration":
                continue
            decls = [c for c in init.named_children if c.type == "init_declarator"]
            if len(decls) != 1:
                continue
            name = decls[0].child_by_field_name("declarator")
            value = decls[0].child_by_field_name("value")
            if name is None or value is None or name.type != "identifier":
                continue
            loop_var = ks.text(name)
            ti = thread_index(ks.model, value)
            if ti is None or ti.axis != "x" or ti.scale != "blockDim.x":
                continue
            bound = _less_than(ks, cond, loop_var)
            if bound is None or not _grid_stride_update(ks, stmt.child_by_field_name("update"), loop_var):
                continue
            if ks.is_assigned(loop_var, body):
                continue
            vtype, vconst = _declared_type(ks.model, init)
            out.append(Elementwise("loop", loop_var, vtype, vconst, ti, None, stmt, cond, bound, body, stmt == last))
    return out


def _is_bare_return(node: Node) -> bool:
    if node.type == "compound_statement":
        kids = [c for c in node.named_children if c.type != "comment"]
        return len(kids) == 1 and _is_bare_return(kids[0])
    return node.type == "return_statement" and node.named_child_count == 0


def _early_return(ks: KernelSyntax, stmt: Node, clause: Node, cond: Node, rest: list[Node]) -> Elementwise | None:
    """Recognize `if (i >= n) return;` followed by the rest of the kernel."""
    if not rest:
        return None
    parts = binary_parts(unparen(cond))
    if parts is None:
        return None
    left, op, right = parts
    left, right = unparen(left), unparen(right)
    for var in ks.index_vars.values():
        if var.index.axis != "x" or var.index.scale != "blockDim.x" or var.decl.start_byte > stmt.start_byte:
            continue
        if op == ">=" and left.type == "identifier" and ks.text(left) == var.name:
            bound = right
        elif op == "<=" and right.type == "identifier" and ks.text(right) == var.name:
            bound = left
        else:
            continue
        if ks.identifiers(bound, var.name) or ks.is_assigned(var.name):
            continue
        body = StatementRun(tuple(rest))
        return Elementwise(
            "return", var.name, var.type, var.is_const, var.index, var.decl, stmt, clause, bound, body, True
        )
    return None


def _declared_grid_stride(
    ks: KernelSyntax, stmt: Node, cond: Node, body: Node, last: Node | None
) -> Elementwise | None:
    """Recognize `for (; i < n; i += blockDim.x * gridDim.x)` over an index declared before the loop."""
    for var in ks.index_vars.values():
        if var.index.axis != "x" or var.index.scale != "blockDim.x" or var.decl.start_byte > stmt.start_byte:
            continue
        bound = _less_than(ks, cond, var.name)
        if bound is None or not _grid_stride_update(ks, stmt.child_by_field_name("update"), var.name):
            continue
        if ks.is_assigned(var.name, body) or len(ks.definitions.get(var.name, [])) != 2:
            continue
        return Elementwise(
            "loop", var.name, var.type, var.is_const, var.index, var.decl, stmt, cond, bound, body, stmt == last
        )
    return None


def elementwise_at(ks: KernelSyntax, start: int) -> Elementwise | None:
    """Return the elementwise shape whose statement starts at an absolute offset."""
    for shape in ks.elementwise:
        if shape.stmt.start_byte == start:
            return shape
    return None


def is_wide_type(type_text: str) -> bool:
    """Return whether an index type is 64 bits wide."""
    t = " ".join(type_text.replace("const", " ").split())
    return t in _WIDE_INDEX_TYPES or t.endswith("int64_t") or t in ("unsigned long long", "long long int")


# Linear forms over the thread index and loop counters.


def visible_declaration(defs: list[Node | None], use: Node) -> Node | None:
    """Return the one initializer among a name's definitions that is in scope at `use`, or None.

    A name defined once has that definition (None when it is an update). A name declared in two sibling blocks
    (`for (...) { int i = a; } ... { int i = b; }`) has two initializers; the one whose block encloses the use and
    that comes before it is the value there. Any assignment or update of the
    name, or more than one visible declaration, makes the answer unknown (None).
    """
    if len(defs) == 1:
        return defs[0]
    visible: list[Node] = []
    for d in defs:
        if d is None:
            return None
        decl = d.parent
        if decl is None or decl.type != "init_declarator" or decl.parent is None or decl.parent.type != "declaration":
            return None
        scope = decl.parent.parent
        if scope is None:
            return None
        if scope.start_byte <= use.start_byte < scope.end_byte and d.end_byte <= use.start_byte:
            visible.append(d)
    return visible[0] if len(visible) == 1 else None


def _scale(form: Linear, factor: Coef) -> Linear:
    out: Linear = {}
    for k, c in form.items():
        if isinstance(c, Fraction) and isinstance(factor, Fraction):
            v: Coef = c * factor
        elif isinstance(c, Fraction) and c == 1:
            v = factor
        elif isinstance(factor, Fraction) and factor == 1:
            v = c
        else:
            v = f"{c}*{factor}"
        if not (isinstance(v, Fraction) and v == 0):
            out[k] = v
    return out


def _add(a: Linear, b: Linear, sign: int) -> Linear:
    out = dict(a)
    for k, c in b.items():
        c2: Coef = c * sign if isinstance(c, Fraction) else (c if sign > 0 else f"-{c}")
        if k not in out:
            out[k] = c2
            continue
        prev = out[k]
        if isinstance(prev, Fraction) and isinstance(c2, Fraction):
            total = prev + c2
            if total == 0:
                del out[k]
            else:
                out[k] = total
        else:
            out[k] = f"{prev}+{c2}"
    return out


def linear(ks: KernelSyntax, node: Node, _depth: int = 0) -> Linear | None:
    """Return an expression as a linear form over thread indices and loop counters (None: not linear)."""
    if node is None or _depth > 24:
        return None
    key = node.id
    if _depth == 0 and key in ks._linear:
        return ks._linear[key]
    result = _linear(ks, node, _depth)
    if _depth == 0:
        ks._linear[key] = result
    return result


def _linear(ks: KernelSyntax, node: Node, depth: int) -> Linear | None:
    node = unparen(node)
    t = node.type
    model = ks.model
    if t in ("number_literal", "sizeof_expression", "true", "false", "char_literal"):
        return {}
    if t == "field_expression":
        axis = builtin_axis(model, node)
        if axis is not None:
            return {f"tid.{axis}": Fraction(1)} if ks.text(node).startswith("threadIdx") else {}
        return {}
    if t == "identifier":
        name = ks.text(node)
        if name in ks.loop_vars:
            start = linear(ks, ks.loop_vars[name], depth + 1)
            return None if start is None else _add(start, {name: Fraction(1)}, 1)
        defs = ks.definitions.get(name)
        if defs is None:
            return {}
        value = visible_declaration(defs, node)
        if value is None:
            return None
        return linear(ks, value, depth + 1)
    if t == "cast_expression":
        return linear(ks, node.child_by_field_name("value"), depth + 1)
    if t == "unary_expression":
        op = node.child_by_field_name("operator")
        inner = linear(ks, node.child_by_field_name("argument"), depth + 1)
        if inner is None:
            return None
        if op is not None and op.type == "-":
            return _scale(inner, Fraction(-1))
        if op is not None and op.type == "+":
            return inner
        return {} if not inner else None
    if t == "binary_expression":
        parts = binary_parts(node)
        if parts is None:
            return None
        left, op, right = parts
        a = linear(ks, left, depth + 1)
        b = linear(ks, right, depth + 1)
        if a is None or b is None:
            return None
        if op in ("+", "-"):
            return _add(a, b, 1 if op == "+" else -1)
        if op == "*":
            if a and b:
                return None
            form, other = (a, right) if a else (b, left)
            if not form:
                return {}
            value = const_value(model, other)
            return _scale(form, Fraction(value) if value is not None else ks.text(unparen(other)))
        if not a and not b:
            return {}
        return None
    if t == "subscript_expression":
        idx = node.child_by_field_name("indices")
        subscripts = list(idx.named_children) if idx is not None else []
        return {} if all(linear(ks, c, depth + 1) == {} for c in subscripts) else None
    if t in ("call_expression", "conditional_expression"):
        args = node.child_by_field_name("arguments") if t == "call_expression" else node
        kids = list(args.named_children) if args is not None else []
        return {} if all(linear(ks, c, depth + 1) == {} for c in kids) else None
    return None


def lane_class(form: Linear | None, lane: str = "tid.x") -> str:
    """Classify a linear index along one thread axis: uniform, contiguous, strided or unknown."""
    if form is None:
        return "unknown"
    c = form.get(lane)
    if c is None:
        return "uniform"
    if isinstance(c, Fraction):
        return "contiguous" if abs(c) == 1 else "strided"
    return "strided"


# Launch sites: host syntax around `kernel<<<grid, block>>>(...)`.


@dataclass(frozen=True)
class LaunchSyntax:
    """A launch's grid and block expressions as syntax nodes (absolute offsets)."""

    host: Function
    launch: Launch
    grid: Node
    block: Node


def launch_syntax(model: FileModel, host: Function, launch: Launch) -> LaunchSyntax | None:
    """Return the grid and block nodes of one launch."""
    from warpwise.analyzers.facts import is_spec_launch

    if is_spec_launch(launch):
        return None  # A launch from a run spec has no text in the file.
    start, end = host.span(launch.span)
    node = tree_of(model).root_node.descendant_for_byte_range(start, end)
    while node is not None and node.type != "call_expression":
        node = node.parent
    if node is None:
        return None
    config = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
    if config is None:
        return None
    args = [c for c in config.named_children if c.type != "comment"]
    if len(args) < 2:
        return None
    return LaunchSyntax(host, launch, args[0], args[1])


@dataclass(frozen=True)
class CeilDiv:
    """A grid written `(N + B - 1) / B` (or `(N + C) / B` with C = B - 1): N elements, B per block."""

    node: Node
    count: str
    block: str
    block_value: int | None
    literal: bool


def ceil_div(model: FileModel, ls: LaunchSyntax) -> CeilDiv | None:
    """Recognize a grid size that covers N elements with blocks of the launch's block size."""
    grid = _dim3_scalar(model, ls.grid)
    parts = binary_parts(grid)
    if parts is None or parts[1] != "/":
        return None
    num, _, den = parts
    den = unparen(den)
    block_text = node_text(model, _dim3_scalar(model, ls.block))
    dims = ls.launch.block_value
    block_value = dims[0] if dims and all(d == 1 for d in dims[1:]) else None
    den_text = node_text(model, den)
    den_value = const_value(model, den)
    if squash(den_text) != squash(block_text) and (den_value is None or den_value != block_value):
        return None
    add = binary_parts(unparen(num))
    if add is None:
        return None
    left, op, right = add
    if op == "+":
        right_value = const_value(model, right)
        if den_value is not None and right_value is not None and right_value == den_value - 1:
            return CeilDiv(grid, node_text(model, unparen(left)), den_text, den_value, True)
        return None
    if op == "-" and const_value(model, right) == 1:
        inner = binary_parts(unparen(left))
        if inner is not None and inner[1] == "+" and squash(node_text(model, inner[2])) == squash(den_text):
            return CeilDiv(grid, node_text(model, unparen(inner[0])), den_text, den_value, False)
    return None


def _dim3_scalar(model: FileModel, node: Node) -> Node:
    """Return `x` for `dim3(x)` (a one-dimensional grid or block written as dim3), else the expression itself."""
    node = unparen(node)
    if node.type == "call_expression":
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if fn is not None and args is not None and node_text(model, fn) == "dim3" and args.named_child_count == 1:
            return unparen(args.named_children[0])
    return node


def scaled_ceil_div(cd: CeilDiv, factor: int) -> str:
    """Return the grid text for `factor` times fewer blocks (`(n + 255) / 256` -> `(n + 1023) / 1024`)."""
    if cd.literal and cd.block_value is not None and cd.block.isdigit():
        total = cd.block_value * factor
        return f"({cd.count} + {total - 1}) / {total}"
    block = cd.block if re.fullmatch(r"[\w.]+", cd.block) else f"({cd.block})"
    return f"({cd.count} + {block} * {factor} - 1) / ({block} * {factor})"


def launch_arg(launch: Launch, fn: Function, name: str) -> str | None:
    """Return the argument text a launch passes for a parameter."""
    param = fn.param(name)
    if param is None or len(launch.args) != len(fn.params):
        return None
    return launch.args[param.index].strip()


def index_node(model: FileModel, fn: Function, acc: Access) -> tuple[KernelSyntax, Node] | None:
    """Return the kernel's syntax and the node of an access's index, parentheses removed (None when unread)."""
    ks = kernel_syntax(model, fn)
    if ks is None:
        return None
    node = ks.node.descendant_for_byte_range(*fn.span(acc.index_span))
    return (ks, unparen(node)) if node is not None else None


def lanes_walk_gap(model: FileModel, fn: Function, acc: Access) -> str | None:
    """Return the counter of a constant-trip loop around a strided access over which each lane walks every element
    between its start and the next lane's, or None.

    `for (l = 0; l < 4; ++l) x[4 * t + l]`: each instruction is strided, but over the loop the warp touches every
    byte of the sectors it fetches, so it moves the DRAM sectors of a contiguous access (the lines stay in L1 and L2
    between iterations); what it still costs is wavefronts per instruction.
    """
    if acc.stride is None or acc.stride.denominator != 1 or len(acc.indices) != 1 or not acc.loops:
        return None
    # The answer reads only the function (its index expression, loops and the file's constants): it is kept on the
    # function object, which a keystroke elsewhere in the file leaves in the next version's model.
    memo: dict[tuple[Any, ...], str | None] = fn.memo.setdefault(f"{__name__}.lanes_walk_gap", {})
    key = (acc.span, acc.index_span, acc.kind)
    if key not in memo:
        memo[key] = _lanes_walk_gap(model, fn, acc)
    return memo[key]


def _lanes_walk_gap(model: FileModel, fn: Function, acc: Access) -> str | None:
    assert acc.stride is not None
    stride = abs(acc.stride.numerator)
    found = index_node(model, fn, acc)
    form = linear(found[0], found[1]) if found is not None else None
    if form is None:
        return None
    for loop_id in reversed(acc.loops):
        loop = fn.loops[loop_id]
        if loop.var is None or loop.trip_count is None or loop.step_value is None:
            continue
        per_iteration = form.get(loop.var)
        if isinstance(per_iteration, Fraction) and abs(per_iteration * loop.step_value) == 1:
            return loop.var if loop.trip_count >= stride else None
    return None


# Lanes enumerated: what one warp's access touches when the index divides the thread index (`tid / 4`, `tid % 4`).

_LANE_NAMES = {"threadIdx": ("_ww_tx", "0", "0"), "blockIdx": ("0", "0", "0"), "blockDim": ("1024", "1", "1")}
_LANE_AXES = {"x": 0, "y": 1, "z": 2}
_SYMBOLIC_EXTENT = 4096
"""The value given to a size the code does not fix (a row length `K`): large and a multiple of every sector, so
that rows start on sector boundaries and lanes of different rows never share a sector."""
_LANE_EXPR_TYPES = frozenset(
    {
        "number_literal",
        "identifier",
        "field_expression",
        "binary_expression",
        "unary_expression",
        "parenthesized_expression",
        "cast_expression",
    }
)


def _lane_text(ks: KernelSyntax, node: Node | None, depth: int = 0) -> str | None:
    """Return an index expression as arithmetic text over `_ww_tx` (the lane along x), locals expanded, loop
    counters at their first value, sizes the code does not fix at `_SYMBOLIC_EXTENT`; None when it cannot."""
    if node is None or depth > 24 or node.type not in _LANE_EXPR_TYPES:
        return None
    t = node.type
    if t == "number_literal":
        return ks.text(node)
    if t == "field_expression":
        arg = node.child_by_field_name("argument")
        fld = node.child_by_field_name("field")
        if arg is None or fld is None:
            return None
        names = _LANE_NAMES.get(ks.text(arg))
        axis = _LANE_AXES.get(ks.text(fld))
        return names[axis] if names is not None and axis is not None else None
    if t == "identifier":
        name = ks.text(node)
        if name in ks.loop_vars:
            return _lane_text(ks, ks.loop_vars[name], depth + 1) if ks.loop_vars[name] is not None else None
        defs = ks.definitions.get(name)
        if defs is not None:
            value = visible_declaration(defs, node)
            inner = _lane_text(ks, value, depth + 1) if value is not None else None
            return f"({inner})" if inner is not None else None
        value_c = ks.model.constants.get(name)
        if isinstance(value_c, int):
            return str(value_c)
        return str(_SYMBOLIC_EXTENT)  # a parameter or a macro the file does not define: a size of the data
    if t == "cast_expression":
        return _lane_text(ks, node.child_by_field_name("value"), depth + 1)
    if t == "parenthesized_expression":
        kids = node.named_children
        inner = _lane_text(ks, kids[0], depth + 1) if len(kids) == 1 else None
        return f"({inner})" if inner is not None else None
    if t == "unary_expression":
        op = node.child_by_field_name("operator")
        arg = _lane_text(ks, node.child_by_field_name("argument"), depth + 1)
        if op is None or arg is None or op.type not in ("-", "+", "~"):
            return None
        return f"({op.type}{arg})"
    parts = binary_parts(node)
    if parts is None or parts[1] not in ("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"):
        return None
    a = _lane_text(ks, parts[0], depth + 1)
    b = _lane_text(ks, parts[2], depth + 1)
    return None if a is None or b is None else f"({a} {parts[1]} {b})"


def lane_sectors(model: FileModel, fn: Function, acc: Access, moved: int) -> tuple[int, int] | None:
    """Return (32-byte sectors one warp's access touches, sectors a contiguous access of `moved` bytes per lane
    touches), from the index evaluated for lanes 0..31 along x; None when the index cannot be evaluated.

    This reads what an affine stride cannot: `A[(tid / 4) * K + (tid % 4) * 4]` puts 4 lanes on each row's 32
    contiguous bytes, so a warp fills every sector it fetches although no single stride between lanes exists.
    """
    from warpwise.analyzers.expr.cexpr import ExprError, evaluate_int

    elem = type_size((acc.element_type or "").replace("const", "").strip()) if acc.element_type else None
    if not elem or not moved or len(acc.indices) != 1 or acc.array != acc.base:
        # Only `A[index]` itself: an alias or a cast of an offset pointer adds an offset this does not read.
        return None
    found = index_node(model, fn, acc)
    text = _lane_text(found[0], found[1]) if found is not None else None
    if text is None:
        return None
    touched: set[int] = set()
    try:
        for lane in range(32):
            start = evaluate_int(text, {"_ww_tx": lane}) * elem
            touched.update(range(start // 32, (start + moved - 1) // 32 + 1))
    except (ExprError, ArithmeticError, RecursionError):
        return None
    return len(touched), max(1, -(-(32 * moved) // 32))
