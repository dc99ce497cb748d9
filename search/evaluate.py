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

    soft_gpu_seconds: float | None = None
    soft_candidates: int | None = None
    soft_reason: str = ""

    def exhausted(self) -> str | None:
        """Return why the budget (or the current phase's share of it) is spent, or None."""
        if self.soft_candidates is not None and self.charged >= self.soft_candidates:
            return self.soft_reason or "the phase's candidates are spent"
        if self.soft_gpu_seconds is not None and self.spent_s >= self.soft_gpu_seconds:
            return self.soft_reason or "the phase's GPU-seconds are spent"
        return self.hard_exhausted()

    def hard_exhausted(self) -> str | None:
        """Return why the whole budget is spent, or None."""
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
    """A version's gate result, what it cost, whether it came from the cache, and the size it ran at.

    `scale` is empty for the user's size and otherwise says which reduced problem ran (a screening result): only
    a result at the user's size may make a version verified.
    """

    result: VerificationResult
    cost_s: float
    cached: bool
    scale: str = ""

    @property
    def screened(self) -> bool:
        """Return whether this result comes from a reduced problem (it ranks candidates; it verifies nothing)."""
        return bool(self.scale)


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
    screen: Screen | None = None
    """When set, `evaluate` runs versions on this reduced problem (see `warpwise.search.screening`)."""

    def spec_for(self, version: Version, base: ProblemSpec | None = None) -> ProblemSpec | None:
        """Return the spec a version runs under: the start's, with the version's launch override for problem files."""
        spec = base if base is not None else self.spec
        if spec is None or version.launch is None or not version.launch.transforms:
            return spec
        run = spec.run
        if not run.problem_source:
            return spec
        source = run.problem_source + "\n" + version.launch.source()
        return dataclasses.replace(spec, run=dataclasses.replace(run, problem_source=source))

    def known(self, version: Version) -> Evaluation | None:
        """Return the evaluation of a version already evaluated in this search (at the size `evaluate` uses now)."""
        return self.seen.get(self._key(version, self.screen))

    @staticmethod
    def _key(version: Version, screen: Screen | None) -> str:
        return version.key if screen is None else f"{version.key}@{screen.label}"

    def evaluate(self, version: Version, *, full: bool = False, screen: Screen | None = None) -> Evaluation | None:
        """Return a version's evaluation (None when the search is cancelled or the verifier refused the job).

        Versions run on the screening problem when one is set, unless `full` asks for the user's size; `screen`
        names another reduced problem for this one evaluation.
        """
        scr = None if full else (screen or self.screen)
        key = self._key(version, scr)
        hit = self.seen.get(key)
        if hit is not None:
            return hit
        if self.cancel.is_set():
            return None
        spec = self.spec_for(version, scr.spec if scr is not None else None)
        options = scr.options_for(self.options) if scr is not None else self.options
        candidate = Candidate(self.path, self.start.text, self.kernel, version.text, self.path, spec=spec)
        t0 = time.perf_counter()
        result = self.verifier.verify(candidate, options)
        wall = time.perf_counter() - t0
        if result is None:
            return None
        cost = self.budget.charge(result, wall)
        ev = Evaluation(result, cost, bool(result.cached), scr.label if scr is not None else "")
        self.seen[key] = ev
        if self.on_result is not None:
            self.on_result(version, ev)
        return ev


@dataclass
class Screen:
    """A reduced problem that candidates are screened on, and the gate options screening jobs use.

    Screening checks one seed (the user's size checks them all again before anything is verified) and stops
    timing a candidate once it is clearly slower than `stop_below`, the best screened speedup so far.
    """

    spec: ProblemSpec
    label: str
    seeds: tuple[int, ...] = (0,)
    stop_below: float | None = None

    def options_for(self, options: Options) -> Options:
        """Return the options of one screening job."""
        return dataclasses.replace(
            options, seeds=self.seeds[: len(options.seeds)] or options.seeds, stop_below=self.stop_below
        )
