"""Evaluation helpers: rank correlation, precision, the cost estimate, and the queue replay."""

from __future__ import annotations

import math

import pytest

from warpwise.ranking import evaluate
from warpwise.ranking.evaluate import ReplayCandidate, estimate_cost, replay, spearman
from warpwise.ranking.model import Prediction


def test_spearman_matches_known_values() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # Ties get their average rank (scipy.stats.spearmanr gives 0.9486832980505138 here).
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486832980505138)
    assert math.isnan(spearman([1, 2], [1, 2]))


def test_cost_follows_the_timing_policy() -> None:
    fast = estimate_cost(0.05, 0.04, "verified")
    slow = estimate_cost(276.0, 46.0, "verified")
    assert 0.1 < fast < 0.3  # Bounded by the 25 ms warm-up and 100 ms of repetitions.
    assert slow > 5  # Ten rounds of original, candidate and control at least.
    assert estimate_cost(None, None, "spec_missing") == 0.0
    assert estimate_cost(276.0, None, "incorrect") < slow


def _pred(p: float, high: float) -> Prediction:
    return Prediction("c", p, 1.0, 0.9, high)


def _cands() -> list[ReplayCandidate]:
    return [
        ReplayCandidate("f", "a", "loser1", "not_faster", 0.9, 1.0, "estimated", _pred(0.1, 1.1), 0.88),
        ReplayCandidate("f", "a", "win", "verified", 1.5, 1.0, "estimated", _pred(0.9, 1.8), 1.45),
        ReplayCandidate("f", "b", "loser2", "not_faster", 1.0, 1.0, "estimated", _pred(0.2, 1.05), 0.99),
        ReplayCandidate("f", "b", "small", "verified", 1.1, 1.0, "estimated", _pred(0.6, 1.2), 1.08),
    ]


def test_replay_in_ranked_order_reaches_the_final_sooner() -> None:
    fifo = replay(_cands(), "fifo")
    ranked = replay(_cands(), "ranked", key=evaluate.ranked_key)
    assert fifo.final == pytest.approx(ranked.final) == pytest.approx(math.sqrt(1.5 * 1.1))
    assert fifo.seconds_to_reach(fifo.final) == 4.0
    assert ranked.seconds_to_reach(fifo.final) == 2.0
    assert ranked.seconds_to_best == 2.0
    assert [c.card for c in ranked.ran[:2]] == ["win", "small"]


def test_replay_budget_and_skipping() -> None:
    r = replay(_cands(), "ranked", 2.5, skip_losers_when_short=True, key=evaluate.ranked_key)
    assert [c.card for c in r.ran] == ["win", "small"]
    # 0.5 s left, and each of the two waiting jobs is expected to take the 1 s mean: both predicted losers skipped.
    assert {c.card for c in r.skipped} == {"loser1", "loser2"} and not r.not_reached
    assert len(r.never_run) == 2 and r.spent_s == 2.0
    unskipped = replay(_cands(), "ranked", 2.5, key=evaluate.ranked_key)
    assert [c.card for c in unskipped.ran] == ["win", "small", "loser2"]
    assert [c.card for c in unskipped.not_reached] == ["loser1"]


def test_precision_at_threshold() -> None:
    from warpwise.ranking import dataset

    ts = dataset.load_shipped()
    assert ts is not None
    e_ver = next(e for e in ts.labelled if e.outcome.status == "verified")
    e_not = next(e for e in ts.labelled if e.outcome.status == "not_faster")
    held = [
        evaluate.HeldOut(e_ver, Prediction(e_ver.card, 0.8, 1.2, 1.1, 1.3)),
        evaluate.HeldOut(e_not, Prediction(e_not.card, 0.7, 1.1, 1.0, 1.2)),
        evaluate.HeldOut(e_not, Prediction(e_not.card, 0.2, 1.0, 0.9, 1.1)),
    ]
    p = evaluate.precision_at(held, 0.5)
    assert (p["predicted_faster"], p["verified_among_them"], p["precision"]) == (2, 1, 0.5)
    assert p["recall"] == 1.0
    assert evaluate.base_rate_precision(held) == pytest.approx(1 / 3)
