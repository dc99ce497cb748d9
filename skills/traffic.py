"""How much DRAM traffic an uncoalesced global access costs: 32-byte sectors per warp, from the model's strides.

A warp's access to global memory is served in 32-byte sectors. When the 32 lanes touch `w` bytes each, contiguous
lanes need `ceil(32 w / 32)` sectors; lanes `s` elements apart spread over `ceil((31 s w + w) / 32)` sectors, and
once `s w` reaches 32 bytes every lane has a sector of its own. The ratio is the factor by which the access
multiplies the sectors moved, which is the gain a coalesced layout predicts for a memory-bound kernel. The quiet
default (`skills.presentation`) shows such a finding as a warning when the factor reaches `MIN_TRAFFIC_FACTOR`,
even where the learned ranking has no prediction.

A stride the model knows only symbolically (`x * rows`) is a row length of the data; the factor is then given for a
row of at least one sector (8 `float`s), and the reason says so.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from warpwise.analyzers.expr.values import type_size
from warpwise.analyzers.facts_memory import index_node, lane_sectors, lanes_walk_gap
from warpwise.analyzers.model import Access, AccessKind, AccessPattern, FileModel, Function, MemorySpace

SECTOR_BYTES = 32
WARP = 32
UNCOALESCED_RULE = "uncoalesced-global-access"
"""The model-level rule whose claim is an uncoalesced global access; cards that supersede it claim the same."""


@functools.cache
def traffic_ids() -> frozenset[str]:
    """Return the rule and the cards whose findings claim an uncoalesced global access (their span starts there)."""
    from warpwise.skills.library import builtin_library

    cards = {c.skill_id for c in builtin_library() if UNCOALESCED_RULE in c.header.supersedes}
    return frozenset({UNCOALESCED_RULE, *cards})


@dataclass(frozen=True, slots=True)
class Traffic:
    """The sectors a warp's access moves, against a contiguous access of the same width."""

    factor: float
    sectors: int
    contiguous: int
    assumed: str = ""
    """What the factor assumes of a symbolic stride (empty when the stride is a known constant)."""

    def describe(self) -> str:
        """Return the figure in one phrase."""
        tail = f", {self.assumed}" if self.assumed else ""
        return (
            f"each warp's access touches {self.sectors} 32-byte sectors where a contiguous one touches "
            f"{self.contiguous} ({self.factor:g}x the DRAM sectors{tail})"
        )


def sectors(stride_elems: Fraction | int, width: int) -> int:
    """Return the 32-byte sectors one warp touches when adjacent lanes are `stride_elems` elements apart."""
    step = abs(Fraction(stride_elems)) * width
    if step >= SECTOR_BYTES:
        return WARP * max(1, math.ceil(width / SECTOR_BYTES))
    return max(1, math.ceil(((WARP - 1) * step + width) / SECTOR_BYTES))


def access_traffic(model: FileModel, function: str | None, start: int) -> Traffic | None:
    """Return the sector factor of the strided global access that starts at absolute byte `start`, if any."""
    fn = model.function(function) if function else None
    if fn is None:
        return None
    for acc in fn.accesses:
        if acc.space is not MemorySpace.GLOBAL or acc.pattern is not AccessPattern.STRIDED:
            continue
        if fn.base + acc.span[0] != start:
            continue
        width = _bytes_moved(acc) or 4
        contiguous = sectors(1, width)
        if acc.stride is not None and _covered_by_siblings(model, fn, acc):
            # `x[4 * t]`, `x[4 * t + 1]`, ... `x[4 * t + 3]`: each access is strided, but together the warp's lanes
            # read every byte of the sectors they fetch, so the accesses move what a contiguous one would.
            return Traffic(1.0, contiguous, contiguous, "its neighbouring accesses use the rest of each sector")
        if acc.stride is None or acc.stride.denominator != 1:
            # `A[(tid / 4) * K + (tid % 4) * 4]`: no one stride between lanes; count the sectors lane by lane.
            counted = lane_sectors(model, fn, acc, width)
            if counted is not None:
                n, base = counted
                return Traffic(n / base, n, base, "counted lane by lane, sizes the code leaves open taken as large")
        loop = lanes_walk_gap(model, fn, acc)
        if loop is not None:
            # `for (l = 0; l < 4; ++l) x[4 * t + l]`: each instruction is strided, but over the loop each lane walks
            # the elements up to the next lane's, so the warp fetches each sector once (L1 and L2 hold the lines
            # between iterations) and moves what a contiguous access would.
            walked = f"over the loop on `{loop}` each lane walks the elements up to the next lane's"
            return Traffic(1.0, contiguous, contiguous, walked)
        if acc.stride is not None:
            # The stride is in elements; a view (`LDST128BITS(b[i])`) moves `width` bytes from each lane's start.
            n = sectors(acc.stride * Fraction(acc.width or width, width), width)
            return Traffic(n / contiguous, n, contiguous)
        rows = max(1, math.ceil(SECTOR_BYTES / (acc.width or width)))
        n = sectors(rows * Fraction(acc.width or width, width), width)
        return Traffic(n / contiguous, n, contiguous, f"for `{acc.stride_text}` of at least {rows} elements")
    return None


def _offset_form(model: FileModel, fn: Function, acc: Access) -> tuple[int, str] | None:
    """Return (constant offset, the rest of the index, white space removed) of a one-dimensional index."""
    from warpwise.analyzers.facts_memory import binary_parts, const_value, squash, unparen

    found = index_node(model, fn, acc) if len(acc.indices) == 1 else None
    if found is None:
        return None
    ks, node = found
    parts = binary_parts(node)
    if parts is not None and parts[1] in ("+", "-"):
        left, op, right = parts
        c = const_value(model, right)
        if c is not None:
            return (c if op == "+" else -c), squash(ks.text(unparen(left)))
        c = const_value(model, left) if op == "+" else None
        if c is not None:
            return c, squash(ks.text(unparen(right)))
    return 0, squash(ks.text(node))


def _covered_by_siblings(model: FileModel, fn: Function, acc: Access) -> bool:
    """Return whether the accesses of the same array at constant offsets from one index (`x[b]`, `x[b + 1]`, ...),
    read or written alike, together cover every element between one lane's start and the next lane's."""
    if acc.stride is None or acc.stride.denominator != 1 or not acc.element_type:
        return False
    stride = abs(acc.stride.numerator)
    elem = type_size(acc.element_type.replace("const", "").strip()) or None
    if not elem or not acc.width or acc.width % elem:
        return False
    moved = _bytes_moved(acc)
    mine = _offset_form(model, fn, acc)
    if mine is None:
        return False
    covered: set[int] = set()
    reading = acc.kind is AccessKind.READ
    for other in fn.accesses:
        if other.base != acc.base or other.space is not acc.space or (other.kind is AccessKind.READ) != reading:
            continue
        if other.kind is AccessKind.ADDRESS or other.stride != acc.stride or _bytes_moved(other) != moved:
            continue
        form = _offset_form(model, fn, other)
        if form is None or form[1] != mine[1]:
            continue
        covered.update(range(form[0], form[0] + max(1, _bytes_moved(other) // elem)))
    start = min(covered, default=0)
    return all(start + i in covered for i in range(stride))


def _bytes_moved(acc: Access) -> int:
    """Return the bytes one access moves: its view's (`HALF2(x[i])` moves a `half2`) or its element's."""
    if acc.view_type:
        size = type_size(acc.view_type.replace("const", "").strip())
        if size:
            return size
    return acc.width or 0
