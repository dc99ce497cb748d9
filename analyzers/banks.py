"""How many lanes of a warp a shared-memory access spreads along `threadIdx.x`, for bank-conflict degrees.

A conflict degree counted over 32 lanes assumes the block has at least 32 threads along x. Many tiles are written
for 16x16 blocks, often launched from a macro or another file the model does not read; there a warp is two rows
of 16 lanes, and the 32-lane degree overstates the conflict. Two facts bound the lanes along x without the launch:

* the launches in this file, when every block is a constant (`geometry_limits`),
* the access itself: a program that indexes a shared array in bounds keeps `c * threadIdx.x + (non-negative
  terms)` below the dimension's extent, so `threadIdx.x <= (extent - 1) / c` (`tile[ty][4 * tx + 1]` with rows of
  65 elements: at most 16 lanes).

The bound is the most lanes the program allows; a block sized to its tile (the usual case) has exactly that many.
With L lanes along x (L < 32), the L lanes of one row of the warp share banks `lane_ways(words, L)` ways, which is
what the findings state, saying that it is for a block of L threads along x.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Any

from warpwise.analyzers.facts_memory import binary_parts, kernel_syntax, linear, unparen
from warpwise.analyzers.facts_reduce import geometry_limits, int_range
from warpwise.analyzers.model import Access, FileModel, Function, SharedArray

WARP = 32


def x_lanes(model: FileModel, fn: Function, acc: Access, arr: SharedArray | None) -> tuple[int, str] | None:
    """Return (the most lanes along x a warp can have at this access, why) when fewer than 32, else None: the
    launches' bound, or the tightest in-bounds bound of the shared accesses that run under the same
    thread-dependent branches as this one (the threads that reach it keep all of them in bounds)."""
    limits = geometry_limits(model, fn)
    hi = limits.get("threadIdx.x", (0, 1023))[1] + 1
    best: tuple[int, str] | None = None
    if hi < WARP:
        best = (hi, f"the launches in this file have at most {hi} threads along x")
    shared = {s.name: s for s in fn.shared}
    key = _branches_around(fn, acc)
    for other in fn.accesses:
        if other.space is not acc.space or other.base not in shared or _branches_around(fn, other) != key:
            continue
        got = _in_bounds_lanes(model, fn, other, shared[other.base], limits)
        if got is not None and (best is None or got[0] < best[0]):
            best = got
    return best


def _branches_around(fn: Function, acc: Access) -> tuple[tuple[int, int], ...]:
    return tuple(b.span for b in fn.branches if b.thread_dependent and b.span[0] <= acc.span[0] < b.span[1])


def _in_bounds_lanes(
    model: FileModel, fn: Function, acc: Access, arr: SharedArray, limits: dict[str, tuple[int, int]]
) -> tuple[int, str] | None:
    """Return the most lanes along x that keep one shared access in bounds, when fewer than 32."""
    best: tuple[int, str] | None = None
    if arr.dim_values:
        ks = kernel_syntax(model, fn)
        node = ks.node.descendant_for_byte_range(*fn.span(acc.span)) if ks is not None else None
        while node is not None and node.type != "subscript_expression":
            node = node.parent
        subs = []
        while node is not None and node.type == "subscript_expression":
            idx = node.child_by_field_name("indices")
            kids = [c for c in idx.named_children if c.type != "comment"] if idx is not None else []
            subs.append(kids[0] if len(kids) == 1 else None)
            node = node.child_by_field_name("argument")
        subs.reverse()
        if ks is not None and len(subs) == len(arr.dim_values):
            for sub, extent in zip(subs, arr.dim_values, strict=True):
                if sub is None or not extent:
                    continue
                c = _x_coefficient(model, fn, ks, sub, limits)
                if not isinstance(c, Fraction) or c <= 0 or c.denominator != 1:
                    continue
                # The smallest value of the other terms (lane 0): `4 * tx + 3 < 65` allows 16 lanes, not 17.
                low = int_range(model, fn, sub, {**limits, "threadIdx.x": (0, 0)})
                offset = max(0, low[0]) if low is not None else 0
                if offset >= extent:
                    continue
                lanes = (extent - 1 - offset) // int(c) + 1
                if lanes < WARP and (best is None or lanes < best[0]):
                    best = (lanes, f"`{arr.name}` holds at most {lanes} of them in bounds")
    return best


def lane_ways(words: int, lanes: int) -> int:
    """Return the most lanes among `lanes` consecutive ones, `words` 4-byte words apart, that share a bank."""
    if lanes <= 1:
        return 1
    banks = Counter((lane * words) % WARP for lane in range(lanes))
    return max(banks.values())


def warp_conflict(
    model: FileModel, fn: Function, acc: Access, arr: SharedArray | None, words: int, ways: int
) -> tuple[int, int, str] | None:
    """Return (ways, banks, where) of a conflicting shared access whose full-warp degree is `ways`, bounded by the
    lanes along x when fewer than 32 can run (`x_lanes`); None when that bound leaves no conflict to report (or
    the access is not a 4-byte one, whose banks the bound does not describe)."""
    lanes = x_lanes(model, fn, acc, arr)
    if lanes is None:
        return ways, 32 // ways, "a warp's accesses"
    if acc.width != 4:
        return None
    ways = lane_ways(words, lanes[0])
    if ways < 2:
        return None
    banks = len({(lane * words) % 32 for lane in range(lanes[0])})
    return ways, banks, f"with {lanes[0]} threads along x ({lanes[1]}), the lanes of a row of the warp"


def _x_coefficient(
    model: FileModel, fn: Function, ks: Any, node: Any, limits: dict[str, tuple[int, int]], depth: int = 0
) -> Fraction | None:
    """Return the coefficient of `threadIdx.x` in a subscript made of non-negative terms, or None: a linear form's,
    or, through sums, a term's that is linear plus terms that do not depend on `threadIdx.x` at all (`4 * tx +
    ty / 4`: the quotient's range is the same whatever `threadIdx.x` is)."""
    form = linear(ks, node)
    if form is not None:
        if any(isinstance(v, Fraction) and v < 0 for v in form.values()):
            return None  # A negative term could move the index back into bounds for larger lanes.
        c = form.get("tid.x")
        return c if isinstance(c, Fraction) else (Fraction(0) if c is None else None)
    if depth > 8:
        return None
    parts = binary_parts(unparen(node))
    if parts is not None and parts[1] == "+":
        a = _x_coefficient(model, fn, ks, parts[0], limits, depth + 1)
        b = _x_coefficient(model, fn, ks, parts[2], limits, depth + 1)
        return None if a is None or b is None else a + b
    lo = int_range(model, fn, node, {**limits, "threadIdx.x": (0, 0)})
    hi = int_range(model, fn, node, limits)
    if lo is not None and hi is not None and lo == hi and lo[0] >= 0:
        return Fraction(0)
    return None
