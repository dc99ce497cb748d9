"""Integer ranges: bounds `(low, high)` that hold for an integer expression in every thread.

The interval arithmetic of the one expression evaluator. A range is a pair of Python integers; an operation whose
result is not known (a divisor that may be zero or negative, a shift by a negative amount, a result outside the
64-bit range) is None, and so is every operation on None. Walking a syntax tree and deciding what a name or a
type means is the caller's part (`warpwise.analyzers.facts_reduce.int_range` follows locals to their initializers
and converts through C types); the arithmetic, and the hardware ranges of the built-in index variables, are here.
"""

from __future__ import annotations

from collections.abc import Iterable

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
