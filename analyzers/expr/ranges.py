"""Integer ranges: bounds `(low, high)` that hold for an integer expression in every thread.

The interval arithmetic of the one expression evaluator. A range is a pair of Python integers; an operation whose
result is not known (a divisor that may be zero or negative, a shift by a negative amount, a result outside the
64-bit range) is None, and so is every operation on None. `IntRanges` walks a syntax tree into ranges through the
one expression walk (`walk.ExprWalk`); what a name or a type means is the caller's part, told through the methods
it overrides (`warpwise.analyzers.facts_reduce.int_range` follows locals to their initializers and converts
through its C types). The arithmetic, and the hardware ranges of the built-in index variables, are here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from warpwise.analyzers.expr.values import parse_int_literal
from warpwise.analyzers.expr.walk import ExprWalk

Node = Any
IntType = tuple[int, bool]
"""An integer type as the ranges need it: its width in bits and whether the conversion to it keeps signs."""

Range = tuple[int, int]

INT32_MAX = 2**31 - 1
LIMIT = 2**63  # Results at or beyond it (either sign) are unknown: C's 64-bit arithmetic could wrap there.

BUILTIN_LIMITS: dict[str, Range] = {
    "threadIdx.x": (0, 1023),
    "threadIdx.y": (0, 1023),
    "threadIdx.z": (0, 63),
    "blockDim.x": (1, 1024),
    "blockDim.y": (1, 1024),
    "blockDim.z": (1, 64),
    "blockIdx.x": (0, INT32_MAX - 1),
    "blockIdx.y": (0, 65534),
    "blockIdx.z": (0, 65534),
    "gridDim.x": (1, INT32_MAX),
    "gridDim.y": (1, 65535),
    "gridDim.z": (1, 65535),
}
"""The hardware ranges of the built-in index variables (a launch of known geometry narrows them)."""


def point(v: int) -> Range:
    """Return the range of a known value."""
    return (v, v)


def join(a: Range | None, b: Range | None) -> Range | None:
    """Return the range of a value that is one of two (either branch of `c ? a : b`)."""
    if a is None or b is None:
        return None
    return (min(a[0], b[0]), max(a[1], b[1]))


def binary(op: str, a: Range | None, b: Range | None) -> Range | None:
    """Return the range of `a op b` for `+ - * / >>` (C's division on non-negative values and positive divisors)."""
    if a is None or b is None:
        return None
    if op == "+":
        r = (a[0] + b[0], a[1] + b[1])
    elif op == "-":
        r = (a[0] - b[1], a[1] - b[0])
    elif op == "*":
        products = [x * y for x in a for y in b]
        r = (min(products), max(products))
    elif op == "/":
        if b[0] <= 0 or a[0] < 0:
            return None
        r = (a[0] // b[1], a[1] // b[0])  # Floor equals C's truncation on these signs.
    elif op == ">>":
        if a[0] < 0 or b[0] < 0:
            return None
        r = (a[0] >> b[1], a[1] >> b[0])
    else:
        return None
    return bounded(r)


def bounded(r: Range) -> Range | None:
    """Return the range, or None when it reaches outside the 64-bit range."""
    return None if abs(r[0]) >= LIMIT or abs(r[1]) >= LIMIT else r


def remainder(a: Range | None, c: int, left_unsigned: bool = False) -> Range | None:
    """Return the range of `a % c` for a positive constant `c` (an unsigned left side of unknown range is fine)."""
    if c <= 0:
        return None
    if a is None:
        return (0, c - 1) if left_unsigned else None
    if a[0] < 0:
        return None  # C's remainder takes the sign of the left side.
    return (0, min(c - 1, a[1]))


def mask(a: Range | None, c: int) -> Range | None:
    """Return the range of `a & c` for a positive constant `c` (a left side of unknown range is fine)."""
    if c <= 0:
        return None
    return (0, c) if a is None or a[0] >= 0 else None


def of_type(bits: int, signed: bool) -> Range:
    """Return every value of an integer type."""
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)


def fit(r: Range | None, bits: int, signed: bool) -> Range | None:
    """Return the range when every value fits the type (otherwise a conversion could wrap: unknown)."""
    if r is None:
        return None
    lo, hi = of_type(bits, signed)
    return None if r[0] < lo or r[1] > hi else r


def hull(values: Iterable[int]) -> Range:
    """Return the smallest range holding every value."""
    vs = list(values)
    return (min(vs), max(vs))


class IntRanges(ExprWalk[Range | None]):
    """Bounds `(low, high)` that hold for an integer expression in every thread, or None when unknown.

    Built-in index variables have the ranges in `limits` (hardware ranges, or a launch's); names, types and
    constants mean what the caller's overrides say (by default nothing is known). Arithmetic that could leave the
    64-bit range is unknown.
    """

    max_depth = 10

    def __init__(self, limits: dict[str, Range]) -> None:
        self.limits = limits

    # -- what the caller knows ------------------------------------------------------------------------------------

    def node_text(self, node: Node) -> str:
        """Return the source text of a node."""
        raise NotImplementedError

    def constant(self, name: str) -> int | None:
        """Return the value of a file-level constant the name means here (None: it is not one)."""
        return None

    def definition(self, name: str) -> tuple[Node, IntType] | None:
        """Return the one initializer of an integer local and its declared type (None: not such a local)."""
        return None

    def cast_type(self, node: Node) -> IntType | None:
        """Return the integer type a cast converts to (None: not an integer type)."""
        return None

    def element_type(self, array: Node) -> IntType | None:
        """Return the integer type of an array's elements, when its values have a range worth reading."""
        return None

    def modulus(self, node: Node) -> int | None:
        """Return the value of the right side of `%` or `&` (a literal or a file-level constant)."""
        return None

    def unsigned(self, node: Node) -> bool:
        """Return whether an expression has an unsigned type."""
        return False

    # -- the walk -------------------------------------------------------------------------------------------------

    def unknown(self, node: Node | None) -> Range | None:
        return None

    def on_number(self, node: Node, depth: int) -> Range | None:
        v = parse_int_literal(self.node_text(node))
        return point(v) if v is not None else None

    def on_field(self, node: Node, depth: int) -> Range | None:
        return self.limits.get("".join(self.node_text(node).split()))

    def on_identifier(self, node: Node, depth: int) -> Range | None:
        name = self.node_text(node)
        c = self.constant(name)
        if c is not None:
            return point(c)
        found = self.definition(name)
        if found is None:
            return None
        value, (bits, signed) = found
        return fit(self.walk(value, depth + 1), bits, signed)

    def on_cast(self, node: Node, depth: int) -> Range | None:
        target = self.cast_type(node.child_by_field_name("type"))
        if target is None:
            return None
        return fit(self.walk(node.child_by_field_name("value"), depth + 1), *target)

    def on_binary(self, node: Node, depth: int) -> Range | None:
        op_node = node.child_by_field_name("operator")
        op = op_node.type if op_node is not None else None
        left = node.child_by_field_name("left")
        a = self.walk(left, depth + 1)
        if op in ("%", "&"):
            c = self.modulus(node.child_by_field_name("right"))
            if c is None or c <= 0:
                return None
            if op == "&":
                return mask(a, c)
            if a is None:
                return remainder(None, c, self.unsigned(left))
            return remainder(a, c)
        if a is None:
            return None
        return binary(op or "", a, self.walk(node.child_by_field_name("right"), depth + 1))

    def on_subscript(self, node: Node, depth: int) -> Range | None:
        elem = self.element_type(node.child_by_field_name("argument"))
        return of_type(*elem) if elem is not None else None

    def on_conditional(self, node: Node, depth: int) -> Range | None:
        a = self.walk(node.child_by_field_name("consequence"), depth + 1)
        if a is None:
            return None
        return join(a, self.walk(node.child_by_field_name("alternative"), depth + 1))
