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

from warpwise.analyzers.model import AccessPattern, FileModel, MemorySpace

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
        width = acc.width or 4
        contiguous = sectors(1, width)
        if acc.stride is not None:
            n = sectors(acc.stride, width)
            return Traffic(n / contiguous, n, contiguous)
        rows = max(1, math.ceil(SECTOR_BYTES / width))
        n = sectors(rows, width)
        return Traffic(n / contiguous, n, contiguous, f"for `{acc.stride_text}` of at least {rows} elements")
    return None
