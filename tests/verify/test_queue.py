"""The verification queue on a real compile-only backend: priorities, de-duplication, generations, budget, events."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.verify.helpers import candidate, slow_source, variant
from warpwise.verify.backends import CompileOnlyBackend
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Gate
from warpwise.verify.jobqueue import JobEvent, JobState, VerificationQueue
from warpwise.verify.types import Options, Status

OPTS = Options(compile_only=True)


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    monkeypatch.setenv("WARPWISE_CACHE_DIR", str(tmp_path))
    backend = CompileOnlyBackend()
    yield Gate(backend, ResultCache(tmp_path / "results.sqlite3"))
    backend.close()


class Recorder:
    """Collects events from every job."""

    def __init__(self) -> None:
        self.events: list[JobEvent] = []
        self.lock = threading.Lock()

    def __call__(self, event: JobEvent) -> None:
        with self.lock:
            self.events.append(event)

    def kinds(self, job_id: str) -> list[str]:
        return [e.kind if e.kind != "stage" else f"stage:{e.stage}" for e in self.events if e.job_id == job_id]


def test_progress_events_and_cache_hit(gate: Gate) -> None:
    q = VerificationQueue(gate)
    rec = Recorder()
    h = q.submit(candidate(variant(1)), OPTS, on_event=rec)
    res = h.wait(60)
    assert res is not None and res.status is Status.NO_GPU
    assert rec.kinds(h.job_id) == ["queued", "started", "stage:build", "finished"]
    again = q.submit(candidate(variant(1)), OPTS, on_event=rec)
    assert again.finished and again.result is not None and again.result.cached
    q.close()


def test_priorities_duplicates_and_generations(gate: Gate) -> None:
    q = VerificationQueue(gate, concurrency=1)
    rec = Recorder()
    blocker = q.submit(candidate(slow_source(6000)), OPTS, on_event=rec)
    # The blocker must hold the only slot before the others arrive (on a loaded machine the dispatcher may not have
    # picked it up yet, and the higher-priority job would rightly go first).
    deadline = time.monotonic() + 30
    while "started" not in rec.kinds(blocker.job_id) and time.monotonic() < deadline:
        time.sleep(0.01)
    low = q.submit(candidate(variant(10)), OPTS, priority=0, on_event=rec)
    high = q.submit(candidate(variant(11)), OPTS, priority=5, on_event=rec)
    dup = q.submit(candidate(variant(10)), OPTS, priority=0, on_event=rec)
    assert dup is low
    old = q.submit(candidate(variant(12)), OPTS, group="doc#k", generation=1, on_event=rec)
    new = q.submit(candidate(variant(13)), OPTS, group="doc#k", generation=2, on_event=rec)
    assert old.state is JobState.CANCELLED and old.finished and old.result is None
    for h in (blocker, low, high, new):
        res = h.wait(120)
        assert res is not None and res.status is Status.NO_GPU, res
    started = [e.job_id for e in rec.events if e.kind == "started"]
    assert started[0] == blocker.job_id
    assert started.index(high.job_id) < started.index(low.job_id)
    assert old.job_id not in started
    assert [e.kind for e in rec.events if e.job_id == old.job_id] == ["queued", "cancelled"]
    q.close()


def test_running_job_of_an_older_generation_is_superseded(gate: Gate) -> None:
    q = VerificationQueue(gate, concurrency=1)
    started = threading.Event()
    old = q.submit(
        candidate(slow_source(6000)),
        OPTS,
        group="g",
        generation=1,
        on_event=lambda e: started.set() if e.kind == "started" else None,
    )
    assert started.wait(30)
    q.cancel("g", 2)
    res = old.wait(120)
    assert res is not None and old.superseded
    q.close()


def test_budget_refuses_jobs_once_spent(gate: Gate) -> None:
    q = VerificationQueue(gate, budget_s=0.0, concurrency=1)
    rec = Recorder()
    h = q.submit(candidate(variant(20)), OPTS, on_event=rec)
    assert h.state is JobState.REFUSED and "budget" in h.message
    assert [e.kind for e in rec.events] == ["refused"]
    q.close()


def test_spec_missing_finishes_at_once(gate: Gate) -> None:
    q = VerificationQueue(gate)
    h = q.submit(candidate("__global__ void axpy(float* x) { }\n"), Options())
    assert h.finished and h.result is not None and h.result.status is Status.SPEC_MISSING
    q.close()
