"""The search as a strategy of the quality report (`bench/quality.py --strategy warpwise.search.quality:mcts`)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT
from tests.search.fakes import RecordedBackend
from warpwise.lineages.lineage import Budget, load_expert
from warpwise.lineages.quality import QualityContext
from warpwise.lineages.suite import SuiteKernel
from warpwise.search.quality import launch_changes, mcts
from warpwise.search.version import LaunchOverride, Transform
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Gate
from warpwise.verify.launch import problem_source
from warpwise.verify.types import Options

BASE = "def launch(inputs):\n    return ((inputs['n'] + 255) // 256, 1, 1), (256, 1, 1)\n"


def _geometry(source: str, name: str) -> tuple:
    ns: dict = {}
    exec(source, ns)
    return tuple(ns[name]({"n": 1 << 20}))


def test_launch_overrides_become_the_reports_launch_changes() -> None:
    override = (
        LaunchOverride()
        .then(Transform("block", block=(128, 1, 1), scale=(True, False, False), label="block 128"))
        .then(Transform("grid_div", factor=4, label="grid / 4"))
    )
    changes = launch_changes(override)
    assert changes is not None
    theirs = _geometry(problem_source(BASE, (), changes), "launch_candidate")
    ours = _geometry(BASE + override.source(), "launch_candidate")
    assert theirs == ours == ((2048, 1, 1), (128, 1, 1), 0)
    assert launch_changes(None) == ()
    assert launch_changes(LaunchOverride().then(Transform("python", code=BASE))) is None


def test_search_strategy_reports_its_best_expressible_version(tmp_path: Path) -> None:
    def outcome(text: str) -> float | None:
        if "SUM_THREADS" in text:
            return 3.0  # The lineage's expert: its launch cannot be expressed in the report.
        if "__shfl" in text:
            return 1.25
        return None

    gate = Gate(RecordedBackend({}, by_text=outcome), ResultCache(tmp_path / "r.sqlite3"))
    suite = ROOT / "bench" / "suite" / "sum"
    kernel = SuiteKernel("sum", load_expert(suite / "naive.cu", kernel="sum_naive", operator="sum"))
    ctx = QualityContext(gate, Options(), Budget(60))
    strategy = mcts()
    strategy.candidates = 6
    out = strategy.run(kernel, ctx)
    assert out.strategy == "search-mcts"
    assert "__shfl" in out.text and "SUM_THREADS" not in out.text
    # Both tree-reduction cards bring warp shuffles to this kernel, and so does the grid-stride transformation (one
    # action per grid factor); the search may take any of them.
    chain = [r["card"] for r in out.chain]
    assert chain in (["card:shared-memory-block-reduction"], ["card:barrier-per-step-tree-reduction"]) or (
        len(chain) == 1 and chain[0].startswith("transform:grid-stride-atomic-total:")
    ), chain
    assert any("its launch cannot be reported" in n for n in out.notes)
    assert ctx.jobs == 6
