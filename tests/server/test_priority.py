"""One priority convention end to end: higher runs first, in the server's job queue and in the gate's queue."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.verify.helpers import candidate, slow_source, variant
from warpwise.server.jobs import Priority
from warpwise.verify.backends import CompileOnlyBackend
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Gate
from warpwise.verify.jobqueue import JobEvent, VerificationQueue
from warpwise.verify.types import Options, Status


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    monkeypatch.setenv("WARPWISE_CACHE_DIR", str(tmp_path))
    backend = CompileOnlyBackend()
    yield Gate(backend, ResultCache(tmp_path / "results.sqlite3"))
    backend.close()


def test_server_priorities_count_up_with_urgency() -> None:
    assert Priority.INTERACTIVE > Priority.ON_SAVE > Priority.BACKGROUND


def test_the_gate_runs_the_servers_interactive_job_before_its_background_job(gate: Gate) -> None:
    q = VerificationQueue(gate, concurrency=1)
    events: list[JobEvent] = []
    lock = threading.Lock()

    def rec(event: JobEvent) -> None:
        with lock:
            events.append(event)

    opts = Options(compile_only=True)
    blocker = q.submit(candidate(slow_source(6000)), opts, priority=Priority.INTERACTIVE, on_event=rec)
    deadline = time.monotonic() + 30
    while not any(e.kind == "started" and e.job_id == blocker.job_id for e in events) and time.monotonic() < deadline:
        time.sleep(0.01)
    background = q.submit(candidate(variant(20)), opts, priority=Priority.BACKGROUND, on_event=rec)
    on_save = q.submit(candidate(variant(21)), opts, priority=Priority.ON_SAVE, on_event=rec)
    interactive = q.submit(candidate(variant(22)), opts, priority=Priority.INTERACTIVE, on_event=rec)
    for h in (blocker, background, on_save, interactive):
        res = h.wait(120)
        assert res is not None and res.status is Status.NO_GPU, res
    started = [e.job_id for e in events if e.kind == "started"]
    assert started == [blocker.job_id, interactive.job_id, on_save.job_id, background.job_id]
    q.close()
