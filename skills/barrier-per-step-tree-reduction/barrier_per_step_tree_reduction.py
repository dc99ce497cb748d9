"""Barrier-per-step tree reduction: a shared-memory tree in any textbook form becomes warp shuffles.

The recogniser reads what a loop over a shared array computes, not how it is spelled. It finds a loop over a
step variable `s` (`for` or `while`, `s` doubling or halving, any start and bound such as `blockDim.x / 2`, a
macro or a constant) whose body is one guarded combine of two elements of a shared array `a`, then
`__syncthreads()`: `if (g) a[I] += a[J];` (or `a[I] = a[I] + a[J]`), or the max and min forms
`if (g && a[J] > a[I]) a[I] = a[J];`, `a[I] = fmaxf(a[I], a[J])`, with `g`, `I` and `J` any integer expressions of
the thread index, `s`, the block size and constants (locals such as `int index = 2 * s * tid;` are read through
their definition). The loop must be preceded by `__syncthreads()` and followed only by reads of `a[0]`.

It then runs the tree: for every block size the kernel may be launched with (the one the loop's constants fix,
else every power of two from 32 to 1024), it evaluates the guard and the indices of every thread at every step
with C's integer rules and follows which inputs each slot holds. The loop is a tree reduction when no step reads a
slot another thread writes in the same step, no slot is written twice, and `a[0]` ends up holding every input
`a[0..B)` exactly once. So interleaved addressing (`tid % (2 * s) == 0`), strided indices (`index = 2 * s * tid`)
and sequential addressing (`tid < s`, halving) are all recognised, and a loop that drops or repeats an element is
not.

The rewrite replaces the loop by a warp-shuffle reduction of the same `B` values: each warp combines its 32
values with `__shfl_down_sync`, lane 0 of each warp stores its result in `a[warp]`, and the first warp combines
those; `a[0]` holds the result as before, followed by `__syncthreads()`, so the code after the loop is unchanged.
Exactness: max and min are exact; a float sum is re-associated (the tree's pairing changes), so results change
within the rounding of a sum of B terms, and the fix is `unsafe`. The block size must be a multiple of 32 (full
warps for the shuffles) and a power of two in the forms whose tree needs it; the kernel must be 1-D in threads.

`generate_sequential` writes a recognised tree with sequential addressing instead (the threads below each step
combine); the `warp-divergent-branch` card offers it as the fix of an interleaved tree's divergent guard.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.expr.cexpr import c_div, c_mod
from warpwise.analyzers.facts import function_node
from warpwise.analyzers.facts_memory import node_text, squash, unparen
from warpwise.analyzers.function_nodes import of_type
from warpwise.analyzers.model import FileModel, Function, FunctionKind
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher
from warpwise.skills.rewrite import Edit, RewriteContext

Node = Any
BLOCK_SIZES = (32, 64, 128, 256, 512, 1024)
_MAX_STEPS = 64


class _Unknown(Exception):
    """An expression the evaluator cannot read."""


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def _within(body: Node, model: FileModel, fn: Function, types: tuple[str, ...]) -> list[Node]:
    """Return the nodes of the given types inside a kernel's body, in the order a pre-order walk visits them.

    From the function's one shared query (`function_nodes.of_type`) rather than a Python walk of the body."""
    lo, hi = body.start_byte, body.end_byte
    found = [n for t in types for n in of_type(model, fn, t) if lo <= n.start_byte and n.end_byte <= hi]
    if len(types) > 1:
        found.sort(key=lambda n: (n.start_byte, -n.end_byte))
    return found


def _statements(node: Node | None) -> list[Node]:
    if node is None:
        return []
    if node.type == "compound_statement":
        return [c for c in node.named_children if c.type != "comment"]
    return [node]


def _condition(node: Node | None) -> Node | None:
    if node is not None and node.type == "condition_clause":
        items = [c for c in node.named_children if c.type != "comment"]
        node = items[0] if len(items) == 1 else None
    return unparen(node) if node is not None else None


class _Eval:
    """Evaluate integer expressions of one kernel for one thread, step and block size."""

    def __init__(self, model: FileModel, fn: Function, body: Node) -> None:
        self.model = model
        self.fn = fn
        self.defs: dict[str, list[Node | None]] = {}
        for n in _within(body, model, fn, ("init_declarator", "assignment_expression", "update_expression")):
            if n.type == "init_declarator":
                d = n.child_by_field_name("declarator")
                if d is not None and d.type == "identifier":
                    self.defs.setdefault(self.text(d), []).append(n.child_by_field_name("value"))
            elif n.type in ("assignment_expression", "update_expression"):
                t = unparen(n.child_by_field_name("left") or n.child_by_field_name("argument"))
                if t is not None and t.type == "identifier":
                    self.defs.setdefault(self.text(t), []).append(None)
        self._compiled: dict[tuple[int | None, int], Callable[[dict[str, int]], int]] = {}

    def text(self, node: Node) -> str:
        return node_text(self.model, node)

    def value(self, node: Node | None, env: dict[str, int], depth: int = 0) -> int:
        """Return the integer value of an expression; raise _Unknown when it cannot be read.

        The simulation evaluates the same few expressions for every thread, step and block size, so each is read
        from the tree once into a closure (`_compile`) that is then called with each environment.
        """
        return self._compile(node, depth)(env)

    def _compile(self, node: Node | None, depth: int) -> Callable[[dict[str, int]], int]:
        key = (None if node is None else node.id, depth)
        fn = self._compiled.get(key)
        if fn is None:
            fn = self._compiled[key] = self._read(node, depth)
        return fn

    def _later(self, node: Node | None, depth: int) -> Callable[[dict[str, int]], int]:
        """Return a closure that reads `node` when it is first called (a definition or operand not always needed)."""
        compiled: list[Callable[[dict[str, int]], int]] = []

        def later(env: dict[str, int]) -> int:
            if not compiled:
                compiled.append(self._compile(node, depth))
            return compiled[0](env)

        return later

    def _read(self, node: Node | None, depth: int) -> Callable[[dict[str, int]], int]:
        if node is None or depth > 32:
            return _raise_unknown
        node = unparen(node)
        t = node.type
        if t == "number_literal":
            raw = self.text(node).rstrip("uUlL")
            try:
                v = int(raw, 0)
            except ValueError:
                return _raise_unknown
            return lambda env: v
        if t == "identifier":
            name = self.text(node)
            d = self.defs.get(name)
            fallback: Callable[[dict[str, int]], int]
            if d is not None:
                if len(d) != 1 or d[0] is None:
                    fallback = _raise_unknown
                else:
                    fallback = self._later(d[0], depth + 1)
            elif name in self.model.constants:
                c = int(self.model.constants[name])
                fallback = lambda env: c  # noqa: E731
            else:
                fallback = _raise_unknown
            return lambda env: env[name] if name in env else fallback(env)
        if t == "field_expression":
            txt = squash(self.text(node))
            return lambda env: env[txt] if txt in env else _raise_unknown(env)
        if t == "cast_expression":
            return self._compile(node.child_by_field_name("value"), depth + 1)
        if t == "unary_expression":
            op = self.text(node.child_by_field_name("operator"))
            arg = self._compile(node.child_by_field_name("argument"), depth + 1)

            def unary(env: dict[str, int]) -> int:
                v = arg(env)
                return {"-": -v, "+": v, "!": int(not v), "~": ~v}[op]

            return unary
        if t == "binary_expression":
            op = self.text(node.child_by_field_name("operator"))
            left = self._compile(node.child_by_field_name("left"), depth + 1)
            if op in ("&&", "||"):
                right = self._later(node.child_by_field_name("right"), depth + 1)  # it may not be needed

                def logical(env: dict[str, int]) -> int:
                    a = left(env)
                    if op == "&&" and not a:
                        return 0
                    if op == "||" and a:
                        return 1
                    return _binary(op, a, right(env))

                return logical
            # Both operands are always evaluated, the left first; the operator is looked up once.
            other = self._compile(node.child_by_field_name("right"), depth + 1)
            f = _BINARY.get(op)
            if f is None or op in ("/", "%"):
                return lambda env: _binary(op, left(env), other(env))
            return lambda env: int(f(left(env), other(env)))
        return _raise_unknown


def _raise_unknown(env: dict[str, int]) -> int:
    raise _Unknown


def _binary(op: str, a: int, b: int) -> int:
    if op in ("/", "%") and b == 0:
        raise _Unknown
    f = _BINARY.get(op)
    if f is None:
        raise _Unknown
    return int(f(a, b))


_BINARY: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: int(c_div(a, b)),
    "%": lambda a, b: int(c_mod(a, b)),
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "&&": lambda a, b: int(bool(a and b)),
    "||": lambda a, b: int(bool(a or b)),
}


@dataclass(frozen=True)
class TreeLoop:
    """A recognised tree reduction over a shared array."""

    array: str
    elem_type: str
    op: str  # "sum", "max" or "min"
    span: tuple[int, int]  # the loop statement (and, for a `while`, its step variable's declaration before it)
    blocks: tuple[int, ...]  # block sizes for which the loop is a full tree reduction
    fixed: int | None  # the block size the loop's own constants fix (None when it reads `blockDim.x`)
    form: str  # "interleaved", "strided index" or "sequential" (for messages)


def _is_sync(s: Node, ev: _Eval) -> bool:
    return s.type == "expression_statement" and squash(ev.text(s)) == "__syncthreads();"


def _combine(ev: _Eval, stmt: Node, array: str) -> tuple[Node | None, Node, Node, str] | None:
    """Return (guard, I, J, op) of `if (g) a[I] += a[J];` and its max/min forms, else None."""
    guard = None
    if stmt.type == "if_statement":
        if stmt.child_by_field_name("alternative") is not None:
            return None
        guard = _condition(stmt.child_by_field_name("condition"))
        # Locals declared in the guarded block (`const int j = tid + s;`) are read through their definitions.
        body = [x for x in _statements(stmt.child_by_field_name("consequence")) if x.type != "declaration"]
        if len(body) != 1:
            return None
        stmt = body[0]
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    e = unparen(stmt.named_children[0])
    if e.type != "assignment_expression":
        return None
    left, right = unparen(e.child_by_field_name("left")), unparen(e.child_by_field_name("right"))
    op = ev.text(e.child_by_field_name("operator"))
    i = _index(ev, left, array)
    if i is None or right is None:
        return None
    if op == "+=":
        j = _index(ev, right, array)
        return (guard, i, j, "sum") if j is not None else None
    if op != "=":
        return None
    if right.type == "binary_expression" and ev.text(right.child_by_field_name("operator")) == "+":
        a, b = unparen(right.child_by_field_name("left")), unparen(right.child_by_field_name("right"))
        for x, y in ((a, b), (b, a)):
            if squash(ev.text(x)) == squash(ev.text(left)):
                j = _index(ev, y, array)
                if j is not None:
                    return guard, i, j, "sum"
        return None
    if right.type == "call_expression":
        name = ev.text(right.child_by_field_name("function"))
        args = [c for c in right.child_by_field_name("arguments").named_children if c.type != "comment"]
        kind = {"fmaxf": "max", "max": "max", "fmax": "max", "fminf": "min", "min": "min", "fmin": "min"}.get(name)
        if kind and len(args) == 2:
            for x, y in ((args[0], args[1]), (args[1], args[0])):
                if squash(ev.text(unparen(x))) == squash(ev.text(left)):
                    j = _index(ev, unparen(y), array)
                    if j is not None:
                        return guard, i, j, kind
        return None
    # `if (g && a[J] > a[I]) a[I] = a[J];`
    j = _index(ev, right, array)
    if j is None or guard is None:
        return None
    parts = _conjuncts(ev, guard)
    for k, c in enumerate(parts):
        if c.type != "binary_expression":
            continue
        o = ev.text(c.child_by_field_name("operator"))
        x, y = squash(ev.text(c.child_by_field_name("left"))), squash(ev.text(c.child_by_field_name("right")))
        lt, rt = squash(ev.text(left)), squash(ev.text(right))
        kind = None
        if (o in (">", ">=") and (x, y) == (rt, lt)) or (o in ("<", "<=") and (x, y) == (lt, rt)):
            kind = "max"
        elif (o in ("<", "<=") and (x, y) == (rt, lt)) or (o in (">", ">=") and (x, y) == (lt, rt)):
            kind = "min"
        if kind:
            rest = parts[:k] + parts[k + 1 :]
            return (_Conj(rest) if rest else None), i, j, kind
    return None


class _Conj:
    """A conjunction of guard parts (what is left of a guard once the max comparison is taken out)."""

    def __init__(self, parts: list[Node]) -> None:
        self.parts = parts


def _conjuncts(ev: _Eval, cond: Node) -> list[Node]:
    cond = unparen(cond)
    if cond.type == "binary_expression" and ev.text(cond.child_by_field_name("operator")) == "&&":
        return _conjuncts(ev, cond.child_by_field_name("left")) + _conjuncts(ev, cond.child_by_field_name("right"))
    return [cond]


def _index(ev: _Eval, node: Node | None, array: str) -> Node | None:
    node = unparen(node) if node is not None else None
    if node is None or node.type != "subscript_expression":
        return None
    arr = node.child_by_field_name("argument")
    if arr is None or ev.text(arr) != array:
        return None
    idx = node.child_by_field_name("indices")
    items = [c for c in idx.named_children if c.type != "comment"] if idx is not None else []
    return items[0] if len(items) == 1 else None


def _simulate(
    ev: _Eval, loop: dict[str, Any], B: int, tid_names: set[str], size: int | None, first: list[tuple[int, int, int]]
) -> bool:
    """Run the tree for block size B; return whether a[0] ends up holding each of a[0..B) exactly once.

    `first` receives the (thread, written slot, read slot) triples of the first step (the tree's addressing).
    A slot's content is the set of inputs it holds (a bit mask) and whether it holds any of them twice: combining
    two slots that share an input, or one that already holds an input twice, holds it twice forever after.
    """
    held = {i: 1 << i for i in range(B)}
    twice: set[int] = set()
    base = {"blockDim.x": B, "blockDim.y": 1, "blockDim.z": 1}
    var = loop["var"]
    guard = _guard_fn(ev, loop["guard"])
    index_i, index_j = ev._compile(loop["i"], 0), ev._compile(loop["j"], 0)
    names = tuple(tid_names)
    s = ev.value(loop["init"], base)
    steps = 0
    while ev.value(loop["cond"], {**base, var: s}):
        steps += 1
        if steps > _MAX_STEPS:
            return False
        writes: dict[int, int] = {}
        reads: set[int] = set()
        # One environment per step, its thread index set per thread (the closures only read it).
        env = {**base, var: s, "threadIdx.x": 0, **dict.fromkeys(names, 0)}
        for t in range(B):
            env["threadIdx.x"] = t
            for n in names:
                env[n] = t
            if guard is not None and not guard(env):
                continue
            i, j = index_i(env), index_j(env)
            if i < 0 or j < 0 or (size is not None and (i >= size or j >= size)) or i == j or i in writes:
                return False
            writes[i] = j
            reads.add(j)
            if steps == 1:
                first.append((t, i, j))
        if not reads.isdisjoint(writes):
            return False
        for i, j in writes.items():
            a, b = held.get(i, 0), held.get(j, 0)
            if a & b or j in twice:
                twice.add(i)
            held[i] = a | b
        s = _eval_update(ev, loop["update"], {**base, var: s})
    return 0 not in twice and held.get(0) == (1 << B) - 1


def _guard_fn(ev: _Eval, guard: Any) -> Callable[[dict[str, int]], Any] | None:
    """Return the guard as one closure (None when there is none); a conjunction stops at its first false part."""
    if guard is None:
        return None
    if isinstance(guard, _Conj):
        parts = [ev._compile(p, 0) for p in guard.parts]
        return lambda env: all(p(env) for p in parts)
    return ev._compile(guard, 0)


def _run_sizes(
    ev: _Eval, loop: dict[str, Any], tid_names: set[str], size: int | None
) -> tuple[tuple[int, ...], tuple[tuple[int, int, int], ...], bool]:
    """Run the tree for every block size; return those it is a full tree for, the first step's addressing at the
    last size run, and whether an index or guard could not be evaluated (then no size is returned).

    The answer depends only on what the simulation reads (`_loop_key`), so it is kept per loop shape: copies of
    one reduction in a file, or a kernel edited outside its loop, are not run again.
    """
    key = _loop_key(ev, loop, tid_names, size)
    with _RUNS_LOCK:
        hit = _RUNS.get(key)
        if hit is not None:
            _RUNS.move_to_end(key)
            return hit
    ok: list[int] = []
    first: list[tuple[int, int, int]] = []
    unknown = False
    for B in BLOCK_SIZES:
        if size is not None and size < B:
            continue
        first.clear()
        try:
            if _simulate(ev, loop, B, tid_names, size, first):
                ok.append(B)
        except (_Unknown, KeyError):
            ok, unknown = [], True
            break
    result = (tuple(ok), tuple(first), unknown)
    with _RUNS_LOCK:
        _RUNS[key] = result
        while len(_RUNS) > _RUNS_KEPT:
            _RUNS.popitem(last=False)
    return result


_RUNS: OrderedDict[tuple[Any, ...], tuple[tuple[int, ...], tuple[tuple[int, int, int], ...], bool]] = OrderedDict()
_RUNS_KEPT = 256
"""Loop shapes whose runs are kept (each a few strings and integers; no tree or model is held)."""
_RUNS_LOCK = threading.Lock()


def _loop_key(ev: _Eval, loop: dict[str, Any], tid_names: set[str], size: int | None) -> tuple[Any, ...]:
    """Return everything the simulation of a loop reads, as plain values: two loops with one key run alike.

    Each expression the closures are read from is keyed by its text and the layout of its named nodes; each name
    they use by whether it is the step or a thread index, its definitions in the kernel (keyed alike, followed in
    turn) and its file-level constant.
    """
    names: list[str] = []

    def expr(node: Node | None) -> tuple[Any, ...] | None:
        if node is None:
            return None
        at = node.start_byte
        layout = []
        for n in _walk(node):
            layout.append((n.type, n.start_byte - at, n.end_byte - at))
            if n.type == "identifier":
                names.append(ev.text(n))
        return ev.text(node), tuple(layout)

    def part(value: Any) -> Any:
        if isinstance(value, _Conj):
            return "and", tuple(expr(p) for p in value.parts)
        if isinstance(value, _Update):
            return "update", value.op, value.var, expr(value.operand)
        return expr(value)

    var = loop["var"]
    key: list[Any] = [var, tuple(sorted(tid_names)), size, BLOCK_SIZES, _MAX_STEPS]
    key.extend(part(loop[k]) for k in ("init", "cond", "update", "guard", "i", "j"))
    seen: set[str] = set()
    while names:
        name = names.pop()
        if name in seen:
            continue
        seen.add(name)
        defs = ev.defs.get(name)
        constants = ev.model.constants
        key.append(
            (
                name,
                name == var,
                name in tid_names,
                None if defs is None else tuple(expr(d) for d in defs),
                repr(constants[name]) if name in constants else None,
            )
        )
    return tuple(key)


def _loop_parts(ev: _Eval, st: Node, prev: Node | None) -> dict[str, Any] | None:
    """Return the step variable, its start, condition, update and the body statements of a `for` or `while`."""
    if st.type == "for_statement":
        init = st.child_by_field_name("initializer")
        cond = st.child_by_field_name("condition")
        upd = st.child_by_field_name("update")
        if init is None or cond is None or upd is None:
            return None
        if init.type == "declaration":
            ds = init.children_by_field_name("declarator")
            if len(ds) != 1 or ds[0].type != "init_declarator":
                return None
            var, start = ev.text(ds[0].child_by_field_name("declarator")), ds[0].child_by_field_name("value")
        else:
            return None
        upd_value = _update_value(ev, upd, var)
        if upd_value is None:
            return None
        return {
            "var": var,
            "init": start,
            "cond": cond,
            "update": upd_value,
            "body": _statements(st.child_by_field_name("body")),
            "span": (st.start_byte, st.end_byte),
        }
    if st.type == "while_statement" and prev is not None and prev.type == "declaration":
        ds = prev.children_by_field_name("declarator")
        if len(ds) != 1 or ds[0].type != "init_declarator":
            return None
        var, start = ev.text(ds[0].child_by_field_name("declarator")), ds[0].child_by_field_name("value")
        body = _statements(st.child_by_field_name("body"))
        if not body or body[-1].type != "expression_statement" or body[-1].named_child_count != 1:
            return None
        upd_value = _update_value(ev, body[-1].named_children[0], var)
        if upd_value is None:
            return None
        return {
            "var": var,
            "init": start,
            "cond": _condition(st.child_by_field_name("condition")),
            "update": upd_value,
            "body": body[:-1],
            "span": (prev.start_byte, st.end_byte),
        }
    return None


class _Update:
    """The new value of the step variable: `s * 2`, `s >> 1`, ... as an operator and an operand node."""

    def __init__(self, op: str, var: str, operand: Node) -> None:
        self.op, self.var, self.operand = op, var, operand


def _update_value(ev: _Eval, e: Node, var: str) -> Any:
    e = unparen(e)
    if e.type != "assignment_expression":
        return None
    left = unparen(e.child_by_field_name("left"))
    if left is None or ev.text(left) != var:
        return None
    op = ev.text(e.child_by_field_name("operator"))
    right = e.child_by_field_name("right")
    if op in ("*=", "/=", "<<=", ">>="):
        return _Update(op[:-1], var, right)
    if op == "=":
        return right
    return None


def _eval_update(ev: _Eval, upd: Any, env: dict[str, int]) -> int:
    if isinstance(upd, _Update):
        return _binary(upd.op, env[upd.var], ev.value(upd.operand, env))
    return ev.value(upd, env)


def recognise(model: FileModel, fn: Function) -> tuple[TreeLoop | None, str]:
    """Return the first tree reduction loop of a kernel, or None and why not."""
    found, why = recognise_all(model, fn)
    return (found[0], "") if found else (None, why)


def recognise_all(model: FileModel, fn: Function) -> tuple[list[TreeLoop], str]:
    """Return every tree reduction loop of a kernel, and why not when there is none.

    Proving a tree runs it for every block size, the largest cost of a first analysis; this card and the
    grid-stride-atomic-total card both ask, so the answer is kept on the model (once per model and function)."""
    memo: dict[tuple[int, int, str], tuple[list[TreeLoop], str]] = model.memo.setdefault(f"{__name__}.trees", {})
    key = (fn.base, fn.length, fn.name)
    if key not in memo:
        memo[key] = _recognise_all(model, fn)
    trees, why = memo[key]
    return list(trees), why


def _recognise_all(model: FileModel, fn: Function) -> tuple[list[TreeLoop], str]:
    out: list[TreeLoop] = []
    if fn.kind is not FunctionKind.KERNEL or not fn.shared:
        return out, "no shared array"
    node = function_node(model, fn)
    body = node.child_by_field_name("body") if node is not None else None
    if body is None:
        return out, "no body"
    ev = _Eval(model, fn, body)
    text = ev.text(body)
    if re.search(r"threadIdx\s*\.\s*[yz]", text):
        return out, "the block is not 1-D"
    tid_names = {
        n for n, d in ev.defs.items() if len(d) == 1 and d[0] is not None and squash(ev.text(d[0])) == "threadIdx.x"
    }
    shared = {a.name: a for a in fn.shared}
    why = "no loop over a shared array with one combine and a barrier per step"
    for blk in _within(body, model, fn, ("compound_statement",)):
        stmts = _statements(blk)
        for k, st in enumerate(stmts):
            parts = _loop_parts(ev, st, stmts[k - 1] if k else None)
            if parts is None:
                continue
            inner = [x for x in parts["body"] if x.type != "declaration"]
            if len(inner) != 2 or not _is_sync(inner[1], ev):
                continue
            for name, arr in shared.items():
                comb = _combine(ev, inner[0], name)
                if comb is None:
                    continue
                before = stmts[k - 1] if st.type == "for_statement" else (stmts[k - 2] if k >= 2 else None)
                if k == 0 or before is None or not _is_sync(before, ev):
                    why = f"the loop over `{name}` is not preceded by `__syncthreads()`"
                    continue
                if st.type == "while_statement" and any(
                    n.type == "identifier" and ev.text(n) == parts["var"] for x in stmts[k + 1 :] for n in _walk(x)
                ):
                    why = f"the step `{parts['var']}` of the loop over `{name}` is read after the loop"
                    continue
                if not _only_reads_slot0(ev, stmts[k + 1 :], name):
                    why = f"code after the loop reads `{name}` at elements other than `{name}[0]`"
                    continue
                loop = {**parts, "guard": comb[0], "i": comb[1], "j": comb[2]}
                size = arr.dim_values[0] if arr.dim_values and arr.dim_values[0] else None
                uses_bd = _reads_block_size(ev, st)
                fixed = None
                if not uses_bd:
                    fixed = next((b for b in BLOCK_SIZES if size is None or b <= size), None)
                runs, addressing, unknown = _run_sizes(ev, loop, tid_names, size)
                ok, first = list(runs), list(addressing)
                if unknown:
                    why = f"an index or guard of the loop over `{name}` cannot be evaluated"
                if not ok:
                    if not why.startswith("an index"):
                        why = f"the loop over `{name}` does not combine every element exactly once"
                    continue
                if not uses_bd:
                    # Constants fix the tree: the reduction covers the largest block size it is exact for.
                    fixed = max(ok) if ok else None
                    ok = [fixed] if fixed is not None else []
                if not ok:
                    why = f"the loop over `{name}` does not combine every element exactly once"
                    continue
                elem = _spelled_type(model, fn, arr)
                out.append(TreeLoop(name, elem, comb[3], parts["span"], tuple(ok), fixed, _form(first)))
    return out, ("" if out else why)


def _spelled_type(model: FileModel, fn: Function, arr: Any) -> str:
    """Return the shared array's element type as the source spells it (`acc_t`, not the `float` it resolves to),
    so the rewrite keeps the user's names; the resolved type when the declaration cannot be read."""
    start, name = fn.span(arr.span)[0], fn.span(arr.name_span)[0]
    decl = model.text[start:name].decode("utf-8", "replace")
    words = [w for w in decl.replace("*", " ").split() if w not in ("__shared__", "extern", "volatile", "static")]
    return " ".join(words) or arr.element_type


def _form(first: list[tuple[int, int, int]]) -> str:
    """Name the tree's addressing from its first step: who writes which slot, reading which."""
    if any(t != i for t, i, _ in first):
        return "strided index"
    if first and all(j - i == 1 for _, i, j in first):
        return "interleaved"
    return "sequential"


def _only_reads_slot0(ev: _Eval, stmts: list[Node], array: str) -> bool:
    """Whether the statements after the loop read no element of `array` but element 0 before writing it again."""
    for st in stmts:
        writes = False
        for n in _walk(st):
            if n.type == "subscript_expression" and ev.text(n.child_by_field_name("argument")) == array:
                p = n.parent
                if p is not None and p.type == "assignment_expression" and p.child_by_field_name("left") == n:
                    writes = True
                    continue
                idx = n.child_by_field_name("indices")
                if idx is None or squash(ev.text(idx)) != "[0]":
                    return False
            elif (
                n.type == "identifier"
                and ev.text(n) == array
                and (n.parent is None or n.parent.type != "subscript_expression")
            ):
                return False
        if writes:
            return True
    return True


def _reads_block_size(ev: _Eval, loop: Node) -> bool:
    """Return whether a loop reads `blockDim`, itself or through the locals it reads (`const int BLOCK_SIZE =
    blockDim.x;` before the loop): then the tree follows the launch's block size, which the rewrite must read too."""
    seen: set[str] = set()
    todo: list[Node] = [loop]
    while todo:
        node = todo.pop()
        for n in _walk(node):
            if n.type == "field_expression" and squash(ev.text(n)).startswith("blockDim."):
                return True
            if n.type == "identifier":
                name = ev.text(n)
                if name == "blockDim":
                    return True
                if name not in seen:
                    seen.add(name)
                    todo.extend(v for v in ev.defs.get(name, []) if v is not None)
    return False


def generate(tl: TreeLoop, indent: str = "  ") -> str:
    """Return the warp-shuffle reduction that replaces the loop (a[0] holds the result, then a barrier)."""
    n = str(tl.fixed) if tl.fixed is not None else "blockDim.x"
    a, t = tl.array, tl.elem_type
    comb = {"sum": "ww_v + ww_o", "max": "(ww_o > ww_v ? ww_o : ww_v)", "min": "(ww_o < ww_v ? ww_o : ww_v)"}[tl.op]
    ident = {"sum": f"({t})0", "max": f"{a}[0]", "min": f"{a}[0]"}[tl.op]
    body = [
        f"// warpwise barrier-per-step-tree-reduction: {tl.op} of {a}[0..{n}) by warp shuffles, one slot per warp.",
        f"const unsigned ww_t = threadIdx.x, ww_n = {n};",
        f"{t} ww_v = ww_t < ww_n ? {a}[ww_t] : {ident};",
        "#pragma unroll",
        "for (int ww_d = 16; ww_d > 0; ww_d >>= 1) {",
        f"  {t} ww_o = __shfl_down_sync(0xffffffffu, ww_v, ww_d);",
        f"  ww_v = {comb};",
        "}",
        "__syncthreads();",
        f"if (ww_t % 32u == 0u && ww_t < ww_n) {a}[ww_t / 32u] = ww_v;",
        "__syncthreads();",
        "if (ww_t < 32u) {",
        f"  ww_v = ww_t < (ww_n + 31u) / 32u ? {a}[ww_t] : {ident};",
        "#pragma unroll",
        "  for (int ww_d = 16; ww_d > 0; ww_d >>= 1) {",
        f"    {t} ww_o = __shfl_down_sync(0xffffffffu, ww_v, ww_d);",
        f"    ww_v = {comb};",
        "  }",
        f"  if (ww_t == 0u) {a}[0] = ww_v;",
        "}",
        "__syncthreads();",
    ]
    inner = indent + "  "
    lines = [ln if ln.startswith("#") else inner + ln for ln in body]
    return "{\n" + "\n".join(lines) + "\n" + indent + "}"


def generate_sequential(tl: TreeLoop, indent: str = "  ") -> str:
    """Return the same tree with sequential addressing, to replace the loop: at each halving step s the threads
    below s combine `a[t]` and `a[t + s]`, so whole warps take one side of the guard while s >= 32 and consecutive
    threads touch consecutive banks; `a[0]` holds the result after the last step's barrier.

    The tree's pairing changes (element t meets t + s, not t + 1), which re-associates a float sum; every block
    size the loop was shown to be a full tree for is a power of two, which a halving tree needs. The loop keeps the
    shape this card recognises (one guarded combine and a barrier per step, after the original's barrier), so the
    shuffle rewrite still applies to the result."""
    n = str(tl.fixed) if tl.fixed is not None else "blockDim.x"
    a, t = tl.array, "threadIdx.x"
    here, there = f"{a}[{t}]", f"{a}[{t} + ww_s]"
    guard, comb = {
        "sum": ("", f"{here} += {there};"),
        "max": (f" && {there} > {here}", f"{here} = {there};"),
        "min": (f" && {there} < {here}", f"{here} = {there};"),
    }[tl.op]
    inner = indent + "  "
    return (
        f"for (unsigned ww_s = {n} / 2u; ww_s > 0u; ww_s >>= 1) {{\n"
        f"{inner}if ({t} < ww_s{guard}) {comb}\n"
        f"{inner}__syncthreads();\n"
        f"{indent}}}"
    )


@matcher("barrier_per_step_tree_reduction")
def barrier_per_step_tree_reduction(ctx: MatchContext) -> Iterator[Region]:
    """Find shared-memory tree reductions (any textbook form) that take one barrier per step."""
    found, _ = recognise_all(ctx.model, ctx.function)
    fn = ctx.function
    for tl in found:
        span = (tl.span[0] - fn.base, tl.span[1] - fn.base)
        sizes = ", ".join(str(b) for b in tl.blocks)
        yield Region(
            AnchorKind.LOOP,
            fn,
            span,
            f"tree:{fn.name}:{tl.array}:{span[0]}",
            {"kernel": fn.name, "array": tl.array, "op": tl.op, "form": tl.form, "sizes": sizes, "tree": tl},
        )


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Replace the tree loop by the warp-shuffle reduction."""
    tl: TreeLoop | None = ctx.fact("tree")
    if tl is None:
        return None
    if tl.fixed is not None and tl.fixed % 32:
        return None  # Full warps are needed for the shuffles.
    return [Edit(tl.span[0], tl.span[1], generate(tl, ctx.indent_at(tl.span[0])))]


__all__ = [
    "BLOCK_SIZES",
    "TreeLoop",
    "barrier_per_step_tree_reduction",
    "generate",
    "generate_sequential",
    "recognise",
    "recognise_all",
    "rewrite",
]
