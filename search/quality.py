"""The search as strategies of the quality report (`bench/quality.py --strategy warpwise.search.quality:mcts`).

`warpwise.lineages.quality` runs a strategy on every naive suite kernel with one gate and one wall-clock
budget, then measures the naive kernel against the strategy's final version itself. These factories wrap
`optimize` for it: the search runs on the kernel's file and problem through the report's gate, and its best
verified version becomes the strategy's outcome, its path the chain. The report expresses launch changes as
expressions over the naive launch, which covers the block-size and grid-shrinking overrides of the search but
not a lineage step's whole launch (its dynamic shared memory among it): when the best version needs one, the
best version without one is reported instead, and a note says so.
"""

from __future__ import annotations

from typing import Any

from warpwise.search.optimize import OptimizeOptions, optimize
from warpwise.search.version import LaunchOverride

DEFAULT_BUDGET_S = 60.0
DEFAULT_CANDIDATES = 16


def launch_changes(launch: LaunchOverride | None) -> tuple[Any, ...] | None:
    """Return a launch override as the quality report's launch changes (None when it cannot be expressed)."""
    return () if launch is None else launch.changes()


class SearchStrategy:
    """One search strategy as a quality-report strategy."""

    def __init__(self, strategy: str, budget_s: float = DEFAULT_BUDGET_S, candidates: int = DEFAULT_CANDIDATES):
        self.strategy = strategy
        self.name = f"search-{strategy}"
        self.budget_s = budget_s
        self.candidates = candidates

    def run(self, kernel: Any, ctx: Any) -> Any:
        """Search one suite kernel through the report's gate and return the best expressible verified version."""
        from warpwise.lineages.quality import Outcome
        from warpwise.search.evaluate import GateVerifier

        opts = OptimizeOptions(
            strategy=self.strategy,
            budget_s=self.budget_s,
            candidates=self.candidates,
            gate_options=ctx.options,
            compile_only=ctx.options.compile_only,
        )
        path = str(kernel.expert.path)
        report = optimize(path, kernel.expert.kernel, opts, text=kernel.expert.text, verifier=GateVerifier(ctx.gate))
        search = report.search
        ctx.gpu_s += report.budget.get("new_gpu_seconds", 0.0)
        ctx.jobs += report.budget.get("candidates", 0)
        out = Outcome(self.name, kernel.expert.text)
        out.attempts = [dict(n, card=n["action"]) for n in report.nodes[1:]]
        for node in search.ranked() if search is not None else []:
            changes = launch_changes(node.version.launch)
            if changes is None:
                out.notes.append(f"{node.action.title if node.action else 'start'}: its launch cannot be reported")
                continue
            out.text = node.version.text
            out.launch = changes
            by_id = {n["id"]: n for n in report.nodes}
            out.chain = [dict(by_id[n.id], card=by_id[n.id]["action"]) for n in node.path()[1:]]
            break
        out.notes.append(f"search: {report.stop_reason}; {report.budget.get('nodes', 0)} versions")
        return out


def mcts() -> SearchStrategy:
    """Return the Monte-Carlo tree search as a quality strategy."""
    return SearchStrategy("mcts")


def greedy() -> SearchStrategy:
    """Return the greedy search as a quality strategy."""
    return SearchStrategy("greedy")


def random() -> SearchStrategy:
    """Return the random-order search as a quality strategy."""
    return SearchStrategy("random")
