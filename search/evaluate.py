"""Evaluating kernel versions through the verification gate, under a GPU-time and a candidate budget.

Every version is compared with the *starting* kernel in one gate job (same inputs, same run, interleaved
timings), so each result's speedup is over the start. The gate keeps every result in its cache, keyed by the
content hashes of both texts and the spec; evaluating a version the cache already holds costs nothing, which is
how a re-run of the same search replays what was measured and continues where the last one stopped.

Budgets count GPU-seconds (the build, check, time and profile durations the gate recorded) and candidates (gate
jobs). By default only new work is charged, so a re-run with the same budget goes further; `charge_cached`
charges cached results at their recorded cost too, which is what a fair comparison of strategies sharing one
cache needs (`bench/search_compare.py`).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from warpwise.search.version import Version
from warpwise.verify.gate import Candidate
from warpwise.verify.spec import ProblemSpec
from warpwise.verify.types import Options, Status, VerificationResult


class Verifier(Protocol):
    """Something that verifies a candidate: the gate itself, or the gate's queue (the language server's)."""

    def verify(self, candidate: Candidate, options: Options) -> VerificationResult | None:
        """Return the gate's result (None when the job was refused or cancelled)."""
        ...


class GateVerifier:
    """Verify through a `Gate` (cache first, then the backend), one job at a time."""

    def __init__(self, gate: Any) -> None:
        self.gate = gate

    def verify(self, candidate: Candidate, options: Options) -> VerificationResult | None:
        """Return the gate's result."""
        return self.gate.verify(candidate, options)


class QueueVerifier:
    """Verify through a `VerificationQueue`, so the search shares priorities, de-duplication and budget."""

    def __init__(self, queue: Any, *, priority: int = 0, group: str = "", cancel: threading.Event | None = None):
        self.queue = queue
        self.priority = priority
        self.group = group
        self.cancel = cancel

    def verify(self, candidate: Candidate, options: Options) -> VerificationResult | None:
        """Submit a job and wait for it, giving up when the search is cancelled."""
        handle = self.queue.submit(candidate, options, priority=self.priority, group=self.group)
        while not handle.finished:
            if self.cancel is not None and self.cancel.is_set():
                return None
            handle.wait(0.2)
        return handle.result


def cost_of(result: VerificationResult) -> float:
    """Return the GPU-seconds a result took, as the gate recorded them (build, check, time, profile)."""
    d = result.durations
    return max(d.total_s, d.build_s + d.check_s + d.time_s + d.profile_s)


@dataclass
class Budget:
    """GPU-seconds and candidates a search may spend; `None` is no limit."""

    gpu_seconds: float | None = None
    candidates: int | None = None
    charge_cached: bool = False
    spent_s: float = 0.0
    charged: int = 0
    new_s: float = 0.0
    new: int = 0
    cached: int = 0

    def exhausted(self) -> str | None:
        """Return why the budget is spent, or None."""
        if self.candidates is not None and self.charged >= self.candidates:
            return f"the candidate budget of {self.candidates} is spent"
        if self.gpu_seconds is not None and self.spent_s >= self.gpu_seconds:
            return f"the GPU-time budget of {self.gpu_seconds:g} s is spent ({self.spent_s:.1f} s used)"
        return None

    def charge(self, result: VerificationResult, wall_s: float) -> float:
        """Charge one result; return the GPU-seconds charged for it."""
        if result.cached:
            self.cached += 1
            if not self.charge_cached:
                return 0.0
            cost = cost_of(result)
        else:
            cost = max(wall_s, cost_of(result)) if result.status is not Status.SPEC_MISSING else 0.0
            self.new += 1
            self.new_s += cost
        self.spent_s += cost
        self.charged += 1
        return cost


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A version's gate result, what it cost, and whether it came from the cache."""

    result: VerificationResult
    cost_s: float
    cached: bool


@dataclass
class Evaluator:
    """Evaluates versions of one kernel against the starting version through a verifier."""

    verifier: Verifier
    path: str
    kernel: str
    start: Version
    spec: ProblemSpec | None
    options: Options
    budget: Budget = field(default_factory=Budget)
    cancel: threading.Event = field(default_factory=threading.Event)
    on_result: Callable[[Version, Evaluation], None] | None = None
    seen: dict[str, Evaluation] = field(default_factory=dict)

    def spec_for(self, version: Version) -> ProblemSpec | None:
        """Return the spec a version runs under: the start's, with the version's launch override for problem files."""
        if self.spec is None or version.launch is None or not version.launch.transforms:
            return self.spec
        run = self.spec.run
        if not run.problem_source:
            return self.spec
        source = run.problem_source + "\n" + version.launch.source()
        return dataclasses.replace(self.spec, run=dataclasses.replace(run, problem_source=source))

    def known(self, version: Version) -> Evaluation | None:
        """Return the evaluation of a version already evaluated in this search."""
        return self.seen.get(version.key)

    def evaluate(self, version: Version) -> Evaluation | None:
        """Return a version's evaluation (None when the search is cancelled or the verifier refused the job)."""
        hit = self.seen.get(version.key)
        if hit is not None:
            return hit
        if self.cancel.is_set():
            return None
        candidate = Candidate(
            self.path, self.start.text, self.kernel, version.text, self.path, spec=self.spec_for(version)
        )
        t0 = time.perf_counter()
        result = self.verifier.verify(candidate, self.options)
        wall = time.perf_counter() - t0
        if result is None:
            return None
        cost = self.budget.charge(result, wall)
        ev = Evaluation(result, cost, bool(result.cached))
        self.seen[version.key] = ev
        if self.on_result is not None:
            self.on_result(version, ev)
        return ev
