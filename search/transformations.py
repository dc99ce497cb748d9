"""Transformation actions: a semantic transformation card applied with each of its parameter choices.

A transformation card (a folder `skills/<id>/` whose rules module recognises what a kernel computes and rewrites
it, such as `row-cooperative-reduction`) may have parameters that decide how the rewritten kernel is mapped onto
the GPU (a warp or a block per row, rows per block). Its rules module says so with `search_variants(matches)`:
a list of `(label, args, launch)` where `args` are the rewrite's arguments (they replace the card's anchor
arguments) and `launch` the geometry change for a problem file's launch, as steps `(block, scale)`: set the block
to `block`, keeping the number of threads along each dimension in `scale` by scaling the grid (the search's
`Transform("block", ...)`); `("grid_div", factor)` divides grid.x; `("python", code[, block])` replaces the
geometry by the code's `launch(inputs)`, whose block it names (a kernel that is correct for any launch, such as the
tiled transpose, picks its own); `("changes", launch changes, block)` applies `verify.launch.LaunchChange`s as they
are (a new grid that depends on the whole old block). Each variant becomes one action; the gate decides which one
pays off.

Where the kernel is launched from its own file, the rewrite edits the launch site itself and no override is
needed; where a problem file launches it, the version carries the launch override. The plain card action
(`CardActions`) skips these cards on problem files, since its rewrite would edit only the search's virtual launch.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from warpwise.search.actions import Action, ActionKind, ready
from warpwise.search.cards import evidence_gain, prior_of
from warpwise.search.context import SearchContext
from warpwise.search.version import LaunchOverride, Transform, Version

log = logging.getLogger(__name__)


def _variants(card: Any, matches: list[Any]) -> list[tuple[str, dict[str, Any], list[Any]]]:
    fn = getattr(getattr(card, "rules", None), "search_variants", None)
    if not callable(fn):
        return []
    try:
        return list(fn(matches))
    except Exception:  # A failing hook offers no actions; it never stops the search.
        log.exception("search_variants of card %s failed", card.skill_id)
        return []


def _transform(step: Any, label: str) -> Transform:
    """Return one launch step of a variant as a transform: `(block, scale)`, `("grid_div", factor)` or
    `("python", code)` (the code's `launch(inputs)` gives the whole geometry, as a lineage step's does)."""
    if step[0] == "grid_div":
        return Transform("grid_div", factor=int(step[1]), label=label)
    if step[0] == "python":
        return Transform("python", code=str(step[1]), label=label)
    if step[0] == "changes":
        return Transform("changes", launch_changes=tuple(step[1]), label=label)
    block, scale = step
    return Transform("block", block=tuple(block), scale=tuple(scale), label=label)


class TransformationActions:
    """Lists one action per parameter choice of each transformation card that applies to the kernel."""

    def __init__(self, enabled: set[str] | None = None) -> None:
        self.enabled = enabled

    def actions(self, version: Version, ctx: SearchContext) -> list[Action]:
        """Return the transformation actions for a version."""
        from warpwise.skills.engine import match_file
        from warpwise.skills.rewrite import RewriteContext, apply_edits

        model, fn = ctx.function(version)
        if fn is None:
            return []
        groups: dict[str, list[Any]] = defaultdict(list)
        for m in match_file(model, ctx.library, self.enabled, ctx.target_sm):
            if m.function == ctx.kernel and m.has_rewrite:
                groups[m.card_id].append(m)
        out: list[Action] = []
        for card_id, matches in sorted(groups.items()):
            card = matches[0].card
            for label, args, launch in _variants(card, matches):
                edits: list[Any] = []
                try:
                    for m in matches:
                        got = card.rewrite_fn(RewriteContext(model, m.region.function, m.region, dict(args)))
                        if not got:
                            edits = []
                            break
                        edits += got
                    text = (
                        apply_edits(model.text, sorted(set(edits))).decode("utf-8", "surrogateescape")
                        if edits
                        else None
                    )
                except Exception:  # A failing rewrite offers no action; it is logged with the card.
                    log.exception("rewrite of card %s (%s) failed in %s", card_id, label, ctx.kernel)
                    continue
                if text is None or text == version.text:
                    continue
                override = version.launch
                if ctx.spec_source == "problem_file":
                    override = version.launch or LaunchOverride()
                    for step in launch:
                        override = override.then(_transform(step, f"{label} ({card_id})"))
                blocks = [
                    tuple(s[2] if s[0] in ("python", "changes") else s[0])
                    for s in launch
                    if not isinstance(s[0], str) or (s[0] in ("python", "changes") and len(s) > 2)
                ]
                child = version.derive(text, override, blocks[-1] if blocks else "same")
                verdicts = [v for m in matches for v in m.verdicts]
                gain, n = evidence_gain(card, ctx.kernel)
                prior = prior_of(gain, verdicts)
                why = f"transformation {card_id} with {label}; {n} evidence record{'s' if n != 1 else ''}"
                out.append(
                    Action(
                        ActionKind.CARD,
                        f"transform:{card_id}:{label}",
                        f"{matches[0].fix_title} [{label}]",
                        prior,
                        why,
                        ready(child),
                        card_id,
                    )
                )
        return out
