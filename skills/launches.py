"""How a card's rewrite changes the kernel's launch, for launches the rewrite cannot edit.

Some rewrites make each thread cover several elements (coarsening, 16-byte vectors) and shrink the grid at every
launch site in the file. When the launch is not in the file (a problem file's `launch(inputs)`, a launch in another
translation unit), the grid stays as it was: the rewritten kernel is still correct (its extra threads find nothing
to do) but its gain is hidden. Whoever launches the rewrite from outside the file (the search, card admission,
`warpwise verify --skill`) divides the grid by `grid_factor` instead.
"""

from __future__ import annotations

from typing import Any

# The cards whose rewrites shrink launches in the file, by the factor named in their anchor or their lanes.
GRID_FACTOR_CARDS = frozenset({"one-element-per-thread", "scalar-global-access"})


def grid_factor(card_id: str, matches: list[Any]) -> int | None:
    """Return how many elements each thread covers after the card's rewrite (the grid shrinks by as much).

    None when the card does not change launches or the factor cannot be known (arrays of several vector widths).
    """
    if card_id not in GRID_FACTOR_CARDS or not matches:
        return None
    region = matches[0].region
    shape = region.facts.get("shape")
    if shape is not None and getattr(shape, "form", None) not in ("if", "return"):
        return None  # A grid-stride loop covers the elements with any grid: the rewrite leaves launches alone.
    if card_id == "one-element-per-thread":
        return int(matches[0].card.header.anchor.args.get("factor", 4))
    from warpwise.skills.matchers.memory import VECTOR_TYPES

    fn = region.function
    lanes = set()
    for name in region.facts.get("arrays", []):
        p = fn.param(name)
        vec = VECTOR_TYPES.get(p.base_type) if p is not None else None
        if vec is None:
            return None
        lanes.add(vec[1])
    return lanes.pop() if len(lanes) == 1 else None
