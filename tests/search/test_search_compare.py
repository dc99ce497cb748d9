"""bench/search_compare.py: lineage plans off as the headline, and the mechanism that produced each win."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("search_compare", ROOT / "bench" / "search_compare.py")
    assert spec is not None and spec.loader is not None
    sc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sc)
    return sc


def _node(kind: str, speedup: float | None, card: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "card": card, "speedup": {"median": speedup} if speedup else None}


def test_the_winning_mechanism_is_the_step_with_the_largest_gain() -> None:
    sc = _module()
    path = [
        _node("start", 1.0),
        _node("card", 1.2),
        _node("param", 8.0, card="untiled-contraction"),
        _node("param", 8.4),
    ]
    assert [sc.mechanism_of(n) for n in path[1:]] == ["card", "transformation", "parameter"]
    assert sc.winning_mechanism(path) == "transformation"
    assert sc.winning_mechanism([_node("start", 1.0), _node("lineage", 3.0), _node("llm", 3.3)]) == "lineage"
    assert sc.winning_mechanism([_node("start", 1.0)]) is None


def test_lineage_off_is_the_headline_and_on_is_separate() -> None:
    sc = _module()
    base = {"suite": "matmul", "kernel": "k", "strategy": "mcts", "speedup": 2.0, "gpu_seconds": 1.0}
    rows = [
        {**base, "lineage_plans": False, "status": "verified", "mechanism": "transformation", "trajectory": []},
        {**base, "lineage_plans": True, "status": "verified", "mechanism": "lineage", "speedup": 9.0, "trajectory": []},
    ]
    s = sc.summaries(rows)
    assert list(s) == ["lineage_off", "lineage_on"]
    assert s["lineage_off"]["mcts"]["geomean_speedup"] == 2.0 and s["lineage_on"]["mcts"]["geomean_speedup"] == 9.0
    assert s["lineage_off"]["wins_by_mechanism"] == {"transformation": 1}
    assert s["lineage_on"]["wins_by_mechanism"] == {"lineage": 1}
