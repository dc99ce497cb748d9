"""The one expression evaluator's algebra: integer polynomials and integer ranges (`warpwise.analyzers.expr`)."""

from __future__ import annotations

import itertools
import random

import pytest

from warpwise.analyzers.expr import ranges
from warpwise.analyzers.expr.cexpr import c_div, c_mod
from warpwise.analyzers.expr.poly import Poly


def _eval(p: Poly, env: dict[str, int]) -> int:
    total = 0
    for monomial, c in p.terms.items():
        v = c
        for atom in monomial:
            v *= env[atom]
        total += v
    return total


def test_polynomials_are_exact_and_canonical() -> None:
    x, y, k = Poly.atom("threadIdx.x"), Poly.atom("y"), Poly.const(32)
    a = (x + k) * (y - Poly.const(1))
    b = x * y - x + y.scale(32) - Poly.const(32)
    assert a.key() == b.key()  # The same polynomial, however it was built.
    assert (a - b).terms == {} and (a - b).constant() == 0
    assert Poly.const(7).constant() == 7 and x.constant() is None
    assert (x * y).key() == (y * x).key()  # Monomials are sorted.
    rng = random.Random(1)
    for _ in range(200):
        env = {"threadIdx.x": rng.randrange(-(2**40), 2**40), "y": rng.randrange(-1000, 1000)}
        assert _eval(a, env) == (env["threadIdx.x"] + 32) * (env["y"] - 1)


def test_zero_terms_vanish() -> None:
    x = Poly.atom("x")
    assert (x - x).terms == {} and x.scale(0).terms == {}
    assert Poly.const(0).terms == {}


def test_linear_split_recovers_the_polynomial() -> None:
    i, k, lda = Poly.atom("i"), Poly.atom("k"), Poly.atom("lda")
    p = i * lda + k + Poly.const(3)
    split = p.linear_in("k")
    assert split is not None
    q, r = split
    assert q == Poly.const(1) and r == i * lda + Poly.const(3)
    assert (k * q + r).key() == p.key()
    assert (k * k + i).linear_in("k") is None  # k appears squared: not linear in k
    assert i.linear_in("k") == (Poly(), i)  # free of k: no coefficient
    assert p.atoms() == {"i", "k", "lda"} and Poly.const(5).atoms() == set()
    assert not Poly() and not (i - i) and Poly.const(-1) and i


SMALL = [(-5, -1), (-3, 4), (0, 0), (0, 7), (2, 9)]


def _values(r: tuple[int, int]) -> range:
    return range(r[0], r[1] + 1)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", ">>"])
def test_range_arithmetic_holds_for_every_value(op: str) -> None:
    for a, b in itertools.product(SMALL, SMALL):
        r = ranges.binary(op, a, b)
        if r is None:
            # Unknown only where C's result is not a plain function of the bounds we track.
            assert op in ("/", ">>") and (a[0] < 0 or b[0] < (1 if op == "/" else 0))
            continue
        for x, y in itertools.product(_values(a), _values(b)):
            v = {"+": x + y, "-": x - y, "*": x * y, "/": c_div(x, y) if y else 0, ">>": x >> y if y >= 0 else 0}[op]
            assert r[0] <= v <= r[1], (op, a, b, x, y)


def test_remainder_mask_and_conditional() -> None:
    for a in SMALL:
        for c in (1, 3, 8):
            r = ranges.remainder(a, c)
            if a[0] < 0:
                assert r is None  # C's remainder of a negative left side is negative.
            else:
                assert r is not None and all(r[0] <= c_mod(x, c) <= r[1] for x in _values(a))
            m = ranges.mask(a, c)
            assert m is None if a[0] < 0 else m is not None and all(m[0] <= (x & c) <= m[1] for x in _values(a))
    assert ranges.remainder(None, 32, left_unsigned=True) == (0, 31)
    assert ranges.remainder(None, 32) is None and ranges.remainder((0, 5), 0) is None
    assert ranges.join((0, 3), (-2, 1)) == (-2, 3) and ranges.join(None, (0, 1)) is None


def test_ranges_outside_64_bits_and_types_that_cannot_hold_them_are_unknown() -> None:
    big = (0, 2**62)
    assert ranges.binary("+", big, big) is None
    assert ranges.binary("*", (0, 2**32), (0, 2**30)) == (0, 2**62)
    assert ranges.fit((0, 2**31 - 1), 32, signed=True) == (0, 2**31 - 1)
    assert ranges.fit((0, 2**31), 32, signed=True) is None
    assert ranges.fit((-1, 0), 32, signed=False) is None
    assert ranges.of_type(16, signed=False) == (0, 65535) and ranges.of_type(8, signed=True) == (-128, 127)
    assert ranges.BUILTIN_LIMITS["threadIdx.x"] == (0, 1023) and ranges.BUILTIN_LIMITS["blockDim.z"] == (1, 64)


def _expr(text: str) -> tuple[bytes, object]:
    from warpwise.analyzers.parse import SourceFile

    src = f"void f() {{ long long v = {text}; }}".encode()
    tree = SourceFile.parse(src).tree
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "init_declarator":
            return src, n.child_by_field_name("value")
        stack.extend(n.children)
    raise AssertionError(text)


def test_the_one_walk_dispatches_by_kind_and_through_parentheses() -> None:
    from warpwise.analyzers.expr.walk import ExprWalk

    class Count(ExprWalk[int]):
        """A toy algebra: literals are worth their value, `+` adds, everything else is unknown (-1)."""

        max_depth = 3

        def __init__(self, src: bytes) -> None:
            self.src = src

        def unknown(self, node: object) -> int:
            return -1

        def on_number(self, node: object, depth: int) -> int:
            return int(self.src[node.start_byte : node.end_byte])  # type: ignore[attr-defined]

        def on_binary(self, node: object, depth: int) -> int:
            if node.child_by_field_name("operator").type != "+":  # type: ignore[attr-defined]
                return -1
            a = self.walk(node.child_by_field_name("left"), depth + 1)  # type: ignore[attr-defined]
            b = self.walk(node.child_by_field_name("right"), depth + 1)  # type: ignore[attr-defined]
            return -1 if -1 in (a, b) else a + b

    src, node = _expr("((1 + (2)) + /* c */ 3)")
    assert Count(src).walk(node) == 6
    src, node = _expr("1 + 2 * 3")
    assert Count(src).walk(node) == -1  # `*` is not the toy's
    src, node = _expr("1 + (2 + (3 + (4 + 5)))")
    assert Count(src).walk(node) == -1  # nested beyond max_depth


def test_integer_ranges_walk_the_tree() -> None:
    class R(ranges.IntRanges):
        def __init__(self, src: bytes) -> None:
            super().__init__(ranges.BUILTIN_LIMITS)
            self.src = src

        def node_text(self, node: object) -> str:
            return self.src[node.start_byte : node.end_byte].decode()  # type: ignore[attr-defined]

        def modulus(self, node: object) -> int | None:
            return int(self.node_text(node))

    for text, want in [
        ("threadIdx.x + 1", (1, 1024)),
        ("(threadIdx . x) * 2 - 3", (-3, 2043)),
        ("threadIdx.x % 32", (0, 31)),
        ("blockIdx.y & 7", (0, 7)),
        ("threadIdx.x > 3 ? threadIdx.z : 100", (0, 100)),  # threadIdx.z is at most 63
        ("-threadIdx.x", None),  # unary minus: not read
        ("n + 1", None),  # a name the caller says nothing about
    ]:
        src, node = _expr(text)
        assert R(src).walk(node) == want, text
