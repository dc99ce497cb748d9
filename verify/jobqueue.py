"""The verification queue: priorities, de-duplication, cancellation by generation, a GPU-time budget, progress.

The server and the command line submit `Candidate`s; the queue hands them to a backend through the `Gate`
(cache first) and reports progress as `JobEvent`s: `queued`, `started`, `stage` (build, check, time, sanitize,
profile), `finished`, `cancelled`, `refused`.

- **Priorities**: a higher number runs first (the kernel under the cursor first); equal priorities run in
  submission order.
- **De-duplication**: a submission whose job (content hashes, spec, options) is already queued or running joins
  that job instead of adding another.
- **Generations**: submissions carry a `group` (say, document URI and kernel) and a `generation` (the
  document version). A newer generation cancels the group's older jobs that have not started; older jobs
  already running finish (their result is cached, as it is still true of that text) but are marked
  `superseded`, so their results are never shown on newer text.
- **Budget**: the seconds the backend spent on jobs are added up; once the budget is spent, jobs still queued
  are `refused` rather than run. With `skip_below` set, a job whose priority is below it (the learned ranking,
  `warpwise.ranking.queue_priority`, gives predicted losers a negative priority) is `refused` as soon as the
  budget is short: when the seconds left are fewer than the mean seconds of the jobs run so far times the jobs
  still waiting.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from warpwise.verify.gate import Candidate, Gate, PreparedJob, prepare
from warpwise.verify.types import Options, VerificationResult

log = logging.getLogger(__name__)


class JobState(StrEnum):
    """Where a job is in the queue."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class JobEvent:
    """One progress report about a job."""

    kind: str
    job_id: str
    group: str
    generation: int
    stage: str = ""
    result: VerificationResult | None = None
    message: str = ""


Listener = Callable[[JobEvent], None]


@dataclass(eq=False)
class JobHandle:
    """A submitted job: its state, its result once done, and a way to wait for it."""

    job_id: str
    group: str
    generation: int
    priority: int
    dedupe_key: str
    prepared: PreparedJob | None = None
    state: JobState = JobState.QUEUED
    result: VerificationResult | None = None
    superseded: bool = False
    message: str = ""
    listeners: list[Listener] = field(default_factory=list)
    _done: threading.Event = field(default_factory=threading.Event)

    def wait(self, timeout: float | None = None) -> VerificationResult | None:
        """Wait until the job is finished, cancelled or refused; return its result (None when there is none)."""
        self._done.wait(timeout)
        return self.result

    @property
    def finished(self) -> bool:
        """Return whether the job has reached a final state."""
        return self._done.is_set()


class VerificationQueue:
    """Runs submitted candidates on a gate's backend, highest priority first."""

    def __init__(
        self,
        gate: Gate,
        *,
        budget_s: float | None = None,
        concurrency: int | None = None,
        skip_below: int | None = None,
    ) -> None:
        self.gate = gate
        self.budget_s = budget_s
        self.skip_below = skip_below
        self.spent_s = 0.0
        self.jobs_run = 0
        self._lock = threading.Condition()
        self._heap: list[tuple[int, int, JobHandle]] = []
        self._seq = itertools.count()
        self._active: dict[str, JobHandle] = {}
        self._newest: dict[str, int] = {}
        self._closed = False
        n = concurrency or max(gate.backend.capacity(), 1)
        self._threads = [threading.Thread(target=self._loop, daemon=True, name=f"verify-queue-{i}") for i in range(n)]
        for t in self._threads:
            t.start()

    def submit(
        self,
        candidate: Candidate,
        options: Options | None = None,
        *,
        priority: int = 0,
        group: str = "",
        generation: int = 0,
        on_event: Listener | None = None,
    ) -> JobHandle:
        """Queue a candidate; return its handle (an existing one when the same job is already pending)."""
        options = options or Options()
        prepared = prepare(candidate, options)
        job_id = prepared.job.job_id if isinstance(prepared, PreparedJob) else f"spec-{next(self._seq)}"
        dedupe = prepared.job.key + options.to_json() if isinstance(prepared, PreparedJob) else job_id
        with self._lock:
            self._supersede(group, generation)
            existing = self._active.get(dedupe)
            if existing is not None and not existing.finished:
                if on_event is not None:
                    existing.listeners.append(on_event)
                existing.generation = max(existing.generation, generation)
                existing.priority = max(existing.priority, priority)
                existing.superseded = False
                return existing
            handle = JobHandle(job_id, group, generation, priority, dedupe)
            if on_event is not None:
                handle.listeners.append(on_event)
            if isinstance(prepared, VerificationResult):
                self._finish(handle, prepared)
                return handle
            handle.prepared = prepared
            hit = self.gate.lookup(prepared)
            if hit is not None:
                self._finish(handle, hit)
                return handle
            if self.budget_s is not None and self.spent_s >= self.budget_s:
                self._refuse(handle)
                return handle
            self._active[dedupe] = handle
            heapq.heappush(self._heap, (-priority, next(self._seq), handle))
            self._emit(handle, JobEvent("queued", job_id, group, generation))
            self._lock.notify()
        return handle

    def _supersede(self, group: str, generation: int) -> None:
        """Cancel queued jobs of a group older than `generation`, and mark running ones superseded."""
        if not group:
            return
        newest = self._newest.get(group, generation)
        self._newest[group] = max(newest, generation)
        for h in list(self._active.values()):
            if h.group != group or h.generation >= generation:
                continue
            if h.state is JobState.QUEUED:
                h.state = JobState.CANCELLED
                h.message = f"superseded by generation {generation}"
                self._active.pop(h.dedupe_key, None)
                self._emit(h, JobEvent("cancelled", h.job_id, h.group, h.generation, message=h.message))
                h._done.set()
            elif h.state is JobState.RUNNING:
                h.superseded = True

    def cancel(self, group: str, below_generation: int) -> None:
        """Cancel a group's jobs older than a generation (queued ones are dropped, running ones superseded)."""
        with self._lock:
            self._supersede(group, below_generation)

    def _budget_short(self, handle: JobHandle) -> bool:
        """Return whether a low-priority job should be skipped: the budget left cannot run every waiting job."""
        if self.skip_below is None or self.budget_s is None or handle.priority >= self.skip_below or not self.jobs_run:
            return False
        waiting = 1 + sum(1 for _, _, h in self._heap if h.state is JobState.QUEUED)
        return self.budget_s - self.spent_s < self.spent_s / self.jobs_run * waiting

    def _refuse(self, handle: JobHandle, skipped: bool = False) -> None:
        """Mark a job refused because the GPU-time budget is spent (or short, for a predicted loser)."""
        handle.state = JobState.REFUSED
        handle.message = f"the GPU-time budget of {self.budget_s:.0f} s is spent ({self.spent_s:.1f} s used)"
        if skipped:
            handle.message = (
                f"skipped: predicted not to pay off (priority {handle.priority}) and the GPU-time budget is short "
                f"({(self.budget_s or 0) - self.spent_s:.1f} s of {self.budget_s:.0f} s left)"
            )
        self._emit(handle, JobEvent("refused", handle.job_id, handle.group, handle.generation, message=handle.message))
        handle._done.set()

    def _finish(self, handle: JobHandle, result: VerificationResult) -> None:
        """Record a result and wake waiters."""
        handle.result = result
        handle.state = JobState.DONE
        self._active.pop(handle.dedupe_key, None)
        self._emit(handle, JobEvent("finished", handle.job_id, handle.group, handle.generation, result=result))
        handle._done.set()

    def _emit(self, handle: JobHandle, event: JobEvent) -> None:
        """Call every listener; a failing listener is logged and skipped."""
        for listener in list(handle.listeners):
            try:
                listener(event)
            except Exception:
                log.exception("a verification progress listener failed")

    def _next(self) -> JobHandle | None:
        """Pop the next runnable job (None when closing)."""
        with self._lock:
            while True:
                if self._closed:
                    return None
                while self._heap:
                    _, _, h = heapq.heappop(self._heap)
                    if h.state is not JobState.QUEUED:
                        continue
                    if self.budget_s is not None and self.spent_s >= self.budget_s:
                        self._active.pop(h.dedupe_key, None)
                        self._refuse(h)
                        continue
                    if self._budget_short(h):
                        self._active.pop(h.dedupe_key, None)
                        self._refuse(h, skipped=True)
                        continue
                    h.state = JobState.RUNNING
                    return h
                self._lock.wait()

    def _loop(self) -> None:
        """Run jobs until the queue closes."""
        while True:
            h = self._next()
            if h is None:
                return
            assert h.prepared is not None
            self._emit(h, JobEvent("started", h.job_id, h.group, h.generation))

            def progress(stage: str, h: JobHandle = h) -> None:
                self._emit(h, JobEvent("stage", h.job_id, h.group, h.generation, stage=stage))

            t0 = time.perf_counter()
            try:
                result = self.gate.run(h.prepared, progress)
            except Exception as exc:
                log.exception("verification job %s raised", h.job_id)
                from warpwise.verify.types import Status

                result = VerificationResult(status=Status.CRASHED, message=f"{type(exc).__name__}: {exc}")
            with self._lock:
                self.spent_s += time.perf_counter() - t0
                self.jobs_run += 1
                self._finish(h, result)

    def pending(self) -> int:
        """Return the number of queued and running jobs."""
        with self._lock:
            return len(self._active)

    def close(self) -> None:
        """Stop taking jobs; queued jobs are cancelled, running ones finish."""
        with self._lock:
            self._closed = True
            for h in list(self._active.values()):
                if h.state is JobState.QUEUED:
                    h.state = JobState.CANCELLED
                    h.message = "the queue closed"
                    h._done.set()
            self._lock.notify_all()
