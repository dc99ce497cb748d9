"""Row-cooperative reduction: a thread that walks a whole row becomes a warp (or a block) that walks it together.

The recogniser reads what one kernel computes, whatever its spelling. It finds:

- the row index: an expression whose value is `blockIdx.x * blockDim.x + threadIdx.x` (any order of the terms,
  through locals such as `int tid = threadIdx.x;`, with `uint` or `int` types), and optionally the stride of a
  grid-stride loop over rows (`blockDim.x * gridDim.x`); no other use of the x axis of the thread index;
- per-row code: statements outside any loop over the row, which every thread of a row may execute alike (they
  read only the row index, parameters, loads and the results of earlier loops), stores of per-row scalars
  (`loss[i] = ...`, `mean_out[n] = mean`);
- loops over the row (`for (j = S; j < E; ++j)` or its `while` form, any bound that is the same for the whole row,
  such as `cols`, a macro or `len[b]`) whose iterations are independent except for accumulators: an accumulator
  is a local declared before the loop that the loop only updates in one of the recognised ways, `acc += e`,
  `acc = acc + e`, `acc -= e`, `acc++`, `acc = fmaf(a, b, acc)` (sums), `acc = fmaxf(acc, e)`, `max`, `fminf`,
  `min`, `if (e > acc) acc = e;`, `acc = e > acc ? e : acc` (max and min), and the online max-and-sum pair of a
  softmax or a log-sum-exp (`m2 = fmaxf(m, v); s = s * expf(m - m2) + expf(v - m2); m = m2;` or its branch form
  `if (v > m) { s = s * expf(m - v) + 1; m = v; } else s += expf(v - m);`). Updates may sit under conditions
  (`if (mask[...]) total += ...`). Welford's one-pass mean and variance is the one carried triple read inside its
  own updates: `d = x - mean; mean += d / c; m2 += d * (x - mean);` where `c` is the number of elements seen
  (`k - start + 1`, or a counter the loop steps by one), with a second deviation local or `fmaf` allowed.
  Every store in a loop writes an element that depends on the loop index with a
  non-zero coefficient, and every access to a stored array in that loop uses the same index, so no iteration
  reads what another one writes. Anything else (a loop-carried value read outside its update, a prefix sum, a
  nested loop, a `break`, an atomic, a call that is not a pure math function, shared memory or barriers) is not a
  row-cooperative reduction.

Locals are expanded through their single definition, so `blockDim.x * blockIdx.x + threadIdx.x`, macros for
sizes, typedefs of the element type and hoisted locals all read alike. Loads are not classified by shape: the
recogniser only asks that at least one array is read contiguously along the loop index at an address that moves
with the row (the pattern of a thread per row), which is where a cooperative row pays off.

The rewrite keeps the kernel's name, signature and statements, and changes five things:

1. the row index becomes `ww_row`: `blockIdx.x * R + threadIdx.x / 32` for a warp per row (R rows per block, a
   block of 32 R threads) or `blockIdx.x` for a block per row (a block of B threads); a grid-stride step over rows
   becomes `ww_row_stride` (`gridDim.x * R` or `gridDim.x`);
2. every loop over the row starts at `S + ww_lane` and steps by the number of lanes of a row, so the lanes of a
   warp read consecutive elements (coalesced);
3. after each loop, each accumulator is combined across the lanes of its row: warp shuffles (`__shfl_xor_sync`),
   then, for a block per row, one shared-memory slot per warp, so that every lane holds the row's value (an
   accumulator that did not start at zero is set aside before the loop and added back after); the online pair is
   combined as `M = max m; s = sum(s * exp(m - M))` with the kernel's own exponential; Welford's (count, mean,
   M2) is combined by Chan's formulas (`ww_rc_welford`), each lane having counted its own elements (`ww_n<i>` in
   place of the divisor `k - start + 1`, or the kernel's own counter); a loop that stores to
   global memory is followed by `__syncwarp()` (`__syncthreads()` for a block per row), so a later loop or a
   per-row statement sees what other lanes wrote;
4. per-row stores and atomics run on lane 0 only (`if (ww_lane == 0) { ... }`);
5. the launch: a grid of ceil(rows covered / R) blocks of 32 R threads (or one block per row of B threads). Host
   launches in the file are rewritten; a problem file's launch is changed with `LaunchChange`s
   (`problem_launch_changes`), from the geometry the run spec gives (grid.x * block.x rows covered before).

Exactness: max and min are exact (the maximum of a set does not depend on the order). Sums are re-associated: a
row's sum becomes 32 (or B) strided partial sums combined by a tree, so results change within the rounding of a
float sum of that length (relative error of order n * 2^-24 in the worst case, far less for random data); the
online pair's rescaling by `exp(m - M)` rounds differently too. Welford: each lane's recurrence is the kernel's
own over a subsequence of the row, so each lane holds the exact-arithmetic (count, mean, M2) of its elements up to
rounding; Chan's combination of two such triples is an identity of exact arithmetic (the mean and the sum of
squared deviations of a union), so the combined triple is the row's, rounded differently: the same class of change
as a re-associated sum (Chan, Golub and LeVeque, "Updating formulae and a pairwise algorithm for computing sample
variances", 1979, bound its error by that of pairwise summation). The count is an integer (or a float counting by
one, exact below 2^24) and is exact. Hence the fix is `unsafe`: the verification gate
compares the outputs within the problem's tolerance. The rewrite assumes that distinct pointer parameters do not
overlap at elements the kernel writes (as `__restrict__` would say).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from warpwise.analyzers.expr.poly import Poly
from warpwise.analyzers.facts import function_node
from warpwise.analyzers.facts_memory import launch_syntax, node_text, squash, unparen
from warpwise.analyzers.function_nodes import of_type
from warpwise.analyzers.macros import expansion_poly, file_expression_macros
from warpwise.analyzers.model import AccessKind, AccessPattern, FileModel, Function, FunctionKind, MemorySpace
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import CheckContext, MatchContext, Region, Verdict, check, holds, matcher, unknown
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.verify.launch import LaunchChange

Node = Any

_DEPTH = 24
_BUILTIN = re.compile(r"^(threadIdx|blockIdx|blockDim|gridDim)\.([xyz])$")
_ROW = Poly({("blockDim.x", "blockIdx.x"): 1, ("threadIdx.x",): 1})
_STRIDE = Poly({("blockDim.x", "gridDim.x"): 1})
# Functions without side effects that a loop over a row may call.
PURE_CALLS = frozenset(
    {
        *(
            f"{name}{suffix}"
            for name in (
                "exp",
                "exp2",
                "expm1",
                "log",
                "log2",
                "log1p",
                "log10",
                "sqrt",
                "rsqrt",
                "cbrt",
                "fabs",
                "fmax",
                "fmin",
                "tanh",
                "sin",
                "cos",
                "tan",
                "erf",
                "erfc",
                "pow",
                "fma",
                "floor",
                "ceil",
                "round",
                "trunc",
                "fmod",
                "sinh",
                "cosh",
                "atan",
                "asin",
                "acos",
            )
            for suffix in ("", "f")
        ),
        "__expf",
        "__logf",
        "__fdividef",
        "__frcp_rn",
        "__fsqrt_rn",
        "__powf",
        "__tanhf",
        "__sinf",
        "__cosf",
        "__saturatef",
        "max",
        "min",
        "abs",
        "__half2float",
        "__float2half",
        "__bfloat162float",
        "__float2bfloat16",
        "__ldg",
        "static_cast",
    }
)
_MAX_FNS = {"fmaxf": "max", "fmax": "max", "max": "max", "fminf": "min", "fmin": "min", "min": "min"}
_EXP_FNS = frozenset({"expf", "exp", "__expf"})


# ---------------------------------------------------------------------------------------------------------------
# Polynomials over identifiers: enough algebra to tell the row index and a loop's element apart, whatever the
# spelling.


def _coef(p: Poly, var: str) -> tuple[Poly, bool]:
    """Return the coefficient of `var` in p, and whether p is linear in it."""
    split = p.linear_in(var)
    return (Poly(), False) if split is None else (split[0], True)


def _statements(node: Node | None) -> list[Node]:
    """Return the statements of a compound statement (or the one statement)."""
    if node is None:
        return []
    if node.type == "compound_statement":
        return [c for c in node.named_children if c.type != "comment"]
    return [node]


def _condition(node: Node | None) -> Node | None:
    """Return the expression of an `if`/`while` condition (tree-sitter wraps it in a `condition_clause`)."""
    if node is not None and node.type == "condition_clause":
        value = node.child_by_field_name("value")
        if value is None:
            items = [c for c in node.named_children if c.type != "comment"]
            value = items[0] if len(items) == 1 else None
        node = value
    return unparen(node) if node is not None else None


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def _inside(node: Node, spans: list[tuple[int, int]]) -> bool:
    return any(a <= node.start_byte and node.end_byte <= b for a, b in spans)


class _Syntax:
    """One kernel's syntax as the recogniser needs it: texts, local definitions, polynomials."""

    def __init__(self, model: FileModel, fn: Function, node: Node) -> None:
        self.model = model
        self.fn = fn
        self.node = node
        self.body = node.child_by_field_name("body")
        self.params = {p.name for p in fn.params}
        self.defs: dict[str, list[Node | None]] = {}
        self.decls: dict[str, Node] = {}
        self.keep: frozenset[str] = frozenset()  # the index of the loop being read: a symbol, never expanded
        # Names declared more than once, each time with a value and never assigned (`int i = row * N + col;` in
        # each of two loops): a use reads the declaration of its own scope, as C scoping says.
        self.scoped: dict[str, list[Node]] = {}
        self.assigned: set[str] = set()
        self.macros = file_expression_macros(model)
        for n in self.within(("init_declarator", "declaration", "assignment_expression", "update_expression")):
            if n.type == "init_declarator":
                name = self._declared(n.child_by_field_name("declarator"))
                if name:
                    self.defs.setdefault(name, []).append(n.child_by_field_name("value"))
                    self.decls.setdefault(name, n)
                    self.scoped.setdefault(name, []).append(n)
            elif n.type == "declaration":
                for d in n.children_by_field_name("declarator"):
                    if d.type != "init_declarator":
                        name = self._declared(d)
                        if name:
                            self.defs.setdefault(name, []).append(None)
                            self.decls.setdefault(name, d)
            elif n.type in ("assignment_expression", "update_expression"):
                target = n.child_by_field_name("left") or n.child_by_field_name("argument")
                if target is not None and unparen(target).type == "identifier":
                    self.defs.setdefault(self.text(unparen(target)), []).append(None)
                    self.assigned.add(self.text(unparen(target)))

    def within(self, types: tuple[str, ...]) -> list[Node]:
        """Return the body's nodes of the given types in the order a pre-order walk visits them.

        From the function's one shared query (`function_nodes.of_type`) rather than a Python walk of the body."""
        lo, hi = self.body.start_byte, self.body.end_byte
        found = [n for t in types for n in of_type(self.model, self.fn, t) if lo <= n.start_byte and n.end_byte <= hi]
        if len(types) > 1:
            found.sort(key=lambda n: (n.start_byte, -n.end_byte))
        return found

    def _declared(self, d: Node | None) -> str | None:
        while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
            d = d.child_by_field_name("declarator")
        return self.text(d) if d is not None and d.type == "identifier" else None

    def text(self, node: Node) -> str:
        return node_text(self.model, node)

    def single_def(self, name: str) -> Node | None:
        d = self.defs.get(name)
        return d[0] if d is not None and len(d) == 1 else None

    def scoped_def(self, name: str, use: Node) -> Node | None:
        """Return the value of the declaration of `name` that a use sees, when the name is declared several times
        with a value and never assigned: the innermost declaration before the use whose block encloses it."""
        decls = self.scoped.get(name, [])
        if name in self.assigned or len(decls) < 2 or len(decls) != len(self.defs.get(name, [])):
            return None
        seen = []
        for d in decls:
            block = d.parent.parent if d.parent is not None else None  # init_declarator -> declaration -> block
            if block is not None and block.type == "for_statement":
                inside = block.start_byte <= use.start_byte < block.end_byte
            else:
                inside = block is not None and d.end_byte <= use.start_byte < block.end_byte
            if inside:
                seen.append(d)
        if not seen:
            return None
        return max(seen, key=lambda d: d.start_byte).child_by_field_name("value")

    def poly(self, node: Node | None, keep: frozenset[str] = frozenset(), depth: int = 0) -> Poly | None:
        """Read an integer (or pointer) expression as a polynomial; locals other than `keep` are expanded."""
        if node is None or depth > _DEPTH:
            return None
        keep = keep | self.keep
        node = unparen(node)
        t = node.type
        if t == "number_literal":
            raw = self.text(node).rstrip("uUlL")
            try:
                v = int(raw, 0)
            except ValueError:
                return None
            return Poly.const(v)
        if t == "identifier":
            name = self.text(node)
            if name in keep:
                return Poly.atom(name)
            if name in self.params:
                return None if name in self.defs else Poly.atom(name)
            if name in self.defs:
                init = self.single_def(name) or self.scoped_def(name, node)
                # A local assigned more than once (a grid-stride row index) is a symbol of its own.
                return Poly.atom(name) if init is None else self.poly(init, keep, depth + 1)
            return Poly.atom(name)  # A macro or a global constant: the same for every thread.
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
            return arg if self.text(op) == "+" else None
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
        """Read a call of an expression macro (`IDX2C(i, j, rows)`) as its expansion, arguments read here."""
        c = _call(self, node)
        macro = self.macros.get(c[0]) if c is not None else None
        if c is None or macro is None or len(c[1]) != len(macro.params):
            return None
        env: dict[str, Poly] = {}
        for name, arg in zip(macro.params, c[1], strict=True):
            p = self.poly(arg, keep, depth + 1)
            if p is None:
                return None
            env[name] = p
        return expansion_poly(self.macros, macro, macro.expr, env, depth + 1, _DEPTH)

    def opaque_poly(self, node: Node | None, keep: frozenset[str] = frozenset(), depth: int = 0) -> Poly | None:
        """Read an expression as `poly`, but take a division or remainder free of `keep` as a symbol of its text."""
        if node is None or depth > _DEPTH:
            return None
        node = unparen(node)
        if node.type == "binary_expression":
            o = self.text(node.child_by_field_name("operator"))
            if o in ("+", "-", "*"):
                a = self.opaque_poly(node.child_by_field_name("left"), keep, depth + 1)
                b = self.opaque_poly(node.child_by_field_name("right"), keep, depth + 1)
                if a is None or b is None:
                    return None
                return a * b if o == "*" else a + b if o == "+" else a - b
            if o in ("/", "%", ">>", "&") and not (self.names(node) & (keep | self.keep)):
                return Poly.atom("~" + squash(self.text(node)))
            return None
        if node.type == "cast_expression":
            return self.opaque_poly(node.child_by_field_name("value"), keep, depth + 1)
        if node.type == "identifier":
            name = self.text(node)
            init = self.single_def(name) if name in self.defs and name not in (keep | self.keep) else None
            if init is not None:
                return self.opaque_poly(init, keep, depth + 1)
        return self.poly(node, keep, depth)

    def names(self, node: Node) -> set[str]:
        """Return the identifiers an expression reads (members' fields excluded)."""
        out = set()
        for n in _walk(node):
            if n.type == "identifier":
                out.add(self.text(n))
        return out

    def element(self, node: Node) -> tuple[str, Poly | None] | None:
        """Return (pointer parameter, index polynomial) of `p[i]` or `*(p + i)`, locals resolved; None if not memory."""
        node = unparen(node)
        if node.type == "subscript_expression":
            arr = unparen(node.child_by_field_name("argument"))
            idx = node.child_by_field_name("index") or next(
                (c for c in node.named_children if c.type == "subscript_argument_list"), None
            )
            if idx is not None and idx.type == "subscript_argument_list":
                items = [c for c in idx.named_children if c.type != "comment"]
                idx = items[0] if len(items) == 1 else None
            base = self._pointer(arr)
            if base is None:
                return None
            p = self.opaque_poly(idx) if idx is not None else None
            return base[0], (None if p is None or base[1] is None else base[1] + p)
        if node.type == "pointer_expression" and self.text(node.child_by_field_name("operator")) == "*":
            base = self._pointer(node.child_by_field_name("argument"))
            return base
        return None

    def _pointer(self, node: Node | None, depth: int = 0) -> tuple[str, Poly | None] | None:
        """Return (pointer parameter, offset) of a pointer expression such as `x + row * n` or a local for one."""
        if node is None or depth > _DEPTH:
            return None
        node = unparen(node)
        if node.type == "cast_expression":
            return self._pointer(node.child_by_field_name("value"), depth + 1)
        if node.type == "identifier":
            name = self.text(node)
            if name in self.params:
                return name, Poly()
            init = self.single_def(name)
            return None if init is None else self._pointer(init, depth + 1)
        if node.type == "binary_expression" and self.text(node.child_by_field_name("operator")) in ("+", "-"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            sign = 1 if self.text(node.child_by_field_name("operator")) == "+" else -1
            base = self._pointer(left, depth + 1)
            if base is not None:
                off = self.opaque_poly(right)
                return base[0], (None if off is None or base[1] is None else base[1] + off.scale(sign))
            base = self._pointer(right, depth + 1) if sign == 1 else None
            if base is not None:
                off = self.opaque_poly(left)
                return base[0], (None if off is None or base[1] is None else base[1] + off)
        return None


# ---------------------------------------------------------------------------------------------------------------
# What the recogniser finds.


@dataclass(frozen=True)
class Reduction:
    """One accumulator of a loop over the row and how its lanes combine."""

    var: str
    op: str  # "sum", "max", "min" or "online" (the sum of an online max-and-sum pair)
    partner: str = ""  # the max of an online pair
    exp: str = "expf"  # the exponential an online pair rescales with
    zero_start: bool = True  # whether the accumulator is zero when the loop starts
    # Welford (`op == "welford"`: `var` is the running mean, `partner` the running sum of squared deviations):
    count: str = ""  # the kernel's own counter of elements seen, or "" when the count is the loop index's
    divisor: tuple[int, int] = (0, 0)  # without a counter: the span of the divisor `k - start + 1`
    body_open: int = 0  # without a counter: the offset just after the loop body's `{` (the lane's count goes there)


@dataclass(frozen=True)
class RowLoop:
    """One loop over the row."""

    var: str
    start: tuple[int, int]  # span of the first value of the loop index (replaced by `start + ww_lane`)
    step: tuple[int, int]  # span of the step (`++j`, `j += 1`: replaced by `j += lanes`)
    stmt: tuple[int, int]  # span of the loop statement
    reductions: tuple[Reduction, ...]
    stores: bool
    contiguous: bool  # reads an array contiguously along the loop index at an address that moves with the row


@dataclass(frozen=True)
class RowKernel:
    """A kernel whose threads each walk one row (texts and spans are the user's)."""

    kernel: str
    row: str  # the row index as written (for messages)
    row_spans: tuple[tuple[int, int], ...]  # expressions whose value is the row index
    stride_spans: tuple[tuple[int, int], ...]  # grid-stride steps over rows
    loops: tuple[RowLoop, ...]
    lane0: tuple[tuple[int, int], ...]  # per-row stores (run on lane 0)
    body_open: int  # offset just after the body's `{`
    fn_start: int  # offset where the kernel's definition starts (helpers go before it)
    grid_stride: bool
    ops: tuple[str, ...] = field(default=())

    @property
    def summary(self) -> str:
        """Return the reductions in words: `sum of s, max of mx`."""
        parts = []
        for lp in self.loops:
            for r in lp.reductions:
                if r.op == "online":
                    parts.append(f"online max-and-sum of `{r.partner}`, `{r.var}`")
                elif r.op == "welford":
                    parts.append(f"Welford mean and M2 of `{r.var}`, `{r.partner}`")
                else:
                    parts.append(f"{r.op} of `{r.var}`")
        return ", ".join(parts) if parts else "elementwise passes"


class _Reject(Exception):
    """The kernel is not a row-cooperative reduction; the message says why."""


# ---------------------------------------------------------------------------------------------------------------
# Loops over the row.


def _unit_step(s: _Syntax, e: Node) -> str | None:
    """Return the variable of `j++`, `++j`, `j += 1` or `j = j + 1`."""
    e = unparen(e)
    if e.type == "update_expression":
        arg = unparen(e.child_by_field_name("argument"))
        if arg is not None and arg.type == "identifier" and "++" in s.text(e):
            return s.text(arg)
    if e.type == "assignment_expression":
        left, right = unparen(e.child_by_field_name("left")), e.child_by_field_name("right")
        op = s.text(e.child_by_field_name("operator"))
        if left is None or left.type != "identifier" or right is None:
            return None
        var = s.text(left)
        if op == "+=" and s.poly(right) == Poly.const(1):
            return var
        if op == "=" and s.poly(right, frozenset({var})) == Poly({(var,): 1, (): 1}):
            return var
    return None


def _bound_ok(s: _Syntax, cond: Node | None, var: str) -> bool:
    """Whether a condition is `var < E` or `var <= E` (or `E > var`, `E >= var`) with E not reading var."""
    if cond is None:
        return False
    cond = unparen(cond)
    if cond.type != "binary_expression":
        return False
    op = s.text(cond.child_by_field_name("operator"))
    left, right = unparen(cond.child_by_field_name("left")), unparen(cond.child_by_field_name("right"))
    # `!=` is not a bound a strided index can meet: it may step past the end.
    if op in ("<", "<=") and left.type == "identifier" and s.text(left) == var:
        return var not in s.names(right)
    if op in (">", ">=") and right.type == "identifier" and s.text(right) == var:
        return var not in s.names(left)
    return False


def _loop_header(s: _Syntax, stmt: Node, prev: Node | None) -> tuple[str, Node, Node, list[Node]] | None:
    """Return (index, start value node, step node, body statements) of a loop over the row; None if not one."""
    if stmt.type == "for_statement":
        init = stmt.child_by_field_name("initializer")
        cond = stmt.child_by_field_name("condition")
        upd = stmt.child_by_field_name("update")
        if init is None or cond is None or upd is None:
            return None
        if init.type == "declaration":
            ds = init.children_by_field_name("declarator")
            if len(ds) != 1 or ds[0].type != "init_declarator":
                return None
            var = s.text(ds[0].child_by_field_name("declarator"))
            start = ds[0].child_by_field_name("value")
        elif init.type == "assignment_expression" and s.text(init.child_by_field_name("operator")) == "=":
            var = s.text(unparen(init.child_by_field_name("left")))
            start = init.child_by_field_name("right")
        else:
            return None
        if start is None or _unit_step(s, upd) != var or not _bound_ok(s, cond, var):
            return None
        return var, start, upd, _statements(stmt.child_by_field_name("body"))
    if stmt.type == "while_statement" and prev is not None:
        cond = _condition(stmt.child_by_field_name("condition"))
        body = _statements(stmt.child_by_field_name("body"))
        if cond is None or not body:
            return None
        last = body[-1]
        if last.type != "expression_statement" or last.named_child_count != 1:
            return None
        step_var = _unit_step(s, last.named_children[0])
        if step_var is None or not _bound_ok(s, cond, step_var):
            return None
        var = step_var
        start = None
        if prev.type == "declaration":
            for d in prev.children_by_field_name("declarator"):
                if d.type == "init_declarator" and s.text(d.child_by_field_name("declarator")) == var:
                    start = d.child_by_field_name("value")
        elif prev.type == "expression_statement" and prev.named_child_count == 1:
            e = unparen(prev.named_children[0])
            if (
                e.type == "assignment_expression"
                and s.text(e.child_by_field_name("operator")) == "="
                and s.text(unparen(e.child_by_field_name("left"))) == var
            ):
                start = e.child_by_field_name("right")
        if start is None:
            return None
        return var, start, last.named_children[0], body[:-1]
    return None


def _assign_parts(s: _Syntax, e: Node) -> tuple[Node, str, Node | None] | None:
    """Return (target, operator, value) of an assignment or update expression."""
    e = unparen(e)
    if e.type == "assignment_expression":
        return (
            unparen(e.child_by_field_name("left")),
            s.text(e.child_by_field_name("operator")),
            e.child_by_field_name("right"),
        )
    if e.type == "update_expression":
        op = "+=" if "++" in s.text(e) else "-="
        return unparen(e.child_by_field_name("argument")), op, None
    return None


def _is_var(s: _Syntax, node: Node | None, name: str) -> bool:
    node = unparen(node) if node is not None else None
    return node is not None and node.type == "identifier" and s.text(node) == name


def _call(s: _Syntax, node: Node | None) -> tuple[str, list[Node]] | None:
    node = unparen(node) if node is not None else None
    if node is None or node.type != "call_expression":
        return None
    fn = node.child_by_field_name("function")
    args = node.child_by_field_name("arguments")
    if fn is None or args is None:
        return None
    return s.text(fn), [c for c in args.named_children if c.type != "comment"]


def _sum_update(s: _Syntax, target: str, op: str, value: Node | None) -> Node | bool | None:
    """Return the added term of a sum update of `target` (True for `++`), or False when it is not one."""
    if op in ("+=", "-="):
        return True if value is None else value
    if op != "=" or value is None:
        return False
    v = unparen(value)
    if v.type == "binary_expression" and s.text(v.child_by_field_name("operator")) in ("+", "-"):
        left, right = v.child_by_field_name("left"), v.child_by_field_name("right")
        if _is_var(s, left, target) and target not in s.names(right):
            return right
        if (
            s.text(v.child_by_field_name("operator")) == "+"
            and _is_var(s, right, target)
            and target not in s.names(left)
        ):
            return left
    c = _call(s, v)
    if c is not None and c[0] in ("fmaf", "fma", "__fmaf_rn") and len(c[1]) == 3 and _is_var(s, c[1][2], target):
        return v
    return False


def _extreme_update(s: _Syntax, target: str, op: str, value: Node | None) -> str | None:
    """Return "max" or "min" when `target = fmaxf(target, e)` (or its ternary form), else None."""
    if op != "=" or value is None:
        return None
    v = unparen(value)
    c = _call(s, v)
    if c is not None and c[0] in _MAX_FNS and len(c[1]) == 2:
        a, b = c[1]
        if (_is_var(s, a, target) and target not in s.names(b)) or (_is_var(s, b, target) and target not in s.names(a)):
            return _MAX_FNS[c[0]]
    if v.type == "conditional_expression":
        cond = unparen(v.child_by_field_name("condition"))
        then, other = v.child_by_field_name("consequence"), v.child_by_field_name("alternative")
        kind = _compare_kind(s, cond, target)
        if kind is not None and then is not None and other is not None:
            e_txt, which = kind
            if _is_var(s, other, target) and squash(s.text(unparen(then))) == e_txt:
                return which
            if _is_var(s, then, target) and squash(s.text(unparen(other))) == e_txt:
                return "min" if which == "max" else "max"
    return None


def _compare_kind(s: _Syntax, cond: Node | None, target: str) -> tuple[str, str] | None:
    """Return (e, "max") for `e > target` / `target < e` (and "min" for the reverse), e not reading target."""
    if cond is None:
        return None
    cond = unparen(cond)
    if cond.type != "binary_expression":
        return None
    op = s.text(cond.child_by_field_name("operator"))
    left, right = unparen(cond.child_by_field_name("left")), unparen(cond.child_by_field_name("right"))
    if _is_var(s, right, target) and target not in s.names(left):
        e, flip = left, False
    elif _is_var(s, left, target) and target not in s.names(right):
        e, flip = right, True
    else:
        return None
    if op in (">", ">="):
        which = "max"
    elif op in ("<", "<="):
        which = "min"
    else:
        return None
    if flip:
        which = "min" if which == "max" else "max"
    return squash(s.text(e)), which


@dataclass
class _LoopScan:
    """What one loop's body does, collected statement by statement."""

    var: str
    locals: set[str] = field(default_factory=set)
    updates: dict[str, list[tuple[Node, str]]] = field(default_factory=dict)  # carried var -> (statement, form)
    allowed: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # where a carried var may be read
    stores: list[tuple[str, Poly | None, Node]] = field(default_factory=list)
    loads: list[tuple[str, Poly | None, Node]] = field(default_factory=list)
    tainted: dict[str, str] = field(default_factory=dict)  # iteration local -> the carried var it was computed from


def _scan_body(s: _Syntax, stmts: list[Node], scan: _LoopScan, outer: set[str], allow_continue: bool) -> None:
    """Classify every statement of a loop body (raises _Reject with the reason when one does not fit)."""
    for st in stmts:
        t = st.type
        if t == "compound_statement":
            _scan_body(s, _statements(st), scan, outer, allow_continue)
        elif t == "declaration":
            for d in st.children_by_field_name("declarator"):
                name = s._declared(d.child_by_field_name("declarator") if d.type == "init_declarator" else d)
                if name is None:
                    raise _Reject("it declares an array or a structure inside the loop over the row")
                scan.locals.add(name)
                value = d.child_by_field_name("value") if d.type == "init_declarator" else None
                if value is not None:
                    _scan_expr(s, value, scan, outer)
                    carried = [n for n in s.names(value) if n in outer and n not in scan.locals]
                    if carried:
                        c = _call(s, value)
                        if c is not None and c[0] in _MAX_FNS and any(_is_var(s, a, carried[0]) for a in c[1]):
                            scan.tainted[name] = carried[0]
                            scan.allowed.setdefault(carried[0], []).append((value.start_byte, value.end_byte))
                        else:
                            scan.tainted[name] = carried[0]
        elif t == "expression_statement":
            if st.named_child_count == 0:
                continue
            _scan_statement(s, st, scan, outer)
        elif t == "if_statement":
            cond = _condition(st.child_by_field_name("condition"))
            then = st.child_by_field_name("consequence")
            alt = st.child_by_field_name("alternative")
            alt_stmt = None
            if alt is not None:
                alt_stmt = next((c for c in alt.named_children if c.type != "comment"), None)
            if cond is not None and _if_extreme(s, st, cond, then, alt_stmt, scan, outer):
                continue
            if cond is not None:
                _scan_expr(s, cond, scan, outer)
            _scan_body(s, [then] if then is not None else [], scan, outer, allow_continue)
            if alt_stmt is not None:
                _scan_body(s, [alt_stmt], scan, outer, allow_continue)
        elif t == "continue_statement" and allow_continue:
            continue
        elif t in ("for_statement", "while_statement", "do_statement"):
            raise _Reject("a loop over the row holds another loop")
        else:
            raise _Reject(f"a loop over the row holds a `{t.replace('_statement', '')}` statement")


def _if_extreme(
    s: _Syntax, st: Node, cond: Node, then: Node | None, alt: Node | None, scan: _LoopScan, outer: set[str]
) -> bool:
    """Read `if (e > m) m = e;` and the branch form of an online max-and-sum; return whether it was one."""
    body = _statements(then)
    if not body:
        return False
    last = body[-1]
    if last.type != "expression_statement" or last.named_child_count != 1:
        return False
    parts = _assign_parts(s, last.named_children[0])
    if parts is None or parts[0].type != "identifier" or parts[1] != "=" or parts[2] is None:
        return False
    m = s.text(parts[0])
    if m not in outer or m in scan.locals:
        return False
    kind = _compare_kind(s, cond, m)
    if kind is None or kind[0] != squash(s.text(unparen(parts[2]))):
        return False
    scan.updates.setdefault(m, []).append((st, kind[1]))
    scan.allowed.setdefault(m, []).append((cond.start_byte, cond.end_byte))
    scan.allowed[m].append((last.start_byte, last.end_byte))
    _scan_expr(s, cond, scan, outer, skip={m})
    rest = body[:-1]
    if not rest and alt is None:
        return True
    # The branch form of an online pair: the other statements update the pair's sum.
    for other in [*rest, *_statements(alt)]:
        if other.type != "expression_statement" or other.named_child_count != 1:
            raise _Reject(f"the branch that updates `{m}` does more than rescale a running sum")
        p = _assign_parts(s, other.named_children[0])
        if p is None or p[0].type != "identifier" or s.text(p[0]) not in outer:
            raise _Reject(f"the branch that updates `{m}` does more than rescale a running sum")
        var = s.text(p[0])
        scan.updates.setdefault(var, []).append((other, "online:" + m))
        scan.allowed.setdefault(m, []).append((other.start_byte, other.end_byte))
        scan.allowed.setdefault(var, []).append((other.start_byte, other.end_byte))
        _scan_expr(s, other.named_children[0], scan, outer, skip={m, var})
    return True


def _scan_statement(s: _Syntax, st: Node, scan: _LoopScan, outer: set[str]) -> None:
    e = unparen(st.named_children[0])
    parts = _assign_parts(s, e)
    if parts is None:
        if e.type == "call_expression":
            _scan_expr(s, e, scan, outer)
            return
        raise _Reject("a statement in the loop over the row is neither an assignment nor a call")
    target, op, value = parts
    if target.type == "identifier":
        name = s.text(target)
        if name == scan.var:
            raise _Reject(f"the loop assigns its own index `{name}`")
        if name in scan.locals:
            if value is not None:
                _scan_expr(s, value, scan, outer)
            return
        if name not in outer:
            raise _Reject(f"the loop assigns `{name}`, which is not a local of the kernel")
        scan.updates.setdefault(name, []).append((st, "?"))
        scan.allowed.setdefault(name, []).append((st.start_byte, st.end_byte))
        if value is not None:
            _scan_expr(s, value, scan, outer, skip={name})
        return
    elem = s.element(target)
    if elem is None:
        raise _Reject(f"the loop writes `{s.text(target)}`, which is neither a local nor an element of a parameter")
    if op != "=":
        scan.loads.append((elem[0], elem[1], target))
    scan.stores.append((elem[0], elem[1], target))
    idx = target.child_by_field_name("indices") or target.child_by_field_name("argument")
    if idx is not None:
        _scan_expr(s, idx, scan, outer)
    if value is not None:
        _scan_expr(s, value, scan, outer)


def _scan_expr(s: _Syntax, node: Node, scan: _LoopScan, outer: set[str], skip: set[str] | None = None) -> None:
    """Record the loads and check the calls and assignments of an expression inside a loop over the row."""
    for n in _walk(node):
        if n.type == "call_expression":
            c = _call(s, n)
            name = c[0] if c is not None else s.text(n)
            if name not in PURE_CALLS and not _pure_device_function(s, name) and s.macro_poly(n, s.keep, 0) is None:
                raise _Reject(f"the loop over the row calls `{name}`, which may have side effects")
        elif n.type in ("assignment_expression", "update_expression") and n is not unparen(node):
            raise _Reject("an expression in the loop over the row assigns inside another expression")
        elif n.type in ("subscript_expression", "pointer_expression"):
            elem = s.element(n)
            if elem is not None:
                scan.loads.append((elem[0], elem[1], n))


def _pure_device_function(s: _Syntax, name: str) -> bool:
    """Whether `name` is a `__device__` function of this file that takes no pointers (so it writes no memory)."""
    for f in s.model.functions:
        if f.name == name and f.kind is FunctionKind.DEVICE:
            return not any(p.is_pointer or p.is_reference for p in f.params)
    return False


def _classify(s: _Syntax, scan: _LoopScan, body_nodes: list[Node]) -> list[Reduction]:
    """Classify the accumulators of one loop; raise _Reject when one is not a recognised reduction."""
    forms: dict[str, str] = {}
    for var, ups in scan.updates.items():
        kinds = set()
        for st, form in ups:
            if form in ("max", "min") or form.startswith("online:"):
                kinds.add(form)
                continue
            parts = _assign_parts(s, st.named_children[0])
            assert parts is not None
            _, op, value = parts
            ext = _extreme_update(s, var, op, value)
            if ext is not None:
                kinds.add(ext)
                continue
            if value is not None and op == "=" and unparen(value).type == "identifier":
                src = s.text(unparen(value))
                if scan.tainted.get(src) == var and src in scan.locals:
                    # `m = m2` with `m2 = fmaxf(m, v)` declared in this iteration.
                    init = s.single_def(src)
                    c = _call(s, init)
                    if c is not None and c[0] in _MAX_FNS:
                        kinds.add(_MAX_FNS[c[0]])
                        continue
            if _rescale_form(s, var, op, value):
                kinds.add("rescale")
                continue
            term = _sum_update(s, var, op, value)
            kinds.add("?" if term is False else "sum")
        forms[var] = "+".join(sorted(kinds))
    out: list[Reduction] = []
    maxes = {v for v, f in forms.items() if f == "max"}
    for var, f in forms.items():
        if f in ("sum", "max", "min"):
            out.append(Reduction(var, f))
            continue
        kinds = set(f.split("+"))
        partners = {k.split(":", 1)[1] for k in kinds if k.startswith("online:")}
        partners |= {m for m in maxes if "rescale" in kinds and _rescale_partner(s, scan, var) == m}
        plain = kinds - {k for k in kinds if k.startswith("online:")} - {"rescale", "sum"}
        if plain or len(partners) != 1:
            raise _Reject(
                f"`{var}` is carried from one element of the row to the next in a way that is not a sum, max or min"
            )
        m = next(iter(partners))
        exp = _rescale_exp(s, scan, var)
        if exp is None:
            raise _Reject(f"`{var}` is rescaled by something other than `expf({m} - ...)`")
        out.append(Reduction(var, "online", partner=m, exp=exp))
    partners_of_online = {r.partner for r in out if r.op == "online"}
    out = [r for r in out if not (r.op == "max" and r.var in partners_of_online)]
    # Every read of a carried variable (or of an iteration local computed from one) is inside its updates.
    allowed = {v: list(sp) for v, sp in scan.allowed.items()}
    for r in out:
        if r.op == "online":
            allowed.setdefault(r.partner, []).extend(allowed.get(r.var, []))
    for body in body_nodes:
        for n in _walk(body):
            if n.type != "identifier":
                continue
            name = s.text(n)
            root = scan.tainted.get(name, name) if name in scan.locals else name
            if root not in forms:
                continue
            spans = allowed.get(root, [])
            if name in scan.locals:
                decl = s.decls.get(name)
                if decl is not None and decl.start_byte <= n.start_byte < decl.end_byte:
                    continue
                pair_vars = [r.var for r in out if r.partner == root]
                spans = spans + [sp for p in pair_vars for sp in allowed.get(p, [])]
            if not _inside(n, spans):
                raise _Reject(
                    f"`{name}` is read in the loop over the row outside the update of `{root}` (a running value)"
                )
    return out


def _count_step(s: _Syntax, e: Node, name: str) -> bool:
    """Whether an expression adds one to `name` (`n++`, `++n`, `n += 1`, `n = n + 1`, `n += 1.0f`)."""
    parts = _assign_parts(s, e)
    if parts is None or not _is_var(s, parts[0], name):
        return False
    if parts[2] is None:
        return parts[1] == "+=" and "++" in s.text(e)
    term = _sum_update(s, name, parts[1], parts[2])
    if parts[1] == "-=" or term is False or term is True or term is None:
        return False
    return bool(re.fullmatch(r"1(\.0*)?[fF]?|1[uUlL]*", squash(s.text(unparen(term)))))


def _deviation(s: _Syntax, node: Node | None, mean: str) -> Node | None:
    """Return `x` when an expression is `x - mean` (x not reading `mean`), else None."""
    node = unparen(node) if node is not None else None
    if node is None or node.type != "binary_expression" or s.text(node.child_by_field_name("operator")) != "-":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if not _is_var(s, right, mean) or mean in s.names(left):
        return None
    return unparen(left)


def _same_value(s: _Syntax, a: Node | None, b: Node | None, depth: int = 0) -> bool:
    """Whether two expressions read the same value: the same text, the same element of the same array, the same
    integer polynomial, or a local whose single definition is the other (`v = x[i]`), whatever the spelling."""
    if a is None or b is None or depth > 4:
        return False
    a, b = unparen(a), unparen(b)
    if squash(s.text(a)) == squash(s.text(b)):
        return True
    for x, y in ((a, b), (b, a)):
        if x.type == "identifier" and s.text(x) not in s.keep:
            init = s.single_def(s.text(x))
            if init is not None and _same_value(s, init, y, depth + 1):
                return True
    ea, eb = s.element(a), s.element(b)
    if ea is not None and eb is not None:
        return ea[0] == eb[0] and ea[1] is not None and ea[1] == eb[1]
    pa, pb = s.poly(a), s.poly(b)
    return pa is not None and pa == pb


def _welford(s: _Syntax, loop: Node, scan: _LoopScan, body: list[Node], var: str, start: Node) -> Reduction | None:
    """Read Welford's one-pass mean and variance in a loop over the row; None when the loop is not exactly that.

    The loop body, in order (any other statement is a declaration that reads none of these names):
    an optional counter step `n += 1`; `d = x - mean;`; `mean += d / c` (or `mean = mean + d / c`), where `c` is
    the counter or `k - start + 1`, the number of elements seen including this one; an optional `d2 = x - mean;`;
    `m2 += d * (x - mean)` (or `d * d2`, either order, `m2 = m2 + ...`, `m2 = fmaf(d, d2, m2)`), with the same `x`.
    """
    carried = set(scan.updates)
    if not 2 <= len(carried) <= 3 or scan.stores:
        return None
    count = ""
    d = mean = ""
    x: Node | None = None
    d2 = m2 = ""
    divisor: Node | None = None
    for st in body:
        if st.type == "declaration":
            decls = st.children_by_field_name("declarator")
            if len(decls) != 1:
                return None
            dn = decls[0]
            name = s._declared(dn.child_by_field_name("declarator") if dn.type == "init_declarator" else dn)
            value = dn.child_by_field_name("value") if dn.type == "init_declarator" else None
            if name is None or value is None or len(s.defs.get(name, [])) != 1:
                return None
            reads = s.names(value)
            if not d and not mean:
                for m in carried - {count}:
                    dev = _deviation(s, value, m)
                    if dev is not None and not (s.names(unparen(value).child_by_field_name("left")) & carried):
                        d, mean, x = name, m, dev
                        break
                if d:
                    continue
            elif mean and not d2 and not m2 and _same_value(s, _deviation(s, value, mean), x):
                d2 = name
                continue
            if reads & (carried | {d, d2} - {""}):
                return None
            continue
        if st.type != "expression_statement" or st.named_child_count != 1:
            return None
        e = unparen(st.named_children[0])
        parts = _assign_parts(s, e)
        if parts is None or parts[0].type != "identifier":
            return None
        target, op, value = s.text(parts[0]), parts[1], parts[2]
        if divisor is None and not count and target in carried and _count_step(s, e, target):
            count = target
            continue
        if d and target == mean and divisor is None:
            added = _sum_update(s, target, op, value)
            if added is False or added is True or added is None or op == "-=":
                return None
            term = unparen(added)
            if term.type != "binary_expression":
                return None
            if s.text(term.child_by_field_name("operator")) != "/":
                return None
            if not _is_var(s, term.child_by_field_name("left"), d):
                return None
            divisor = term.child_by_field_name("right")
            continue
        if divisor is not None and not m2 and target in carried - {mean, count}:
            if not _m2_term(s, target, op, value, d, d2, mean, x):
                return None
            m2 = target
            continue
        return None
    if not (d and divisor is not None and m2) or carried != {mean, m2} | ({count} if count else set()):
        return None
    c = unparen(divisor)
    while c.type == "cast_expression":
        c = unparen(c.child_by_field_name("value"))
    if count:
        if not _is_var(s, c, count):
            return None
    else:
        first = s.poly(start)
        seen = s.poly(divisor, frozenset({var}))
        if first is None or seen is None or seen != Poly.atom(var) - first + Poly.const(1):
            return None
    open_at = 0
    loop_body = loop.child_by_field_name("body")
    if not count:
        if loop_body is None or loop_body.type != "compound_statement":
            return None
        open_at = loop_body.start_byte + 1
    return Reduction(
        mean,
        "welford",
        partner=m2,
        count=count,
        divisor=(0, 0) if count else (divisor.start_byte, divisor.end_byte),
        body_open=open_at,
    )


def _m2_term(s: _Syntax, target: str, op: str, value: Node | None, d: str, d2: str, mean: str, x: Node | None) -> bool:
    """Whether an update adds `d * (x - mean)` (or `d * d2`, either order, or through `fmaf`) to `target`."""
    term = _sum_update(s, target, op, value)
    if term is False or term is True or term is None or op == "-=":
        return False
    term = unparen(term)
    c = _call(s, term)
    if c is not None and c[0] in ("fmaf", "fma", "__fmaf_rn"):
        factors = c[1][:2]
    elif term.type == "binary_expression" and s.text(term.child_by_field_name("operator")) == "*":
        factors = [term.child_by_field_name("left"), term.child_by_field_name("right")]
    else:
        return False
    if len(factors) != 2:
        return False

    def after(n: Node) -> bool:
        return (bool(d2) and _is_var(s, n, d2)) or _same_value(s, _deviation(s, n, mean), x)

    a, b = factors
    return (_is_var(s, a, d) and after(b)) or (_is_var(s, b, d) and after(a))


def _rescaled(s: _Syntax, node: Node | None, var: str) -> bool:
    """Whether an expression is `var * exp(...)` (or `exp(...) * var`)."""
    node = unparen(node) if node is not None else None
    if node is None or node.type != "binary_expression" or s.text(node.child_by_field_name("operator")) != "*":
        return False
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    for a, b in ((left, right), (right, left)):
        c = _call(s, b)
        if _is_var(s, a, var) and c is not None and c[0] in _EXP_FNS and var not in s.names(b):
            return True
    return False


def _rescale_form(s: _Syntax, var: str, op: str, value: Node | None) -> bool:
    """Whether an update is `var = var * exp(...) + e`, `var = e + var * exp(...)` or `var *= exp(...)`."""
    if value is None:
        return False
    v = unparen(value)
    if op == "*=":
        c = _call(s, v)
        return c is not None and c[0] in _EXP_FNS and var not in s.names(v)
    if op != "=":
        return False
    if _rescaled(s, v, var):
        return True
    if v.type == "binary_expression" and s.text(v.child_by_field_name("operator")) == "+":
        left, right = v.child_by_field_name("left"), v.child_by_field_name("right")
        return (_rescaled(s, left, var) and var not in s.names(right)) or (
            _rescaled(s, right, var) and var not in s.names(left)
        )
    return False


def _rescale_partner(s: _Syntax, scan: _LoopScan, var: str) -> str | None:
    for st, _ in scan.updates.get(var, []):
        for n in _walk(st):
            c = _call(s, n)
            if c is not None and c[0] in _EXP_FNS and c[1]:
                arg = unparen(c[1][0])
                if arg.type == "binary_expression" and s.text(arg.child_by_field_name("operator")) == "-":
                    left = unparen(arg.child_by_field_name("left"))
                    if left.type == "identifier" and s.text(left) in scan.updates:
                        return s.text(left)
    return None


def _rescale_exp(s: _Syntax, scan: _LoopScan, var: str) -> str | None:
    for st, _ in scan.updates.get(var, []):
        for n in _walk(st):
            c = _call(s, n)
            if c is not None and c[0] in _EXP_FNS:
                return c[0]
    return None


# ---------------------------------------------------------------------------------------------------------------
# The kernel.


def _row_spans(s: _Syntax) -> tuple[list[Node], list[Node]]:
    """Return the maximal expressions whose value is the row index, and the grid strides over rows."""
    rows: list[Node] = []
    strides: list[Node] = []
    stack = [s.body]
    while stack:
        n = stack.pop()
        if n.type in ("binary_expression", "parenthesized_expression", "cast_expression") and re.search(
            r"\b(threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*x\b", s.text(n)
        ):
            p = s.poly(n)
            if p == _ROW:
                rows.append(n)
                continue
            if p == _STRIDE:
                strides.append(n)
                continue
        stack.extend(n.named_children)
    return rows, strides


def recognise(model: FileModel, fn: Function) -> tuple[RowKernel | None, str]:
    """Return the row kernel found in `fn` (or None) and, when none, why not in one line."""
    if fn.kind is not FunctionKind.KERNEL:
        return None, "not a kernel"
    node = function_node(model, fn)
    if node is None or node.child_by_field_name("body") is None:
        return None, "the kernel has no body"
    if fn.shared:
        return None, f"`{fn.name}` already uses shared memory"
    s = _Syntax(model, fn, node)
    if "__syncthreads" in s.text(s.body) or "__syncwarp" in s.text(s.body):
        return None, f"`{fn.name}` already synchronises its threads"
    try:
        rk = _recognise(s)
    except _Reject as exc:
        return None, str(exc)
    if _already_coalesced(fn, rk):
        why = f"every load of `{fn.name}`'s row loops is contiguous across adjacent threads: it is not a row walk"
        return None, why
    return rk, ""


def _recognise(s: _Syntax) -> RowKernel:
    rows, strides = _row_spans(s)
    if not rows:
        raise _Reject("no expression of the kernel is the global thread index `blockIdx.x * blockDim.x + threadIdx.x`")
    replaced = [(n.start_byte, n.end_byte) for n in rows + strides]
    # Any other use of the x axis must be a hoisted local that is only read inside the replaced expressions.
    for n in s.within(("field_expression",)):
        m = _BUILTIN.match(squash(s.text(n)))
        if m is None or m.group(2) != "x" or _inside(n, replaced):
            continue
        local = _hoisted(s, n)
        if local is None or not all(
            _inside(u, replaced) or _in_decl(s, u, local)
            for u in _walk(s.body)
            if u.type == "identifier" and s.text(u) == local
        ):
            raise _Reject(f"`{s.text(n)}` is used for something other than the row index")
    for n in s.within(("field_expression",)):
        m = _BUILTIN.match(squash(s.text(n)))
        if m is not None and m.group(1) == "threadIdx" and m.group(2) != "x":
            raise _Reject(f"the kernel reads `{s.text(n)}`: rows come from a block of more than one dimension")
    row_var = _row_name(s, rows)
    outer: set[str] = set(s.defs)
    loops: list[RowLoop] = []
    lane0: list[Node] = []
    grid_stride = bool(strides)
    _row_block(s, _statements(s.body), outer, loops, lane0)
    if not loops:
        raise _Reject("no loop walks a row")
    if not any(lp.contiguous for lp in loops):
        raise _Reject("no loop reads a row contiguously at an address that moves with the row index")
    # A per-row store's array must not be read elsewhere: only lane 0 writes it.
    stored = set()
    for st in lane0:
        for n in _walk(st):
            target = None
            if n.type == "assignment_expression":
                target = n.child_by_field_name("left")
            elif n.type == "update_expression":
                target = n.child_by_field_name("argument")
            e = s.element(target) if target is not None else None
            if e is not None:
                stored.add(e[0])
    for name in stored:
        for n in _walk(s.body):
            if (
                n.type == "identifier"
                and s.text(n) in _aliases(s, name)
                and not _inside(n, [(x.start_byte, x.end_byte) for x in lane0])
            ):
                raise _Reject(f"`{name}` holds per-row results and is also read or written by the loops over the row")
    body_open = s.body.start_byte + 1
    ops = tuple(sorted({r.op for lp in loops for r in lp.reductions}))
    return RowKernel(
        kernel=s.fn.name,
        row=row_var,
        row_spans=tuple((n.start_byte, n.end_byte) for n in rows),
        stride_spans=tuple((n.start_byte, n.end_byte) for n in strides),
        loops=tuple(loops),
        lane0=tuple((n.start_byte, n.end_byte) for n in lane0),
        body_open=body_open,
        fn_start=_definition_start(s),
        grid_stride=grid_stride,
        ops=ops,
    )


def _definition_start(s: _Syntax) -> int:
    node = s.node
    while node.parent is not None and node.parent.type == "template_declaration":
        node = node.parent
    return int(node.start_byte)


def _aliases(s: _Syntax, param: str) -> set[str]:
    """Return the parameter and the locals that point into it."""
    out = {param}
    for name in s.defs:
        init = s.single_def(name)
        if init is not None:
            p = s._pointer(init)
            if p is not None and p[0] == param:
                out.add(name)
    return out


def _hoisted(s: _Syntax, n: Node) -> str | None:
    """Return the local whose single definition holds this node (`int tid = threadIdx.x;`), else None."""
    p = n.parent
    while p is not None and p.type not in ("init_declarator", "compound_statement"):
        p = p.parent
    if p is None or p.type != "init_declarator":
        return None
    name = s._declared(p.child_by_field_name("declarator"))
    return name if name is not None and s.single_def(name) is not None else None


def _in_decl(s: _Syntax, u: Node, local: str) -> bool:
    d = s.decls.get(local)
    return d is not None and d.start_byte <= u.start_byte < d.end_byte


def _row_name(s: _Syntax, rows: list[Node]) -> str:
    for n in rows:
        p = n.parent
        if p is not None and p.type == "init_declarator":
            name = s._declared(p.child_by_field_name("declarator"))
            if name:
                return name
    return squash(s.text(rows[0]))


def _row_block(s: _Syntax, stmts: list[Node], outer: set[str], loops: list[RowLoop], lane0: list[Node]) -> None:
    """Walk per-row statements: loops over the row, per-row stores, conditions and a grid-stride loop over rows."""
    prev = None
    for st in stmts:
        t = st.type
        if t in ("for_statement", "while_statement"):
            head = _loop_header(s, st, prev)
            if head is not None and _is_column_loop(s, head):
                if st.parent is None or st.parent.type != "compound_statement":
                    raise _Reject("a loop over the row is not inside braces")
                loops.append(_column_loop(s, st, head, outer))
            elif _is_row_stride_loop(s, st):
                _row_block(s, _statements(st.child_by_field_name("body")), outer, loops, lane0)
            else:
                raise _Reject("a loop is neither a loop over the row nor a grid-stride loop over rows")
        elif t == "compound_statement":
            _row_block(s, _statements(st), outer, loops, lane0)
        elif t == "if_statement":
            then = st.child_by_field_name("consequence")
            _row_block(s, [then] if then is not None else [], outer, loops, lane0)
            alt = st.child_by_field_name("alternative")
            if alt is not None:
                _row_block(s, [c for c in alt.named_children if c.type != "comment"], outer, loops, lane0)
        elif t == "expression_statement":
            if _writes_memory(s, st):
                lane0.append(st)
        elif t in ("declaration", "return_statement", "comment"):
            if t == "declaration" and any(
                c.type == "array_declarator" for d in st.children_by_field_name("declarator") for c in _walk(d)
            ):
                raise _Reject("the kernel declares a local array (per-thread state the lanes of a row cannot share)")
        else:
            raise _Reject(f"the kernel has a `{t.replace('_statement', '')}` statement outside the loops over the row")
        prev = st


def _writes_memory(s: _Syntax, st: Node) -> bool:
    for n in _walk(st):
        if n.type == "assignment_expression":
            target = unparen(n.child_by_field_name("left"))
            if target is not None and target.type != "identifier":
                return True
        elif n.type == "update_expression":
            target = unparen(n.child_by_field_name("argument"))
            if target is not None and target.type != "identifier":
                return True
        elif n.type == "call_expression":
            c = _call(s, n)
            if c is not None and c[0] not in PURE_CALLS and not _pure_device_function(s, c[0]):
                return True
    return False


def _is_row_stride_loop(s: _Syntax, st: Node) -> bool:
    """Whether a loop advances the row index by the grid stride (`r += blockDim.x * gridDim.x`)."""
    text = squash(s.text(st))
    return "gridDim.x" in text and any(
        n.type == "assignment_expression" and s.poly(n.child_by_field_name("right")) == _STRIDE for n in _walk(st)
    )


def _is_column_loop(s: _Syntax, head: tuple[str, Node, Node, list[Node]]) -> bool:
    """Whether a loop's index starts at a value that does not depend on the thread (a loop over a row)."""
    start = head[1]
    txt = squash(s.text(start))
    return "threadIdx" not in txt and "blockIdx" not in txt and "gridDim" not in txt


def _column_loop(s: _Syntax, st: Node, head: tuple[str, Node, Node, list[Node]], outer: set[str]) -> RowLoop:
    var, start, step, body = head
    scan = _LoopScan(var)
    s.keep = frozenset({var})
    _scan_body(s, body, scan, outer - {var}, allow_continue=st.type == "for_statement")
    welford = _welford(s, st, scan, body, var, start)
    reductions = [welford] if welford is not None else _classify(s, scan, body)
    # Iterations are independent: each store writes a distinct element, and every access to a stored array in this
    # loop uses the same element.
    for name, poly, node in scan.stores:
        if poly is None:
            raise _Reject(f"the loop over the row writes `{s.text(node)}` at an index that is not affine")
        coef, linear = _coef(poly, var)
        if not linear or coef.constant() in (None, 0):
            raise _Reject(f"the loop over the row writes `{s.text(node)}`: the element does not move with `{var}`")
        for other, p2, n2 in scan.stores + scan.loads:
            if other == name and p2 != poly:
                raise _Reject(f"`{s.text(n2)}` and `{s.text(node)}` touch different elements of `{name}` in one loop")
    contiguous = False
    for _name, poly, _ in scan.loads:
        if poly is None:
            continue
        coef, linear = _coef(poly, var)
        moves = any(m for m in poly.terms if var not in m)
        if linear and coef == Poly.const(1) and moves and _depends_on_row(s, poly):
            contiguous = True
    s.keep = frozenset()
    if st.type == "while_statement" and _read_after(s, st, var):
        raise _Reject(f"the loop index `{var}` is read after its loop")
    zero = {r.var: _starts_at_zero(s, r.var, st) for r in reductions if r.op in ("sum", "online")}
    for r in reductions:
        if r.op == "online" and not zero[r.var]:
            raise _Reject(f"the running sum `{r.var}` of an online max-and-sum does not start at zero")
        if r.op == "welford":
            for v in (r.var, r.partner, r.count):
                if v and not _starts_at_zero(s, v, st):
                    raise _Reject(f"`{v}` of Welford's running statistics does not start at zero")
    reductions = [
        r if r.op == "welford" else Reduction(r.var, r.op, r.partner, r.exp, zero.get(r.var, True)) for r in reductions
    ]
    return RowLoop(
        var=var,
        start=(start.start_byte, start.end_byte),
        step=(step.start_byte, step.end_byte),
        stmt=(st.start_byte, st.end_byte),
        reductions=tuple(reductions),
        stores=bool(scan.stores),
        contiguous=contiguous,
    )


def _depends_on_row(s: _Syntax, poly: Poly) -> bool:
    """Whether an address moves with the thread: a term holds `threadIdx.x`, `blockIdx.x` or a local of the kernel."""
    for m in poly.terms:
        for sym in m:
            if sym in ("threadIdx.x", "blockIdx.x") or (sym in s.defs and sym not in s.keep):
                return True
            if sym.startswith("~") and (
                "threadIdx" in sym or "blockIdx" in sym or any(n in s.defs for n in re.findall(r"[A-Za-z_]\w*", sym))
            ):
                return True
    return False


def _read_after(s: _Syntax, loop: Node, var: str) -> bool:
    return any(n.type == "identifier" and s.text(n) == var and n.start_byte >= loop.end_byte for n in _walk(s.body))


def _starts_at_zero(s: _Syntax, var: str, loop: Node) -> bool:
    """Whether `var` is declared as zero and assigned nowhere but inside this loop."""
    decl = s.decls.get(var)
    if decl is None or decl.type != "init_declarator":
        return False
    value = decl.child_by_field_name("value")
    if value is None:
        return False
    v = unparen(value)
    while v.type == "cast_expression":
        v = unparen(v.child_by_field_name("value"))
    if v.type != "number_literal" or re.fullmatch(r"0*\.?0*(e[+-]?0+)?[fF]?|0[xX]0+|0[uUlL]*", s.text(v)) is None:
        return False
    # Assignments after the loop do not matter, unless an enclosing loop (over rows) runs this loop again with the
    # same variable.
    repeated = False
    p = loop.parent
    while p is not None and p is not s.body:
        if p.type in ("for_statement", "while_statement", "do_statement") and not (
            p.start_byte <= decl.start_byte < p.end_byte
        ):
            repeated = True
        p = p.parent
    for n in _walk(s.body):
        if n.type in ("assignment_expression", "update_expression"):
            target = unparen(n.child_by_field_name("left") or n.child_by_field_name("argument"))
            if target is not None and target.type == "identifier" and s.text(target) == var:
                if loop.start_byte <= n.start_byte < loop.end_byte:
                    continue
                if n.start_byte < loop.start_byte or repeated:
                    return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# The rewrite.


@dataclass(frozen=True)
class Mapping:
    """How rows map onto threads: a warp per row (`rows_per_block` rows a block) or a block of `threads` per row."""

    mode: str = "warp"
    rows_per_block: int = 4
    threads: int = 256

    @property
    def lanes(self) -> int:
        """Threads that share one row."""
        return 32 if self.mode == "warp" else self.threads

    @property
    def block(self) -> int:
        """Threads per block."""
        return 32 * self.rows_per_block if self.mode == "warp" else self.threads

    @property
    def rows(self) -> int:
        """Rows per block."""
        return self.rows_per_block if self.mode == "warp" else 1

    def problems(self) -> list[str]:
        """Return why this mapping cannot be generated (empty when it can)."""
        if self.mode not in ("warp", "block"):
            return [f"mode {self.mode!r} is neither `warp` nor `block`"]
        if self.mode == "warp" and not 1 <= self.rows_per_block <= 32:
            return ["a warp per row takes 1 to 32 rows per block"]
        if self.mode == "block" and self.threads not in (64, 128, 256, 512, 1024):
            return ["a block per row takes 64, 128, 256, 512 or 1024 threads"]
        return []

    def describe(self) -> str:
        """Return the mapping in words."""
        if self.mode == "warp":
            return f"a warp per row, {self.rows_per_block} rows per block"
        return f"a block of {self.threads} threads per row"


# Mappings a search may choose from.
MAPPING_CHOICES = (
    Mapping("warp", 4),
    Mapping("warp", 8),
    Mapping("warp", 2),
    Mapping("block", threads=256),
    Mapping("block", threads=512),
    Mapping("block", threads=1024),
    Mapping("block", threads=128),
)

HELPERS = """#ifndef WARPWISE_ROW_COOPERATIVE_HELPERS
#define WARPWISE_ROW_COOPERATIVE_HELPERS
// warpwise row-cooperative-reduction: combine one value per lane across the LANES threads of a row (warp
// shuffles, then one shared-memory slot per warp when a block shares the row); every lane gets the result.
struct ww_rc_add {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct ww_rc_max {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return b > a ? b : a; }
};
struct ww_rc_min {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return b < a ? b : a; }
};
template <int LANES, class T, class Op> __device__ __forceinline__ T ww_rc_reduce(T v, Op op) {
#pragma unroll
  for (int o = (LANES < 32 ? LANES : 32) / 2; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (LANES > 32) {
    __shared__ T ww_part[LANES / 32 > 0 ? LANES / 32 : 1];
    __syncthreads();
    if (threadIdx.x % 32 == 0) ww_part[threadIdx.x / 32] = v;
    __syncthreads();
    v = ww_part[0];
    for (int w = 1; w < LANES / 32; ++w) v = op(v, ww_part[w]);
  }
  return v;
}
#endif
"""


WELFORD_HELPERS = """#ifndef WARPWISE_ROW_COOPERATIVE_WELFORD
#define WARPWISE_ROW_COOPERATIVE_WELFORD
// warpwise row-cooperative-reduction: combine per-lane Welford statistics (count n, mean, M2 = the sum of squared
// deviations from the mean) across the LANES threads of a row with Chan's formulas. The lower lane's statistics are
// always the first operand, so every lane computes the same combination and holds the same bits.
template <class C, class T> __device__ __forceinline__ void ww_rc_chan(C &n, T &mean, T &m2, C nb, T mb, T m2b) {
  const C nn = n + nb;
  if (nn == C(0)) return;
  const T d = mb - mean;
  const T fb = (T)nb / (T)nn;
  mean = mean + d * fb;
  m2 = m2 + m2b + d * d * ((T)n * fb);
  n = nn;
}
template <int LANES, class C, class T> __device__ __forceinline__ void ww_rc_welford(C &n, T &mean, T &m2) {
#pragma unroll
  for (int o = (LANES < 32 ? LANES : 32) / 2; o > 0; o /= 2) {
    const C on = __shfl_xor_sync(0xffffffffu, n, o);
    const T om = __shfl_xor_sync(0xffffffffu, mean, o);
    const T oq = __shfl_xor_sync(0xffffffffu, m2, o);
    if (threadIdx.x & o) {
      C an = on; T am = om, aq = oq;
      ww_rc_chan(an, am, aq, n, mean, m2);
      n = an; mean = am; m2 = aq;
    } else {
      ww_rc_chan(n, mean, m2, on, om, oq);
    }
  }
  if (LANES > 32) {
    __shared__ C ww_wn[LANES / 32 > 0 ? LANES / 32 : 1];
    __shared__ T ww_wm[LANES / 32 > 0 ? LANES / 32 : 1];
    __shared__ T ww_wq[LANES / 32 > 0 ? LANES / 32 : 1];
    __syncthreads();
    if (threadIdx.x % 32 == 0) {
      ww_wn[threadIdx.x / 32] = n; ww_wm[threadIdx.x / 32] = mean; ww_wq[threadIdx.x / 32] = m2;
    }
    __syncthreads();
    n = ww_wn[0]; mean = ww_wm[0]; m2 = ww_wq[0];
    for (int w = 1; w < LANES / 32; ++w) ww_rc_chan(n, mean, m2, ww_wn[w], ww_wm[w], ww_wq[w]);
  }
}
#endif
"""


def generate_edits(rk: RowKernel, mp: Mapping, data: bytes) -> list[Edit]:
    """Return the edits that turn the kernel into its row-cooperative form (launches not included)."""
    lanes = mp.lanes
    edits: list[Edit] = []
    helpers = "" if b"WARPWISE_ROW_COOPERATIVE_HELPERS" in data else HELPERS + "\n"
    if "welford" in rk.ops and b"WARPWISE_ROW_COOPERATIVE_WELFORD" not in data:
        helpers += WELFORD_HELPERS + "\n"
    if helpers:
        at = _annotation_start(data, rk.fn_start)  # The helpers go above the kernel's `// warpwise:` lines.
        edits.append(Edit(at, at, helpers))
    if mp.mode == "warp":
        head = (
            f"\n  // warpwise row-cooperative-reduction: {mp.describe()} ({rk.summary}), launched with blocks of "
            f"{mp.block} threads.\n"
            f"  const int ww_lane = (int)(threadIdx.x % 32u);\n"
            f"  const unsigned ww_row = blockIdx.x * {mp.rows}u + threadIdx.x / 32u;\n"
        )
        if rk.grid_stride:
            head += f"  const unsigned ww_row_stride = gridDim.x * {mp.rows}u;\n"
        barrier = "__syncwarp();"
    else:
        head = (
            f"\n  // warpwise row-cooperative-reduction: {mp.describe()} ({rk.summary}), one block per row.\n"
            f"  const int ww_lane = (int)threadIdx.x;\n"
            f"  const unsigned ww_row = blockIdx.x;\n"
        )
        if rk.grid_stride:
            head += "  const unsigned ww_row_stride = gridDim.x;\n"
        barrier = "__syncthreads();"
    edits.append(Edit(rk.body_open, rk.body_open, head))
    for a, b in rk.row_spans:
        edits.append(Edit(a, b, "ww_row"))
    for a, b in rk.stride_spans:
        edits.append(Edit(a, b, "ww_row_stride"))
    for a, b in rk.lane0:
        text = data[a:b].decode("utf-8", "replace")
        edits.append(Edit(a, b, f"{{ if (ww_lane == 0) {{ {text} }} }}"))
    for i, lp in enumerate(rk.loops):
        start = data[lp.start[0] : lp.start[1]].decode("utf-8", "replace")
        edits.append(Edit(lp.start[0], lp.start[1], f"({start}) + ww_lane"))
        edits.append(Edit(lp.step[0], lp.step[1], f"{lp.var} += {lanes}"))
        indent = _indent_at(data, lp.stmt[0])
        before = []
        after = []
        for r in lp.reductions:
            red = f"ww_rc_reduce<{lanes}>"
            if r.op == "sum":
                if r.zero_start:
                    after.append(f"{r.var} = {red}({r.var}, ww_rc_add());")
                else:
                    before.append(f"const auto ww_start{i}_{r.var} = {r.var}; {r.var} = 0;")
                    after.append(f"{r.var} = ww_start{i}_{r.var} + {red}({r.var}, ww_rc_add());")
            elif r.op in ("max", "min"):
                after.append(f"{r.var} = {red}({r.var}, ww_rc_{r.op}());")
            elif r.op == "welford":
                # Each lane runs Welford's recurrence over its own elements; its count is the kernel's counter, or
                # one it keeps (`ww_n<i>`, the number of elements this lane has seen, in place of `k - start + 1`).
                n = r.count or f"ww_n{i}"
                if not r.count:
                    before.append(f"int {n} = 0;")
                    edits.append(Edit(r.body_open, r.body_open, f" {n} += 1;"))
                    edits.append(Edit(r.divisor[0], r.divisor[1], n))
                after.append(f"ww_rc_welford<{lanes}>({n}, {r.var}, {r.partner});")
            else:
                after.append(
                    f"{{ const auto ww_m = {red}({r.partner}, ww_rc_max()); "
                    f"{r.var} = {red}({r.var} * {r.exp}({r.partner} - ww_m), ww_rc_add()); {r.partner} = ww_m; }}"
                )
        if lp.stores:
            after.append(barrier)
        if before:
            edits.append(Edit(lp.stmt[0], lp.stmt[0], "".join(f"{b}\n{indent}" for b in before)))
        if after:
            edits.append(Edit(lp.stmt[1], lp.stmt[1], "".join(f"\n{indent}{a}" for a in after)))
    return edits


def _indent_at(data: bytes, offset: int) -> str:
    start = data.rfind(b"\n", 0, offset) + 1
    end = start
    while end < offset and data[end : end + 1] in (b" ", b"\t"):
        end += 1
    return data[start:end].decode()


def _launch_texts(grid: str, block: str, mp: Mapping) -> tuple[str, str]:
    """Return the grid and block of a host launch: the same rows covered, `mp.rows` rows per block."""
    rows = f"(unsigned long long)dim3({grid}).x * dim3({block}).x"
    if mp.rows == 1:
        gx = f"(unsigned)({rows})"
    else:
        gx = f"(unsigned)(({rows} + {mp.rows - 1}) / {mp.rows})"
    return f"dim3({gx}, dim3({grid}).y, dim3({grid}).z)", f"dim3({mp.block})"


def _annotation_start(data: bytes, fn_start: int) -> int:
    """Return the offset of the first `// warpwise:` line directly above a kernel (the kernel's start if none)."""
    end = fn_start
    while end > 0:
        line_start = data.rfind(b"\n", 0, end - 1) + 1
        if not data[line_start:end].strip().startswith(b"// warpwise:"):
            break
        end = line_start
    return end


def _annotation_tokens(data: bytes, fn_start: int) -> list[tuple[str, int, int, str]]:
    """Return (key, start, end, value) of the `grid=` and `block=` tokens of the `// warpwise:` lines above a kernel."""
    out = []
    end = fn_start
    while True:
        line_start = data.rfind(b"\n", 0, max(end - 1, 0)) + 1
        line = data[line_start:end].decode("utf-8", "replace")
        if end == 0 or not line.strip().startswith("// warpwise:"):
            break
        for m in re.finditer(r"(?<![\w.])(grid|block)=", line):
            i, depth = m.end(), 0
            while i < len(line) and (depth or not line[i].isspace()):
                depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(line[i], 0)
                i += 1
            out.append((m.group(1), line_start + m.end(), line_start + len(line[:i].encode()), line[m.end() : i]))
        end = line_start
    return out


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        cur += ch
    return [*parts, cur]


def annotation_edits(data: bytes, fn_start: int, mp: Mapping) -> list[Edit] | None:
    """Return the edits of an annotation's launch: the same rows covered, `mp.rows` rows per block.

    Empty when there is no annotation; None when its block is not one-dimensional.
    """
    toks = {k: (a, b, v) for k, a, b, v in _annotation_tokens(data, fn_start)}
    if "grid" not in toks or "block" not in toks:
        return []
    grid, block = _split_top(toks["grid"][2]), _split_top(toks["block"][2])
    if any(x.strip() not in ("", "1") for x in block[1:]):
        return None
    rows = f"({grid[0]})*({block[0]})"
    gx = rows if mp.rows == 1 else f"({rows}+{mp.rows - 1})/{mp.rows}"
    new_grid = ",".join([gx, *grid[1:]])
    return [
        Edit(toks["grid"][0], toks["grid"][1], new_grid),
        Edit(toks["block"][0], toks["block"][1], str(mp.block)),
    ]


def launch_changes(mp: Mapping) -> tuple[LaunchChange, ...]:
    """Return the launch change for a problem file: the rows the old grid covered, `mp.rows` rows per block."""
    if mp.rows == 1:
        gx = "value * g[1][0]"
    else:
        gx = f"-(-(value * g[1][0]) // {mp.rows})"
    return (
        LaunchChange("grid", 0, gx, f"grid.x = rows covered / {mp.rows}"),
        LaunchChange("block", 0, str(mp.block), f"block.x = {mp.block}"),
        LaunchChange("block", 1, "1", "block.y = 1"),
        LaunchChange("block", 2, "1", "block.z = 1"),
    )


def _mapping(args: dict[str, Any]) -> Mapping:
    return Mapping(str(args.get("mode", "warp")), int(args.get("rows_per_block", 4)), int(args.get("threads", 256)))


def problem_launch_changes(matches: list[Any]) -> tuple[LaunchChange, ...] | None:
    """Return the launch change of the card's rewrite for a problem file's launch of the first match's kernel."""
    if not matches:
        return None
    return launch_changes(_mapping(dict(matches[0].card.header.anchor.args)))


# ---------------------------------------------------------------------------------------------------------------
# Registered matcher, check and rewrite.


@matcher("row_cooperative_reduction")
def row_cooperative_reduction(ctx: MatchContext, **_mapping: Any) -> Iterator[Region]:
    """Find kernels in which each thread walks a whole row and reduces it (the anchor's mapping is the rewrite's)."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    rk, _ = recognise(ctx.model, fn)
    if rk is None:
        return
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"row-cooperative:{fn.name}",
        {"kernel": fn.name, "row_kernel": rk, "row": rk.row, "what": rk.summary, "loops": str(len(rk.loops))},
    )


def _already_coalesced(fn: Function, rk: RowKernel) -> bool:
    """Return whether every global load of the row loops is contiguous (or the same) across adjacent threads, as the
    kernel model classifies it: a sliding window (`in[idx + i]`) is not a row walk, each of its loads is coalesced."""
    spans = [lp.stmt for lp in rk.loops]
    reads = [
        a
        for a in fn.accesses
        if a.space is MemorySpace.GLOBAL
        and a.kind is AccessKind.READ
        and any(lo <= fn.base + a.span[0] < hi for lo, hi in spans)
    ]
    return bool(reads) and all(a.pattern in (AccessPattern.CONTIGUOUS, AccessPattern.UNIFORM) for a in reads)


@check("row_launches_rewritable")
def row_launches_rewritable(ctx: CheckContext) -> Verdict:
    """Hold when every launch of the kernel in the file can be rewritten to the row grid (or there is none)."""
    rk: RowKernel | None = ctx.fact("row_kernel")
    if rk is None:
        return unknown("no row kernel was recognised here")
    if annotation_edits(ctx.model.text, rk.fn_start, Mapping()) is None:
        return unknown(f"the `// warpwise:` annotation of `{rk.kernel}` launches a block of more than one dimension")
    for host, launch in ctx.model.launches_of(rk.kernel):  # in-file launches only: spec launches change apart
        if launch_syntax(ctx.model, host, launch) is None:
            return unknown(f"the launch of `{rk.kernel}` in `{host.name}` cannot be rewritten to a grid over rows")
    return holds(f"every launch of `{rk.kernel}` in this file can be rewritten to a grid over rows")


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Make the lanes of a warp (or a block) share each row, and rewrite the kernel's launches in the file."""
    rk: RowKernel | None = ctx.fact("row_kernel")
    if rk is None:
        rk, _ = recognise(ctx.model, ctx.function)
        if rk is None:
            return None
    mp = _mapping(ctx.args)
    if mp.problems():
        return None
    if ctx.function.launch_bounds is not None:
        return None  # A kernel with its own launch bounds may not take the new block size.
    edits = generate_edits(rk, mp, ctx.data)
    notes = annotation_edits(ctx.data, rk.fn_start, mp)
    if notes is None:
        return None  # An annotation with a 2-D block: its launch cannot become a grid over rows.
    edits += notes
    for host, launch in ctx.model.launches_of(rk.kernel):  # in-file launches only: spec launches change apart
        ls = launch_syntax(ctx.model, host, launch)
        if ls is None:
            return None
        grid, block = _launch_texts(node_text(ctx.model, ls.grid), node_text(ctx.model, ls.block), mp)
        edits.append(Edit(ls.grid.start_byte, ls.grid.end_byte, grid))
        edits.append(Edit(ls.block.start_byte, ls.block.end_byte, block))
    return sorted(edits)


def rewrite_source(model: FileModel, kernel: str, mapping: Mapping | None = None) -> bytes | None:
    """Return the file's text with one kernel rewritten (None when it is not a recognised row kernel)."""
    from warpwise.skills.rewrite import apply_edits

    fn = next((f for f in model.functions if f.name == kernel and f.kind is FunctionKind.KERNEL), None)
    if fn is None:
        return None
    rk, _ = recognise(model, fn)
    if rk is None:
        return None
    mp = mapping or Mapping()
    region = Region(AnchorKind.KERNEL, fn, fn.name_span, f"row-cooperative:{kernel}", {"row_kernel": rk})
    args = {"mode": mp.mode, "rows_per_block": mp.rows_per_block, "threads": mp.threads}
    edits = rewrite(RewriteContext(model, fn, region, args))
    if edits is None:
        return None
    return apply_edits(model.text, edits)


__all__ = [
    "HELPERS",
    "MAPPING_CHOICES",
    "WELFORD_HELPERS",
    "Mapping",
    "Reduction",
    "RowKernel",
    "RowLoop",
    "annotation_edits",
    "generate_edits",
    "launch_changes",
    "problem_launch_changes",
    "recognise",
    "rewrite",
    "rewrite_source",
    "row_cooperative_reduction",
    "row_launches_rewritable",
    "search_variants",
]


def search_variants(matches: list[Any]) -> list[tuple[str, dict[str, Any], list[Any]]]:
    """Return the search's parameter choices: (label, rewrite arguments, launch steps for a problem file).

    A launch step `(block, scale)` sets the block and, along the scaled axes, keeps the number of threads: the
    first step turns a grid of threads over rows into a grid of blocks of `rows` rows, the second sets the block.
    """
    out = []
    for mp in MAPPING_CHOICES:
        args = {"mode": mp.mode, "rows_per_block": mp.rows_per_block, "threads": mp.threads}
        launch = [((mp.rows, 1, 1), (True, False, False)), ((mp.block, 1, 1), (False, False, False))]
        label = f"warp per row x{mp.rows_per_block}" if mp.mode == "warp" else f"block of {mp.threads} per row"
        out.append((label, args, launch))
    return out
