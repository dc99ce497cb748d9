"""Facts that the reductions, arithmetic and control cards share, computed from the model and from syntax nodes.

The kernel model knows loops, accesses, calls and launches, but not the exact shape of a statement: which
operator combines two shared-memory elements, whether an integer expression is signed, or how large a value
built from `threadIdx`, `blockIdx` and `blockDim` can get. These cards need such facts to decide whether a
rewrite is exact, so this module reads them from the syntax tree (`facts.tree_of`, parsed once per model) and
from the model, and never guesses: every question returns None (unknown) when the code is outside what it reads.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from warpwise.analyzers.expr import ranges
from warpwise.analyzers.expr.canon import Canonicalizer, Form
from warpwise.analyzers.expr.values import parse_int_literal
from warpwise.analyzers.facts import tree_of
from warpwise.analyzers.model import FileModel, Function, FunctionKind, Launch, Span

Node = Any

INT32_MAX = 2**31 - 1

SIGNED_INTS = {
    "int": 32,
    "signed": 32,
    "signed int": 32,
    "int32_t": 32,
    "short": 16,
    "short int": 16,
    "int16_t": 16,
    "signed char": 8,
    "int8_t": 8,
    "long": 64,
    "long int": 64,
    "long long": 64,
    "long long int": 64,
    "int64_t": 64,
    "ptrdiff_t": 64,
}
UNSIGNED_INTS = {
    "unsigned": 32,
    "unsigned int": 32,
    "uint32_t": 32,
    "uint": 32,
    "unsigned short": 16,
    "uint16_t": 16,
    "unsigned char": 8,
    "uint8_t": 8,
    "unsigned long": 64,
    "unsigned long int": 64,
    "unsigned long long": 64,
    "unsigned long long int": 64,
    "uint64_t": 64,
    "size_t": 64,
}
FLOATS = {"float": 32, "double": 64}
HALF_TYPES = {"__half": "half", "half": "half", "__nv_bfloat16": "bf16", "nv_bfloat16": "bf16"}

_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|static|register|constexpr)\b")


def clean(text: str) -> str:
    """Return code text with runs of white space collapsed (for comparing expressions)."""
    return " ".join(text.split())


@functools.lru_cache(maxsize=4096)
def bare_type(type_text: str) -> str:
    """Return a type name without qualifiers, pointers, references or array sizes (`const float*` -> `float`)."""
    t = _QUALIFIERS.sub(" ", type_text)
    t = re.sub(r"\[.*?\]", " ", t)
    t = t.replace("*", " ").replace("&", " ")
    return clean(t).removeprefix("std::")


@dataclass(frozen=True, slots=True)
class CType:
    """The arithmetic class of a C type: `signed`, `unsigned` or `float`, with its width in bits."""

    kind: str
    bits: int

    @property
    def is_int(self) -> bool:
        """Return whether the type is an integer type."""
        return self.kind in ("signed", "unsigned")


@functools.lru_cache(maxsize=4096)
def ctype(type_text: str | None) -> CType | None:
    """Return the arithmetic class of a scalar type name, or None for other types."""
    if not type_text:
        return None
    t = bare_type(type_text)
    if t in SIGNED_INTS:
        return CType("signed", SIGNED_INTS[t])
    if t in UNSIGNED_INTS:
        return CType("unsigned", UNSIGNED_INTS[t])
    if t in FLOATS:
        return CType("float", FLOATS[t])
    return None


def text_of(model: FileModel, node: Node) -> str:
    """Return the text of a node."""
    return model.text[node.start_byte : node.end_byte].decode("utf-8", "replace")


def node_at(model: FileModel, fn: Function, rel: Span, type_: str | None = None) -> Node:
    """Return the smallest node covering a span relative to `fn` (or its nearest ancestor of a type)."""
    start, end = fn.span(rel)
    node = tree_of(model).root_node.descendant_for_byte_range(start, end)
    if type_ is None:
        return node
    while node is not None and node.type != type_:
        node = node.parent
    return node


def unparen(node: Node | None) -> Node | None:
    """Return the expression inside any number of parentheses."""
    while node is not None and node.type == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        node = inner[0] if len(inner) == 1 else None
    return node


def field(node: Node | None, name: str) -> Node | None:
    """Return a child by field name (None-safe)."""
    return node.child_by_field_name(name) if node is not None else None


def operator_of(node: Node | None) -> str | None:
    """Return the operator token of a binary, unary, update or assignment expression."""
    op = field(node, "operator")
    return op.type if op is not None else None


def statements(block: Node | None) -> list[Node]:
    """Return the statements of a compound statement, or the single statement itself (comments left out)."""
    if block is None:
        return []
    if block.type == "compound_statement":
        return [c for c in block.named_children if c.type != "comment"]
    return [block]


def condition_value(node: Node | None) -> Node | None:
    """Return the expression of an `if`/`while` condition clause."""
    cond = field(node, "condition")
    if cond is not None and cond.type == "condition_clause":
        value = field(cond, "value")
        if value is None:
            inner = [c for c in cond.named_children if c.type != "comment"]
            value = inner[0] if len(inner) == 1 else None
        return unparen(value)
    return unparen(cond)


def number_value(model: FileModel, node: Node | None) -> int | None:
    """Return the value of an integer literal or a file-level integer constant."""
    node = unparen(node)
    if node is None:
        return None
    if node.type == "number_literal":
        return parse_int_literal(text_of(model, node))
    if node.type == "identifier":
        return model.constants.get(text_of(model, node))
    return None


def float_literal_value(text: str) -> float | None:
    """Return the value of a floating or integer literal (`2.0f`, `2.`, `3`), or None."""
    t = text.strip().rstrip("fFlL")
    if t.lower().startswith("0x"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def identifiers(model: FileModel, node: Node) -> set[str]:
    """Return the identifiers an expression mentions (field names excluded)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            out.add(text_of(model, n))
        elif n.type == "field_expression":
            arg = field(n, "argument")
            if arg is not None:
                stack.append(arg)
            continue
        stack.extend(n.named_children)
    return out


_WORD = re.compile(r"[A-Za-z_]\w*")


def fresh_name(model: FileModel, fn: Function, base: str, taken: set[str] | None = None) -> str:
    """Return `base` (or `base_2`, ...) when no identifier of the function, file macros or `taken` uses it."""
    words = set(_WORD.findall(model.text[fn.base : fn.base + fn.length].decode("utf-8", "replace")))
    words |= set(model.macros) | set(model.constants) | (taken or set())
    name = base
    n = 2
    while name in words:
        name = f"{base}_{n}"
        n += 1
    return name


def variable_type(fn: Function, name: str) -> str | None:
    """Return the declared type of a parameter or local variable."""
    p = fn.param(name)
    if p is not None:
        return p.type
    return fn.locals.get(name)


def element_type(fn: Function, name: str) -> str | None:
    """Return the element type of a pointer parameter, a local array or a shared array."""
    p = fn.param(name)
    if p is not None:
        return bare_type(p.base_type or p.type) if p.is_pointer else None
    for s in fn.shared:
        if s.name == name:
            return bare_type(s.element_type)
    local = fn.locals.get(name)
    if local is not None and ("[" in local or "*" in local):
        return bare_type(local)
    return None


def definitions(model: FileModel, fn: Function, name: str) -> tuple[list[Node], int]:
    """Return the initializers of `name`'s declarations and how many other writes (assignments, `++`) it has."""
    memo: dict[tuple[int, int, str], tuple[tuple[Node, ...], int]] = model.memo.setdefault(f"{__name__}.defs", {})
    key = (fn.base, fn.length, name)
    if key not in memo:
        found, count = _definitions(model, fn, name)
        memo[key] = (tuple(found), count)
    kept, writes = memo[key]
    return list(kept), writes


def _definitions(model: FileModel, fn: Function, name: str) -> tuple[list[Node], int]:
    values: list[Node] = []
    others = 0
    for node in identifier_nodes(model, fn, name):
        parent = node.parent
        if parent is None:
            continue
        t = parent.type
        bare = t == "declaration" and any(_same(d, node) for d in parent.children_by_field_name("declarator"))
        written = (
            bare or t == "update_expression" or (t == "assignment_expression" and _same(field(parent, "left"), node))
        )
        if t == "init_declarator" and _same(field(parent, "declarator"), node):
            value = field(parent, "value")
            if value is not None:
                values.append(value)
        elif written:
            others += 1
    return values, others


def _same(a: Node | None, b: Node) -> bool:
    return a is not None and a.start_byte == b.start_byte and a.end_byte == b.end_byte


def single_definition(model: FileModel, fn: Function, name: str) -> Node | None:
    """Return the initializer of a local variable that is declared once with a value and never written again."""
    if fn.param(name) is not None:
        return None
    values, others = definitions(model, fn, name)
    if len(values) == 1 and others == 0:
        return values[0]
    return None


def is_thread_x(model: FileModel, fn: Function, node: Node | None, depth: int = 0) -> bool:
    """Return whether an expression is `threadIdx.x` (directly or through a variable defined once as it)."""
    node = unparen(node)
    if node is None or depth > 3:
        return False
    if node.type == "field_expression":
        return clean(text_of(model, node)) in ("threadIdx.x", "threadIdx . x")
    if node.type == "cast_expression":
        return is_thread_x(model, fn, field(node, "value"), depth + 1)
    if node.type == "identifier":
        value = single_definition(model, fn, text_of(model, node))
        return value is not None and is_thread_x(model, fn, value, depth + 1)
    return False


# -- expression types ---------------------------------------------------------------------------------------------

_BUILTIN_VECTORS = {"threadIdx", "blockIdx", "blockDim", "gridDim"}


def literal_type(text: str) -> CType | None:
    """Return the type of a numeric literal."""
    t = text.strip().replace("'", "")
    low = t.lower()
    if low.startswith("0x"):
        suffix = re.sub(r"^0x[0-9a-f]*", "", low)
        return CType("unsigned" if "u" in suffix else "signed", 64 if "l" in suffix else 32)
    if "." in t or (("e" in low) and not low.startswith("0x")) or low.endswith("f"):
        return CType("float", 32 if low.endswith("f") else 64)
    suffix = re.sub(r"^[0-9]*", "", low)
    return CType("unsigned" if "u" in suffix else "signed", 64 if "l" in suffix else 32)


def _promote(t: CType) -> CType:
    """Return the type after the integer promotions (narrow integers become `int`)."""
    return CType("signed", 32) if t.is_int and t.bits < 32 else t


def _arith(a: CType | None, b: CType | None) -> CType | None:
    """Return the type of binary arithmetic under the usual arithmetic conversions."""
    if a is None or b is None:
        return None
    if a.kind == "float" or b.kind == "float":
        return CType("float", max(x.bits for x in (a, b) if x.kind == "float"))
    a, b = _promote(a), _promote(b)
    if a.kind == b.kind:
        return CType(a.kind, max(a.bits, b.bits))
    u, s = (a, b) if a.kind == "unsigned" else (b, a)
    return CType("unsigned", u.bits) if u.bits >= s.bits else CType("signed", s.bits)


def expr_type(model: FileModel, fn: Function, node: Node | None, depth: int = 0) -> CType | None:
    """Return the arithmetic type of an expression, or None when it cannot be read."""
    node = unparen(node)
    if node is None or depth > 12:
        return None
    t = node.type
    if t == "number_literal":
        return literal_type(text_of(model, node))
    if t == "identifier":
        name = text_of(model, node)
        declared = variable_type(fn, name)
        if declared is not None:
            if "*" in declared or "[" in declared:
                return None
            return ctype(declared)
        if name in model.constants:
            return CType("signed", 32)
        return None
    if t == "field_expression":
        arg = field(node, "argument")
        if arg is not None and arg.type == "identifier" and text_of(model, arg) in _BUILTIN_VECTORS:
            return CType("unsigned", 32)
        return None
    if t == "cast_expression":
        return ctype(text_of(model, field(node, "type")))
    if t == "subscript_expression":
        arg = unparen(field(node, "argument"))
        if arg is not None and arg.type == "identifier":
            return ctype(element_type(fn, text_of(model, arg)))
        return None
    if t == "unary_expression":
        op = operator_of(node)
        inner = expr_type(model, fn, field(node, "argument"), depth + 1)
        if op == "!":
            return CType("signed", 32)
        return _promote(inner) if inner is not None else None
    if t == "binary_expression":
        op = operator_of(node)
        if op in ("<", ">", "<=", ">=", "==", "!=", "&&", "||"):
            return CType("signed", 32)
        left = expr_type(model, fn, field(node, "left"), depth + 1)
        if op in ("<<", ">>"):
            return _promote(left) if left is not None else None
        return _arith(left, expr_type(model, fn, field(node, "right"), depth + 1))
    if t == "conditional_expression":
        return _arith(
            expr_type(model, fn, field(node, "consequence"), depth + 1),
            expr_type(model, fn, field(node, "alternative"), depth + 1),
        )
    if t == "call_expression":
        callee = text_of(model, field(node, "function"))
        if callee.endswith("f") and callee in _FLOAT_CALLS:
            return CType("float", 32)
        return None
    return None


_FLOAT_CALLS = {"sqrtf", "expf", "logf", "fabsf", "fmaxf", "fminf", "rsqrtf", "__expf", "__logf", "powf", "__powf"}


# -- integer ranges -----------------------------------------------------------------------------------------------

_THREAD_LIMITS = ranges.BUILTIN_LIMITS


def launches_of(model: FileModel, kernel: str) -> list[tuple[Function, Launch]]:
    """Return a kernel's launches in its file, else the one its annotation or problem file gives (`spec_launch`)."""
    from warpwise.analyzers import facts

    return facts.launches_of(model, kernel)


def geometry_limits(model: FileModel, fn: Function) -> dict[str, tuple[int, int]]:
    """Return ranges of the built-in index variables, narrowed by the launches in this file when all are constant."""
    limits = dict(_THREAD_LIMITS)
    launches = launches_of(model, fn.name)
    if not launches:
        return limits
    blocks = [launch.block_value for _, launch in launches]
    grids = [launch.grid_value for _, launch in launches]
    if all(b is not None for b in blocks):
        for axis, i in (("x", 0), ("y", 1), ("z", 2)):
            hi = max(b[i] for b in blocks if b is not None)
            lo = min(b[i] for b in blocks if b is not None)
            limits[f"blockDim.{axis}"] = (lo, hi)
            limits[f"threadIdx.{axis}"] = (0, hi - 1)
    if all(g is not None for g in grids):
        for axis, i in (("x", 0), ("y", 1), ("z", 2)):
            hi = max(g[i] for g in grids if g is not None)
            lo = min(g[i] for g in grids if g is not None)
            limits[f"gridDim.{axis}"] = (lo, hi)
            limits[f"blockIdx.{axis}"] = (0, hi - 1)
    return limits


def int_range(
    model: FileModel, fn: Function, node: Node | None, limits: dict[str, tuple[int, int]], depth: int = 0
) -> tuple[int, int] | None:
    """Return bounds (low, high) that hold for an integer expression in every thread, or None when unknown.

    Built-in index variables have their hardware (or launch) ranges; local variables defined once are followed to
    their initializer; anything else (parameters, loop variables, loads) is unknown. Arithmetic that could leave
    the 64-bit range is unknown. The walk and the arithmetic are the evaluator's (`expr.ranges.IntRanges`); what
    names and types mean is this module's C type system.
    """
    return _IntRanges(model, fn, limits).walk(node, depth)


class _IntRanges(ranges.IntRanges):
    """Integer ranges of one function's expressions, its names and types read with this module's C types."""

    def __init__(self, model: FileModel, fn: Function, limits: dict[str, tuple[int, int]]) -> None:
        super().__init__(limits)
        self.model = model
        self.fn = fn

    def node_text(self, node: Node) -> str:
        return text_of(self.model, node)

    def constant(self, name: str) -> int | None:
        if name in self.model.constants and variable_type(self.fn, name) is None:
            return self.model.constants[name]
        return None

    def definition(self, name: str) -> tuple[Node, ranges.IntType] | None:
        value = single_definition(self.model, self.fn, name)
        declared = ctype(variable_type(self.fn, name))
        if value is None or declared is None or not declared.is_int:
            return None
        return value, (declared.bits, declared.kind == "signed")

    def cast_type(self, node: Node) -> ranges.IntType | None:
        target = ctype(text_of(self.model, node))
        return (target.bits, target.kind == "signed") if target is not None and target.is_int else None

    def element_type(self, array: Node) -> ranges.IntType | None:
        arg = unparen(array)
        if arg is None or arg.type != "identifier":
            return None
        elem = ctype(element_type(self.fn, text_of(self.model, arg)))
        if elem is None or not elem.is_int or elem.bits > 16:
            return None
        return elem.bits, elem.kind != "unsigned"

    def modulus(self, node: Node) -> int | None:
        return number_value(self.model, node)

    def unsigned(self, node: Node) -> bool:
        left = expr_type(self.model, self.fn, node)
        return left is not None and left.kind == "unsigned"


# -- launches -----------------------------------------------------------------------------------------------------


def launch_blocks(model: FileModel, fn: Function) -> tuple[list[tuple[int, int, int]] | None, str]:
    """Return the constant block shape of every launch of `fn` in this file (None with a reason when unknown)."""
    launches = launches_of(model, fn.name)
    if not launches:
        return None, f"no launch of `{fn.name}` in this file"
    out: list[tuple[int, int, int]] = []
    for host, launch in launches:
        if launch.block_value is None:
            return None, f"the launch in `{host.name}` uses block size `{launch.block}`, not a constant"
        b = launch.block_value
        out.append((b[0], b[1], b[2]))
    return out, ""


def launch_bound(model: FileModel, fn: Function) -> int | None:
    """Return the maximum block size named by `__launch_bounds__`, when it is a constant."""
    if not fn.launch_bounds:
        return None
    text = fn.launch_bounds[0].strip()
    v = parse_int_literal(text)
    if v is None:
        v = model.constants.get(text)
    return v


def launches_text(n: int) -> str:
    """Return `the launch` or `all N launches`."""
    return "the launch" if n == 1 else f"all {n} launches"


def is_kernel(fn: Function) -> bool:
    """Return whether the function is a `__global__` kernel."""
    return fn.kind is FunctionKind.KERNEL


# -- shared-memory tree reductions ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TreeReduction:
    """A loop that reduces a shared array pairwise with a barrier per step.

    `shape` is `sequential` (`for (s = blockDim.x / 2; s > 0; s >>= 1) if (tid < s) a[tid] += a[tid + s]`) or
    `interleaved` (`for (s = 1; s < blockDim.x; s *= 2) if (tid % (2 * s) == 0) a[tid] += a[tid + s]`).
    `combine` is the operator (`+`, `*`, `&`, `|`, `^`, `-`, ...) or the called function (`fmaxf`), and `form`
    says how it is written: `compound` (`a[t] += a[t + s]`), `binary` (`a[t] = a[t] + a[t + s]`) or `call`
    (`a[t] = fmaxf(a[t], a[t + s])`). `first` is the first stride when it is a constant (None: `blockDim.x / 2`);
    `covered` is the number of elements the loop reduces when constant (None: `blockDim.x`). `element_type` is
    the element type with template parameters bound (for checks); `element_text` is how the source spells it.
    """

    shape: str
    array: str
    tid: str
    var: str
    combine: str
    form: str
    element_type: str
    element_text: str
    first: int | None
    covered: int | None
    loop_id: int
    bound_span: Span
    statement_span: Span


def reduce_canon(model: FileModel, fn: Function) -> Canonicalizer:
    """Return the canonicalizer of a function: file constants folded, locals defined once replaced by their value."""
    memo = model.memo.setdefault("facts_reduce.canon", {})
    found = memo.get(fn.base)
    if found is None:
        found = Canonicalizer(model.text, model.constants, lambda name: single_definition(model, fn, name))
        memo[fn.base] = found
    return found


_SYNC = "__syncthreads()"


def _is_barrier(model: FileModel, stmt: Node) -> bool:
    """Return whether a statement is `__syncthreads();` (however it is spaced or commented)."""
    if stmt.type != "expression_statement":
        return False
    inner = [c for c in stmt.named_children if c.type != "comment"]
    return len(inner) == 1 and inner[0].type == "call_expression" and "".join(text_of(model, inner[0]).split()) == _SYNC


def _new_value(model: FileModel, canon: Canonicalizer, update: Node | None, var: str) -> Form | None:
    """Return the form of the value an update (`s >>= 1`, `s = s / 2`, `s *= 2`, `s += s`) gives `var`."""
    if update is not None and update.type == "expression_statement":
        inner = [c for c in update.named_children if c.type != "comment"]
        update = inner[0] if len(inner) == 1 else None
    if update is not None and update.type == "update_expression":
        arg = unparen(field(update, "argument"))
        if arg is None or arg.type != "identifier" or text_of(model, arg) != var:
            return None
        return Form.atom(var) + Form.const(1 if operator_of(update) == "++" else -1)
    if update is None or update.type != "assignment_expression":
        return None
    left = unparen(field(update, "left"))
    if left is None or left.type != "identifier" or text_of(model, left) != var:
        return None
    op = operator_of(update)
    right = canon.of(field(update, "right"))
    old = Form.atom(var)
    if op == "=":
        return right
    if op in ("+=", "-="):
        return old + (right if op == "+=" else right.scale(Fraction(-1)))
    if op == "*=":
        return old * right
    if op == "/=":
        return old.divide(right)
    k = right.int_value()
    if op in ("<<=", ">>=") and k is not None and 0 <= k < 31:
        return old.scale(Fraction(2**k)) if op == "<<=" else old.divide(Form.const(2**k))
    return None


def _compare(canon: Canonicalizer, node: Node | None) -> tuple[str, Node, Node] | None:
    """Return a comparison as (`<` or `<=` or `!=` or `==`, smaller side, larger side): `a > b` becomes `b < a`."""
    node = unparen(node)
    if node is None or node.type != "binary_expression":
        return None
    op, left, right = operator_of(node), field(node, "left"), field(node, "right")
    if left is None or right is None:
        return None
    if op in ("<", "<=", "==", "!="):
        return op, left, right
    if op == ">":
        return "<", right, left
    if op == ">=":
        return "<=", right, left
    return None


_LoopParts = tuple[Node, Node | None, Node, list[Node], Node]


def _loop_parts(model: FileModel, fn: Function, loop_id: int) -> _LoopParts | None:
    """Return (loop node, initial value, condition, body statements, update) of a `for` loop or a `while` loop
    whose variable is set just before it and updated as the body's last statement."""
    loop = fn.loops[loop_id]
    if loop.kind == "for":
        node = node_at(model, fn, loop.span, "for_statement")
        if node is None:
            return None
        init = field(node, "initializer")
        if init is None:
            return None
        if init.type == "declaration":
            decls = [d for d in init.children_by_field_name("declarator") if d.type == "init_declarator"]
            init_value = field(decls[0], "value") if len(decls) == 1 else None
            var_node = field(decls[0], "declarator") if len(decls) == 1 else None
        elif init.type == "assignment_expression" and operator_of(init) == "=":
            init_value, var_node = field(init, "right"), field(init, "left")
        else:
            return None
        cond, update = field(node, "condition"), field(node, "update")
        if var_node is None or cond is None or update is None:
            return None
        return node, init_value, cond, statements(field(node, "body")), update
    if loop.kind != "while":
        return None
    node = node_at(model, fn, loop.span, "while_statement")
    if node is None:
        return None
    body = statements(field(node, "body"))
    cond = condition_value(node)
    if len(body) < 2 or cond is None:
        return None
    update = body[-1]
    prev = node.prev_named_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_named_sibling
    init_value = None
    if prev is not None and prev.type == "declaration":
        decls = [d for d in prev.children_by_field_name("declarator") if d.type == "init_declarator"]
        if len(decls) == 1:
            init_value = field(decls[0], "value")
    elif prev is not None and prev.type == "expression_statement":
        inner = [c for c in prev.named_children if c.type != "comment"]
        if len(inner) == 1 and inner[0].type == "assignment_expression" and operator_of(inner[0]) == "=":
            init_value = field(inner[0], "right")
    return node, init_value, cond, body[:-1], update


def _loop_var(model: FileModel, fn: Function, loop_id: int, update: Node) -> str | None:
    """Return the variable a loop's update assigns."""
    loop = fn.loops[loop_id]
    if loop.var is not None:
        return loop.var
    if update.type == "expression_statement":
        inner = [c for c in update.named_children if c.type != "comment"]
        update = inner[0] if len(inner) == 1 else None
    left = unparen(field(update, "left")) if update is not None and update.type == "assignment_expression" else None
    return text_of(model, left) if left is not None and left.type == "identifier" else None


_BLOCK_X = Form.atom("blockDim.x")
_THREAD_X = Form.atom("threadIdx.x")


def tree_reduction(model: FileModel, fn: Function, loop_id: int) -> TreeReduction | None:
    """Return the tree reduction a loop performs, or None when the loop has another shape.

    Read semantically: `for` or `while`, any spacing and names, `blockDim.x / 2` or `blockDim.x >> 1`, strides
    halved or doubled in any spelling, commuted comparisons and operands, the thread index inline or in a local,
    and the interleaved tree guarded by `tid % (2 * s) == 0` or addressed by a strided index `i = 2 * s * tid`.
    """
    parts = _loop_parts(model, fn, loop_id)
    if parts is None:
        return None
    _, init_value, cond_node, body, update = parts
    var = _loop_var(model, fn, loop_id, update)
    if var is None or init_value is None:
        return None
    canon = reduce_canon(model, fn)
    # The loop variable is written by the loop itself: it must stay an atom, never be resolved to its first value.
    canon_var = Form.atom(var)
    if not body or not _is_barrier(model, body[-1]):
        return None
    body = body[:-1]
    index_local: tuple[str, Form] | None = None
    if len(body) == 2 and body[0].type == "declaration":
        decls = [d for d in body[0].children_by_field_name("declarator") if d.type == "init_declarator"]
        name_node = field(decls[0], "declarator") if len(decls) == 1 else None
        if name_node is None or name_node.type != "identifier":
            return None
        index_local = (text_of(model, name_node), canon.of(field(decls[0], "value")))
        body = body[1:]
    if len(body) != 1 or body[0].type != "if_statement" or field(body[0], "alternative") is not None:
        return None
    new = _new_value(model, canon, update, var)
    cond = _compare(canon, cond_node)
    guard = _compare(canon, condition_value(body[0]))
    if new is None or cond is None or guard is None:
        return None
    init = canon.of(init_value)
    halving = new == canon_var.divide(Form.const(2))
    doubling = new == canon_var.scale(Fraction(2))

    def form(n: Node) -> Form:
        f = canon.of(n)
        if index_local is not None and f == Form.atom(index_local[0]):
            return index_local[1]
        return f

    tid_node: Node | None = None
    bound_span: Span = (0, 0)
    own: Form | None = None
    if halving and cond[0] == "<" and canon.of(cond[1]).int_value() == 0 and form(cond[2]) == canon_var:
        if init == _BLOCK_X.divide(Form.const(2)):
            first = None
        elif init.int_value() is not None:
            first = init.int_value()
        else:
            return None
        if guard[0] != "<" or form(guard[2]) != canon_var or index_local is not None:
            return None
        tid_node = guard[1]
        shape, covered = "sequential", (2 * first if first is not None else None)
        zero = unparen(cond[1])
        if zero is None:
            return None
        bound_span = (zero.start_byte - fn.base, zero.end_byte - fn.base)
        own = canon.of(tid_node)
    elif doubling and cond[0] == "<" and form(cond[1]) == canon_var and init.int_value() == 1:
        bound = canon.of(cond[2])
        if bound == _BLOCK_X:
            covered = None
        elif bound.int_value() is not None:
            covered = bound.int_value()
        else:
            return None
        shape, first = "interleaved", None
        pair = canon_var.scale(Fraction(2))
        if guard[0] == "==" and (canon.of(guard[1]).int_value() == 0 or canon.of(guard[2]).int_value() == 0):
            # The guard is `tid % (2 * s) == 0` (either side of `==`).
            mod = unparen(guard[1] if canon.of(guard[2]).int_value() == 0 else guard[2])
            if mod is None or mod.type != "binary_expression" or operator_of(mod) != "%":
                return None
            if canon.of(field(mod, "right")) != pair or index_local is not None:
                return None
            tid_node = field(mod, "left")
            own = canon.of(tid_node)
        elif guard[0] == "<" and form(guard[2]) == bound:
            # The strided index `i = 2 * s * tid` addresses the left element of each pair: `if (i < n)`.
            own = form(guard[1])
            tid_node = _thread_factor(model, fn, canon, guard[1] if index_local is None else None, index_local)
            if tid_node is None or own != pair * canon.of(tid_node):
                return None
        else:
            return None
    else:
        return None
    if canon.of(tid_node) != _THREAD_X:
        return None
    tid = clean(text_of(model, unparen(tid_node)))
    consequence = statements(field(body[0], "consequence"))
    if len(consequence) != 1 or own is None:
        return None
    found = _combine(model, fn, canon, consequence[0], own, canon_var, form)
    if found is None:
        return None
    array, combine, kind, span = found
    shared = next((s for s in fn.shared if s.name == array), None)
    if shared is None:
        return None
    # The model binds template parameters (`T` -> `float` from a launch); generated code must keep the source type.
    decl = node_at(model, fn, shared.span, "declaration")
    type_node = field(decl, "type")
    source = bare_type(text_of(model, type_node)) if type_node is not None else bare_type(shared.element_type)
    return TreeReduction(
        shape,
        array,
        tid,
        var,
        combine,
        kind,
        bare_type(shared.element_type),
        source,
        first,
        covered,
        loop_id,
        bound_span,
        span,
    )


def _thread_factor(
    model: FileModel,
    fn: Function,
    canon: Canonicalizer,
    expr: Node | None,
    index_local: tuple[str, Form] | None,
) -> Node | None:
    """Return the identifier (or `threadIdx.x`) that a strided index multiplies: `tid` in `2 * s * tid`."""
    if expr is None and index_local is not None:
        decl_values, _ = definitions(model, fn, index_local[0])
        expr = decl_values[0] if len(decl_values) == 1 else None
    stack = [expr] if expr is not None else []
    while stack:
        n = stack.pop()
        if n.type in ("identifier", "field_expression") and canon.of(n) == _THREAD_X:
            return n
        if n.type != "field_expression":
            stack.extend(n.named_children)
    return None


def _combine(
    model: FileModel,
    fn: Function,
    canon: Canonicalizer,
    stmt: Node,
    own: Form,
    stride: Form,
    form: Any,
) -> tuple[str, str, str, Span] | None:
    """Return (array, combine, form, span) of `a[t] op= a[t + s]`, `a[t] = a[t] op a[t + s]` or `a[t] = f(..)`."""
    if stmt.type != "expression_statement":
        return None
    inner = [c for c in stmt.named_children if c.type != "comment"]
    if len(inner) != 1 or inner[0].type != "assignment_expression":
        return None
    assign = inner[0]
    left = unparen(field(assign, "left"))
    if left is None or left.type != "subscript_expression":
        return None
    array_node = unparen(field(left, "argument"))
    if array_node is None or array_node.type != "identifier":
        return None
    array = text_of(model, array_node)
    if not any(s.name == array for s in fn.shared):
        return None
    other_index = own + stride

    def element(n: Node | None, index: Form) -> bool:
        n = unparen(n)
        if n is None or n.type != "subscript_expression":
            return False
        arg = unparen(field(n, "argument"))
        if arg is None or arg.type != "identifier" or text_of(model, arg) != array:
            return False
        idx = field(n, "indices") or field(n, "index")
        if idx is not None and idx.type == "subscript_argument_list":
            items = [c for c in idx.named_children if c.type != "comment"]
            idx = items[0] if len(items) == 1 else None
        return idx is not None and form(idx) == index

    if not element(left, own):
        return None
    op = operator_of(assign)
    right = unparen(field(assign, "right"))
    if right is None or op is None:
        return None
    span = (stmt.start_byte - fn.base, stmt.end_byte - fn.base)
    if op != "=":
        if element(right, other_index):
            return array, op[:-1], "compound", span
        return None
    if right.type == "binary_expression":
        lhs, rhs = field(right, "left"), field(right, "right")
        op2 = operator_of(right) or "?"
        if element(lhs, own) and element(rhs, other_index):
            return array, op2, "binary", span
        if op2 in ("+", "*", "&", "|", "^") and element(rhs, own) and element(lhs, other_index):
            return array, op2, "binary", span
        return None
    arg_list = field(right, "arguments")
    if right.type == "call_expression" and arg_list is not None:
        args = [a for a in arg_list.named_children if a.type != "comment"]
        if len(args) == 2 and element(args[0], own) and element(args[1], other_index):
            return array, clean(text_of(model, field(right, "function"))), "call", span
    return None


# -- atomics ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AtomicTarget:
    """The address and value of an `atomicAdd(address, value)` call, read from its syntax.

    `form` is `address` (`&a[i]`), `offset` (`a + i`) or `pointer` (`a`); `index_span` is the span of `i`
    (None for `pointer`). `statement_span` is the expression statement holding the call when its result is
    unused. `leader_guarded` says the call runs under `if (x == 0)` (one thread per group already).
    """

    base: str
    base_span: Span
    address_span: Span
    form: str
    index: str
    index_span: Span | None
    value: str
    value_span: Span
    call_span: Span
    statement_span: Span | None
    leader_guarded: bool


def _rel(fn: Function, node: Node) -> Span:
    return (node.start_byte - fn.base, node.end_byte - fn.base)


def atomic_target(model: FileModel, fn: Function, call_span: Span) -> AtomicTarget | None:
    """Return the target of an `atomicAdd` call through a pointer parameter of a kernel (global memory), or None
    for other shapes; a device function's pointer parameters may point to shared memory."""
    if not is_kernel(fn):
        return None
    call = node_at(model, fn, call_span, "call_expression")
    args_node = field(call, "arguments")
    if call is None or args_node is None:
        return None
    args = [a for a in args_node.named_children if a.type != "comment"]
    if len(args) != 2:
        return None
    addr = unparen(args[0])
    if addr is None:
        return None
    index: Node | None = None
    if addr.type == "pointer_expression" and operator_of(addr) == "&":
        sub = unparen(field(addr, "argument"))
        if sub is None or sub.type != "subscript_expression":
            return None
        base_node = unparen(field(sub, "argument"))
        indices = field(sub, "indices")
        idx = [c for c in indices.named_children if c.type != "comment"] if indices is not None else []
        if len(idx) != 1:
            return None
        index, form = idx[0], "address"
    elif addr.type == "binary_expression" and operator_of(addr) == "+":
        base_node, index = unparen(field(addr, "left")), field(addr, "right")
        other = unparen(index)
        if (
            (base_node is None or base_node.type != "identifier" or fn.param(text_of(model, base_node)) is None)
            and other is not None
            and other.type == "identifier"
        ):
            # `i + p` is the same address as `p + i`.
            base_node, index = other, field(addr, "left")
        form = "offset"
    elif addr.type == "identifier":
        base_node, form = addr, "pointer"
    else:
        return None
    if base_node is None or base_node.type != "identifier":
        return None
    base = text_of(model, base_node)
    param = fn.param(base)
    if param is None or not param.is_pointer:
        return None
    parent = call.parent
    statement = parent if parent is not None and parent.type == "expression_statement" else None
    guarded = False
    node = call.parent
    while node is not None and node.type != "function_definition":
        if node.type == "if_statement":
            cond = condition_value(node)
            if (
                cond is not None
                and cond.type == "binary_expression"
                and operator_of(cond) == "=="
                and (number_value(model, field(cond, "right")) == 0 or number_value(model, field(cond, "left")) == 0)
            ):
                guarded = True
        node = node.parent
    return AtomicTarget(
        base,
        _rel(fn, base_node),
        _rel(fn, args[0]),
        form,
        clean(text_of(model, index)) if index is not None else "0",
        _rel(fn, index) if index is not None else None,
        clean(text_of(model, args[1])),
        _rel(fn, args[1]),
        _rel(fn, call),
        _rel(fn, statement) if statement is not None else None,
        guarded,
    )


def is_uniform(model: FileModel, fn: Function, node: Node | None, depth: int = 0) -> bool:
    """Return whether an expression has the same value in every thread of a block (constants, kernel parameters,
    `blockIdx`, `blockDim`, `gridDim`, and locals defined once from those)."""
    node = unparen(node)
    if node is None or depth > 8:
        return False
    t = node.type
    if t == "number_literal":
        return True
    if t == "field_expression":
        text = clean(text_of(model, node)).replace(" ", "")
        if text.startswith(("blockIdx.", "blockDim.", "gridDim.")):
            return True
        # A member of a struct the kernel takes by value (`params.dstate`): one copy of the argument for all threads.
        obj, op = node.child_by_field_name("argument"), node.child_by_field_name("operator")
        return (
            obj is not None
            and op is not None
            and op.type == "."
            and obj.type == "identifier"
            and fn.param(text_of(model, obj)) is not None
            and is_uniform(model, fn, obj, depth + 1)
        )
    if t == "identifier":
        name = text_of(model, node)
        p = fn.param(name)
        if p is not None:
            # Kernel arguments are the same for every thread; a device function's are whatever each caller passes.
            return not p.is_pointer and is_kernel(fn)
        if name in model.constants and variable_type(fn, name) is None:
            return True
        value = single_definition(model, fn, name)
        return value is not None and is_uniform(model, fn, value, depth + 1)
    if t in ("binary_expression", "cast_expression", "unary_expression", "conditional_expression"):
        children = [c for c in node.named_children if c.type not in ("comment", "type_descriptor")]
        return all(is_uniform(model, fn, c, depth + 1) for c in children)
    return False


def reads_memory(node: Node) -> bool:
    """Return whether an expression loads through a subscript or a dereference."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "subscript_expression" or (n.type == "pointer_expression" and n.child(0).type == "*"):
            return True
        stack.extend(n.named_children)
    return False


def top_level_item(node: Node) -> Node:
    """Return the child of the translation unit that holds a node (a function, template or namespace)."""
    while node.parent is not None and node.parent.type != "translation_unit":
        node = node.parent
    return node


# -- two-pass softmax ---------------------------------------------------------------------------------------------


def enclosing_loops(fn: Function, rel: Span) -> list[int]:
    """Return the ids of the loops around a span, innermost first."""
    around = [lp for lp in fn.loops if lp.body_span[0] <= rel[0] and rel[1] <= lp.body_span[1]]
    return [lp.id for lp in sorted(around, key=lambda lp: -lp.depth)]


def division_type(model: FileModel, fn: Function, node: Node) -> CType | None:
    """Return the type of a binary arithmetic expression; a `double` operand makes it `double` even when the other
    operand's type is not known."""
    left = expr_type(model, fn, field(node, "left"))
    right = expr_type(model, fn, field(node, "right"))
    if CType("float", 64) in (left, right):
        return CType("float", 64)
    return _arith(left, right)


# -- scalar half arithmetic ---------------------------------------------------------------------------------------

_GLOBAL_INDEX = Form.atom("blockIdx.x") * Form.atom("blockDim.x") + Form.atom("threadIdx.x")


def is_global_index(model: FileModel, node: Node | None) -> bool:
    """Return whether an expression computes `blockIdx.x * blockDim.x + threadIdx.x`, however it is written."""
    if node is None:
        return False
    return Canonicalizer(model.text, model.constants).of(node) == _GLOBAL_INDEX


# -- cheap node lookup --------------------------------------------------------------------------------------------
#
# Matchers run on every keystroke, and a tree-sitter query over a whole function costs far more than finding a few
# byte positions with a regular expression and asking the tree for the node there. These helpers find operators
# and identifiers that way; positions inside comments and strings resolve to comment/string nodes and are skipped.

DIVIDE = re.compile(rb"(?<![/*])/(?![/*=])")


def binary_nodes(model: FileModel, fn: Function, pattern: re.Pattern[bytes], within: Span | None = None) -> list[Node]:
    """Return the binary expressions whose operator token sits where `pattern` matches in the function's text
    (optionally only inside a span relative to the function)."""
    lo, hi = (fn.base, fn.base + fn.length) if within is None else fn.span(within)
    root = tree_of(model).root_node
    out = []
    for m in pattern.finditer(model.text, lo, hi):
        tok = root.descendant_for_byte_range(m.start(), m.end())
        parent = tok.parent if tok is not None else None
        if parent is None or parent.type != "binary_expression":
            continue
        op = parent.child_by_field_name("operator")
        if op is not None and op.start_byte == m.start():
            out.append(parent)
    return out


def identifier_nodes(model: FileModel, fn: Function, name: str) -> list[Node]:
    """Return the identifier nodes spelling `name` in a function (not field names, comments or strings).

    Several cards ask for the same names of one kernel (a pass's bound, a local's definition), so each answer is
    kept on the model."""
    memo: dict[tuple[int, int, str], tuple[Node, ...]] = model.memo.setdefault(f"{__name__}.identifier_nodes", {})
    key = (fn.base, fn.length, name)
    found = memo.get(key)
    if found is None:
        root = tree_of(model).root_node
        out = []
        pattern = re.compile(rb"(?<![\w.])" + re.escape(name.encode()) + rb"\b")
        for m in pattern.finditer(model.text, fn.base, fn.base + fn.length):
            node = root.descendant_for_byte_range(m.start(), m.end())
            if node is not None and node.type == "identifier" and node.start_byte == m.start():
                out.append(node)
        found = memo[key] = tuple(out)
    return list(found)
