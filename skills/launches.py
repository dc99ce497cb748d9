"""How a card's rewrite changes the kernel's launch, for launches the rewrite cannot edit.

Some rewrites make each thread cover several elements (coarsening, 16-byte vectors) and shrink the grid at every
launch site in the file. When the launch is not in the file (a problem file's `launch(inputs)`, a launch in another
translation unit), the grid stays as it was: the rewritten kernel is still correct (its extra threads find nothing
to do) but its gain is hidden. Whoever launches the rewrite from outside the file (the search, card admission,
`warpwise verify --skill`) divides the grid by `grid_factor` instead.
"""

from __future__ import annotations

import dataclasses
import re
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


def shrunk_problem_spec(path: str, text: str, kernel: str, factor: int) -> Any:
    """Return the problem-file spec that launches the rewrite with its grid divided by `factor` (None if none).

    A rewrite that shrinks launches in host code finds none to shrink when a problem file launches the kernel; the
    candidate is then launched with the grid the rewrite would have given it, the original as the file says.
    """
    from warpwise.verify.launch import shrink_grid

    return changed_problem_spec(path, text, kernel, shrink_grid(factor))


def changed_problem_spec(path: str, text: str, kernel: str, changes: Any) -> Any:
    """Return the problem-file spec that launches the candidate with the given `LaunchChange`s (None if none)."""
    from warpwise.verify.launch import problem_source
    from warpwise.verify.spec import ProblemSpec, resolve_spec

    spec = resolve_spec(path, text, kernel)
    if not isinstance(spec, ProblemSpec) or spec.source != "problem_file" or spec.run.problem_source is None:
        return None  # The launch comes from this file's host code, which the rewrite changed itself.
    if not re.search(r"^(def\s+launch\s*\(|grid\s*=)", spec.run.problem_source, re.M):
        return None  # The geometry comes from an annotation or the host code, not the problem file.
    run = dataclasses.replace(spec.run, problem_source=problem_source(spec.run.problem_source, (), tuple(changes)))
    return dataclasses.replace(spec, run=run)


def card_problem_spec(path: str, text: str, kernel: str, card_id: str) -> Any:
    """Return the problem-file spec for a card whose rewrite changes the launch in its own way (None if none).

    Interim hook (issue 20), replaced on merge by the one-folder-per-card loader: a card folder's rules module
    may define `problem_launch_changes(matches)`, returning the `LaunchChange`s of its rewrite for a problem
    file's launch (the untiled-contraction card's grid of output tiles).
    """
    import sys

    from warpwise.analyzers.build import analyze_text
    from warpwise.skills import engine
    from warpwise.skills.library import builtin_library

    card = builtin_library().get(card_id)
    module = sys.modules.get(card.header.rewrite.partition(":")[0]) if card and card.header.rewrite else None
    fn = getattr(module, "problem_launch_changes", None)
    if fn is None:
        return None
    model = analyze_text(text.encode("utf-8", "surrogatepass"), path)
    matches = [m for m in engine.match_file(model, enabled={card_id}) if m.function == kernel]
    changes = fn(matches) if matches else None
    return changed_problem_spec(path, text, kernel, changes) if changes else None
