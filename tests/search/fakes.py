"""Fakes for the search tests: a synthetic action source and a gate backend that returns recorded verdicts.

`Marks` offers actions that append `// mark:NAME` lines to the kernel file; which marks are offered depends on the
marks already there, so a test writes the search space as a small graph. `RecordedBackend` plays the GPU: it
reads the marks of each candidate (or asks `by_text` about its text) and returns the result recorded for it, built the way the real
worker builds one (timings, then `decide_status`, the only place that says "verified"), with fixed durations so
GPU-second budgets are exact. It counts how often it really ran, so cache hits are visible.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from warpwise.search.actions import Action, ActionKind, ready
from warpwise.search.context import SearchContext
from warpwise.search.version import Version
from warpwise.verify.types import (
    BuildInfo,
    DeviceIdentity,
    Durations,
    Mismatch,
    ProfileReport,
    Status,
    Timing,
    VerificationResult,
    WorkerJob,
    decide_status,
)

AXPY = """// warpwise: n=1<<20 a=2.0 x:in[n] y:in[n] out:out[n] grid=(n+255)/256 block=256
__global__ void axpy(int n, float a, const float* x, const float* y, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
"""

DEVICE = DeviceIdentity("Fake GPU", "999", "NVRTC 13.0", "sm_90")
JOB_SECONDS = 0.5
_MARK = re.compile(r"// mark:(\w+)")


def marks_of(text: str) -> tuple[str, ...]:
    """Return the marks of a text, in order."""
    return tuple(_MARK.findall(text))


class Marks:
    """Offers `mark:NAME` actions: `graph[marks so far]` lists (name, prior) pairs."""

    def __init__(self, graph: dict[tuple[str, ...], list[tuple[str, float]]], kind: ActionKind = ActionKind.CARD):
        self.graph = graph
        self.kind = kind

    def actions(self, version: Version, ctx: SearchContext) -> list[Action]:
        have = marks_of(version.text)
        out = []
        for name, prior in self.graph.get(have, []):
            child = version.derive(version.text + f"// mark:{name}\n")
            out.append(Action(self.kind, f"mark:{name}", f"mark {name}", prior, "test", ready(child)))
        return out


def timing(ms: float, spread: float = 0.005) -> Timing:
    """Return a timing with a small interquartile range."""
    return Timing(ms, ms * (1 - spread), ms * (1 + spread), 50)


def recorded(outcome: float | str, *, profile: tuple[float, float] | None = None) -> VerificationResult:
    """Return a gate result for a recorded outcome: a speedup, or a failure status name."""
    build = BuildInfo(True, "NVRTC 13.0", 0.05, "", registers=32)
    durations = Durations(build_s=0.1, check_s=0.1, time_s=JOB_SECONDS - 0.2, total_s=JOB_SECONDS)
    if isinstance(outcome, str):
        status = Status(outcome)
        mismatch = None
        if status is Status.INCORRECT:
            mismatch = Mismatch("out", 0, 1.0, 1.0, 10, 100, 3, 1.0, 0.0, "values differ")
        ok = status is not Status.COMPILE_FAILED
        return VerificationResult(
            status,
            f"recorded {outcome}",
            device=DEVICE,
            original_build=build,
            candidate_build=build if ok else BuildInfo(False, "NVRTC 13.0", 0.05, "error: recorded"),
            mismatch=mismatch,
            durations=durations,
            created=time.time(),
        )
    original, candidate, control = timing(1.0), timing(1.0 / outcome), timing(1.0)
    status, speedup, message = decide_status(original, candidate, control)
    profiles: dict[str, Any] = {}
    if profile is not None:
        profiles = {
            "original_profile": ProfileReport(1.0, profile[0], 10.0, 50.0, 32, None, None, "latency-bound", ""),
            "candidate_profile": ProfileReport(1.0, profile[1], 10.0, 50.0, 32, None, None, "memory-bound", ""),
        }
    return VerificationResult(
        status,
        message,
        device=DEVICE,
        original_build=build,
        candidate_build=build,
        original_timing=original,
        candidate_timing=candidate,
        control_timing=control,
        speedup=speedup,
        seeds_checked=(0, 1, 2),
        durations=durations,
        created=time.time(),
        **profiles,
    )


@dataclass
class RecordedBackend:
    """A gate backend whose results are recorded per sequence of marks (1.0x, not faster, when not listed)."""

    outcomes: dict[tuple[str, ...], float | str]
    name: str = "recorded"
    runs: list[tuple[str, ...]] = field(default_factory=list)
    delay_s: float = 0.0
    on_run: Callable[[tuple[str, ...]], None] | None = None
    by_text: Callable[[str], float | str | None] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def identity(self) -> DeviceIdentity | None:
        return DEVICE

    def capacity(self) -> int:
        return 1

    def run(self, job: WorkerJob, progress: Any = None) -> VerificationResult:
        marks = marks_of(job.candidate.text)
        with self._lock:
            self.runs.append(marks)
        if self.on_run is not None:
            self.on_run(marks)
        if self.delay_s:
            time.sleep(self.delay_s)
        outcome = self.by_text(job.candidate.text) if self.by_text is not None else None
        if outcome is None:
            outcome = self.outcomes.get(marks, 1.0)
        return recorded(outcome).with_(key=job.key)

    def close(self) -> None:
        return None
