"""The search strategies over recorded gate results: UCT, priors, budgets, cancellation, caching and resume."""

from __future__ import annotations

import math
import threading

from tests.search.conftest import Runner
from tests.search.fakes import JOB_SECONDS, RecordedBackend
from warpwise.search.tree import EXPLORATION, MCTS, Node
from warpwise.search.version import Version

# A decoy: `a` is the best first step, but the best kernel lies behind `b` (b -> b1 -> b2); `c` is wrong.
GRAPH = {
    (): [("a", 0.9), ("b", 0.5), ("c", 0.4)],
    ("a",): [("a1", 0.5)],
    ("b",): [("b1", 0.5)],
    ("b", "b1"): [("b2", 0.5)],
    ("c",): [("c1", 0.9)],
}
OUTCOMES = {
    ("a",): 1.10,
    ("a", "a1"): 1.12,
    ("b",): 1.05,
    ("b", "b1"): 1.30,
    ("b", "b1", "b2"): 2.0,
    ("c",): "incorrect",
    ("c", "c1"): 5.0,
}


def test_mcts_goes_past_the_decoy_and_reports_the_path(run: Runner) -> None:
    report, backend = run(GRAPH, OUTCOMES, candidates=12)
    assert report.best is not None and report.speedup == 2.0
    assert [n["action"] for n in report.path] == ["start", "mark:b", "mark:b1", "mark:b2"]
    assert report.path[-1]["status"] == "verified"
    # The wrong branch is terminal: nothing below it is ever built, and it is listed with its status.
    assert ("c", "c1") not in backend.runs
    wrong = next(n for n in report.nodes if n["action"] == "mark:c")
    assert wrong["status"] == "incorrect" and wrong["reward"] == -1.0
    assert "incorrect" in report.markdown() and "## Rejected branches" in report.markdown()
    assert report.edits and report.edits[0].text.endswith("// mark:b\n// mark:b1\n// mark:b2\n")
    assert "## Proposed edit" in report.markdown() and "+// mark:b2" in report.diff()


def test_greedy_takes_the_best_first_step_and_stops(run: Runner) -> None:
    report, _ = run(GRAPH, OUTCOMES, strategy="greedy", candidates=12)
    assert [n["action"] for n in report.path] == ["start", "mark:a", "mark:a1"]
    assert report.speedup == 1.12
    assert report.stop_reason == "nothing left to try"


def test_random_order_is_reproducible_by_seed(run: Runner) -> None:
    first, _ = run(GRAPH, OUTCOMES, strategy="random", candidates=5, seed=3, charge_cached=True)
    again, _ = run(GRAPH, OUTCOMES, strategy="random", candidates=5, seed=3, charge_cached=True)
    assert [n["action"] for n in first.nodes] == [n["action"] for n in again.nodes]
    assert len(first.nodes) == 5


def test_expansion_follows_priors(run: Runner) -> None:
    report, backend = run(GRAPH, OUTCOMES, candidates=3)
    assert backend.runs == [(), ("a",), ("b",)]
    assert report.stop_reason == "the candidate budget of 3 is spent"


def test_gain_inside_the_spread_counts_as_none(run: Runner) -> None:
    report, _ = run({(): [("x", 0.5)]}, {("x",): 1.003})
    node = report.nodes[1]
    assert node["status"] == "not_faster" and node["reward"] == 0.0
    assert report.best is None and not report.edits
    assert "No version was verified faster" in report.markdown()


def test_failures_are_terminal_penalties(run: Runner) -> None:
    statuses = ("compile_failed", "launch_failed", "timed_out", "crashed")
    graph: dict[tuple[str, ...], list[tuple[str, float]]] = {(): [(s, 0.5) for s in statuses]}
    graph.update({(s,): [("below", 0.9)] for s in statuses})
    report, backend = run(graph, {(s,): s for s in statuses})
    assert {n["status"] for n in report.nodes[1:]} == set(statuses)
    assert all(n["reward"] == -1.0 for n in report.nodes[1:])
    assert not any("below" in marks for marks in backend.runs)
    assert report.best is None and report.stop_reason == "nothing left to try"


def test_gpu_second_budget(run: Runner) -> None:
    report, backend = run(GRAPH, OUTCOMES, budget_s=3 * JOB_SECONDS - 0.01, candidates=None)
    assert len(backend.runs) == 3
    assert report.stop_reason.startswith("the GPU-time budget of 1.49 s is spent")
    assert report.budget["gpu_seconds"] >= 3 * JOB_SECONDS - 0.01


def test_rerun_continues_from_the_cache(run: Runner) -> None:
    backend = RecordedBackend(OUTCOMES)
    first, _ = run(GRAPH, OUTCOMES, backend=backend, candidates=3)
    assert len(backend.runs) == 3 and first.budget["new"] == 3
    second, _ = run(GRAPH, OUTCOMES, backend=backend, candidates=3)
    # The three versions measured before come from the cache at no cost; three new ones are run.
    assert second.budget["cached"] == 3 and second.budget["new"] == 3
    assert len(backend.runs) == 6 and len(set(backend.runs)) == 6
    assert [n["action"] for n in second.nodes[:3]] == [n["action"] for n in first.nodes]
    assert all(n["cached"] for n in second.nodes[:3]) and not any(n["cached"] for n in second.nodes[3:])


def test_charging_cached_results_makes_strategies_comparable(run: Runner) -> None:
    backend = RecordedBackend(OUTCOMES)
    run(GRAPH, OUTCOMES, backend=backend, candidates=4)
    again, _ = run(GRAPH, OUTCOMES, backend=backend, candidates=4, charge_cached=True)
    assert again.budget["cached"] == 4 and again.budget["new"] == 0
    assert again.budget["gpu_seconds"] == 4 * JOB_SECONDS


def test_cancel_stops_between_candidates(run: Runner) -> None:
    cancel = threading.Event()
    seen = []

    def progress(p: object) -> None:
        seen.append(p)
        if len(seen) == 2:
            cancel.set()

    report, backend = run(GRAPH, OUTCOMES, progress=progress, cancel=cancel)
    assert report.stop_reason == "cancelled"
    assert len(backend.runs) == 2


def test_progress_reports_nodes_best_and_gpu_seconds(run: Runner) -> None:
    seen = []
    run(GRAPH, OUTCOMES, progress=seen.append, candidates=6)
    assert [p.nodes for p in seen] == list(range(1, 7))
    assert seen[-1].gpu_seconds == 6 * JOB_SECONDS
    assert seen[1].best_speedup == 1.10 and "mark a" in seen[1].last


def test_duplicate_versions_are_skipped_and_listed(run: Runner) -> None:
    graph = {(): [("a", 0.9), ("b", 0.8)], ("a",): [("b", 0.5)], ("b",): [("a", 0.5)]}
    report, backend = run(graph, {})
    assert len(backend.runs) == len(set(backend.runs))
    assert report.stop_reason == "nothing left to try"


def test_uct_score_and_progressive_widening() -> None:
    parent, child = Node(Version("p")), Node(Version("c"))
    parent.visits, child.visits, child.total = 20, 1, 0.1
    search = MCTS.__new__(MCTS)
    search.exploration = EXPLORATION
    assert math.isclose(search.uct(parent, child), 0.1 + 0.5 * math.sqrt(math.log(20)))
    assert EXPLORATION == 0.5


def test_profile_signals_shape_the_reward() -> None:
    from tests.search.fakes import recorded
    from warpwise.search.reward import PROFILE_WEIGHT, reward_of

    plain = reward_of(recorded(1.25))
    shaped = reward_of(recorded(1.25, profile=(20.0, 80.0)))
    assert math.isclose(plain.value, 0.2)
    assert 0 < shaped.value - plain.value <= PROFILE_WEIGHT
    assert shaped.gain == plain.gain
