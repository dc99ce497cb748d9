"""How a card's rewrite changes the kernel's launch, for launches the rewrite cannot edit.

Some rewrites make each thread cover several elements (coarsening, 16-byte vectors) and shrink the grid at every
launch site in the file. When the launch is not in the file (a problem file's `launch(inputs)`, a launch in another
translation unit), the grid stays as it was: the rewritten kernel is still correct (its extra threads find nothing
to do) but its gain is hidden. Whoever launches the rewrite from outside the file (the search, card admission,
`warpwise verify --skill`) divides the grid by `grid_factor` instead.

A card says that its rewrite shrinks launches by defining `grid_factor(matches) -> int | None` in its rules module
(`skills/<card-id>/<card_id>.py`); the engine names no card.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any


def _hook(card: Any) -> Callable[[list[Any]], int | None] | None:
    fn = getattr(getattr(card, "rules", None), "grid_factor", None)
    return fn if callable(fn) else None


def shrinks_launches(card: Any) -> bool:
    """Return whether a card's rewrite shrinks the launches in its file (its rules module defines `grid_factor`)."""
    return _hook(card) is not None


def grid_factor_cards(library: Any = None) -> frozenset[str]:
    """Return the ids of the cards whose rewrites shrink the launches in their file (built-in library by default)."""
    if library is None:
        from warpwise.skills.library import builtin_library

        library = builtin_library()
    return frozenset(card.skill_id for card in library if shrinks_launches(card))


def grid_factor(card_id: str, matches: list[Any]) -> int | None:
    """Return how many elements each thread covers after the card's rewrite (the grid shrinks by as much).

    None when the card does not change launches or the factor cannot be known (arrays of several vector widths).
    """
    if not matches or matches[0].card.skill_id != card_id:
        return None
    hook = _hook(matches[0].card)
    if hook is None:
        return None
    shape = matches[0].region.facts.get("shape")
    if shape is not None and getattr(shape, "form", None) not in ("if", "return"):
        return None  # A grid-stride loop covers the elements with any grid: the rewrite leaves launches alone.
    return hook(matches)


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

    A card's rules module may define `problem_launch_changes(matches)`, returning the `LaunchChange`s of its
    rewrite for a problem file's launch (the untiled-contraction card's grid of output tiles).
    """
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills import engine
    from warpwise.skills.library import builtin_library

    card = builtin_library().get(card_id)
    fn = getattr(card.rules, "problem_launch_changes", None) if card is not None else None
    if fn is None:
        return None
    model = analyze_text(text.encode("utf-8", "surrogatepass"), path)
    matches = [m for m in engine.match_file(model, enabled={card_id}) if m.function == kernel]
    changes = fn(matches) if matches else None
    return changed_problem_spec(path, text, kernel, changes) if changes else None
