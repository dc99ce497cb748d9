"""Rules of the `strided-transpose-access` card (Stage the transpose through a padded shared tile): what only this
card uses.

Registered here: matcher `transposed_global_copies`. The rewrite `tiled_transpose` replaces the body of a kernel
that `recognise_transpose` reads as a strided copy `dst[b * LD + a] = src[a * LS + b]` over a rectangle (index
expressions read as integer polynomials, locals expanded, `idx / n` and `idx % n` folded back into `idx`, guards
read as bounds of the two coordinates) by a tiled copy that is correct for any launch (`tiled_body`); the search
picks a tile size and a launch (`search_variants`). The card's rewrite and the recognisers only it needs live here
too; what several cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`,
`.facts*`). The library imports this file by path as `warpwise.skills.cards.strided_transpose_access`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.facts_memory import KernelSyntax, kernel_syntax, lane_class, squash, unparen
from warpwise.analyzers.model import Access, AccessKind, AccessPattern, FileModel, Function, FunctionKind, MemorySpace
from warpwise.skills.matchers.memory import _within, index_form
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher
from warpwise.skills.rewrite import Edit, RewriteContext


@dataclass(frozen=True)
class TransposePair:
    """A global store whose value is a global load of the transposed element."""

    write: Access
    read: Access
    strided: Access
    assignment: Any


def transpose_pairs(ctx_model: FileModel, fn: Function, ks: KernelSyntax) -> list[TransposePair]:
    """Return `dst[...] = src[...]` pairs where one side is contiguous along x and the other along y."""
    out = []
    for w in fn.accesses:
        if w.space is not MemorySpace.GLOBAL or w.kind is not AccessKind.WRITE:
            continue
        node = ks.node.descendant_for_byte_range(*fn.span(w.span))
        parent = node.parent if node is not None else None
        while parent is not None and parent.type in ("parenthesized_expression",):
            parent = parent.parent
        if parent is None or parent.type != "assignment_expression":
            continue
        right = parent.child_by_field_name("right")
        if right is None:
            continue
        wf = index_form(ks, fn, w)
        for r in fn.accesses:
            if r.space is not MemorySpace.GLOBAL or r.kind is not AccessKind.READ or not _within(r.span, right, fn):
                continue
            rf = index_form(ks, fn, r)
            wx, wy, rx, ry = (
                lane_class(wf, "tid.x"),
                lane_class(wf, "tid.y"),
                lane_class(rf, "tid.x"),
                lane_class(rf, "tid.y"),
            )
            if (wx, wy, rx, ry) == ("strided", "contiguous", "contiguous", "strided"):
                out.append(TransposePair(w, r, w, parent))
            elif (wx, wy, rx, ry) == ("contiguous", "strided", "strided", "contiguous"):
                out.append(TransposePair(w, r, r, parent))
    return out


@matcher("transposed_global_copies")
def transposed_global_copies(ctx: MatchContext, **_rewrite_args: Any) -> Iterator[Region]:
    """Find transpose-like stores: one side walks rows along `threadIdx.x`, the other walks columns."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    if not any(
        a.space is MemorySpace.GLOBAL and a.pattern in (AccessPattern.STRIDED, AccessPattern.INDIRECT)
        for a in fn.accesses
    ):
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    tk, _ = recognise_transpose(ctx.model, fn)
    pairs = transpose_pairs(ctx.model, fn, ks)
    for pair in pairs:
        s = pair.strided
        other = pair.read if s is pair.write else pair.write
        yield Region(
            AnchorKind.ACCESS,
            fn,
            s.span,
            f"transpose:{s.base}:{s.span[0]}",
            {
                "kernel": fn.name,
                "pair": pair,
                "transpose_kernel": tk,
                "strided": f"{s.base}[{s.index}]",
                "contiguous": f"{other.base}[{other.index}]",
                "side": "written" if s is pair.write else "read",
                "other_side": "read" if s is pair.write else "written",
                "array": s.base,
            },
        )
    if pairs or tk is None:
        return
    # A transpose the lane classes do not see (a 1-D launch with `idx / n` and `idx % n`): anchor on its access.
    name = tk.dst if tk.strided == "written" else tk.src
    other_name = tk.src if name == tk.dst else tk.dst
    kind = AccessKind.WRITE if name == tk.dst else AccessKind.READ
    acc = [a for a in fn.accesses if a.space is MemorySpace.GLOBAL and a.base == name and a.kind is kind]
    oth = [a for a in fn.accesses if a.space is MemorySpace.GLOBAL and a.base == other_name]
    if len(acc) != 1 or len(oth) != 1:
        return
    s, o = acc[0], oth[0]
    yield Region(
        AnchorKind.ACCESS,
        fn,
        s.span,
        f"transpose:{s.base}:{s.span[0]}",
        {
            "kernel": fn.name,
            "pair": None,
            "transpose_kernel": tk,
            "strided": f"{s.base}[{s.index}]",
            "contiguous": f"{o.base}[{o.index}]",
            "side": tk.strided,
            "other_side": "read" if tk.strided == "written" else "written",
            "array": s.base,
        },
    )


# ---------------------------------------------------------------------------------------------------------------
# The general transformation: recognise what a kernel computes (a strided copy `dst[b * LD + a] = src[a * LS + b]`
# over a rectangle of (a, b)), whatever its spelling and launch, and replace it by a tiled copy.

_TBUILTIN = ("threadIdx.", "blockIdx.", "blockDim.", "gridDim.")
_VARYING = ("threadIdx.", "blockIdx.", "@", "~")  # thread indices, loop counters (@j), divisions and remainders (~)
_MAX_DIVISOR_TRIES = 64


class _NotTranspose(Exception):
    """Why a kernel is not a strided copy the transformation handles (one line, naming identifiers)."""


def _varying(atom: str) -> bool:
    return atom.startswith(_VARYING)


@dataclass(frozen=True)
class TransposeKernel:
    """A kernel that computes `dst[b * ld_dst + a] = src[a * ld_src + b]` for every a < rows, b < cols.

    The C texts (`rows`, `cols`, `ld_src`, `ld_dst`) read only parameters, macros and constants, never the launch.
    """

    kernel: str
    src: str
    dst: str
    elem: str
    rows: str
    cols: str
    ld_src: str
    ld_dst: str
    body: tuple[int, int]
    strided: str
    same_type: bool
    plain: dict[str, str]
    python: dict[str, str | None]

    @property
    def summary(self) -> str:
        """Return the copy in words."""
        p = self.plain
        return (
            f"`{self.dst}[col * {p['ld_dst']} + row] = {self.src}[row * {p['ld_src']} + col]` "
            f"for row < {p['rows']}, col < {p['cols']}"
        )


class _Reader:
    """Reads one kernel's index expressions as integer polynomials (`warpwise.analyzers.expr.poly.Poly`).

    Locals are expanded through their single definition; a loop counter is the atom `@name`; `e / d` and `e % d`
    with a divisor `d` the same for every thread are atoms `~div:<e>:<d>` and `~mod:<e>:<d>` of the divided
    polynomial, so that `idx`, `(idx / n) * n + idx % n` and `r * n + c` compare equal after `_unfold`.
    """

    def __init__(self, model: FileModel, fn: Function, body: Any) -> None:
        self.model = model
        self.fn = fn
        self.params = {p.name: p for p in fn.params}
        self.defs: dict[str, list[Any]] = {}
        self.loops: dict[str, tuple[int, Any]] = {}
        self.divs: dict[str, tuple[Any, Any, str]] = {}
        stack = [body]
        while stack:
            n = stack.pop()
            if n.type == "init_declarator":
                d = n.child_by_field_name("declarator")
                if d is not None and d.type == "identifier":
                    self.defs.setdefault(self.text(d), []).append(n.child_by_field_name("value"))
            elif n.type in ("assignment_expression", "update_expression"):
                t = n.child_by_field_name("left") or n.child_by_field_name("argument")
                if t is not None and unparen(t).type == "identifier":
                    self.defs.setdefault(self.text(unparen(t)), []).append(None)
            stack.extend(n.named_children)

    def text(self, node: Any) -> str:
        return self.model.text[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def value(self, p: Any) -> int | None:
        """Return the value of a polynomial over integer macros, or None."""
        total = 0
        for m, c in p.terms.items():
            for x in m:
                if x not in self.model.constants:
                    return None
                c *= self.model.constants[x]
            total += c
        return total

    def poly(self, node: Any, depth: int = 0) -> Any:
        from warpwise.analyzers.expr.poly import Poly

        if node is None or depth > 32:
            raise _NotTranspose("an index expression is too deep to read")
        node = unparen(node)
        t = node.type
        if t == "number_literal":
            raw = self.text(node).rstrip("uUlL")
            try:
                return Poly.const(int(raw, 0))
            except ValueError:
                raise _NotTranspose(f"`{self.text(node)}` is not an integer") from None
        if t == "identifier":
            name = self.text(node)
            if name in self.loops:
                return Poly.atom("@" + name)
            if name in self.params:
                if name in self.defs:
                    raise _NotTranspose(f"parameter `{name}` is assigned in `{self.fn.name}`")
                return Poly.atom(name)
            if name in self.defs:
                d = self.defs[name]
                if len(d) != 1 or d[0] is None:
                    raise _NotTranspose(f"`{name}` is assigned more than once")
                return self.poly(d[0], depth + 1)
            if name in self.model.constants:
                return Poly.atom(name)
            raise _NotTranspose(f"`{name}` is neither a parameter, a local nor an integer macro")
        if t == "field_expression":
            txt = squash(self.text(node))
            if txt.startswith(_TBUILTIN) and txt[-1] in "xyz" and txt.count(".") == 1:
                return Poly.atom(txt)
            raise _NotTranspose(f"`{txt}` is not a thread index")
        if t == "cast_expression":
            ty = squash(self.text(node.child_by_field_name("type")))
            if not any(k in ty for k in ("int", "long", "size_t", "unsigned", "short", "ptrdiff_t")):
                raise _NotTranspose(f"the cast to `{ty}` is not an integer cast")
            return self.poly(node.child_by_field_name("value"), depth + 1)
        if t == "unary_expression":
            op = self.text(node.child_by_field_name("operator"))
            a = self.poly(node.child_by_field_name("argument"), depth + 1)
            if op == "+":
                return a
            if op == "-":
                return a.scale(-1)
        if t == "binary_expression":
            op = self.text(node.child_by_field_name("operator"))
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if op in ("+", "-", "*"):
                a, b = self.poly(left, depth + 1), self.poly(right, depth + 1)
                return a + b if op == "+" else a - b if op == "-" else a * b
            if op in ("/", "%"):
                a, b = self.poly(left, depth + 1), self.poly(right, depth + 1)
                if any(_varying(x) for m in b.terms for x in m):
                    raise _NotTranspose(f"`{self.text(node)}` divides by a value that differs between threads")
                if b.constant() is not None and b.constant() == 1:
                    return a if op == "/" else Poly.const(0)
                key = f"{_pkey(a)}:{_pkey(b)}"
                self.divs[key] = (a, b, key)
                return Poly.atom(f"~{'div' if op == '/' else 'mod'}:{key}")
        raise _NotTranspose(f"`{self.text(node)}` is not an integer expression of thread indices and sizes")


def _pkey(p: Any) -> str:
    return "+".join(f"{c}*{'*'.join(m) or '1'}" for m, c in sorted(p.terms.items()))


def _unfold(reader: _Reader, p: Any) -> Any:
    """Replace each divided polynomial `e` that occurs whole in `p` by `(e / d) * d + e % d` (exact in C for e >= 0)."""
    from warpwise.analyzers.expr.poly import Poly

    for a, b, key in reader.divs.values():
        if not a.terms or any(p.terms.get(m) != c for m, c in a.terms.items()):
            continue
        p = p - a + Poly.atom(f"~div:{key}") * b + Poly.atom(f"~mod:{key}")
    return p


def _divide_mono(m: tuple[str, ...], d: tuple[str, ...]) -> tuple[str, ...] | None:
    rest = list(m)
    for x in d:
        if x not in rest:
            return None
        rest.remove(x)
    return tuple(rest)


def _divisors(n: int) -> list[int]:
    n = abs(n)
    out = [d for d in range(1, min(n, 4096) + 1) if n % d == 0]
    return sorted(out, reverse=True)[:_MAX_DIVISOR_TRIES]


def _exact_quotient(q: Any, b: Any) -> Any:
    """Return L with b * L == q and L free of thread-varying atoms, or None."""
    from warpwise.analyzers.expr.poly import Poly

    if not b.terms or not q.terms:
        return None
    mb, cb = min(b.terms.items())
    for mq, cq in q.terms.items():
        rest = _divide_mono(mq, mb)
        if rest is None or cq % cb or any(_varying(x) for x in rest):
            continue
        cand = Poly({rest: cq // cb})
        if (b * cand).key() == q.key():
            return cand
    return None


def _split(r: Any) -> list[tuple[Any, Any, Any]]:
    """Return the ways to write r as a * L + b (L free of thread-varying atoms, a and b thread-varying)."""
    from warpwise.analyzers.expr.poly import Poly

    seen, out = set(), []
    for m, c in r.terms.items():
        inv = tuple(x for x in m if not _varying(x))
        if len(inv) == len(m):
            continue
        for d in _divisors(c):
            lm = Poly({inv: d}) if inv or d != 1 else None
            if lm is None or lm.key() in seen:
                continue
            seen.add(lm.key())
            a, b = Poly(), Poly()
            for m2, c2 in r.terms.items():
                rest = _divide_mono(m2, inv)
                if rest is not None and c2 % d == 0 and any(_varying(x) for x in rest):
                    a = a + Poly({rest: c2 // d})
                else:
                    b = b + Poly({m2: c2})
            if a.terms and b.terms and all(any(_varying(x) for x in mb) for mb in b.terms):
                out.append((a, lm, b))
    return out


def _c_text(p: Any) -> str:
    """Return a thread-invariant polynomial as a C expression in 64-bit arithmetic."""
    if not p.terms:
        return "0LL"
    parts = []
    for m, c in sorted(p.terms.items()):
        factors = [f"(long long)({x})" for x in m]
        if c != 1 or not factors:
            factors.insert(0, f"{c}LL")
        parts.append(" * ".join(factors))
    return " + ".join(parts).replace("+ -", "- ")


def _plain(p: Any) -> str:
    """Return a thread-invariant polynomial as C text for people."""
    parts = []
    for m, c in sorted(p.terms.items()):
        fs = [*([str(c)] if c != 1 or not m else []), *m]
        parts.append(" * ".join(fs))
    return " + ".join(parts).replace("+ -", "- ") or "0"


def _py_text(p: Any, model: FileModel, params: set[str]) -> str | None:
    """Return a thread-invariant polynomial as Python over a problem file's `inputs` (None if it reads a macro)."""
    parts = []
    for m, c in sorted(p.terms.items()):
        fs = [str(c)]
        for x in m:
            if x in params:
                fs.append(f"int(inputs[{x!r}])")
            elif x in model.constants:
                fs.append(str(model.constants[x]))
            else:
                return None
        parts.append(" * ".join(fs))
    return " + ".join(parts) or "0"


_CMP = ("<", "<=", ">", ">=")
_SIDE_EFFECTS = ("call_expression", "assignment_expression", "update_expression")


def _stmts(node: Any) -> list[Any]:
    if node is None:
        return []
    if node.type == "compound_statement":
        return [c for c in node.named_children if c.type != "comment"]
    return [node]


def _is_return(node: Any) -> bool:
    items = _stmts(node)
    return len(items) == 1 and items[0].type == "return_statement" and items[0].named_child_count == 0


class _Scan:
    """The statements of a candidate kernel: index declarations, guards, loops over a counter and one store."""

    def __init__(self, reader: _Reader) -> None:
        self.r = reader
        self.store: Any = None
        self.guards: list[tuple[Any, bool]] = []

    def block(self, stmts: list[Any], guards: list[tuple[Any, bool]]) -> None:
        guards = list(guards)
        for st in stmts:
            t = st.type
            if t == "declaration":
                if any(n.type in _SIDE_EFFECTS for n in _walk(st)) or "__shared__" in self.r.text(st):
                    raise _NotTranspose("a declaration calls a function or assigns")
                continue
            if t == "compound_statement":
                self.block(_stmts(st), guards)
            elif t == "if_statement":
                if st.child_by_field_name("alternative") is not None:
                    raise _NotTranspose("an `if` has an `else` branch")
                cond = st.child_by_field_name("condition")
                cond = cond.child_by_field_name("value") if cond is not None else None
                if cond is None:
                    raise _NotTranspose("an `if` condition is not an expression")
                if _is_return(st.child_by_field_name("consequence")):
                    guards.append((cond, True))
                else:
                    self.block(_stmts(st.child_by_field_name("consequence")), [*guards, (cond, False)])
            elif t == "for_statement":
                self.loop(st, guards)
            elif t == "while_statement":
                self.while_loop(st, stmts, guards)
            elif t == "expression_statement":
                if self.store is not None:
                    raise _NotTranspose("the kernel stores more than once")
                self.store = (st, guards)
            elif t == "return_statement" and st.named_child_count == 0 and st is stmts[-1]:
                continue
            else:
                raise _NotTranspose(f"a `{t.replace('_', ' ')}` is not part of a strided copy")

    def while_loop(self, st: Any, stmts: list[Any], guards: list[tuple[Any, bool]]) -> None:
        """Read `int j = S; while (j < E) { ...; j += K; }` as the `for` loop it is."""
        cond = st.child_by_field_name("condition")
        cond = cond.child_by_field_name("value") if cond is not None else None
        body = _stmts(st.child_by_field_name("body"))
        cond = unparen(cond) if cond is not None else None
        if cond is None or cond.type != "binary_expression" or not body:
            raise _NotTranspose("a `while` loop is not `while (counter < bound)`")
        var = self.r.text(unparen(cond.child_by_field_name("left")))
        inits = [
            d.child_by_field_name("value")
            for prev in stmts
            if prev.type == "declaration" and prev.end_byte <= st.start_byte
            for d in prev.children_by_field_name("declarator")
            if d.type == "init_declarator" and self.r.text(d.child_by_field_name("declarator")) == var
        ]
        last = body[-1]
        if len(inits) != 1 or len(self.r.defs.get(var, [])) != 2 or last.type != "expression_statement":
            raise _NotTranspose(f"the `while` loop over `{var}` does not start it once and step it at the end")
        self.counted(var, inits[0], cond, last.named_children[0], body[:-1], guards, st)

    def loop(self, st: Any, guards: list[tuple[Any, bool]]) -> None:
        init, cond, upd = (st.child_by_field_name(k) for k in ("initializer", "condition", "update"))
        if init is None or cond is None or upd is None:
            raise _NotTranspose("a `for` loop lacks an initializer, a condition or an update")
        var, start = None, None
        if init.type == "declaration":
            ds = [d for d in init.children_by_field_name("declarator") if d.type == "init_declarator"]
            if len(ds) == 1:
                var, start = self.r.text(ds[0].child_by_field_name("declarator")), ds[0].child_by_field_name("value")
        elif init.type == "assignment_expression" and self.r.text(init.child_by_field_name("operator")) == "=":
            var, start = self.r.text(init.child_by_field_name("left")), init.child_by_field_name("right")
        if var is None or start is None:
            raise _NotTranspose("a `for` loop does not start one counter")
        self.counted(var, start, cond, upd, _stmts(st.child_by_field_name("body")), guards, st)

    def counted(
        self, var: str, start: Any, cond: Any, upd: Any, body: list[Any], guards: list[tuple[Any, bool]], st: Any
    ) -> None:
        """Register a counted loop `var = start; var < bound; var += step` and read its body."""
        s0 = self.r.value(self.r.poly(start))
        if s0 is None or s0 < 0:
            raise _NotTranspose(f"loop counter `{var}` does not start at a non-negative constant")
        cond = unparen(cond)
        if cond.type != "binary_expression" or self.r.text(cond.child_by_field_name("operator")) != "<":
            raise _NotTranspose(f"the condition of the loop over `{var}` is not `{var} < bound`")
        if self.r.text(unparen(cond.child_by_field_name("left"))) != var:
            raise _NotTranspose(f"the condition of the loop over `{var}` is not `{var} < bound`")
        bound = self.r.poly(cond.child_by_field_name("right"))
        if any(_varying(x) for m in bound.terms for x in m):
            raise _NotTranspose(f"the bound of the loop over `{var}` differs between threads")
        step = None
        upd = unparen(upd)
        if upd.type == "update_expression" and self.r.text(upd).replace(var, "").strip() == "++":
            step = 1
        elif upd.type == "assignment_expression" and self.r.text(unparen(upd.child_by_field_name("left"))) == var:
            op = self.r.text(upd.child_by_field_name("operator"))
            if op == "+=":
                step = self.r.value(self.r.poly(upd.child_by_field_name("right")))
        if step is None or step <= 0:
            raise _NotTranspose(f"loop counter `{var}` does not step by a positive constant")
        for n in (x for b in body for x in _walk(b)):
            if n.type in ("assignment_expression", "update_expression"):
                t = n.child_by_field_name("left") or n.child_by_field_name("argument")
                if t is not None and self.r.text(unparen(t)) == var:
                    raise _NotTranspose(f"loop counter `{var}` is changed inside its loop")
        self.r.loops[var] = (s0, st)
        self.block(body, guards)


def _walk(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.named_children)


def _conjuncts(r: _Reader, node: Any, neg: bool) -> list[tuple[Any, Any]]:
    """Return a guard as `lhs < rhs` polynomial pairs whose conjunction it is (or raise)."""
    from warpwise.analyzers.expr.poly import Poly

    node = unparen(node)
    if node.type == "unary_expression" and r.text(node.child_by_field_name("operator")) == "!":
        return _conjuncts(r, node.child_by_field_name("argument"), not neg)
    if node.type != "binary_expression":
        raise _NotTranspose(f"the guard `{r.text(node)}` is not a comparison")
    op = r.text(node.child_by_field_name("operator"))
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if (op == "&&" and not neg) or (op == "||" and neg):
        return _conjuncts(r, left, neg) + _conjuncts(r, right, neg)
    if op not in _CMP:
        raise _NotTranspose(f"the guard `{r.text(node)}` is not a conjunction of comparisons")
    a, b = r.poly(left), r.poly(right)
    one = Poly.const(1)
    if neg:
        op = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
    if op == "<":
        return [(a, b)]
    if op == "<=":
        return [(a, b + one)]
    if op == ">":
        return [(b, a)]
    return [(b, a + one)]


def _nonnegative(r: _Reader, p: Any) -> bool:
    """Whether every term of p is a positive multiple of atoms that are never negative."""
    for m, c in p.terms.items():
        if c <= 0:
            return False
        for x in m:
            if x.startswith(_TBUILTIN) or x.startswith("@"):
                continue
            if x.startswith("~"):
                key = x.split(":", 1)[1]
                num = r.divs.get(key)
                if num is None or not _nonnegative(r, num[0]) or not _positive_invariant(r, num[1]):
                    return False
                continue
            if r.model.constants.get(x, -1) > 0:
                continue
            return False
    return True


def _positive_invariant(r: _Reader, p: Any) -> bool:
    """Whether a divisor is positive in every run we accept: a positive constant, or sizes (parameters, macros)."""
    c = p.constant()
    if c is not None:
        return c > 0
    return all(v > 0 for v in p.terms.values()) and all(
        not _varying(x) and not x.startswith(_TBUILTIN) for m in p.terms for x in m
    )


def _mod_divisor(r: _Reader, p: Any) -> Any:
    """Return d when p is exactly the atom `e % d`, else None."""
    if len(p.terms) == 1:
        ((m, c),) = p.terms.items()
        if c == 1 and len(m) == 1 and m[0].startswith("~mod:"):
            got = r.divs.get(m[0].split(":", 1)[1])
            return got[1] if got is not None else None
    return None


def _launch_free(p: Any) -> bool:
    return all(not x.startswith(_TBUILTIN) and not _varying(x) for m in p.terms for x in m)


def recognise_transpose(model: FileModel, fn: Function) -> tuple[TransposeKernel | None, str]:
    """Return the strided copy a kernel computes, or None and why not (one line)."""
    from warpwise.analyzers.facts import function_node

    if fn.kind is not FunctionKind.KERNEL:
        return None, f"`{fn.name}` is not a kernel"
    node = function_node(model, fn)
    body = node.child_by_field_name("body") if node is not None else None
    if body is None:
        return None, f"`{fn.name}` has no body"
    if fn.template_params:
        return None, f"`{fn.name}` is a template"
    try:
        return _recognise_transpose(model, fn, body), ""
    except _NotTranspose as exc:
        return None, f"`{fn.name}`: {exc}"


def _element(r: _Reader, node: Any) -> tuple[str, Any]:
    """Return (pointer parameter, index polynomial) of `p[i]` or `*(p + i)`."""
    node = unparen(node)
    if node.type == "subscript_expression":
        arr = unparen(node.child_by_field_name("argument"))
        idx = node.child_by_field_name("indices") or node.child_by_field_name("index")
        if idx is not None and idx.type == "subscript_argument_list":
            items = [c for c in idx.named_children if c.type != "comment"]
            idx = items[0] if len(items) == 1 else None
        name = r.text(arr) if arr is not None and arr.type == "identifier" else ""
        p = r.params.get(name)
        if p is None or not p.is_pointer or p.pointer_depth != 1 or idx is None:
            raise _NotTranspose(f"`{r.text(node)}` is not an element of a pointer parameter")
        return name, r.poly(idx)
    if node.type == "pointer_expression" and r.text(node.child_by_field_name("operator")) == "*":
        arg = unparen(node.child_by_field_name("argument"))
        if arg.type == "binary_expression" and r.text(arg.child_by_field_name("operator")) == "+":
            for base, off in ((arg.child_by_field_name("left"), arg.child_by_field_name("right")),) * 1:
                for b, o in ((base, off), (off, base)):
                    b = unparen(b)
                    p = r.params.get(r.text(b)) if b.type == "identifier" else None
                    if p is not None and p.is_pointer and p.pointer_depth == 1:
                        return r.text(b), r.poly(o)
    raise _NotTranspose(f"`{r.text(node)}` is not an element of a pointer parameter")


def _elem_type(p: Any) -> str:
    words = [w for w in p.base_type.replace("*", " ").split() if w not in ("const", "volatile", "__restrict__")]
    return " ".join(words)


def _recognise_transpose(model: FileModel, fn: Function, body: Any) -> TransposeKernel:
    r = _Reader(model, fn, body)
    scan = _Scan(r)
    scan.block(_stmts(body), [])
    if scan.store is None:
        raise _NotTranspose("the kernel stores nothing")
    st, guards = scan.store
    e = st.named_children[0] if st.named_child_count == 1 else None
    if e is None or e.type != "assignment_expression" or r.text(e.child_by_field_name("operator")) != "=":
        raise _NotTranspose("the one statement is not a plain assignment `dst[...] = src[...]`")
    dst, w = _element(r, e.child_by_field_name("left"))
    src, rd = _element(r, e.child_by_field_name("right"))
    if dst == src:
        raise _NotTranspose(f"`{dst}` is read and written (an in-place transpose)")
    sp, dp = r.params[src], r.params[dst]
    if "volatile" in sp.type or "volatile" in dp.type:
        raise _NotTranspose("a volatile pointer")
    rd0, w0 = rd, w
    rd, w = _unfold(r, rd), _unfold(r, w)
    conj = [(_unfold(r, a), _unfold(r, b)) for g, neg in guards for a, b in _conjuncts(r, g, neg)]
    why = "the read and write indices are not `a * L + b` and `b * L' + a` of the same two thread coordinates"
    for a, ls, b in _split(rd):
        ld = _exact_quotient(w - a, b)
        if ld is None:
            continue
        got = _domain(r, a, b, ls, ld, conj)
        if isinstance(got, str):
            why = got
            continue
        rows, cols = got
        if not all(_launch_free(p) for p in (rows, cols, ls, ld)):
            why = "a size or stride reads blockDim or gridDim (the rewrite changes the launch)"
            continue
        params = set(r.params)
        tx = ("threadIdx.x",)
        strided = "read" if w0.terms.get(tx) == 1 and rd0.terms.get(tx) != 1 else "written"
        return TransposeKernel(
            fn.name,
            src,
            dst,
            _elem_type(sp),
            _c_text(rows),
            _c_text(cols),
            _c_text(ls),
            _c_text(ld),
            (body.start_byte, body.end_byte),
            strided,
            _elem_type(sp) == _elem_type(dp),
            {k: _plain(v) for k, v in (("rows", rows), ("cols", cols), ("ld_src", ls), ("ld_dst", ld))},
            {
                "rows": _py_text(rows, model, params),
                "cols": _py_text(cols, model, params),
            },
        )
    raise _NotTranspose(why)


def _domain(r: _Reader, a: Any, b: Any, ls: Any, ld: Any, conj: list[tuple[Any, Any]]) -> tuple[Any, Any] | str:
    """Return (rows, cols) when the guards say exactly `a < rows && b < cols`, else why not."""
    if not (_nonnegative(r, a) and _nonnegative(r, b)):
        return "a thread coordinate may be negative"
    bounds: dict[str, list[Any]] = {"a": [], "b": []}
    for coord, p in (("a", a), ("b", b)):
        d = _mod_divisor(r, p)
        if d is not None:
            bounds[coord].append(d)
    flat = []
    for lhs, rhs in conj:
        diff = lhs - rhs
        var = type(diff)({m: c for m, c in diff.terms.items() if any(_varying(x) for x in m)})
        inv = var - diff  # var + (-inv) < 0 ->  var < inv
        if not _launch_free(inv):
            return "a guard compares with blockDim or gridDim"
        if var.key() == a.key():
            bounds["a"].append(inv)
        elif var.key() == b.key():
            bounds["b"].append(inv)
        else:
            flat.append((var, inv))
    for var, inv in flat:  # a * ls + b < rows * ls (with b < ls) says a < rows; likewise for the written index
        for x, y, lead, ybound in ((a, b, ls, "b"), (b, a, ld, "a")):
            if (x * lead + y).key() == var.key() and any(k.key() == lead.key() for k in bounds[ybound]):
                q = _exact_quotient(inv, lead) if lead.terms else None
                if q is not None:
                    bounds["a" if ybound == "b" else "b"].append(q)
                    break
        else:
            return "a guard is not a bound of one coordinate of the copy"
    out = []
    for coord in ("a", "b"):
        keys = {k.key(): k for k in bounds[coord]}
        if len(keys) != 1:
            return f"the guards give {'no' if not keys else 'several'} upper bound for coordinate {coord}"
        out.append(next(iter(keys.values())))
    return out[0], out[1]


TILE_CHOICES = (32, 64)


def tiled_body(tk: TransposeKernel, tile: int = 32) -> str:
    """Return the kernel body of the tiled copy: blocks take T x T tiles in turn, for any grid and block.

    Each block loads a tile of `src` row by row (consecutive threads read consecutive elements), keeps up to four
    loads per thread in flight before writing them to the padded shared tile, synchronises, and writes the tile's
    columns as rows of `dst` (consecutive threads write consecutive elements). Where `src` and `dst` have the same
    element type, both pointers are 16-byte aligned and both leading dimensions are multiples of the vector width
    (checked at run time, the same for the whole grid), the accesses are 16-byte vectors; a vector that would cross
    the matrix edge, and every access otherwise, is element by element.

    Exactness: each element `dst[b * ld_dst + a]` with a < rows, b < cols is written once, with the value the
    original kernel wrote (`src[a * ld_src + b]`, converted by the same assignment; a vector moves the same bytes
    when the types are equal); nothing else is written. The barrier after the loads orders the tile's writes before
    its reads; the one after the stores keeps the next tile's loads from overwriting elements still being read.
    Every thread of a block runs the same number of tile iterations (the bound and step are the same for the
    block), so both barriers are reached by all threads.
    """
    t = int(tile)
    same = "true" if tk.same_type else "false"
    src, dst = tk.src, tk.dst
    return f"""{{
  // warpwise strided-transpose-access: {tk.summary},
  // staged through a padded {t} x {t} shared tile so that both the loads and the stores are contiguous (16-byte
  // vectors where the pointers and sizes allow); correct for any grid and block shape (the blocks take the tiles in
  // turn, the threads of a block share each tile).
  typedef {tk.elem} ww_elem;
  constexpr int WW_T = sizeof(ww_elem) > 8 ? 32 : {t};
  constexpr int WW_V = sizeof(ww_elem) < 16 && 16 % sizeof(ww_elem) == 0 ? (int)(16 / sizeof(ww_elem)) : 1;
  __shared__ ww_elem ww_tile[WW_T][WW_T + 1];
  const long long ww_rows = {tk.rows}, ww_cols = {tk.cols};
  const long long ww_ld_src = {tk.ld_src}, ww_ld_dst = {tk.ld_dst};
  const long long ww_tiles_c = (ww_cols + WW_T - 1) / WW_T;
  const long long ww_tiles = ww_tiles_c * ((ww_rows + WW_T - 1) / WW_T);
  const int ww_t = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int ww_nt = (int)(blockDim.x * blockDim.y * blockDim.z);
  const long long ww_nb = (long long)gridDim.x * gridDim.y * gridDim.z;
  const bool ww_vec = WW_V > 1 && {same} && reinterpret_cast<unsigned long long>({src}) % 16 == 0 &&
                      reinterpret_cast<unsigned long long>({dst}) % 16 == 0 && ww_ld_src % WW_V == 0 &&
                      ww_ld_dst % WW_V == 0;
  const int ww_v = ww_vec ? WW_V : 1;               // elements per access
  const int ww_n = ww_vec ? WW_T * WW_T / WW_V : WW_T * WW_T;  // accesses per tile and phase
  for (long long ww_k = blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z);
       ww_k < ww_tiles; ww_k += ww_nb) {{
    const long long ww_a0 = ww_k / ww_tiles_c * WW_T, ww_b0 = ww_k % ww_tiles_c * WW_T;
    for (int ww_base = 0; ww_base < ww_n; ww_base += 4 * ww_nt) {{
      alignas(16) ww_elem ww_r[4][WW_V];
#pragma unroll
      for (int ww_u = 0; ww_u < 4; ++ww_u) {{
        const int ww_i = ww_base + ww_u * ww_nt + ww_t;
        const int ww_y = ww_vec ? ww_i / (WW_T / WW_V) : ww_i / WW_T;
        const int ww_x = ww_vec ? ww_i % (WW_T / WW_V) * WW_V : ww_i % WW_T;
        const long long ww_a = ww_a0 + ww_y, ww_b = ww_b0 + ww_x;
        if (ww_i < ww_n && ww_a < ww_rows) {{
          if (ww_vec && ww_b + WW_V <= ww_cols) {{
            *reinterpret_cast<uint4*>(ww_r[ww_u]) = *reinterpret_cast<const uint4*>({src} + (ww_a * ww_ld_src + ww_b));
          }} else {{
            for (int ww_e = 0; ww_e < ww_v; ++ww_e)
              if (ww_b + ww_e < ww_cols) ww_r[ww_u][ww_e] = {src}[ww_a * ww_ld_src + ww_b + ww_e];
          }}
        }}
      }}
#pragma unroll
      for (int ww_u = 0; ww_u < 4; ++ww_u) {{
        const int ww_i = ww_base + ww_u * ww_nt + ww_t;
        const int ww_y = ww_vec ? ww_i / (WW_T / WW_V) : ww_i / WW_T;
        const int ww_x = ww_vec ? ww_i % (WW_T / WW_V) * WW_V : ww_i % WW_T;
        if (ww_i < ww_n && ww_a0 + ww_y < ww_rows) {{
#pragma unroll
          for (int ww_e = 0; ww_e < WW_V; ++ww_e)
            if (ww_e < ww_v && ww_b0 + ww_x + ww_e < ww_cols) ww_tile[ww_y][ww_x + ww_e] = ww_r[ww_u][ww_e];
        }}
      }}
    }}
    __syncthreads();
    for (int ww_i = ww_t; ww_i < ww_n; ww_i += ww_nt) {{
      // ww_y: the tile's column (an output row), ww_x: along it.
      const int ww_y = ww_vec ? ww_i / (WW_T / WW_V) : ww_i / WW_T;
      const int ww_x = ww_vec ? ww_i % (WW_T / WW_V) * WW_V : ww_i % WW_T;
      const long long ww_b = ww_b0 + ww_y, ww_a = ww_a0 + ww_x;
      if (ww_b < ww_cols) {{
        if (ww_vec && ww_a + WW_V <= ww_rows) {{
          alignas(16) ww_elem ww_w[WW_V];
#pragma unroll
          for (int ww_e = 0; ww_e < WW_V; ++ww_e) ww_w[ww_e] = ww_tile[ww_x + ww_e][ww_y];
          *reinterpret_cast<uint4*>({dst} + (ww_b * ww_ld_dst + ww_a)) = *reinterpret_cast<const uint4*>(ww_w);
        }} else {{
          for (int ww_e = 0; ww_e < ww_v; ++ww_e)
            if (ww_a + ww_e < ww_rows) {dst}[ww_b * ww_ld_dst + ww_a + ww_e] = ww_tile[ww_x + ww_e][ww_y];
        }}
      }}
    }}
    __syncthreads();
  }}
}}"""


def tiled_transpose(ctx: RewriteContext) -> list[Edit] | None:
    """Replace a recognised strided copy's body by the tiled copy (the launch may stay as it is)."""
    tk = ctx.fact("transpose_kernel")
    if tk is None:
        tk, _ = recognise_transpose(ctx.model, ctx.function)
    if tk is None:
        return None
    if any(p.name.startswith("ww_") for p in ctx.function.params):
        return None  # The generated body's names could shadow a parameter.
    tile = int(ctx.args.get("tile", 32)) if ctx.args else 32
    if tile not in TILE_CHOICES:
        return None
    return [Edit(tk.body[0], tk.body[1], tiled_body(tk, tile))]


def rewrite_source(model: FileModel, kernel: str, tile: int = 32) -> bytes | None:
    """Return the file's text with one kernel's strided copy tiled (None when it is not recognised)."""
    from warpwise.skills.rewrite import apply_edits

    fn = next((f for f in model.functions if f.name == kernel and f.kind is FunctionKind.KERNEL), None)
    if fn is None:
        return None
    tk, _ = recognise_transpose(model, fn)
    if tk is None:
        return None
    region = Region(AnchorKind.KERNEL, fn, fn.name_span, f"transpose:{kernel}", {"transpose_kernel": tk})
    edits = tiled_transpose(RewriteContext(model, fn, region, {"tile": tile}))
    return apply_edits(model.text, edits) if edits else None


def tile_launch_code(tk: TransposeKernel, tile: int, block: tuple[int, int, int] = (32, 8, 1)) -> str | None:
    """Return a problem file's `launch(inputs)` giving one block per tile (None when a size cannot be read)."""
    rows, cols = tk.python.get("rows"), tk.python.get("cols")
    if rows is None or cols is None:
        return None
    t = int(tile)
    return (
        "def launch(inputs):\n"
        f"    tiles = (-(-({rows}) // {t})) * (-(-({cols}) // {t}))\n"
        f"    return (max(1, tiles), 1, 1), {tuple(block)!r}\n"
    )


# The blocks a search may give the tiled kernel (one block per tile); it is correct for any launch, so the launch
# only decides how many threads share a tile.
BLOCK_CHOICES = ((32, 8, 1), (32, 16, 1), (32, 32, 1))


def search_variants(matches: list[Any]) -> list[tuple[str, dict[str, Any], list[Any]]]:
    """Return the search's parameter choices: (label, rewrite arguments, launch steps for a problem file).

    Each tile size comes with the launch kept as it is and with one block of each `BLOCK_CHOICES` shape per tile
    (a `("python", code, block)` step: the geometry from the problem's sizes).
    """
    tk = next((m.region.facts.get("transpose_kernel") for m in matches if m.region.facts.get("transpose_kernel")), None)
    if tk is None:
        return []
    out: list[tuple[str, dict[str, Any], list[Any]]] = []
    for tile in TILE_CHOICES:
        out.append((f"tile {tile}, launch kept", {"tile": tile}, []))
        for block in BLOCK_CHOICES:
            code = tile_launch_code(tk, tile, block)
            if code is not None:
                label = f"tile {tile}, one {block[0]}x{block[1]} block per tile"
                out.append((label, {"tile": tile}, [("python", code, block)]))
    return out
