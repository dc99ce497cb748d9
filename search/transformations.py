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
are (a new grid that depends on the whole old block). A variant may carry a fourth element, a weight in [0, 1]
that scales its prior (the choice the card prefers first weighs 1). Each variant becomes one action; the gate
decides which one pays off.

Chains in one step: a transformation's output is often what a second transformation recognises (a thread-per-row
kernel made a block per row, whose passes then re-read the row). For every action, each transformation card that
matches the action's output but not the version it came from adds one composed action: the first step followed
by the second card's preferred choice, so the search (at a few GPU-seconds) reaches the pair without having to
expand the first step's child. Its prior is that either step pays off, `1 - (1 - p1)(1 - p2)`.

Where the kernel is launched from its own file, the rewrite edits the launch site itself and no override is
needed; where a problem file launches it, the version carries the launch override. The plain card action
(`CardActions`) skips these cards on problem files, since its rewrite would edit only the search's virtual launch.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from warpwise.search.actions import Action, ActionKind, ready
from warpwise.search.cards import evidence_gain, prior_of
from warpwise.search.context import SearchContext
from warpwise.search.version import LaunchOverride, Transform, Version

log = logging.getLogger(__name__)


def _variants(card: Any, matches: list[Any]) -> list[tuple[str, dict[str, Any], list[Any], float]]:
    """Return a card's parameter choices as `(label, args, launch, weight)`; a card that gives no weight (a 3-tuple)
    weighs every choice 1."""
    fn = getattr(getattr(card, "rules", None), "search_variants", None)
    if not callable(fn):
        return []
    try:
        out = []
        for v in fn(matches):
            label, args, launch = v[0], v[1], v[2]
            weight = float(v[3]) if len(v) > 3 else 1.0
            out.append((str(label), dict(args), list(launch), max(0.0, min(1.0, weight))))
        return out
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


@dataclass(frozen=True)
class _Step:
    """One parameter choice of a transformation card applied to a version: the child and how it was made."""

    card_id: str
    label: str
    child: Version
    prior: float
    title: str
    why: str


def _transformation_groups(model: Any, ctx: SearchContext, enabled: set[str] | None) -> dict[str, list[Any]]:
    """Return the matches of transformation cards (those with `search_variants`) in the kernel, by card."""
    from warpwise.skills.engine import match_file

    groups: dict[str, list[Any]] = defaultdict(list)
    for m in match_file(model, ctx.library, enabled, ctx.target_sm):
        if m.function == ctx.kernel and m.has_rewrite:
            groups[m.card_id].append(m)
    return groups


def _steps(version: Version, ctx: SearchContext, model: Any, groups: dict[str, list[Any]]) -> list[_Step]:
    """Return one step per parameter choice of each transformation card that applies to the version."""
    from warpwise.skills.rewrite import RewriteContext, apply_edits

    out: list[_Step] = []
    for card_id, matches in sorted(groups.items()):
        card = matches[0].card
        for label, args, launch, weight in _variants(card, matches):
            edits: list[Any] = []
            try:
                for m in matches:
                    got = card.rewrite_fn(RewriteContext(model, m.region.function, m.region, dict(args)))
                    if not got:
                        edits = []
                        break
                    edits += got
                text = apply_edits(model.text, sorted(set(edits))).decode("utf-8", "surrogateescape") if edits else None
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
            prior = prior_of(gain, verdicts) * weight
            why = f"transformation {card_id} with {label}; {n} evidence record{'s' if n != 1 else ''}"
            out.append(_Step(card_id, label, child, prior, f"{matches[0].fix_title} [{label}]", why))
    return out


class TransformationActions:
    """Lists one action per parameter choice of each transformation card that applies to the kernel, and the
    composed actions of the module's docstring."""

    def __init__(self, enabled: set[str] | None = None) -> None:
        self.enabled = enabled

    def actions(self, version: Version, ctx: SearchContext) -> list[Action]:
        """Return the transformation actions for a version, and the composed ones (see the class)."""
        model, fn = ctx.function(version)
        if fn is None:
            return []
        groups = _transformation_groups(model, ctx, self.enabled)
        out: list[Action] = []
        for st in _steps(version, ctx, model, groups):
            out.append(self._action(st.card_id, st.label, st.title, st.prior, st.why, st.child))
            out += self._composed(st, set(groups), ctx)
        return out

    def _composed(self, first: _Step, before: set[str], ctx: SearchContext) -> list[Action]:
        """Return the first step followed by the preferred choice of each transformation card that the step's
        output, and not the version it came from, is matched by."""
        cmodel, cfn = ctx.function(first.child)
        if cfn is None:
            return []
        groups = _transformation_groups(cmodel, ctx, self.enabled)
        fresh = {k: v for k, v in groups.items() if k not in before and k != first.card_id}
        out: list[Action] = []
        seen: set[str] = set()
        for st in _steps(first.child, ctx, cmodel, fresh):
            if st.card_id in seen:
                continue  # The card's preferred choice only (its first one that applies): one composed action.
            seen.add(st.card_id)
            # The pair pays off when either step does: 1 - (1 - p1)(1 - p2), at least the first step's prior.
            prior = min(0.98, 1.0 - (1.0 - first.prior) * (1.0 - st.prior))
            out.append(
                self._action(
                    first.card_id,
                    f"{first.label}, then {st.card_id}: {st.label}",
                    f"{first.title}, then {st.title}",
                    prior,
                    f"{first.why}; then {st.why}",
                    st.child,
                )
            )
        return out

    @staticmethod
    def _action(card_id: str, label: str, title: str, prior: float, why: str, child: Version) -> Action:
        return Action(ActionKind.CARD, f"transform:{card_id}:{label}", title, prior, why, ready(child), card_id)
