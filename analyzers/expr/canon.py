"""Canonical forms of expressions, so that matchers compare what code computes rather than how it is spelled.

Two expressions that compute the same value in every way a matcher cares about get the same `Form`: white space,
comments and parentheses are gone; sums and products are polynomials with their terms sorted (`2 * s * tid` is
`tid * s * 2`, `a + b` is `b + a`); integer constants are folded, file-level constants and macros are replaced by
their values (a `#define` with a trailing comment included); `x << k` is `x * 2^k`; `x / c`, `x >> k` (as
`x / 2^k`) and `x * 0.5` (as `x / 2`) are one division atom; `a > b` is `b < a`; casts to integer types are
dropped; local variables defined exactly once are replaced by their definitions when the caller gives a
resolver. A product or sum is divided exactly when every term is divisible (`(2 * s) / 2` is `s`).

`x >> k` equals `x / 2^k` only for a non-negative `x` (for a negative signed `x` the shift floors and the
division truncates); the matchers that use these forms compare strides, sizes and thread indices, which are
non-negative. Nothing here raises: what cannot be read stays an opaque atom spelled by its tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from warpwise.analyzers.expr.values import parse_int_literal

Node = Any

_INT_TYPES = {
    "int",
    "unsigned",
    "unsigned int",
    "signed",
    "signed int",
    "uint",
    "size_t",
    "long",
    "long long",
    "unsigned long",
    "unsigned long long",
    "int32_t",
    "uint32_t",
    "int64_t",
    "uint64_t",
    "ptrdiff_t",
    "short",
    "unsigned short",
}
_COMMUTATIVE = {"&", "|", "^", "==", "!=", "&&", "||"}
_MAX_TERMS = 64


class Form:
    """A polynomial over opaque atoms with rational coefficients; equal forms mean equal expressions."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[tuple[str, ...], Fraction]) -> None:
        self.terms = {m: c for m, c in terms.items() if c != 0}

    @staticmethod
    def const(value: int | Fraction) -> Form:
        """Return the form of a number."""
        return Form({(): Fraction(value)})

    @staticmethod
    def atom(name: str) -> Form:
        """Return the form of one opaque atom."""
        return Form({(name,): Fraction(1)})

    def key(self) -> tuple[tuple[tuple[str, ...], Fraction], ...]:
        """Return a hashable, order-independent key."""
        return tuple(sorted(self.terms.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Form) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return f"Form({self.text()})"

    def text(self) -> str:
        """Return a canonical spelling (used inside atoms, so nested forms compare too)."""
        if not self.terms:
            return "0"
        parts = []
        for mono, coef in sorted(self.terms.items()):
            parts.append("*".join([*mono, str(coef)]) if mono else str(coef))
        return "+".join(parts)

    @property
    def constant(self) -> Fraction | None:
        """Return the value when the form is a number."""
        if not self.terms:
            return Fraction(0)
        if len(self.terms) == 1 and () in self.terms:
            return self.terms[()]
        return None

    def int_value(self) -> int | None:
        """Return the value when the form is an integer."""
        c = self.constant
        return int(c) if c is not None and c.denominator == 1 else None

    def __add__(self, other: Form) -> Form:
        out = dict(self.terms)
        for m, c in other.terms.items():
            out[m] = out.get(m, Fraction(0)) + c
        return Form(out)

    def scale(self, factor: Fraction) -> Form:
        """Return the form multiplied by a number."""
        return Form({m: c * factor for m, c in self.terms.items()})

    def __mul__(self, other: Form) -> Form:
        if len(self.terms) * len(other.terms) > _MAX_TERMS:
            return Form.atom(f"({self.text()})*({other.text()})")
        out: dict[tuple[str, ...], Fraction] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, Fraction(0)) + c1 * c2
        return Form(out)

    def divide(self, divisor: Form) -> Form:
        """Return the form of a division: exact when every term divides, else a division atom."""
        d = divisor.constant
        if d is not None and d != 0:
            q = self.scale(1 / d)
            if all(c.denominator == 1 for c in q.terms.values()):
                return q
            return Form.atom(f"div({self.text()};{d})")
        if len(divisor.terms) == 1:
            ((mono, coef),) = divisor.terms.items()
            if all(set(mono) <= set(m) and (c / coef).denominator == 1 for m, c in self.terms.items()):
                out: dict[tuple[str, ...], Fraction] = {}
                for m, c in self.terms.items():
                    rest = list(m)
                    for a in mono:
                        rest.remove(a)
                    out[tuple(rest)] = c / coef
                return Form(out)
        return Form.atom(f"div({self.text()};{divisor.text()})")


class Canonicalizer:
    """Turn tree-sitter expression nodes of one source into `Form`s."""

    def __init__(
        self,
        src: bytes,
        constants: dict[str, int] | None = None,
        resolve: Callable[[str], Node | None] | None = None,
        max_depth: int = 6,
    ) -> None:
        self.src = src
        self.constants = constants or {}
        self.resolve = resolve
        self.max_depth = max_depth
        self._resolving: set[str] = set()

    def text(self, node: Node) -> str:
        """Return a node's text with white space removed."""
        raw = self.src[node.start_byte : node.end_byte].decode("utf-8", "replace")
        return "".join(raw.split())

    def same(self, a: Node | None, b: Node | None) -> bool:
        """Return whether two expressions have the same canonical form."""
        if a is None or b is None:
            return False
        return self.of(a) == self.of(b)

    def of(self, node: Node | None) -> Form:
        """Return the canonical form of an expression node."""
        if node is None:
            return Form.atom("?")
        t = node.type
        if t == "parenthesized_expression":
            inner = [c for c in node.named_children if c.type != "comment"]
            return self.of(inner[0]) if len(inner) == 1 else Form.atom(self.text(node))
        if t == "number_literal":
            return self._number(node)
        if t == "identifier":
            return self._identifier(node)
        if t == "field_expression":
            return Form.atom(self.text(node))
        if t == "cast_expression":
            ty = " ".join(self.text_spaced(node.child_by_field_name("type")).split())
            value = self.of(node.child_by_field_name("value"))
            if ty.replace("const ", "") in _INT_TYPES:
                return value
            return Form.atom(f"cast[{ty}]({value.text()})")
        if t == "unary_expression":
            op = self._op(node)
            arg = self.of(node.child_by_field_name("argument"))
            if op == "-":
                return arg.scale(Fraction(-1))
            if op == "+":
                return arg
            return Form.atom(f"{op}({arg.text()})")
        if t == "binary_expression":
            return self._binary(node)
        if t == "subscript_expression":
            arg = node.child_by_field_name("argument")
            idx = node.child_by_field_name("indices") or node.child_by_field_name("index")
            if idx is not None and idx.type == "subscript_argument_list":
                inner = [c for c in idx.named_children if c.type != "comment"]
                idx = inner[0] if len(inner) == 1 else idx
            return Form.atom(f"{self.of(arg).text()}[{self.of(idx).text()}]")
        if t == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            items = args.named_children if args is not None else ()
            parts = [self.of(a).text() for a in items if a.type != "comment"]
            return Form.atom(f"{self.text(fn) if fn is not None else '?'}({','.join(parts)})")
        if t == "conditional_expression":
            parts = [self.of(node.child_by_field_name(f)).text() for f in ("condition", "consequence", "alternative")]
            return Form.atom(f"cond({';'.join(parts)})")
        return Form.atom(self.text(node))

    def text_spaced(self, node: Node | None) -> str:
        """Return a node's text with runs of white space collapsed."""
        if node is None:
            return ""
        return " ".join(self.src[node.start_byte : node.end_byte].decode("utf-8", "replace").split())

    def _op(self, node: Node) -> str:
        op = node.child_by_field_name("operator")
        return op.type if op is not None else "?"

    def _number(self, node: Node) -> Form:
        text = self.text(node)
        value = parse_int_literal(text)
        if value is not None:
            return Form.const(value)
        stripped = text.rstrip("fFlL")
        try:
            return Form.const(Fraction(stripped))
        except (ValueError, ZeroDivisionError):
            return Form.atom(text)

    def _identifier(self, node: Node) -> Form:
        name = self.text(node)
        if name in self.constants:
            return Form.const(self.constants[name])
        if self.resolve is not None and name not in self._resolving and len(self._resolving) < self.max_depth:
            value = self.resolve(name)
            if value is not None:
                self._resolving.add(name)
                try:
                    return self.of(value)
                finally:
                    self._resolving.discard(name)
        return Form.atom(name)

    def _binary(self, node: Node) -> Form:
        op = self._op(node)
        left = self.of(node.child_by_field_name("left"))
        right = self.of(node.child_by_field_name("right"))
        if op == "+":
            return left + right
        if op == "-":
            return left + right.scale(Fraction(-1))
        if op == "*":
            return _fractional_to_division(left * right)
        if op == "/":
            return left.divide(right)
        if op in ("<<", ">>"):
            k = right.int_value()
            if k is not None and 0 <= k < 63:
                return left.scale(Fraction(2**k)) if op == "<<" else left.divide(Form.const(2**k))
            return Form.atom(f"{op}({left.text()};{right.text()})")
        if op in (">", ">="):
            return Form.atom(f"{'<' if op == '>' else '<='}({right.text()};{left.text()})")
        if op in _COMMUTATIVE:
            a, b = sorted((left.text(), right.text()))
            return Form.atom(f"{op}({a};{b})")
        return Form.atom(f"{op}({left.text()};{right.text()})")


def _fractional_to_division(form: Form) -> Form:
    """Return `x * 0.5` as the division atom of `x / 2` (the two are equal where the matchers use them)."""
    dens = {c.denominator for c in form.terms.values()}
    if dens == {1}:
        return form
    lcm = 1
    for d in dens:
        lcm = lcm * d // _gcd(lcm, d)
    return form.scale(Fraction(lcm)).divide(Form.const(lcm))


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a
