"""Screening: rank candidates on a reduced problem, stop timing the clearly slower ones, confirm the best few.

A gate job times the starting kernel next to every candidate, so on a slow start (a naive 4096^3 SGEMM runs
275 ms) each job costs about ten GPU-seconds and a 40-second budget buys four versions. A screened search:

1. **Chooses a reduced problem** (`warpwise.verify.scale`): the problem file's `screen` preset, else its `full`
   sizes scaled by 1/2, 1/4, 1/8 per dimension, the first at which the start runs within `TARGET_MS`. The root is
   evaluated there (the start against itself: is it correct at that size, how long does it take). Screening is
   not used when the spec has no sizes to reduce, when the start fails at the reduced size (a kernel that
   assumes its size), or when the start would take under `FAST_MS` at the user's size (estimated from the
   reduced run and the ratio of the sizes' products), because then full-size jobs are cheap already.
2. **Screens**: the strategy runs as usual, every version evaluated on the reduced problem with one seed, and
   with the gate's early stop (`Options.stop_below`): timing ends once the candidate is clearly slower than the
   best screened speedup so far (a sequential sign test, false-stop rate at most 5%). The screening phase may
   spend `SCREEN_SHARE` of what is left of the budget.
3. **Confirms** the best `CONFIRM` screened versions (by screened speedup, among those whose screening timing
   cleared its spread in their favour: a screening result ranks, so the gate's other reasons not to say
   "verified", an unsettled GPU or an early stop, do not hide a faster candidate) at the user's size, with the
   user's seeds and timing. Only these confirmations can make a version verified; a screened result is a ranking
   signal and never more. The first confirmation always runs; a further one only while the budget left covers the
   last one's cost. Then, while budget is left, it screens again
   and confirms whatever entered the best few.

The search's nodes keep both results: `Node.screening` the reduced one, `Node.evaluation` the confirmation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from warpwise.search.evaluate import Evaluator, Screen
from warpwise.search.reward import measured_faster
from warpwise.search.tree import Node, Search
from warpwise.verify.scale import reduced_spec
from warpwise.verify.types import Status

FACTORS = (0.5, 0.25, 0.125)
TARGET_MS = 50.0
"""The reduced start should run within this (ms per run), else the next factor is tried."""
FAST_MS = 20.0
"""A start estimated under this at the user's size is not screened: its full-size jobs are cheap."""
SCREEN_SHARE = 0.6
CONFIRM = 3


@dataclass
class ScreeningLog:
    """What screening did, in words and numbers, for the report."""

    used: bool = False
    label: str = ""
    notes: list[str] = field(default_factory=list)
    confirmed: list[int] = field(default_factory=list)
    screened: int = 0
    confirm_cost_s: float = 0.0
    """GPU-seconds the last confirmation at the user's size cost (the estimate for the next one)."""


def _product(sizes: int | tuple[int, ...]) -> int:
    return sizes if isinstance(sizes, int) else math.prod(sizes)


def choose_screen(evaluator: Evaluator) -> tuple[Screen | None, ScreeningLog]:
    """Return the reduced problem to screen on (None: evaluate at the user's size) and what was decided."""
    log = ScreeningLog()
    spec = evaluator.spec
    if spec is None or spec.source != "problem_file":
        log.notes.append("screening: not used (the sizes of a spec without a problem file are not reduced)")
        return None, log
    for level, factor in enumerate(FACTORS):
        found = reduced_spec(spec, level, factor)
        if found is None:
            if level == 0:
                log.notes.append("screening: not used (the problem file has no `SIZES` with a `full` preset to reduce)")
            break
        rspec, red = found
        screen = Screen(rspec, red.label)
        ev = evaluator.evaluate(evaluator.start, screen=screen)
        if ev is None:
            return None, log
        r = ev.result
        if r.status not in (Status.NOT_FASTER, Status.VERIFIED) or r.original_timing is None:
            log.notes.append(
                f"screening: not used (at {red.label}, the start gives {r.status.value}: {r.message[:120]})"
            )
            return None, log
        ms = r.original_timing.median_ms
        full_ms = ms * _product(red.full) / max(1, _product(red.sizes))
        if full_ms < FAST_MS:
            log.notes.append(
                f"screening: not used (the start takes {ms:.3g} ms at {red.label}, about {full_ms:.3g} ms at the "
                "user's size: full-size jobs are cheap)"
            )
            return None, log
        if ms > TARGET_MS and level + 1 < len(FACTORS):
            log.notes.append(f"screening: {red.label} takes {ms:.3g} ms per run of the start; trying a smaller size")
            continue
        log.used, log.label = True, red.label
        log.notes.append(
            f"screening on {red.label} (the start runs {ms:.3g} ms there, about {full_ms:.3g} ms at the user's "
            f"size); the best {CONFIRM} are confirmed at the user's size, and only that verifies"
        )
        return screen, log
    return None, log


def _screened_best(search: Search) -> float | None:
    """Return the best screened speedup over the start so far (among versions screened faster)."""
    vals = [_screen_speed(n) for n in search.nodes[1:]]
    return max(vals) if vals and max(vals) > 0 else None


def _screen_speed(n: Node) -> float:
    """Return a version's screened speedup when its screening measured it faster than the start, else 0."""
    ev = n.screening if n.screening is not None else n.evaluation
    if ev is None or not ev.screened or ev.result.speedup is None or not measured_faster(ev.result):
        return 0.0
    return ev.result.speedup.median


def confirm(search: Search, log: ScreeningLog, count: int = CONFIRM) -> int:
    """Evaluate the best `count` screened versions at the user's size (those not yet confirmed); return how many."""
    ranked = sorted((n for n in search.nodes[1:] if _screen_speed(n) > 0), key=lambda n: (-_screen_speed(n), n.id))
    done = 0
    for node in ranked[:count]:
        if not node.screened:
            continue
        budget = search.evaluator.budget
        if budget.hard_exhausted() or search.evaluator.cancel.is_set():
            break
        left = None if budget.gpu_seconds is None else budget.gpu_seconds - budget.spent_s
        if log.confirmed and left is not None and left < log.confirm_cost_s:
            break  # Another confirmation would overrun the budget by most of its cost; the first one always runs.
        ev = search.evaluator.evaluate(node.version, full=True)
        if ev is None:
            break
        node.screening, node.evaluation = node.evaluation, ev
        log.confirmed.append(node.id)
        log.confirm_cost_s = ev.cost_s
        done += 1
    return done


def run_screened(search: Search, screen: Screen, log: ScreeningLog) -> Node | None:
    """Run a strategy with screening: screen, confirm the best few, and repeat while the budget lasts."""
    ev = search.evaluator
    budget = ev.budget
    ev.screen = screen
    if not search.start():
        return None
    while True:
        nodes_before = len(search.nodes)
        if budget.gpu_seconds is not None:
            budget.soft_gpu_seconds = budget.spent_s + SCREEN_SHARE * max(0.0, budget.gpu_seconds - budget.spent_s)
        if budget.candidates is not None:
            budget.soft_candidates = max(budget.charged + 1, budget.candidates - CONFIRM)
        budget.soft_reason = "the screening share of the budget is spent"
        search.stop_reason = ""
        tree_done = False
        while not search._stopped():
            screen.stop_below = _screened_best(search)
            if not search.step():
                tree_done = True
                break
        budget.soft_gpu_seconds = budget.soft_candidates = None
        ev.screen = None
        confirmed = confirm(search, log)
        ev.screen = screen
        log.screened = len(search.nodes)
        hard = budget.hard_exhausted()
        if hard is not None:
            search.stop_reason = hard
            break
        if ev.cancel.is_set():
            search.stop_reason = "cancelled"
            break
        if tree_done or (len(search.nodes) == nodes_before and not confirmed):
            search.stop_reason = search.stop_reason if not tree_done else "nothing left to try"
            break
    search.stop_reason = search.stop_reason or "nothing left to try"
    return search.best()
