"""The job queue: an actor on the event loop that runs long jobs one at a time, by priority.

Every job that can take longer than a keystroke (a compile-only resource report, a verification, a profile)
goes through here, never through a request handler. The queue de-duplicates (a job whose key matches a queued or
running one returns that job), supersedes (a newer job with the same `supersede` key cancels older ones: a new
save makes the previous save's profile worthless), runs the most urgent job first, and reports every state change
to one listener, which the server turns into `$/progress` and `warpwise/status`. Cancellation is cooperative: a
queued job is dropped, a running one has its task cancelled, and its `run` coroutine stops its subprocess.
Expected failures are results with a status; an unexpected exception is logged and the job ends as `failed`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

log = logging.getLogger(__name__)


class JobState(StrEnum):
    """Where a job is in its life."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Priority:
    """Higher runs first: the convention of the gate's queue (`verify.jobqueue`) and the learned ranking's
    priorities (`ranking.queue_priority`), so a server priority passed to the gate means the same there."""

    BACKGROUND = 0
    ON_SAVE = 1
    INTERACTIVE = 2


_ids = itertools.count(1)


@dataclass(eq=False)
class Job:
    """One unit of long work, with its state."""

    kind: str
    title: str
    key: tuple
    run: Callable[[Job], Coroutine[Any, Any, Any]] = field(repr=False)
    priority: int = Priority.ON_SAVE
    supersede: tuple | None = None
    uri: str | None = None
    kernel: str | None = None
    version: int | None = None
    id: str = field(default_factory=lambda: f"job-{next(_ids)}")
    state: JobState = JobState.QUEUED
    stage: str = "queued"
    percentage: int | None = None
    result: Any = None
    error: str | None = None
    cancel_reason: str | None = None
    created: float = field(default_factory=time.monotonic)
    started: float | None = None
    finished: float | None = None
    done: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future(), repr=False)
    _task: asyncio.Task | None = field(default=None, repr=False)
    _listener: Callable[[Job, str], None] | None = field(default=None, repr=False)

    @property
    def active(self) -> bool:
        """Return whether the job is queued or running."""
        return self.state in (JobState.QUEUED, JobState.RUNNING)

    def report(self, stage: str, percentage: int | None = None) -> None:
        """Record the stage a running job reached (called by its `run` coroutine)."""
        self.stage = stage
        self.percentage = percentage
        if self._listener is not None:
            self._listener(self, "report")

    def describe(self) -> dict[str, Any]:
        """Return the job as JSON for the status notification and commands."""
        return {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "state": self.state.value,
            "stage": self.stage,
            "percentage": self.percentage,
            "uri": self.uri,
            "kernel": self.kernel,
        }


class JobQueue:
    """Runs jobs one at a time on the event loop, most urgent first."""

    def __init__(self, listener: Callable[[Job, str], None], history: int = 50) -> None:
        self._listener = listener
        self._queued: list[Job] = []
        self._running: Job | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._stopping = False
        self.finished: deque[Job] = deque(maxlen=history)

    def start(self) -> None:
        """Start the actor."""
        self._stopping = False
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="warpwise-job-queue")

    async def stop(self) -> None:
        """Cancel every job and stop the actor once the running job has wound down."""
        self._stopping = True
        self.cancel_all("the server is stopping")
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                await asyncio.wait_for(task, 10)
            except (TimeoutError, asyncio.CancelledError):
                log.warning("the job queue did not stop in time")

    @property
    def length(self) -> int:
        """Return how many jobs wait."""
        return len(self._queued)

    @property
    def running(self) -> Job | None:
        """Return the running job."""
        return self._running

    def active_jobs(self) -> list[Job]:
        """Return the running job and the queued ones."""
        return ([self._running] if self._running is not None else []) + list(self._queued)

    def get(self, job_id: str) -> Job | None:
        """Return an active or recently finished job."""
        for job in [*self.active_jobs(), *self.finished]:
            if job.id == job_id:
                return job
        return None

    def submit(self, job: Job) -> Job:
        """Queue a job, unless an equal one is already queued or running (that one is returned)."""
        for other in self.active_jobs():
            if other.key == job.key:
                return other
        if job.supersede is not None:
            for other in self.active_jobs():
                if other.supersede == job.supersede:
                    self.cancel(other.id, "superseded by a newer request")
        job._listener = self._listener
        self._queued.append(job)
        self._listener(job, "queued")
        self._wake.set()
        return job

    def cancel(self, job_id: str, reason: str = "cancelled") -> bool:
        """Cancel a queued or running job; return whether there was one."""
        for job in list(self._queued):
            if job.id == job_id:  # A queued job never started: drop it.
                self._queued.remove(job)
                job.cancel_reason = reason
                self._finish(job, JobState.CANCELLED)
                return True
        running = self._running
        if running is not None and running.id == job_id and running._task is not None:
            running.cancel_reason = reason
            running._task.cancel()
            return True
        return False

    def cancel_all(self, reason: str) -> int:
        """Cancel every queued and running job."""
        jobs = self.active_jobs()
        for job in jobs:
            self.cancel(job.id, reason)
        return len(jobs)

    def _finish(self, job: Job, state: JobState) -> None:
        job.state = state
        job.finished = time.monotonic()
        job.stage = {JobState.DONE: "done", JobState.FAILED: "failed", JobState.CANCELLED: "cancelled"}.get(state, "")
        if not job.done.done():
            if state is JobState.DONE:
                job.done.set_result(job.result)
            else:
                job.done.set_result(None)
        self.finished.append(job)
        self._listener(job, "end")

    def _next(self) -> Job | None:
        if not self._queued:
            return None
        best = min(self._queued, key=lambda j: (-j.priority, j.created))
        self._queued.remove(best)
        return best

    async def _loop(self) -> None:
        while not self._stopping:
            job = self._next()
            if job is None:
                self._wake.clear()
                await self._wake.wait()
                continue
            self._running = job
            job.state = JobState.RUNNING
            job.started = time.monotonic()
            job.stage = "starting"
            self._listener(job, "begin")
            job._task = asyncio.get_running_loop().create_task(job.run(job), name=f"warpwise-{job.id}")
            try:
                job.result = await job._task
                state = JobState.DONE
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    # The actor itself is being cancelled (the event loop is closing): end the job and stop.
                    self._running = None
                    job.cancel_reason = job.cancel_reason or "the server is stopping"
                    self._finish(job, JobState.CANCELLED)
                    raise
                state = JobState.CANCELLED
                job.cancel_reason = job.cancel_reason or "cancelled"
            except Exception as exc:  # An unexpected failure ends this job, never the queue.
                log.exception("job %s (%s) failed", job.id, job.title)
                job.error = f"{type(exc).__name__}: {exc}"
                state = JobState.FAILED
            finally:
                self._running = None
            self._finish(job, state)
