"""Unstage shared memory: the reads of a shared tile read the global memory the tile was filled from.

A staged kernel copies a tile of a global array into a `__shared__` array, waits at a barrier, and reads the
tile. The simpler kernel reads the global array where it read the tile, and drops the copy (and its barriers when
they order nothing else).

Exact by algebra, per segment. A segment is a block of statements with a `__syncthreads()` among them: the
statements before the barrier fill the tile, those after read it. A statement before it that ends in `return` and
has its own barrier is another code path and is left as it is; any other use of the tile, a macro that names it, or
a `return`/`break`/`continue` before the barrier, and nothing is derived. Every fill must be the assignment
`S[i1]..[in] = P[f]` (under `if`s without `else`, or as `guard ? P[f] : literal`), where `P` is a kernel parameter
pointing at `const` data of the tile's element type, never moved, and `__restrict__` (or every pointer the kernel
writes is): no store of another thread may change what a direct read sees. The indices, `f` and each side of the
guards' comparisons are expanded into integer polynomials over thread-variant atoms (`threadIdx`, loop variables,
subterms that hold them, such as `k / TILE`) and block-uniform ones (parameters the kernel never changes,
`blockIdx`, `blockDim`, top-level uniform locals, the variable of a uniformly stepped loop around the segment); a
name expands into the value of its last definition before the use, when nothing can change it in between
(statements, initializers, `&name`, references, loops around the use). The fill is exact to unstage when `f` and
each guard side are `a1 * i1 + ... + an * in + r` with block-uniform `a`s and `r`, the same for every fill of the
segment: then slot `[x1]..[xn]` holds `P[a1 * x1 + ... + r]` where the guards held (the literal, or an unwritten
slot, where they did not), and each read `S[x1]..[xn]` (whose indices have no side effects, and whose rendered names
mean the same declarations there) becomes `(T)(guards(x) ? P[...] : literal)`, every term in `long long` so that
neither unsigned nor 32-bit arithmetic changes an index. Assumed, not checked: the original's integer arithmetic
does not overflow, and a signed value it compares with an unsigned index (`threadIdx.x < n`, where C converts `n` to
unsigned) is not negative, as sizes are not; casts to unsigned 32-bit or narrower types, and unsigned 32-bit or non-
integer locals and parameters, are refused instead. A fill under an `if` or an inner loop, in a segment inside a
loop, is not derived (a skipped slot would keep the last iteration's value). Every store of the kernel must be
visible as one (`param[i] = ...`, or to its own arrays and locals; no pointer handed to a function of the file or an
atomic), and a definition changed by a call (a reference parameter) counts as changed; `goto` and labels, macros
defined twice, struct or vector tiles are refused. A fill through a pointer (`float* d = &S[..]`), a vector or a
register array is not derived either.

The barriers of the segment go only when nothing else needs them: no other shared memory in use (the kernel's, a
callee's, or the file's), no calls of the file's functions, atomics, fences, shuffles, async copies or inline
assembly, and no pointer both written and read, and every written pointer `__restrict__` (or every other pointer
is). A fill loop whose variable lives on keeps running with an empty body.

The forward rewrite is `strided-transpose-access` when the tile's reads are stored straight to global memory
(a transpose through shared memory) and `repeated-global-tile-reads` otherwise (a tile re-read by the block).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from warpwise.analyzers.expr.poly import Monomial, Poly
from warpwise.analyzers.expr.walk import ExprWalk
from warpwise.analyzers.model import Function
from warpwise.lineages.deopt.base import Deopt, KernelSource, Node, enclosing, unparen
from warpwise.skills.rewrite import Edit

_UNIFORM_BUILTINS = ("blockIdx", "blockDim", "gridDim")
_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")


class _Give(Exception):
    """This segment cannot be unstaged exactly."""


class _Atom(NamedTuple):
    """An atom of the polynomials: its C text, whether it varies by thread, and the declarations its names mean."""

    text: str
    varies: bool
    names: tuple[tuple[str, int | None], ...]


_SIDE_EFFECTS = ("assignment_expression", "update_expression", "call_expression")
_BARRIER_SENSITIVE = re.compile(r"\b(atomic\w*|__threadfence\w*|__syncwarp|__shfl\w*|cp_async\w*|__pipeline\w*|asm)\b")


class _Algebra(ExprWalk[Poly]):
    """Expand the integer expressions of one kernel into polynomials, knowing which atoms vary by thread.

    Names resolve by scope: the last declaration or statement-level assignment before the use that nothing
    changes in between. A block-uniform local declared at the top of the kernel and never changed stays an atom
    (visible at every read), other locals expand into their values; the variable of a loop that encloses the
    segment and steps uniformly (`for (int kt = 0; kt < n; kt += BK)` with uniform bounds) is uniform: every thread
    is in the same iteration between the fill and the reads. Atoms are keyed by the declarations their names
    resolve to, so two variables of the same name are two atoms.
    """

    def __init__(self, src: KernelSource, fn: Function, body: Node, segment: Node) -> None:
        self.src = src
        self.body = body
        self.segment = segment
        self.scalars = {p.name for p in fn.params if not p.is_pointer}
        self.pointers = {p.name for p in fn.params if p.is_pointer}
        self.atoms: dict[str, _Atom] = {}
        self._depth = 0
        self.local_callees = {f.name for f in src.model.functions} | {
            src.text_of(d.child_by_field_name("name"))
            for d in src.nodes(None, ("preproc_function_def",))
            if d.child_by_field_name("name") is not None
        }
        self.integer_params = {p.name for p in fn.params if not p.is_pointer and _integer_type(p.type)}
        self.defines: dict[str, int] = {}
        for d in src.nodes(None, ("preproc_def", "preproc_function_def")):
            if d.child_by_field_name("name") is not None:
                key = src.text_of(d.child_by_field_name("name"))
                self.defines[key] = self.defines.get(key, 0) + 1

    # -- names ------------------------------------------------------------------------------------------------

    def resolve(self, name: str, at: Node) -> tuple[Node, Node | None, bool] | None:
        """Return (definition, its value, whether that value holds at `at`) of the local `name`, or None.

        The definition is the last declaration or statement-level assignment `name = value;` before `at`, in its
        block or an enclosing one. The value holds when nothing between the two can change the name: no statement
        in between modifies it (in a declaration's initializer, through `&name` or a reference, ...), and no loop
        around `at` (inside the definition's block) does.
        """
        n = at
        while n.parent is not None and n.id != self.body.id:
            parent = n.parent
            if parent.type == "declaration":
                for child in parent.children:
                    if child.start_byte >= n.start_byte:
                        break
                    target = child.child_by_field_name("declarator") if child.type == "init_declarator" else child
                    if target is not None and target.type == "identifier" and self.src.text_of(target) == name:
                        value = child.child_by_field_name("value") if child.type == "init_declarator" else None
                        return (parent, value, value is not None and not self._modifies(value, name))
            if parent.type in ("compound_statement", "for_statement"):
                found: tuple[Node, Node | None, bool] | None = None
                if parent.type == "for_statement":
                    init = parent.child_by_field_name("initializer")
                    children = [init] if init is not None and init.id != n.id else []
                else:
                    children = parent.named_children
                for child in children:
                    if child.start_byte >= n.start_byte:
                        break
                    declared = self._declared_value(child, name)
                    if declared is not None:
                        _, value = declared
                        stepped = parent.type == "for_statement" and self._modifies(parent, name)
                        modified = value is not None and self._modifies(value, name)
                        found = (child, value, value is not None and not stepped and not modified)
                    elif (value := self._assigned(child, name)) is not None:
                        found = (child, value, True)
                    elif self._modifies(child, name):
                        found = (child, None, False)
                if found is not None:
                    return found
            if parent.type in ("for_statement", "while_statement", "do_statement") and self._modifies(parent, name):
                init = parent.child_by_field_name("initializer") if parent.type == "for_statement" else None
                if init is None or self._declared_value(init, name) is None:
                    return (parent, None, False)  # changed on an earlier iteration of a loop around `at`
            n = parent
        return None

    def declaration(self, name: str, at: Node) -> Node | None:
        """Return the declaration of the local `name` visible at `at` (None: a parameter or a global)."""
        n = at
        while n.parent is not None and n.id != self.body.id:
            parent = n.parent
            if parent.type == "declaration" and self._declared_value(parent, name) is not None:
                for child in parent.children:
                    if child.start_byte >= n.start_byte:
                        break
                    target = child.child_by_field_name("declarator") if child.type == "init_declarator" else child
                    if target is not None and target.type == "identifier" and self.src.text_of(target) == name:
                        return parent
            if parent.type in ("compound_statement", "for_statement"):
                found = None
                for child in parent.named_children:
                    if child.start_byte >= n.start_byte:
                        break
                    if self._declared_value(child, name) is not None:
                        found = child
                if found is not None:
                    return found
            n = parent
        return None

    def _declared_value(self, decl: Node, name: str) -> tuple[Node, Node | None] | None:
        """Return (declarator, initializer) when a declaration declares `name`, else None."""
        if decl.type != "declaration":
            return None
        for init in decl.children:
            target = init.child_by_field_name("declarator") if init.type == "init_declarator" else init
            if target is not None and target.type == "identifier" and self.src.text_of(target) == name:
                return target, (init.child_by_field_name("value") if init.type == "init_declarator" else None)
        return None

    def _assigned(self, stmt: Node, name: str) -> Node | None:
        """Return the value of a statement `name = value;`, else None."""
        if stmt.type != "expression_statement" or stmt.named_child_count != 1:
            return None
        a = stmt.named_children[0]
        if a.type != "assignment_expression" or a.child_by_field_name("operator").type != "=":
            return None
        left = a.child_by_field_name("left")
        if left is None or left.type != "identifier" or self.src.text_of(left) != name:
            return None
        value = a.child_by_field_name("right")
        return None if value is None or self._modifies(value, name) else value

    def _modifies(self, node: Node, name: str) -> bool:
        """Return whether anything in a node assigns or steps a name, takes its address, binds a reference to it, or
        passes it to a function of the file or a function-like macro (which may take it by reference)."""
        src = self.src
        for n in src.nodes(
            node,
            ("assignment_expression", "update_expression", "pointer_expression", "init_declarator", "call_expression"),
        ):
            if n.type == "call_expression":
                callee = n.child_by_field_name("function")
                args = n.child_by_field_name("arguments")
                if callee is None or args is None or src.text_of(callee) not in self.local_callees:
                    continue
                if any(
                    unparen(a).type == "identifier" and src.text_of(unparen(a)) == name for a in args.named_children
                ):
                    return True
                continue
            if n.type == "init_declarator":
                target = n.child_by_field_name("declarator")
                value = n.child_by_field_name("value")
                if (
                    target is not None
                    and target.type == "reference_declarator"
                    and value is not None
                    and any(src.text_of(i) == name for i in src.nodes(value, ("identifier",)))
                ):
                    return True
                continue
            if n.type == "pointer_expression":
                op = n.child_by_field_name("operator")
                if op is None or op.type != "&":
                    continue
            t = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if t is not None and unparen(t).type == "identifier" and src.text_of(unparen(t)) == name:
                return True
        return False

    def uniform_loop(self, decl: Node) -> bool:
        """Return whether a declaration is the variable of a uniformly stepped loop around the segment."""
        loop = decl.parent
        if loop is None or loop.type != "for_statement" or loop.child_by_field_name("initializer") is None:
            return False
        if loop.child_by_field_name("initializer").id != decl.id:
            return False
        if not (loop.start_byte <= self.segment.start_byte and self.segment.end_byte <= loop.end_byte):
            return False
        inits = [i for i in decl.children if i.type == "init_declarator"]
        if len(inits) != 1 or inits[0].child_by_field_name("value") is None:
            return False
        name = self.src.text_of(inits[0].child_by_field_name("declarator"))
        update, cond = loop.child_by_field_name("update"), loop.child_by_field_name("condition")
        body = loop.child_by_field_name("body")
        if update is None or cond is None or body is None:
            return False
        step = "".join(self.src.text_of(update).split())
        if step not in (f"++{name}", f"{name}++"):
            by = update.child_by_field_name("right") if update.type == "assignment_expression" else None
            op = update.child_by_field_name("operator") if by is not None else None
            left = update.child_by_field_name("left") if by is not None else None
            if by is None or op is None or op.type != "+=" or left is None or self.src.text_of(left) != name:
                return False
            if self.varies(by):
                return False
        if self._modifies(body, name):
            return False
        if self.src.nodes(body, ("break_statement", "return_statement", "goto_statement", "continue_statement")):
            return False
        return not self.varies(inits[0].child_by_field_name("value")) and not self.varies(cond, skip=name)

    def varies(self, node: Node | None, skip: str | None = None) -> bool:
        """Return whether an expression can differ between the threads of a block."""
        if node is None:
            return True
        self._depth += 1
        try:
            if self._depth > 24:
                return True
            for n in self.src.nodes(
                node, ("identifier", "field_expression", "call_expression", "subscript_expression")
            ):
                if n.type in ("call_expression", "subscript_expression"):
                    return True  # a value read from memory or returned by a call may differ by thread
                if n.type == "field_expression":
                    arg = n.child_by_field_name("argument")
                    if arg is not None and self.src.text_of(arg) in _UNIFORM_BUILTINS:
                        continue
                    return True  # threadIdx, or a member of a local (`t.y` of `const uint3 t = threadIdx`)
                if n.parent is not None and n.parent.type == "field_expression":
                    continue
                name = self.src.text_of(n)
                if name == skip or name in _UNIFORM_BUILTINS or self.src.macro_value(name) is not None:
                    continue
                found = self.resolve(name, n)
                if found is None:
                    if name in self.scalars or name in self.pointers:
                        continue
                    return True
                decl, value, fixed = found
                if fixed and value is not None and not self.varies(value):
                    continue
                if self.uniform_loop(decl):
                    continue
                return True
            return False
        finally:
            self._depth -= 1

    def _meaning(self, name: str, at: Node) -> int | None:
        """Return the position of the declaration `name` means at `at` (None: a parameter or a global)."""
        found = self.resolve(name, at)
        return found[0].start_byte if found is not None else None

    # -- polynomials ------------------------------------------------------------------------------------------

    def _opaque(self, node: Node) -> Poly:
        """Return an atom for a subterm that is not a polynomial (`k / TILE`), keyed by its names' declarations."""
        text = "".join(self.src.text_of(node).split())
        names = tuple(
            (self.src.text_of(n), self._meaning(self.src.text_of(n), n))
            for n in self.src.nodes(node, ("identifier",))
            if (n.parent is None or n.parent.type != "field_expression")
            and self.src.macro_value(self.src.text_of(n)) is None
        )
        varies = self.varies(node)
        if not varies:
            for name, _ in names:
                found = self.resolve(name, node)
                if found is not None and not self._visible(found[0], name):
                    raise _Give  # a uniform subterm over a nested local would not be visible at every read
        key = text + "@" + ",".join(f"{n}:{p}" for n, p in names)
        self.atoms[key] = _Atom(self.src.text_of(node), varies, names)
        return Poly.atom(key)

    def expand(self, node: Node | None) -> Poly:
        """Return the polynomial of an integer expression (raises _Give for what is not an integer expression)."""
        return self.walk(node)

    # The walk of the one expression evaluator (`warpwise.analyzers.expr.walk`), with this pass's parentheses and
    # nesting limit: one budget of 24 levels for the expansion and the `varies` questions it asks on the way
    # (`_depth`). Every kind of node it does not read is not an integer expression (`unknown` raises).

    def walk(self, node: Node | None, depth: int = 0) -> Poly:
        self._depth += 1
        try:
            if self._depth > 24:
                raise _Give
            return super().walk(node, depth)
        finally:
            self._depth -= 1

    def unparen(self, node: Node | None) -> Node | None:
        return unparen(node)

    def unknown(self, node: Node | None) -> Poly:
        raise _Give

    def on_number(self, node: Node, depth: int) -> Poly:
        text = self.src.text_of(node).rstrip("uUlL")
        try:
            return Poly.const(int(text, 0))
        except ValueError:
            raise _Give from None

    def on_identifier(self, node: Node, depth: int) -> Poly:
        src = self.src
        name = src.text_of(node)
        if self.defines.get(name, 0) > 1:
            raise _Give  # defined more than once (under #if): which one applies is the compiler's to say
        macro = src.macro_value(name)
        if macro is not None:
            return Poly.const(macro)
        found = self.resolve(name, node)
        if found is None:
            if name not in self.integer_params or self._modifies(self.body, name):
                raise _Give  # a pointer, a float, a global, something unknown, or a parameter the kernel changes
            self.atoms[name] = _Atom(name, False, ((name, None),))
            return Poly.atom(name)
        decl, value, fixed = found
        declared = self.declaration(name, node)
        if declared is None or not _integer_declaration(self.src, declared):
            raise _Give  # a float, a pointer, `auto` or an unsigned 32-bit local: not an exact integer atom
        key = f"{name}@{decl.start_byte}"
        if fixed and value is not None:
            if self._visible(decl, name) and not self.varies(value):
                self.atoms[key] = _Atom(name, False, ((name, decl.start_byte),))
                return Poly.atom(key)
            return self.walk(value, depth + 1)
        uniform = self.uniform_loop(decl)
        self.atoms[key] = _Atom(name, not uniform, ((name, decl.start_byte),))  # a loop variable, or mutable
        return Poly.atom(key)

    def on_field(self, node: Node, depth: int) -> Poly:
        arg = node.child_by_field_name("argument")
        if arg is None or self.src.text_of(arg) not in ("threadIdx", *_UNIFORM_BUILTINS):
            raise _Give
        return self._opaque(node)

    def on_cast(self, node: Node, depth: int) -> Poly:
        type_node = node.child_by_field_name("type")
        if type_node is None or not _wide_or_signed(self.src.text_of(type_node)):
            raise _Give  # a cast to an unsigned 32-bit or narrower type wraps: not the polynomial's value
        return self.walk(node.child_by_field_name("value"), depth + 1)

    def on_unary(self, node: Node, depth: int) -> Poly:
        op = node.child_by_field_name("operator")
        arg = self.walk(node.child_by_field_name("argument"), depth + 1)
        if op is not None and op.type == "-":
            return arg.scale(-1)
        if op is not None and op.type == "+":
            return arg
        raise _Give

    def on_binary(self, node: Node, depth: int) -> Poly:
        op = node.child_by_field_name("operator")
        if op is None:
            raise _Give
        if op.type in ("+", "-", "*"):
            a = self.walk(node.child_by_field_name("left"), depth + 1)
            b = self.walk(node.child_by_field_name("right"), depth + 1)
            return a + b if op.type == "+" else a - b if op.type == "-" else a * b
        if op.type == "<<":
            shift = self.walk(node.child_by_field_name("right"), depth + 1).constant()
            if shift is not None and 0 <= shift < 31:
                return self.walk(node.child_by_field_name("left"), depth + 1).scale(1 << shift)
        if op.type in ("/", "%", ">>", "&", "|", "^", "<<"):
            for side in ("left", "right"):
                self.walk(node.child_by_field_name(side), depth + 1)  # both sides must be integer expressions
            return self._opaque(node)
        raise _Give

    def _visible(self, decl: Node, name: str) -> bool:
        """Return whether a name means the same at every read: declared at the top of the kernel and never changed,
        or the variable of a uniform loop around the segment."""
        if decl.type == "declaration" and decl.parent is not None and decl.parent.id == self.body.id:
            return not self._modifies(self.body, name)
        return self.uniform_loop(decl)

    def split(self, p: Poly) -> dict[Monomial, Poly]:
        """Group a polynomial by its thread-variant factor: {variant monomial: uniform polynomial}."""
        out: dict[Monomial, Poly] = {}
        for m, c in p.terms.items():
            var = tuple(a for a in m if self.atoms[a].varies)
            uni = tuple(a for a in m if not self.atoms[a].varies)
            out[var] = out.get(var, Poly()) + Poly({uni: c})
        return {k: v for k, v in out.items() if v.terms}

    def solve(self, f: Poly, slots: list[Poly]) -> tuple[list[Poly], Poly]:
        """Return the uniform (a1..an, r) with f == a1 * slot1 + ... + r, or raise _Give."""
        parts = [self.split(s) for s in slots]
        used: set[Monomial] = set()
        coeffs: list[Poly] = []
        grouped = self.split(f)
        for part in parts:
            variant = {m: u for m, u in part.items() if m}
            if not variant or used & set(variant):
                raise _Give
            used |= set(variant)
            pivot = min(variant)
            k = variant[pivot].constant()
            if not k or any(u.constant() is None for u in variant.values()):
                raise _Give
            target = grouped.get(pivot, Poly())
            if any(c % k for c in target.terms.values()):
                raise _Give
            coeffs.append(Poly({m: c // k for m, c in target.terms.items()}))
        rest = f
        for a, s in zip(coeffs, slots, strict=True):
            rest = rest - a * s
        if any(m for m in self.split(rest)):
            raise _Give
        return coeffs, rest

    def render(self, solved: tuple[list[Poly], Poly], slots: list[str]) -> str:
        """Return C text for a1 * (x1) + ... + r, every term in signed 64-bit arithmetic.

        The polynomials hold the exact integer values; each term is computed as `long long` (its first factor
        cast), so neither an unsigned `threadIdx` nor a 32-bit product changes them, whatever types the kernel's
        own expression had.
        """
        coeffs, rest = solved
        terms: list[str] = []
        for a, x in zip(coeffs, slots, strict=True):
            for m, c in sorted(a.terms.items()):
                terms.append(_term(c, [f"({x})", *(self._atom(n) for n in m)]))
        for m, c in sorted(rest.terms.items(), key=lambda mc: (len(mc[0]) == 0, mc[0])):
            terms.append(_term(c, [self._atom(n) for n in m]))
        return " + ".join(terms).replace("+ -", "- ") if terms else "0"

    def rendered(self, solved: tuple[list[Poly], Poly]) -> set[str]:
        """Return the keys of the atoms a rendering names."""
        coeffs, rest = solved
        return {a for p in (*coeffs, rest) for m in p.terms for a in m}

    def means_the_same(self, keys: set[str], at: Node) -> bool:
        """Return whether every name of these atoms resolves at `at` to the declaration it meant at the fill."""
        return all(self._meaning(name, at) == pos for k in keys for name, pos in self.atoms[k].names)

    def _atom(self, key: str) -> str:
        text = self.atoms[key].text
        return text if text.replace("_", "").replace(".", "").isalnum() else f"({text})"


_INTEGER_WORDS = {"int", "long", "short", "signed", "unsigned", "size_t", "ptrdiff_t", "int32_t", "int64_t",
                  "uint64_t", "const", "__restrict__"}  # fmt: skip
_SCALAR_TYPES = {"float", "double", "int", "unsigned", "unsigned int", "long", "long long", "short", "char", "half",
                 "__half", "__nv_bfloat16", "int32_t", "int64_t", "uint32_t", "uint64_t", "size_t", "signed char",
                 "unsigned char", "unsigned short", "unsigned long long", "int8_t", "uint8_t", "int16_t",
                 "uint16_t"}  # fmt: skip


def _integer_type(text: str) -> bool:
    """Return whether a declared type is an integer the polynomials hold exactly: signed, or 64 bits wide."""
    words = text.replace("*", " * ").split()
    if not words or "*" in words or not set(words) <= _INTEGER_WORDS:
        return False
    unsigned = "unsigned" in words
    wide = "size_t" in words or "int64_t" in words or "uint64_t" in words or words.count("long") >= 1
    return not unsigned or wide


def _wide_or_signed(text: str) -> bool:
    """Return whether a cast keeps integer values in range: to a signed or a 64-bit integer type."""
    return _integer_type(text.replace("const", " "))


def _integer_declaration(src: KernelSource, decl: Node) -> bool:
    """Return whether a definition (a declaration, an assignment, a loop) is of an integer local the polynomials may
    name: the declaration's type must be an exact integer type; an assignment or a loop refers to a declaration
    checked where it is resolved."""
    if decl.type != "declaration":
        return True
    type_node = decl.child_by_field_name("type")
    if type_node is None:
        return False
    if any(c.type in ("pointer_declarator", "reference_declarator", "array_declarator") for c in src.nodes(decl)):
        return False
    quals = " ".join(src.text_of(c) for c in decl.children if c.type == "type_qualifier")
    return _integer_type(f"{quals} {src.text_of(type_node)}")


def _term(c: int, factors: list[str]) -> str:
    """Return one term of a rendering: the coefficient times the factors, as `long long`."""
    if not factors:
        return str(c)
    body = " * ".join([f"(long long){factors[0]}", *factors[1:]])
    return body if c == 1 else f"-{body}" if c == -1 else f"{c} * {body}"


@dataclass
class _Fill:
    """One write of the tile: the statement to delete, the source pointer, and the solved slot contents."""

    statement: Node
    pointer: str
    signature: tuple
    value: tuple[list[Poly], Poly]
    guard: list[tuple[str, tuple[list[Poly], Poly], tuple[list[Poly], Poly]]]
    zero: str | None
    conditional: bool


def _subscripts(src: KernelSource, node: Node) -> tuple[str, list[Node], Node] | None:
    """Return (base name, index nodes, outermost node) of `S[i]..[j]` whose base is an identifier."""
    indices: list[Node] = []
    outer = node
    while node is not None and node.type == "subscript_expression":
        parts = node.named_children
        if len(parts) != 2 or parts[1].type != "subscript_argument_list" or parts[1].named_child_count != 1:
            return None
        indices.insert(0, parts[1].named_children[0])
        node = parts[0]
    if node is None or node.type != "identifier":
        return None
    return src.text_of(node), indices, outer


def _outer_subscript(src: KernelSource, use: Node) -> tuple[str, list[Node], Node] | None:
    """Return the whole subscript chain `S[..]..[..]` an identifier is the base of."""
    node = use
    while (
        node.parent is not None
        and node.parent.type == "subscript_expression"
        and (node.parent.named_children[0].id == node.id)
    ):
        node = node.parent
    return _subscripts(src, node) if node.id != use.id else None


def _is_barrier(src: KernelSource, stmt: Node) -> bool:
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return False
    call = stmt.named_children[0]
    callee = call.child_by_field_name("function") if call.type == "call_expression" else None
    return callee is not None and src.text_of(callee) == "__syncthreads"


def _ends_in_return(src: KernelSource, stmt: Node) -> bool:
    """Return whether control never leaves a statement normally (an `if` without else whose block returns)."""
    if stmt.type == "return_statement":
        return True
    if stmt.type == "if_statement" and stmt.child_by_field_name("alternative") is None:
        body = stmt.child_by_field_name("consequence")
        if body is not None and body.type == "compound_statement":
            stmts = [c for c in body.named_children if c.type != "comment"]
            return bool(stmts) and stmts[-1].type == "return_statement"
    return False


def _own_path(src: KernelSource, stmt: Node) -> bool:
    """Return whether a statement is a code path of its own: it ends in `return` and has its own barrier."""
    return _ends_in_return(src, stmt) and any(_is_barrier(src, n) for n in src.nodes(stmt, ("expression_statement",)))


class _Unstager:
    """Find the exact unstaging of one kernel's tiles."""

    def __init__(self, src: KernelSource, fn: Function, node: Node) -> None:
        self.src = src
        self.fn = fn
        self.node = node
        body = node.child_by_field_name("body")
        if body is None:
            raise _Give
        self.body = body
        self.algebra = _Algebra(src, fn, body, body)
        self.const_pointers = {p.name: p for p in fn.params if p.is_pointer and p.is_const}
        self.pointers = {p.name: p for p in fn.params if p.is_pointer}
        self.shared = {s.name: s for s in fn.shared if not s.is_extern and s.dims}
        self.written = {
            name
            for a in src.nodes(body, ("assignment_expression", "update_expression"))
            if (t := a.child_by_field_name("left") or a.child_by_field_name("argument")) is not None
            and (sub := _subscripts(src, unparen(t))) is not None
            for name in [sub[0]]
        }

    def uses(self, node: Node, name: str) -> list[Node]:
        return [
            n
            for n in self.src.nodes(node, ("identifier",))
            if self.src.text_of(n) == name
            and (n.parent is None or n.parent.type not in ("field_expression", "array_declarator"))
        ]

    def segments(self) -> Iterator[tuple[str, Node, int]]:
        """Yield (tile, compound statement, index of its barrier) for each barrier that separates fill and read."""
        for comp in self.src.nodes(self.body, ("compound_statement",)):
            stmts = comp.named_children
            for i, s in enumerate(stmts):
                if not _is_barrier(self.src, s):
                    continue
                for name in self.shared:
                    before = [u for st in stmts[:i] if not _own_path(self.src, st) for u in self.uses(st, name)]
                    after = [u for st in stmts[i + 1 :] for u in self.uses(st, name)]
                    if before and after:
                        yield name, comp, i

    def fill(self, name: str, use: Node, dims: int, comp: Node) -> _Fill:
        """Return the solved form of one write of the tile, or raise _Give."""
        src = self.src
        sub = _outer_subscript(src, use)
        if sub is None or sub[0] != name or len(sub[1]) != dims:
            raise _Give
        _, index_nodes, target = sub
        assign = target.parent
        if (
            assign is None
            or assign.type != "assignment_expression"
            or assign.child_by_field_name("left") is None
            or assign.child_by_field_name("left").id != target.id
            or assign.child_by_field_name("operator").type != "="
        ):
            raise _Give
        stmt = assign.parent
        if stmt is None or stmt.type != "expression_statement":
            raise _Give
        # Every `if` between the fill and the segment guards it (a fill in an `else`, or under one, is not derived).
        guard_nodes: list[Node] = []
        outer = stmt
        node = stmt
        in_loop = False
        while node.parent is not None and node.parent.id != comp.id:
            parent = node.parent
            if parent.type == "if_statement":
                alt = parent.child_by_field_name("alternative")
                if alt is not None:
                    raise _Give
                cond = parent.child_by_field_name("condition")
                guard_nodes.append(
                    cond.named_children[0] if cond is not None and cond.type == "condition_clause" else cond
                )
                if outer.parent is not None and (outer.parent.id == parent.id or (
                    outer.parent.type == "compound_statement" and outer.parent.named_child_count == 1
                    and outer.parent.parent is not None and outer.parent.parent.id == parent.id
                )):  # fmt: skip
                    outer = parent
            elif parent.type in ("for_statement", "while_statement", "do_statement"):
                in_loop = True  # its bound may skip slots
            elif parent.type != "compound_statement":
                raise _Give
            node = parent
        conditional = bool(guard_nodes) or in_loop
        value = unparen(assign.child_by_field_name("right"))
        zero = None
        if value is not None and value.type == "conditional_expression":
            alt = unparen(value.child_by_field_name("alternative"))
            if alt is None or alt.type != "number_literal":
                raise _Give
            guard_nodes.append(value.child_by_field_name("condition"))
            zero = src.text_of(alt)
            value = unparen(value.child_by_field_name("consequence"))
        load = _subscripts(src, value) if value is not None else None
        if load is None or len(load[1]) != 1 or load[0] not in self.const_pointers or load[0] in self.written:
            raise _Give
        pointer = self.const_pointers[load[0]]
        if _type(pointer.base_type) != _type(self.shared[name].element_type) or self.algebra._modifies(
            self.body, load[0]
        ):
            raise _Give  # the copy converts (half to float, ...), or the pointer itself moves
        if self.algebra.resolve(load[0], value) is not None:
            raise _Give  # a local shadows the parameter
        alg = self.algebra
        slots = [alg.expand(i) for i in index_nodes]
        solved = alg.solve(alg.expand(load[1][0]), slots)
        guard: list[tuple[str, tuple[list[Poly], Poly], tuple[list[Poly], Poly]]] = []
        for g in guard_nodes:
            for cmp in _conjuncts(unparen(g)):
                op = cmp.child_by_field_name("operator")
                if op is None or op.type not in _COMPARISONS:
                    raise _Give
                left = alg.solve(alg.expand(cmp.child_by_field_name("left")), slots)
                right = alg.solve(alg.expand(cmp.child_by_field_name("right")), slots)
                guard.append((op.type, left, right))
        signature = (
            load[0],
            _key(solved),
            tuple((op, _key(a), _key(b)) for op, a, b in guard),
            zero if guard else None,
            conditional,
        )
        return _Fill(outer, load[0], signature, solved, guard, zero, conditional)

    def candidate(self) -> Deopt | None:
        for name, comp, barrier in self.segments():
            try:
                return self._candidate(name, comp, barrier)
            except _Give:
                continue
        return None

    def _stores_are_plain(self, own_paths: list[Node]) -> None:
        """Raise _Give unless every store of the kernel is visible as one: `param[i] = ...`, to the kernel's own
        arrays or locals, and no pointer goes to a function of the file or an atomic (which may store through it).

        Code paths of their own (a block that has its own barrier and returns) are left out: their condition is the
        same for every thread of a block (a barrier under a divergent branch is undefined), so no thread of a block
        that runs the segment stores there."""
        src = self.src

        def elsewhere(n: Node) -> bool:
            return any(_inside(n, p) for p in own_paths)

        local_pointers = {
            src.text_of(t)
            for d in src.nodes(self.body, ("pointer_declarator",))
            if (t := d.child_by_field_name("declarator")) is not None and t.type == "identifier"
        }
        own_arrays = set(self.shared) | {
            src.text_of(t)
            for root in (self.body, *(d for d in src.tree.root_node.named_children if d.type == "declaration"
                                      and "__shared__" in src.text_of(d)))
            for d in src.nodes(root, ("array_declarator",))
            if (t := d.child_by_field_name("declarator")) is not None and t.type == "identifier"
        }  # fmt: skip
        for a in src.nodes(self.body, ("assignment_expression", "update_expression")):
            if elsewhere(a):
                continue
            t = unparen(a.child_by_field_name("left") or a.child_by_field_name("argument"))
            if t is None:
                raise _Give
            while t.type == "field_expression":
                t = unparen(t.child_by_field_name("argument"))
            if t.type == "identifier" and src.text_of(t) not in local_pointers:
                continue  # a local (or a scalar parameter)
            sub = _subscripts(src, t) if t.type == "subscript_expression" else None
            if sub is not None and (sub[0] in self.pointers or sub[0] in own_arrays):
                continue
            raise _Give  # a store through `*p`, a local pointer or something else
        pointers = set(self.pointers) | local_pointers
        for c in src.nodes(self.body, ("call_expression",)):
            if elsewhere(c):
                continue
            callee = c.child_by_field_name("function")
            args = c.child_by_field_name("arguments")
            name = src.text_of(callee) if callee is not None else ""
            if args is None or not (name in self.algebra.local_callees or name.startswith("atomic")):
                continue
            if any(src.text_of(i) in pointers for i in src.nodes(args, ("identifier",))):
                raise _Give  # the callee may store through the pointer

    def _in_loop(self, node: Node) -> bool:
        n = node.parent
        while n is not None and n.id != self.body.id:
            if n.type in ("for_statement", "while_statement", "do_statement"):
                return True
            n = n.parent
        return False

    def _candidate(self, name: str, comp: Node, barrier: int) -> Deopt:
        src = self.src
        self.algebra = _Algebra(src, self.fn, self.body, comp)
        array = self.shared[name]
        stmts = comp.named_children
        before = [st for st in stmts[:barrier] if not _own_path(src, st)]
        after = stmts[barrier + 1 :]
        # The segment's fills and reads are the tile's only uses (besides code paths of their own that return).
        seg_uses = {u.id for st in (*before, *after) for u in self.uses(st, name)}
        own = {u.id for st in stmts[:barrier] if _own_path(src, st) for u in self.uses(st, name)}
        if any(u.id not in seg_uses and u.id not in own for u in self.uses(self.body, name)):
            raise _Give
        macros = src.nodes(None, ("preproc_def", "preproc_function_def"))
        if any(re.search(rf"\b{re.escape(name)}\b", src.text_of(d)) for d in macros):
            raise _Give  # a macro reads or writes the tile
        if _type(array.element_type) not in _SCALAR_TYPES:
            raise _Give  # a struct or vector tile: members and conversions are not derived
        if src.nodes(self.body, ("goto_statement", "labeled_statement")):
            raise _Give  # a jump can skip a definition or leave a code path of its own
        own_paths = [st for st in stmts[:barrier] if _own_path(src, st)]
        self._stores_are_plain(own_paths)
        if any(src.nodes(st, ("return_statement", "break_statement", "continue_statement", "goto_statement"))
               for st in before):  # fmt: skip
            raise _Give  # a thread may leave before the fill
        fills = [self.fill(name, u, len(array.dims), comp) for st in before for u in self.uses(st, name)]
        signatures = {f.signature for f in fills}
        if len(signatures) != 1:
            raise _Give
        first = fills[0]
        if first.conditional and self._in_loop(comp):
            raise _Give  # a slot the fill skips keeps the previous iteration's value
        source = self.pointers[first.pointer]
        if not source.is_restrict and not all(self.pointers[p].is_restrict for p in self.written if p in self.pointers):
            raise _Give  # without `__restrict__`, a store of another thread may change the data read later
        keys = self.algebra.rendered(first.value) | {
            k for _, a, b in first.guard for k in self.algebra.rendered(a) | self.algebra.rendered(b)
        }
        reads = [u for st in after for u in self.uses(st, name)]
        edits: list[Edit] = []
        transposes = True
        for use in reads:
            sub = _outer_subscript(src, use)
            if sub is None or sub[0] != name or len(sub[1]) != len(array.dims):
                raise _Give
            target = sub[2]
            parent = target.parent
            if parent is not None and (
                parent.type in ("update_expression", "pointer_expression")
                or (parent.type == "assignment_expression" and parent.child_by_field_name("left").id == target.id)
            ):
                raise _Give
            if any(src.nodes(i, _SIDE_EFFECTS) for i in sub[1]):
                raise _Give  # the index is repeated in the guard
            if any(self.uses(i, name) for i in sub[1]) or (parent is not None and parent.type == "field_expression"):
                raise _Give  # the index reads the tile itself, or a member of a slot is used
            if any(
                src.text_of(n) in self.algebra.defines and src.macro_value(src.text_of(n)) is None
                for i in sub[1]
                for n in src.nodes(i, ("identifier",))
            ):
                raise _Give  # a macro in the index may hide a side effect the guard would repeat
            if not self.algebra.means_the_same(keys, target) or self.algebra.resolve(first.pointer, target):
                raise _Give  # a name of the rendering means something else at the read
            if not _stored_to_global(src, target, self.fn):
                transposes = False
            edits.append(
                Edit(
                    target.start_byte,
                    target.end_byte,
                    self._read(first, array.element_type, [src.text_of(i) for i in sub[1]]),
                )
            )
        for stmt in _removable(src, list({f.statement.id: f.statement for f in fills}.values()), comp):
            edits.append(_delete(src, stmt))
        barriers = self._barriers_removable(name)
        if barriers:
            edits.append(_delete(src, stmts[barrier]))
            if barrier + 1 < len(stmts) - 1 and _is_barrier(src, stmts[-1]):
                edits.append(_delete(src, stmts[-1]))  # the barrier that protected the tile's next refill
        if not own:
            decl = next(
                (d for d in src.nodes(self.body, ("declaration",))
                 if "__shared__" in src.text_of(d) and [src.text_of(i) for i in _declared(d)] == [name]),
                None,
            )  # fmt: skip
            if decl is not None:
                edits.append(_delete(src, decl))
        card = "strided-transpose-access" if transposes else "repeated-global-tile-reads"
        return Deopt(
            "unstage",
            f"shared:{name}",
            f"read `{first.pointer}` from global memory where the kernel read the shared tile `{name}`, and drop the "
            f"copy into it" + (" and its barrier" if barriers else ""),
            tuple(edits),
            card,
        )

    def _barriers_removable(self, name: str) -> bool:
        """Return whether the segment's barriers order nothing but the tile, so the simpler kernel drops them.

        Kept (always safe) when another shared array is in use, the file declares shared memory outside the kernel,
        the kernel calls a function of the file or anything that communicates (atomics, fences, shuffles, async
        copies, inline assembly), or a pointer it writes is also read.
        """
        src = self.src
        if any(s.name != name and self.uses(self.body, s.name) for s in self.fn.shared):
            return False
        body_text = src.text_of(self.body)
        if _BARRIER_SENSITIVE.search(body_text):
            return False
        kernel = self.fn.name
        if any(f.name != kernel and f.shared for f in src.device_functions()):
            return False
        if any("__shared__" in src.text_of(d) for d in src.tree.root_node.named_children if d.type == "declaration"):
            return False
        defined = {f.name for f in src.model.functions}
        if any(src.text_of(c.child_by_field_name("function")) in defined for c in src.calls(self.body, tuple(defined))):
            return False
        for p in self.written & set(self.pointers):
            if not self.pointers[p].is_restrict and not all(q.is_restrict for n, q in self.pointers.items() if n != p):
                return False  # it may alias a pointer the kernel reads
            reads = [u for u in self.uses(self.body, p) if not _is_store(src, u)]
            if reads:
                return False
        return True

    def _read(self, fill: _Fill, element: str, xs: list[str]) -> str:
        alg = self.algebra
        load = f"{fill.pointer}[{alg.render(fill.value, xs)}]"
        if not fill.guard:
            return load
        conds = [f"{alg.render(a, xs)} {op} {alg.render(b, xs)}" for op, a, b in fill.guard]
        zero = fill.zero if fill.zero is not None else "0"
        return f"(({_type(element)})({' && '.join(conds)} ? {load} : {zero}))"


def _is_store(src: KernelSource, use: Node) -> bool:
    """Return whether a pointer's use is the target of a plain store `p[i] = ...`."""
    sub = _outer_subscript(src, use)
    if sub is None:
        return False
    parent = sub[2].parent
    return (
        parent is not None
        and parent.type == "assignment_expression"
        and parent.child_by_field_name("left").id == sub[2].id
        and parent.child_by_field_name("operator").type == "="
    )


def _type(text: str) -> str:
    """Return a type's name without qualifiers."""
    words = [w for w in text.replace("*", " ").split() if w not in ("const", "volatile", "__restrict__", "__shared__")]
    return " ".join(words)


def _key(solved: tuple[list[Poly], Poly]) -> tuple:
    coeffs, rest = solved
    return (tuple(c.key() for c in coeffs), rest.key())


def _declared(decl: Node) -> list[Node]:
    """Return the identifiers a declaration declares (through array declarators)."""
    out = []
    for d in decl.named_children:
        while d is not None and d.type in ("array_declarator", "init_declarator"):
            d = d.child_by_field_name("declarator")
        if d is not None and d.type == "identifier":
            out.append(d)
    return out


def _conjuncts(node: Node | None) -> list[Node]:
    """Return the operands of a chain of `&&` (the node itself when it is not one)."""
    if node is None:
        raise _Give
    op = node.child_by_field_name("operator") if node.type == "binary_expression" else None
    if op is not None and op.type == "&&":
        return _conjuncts(unparen(node.child_by_field_name("left"))) + _conjuncts(
            unparen(node.child_by_field_name("right"))
        )
    return [node]


def _stored_to_global(src: KernelSource, read: Node, fn: Function) -> bool:
    """Return whether a tile read is the value of a plain store into a pointer parameter (`out[i] = S[..]`)."""
    parent = read.parent
    if parent is None or parent.type != "assignment_expression":
        return False
    right = unparen(parent.child_by_field_name("right"))
    left = parent.child_by_field_name("left")
    if right is None or right.id != read.id or left is None:
        return False
    sub = _subscripts(src, left)
    return sub is not None and sub[0] in {p.name for p in fn.params if p.is_pointer}


def _removable(src: KernelSource, stmts: list[Node], comp: Node) -> list[Node]:
    """Return the statements to delete: each fill, or the loop around it when the loop does nothing else."""
    out: dict[int, Node] = {}
    for stmt in stmts:
        node = stmt
        while True:
            loop = enclosing(node, "for_statement", "compound_statement")
            if loop is None or loop.id == comp.id:
                break
            if loop.type == "compound_statement":
                rest = [c for c in loop.named_children if c.type not in ("comment",) and c.id != node.id]
                local = [
                    c
                    for c in rest
                    if c.type == "declaration" and not _used_outside(src, c, node) and not src.nodes(c, _SIDE_EFFECTS)
                ]
                if len(local) != len(rest) or loop.parent is None or loop.parent.type != "for_statement":
                    break
                node = loop.parent
                continue
            body = loop.child_by_field_name("body")
            init = loop.child_by_field_name("initializer")
            if body is None or body.id != node.id or init is None or init.type != "declaration":
                break  # a loop whose variable lives on after it stays
            if not _only_steps_its_variable(src, loop, init):
                break  # its header does something else too: it stays, with an empty body
            node = loop
        out[node.id] = node
    return list(out.values())


def _only_steps_its_variable(src: KernelSource, loop: Node, init: Node) -> bool:
    """Return whether a loop's initializer, condition and update have no effect but on the loop's own variable."""
    names = {src.text_of(d) for d in _declared(init)}
    cond, update = loop.child_by_field_name("condition"), loop.child_by_field_name("update")
    if src.nodes(init, ("call_expression", "update_expression", "assignment_expression")):
        return False
    if cond is not None and src.nodes(cond, _SIDE_EFFECTS):
        return False
    if update is None:
        return True
    if src.nodes(update, ("call_expression",)):
        return False
    for n in src.nodes(update, ("assignment_expression", "update_expression")):
        t = unparen(n.child_by_field_name("left") or n.child_by_field_name("argument"))
        if t is None or t.type != "identifier" or src.text_of(t) not in names:
            return False
    return True


def _used_outside(src: KernelSource, decl: Node, fill: Node) -> bool:
    """Return whether a local declared by `decl` is used anywhere but in the declaration and the fill."""
    block = decl.parent
    names = [
        src.text_of(d)
        for i in decl.children
        if i.type == "init_declarator" and (d := i.child_by_field_name("declarator")) is not None
    ]
    for n in src.nodes(block, ("identifier",)):
        if src.text_of(n) in names and not _inside(n, decl) and not _inside(n, fill):
            return True
    return False


def _inside(node: Node, outer: Node) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _delete(src: KernelSource, stmt: Node) -> Edit:
    """Return the edit that deletes a statement with its line (and a `#pragma unroll` right above it).

    The body of a loop or an `if` becomes `{}` instead, so that the statement after it does not take its place.
    """
    parent = stmt.parent
    if parent is not None and parent.type in ("for_statement", "while_statement", "do_statement", "if_statement"):
        if parent.child_by_field_name("body") is not None and parent.child_by_field_name("body").id == stmt.id:
            return Edit(stmt.start_byte, stmt.end_byte, "{}")
        if parent.child_by_field_name("consequence") is not None and (
            parent.child_by_field_name("consequence").id == stmt.id
        ):
            return Edit(stmt.start_byte, stmt.end_byte, "{}")
    start, end = stmt.start_byte, stmt.end_byte
    prev = stmt.prev_sibling
    if prev is not None and prev.type == "preproc_call" and b"unroll" in src.data[prev.start_byte : prev.end_byte]:
        start = prev.start_byte
    line_start = src.data.rfind(b"\n", 0, start) + 1
    if src.data[line_start:start].strip() == b"":
        start = line_start
    line_end = src.data.find(b"\n", end)
    if line_end != -1 and src.data[end:line_end].strip() == b"":
        end = line_end + 1
    return Edit(start, end, "")


def unstage_shared(src: KernelSource) -> list[Deopt]:
    """Return the candidate that reads global memory instead of a staged shared tile."""
    fn = src.kernel_fn
    node = src.function_node(fn) if fn is not None else None
    if fn is None or node is None or not fn.shared:
        return []
    try:
        found = _Unstager(src, fn, node).candidate()
    except _Give:
        return []
    return [found] if found is not None else []
