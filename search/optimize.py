"""`optimize`: search for a faster version of one kernel, verified by the gate, and report one edit.

The command line (`warpwise optimize`), the language server (`warpwise.optimizeKernel`) and the benchmark
(`bench/search_compare.py`) all call this. It resolves the kernel's problem spec once, sets up the action sources
(cards, parameters, lineage plans, the LLM when configured), evaluates through the given verifier (or a gate on
the chosen backend, with the result cache), runs the strategy, asks the judge about LLM-written winners, and
returns a `SearchReport`. Expected problems (no such kernel, no spec) are reports with a stop reason, not
exceptions; `OptimizeError` is raised only for bad arguments.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warpwise.search.actions import ActionKind, ActionSource
from warpwise.search.cards import CardActions
from warpwise.search.context import SearchContext
from warpwise.search.evaluate import Budget, Evaluator, GateVerifier, Verifier
from warpwise.search.guardrails import screen_text
from warpwise.search.lineage import LineageActions, describe, plans_for
from warpwise.search.llm import LLMClient, LLMConfig, LLMError
from warpwise.search.params import ParamActions
from warpwise.search.report import SearchReport, build_report
from warpwise.search.transformations import TransformationActions
from warpwise.search.tree import MAX_DEPTH, STRATEGIES, Node, Progress, Search
from warpwise.search.version import Version
from warpwise.verify.spec import ProblemSpec, SpecMissing, kernel_function, resolve_spec
from warpwise.verify.types import Options

log = logging.getLogger(__name__)


class OptimizeError(ValueError):
    """The arguments do not describe a search that can run (unknown strategy, bad budget)."""


@dataclass
class OptimizeOptions:
    """How to search: strategy, budgets, action sources, LLM, and the gate's options."""

    strategy: str = "mcts"
    budget_s: float | None = 300.0
    candidates: int | None = 40
    compile_only: bool = False
    seed: int = 0
    exploration: float | None = None
    max_depth: int = MAX_DEPTH
    charge_cached: bool = False
    cards: bool = True
    params: bool = True
    lineage: bool = True
    llm: LLMConfig | None = None
    llm_rounds: int = 3
    profile: bool = False
    time_limit_s: float = 120.0
    gate_options: Options | None = None
    enabled_cards: set[str] | None = None
    screen: bool = True
    """Screen candidates on a reduced problem and confirm the best few at the user's size (`search.screening`)."""
    extra_sources: list[ActionSource] = field(default_factory=list)

    def options(self) -> Options:
        """Return the gate's options for every job of the search."""
        if self.gate_options is not None:
            return self.gate_options
        return Options(profile=self.profile, compile_only=self.compile_only, time_limit_s=self.time_limit_s)


def _problem_path(spec: ProblemSpec | None) -> str | None:
    """Return the problem file's path when the spec comes from one."""
    if spec is None or spec.source != "problem_file":
        return None
    return spec.run.problem_name


def _ranking() -> Any:
    """Return the ranking model's predictor for the search's priors, when one is available."""
    from warpwise.search import ranking

    return ranking.predictor()


def _history(search: Search) -> list[str]:
    """Return the measurements so far, one line per evaluated version (for the experimenter role)."""
    lines = []
    for n in search.nodes[1:]:
        assert n.action is not None and n.evaluation is not None
        r = n.evaluation.result
        sp = f" {r.speedup.median:.2f}x" if r.speedup is not None else ""
        lines.append(f"{n.action.title} (depth {n.depth}): {r.status.value}{sp}")
    return lines


def _empty_report(path: str, kernel: str, opts: OptimizeOptions, reason: str, notes: list[str]) -> SearchReport:
    return SearchReport(
        file=path,
        kernel=kernel,
        strategy=opts.strategy,
        mode="compile-only" if opts.compile_only else "gpu",
        stop_reason=reason,
        budget={"nodes": 0, "candidates": 0, "gpu_seconds": 0.0, "new": 0, "cached": 0},
        start={},
        best=None,
        path=[],
        nodes=[],
        rejected=[],
        notes=notes,
    )


def optimize(
    path: str,
    kernel: str,
    opts: OptimizeOptions | None = None,
    *,
    text: str | None = None,
    verifier: Verifier | None = None,
    backend: str | None = None,
    scheduler: str | None = None,
    progress: Callable[[Progress], None] | None = None,
    cancel: threading.Event | None = None,
) -> SearchReport:
    """Search for a faster verified version of `kernel` in the file at `path` and return the report."""
    opts = opts or OptimizeOptions()
    if opts.strategy not in STRATEGIES:
        raise OptimizeError(f"unknown strategy `{opts.strategy}` ({', '.join(STRATEGIES)})")
    if opts.budget_s is not None and opts.budget_s <= 0:
        raise OptimizeError("the GPU-time budget must be positive")
    if opts.candidates is not None and opts.candidates < 1:
        raise OptimizeError("the candidate budget must be at least 1")
    if text is None:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    from warpwise.analyzers.build import analyze_text

    model = analyze_text(text.encode("utf-8", "surrogatepass"), path)
    if kernel_function(model, kernel) is None:
        names = ", ".join(f"`{k.name}`" for k in model.kernels) or "none"
        return _empty_report(path, kernel, opts, f"there is no kernel `{kernel}` in {path} (kernels: {names})", [])
    resolved = resolve_spec(path, text, kernel, model)
    spec = resolved if isinstance(resolved, ProblemSpec) else None
    if spec is None and not opts.compile_only:
        assert isinstance(resolved, SpecMissing)
        hint = [f"annotate the kernel, for example: {resolved.annotation.strip()}"] if resolved.annotation else []
        return _empty_report(path, kernel, opts, f"spec_missing: {resolved.message}", hint)

    from warpwise.skills.library import builtin_library

    notes: list[str] = []
    ctx = SearchContext(path, kernel, spec, library=builtin_library(), ranking=_ranking())
    sources: list[ActionSource] = []
    if opts.cards:
        sources.append(CardActions(opts.enabled_cards))
        sources.append(TransformationActions(opts.enabled_cards))
    if opts.params:
        sources.append(ParamActions())
    if opts.lineage:
        sources.append(LineageActions())
    sources += opts.extra_sources
    client: LLMClient | None = None
    thoughts = None
    llm_source = None
    if opts.llm is not None:
        from warpwise.search.thoughts import LLMActions, Thoughts

        try:
            client = LLMClient(opts.llm)
        except LLMError as exc:
            notes.append(f"LLM not used: {exc}")
        else:
            thoughts = Thoughts(client)
            llm_source = LLMActions(thoughts, rounds=opts.llm_rounds)
            sources.append(llm_source)
            notes.append(f"LLM: {opts.llm.model} at {opts.llm.endpoint}")

    owned = None
    if verifier is None:
        owned = gate_for(backend or ("compile-only" if opts.compile_only else "local"), scheduler)
        verifier = GateVerifier(owned)
    start = Version(text)
    evaluator = Evaluator(
        verifier,
        path,
        kernel,
        start,
        spec,
        opts.options(),
        Budget(opts.budget_s, opts.candidates, opts.charge_cached),
        cancel or threading.Event(),
    )

    def screen(version: Version, action: Any) -> str | None:
        if action.kind is not ActionKind.LLM:
            return None
        return screen_text(start.text, version.text)

    cls = STRATEGIES[opts.strategy]
    kwargs: dict[str, Any] = {"seed": opts.seed, "max_depth": opts.max_depth, "screen": screen, "progress": progress}
    if opts.exploration is not None and opts.strategy == "mcts":
        kwargs["exploration"] = opts.exploration
    search = cls(evaluator, ctx, sources, **kwargs)
    if llm_source is not None:
        llm_source.history = lambda: _history(search)
    try:
        reduced = None
        if opts.screen and not opts.compile_only:
            from warpwise.search.screening import choose_screen, run_screened

            reduced, slog = choose_screen(evaluator)
            notes += slog.notes
        if reduced is not None:
            run_screened(search, reduced, slog)
            notes.append(
                f"screening: {len(search.nodes)} versions evaluated, {len(slog.confirmed)} confirmed at the user's "
                f"size (nodes {', '.join(map(str, slog.confirmed)) or 'none'})"
            )
        else:
            search.run()
        best = _choose(search, thoughts, start.text, kernel)
    finally:
        if owned is not None:
            owned.backend.close()
        if client is not None:
            client.close()
    plans = describe(plans_for(ctx, start)) if opts.lineage else []
    if client is not None:
        notes.append(
            f"LLM calls: {len(client.calls)} ({sum(1 for c in client.calls if c.ok)} answered); "
            "its quality is not measured here, only the gate's verdicts on what it wrote"
        )
    if opts.compile_only:
        best = None
    report = build_report(
        search,
        path,
        kernel,
        "compile-only" if opts.compile_only else "gpu",
        best,
        _problem_path(spec),
        spec.run.problem_source if spec is not None and spec.source == "problem_file" else None,
        notes,
        plans,
    )
    if llm_source is not None:
        report.notes.append(f"LLM rounds: {llm_source.proposals}")
    return report


def _choose(search: Search, thoughts: Any, start_text: str, kernel: str) -> Node | None:
    """Return the best verified node that the judge does not flag (only LLM-written versions are judged)."""
    for node in search.ranked():
        if thoughts is None or not node.via(ActionKind.LLM):
            return node
        if node.judge is None:
            ev = node.evaluation
            assert ev is not None
            node.judge = thoughts.judge(kernel, start_text, node.version.text, ev.result.message)
        if node.judge.get("verdict") != "suspicious":
            return node
    return None


def gate_for(backend: str, scheduler: str | None) -> Any:
    """Return a gate with the result cache on the named backend."""
    from warpwise.verify.backends import make_backend
    from warpwise.verify.cache import ResultCache
    from warpwise.verify.gate import Gate

    cache = ResultCache()
    return Gate(make_backend(backend, scheduler=scheduler, cache=cache), cache)
