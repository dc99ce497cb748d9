"""Card actions: apply every fix of one skill card in the kernel, with a prior from evidence and verdicts.

The prior of a card is its expected share of time saved, estimated from the card's measured evidence records
(records of this very kernel count three times), shrunk towards a small neutral value when there are few records,
then lowered for each precondition the checks could not decide on this code (soundness ones more than benefit
ones). When the ranking model (`warpwise.ranking`) is installed and predicts for the card, its
prediction replaces the evidence estimate. The prior only orders expansions: whether the rewrite pays off on this
kernel is for the gate to say.

Cards whose rewrite shrinks the launch grid at the kernel's launch sites (coarsening, vectorization) cannot do
so when the geometry is a problem file's `launch(inputs)`: then the action carries a launch override dividing
the grid's x dimension by the same factor, which is exact for the grids those rewrites themselves shrink.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from warpwise.search.actions import Action, ActionKind, ready
from warpwise.search.context import SearchContext
from warpwise.search.reward import time_saved
from warpwise.search.version import LaunchOverride, Transform, Version
from warpwise.skills.launches import grid_factor, shrinks_launches

log = logging.getLogger(__name__)

NEUTRAL_GAIN = 0.02
"""Expected share of time saved assumed for a card without evidence (a small positive hope)."""
PSEUDO_RECORDS = 2.0
"""How many neutral records the evidence estimate is shrunk with."""
SAME_KERNEL_WEIGHT = 3.0
UNKNOWN_SOUNDNESS_FACTOR = 0.85
UNKNOWN_BENEFIT_FACTOR = 0.95


def evidence_gain(card: Any, kernel: str) -> tuple[float, int]:
    """Return the card's expected share of time saved from its evidence, and the number of records used."""
    total = weight = 0.0
    n = 0
    for rec in card.header.evidence:
        status = str(rec.context.get("status", "verified" if rec.speedup > 1 else "not_faster"))
        if status == "not_faster" and rec.speedup >= 1.0:
            gain = 0.0
        else:
            gain = time_saved(rec.speedup)
        w = SAME_KERNEL_WEIGHT if rec.kernel == kernel else 1.0
        total += w * gain
        weight += w
        n += 1
    total += PSEUDO_RECORDS * NEUTRAL_GAIN
    weight += PSEUDO_RECORDS
    return total / weight, n


def prior_of(expected_gain: float, verdicts: list[Any]) -> float:
    """Return an expansion prior in (0, 1) from an expected share of time saved and precondition verdicts."""
    p = 0.5 + 2.0 * expected_gain
    for v in verdicts:
        if str(getattr(v.status, "value", v.status)) == "unknown":
            p *= UNKNOWN_SOUNDNESS_FACTOR if v.kind == "soundness" else UNKNOWN_BENEFIT_FACTOR
    return max(0.02, min(0.98, p))


class CardActions:
    """Lists one action per skill card with a rewrite that applies to the kernel."""

    def __init__(self, enabled: set[str] | None = None, exclude: set[str] | None = None) -> None:
        self.enabled = enabled
        self.exclude = exclude or set()

    def actions(self, version: Version, ctx: SearchContext) -> list[Action]:
        """Return the card actions for a version."""
        from warpwise.skills.engine import compute_fix, match_file, merge_fixes
        from warpwise.skills.rewrite import apply_edits

        model, fn, limit = ctx.launch_model(version)
        if fn is None:
            return []
        groups: dict[str, list[Any]] = defaultdict(list)
        for m in match_file(model, ctx.library, self.enabled, ctx.target_sm):
            if m.function == ctx.kernel and m.has_rewrite and m.card_id not in self.exclude:
                groups[m.card_id].append(m)
        out: list[Action] = []
        for card_id, matches in sorted(groups.items()):
            if ctx.spec_source == "problem_file" and callable(
                getattr(getattr(matches[0].card, "rules", None), "search_variants", None)
            ):
                continue  # A transformation card: each parameter choice, with its launch, is a TransformationAction.
            fixes = [f for f in (compute_fix(model, m) for m in matches) if f is not None]
            edits = merge_fixes(fixes)
            if not edits:
                continue
            if any(e.end > limit or e.start >= limit for e in edits):
                # The rewrite also changes the (virtual) launch site: only grid shrinking has a launch override.
                if not (matches and shrinks_launches(matches[0].card)):
                    continue
                edits = [e for e in edits if e.end <= limit and e.start < limit]
            try:
                text = apply_edits(model.text[:limit], edits).decode("utf-8", "surrogateescape")
            except ValueError:
                log.info("card %s gave conflicting edits in %s", card_id, ctx.kernel)
                continue
            if text == version.text:
                continue
            launch = self._launch(version, ctx, card_id, matches, model)
            child = version.derive(text, launch)
            card = matches[0].card
            verdicts = [v for m in matches for v in m.verdicts]
            gain, n = evidence_gain(card, ctx.kernel)
            source = f"{n} evidence record{'s' if n != 1 else ''}"
            predicted = _ranked(ctx, card_id, matches, model)
            if predicted is not None:
                gain, source = predicted
            # The ranking model's features include the verdicts already; the evidence estimate does not.
            prior = prior_of(gain, [] if predicted is not None else verdicts)
            unknown = sum(1 for v in verdicts if str(getattr(v.status, "value", v.status)) == "unknown")
            why = f"expected {100 * gain:+.1f}% time from {source}; {unknown} precondition(s) unknown"
            out.append(
                Action(ActionKind.CARD, f"card:{card_id}", matches[0].fix_title, prior, why, ready(child), card_id)
            )
        return out

    @staticmethod
    def _launch(
        version: Version, ctx: SearchContext, card_id: str, matches: list[Any], model: Any
    ) -> LaunchOverride | None:
        """Return the child's launch override: the grid shrunk by the rewrite's factor for problem-file launches."""
        # A problem file decides both kernels' geometry, even where the file's own launches were shrunk.
        if not (matches and shrinks_launches(matches[0].card)) or ctx.spec_source != "problem_file":
            return version.launch
        factor = grid_factor(card_id, matches)
        if factor is None or factor <= 1:
            return version.launch
        label = f"grid / {factor} ({card_id})"
        return (version.launch or LaunchOverride()).then(Transform("grid_div", factor=factor, label=label))


def _ranked(ctx: SearchContext, card_id: str, matches: list[Any], model: Any) -> tuple[float, str] | None:
    """Return the ranking model's expected share of time saved for a card here, when a model is installed."""
    if ctx.ranking is None:
        return None
    try:
        predicted = ctx.ranking(card_id, matches, model)
    except Exception:  # A failing model is logged and the evidence estimate is used instead.
        log.exception("the ranking model failed on card %s", card_id)
        return None
    return predicted
